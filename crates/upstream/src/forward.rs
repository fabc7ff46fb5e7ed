//! Proxy mode: a request that drew no fault goes on to the real target.
//!
//! # Why herd forwards instead of measuring the service directly
//!
//! The fault front is where herd counts (see [`super`]), so the same front has to sit
//! before a real service too: it counts every attempt a client makes, fails the ones the
//! scenario says, and passes the rest through. What the service answered is counted here,
//! on the way back ([`herd_scenario::TargetCounts`]), next to the front's own counts.
//!
//! # Behaving as an HTTP proxy
//!
//! One keep-alive pool (hyper-util's client) per front, so a run does not open a
//! connection per request against a service that did not ask for it. Each request is
//! rewritten as an intermediary should (RFC 9110 §7.6): the `Host` is the target's, the
//! hop-by-hop fields (`Connection` and every field it names, `Proxy-Connection`,
//! `Keep-Alive`, `TE`, `Transfer-Encoding`, `Upgrade`) are dropped both ways, `Via` gets
//! `1.1 herd`, and the client's address is appended to `X-Forwarded-For`. Bodies are
//! streamed both ways, never buffered. With a known arm, [`ARM_HEADER`] names it, so the
//! service's logs can tell arms apart.
//!
//! Every wait is bounded: the connect by [`Target::connect_timeout`], the answer (request
//! sent to response head) by [`Target::answer_timeout`]. A target that refuses, times out
//! or breaks the connection is counted as such and the client gets 502 or 504, as from any
//! gateway; nothing waits for ever on a dead service.

use crate::reply::{text, Reply};
use crate::Stats;
use herd_scenario::target::{Scheme, ARM_HEADER};
use herd_scenario::{Target, TargetOutcome};
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Request, StatusCode, Uri, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Idle pooled connections are closed after this long (a service's own keep-alive timeout
/// is usually longer, so herd closes first and never reuses a half-closed connection).
const POOL_IDLE: Duration = Duration::from_secs(20);

/// The `Via` entry herd adds (RFC 9110 §7.6.3: protocol version and a pseudonym).
const VIA: &str = "1.1 herd";

/// Hop-by-hop fields, besides those named in `Connection` (RFC 9110 §7.6.1).
const HOP_BY_HOP: [HeaderName; 5] = [
    header::CONNECTION,
    HeaderName::from_static("proxy-connection"),
    HeaderName::from_static("keep-alive"),
    header::TE,
    header::TRANSFER_ENCODING,
];

/// A front's way to its target: the pool and the rewriting rules.
#[derive(Debug)]
pub(crate) struct Forward {
    client: Client<HttpConnector, Incoming>,
    /// `HOST:PORT`, for the URI and the `Host` field.
    authority: http::uri::Authority,
    host: HeaderValue,
    arm: Option<HeaderValue>,
    answer_timeout: Duration,
    url: String,
}

/// Why a forward cannot be set up.
#[derive(Debug)]
pub struct Unsupported(pub String);

impl Forward {
    /// A pool for `target`. Only plain-HTTP targets can be forwarded to by this build.
    pub(crate) fn new(target: &Target) -> Result<Forward, Unsupported> {
        if target.url.scheme() == Scheme::Https {
            return Err(Unsupported(https_unsupported(target)));
        }
        let authority: http::uri::Authority = target
            .url
            .authority()
            .parse()
            .map_err(|e| Unsupported(format!("target {}: {e}", target.url)))?;
        let host = HeaderValue::from_str(authority.as_str())
            .map_err(|e| Unsupported(format!("target {}: {e}", target.url)))?;
        let arm = match &target.arm {
            Some(a) => Some(
                HeaderValue::from_str(a)
                    .map_err(|e| Unsupported(format!("arm id `{a}` as a header: {e}")))?,
            ),
            None => None,
        };
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(target.connect_timeout));
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE)
            .build(connector);
        Ok(Forward {
            client,
            authority,
            host,
            arm,
            answer_timeout: target.answer_timeout,
            url: target.url.to_string(),
        })
    }

    /// Sends `req` (from `peer`) to the target and returns the answer for the client,
    /// counting it in `stats`.
    pub(crate) async fn send(
        self: Arc<Self>,
        stats: Arc<Stats>,
        req: Request<Incoming>,
        peer: Option<IpAddr>,
    ) -> (Reply, TargetOutcome) {
        let req = match self.rewrite(req, peer) {
            Ok(r) => r,
            Err(e) => {
                // Not sent: a request this front cannot restate is the front's failure.
                let msg = format!("herd cannot forward this request: {e}\n");
                return (text(StatusCode::BAD_REQUEST, &msg), TargetOutcome::Broken);
            }
        };
        stats.target_forwarded();
        let sent = Instant::now();
        let answer = tokio::time::timeout(self.answer_timeout, self.client.request(req)).await;
        let latency = sent.elapsed();
        let (reply, outcome) = match answer {
            Ok(Ok(resp)) => {
                let outcome = TargetOutcome::Answered(resp.status().as_u16());
                (self.pass_back(resp), outcome)
            }
            Ok(Err(e)) if e.is_connect() => (
                self.gateway_error(StatusCode::BAD_GATEWAY, &format!("cannot connect: {e}")),
                TargetOutcome::Connect,
            ),
            Ok(Err(e)) => (
                self.gateway_error(StatusCode::BAD_GATEWAY, &format!("broken answer: {e}")),
                TargetOutcome::Broken,
            ),
            Err(_) => (
                self.gateway_error(
                    StatusCode::GATEWAY_TIMEOUT,
                    &format!("no answer within {} ms", self.answer_timeout.as_millis()),
                ),
                TargetOutcome::Timeout,
            ),
        };
        stats.target_ended(outcome, latency);
        (reply, outcome)
    }

    /// The request as the target should see it.
    fn rewrite(
        &self,
        mut req: Request<Incoming>,
        peer: Option<IpAddr>,
    ) -> Result<Request<Incoming>, http::Error> {
        let path = req
            .uri()
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        *req.uri_mut() = Uri::builder()
            .scheme("http")
            .authority(self.authority.clone())
            .path_and_query(path)
            .build()?;
        let via = via(req.version());
        *req.version_mut() = Version::HTTP_11;
        let h = req.headers_mut();
        strip_hop_by_hop(h);
        h.insert(header::HOST, self.host.clone());
        h.append(header::VIA, via);
        if let Some(ip) = peer {
            forwarded_for(h, ip);
        }
        if let Some(arm) = &self.arm {
            h.insert(HeaderName::from_static(ARM_HEADER), arm.clone());
        }
        Ok(req)
    }

    /// The target's response, as the client should see it (body streamed).
    fn pass_back(&self, resp: http::Response<Incoming>) -> Reply {
        let (mut parts, body) = resp.into_parts();
        strip_hop_by_hop(&mut parts.headers);
        parts.headers.append(header::VIA, via(parts.version));
        parts.version = Version::HTTP_11;
        http::Response::from_parts(parts, body.boxed())
    }

    /// 502 or 504 from the front, saying which target failed and how.
    fn gateway_error(&self, status: StatusCode, what: &str) -> Reply {
        let mut r = text(status, &format!("herd: target {}: {what}\n", self.url));
        r.headers_mut()
            .append(header::VIA, HeaderValue::from_static(VIA));
        r
    }
}

