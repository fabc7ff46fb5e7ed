//! End-to-end tests of external arms (protocol v1).
//!
//! The protocol's failure modes are tested with fake adapters: small `sh` scripts written
//! to a temporary directory, each misbehaving in one way, every test bounded in time. Then
//! each real Node client runs against herd's upstream. Those tests need Node.js and
//! *fail* without it (they never skip): the first of them unpacks the Node adapter into
//! herd's cache and runs `npm ci` there if needed, so a fresh checkout needs no manual step.

use herd_adapters::{ArmCommand, ExternalArm, ExternalError, NodeAdapter, NodeArmOptions};
use herd_scenario::{self as sc, ServiceTime, Shed};
use herd_upstream::UpstreamServer;
use std::collections::BTreeSet;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::time::Instant;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// Fails the test instead of hanging it.
async fn bounded<F: Future>(limit: Duration, f: F) -> F::Output {
    tokio::time::timeout(limit, f)
        .await
        .expect("test took too long")
}

/// Writes `body` as a shell script in a fresh temporary directory and returns its path.
fn script(name: &str, body: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("herd-external-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("adapter.sh");
    std::fs::write(&path, body).expect("writes script");
    path
}

const HANDSHAKE: &str = r#"echo '{"herd_adapter":1,"client":"fake","policy":"a shell script"}'"#;

/// A fake adapter run by `sh`, with short deadlines.
fn fake(name: &str, body: &str) -> ArmCommand {
    ArmCommand::new("fake", "sh")
        .with_arg(script(name, &format!("{HANDSHAKE}\n{body}")))
        .with_handshake_timeout(ms(3000))
        .with_answer_deadline(ms(500))
        .with_finish_timeout(ms(1000))
}

/// Sends ids `0..n`, then collects answers until the arm ends; returns the first error.
async fn run_until_error(cmd: ArmCommand, n: u64) -> ExternalError {
    let mut arm = ExternalArm::spawn(cmd).await.expect("handshake");
    for id in 0..n {
        arm.send(id).expect("send");
    }
    loop {
        match arm.recv().await {
            Some(Ok(_)) => continue,
            Some(Err(e)) => return e,
            None => panic!("the arm ended cleanly; expected an error"),
        }
    }
}

#[tokio::test]
async fn well_behaved_adapter_answers_every_id() {
    // Answers in pairs, the second of each pair first, so matching by id is exercised.
    let body = r#"
held=""
while IFS= read -r line; do
  id=${line#*:}; id=${id%\}}
  if [ -z "$held" ]; then held=$id; continue; fi
  echo "{\"id\":$id,\"ok\":true,\"status\":200,\"error\":null,\"attempts\":1}"
  echo "{\"id\":$held,\"ok\":false,\"status\":null,\"error\":\"ECONNRESET\",\"attempts\":null}"
  held=""
done
if [ -n "$held" ]; then echo "{\"id\":$held,\"ok\":true,\"status\":200}"; fi
echo '{"done":true}'
"#;
    let answers = bounded(Duration::from_secs(10), async {
        let mut arm = ExternalArm::spawn(fake("good", body))
            .await
            .expect("spawns");
        assert_eq!(arm.policy(), "a shell script");
        assert_eq!(arm.client(), "fake");
        let start = Instant::now();
        for id in 0..21 {
            arm.send(id).expect("send");
        }
        let mut got = Vec::new();
        // Some answers before closing, the rest through finish.
        for _ in 0..10 {
            got.push(arm.recv().await.expect("more").expect("answer"));
        }
        got.extend(arm.finish().await.expect("finishes cleanly"));
        assert!(got.iter().all(|a| a.at >= start));
        got
    })
    .await;
    let ids: BTreeSet<u64> = answers.iter().map(|a| a.answer.id).collect();
    assert_eq!(ids, (0..21).collect::<BTreeSet<_>>());
    assert_eq!(answers.len(), 21);
    let resets = answers
        .iter()
        .filter(|a| a.answer.error.as_deref() == Some("ECONNRESET"))
        .count();
    assert_eq!(resets, 10);
    assert!(answers
        .iter()
        .all(|a| a.answer.ok == a.answer.error.is_none()));
}

#[tokio::test]
async fn malformed_line_is_an_error_with_its_line_number() {
    let body = r#"
read -r line
echo 'some diagnostics' >&2
echo 'this is not json'
cat > /dev/null
"#;
    let e = bounded(
        Duration::from_secs(10),
        run_until_error(fake("malformed", body), 3),
    )
    .await;
    assert!(
        matches!(e, ExternalError::Malformed { line: 2, .. }),
        "{e:?}"
    );
    let msg = e.to_string();
    assert!(
        msg.starts_with(
            "adapter fake: line 2: expected JSON object with id, got `this is not json`"
        ),
        "{msg}"
    );
    assert!(msg.contains("some diagnostics"), "{msg}");
}

#[tokio::test]
async fn adapter_that_exits_early_is_named_with_its_stderr() {
    let body = r#"
read -r line
echo "Error: Cannot find module 'undici'" >&2
exit 3
"#;
    let e = bounded(
        Duration::from_secs(10),
        run_until_error(fake("exits", body), 5),
    )
    .await;
    assert!(matches!(e, ExternalError::Exited { .. }), "{e:?}");
    assert_eq!(e.client(), "fake");
    let msg = e.to_string();
    assert!(
        msg.contains("adapter fake exited with 5 requests unanswered"),
        "{msg}"
    );
    assert!(msg.contains("exit status: 3"), "{msg}");
    assert!(msg.contains("Cannot find module 'undici'"), "{msg}");
}

#[tokio::test]
async fn adapter_that_never_answers_fails_within_the_deadline() {
    let started = Instant::now();
    let e = bounded(
        Duration::from_secs(10),
        run_until_error(fake("silent", "echo 'thinking' >&2\ncat > /dev/null"), 2),
    )
    .await;
    assert!(matches!(e, ExternalError::NoAnswer { id: 0, .. }), "{e:?}");
    // Deadline 500 ms, plus the kill and reaping.
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "{:?}",
        started.elapsed()
    );
    let msg = e.to_string();
    assert!(
        msg.contains("no answer for request 0 within 500 ms"),
        "{msg}"
    );
    assert!(msg.contains("thinking"), "{msg}");
}

#[tokio::test]
async fn missing_handshake_and_early_exit_before_it() {
    let silent = ArmCommand::new("fake", "sh")
        .with_arg(script("nohandshake", "exec sleep 30"))
        .with_handshake_timeout(ms(300));
    let e = bounded(Duration::from_secs(10), ExternalArm::spawn(silent))
        .await
        .expect_err("no handshake");
    assert!(matches!(e, ExternalError::Handshake { .. }), "{e:?}");

    let dies = ArmCommand::new("fake", "sh").with_arg(script("dies", "echo oops >&2; exit 1"));
    let e = bounded(Duration::from_secs(10), ExternalArm::spawn(dies))
        .await
        .expect_err("exits");
    let msg = e.to_string();
    assert!(msg.contains("exited before its handshake"), "{msg}");
    assert!(msg.contains("oops"), "{msg}");

    let other = ArmCommand::new("node-undici", "sh").with_arg(script("other", HANDSHAKE));
    let e = bounded(Duration::from_secs(10), ExternalArm::spawn(other))
        .await
        .expect_err("wrong client");
    assert!(e.to_string().contains("adapter runs fake"), "{e}");
}

#[tokio::test]
async fn done_without_exit_and_missing_program_are_errors() {
    // Says done, then lingers: the finish bound applies.
    let body = "cat > /dev/null\necho '{\"done\":true}'\nexec sleep 30";
    let arm = ExternalArm::spawn(fake("lingers", body))
        .await
        .expect("spawns");
    let e = bounded(Duration::from_secs(10), arm.finish())
        .await
        .expect_err("does not exit");
    assert!(e.to_string().contains("did not exit within 1000 ms"), "{e}");

    let missing = ArmCommand::new("fake", "/nonexistent/herd-adapter");
    let e = ExternalArm::spawn(missing).await.expect_err("no program");
    assert!(matches!(e, ExternalError::Spawn { .. }), "{e:?}");
}

/// Whether `pid` is a live process (not gone, not a zombie).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rfind(')')
            .and_then(|i| stat[i + 2..].chars().next())
            .is_some_and(|state| state != 'Z')
    })
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn stop_ends_the_adapter_and_what_it_started_even_if_it_ignores_sigterm() {
    // Ignores SIGTERM, and starts a child that does too (both in its process group).
    let dir = script("stubborn", "");
    let pids = dir.with_file_name("pids");
    let body = format!(
        "trap '' TERM\nsleep 60 &\necho \"$$ $!\" > {}\nwhile IFS= read -r line; do :; done\nexec sleep 60",
        pids.display()
    );
    let arm = ExternalArm::spawn(fake("stubborn", &body))
        .await
        .expect("handshake");
    arm.send(0).expect("send");
    let text = bounded(Duration::from_secs(10), async {
        loop {
            match std::fs::read_to_string(&pids) {
                Ok(t) if t.ends_with('\n') => return t,
                _ => tokio::time::sleep(ms(20)).await,
            }
        }
    })
    .await;
    let started: Vec<u32> = text
        .split_whitespace()
        .map(|p| p.parse().expect("pid"))
        .collect();
    assert!(started.iter().all(|&p| alive(p)), "{started:?}");
    let t = Instant::now();
    bounded(Duration::from_secs(10), arm.stop()).await;
    let took = t.elapsed();
    assert!(took >= herd_adapters::STOP_GRACE, "{took:?}");
    assert!(took < herd_adapters::STOP_GRACE + ms(1500), "{took:?}");
    // SIGKILL is delivered at once but a process takes a moment to exit on a busy machine:
    // what matters is that nothing is left running shortly after (herd's own bound is 2 s).
    let gone = Instant::now();
    let mut left: Vec<u32> = started.clone();
    while !left.is_empty() && gone.elapsed() < Duration::from_secs(2) {
        tokio::time::sleep(ms(20)).await;
        left.retain(|&p| alive(p));
    }
    assert!(left.is_empty(), "still running 2 s after stop: {left:?}");
}

