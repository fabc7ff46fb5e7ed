//! The most-installed retry packages, each at its defaults beside herd's replica of it, on
//! `sdks` through `herd bench` (issue #31): got 14, ky 1 and p-retry 7 around fetch through
//! the Node adapter, stamina 26 and backoff 2.2 around httpx through the Python adapter, and
//! backon 1.5 around reqwest, compiled in.
//!
//! - Each real library's load (server requests per logical request) is within 10% of its
//!   replica's, through a 15 s outage and a brownout.
//! - For the libraries without jitter (ky, p-retry, backon) and got, whose 100 ms of noise
//!   on a 1 s delay leaves it nearly deterministic, the first retry as the server sees it
//!   (from the 503 to the request's next arrival, by request id) is within 5% + 20 ms of the
//!   replica's.
//!
//! The arms run in six `herd bench` processes side by side (see [`BENCHES`]).
//!
//! These need Node with npm and python3 with venv (`.ci/run` installs them): they fail
//! without them, never skip.

mod common;
use common::*;
use serde_json::Value;

/// (replica arm, real arm, whether the first retry is compared).
const PAIRS: [(&str, &str, bool); 6] = [
    ("replica-got", "node-got", true),
    ("replica-ky", "node-ky", true),
    ("replica-p-retry", "node-p-retry", true),
    ("replica-stamina", "py-stamina", false),
    ("replica-backoff", "py-backoff", false),
    ("replica-backon", "backon", true),
];

/// The arms of each `herd bench` that runs the pairs, the six benches at once: each library
/// in another program alone, and herd's own arms (the replicas and backon, which one bench
/// runs together). One bench of all twelve arms ran those five one after another (263 s in
/// CI); side by side the longest arm sets the time, and a library shares the machine with
/// the four other libraries and herd's seven arms, each at 20 requests a second.
const BENCHES: [&[&str]; 6] = [
    &["node-got"],
    &["node-ky"],
    &["node-p-retry"],
    &["py-stamina"],
    &["py-backoff"],
    &[
        "replica-got",
        "replica-ky",
        "replica-p-retry",
        "replica-stamina",
        "replica-backoff",
        "replica-backon",
        "backon",
    ],
];

fn load(a: &Value) -> f64 {
    a["server_requests"].as_f64().unwrap() / a["logical_requests"].as_f64().unwrap()
}

fn first_retry_p50(a: &Value) -> f64 {
    let f = &a["server_first_retry_ms"];
    assert!(
        f["count"].as_u64().unwrap_or(0) >= 20,
        "{}: too few first retries seen: {f}",
        a["id"]
    );
    f["p50"].as_f64().unwrap()
}

#[test]
fn on_sdks_each_real_package_loads_the_upstream_like_its_replica() {
    // On schedule: a starved driver offers the load in bunches, and then the figures
    // describe the machine.
    let reports: Vec<Value> = std::thread::scope(|s| {
        let running: Vec<_> = BENCHES
            .iter()
            .map(|arms| {
                s.spawn(move || {
                    let mut args = vec!["sdks"];
                    arms.iter().for_each(|id| args.extend(["--arm", id]));
                    bench_on_schedule(&args)
                })
            })
            .collect();
        running.into_iter().map(|b| b.join().unwrap()).collect()
    });
    // The report that holds `id`'s arm.
    let of = |id: &str| {
        let holds = |v: &&Value| v["arms"].as_array().unwrap().iter().any(|a| a["id"] == id);
        reports.iter().find(holds).expect("every arm ran")
    };
    let mut wrong = vec![];
    for (replica_id, real_id, timed) in PAIRS {
        let (r, real) = (arm(of(replica_id), replica_id), arm(of(real_id), real_id));
        assert_eq!(real["logical_requests"], 400, "{real_id}");
        assert_eq!(
            real["client_attempts"], real["server_requests"],
            "{real_id}: the adapter's attempts are what the server received: {real}"
        );
        let (lr, lreal) = (load(r), load(real));
        let ratio = lreal / lr;
        let (fr, freal) = (first_retry_p50(r), first_retry_p50(real));
        eprintln!(
            "{real_id}: load {lreal:.3} vs {replica_id} {lr:.3} ({ratio:.3}x); first retry p50 {freal:.1} ms vs {fr:.1} ms"
        );
        if (ratio - 1.0).abs() > 0.10 {
            wrong.push(format!(
                "{real_id}: load {lreal:.3} vs {replica_id}'s {lr:.3} ({ratio:.3}x)"
            ));
        }
        if timed && (freal - fr).abs() > 0.05 * fr + 20.0 {
            wrong.push(format!(
                "{real_id}: first retry p50 {freal:.1} ms vs {replica_id}'s {fr:.1} ms"
            ));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}
