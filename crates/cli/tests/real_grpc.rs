//! Real gRPC clients through `herd bench`, each beside its replica in `herd sim`, against
//! herd's upstream speaking gRPC (`[upstream] protocol = "grpc"`), every client configured
//! by the same service config (the measured one: 4 attempts, 0.1 s, x2, 1 s, UNAVAILABLE):
//!
//! - 30 calls to a server that fails every call UNAVAILABLE: 4 attempts a call from the
//!   real client and from its replica, and the first retry, timed by the server, within
//!   5% + 20 ms of the replica's;
//! - with `retryThrottling {10, 0.1}`, 50 failing calls: the same server count, 53;
//! - hedging (3 attempts 0.1 s apart) against a slow server: grpc-js's hedges reach the
//!   server 100 ms after the original, as its replica's do; grpcio ignores the policy
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

/// `requests` calls at 10/s against `upstream`, a replica arm and a real arm with the
/// same service config.
fn scenario(requests: u32, upstream: &str, profile: &str, client: &str, sc: &str) -> String {
    format!(
        r#"
name = "real-grpc"
seed = 7
[load]
requests = {requests}
rate = 10
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

fn report(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--json", "-", "--quiet"]);
    let o = herd(&all);
    assert!(o.status.success(), "herd {args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("JSON on stdout")
}

/// The replica's arm in `herd sim` and the real one in `herd bench` of `file`.
fn sim_and_bench(file: &Path) -> (Value, Value) {
    let file = file.to_str().unwrap();
    let s = report(&["sim", file, "--arm", "replica"]);
    let b = report(&["bench", file, "--arm", "real"]);
    (arm(&s, "replica").clone(), arm(&b, "real").clone())
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
    let retries = write(
        &dir,
        "retries.toml",
        scenario(30, fail, profile, client, &service_config(RETRY, "")),
    );
    let throttled = write(
        &dir,
        "throttled.toml",
        scenario(50, fail, profile, client, &service_config(RETRY, THROTTLE)),
    );
    let slow = "service_time = { dist = \"constant\", ms = 400 }";
    let hedged = write(
        &dir,
        "hedged.toml",
        scenario(10, slow, profile, client, &service_config(HEDGE, "")),
    );

    let (replica, real) = sim_and_bench(&retries);
    assert_eq!(real["server_requests"], 120, "{client}: {real}");
    assert_eq!(replica["server_requests"], 120, "{profile}: {replica}");
    assert_eq!(
        real["client_attempts"], real["server_requests"],
        "{client}: {real}"
    );
    let mean = |v: &Value| v["server_first_retry_ms"]["mean"].as_f64().unwrap();
    let (b, r) = (mean(&real), mean(&replica));
    eprintln!("{client}: first retry {b:.1} ms, {profile} replica {r:.1} ms");
    assert!(within(b, r), "{client} {b} vs {profile} {r}");

    let (replica, real) = sim_and_bench(&throttled);
    eprintln!(
        "{client}: 50 failing calls, throttled: {} requests, replica {}",
        real["server_requests"], replica["server_requests"]
    );
    assert_eq!(real["server_requests"], 53, "{client}: {real}");
    assert_eq!(replica["server_requests"], 53, "{profile}: {replica}");

    let (replica, real) = sim_and_bench(&hedged);
    eprintln!(
        "{client}: hedged, {} requests (replica {}), hedge delay {} (replica {}); policy {}",
        real["server_requests"],
        replica["server_requests"],
        real["server_hedge_ms"],
        replica["server_hedge_ms"],
        replica["policy"]
    );
    assert_eq!(
        real["server_requests"], replica["server_requests"],
        "{client}"
    );
    if profile == "grpc-js" {
        assert_eq!(real["server_requests"], 30);
        // The simulator's hedges go out at the delay exactly where it does not time them.
        let p50 = |v: &Value| v["server_hedge_ms"]["p50"].as_f64();
        let (b, r) = (
            p50(&real).expect("hedges timed"),
            p50(&replica).unwrap_or(100.0),
        );
        assert!(within(b, r), "{real}\n{replica}");
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
