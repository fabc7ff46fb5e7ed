//! The front as an HTTP proxy (port 0 everywhere, each test bounded in time): what a
//! forwarded request looks like at the target (Host, hop-by-hop fields, Via,
//! X-Forwarded-For, the arm's header, the body streamed through), what the client gets
//! back, and that a target which never answers costs one answer timeout, counted, never a
//! hang. nginx behind herd is tested end to end in crates/cli/tests/proxy.rs.

use bytes::Bytes;
use herd_scenario::{self as sc, Target};
use herd_upstream::UpstreamServer;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

fn any() -> SocketAddr {
    ([127, 0, 0, 1], 0).into()
}

async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(15), f)
        .await
        .expect("test took too long")
}

/// A target that answers 201 with the request it saw: method, URI, every header (sorted,
/// one per line) and the body, and a hop-by-hop field of its own that must not reach the
/// client.
async fn echo_target() -> SocketAddr {
    let l = TcpListener::bind(any()).await.unwrap();
    let addr = l.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((s, _)) = l.accept().await else { return };
            tokio::spawn(async move {
                let svc = service_fn(|req: http::Request<hyper::body::Incoming>| async move {
                    let mut lines = vec![format!("{} {}", req.method(), req.uri())];
                    let mut hs: Vec<String> = req
                        .headers()
                        .iter()
                        .map(|(k, v)| format!("{k}: {}", v.to_str().unwrap_or("?")))
                        .collect();
                    hs.sort();
                    lines.extend(hs);
                    let body = req.into_body().collect().await.unwrap().to_bytes();
                    lines.push(format!("body: {}", String::from_utf8_lossy(&body)));
                    let mut r = http::Response::new(Full::new(Bytes::from(lines.join("\n"))));
                    *r.status_mut() = http::StatusCode::CREATED;
                    r.headers_mut()
                        .insert("keep-alive", http::HeaderValue::from_static("timeout=5"));
                    Ok::<_, Infallible>(r)
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(s), svc)
                    .await;
            });
        }
    });
    addr
}

fn front(target: SocketAddr, arm: Option<&str>) -> sc::Upstream {
    let mut t = Target::new(format!("http://{target}").parse().unwrap());
    t.arm = arm.map(str::to_owned);
    t.answer_timeout = Duration::from_millis(300);
    sc::Upstream {
        target: Some(t),
        dialect: Default::default(),
        protocol: Default::default(),
        ..sc::Upstream::fault_free()
    }
}

