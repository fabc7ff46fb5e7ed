//! A hop of a call graph on a real socket ([`herd_upstream::Onward`]): admitted work calls
//! the next hop and is answered 200 or a plain 503 with how the call went, the worker is
//! held through the call, the hop's faults come first (an injected 503 calls nothing) and
//! are drawn from the hop's own stream, and a call whose caller left still runs to its
//! end, uncounted.

mod common;

use common::{bounded, send};
use herd_scenario::{self as sc, Fate, Seeds, ServiceTime, Shed};
use herd_upstream::{Downstream, Onward, Options, UpstreamServer};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// A next hop that answers `ok` after `takes`, counting its calls.
struct Next {
    ok: bool,
    takes: Duration,
    calls: AtomicU64,
    ended: AtomicU64,
}

impl Next {
    fn new(ok: bool, takes: Duration) -> Arc<Next> {
        Arc::new(Next {
            ok,
            takes,
            calls: AtomicU64::new(0),
            ended: AtomicU64::new(0),
        })
    }
}

impl Downstream for Next {
    fn call(self: Arc<Self>) -> Pin<Box<dyn Future<Output = bool> + Send + 'static>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(self.takes).await;
            self.ended.fetch_add(1, Ordering::Relaxed);
            self.ok
        })
    }
}

async fn hop(config: sc::Upstream, hop: usize, next: Arc<Next>) -> UpstreamServer {
    let any: SocketAddr = ([127, 0, 0, 1], 0).into();
    let options = Options {
        onward: Some(Onward { hop, next }),
        ..Options::default()
    };
    UpstreamServer::bind(any)
        .await
        .expect("binds")
        .serve_with(config, 7, options)
}

fn instant() -> sc::Upstream {
    sc::Upstream {
        service_time: ServiceTime::Constant { ms: 0.0 },
        ..sc::Upstream::fault_free()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_200_or_a_plain_503_with_how_the_call_went() {
    bounded(async {
        for ok in [true, false] {
            let next = Next::new(ok, Duration::ZERO);
            // A hop whose own 503s would carry Retry-After: a failed call's does not.
            let config = sc::Upstream {
                retry_after_s: 3,
                ..instant()
            };
            let up = hop(config, 0, next.clone()).await;
            let mut conn = TcpStream::connect(up.local_addr()).await.expect("connects");
            for _ in 0..4 {
                let r = send(&mut conn, "/").await.expect("answered");
                assert_eq!(r.status, if ok { 200 } else { 503 }, "{}", r.head);
                assert!(!r.head.contains("retry-after"), "{}", r.head);
            }
            assert_eq!(next.calls.load(Ordering::Relaxed), 4);
            let t = up.counts().totals();
            let want = if ok { (4, 4, 0) } else { (4, 0, 4) };
            assert_eq!((t.received, t.ok, t.status_503), want);
            up.shutdown().await;
        }
    })
    .await
}

/// The fault rules come first, from the hop's own stream: each request the stream of
/// `Seeds(7).hop_faults(2)` fails is answered 503 without a call, every other one calls.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faults_come_first_from_the_hops_own_stream() {
    bounded(async {
        let config = sc::Upstream {
            error_rate: 0.5,
            ..instant()
        };
        let mut rng = Seeds(7).hop_faults(2);
        let want: Vec<u16> = (0..40)
            .map(|_| match config.fate(Duration::ZERO, &mut rng) {
                Fate::Error503 => 503,
                _ => 200,
            })
            .collect();
        let next = Next::new(true, Duration::ZERO);
        let up = hop(config, 2, next.clone()).await;
        let mut conn = TcpStream::connect(up.local_addr()).await.expect("connects");
        let mut got = Vec::new();
        for _ in 0..40 {
            got.push(send(&mut conn, "/").await.expect("answered").status);
        }
        assert_eq!(got, want);
        let calls = want.iter().filter(|&&s| s == 200).count() as u64;
        assert!((5..35).contains(&calls), "{calls} of 40 should call");
        assert_eq!(next.calls.load(Ordering::Relaxed), calls);
        up.shutdown().await;
    })
    .await
}

/// One worker, no line: the worker is held through the call, so a second request while
/// the first's call runs is shed; a caller that leaves does not end its call, whose
/// answer is not counted, and the worker stays held until the call ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_worker_is_held_through_the_call_even_when_the_caller_leaves() {
    bounded(async {
        let config = sc::Upstream {
            workers: 1,
            queue_limit: 0,
            shed: Shed::Status503,
            ..instant()
        };
        let next = Next::new(true, Duration::from_millis(300));
        let up = hop(config, 0, next.clone()).await;
        let addr = up.local_addr();
        let mut first = TcpStream::connect(addr).await.expect("connects");
        let head = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        first.write_all(head).await.expect("writes");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(next.calls.load(Ordering::Relaxed), 1);
        drop(first); // the caller leaves while its call runs
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut second = TcpStream::connect(addr).await.expect("connects");
        let r = send(&mut second, "/").await.expect("answered");
        assert_eq!(r.status, 503, "shed while the worker is on the call");
        assert_eq!(next.calls.load(Ordering::Relaxed), 1);
        while up.stats().forwarding() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(
            next.ended.load(Ordering::Relaxed),
            1,
            "the call ran to its end"
        );
        let r = send(&mut second, "/").await.expect("answered");
        assert_eq!(r.status, 200, "the worker is free again");
        let t = up.counts().totals();
        // The left caller's 200 is not counted; the shed one and the last are.
        assert_eq!((t.received, t.ok, t.shed), (3, 1, 1));
        up.shutdown().await;
    })
    .await
}
