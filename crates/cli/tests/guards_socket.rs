//! Hedging and breakers on a real socket against the simulator: the socket driver runs the
//! same herd-retry `Hedger` and `Breaker` as `herd sim`, so on an upstream whose answers
//! do not depend on timing (every request 503) the server's counts agree exactly, and a
//! fixed hedge delay lands at the server when the policy says.

mod common;
use common::*;
use serde_json::Value;

/// An upstream that answers every request 503 at once; `n` calls `gap_ms` apart, one arm
/// with `breaker`.
fn all_failing(n: u64, gap_ms: f64, breaker: &str) -> String {
    format!(
        r#"
name = "all-failing"
[load]
requests = {n}
rate = {rate}
arrival = "constant"
[upstream]
error_rate = 1.0
[[arms]]
id = "guarded"
policy = "none"
breaker = {breaker}
"#,
        rate = 1000.0 / gap_ms
    )
}

fn run(cmd: &str, scenario: &str, extra: &[&str]) -> Value {
    let mut args = vec![cmd, scenario, "--json", "-", "--quiet"];
    args.extend_from_slice(extra);
    let o = herd(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("JSON on stdout")
}

/// The breaker's server requests in the simulator and on the socket, and its report. The
/// socket run counts only if the driver kept its calls `gap_ms` apart (lag under half of
/// it): calls bunched by a busy machine overlap, and a breaker lets through what is in
/// flight before the failure that opens it comes back.
fn both(name: &str, scenario: &str, gap_ms: f64) -> [(u64, Value); 2] {
    let dir = tempdir(name);
    let file = dir.join("s.toml");
    std::fs::write(&file, scenario).unwrap();
    let path = file.to_str().unwrap();
    [run("sim", path, &[]), bench_within(&[path], gap_ms / 2.0)].map(|v| {
        let a = &v["arms"][0];
        (a["server_requests"].as_u64().unwrap(), a.clone())
    })
}

/// The counts the real libraries gave on an all-503 server: pybreaker's defaults, 100
/// calls 10 ms apart: 5; pybreaker with `reset_timeout=1`, 5 s: 9 (one probe a second);
/// eapache go-resiliency `New(5, 1, 1s)`, 100 calls 50 ms apart: 9. The socket run lets
/// through exactly what the simulator does, and a rejection is never a server request.
/// go-resiliency's breaker stays open 1.01 s here, not 1 s: with calls 50 ms apart a
/// 1 s period ends on a call's very instant, which the simulator's call finds still open
/// and the socket's, a hair late, sometimes finds closed, beginning the next period a
/// call (50 ms) earlier. The counts are the library's either way.
#[test]
fn each_breaker_lets_the_same_requests_through_on_the_socket_as_in_the_simulator() {
    for (name, n, gap, breaker, expected) in [
        ("pybreaker", 100, 10.0, r#"{ profile = "pybreaker" }"#, 5),
        (
            "pybreaker-reset",
            500,
            10.0,
            r#"{ profile = "pybreaker", open_ms = 1000 }"#,
            9,
        ),
        (
            "go-resiliency",
            100,
            50.0,
            r#"{ profile = "go-resiliency", open_ms = 1010 }"#,
            9,
        ),
        ("gobreaker", 100, 10.0, r#"{ profile = "gobreaker" }"#, 6),
    ] {
        let [(sim, s), (socket, b)] = both(name, &all_failing(n, gap, breaker), gap);
        assert_eq!(sim, expected, "{name}: simulator");
        assert_eq!(socket, sim, "{name}: socket against simulator");
        // The breaker's own figures agree too: rejections are client-side fast failures.
        for key in ["rejected", "opened", "open_ms", "probes"] {
            assert_eq!(b["breaker"][key], s["breaker"][key], "{name}: {key}");
        }
        // Its open periods, for the timeline: as many, each as long, each begun within
        // 20 ms (the socket's answers take real time; the simulator's, none).
        let periods = |r: &Value| -> Vec<(u64, u64)> {
            let p = r["breaker"]["open_periods_ms"]
                .as_array()
                .expect("it opened");
            p.iter()
                .map(|w| (w[0].as_u64().unwrap(), w[1].as_u64().unwrap()))
                .collect()
        };
        let (ps, pb) = (periods(&s), periods(&b));
        assert_eq!(ps.len(), pb.len(), "{name}: {ps:?} {pb:?}");
        for (x, y) in ps.iter().zip(&pb) {
            assert!(
                x.0.abs_diff(y.0) <= 20 && (x.1 - x.0).abs_diff(y.1 - y.0) <= 1,
                "{name}: open periods {ps:?} in the simulator, {pb:?} on the socket"
            );
        }
        assert_eq!(b["client_attempts"], s["client_attempts"], "{name}");
        let rejected = b["breaker"]["rejected"].as_u64().unwrap();
        assert_eq!(
            rejected + socket,
            n,
            "{name}: every call either sent or rejected"
        );
    }
}

const HEDGE: &str = r#"
name = "hedge-fixed"
seed = 3
[load]
requests = 100
rate = 20
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 2000
[upstream]
service_time = { dist = "constant", ms = 300 }
[[arms]]
id = "polly"
policy = "none"
hedge = { profile = "polly-hedging", delay_ms = 100 }
[[arms]]
id = "grpc"
policy = "none"
hedge = { profile = "grpc-hedging", delay_ms = 100, max_attempts = 3 }
"#;

/// Every request outlasts a fixed 100 ms hedge delay: each is hedged, the server sees the
/// hedge arrive 100 ms after the original (within 5% + 20 ms), the losers are cancelled,
/// and the load is the simulator's exactly.
#[test]
fn a_fixed_hedge_lands_at_the_server_when_the_policy_says() {
    let dir = tempdir("hedge-fixed");
    let file = dir.join("s.toml");
    std::fs::write(&file, HEDGE).unwrap();
    let sim = run("sim", file.to_str().unwrap(), &[]);
    // On schedule: a hedge that a busy machine holds past its original's answer is
    // cancelled before it reaches the server.
    let v = bench_on_schedule(&[file.to_str().unwrap()]);
    for (id, attempts) in [("polly", 2), ("grpc", 3)] {
        let (a, s) = (arm(&v, id), arm(&sim, id));
        assert_eq!(a["server_requests"], 100 * attempts, "{id}");
        assert_eq!(a["server_requests"], s["server_requests"], "{id}");
        assert_eq!(a["hedging"], s["hedging"], "{id}");
        let h = &a["server_hedge_ms"];
        assert_eq!(h["count"], 100, "{id}: {h}");
        let p50 = h["p50"].as_f64().unwrap();
        assert!(
            (p50 - 100.0).abs() <= 0.05 * 100.0 + 20.0,
            "{id}: server-seen hedge delay p50 {p50} ms for a 100 ms policy"
        );
        assert!(
            s.get("server_hedge_ms").is_none(),
            "the simulator has no ids"
        );
    }
}
