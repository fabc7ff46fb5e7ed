//! Consumers and trace replay end to end: `herd sim incident`'s ordering, a short
//! consumer scenario on a real socket, bad consumer and trace input (exit 2, naming the
//! key or the line), `--skip-bad-lines`, and `herd trace synth`.

mod common;
use common::*;
use serde_json::Value;

fn json(o: &std::process::Output) -> Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_str(&stdout(o)).expect("JSON on stdout")
}

#[test]
fn sim_incident_reissue_multiplies_load_and_abandon_cap1_does_not() {
    let first = herd(&["sim", "incident", "--json", "-", "--quiet"]);
    let v = json(&first);
    let reissue = arm(&v, "fulljitter-reissue");
    let abandon = arm(&v, "fulljitter-abandon-cap1");
    let nojitter = arm(&v, "nojitter-reissue");
    for a in [reissue, abandon, nojitter] {
        assert_eq!(a["demand_requests"], 3000, "{a}");
        assert!(a["consumer_timeouts"].as_u64().unwrap() > 0);
        assert!(
            a["logical_requests"].as_u64().unwrap() > 3000,
            "re-sends count"
        );
    }
    let load = |a: &Value| a["load_multiplier"].as_f64().unwrap();
    assert!(
        load(reissue) >= 4.0,
        "fulljitter-reissue: {}",
        load(reissue)
    );
    assert!(
        load(nojitter) >= 4.0,
        "nojitter-reissue: {}",
        load(nojitter)
    );
    assert!(
        load(abandon) <= 2.0,
        "fulljitter-abandon-cap1: {}",
        load(abandon)
    );
    assert_eq!(reissue["abandoned"], 0);
    assert!(abandon["abandoned"].as_u64().unwrap() > 0);
    let peak = |a: &Value| a["peak_rps_multiplier"].as_f64().unwrap();
    assert!(peak(reissue) > peak(abandon));
    // Same seed, same bytes.
    let again = herd(&["sim", "incident", "--json", "-", "--quiet"]);
    assert_eq!(stdout(&again), stdout(&first));
}

#[test]
fn sim_without_consumers_has_no_consumer_fields() {
    let v = json(&herd(&["sim", "seed-quick", "--json", "-", "--quiet"]));
    for a in v["arms"].as_array().unwrap() {
        for k in ["demand_requests", "consumer_timeouts", "abandoned"] {
            assert!(a.get(k).is_none(), "{k} in {a}");
        }
    }
}

const SHORT: &str = r#"
name = "short-consumers"
seed = 3
[load]
requests = 300
[consumers]
count = 20
rate = 5
timeout_ms = 300
give_up_ms = 5000
[client]
pool_max_connections = 128
[upstream]
service_time = { dist = "constant", ms = 5 }
workers = 4
queue_limit = 200
shed = "503"
[[upstream.incidents]]
start_ms = 1000
duration_ms = 1000
slowdown = 40
[[arms]]
id = "reissue"
policy = "undici"
jitter = "full"
base_ms = 50
[[arms]]
id = "abandon-cap1"
policy = "undici"
jitter = "full"
base_ms = 50
consumers = { on_timeout = "abandon", max_in_flight = 1 }
"#;

