//! The simulator's upstream and the real one give every request the same fate.
//!
//! Both are fed the same requests at the same instants with the same seed: the model
//! through [`herd_sim::upstream_fates`], the real upstream on a `127.0.0.1:0` socket, one
//! connection per request carrying its id in `x-herd-request`. The scenario has injected
//! 503s (with `Retry-After`), delayed resets, stalls, a hold incident, one worker with one
//! place in line and shedding by 503 (no `Retry-After`), and clients that leave before
//! their answer. Replies and the server's counts must be equal, request by request.
//!
//! # Why it is deterministic on a loaded machine
//!
//! Fates are drawn from one RNG in arrival order, and capacity depends on what is busy at
//! each arrival, so socket timing must not reorder anything that matters. Requests come in
//! groups of three, 40 ms apart (the draw order); every service time (150 ms, stalls
//! 300 ms) ends after the group's last arrival, and the whole group is done long before
//! the next group, 800 ms later; a client that leaves does so 80 ms after sending, at
//! least 40 ms from any answer due to it; the hold window opens 20 ms before its group's
//! first request and closes 200 ms after its last. Each connection is opened before its
//! instant, so only the request's write is timed. A scheduling delay under ~40 ms changes
//! nothing; the seed is chosen so every kind of reply occurs (checked, not assumed).
//!
//! A second scenario puts a rate limit in front of the same faults (see
//! [`limited_config`] for its margins): requests it delays, rejects with 429, and one
//! whose client leaves while it waits.

use herd_scenario::{self as sc, HoldAnswer, Incident, Seeds, ServerCounts, ServiceTime, Shed};
use herd_sim::{upstream_fates, Arrival, Reply};
use herd_upstream::UpstreamServer;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::{sleep_until, timeout_at, Instant};

const SEED: u64 = 3;
const GROUPS: u64 = 9;
const PERIOD_MS: u64 = 800;
const HOLD_GROUP: u64 = 5;

fn ms(x: u64) -> Duration {
    Duration::from_millis(x)
}

/// Group `g` starts at this instant, ms.
fn group_start(g: u64) -> u64 {
    100 + g * PERIOD_MS
}

fn config() -> sc::Upstream {
    let hold_start = group_start(HOLD_GROUP) - 20;
    sc::Upstream {
        error_rate: 0.2,
        retry_after_s: 1,
        reset_rate: 0.15,
        reset_after: ms(30),
        stall_rate: 0.1,
        stall: ms(300),
        service_time: ServiceTime::Constant { ms: 150.0 },
        workers: 1,
        queue_limit: 1,
        shed: Shed::Status503,
        incidents: vec![Incident {
            start: ms(hold_start),
            duration: ms(300),
            error_rate: None,
            reset_rate: None,
            slowdown: 1.0,
            hold: true,
            hold_answer: HoldAnswer::Reset,
        }],
        rate_limit: None,
        target: None,
        dialect: Default::default(),
        protocol: Default::default(),
        tls: None,
    }
}

