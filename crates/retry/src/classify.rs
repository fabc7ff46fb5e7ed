//! Classification of one attempt's outcome: what happened, whether the request could have
//! reached the server, and whether the method is safe to repeat.
//!
//! Real libraries differ less in their delays than in *what* they retry: undici retries
//! resets but never timeouts; axios-retry retries network errors on any method but 5xx only
//! on idempotent ones. Getting this wrong makes a replica look better or worse than the
//! library it claims to be, so every profile states its condition in terms of these types.

use std::fmt;
use std::io;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

/// An HTTP method, as far as retrying cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Method {
    /// GET
    Get,
    /// HEAD
    Head,
    /// OPTIONS
    Options,
    /// PUT
    Put,
    /// DELETE
    Delete,
    /// TRACE
    Trace,
    /// POST
    Post,
    /// PATCH
    Patch,
    /// CONNECT
    Connect,
}

impl Method {
    /// Idempotent per RFC 9110 §9.2.2: GET, HEAD, OPTIONS, PUT, DELETE, TRACE.
    pub fn is_idempotent(self) -> bool {
        matches!(
            self,
            Method::Get
                | Method::Head
                | Method::Options
                | Method::Put
                | Method::Delete
                | Method::Trace
        )
    }

    /// The method's name in upper case.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Options => "OPTIONS",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
            Method::Trace => "TRACE",
            Method::Post => "POST",
            Method::Patch => "PATCH",
            Method::Connect => "CONNECT",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.to_ascii_uppercase().as_str() {
            "GET" => Method::Get,
            "HEAD" => Method::Head,
            "OPTIONS" => Method::Options,
            "PUT" => Method::Put,
            "DELETE" => Method::Delete,
            "TRACE" => Method::Trace,
            "POST" => Method::Post,
            "PATCH" => Method::Patch,
            "CONNECT" => Method::Connect,
            _ => return Err(format!("unknown HTTP method `{s}`")),
        })
    }
}

/// How an attempt failed when no response came back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Failure {
    /// The peer reset the connection (TCP RST, `ECONNRESET`).
    Reset,
    /// The connection was refused (`ECONNREFUSED`): the request never reached the server.
    Refused,
    /// Writing the request failed (`EPIPE`).
    BrokenPipe,
    /// The connection closed before a complete response (undici's `UND_ERR_SOCKET`).
    Closed,
    /// The per-attempt timeout fired first.
    Timeout,
    /// The client's own throttle (adaptive throttling) refused to send the attempt.
    Throttled,
    /// Any other error.
    Other,
}

impl Failure {
    /// Whether the server may have seen the request. Only a refused connection proves it did
    /// not, which makes even a non-idempotent request safe to send again.
    pub fn may_have_reached_server(self) -> bool {
        !matches!(self, Failure::Refused | Failure::Throttled)
    }

    /// A connection-level error (everything but a timeout and `Other`).
    pub fn is_connection_error(self) -> bool {
        matches!(
            self,
            Failure::Reset | Failure::Refused | Failure::BrokenPipe | Failure::Closed
        )
    }

    /// Classifies an error from any HTTP client by the first `io::Error` in its source
    /// chain (reset, refused, broken pipe, unexpected EOF, timed out); `Other` if none.
    /// Clients that know more (hyper's "incomplete message", reqwest's `is_timeout`)
    /// refine this before falling back to it.
    pub fn from_error(e: &(dyn std::error::Error + 'static)) -> Failure {
        let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = cur {
            if let Some(io) = err.downcast_ref::<io::Error>() {
                return Failure::from_io_kind(io.kind());
            }
            cur = err.source();
        }
        Failure::Other
    }

    /// The failure an `io::ErrorKind` stands for.
    pub fn from_io_kind(k: io::ErrorKind) -> Failure {
        match k {
            io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => Failure::Reset,
            io::ErrorKind::ConnectionRefused => Failure::Refused,
            io::ErrorKind::BrokenPipe => Failure::BrokenPipe,
            io::ErrorKind::UnexpectedEof => Failure::Closed,
            io::ErrorKind::TimedOut => Failure::Timeout,
            _ => Failure::Other,
        }
    }

    /// A short stable name, used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::Reset => "reset",
            Failure::Refused => "refused",
            Failure::BrokenPipe => "broken_pipe",
            Failure::Closed => "closed",
            Failure::Timeout => "timeout",
            Failure::Throttled => "throttled",
            Failure::Other => "other",
        }
    }
}

