//! The upstream against clients that are not herd's: slow heads (slowloris), heads too
//! large, bytes that are not HTTP, clients that vanish mid-request, and thousands of idle
//! connections. Each test also watches `/__herd/stats` on a kept-alive connection of its
//! own while the abuse goes on, and requires every answer within 100 ms: a server that is
//! busy fending off bad clients must still be observable.
//!
//! Descriptor exhaustion needs a process of its own with a low limit, so it is tested on
//! the `herd upstream` binary (crates/cli/tests/upstream.rs), as is the memory of 10,000
//! idle connections.

mod common;

use common::{bounded, get, read_reply, send, send_with};
use herd_scenario::{self as sc, ServiceTime};
use herd_upstream::{Options, StatsReport, UpstreamServer};
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio::time::{sleep, Instant};

/// The most `/__herd/stats` may take to answer while the server is abused.
const STATS_WITHIN: Duration = Duration::from_millis(100);

/// The header-read timeout the slow-client tests run with.
const HEAD_TIMEOUT: Duration = Duration::from_millis(300);

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

async fn start(config: sc::Upstream, options: Options) -> UpstreamServer {
    let any: SocketAddr = ([127, 0, 0, 1], 0).into();
    UpstreamServer::bind(any)
        .await
        .expect("binds")
        .serve_with(config, 7, options)
}

fn short_heads() -> Options {
    Options {
        header_read_timeout: HEAD_TIMEOUT,
        ..Options::default()
    }
}

/// Polls `/__herd/stats` every 20 ms on one kept-alive connection until stopped, and
/// returns the slowest answer and the last report.
struct StatsWatch {
    stop: oneshot::Sender<()>,
    task: JoinHandle<(Duration, StatsReport)>,
}

impl StatsWatch {
    fn start(addr: SocketAddr) -> Self {
        let (stop, mut stopped) = oneshot::channel();
        let task = tokio::spawn(async move {
            let mut conn = TcpStream::connect(addr).await.expect("watcher connects");
            let mut slowest = Duration::ZERO;
            loop {
                let t = Instant::now();
                let r = send(&mut conn, "/__herd/stats")
                    .await
                    .expect("stats answers");
                slowest = slowest.max(t.elapsed());
                assert_eq!(r.status, 200);
                let report: StatsReport = serde_json::from_str(&r.body).expect("JSON");
                // The report returned is one asked for after the stop.
                if stopped.is_terminated() {
                    return (slowest, report);
                }
                tokio::select! {
                    _ = &mut stopped => {}
                    () = sleep(ms(20)) => {}
                }
            }
        });
        StatsWatch { stop, task }
    }

    /// Stops watching; checks every answer came within [`STATS_WITHIN`] and returns the
    /// last report.
    async fn finish(self) -> StatsReport {
        let _ = self.stop.send(());
        let (slowest, report) = self.task.await.expect("watcher ran");
        assert!(
            slowest < STATS_WITHIN,
            "/__herd/stats took {slowest:?} under abuse"
        );
        report
    }
}

