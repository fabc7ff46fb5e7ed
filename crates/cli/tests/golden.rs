//! Golden reports: `herd sim <scenario> --json -` for every embedded scenario the simulator
//! runs (all but `internet`, a benchmark; for `peers`, its replica arms), compared byte for
//! byte with `tests/golden/sim-<scenario>.json`. Any change to what the simulator computes
//! shows up here as a diff to review, not as a drift nobody noticed.
//!
//! The README's simulated tables are generated from the same files: each sits between
//! `<!-- golden FILE: KEY, KEY, ... -->` and `<!-- /golden -->`, and this test checks that
//! the block is exactly what the file gives. After a deliberate change,
//! `HERD_BLESS=1 cargo test -p herd-cli --test golden` rewrites the files and the README blocks;
//! the diff is the review.

mod common;

use common::stderr;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Golden file stem, scenario, extra flags (run from the repository's root).
const RUNS: &[(&str, &str, &[&str])] = &[
    ("seed", "seed", &[]),
    ("seed-quick", "seed-quick", &[]),
    ("metastable", "metastable", &[]),
    ("incident", "incident", &[]),
    (
        "incident-trace",
        "incident",
        &["--trace", "crates/scenario/scenarios/traces/incident.csv"],
    ),
    ("peers", "peers", &[]),
    ("brownout", "brownout", &[]),
    ("breakers", "breakers", &[]),
    ("chain", "chain", &[]),
    ("chain-budget", "chain-budget", &[]),
    ("capped-waits", "capped-waits", &[]),
];

fn bless() -> bool {
    std::env::var_os("HERD_BLESS").is_some_and(|v| v != "0")
}

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn readme() -> PathBuf {
    root().join("README.md")
}

/// The simulator's report for `name` with `flags`, as `herd sim` prints it.
fn simulate(name: &str, flags: &[&str]) -> Vec<u8> {
    let loaded = herd_scenario::load(name).expect("embedded scenario");
    let replicas: Vec<String> = loaded
        .scenario
        .arms
        .iter()
        .filter(|a| a.client.is_replica())
        .map(|a| a.id.clone())
        .collect();
    let mut args = vec!["sim", name, "--json", "-", "--quiet"];
    args.extend_from_slice(flags);
    if replicas.len() < loaded.scenario.arms.len() {
        for id in &replicas {
            args.extend(["--arm", id]);
        }
    }
    let out = Command::new(env!("CARGO_BIN_EXE_herd"))
        .args(&args)
        .current_dir(root())
        .output()
        .expect("herd runs");
    assert!(out.status.success(), "herd {args:?}: {}", stderr(&out));
    out.stdout
}

#[test]
fn sim_reports_equal_their_golden_files() {
    golden_files();
}

/// Compares every run with its golden file (or, blessing, writes it).
fn golden_files() {
    let dir = golden_dir();
    let mut diffs = Vec::new();
    for (stem, name, flags) in RUNS {
        let got = simulate(name, flags);
        let path = dir.join(format!("sim-{stem}.json"));
        if bless() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&path, &got).unwrap();
            continue;
        }
        let want = std::fs::read(&path).unwrap_or_default();
        if got != want {
            diffs.push(format!(
                "{}: herd sim {name} {flags:?} --json - differs ({} bytes, golden {} bytes)",
                path.display(),
                got.len(),
                want.len()
            ));
        }
    }
    assert!(
        diffs.is_empty(),
        "{}\nreview the change, then HERD_BLESS=1 cargo test -p herd-cli --test golden",
        diffs.join("\n")
    );
}

#[test]
fn readme_sim_tables_come_from_the_golden_files() {
    if bless() {
        golden_files();
    }
    let path = readme();
    let text = std::fs::read_to_string(&path).unwrap();
    let (out, blocks) = regenerate(&text);
    assert!(
        blocks >= 3,
        "the README has its simulated tables ({blocks})"
    );
    if bless() {
        if out != text {
            std::fs::write(&path, out).unwrap();
        }
        return;
    }
    if out != text {
        let (a, b) = first_difference(&text, &out);
        panic!(
            "README's simulated tables differ from tests/golden:\nREADME: {a}\ngolden: {b}\n\
             HERD_BLESS=1 cargo test -p herd-cli --test golden regenerates them"
        );
    }
}

