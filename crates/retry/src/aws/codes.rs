//! AWS error codes that mean "throttling", as botocore reads them.
//!
//! botocore's `ThrottledRetryableChecker` (`botocore/retries/standard.py`) matches the
//! error **code** parsed from the response (S3's XML `<Code>`, DynamoDB's JSON `__type`
//! or the `x-amzn-ErrorType` header), never the status: an S3 `SlowDown` is a 503 and a
//! DynamoDB `ThrottlingException` is a 400, and both are throttling; a bare 429 with no
//! code is not. herd's upstream in its AWS dialect sends the code in `x-amzn-ErrorType`
//! beside the body, so herd's replicas read the same fact the SDK parses from the body.

/// botocore 1.44 `ThrottledRetryableChecker._THROTTLED_ERROR_CODES` (plus
/// `PriorRequestNotComplete`, which botocore lists as throttling too).
pub const THROTTLING_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "RequestThrottledException",
    "TooManyRequestsException",
    "ProvisionedThroughputExceededException",
    "TransactionInProgressException",
    "RequestLimitExceeded",
    "BandwidthLimitExceeded",
    "LimitExceededException",
    "RequestThrottled",
    "SlowDown",
    "PriorRequestNotComplete",
    "EC2ThrottledException",
];

/// Whether an AWS error code means throttling. Accepts the forms services send: a bare
/// code (`SlowDown`), a namespaced `__type`
/// (`com.amazonaws.dynamodb.v20120810#ThrottlingException`) and a code with a URI after
/// a colon (`ThrottlingException:http://internal.amazon.com/`), which botocore's parsers
/// cut the same way.
///
/// ```
/// use herd_retry::aws::is_throttling_code;
/// assert!(is_throttling_code("SlowDown"));
/// assert!(is_throttling_code("com.amazonaws.dynamodb.v20120810#ThrottlingException"));
/// assert!(!is_throttling_code("InternalError"));
/// ```
pub fn is_throttling_code(code: &str) -> bool {
    let code = code.rsplit('#').next().unwrap_or(code);
    let code = code.split(':').next().unwrap_or(code).trim();
    THROTTLING_CODES.contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_not_statuses() {
        for c in [
            "SlowDown",
            "ThrottlingException",
            "ProvisionedThroughputExceededException",
        ] {
            assert!(is_throttling_code(c), "{c}");
        }
        assert!(is_throttling_code(
            "ThrottlingException:http://internal.amazon.com/"
        ));
        for c in ["InternalError", "ServiceUnavailable", "", "429", "slowdown"] {
            assert!(!is_throttling_code(c), "{c}");
        }
    }
}