#[test]
fn bench_runs_consumers_on_a_real_socket() {
    let dir = tempdir("consumers-bench");
    let file = dir.join("short.toml");
    std::fs::write(&file, SHORT).unwrap();
    let v = json(&herd(&[
        "bench",
        file.to_str().unwrap(),
        "--json",
        "-",
        "--quiet",
    ]));
    assert_eq!(v["mode"], "real");
    let reissue = arm(&v, "reissue");
    let abandon = arm(&v, "abandon-cap1");
    for a in [reissue, abandon] {
        assert_eq!(a["demand_requests"], 300, "{a}");
        assert!(a["consumer_timeouts"].as_u64().unwrap() > 0, "{a}");
        assert_eq!(
            a["succeeded"].as_u64().unwrap() + a["failed"].as_u64().unwrap(),
            300
        );
    }
    assert!(abandon["abandoned"].as_u64().unwrap() > 0, "{abandon}");
    assert_eq!(reissue["abandoned"], 0);
    let load = |a: &Value| a["load_multiplier"].as_f64().unwrap();
    assert!(
        load(reissue) > load(abandon),
        "reissue {} vs abandon {}",
        load(reissue),
        load(abandon)
    );
    // The simulator agrees on the ordering.
    let s = json(&herd(&[
        "sim",
        file.to_str().unwrap(),
        "--json",
        "-",
        "--quiet",
    ]));
    assert!(load(arm(&s, "reissue")) > load(arm(&s, "abandon-cap1")));
}

#[test]
fn timeout_zero_with_reissue_exits_2_naming_the_key() {
    let dir = tempdir("consumers-bad");
    let file = dir.join("bad.toml");
    std::fs::write(&file, SHORT.replace("timeout_ms = 300", "timeout_ms = 0")).unwrap();
    let o = herd(&["sim", file.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("bad.toml:9:") && e.contains("consumers.timeout_ms") && e.contains("reissue"),
        "{e}"
    );
}

#[test]
fn trace_lines_are_checked_and_can_be_skipped() {
    let dir = tempdir("consumers-trace");
    let trace = dir.join("t.csv");
    std::fs::write(&trace, "t_ms,consumer\n0,1\nabc,1\n20,2\n40,3\n").unwrap();
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        SHORT
            .replace("rate = 5\n", "")
            .replace("requests = 300\n", "trace = \"t.csv\"\n"),
    )
    .unwrap();
    let o = herd(&["sim", scenario.to_str().unwrap(), "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("t.csv:3:") && stderr(&o).contains("abc"),
        "{}",
        stderr(&o)
    );
    let o = herd(&[
        "sim",
        scenario.to_str().unwrap(),
        "--skip-bad-lines",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("skipped 1 malformed trace line(s) (line 3)"),
        "{}",
        stderr(&o)
    );
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(arm(&v, "reissue")["demand_requests"], 3);
    // --trace on the command line, relative to the working directory; same answer.
    let o = herd(&[
        "sim",
        "incident",
        "--trace",
        trace.to_str().unwrap(),
        "--quiet",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(":3:"), "{}", stderr(&o));
}

#[test]
fn trace_synth_is_seeded_and_replays() {
    let dir = tempdir("consumers-synth");
    let out = dir.join("t.csv");
    let args = [
        "trace",
        "synth",
        "--consumers",
        "50",
        "--seconds",
        "5",
        "--rate",
        "2",
        "--seed",
        "9",
    ];
    let mut a = args.to_vec();
    let path = out.to_str().unwrap();
    a.extend(["--out", path]);
    assert!(herd(&a).status.success());
    let first = std::fs::read_to_string(&out).unwrap();
    let again = stdout(&herd(&args));
    assert_eq!(first, again, "same flags, same bytes");
    assert!(first.starts_with("# herd trace synth --consumers 50"));
    let lines = first.lines().filter(|l| !l.starts_with('#')).count() - 1;
    assert!(
        (400..600).contains(&lines),
        "{lines} arrivals for 50 x 2/s x 5 s"
    );
    let v = json(&herd(&[
        "sim", "incident", "--trace", path, "--json", "-", "--quiet",
    ]));
    assert_eq!(
        arm(&v, "fulljitter-reissue")["demand_requests"],
        lines as u64
    );
    // The shipped trace is what the documented command writes.
    let shipped = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenario/scenarios/traces/incident.csv"
    );
    let o = herd(&[
        "trace",
        "synth",
        "--consumers",
        "200",
        "--seconds",
        "30",
        "--rate",
        "0.5",
        "--seed",
        "7",
    ]);
    assert_eq!(stdout(&o), std::fs::read_to_string(shipped).unwrap());
}
