//! Shards on real sockets, started the way a Kubernetes Indexed Job starts them (the index
//! in `JOB_COMPLETION_INDEX`, the count in `HERD_SHARDS`, one start in `HERD_START_AT`):
//! four processes against one `herd upstream`, merged with the front's `/__herd/stats`.
//! The server received exactly the shards' attempts, and the merged p50/p99 are those of
//! one process driving the whole rate (at a rate one process carries easily on a busy
//! 2-core machine: the point is the arithmetic of the merge, not the machine's ceiling,
//! which scripts/shards-on-loopback measures).

mod common;

use common::{herd, stderr, tempdir};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fixed 40 ms service time, no faults, capacity to spare: latency is the service time
/// plus loopback, the same whichever process sent the request. 40 ms is long beside the
/// few ms a busy machine adds to a process's wake-ups at the tail, which five processes
/// on two cores feel more than two do.
const SCENARIO: &str = r#"
name = "shards-socket"
seed = 3
[load]
requests = 6000
rate = 1200
arrival = "poisson"
method = "GET"
[client]
pool_max_connections = 256
attempt_timeout_ms = 2000
[upstream]
error_rate = 0.0
retry_after_s = 0
service_time = { dist = "constant", ms = 40 }
[[arms]]
id = "undici"
policy = "undici"
"#;

struct Front(Child, String);

