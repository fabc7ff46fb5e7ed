//! backon 1.5 around reqwest as an arm, beside herd's `backon` replica
//! (`herd_retry::Profile::Backon`).
//!
//! backon is the style anchor herd-retry learned from: a backoff is an iterator of delays.
//! Its README's use is `(|| fetch()).retry(ExponentialBuilder::default())`, and the
//! builder's defaults are 1 s, doubling, capped at 60 s, 3 times, no jitter: 1, 2, 4 s.
//! Without `.when()` every error is retried, so the fetched call fails on what code around
//! reqwest raises: a transport error or a failed status (`error_for_status()`, 4xx and 5xx).
//! One reqwest client per arm; the attempt counter is the closure's own.

use super::REQUEST_ID_HEADER;
use backon::{ExponentialBuilder, Retryable};
use std::sync::atomic::{AtomicU32, Ordering};

/// The arm's configuration in words.
pub(super) const DESCRIBE: &str = "backon 1.5 ExponentialBuilder::default() (1 s min, factor 2, 60 s max, 3 times, no jitter: 1, 2, 4 s) around reqwest 0.13 with error_for_status(); every error retried, any method";

/// A reqwest client, retried by backon.
pub struct BackonPeer {
    client: reqwest::Client,
}

impl BackonPeer {
    pub(super) fn new(client: reqwest::Client) -> Self {
        BackonPeer { client }
    }

    /// One logical request: (succeeded, attempts made).
    pub(super) async fn call(&self, id: u64, method: http::Method, url: String) -> (bool, u32) {
        let attempts = AtomicU32::new(0);
        let attempt = || async {
            attempts.fetch_add(1, Ordering::Relaxed);
            let resp = self
                .client
                .request(method.clone(), url.as_str())
                .header(REQUEST_ID_HEADER, id)
                .send()
                .await?
                .error_for_status()?;
            resp.bytes().await
        };
        let ok = attempt.retry(ExponentialBuilder::default()).await.is_ok();
        (ok, attempts.load(Ordering::Relaxed))
    }
}
