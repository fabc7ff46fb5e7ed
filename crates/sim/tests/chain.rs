//! Call graphs (`[[hops]]`): retries compound across layers as the closed forms say
//! (docs/call-graphs.md), and budgets at every layer bound the bottom's load.

use herd_scenario::hop_closed_form::requests_per_edge_request;
use herd_scenario::{HopReport, Scenario};

/// A chain of `layers` clients (the arm and `layers − 1` hops), each making `attempts`
/// attempts with no delay and no jitter, over a bottom failing with probability `p`;
/// `budget` (an inline TOML table, or "") at every layer.
fn chain(layers: usize, attempts: u32, p: f64, requests: u64, budget: &str) -> Scenario {
    let retries = attempts - 1;
    let budget = if budget.is_empty() {
        String::new()
    } else {
        format!(", budget = {budget}")
    };
    let mut text = format!(
        "name = \"chain-test\"\nseed = 7\n[load]\nrequests = {requests}\nrate = 500\n\
         arrival = \"constant\"\n[upstream]\nerror_rate = {p}\n"
    );
    for h in 1..layers {
        text += &format!(
            "[[hops]]\nid = \"hop{h}\"\nclient = {{ policy = \"naive\", retries = {retries}{budget} }}\n"
        );
    }
    text += &format!("[[arms]]\nid = \"edge\"\npolicy = \"naive\"\nretries = {retries}\n");
    if !budget.is_empty() {
        text += &budget.replacen(", budget = ", "budget = ", 1);
        text += "\n";
    }
    herd_scenario::parse(&text, "chain-test").expect("valid chain")
}

fn hops(s: &Scenario) -> Vec<HopReport> {
    let run = herd_sim::simulate(s, 0);
    let report = run.report(s, 0);
    assert_eq!(report.logical_requests, s.load.requests);
    report.hops.expect("a chain reports its hops")
}

#[test]
fn three_layers_of_three_attempts_put_27_on_a_failing_bottom() {
    let s = chain(3, 3, 1.0, 1000, "");
    let h = hops(&s);
    let got: Vec<(&str, u64)> = h.iter().map(|x| (x.id.as_str(), x.requests)).collect();
    assert_eq!(got, [("hop1", 3000), ("hop2", 9000), ("upstream", 27_000)]);
    assert_eq!(h[2].amplification, 27.0);
    // Every hop returns every call it received as a failure.
    assert_eq!(h[0].failed, 3000);
    assert_eq!(h[2].failed, 27_000);
}

#[test]
fn independent_bottom_failures_meet_the_product_formula() {
    let p = 0.3;
    let s = chain(3, 3, p, 20_000, "");
    let closed = requests_per_edge_request(3, 3, p);
    let h = hops(&s);
    for (&expected, hop) in closed.iter().zip(&h) {
        let err = (hop.amplification - expected).abs() / expected;
        assert!(
            err < 0.03,
            "{}: {} per edge request, closed form {expected:.4}",
            hop.id,
            hop.amplification
        );
    }
}

#[test]
fn a_budget_at_every_layer_bounds_the_bottom_and_none_does_not() {
    // 20% retry ratio at every layer: each layer sends at most 1.2 times the calls it
    // gets, so the bottom gets at most 1.2³ per edge request. 10 s of load, one window.
    let bound = 1.2_f64.powi(3);
    let budgeted = chain(3, 3, 1.0, 5000, "{ kind = \"ratio\", ratio = 0.2 }");
    let bottom = hops(&budgeted).pop().expect("bottom").amplification;
    assert!(bottom <= bound * 1.02, "budgeted bottom {bottom} > {bound}");
    let free = chain(3, 3, 1.0, 5000, "");
    let bottom_free = hops(&free).pop().expect("bottom").amplification;
    assert!(bottom_free > bound, "unbudgeted bottom {bottom_free}");
}

#[test]
fn no_layer_exceeds_the_product_of_attempts() {
    for p in [0.0, 0.1, 0.5, 0.9, 1.0] {
        for (layers, n) in [(2, 2), (3, 3), (4, 2)] {
            let s = chain(layers, n, p, 300, "");
            for (depth, hop) in hops(&s).iter().enumerate() {
                let max = u64::from(n).pow(depth as u32 + 1) * 300;
                assert!(
                    hop.requests <= max,
                    "p {p}, {layers}x{n}: {} > {max}",
                    hop.requests
                );
                assert!(
                    hop.requests >= 300,
                    "every layer sees each request at least once"
                );
            }
        }
    }
}

#[test]
fn same_seed_same_chain() {
    let s = chain(3, 3, 0.4, 2000, "");
    let a = herd_sim::simulate(&s, 0).report(&s, 0);
    let b = herd_sim::simulate(&s, 0).report(&s, 0);
    assert_eq!(a, b);
}
