//! `herd upstream` as a process: the memory of ten thousand idle connections, running out
//! of file descriptors under a low limit, and the admin-token flags.

#![cfg(target_os = "linux")]

mod common;
use common::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

/// A running `herd upstream`, killed when dropped.
struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Served {
    /// Starts `cmd` (a `herd upstream` command line) and waits for its banner.
    fn start(mut cmd: Command) -> Served {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("herd starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("banner");
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .unwrap_or_else(|| panic!("banner: {line:?}"))
            .parse()
            .expect("address");
        Served { child, addr }
    }

    /// The address to connect to (over loopback, whatever was bound).
    fn loopback(&self) -> SocketAddr {
        ([127, 0, 0, 1], self.addr.port()).into()
    }

    /// Stops the server with SIGTERM and returns its stderr.
    fn stop(mut self) -> String {
        let ok = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("kill runs")
            .success();
        assert!(ok);
        let status = self.child.wait().expect("herd exits");
        assert!(status.success(), "{status}");
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            e.read_to_string(&mut err).expect("stderr");
        }
        err
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `herd upstream seed --listen LISTEN ARGS`.
fn upstream(listen: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_herd"));
    cmd.args(["upstream", "seed", "--listen", listen])
        .args(args);
    cmd
}

/// `GET path` with `headers` on `conn`: the status and how long the answer took.
fn send(conn: &mut TcpStream, path: &str, headers: &str) -> (u16, Duration) {
    conn.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let t = Instant::now();
    write!(conn, "GET {path} HTTP/1.1\r\nHost: x\r\n{headers}\r\n").expect("writes");
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let len = loop {
        let n = conn.read(&mut chunk).expect("answer");
        assert!(n > 0, "closed without an answer");
        buf.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&buf).to_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let body: usize = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + body {
                break end;
            }
        }
    };
    let status = String::from_utf8_lossy(&buf[..len])
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    (status, t.elapsed())
}

