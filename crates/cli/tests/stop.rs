//! Stopping a run: SIGINT / SIGTERM to the real `herd` binary, sent from this harness (a
//! shell's background job would ignore SIGINT), then the exit code, the partial report and
//! the processes left behind, read from `/proc`.
//!
//! The Node tests need Node.js and npm (`herd bench` sets the adapter up in its cache with
//! `npm ci` on first use).

#![cfg(target_os = "linux")]

mod common;
use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::sleep;
use std::time::{Duration, Instant};

/// Starts `herd ARGS` with stdout and stderr piped (herd writes little to either before
/// it exits).
fn start(args: &[&str], env: &[(&str, &Path)]) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_herd"));
    // herd-driver says when each arm's clock starts.
    cmd.env("HERD_LOG", "herd_driver=info")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.spawn().expect("herd starts")
}

/// Sends `signal` (`INT`, `TERM`, `KILL`) to `pid`.
fn signal(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .status()
        .expect("kill runs")
        .success();
    assert!(ok, "kill -{signal} {pid}");
}

/// Waits up to `limit` for `child` to exit.
fn exit_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + limit;
    loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            return Some(s);
        }
        if Instant::now() >= until {
            return None;
        }
        sleep(Duration::from_millis(20));
    }
}

/// Waits for `child`'s exit within `limit` or kills it and fails the test.
fn expect_exit(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    match exit_within(child, limit) {
        Some(s) => s,
        None => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("herd did not exit within {limit:?} of {what}");
        }
    }
}

/// Every process as (pid, ppid, pgid, state), from `/proc/*/stat`.
fn processes() -> Vec<(u32, u32, u32, char)> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return vec![];
    };
    dir.filter_map(|e| {
        let pid: u32 = e.ok()?.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // `pid (comm) state ppid pgrp ...`; comm may hold spaces and parentheses.
        let rest = &stat[stat.rfind(')')? + 2..];
        let mut f = rest.split_whitespace();
        let state = f.next()?.chars().next()?;
        let ppid = f.next()?.parse().ok()?;
        let pgid = f.next()?.parse().ok()?;
        Some((pid, ppid, pgid, state))
    })
    .collect()
}

/// The live children of `pid`.
fn children(pid: u32) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|&(_, ppid, _, state)| ppid == pid && state != 'Z')
        .map(|(p, ..)| p)
        .collect()
}

/// Live processes (not zombies) among `pids` or in the process groups they lead.
fn still_running(pids: &[u32]) -> Vec<u32> {
    processes()
        .into_iter()
        .filter(|&(p, _, pgid, state)| state != 'Z' && (pids.contains(&p) || pids.contains(&pgid)))
        .map(|(p, ..)| p)
        .collect()
}

/// Waits (up to `limit`) until `herd` has a child running `arm.mjs`; returns its pid.
fn adapter_of(herd: &mut Child, limit: Duration) -> u32 {
    let until = Instant::now() + limit;
    loop {
        for c in children(herd.id()) {
            let cmdline = std::fs::read(format!("/proc/{c}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains("arm.mjs") {
                return c;
            }
        }
        if let Some(s) = herd.try_wait().expect("try_wait") {
            panic!("herd exited ({s}) before starting its adapter");
        }
        assert!(Instant::now() < until, "no adapter within {limit:?}");
        sleep(Duration::from_millis(50));
    }
}

/// Forwards `child`'s stderr lines to a channel (and keeps the pipe drained).
fn stderr_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let err = child.stderr.take().expect("stderr piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines() {
            let Ok(line) = line else { return };
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Waits for a stderr line containing `needle`; returns every line read so far.
fn wait_for_line(lines: &mpsc::Receiver<String>, needle: &str, limit: Duration) -> Vec<String> {
    let until = Instant::now() + limit;
    let mut seen = vec![];
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(l) => {
                let hit = l.contains(needle);
                seen.push(l);
                if hit {
                    return seen;
                }
            }
            Err(_) => break,
        }
    }
    panic!("no stderr line with {needle:?} within {limit:?}; got {seen:?}");
}