/// Writes `raw` on a fresh connection and reads until the server closes it.
async fn exchange(addr: SocketAddr, raw: &str) -> String {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(raw.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn a_forwarded_request_is_restated_as_a_proxy_should() {
    bounded(async {
        let target = echo_target().await;
        let up = UpstreamServer::start(front(target, Some("undici")), 1, any())
            .await
            .unwrap();
        let raw = "POST /orders?id=7 HTTP/1.1\r\nHost: front.example\r\n\
                   Connection: close, x-secret\r\nx-secret: 1\r\nKeep-Alive: timeout=5\r\n\
                   TE: trailers\r\nProxy-Connection: keep-alive\r\nx-herd-request: 42\r\n\
                   X-Forwarded-For: 10.1.2.3\r\nContent-Length: 5\r\n\r\nhello";
        let answer = exchange(up.local_addr(), raw).await;
        let (head, body) = answer.split_once("\r\n\r\n").expect("a response");
        assert!(head.starts_with("HTTP/1.1 201"), "{head}");
        let head = head.to_ascii_lowercase();
        assert!(head.contains("\r\nvia: 1.1 herd"), "{head}");
        assert!(!head.contains("keep-alive: timeout"), "{head}");
        let expected = format!(
            "POST /orders?id=7\n\
             content-length: 5\n\
             host: {target}\n\
             via: 1.1 herd\n\
             x-forwarded-for: 10.1.2.3, 127.0.0.1\n\
             x-herd-arm: undici\n\
             x-herd-request: 42\n\
             body: hello"
        );
        assert_eq!(body, expected);
        let t = up.report().target.expect("target totals");
        assert_eq!((t.requests, t.status.s2xx), (1, 1));
        assert_eq!(up.counts().totals().ok, 1);
        up.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_silent_target_costs_one_answer_timeout_and_is_counted() {
    bounded(async {
        // Accepts and reads, never answers.
        let l = TcpListener::bind(any()).await.unwrap();
        let target = l.local_addr().unwrap();
        tokio::spawn(async move {
            let mut held = vec![];
            while let Ok((s, _)) = l.accept().await {
                held.push(s);
            }
        });
        let up = UpstreamServer::start(front(target, None), 1, any())
            .await
            .unwrap();
        let t0 = std::time::Instant::now();
        let answer = exchange(
            up.local_addr(),
            "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        let took = t0.elapsed();
        assert!(answer.starts_with("HTTP/1.1 504"), "{answer}");
        assert!(answer.contains("no answer within 300 ms"), "{answer}");
        assert!(took >= Duration::from_millis(300) && took < Duration::from_secs(3));
        let t = up.report().target.expect("target totals");
        assert_eq!((t.requests, t.errors.timeout, t.status.s2xx), (1, 1, 0));
        // The client saw a failure; it is no `ok` at the front.
        assert_eq!(up.counts().totals().ok, 0);
        assert_eq!(up.counts().totals().received, 1);
        up.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn stats_and_metrics_show_the_target() {
    bounded(async {
        let target = echo_target().await;
        let up = UpstreamServer::start(front(target, None), 1, any())
            .await
            .unwrap();
        for _ in 0..3 {
            let a = exchange(
                up.local_addr(),
                "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            )
            .await;
            assert!(a.starts_with("HTTP/1.1 201"), "{a}");
        }
        let stats = exchange(
            up.local_addr(),
            "GET /__herd/stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        let json: serde_json::Value =
            serde_json::from_str(stats.split_once("\r\n\r\n").unwrap().1).unwrap();
        assert_eq!(json["received"], 3);
        assert_eq!(json["target"]["requests"], 3);
        assert_eq!(json["target"]["status"]["2xx"], 3);
        let metrics = exchange(
            up.local_addr(),
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        for line in [
            "herd_target_requests_total 3",
            "herd_target_responses_total{class=\"2xx\"} 3",
            "herd_target_errors_total{kind=\"connect\"} 0",
            "herd_target_latency_seconds_count 3",
            "herd_target_latency_seconds_bucket{le=\"+Inf\"} 3",
        ] {
            assert!(metrics.lines().any(|l| l == line), "{line}:\n{metrics}");
        }
        up.shutdown().await;
    })
    .await;
}

/// A rate limit in front of a target: what it rejects is answered by the front (429 with
/// `Retry-After`) and never forwarded; what it accepts reaches the target.
#[tokio::test]
async fn a_rate_limit_rejects_in_front_of_the_target() {
    bounded(async {
        let target = echo_target().await;
        let config = sc::Upstream {
            rate_limit: Some(sc::RateLimit {
                burst: 1,
                status: 429,
                retry_after_s: 3,
                // 1 request a minute: nothing drains during the test.
                ..sc::RateLimit::nodelay_per_second(1.0 / 60.0)
            }),
            ..front(target, None)
        };
        let up = UpstreamServer::start(config, 1, any()).await.unwrap();
        let mut heads = vec![];
        for _ in 0..4 {
            let a = exchange(
                up.local_addr(),
                "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            )
            .await;
            heads.push(a.lines().next().unwrap_or("").to_owned());
            if a.starts_with("HTTP/1.1 429") {
                assert!(a.to_lowercase().contains("\r\nretry-after: 3\r\n"), "{a}");
            }
        }
        let want = ["HTTP/1.1 201 Created", "HTTP/1.1 201 Created"];
        assert_eq!(heads[..2], want, "{heads:?}");
        assert!(
            heads[2..].iter().all(|h| h.starts_with("HTTP/1.1 429")),
            "{heads:?}"
        );
        let t = up.report().target.expect("target totals");
        assert_eq!((t.requests, t.status.s2xx), (2, 2));
        let c = up.counts().totals();
        assert_eq!((c.received, c.limited), (4, 2));
        let metrics = exchange(
            up.local_addr(),
            "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        )
        .await;
        let line = "herd_upstream_requests_total{outcome=\"limited\"} 2";
        assert!(metrics.lines().any(|l| l == line), "{metrics}");
        up.shutdown().await;
    })
    .await;
}
