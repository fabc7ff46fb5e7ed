//! Real gRPC clients through `herd bench`, each beside its replica, against herd's upstream
//! speaking gRPC (`[upstream] protocol = "grpc"`), every client configured by the same
//! service config (the measured one: 4 attempts, 0.1 s, x2, 1 s, UNAVAILABLE):
//!
//! - calls to a server that fails every call UNAVAILABLE: 4 attempts a call from the real
//!   client and from its replica (simulated, and on the socket), the attempts the real
//!   client's adapter counted equal to the server's, and the first retry, timed by the
//!   server, within 5% + 20 ms of the replica's on the socket (the simulator has no request
//!   ids to time it by). grpcio and grpc-js draw it from 100 ms ±20%, so 30 calls and the
//!   mean pin it. grpc-go 1.33 draws it from U(0, 100 ms) (full jitter): there the mean
//!   alone would pass any schedule averaging 50 ms, a constant one included, so its mean,
//!   median and 90th percentile are each compared, over 200 calls, which keeps each
//!   side's sampling error (about 2 ms on the mean, 3.5 ms on the median) well inside the
//!   tolerance;
//! - with `retryThrottling {10, 0.1}`, 50 failing calls one after another (1/s): 53
//!   requests from the real client and from its replica; and 50 overlapping, where the
//!   moment the bucket is asked matters: the same count from both (grpcio 54, grpc-js 52
//!   when measured at 10/s). grpc-go's overlapping calls come at 50/s: with full jitter the
//!   first call's four attempts could all end before the second call's first at 10/s
//!   (chance about 1 in 50, and then 53, not 54), at 50/s about 1 in 6000;
//! - hedging (3 attempts 0.1 s apart) against a slow server: grpc-js's hedges reach the
//!   server 100 and 200 ms after the original, as its replica's do (within 5% + 20 ms);
//!   grpcio and grpc-go ignore the policy (1 attempt a call), and so do their replicas,
//!   whose policy says so.
//!
//! These need python3 with venv, Node.js with npm (herd installs the kits' pinned grpcio
//! and @grpc/grpc-js) and Go with Debian's grpc-go (`golang-google-grpc-dev`, 1.33.3);
//! they fail without them, never skip.

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

/// The replica's arm in `herd sim`, and each arm of `file` in a `herd bench` of its own, the
/// three at once: (simulated replica, replica on the socket, real client). Each arm has an
/// upstream of its own either way; side by side, a file takes one arm's time, not two (the
/// sequential calls at 1/s are 50 s an arm). A real client then shares the machine with
/// up to seven other arms (its replica, the sequential calls' two, the other test's four),
/// each at 50 calls a second at most.
fn runs(file: &Path) -> (Value, Value, Value) {
    let file = file.to_str().unwrap();
    thread::scope(|s| {
        let sim = s.spawn(|| report(&["sim", file, "--arm", "replica"]));
        let replica = s.spawn(|| report(&["bench", file, "--arm", "replica"]));
        let real = report(&["bench", file, "--arm", "real"]);
        (
            arm(&sim.join().unwrap(), "replica").clone(),
            arm(&replica.join().unwrap(), "replica").clone(),
            arm(&real, "real").clone(),
        )
    })
}

fn write(dir: &Path, name: &str, text: String) -> std::path::PathBuf {
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f
}

fn within(real: f64, replica: f64) -> bool {
    (real - replica).abs() <= 0.05 * replica + 20.0
}

/// How a client jitters its retry delay `b` (`initialBackoff·backoffMultiplier^(n−1)`,
/// capped), which decides how its first retry is compared and how fast the overlapping
/// calls must come.
#[derive(Clone, Copy)]
enum Jitter {
    /// `b·U(0.8, 1.2)` (C-core, grpc-js).
    TwentyPercent,
    /// `U(0, b)` (grpc-go 1.33).
    Full,
}