/// The README with every golden block regenerated, and how many there were.
fn regenerate(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len());
    let mut lines = text.split_inclusive('\n');
    let mut blocks = 0;
    while let Some(line) = lines.next() {
        out.push_str(line);
        let Some(spec) = line
            .trim()
            .strip_prefix("<!-- golden ")
            .and_then(|l| l.strip_suffix("-->"))
        else {
            continue;
        };
        blocks += 1;
        let (file, keys) = spec.split_once(':').expect("<!-- golden FILE: KEYS -->");
        let keys: Vec<&str> = keys.split(',').map(str::trim).collect();
        let report: Value = serde_json::from_slice(
            &std::fs::read(golden_dir().join(file.trim())).expect("golden file named"),
        )
        .unwrap();
        out.push_str(&table(&report, &keys));
        for skipped in lines.by_ref() {
            if skipped.trim() == "<!-- /golden -->" {
                out.push_str(skipped);
                break;
            }
        }
    }
    (out, blocks)
}

/// A markdown table of `keys` (JSON paths into each arm) for every arm of `report`.
fn table(report: &Value, keys: &[&str]) -> String {
    let mut s = format!(
        "| {} |\n|{}|\n",
        keys.iter()
            .map(|k| title(k))
            .collect::<Vec<_>>()
            .join(" | "),
        keys.iter()
            .map(|k| if *k == "arm" { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for arm in report["arms"].as_array().unwrap() {
        let cells: Vec<String> = keys.iter().map(|k| cell(arm, k)).collect();
        s.push_str(&format!("| {} |\n", cells.join(" | ")));
    }
    s
}

fn title(key: &str) -> &'static str {
    match key {
        "arm" => "arm",
        "load_multiplier" => "load",
        "latency_ms.p50" => "p50",
        "latency_ms.p99" => "p99",
        "hard_fail_ratio" => "hard-fail",
        "peak_rps_multiplier" => "peak 1 s",
        "burst_multiplier" => "burst 100 ms",
        "shed" => "shed",
        "recovery_ms" => "recovery",
        "consumer_timeouts" => "consumer timeouts",
        "abandoned" => "abandoned",
        "server_requests" => "server requests",
        "hedging.sent" => "hedges",
        "hedging.won" => "hedges won",
        "hedging.wasted" => "wasted",
        "breaker.rejected" => "rejected",
        "breaker.open_ms" => "open",
        "breaker.probes" => "probes",
        other => panic!("no title for README column {other}"),
    }
}

fn cell(arm: &Value, key: &str) -> String {
    if key == "arm" {
        return arm["id"].as_str().unwrap().to_owned();
    }
    let v = key.split('.').fold(arm, |v, k| &v[k]);
    match key {
        "recovery_ms" => match v.as_f64() {
            Some(ms) => format!("{:.1} s", ms / 1000.0),
            None => "never".into(),
        },
        "hard_fail_ratio" => format!("{:.2}%", v.as_f64().unwrap() * 100.0),
        "load_multiplier" => format!("{:.3}x", v.as_f64().unwrap()),
        "peak_rps_multiplier" => format!("{:.2}x", v.as_f64().unwrap()),
        "burst_multiplier" => format!("{:.1}x", v.as_f64().unwrap()),
        k if k.starts_with("latency_ms.") => format!("{:.1} ms", v.as_f64().unwrap()),
        // An arm without a hedge or a breaker has no such figure.
        _ if v.is_null() => "—".into(),
        "breaker.open_ms" => format!("{:.0} s", v.as_f64().unwrap() / 1000.0),
        _ => v.as_u64().map_or_else(|| v.to_string(), |n| n.to_string()),
    }
}

fn first_difference(a: &str, b: &str) -> (String, String) {
    for (x, y) in a.lines().zip(b.lines()) {
        if x != y {
            return (x.to_owned(), y.to_owned());
        }
    }
    ("(length)".into(), "(length)".into())
}
