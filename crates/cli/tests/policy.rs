//! `herd policy`: the delays of real libraries' defaults.

mod common;
use common::*;
use serde_json::Value;

fn p50s(args: &[&str]) -> Vec<f64> {
    let o = herd(args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("policy --json is JSON");
    v["retries"]
        .as_array()
        .expect("retries array")
        .iter()
        .map(|r| r["p50_ms"].as_f64().expect("p50_ms"))
        .collect()
}

#[test]
fn undici_defaults() {
    assert_eq!(
        p50s(&["policy", "undici", "--json"]),
        [500.0, 1000.0, 2000.0, 4000.0, 8000.0]
    );
}

#[test]
fn axios_retry_without_jitter() {
    assert_eq!(
        p50s(&["policy", "axios-retry", "--jitter", "none", "--json"]),
        [200.0, 400.0, 800.0]
    );
}

#[test]
fn axios_retry_default_adds_up_to_20_percent() {
    let o = herd(&["policy", "axios-retry", "--json", "--samples", "2000"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for (r, nominal) in v["retries"]
        .as_array()
        .unwrap()
        .iter()
        .zip([200.0, 400.0, 800.0])
    {
        let (min, p50, max) = (
            r["min_ms"].as_f64().unwrap(),
            r["p50_ms"].as_f64().unwrap(),
            r["max_ms"].as_f64().unwrap(),
        );
        assert!(min >= nominal && max <= nominal * 1.2, "{min} {max}");
        assert!((p50 - nominal * 1.1).abs() < nominal * 0.02, "{p50}");
    }
}

#[test]
fn full_jitter_spreads_below_nominal() {
    let o = herd(&["policy", "undici", "--jitter", "full", "--json"]);
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for (r, nominal) in v["retries"]
        .as_array()
        .unwrap()
        .iter()
        .zip([500.0, 1000.0, 2000.0, 4000.0, 8000.0])
    {
        assert!(r["max_ms"].as_f64().unwrap() < nominal);
        assert!((r["p50_ms"].as_f64().unwrap() - nominal / 2.0).abs() < nominal * 0.1);
    }
}

#[test]
fn table_output_and_bad_input() {
    let o = herd(&["policy", "undici"]);
    assert!(o.status.success());
    assert!(
        stdout(&o).contains("| 5 | 8000ms | 8000ms | 8000ms |"),
        "{}",
        stdout(&o)
    );
    let o = herd(&["policy", "undicci"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown policy `undicci`"));
    let o = herd(&["policy", "undici", "--jitter", "fulll"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("unknown jitter kind"));
}
