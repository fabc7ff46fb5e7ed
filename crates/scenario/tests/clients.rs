//! The external-client registry agrees with the adapters it names: every adapter file
//! exists, and each adapter's own table of clients (`const CLIENTS = { ... }` in
//! `arm.mjs`) lists exactly the registry's ids for its runtime.

use herd_scenario::clients::{
    ids, Runtime, EXTERNAL_CLIENTS, GO_ADAPTER, NODE_ADAPTER, PYTHON_ADAPTER,
};
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
        "crates/adapters/kits/node/arm.mjs's CLIENTS and herd_scenario::clients::EXTERNAL_CLIENTS differ"
    );
}

/// The quoted keys (`"id":`) between `open` and the next `close` in `src`.
fn quoted_keys(src: &str, open: &str, close: &str) -> Vec<String> {
    let start = src.find(open).unwrap_or_else(|| panic!("no `{open}`")) + open.len();
    let body = &src[start..];
    let body = &body[..body.find(close).unwrap_or_else(|| panic!("no `{close}`"))];
    let parts: Vec<&str> = body.split('"').collect();
    (1..parts.len().saturating_sub(1))
        .step_by(2)
        .filter(|&i| parts[i + 1].trim_start().starts_with(':'))
        .map(|i| parts[i].to_owned())
        .collect()
}

fn check(runtime: Runtime, mut table: Vec<String>, file: &str) {
    let mut registry: Vec<String> = ids(runtime).into_iter().map(String::from).collect();
    table.sort();
    registry.sort();
    assert!(!table.is_empty(), "{file}: no clients found");
    assert_eq!(
        table, registry,
        "{file}'s clients and herd_scenario::clients::EXTERNAL_CLIENTS differ"
    );
}

#[test]
fn python_adapter_offers_exactly_the_registry() {
    let src = std::fs::read_to_string(workspace().join(PYTHON_ADAPTER)).expect("arm.py");
    check(
        Runtime::Python,
        quoted_keys(&src, "\nCLIENTS = {", "\n}"),
        PYTHON_ADAPTER,
    );
}

#[test]
fn go_adapter_offers_exactly_the_registry() {
    let src = std::fs::read_to_string(workspace().join(GO_ADAPTER)).expect("main.go");
    let mut table = quoted_keys(&src, "builders = map[string]Builder{", "}");
    // go-grpc is added by grpc.go, or by grpc_absent.go without grpc-go: both add the same.
    let added = |file: &str| -> Vec<String> {
        let path = workspace().join(GO_ADAPTER).with_file_name(file);
        let src = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{file}: {e}"));
        src.split("builders[\"")
            .skip(1)
            .filter_map(|rest| rest.split_once('"').map(|(id, _)| id.to_owned()))
            .collect()
    };
    let (with, without) = (added("grpc.go"), added("grpc_absent.go"));
    assert_eq!(
        with, without,
        "grpc.go and grpc_absent.go add different clients"
    );
    table.extend(with);
    check(Runtime::Go, table, GO_ADAPTER);
}
