//! End-to-end tests of the fault-injecting upstream on real sockets (port 0), each bounded
//! in time. Requests are written by hand on raw TCP so that a reset shows up as exactly the
//! `io::Error` a client would see, with no client library retrying behind our back.

mod common;

use common::{bounded, get, send, send_with};
use herd_scenario::{self as sc, HoldAnswer, Incident, ServiceTime, Shed};
use herd_upstream::{StatsReport, UpstreamServer};
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep, sleep_until, Instant};

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// An upstream that does nothing wrong and has unlimited workers.
fn calm() -> sc::Upstream {
    sc::Upstream::fault_free()
}

fn incident(start: u64, duration: u64) -> Incident {
    Incident {
        start: ms(start),
        duration: ms(duration),
        error_rate: None,
        reset_rate: None,
        slowdown: 1.0,
        hold: false,
        hold_answer: HoldAnswer::Reset,
    }
}

async fn start(config: sc::Upstream) -> UpstreamServer {
    let any: SocketAddr = ([127, 0, 0, 1], 0).into();
    UpstreamServer::start(config, 7, any).await.expect("binds")
}

async fn stats(addr: SocketAddr) -> StatsReport {
    let r = get(addr, "/__herd/stats").await.expect("stats answers");
    assert_eq!(r.status, 200);
    serde_json::from_str(&r.body).expect("stats is JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn injected_errors_are_503_with_retry_after() {
    bounded(async {
        let up = start(sc::Upstream {
            error_rate: 1.0,
            retry_after_s: 2,
            ..calm()
        })
        .await;
        let mut conn = TcpStream::connect(up.local_addr()).await.expect("connects");
        for _ in 0..5 {
            let r = send(&mut conn, "/")
                .await
                .expect("answered on the same connection");
            assert_eq!(r.status, 503);
            assert!(r.head.contains("\r\nretry-after: 2\r\n"), "{}", r.head);
        }
        let t = stats(up.local_addr()).await.totals;
        assert_eq!((t.received, t.status_503, t.ok), (5, 5, 0));
        up.shutdown().await;

        let up = start(sc::Upstream {
            error_rate: 1.0,
            ..calm()
        })
        .await;
        let r = get(up.local_addr(), "/any/path").await.expect("answered");
        assert_eq!(r.status, 503);
        assert!(!r.head.contains("retry-after"), "{}", r.head);
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resets_are_tcp_rst() {
    bounded(async {
        let up = start(sc::Upstream {
            reset_rate: 1.0,
            reset_after: ms(150),
            ..calm()
        })
        .await;
        for _ in 0..3 {
            let sent = Instant::now();
            let err = get(up.local_addr(), "/").await.expect_err("reset");
            assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
            assert!(sent.elapsed() >= ms(150));
        }
        let t = up.counts().totals();
        assert_eq!((t.received, t.resets), (3, 3));
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_sees_connection_reset_by_peer() {
    let have_curl = std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have_curl {
        eprintln!("curl not found; skipping");
        return;
    }
    bounded(async {
        let up = start(sc::Upstream {
            reset_rate: 1.0,
            ..calm()
        })
        .await;
        let url = format!("http://{}/", up.local_addr());
        let out = tokio::task::spawn_blocking(move || {
            std::process::Command::new("curl")
                .args(["-sS", "--max-time", "10", &url])
                .output()
        })
        .await
        .expect("joins")
        .expect("curl runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(56), "{stderr}");
        assert!(stderr.contains("Connection reset by peer"), "{stderr}");
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalls_take_their_time() {
    bounded(async {
        let up = start(sc::Upstream {
            stall_rate: 1.0,
            stall: ms(300),
            ..calm()
        })
        .await;
        let sent = Instant::now();
        let r = get(up.local_addr(), "/").await.expect("answered");
        assert_eq!(r.status, 200);
        assert!(sent.elapsed() >= ms(300), "{:?}", sent.elapsed());
        assert_eq!(up.counts().totals().ok, 1);
        up.shutdown().await;
    })
    .await
}

fn busy(shed: Shed) -> sc::Upstream {
    sc::Upstream {
        service_time: ServiceTime::Constant { ms: 300.0 },
        workers: 1,
        queue_limit: 1,
        shed,
        ..calm()
    }
}

/// Three requests at once on three connections, one worker, one place in line.
async fn three_at_once(up: &UpstreamServer) -> Vec<(io::Result<u16>, Duration)> {
    let mut conns = Vec::new();
    for _ in 0..3 {
        conns.push(TcpStream::connect(up.local_addr()).await.expect("connects"));
    }
    let sent = Instant::now();
    let mut tasks = Vec::new();
    for (i, mut c) in conns.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            // Stagger slightly so the arrival order is known.
            sleep(ms(20 * i as u64)).await;
            let r = send(&mut c, "/").await.map(|r| r.status);
            (r, sent.elapsed())
        }));
    }
    sleep(ms(150)).await;
    let mid = stats(up.local_addr()).await;
    assert_eq!((mid.in_flight, mid.queued), (1, 1), "{mid:?}");
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("joins"));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_sheds_with_503() {
    bounded(async {
        let up = start(busy(Shed::Status503)).await;
        let r = three_at_once(&up).await;
        assert_eq!(r[0].0.as_ref().ok(), Some(&200));
        assert_eq!(r[1].0.as_ref().ok(), Some(&200));
        assert_eq!(r[2].0.as_ref().ok(), Some(&503));
        assert!(r[2].1 < ms(150), "shed at once: {:?}", r[2].1);
        assert!(r[1].1 >= ms(600), "waited its turn: {:?}", r[1].1);
        let s = stats(up.local_addr()).await;
        let t = s.totals;
        assert_eq!((t.received, t.ok, t.shed, t.status_503), (3, 2, 1, 0));
        assert_eq!((s.in_flight, s.queued), (0, 0));
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capacity_sheds_with_reset() {
    bounded(async {
        let up = start(busy(Shed::Reset)).await;
        let r = three_at_once(&up).await;
        assert_eq!(r[0].0.as_ref().ok(), Some(&200));
        assert_eq!(r[1].0.as_ref().ok(), Some(&200));
        let err = r[2].0.as_ref().expect_err("shed by reset");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionReset, "{err}");
        let t = up.counts().totals();
        assert_eq!((t.received, t.ok, t.shed, t.resets), (3, 2, 1, 0));
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_work_still_holds_its_worker() {
    bounded(async {
        let up = start(sc::Upstream {
            queue_limit: 0,
            ..busy(Shed::Status503)
        })
        .await;
        let mut gone = TcpStream::connect(up.local_addr()).await.expect("connects");
        gone.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .expect("writes");
        sleep(ms(50)).await;
        drop(gone);
        sleep(ms(50)).await;
        let r = get(up.local_addr(), "/").await.expect("answered");
        assert_eq!(
            r.status, 503,
            "the worker is still busy with the abandoned request"
        );
        sleep(ms(300)).await;
        let r = get(up.local_addr(), "/").await.expect("answered");
        assert_eq!(r.status, 200, "and free again after its service time");
        let t = up.counts().totals();
        // The abandoned request's 200 was never sent, so it is not counted.
        assert_eq!((t.received, t.ok, t.shed), (3, 1, 1));
        up.shutdown().await;
    })
    .await
}

async fn held(answer: HoldAnswer) {
    let up = start(sc::Upstream {
        incidents: vec![Incident {
            hold: true,
            hold_answer: answer,
            ..incident(0, 300)
        }],
        ..calm()
    })
    .await;
    let epoch = up.epoch();
    let mut tasks = Vec::new();
    for i in 0..5u64 {
        let mut c = TcpStream::connect(up.local_addr()).await.expect("connects");
        tasks.push(tokio::spawn(async move {
            sleep_until(epoch + ms(20 * i)).await;
            let r = send(&mut c, "/").await;
            (r, epoch.elapsed())
        }));
    }
    let mut done = Vec::new();
    for t in tasks {
        let (r, at) = t.await.expect("joins");
        match answer {
            HoldAnswer::Reset => {
                let e = r.expect_err("reset at the window's end");
                assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
            }
            HoldAnswer::Status503 => assert_eq!(r.expect("answered").status, 503),
        }
        assert!(at >= ms(300) && at < ms(400), "failed at {at:?}");
        done.push(at);
    }
    let spread = done.iter().max().copied().unwrap_or_default()
        - done.iter().min().copied().unwrap_or_default();
    assert!(spread < ms(20), "all at once, spread {spread:?}");
    let c = up.counts();
    let failed = |b: &sc::ServerBucket| b.resets + b.status_503;
    assert_eq!(c.totals().received, 5);
    assert_eq!(c.buckets()[0].received, 5);
    assert_eq!(failed(&c.buckets()[3]), 5, "{:?}", c.buckets());
    up.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_fails_everyone_at_the_end_by_reset() {
    bounded(held(HoldAnswer::Reset)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hold_fails_everyone_at_the_end_by_503() {
    bounded(held(HoldAnswer::Status503)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incident_window_overrides_error_rate() {
    bounded(async {
        let up = start(sc::Upstream {
            incidents: vec![Incident {
                error_rate: Some(1.0),
                ..incident(300, 300)
            }],
            ..calm()
        })
        .await;
        let mut statuses = Vec::new();
        for at in [100, 450, 750] {
            sleep_until(up.epoch() + ms(at)).await;
            statuses.push(get(up.local_addr(), "/").await.expect("answered").status);
        }
        assert_eq!(statuses, [200, 503, 200]);
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn received_lands_in_its_bucket() {
    bounded(async {
        let up = start(calm()).await;
        let mut conn = TcpStream::connect(up.local_addr()).await.expect("connects");
        for at in [30, 130, 160, 340] {
            sleep_until(up.epoch() + ms(at)).await;
            send(&mut conn, "/").await.expect("answered");
        }
        let s = stats(up.local_addr()).await;
        let received: Vec<u64> = s.buckets.iter().map(|b| b.counts.received).collect();
        assert_eq!(received, [1, 2, 0, 1]);
        let starts: Vec<u64> = s.buckets.iter().map(|b| b.t_ms).collect();
        assert_eq!(starts, [0, 100, 200, 300]);
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_endpoints_are_not_counted() {
    bounded(async {
        let up = start(sc::Upstream {
            error_rate: 1.0,
            ..calm()
        })
        .await;
        let s = stats(up.local_addr()).await;
        assert_eq!(s.totals.received, 0);
        assert!(s.buckets.is_empty());
        assert_eq!(
            get(up.local_addr(), "/__herd/nope")
                .await
                .expect("answered")
                .status,
            404
        );
        assert_eq!(
            get(up.local_addr(), "/").await.expect("answered").status,
            503
        );
        let r = get(up.local_addr(), "/__herd/stats")
            .await
            .expect("answered");
        assert!(r.head.contains("application/json"), "{}", r.head);
        let v: serde_json::Value = serde_json::from_str(&r.body).expect("JSON");
        for key in [
            "received",
            "ok",
            "503",
            "reset",
            "shed",
            "in_flight",
            "queued",
        ] {
            assert!(v[key].is_u64(), "{key} in {v}");
        }
        assert_eq!(
            (v["received"].as_u64(), v["503"].as_u64()),
            (Some(1), Some(1))
        );
        assert_eq!(v["buckets"][0]["t_ms"].as_u64(), Some(0));
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_closes_busy_connections() {
    bounded(async {
        let up = start(sc::Upstream {
            stall_rate: 1.0,
            stall: Duration::from_secs(60),
            workers: 1,
            queue_limit: 5,
            ..calm()
        })
        .await;
        let addr = up.local_addr();
        let waiting: Vec<_> = (0..3).map(|_| tokio::spawn(get(addr, "/"))).collect();
        // Wait until all three are inside the server (a fixed sleep is not enough on a
        // loaded machine, and a late connect could reach another test's server on a
        // reused port).
        while up.report().totals.received < 3 {
            sleep(ms(5)).await;
        }
        tokio::time::timeout(Duration::from_secs(2), up.shutdown())
            .await
            .expect("shutdown does not wait for requests");
        for w in waiting {
            assert!(
                w.await.expect("joins").is_err(),
                "connection closed unanswered"
            );
        }
        assert!(
            TcpStream::connect(addr).await.is_err(),
            "no longer accepting"
        );
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn same_seed_same_fates() {
    bounded(async {
        let mixed = sc::Upstream {
            error_rate: 0.5,
            ..calm()
        };
        let mut runs = Vec::new();
        for _ in 0..2 {
            let up = start(mixed.clone()).await;
            let mut conn = TcpStream::connect(up.local_addr()).await.expect("connects");
            let mut statuses = Vec::new();
            for _ in 0..20 {
                statuses.push(send(&mut conn, "/").await.expect("answered").status);
            }
            runs.push(statuses);
            up.shutdown().await;
        }
        assert_eq!(runs[0], runs[1]);
        assert!(runs[0].contains(&200) && runs[0].contains(&503));
    })
    .await
}

/// Sends an attempt of logical request `id` on `conn` and checks that it is answered 503.
async fn unavailable_for(conn: &mut TcpStream, id: u64) {
    let ask = format!("GET / HTTP/1.1\r\nHost: x\r\nx-herd-request: {id}\r\n\r\n");
    conn.write_all(ask.as_bytes()).await.expect("writes");
    let mut buf = [0u8; 1024];
    let n = conn.read(&mut buf).await.expect("answered");
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 503"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_retry_is_timed_from_the_server_failure_by_request_id() {
    bounded(async {
        let up = start(sc::Upstream {
            error_rate: 1.0,
            ..calm()
        })
        .await;
        let mut conn = TcpStream::connect(up.local_addr()).await.expect("connects");
        // Request 1 fails, comes back 150 ms later, fails again and comes back again: one
        // first retry. Request 2 fails once and never comes back: nothing to time.
        unavailable_for(&mut conn, 1).await;
        unavailable_for(&mut conn, 2).await;
        sleep(ms(150)).await;
        unavailable_for(&mut conn, 1).await;
        sleep(ms(50)).await;
        unavailable_for(&mut conn, 1).await;
        // No header: counted, never timed.
        assert_eq!(
            get(up.local_addr(), "/").await.expect("answers").status,
            503
        );
        let counts = up.counts();
        assert_eq!(counts.totals().received, 5);
        let f = counts.first_retry().expect("one first retry timed");
        assert_eq!(f.count, 1);
        assert!(f.p50 >= 150.0 && f.p50 < 190.0, "{f:?}");
        up.shutdown().await;
    })
    .await;
}

/// An AWS SDK's `amz-sdk-request: attempt=N` is counted by attempt number, whatever the
/// answer; a request without it (or with a header that names no attempt) is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aws_sdk_attempts_are_counted_by_number() {
    bounded(async {
        let up = start(sc::Upstream {
            error_rate: 1.0,
            ..calm()
        })
        .await;
        let mut conn = TcpStream::connect(up.local_addr()).await.expect("connects");
        for (attempt, times) in [(1, 3), (2, 2), (3, 1), (12, 1)] {
            for _ in 0..times {
                let h = format!("amz-sdk-request: attempt={attempt}; max=3\r\n");
                let r = send_with(&mut conn, "/bucket/key", &h)
                    .await
                    .expect("answered");
                assert_eq!(r.status, 503);
            }
        }
        for h in ["", "amz-sdk-request: max=3\r\n"] {
            send_with(&mut conn, "/", h).await.expect("answered");
        }
        let report = stats(up.local_addr()).await;
        assert_eq!(report.totals.received, 9);
        // The last slot holds 10 attempts or more.
        assert_eq!(report.aws_attempts, [3, 2, 1, 0, 0, 0, 0, 0, 0, 1]);
        assert!(report.grpc_attempts.is_empty());
        up.shutdown().await;
    })
    .await
}
