//! Call graphs on real sockets (`herd bench` of a scenario with `[[hops]]`): every hop a
//! server on a port of its own that calls the next with its client. Three layers of three
//! attempts put exactly 27 requests on a failing bottom per edge request, as the closed
//! form and the simulator say; on a three-hop graph with a capacity-limited hop, the
//! simulator and the sockets agree within 10% on every hop's load. With independent
//! failures at the bottom, every hop's load meets the closed form's product within 3%;
//! and a 20% budget at every layer keeps the bottom within the budgets' bound, which the
//! unbudgeted chain passes. With `[upstream] tls`, the last hop reaches the bottom over
//! HTTPS and the chain counts as the simulator's.

mod common;
use common::*;
use herd_scenario::hop_closed_form::requests_per_edge_request;
use serde_json::Value;
use std::path::PathBuf;

fn scenario(name: &str, text: &str) -> PathBuf {
    let path = tempdir(name).join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The edge arm (`naive`, 2 retries) and two hops making 3 attempts each, with no delay
/// and no jitter, over a bottom that answers every request 503.
const TWENTY_SEVEN: &str = r#"
name = "chain-27"
seed = 7

[load]
requests = 200
rate = 100
arrival = "constant"

[upstream]
error_rate = 1.0

[[hops]]
id = "hop1"
client = { policy = "naive", retries = 2 }

[[hops]]
id = "hop2"
client = { policy = "naive", retries = 2 }

[[arms]]
id = "edge"
policy = "naive"
retries = 2
"#;

/// Each hop's (id, requests, amplification, failed) of arm `id`.
fn hops(v: &Value, id: &str) -> Vec<(String, u64, f64, u64)> {
    arm(v, id)["hops"]
        .as_array()
        .unwrap_or_else(|| panic!("arm {id} has no hops: {v}"))
        .iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap().to_owned(),
                h["requests"].as_u64().unwrap(),
                h["amplification"].as_f64().unwrap(),
                h["failed"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn three_layers_of_three_attempts_put_exactly_27_on_a_failing_bottom_on_sockets() {
    let path = scenario("chain-27", TWENTY_SEVEN);
    let dir = tempdir("chain-27-out");
    let json = dir.join("bench.json");
    let o = herd(&[
        "bench",
        path.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // The hop table is printed under the arms' table, as for `herd sim`.
    let text = stdout(&o);
    for h in ["hop1 requests", "hop2 x edge", "upstream failed"] {
        assert!(text.contains(h), "{h} in:\n{text}");
    }
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(arm(&v, "edge")["logical_requests"], 200);
    let want = [
        ("hop1".to_owned(), 600, 3.0, 600),
        ("hop2".to_owned(), 1800, 9.0, 1800),
        ("upstream".to_owned(), 5400, 27.0, 5400),
    ];
    assert_eq!(hops(&v, "edge"), want);
    assert_eq!(arm(&v, "edge")["server_requests"], 5400);

    // The simulator says the same, exactly.
    assert_eq!(hops(&sim(&path), "edge"), want);
}

/// Three hops over a store: a gateway with Istio's default retries, a service with four
/// workers and a short line (shedding 503, so its queue and its sheds shape what the
/// gateway retries), and a proxy that retries once, over a store failing 5% of requests.
const CAPACITY: &str = r#"
name = "chain-capacity"
seed = 11

[load]
requests = 2000
rate = 250
arrival = "poisson"

[client]
attempt_timeout_ms = 1000

[upstream]
error_rate = 0.05
service_time = { dist = "constant", ms = 3 }
workers = 8
queue_limit = 8
shed = "503"

[[hops]]
id = "gateway"
server = { service_time = { dist = "constant", ms = 0.5 } }
client = { policy = "istio-default" }

[[hops]]
id = "service"
server = { service_time = { dist = "constant", ms = 8 }, workers = 4, queue_limit = 4, shed = "503" }
client = { policy = "exponential", retries = 2 }

[[hops]]
id = "proxy"
server = { service_time = { dist = "constant", ms = 0.5 } }
client = { policy = "naive", retries = 1 }

[[arms]]
id = "edge"
policy = "axios-retry"
"#;

#[test]
fn simulator_and_sockets_agree_within_10_percent_on_every_hops_load() {
    let path = scenario("chain-capacity", CAPACITY);
    let s = hops(&sim(&path), "edge");
    let r = hops(&bench_on_schedule(&[path.to_str().unwrap()]), "edge");
    assert_eq!(s.len(), 4);
    // The service's capacity binds: it sheds in both.
    assert!(s[1].3 > 0 && r[1].3 > 0, "the service sheds: {s:?} {r:?}");
    within_10_percent(&s, &r);
}

/// `herd sim` of the scenario at `path`: its JSON report.
fn sim(path: &std::path::Path) -> Value {
    report("sim", path)
}

/// `herd bench` of the scenario at `path`: its JSON report.
fn bench(path: &std::path::Path) -> Value {
    report("bench", path)
}

/// `herd COMMAND` of the scenario at `path`: its JSON report.
fn report(command: &str, path: &std::path::Path) -> Value {
    let o = herd(&[command, path.to_str().unwrap(), "--json", "-", "--quiet"]);
    assert!(o.status.success(), "herd {command}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

/// Every hop's requests on sockets (`real`) within 10% of the simulator's (`sim`).
fn within_10_percent(sim: &[(String, u64, f64, u64)], real: &[(String, u64, f64, u64)]) {
    eprintln!("sim:  {sim:?}\nreal: {real:?}");
    assert_eq!(sim.len(), real.len());
    for (a, b) in sim.iter().zip(real) {
        assert_eq!(a.0, b.0);
        let err = (a.1 as f64 - b.1 as f64).abs() / a.1 as f64;
        assert!(
            err <= 0.10,
            "{}: sim {} requests, sockets {} ({:.1}% apart)",
            a.0,
            a.1,
            b.1,
            err * 100.0
        );
    }
}

#[test]
fn bench_refuses_hops_with_direct_or_a_shard() {
    let path = scenario("chain-refusals", TWENTY_SEVEN);
    let p = path.to_str().unwrap();
    for (args, why) in [
        (
            vec!["bench", p, "--target", "http://127.0.0.1:9/", "--direct"],
            "--direct",
        ),
        (vec!["bench", p, "--shard", "1/2"], "--shard"),
    ] {
        let o = herd(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(why) && e.contains("[[hops]]"), "{args:?}: {e}");
    }
}

/// A uniform chain of `layers` clients (the edge arm and `layers − 1` hops), each making
/// `n` attempts with no delay and no jitter, over a bottom with no capacity limit that
/// fails each request with probability `p`; `budget` (an inline table, or "") at every
/// layer. `requests` at `rate` per second.
fn uniform(layers: usize, n: u32, p: f64, requests: u64, rate: u64, budget: &str) -> String {
    let mut keys = vec![
        "policy = \"naive\"".to_owned(),
        format!("retries = {}", n - 1),
    ];
    if !budget.is_empty() {
        keys.push(format!("budget = {budget}"));
    }
    let client = keys.join(", ");
    let hops: String = (1..layers)
        .map(|h| format!("[[hops]]\nid = \"hop{h}\"\nclient = {{ {client} }}\n\n"))
        .collect();
    format!(
        "name = \"chain-uniform\"\nseed = 13\n\n[load]\nrequests = {requests}\nrate = {rate}\n\
         arrival = \"constant\"\n\n[upstream]\nerror_rate = {p:?}\n\n{hops}\
         [[arms]]\nid = \"edge\"\n{}\n",
        keys.join("\n")
    )
}

#[test]
fn independent_bottom_failures_meet_the_product_formula_on_sockets() {
    // The docs' graph, and one of another depth, width and p.
    for (layers, n, p, requests) in [(3, 3, 0.3, 5000), (4, 2, 0.5, 4000)] {
        let name = format!("chain-product-{layers}x{n}");
        let path = scenario(&name, &uniform(layers, n, p, requests, 1000, ""));
        let got = hops(&bench(&path), "edge");
        let closed = requests_per_edge_request(layers, n, p);
        eprintln!("{layers} layers x {n} attempts, p {p}: sockets {got:?}, closed form {closed:?}");
        assert_eq!(got.len(), layers);
        for (&want, (id, _, x, _)) in closed.iter().zip(&got) {
            let err = (x - want).abs() / want;
            assert!(
                err < 0.03,
                "{layers}x{n}, p {p}: {id} {x} per edge request, closed form {want:.4} \
                 ({:.1}% apart)",
                err * 100.0
            );
        }
    }
}

#[test]
fn a_20_percent_budget_at_every_layer_bounds_the_bottom_on_sockets() {
    // Each layer retries at most 20% of the calls it gets (one window: the run is shorter
    // than the budget's 10 s), so the bottom gets at most 1.2³ per edge request, whatever
    // fails; without budgets, 3³ = 27.
    let bound = 1.2_f64.powi(3);
    let budget = "{ kind = \"ratio\", ratio = 0.2 }";
    let mut bottoms = vec![];
    for (name, budget) in [("chain-budgeted", budget), ("chain-unbudgeted", "")] {
        let path = scenario(name, &uniform(3, 3, 1.0, 600, 200, budget));
        let got = hops(&bench(&path), "edge");
        eprintln!("{name}: {got:?}");
        bottoms.push(got.last().expect("the bottom").2);
    }
    let (budgeted, free) = (bottoms[0], bottoms[1]);
    assert!(
        budgeted <= bound,
        "budgeted bottom {budgeted}x > bound {bound}x"
    );
    assert!(
        free > bound,
        "unbudgeted bottom {free}x within the bound {bound}x"
    );
}

#[test]
fn the_last_hop_reaches_a_bottom_serving_https() {
    // One hop of 3 attempts over a bottom serving HTTPS with a self-signed certificate,
    // failing 30% of requests with a 503 and 10% with a reset.
    let text = uniform(2, 3, 0.3, 100, 100, "").replace(
        "[upstream]\n",
        "[upstream]\ntls = \"self-signed\"\nreset_rate = 0.1\n",
    );
    let path = scenario("chain-tls", &text);
    let real = hops(&bench(&path), "edge");
    // A client that did not speak TLS, or did not trust the bottom, would get no request
    // through: the bottom would count none and the hop would fail every call.
    assert!(real[1].1 >= 100, "the bottom answered: {real:?}");
    within_10_percent(&hops(&sim(&path), "edge"), &real);
}

/// The simulator's mesh graph (`crates/sim/tests/chain.rs`): an edge without retries
/// sends 1000 requests in 1 s through a mesh hop (`client`) to a service that answers 503
/// after 50 ms of work, its store refusing every request at once.
fn mesh(client: &str) -> String {
    format!(
        "name = \"mesh-cap\"\nseed = 7\n[load]\nrequests = 1000\nrate = 1000\narrival = \"constant\"\n\
         [client]\npool_max_connections = 4000\nattempt_timeout_ms = 0\n\
         [upstream]\nerror_rate = 1.0\nworkers = 0\n\
         [[hops]]\nid = \"mesh\"\nserver = {{ workers = 0, service_time = {{ dist = \"constant\", ms = 0.1 }} }}\n\
         client = {client}\n\
         [[hops]]\nid = \"service\"\nserver = {{ workers = 0, service_time = {{ dist = \"constant\", ms = 50 }} }}\n\
         client = {{ policy = \"none\" }}\n\
         [[arms]]\nid = \"edge\"\npolicy = \"none\"\n"
    )
}

#[test]
fn envoys_circuit_breaker_bounds_retries_on_sockets_as_in_the_simulator() {
    // Envoy's `max_retries` 3: each retry holds its slot for at least the service's 50 ms,
    // so at most 3 · (1.1 s / 50 ms + 1) retries over the run; Istio's 2^32 − 1 lets both
    // retries of every request go.
    let most = 3.0 * (1.1 / 0.05 + 1.0);
    for (name, client) in [
        ("mesh-envoy", "{ policy = \"envoy\" }"),
        ("mesh-istio", "{ policy = \"istio-default\" }"),
    ] {
        let path = scenario(name, &mesh(client));
        let real = hops(&bench(&path), "edge");
        let simulated = hops(&sim(&path), "edge");
        let retries = real[1].1 - real[0].1;
        eprintln!("{name}: {retries} retries on sockets");
        assert_eq!(real[0].1, 1000, "{real:?}");
        if name == "mesh-envoy" {
            assert!(retries as f64 <= most, "{retries} retries > {most}");
        } else {
            assert_eq!(real[1].1, 3000, "{real:?}");
        }
        within_10_percent(&simulated, &real);
    }
}
