//! `herd sim chain` end to end: a call graph's report carries one entry per hop, the text
//! table a column group per hop, and a 20% budget at every layer keeps the bottom within
//! the budgets' bound where the unbudgeted chain passes it. `herd bench` of a call graph:
//! `chain_bench.rs`.

mod common;
use common::*;
use serde_json::Value;

fn sim(name: &str) -> Value {
    let o = herd(&["sim", name, "--json", "-", "--quiet"]);
    assert!(o.status.success(), "herd sim {name}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

/// The bottom's requests per edge request for arm `id`.
fn bottom(report: &Value, id: &str) -> f64 {
    let arm = report["arms"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == id)
        .unwrap_or_else(|| panic!("arm {id}"));
    let hops = arm["hops"].as_array().expect("hops");
    let ids: Vec<&str> = hops.iter().map(|h| h["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["sidecar", "service", "upstream"]);
    let last = hops.last().unwrap();
    assert_eq!(last["requests"], arm["server_requests"]);
    last["amplification"].as_f64().unwrap()
}

#[test]
fn herd_sim_chain_reports_every_hop_and_the_budget_bounds_the_bottom() {
    let free = sim("chain");
    let budgeted = sim("chain-budget");
    // Each layer of `chain-budget` sends at most 1.2 times its calls plus 10 retries/s
    // over the 20 s run: the bound on the store's requests per edge request, 4 layers.
    let requests = budgeted["arms"][0]["logical_requests"].as_f64().unwrap();
    let mut bound = requests;
    for _ in 0..3 {
        bound = 1.2 * bound + 10.0 * 20.0;
    }
    let bound = bound / requests;
    let (b, f) = (
        bottom(&budgeted, "axios-retry"),
        bottom(&free, "axios-retry"),
    );
    assert!(b <= bound, "budgeted store {b}x > bound {bound}x");
    assert!(f > bound, "unbudgeted store {f}x within the bound {bound}x");
}

#[test]
fn the_text_table_has_a_column_group_per_hop() {
    let o = herd(&["sim", "chain"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    for h in ["sidecar requests", "service x edge", "upstream 100ms burst"] {
        assert!(out.contains(h), "{h} in:\n{out}");
    }
}
