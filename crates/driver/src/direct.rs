//! Driving the arms straight at a URL: no upstream of herd's, no fault front, no server
//! counts.
//!
//! This is for comparisons: herd's driver and another load tool aimed at the same server
//! (nginx, say) measure the same thing, so their latencies and achieved rates can be set
//! side by side. What herd cannot see without its own upstream (requests received, shed,
//! the server timeline, first retries) stays empty, and the report says the run was
//! direct.

use super::{drive_from_now, ArmRun, Progress};
use crate::CommonStart;
use crate::Stop;
use herd_scenario::Scenario;
use std::fmt;
use std::io;

/// A URL the arms are driven at directly: plain `http://` with a host (herd's driver
/// speaks no TLS).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Direct(http::Uri);

impl Direct {
    /// Checks `url`; the error is a sentence for the user.
    pub fn new(url: &str) -> Result<Direct, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("--target {url:?} is not a URL ({e})"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(format!(
                    "--target {url:?} with --direct: herd's driver speaks plain HTTP only; give an http:// URL"
                ))
            }
            _ => return Err(format!("--target {url:?} must start with http:// or https://")),
        }
        if uri.host().map_or(true, str::is_empty) {
            return Err(format!("--target {url:?} has no host"));
        }
        Ok(Direct(uri))
    }

    /// The URL.
    pub fn uri(&self) -> &http::Uri {
        &self.0
    }
}

impl fmt::Display for Direct {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Runs arm `index` against `target` until done or `stop` fires (see [`super::run_arm`]):
/// [`super::drive_url`], reporting to `progress`: its server counts stay empty.
pub(super) async fn run_arm(
    scenario: &Scenario,
    index: usize,
    target: &Direct,
    start: Option<&CommonStart>,
    progress: Option<Progress>,
    stop: Stop,
) -> io::Result<Option<ArmRun>> {
    let url = target.to_string();
    drive_from_now(scenario, index, &url, start, progress, stop).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_http_urls_with_a_host() {
        assert!(Direct::new("http://127.0.0.1:8080/").is_ok());
        assert!(Direct::new("https://example.com/")
            .unwrap_err()
            .contains("plain HTTP"));
        assert!(Direct::new("ftp://x/").unwrap_err().contains("http://"));
        assert!(Direct::new("127.0.0.1:80").unwrap_err().contains("http://"));
        assert!(Direct::new("http://").is_err());
    }
}