/// Three requests per group, 40 ms apart; the middle one's client leaves 80 ms after
/// sending.
fn arrivals() -> Vec<Arrival> {
    let mut v = Vec::new();
    for g in 0..GROUPS {
        for k in 0..3 {
            let at = group_start(g) + 40 * k;
            let leaves = (k == 1).then(|| ms(at + 80));
            v.push(Arrival {
                id: g * 3 + k + 1,
                at: ms(at),
                leaves,
            });
        }
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simulated_and_real_upstreams_agree_request_by_request() {
    let config = config();
    let arrivals = arrivals();
    let (fated, sim_counts) = upstream_fates(&config, Seeds(SEED), &arrivals);
    let sim: Vec<(u64, Reply)> = fated.iter().map(|f| (f.id, f.reply)).collect();
    for want in [
        Reply::Ok,
        Reply::Unavailable { retry_after: true },
        Reply::Unavailable { retry_after: false },
        Reply::Reset,
        Reply::Nothing,
    ] {
        assert!(
            sim.iter().any(|(_, r)| *r == want),
            "no {want:?} in {sim:?}"
        );
    }
    let t = sim_counts.totals();
    assert!(t.shed > 0 && t.resets > 1, "{t:?}");
    // A queued request whose client left keeps its place: the next one is shed.
    let shed = Reply::Unavailable { retry_after: false };
    assert!(
        sim.chunks(3)
            .any(|g| [g[0].1, g[1].1, g[2].1] == [Reply::Ok, Reply::Nothing, shed]),
        "{sim:?}"
    );

    let (real, real_counts) =
        tokio::time::timeout(Duration::from_secs(60), real(config, &arrivals))
            .await
            .expect("bounded");
    assert_eq!(real, sim, "replies, request by request");
    assert_eq!(real_counts.totals(), sim_counts.totals(), "server counts");
}

/// The faults of [`config`] without the hold, behind `limit_req rate=2r/s burst=1`
/// (queued), rejecting with 429 and `Retry-After: 2`. Each group of [`limited_arrivals`]
/// starts with the bucket empty (2 s apart; it drains in under 1.5 s):
///
/// - at 0 ms: excess 0, on at once;
/// - at 100 ms: excess 0.8, delayed 400 ms, to 500 ms (the worker is free by then: the
///   longest work, a stall, ends at 300 ms);
/// - at 200 ms: excess 1.6 > burst, 429;
/// - at 700 ms: excess 0.6, delayed 300 ms to 1000 ms, but its client leaves at 800 ms:
///   dropped while it waits (no fate, no worker), counted only as received.
///
/// Every excess is at least 0.2 (100 ms of the rate) from a threshold, and every delay
/// ends 200 ms from anything else due.
fn limited_config() -> sc::Upstream {
    sc::Upstream {
        incidents: vec![],
        rate_limit: Some(sc::RateLimit {
            burst: 1,
            delay: 0,
            status: 429,
            retry_after_s: 2,
            ..sc::RateLimit::nodelay_per_second(2.0)
        }),
        ..config()
    }
}

const LIMITED_GROUPS: u64 = 6;

fn limited_arrivals() -> Vec<Arrival> {
    let mut v = Vec::new();
    for g in 0..LIMITED_GROUPS {
        let start = 100 + g * 2000;
        for (k, (at, leaves)) in [(0, None), (100, None), (200, None), (700, Some(800))]
            .into_iter()
            .enumerate()
        {
            v.push(Arrival {
                id: g * 4 + k as u64 + 1,
                at: ms(start + at),
                leaves: leaves.map(|l| ms(start + l)),
            });
        }
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_rate_limit_too() {
    let config = limited_config();
    let arrivals = limited_arrivals();
    let (fated, sim_counts) = upstream_fates(&config, Seeds(SEED), &arrivals);
    let sim: Vec<(u64, Reply)> = fated.iter().map(|f| (f.id, f.reply)).collect();
    let limited = Reply::Limited {
        status: 429,
        retry_after: true,
    };
    for (k, (_, reply)) in sim.iter().enumerate() {
        match k % 4 {
            2 => assert_eq!(*reply, limited, "{sim:?}"),
            3 => assert_eq!(*reply, Reply::Nothing, "{sim:?}"),
            _ => assert!(*reply != limited && *reply != Reply::Nothing, "{sim:?}"),
        }
    }
    // The delayed request's answer comes at the end of its delay (or after its work).
    assert!(fated[1].at.unwrap() >= ms(600), "{:?}", fated[1]);
    let t = sim_counts.totals();
    assert_eq!(
        (t.received, t.limited),
        (4 * LIMITED_GROUPS, LIMITED_GROUPS)
    );
    assert!(t.ok > 0 && t.status_503 + t.resets > 0, "{t:?}");

    let (real, real_counts) =
        tokio::time::timeout(Duration::from_secs(60), real(config, &arrivals))
            .await
            .expect("bounded");
    assert_eq!(real, sim, "replies, request by request");
    assert_eq!(real_counts.totals(), sim_counts.totals(), "server counts");
}

/// Sends `arrivals` to a real upstream; returns each request's reply and the counts.
async fn real(config: sc::Upstream, arrivals: &[Arrival]) -> (Vec<(u64, Reply)>, ServerCounts) {
    let any: SocketAddr = ([127, 0, 0, 1], 0).into();
    let up = UpstreamServer::start(config, SEED, any)
        .await
        .expect("binds");
    let (addr, epoch) = (up.local_addr(), up.epoch());
    let tasks: Vec<_> = arrivals
        .iter()
        .map(|&a| tokio::spawn(one(addr, epoch, a)))
        .collect();
    let mut replies = Vec::with_capacity(tasks.len());
    for (a, t) in arrivals.iter().zip(tasks) {
        replies.push((a.id, t.await.expect("client task")));
    }
    // Everything counted is counted before its client hears of it; give stragglers time.
    tokio::time::sleep(ms(100)).await;
    let counts = up.counts();
    up.shutdown().await;
    (replies, counts)
}

/// One request: connect ahead, write at its instant, read its reply or leave.
async fn one(addr: SocketAddr, epoch: Instant, a: Arrival) -> Reply {
    sleep_until(epoch + a.at.saturating_sub(ms(50))).await;
    let mut stream = TcpStream::connect(addr).await.expect("connects");
    stream.set_nodelay(true).expect("nodelay");
    sleep_until(epoch + a.at).await;
    let req = format!(
        "GET / HTTP/1.1\r\nHost: x\r\n{}: {}\r\n\r\n",
        sc::REQUEST_ID_HEADER,
        a.id
    );
    stream.write_all(req.as_bytes()).await.expect("writes");
    match a.leaves {
        None => read_reply(&mut stream).await,
        Some(l) => match timeout_at(epoch + l, read_reply(&mut stream)).await {
            Ok(r) => r,
            Err(_) => Reply::Nothing, // dropping the stream closes the connection
        },
    }
}

/// Reads a response head: its status and whether it carries `Retry-After`, or a reset.
async fn read_reply(stream: &mut TcpStream) -> Reply {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_lowercase();
            return match head.split(' ').nth(1) {
                Some("200") => Reply::Ok,
                Some("503") => Reply::Unavailable {
                    retry_after: head.contains("\r\nretry-after:"),
                },
                Some("429") => Reply::Limited {
                    status: 429,
                    retry_after: head.contains("\r\nretry-after:"),
                },
                other => panic!("unexpected status {other:?}"),
            };
        }
        match stream.read(&mut chunk).await {
            Ok(0) => panic!("closed without an answer or a reset"),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return Reply::Reset,
            Err(e) => panic!("read failed: {e}"),
        }
    }
}
