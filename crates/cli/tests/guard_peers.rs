//! The Rust hedging and breaker libraries themselves, each beside its replica on a real
//! socket: failsafe-rs lets through exactly what the `failsafe` replica does on an upstream
//! that fails everything, and tower's `hedge` sends its hedges when the `tower-hedge`
//! replica does, as the server sees them (within 5% + 20 ms).

mod common;
use common::*;
use serde_json::Value;

const FAILSAFE: &str = r#"
name = "failsafe-pair"
[load]
requests = 100
rate = 100
arrival = "constant"
[upstream]
error_rate = 1.0
[[arms]]
id = "replica"
policy = "none"
breaker = { profile = "failsafe" }
[[arms]]
id = "failsafe-rs"
client = "failsafe-rs"
"#;

/// failsafe-rs' defaults open on the 5th failure in a row, for at least 5 s: of 100 calls
/// 10 ms apart, 5 reach the server, from the library as from its replica. Counted only if
/// the driver kept the calls apart (lag under 5 ms): calls bunched by a busy machine
/// overlap, and a breaker lets through what is in flight before it opens.
#[test]
fn failsafe_rs_lets_through_what_its_replica_does() {
    let dir = tempdir("failsafe-pair");
    let file = dir.join("s.toml");
    std::fs::write(&file, FAILSAFE).unwrap();
    let v = bench_within(&[file.to_str().unwrap()], 5.0);
    let (r, real) = (arm(&v, "replica"), arm(&v, "failsafe-rs"));
    assert_eq!(r["server_requests"], 5);
    assert_eq!(real["server_requests"], r["server_requests"]);
    assert_eq!(real["logical_requests"], 100);
    assert_eq!(real["hard_fail_ratio"], 1.0);
    assert_eq!(r["breaker"]["rejected"], 95);
}

const TOWER: &str = r#"
name = "tower-hedge-pair"
seed = 9
[load]
requests = 3500
rate = 50
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 2000
[upstream]
service_time = { dist = "lognormal", median_ms = 20, p99_ms = 100 }
[[arms]]
id = "replica"
policy = "none"
hedge = { profile = "tower-hedge" }
[[arms]]
id = "tower-hedge"
client = "tower-hedge"
"#;

/// tower's hedge reads the previous 60 s period's latencies, so both hedge only in the
/// last 10 s of a 70 s run, at the p90 of the first 60 s: the server sees their hedges
/// arrive that long after the originals, within 5% + 20 ms of each other, and about as
/// many of them.
#[test]
fn tower_hedge_sends_its_hedges_when_its_replica_does() {
    let dir = tempdir("tower-hedge-pair");
    let file = dir.join("s.toml");
    std::fs::write(&file, TOWER).unwrap();
    // On schedule: a thread the machine starves records latencies (and fires hedge
    // timers) late, and the two arms' histograms then describe the machine.
    let v = bench_on_schedule(&[file.to_str().unwrap()]);
    let (r, real) = (arm(&v, "replica"), arm(&v, "tower-hedge"));
    let delay = |a: &Value| {
        let h = &a["server_hedge_ms"];
        assert!(h["count"].as_u64().unwrap() >= 10, "{}: {h}", a["id"]);
        (h["p50"].as_f64().unwrap(), h["count"].as_u64().unwrap())
    };
    let ((dr, nr), (dt, nt)) = (delay(r), delay(real));
    eprintln!("replica: {nr} hedges at {dr} ms; tower: {nt} at {dt} ms");
    assert!(
        (dt - dr).abs() <= 0.05 * dr + 20.0,
        "tower's hedges at {dt} ms against the replica's {dr} ms"
    );
    let extra = |a: &Value| a["server_requests"].as_f64().unwrap() - 3500.0;
    assert!(
        (extra(real) - extra(r)).abs() <= 0.5 * extra(r) + 10.0,
        "tower sent {} hedges, the replica {}",
        extra(real),
        extra(r)
    );
}
