//! An attempt with no time left before its deadline is not sent: it times out at once and
//! the upstream never sees it, exactly as in the simulator (`client.rs`, `attempt`).

use herd_driver::{Call, HttpClient};
use herd_retry::{Failure, Method, Outcome};
use herd_upstream::UpstreamServer;
use std::net::SocketAddr;
use std::time::Duration;

#[tokio::test]
async fn an_attempt_with_no_time_left_is_never_sent() {
    let any: SocketAddr = ([127, 0, 0, 1], 0).into();
    let up = UpstreamServer::start(herd_scenario::Upstream::fault_free(), 7, any)
        .await
        .expect("binds");
    let uri: http::Uri = format!("http://{}/", up.local_addr()).parse().expect("uri");
    let client = HttpClient::new(uri, 1, Some(Duration::from_secs(5))).expect("client");
    let get = Call::plain(Method::Get);
    // With time left the client reaches the upstream, and its pool keeps the connection,
    // so a send could go out on the first poll.
    let sent = client.attempt(1, &get, Some(Duration::from_secs(5))).await;
    assert_eq!(sent, Outcome::status(200));
    for id in 2..10 {
        let none_left = client.attempt(id, &get, Some(Duration::ZERO)).await;
        assert_eq!(none_left, Outcome::Failed(Failure::Timeout));
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        up.counts().totals().received,
        1,
        "only the attempt with time left"
    );
    up.shutdown().await;
}