fn report(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("report {} missing: {e}", path.display()));
    serde_json::from_str(&text).expect("report is JSON")
}

fn arms(v: &Value) -> &Vec<Value> {
    v["arms"].as_array().expect("arms")
}

#[test]
fn sigint_during_bench_writes_a_partial_report_and_exits_130() {
    let dir = tempdir("stop-bench-int");
    let json = dir.join("r.json");
    let mut herd = start(
        &[
            "bench",
            "seed-quick",
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ],
        &[],
    );
    sleep(Duration::from_secs(4));
    signal(herd.id(), "INT");
    let status = expect_exit(&mut herd, Duration::from_secs(2), "SIGINT");
    assert_eq!(status.code(), Some(130), "{status}");

    let v = report(&json);
    assert_eq!(v["schema"], "herd.report/v1");
    assert_eq!(v["partial"], true);
    assert_eq!(v["stop"]["signal"], "SIGINT");
    assert_eq!(v["stop"]["planned"], 6 * 1600);
    assert_eq!(v["stop"]["left_out"].as_array().map(Vec::len), Some(0));
    let finished: u64 = arms(&v)
        .iter()
        .map(|a| a["logical_requests"].as_u64().expect("count"))
        .sum();
    assert_eq!(v["stop"]["finished"], finished);
    assert!(finished > 0 && finished < 6 * 1600, "finished {finished}");
    for a in arms(&v) {
        let n = a["logical_requests"].as_u64().unwrap();
        assert_eq!(
            a["succeeded"].as_u64().unwrap() + a["failed"].as_u64().unwrap(),
            n
        );
        assert!(n > 0 && n < 1600, "arm {}: {n}", a["id"]);
    }
}

