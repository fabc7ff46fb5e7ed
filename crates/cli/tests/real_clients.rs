//! Python and Go clients, the real libraries, through `herd bench`: the adapters herd
//! embeds are set up in its cache on first use, the upstream's counts equal the attempts
//! the adapters report, and each library's schedule matches herd's replica profile
//! (`herd policy urllib3`, `herd policy go-retryablehttp`) within 5% + 20 ms.
//!
//! These need `python3` with its venv module, `go` and Debian's
//! golang-github-hashicorp-go-retryablehttp-dev, golang-gopkg-eapache-go-resiliency.v1-dev
//! and golang-google-grpc-dev (the Go adapter is one program, built against all three;
//! `.ci/run` installs them): they fail without them, they never skip.

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
/// answers 503 to everything, as `crates/adapters/kits/tests/harness.py --json` measures them, for the
/// adapter command herd ran (its `--url` dropped: the harness adds its own).
fn measured_gaps(command: &[Value]) -> Value {
    let mut cmd: Vec<String> = command
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect();
    let url = cmd.iter().position(|a| a == "--url").expect("--url");
    cmd.drain(url..url + 2);
    let harness = Path::new(env!("CARGO_MANIFEST_DIR")).join("../adapters/kits/tests/harness.py");
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

const ONE_GO_ARM: &str = r#"
name = "go-setup"
seed = 2
[load]
requests = 5
rate = 50
[[arms]]
id = "go"
client = "go-retryablehttp"
"#;

#[test]
fn two_herds_setting_up_the_same_adapter_at_once_both_run() {
    let dir = tempdir("real-clients-setup");
    let cache = dir.join("cache");
    let file = dir.join("go.toml");
    std::fs::write(&file, ONE_GO_ARM).unwrap();
    // A shared Go build cache keeps this to one compile's worth of time.
    let gocache = std::env::temp_dir().join("herd-test-gocache");
    let start = || {
        Command::new(env!("CARGO_BIN_EXE_herd"))
            .args(["bench", file.to_str().unwrap(), "--json", "-"])
            .env("HERD_CACHE", &cache)
            .env("GOCACHE", &gocache)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (start(), start());
    for child in [a, b] {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(arm(&v, "go")["succeeded"], 5);
    }
    let left: Vec<String> = std::fs::read_dir(cache.join("adapters"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        left.len(),
        1,
        "one finished directory, no leftovers: {left:?}"
    );
    assert!(left[0].starts_with("go-"), "{left:?}");
}

#[test]
fn a_missing_runtime_is_one_sentence_and_exit_2() {
    let dir = tempdir("real-clients-no-runtime");
    for (client, sentence) in [
        (
            "py-requests",
            "py-requests needs python3 with the venv module: apt-get install",
        ),
        (
            "go-retryablehttp",
            "go-retryablehttp needs Go to build its adapter: apt-get install golang-go",
        ),
    ] {
        let file = dir.join(format!("{client}.toml"));
        std::fs::write(
            &file,
            format!(
                "name = \"x\"\n[load]\nrequests = 2\n[[arms]]\nid = \"a\"\nclient = \"{client}\"\n"
            ),
        )
        .unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_herd"))
            .args(["bench", file.to_str().unwrap()])
            .env("HERD_CACHE", dir.join("empty-cache"))
            .env("PATH", dir.join("no-bin"))
            .output()
            .unwrap();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{err}");
        assert!(err.contains(&format!("arm a: {sentence}")), "{err}");
        assert!(!err.contains("wall time"), "{err}");
    }
}
