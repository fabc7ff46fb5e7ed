//! `herd check` end to end: each limit held and broken, the `--arm` filter, and the input
//! errors (missing file, not JSON, not a herd report, unknown arm) that must exit 2.

mod common;
use common::*;
use herd_scenario::report::{ArmReport, Report};
use std::path::{Path, PathBuf};

fn arm(id: &str, load: f64, peak: f64, hard_fail: f64) -> ArmReport {
    ArmReport {
        id: id.to_owned(),
        policy: "none".to_owned(),
        logical_requests: 1000,
        succeeded: 1000 - (hard_fail * 1000.0) as u64,
        failed: (hard_fail * 1000.0) as u64,
        hard_fail_ratio: hard_fail,
        client_attempts: (load * 1000.0) as u64,
        server_requests: (load * 1000.0) as u64,
        load_multiplier: load,
        peak_rps_multiplier: peak,
        burst_multiplier: peak * 2.0,
        latency_ms: herd_scenario::report::Latency {
            p99: 500.0 * load,
            ..Default::default()
        },
        ..ArmReport::default()
    }
}

/// A report with a calm arm and an `undici` arm that retries a lot.
fn report_file(name: &str) -> PathBuf {
    let dir = tempdir(&format!("check-{name}"));
    let r = Report::new(
        "real",
        "t",
        1,
        100.0,
        vec![arm("calm", 1.0, 1.0, 0.02), arm("undici", 1.42, 1.6, 0.001)],
    );
    let path = dir.join("report.json");
    std::fs::write(&path, serde_json::to_vec_pretty(&r).unwrap()).unwrap();
    path
}

fn check(path: &Path, flags: &[&str]) -> std::process::Output {
    let mut args = vec!["check", path.to_str().unwrap()];
    args.extend_from_slice(flags);
    herd(&args)
}

