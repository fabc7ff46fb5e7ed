//! `herd calibrate` against real services, and `herd tune` on what it wrote.
//!
//! Two services stand in for a user's: Debian's nginx behind `limit_req rate=200r/s
//! burst=20 nodelay` (503), and herd's own upstream run alone (`herd upstream`) with two
//! 5 ms workers and a queue of 20. Each is calibrated, and the calibrated scenario is run
//! twice at the same rate: in the simulator (the fitted model) and on the socket (herd's
//! front before the service itself). A fitted model is worth having only if the two
//! agree where retries are concerned: the no-retry arm's hard-fail within 2 points and
//! each retry arm's load multiplier within 15%.
//!
//! The arm that retries at once (`naive`) is the hard one: its load depends on whether
//! each retry lands before or after the bucket's next token (5 ms apart) or a worker's
//! next free slot, so on the round trip to a tenth of a millisecond. It holds because the
//! fit takes the round trip from the fastest calm step (nearest the rates where retries
//! happen) and gives the path its jitter (`[network] jitter_ms`).
//!
//! A probe on a machine busy enough to stall the services themselves measures the
//! machine (a step's arrivals reach the limiter bunched); as `bench_on_schedule` does for
//! the driver's lag, the calibration and the comparison are run up to three times (a
//! fit that misses the service's shape, a limiter for nginx and two workers for herd's
//! upstream, counts as a miss too), and every attempt's figures are printed.

mod common;
use common::nginx::{free_port, Nginx};
use common::own_upstream::OwnUpstream;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The socket tests take turns: two services probed at once would measure each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The arms run against each fitted model: one that never retries, and two retry
/// strategies at opposite ends (immediate retries; exponential backoff with full jitter).
const ARMS: &str = r#"
[[arms]]
id = "none"
policy = "none"

[[arms]]
id = "naive"
policy = "naive"

[[arms]]
id = "exponential"
policy = "exponential"
jitter = "full"
retries = 3
"#;

