//! `herd bench breakers` against `herd sim breakers`: the socket driver runs the same
//! herd-retry breakers as the simulator, so the server gets the same load. Its own test
//! binary: its 40 s run would otherwise compete with the exact-count runs of
//! `guards_socket.rs` for the machine's cores.

mod common;
use common::*;
use serde_json::Value;

fn run(cmd: &str, scenario: &str, extra: &[&str]) -> Value {
    let mut args = vec![cmd, scenario, "--json", "-", "--quiet"];
    args.extend_from_slice(extra);
    let o = herd(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_str(&stdout(&o)).expect("JSON on stdout")
}

/// `herd bench breakers` against `herd sim breakers`, cut to 40 s (the outage is 10–30 s):
/// each arm's load within 10%.
#[test]
fn breakers_on_the_socket_put_the_simulators_load_on_the_server() {
    let sim = run("sim", "breakers", &["--requests", "4000"]);
    let v = run("bench", "breakers", &["--requests", "4000"]);
    for s in sim["arms"].as_array().unwrap() {
        let id = s["id"].as_str().unwrap();
        let a = arm(&v, id);
        let lm = |a: &Value| a["load_multiplier"].as_f64().unwrap();
        let (sock, model) = (lm(a), lm(s));
        eprintln!("{id}: socket {sock}, simulator {model}");
        assert!(
            (sock / model - 1.0).abs() <= 0.10,
            "{id}: load multiplier {sock} on the socket against {model} in the simulator"
        );
        assert_eq!(a["breaker"].is_null(), s["breaker"].is_null(), "{id}");
    }
}
