//! `herd merge` of simulated shards: N shard reports of a deterministic run merge into the
//! single run's report byte for byte (every count, every histogram bucket, hence every
//! percentile, every multiplier), and into the same files; partial merges are associative
//! and independent of order, byte for byte; what cannot be merged is refused with a
//! sentence and exit 2, with nothing written.

mod common;

use common::{herd, stderr, tempdir};
use std::path::{Path, PathBuf};

/// `herd sim ARGS --out DIR --quiet` (and its JSON at DIR/report.json).
fn sim_out(dir: &Path, args: &[&str]) -> PathBuf {
    let mut all = vec!["sim"];
    all.extend_from_slice(args);
    let d = dir.to_str().unwrap();
    all.extend(["--out", d, "--quiet"]);
    let o = herd(&all);
    assert!(o.status.success(), "herd {all:?}: {}", stderr(&o));
    dir.join("report.json")
}

fn merge(reports: &[&Path], extra: &[&str]) -> std::process::Output {
    let mut all: Vec<&str> = vec!["merge"];
    all.extend(reports.iter().map(|p| p.to_str().unwrap()));
    all.extend_from_slice(extra);
    all.push("--quiet");
    herd(&all)
}

/// Shards of `args`' run, each in its own directory under `root`.
fn shards(root: &Path, args: &[&str], n: u32) -> Vec<PathBuf> {
    (0..n)
        .map(|i| {
            let shard = format!("{i}/{n}");
            let mut a = args.to_vec();
            a.extend(["--shard", shard.as_str()]);
            sim_out(&root.join(format!("shard{i}")), &a)
        })
        .collect()
}

fn assert_same_files(a: &Path, b: &Path) {
    for f in [
        "report.json",
        "summary.csv",
        "timeline.csv",
        "timeline.svg",
        "latency.svg",
    ] {
        let (x, y) = (
            std::fs::read(a.join(f)).unwrap(),
            std::fs::read(b.join(f)).unwrap(),
        );
        assert!(
            x == y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn merged_shards_are_the_single_run_byte_for_byte() {
    let root = tempdir("merge-exact");
    // Plain arms, guarded arms (hedges, breakers) and consumers (sharded by consumer).
    for (name, args, n) in [
        ("quick", vec!["seed-quick", "--requests", "3000"], 3),
        ("breakers", vec!["breakers", "--requests", "4000"], 4),
        ("incident", vec!["incident", "--requests", "4000"], 2),
    ] {
        let dir = root.join(name);
        let single = sim_out(&dir.join("single"), &args);
        let parts = shards(&dir, &args, n);
        let refs: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
        let out = dir.join("merged");
        let o = merge(&refs, &["--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert_same_files(single.parent().unwrap(), &out);
        // Each shard holds a part: its own units, not the whole.
        let s0: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&parts[0]).unwrap()).unwrap();
        let whole: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&single).unwrap()).unwrap();
        let own = s0["shard"]["arms"][0]["succeeded"].as_u64().unwrap()
            + s0["shard"]["arms"][0]["failed"].as_u64().unwrap();
        let all = whole["arms"][0]["succeeded"].as_u64().unwrap()
            + whole["arms"][0]["failed"].as_u64().unwrap();
        assert!(own > 0 && own < all, "{name}: shard 0 has {own} of {all}");
        assert!(
            whole.get("shard").is_none(),
            "an unsharded report has no shard section"
        );
    }
}

#[test]
fn partial_merges_are_associative_and_order_free() {
    let root = tempdir("merge-assoc");
    let args = [
        "seed-quick",
        "--requests",
        "2000",
        "--arm",
        "naive",
        "--arm",
        "undici",
    ];
    let p = shards(&root, &args, 4);
    let (a, b, c) = (p[0].as_path(), p[1].as_path(), p[2].as_path());
    let json = |name: &str, inputs: &[&Path]| -> Vec<u8> {
        let out = root.join(name);
        let o = merge(inputs, &["--json", out.to_str().unwrap()]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        std::fs::read(out).unwrap()
    };
    let abc = json("abc.json", &[a, b, c]);
    assert_eq!(abc, json("cba.json", &[c, b, a]));
    assert_eq!(abc, json("bca.json", &[b, c, a]));
    let ab = root.join("ab.json");
    assert_eq!(json("ab.json", &[a, b]), json("ba.json", &[b, a]));
    assert_eq!(abc, json("ab_c.json", &[&ab, c]));
    let bc = root.join("bc.json");
    json("bc.json", &[b, c]);
    assert_eq!(abc, json("a_bc.json", &[a, &bc]));
    // Three of four: still a shard report, which merges with the fourth into the whole.
    let v: serde_json::Value = serde_json::from_slice(&abc).unwrap();
    assert_eq!(v["shard"]["indices"], serde_json::json!([0, 1, 2]));
    let abcd = json("abcd.json", &[&root.join("abc.json"), p[3].as_path()]);
    let single = sim_out(&root.join("single"), &args);
    assert_eq!(abcd, std::fs::read(single).unwrap());
}

#[test]
fn what_cannot_be_merged_is_refused_with_exit_2_and_nothing_written() {
    let root = tempdir("merge-refuse");
    let base = ["seed-quick", "--requests", "300", "--arm", "naive"];
    let p = shards(&root, &base, 2);
    let other_seed = sim_out(
        &root.join("seed"),
        &[
            "seed-quick",
            "--requests",
            "300",
            "--arm",
            "naive",
            "--seed",
            "7",
            "--shard",
            "1/2",
        ],
    );
    let other_count = sim_out(
        &root.join("count"),
        &[
            "seed-quick",
            "--requests",
            "300",
            "--arm",
            "naive",
            "--shard",
            "1/3",
        ],
    );
    let other_scenario = sim_out(
        &root.join("scenario"),
        &["breakers", "--requests", "300", "--shard", "1/2"],
    );
    let whole = sim_out(&root.join("whole"), &base);
    let garbage = root.join("garbage.json");
    std::fs::write(&garbage, "{ not json").unwrap();
    for (inputs, words) in [
        (vec![p[0].as_path(), other_seed.as_path()], "seed"),
        (vec![p[0].as_path(), other_count.as_path()], "shard count"),
        (vec![p[0].as_path(), other_scenario.as_path()], "scenario"),
        (vec![p[0].as_path(), p[0].as_path()], "merged once"),
        (vec![p[0].as_path(), whole.as_path()], "not a shard report"),
        (vec![p[0].as_path(), garbage.as_path()], "not a herd report"),
    ] {
        let out = root.join("out");
        let o = merge(&inputs, &["--out", out.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{words}: {}", stderr(&o));
        assert!(stderr(&o).contains(words), "{words}: {}", stderr(&o));
        assert!(!out.exists(), "{words}: nothing is written");
    }
    let o = herd(&["sim", "seed-quick", "--shard", "3/3"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("index runs from 0 to 2"),
        "{}",
        stderr(&o)
    );
}