impl Jitter {
    /// (calls, rate) of the retries run.
    fn retries_load(self) -> (u32, u32) {
        match self {
            Jitter::TwentyPercent => (30, 10),
            Jitter::Full => (200, 50),
        }
    }

    /// The rate of the 50 overlapping throttled calls.
    fn overlapping_rate(self) -> u32 {
        match self {
            Jitter::TwentyPercent => 10,
            Jitter::Full => 50,
        }
    }

    /// The server-seen first-retry figures compared.
    fn compared(self) -> &'static [&'static str] {
        match self {
            Jitter::TwentyPercent => &["mean"],
            Jitter::Full => &["mean", "p50", "p90"],
        }
    }
}

/// One client against its replica: retries, throttling, hedging.
fn pair(profile: &'static str, client: &'static str, jitter: Jitter) {
    let dir = tempdir(&format!("real-grpc-{client}"));
    let fail = "error_rate = 1.0";
    let retry = service_config(RETRY, "");
    let throttle = service_config(RETRY, THROTTLE);
    let (calls, rate) = jitter.retries_load();
    let retries = write(
        &dir,
        "retries.toml",
        scenario(calls, rate, fail, profile, client, &retry),
    );
    let sequential = write(
        &dir,
        "sequential.toml",
        scenario(50, 1, fail, profile, client, &throttle),
    );
    let overlapping = write(
        &dir,
        "overlapping.toml",
        scenario(
            50,
            jitter.overlapping_rate(),
            fail,
            profile,
            client,
            &throttle,
        ),
    );
    let slow = "service_time = { dist = \"constant\", ms = 400 }";
    let hedged = write(
        &dir,
        "hedged.toml",
        scenario(10, 10, slow, profile, client, &service_config(HEDGE, "")),
    );

    // The 50 sequential calls take 50 s: they run beside the other files.
    thread::scope(|s| {
        let one_by_one = s.spawn(|| runs(&sequential));
        let sequential = move || one_by_one.join().unwrap();
        check(
            profile,
            client,
            jitter,
            calls,
            [&retries, &overlapping, &hedged],
            sequential,
        );
    });
}

/// The checks of [`pair`] on its `retries`, `overlapping` and `hedged` files; `sequential`
/// gives the runs of its sequential throttled calls.
fn check(
    profile: &str,
    client: &str,
    jitter: Jitter,
    calls: u32,
    [retries, overlapping, hedged]: [&Path; 3],
    sequential: impl FnOnce() -> (Value, Value, Value),
) {
    let (sim, replica, real) = runs(retries);
    for (v, who) in [
        (&sim, "simulated replica"),
        (&replica, "replica"),
        (&real, client),
    ] {
        assert_eq!(v["server_requests"], 4 * calls, "{client}, {who}: {v}");
    }
    assert_eq!(
        real["client_attempts"], real["server_requests"],
        "{client}: {real}"
    );
    for key in jitter.compared() {
        let first = |v: &Value| v["server_first_retry_ms"][key].as_f64().unwrap();
        let (b, r) = (first(&real), first(&replica));
        eprintln!("{client}: first retry {key} {b:.1} ms, {profile} replica {r:.1} ms (server-seen, {calls} calls)");
        assert!(within(b, r), "{client} {key} {b} vs {profile} {r}");
    }

    for (name, (sim, replica, real), expected) in [
        ("sequential", sequential(), Some(53)),
        ("overlapping", runs(overlapping), None),
    ] {
        eprintln!(
            "{client}: 50 failing calls, throttled, {name}: {} requests; replica {} (simulated {})",
            real["server_requests"], replica["server_requests"], sim["server_requests"]
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

    let (sim, replica, real) = runs(hedged);
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
    let js = thread::spawn(|| pair("grpc-js", "node-grpc-js", Jitter::TwentyPercent));
    pair("grpc-core", "py-grpcio", Jitter::TwentyPercent);
    js.join().unwrap();
}

#[test]
fn grpc_go_sends_what_its_replica_sends() {
    pair("grpc-go-1.33", "go-grpc", Jitter::Full);
}
