//! tower 0.5's `hedge::Hedge` as an arm, beside herd's `tower-hedge` replica.
//!
//! tower has no default for any of its hedge's settings; the arm takes the values of
//! tower's own hedge test (`tower/tests/hedge/main.rs`), which the replica takes too: a
//! hedge after the 90th percentile of the latencies the middleware recorded over the
//! previous 60 s period, once that period holds at least 10. So nothing is hedged in the
//! first 60 s (the read histogram is still empty), as with the replica. One `Hedge` serves
//! every request of the arm: its rotating histogram is the middleware's, shared, as in a
//! real client. Every request is hedgeable (`clone_request` clones it, `can_retry` says
//! yes), and the loser is dropped when the winner answers (tower's `Select`).

use super::counted::{self, Counted};
use super::{HyperClient, Req};
use crate::Call;
use http_body_util::BodyExt;
use std::time::Duration;
use tower::hedge::{Hedge, Policy};
use tower::{Service, ServiceExt};

/// The settings of tower's hedge test: at least 10 recorded latencies, the 90th
/// percentile, a 60 s rotation.
const MIN_DATA_POINTS: u64 = 10;
const PERCENTILE: f32 = 0.9;
const PERIOD: Duration = Duration::from_secs(60);

/// The arm's configuration in words.
pub(super) const DESCRIBE: &str = "tower 0.5 hedge::Hedge as in tower's hedge test: a hedge after the p90 of the previous 60 s period's latencies, once it holds 10; the loser dropped; no retries";

/// Every request may be hedged.
#[derive(Clone)]
struct Always;

impl Policy<Req> for Always {
    fn clone_request(&self, req: &Req) -> Option<Req> {
        counted::clone_request(req)
    }

    fn can_retry(&self, _req: &Req) -> bool {
        true
    }
}

/// tower's hedge over hyper-util's client.
pub struct TowerHedgePeer {
    svc: tokio::sync::Mutex<Hedge<Counted, Always>>,
    uri: http::Uri,
}

impl TowerHedgePeer {
    pub(super) fn new(client: HyperClient, uri: http::Uri, timeout: Option<Duration>) -> Self {
        let inner = Counted { client, timeout };
        let svc = Hedge::new(inner, Always, MIN_DATA_POINTS, PERCENTILE, PERIOD);
        TowerHedgePeer {
            svc: tokio::sync::Mutex::new(svc),
            uri,
        }
    }

    pub(super) async fn call(&self, id: u64, call: &Call) -> (bool, u32) {
        let Some((req, attempts)) = counted::request(id, call, &self.uri) else {
            return (false, 0);
        };
        let fut = {
            let mut svc = self.svc.lock().await;
            match svc.ready().await {
                Ok(s) => s.call(req),
                Err(_) => return (false, 0),
            }
        };
        let ok = match fut.await {
            Ok(resp) => resp.status().is_success() && resp.into_body().collect().await.is_ok(),
            Err(_) => false,
        };
        (ok, attempts.get())
    }
}
