//! herd-retry's production integrations against herd's own upstream on port 0: the tower
//! layer over hyper-util's client and the reqwest middleware retry what the strategy says,
//! and the budget holds when the upstream is down.

use bytes::Bytes;
use herd_retry::budget::PercentConfig;
use herd_retry::reqwest::RetryMiddleware;
use herd_retry::tower::RetryLayer;
use herd_retry::{BudgetConfig, Jitter, Policy, Profile, Strategy};
use herd_scenario as sc;
use herd_upstream::UpstreamServer;
use http_body_util::{BodyExt, Empty};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;
use tower::{Service, ServiceBuilder, ServiceExt};

fn upstream(error_rate: f64) -> sc::Upstream {
    sc::Upstream {
        error_rate,
        service_time: sc::ServiceTime::Constant { ms: 1.0 },
        ..sc::Upstream::fault_free()
    }
}

/// Fast retries: exponential, 3 retries of ≤ 5 ms with full jitter.
fn fast(budget: Option<BudgetConfig>) -> Strategy {
    Strategy {
        policy: Policy::new(Profile::Exponential)
            .with_base(Duration::from_millis(5))
            .with_cap(Duration::from_millis(5))
            .with_jitter(Jitter::Full),
        budget,
        deadline: None,
    }
}

fn no_floor(percent: f64) -> Option<BudgetConfig> {
    let ttl = PercentConfig::default().ttl();
    Some(BudgetConfig::Percent(
        PercentConfig::new(ttl, 0, percent).unwrap(),
    ))
}

async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("test finished in time")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tower_layer_retries_through_hyper_util() {
    bounded(async {
        let up = UpstreamServer::start(upstream(0.3), 7, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let layer = RetryLayer::new(fast(None)).with_seed(1);
        let client = Client::builder(TokioExecutor::new())
            .retry_canceled_requests(false)
            .build_http::<Empty<Bytes>>();
        let mut svc = ServiceBuilder::new().layer(layer.clone()).service(client);
        let uri: http::Uri = format!("http://{}/", up.local_addr()).parse().unwrap();
        let mut ok = 0;
        for _ in 0..100 {
            let req = http::Request::get(uri.clone())
                .body(Empty::<Bytes>::new())
                .unwrap();
            let resp = svc.ready().await.unwrap().call(req).await.unwrap();
            if resp.status() == 200 {
                ok += 1;
            }
            let _ = resp.into_body().collect().await;
        }
        let c = layer.counters();
        let server = up.counts().totals();
        // 30% errors, 3 retries: ~1% fail; every attempt reached the server and was counted.
        assert!(ok >= 95, "{ok} ok");
        assert_eq!(c.requests, 100);
        assert_eq!(server.received, c.attempts, "{c:?}");
        assert!(c.retries >= 20 && c.retries <= 60, "{c:?}");
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reqwest_middleware_retries_and_budget_caps_an_outage() {
    bounded(async {
        let up = UpstreamServer::start(upstream(1.0), 7, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        let retry = RetryMiddleware::new(fast(no_floor(0.2))).with_seed(2);
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(retry.clone())
            .build();
        let url = format!("http://{}/", up.local_addr());
        for _ in 0..200 {
            let resp = client.get(&url).send().await.expect("answered");
            assert_eq!(resp.status(), 503);
        }
        let c = retry.counters();
        let server = up.counts().totals();
        // The upstream is down: without a budget 200 requests would make 800 attempts;
        // the 20% budget holds retries to 40.
        assert_eq!(c.requests, 200);
        assert!(c.retries <= 40, "{c:?}");
        assert!(c.refused_by_budget >= 160, "{c:?}");
        assert_eq!(server.received, 200 + c.retries);
        up.shutdown().await;
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_future_cancels_the_backoff() {
    bounded(async {
        let up = UpstreamServer::start(upstream(1.0), 7, "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        // undici's first retry waits 500 ms; drop the request after 100 ms.
        let retry = RetryMiddleware::new(Strategy::new(Profile::Undici));
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(retry.clone())
            .build();
        let url = format!("http://{}/", up.local_addr());
        let r = tokio::time::timeout(Duration::from_millis(100), client.get(&url).send()).await;
        assert!(r.is_err(), "still backing off");
        tokio::time::sleep(Duration::from_millis(800)).await;
        assert_eq!(
            up.counts().totals().received,
            1,
            "the abandoned retry never went out"
        );
        up.shutdown().await;
    })
    .await
}
