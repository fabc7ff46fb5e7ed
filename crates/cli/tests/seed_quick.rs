//! The seed's finding on a real socket: `herd bench seed-quick` must show the synchronised
//! wave of un-jittered retries, and full jitter must soften it. These figures are
//! checked on every CI run (about 17 s).

mod common;
use common::*;
use serde_json::Value;
use std::collections::HashMap;

#[test]
fn seed_quick_shows_the_wave_and_jitter_softens_it() {
    let v: Value = bench_on_schedule(&["seed-quick"]);
    let arms: HashMap<String, &Value> = v["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["id"].as_str().unwrap().to_owned(), a))
        .collect();
    assert_eq!(arms.len(), 6);
    let f = |id: &str, k: &str| arms[id][k].as_f64().unwrap_or_else(|| panic!("{id}.{k}"));

    // No retry: the server sees what is offered, and the faults show as hard failures.
    assert!((f("no-retry", "load_multiplier") - 1.0).abs() <= 0.02);
    assert!(f("no-retry", "peak_rps_multiplier") <= 1.1);
    let hf = f("no-retry", "hard_fail_ratio");
    assert!((0.015..=0.04).contains(&hf), "no-retry hard-fail {hf}");

    // Un-jittered backoff: every request that failed together retries together.
    let base = f("no-retry", "burst_multiplier");
    for id in ["axios-exp-nojitter", "undici"] {
        let b = f(id, "burst_multiplier");
        assert!(b >= 2.0 * base, "{id} burst {b} vs no-retry {base}");
    }
    // Full jitter spreads the same retries out.
    assert!(
        f("axios-exp-fulljitter", "burst_multiplier") < f("axios-exp-nojitter", "burst_multiplier")
    );
    assert!(f("undici-fulljitter", "burst_multiplier") <= 0.67 * f("undici", "burst_multiplier"));
    for id in ["axios-exp-fulljitter", "undici-fulljitter"] {
        assert!(f(id, "hard_fail_ratio") <= 0.005, "{id} hard-fail");
    }
    // Every attempt the client made reached the server's count (no hidden retries, no
    // attempts lost), except those that never got a response and were shed by reset.
    for (id, a) in &arms {
        assert!(
            a["server_requests"].as_u64() <= a["client_attempts"].as_u64(),
            "{id}"
        );
    }
}
