//! gRPC status codes, as numbers on the wire and names in a service config, and the set of
//! them a `retryPolicy` or `hedgingPolicy` lists.

use crate::classify::Failure;
use std::fmt;

/// A gRPC status code (`grpc/grpc:doc/statuscodes.md`): 0 OK to 16 UNAUTHENTICATED.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Code(pub u8);

/// The names of codes 0 to 16, as a service config spells them.
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

impl Code {
    /// 0: success.
    pub const OK: Code = Code(0);
    /// 1: the call was cancelled (by the client, usually).
    pub const CANCELLED: Code = Code(1);
    /// 2: an error with no better code.
    pub const UNKNOWN: Code = Code(2);
    /// 4: the deadline passed before the call completed.
    pub const DEADLINE_EXCEEDED: Code = Code(4);
    /// 8: a quota or rate limit ran out.
    pub const RESOURCE_EXHAUSTED: Code = Code(8);
    /// 10: a concurrency conflict.
    pub const ABORTED: Code = Code(10);
    /// 13: an internal error; what gRPC clients report for an `RST_STREAM` with
    /// `INTERNAL_ERROR`.
    pub const INTERNAL: Code = Code(13);
    /// 14: the service is unavailable, the code every gRPC retry policy example retries.
    pub const UNAVAILABLE: Code = Code(14);

    /// The code's name (`UNAVAILABLE`), or its number for one past 16.
    pub fn name(self) -> String {
        NAMES
            .get(usize::from(self.0))
            .map_or_else(|| self.0.to_string(), |n| (*n).to_owned())
    }

    /// The code a service config names: an upper-case name (`"UNAVAILABLE"`) or a number
    /// from 0 to 16, as C-core, grpc-go and grpc-js all accept. grpc-js also accepts a
    /// name in any case; herd takes the strict form every implementation accepts.
    pub fn from_name(name: &str) -> Option<Code> {
        NAMES.iter().position(|n| *n == name).map(|i| Code(i as u8))
    }

    /// The gRPC code a client gives an HTTP answer without `grpc-status`, per gRPC's
    /// `doc/http-grpc-status-mapping.md`: 400 INTERNAL, 401 UNAUTHENTICATED, 403
    /// PERMISSION_DENIED, 404 UNIMPLEMENTED, 429, 502, 503 and 504 UNAVAILABLE, any other
    /// error UNKNOWN. herd takes a status below 400 as OK (a plain success).
    pub fn of_http(status: u16) -> Code {
        match status {
            0..=399 => Code::OK,
            400 => Code::INTERNAL,
            401 => Code(16),
            403 => Code(7),
            404 => Code(12),
            429 | 502 | 503 | 504 => Code::UNAVAILABLE,
            _ => Code::UNKNOWN,
        }
    }

    /// The code gRPC clients report when no answer came:
    /// - a reset is the `RST_STREAM` herd's upstream sends for a reset fate, with
    ///   `INTERNAL_ERROR`, which C-core, grpc-go and grpc-js all report as INTERNAL;
    /// - a connection refused, closed or broken under the call is UNAVAILABLE;
    /// - the call's deadline is DEADLINE_EXCEEDED (never retried: A6's deadline covers
    ///   every attempt);
    /// - anything else is UNKNOWN.
    pub fn of_failure(f: Failure) -> Code {
        match f {
            Failure::Reset => Code::INTERNAL,
            Failure::Refused | Failure::Closed | Failure::BrokenPipe | Failure::Throttled => {
                Code::UNAVAILABLE
            }
            Failure::Timeout => Code::DEADLINE_EXCEEDED,
            Failure::Other => Code::UNKNOWN,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

/// A set of status codes (`retryableStatusCodes`, `nonFatalStatusCodes`): small and `Copy`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Codes(u32);

impl Codes {
    /// No code.
    pub const EMPTY: Codes = Codes(0);

    /// The set of `codes`.
    pub fn of(codes: &[Code]) -> Codes {
        codes.iter().fold(Codes::EMPTY, |s, c| s.with(*c))
    }

    /// This set and `code`.
    pub fn with(self, code: Code) -> Codes {
        Codes(self.0 | 1u32.checked_shl(u32::from(code.0)).unwrap_or(0))
    }

    /// Whether `code` is in the set.
    pub fn contains(self, code: Code) -> bool {
        code.0 < 32 && self.0 & (1 << code.0) != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The codes, lowest first.
    pub fn iter(self) -> impl Iterator<Item = Code> {
        (0u8..32).map(Code).filter(move |c| self.contains(*c))
    }
}

impl fmt::Display for Codes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.iter().map(Code::name).collect();
        f.write_str(&names.join(", "))
    }
}
