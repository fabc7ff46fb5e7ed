//! `herd tune` end to end: the recommendation under limits, the front of the consumer
//! rules, what-if sweeps, determinism over thread counts, bad input.

mod common;

use common::{herd, stderr, stdout, tempdir};
use serde_json::Value;

fn tune(args: &[&str]) -> Value {
    let mut all = vec!["tune"];
    all.extend_from_slice(args);
    all.extend(["--json", "-", "--quiet"]);
    let out = herd(&all);
    assert!(out.status.success(), "herd {all:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("tune.json")
}

fn setting<'a>(p: &'a Value, key: &str) -> &'a str {
    p["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["key"] == key)
        .unwrap()["value"]
        .as_str()
        .unwrap()
}

fn median(p: &Value, figure: &str) -> f64 {
    p["arms"][0]["figures"][figure]["median"].as_f64().unwrap()
}

#[test]
fn metastable_recommends_a_budget() {
    let r = tune(&[
        "metastable",
        "--vary",
        "budget=none,percent,token-bucket,quota",
        "--vary",
        "retries=1,3,5",
        "--max-hard-fail",
        "35%",
        "--seeds",
        "3",
    ]);
    assert_eq!(r["schema"], "herd.tune/v1");
    let points = r["points"].as_array().unwrap();
    assert_eq!(points.len(), 12);
    let best = &points[r["recommended"].as_u64().expect("a recommendation") as usize];
    assert_ne!(setting(best, "budget"), "none", "{best}");
    for p in points.iter().filter(|p| setting(p, "budget") == "none") {
        let a = &p["arms"][0];
        assert!(
            a["on_front"] == false || a["meets_limits"] == false,
            "an unbudgeted point on the front that meets the limit: {p}"
        );
    }
    let toml = r["recommended_toml"].as_str().unwrap();
    assert!(toml.starts_with("[[arms]]"), "{toml}");
    assert!(toml.contains("kind = "), "{toml}");
}

#[test]
fn incident_front_separates_reissue_from_abandon_with_a_cap() {
    let r = tune(&[
        "incident",
        "--vary",
        "consumers.on_timeout=reissue,abandon",
        "--vary",
        "consumers.max_in_flight=0,1,4",
        "--seeds",
        "2",
    ]);
    let points = r["points"].as_array().unwrap();
    let find = |on: &str, cap: &str| {
        points
            .iter()
            .find(|p| {
                setting(p, "consumers.on_timeout") == on
                    && setting(p, "consumers.max_in_flight") == cap
            })
            .unwrap()
    };
    assert!(median(find("reissue", "0"), "load") >= 4.0);
    assert!(median(find("abandon", "1"), "load") <= 2.0);
    assert!(points.iter().any(|p| p["arms"][0]["on_front"] == true));
}