/// What one attempt came back with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered.
    Response {
        /// The status code.
        status: u16,
        /// The parsed `Retry-After` hint, if the answer carried one
        /// (see [`crate::retry_after::parse`]).
        retry_after: Option<Duration>,
        /// Whether the answer's error **code** says "throttling" (an S3 `SlowDown`, a
        /// DynamoDB `ThrottlingException`; see [`crate::aws::codes`]), whatever its
        /// status. Only the AWS profiles read it; a bare 429 is not throttling here.
        throttling: bool,
        /// The gRPC status of a gRPC answer (its `grpc-status` trailer, `0` OK, `14`
        /// UNAVAILABLE, …; see [`crate::grpc::Code`]), whose HTTP status is 200 whatever
        /// happened; `None` for a plain HTTP answer. Only the gRPC profiles read it, and
        /// every answer with a non-zero one is a failure.
        grpc_status: Option<u8>,
    },
    /// No response.
    Failed(Failure),
}

impl Outcome {
    /// A response with this status and no Retry-After.
    pub fn status(status: u16) -> Outcome {
        Outcome::Response {
            status,
            retry_after: None,
            throttling: false,
            grpc_status: None,
        }
    }

    /// A gRPC answer: HTTP 200 with `grpc-status: code`, and the server's
    /// `grpc-retry-pushback-ms`, if any, as the hint.
    pub fn grpc(code: u8, pushback: Option<Duration>) -> Outcome {
        Outcome::Response {
            status: 200,
            retry_after: pushback,
            throttling: false,
            grpc_status: Some(code),
        }
    }

    /// The gRPC status a gRPC client reports for this outcome: the answer's own, or for an
    /// answer without one the HTTP-to-gRPC mapping of gRPC's `http-grpc-status-mapping.md`,
    /// or for no answer the status gRPC clients give that failure (see
    /// [`crate::grpc::Code::of_failure`]).
    pub fn grpc_code(&self) -> crate::grpc::Code {
        use crate::grpc::Code;
        match *self {
            Outcome::Response {
                grpc_status: Some(c),
                ..
            } => Code(c),
            Outcome::Response { status, .. } => Code::of_http(status),
            Outcome::Failed(f) => Code::of_failure(f),
        }
    }

    /// An answer whose error code says "throttling" (AWS `SlowDown`,
    /// `ThrottlingException`, …) with this status and no hint.
    pub fn throttling(status: u16) -> Outcome {
        Outcome::Response {
            status,
            retry_after: None,
            throttling: true,
            grpc_status: None,
        }
    }

    /// This outcome with the AWS error code `code` read: a response becomes throttling if
    /// the code is one of botocore's throttling codes
    /// ([`crate::aws::is_throttling_code`]); anything else is left as it was.
    pub fn with_error_code(self, code: Option<&str>) -> Outcome {
        match (self, code) {
            (
                Outcome::Response {
                    status,
                    retry_after,
                    grpc_status,
                    ..
                },
                Some(code),
            ) if crate::aws::is_throttling_code(code) => Outcome::Response {
                status,
                retry_after,
                throttling: true,
                grpc_status,
            },
            (o, _) => o,
        }
    }

    /// Whether the service said "throttling" by its error code.
    pub fn is_throttling(&self) -> bool {
        matches!(
            self,
            Outcome::Response {
                throttling: true,
                ..
            }
        )
    }

