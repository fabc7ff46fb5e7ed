//! gRPC replicas on a socket: herd's HTTP/2 driver making unary calls to herd's upstream
//! speaking gRPC (`[upstream] protocol = "grpc"`), beside the same arms in the simulator.
//!
//! 50 calls to a server that answers every call UNAVAILABLE, with the measured clients'
//! policy (4 attempts, 0.1 s, x2, 1 s):
//! - with `retryThrottling {10, 0.1}`, 53 attempts reach the server (4 for the first call,
//!   then 1 each), on the socket as in the simulator;
//! - without it, 200, and the server sees the first retry 100 ms (±20%) after the first
//!   attempt failed, on the socket as in the simulator (within 5% + 20 ms);
//! - grpc-js's hedging sends 3 attempts a call, grpcio's is ignored (1 attempt a call,
//!   and the report's policy says so).

mod common;
use common::*;
use serde_json::Value;

const RETRY: &str = r#""retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}"#;
const HEDGE: &str = r#""hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.1s", "nonFatalStatusCodes": ["UNAVAILABLE"]}"#;
const THROTTLE: &str = r#", "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}"#;

fn arm_toml(id: &str, policy: &str, method: &str, throttle: &str) -> String {
    format!(
        "[[arms]]\nid = \"{id}\"\npolicy = \"{policy}\"\noptions = {{ service_config = '''{{\"methodConfig\": [{{\"name\": [{{}}], {method}}}]{throttle}}}''' }}\n"
    )
}

fn scenario() -> String {
    let mut s = String::from(
        r#"
name = "grpc-test"
seed = 5
[load]
requests = 50
rate = 10
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 5000
[upstream]
protocol = "grpc"
error_rate = 1.0
"#,
    );
    s += &arm_toml("core-throttled", "grpc-core", RETRY, THROTTLE);
    s += &arm_toml("js-throttled", "grpc-js", RETRY, THROTTLE);
    s += &arm_toml("go133-throttled", "grpc-go-1.33", RETRY, THROTTLE);
    s += &arm_toml("core", "grpc-core", RETRY, "");
    s += &arm_toml("js-hedging", "grpc-js", HEDGE, "");
    s += &arm_toml("core-hedging", "grpc-core", HEDGE, "");
    s
}

fn report(args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend_from_slice(&["--json", "-", "--quiet"]);
    let o = herd(&all);
    assert!(o.status.success(), "herd {args:?}: {}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("JSON on stdout")
}

#[test]
fn grpc_replicas_on_a_socket_send_what_the_simulator_sends() {
    let dir = tempdir("grpc");
    let file = dir.join("grpc.toml");
    std::fs::write(&file, scenario()).unwrap();
    let file = file.to_str().unwrap();
    let sim = report(&["sim", file]);
    let bench = report(&["bench", file]);
    for id in ["core-throttled", "js-throttled", "go133-throttled"] {
        for v in [&sim, &bench] {
            assert_eq!(arm(v, id)["server_requests"], 53, "{id}: {}", arm(v, id));
        }
    }
    for v in [&sim, &bench] {
        assert_eq!(arm(v, "core")["server_requests"], 200);
        assert_eq!(arm(v, "js-hedging")["server_requests"], 150);
        assert_eq!(arm(v, "core-hedging")["server_requests"], 50);
        let policy = arm(v, "core-hedging")["policy"].as_str().unwrap();
        assert!(policy.contains("hedgingPolicy ignored"), "{policy}");
    }
    let first = |v: &Value| arm(v, "core")["server_first_retry_ms"]["mean"].as_f64().unwrap();
    let (s, b) = (first(&sim), first(&bench));
    eprintln!("grpc-core's first retry, mean: simulated {s:.1} ms, on the socket {b:.1} ms");
    assert!((b - s).abs() <= 0.05 * s + 20.0, "sim {s} bench {b}");
    assert!((80.0..=120.0).contains(&s), "{s}");
}