fn get(addr: SocketAddr, path: &str, headers: &str) -> u16 {
    send(
        &mut TcpStream::connect(addr).expect("connects"),
        path,
        headers,
    )
    .0
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

#[test]
fn ten_thousand_idle_connections_cost_little_memory() {
    // This process holds the client ends, herd the server ends: each needs the descriptors.
    let limit = herd_upstream::fd_limit::raise().expect("the open-file limit is readable");
    let n = 10_000.min(limit.saturating_sub(100) as usize);
    assert!(
        n >= 2_000,
        "the hard open-file limit ({limit}) is too low for this test; raise it (`ulimit -Hn`)"
    );
    let up = Served::start(upstream("127.0.0.1:0", &[]));
    let addr = up.loopback();
    let base = rss_kib(up.child.id());
    let mut watch = TcpStream::connect(addr).expect("connects");
    // Several threads connect at once, so a full accept queue costs one SYN retry, not many.
    let idle: Vec<TcpStream> = std::thread::scope(|s| {
        let per = n / 8;
        let handles: Vec<_> = (0..8)
            .map(|_| {
                s.spawn(move || {
                    (0..per)
                        .map(|_| TcpStream::connect(addr).expect("connects"))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("connector"))
            .collect()
    });
    sleep(Duration::from_millis(500));
    let (status, took) = send(&mut watch, "/__herd/stats", "");
    assert_eq!(status, 200);
    assert!(took < Duration::from_millis(100), "stats took {took:?}");
    let grown = rss_kib(up.child.id()).saturating_sub(base);
    let per_conn = grown * 1024 / idle.len() as u64;
    assert!(
        per_conn < 4 * 1024,
        "{} idle connections grew herd by {grown} KiB ({per_conn} B each)",
        idle.len()
    );
    drop(idle);
    up.stop();
}

#[test]
fn out_of_descriptors_is_one_sentence_and_the_server_keeps_serving() {
    // `ulimit -n` lowers both limits, so herd cannot raise its own back.
    let mut cmd = Command::new("sh");
    cmd.args([
        "-c",
        "ulimit -n 64 && exec \"$0\" \"$@\"",
        env!("CARGO_BIN_EXE_herd"),
        "upstream",
        "seed",
        "--listen",
        "127.0.0.1:0",
    ]);
    let up = Served::start(cmd);
    let addr = up.loopback();
    let mut kept = TcpStream::connect(addr).expect("connects");
    assert_eq!(send(&mut kept, "/__herd/stats", "").0, 200);
    // More clients than descriptors: the rest wait in the kernel's accept queue.
    let crowd: Vec<TcpStream> = (0..150)
        .map(|_| TcpStream::connect(addr).expect("connects"))
        .collect();
    sleep(Duration::from_millis(500));
    let (status, took) = send(&mut kept, "/__herd/stats", "");
    assert_eq!(status, 200);
    assert!(took < Duration::from_millis(100), "stats took {took:?}");
    // Once the crowd leaves, new clients are served again.
    drop(crowd);
    sleep(Duration::from_millis(500));
    assert_eq!(get(addr, "/__herd/stats", ""), 200);
    let err = up.stop();
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one sentence, not a wall:\n{err}");
    for part in ["out of file descriptors", "64 open at once", "ulimit -n"] {
        assert!(lines[0].contains(part), "{part}: {err}");
    }
}

#[test]
fn control_endpoints_off_loopback_need_the_token() {
    let anywhere = "0.0.0.0:0";
    let up = Served::start(upstream(anywhere, &[]));
    assert_eq!(get(up.loopback(), "/__herd/stats", ""), 404);
    assert_eq!(get(up.loopback(), "/metrics", ""), 404);
    up.stop();
    for by_env in [false, true] {
        let mut c = upstream(anywhere, &[]);
        if by_env {
            c.env("HERD_ADMIN_TOKEN", "s3cret");
        } else {
            c.args(["--admin-token", "s3cret"]);
        }
        let up = Served::start(c);
        let bearer = "Authorization: Bearer s3cret\r\n";
        for path in ["/__herd/stats", "/metrics"] {
            assert_eq!(get(up.loopback(), path, ""), 401, "{path}");
            assert_eq!(get(up.loopback(), path, bearer), 200, "{path}");
        }
        up.stop();
    }
}

/// On one thread (as nginx with one worker) the server answers and counts as on many,
/// and its worker threads are exactly the number asked for.
#[test]
fn an_upstream_on_one_thread_serves_and_counts() {
    let up = Served::start(upstream("127.0.0.1:0", &["--threads", "1"]));
    let workers = || {
        std::fs::read_dir(format!("/proc/{}/task", up.child.id()))
            .expect("threads")
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
            .filter(|name| name.trim() == "tokio-rt-worker")
            .count()
    };
    // The runtime starts its worker threads on their own; the banner may come first.
    let deadline = Instant::now() + Duration::from_secs(5);
    while workers() == 0 && Instant::now() < deadline {
        sleep(Duration::from_millis(20));
    }
    sleep(Duration::from_millis(200));
    assert_eq!(workers(), 1, "one runtime worker thread");
    let statuses: Vec<u16> = (0..20).map(|_| get(up.loopback(), "/", "")).collect();
    assert!(
        statuses.iter().all(|s| [200, 503].contains(s)),
        "{statuses:?}"
    );
    let mut conn = TcpStream::connect(up.loopback()).expect("connects");
    write!(
        conn,
        "GET /__herd/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .expect("writes");
    let mut body = String::new();
    conn.read_to_string(&mut body).expect("reads");
    assert!(body.contains("\"received\":20"), "{body}");
    up.stop();
}

#[test]
fn bad_server_flags_are_one_sentence_and_help_says_who_may_read_stats() {
    let o = herd(&["upstream", "--admin-token", "two words"]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("--admin-token"), "{err}");
    let o = herd(&["upstream", "--header-timeout", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--header-timeout"), "{}", stderr(&o));
    let o = herd(&["upstream", "--threads", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--threads"), "{}", stderr(&o));
    let help = stdout(&herd(&["upstream", "--help"]));
    for part in ["--admin-token", "Bearer", "loopback", "--header-timeout"] {
        assert!(help.contains(part), "{part} in:\n{help}");
    }
}

#[test]
fn a_bench_out_of_descriptors_fails_cleanly_in_a_sentence() {
    let dir = tempdir("bench-fd-limit");
    let json = dir.join("r.json");
    let o = Command::new("sh")
        .args([
            "-c",
            "ulimit -n 40 && exec \"$0\" \"$@\"",
            env!("CARGO_BIN_EXE_herd"),
            "bench",
            "seed-quick",
            "--quiet",
            "--json",
            json.to_str().unwrap(),
        ])
        .output()
        .expect("herd runs");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    // Out of descriptors before the clock (opening connections ahead of it), the arm is
    // named and nothing is reported; mid-run, what finished is reported, marked partial.
    if json.exists() {
        let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        assert_eq!(v["partial"], true, "{v}");
    }
    assert!(
        err.lines()
            .any(|l| l.starts_with("herd: ") && l.contains("out of file descriptors")),
        "{err}"
    );
    assert!(err.contains("40 open at once"), "{err}");
    assert!(
        !err.contains("panicked") && !err.contains("overflow"),
        "{err}"
    );
    assert!(err.lines().count() <= 6, "a sentence, not a wall:\n{err}");
}
