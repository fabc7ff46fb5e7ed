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

/// An edge without retries sends 1000 requests in 1 s through a mesh hop (`client` is its
/// client) to a service that answers 503 after 50 ms of work: its store (the bottom)
/// refuses every request at once, and it does not retry. Injected 503s are answered in
/// front of the workers, so the 50 ms of a failure come from the service's own work.
fn mesh(client: &str) -> Scenario {
    let text = format!(
        "name = \"mesh-cap\"\nseed = 7\n[load]\nrequests = 1000\nrate = 1000\narrival = \"constant\"\n\
         [client]\npool_max_connections = 4000\nattempt_timeout_ms = 0\n\
         [upstream]\nerror_rate = 1.0\nworkers = 0\n\
         [[hops]]\nid = \"mesh\"\nserver = {{ workers = 0, service_time = {{ dist = \"constant\", ms = 0.1 }} }}\n\
         client = {client}\n\
         [[hops]]\nid = \"service\"\nserver = {{ workers = 0, service_time = {{ dist = \"constant\", ms = 50 }} }}\n\
         client = {{ policy = \"none\" }}\n\
         [[arms]]\nid = \"edge\"\npolicy = \"none\"\n"
    );
    herd_scenario::parse(&text, "mesh-cap").expect("valid mesh")
}

#[test]
fn envoys_circuit_breaker_keeps_three_retries_in_flight_and_istios_cap_does_not() {
    // Envoy's `max_retries` 3: a retry holds its slot from the failure that grants it to
    // its own answer, so for at least the service's 50 ms. Failures at the mesh arrive
    // from 50 ms to about 1.05 s, so at most 3 · (1.1 s / 50 ms + 1) retries fit. At least
    // 3 go per 100 ms (Envoy's first backoff is under 25 ms, the attempt 50 ms and the
    // network), since a failure is waiting whenever a slot frees.
    let h = hops(&mesh("{ policy = \"envoy\" }"));
    let (at_mesh, below) = (h[0].requests, h[1].requests);
    assert_eq!(at_mesh, 1000);
    let retries = below - at_mesh;
    eprintln!("envoy: {at_mesh} at the mesh, {below} below it, {retries} retries");
    let most = 3.0 * (1.1 / 0.05 + 1.0);
    assert!(retries as f64 <= most, "{retries} retries > {most}");
    assert!(
        retries >= 3 * 10,
        "{retries} retries: the cap let too few go"
    );
    // The same route without the breaker retries every failure once.
    let free = hops(&mesh(
        "{ policy = \"envoy\", budget = { kind = \"none\" } }",
    ));
    assert_eq!((free[0].requests, free[1].requests), (1000, 2000));
    // Istio raises the cap to 2^32 - 1: both of its retries go for every request.
    let istio = hops(&mesh("{ policy = \"istio-default\" }"));
    assert_eq!((istio[0].requests, istio[1].requests), (1000, 3000));
    // Envoy's retry budget instead: 20% of the attempts outstanding below the mesh (about
    // 50 first tries, one per ms over the service's 50 ms, plus the retries in flight),
    // at least 3. Retries in backoff are not outstanding requests, so the cap stays near
    // a tenth of the failures, well below one retry each.
    let budget = hops(&mesh(
        "{ policy = \"envoy\", budget = { kind = \"concurrency\", budget_percent = 20, min_retry_concurrency = 3 } }",
    ));
    let retries_b = budget[1].requests - budget[0].requests;
    eprintln!("envoy retry budget: {retries_b} retries");
    assert!(retries_b > retries && retries_b < 1000, "{retries_b}");
}