#[test]
fn the_printed_arm_runs_and_gives_the_simulated_load() {
    let r = tune(&[
        "metastable",
        "--vary",
        "budget=none,percent",
        "--vary",
        "retries=2",
        "--seeds",
        "1",
    ]);
    let i = r["recommended"].as_u64().unwrap() as usize;
    let want = median(&r["points"][i], "load");
    let dir = tempdir("tune-toml");
    let base = stdout(&herd(&["scenarios", "show", "metastable"]));
    let file = dir.join("tuned.toml");
    let toml = r["recommended_toml"].as_str().unwrap();
    std::fs::write(&file, format!("{base}\n{toml}")).unwrap();
    let id = toml
        .lines()
        .find_map(|l| l.strip_prefix("id = "))
        .unwrap()
        .trim_matches('"');
    let out = herd(&[
        "sim",
        file.to_str().unwrap(),
        "--arm",
        id,
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sim: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(sim["arms"][0]["load_multiplier"].as_f64().unwrap(), want);
}

/// `--out` writes the recommendation as a whole scenario that runs from anywhere: a trace
/// named relative to the tuned scenario's file is still found from the output directory.
#[test]
fn the_written_scenario_runs_as_it_stands_and_gives_the_simulated_load() {
    let src = tempdir("tune-scenario-src");
    let mut csv = String::from("t_ms,consumer\n");
    for i in 0..2400u32 {
        csv.push_str(&format!("{},{}\n", i * 5, i % 50));
    }
    std::fs::write(src.join("arrivals.csv"), csv).unwrap();
    let base = stdout(&herd(&["scenarios", "show", "metastable"]));
    let mut text = String::new();
    for line in base.lines() {
        match line.split('=').next().map(str::trim) {
            Some("rate" | "arrival" | "requests") => {}
            _ => {
                text.push_str(line);
                text.push('\n');
            }
        }
        if line.trim() == "[load]" {
            text.push_str("trace = \"arrivals.csv\"\n");
        }
    }
    let scenario = src.join("traced.toml");
    std::fs::write(&scenario, text).unwrap();
    let out_dir = tempdir("tune-scenario-out");
    let r = tune(&[
        scenario.to_str().unwrap(),
        "--vary",
        "budget=none,token-bucket",
        "--vary",
        "retries=3",
        "--seeds",
        "1",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let i = r["recommended"].as_u64().expect("a recommendation") as usize;
    let written = std::fs::read_to_string(out_dir.join("tuned.toml")).unwrap();
    assert!(
        written.starts_with("# What `herd tune metastable` recommends"),
        "{written}"
    );
    let out = herd(&[
        "sim",
        out_dir.join("tuned.toml").to_str().unwrap(),
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sim: Value = serde_json::from_slice(&out.stdout).unwrap();
    let arms = sim["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 1, "the tuned arm alone");
    assert!(
        arms[0]["id"].as_str().unwrap().ends_with("-tuned"),
        "{}",
        arms[0]["id"]
    );
    assert_eq!(arms[0]["logical_requests"], 2400, "the trace was read");
    assert_eq!(
        arms[0]["load_multiplier"].as_f64().unwrap(),
        median(&r["points"][i], "load")
    );
}

#[test]
fn a_sweep_runs_every_arm_and_plots_each_figure() {
    let dir = tempdir("tune-sweep");
    let out = herd(&[
        "tune",
        "seed-quick",
        "--vary",
        "upstream.incidents.0.duration_ms=300,1000",
        "--seeds",
        "2",
        "--out",
        dir.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let r: Value = serde_json::from_slice(&std::fs::read(dir.join("tune.json")).unwrap()).unwrap();
    assert_eq!(r["mode"], "sweep");
    assert_eq!(r["arms"].as_array().unwrap().len(), 6);
    assert_eq!(r["points"][1]["arms"].as_array().unwrap().len(), 6);
    for f in ["load", "peak", "burst", "hard_fail", "p99_ms"] {
        let svg = std::fs::read_to_string(dir.join(format!("sweep-{f}.svg"))).unwrap();
        roxmltree::Document::parse(&svg).expect("SVG parses");
    }
    assert!(dir.join("tune.html").is_file());
}

/// tune.html: the points as an HTML table with the recommended row marked, and a front
/// plot of points whose limit lines say which limit they are.
#[test]
fn tune_html_has_a_table_and_the_front_as_labelled_points() {
    let dir = tempdir("tune-html");
    let r = tune(&[
        "incident",
        "--vary",
        "retries=0..3",
        "--seeds",
        "2",
        "--max-hard-fail",
        "0.05",
        "--max-load",
        "3",
        "--out",
        dir.to_str().unwrap(),
    ]);
    let i = r["recommended"].as_u64().expect("a recommendation");
    let html = std::fs::read_to_string(dir.join("tune.html")).unwrap();
    assert!(
        html.contains("<thead><tr><th class=\"r\">#</th><th>retries</th><th class=\"r\">load</th>"),
        "{html}"
    );
    assert_eq!(
        html.matches("<tr class=\"recommended\">").count(),
        1,
        "{html}"
    );
    assert!(html.contains(&format!(
        "<tr class=\"recommended\"><td class=\"r\">{i} ★</td><td>{i}</td>"
    )));
    let body = &html[html.find("<tbody>").unwrap()..html.find("</tbody>").unwrap()];
    assert_eq!(
        body.matches("<tr").count(),
        r["points"].as_array().unwrap().len()
    );
    assert!(!html.contains("| # |"), "no markdown table left: {html}");
    let svg = std::fs::read_to_string(dir.join("front.svg")).unwrap();
    let doc = roxmltree::Document::parse(&svg).expect("SVG parses");
    let texts: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    for want in [
        "--max-load 3.000x",
        "--max-hard-fail 5.00%",
        &format!("recommended: retries={i}"),
    ] {
        assert!(texts.contains(&want), "no {want}: {texts:?}");
    }
}

#[test]
fn output_does_not_depend_on_the_thread_count() {
    let run = |threads: &str| {
        let out = herd(&[
            "tune",
            "incident",
            "--vary",
            "retries=0..3",
            "--seeds",
            "2",
            "--threads",
            threads,
            "--json",
            "-",
            "--quiet",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    };
    assert_eq!(run("1"), run("2"));
}

#[test]
fn bad_input_exits_2_naming_the_key_and_value() {
    for (args, want) in [
        (
            vec!["--vary", "retries"],
            "--vary retries: expected KEY=VALUES",
        ),
        (vec!["--vary", "retries=-3"], "--vary retries=-3"),
        (
            vec!["--vary", "upstream.workers=lots"],
            "--vary upstream.workers=lots",
        ),
        (
            vec!["--vary", "upstream.incidents.7.duration_ms=1"],
            "index 7",
        ),
        (
            vec!["--vary", "retries=1", "--max-hard-fail", "120%"],
            "--max-hard-fail",
        ),
        (vec!["--vary", "retries=1", "--seeds", "0"], "--seeds"),
        (vec!["--vary", "retries=1", "--arm", "nope"], "--arm nope"),
    ] {
        let mut all = vec!["tune", "metastable"];
        all.extend(args);
        let out = herd(&all);
        assert_eq!(out.status.code(), Some(2), "{all:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(want), "{all:?}: {}", stderr(&out));
        assert!(!stderr(&out).contains("panicked"));
    }
}

#[test]
fn a_bad_value_names_its_cause_once() {
    let out = herd(&["tune", "seed", "--vary", "base_ms=-1", "--seeds", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("--vary base_ms=-1: "), "{err}");
    assert_eq!(err.matches("must be 0 or more, got -1").count(), 1, "{err}");
}

#[test]
fn sim_on_several_seeds_reports_the_spread_byte_for_byte() {
    let run = || {
        let out = herd(&[
            "sim",
            "metastable",
            "--seeds",
            "8",
            "--json",
            "-",
            "--quiet",
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    };
    let a = run();
    assert_eq!(a, run(), "same scenario and seeds, same bytes");
    let r: Value = serde_json::from_slice(&a).unwrap();
    assert_eq!(r["schema"], "herd.seeds/v1");
    assert_eq!(r["seeds"].as_array().unwrap().len(), 8);
    let arm = &r["arms"][0];
    assert_eq!(arm["per_seed"].as_array().unwrap().len(), 8);
    let load = &arm["figures"]["load"];
    let (lo, mid, hi) = (
        load["min"].as_f64().unwrap(),
        load["median"].as_f64().unwrap(),
        load["max"].as_f64().unwrap(),
    );
    assert!(lo <= mid && mid <= hi && lo < hi, "{load}");
    let out = herd(&["sim", "metastable", "--seeds", "3"]);
    let table = stdout(&out);
    assert!(table.contains("median (min–max)"), "{table}");
    assert!(table.contains("x ("), "a spread is shown: {table}");
}
