//! The one service under tower's retry and hedge arms: hyper-util's client with the
//! attempt timeout, counting every attempt that goes out.
//!
//! The count travels in the request's extensions ([`Attempts`]), so the clones tower
//! makes of a request (a retry's, a hedge's) add to the same counter as the original, and
//! one client serves every request of the arm as in a real service.

use super::{BoxError, HyperClient, Req, Res, REQUEST_ID_HEADER};
use crate::Call;
use http_body_util::Empty;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tower::Service;

/// The attempts of one logical request, shared by every clone of it.
#[derive(Clone, Default)]
pub(super) struct Attempts(Arc<AtomicU32>);

impl Attempts {
    /// One more attempt went out.
    pub(super) fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Attempts sent so far.
    pub(super) fn get(&self) -> u32 {
        self.0.load(Ordering::Relaxed)
    }
}

/// hyper-util's client with the attempt timeout, counting each attempt in the request's
/// [`Attempts`].
#[derive(Clone)]
pub(super) struct Counted {
    pub(super) client: HyperClient,
    pub(super) timeout: Option<Duration>,
}

impl Service<Req> for Counted {
    type Response = Res;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Res, BoxError>> + Send>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        self.client.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        if let Some(a) = req.extensions().get::<Attempts>() {
            a.add();
        }
        let fut = self.client.call(req);
        let timeout = self.timeout;
        Box::pin(async move {
            match timeout {
                Some(t) => match tokio::time::timeout(t, fut).await {
                    Ok(r) => r.map_err(Into::into),
                    Err(e) => Err(Box::new(e) as BoxError),
                },
                None => fut.await.map_err(Into::into),
            }
        })
    }
}

/// Logical request `id` of `call` against `base`, carrying a fresh [`Attempts`] (also
/// returned). `None` if the call's URI does not parse.
pub(super) fn request(id: u64, call: &Call, base: &http::Uri) -> Option<(Req, Attempts)> {
    let uri = call.uri(base).ok()?;
    let mut req = http::Request::builder()
        .method(call.http_method())
        .uri(uri)
        .header(REQUEST_ID_HEADER, id)
        .body(Empty::new())
        .ok()?;
    let attempts = Attempts::default();
    req.extensions_mut().insert(attempts.clone());
    Some((req, attempts))
}

/// A copy of `req` for another attempt: method, URI, version, headers and its
/// [`Attempts`] (the body is empty).
pub(super) fn clone_request(req: &Req) -> Option<Req> {
    let mut b = http::Request::builder()
        .method(req.method().clone())
        .uri(req.uri().clone())
        .version(req.version());
    if let Some(h) = b.headers_mut() {
        *h = req.headers().clone();
    }
    let mut r = b.body(Empty::new()).ok()?;
    if let Some(a) = req.extensions().get::<Attempts>() {
        r.extensions_mut().insert(a.clone());
    }
    Some(r)
}
