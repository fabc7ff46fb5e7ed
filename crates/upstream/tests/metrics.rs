//! `GET /metrics` on a real socket: the Prometheus text matches the upstream's own counts
//! and gauges, and scraping is not counted as traffic.

use herd_scenario as sc;
use herd_upstream::UpstreamServer;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Every request answered 503, except those `error_rate` leaves; unlimited workers.
fn config(error_rate: f64) -> sc::Upstream {
    sc::Upstream {
        error_rate,
        ..sc::Upstream::fault_free()
    }
}

/// `METHOD path` on a fresh connection, closed after the answer: (status, headers, body).
async fn request(addr: SocketAddr, method: &str, path: &str) -> io::Result<(u16, String, String)> {
    let mut s = TcpStream::connect(addr).await?;
    let req = format!("{method} {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).await?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or(io::ErrorKind::InvalidData)?;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or(io::ErrorKind::InvalidData)?;
    Ok((status, head.to_lowercase(), body.to_owned()))
}

/// The value of the sample line `name` (with its labels) in Prometheus text.
fn sample(text: &str, name: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_match_the_counts_and_are_not_traffic() {
    tokio::time::timeout(Duration::from_secs(15), async {
        let any: SocketAddr = ([127, 0, 0, 1], 0).into();
        let up = UpstreamServer::start(config(1.0), 7, any)
            .await
            .expect("binds");
        let addr = up.local_addr();
        for _ in 0..3 {
            let (status, _, _) = request(addr, "GET", "/").await.expect("answers");
            assert_eq!(status, 503);
        }
        for _ in 0..2 {
            let (status, head, body) = request(addr, "GET", "/metrics").await.expect("metrics");
            assert_eq!(status, 200);
            assert!(
                head.contains("content-type: text/plain; version=0.0.4"),
                "{head}"
            );
            let counter = |o: &str| {
                sample(
                    &body,
                    &format!("herd_upstream_requests_total{{outcome=\"{o}\"}}"),
                )
            };
            assert_eq!(counter("received"), Some(3), "{body}");
            assert_eq!(counter("503"), Some(3));
            assert_eq!(counter("ok"), Some(0));
            assert_eq!(counter("reset"), Some(0));
            assert_eq!(counter("shed"), Some(0));
            assert_eq!(sample(&body, "herd_upstream_in_flight"), Some(0));
            assert_eq!(sample(&body, "herd_upstream_queued"), Some(0));
            assert!(body.contains("# TYPE herd_upstream_requests_total counter"));
            assert!(body.contains("# TYPE herd_upstream_queued gauge"));
        }
        let (status, _, _) = request(addr, "POST", "/metrics").await.expect("answers");
        assert_eq!(status, 405);
        assert_eq!(up.report().totals.received, 3, "scrapes are not counted");
        up.shutdown().await;
    })
    .await
    .expect("test took too long");
}
