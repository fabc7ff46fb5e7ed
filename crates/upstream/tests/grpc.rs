//! The upstream as a gRPC server: unary calls over h2c with prior knowledge, the scenario's
//! fates answered as gRPC statuses (Trailers-Only for errors), a reset as the stream's
//! `RST_STREAM` with the connection left serving, and calls counted by the
//! `grpc-previous-rpc-attempts` they carry.

use bytes::Bytes;
use herd_scenario::{self as sc, Protocol, RateLimit};
use herd_upstream::UpstreamServer;
use http::{HeaderMap, Request};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::net::SocketAddr;
use tokio::net::TcpStream;

async fn start(config: sc::Upstream) -> UpstreamServer {
    let listen: SocketAddr = ([127, 0, 0, 1], 0).into();
    UpstreamServer::start(config, 1, listen)
        .await
        .expect("binds")
}

async fn connect(addr: SocketAddr) -> SendRequest<Full<Bytes>> {
    let io = TokioIo::new(TcpStream::connect(addr).await.unwrap());
    let (send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
        .await
        .expect("h2c handshake");
    tokio::spawn(conn);
    send
}

/// What one call came back with: (headers, trailers), or the stream's error.
async fn call(
    send: &mut SendRequest<Full<Bytes>>,
    addr: SocketAddr,
    previous: Option<u32>,
) -> Result<(HeaderMap, Option<HeaderMap>), hyper::Error> {
    let mut b = Request::post(format!("http://{addr}/shop.Cart/Add"))
        .version(http::Version::HTTP_2)
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    if let Some(p) = previous {
        b = b.header("grpc-previous-rpc-attempts", p);
    }
    let req = b
        .body(Full::new(Bytes::from_static(&[0, 0, 0, 0, 2, 8, 1])))
        .unwrap();
    let resp = send.send_request(req).await?;
    assert_eq!(resp.status(), 200);
    let (parts, body) = resp.into_parts();
    let collected = body.collect().await?;
    Ok((parts.headers, collected.trailers().cloned()))
}

fn grpc(config: sc::Upstream) -> sc::Upstream {
    sc::Upstream {
        protocol: Protocol::Grpc,
        ..config
    }
}

#[tokio::test]
async fn answers_calls_with_grpc_statuses() {
    // Success: headers, then `grpc-status: 0` in the trailers.
    let up = start(grpc(sc::Upstream::fault_free())).await;
    let addr = up.local_addr();
    let mut send = connect(addr).await;
    let (h, t) = call(&mut send, addr, None).await.unwrap();
    assert!(h.get("grpc-status").is_none(), "{h:?}");
    assert_eq!(t.expect("trailers")["grpc-status"], "0");
    up.shutdown().await;

    // An injected error: Trailers-Only UNAVAILABLE, with the Retry-After as pushback.
    let up = start(grpc(sc::Upstream {
        error_rate: 1.0,
        retry_after_s: 2,
        ..sc::Upstream::fault_free()
    }))
    .await;
    let addr = up.local_addr();
    let mut send = connect(addr).await;
    for previous in [None, Some(1), Some(2), Some(3)] {
        let (h, t) = call(&mut send, addr, previous).await.unwrap();
        assert_eq!(h["grpc-status"], "14");
        assert_eq!(h["grpc-retry-pushback-ms"], "2000");
        assert!(t.is_none(), "Trailers-Only: {t:?}");
    }
    let report = up.report();
    assert_eq!(report.totals.received, 4);
    assert_eq!(report.totals.status_503, 4);
    assert_eq!(report.grpc_attempts, [1, 1, 1, 1]);
    up.shutdown().await;

    // The rate limit: RESOURCE_EXHAUSTED.
    let limit = RateLimit::nodelay_per_second(0.001);
    let up = start(grpc(sc::Upstream {
        rate_limit: Some(limit),
        ..sc::Upstream::fault_free()
    }))
    .await;
    let addr = up.local_addr();
    let mut send = connect(addr).await;
    call(&mut send, addr, None).await.unwrap();
    let (h, _) = call(&mut send, addr, None).await.unwrap();
    assert_eq!(h["grpc-status"], "8");
    up.shutdown().await;
}

#[tokio::test]
async fn a_reset_is_the_stream_s_own() {
    let up = start(grpc(sc::Upstream {
        reset_rate: 1.0,
        ..sc::Upstream::fault_free()
    }))
    .await;
    let addr = up.local_addr();
    let mut send = connect(addr).await;
    for _ in 0..3 {
        let e = call(&mut send, addr, None).await.expect_err("reset");
        let h2 = std::error::Error::source(&e)
            .and_then(|s| s.downcast_ref::<h2::Error>())
            .unwrap_or_else(|| panic!("not an h2 error: {e:?}"));
        assert_eq!(h2.reason(), Some(h2::Reason::INTERNAL_ERROR), "{h2:?}");
        assert!(h2.is_reset() && h2.is_remote());
    }
    // The connection outlived its streams' resets.
    assert!(!send.is_closed());
    assert_eq!(up.report().totals.resets, 3);
    up.shutdown().await;
}
