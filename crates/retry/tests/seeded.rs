//! A seeded layer or middleware draws the same delays every time, whatever else is set and
//! in whatever order: the seed is a setting like the others, not one a later setter drops.
//!
//! Every attempt is answered 503 at once, on tokio's paused clock, so the time between two
//! attempts is exactly the backoff delay the integration slept.

#![cfg(any(feature = "tower", feature = "reqwest-middleware"))]

use herd_retry::{Profile, Strategy};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The `exponential` profile: 3 retries with full jitter, so every delay is a draw.
fn strategy() -> Strategy {
    Strategy::new(Profile::Exponential)
}

const TIMEOUT: Duration = Duration::from_secs(2);

/// When each attempt was sent.
#[derive(Clone, Default)]
struct Sent(Arc<Mutex<Vec<Instant>>>);

impl Sent {
    fn note(&self) {
        self.0.lock().unwrap().push(Instant::now());
    }

    /// The delays between attempts.
    fn delays(&self) -> Vec<Duration> {
        let t = self.0.lock().unwrap();
        t.windows(2).map(|w| w[1] - w[0]).collect()
    }
}

#[cfg(feature = "tower")]
mod layer {
    use super::*;
    use herd_retry::tower::RetryLayer;
    use tower::{Layer, Service, ServiceExt};

    /// The delays one request through `layer` sleeps, against an upstream that always
    /// answers 503.
    async fn delays(layer: RetryLayer) -> Vec<Duration> {
        let sent = Sent::default();
        let s = sent.clone();
        let upstream = tower::service_fn(move |_req: http::Request<()>| {
            s.note();
            async {
                Ok::<_, std::convert::Infallible>(
                    http::Response::builder()
                        .status(503)
                        .body(String::new())
                        .unwrap(),
                )
            }
        });
        let mut svc = layer.layer(upstream);
        let resp = svc
            .ready()
            .await
            .unwrap()
            .call(http::Request::new(()))
            .await
            .unwrap();
        assert_eq!(resp.status(), 503);
        assert_eq!(layer.counters().retries, 3);
        sent.delays()
    }

    #[tokio::test(start_paused = true)]
    async fn seed_then_attempt_timeout_keeps_the_seed() {
        let seeded = || {
            RetryLayer::new(strategy())
                .with_seed(7)
                .with_attempt_timeout(TIMEOUT)
        };
        let first = delays(seeded()).await;
        assert_eq!(first.len(), 3);
        assert_eq!(first, delays(seeded()).await);
        // Either order is the same layer.
        let other_order = RetryLayer::new(strategy())
            .with_attempt_timeout(TIMEOUT)
            .with_seed(7);
        assert_eq!(first, delays(other_order).await);
        // And the seed is what sets them.
        let eight = RetryLayer::new(strategy())
            .with_seed(8)
            .with_attempt_timeout(TIMEOUT);
        assert_ne!(first, delays(eight).await);
    }
}

#[cfg(feature = "reqwest-middleware")]
mod middleware {
    use super::*;
    use herd_retry::reqwest::RetryMiddleware;

    /// The end of the chain: notes the attempt and answers 503 without a socket.
    struct Upstream(Sent);

    #[async_trait::async_trait]
    impl reqwest_middleware::Middleware for Upstream {
        async fn handle(
            &self,
            _req: reqwest::Request,
            _extensions: &mut http::Extensions,
            _next: reqwest_middleware::Next<'_>,
        ) -> reqwest_middleware::Result<reqwest::Response> {
            self.0.note();
            let resp = http::Response::builder()
                .status(503)
                .body(String::new())
                .unwrap();
            Ok(reqwest::Response::from(resp))
        }
    }

    /// The delays one request through `retry` sleeps, against an upstream that always
    /// answers 503.
    async fn delays(retry: RetryMiddleware) -> Vec<Duration> {
        let sent = Sent::default();
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(retry.clone())
            .with(Upstream(sent.clone()))
            .build();
        let resp = client.get("http://upstream.invalid/").send().await.unwrap();
        assert_eq!(resp.status(), 503);
        assert_eq!(retry.counters().retries, 3);
        sent.delays()
    }

    #[tokio::test(start_paused = true)]
    async fn seed_then_attempt_timeout_keeps_the_seed() {
        let seeded = || {
            RetryMiddleware::new(strategy())
                .with_seed(7)
                .with_attempt_timeout(TIMEOUT)
        };
        let first = delays(seeded()).await;
        assert_eq!(first.len(), 3);
        assert_eq!(first, delays(seeded()).await);
        let other_order = RetryMiddleware::new(strategy())
            .with_attempt_timeout(TIMEOUT)
            .with_seed(7);
        assert_eq!(first, delays(other_order).await);
        let eight = RetryMiddleware::new(strategy())
            .with_seed(8)
            .with_attempt_timeout(TIMEOUT);
        assert_ne!(first, delays(eight).await);
    }
}