/// A scenario forwarding to `target` at `rate` req/s for `requests`, with [`ARMS`].
fn scenario(dir: &Path, target: &str, rate: u32, requests: u32) -> PathBuf {
    let text = format!(
        "name = \"calibrated-service\"\nseed = 3\n\n[load]\nrequests = {requests}\nrate = {rate}\n\
         arrival = \"constant\"\n\n[upstream]\ntarget = \"{target}\"\nsettle_ms = 500\n{ARMS}"
    );
    let path = dir.join("service.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `herd calibrate SCENARIO --out DIR ARGS`; the calibrated scenario's path.
fn calibrate(scenario: &Path, out: &Path, args: &[&str]) -> PathBuf {
    let mut all = vec![
        "calibrate",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let o = herd(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    eprintln!("{}", stdout(&o));
    let path = out.join("calibrated.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("calibrated = "), "{text}");
    path
}

/// The simulated and the measured report of `path`.
fn sim_and_bench(path: &Path) -> (Value, Value) {
    let o = herd(&["sim", path.to_str().unwrap(), "--json", "-", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let sim: Value = serde_json::from_slice(&o.stdout).unwrap();
    let real = bench_on_schedule(&[path.to_str().unwrap()]);
    (sim, real)
}

/// Each arm's figures, simulated against measured, printed; the bars checked.
fn compare(sim: &Value, real: &Value) -> Vec<String> {
    let mut misses = vec![];
    for id in ["none", "naive", "exponential"] {
        let (s, r) = (arm(sim, id), arm(real, id));
        let f = |v: &Value, k: &str| v[k].as_f64().unwrap();
        eprintln!(
            "{id:>12}: load sim {:.3}x real {:.3}x ({:+.1}%); hard-fail sim {:.2}% real {:.2}%",
            f(s, "load_multiplier"),
            f(r, "load_multiplier"),
            (f(s, "load_multiplier") / f(r, "load_multiplier") - 1.0) * 100.0,
            f(s, "hard_fail_ratio") * 100.0,
            f(r, "hard_fail_ratio") * 100.0
        );
        if id == "none" {
            let d = (f(s, "hard_fail_ratio") - f(r, "hard_fail_ratio")).abs();
            if d > 0.02 {
                misses.push(format!(
                    "{id}: hard-fail differs by {:.2} points",
                    d * 100.0
                ));
            }
        } else {
            let d = (f(s, "load_multiplier") / f(r, "load_multiplier") - 1.0).abs();
            if d > 0.15 {
                misses.push(format!("{id}: load differs by {:.1}%", d * 100.0));
            }
        }
    }
    misses
}

#[test]
fn a_rate_limited_nginx_is_fitted_and_the_fit_predicts_each_arm() {
    let _turn = turn();
    let dir = tempdir("calibrate-nginx");
    let nginx = Nginx::rate_limited(dir.join("nginx"), "200r/s", 20);
    let scen = scenario(&dir, &nginx.url(), 300, 3000);
    attempts(|k| {
        let path = calibrate(&scen, &dir.join(format!("fit{k}")), &["--max-rate", "400"]);
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("rate_limit") {
            Ok(path)
        } else {
            Err(format!("no limiter fitted: {text}"))
        }
    });
}

/// Calibrates (`fit(attempt)` returns the calibrated scenario) and compares, up to three
/// times, until the bars hold; fails with every attempt's misses.
fn attempts(fit: impl Fn(usize) -> Result<PathBuf, String>) {
    let mut all = vec![];
    for k in 0..3 {
        let misses = match fit(k) {
            Ok(path) => {
                let (sim, real) = sim_and_bench(&path);
                compare(&sim, &real)
            }
            Err(wrong) => vec![wrong],
        };
        if misses.is_empty() {
            return;
        }
        eprintln!("attempt {k}: {misses:?}");
        all.push(misses);
    }
    panic!("the fitted model missed in every attempt: {all:?}");
}

const CAPACITY: &str = r#"
name = "capacity"
[upstream]
service_time = { dist = "constant", ms = 5 }
workers = 2
queue_limit = 20
shed = "503"

[[arms]]
id = "unused"
policy = "none"
"#;

#[test]
fn herds_own_capacity_limited_upstream_is_fitted_and_the_fit_predicts_each_arm() {
    let _turn = turn();
    let dir = tempdir("calibrate-own");
    let own = OwnUpstream::start(&dir, CAPACITY);
    let scen = scenario(&dir, &own.url, 500, 5000);
    attempts(|k| {
        let path = calibrate(&scen, &dir.join(format!("fit{k}")), &["--max-rate", "600"]);
        let text = std::fs::read_to_string(&path).unwrap();
        if text.contains("workers = 2") {
            Ok(path)
        } else {
            Err(format!("not two workers: {text}"))
        }
    });
}

#[test]
fn tune_verifies_its_recommendation_on_nginx() {
    let _turn = turn();
    let dir = tempdir("calibrate-tune");
    let nginx = Nginx::rate_limited(dir.join("nginx"), "200r/s", 20);
    let scen = scenario(&dir, &nginx.url(), 300, 1500);
    let path = calibrate(&scen, &dir.join("fit"), &["--max-rate", "400"]);
    let out = dir.join("tuned");
    let o = herd(&[
        "tune",
        path.to_str().unwrap(),
        "--arm",
        "exponential",
        "--vary",
        "retries=1,3",
        "--seeds",
        "2",
        "--max-hard-fail",
        "45%",
        "--max-load",
        "2.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    eprintln!("{text}");
    assert!(text.contains("verified on http://"), "{text}");
    assert!(text.contains("| predicted |"), "{text}");
    assert!(text.contains("| measured |"), "{text}");
    assert!(
        text.contains("meets every limit on the target too"),
        "{text}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(out.join("tune.json")).unwrap()).unwrap();
    let ver = &v["verified"];
    assert_eq!(ver["target"], nginx.url());
    let points = ver["points"].as_array().expect("verified points");
    assert_eq!(points.len(), 2, "{ver}");
    assert_eq!(points[0]["role"], "recommended", "{ver}");
    assert_eq!(points[0]["index"], v["recommended"], "{ver}");
    assert_eq!(points[1]["role"], "runner-up", "{ver}");
    assert_eq!(points[0]["meets_limits"], true, "{ver}");
    // The server counted retries: a limiter at 200 r/s offered 300 r/s turns requests away.
    let load = points[0]["measured"]["load"].as_f64().unwrap();
    assert!(load > 1.05, "{ver}");
    let html = std::fs::read_to_string(out.join("tune.html")).unwrap();
    assert!(html.contains("<h2>Verified on the target</h2>"), "{html}");
    assert!(html.contains("<tr class=\"measured\">"), "{html}");

    // --no-verify: the same search, nothing sent.
    let before = nginx.access_log().len();
    let o = herd(&[
        "tune",
        path.to_str().unwrap(),
        "--arm",
        "exponential",
        "--vary",
        "retries=1,3",
        "--seeds",
        "2",
        "--no-verify",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("verified").is_none(), "{v}");
    assert!(stderr(&o).contains("--no-verify"), "{}", stderr(&o));
    assert_eq!(
        nginx.access_log().len(),
        before,
        "--no-verify sent requests"
    );
}

#[test]
fn tune_refuses_a_target_without_a_calibrated_model() {
    let dir = tempdir("calibrate-refuse");
    // Nothing listens there: the refusal comes before anything is sent.
    let scen = scenario(&dir, &format!("http://{}", free_port()), 300, 1500);
    let o = herd(&[
        "tune",
        scen.to_str().unwrap(),
        "--vary",
        "retries=1,3",
        "--out",
        dir.join("t").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert!(err.contains("not calibrated"), "{err}");
    assert!(err.contains("herd calibrate"), "{err}");
    assert!(!dir.join("t").exists(), "nothing written");
    assert!(stdout(&o).is_empty());
}

#[test]
fn points_that_all_give_the_same_figures_are_not_ranked() {
    // An upstream that never fails: retries change nothing.
    let dir = tempdir("calibrate-same");
    let path = dir.join("healthy.toml");
    std::fs::write(
        &path,
        "name = \"healthy\"\n[load]\nrequests = 300\nrate = 100\n\n[[arms]]\nid = \"exp\"\npolicy = \"exponential\"\n",
    )
    .unwrap();
    let o = herd(&[
        "tune",
        path.to_str().unwrap(),
        "--vary",
        "retries=0,1,2",
        "--seeds",
        "1",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    eprintln!("{}", v["verdict"]);
    assert!(v["recommended"].is_null(), "{v}");
    let verdict = v["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("the varied keys change nothing here: every point gives load 1.000x"),
        "{verdict}"
    );
}
