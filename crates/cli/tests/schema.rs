//! `docs/schema/report.schema.json` against the reports herd writes: every golden report,
//! a consumers run, a real run, a call graph's real run and a partial one validate, and
//! the schema is closed: a field the report has and the schema lacks (added to one, or
//! removed from the other) fails here.

mod common;

use common::{herd, stderr};
use serde_json::Value;
use std::path::Path;

fn schema() -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/report.schema.json");
    serde_json::from_slice(&std::fs::read(p).expect("schema file")).expect("schema is JSON")
}

fn errors(schema: &Value, report: &Value) -> Vec<String> {
    let v = jsonschema::validator_for(schema).expect("a valid JSON Schema");
    v.iter_errors(report)
        .map(|e| format!("{} at {}", e, e.instance_path))
        .collect()
}

fn sim(args: &[&str]) -> Value {
    let mut all = vec!["sim"];
    all.extend_from_slice(args);
    all.extend(["--json", "-", "--quiet"]);
    let out = herd(&all);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn reports() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut out: Vec<(String, Value)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let v = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
            (p.display().to_string(), v)
        })
        .collect();
    assert!(out.len() >= 5, "golden reports found");
    let real = herd(&[
        "bench",
        "seed-quick",
        "--arm",
        "undici",
        "--requests",
        "100",
        "--rate",
        "200",
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(real.status.success(), "{}", stderr(&real));
    out.push((
        "bench".into(),
        serde_json::from_slice(&real.stdout).unwrap(),
    ));
    // A call graph on sockets: each arm's `hops` from its own servers.
    let chain = herd(&[
        "bench",
        "chain",
        "--requests",
        "100",
        "--rate",
        "200",
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(chain.status.success(), "{}", stderr(&chain));
    out.push((
        "bench chain".into(),
        serde_json::from_slice(&chain.stdout).unwrap(),
    ));
    let mut partial = sim(&["seed-quick", "--arm", "no-retry", "--requests", "50"]);
    partial["partial"] = Value::Bool(true);
    partial["stop"] = serde_json::json!({
        "signal": "SIGINT", "after_ms": 4000, "finished": 50, "planned": 100, "left_out": ["naive"]
    });
    out.push(("partial".into(), partial));
    out.push((
        "shard".into(),
        sim(&["seed-quick", "--requests", "60", "--shard", "1/3"]),
    ));
    out
}

#[test]
fn every_report_validates() {
    let s = schema();
    for (name, r) in reports() {
        let e = errors(&s, &r);
        assert!(e.is_empty(), "{name}: {e:#?}");
    }
}

#[test]
fn a_field_missing_from_the_schema_fails() {
    let s = schema();
    let r = sim(&["incident", "--requests", "200"]);
    assert!(errors(&s, &r).is_empty());
    let top: Vec<String> = s["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let arm: Vec<String> = s["$defs"]["arm"]["properties"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    let present_top: Vec<&String> = top.iter().filter(|k| r.get(k.as_str()).is_some()).collect();
    let present_arm: Vec<&String> = arm
        .iter()
        .filter(|k| r["arms"][0].get(k.as_str()).is_some())
        .collect();
    assert!(
        present_arm.len() >= 16,
        "a consumers run has most arm fields"
    );
    for k in present_top {
        let mut less = s.clone();
        less["properties"]
            .as_object_mut()
            .unwrap()
            .remove(k.as_str());
        assert!(
            !errors(&less, &r).is_empty(),
            "removing `{k}` from the schema must fail"
        );
    }
    for k in present_arm {
        let mut less = s.clone();
        less["$defs"]["arm"]["properties"]
            .as_object_mut()
            .unwrap()
            .remove(k.as_str());
        assert!(
            !errors(&less, &r).is_empty(),
            "removing arm `{k}` must fail"
        );
    }
    let mut more = r.clone();
    more["arms"][0]["new_figure"] = Value::from(1);
    assert!(
        !errors(&s, &more).is_empty(),
        "a field the schema lacks must fail"
    );
}