#[test]
fn a_whole_run_is_not_partial() {
    let o = herd(&[
        "sim",
        "seed-quick",
        "--arm",
        "no-retry",
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(v["partial"], false);
    assert!(v.get("stop").is_none());
}

/// Eight arms of 8 M requests (a few seconds each on a quiet machine, about 15 s for the
/// whole run on two cores), at a rate that keeps each arm's timeline short.
const LONG_SIM: &str = r#"
name = "long"
seed = 1
[load]
requests = 8000000
rate = 40000
[upstream]
error_rate = 0.01
service_time = { dist = "constant", ms = 5 }
workers = 0
[[arms]]
id = "a"
policy = "none"
[[arms]]
id = "b"
policy = "naive"
[[arms]]
id = "c"
policy = "undici"
[[arms]]
id = "d"
policy = "undici"
jitter = "full"
[[arms]]
id = "e"
policy = "axios-retry"
[[arms]]
id = "f"
policy = "axios-retry"
jitter = "full"
[[arms]]
id = "g"
policy = "exponential"
[[arms]]
id = "h"
policy = "herd"
"#;

#[test]
fn sigint_during_sim_reports_the_finished_arms_and_exits_130() {
    let dir = tempdir("stop-sim-int");
    let file = dir.join("long.toml");
    std::fs::write(&file, LONG_SIM).unwrap();
    let json = dir.join("r.json");
    let mut herd = start(
        &[
            "sim",
            file.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ],
        &[],
    );
    sleep(Duration::from_secs(4));
    signal(herd.id(), "INT");
    let status = expect_exit(&mut herd, Duration::from_secs(2), "SIGINT");
    assert_eq!(status.code(), Some(130), "{status}");

    let v = report(&json);
    assert_eq!(v["mode"], "sim");
    assert_eq!(v["partial"], true);
    let left_out = v["stop"]["left_out"].as_array().expect("left_out").len();
    assert!(
        left_out > 0,
        "every arm finished in 4 s; make the run longer"
    );
    assert_eq!(arms(&v).len() + left_out, 8);
    // The simulator reports whole arms only.
    for a in arms(&v) {
        assert_eq!(a["logical_requests"], 8_000_000, "arm {}", a["id"]);
    }
}

#[test]
fn sigterm_during_a_node_arm_exits_143_and_leaves_no_process() {
    let dir = tempdir("stop-node-term");
    let json = dir.join("r.json");
    let mut herd = start(
        &[
            "bench",
            "peers",
            "--arm",
            "node-undici",
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ],
        &[],
    );
    let lines = stderr_lines(&mut herd);
    let node = adapter_of(&mut herd, Duration::from_secs(120));
    // The adapter warms up before its handshake (seconds on a busy machine); once herd
    // starts the clock, requests flow.
    wait_for_line(&lines, "the clock starts", Duration::from_secs(60));
    sleep(Duration::from_secs(2));
    let herd_pid = herd.id();
    signal(herd_pid, "TERM");
    let status = expect_exit(&mut herd, Duration::from_secs(2), "SIGTERM");
    assert_eq!(status.code(), Some(143), "{status}");
    sleep(Duration::from_secs(2));
    let left = still_running(&[node]);
    assert!(left.is_empty(), "adapter processes left: {left:?}");
    let orphans: Vec<_> = processes()
        .into_iter()
        .filter(|&(p, ppid, ..)| ppid == herd_pid && p != herd_pid)
        .collect();
    assert!(orphans.is_empty(), "children of herd left: {orphans:?}");

    let v = report(&json);
    assert_eq!(v["partial"], true);
    assert_eq!(v["stop"]["signal"], "SIGTERM");
    let a = arm(&v, "node-undici");
    let n = a["logical_requests"].as_u64().unwrap();
    assert!(n > 0 && n < 1600, "node-undici finished {n}");
}

#[test]
fn a_sigkilled_herd_leaves_no_node_adapter_behind() {
    let mut herd = start(&["bench", "peers", "--arm", "node-undici", "--quiet"], &[]);
    let node = adapter_of(&mut herd, Duration::from_secs(120));
    sleep(Duration::from_secs(2));
    signal(herd.id(), "KILL");
    let _ = herd.wait();
    let until = Instant::now() + Duration::from_secs(3);
    while !still_running(&[node]).is_empty() {
        assert!(
            Instant::now() < until,
            "adapter {node} still running 3 s after herd was SIGKILLed"
        );
        sleep(Duration::from_millis(50));
    }
}

/// An adapter directory whose `arm.mjs` speaks the protocol (answering at once, sending
/// nothing anywhere) but ignores SIGTERM, so herd's stop has to wait out its grace.
fn stubborn_adapter(dir: &Path) {
    for pkg in ["undici", "axios", "axios-retry"] {
        let p = dir.join("node_modules").join(pkg);
        std::fs::create_dir_all(&p).unwrap();
        std::fs::write(p.join("package.json"), r#"{"version":"0.0.0"}"#).unwrap();
    }
    let js = r#"
import readline from 'node:readline';
process.on('SIGTERM', () => {});
const client = process.argv[process.argv.indexOf('--client') + 1];
process.stdout.write(JSON.stringify({ herd_adapter: 1, client, policy: 'stub: ignores SIGTERM' }) + '\n');
const input = readline.createInterface({ input: process.stdin });
input.on('line', (line) => {
  const { id } = JSON.parse(line);
  process.stdout.write(JSON.stringify({ id, ok: true, status: 200, error: null, attempts: 1 }) + '\n');
});
input.on('close', () => process.stdout.write('{"done":true}\n', () => process.exit(0)));
process.stdout.on('error', () => process.exit(3));
"#;
    std::fs::write(dir.join("arm.mjs"), js).unwrap();
}

const STUBBORN: &str = r#"
name = "stubborn"
seed = 1
[load]
requests = 100000
rate = 100
[[arms]]
id = "stub"
client = "node-undici"
"#;

/// Starts `herd bench` on the stubborn adapter and waits until it is sending.
fn start_stubborn(name: &str, json: &Path) -> (Child, u32) {
    let dir = tempdir(name);
    let adapter = dir.join("adapter");
    stubborn_adapter(&adapter);
    let file = dir.join("stubborn.toml");
    std::fs::write(&file, STUBBORN).unwrap();
    let mut herd = start(
        &[
            "bench",
            file.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        &[("HERD_NODE_ADAPTER", &adapter)],
    );
    let node = adapter_of(&mut herd, Duration::from_secs(30));
    sleep(Duration::from_secs(2));
    (herd, node)
}

#[test]
fn an_adapter_that_ignores_sigterm_is_killed_after_the_grace() {
    let json = tempdir("stop-stubborn-json").join("r.json");
    let (mut herd, node) = start_stubborn("stop-stubborn", &json);
    let lines = stderr_lines(&mut herd);
    signal(herd.id(), "INT");
    let status = expect_exit(&mut herd, Duration::from_secs(2), "SIGINT");
    assert_eq!(status.code(), Some(130), "{status}");
    let left = still_running(&[node]);
    assert!(left.is_empty(), "adapter processes left: {left:?}");
    wait_for_line(&lines, "SIGINT: stopping", Duration::from_secs(1));
    let mut table = String::new();
    std::io::Read::read_to_string(&mut herd.stdout.take().unwrap(), &mut table).unwrap();
    assert!(
        table.contains("\npartial run: stopped by SIGINT after "),
        "{table}"
    );
    let v = report(&json);
    assert_eq!(v["partial"], true);
    assert!(arm(&v, "stub")["logical_requests"].as_u64().unwrap() > 0);
}

#[test]
fn a_second_sigint_exits_at_once_without_a_report() {
    let json = tempdir("stop-twice-json").join("r.json");
    let (mut herd, node) = start_stubborn("stop-twice", &json);
    let lines = stderr_lines(&mut herd);
    signal(herd.id(), "INT");
    // The first is taken once herd says so; its stop then waits out the adapter's grace.
    wait_for_line(&lines, "SIGINT: stopping", Duration::from_secs(2));
    let second = Instant::now();
    signal(herd.id(), "INT");
    let status = expect_exit(&mut herd, Duration::from_secs(1), "the second SIGINT");
    assert_eq!(status.code(), Some(130), "{status}");
    assert!(
        second.elapsed() < Duration::from_millis(400),
        "{:?}",
        second.elapsed()
    );
    wait_for_line(
        &lines,
        "second SIGINT: exiting at once",
        Duration::from_secs(1),
    );
    assert!(!json.exists(), "a report was written");
    // Its stdin closed with herd, so even this adapter goes.
    let until = Instant::now() + Duration::from_secs(3);
    while !still_running(&[node]).is_empty() {
        assert!(Instant::now() < until, "adapter {node} outlived herd");
        sleep(Duration::from_millis(50));
    }
}

/// Out of file descriptors mid-run: `herd bench` under `ulimit -n 64` (soft and hard, so
/// herd cannot raise it) with more requests in flight than 64 descriptors hold stops
/// with exit 1, one sentence naming the limit and how to raise it, and a report marked
/// partial; the failed connects are not counted as the upstream's errors.
#[test]
fn out_of_file_descriptors_stops_with_the_limit() {
    let dir = tempdir("out-of-files");
    let file = dir.join("fd.toml");
    std::fs::write(
        &file,
        "name = \"fd\"\nseed = 3\n[load]\nrequests = 3000\nrate = 3000\n\
         [client]\nattempt_timeout_ms = 2000\npool_max_connections = 500\n\
         [upstream]\nservice_time = { dist = \"constant\", ms = 50 }\n\
         [[arms]]\nid = \"a\"\npolicy = \"none\"\n",
    )
    .unwrap();
    let json = dir.join("r.json");
    let o = Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -n 64 && exec "$0" bench "$1" --json "$2""#)
        .arg(env!("CARGO_BIN_EXE_herd"))
        .arg(&file)
        .arg(&json)
        .output()
        .expect("sh runs");
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let sentence = err
        .lines()
        .find(|l| l.starts_with("herd: out of file descriptors"))
        .unwrap_or_else(|| panic!("no sentence: {err}"));
    assert!(
        sentence.contains("64 open at once") && sentence.contains("ulimit -n"),
        "{sentence}"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["partial"], true, "{v}");
    assert_eq!(
        v["stop"]["signal"], "running out of file descriptors",
        "{v}"
    );
    let a = arm(&v, "a");
    assert!(a["logical_requests"].as_u64().unwrap() < 3000, "{a}");
}
