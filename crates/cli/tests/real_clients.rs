//! Python and Go clients, the real libraries, through `herd bench`: the adapters herd
//! embeds are set up in its cache on first use, the upstream's counts equal the attempts
//! the adapters report, and each library's schedule matches herd's replica profile
//! (`herd policy urllib3`, `herd policy go-retryablehttp`) within 5% + 20 ms.
//!
//! These need `python3` with its venv module, `go` and Debian's
//! golang-github-hashicorp-go-retryablehttp-dev (`.ci/run` installs them): they fail
//! without them, they never skip.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// Every attempt fails: each logical request runs its library's whole schedule.
const ALL_503: &str = r#"
name = "all-503"
seed = 9
[load]
requests = 3
rate = 10
arrival = "constant"
[client]
pool_max_connections = 16
attempt_timeout_ms = 2000
[upstream]
error_rate = 1.0
[[arms]]
id = "py"
client = "py-requests"
[[arms]]
id = "go"
client = "go-retryablehttp"
"#;

/// The p50 delay before each retry of `profile`'s replica.
fn replica_delays(profile: &str) -> Vec<f64> {
    let o = herd(&["policy", profile, "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    v["retries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["p50_ms"].as_f64().unwrap())
        .collect()
}

/// The gaps between consecutive attempts of each logical request at an upstream that
/// answers 503 to everything, as `adapters/tests/harness.py --json` measures them, for the
/// adapter command herd ran (its `--url` dropped: the harness adds its own).
fn measured_gaps(command: &[Value]) -> Value {
    let mut cmd: Vec<String> = command
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    let url = cmd.iter().position(|a| a == "--url").expect("--url");
    cmd.drain(url..url + 2);
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../adapters/tests/harness.py");
    let o = Command::new("python3")
        .arg(harness)
        .args(["--requests", "4", "--rate", "10", "--json", "--"])
        .args(&cmd)
        .output()
        .expect("python3 runs the harness");
    assert!(o.status.success(), "harness: {}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["failures"], serde_json::json!([]), "{v}");
    v["gaps_ms"].clone()
}

/// Every measured gap (min and max over the requests) within 5% + 20 ms of the replica's.
fn check_schedule(label: &str, gaps: &Value, replica: &[f64]) {
    // Gap n (1-based) is before retry n.
    assert_eq!(
        gaps.as_object().unwrap().len(),
        replica.len(),
        "{label}: {gaps}"
    );
    for (n, want) in replica.iter().enumerate() {
        let g = &gaps[(n + 1).to_string()];
        for k in ["min", "max"] {
            let got = g[k].as_f64().unwrap();
            let tol = want * 0.05 + 20.0;
            assert!(
                (got - want).abs() <= tol,
                "{label}: gap {} {k} {got} ms, replica {want} ms (±{tol})",
                n + 1
            );
        }
        eprintln!(
            "{label}: gap {}: {} ms (replica {want} ms)",
            n + 1,
            g["median"]
        );
    }
}

#[test]
fn python_and_go_clients_end_to_end_and_on_their_replicas_schedule() {
    assert_eq!(replica_delays("urllib3"), [0.0, 1000.0, 2000.0]);
    assert_eq!(
        replica_delays("go-retryablehttp"),
        [1000.0, 2000.0, 4000.0, 8000.0]
    );
    let dir = tempdir("real-clients");
    let file = dir.join("all-503.toml");
    std::fs::write(&file, ALL_503).unwrap();
    let o = herd(&["bench", file.to_str().unwrap(), "--json", "-"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    for (id, attempts) in [("py", 4), ("go", 5)] {
        let a = arm(&v, id);
        assert_eq!(a["logical_requests"], 3, "{a}");
        assert_eq!(a["hard_fail_ratio"], 1.0, "{a}");
        assert_eq!(a["client_attempts"], 3 * attempts, "{a}");
        assert_eq!(a["server_requests"], 3 * attempts, "{a}");
        assert!(a["command"].is_array(), "{a}");
    }
    let py = measured_gaps(arm(&v, "py")["command"].as_array().unwrap());
    check_schedule("py-requests vs urllib3", &py, &replica_delays("urllib3"));
    let go = measured_gaps(arm(&v, "go")["command"].as_array().unwrap());
    check_schedule(
        "go-retryablehttp vs go-retryablehttp",
        &go,
        &replica_delays("go-retryablehttp"),
    );
}