/// Reads until the server closes `conn`; returns what it sent and how long that took.
/// A reset counts as closed.
async fn until_closed(conn: &mut TcpStream) -> (Vec<u8>, Duration) {
    let t = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        match conn.read(&mut buf).await {
            Ok(0) | Err(_) => return (got, t.elapsed()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Writes one byte every 50 ms until the server closes `conn`; returns what the server sent
/// and how long it kept the connection.
async fn dribble_until_closed(conn: &mut TcpStream) -> (Vec<u8>, Duration) {
    let t = Instant::now();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        tokio::select! {
            r = conn.read(&mut buf) => match r {
                Ok(0) | Err(_) => return (got, t.elapsed()),
                Ok(n) => got.extend_from_slice(&buf[..n]),
            },
            // A failed write means the server is gone; the read above then says so.
            () = sleep(ms(50)) => { let _ = conn.write_all(b"a").await; }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slowloris_is_disconnected_at_the_header_timeout() {
    bounded(async {
        let up = start(sc::Upstream::fault_free(), short_heads()).await;
        let addr = up.local_addr();
        let watch = StatsWatch::start(addr);
        // Fifty clients each send a request line, then one header byte every 50 ms:
        // always something arriving, never a complete head.
        let slow: Vec<_> = (0..50)
            .map(|_| {
                tokio::spawn(async move {
                    let mut c = TcpStream::connect(addr).await.expect("connects");
                    c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                        .await
                        .expect("writes");
                    dribble_until_closed(&mut c).await
                })
            })
            .collect();
        // And ten that connect and say nothing at all.
        let silent: Vec<_> = (0..10)
            .map(|_| {
                tokio::spawn(async move {
                    let mut c = TcpStream::connect(addr).await.expect("connects");
                    until_closed(&mut c).await
                })
            })
            .collect();
        for s in slow.into_iter().chain(silent) {
            let (sent, after) = s.await.expect("client ran");
            let text = String::from_utf8_lossy(&sent);
            assert!(!text.contains(" 200 "), "a slow head was served: {text}");
            assert!(
                // The client's clock starts a little after the server's.
                after >= HEAD_TIMEOUT - ms(100) && after < HEAD_TIMEOUT + ms(700),
                "a slow or silent client kept its connection for {after:?}"
            );
        }
        // A well-behaved client meanwhile is served, and nothing slow was counted.
        assert_eq!(get(addr, "/").await.expect("served").status, 200);
        let report = watch.finish().await;
        assert_eq!(report.totals.received, 1);
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_heads_get_431_and_large_ones_within_the_limit_are_served() {
    bounded(async {
        let limit = Options::default().max_header_bytes;
        let up = start(sc::Upstream::fault_free(), Options::default()).await;
        let addr = up.local_addr();
        let watch = StatsWatch::start(addr);
        for _ in 0..20 {
            let mut c = TcpStream::connect(addr).await.expect("connects");
            let big = format!("X-Big: {}\r\n", "a".repeat(limit + 1));
            let r = send_with(&mut c, "/", &big).await.expect("answered");
            assert_eq!(r.status, 431, "{}", r.head);
            until_closed(&mut c).await;
        }
        let fits = format!("X-Big: {}\r\n", "a".repeat(limit / 2));
        let mut c = TcpStream::connect(addr).await.expect("connects");
        let r = send_with(&mut c, "/", &fits).await.expect("answered");
        assert_eq!(r.status, 200);
        let report = watch.finish().await;
        assert_eq!(
            report.totals.received, 1,
            "only the head within the limit counts"
        );
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytes_that_are_not_http_get_400_and_a_close() {
    bounded(async {
        let up = start(sc::Upstream::fault_free(), Options::default()).await;
        let addr = up.local_addr();
        let watch = StatsWatch::start(addr);
        let garbage: [&[u8]; 5] = [
            // The start of a TLS ClientHello, as from a client that assumed https.
            b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
            b"SSH-2.0-OpenSSH_9.2\r\n\r\n",
            b"\x00\x01\x02\x03\xff\xfe\xfd\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n",
            b"GET /\x01 HTTP/1.1\r\n\r\n",
        ];
        for bytes in garbage {
            let mut c = TcpStream::connect(addr).await.expect("connects");
            c.write_all(bytes).await.expect("writes");
            let r = read_reply(&mut c).await.expect("answered");
            assert_eq!(r.status, 400, "{bytes:?}: {}", r.head);
            let (rest, _) = until_closed(&mut c).await;
            assert!(rest.is_empty(), "{bytes:?}: more after the 400");
        }
        // Random bytes, seeded: whatever they are, an answer or a close, never a hang.
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for _ in 0..50 {
            let mut junk = Vec::with_capacity(512);
            for _ in 0..512 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                junk.push(x as u8);
            }
            junk.extend_from_slice(b"\r\n\r\n");
            let mut c = TcpStream::connect(addr).await.expect("connects");
            let _ = c.write_all(&junk).await;
            let (sent, _) = until_closed(&mut c).await;
            let text = String::from_utf8_lossy(&sent);
            assert!(
                sent.is_empty() || text.starts_with("HTTP/1.1 400"),
                "junk got: {text}"
            );
        }
        assert_eq!(get(addr, "/").await.expect("served").status, 200);
        let report = watch.finish().await;
        assert_eq!(report.totals.received, 1);
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_vanish_mid_request_leave_the_server_serving() {
    bounded(async {
        // One worker, 200 ms each: abandoned work keeps it busy, as a real server would.
        let up = start(
            sc::Upstream {
                service_time: ServiceTime::Constant { ms: 200.0 },
                workers: 1,
                queue_limit: 10,
                ..sc::Upstream::fault_free()
            },
            Options::default(),
        )
        .await;
        let addr = up.local_addr();
        let watch = StatsWatch::start(addr);
        let ways: [&[u8]; 4] = [
            // Half a request line.
            b"GET /half",
            // A head without its blank line.
            b"GET / HTTP/1.1\r\nHost: x\r\n",
            // A body promised and not sent.
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nonly this",
            // A whole request, gone before its answer.
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        ];
        for bytes in ways {
            for abrupt in [false, true] {
                let mut c = TcpStream::connect(addr).await.expect("connects");
                c.write_all(bytes).await.expect("writes");
                sleep(ms(20)).await;
                if abrupt {
                    // Close with an RST rather than a FIN.
                    socket2::SockRef::from(&c)
                        .set_linger(Some(Duration::ZERO))
                        .expect("linger");
                }
                drop(c);
            }
        }
        // The two POSTs and the two whole GETs reached a handler; each holds the one
        // worker for 200 ms whatever its client did, and a request behind them waits.
        let t = Instant::now();
        assert_eq!(get(addr, "/").await.expect("served").status, 200);
        assert!(
            t.elapsed() >= ms(400),
            "abandoned work did not hold the worker: {:?}",
            t.elapsed()
        );
        let report = watch.finish().await;
        assert_eq!(report.totals.received, 5);
        assert_eq!((report.in_flight, report.queued), (0, 0));
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousands_of_idle_connections_do_not_slow_anyone() {
    bounded(async {
        const IDLE: usize = 2_000;
        herd_upstream::fd_limit::raise();
        let up = start(sc::Upstream::fault_free(), Options::default()).await;
        let addr = up.local_addr();
        let watch = StatsWatch::start(addr);
        let mut idle = Vec::with_capacity(IDLE);
        for i in 0..IDLE {
            let mut c = TcpStream::connect(addr).await.expect("connects");
            // Half say nothing at all; half finished one request and stay open.
            if i % 2 == 1 {
                assert_eq!(send(&mut c, "/").await.expect("served").status, 200);
            }
            idle.push(c);
        }
        sleep(ms(200)).await;
        let t = Instant::now();
        assert_eq!(get(addr, "/").await.expect("served").status, 200);
        assert!(t.elapsed() < STATS_WITHIN, "{:?}", t.elapsed());
        let report = watch.finish().await;
        assert_eq!(report.totals.received, IDLE as u64 / 2 + 1);
        drop(idle);
        up.shutdown().await;
    })
    .await
}