// ---------------------------------------------------------------------------------------
// Real Node clients against herd's upstream.

/// Serializes `npm ci` between the tests of this binary.
static INSTALL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A flaky but fast upstream: 20% of requests answered 503, 2 ms of service.
fn flaky() -> sc::Upstream {
    sc::Upstream {
        error_rate: 0.2,
        retry_after_s: 0,
        reset_rate: 0.0,
        reset_after: Duration::ZERO,
        stall_rate: 0.0,
        stall: Duration::ZERO,
        service_time: ServiceTime::Constant { ms: 2.0 },
        workers: 0,
        queue_limit: 0,
        shed: Shed::Status503,
        incidents: vec![],
        rate_limit: None,
        target: None,
        dialect: Default::default(),
        protocol: Default::default(),
        tls: None,
    }
}

/// Runs `n` logical requests, 5 ms apart, through `client`; checks the basics and returns
/// (answers that were ok, attempts reported, requests the upstream received).
async fn run_node(client: &str, n: u64) -> (usize, Option<u64>, u64, u64) {
    let adapter = NodeAdapter::locate(client).expect("adapter directory");
    {
        let _guard = INSTALL.lock().await;
        adapter
            .ensure_installed(client)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let any: SocketAddr = ([127, 0, 0, 1], 0).into();
    let upstream = UpstreamServer::start(flaky(), 11, any)
        .await
        .expect("binds");
    let mut opts = NodeArmOptions::new(format!("http://{}/", upstream.local_addr()));
    opts.pool = 32;
    opts.timeout = Some(ms(2000));
    let cmd = adapter
        .command(client, &opts)
        .unwrap_or_else(|e| panic!("{e}"))
        .with_answer_deadline(Duration::from_secs(30));
    let arm = ExternalArm::spawn(cmd)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!arm.policy().is_empty());
    eprintln!("{client}: {}", arm.policy());
    let mut next = Instant::now();
    for id in 0..n {
        tokio::time::sleep_until(next).await;
        arm.send(id).unwrap_or_else(|e| panic!("{e}"));
        next += ms(5);
    }
    let answers = arm.finish().await.unwrap_or_else(|e| panic!("{e}"));
    let ids: BTreeSet<u64> = answers.iter().map(|a| a.answer.id).collect();
    assert_eq!(
        ids,
        (0..n).collect::<BTreeSet<_>>(),
        "{client}: every id answered once"
    );
    assert_eq!(answers.len() as u64, n);
    let ok = answers.iter().filter(|a| a.answer.ok).count();
    let attempts: Option<u64> = answers
        .iter()
        .map(|a| a.answer.attempts.map(u64::from))
        .sum();
    let counts = upstream.counts();
    let received = counts.totals().received;
    let first_retries = counts.first_retry().map_or(0, |f| f.count);
    upstream.shutdown().await;
    (ok, attempts, received, first_retries)
}

