//! herd as a fault-injecting, counting proxy in front of a real nginx (Debian's package,
//! started here on loopback with its access log on): every request that draws no fault
//! reaches nginx, and the report's `target_requests` is exactly what nginx logged for each
//! arm; a target that refuses connections stops the run before anything is counted; a
//! target that dies mid-run is counted as target errors and nothing hangs; bad target
//! URLs are refused with a sentence. The same holds for an `https://` nginx with a
//! self-signed certificate made here, trusted through `target_ca` (or `target_insecure`);
//! without them, or with a CA file that cannot be read, the run stops at start, exit 2.

mod common;

use common::nginx::{free_port, Nginx};
use common::{herd, stderr, stdout, tempdir};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The tests that send load run one at a time: two at once on a 2-core machine put the
/// driver behind its schedule.
static LOAD: Mutex<()> = Mutex::new(());

/// seed-quick's faults (its 503s, resets and stalls, and a hold window that resets every
/// request in it at once) in front of `target`, shorter, and with a longer hold so the
/// retry wave stands well above the offered 10 requests per bucket.
fn scenario(dir: &Path, target: &str) -> PathBuf {
    scenario_with(dir, target, "")
}

/// [`scenario`] with `extra` lines in `[upstream]`.
fn scenario_with(dir: &Path, target: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"name = "proxy-quick"
description = "seed-quick's faults in front of a real nginx"
seed = 20240611

[load]
requests = 500
rate = 100
arrival = "constant"
method = "GET"

[client]
pool_max_connections = 256
attempt_timeout_ms = 2000

[upstream]
target = "{target}"
settle_ms = 200
{extra}
error_rate = 0.009
reset_rate = 0.003
stall_rate = 0.0015
stall_ms = 2500

[[upstream.incidents]]
start_ms = 2000
duration_ms = 800
hold = true
hold_answer = "reset"

[[arms]]
id = "no-retry"
policy = "none"

[[arms]]
id = "axios-exp-nojitter"
policy = "axios-retry"
jitter = "none"

[[arms]]
id = "axios-exp-fulljitter"
policy = "axios-retry"
jitter = "full"

[[arms]]
id = "undici"
policy = "undici"

[[arms]]
id = "undici-fulljitter"
policy = "undici"
jitter = "full"
"#
    );
    let p = dir.join("proxy-quick.toml");
    std::fs::write(&p, text).expect("scenario");
    p
}

