//! gRPC replicas on a socket: herd's HTTP/2 driver making unary calls to herd's upstream
//! speaking gRPC (`[upstream] protocol = "grpc"`), beside the same arms in the simulator.
//!
//! 50 calls to a server that answers every call UNAVAILABLE, with the measured clients'
//! policy (4 attempts, 0.1 s, x2, 1 s):
//! - with `retryThrottling {10, 0.1}` and the calls one after another (1/s: a call's 4
//!   attempts end within 0.84 s), 53 attempts reach the server (4 for the first call, then
//!   1 each), as grpcio, grpc-js and grpc-go sent, on the socket as in the simulator;
//! - with the same throttle and the calls overlapping (10/s), where the moment the bucket
//!   is asked matters: grpc-core 54 (asked at the failure, as grpcio 1.85 sent), grpc-js 52
//!   (asked when the backoff has passed), on the socket as in the simulator;
//! - without it, 200, and on the socket the server sees the first retry 100 ms (±20%)
//!   after the first attempt failed (its mean within 5% + 20 ms of 100 ms; the simulator
//!   has no request ids to time it by);
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

/// 50 failing calls at `rate` a second, and the arms.
fn scenario(rate: u32, arms: &[(&str, &str, &str, &str)]) -> String {
    let mut s = format!(
        r#"
name = "grpc-test"
seed = 5
[load]
requests = 50
rate = {rate}
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 5000
[upstream]
protocol = "grpc"
error_rate = 1.0
"#
    );
    for (id, policy, method, throttle) in arms {
        s += &arm_toml(id, policy, method, throttle);
    }
    s
}

/// `herd sim` and `herd bench` of `text`.
fn sim_and_bench(name: &str, text: String) -> (Value, Value) {
    let dir = tempdir(name);
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(&file, text).unwrap();
    let file = file.to_str().unwrap();
    (report(&["sim", file]), report(&["bench", file]))
}

#[test]
fn grpc_replicas_on_a_socket_send_what_the_simulator_sends() {
    let (sim, bench) = sim_and_bench(
        "grpc",
        scenario(
            10,
            &[
                ("core-throttled", "grpc-core", RETRY, THROTTLE),
                ("js-throttled", "grpc-js", RETRY, THROTTLE),
                ("core", "grpc-core", RETRY, ""),
                ("js-hedging", "grpc-js", HEDGE, ""),
                ("core-hedging", "grpc-core", HEDGE, ""),
            ],
        ),
    );
    for v in [&sim, &bench] {
        assert_eq!(
            arm(v, "core-throttled")["server_requests"],
            54,
            "{}",
            arm(v, "core-throttled")
        );
        assert_eq!(
            arm(v, "js-throttled")["server_requests"],
            52,
            "{}",
            arm(v, "js-throttled")
        );
        assert_eq!(arm(v, "core")["server_requests"], 200);
        assert_eq!(arm(v, "js-hedging")["server_requests"], 150);
        assert_eq!(arm(v, "core-hedging")["server_requests"], 50);
        let policy = arm(v, "core-hedging")["policy"].as_str().unwrap();
        assert!(policy.contains("hedgingPolicy ignored"), "{policy}");
    }
    // The simulator has no request ids (guards_socket.rs): the first retry is timed on the
    // socket only, against the policy's mean wait, 100 ms (U(80, 120)).
    assert!(arm(&sim, "core").get("server_first_retry_ms").is_none());
    let f = &arm(&bench, "core")["server_first_retry_ms"];
    assert_eq!(f["count"], 50, "{f}");
    let b = f["mean"].as_f64().unwrap();
    eprintln!("grpc-core's first retry on the socket, mean {b:.1} ms (policy: 100 ms)");
    assert!((b - 100.0).abs() <= 0.05 * 100.0 + 20.0, "{b}");
}

#[test]
fn throttled_calls_one_after_another_make_53_attempts() {
    let (sim, bench) = sim_and_bench(
        "grpc-sequential",
        scenario(
            1,
            &[
                ("core", "grpc-core", RETRY, THROTTLE),
                ("js", "grpc-js", RETRY, THROTTLE),
                ("go133", "grpc-go-1.33", RETRY, THROTTLE),
            ],
        ),
    );
    for id in ["core", "js", "go133"] {
        for v in [&sim, &bench] {
            assert_eq!(arm(v, id)["server_requests"], 53, "{id}: {}", arm(v, id));
        }
    }
}

/// Plain HTTP/2 (`protocol = "h2c"`): an HTTP policy on herd's HTTP/2 driver reads the
/// answers as the HTTP/1.1 client does (`Outcome::from_http`): each 503 is a failure the
/// policy retries, every attempt sent is one the server counts, and sim and socket agree.
#[test]
fn plain_h2c_requests_retry_as_over_http1() {
    let text = r#"
name = "h2c"
seed = 5
[load]
requests = 40
rate = 20
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 5000
[upstream]
protocol = "h2c"
error_rate = 1.0
[[arms]]
id = "naive"
policy = "naive"
retries = 2
"#
    .to_owned();
    let (sim, bench) = sim_and_bench("h2c", text);
    for (what, r) in [("sim", &sim), ("bench", &bench)] {
        let a = arm(r, "naive");
        assert_eq!(a["logical_requests"], 40, "{what}: {a}");
        assert_eq!(a["failed"], 40, "{what}: {a}");
        assert_eq!(
            a["server_requests"], 120,
            "{what}: three attempts a request: {a}"
        );
        assert_eq!(a["client_attempts"], 120, "{what}: {a}");
    }
}
