//! `[upstream.rate_limit]` end to end: nginx's `limit_req rate=200r/s burst=20 nodelay`,
//! offered 300 req/s for 10 s by an arm that never retries, rejects a third of the
//! requests less the burst (⌊20 + 200 · 2999/300⌋ + 1 = 2020 accepted, 980 rejected,
//! 32.67%), in the simulator and on herd's own upstream on a socket alike.

mod common;
use common::*;
use serde_json::Value;
use std::path::PathBuf;

const LIMITED: &str = r#"
name = "rate-limited"
description = "limit_req rate=200r/s burst=20 nodelay, offered 300 req/s"
seed = 1

[load]
requests = 3000
rate = 300
arrival = "constant"

[upstream.rate_limit]
rate = "200r/s"
burst = 20
nodelay = true

[[arms]]
id = "none"
policy = "none"
"#;

fn scenario(name: &str, text: &str) -> PathBuf {
    let path = tempdir(name).join("limited.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// The arm's rejected fraction, checked against the report's other figures: with no
/// retries every logical request is one server request, and every failure a rejection.
fn rejected_fraction(v: &Value) -> (f64, u64) {
    let a = arm(v, "none");
    let limited = a["rate_limited"].as_u64().expect("rate_limited");
    assert_eq!(a["server_requests"], 3000, "{a}");
    assert_eq!(a["failed"].as_u64(), Some(limited), "{a}");
    (limited as f64 / 3000.0, limited)
}

#[test]
fn simulated_a_third_is_rejected() {
    let path = scenario("rate-limit-sim", LIMITED);
    let o = herd(&["sim", path.to_str().unwrap(), "--json", "-", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let (fraction, limited) = rejected_fraction(&v);
    eprintln!("sim: {limited} of 3000 rejected ({:.2}%)", fraction * 100.0);
    assert_eq!(limited, 980, "the closed form");
    assert!((fraction - 1.0 / 3.0).abs() < 0.01, "{fraction}");
    let schema = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/schema/report.schema.json");
    let schema: Value = serde_json::from_slice(&std::fs::read(schema).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");

    // The table says so under the arms.
    let o = herd(&["sim", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains("rate limit: arm none: 980 of 3000 server requests rejected (32.67%)"),
        "{text}"
    );
}

#[test]
fn on_the_socket_a_third_is_rejected() {
    let path = scenario("rate-limit-bench", LIMITED);
    let v = bench_on_schedule(&[path.to_str().unwrap()]);
    let (fraction, limited) = rejected_fraction(&v);
    eprintln!(
        "socket: {limited} of 3000 rejected ({:.2}%)",
        fraction * 100.0
    );
    assert!((fraction - 1.0 / 3.0).abs() < 0.01, "{fraction}");
}

/// Without a limit nothing about it appears: no `rate_limited`, no note.
#[test]
fn absent_unless_configured() {
    let text = LIMITED.replace(
        "[upstream.rate_limit]\nrate = \"200r/s\"\nburst = 20\nnodelay = true\n",
        "",
    );
    let path = scenario("rate-limit-none", &text);
    let o = herd(&["sim", path.to_str().unwrap(), "--json", "-", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(arm(&v, "none").get("rate_limited").is_none(), "{v}");
    assert_eq!(arm(&v, "none")["failed"], 0);
}

/// A bad key is named with its file and line, exit 2.
#[test]
fn a_bad_key_exits_2_naming_file_line_and_key() {
    let path = scenario(
        "rate-limit-bad",
        &LIMITED.replace("burst = 20", "burst = -20"),
    );
    let o = herd(&["sim", path.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("limited.toml:13:") && err.contains("upstream.rate_limit.burst"),
        "{err}"
    );
}
