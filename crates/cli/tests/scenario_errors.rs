//! Bad input exits 2, names the file, line and key, and leaves no output file.

mod common;
use common::*;

const BASE: &str = r#"name = "t"
[load]
requests = 20
rate = 100
[upstream]
error_rate = 0.1
[[arms]]
id = "a"
policy = "none"
"#;

fn check(name: &str, text: &str, line: usize, key: &str) {
    let dir = tempdir(name);
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    let out = dir.join("out.json");
    let o = herd(&[
        "bench",
        file.to_str().unwrap(),
        "--json",
        out.to_str().unwrap(),
    ]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("s.toml:{line}:")),
        "line {line} missing: {err}"
    );
    assert!(err.contains(key), "key {key} missing: {err}");
    assert!(!err.contains("panicked"), "{err}");
    assert!(!out.exists(), "no output file on bad input");
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        1,
        "nothing else written"
    );
}

#[test]
fn unknown_key() {
    check(
        "unknown",
        &BASE.replace("rate = 100", "rate = 100\nburst = 3"),
        5,
        "burst",
    );
}

#[test]
fn negative_rate() {
    check(
        "negrate",
        &BASE.replace("rate = 100", "rate = -100"),
        4,
        "load.rate",
    );
}

#[test]
fn error_rate_above_one() {
    check(
        "errrate",
        &BASE.replace("error_rate = 0.1", "error_rate = 1.5"),
        6,
        "upstream.error_rate",
    );
}

#[test]
fn wrong_type_and_unknown_policy() {
    check(
        "type",
        &BASE.replace("requests = 20", "requests = \"many\""),
        3,
        "load.requests",
    );
    check(
        "policy",
        &BASE.replace("policy = \"none\"", "policy = \"retry-forever\""),
        9,
        "arms[0].policy",
    );
}

#[test]
fn missing_file_and_unknown_arm() {
    let o = herd(&["bench", "/no/such/scenario.toml"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/no/such/scenario.toml"));
    let o = herd(&["bench", "seed-quick", "--arm", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no such arm"));
    let o = herd(&["bench", "seed-quick", "--rate", "-1"]);
    assert_eq!(o.status.code(), Some(2));
    let o = herd(&["bench", "--frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn scenarios_list_and_show() {
    let o = herd(&["scenarios"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("seed-quick"));
    let o = herd(&["scenarios", "show", "seed"]);
    assert!(o.status.success());
    assert!(stdout(&o).contains("[[arms]]"));
    let o = herd(&["scenarios", "show", "nope"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn unknown_budget_kind_lists_the_kinds() {
    let text = BASE.replace(
        "policy = \"none\"",
        "policy = \"undici\"\nbudget = { kind = \"leaky\" }",
    );
    check("budget-kind", &text, 10, "arms[0].budget.kind");
    let dir = tempdir("budget-kind-list");
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    let err = stderr(&herd(&["sim", file.to_str().unwrap()]));
    for kind in [
        "none",
        "percent",
        "token-bucket",
        "quota",
        "ratio",
        "adaptive",
    ] {
        assert!(err.contains(kind), "{kind} missing: {err}");
    }
}

#[test]
fn time_past_the_bound() {
    check(
        "stall",
        &BASE.replace("error_rate = 0.1", "stall_ms = 1e30"),
        6,
        "upstream.stall_ms",
    );
}

#[test]
fn a_missing_file_is_named_with_its_cause_once() {
    let dir = tempdir("missing");
    let file = dir.join("nowhere.toml");
    let o = herd(&["sim", file.to_str().unwrap()]);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("nowhere.toml: cannot read: "), "{err}");
    assert_eq!(err.matches("(os error 2)").count(), 1, "{err}");
}
