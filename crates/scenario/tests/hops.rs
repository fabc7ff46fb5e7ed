//! `[[hops]]`: a hop's server takes `[upstream]`'s keys and its client an arm's, checked by
//! the same code, and a bad key is named by file, line and the hop's path.

use herd_scenario::parse;

const ARM: &str = "[[arms]]\nid = \"edge\"\npolicy = \"naive\"\n";

fn with(hop: &str) -> String {
    format!("name = \"h\"\n{ARM}[[hops]]\nid = \"sidecar\"\n{hop}\n")
}

fn error(hop: &str) -> String {
    parse(&with(hop), "h.toml").unwrap_err().to_string()
}

#[test]
fn a_hop_has_a_server_and_a_client() {
    let s = parse(
        &with("server = { workers = 8, error_rate = 0.1 }\nclient = { policy = \"istio-default\", budget = { kind = \"percent\" } }"),
        "h.toml",
    )
    .unwrap();
    assert_eq!(s.hops.len(), 1);
    let h = &s.hops[0];
    assert_eq!((h.id.as_str(), h.server.workers), ("sidecar", 8));
    assert_eq!(h.server.error_rate, 0.1);
    assert_eq!(h.client.policy.profile().name(), "istio-default");
    assert!(h.client.budget.is_some());
    // Without hops, nothing changes.
    assert!(parse(&format!("name = \"h\"\n{ARM}"), "h.toml")
        .unwrap()
        .hops
        .is_empty());
}

#[test]
fn bad_hop_keys_are_named_by_file_line_and_path() {
    let m = error("client = { policy = \"naive\", retries = -1 }");
    assert!(
        m.starts_with("h.toml:7:") && m.contains("hops[0].client.retries"),
        "{m}"
    );
    let m = error("server = { error_rate = 2 }\nclient = { policy = \"naive\" }");
    assert!(
        m.starts_with("h.toml:7:") && m.contains("hops[0].server.error_rate"),
        "{m}"
    );
    let m = error("client = { policy = \"naive\", hedge = { profile = \"polly-hedging\" } }");
    assert!(m.contains("hops[0].client.hedge"), "{m}");
    let m = error("client = { policy = \"nope\" }");
    assert!(
        m.contains("hops[0].client.policy") && m.contains("istio-default"),
        "{m}"
    );
    let m = error("client = { policy = \"naive\", colour = 1 }");
    assert!(m.contains("colour"), "{m}");
    let m = error("server = { target = \"http://127.0.0.1:1\" }\nclient = { policy = \"naive\" }");
    assert!(m.contains("hops[0].server.target"), "{m}");
    let m = error("server = { protocol = \"h2c\" }\nclient = { policy = \"naive\" }");
    assert!(
        m.starts_with("h.toml:7:") && m.contains("hops[0].server.protocol"),
        "{m}"
    );
    let bottom =
        format!("name = \"h\"\n[upstream]\nprotocol = \"grpc\"\n{ARM}[[hops]]\nid = \"s\"\nclient = {{ policy = \"naive\" }}\n");
    let m = parse(&bottom, "h.toml").unwrap_err().to_string();
    assert!(
        m.starts_with("h.toml:3:") && m.contains("upstream.protocol") && m.contains("HTTP/1.1"),
        "{m}"
    );
}
