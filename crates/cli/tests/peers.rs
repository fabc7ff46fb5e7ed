//! Real clients as arms through `herd bench`: each Rust peer and a Node client run a short
//! scenario on a real socket, beside their replica, and the simulator refuses them.

mod common;
use common::*;
use serde_json::Value;

const PEERS: &str = r#"
name = "peers-short"
seed = 3
[load]
requests = 200
rate = 200
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 2000
[upstream]
error_rate = 0.1
service_time = { dist = "constant", ms = 2 }
[[arms]]
id = "replica"
policy = "undici"
base_ms = 20
[[arms]]
id = "reqwest-retry"
client = "reqwest-retry"
[[arms]]
id = "reqwest-builtin"
client = "reqwest-builtin"
[[arms]]
id = "tower-retry"
client = "tower-retry"
[[arms]]
id = "node-undici"
client = "node-undici"
"#;

#[test]
fn every_rust_peer_and_a_node_client_run_and_retry() {
    let dir = tempdir("peers");
    let file = dir.join("peers.toml");
    std::fs::write(&file, PEERS).unwrap();
    let o = herd(&["bench", file.to_str().unwrap(), "--json", "-", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    for a in v["arms"].as_array().unwrap() {
        let id = a["id"].as_str().unwrap();
        assert_eq!(a["logical_requests"], 200, "{id}");
        let lm = a["load_multiplier"].as_f64().unwrap();
        // 10% errors, every client retries them: the server sees more than was offered,
        // and nearly everything succeeds in the end.
        assert!(lm > 1.04 && lm < 1.4, "{id}: load multiplier {lm}");
        assert!(a["hard_fail_ratio"].as_f64().unwrap() < 0.03, "{id}");
        assert!(!a["policy"].as_str().unwrap().is_empty(), "{id}");
    }
}

#[test]
fn the_simulator_refuses_real_clients() {
    let dir = tempdir("peers-sim");
    let file = dir.join("peers.toml");
    std::fs::write(&file, PEERS).unwrap();
    let o = herd(&["sim", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("real client"), "{}", stderr(&o));
    let o = herd(&[
        "sim",
        file.to_str().unwrap(),
        "--arm",
        "replica",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}
