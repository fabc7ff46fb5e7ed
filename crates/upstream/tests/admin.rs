//! Who may read the control endpoints: open on loopback, off (404) on any other address,
//! and behind `Authorization: Bearer TOKEN` wherever a token is set. Refused control
//! requests are no more counted than answered ones.

mod common;

use common::{bounded, get, get_with};
use herd_upstream::{AdminToken, Options, UpstreamServer};
use std::net::SocketAddr;

const CONTROL: [&str; 2] = ["/__herd/stats", "/metrics"];

async fn start(listen: [u8; 4], token: Option<&str>) -> (UpstreamServer, SocketAddr) {
    let options = Options {
        admin_token: token.map(|t| AdminToken::new(t).expect("valid token")),
        ..Options::default()
    };
    let up = UpstreamServer::bind((listen, 0).into())
        .await
        .expect("binds")
        .serve_with(herd_scenario::Upstream::fault_free(), 7, options);
    // Whatever the bound address, this test reaches it over loopback.
    let port = up.local_addr().port();
    (up, ([127, 0, 0, 1], port).into())
}

async fn status(addr: SocketAddr, path: &str, headers: &str) -> u16 {
    get_with(addr, path, headers)
        .await
        .expect("answered")
        .status
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_on_loopback_without_a_token() {
    bounded(async {
        let (up, addr) = start([127, 0, 0, 1], None).await;
        for path in CONTROL {
            assert_eq!(status(addr, path, "").await, 200, "{path}");
        }
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn off_on_other_addresses_without_a_token() {
    bounded(async {
        let (up, addr) = start([0, 0, 0, 0], None).await;
        for path in CONTROL {
            assert_eq!(status(addr, path, "").await, 404, "{path}");
            let with = "Authorization: Bearer anything\r\n";
            assert_eq!(status(addr, path, with).await, 404, "{path}");
        }
        // The server itself serves, and counted only that.
        assert_eq!(get(addr, "/").await.expect("served").status, 200);
        assert_eq!(up.counts().totals().received, 1);
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_required_wherever_it_is_set() {
    bounded(async {
        for listen in [[127, 0, 0, 1], [0, 0, 0, 0]] {
            let (up, addr) = start(listen, Some("s3cret")).await;
            for path in CONTROL {
                let refused = get_with(addr, path, "").await.expect("answered");
                assert_eq!(refused.status, 401, "{path}");
                assert!(
                    refused.head.contains("www-authenticate: bearer"),
                    "{}",
                    refused.head
                );
                for wrong in ["Bearer s3cre", "Bearer s3cret1", "Basic s3cret", "s3cret"] {
                    let h = format!("Authorization: {wrong}\r\n");
                    assert_eq!(status(addr, path, &h).await, 401, "{path} {wrong}");
                }
                let right = "Authorization: Bearer s3cret\r\n";
                assert_eq!(status(addr, path, right).await, 200, "{path}");
            }
            assert_eq!(up.counts().totals().received, 0);
            up.shutdown().await;
        }
    })
    .await
}
