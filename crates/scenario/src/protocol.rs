//! What the upstream speaks (`[upstream] protocol`): HTTP/1.1, HTTP/2 without TLS (h2c),
//! or gRPC over h2c, and how a gRPC upstream answers each fate.
//!
//! # gRPC: the same fates, answered as statuses
//!
//! A gRPC server answers every call HTTP 200 and puts the outcome in the `grpc-status`
//! trailer. herd's fault rules are not re-decided for gRPC: [`crate::Upstream::fate`], the
//! rate limit and the capacity are the one copy, and this module only says how each
//! outcome is worded. The real upstream words its answers here, and the simulator reads the
//! same codes, so a replica classifies the same status in both engines
//! (`herd_retry::Outcome::grpc`):
//!
//! | fate | HTTP/1.1 and h2c | gRPC |
//! |---|---|---|
//! | success | 200 `ok` | 200, an empty message, trailer `grpc-status: 0` |
//! | injected error (`error_rate`, a `hold` ending in 503) | 503 | `grpc-status: 14` UNAVAILABLE |
//! | shed (`shed = "503"`) | 503 | UNAVAILABLE (14) |
//! | rate-limit rejection (`[upstream.rate_limit]`) | its `status` | `grpc-status: 8` RESOURCE_EXHAUSTED |
//! | reset, or shed with `shed = "reset"` | TCP RST | `RST_STREAM` with `INTERNAL_ERROR` on that stream only, which gRPC clients report as INTERNAL (13) |
//!
//! Every error is a *Trailers-Only* answer (one HEADERS frame that ends the stream): a gRPC
//! client commits a call, and stops retrying it, once it has response headers, so an error
//! that came as headers and then trailers would never be retried.
//!
//! Why these codes: UNAVAILABLE is what a gRPC server says when it cannot serve now, and
//! the code every retry policy example lists; RESOURCE_EXHAUSTED is what gRPC rate and
//! quota limiters answer (a policy retries it only if it lists it, which is itself a
//! finding: A6's examples do not); `INTERNAL_ERROR` is the reset code every gRPC client maps
//! to a status that is not retried by default, unlike `REFUSED_STREAM`, which would be
//! retried transparently, outside the policy and its counts. `retry_after_s` on the
//! upstream or the rate limit becomes `grpc-retry-pushback-ms` (the same wait in
//! milliseconds), which A6 clients obey instead of their backoff.

use std::fmt;

/// What the upstream speaks (`[upstream] protocol`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Protocol {
    /// HTTP/1.1 keep-alive, herd's first protocol.
    #[default]
    Http1,
    /// HTTP/2 over cleartext TCP with prior knowledge (and HTTP/1.1 on the same port),
    /// with HTTP/1.1's answers: a reset is an `RST_STREAM` of the one request.
    H2c,
    /// gRPC unary calls over h2c: any service and method, raw bytes, fates answered as
    /// gRPC statuses ([`GrpcStatus`]).
    Grpc,
}

impl Protocol {
    /// Names, as scenarios write them.
    pub const NAMES: &'static [&'static str] = &["http1", "h2c", "grpc"];

    /// The protocol's name.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "http1",
            Protocol::H2c => "h2c",
            Protocol::Grpc => "grpc",
        }
    }

    /// The protocol a scenario names, if any.
    pub fn from_name(name: &str) -> Option<Protocol> {
        match name {
            "http1" | "http/1.1" => Some(Protocol::Http1),
            "h2c" | "http2" => Some(Protocol::H2c),
            "grpc" => Some(Protocol::Grpc),
            _ => None,
        }
    }

    /// Whether the upstream speaks HTTP/2.
    pub fn is_h2(self) -> bool {
        self != Protocol::Http1
    }

    /// Whether answers are gRPC statuses.
    pub fn is_grpc(self) -> bool {
        self == Protocol::Grpc
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A gRPC answer: its `grpc-status` and `grpc-message`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GrpcStatus {
    /// `grpc-status`.
    pub code: u8,
    /// `grpc-message`.
    pub message: &'static str,
}

impl GrpcStatus {
    /// A success.
    pub const OK: GrpcStatus = GrpcStatus {
        code: 0,
        message: "",
    };
    /// An injected error.
    pub const UNAVAILABLE: GrpcStatus = GrpcStatus {
        code: 14,
        message: "unavailable (injected)",
    };
    /// Turned away over capacity (`shed = "503"`).
    pub const SHED: GrpcStatus = GrpcStatus {
        code: 14,
        message: "shed",
    };
    /// Rejected by the rate limit.
    pub const LIMITED: GrpcStatus = GrpcStatus {
        code: 8,
        message: "rate limited",
    };
    /// The status gRPC clients report for the `RST_STREAM` (`INTERNAL_ERROR`) of a reset.
    pub const RESET_AS_SEEN: GrpcStatus = GrpcStatus {
        code: 13,
        message: "Received RST_STREAM with code 2",
    };
}

/// The `grpc-retry-pushback-ms` for a `Retry-After` of `secs` (0: none).
pub fn pushback_ms(secs: u64) -> Option<u64> {
    (secs > 0).then(|| secs.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in Protocol::NAMES {
            assert_eq!(Protocol::from_name(n).unwrap().name(), *n);
        }
        assert_eq!(Protocol::from_name("h3"), None);
        assert!(Protocol::Grpc.is_h2() && Protocol::Grpc.is_grpc());
        assert!(Protocol::H2c.is_h2() && !Protocol::H2c.is_grpc());
        assert!(!Protocol::Http1.is_h2());
        assert_eq!(pushback_ms(0), None);
        assert_eq!(pushback_ms(2), Some(2000));
    }
}