fn sum(arm: &Value, col: &str) -> u64 {
    arm["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|r| r[col].as_u64().expect("count"))
        .sum()
}

fn num(arm: &Value, k: &str) -> u64 {
    arm[k]
        .as_u64()
        .unwrap_or_else(|| panic!("{}.{k}", arm["id"]))
}

#[test]
fn nginx_logs_exactly_what_each_arm_forwarded() {
    let _one = LOAD.lock().unwrap_or_else(PoisonError::into_inner);
    let dir = tempdir("proxy-nginx");
    let nginx = Nginx::start(dir.join("nginx"));
    let scen = scenario(&dir, &nginx.url());
    let scen = scen.to_str().unwrap();
    // A driver that fell behind (a busy machine) sends in bunches, which inflates the burst
    // figures: as `bench_on_schedule`, up to three runs; nginx's log is read per run.
    let mut lags = vec![];
    for _ in 0..3 {
        let before = nginx.access_log().len();
        let o = herd(&["bench", scen, "--json", "-", "--quiet"]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
        let log: Vec<String> = nginx.access_log().split_off(before);
        check_counts(&v, &log, &nginx.url());
        let lag = v["arms"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|a| a["driver_lag_ms"].as_f64())
            .fold(0.0, f64::max);
        if lag < 20.0 {
            check_wave(&v);
            return;
        }
        lags.push(lag);
    }
    panic!("the driver fell behind schedule in every run (max lag per run: {lags:?} ms)");
}

/// Counts that hold whatever the machine's load: nginx logged each forwarded request once.
fn check_counts(v: &Value, log: &[String], url: &str) {
    assert_eq!(v["target"]["url"], url);
    assert_eq!(v["target"]["settle_ms"], 200);
    assert_eq!(v["target"]["connect_timeout_ms"], 1000);
    assert_eq!(v["target"]["answer_timeout_ms"], 10000);
    let arms = v["arms"].as_array().unwrap();
    assert_eq!(arms.len(), 5);
    for a in arms {
        let id = a["id"].as_str().unwrap();
        let logged = log
            .iter()
            .filter(|l| l.split(' ').nth(1) == Some(id))
            .count() as u64;
        let forwarded = num(a, "target_requests");
        assert_eq!(forwarded, logged, "{id}: target_requests vs nginx's log");
        assert_eq!(a["target_status"]["2xx"].as_u64(), Some(forwarded), "{id}");
        assert_eq!(
            a["target_errors"],
            serde_json::json!({"connect": 0, "timeout": 0, "broken": 0}),
            "{id}"
        );
        // What reached herd's front: forwarded, or answered by an injected fault there.
        let injected = sum(a, "errors") + sum(a, "resets") + sum(a, "shed");
        assert!(injected > 0, "{id}: the hold window resets requests");
        assert_eq!(num(a, "server_requests"), forwarded + injected, "{id}");
        assert!(a["target_latency_ms"]["p50"].as_f64().unwrap() > 0.0);
    }
    // Every line came from one of the arms, through herd.
    assert_eq!(
        log.len() as u64,
        arms.iter().map(|a| num(a, "target_requests")).sum::<u64>()
    );
    let schema: Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/schema/report.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).expect("schema");
    let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

/// The seed's finding holds in front of a real service: un-jittered retries of requests
/// that failed together arrive together.
fn check_wave(v: &Value) {
    let burst = |id: &str| {
        common::arm(v, id)["burst_multiplier"]
            .as_f64()
            .expect("burst")
    };
    for (plain, jittered) in [
        ("axios-exp-nojitter", "axios-exp-fulljitter"),
        ("undici", "undici-fulljitter"),
    ] {
        assert!(
            burst(plain) >= 1.5 * burst(jittered),
            "{plain} burst {} vs {jittered} {}",
            burst(plain),
            burst(jittered)
        );
    }
}

#[test]
fn a_refused_target_stops_the_run_before_anything_is_counted() {
    let url = format!("http://{}", free_port());
    let dir = tempdir("proxy-refused");
    let json = dir.join("r.json");
    let o = herd(&[
        "bench",
        "seed-quick",
        "--requests",
        "20",
        "--target",
        &url,
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(&format!("target {url}")), "{e}");
    assert!(e.contains("nothing was sent"), "{e}");
    assert!(!json.exists(), "no report for a run that did not start");
}

#[test]
fn a_target_that_dies_mid_run_is_counted_and_nothing_hangs() {
    let _one = LOAD.lock().unwrap_or_else(PoisonError::into_inner);
    let dir = tempdir("proxy-dies");
    let mut nginx = Nginx::start(dir.join("nginx"));
    let json = dir.join("r.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
        .args([
            "bench",
            "seed-quick",
            "--arm",
            "undici",
            "--requests",
            "400",
            "--target",
            &nginx.url(),
            "--json",
            json.to_str().unwrap(),
            "--quiet",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("herd starts");
    std::thread::sleep(Duration::from_millis(1500));
    nginx.kill();
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("herd did not finish within 90 s of its target dying");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "herd exited {status}");
    let v: Value = serde_json::from_slice(&std::fs::read(&json).expect("report")).unwrap();
    let a = common::arm(&v, "undici");
    let errors = &a["target_errors"];
    let connect = errors["connect"].as_u64().unwrap();
    assert!(connect > 0, "connection errors counted: {errors}");
    let unanswered =
        connect + errors["timeout"].as_u64().unwrap() + errors["broken"].as_u64().unwrap();
    assert_eq!(
        num(a, "target_requests"),
        a["target_status"]["2xx"].as_u64().unwrap() + unanswered
    );
    assert!(a["target_status"]["2xx"].as_u64().unwrap() > 0);
    assert!(num(a, "failed") > 0, "the clients saw the dead service");
}

#[test]
fn bad_targets_are_refused_with_a_sentence() {
    for (url, says) in [
        ("ftp://127.0.0.1:21", "only http and https"),
        ("http://", "no host"),
        ("127.0.0.1:8080", "needs a scheme"),
    ] {
        for cmd in ["bench", "upstream"] {
            let o = herd(&[cmd, "seed-quick", "--target", url]);
            assert_eq!(o.status.code(), Some(2), "{cmd} {url}: {}", stderr(&o));
            assert!(stderr(&o).contains(says), "{cmd} {url}: {}", stderr(&o));
        }
    }
    let dir = tempdir("proxy-bad-toml");
    for (line, says) in [
        ("target = \"gopher://example:70\"", "only http and https"),
        ("target = \"http://:8080\"", "no host"),
        ("answer_timeout_ms = 500", "applies only with `target`"),
        (
            "target = \"http://127.0.0.1:1\"\nconnect_timeout_ms = 0",
            "greater than 0",
        ),
    ] {
        let p = dir.join("bad.toml");
        std::fs::write(
            &p,
            format!(
                "name = \"bad\"\n\n[upstream]\nerror_rate = 0.1\n{line}\n\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n"
            ),
        )
        .unwrap();
        let o = herd(&["bench", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{line}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(&format!("{}:", p.display())), "{line}: {e}");
        assert!(e.contains("upstream."), "{line}: {e}");
        assert!(e.contains(says), "{line}: {e}");
    }
    let o = herd(&["bench", "seed-quick", "--settle", "500"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--settle applies only with a target"));
    // TLS settings that cannot work are refused before anything is sent.
    let missing = dir.join("no-such-ca.pem");
    for (target, extra, says) in [
        (
            "https://127.0.0.1:1",
            format!("target_ca = \"{}\"", missing.display()),
            "target_ca",
        ),
        (
            "http://127.0.0.1:1",
            "target_insecure = true".to_owned(),
            "applies only to an https:// target",
        ),
        (
            "https://127.0.0.1:1",
            "target_ca = \"ca.pem\"\ntarget_insecure = true".to_owned(),
            "keep one",
        ),
    ] {
        let scen = scenario_with(&dir, target, &extra);
        let o = herd(&["bench", scen.to_str().unwrap(), "--quiet"]);
        assert_eq!(o.status.code(), Some(2), "{extra}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains(says), "{extra}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "one sentence: {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
    let e = stderr(&herd(&[
        "bench",
        scenario_with(
            &dir,
            "https://127.0.0.1:1",
            &format!("target_ca = \"{}\"", missing.display()),
        )
        .to_str()
        .unwrap(),
    ]));
    assert!(
        e.contains(&format!("target_ca {}: cannot read it", missing.display())),
        "names the key and the file: {e}"
    );
}

/// A self-signed certificate for 127.0.0.1 and localhost: `(cert.pem, key.pem)` in `dir`.
fn self_signed(dir: &Path) -> (PathBuf, PathBuf) {
    let c =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .expect("certificate");
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, c.cert.pem()).unwrap();
    std::fs::write(&key, c.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

#[test]
fn an_https_nginx_logs_exactly_what_each_arm_forwarded() {
    let _one = LOAD.lock().unwrap_or_else(PoisonError::into_inner);
    let dir = tempdir("proxy-nginx-tls");
    let (cert, key) = self_signed(&dir);
    let nginx = Nginx::tls(dir.join("nginx"), &cert, &key);
    assert!(nginx.url().starts_with("https://"));
    // Trusted through target_ca, relative to the scenario's directory.
    let scen = scenario_with(&dir, &nginx.url(), "target_ca = \"cert.pem\"");
    let o = herd(&["bench", scen.to_str().unwrap(), "--json", "-", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    check_counts(&v, &nginx.access_log(), &nginx.url());

    // target_insecure: trusted without a CA, still counted line for line.
    let before = nginx.access_log().len();
    let scen = scenario_with(&dir, &nginx.url(), "target_insecure = true");
    let o = herd(&[
        "bench",
        scen.to_str().unwrap(),
        "--arm",
        "undici",
        "--requests",
        "100",
        "--json",
        "-",
        "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON report");
    let a = common::arm(&v, "undici");
    let logged = nginx.access_log().len() - before;
    assert_eq!(num(a, "target_requests"), logged as u64, "{a}");
    assert_eq!(a["target_status"]["2xx"].as_u64(), Some(logged as u64));

    // The system's store does not know this certificate: exit 2 before anything is sent.
    let before = nginx.access_log().len();
    let o = herd(&[
        "bench",
        "seed-quick",
        "--requests",
        "20",
        "--target",
        &nginx.url(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains(&format!("target {}", nginx.url())), "{e}");
    assert!(e.contains("target_ca"), "says what to do: {e}");
    assert!(e.contains("nothing was sent"), "{e}");
    assert_eq!(
        nginx.access_log().len(),
        before,
        "the handshake check sends no request"
    );
}

#[test]
fn sim_simulates_the_model_of_a_scenario_with_a_target() {
    let dir = tempdir("proxy-sim");
    let scen = scenario(&dir, "http://127.0.0.1:1");
    let o = herd(&[
        "sim",
        scen.to_str().unwrap(),
        "--requests",
        "100",
        "--json",
        "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("does not reach target http://127.0.0.1:1"));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert!(v.get("target").is_none());
    assert!(common::arm(&v, "undici").get("target_requests").is_none());
}
