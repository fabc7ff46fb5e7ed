//! A cap that takes the jitter away: `capped-waits`, a long outage with a stall in it.
//!
//! stamina jitters its waits (0.1·2^(n−1) + U(0, 1) s) until they reach its 5 s cap from
//! the 7th retry on; after that they are exactly 5 s. Requests that failed together early
//! do not retry together (six jittered waits spread them first, README "Who synchronises
//! retries"), but requests that fail together once they are past the cap, as when a
//! dependency stalls in the middle of a long outage and then answers everything it held
//! at once, come back together 5 s later, and 5 s after that. Full jitter at every retry
//! (backoff, tenacity) spreads the same requests out.

mod common;
use common::*;
use serde_json::Value;

/// The arm's 100 ms buckets as (server requests, start in ms), largest first.
fn buckets_by_size(arm: &Value) -> Vec<(u64, u64)> {
    let mut b: Vec<(u64, u64)> = arm["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|t| (t["server"].as_u64().unwrap(), t["t_ms"].as_u64().unwrap()))
        .collect();
    b.sort_by(|x, y| y.cmp(x));
    b
}

#[test]
fn requests_held_together_past_stamina_s_cap_retry_together_every_5_s() {
    let o = herd(&[
        "sim",
        "capped-waits",
        "--arm",
        "stamina",
        "--arm",
        "backoff",
        "--arm",
        "tenacity",
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let arm = |id: &str| {
        v["arms"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("arm {id}"))
            .clone()
    };
    let stamina = buckets_by_size(&arm("stamina"));
    // The stall answers its held requests at 21.0 s: stamina's three largest buckets are
    // that release plus 5, 10 and 15 s, exactly.
    let mut waves: Vec<u64> = stamina[..3].iter().map(|&(_, t)| t).collect();
    waves.sort_unstable();
    assert_eq!(waves, [26_000, 31_000, 36_000], "{:?}", &stamina[..6]);
    // Each is a burst: at least 20x the 2 requests a bucket the schedule offers.
    assert!(stamina[2].0 >= 40, "{:?}", &stamina[..3]);
    // Full jitter at every retry leaves no such wave.
    for id in ["backoff", "tenacity"] {
        let largest = buckets_by_size(&arm(id))[0];
        assert!(
            largest.0 * 2 < stamina[2].0,
            "{id}'s largest bucket {largest:?} against stamina's third wave {:?}",
            stamina[2]
        );
    }
}
