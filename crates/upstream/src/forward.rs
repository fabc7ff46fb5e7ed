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
//! An `https://` target is reached through rustls ([`crate::tls::target_config`]): the
//! system's certificates by default, `target_ca` or `target_insecure` when the scenario
//! says, SNI and the certificate check on the target's host. A plain-HTTP target keeps
//! hyper-util's own connector, with nothing in between.
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
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::{Client, ResponseFuture};
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

/// The keep-alive pool to the target, plain or over TLS.
#[derive(Debug)]
enum Pool {
    Plain(Client<HttpConnector, Incoming>),
    Tls(Client<HttpsConnector<HttpConnector>, Incoming>),
}

impl Pool {
    fn request(&self, req: Request<Incoming>) -> ResponseFuture {
        match self {
            Pool::Plain(c) => c.request(req),
            Pool::Tls(c) => c.request(req),
        }
    }
}

/// A front's way to its target: the pool and the rewriting rules.
#[derive(Debug)]
pub(crate) struct Forward {
    client: Pool,
    /// `http` or `https`, for the URI.
    scheme: http::uri::Scheme,
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
    /// A pool for `target` (for an `https://` one, its TLS configuration read now).
    pub(crate) fn new(target: &Target) -> Result<Forward, Unsupported> {
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
        let mut builder = Client::builder(TokioExecutor::new());
        builder
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(POOL_IDLE);
        let (client, scheme) = match target.url.scheme() {
            Scheme::Http => (
                Pool::Plain(builder.build(connector)),
                http::uri::Scheme::HTTP,
            ),
            Scheme::Https => {
                let config = crate::tls::target_config(&target.trust)
                    .map_err(|e| Unsupported(format!("target {}: {e}", target.url)))?;
                connector.enforce_http(false);
                let https = hyper_rustls::HttpsConnectorBuilder::new()
                    .with_tls_config(config)
                    .https_only()
                    .enable_http1()
                    .wrap_connector(connector);
                (Pool::Tls(builder.build(https)), http::uri::Scheme::HTTPS)
            }
        };
        Ok(Forward {
            client,
            scheme,
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
            .scheme(self.scheme.clone())
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

/// Why a target failed its [`preflight`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreflightError {
    /// No TCP connection (unresolved, refused, unreachable, or not within the connect
    /// timeout): the service is down or elsewhere.
    Unreachable(String),
    /// An `https://` target whose TLS setup or handshake failed (its certificate does not
    /// verify, a `target_ca` that cannot be read, a service that does not speak TLS): the
    /// scenario's settings do not fit the service.
    Tls(String),
}

impl std::fmt::Display for PreflightError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PreflightError::Unreachable(s) | PreflightError::Tls(s) => f.write_str(s),
        }
    }
}

/// Checks, before any load is sent, that `target` accepts TCP connections (within its
/// connect timeout) and, for an `https://` target, that the TLS handshake succeeds with the
/// trust the scenario gives (certificate, name, protocol). It opens one connection and
/// closes it without a request, so the service's access log does not see it.
pub async fn preflight(target: &Target) -> Result<(), PreflightError> {
    let url = &target.url;
    let tls = match url.scheme() {
        Scheme::Http => None,
        Scheme::Https => {
            let mut config = crate::tls::target_config(&target.trust)
                .map_err(|e| PreflightError::Tls(format!("target {url}: {e}")))?;
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            let name = rustls::pki_types::ServerName::try_from(
                url.host()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
            )
            .map_err(|e| PreflightError::Tls(format!("target {url}: {e}")))?;
            Some((tokio_rustls::TlsConnector::from(Arc::new(config)), name))
        }
    };
    let connect = async {
        let addrs: Vec<_> = tokio::net::lookup_host(url.authority())
            .await
            .map_err(|e| {
                PreflightError::Unreachable(format!("cannot resolve {}: {e}", url.host()))
            })?
            .collect();
        let mut last = format!("{} resolves to no address", url.host());
        for a in addrs {
            match tokio::net::TcpStream::connect(a).await {
                Ok(stream) => {
                    let Some((connector, name)) = tls.as_ref() else {
                        return Ok(());
                    };
                    return match connector.connect(name.clone(), stream).await {
                        Ok(_) => Ok(()),
                        Err(e) => Err(PreflightError::Tls(format!(
                            "TLS handshake with {a} failed: {}",
                            tls_reason(&e)
                        ))),
                    };
                }
                Err(e) => last = format!("cannot connect to {a}: {e}"),
            }
        }
        Err(PreflightError::Unreachable(last))
    };
    match tokio::time::timeout(target.connect_timeout, connect).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(PreflightError::Unreachable(e))) => {
            Err(PreflightError::Unreachable(format!("target {url}: {e}")))
        }
        Ok(Err(PreflightError::Tls(e))) => Err(PreflightError::Tls(format!("target {url}: {e}"))),
        Err(_) => Err(PreflightError::Unreachable(format!(
            "target {url}: no connection within the connect timeout ({} ms)",
            target.connect_timeout.as_millis()
        ))),
    }
}

/// A failed handshake in words: rustls's reason when there is one (an unknown issuer, a
/// name the certificate is not for), with what to do about a certificate.
fn tls_reason(e: &std::io::Error) -> String {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(err @ rustls::Error::InvalidCertificate(_)) => format!(
            "{err}; name its CA with [upstream] target_ca, or for a test service set \
             target_insecure = true"
        ),
        Some(other) => other.to_string(),
        None => e.to_string(),
    }
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