#[test]
fn load_multiplier_broken_and_held() {
    let p = report_file("load");
    let o = check(&p, &["--max-load-multiplier", "1.30"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "arm undici: load multiplier 1.42 > 1.30\n");
    assert!(stderr(&o).contains("1 limit(s) broken"), "{}", stderr(&o));
    let o = check(&p, &["--max-load-multiplier", "1.5"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).starts_with("ok: 2 arm(s) within limits"));
}

#[test]
fn peak_multiplier_broken_and_held() {
    let p = report_file("peak");
    let o = check(&p, &["--max-peak-multiplier", "1.5"]);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(stdout(&o), "arm undici: peak multiplier 1.60 > 1.50\n");
    let o = check(&p, &["--max-peak-multiplier", "1.6"]);
    assert_eq!(o.status.code(), Some(0), "equal to the limit holds");
}

#[test]
fn hard_fail_as_ratio_or_percent() {
    let p = report_file("hard-fail");
    for limit in ["0.01", "1%"] {
        let o = check(&p, &["--max-hard-fail", limit]);
        assert_eq!(o.status.code(), Some(1), "{limit}");
        assert_eq!(stdout(&o), "arm calm: hard-fail 2.00% > 1.00%\n");
    }
    let o = check(&p, &["--max-hard-fail", "2.5%"]);
    assert_eq!(o.status.code(), Some(0));
    let o = check(&p, &["--max-hard-fail", "150%"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-hard-fail"), "{}", stderr(&o));
}

#[test]
fn every_violation_is_a_line() {
    let p = report_file("all");
    let o = check(
        &p,
        &[
            "--max-load-multiplier",
            "1.3",
            "--max-peak-multiplier",
            "1.5",
            "--max-hard-fail",
            "1%",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        stdout(&o),
        "arm calm: hard-fail 2.00% > 1.00%\n\
         arm undici: load multiplier 1.42 > 1.30\n\
         arm undici: peak multiplier 1.60 > 1.50\n"
    );
    assert!(stderr(&o).contains("3 limit(s) broken"));
}

#[test]
fn close_values_print_enough_digits() {
    let p = report_file("close");
    let o = check(&p, &["--max-load-multiplier", "1.419"]);
    assert_eq!(stdout(&o), "arm undici: load multiplier 1.420 > 1.419\n");
}

#[test]
fn arm_filter() {
    let p = report_file("arm");
    let o = check(&p, &["--max-load-multiplier", "1.3", "--arm", "calm"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert!(stdout(&o).starts_with("ok: 1 arm(s) within limits"));
    let o = check(&p, &["--max-hard-fail", "1%", "--arm", "undici"]);
    assert_eq!(o.status.code(), Some(0));
    let o = check(&p, &["--max-load-multiplier", "1.3", "--arm", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("--arm nope: no such arm") && e.contains("calm, undici"),
        "{e}"
    );
}

#[test]
fn a_limit_is_required() {
    let p = report_file("none");
    let o = check(&p, &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-load"), "{}", stderr(&o));
}

/// `--max-burst` and `--max-p99`, the limits `herd tune` also takes, held and broken.
#[test]
fn burst_and_p99_broken_and_held() {
    let p = report_file("burst-p99");
    // calm: burst 2.0, p99 500 ms; undici: burst 3.2, p99 710 ms.
    let o = check(&p, &["--max-burst", "3"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert_eq!(stdout(&o), "arm undici: burst multiplier 3.20 > 3.00\n");
    let o = check(&p, &["--max-burst", "3.2"]);
    assert_eq!(o.status.code(), Some(0), "equal to the limit holds");
    assert_eq!(
        stdout(&o),
        "ok: 2 arm(s) within limits (burst multiplier <= 3.20)\n"
    );
    for limit in ["700", "700ms", "0.7s"] {
        let o = check(&p, &["--max-p99", limit]);
        assert_eq!(o.status.code(), Some(1), "{limit}: {}", stderr(&o));
        assert_eq!(stdout(&o), "arm undici: p99 710ms > 700ms\n");
    }
    let o = check(&p, &["--max-p99", "711ms"]);
    assert_eq!(o.status.code(), Some(0), "{}", stdout(&o));
    assert_eq!(
        stdout(&o),
        "ok: 2 arm(s) within limits (p99 <= 711ms)\n",
        "{}",
        stderr(&o)
    );
    let o = check(&p, &["--max-p99", "fast"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-p99"), "{}", stderr(&o));
    let o = check(&p, &["--max-burst", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--max-burst"), "{}", stderr(&o));
}

/// The names `herd tune` uses and the older long names are the same flags.
#[test]
fn tune_names_and_old_names_agree() {
    let p = report_file("names");
    let new = check(&p, &["--max-load", "1.3", "--max-peak", "1.5"]);
    let old = check(
        &p,
        &[
            "--max-load-multiplier",
            "1.3",
            "--max-peak-multiplier",
            "1.5",
        ],
    );
    assert_eq!(new.status.code(), Some(1));
    assert_eq!(stdout(&new), stdout(&old));
    assert_eq!(
        stdout(&new),
        "arm undici: load multiplier 1.42 > 1.30\narm undici: peak multiplier 1.60 > 1.50\n"
    );
}

#[test]
fn missing_file_is_bad_input() {
    let dir = tempdir("check-missing");
    let p = dir.join("nope.json");
    let o = check(&p, &["--max-load-multiplier", "1.3"]);
    assert_eq!(o.status.code(), Some(2));
    let e = stderr(&o);
    assert!(
        e.contains("cannot read report") && e.contains("nope.json"),
        "{e}"
    );
    assert!(stdout(&o).is_empty());
}

#[test]
fn not_json_or_not_herd_is_bad_input() {
    let dir = tempdir("check-not-herd");
    let cases = [
        ("garbage.json", "this is not json", "not JSON"),
        (
            "other.json",
            r#"{"name": "something else"}"#,
            "not a herd report",
        ),
        (
            "v2.json",
            r#"{"schema": "herd.report/v2", "arms": []}"#,
            "schema `herd.report/v2`",
        ),
        (
            "broken.json",
            r#"{"schema": "herd.report/v1", "arms": 3}"#,
            "malformed herd.report/v1 report",
        ),
    ];
    for (name, body, want) in cases {
        let p = dir.join(name);
        std::fs::write(&p, body).unwrap();
        let o = check(&p, &["--max-load-multiplier", "1.3"]);
        assert_eq!(o.status.code(), Some(2), "{name}");
        assert!(stderr(&o).contains(want), "{name}: {}", stderr(&o));
    }
}
