//! The driver's limits end to end: `--target URL --direct` (no upstream of herd's, no
//! server counts) and the bounded backlog (drops counted, the run failed).

mod common;
use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const ONE_ARM: &str = r#"
name = "one-arm"
seed = 3
[load]
requests = 200
rate = 400
arrival = "constant"
[client]
pool_max_connections = 8
[upstream]
service_time = { dist = "constant", ms = 0 }
[[arms]]
id = "plain"
policy = "none"
"#;

/// `herd upstream SCENARIO` on a free port, stopped (and reaped) on drop.
struct Upstream {
    child: Child,
    url: String,
}

impl Upstream {
    fn start(scenario: &str) -> Upstream {
        let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
            .args(["upstream", scenario, "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("herd upstream starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("first line");
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .to_owned();
        Upstream { child, url }
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn scenario_file(name: &str, text: &str) -> String {
    let dir = tempdir(name);
    let file = dir.join("s.toml");
    std::fs::write(&file, text).unwrap();
    file.to_str().unwrap().to_owned()
}

#[test]
fn a_direct_run_drives_the_url_and_counts_nothing_server_side() {
    let file = scenario_file("driver-direct", ONE_ARM);
    let up = Upstream::start(&file);
    let o = herd(&[
        "bench", &file, "--target", &up.url, "--direct", "--json", "-",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    assert_eq!(v["direct"], format!("{}/", up.url.trim_end_matches('/')));
    if cfg!(target_os = "linux") {
        assert!(
            v["steal_ms"].is_u64(),
            "the host's steal: {}",
            v["steal_ms"]
        );
    }
    let a = arm(&v, "plain");
    assert_eq!(a["logical_requests"], 200);
    assert_eq!(a["succeeded"], 200);
    assert_eq!(a["server_requests"], 0);
    assert_eq!(a["driver_dropped"], 0);
    for k in ["p50", "p99", "max"] {
        assert!(
            a["driver_lag_ms"][k].is_number(),
            "lag {k}: {}",
            a["driver_lag_ms"]
        );
    }
    let table = stderr(&o);
    let row = table
        .lines()
        .find(|l| l.starts_with("| plain "))
        .expect("the arm's row");
    assert_eq!(row.matches('—').count(), 4, "server columns: {row}");
    assert!(table.contains("direct run: the arms drove"), "{table}");
}

#[test]
fn bad_targets_are_refused_naming_the_flag() {
    let file = scenario_file("driver-bad-target", ONE_ARM);
    for (args, says) in [
        (
            vec!["--target", "https://127.0.0.1:1/", "--direct"],
            "plain HTTP",
        ),
        (
            vec!["--target", "ftp://127.0.0.1/", "--direct"],
            "only http and https",
        ),
        (vec!["--direct"], "--target"),
        (vec!["--backlog", "0"], "--backlog"),
        (vec!["--lanes", "0"], "--lanes"),
    ] {
        let mut all = vec!["bench", file.as_str()];
        all.extend_from_slice(&args);
        let o = herd(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn a_full_backlog_drops_counts_and_fails_the_run() {
    // One connection to a 100 ms service and room for 4 requests: nearly all of the 200
    // arrivals (over half a second) find the backlog full.
    let slow = ONE_ARM
        .replace("pool_max_connections = 8", "pool_max_connections = 1")
        .replace("ms = 0 }", "ms = 100 }");
    let file = scenario_file("driver-backlog", &slow);
    let dir = tempdir("driver-backlog-out");
    let json = dir.join("r.json");
    let o = herd(&[
        "bench",
        &file,
        "--backlog",
        "4",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let a = arm(&v, "plain");
    let dropped = a["driver_dropped"].as_u64().expect("driver_dropped");
    let finished = a["logical_requests"].as_u64().unwrap();
    assert_eq!(
        dropped + finished,
        200,
        "every arrival is either sent or dropped"
    );
    assert!(dropped >= 150, "dropped {dropped}");
    // Whatever was sent got through: dropping is the client's, not the server's doing.
    assert_eq!(a["succeeded"].as_u64(), Some(finished));
    assert!(
        stdout(&o).contains("FAILED: arm plain: the driver dropped"),
        "{}",
        stdout(&o)
    );
    assert!(
        stderr(&o).contains("warning: arm plain: the driver dropped"),
        "{}",
        stderr(&o)
    );
}

/// An arm split over lanes (`--lanes`: threads of their own, each with every n-th
/// arrival and its own connections): every arrival is still sent once, the lanes'
/// attempts add up to what the server saw, and retries still come from one retrier.
#[test]
fn an_arm_over_lanes_sends_every_arrival_once() {
    let fast = r#"
name = "lanes"
seed = 9
[load]
requests = 6000
rate = 30000
arrival = "constant"
[client]
pool_max_connections = 64
[upstream]
error_rate = 0.1
service_time = { dist = "constant", ms = 0 }
[[arms]]
id = "undici"
policy = "undici"
base_ms = 5
"#;
    let file = scenario_file("driver-lanes", fast);
    let o = herd(&["bench", &file, "--lanes", "2", "--json", "-", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    let a = arm(&v, "undici");
    assert_eq!(a["driver_dropped"], 0);
    assert_eq!(a["logical_requests"], 6000);
    assert_eq!(a["server_requests"], a["client_attempts"]);
    let attempts = a["client_attempts"].as_u64().unwrap();
    assert!(
        attempts > 6300,
        "a 10% error rate must cost retries: {attempts}"
    );
    assert!(a["succeeded"].as_u64().unwrap() >= 5990, "{a}");
}

/// A server that closes each connection after one answer, counting the connections it
/// accepted: each request then needs a connection of its own, so the count shows which
/// connections the requests used.
fn one_answer_per_connection() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{Read, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let accepted = std::sync::Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            count.fetch_add(1, Ordering::SeqCst);
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            });
        }
    });
    (url, accepted)
}

/// `[client] preconnect` opens its connections before the clock, split over the lanes,
/// and the requests use them before opening any: 10 requests, each needing a connection
/// of its own, over 2 lanes with 8 preconnected each, make 16 connections in all (26 if
/// the preconnected ones sat unused).
#[test]
fn preconnected_connections_are_opened_first_and_used() {
    let (url, accepted) = one_answer_per_connection();
    let text = ONE_ARM
        .replace("requests = 200", "requests = 10")
        .replace("rate = 400", "rate = 100")
        .replace(
            "pool_max_connections = 8",
            "pool_max_connections = 32\npreconnect = 16",
        );
    let file = scenario_file("driver-preconnect", &text);
    let o = herd(&[
        "bench", &file, "--target", &url, "--direct", "--lanes", "2", "--json", "-", "--quiet",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    let a = arm(&v, "plain");
    assert_eq!(a["succeeded"], 10, "{a}");
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 16);
}

/// Preconnecting to a port nobody listens on fails before the clock, naming the setting.
#[test]
fn preconnecting_to_nothing_fails_naming_the_setting() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let text = ONE_ARM.replace(
        "pool_max_connections = 8",
        "pool_max_connections = 8\npreconnect = 4",
    );
    let file = scenario_file("driver-preconnect-refused", &text);
    let o = herd(&["bench", &file, "--target", &url, "--direct", "--quiet"]);
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(stderr(&o).contains("[client] preconnect"), "{}", stderr(&o));
}

/// More connections to preconnect than the process may open: the one sentence with the
/// limit and how to raise it, exit 1.
#[test]
fn preconnecting_past_the_descriptor_limit_is_one_sentence() {
    let (url, _) = one_answer_per_connection();
    let text = ONE_ARM.replace(
        "pool_max_connections = 8",
        "pool_max_connections = 128\npreconnect = 100",
    );
    let file = scenario_file("driver-preconnect-fds", &text);
    // `ulimit -n` lowers both limits, so herd cannot raise its own back.
    let o = Command::new("sh")
        .args([
            "-c",
            "ulimit -n 64 && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_herd"),
            "bench",
            &file,
            "--target",
            &url,
            "--direct",
            "--quiet",
        ])
        .output()
        .expect("herd runs");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    let err = stderr(&o);
    for part in ["out of file descriptors", "64 open at once", "ulimit -n"] {
        assert!(err.contains(part), "{part}: {err}");
    }
}

/// Against herd's own upstream, which accepts only once the clock starts: more
/// preconnected connections than tokio's default accept queue (1024) still all wait in
/// the kernel's, and the run goes on them.
#[test]
fn preconnecting_more_than_a_default_accept_queue_to_the_own_upstream() {
    let text = ONE_ARM.replace(
        "pool_max_connections = 8",
        "pool_max_connections = 1500\npreconnect = 1100",
    );
    let file = scenario_file("driver-preconnect-own", &text);
    let o = herd(&["bench", &file, "--json", "-", "--quiet"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
    let a = arm(&v, "plain");
    assert_eq!(a["succeeded"], 200, "{a}");
    assert_eq!(a["server_requests"], 200, "{a}");
}

/// `--coalesce-us` reaches the pacer: at 2,000 Poisson arrivals a second with the thread
/// put to sleep for arrivals at most once per 5 ms, most arrivals wait for the next
/// wake-up, so lag p50 is over a millisecond (the rule itself is unit-tested in
/// `herd_driver`'s pace module). Past its bound the flag is bad input.
#[test]
fn coalescing_makes_arrivals_wait_for_the_next_wake_up() {
    let poisson = ONE_ARM
        .replace(
            "requests = 200\nrate = 400\narrival = \"constant\"",
            "requests = 2000\nrate = 2000\narrival = \"poisson\"",
        )
        .replace("pool_max_connections = 8", "pool_max_connections = 16");
    assert!(poisson.contains("poisson"), "{poisson}");
    let file = scenario_file("driver-coalesce", &poisson);
    let lag_p50 = |coalesce: &str| {
        let o = herd(&[
            "bench",
            &file,
            "--coalesce-us",
            coalesce,
            "--json",
            "-",
            "--quiet",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_str(&stdout(&o)).expect("JSON on stdout");
        let a = arm(&v, "plain");
        assert_eq!(a["driver_dropped"], 0);
        assert_eq!(a["server_requests"], 2000);
        a["driver_lag_ms"]["p50"].as_f64().expect("lag p50")
    };
    let coalesced = lag_p50("5000");
    assert!(
        coalesced > 1.0,
        "lag p50 {coalesced} ms at a 5 ms coalescing"
    );
    let exact = lag_p50("0");
    assert!(
        exact < coalesced,
        "lag p50 {exact} ms exact, {coalesced} ms coalesced"
    );

    let o = herd(&["bench", &file, "--coalesce-us", "100001", "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--coalesce-us must be at most 100000"),
        "{}",
        stderr(&o)
    );
}
