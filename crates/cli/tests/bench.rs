//! `herd bench` end to end on a real socket: a short scenario, the JSON report's shape,
//! and the numbers that must hold whatever the machine.

mod common;
use common::*;
use serde_json::Value;

const SHORT: &str = r#"
name = "short"
seed = 5
[load]
requests = 300
rate = 300
[client]
pool_max_connections = 64
[upstream]
error_rate = 0.1
reset_rate = 0.02
service_time = { dist = "constant", ms = 2 }
[[arms]]
id = "none"
policy = "none"
[[arms]]
id = "undici-full"
policy = "undici"
jitter = "full"
base_ms = 20
"#;

#[test]
fn short_scenario_end_to_end() {
    let dir = tempdir("bench-short");
    let file = dir.join("short.toml");
    std::fs::write(&file, SHORT).unwrap();
    let json_path = dir.join("r.json");
    let o = herd(&[
        "bench",
        file.to_str().unwrap(),
        "--json",
        json_path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("| undici-full |"),
        "table on stdout: {}",
        stdout(&o)
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    assert_eq!(v["schema"], "herd.report/v1");
    assert_eq!(v["mode"], "real");
    assert_eq!(v["scenario"]["name"], "short");
    assert_eq!(v["scenario"]["seed"], 5);
    let arms = v["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 2);
    let none = &arms[0];
    assert_eq!(none["logical_requests"], 300);
    // No retries: the server saw exactly what was offered, and ~12% failed.
    assert_eq!(none["server_requests"], 300);
    assert_eq!(none["client_attempts"], 300);
    assert_eq!(none["load_multiplier"], 1.0);
    let hf = none["hard_fail_ratio"].as_f64().unwrap();
    assert!((0.06..0.18).contains(&hf), "{hf}");
    let full = &arms[1];
    // Retries: the server counts every attempt, and almost nothing fails in the end.
    assert_eq!(full["server_requests"], full["client_attempts"]);
    let lm = full["load_multiplier"].as_f64().unwrap();
    assert!(lm > 1.05 && lm < 1.3, "{lm}");
    assert!(full["hard_fail_ratio"].as_f64().unwrap() < 0.01);
    for key in ["mean", "p50", "p90", "p99", "p999", "max"] {
        assert!(full["latency_ms"][key].as_f64().is_some(), "{key}");
    }
    let tl = full["timeline"].as_array().unwrap();
    let offered: u64 = tl.iter().map(|b| b["offered"].as_u64().unwrap()).sum();
    let server: u64 = tl.iter().map(|b| b["server"].as_u64().unwrap()).sum();
    assert_eq!(offered, 300);
    assert_eq!(server, full["server_requests"].as_u64().unwrap());
    assert_eq!(tl[1]["t_ms"], 100);
}

#[test]
fn json_to_stdout_is_pure_json() {
    let dir = tempdir("bench-stdout");
    let file = dir.join("short.toml");
    std::fs::write(&file, SHORT.replace("requests = 300", "requests = 50")).unwrap();
    let o = herd(&[
        "bench",
        file.to_str().unwrap(),
        "--json",
        "-",
        "--arm",
        "none",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("stdout is only JSON");
    assert_eq!(v["arms"].as_array().unwrap().len(), 1);
    assert!(stderr(&o).contains("| none |"), "table goes to stderr");
}
