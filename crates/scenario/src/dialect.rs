//! How the upstream words its answers: herd's own plain text, or the way an AWS service
//! answers (S3's XML errors, DynamoDB's JSON errors), so that a real AWS SDK pointed at
//! herd parses what it would parse from AWS.
//!
//! # Why the wording matters
//!
//! The AWS SDKs classify an error by its **code**, not its status: S3's `SlowDown` (503)
//! and DynamoDB's `ThrottlingException` (400) are throttling errors, which the 2026 rules
//! back off from 1 s instead of 50 ms, charge 5 quota tokens instead of 14, and which turn
//! adaptive mode's rate limiter on; a bare 429 is not retried at all. A plain 503 or 429
//! would make a real botocore behave differently from the same botocore against AWS.
//!
//! Like the fault rules, this is the one copy: the real upstream words its answers here,
//! and the simulator reads [`Dialect::limited_status`] and [`Dialect::throttles`] so its
//! replicas see the same statuses and the same throttling classification
//! (`herd_retry::Outcome::is_throttling`) as the ones on a socket, which read the code from
//! the `x-amzn-ErrorType` header every AWS-dialect error carries.
//!
//! What each fault becomes:
//!
//! | fault | plain | `s3` | `dynamodb` |
//! |---|---|---|---|
//! | success | 200 `ok` | 200, empty body (a `GetObject` of an empty object) | 200 `{}` (a `GetItem` that found nothing) |
//! | injected error (`error_rate`, a `hold` ending in 503) | 503 | 503 `ServiceUnavailable` (XML) | 503 `ServiceUnavailable` (JSON) |
//! | rate-limit rejection (`[upstream.rate_limit]`) | its `status` | 503 `SlowDown` (XML) | 400 `ThrottlingException` (JSON) |
//!
//! `ServiceUnavailable` (503) is in the AWS common errors of both services and, like a 500
//! `InternalError`, a transient error to every SDK; keeping the injected error a 503 keeps
//! the fault's counts and the simulator's outcome the same in every dialect. Every answer
//! carries `x-amz-request-id`.

use std::fmt;

/// The wording of the upstream's answers (`[upstream] dialect`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Dialect {
    /// herd's own plain-text answers.
    #[default]
    Plain,
    /// Amazon S3 (REST-XML errors), as `GetObject` meets them.
    S3,
    /// Amazon DynamoDB (JSON 1.0 errors), as `GetItem` meets them.
    DynamoDb,
}

/// One answer in a dialect: status, headers and body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Wording {
    /// The status.
    pub status: u16,
    /// `Content-Type`.
    pub content_type: &'static str,
    /// The AWS error code, sent in `x-amzn-ErrorType` (and in the body); `None` for a
    /// success.
    pub code: Option<&'static str>,
    /// The body.
    pub body: &'static str,
}

const S3_SLOW_DOWN: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message><RequestId>herd</RequestId><HostId>herd</HostId></Error>";
const S3_UNAVAILABLE: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>ServiceUnavailable</Code><Message>Service is unable to handle request.</Message><RequestId>herd</RequestId><HostId>herd</HostId></Error>";
const DDB_THROTTLING: &str = "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ThrottlingException\",\"message\":\"Rate of requests exceeds the allowed throughput.\"}";
const DDB_UNAVAILABLE: &str = "{\"__type\":\"com.amazonaws.dynamodb.v20120810#ServiceUnavailable\",\"message\":\"The service is currently unavailable or busy.\"}";
const DDB_JSON: &str = "application/x-amz-json-1.0";

impl Dialect {
    /// Names, as scenarios write them.
    pub const NAMES: &'static [&'static str] = &["plain", "s3", "dynamodb"];

    /// The dialect's name.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Plain => "plain",
            Dialect::S3 => "s3",
            Dialect::DynamoDb => "dynamodb",
        }
    }

    /// The dialect a scenario names, if any.
    pub fn from_name(name: &str) -> Option<Dialect> {
        match name {
            "plain" => Some(Dialect::Plain),
            "s3" => Some(Dialect::S3),
            "dynamodb" => Some(Dialect::DynamoDb),
            _ => None,
        }
    }

    /// Whether a rate-limit rejection is a throttling error by its code (an AWS dialect).
    pub fn throttles(self) -> bool {
        self != Dialect::Plain
    }

    /// The status of a rate-limit rejection whose rule says `status`: the service's own
    /// throttling status in an AWS dialect (S3 503, DynamoDB 400), else `status`.
    pub fn limited_status(self, status: u16) -> u16 {
        self.limited().map_or(status, |w| w.status)
    }

    /// A success, in this dialect (`None`: herd's plain `ok`).
    pub fn ok(self) -> Option<Wording> {
        match self {
            Dialect::Plain => None,
            Dialect::S3 => Some(Wording {
                status: 200,
                content_type: "binary/octet-stream",
                code: None,
                body: "",
            }),
            Dialect::DynamoDb => Some(Wording {
                status: 200,
                content_type: DDB_JSON,
                code: None,
                body: "{}",
            }),
        }
    }

    /// An injected error (`None`: herd's plain 503).
    pub fn unavailable(self) -> Option<Wording> {
        match self {
            Dialect::Plain => None,
            Dialect::S3 => Some(Wording {
                status: 503,
                content_type: "application/xml",
                code: Some("ServiceUnavailable"),
                body: S3_UNAVAILABLE,
            }),
            Dialect::DynamoDb => Some(Wording {
                status: 503,
                content_type: DDB_JSON,
                code: Some("ServiceUnavailable"),
                body: DDB_UNAVAILABLE,
            }),
        }
    }

    /// A rate-limit rejection (`None`: the rule's plain status).
    pub fn limited(self) -> Option<Wording> {
        match self {
            Dialect::Plain => None,
            Dialect::S3 => Some(Wording {
                status: 503,
                content_type: "application/xml",
                code: Some("SlowDown"),
                body: S3_SLOW_DOWN,
            }),
            Dialect::DynamoDb => Some(Wording {
                status: 400,
                content_type: DDB_JSON,
                code: Some("ThrottlingException"),
                body: DDB_THROTTLING,
            }),
        }
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in Dialect::NAMES {
            assert_eq!(Dialect::from_name(n).unwrap().name(), *n);
        }
        assert_eq!(Dialect::from_name("S3"), None);
    }

    #[test]
    fn throttling_by_code_in_the_aws_dialects_only() {
        assert_eq!(Dialect::Plain.limited_status(429), 429);
        assert!(!Dialect::Plain.throttles());
        assert_eq!(Dialect::S3.limited_status(429), 503);
        assert_eq!(Dialect::DynamoDb.limited_status(429), 400);
        for d in [Dialect::S3, Dialect::DynamoDb] {
            let code = d.limited().unwrap().code.unwrap();
            assert!(d.limited().unwrap().body.contains(code));
            assert!(d.throttles());
            let u = d.unavailable().unwrap();
            assert_eq!(u.status, 503);
            assert!(u.body.contains(u.code.unwrap()));
        }
    }
}