    /// What an HTTP response means to a policy: its status, and its `Retry-After` header
    /// parsed against `now`, the time the response arrived (see
    /// [`crate::retry_after::parse`]).
    ///
    /// Every client built on the `http` crate's types (hyper, reqwest, tower services)
    /// classifies a response here, so herd's driver and the production integrations read
    /// the same hint from the same header. Only the first `Retry-After` counts; a value
    /// that is not visible ASCII, not a whole number of seconds and not an HTTP-date is no
    /// hint. The status is kept as it is: whether it is retried is the profile's call.
    /// An AWS error code in `x-amzn-ErrorType` (DynamoDB sends it; herd's upstream sends it
    /// in its AWS dialect for S3 too) marks a throttling answer
    /// ([`Outcome::with_error_code`]).
    ///
    /// ```
    /// use herd_retry::Outcome;
    /// use http::{header::RETRY_AFTER, HeaderMap, StatusCode};
    /// use std::time::{Duration, SystemTime};
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert(RETRY_AFTER, "2".parse().unwrap());
    /// let o = Outcome::from_http(StatusCode::SERVICE_UNAVAILABLE, &headers, SystemTime::now());
    /// assert_eq!(o.retry_after(), Some(Duration::from_secs(2)));
    /// assert!(!o.is_success());
    /// ```
    pub fn from_http(
        status: http::StatusCode,
        headers: &http::HeaderMap,
        now: SystemTime,
    ) -> Outcome {
        let retry_after = headers
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok());
        let code = headers
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok());
        Outcome::from_response(status.as_u16(), retry_after, now).with_error_code(code)
    }

    /// [`Outcome::from_http`] for a client without the `http` crate's types: `status`
    /// and the raw `Retry-After` header value, if any, parsed against `now`.
    pub fn from_response(status: u16, retry_after: Option<&str>, now: SystemTime) -> Outcome {
        Outcome::Response {
            status,
            retry_after: retry_after.and_then(|v| crate::retry_after::parse(v, now)),
            throttling: false,
            grpc_status: None,
        }
    }

    /// Success means a final answer the client accepts: any status below 400, and for a
    /// gRPC answer, `grpc-status` 0 (OK) too.
    pub fn is_success(&self) -> bool {
        matches!(self, Outcome::Response { status, grpc_status, .. }
            if *status < 400 && !matches!(grpc_status, Some(c) if *c != 0))
    }

    /// The Retry-After hint, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            Outcome::Response { retry_after, .. } => *retry_after,
            Outcome::Failed(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idempotency_follows_rfc_9110() {
        for m in ["GET", "head", "Options", "PUT", "DELETE", "TRACE"] {
            assert!(m.parse::<Method>().unwrap().is_idempotent(), "{m}");
        }
        for m in ["POST", "PATCH", "CONNECT"] {
            assert!(!m.parse::<Method>().unwrap().is_idempotent(), "{m}");
        }
        assert!("FETCH".parse::<Method>().is_err());
    }

    #[test]
    fn errors_by_io_kind() {
        #[derive(Debug)]
        struct Wrap(io::Error);
        impl fmt::Display for Wrap {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("wrapped")
            }
        }
        impl std::error::Error for Wrap {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let reset = Wrap(io::Error::from(io::ErrorKind::ConnectionReset));
        assert_eq!(Failure::from_error(&reset), Failure::Reset);
        let refused = io::Error::from(io::ErrorKind::ConnectionRefused);
        assert_eq!(Failure::from_error(&refused), Failure::Refused);
        let other = io::Error::other("x");
        assert_eq!(Failure::from_error(&other), Failure::Other);
        let now = SystemTime::UNIX_EPOCH;
        assert_eq!(
            Outcome::from_response(503, Some("2"), now),
            Outcome::Response {
                status: 503,
                retry_after: Some(Duration::from_secs(2)),
                throttling: false,
                grpc_status: None,
            }
        );
    }

    fn http(status: u16, retry_after: &[&[u8]]) -> Outcome {
        let mut headers = http::HeaderMap::new();
        headers.insert("x-other", http::HeaderValue::from_static("7"));
        for v in retry_after {
            let v = http::HeaderValue::from_bytes(v).unwrap();
            headers.append(http::header::RETRY_AFTER, v);
        }
        let status = http::StatusCode::from_u16(status).unwrap();
        Outcome::from_http(status, &headers, t0())
    }

    fn t0() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)
    }

    fn resp(status: u16, retry_after: Option<u64>) -> Outcome {
        Outcome::Response {
            status,
            retry_after: retry_after.map(Duration::from_secs),
            throttling: false,
            grpc_status: None,
        }
    }

    #[test]
    fn from_http_keeps_the_status_of_every_class() {
        for (status, success) in [
            (200, true),
            (204, true),
            (301, true),
            (304, true),
            (400, false),
            (404, false),
            (429, false),
            (500, false),
            (503, false),
            (599, false),
        ] {
            let o = http(status, &[]);
            assert_eq!(o, resp(status, None), "{status}");
            assert_eq!(o.is_success(), success, "{status}");
        }
    }

    #[test]
    fn from_http_reads_retry_after_seconds() {
        assert_eq!(http(503, &[b"2"]), resp(503, Some(2)));
        assert_eq!(http(429, &[b" 120 "]), resp(429, Some(120)));
        assert_eq!(http(503, &[b"0"]), resp(503, Some(0)));
        // A hint on any status is carried; the policy decides whether it matters.
        assert_eq!(http(200, &[b"5"]), resp(200, Some(5)));
        // Only the first header counts.
        assert_eq!(http(503, &[b"3", b"9"]), resp(503, Some(3)));
    }

    #[test]
    fn from_http_reads_retry_after_dates() {
        let at = |secs: i64| {
            let t = if secs >= 0 {
                t0() + Duration::from_secs(secs as u64)
            } else {
                t0() - Duration::from_secs(secs.unsigned_abs())
            };
            httpdate::fmt_http_date(t)
        };
        assert_eq!(http(503, &[at(42).as_bytes()]), resp(503, Some(42)));
        assert_eq!(http(503, &[at(-42).as_bytes()]), resp(503, Some(0)));
        // 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
        assert_eq!(
            http(503, &[b"Tue, 14 Nov 2023 22:14:20 GMT"]),
            resp(503, Some(60))
        );
    }

    #[test]
    fn from_http_without_a_usable_hint() {
        assert_eq!(http(503, &[]), resp(503, None));
        for garbage in [
            &b""[..],
            b"soon",
            b"1.5",
            b"-1",
            b"2s",
            b"99999999999999999999999",
            b"Tue, 14 Nov 2023",
            b"\xff\xfe",
        ] {
            assert_eq!(http(503, &[garbage]), resp(503, None), "{garbage:?}");
        }
    }

    #[test]
    fn from_http_reads_the_aws_error_code() {
        let status = http::StatusCode::from_u16(400).unwrap();
        let mut headers = http::HeaderMap::new();
        headers.insert(
            "x-amzn-errortype",
            http::HeaderValue::from_static("ThrottlingException"),
        );
        let o = Outcome::from_http(status, &headers, t0());
        assert_eq!(o, Outcome::throttling(400));
        assert!(o.is_throttling());
        headers.insert(
            "x-amzn-errortype",
            http::HeaderValue::from_static("InternalError"),
        );
        assert!(!Outcome::from_http(status, &headers, t0()).is_throttling());
        assert!(
            !http(429, &[]).is_throttling(),
            "a bare 429 is not throttling"
        );
    }

    #[test]
    fn success_and_reach() {
        assert!(Outcome::status(200).is_success());
        assert!(Outcome::status(304).is_success());
        assert!(!Outcome::status(429).is_success());
        assert!(!Outcome::status(503).is_success());
        assert!(!Outcome::Failed(Failure::Reset).is_success());
        assert!(!Failure::Refused.may_have_reached_server());
        assert!(Failure::Reset.may_have_reached_server());
        assert!(Failure::Timeout.may_have_reached_server());
        assert!(!Failure::Timeout.is_connection_error());
        assert!(Failure::Closed.is_connection_error());
    }
}
