//! herd's own answers: the one response type of every request, and plain-text bodies.
//!
//! Shared by the handler and the proxy front, which both answer with herd's text and pass
//! a target's streamed body through the same type.

use bytes::Bytes;
use http::header::{HeaderValue, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};

/// The response type of every request: herd's own answers, or a target's streamed.
pub(crate) type Reply = Response<BoxBody<Bytes, hyper::Error>>;

/// A plain-text answer from herd itself.
pub(crate) fn text(status: StatusCode, body: &str) -> Reply {
    text_bytes(status, Bytes::copy_from_slice(body.as_bytes()))
}

/// [`text`] with a body fixed at compile time, which needs no copy.
pub(crate) fn text_static(status: StatusCode, body: &'static str) -> Reply {
    text_bytes(status, Bytes::from_static(body.as_bytes()))
}

fn text_bytes(status: StatusCode, body: Bytes) -> Reply {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// A whole body, in the reply's body type.
pub(crate) fn full(b: Bytes) -> BoxBody<Bytes, hyper::Error> {
    Full::new(b).map_err(|never| match never {}).boxed()
}

/// An answer in an AWS dialect ([`herd_scenario::dialect`]): its status, `Content-Type` and
/// body, the error code in `x-amzn-ErrorType`, and an `x-amz-request-id`.
pub(crate) fn worded(w: herd_scenario::dialect::Wording) -> Reply {
    let status = StatusCode::from_u16(w.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut r = Response::new(full(Bytes::from_static(w.body.as_bytes())));
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(w.content_type));
    h.insert("x-amz-request-id", HeaderValue::from_static("herd"));
    if let Some(code) = w.code {
        h.insert("x-amzn-errortype", HeaderValue::from_static(code));
    }
    r
}
