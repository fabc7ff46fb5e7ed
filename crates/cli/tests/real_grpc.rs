//! Real gRPC clients through `herd bench`, each beside its replica, against herd's upstream
//! speaking gRPC (`[upstream] protocol = "grpc"`), every client configured by the same
//! service config (the measured one: 4 attempts, 0.1 s, x2, 1 s, UNAVAILABLE):
//!
//! - 30 calls to a server that fails every call UNAVAILABLE: 4 attempts a call from the
//!   real client and from its replica (simulated, and on the socket), and the first retry,
//!   timed by the server, within 5% + 20 ms of the replica's on the socket (the simulator
//!   has no request ids to time it by);
//! - with `retryThrottling {10, 0.1}`, 50 failing calls one after another (1/s): 53
//!   requests from the real client and from its replica; and 50 overlapping (10/s), where
//!   the moment the bucket is asked matters: the same count from both (grpcio 54, grpc-js
//!   52 when measured);
//! - hedging (3 attempts 0.1 s apart) against a slow server: grpc-js's hedges reach the
//!   server 100 and 200 ms after the original, as its replica's do (within 5% + 20 ms); grpcio ignores the policy
//!   (1 attempt a call), and so does its replica, whose policy says so.
//!
//! These need python3 with venv and Node.js with npm (herd installs the kits' pinned grpcio
//! and @grpc/grpc-js); they fail without them, never skip.

mod common;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::thread;

const RETRY: &str = r#""retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}"#;
const HEDGE: &str = r#""hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.1s", "nonFatalStatusCodes": ["UNAVAILABLE"]}"#;
const THROTTLE: &str = r#", "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}"#;

fn service_config(method: &str, throttle: &str) -> String {
    format!(
        "options = {{ service_config = '''{{\"methodConfig\": [{{\"name\": [{{}}], {method}}}]{throttle}}}''' }}"
    )
}

/// `requests` calls at `rate` a second against `upstream`, a replica arm and a real arm
/// with the same service config.
fn scenario(
    requests: u32,
    rate: u32,
    upstream: &str,
    profile: &str,
    client: &str,
    sc: &str,
) -> String {
    format!(
        r#"
name = "real-grpc"
seed = 7
[load]
requests = {requests}
rate = {rate}
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 10000
[upstream]
protocol = "grpc"
{upstream}
[[arms]]
id = "replica"
policy = "{profile}"
{sc}
[[arms]]
id = "real"
client = "{client}"
{sc}
"#
    )
}

/// The replica's arm in `herd sim`, then both arms in `herd bench` of `file`: (simulated
/// replica, replica on the socket, real client).
fn runs(file: &Path) -> (Value, Value, Value) {
    let file = file.to_str().unwrap();
    let s = report(&["sim", file, "--arm", "replica"]);
    let b = report(&["bench", file]);
    (
        arm(&s, "replica").clone(),
        arm(&b, "replica").clone(),
        arm(&b, "real").clone(),
    )
}

fn write(dir: &Path, name: &str, text: String) -> std::path::PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f
}

fn within(real: f64, replica: f64) -> bool {
    (real - replica).abs() <= 0.05 * replica + 20.0
}

/// One client against its replica: retries, throttling, hedging.
fn pair(profile: &'static str, client: &'static str) {
    let dir = tempdir(&format!("real-grpc-{client}"));
    let fail = "error_rate = 1.0";
    let retry = service_config(RETRY, "");
    let throttle = service_config(RETRY, THROTTLE);
    let retries = write(
        &dir,
        "retries.toml",
        scenario(30, 10, fail, profile, client, &retry),
    );
    let sequential = write(
        &dir,
        "sequential.toml",
        scenario(50, 1, fail, profile, client, &throttle),
    );
    let overlapping = write(
        &dir,
        "overlapping.toml",
        scenario(50, 10, fail, profile, client, &throttle),
    );
    let slow = "service_time = { dist = \"constant\", ms = 400 }";
    let hedged = write(
        &dir,
        "hedged.toml",
        scenario(10, 10, slow, profile, client, &service_config(HEDGE, "")),
    );

    let (sim, replica, real) = runs(&retries);
    for (v, who) in [
        (&sim, "simulated replica"),
        (&replica, "replica"),
        (&real, client),
    ] {
        assert_eq!(v["server_requests"], 120, "{client}, {who}: {v}");
    }
    assert_eq!(
        real["client_attempts"], real["server_requests"],
        "{client}: {real}"
    );
    let mean = |v: &Value| v["server_first_retry_ms"]["mean"].as_f64().unwrap();
    let (b, r) = (mean(&real), mean(&replica));
    eprintln!("{client}: first retry {b:.1} ms, {profile} replica {r:.1} ms (server-seen means)");
    assert!(within(b, r), "{client} {b} vs {profile} {r}");

    for (file, expected) in [(&sequential, Some(53)), (&overlapping, None)] {
        let (sim, replica, real) = runs(file);
        eprintln!(
            "{client}: 50 failing calls, throttled, {}: {} requests; replica {} (simulated {})",
            file.file_stem().unwrap().to_string_lossy(),
            real["server_requests"],
            replica["server_requests"],
            sim["server_requests"]
        );
        if let Some(n) = expected {
            assert_eq!(real["server_requests"], n, "{client}: {real}");
        }
        for v in [&sim, &replica] {
            assert_eq!(
                v["server_requests"], real["server_requests"],
                "{profile}: {v}"
            );
        }
    }

    let (sim, replica, real) = runs(&hedged);
    eprintln!(
        "{client}: hedged, {} requests (replica {}, simulated {}), hedge delay {} (replica {}); policy {}",
        real["server_requests"],
        replica["server_requests"],
        sim["server_requests"],
        real["server_hedge_ms"],
        replica["server_hedge_ms"],
        replica["policy"]
    );
    for v in [&sim, &real] {
        assert_eq!(
            v["server_requests"], replica["server_requests"],
            "{client}: {v}"
        );
    }
    if profile == "grpc-js" {
        assert_eq!(real["server_requests"], 30);
        // The hedges at 100 and 200 ms, as the server sees them.
        for key in ["server_hedge_ms", "server_second_hedge_ms"] {
            let p50 = |v: &Value| v[key]["p50"].as_f64().expect("hedges timed");
            let (b, r) = (p50(&real), p50(&replica));
            eprintln!("{client}: {key} p50 {b} ms, replica {r} ms");
            assert!(within(b, r), "{key}: {real}\n{replica}");
        }
    } else {
        assert_eq!(real["server_requests"], 10, "hedging ignored");
        let policy = replica["policy"].as_str().unwrap();
        assert!(policy.contains("hedgingPolicy ignored"), "{policy}");
    }
}

#[test]
fn grpcio_and_grpc_js_send_what_their_replicas_send() {
    let js = thread::spawn(|| pair("grpc-js", "node-grpc-js"));
    pair("grpc-core", "py-grpcio");
    js.join().unwrap();
}
