//! What an AWS SDK says about an attempt: `amz-sdk-request: attempt=N; max=M`.
//!
//! Every AWS SDK sends this header (botocore's `handlers.py` `add_retry_headers`, the
//! Rust SDK's `aws-runtime` `request_info` interceptor), `attempt` counting from 1 and the
//! same on a retry as the client's own attempt counter. The upstream reads it to count
//! requests by attempt number, as it reads `grpc-previous-rpc-attempts` for gRPC: a server
//! can then tell first attempts from retries without the client's help (200 failing S3
//! calls from botocore 1.44's standard mode, one at a time: 200 first attempts, then the 35
//! retries its quota allows, as 18 second and 17 third attempts).

use hyper::Request;

/// The header.
pub(crate) const SDK_REQUEST: &str = "amz-sdk-request";

/// The attempt number (1 for the first) `req` declares, if it carries the header.
pub(crate) fn declared_attempt<B>(req: &Request<B>) -> Option<u64> {
    let value = req.headers().get(SDK_REQUEST)?.to_str().ok()?;
    attempt_of(value)
}

/// `attempt=N` out of the header's `;`-separated `key=value` pairs; `None` without one,
/// or when N is not a number of at least 1.
fn attempt_of(value: &str) -> Option<u64> {
    value
        .split(';')
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("attempt"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .filter(|&n| n >= 1)
}

#[cfg(test)]
mod tests {
    use super::attempt_of;

    #[test]
    fn reads_the_attempt_as_the_sdks_write_it() {
        assert_eq!(attempt_of("attempt=1; max=3"), Some(1));
        assert_eq!(attempt_of("attempt=2;max=5"), Some(2));
        assert_eq!(attempt_of(" max=3 ; attempt=3 "), Some(3));
        assert_eq!(
            attempt_of("ttl=20261206T000000Z; attempt=4; max=4"),
            Some(4)
        );
        for bad in ["", "max=3", "attempt=", "attempt=x", "attempt=0", "attempt"] {
            assert_eq!(attempt_of(bad), None, "{bad:?}");
        }
    }
}