impl Drop for Front {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn front(scenario: &Path) -> Front {
    let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
        .args([
            "upstream",
            scenario.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    Front(child, url)
}

fn json(p: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn within(a: f64, b: f64, frac: f64) -> bool {
    (a - b).abs() <= frac * b
}

/// The driver's lag in a report, ms: (p99, max).
fn lag(v: &serde_json::Value) -> (f64, f64) {
    let of = |q: &str| {
        v["arms"][0]["driver_lag_ms"][q]
            .as_f64()
            .unwrap_or(f64::INFINITY)
    };
    (of("p99"), of("max"))
}

/// Whether a driver kept to its schedule closely enough for its latency percentiles to be
/// compared within 10% of a 40 ms service: its lag p99 under 2 ms (half that tolerance,
/// since the lag is inside the latency) and no lag of 20 ms or more.
fn on_schedule((p99, max): (f64, f64)) -> bool {
    p99 < 2.0 && max < 20.0
}

/// One process at the whole rate, against a front of its own: its report.
fn one_process(dir: &Path, scenario: &Path) -> serde_json::Value {
    let f = front(scenario);
    let out = dir.join("single.json");
    let o = herd(&[
        "bench",
        scenario.to_str().unwrap(),
        "--target",
        &f.1,
        "--direct",
        "--quiet",
        "--json",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    json(&out)
}

/// Four shards as the Job starts them, against one front, merged with its stats: the
/// merged report, the shards' attempts summed, and the lag of the shard furthest behind
/// (the largest p99, the largest max).
fn four_shards(dir: &Path, scenario: &Path) -> (serde_json::Value, u64, (f64, f64)) {
    let f = front(scenario);
    let s = scenario.to_str().unwrap();
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 1500;
    let shards: Vec<(Child, std::path::PathBuf)> = (0..4)
        .map(|i| {
            let out = dir.join(format!("shard-{i}.json"));
            let child = Command::new(env!("CARGO_BIN_EXE_herd"))
                .args([
                    "bench", s, "--target", &f.1, "--direct", "--quiet", "--json",
                ])
                .arg(&out)
                .env("JOB_COMPLETION_INDEX", i.to_string())
                .env("HERD_SHARDS", "4")
                .env("HERD_START_AT", start.to_string())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            (child, out)
        })
        .collect();
    let (mut attempts, mut worst) = (0, (0.0f64, 0.0f64));
    let mut paths = Vec::new();
    for (child, out) in shards {
        let o = child.wait_with_output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let v = json(&out);
        attempts += v["arms"][0]["client_attempts"].as_u64().unwrap();
        let (p99, max) = lag(&v);
        worst = (worst.0.max(p99), worst.1.max(max));
        paths.push(out);
    }
    let merged = dir.join("merged.json");
    let stats = format!("{}/__herd/stats", f.1);
    let mut args = vec!["merge"];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    args.extend([
        "--stats",
        &stats,
        "--json",
        merged.to_str().unwrap(),
        "--quiet",
    ]);
    let o = herd(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    (json(&merged), attempts, worst)
}

#[test]
fn four_shards_against_one_upstream_merge_into_one_process() {
    let dir = tempdir("shards-socket");
    let scenario = dir.join("s.toml");
    std::fs::write(&scenario, SCENARIO).unwrap();
    // Latency is compared only between runs whose drivers kept to their schedule (see
    // `on_schedule`): a driver starved of CPU by the machine's other work sends late, and
    // that shows in its percentiles, not the merge's. Once, in CI, a run with every lag
    // under 20 ms (the bound this used) had a one-process p99 of 46.8 ms against the
    // merged 40.7. Its lags were not printed, so whether the driver or the server was late
    // is not known; a lag of a few ms at the tail is already a tenth of 40 ms, so the bound
    // is now on the lag p99 too, and a failure prints the lags.
    let mut lags = Vec::new();
    for _ in 0..6 {
        let one = one_process(&dir, &scenario);
        let (m, attempts, worst) = four_shards(&dir, &scenario);
        let ma = &m["arms"][0];
        // The counts hold whatever the machine did.
        assert_eq!(ma["logical_requests"], 6000);
        assert_eq!(ma["client_attempts"].as_u64(), Some(attempts));
        assert_eq!(
            ma["server_requests"].as_u64(),
            Some(attempts),
            "server = sum of attempts"
        );
        assert!(m.get("direct").is_none(), "the fronts' counts are shown");
        if !on_schedule(lag(&one)) || !on_schedule(worst) {
            lags.push((lag(&one), worst));
            continue;
        }
        let oa = &one["arms"][0];
        for q in ["p50", "p99"] {
            let (x, y) = (
                ma["latency_ms"][q].as_f64().unwrap(),
                oa["latency_ms"][q].as_f64().unwrap(),
            );
            assert!(
                within(x, y, 0.10),
                "{q}: merged {x} ms, one process {y} ms (lag p99 and max: one process {:?}, worst shard {worst:?} ms)",
                lag(&one)
            );
        }
        return;
    }
    panic!("the drivers fell behind schedule in every run (lag p99 and max, one process and worst shard: {lags:?} ms)");
}

/// A shard that is ready only after the common start begins then and says how late: its
/// schedule runs that far behind the other shards'. One that is ready in time says
/// nothing and begins at the instant.
#[test]
fn a_shard_ready_after_the_common_start_says_how_late_it_began() {
    let dir = tempdir("shards-late");
    let scenario = dir.join("s.toml");
    std::fs::write(
        &scenario,
        SCENARIO.replace("requests = 6000", "requests = 40"),
    )
    .unwrap();
    let f = front(&scenario);
    let now_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let run = |start_ms: u128| {
        let out = dir.join("shard.json");
        Command::new(env!("CARGO_BIN_EXE_herd"))
            .args(["bench", scenario.to_str().unwrap(), "--target", &f.1])
            .args(["--direct", "--quiet", "--json"])
            .arg(&out)
            .env("JOB_COMPLETION_INDEX", "0")
            .env("HERD_SHARDS", "4")
            .env("HERD_START_AT", start_ms.to_string())
            .output()
            .unwrap()
    };
    let late = run(now_ms - 3_000);
    assert!(late.status.success(), "{}", stderr(&late));
    let err = stderr(&late);
    assert!(
        err.contains("began 3.") && err.contains("after the common start"),
        "{err}"
    );
    let on_time = SystemTime::now();
    let start = on_time.duration_since(UNIX_EPOCH).unwrap().as_millis() + 800;
    let ready = run(start);
    assert!(ready.status.success(), "{}", stderr(&ready));
    assert!(
        !stderr(&ready).contains("common start"),
        "{}",
        stderr(&ready)
    );
    // It waited for the instant: 10 requests (a quarter of 40) at 1,200 req/s and 40 ms
    // of service take well under the 800 ms it had to wait.
    assert!(on_time.elapsed().unwrap() >= std::time::Duration::from_millis(800));

    // Arms one after another (`--sequential`): only the first keeps the common start; the
    // second begins when the first has ended (1.7 s later), and is not late for it.
    let two = dir.join("two.toml");
    std::fs::write(
        &two,
        SCENARIO.replace("requests = 6000", "requests = 8000")
            + "\n[[arms]]\nid = \"again\"\npolicy = \"none\"\n",
    )
    .unwrap();
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 500;
    let o = Command::new(env!("CARGO_BIN_EXE_herd"))
        .args(["bench", two.to_str().unwrap(), "--target", &f.1])
        .args(["--direct", "--sequential", "--quiet", "--json"])
        .arg(dir.join("two.json"))
        .env("JOB_COMPLETION_INDEX", "0")
        .env("HERD_SHARDS", "4")
        .env("HERD_START_AT", start.to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("common start"), "{}", stderr(&o));
}