/// The checks every Node client must pass against the flaky upstream.
async fn check_node(client: &str) {
    assert!(herd_adapters::node_clients().contains(&client));
    let n = 50;
    let (ok, attempts, received, first_retries) =
        bounded(Duration::from_secs(120), run_node(client, n)).await;
    eprintln!("{client}: ok {ok}/{n}, attempts {attempts:?}, upstream received {received}");
    assert!(ok as u64 >= n - 3, "{client}: only {ok} of {n} succeeded");
    assert!(
        received > n,
        "{client}: no retries reached the upstream ({received})"
    );
    // Both libraries expose their attempts; the upstream must have seen exactly those.
    assert_eq!(attempts, Some(received), "{client}: attempts vs upstream");
    // Every attempt carried its request's id, so the upstream timed the first retries:
    // with 20% 503s, about one request in five has one.
    assert!(
        first_retries >= 3,
        "{client}: the upstream timed {first_retries} first retries (is x-herd-request sent?)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_undici() {
    check_node("node-undici").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_undici_fulljitter() {
    check_node("node-undici-fulljitter").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_axios_retry() {
    check_node("node-axios-retry").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_axios_retry_nojitter() {
    check_node("node-axios-retry-nojitter").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_axios_retry_fulljitter() {
    check_node("node-axios-retry-fulljitter").await;
}

#[test]
fn node_client_checks_come_before_spawning() {
    let adapter = NodeAdapter::locate("node-undici").expect("adapter directory");
    let e = adapter
        .command("node-fetch", &NodeArmOptions::new("http://127.0.0.1:1/"))
        .expect_err("unknown client");
    assert!(
        e.to_string()
            .contains("unknown external client `node-fetch`"),
        "{e}"
    );
    let e = NodeAdapter::at("/nonexistent")
        .command("node-undici", &NodeArmOptions::new("http://127.0.0.1:1/"));
    // Either node is missing or the packages are; both are named errors, not a crash.
    assert!(e.is_err());
}
