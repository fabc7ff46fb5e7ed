//! `herd calibrate` against real services, and `herd tune` on what it wrote.
//!
//! Two services stand in for a user's: Debian's nginx behind `limit_req rate=200r/s
//! burst=20 nodelay` (503), and herd's own upstream run alone (`herd upstream`) with two
//! 5 ms workers and a queue of 20. Each is calibrated, and the calibrated scenario is run
//! twice at the same rate: in the simulator (the fitted model) and on the socket (herd's
//! front before the service itself). A fitted model is worth having only if the two
//! agree where retries are concerned: the no-retry arm's hard-fail within 2 points, each
//! retry arm's load multiplier within 15%.

mod common;
use common::nginx::{free_port, Nginx};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The socket tests take turns: two services probed at once would measure each other.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The arms run against each fitted model: one that never retries, and two retry
/// strategies at opposite ends (immediate retries; exponential backoff with full jitter).
const ARMS: &str = r#"
[[arms]]
id = "none"
policy = "none"

[[arms]]
id = "naive"
policy = "naive"

[[arms]]
id = "exponential"
policy = "exponential"
jitter = "full"
retries = 3
"#;

/// A scenario forwarding to `target` at `rate` req/s for `requests`, with [`ARMS`].
fn scenario(dir: &Path, target: &str, rate: u32, requests: u32) -> PathBuf {
    let text = format!(
        "name = \"calibrated-service\"\nseed = 3\n\n[load]\nrequests = {requests}\nrate = {rate}\n\
         arrival = \"constant\"\n\n[upstream]\ntarget = \"{target}\"\nsettle_ms = 500\n{ARMS}"
    );
    let path = dir.join("service.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// `herd calibrate SCENARIO --out DIR ARGS`; the calibrated scenario's path.
fn calibrate(scenario: &Path, out: &Path, args: &[&str]) -> PathBuf {
    let mut all = vec![
        "calibrate",
        scenario.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ];
    all.extend_from_slice(args);
    let o = herd(&all);
    assert!(o.status.success(), "{}", stderr(&o));
    eprintln!("{}", stdout(&o));
    let path = out.join("calibrated.toml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("calibrated = "), "{text}");
    path
}

#[test]
fn tune_verifies_its_recommendation_on_nginx() {
    let _turn = turn();
    let dir = tempdir("calibrate-tune");
    let nginx = Nginx::rate_limited(dir.join("nginx"), "200r/s", 20);
    let scen = scenario(&dir, &nginx.url(), 300, 1500);
    let path = calibrate(&scen, &dir.join("fit"), &["--max-rate", "400"]);
    let out = dir.join("tuned");
    let o = herd(&[
        "tune",
        path.to_str().unwrap(),
        "--arm",
        "exponential",
        "--vary",
        "retries=1,3",
        "--seeds",
        "2",
        "--max-hard-fail",
        "45%",
        "--max-load",
        "2.5",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = stdout(&o);
    eprintln!("{text}");
    assert!(text.contains("verified on http://"), "{text}");
    assert!(text.contains("| predicted |"), "{text}");
    assert!(text.contains("| measured |"), "{text}");
    assert!(
        text.contains("meets every limit on the target too"),
        "{text}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(out.join("tune.json")).unwrap()).unwrap();
    let ver = &v["verified"];
    assert_eq!(ver["target"], nginx.url());
    let points = ver["points"].as_array().expect("verified points");
    assert_eq!(points.len(), 2, "{ver}");
    assert_eq!(points[0]["role"], "recommended", "{ver}");
    assert_eq!(points[0]["index"], v["recommended"], "{ver}");
    assert_eq!(points[1]["role"], "runner-up", "{ver}");
    assert_eq!(points[0]["meets_limits"], true, "{ver}");
    // The server counted retries: a limiter at 200 r/s offered 300 r/s turns requests away.
    let load = points[0]["measured"]["load"].as_f64().unwrap();
    assert!(load > 1.05, "{ver}");
    let html = std::fs::read_to_string(out.join("tune.html")).unwrap();
    assert!(html.contains("<h2>Verified on the target</h2>"), "{html}");
    assert!(html.contains("<tr class=\"measured\">"), "{html}");

    // --no-verify: the same search, nothing sent.
    let before = nginx.access_log().len();
    let o = herd(&[
        "tune",
        path.to_str().unwrap(),
        "--arm",
        "exponential",
        "--vary",
        "retries=1,3",
        "--seeds",
        "2",
        "--no-verify",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v.get("verified").is_none(), "{v}");
    assert!(stderr(&o).contains("--no-verify"), "{}", stderr(&o));
    assert_eq!(
        nginx.access_log().len(),
        before,
        "--no-verify sent requests"
    );
}

#[test]
fn tune_refuses_a_target_without_a_calibrated_model() {
    let dir = tempdir("calibrate-refuse");
    // Nothing listens there: the refusal comes before anything is sent.
    let scen = scenario(&dir, &format!("http://{}", free_port()), 300, 1500);
    let o = herd(&[
        "tune",
        scen.to_str().unwrap(),
        "--vary",
        "retries=1,3",
        "--out",
        dir.join("t").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let err = stderr(&o);
    assert_eq!(err.trim().lines().count(), 1, "one sentence: {err}");
    assert!(err.contains("not calibrated"), "{err}");
    assert!(err.contains("herd calibrate"), "{err}");
    assert!(!dir.join("t").exists(), "nothing written");
    assert!(stdout(&o).is_empty());
}

#[test]
fn points_that_all_give_the_same_figures_are_not_ranked() {
    // An upstream that never fails: retries change nothing.
    let dir = tempdir("calibrate-same");
    let path = dir.join("healthy.toml");
    std::fs::write(
        &path,
        "name = \"healthy\"\n[load]\nrequests = 300\nrate = 100\n\n[[arms]]\nid = \"exp\"\npolicy = \"exponential\"\n",
    )
    .unwrap();
    let o = herd(&[
        "tune",
        path.to_str().unwrap(),
        "--vary",
        "retries=0,1,2",
        "--seeds",
        "1",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    eprintln!("{}", v["verdict"]);
    assert!(v["recommended"].is_null(), "{v}");
    let verdict = v["verdict"].as_str().unwrap();
    assert!(
        verdict.starts_with("the varied keys change nothing here: every point gives load 1.000x"),
        "{verdict}"
    );
}
