//! `herd sim` end to end: the simulator agrees with the real socket on `seed-quick`, and
//! its JSON is a pure function of scenario, seed and flags.

mod common;
use common::*;
use serde_json::Value;

fn json_of(args: &[&str]) -> (Vec<u8>, Value) {
    let o = herd(args);
    assert!(o.status.success(), "herd {args:?}: {}", stderr(&o));
    let v = serde_json::from_slice(&o.stdout).expect("JSON on stdout");
    (o.stdout, v)
}

/// The simulator against the socket: for every arm, the simulator and the real bench agree on
/// the load multiplier (10%), p50 (20%), hard-fail ratio (1 point) and the peak 1 s
/// multiplier (30%). Runs the real bench, so it takes about 17 s.
#[test]
fn sim_agrees_with_bench_on_seed_quick() {
    let (_, sim) = json_of(&["sim", "seed-quick", "--json", "-", "--quiet"]);
    let real = bench_on_schedule(&["seed-quick"]);
    assert_eq!(sim["mode"], "sim");
    assert_eq!(real["mode"], "real");
    let (sa, ra) = (
        sim["arms"].as_array().unwrap(),
        real["arms"].as_array().unwrap(),
    );
    assert_eq!(sa.len(), 6);
    assert_eq!(sa.len(), ra.len());
    let mut rows = String::new();
    let mut bad = Vec::new();
    for (s, r) in sa.iter().zip(ra) {
        let id = s["id"].as_str().unwrap();
        assert_eq!(r["id"], id, "arms in the same order");
        let f = |v: &Value, k: &str| v[k].as_f64().unwrap_or_else(|| panic!("{id}.{k}"));
        let p50 = |v: &Value| v["latency_ms"]["p50"].as_f64().unwrap();
        let rel = |a: f64, b: f64| (a - b).abs() / b.abs().max(1e-9);
        let (lm, pk) = ("load_multiplier", "peak_rps_multiplier");
        let hf = |v: &Value| f(v, "hard_fail_ratio") * 100.0;
        rows += &format!(
            "{id}: load {:.4}/{:.4} p50 {:.1}/{:.1} hard-fail {:.2}%/{:.2}% peak {:.3}/{:.3} (sim/real)\n",
            f(s, lm), f(r, lm), p50(s), p50(r), hf(s), hf(r), f(s, pk), f(r, pk)
        );
        if rel(f(s, lm), f(r, lm)) > 0.10 {
            bad.push(format!("{id} load multiplier"));
        }
        if rel(p50(s), p50(r)) > 0.20 {
            bad.push(format!("{id} p50"));
        }
        if (hf(s) - hf(r)).abs() > 1.0 {
            bad.push(format!("{id} hard-fail"));
        }
        if rel(f(s, pk), f(r, pk)) > 0.30 {
            bad.push(format!("{id} peak multiplier"));
        }
    }
    eprint!("{rows}");
    assert!(bad.is_empty(), "sim and bench disagree on {bad:?}:\n{rows}");
}

#[test]
fn same_seed_same_bytes_other_seed_other_bytes() {
    let args = ["sim", "seed", "--json", "-", "--quiet"];
    let (a, v) = json_of(&args);
    let (b, _) = json_of(&args);
    assert!(a == b, "two runs with the same seed differ");
    assert_eq!(v["mode"], "sim");
    assert_eq!(v["schema"], "herd.report/v1");
    let text = String::from_utf8_lossy(&a);
    assert!(!text.contains("wall"), "no wall-clock figure in the JSON");
    let (c, w) = json_of(&["sim", "seed", "--json", "-", "--quiet", "--seed", "7"]);
    assert!(a != c, "a different --seed changes the report");
    assert_eq!(w["scenario"]["seed"], 7);
}

#[test]
fn file_output_and_flags() {
    let dir = tempdir("sim-flags");
    let path = dir.join("r.json");
    let o = herd(&[
        "sim",
        "seed-quick",
        "--arm",
        "undici",
        "--arm",
        "no-retry",
        "--requests",
        "500",
        "--rate",
        "250",
        "--json",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("| undici |"), "table on stdout");
    let err = stderr(&o);
    assert!(
        err.contains("wall time") && err.contains("events/s"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let ids: Vec<_> = v["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].clone())
        .collect();
    assert_eq!(
        ids,
        ["no-retry", "undici"],
        "scenario order, not flag order"
    );
    assert_eq!(v["offered_rps"], 250.0);
    for a in v["arms"].as_array().unwrap() {
        assert_eq!(a["logical_requests"], 500);
    }
    let bad = herd(&["sim", "seed-quick", "--arm", "nope"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
    let report_dir = dir.join("report");
    let out = herd(&[
        "sim",
        "seed-quick",
        "--out",
        report_dir.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    for f in [
        "report.json",
        "summary.csv",
        "timeline.csv",
        "timeline.svg",
        "latency.svg",
        "report.html",
    ] {
        assert!(report_dir.join(f).is_file(), "sim --out writes {f}");
    }
}

/// Budgets end a metastable failure, in the simulator: in `metastable`, every budgeted arm keeps
/// the load multiplier at or under 1.3 and recovers; the unbudgeted arm puts more load on
/// the upstream and recovers later, or never.
#[test]
fn budgets_end_the_metastable_state() {
    let (_, v) = json_of(&["sim", "metastable", "--json", "-", "--quiet"]);
    let arms = v["arms"].as_array().unwrap();
    let get = |id: &str| {
        arms.iter()
            .find(|a| a["id"] == id)
            .unwrap_or_else(|| panic!("{id}"))
    };
    let free = get("fulljitter");
    for id in ["fulljitter-budget", "token-bucket", "aws-quota", "herd"] {
        let a = get(id);
        let lm = a["load_multiplier"].as_f64().unwrap();
        assert!(lm <= 1.3, "{id}: load multiplier {lm}");
        assert!(lm < free["load_multiplier"].as_f64().unwrap(), "{id}");
        let rec = a["recovery_ms"]
            .as_u64()
            .unwrap_or_else(|| panic!("{id} never recovered"));
        if let Some(f) = free["recovery_ms"].as_u64() {
            assert!(rec < f, "{id} recovers sooner ({rec} ms vs {f} ms)");
        }
    }
}
