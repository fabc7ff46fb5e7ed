//! The external-client registry agrees with the adapters it names: every adapter file
//! exists, and each adapter's own table of clients (`const CLIENTS = { ... }` in
//! `arm.mjs`) lists exactly the registry's ids for its runtime.

use herd_scenario::clients::{ids, Runtime, EXTERNAL_CLIENTS, NODE_ADAPTER};
use std::path::Path;

fn workspace() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The keys of `const CLIENTS = { 'id': fn, ... };` in the Node adapter.
fn node_table(src: &str) -> Vec<String> {
    let start = src
        .find("const CLIENTS = {")
        .expect("arm.mjs has `const CLIENTS = {`");
    let body = &src[start..];
    let end = body.find("};").expect("`const CLIENTS` ends with `};`");
    body[..end]
        .lines()
        .skip(1)
        .filter_map(|l| {
            let l = l.trim();
            let rest = l.strip_prefix('\'')?;
            Some(rest[..rest.find('\'')?].to_owned())
        })
        .collect()
}

#[test]
fn adapters_exist() {
    for c in EXTERNAL_CLIENTS {
        assert!(
            workspace().join(c.adapter).is_file(),
            "{}: no adapter at {}",
            c.id,
            c.adapter
        );
    }
}

#[test]
fn node_adapter_offers_exactly_the_registry() {
    let src = std::fs::read_to_string(workspace().join(NODE_ADAPTER)).expect("arm.mjs");
    let mut table = node_table(&src);
    let mut registry: Vec<String> = ids(Runtime::Node).into_iter().map(String::from).collect();
    table.sort();
    registry.sort();
    assert!(!table.is_empty());
    assert_eq!(
        table, registry,
        "adapters/node/arm.mjs's CLIENTS and herd_scenario::clients::EXTERNAL_CLIENTS differ"
    );
}