/// Checks, before any load is sent, that `target` accepts TCP connections (within its
/// connect timeout). It opens one connection and closes it without a request, so the
/// service's access log does not see it.
pub async fn preflight(target: &Target) -> Result<(), String> {
    let url = &target.url;
    let connect = async {
        let addrs: Vec<_> = tokio::net::lookup_host(url.authority())
            .await
            .map_err(|e| format!("cannot resolve {}: {e}", url.host()))?
            .collect();
        let mut last = format!("{} resolves to no address", url.host());
        for a in addrs {
            match tokio::net::TcpStream::connect(a).await {
                Ok(_) => return Ok(()),
                Err(e) => last = format!("cannot connect to {a}: {e}"),
            }
        }
        Err(last)
    };
    match tokio::time::timeout(target.connect_timeout, connect).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("target {url}: {e}")),
        Err(_) => Err(format!(
            "target {url}: no connection within the connect timeout ({} ms)",
            target.connect_timeout.as_millis()
        )),
    }
}

/// The refusal for an https target, in one sentence.
pub fn https_unsupported(target: &Target) -> String {
    format!(
        "target {}: https targets are accepted in scenarios but this build has no TLS client; \
         put herd in front of the service's plain-HTTP address (or a local TLS-terminating sidecar)",
        target.url
    )
}

/// `Via` for a message received as `version`.
fn via(version: Version) -> HeaderValue {
    HeaderValue::from_static(match version {
        Version::HTTP_10 => "1.0 herd",
        _ => VIA,
    })
}

/// Removes the hop-by-hop fields, those named in `Connection` first.
fn strip_hop_by_hop(h: &mut HeaderMap) {
    let named: Vec<HeaderName> = h
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|name| HeaderName::from_bytes(name.trim().as_bytes()).ok())
        .collect();
    for name in named.iter().chain(HOP_BY_HOP.iter()) {
        h.remove(name);
    }
    h.remove(header::UPGRADE);
}

/// Appends `ip` to `X-Forwarded-For` (one field, comma-separated, as most services parse).
fn forwarded_for(h: &mut HeaderMap, ip: IpAddr) {
    const XFF: &str = "x-forwarded-for";
    let prior: Vec<String> = h
        .get_all(XFF)
        .iter()
        .filter_map(|v| v.to_str().ok().map(str::to_owned))
        .collect();
    let mut list = prior.join(", ");
    if !list.is_empty() {
        list.push_str(", ");
    }
    list.push_str(&ip.to_string());
    if let Ok(v) = HeaderValue::from_str(&list) {
        h.insert(XFF, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_fields_go_with_those_connection_names() {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("connection", "keep-alive, x-secret"),
            ("keep-alive", "timeout=5"),
            ("x-secret", "1"),
            ("te", "trailers"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "websocket"),
            ("proxy-connection", "keep-alive"),
            ("accept", "*/*"),
            ("content-length", "3"),
        ] {
            h.append(k, HeaderValue::from_static(v));
        }
        strip_hop_by_hop(&mut h);
        let mut left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        left.sort_unstable();
        assert_eq!(left, ["accept", "content-length"]);
    }

    #[test]
    fn forwarded_for_appends() {
        let mut h = HeaderMap::new();
        forwarded_for(&mut h, [10, 0, 0, 1].into());
        forwarded_for(&mut h, [127, 0, 0, 1].into());
        assert_eq!(h["x-forwarded-for"], "10.0.0.1, 127.0.0.1");
    }
}
