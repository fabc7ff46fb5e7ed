//! `[upstream] target`: a real service behind herd's fault front.
//!
//! # Why a separate, validated type
//!
//! A target is where herd sends real load, so it is checked once, when it is named (a
//! scenario key or a flag), and never again: only `http` and `https`, a host, and no path,
//! query or user info (the client's own path and query are forwarded as they are, and a
//! path prefix or credentials in a URL written in a scenario are more often a mistake than
//! an intent). Every wait on the target is bounded: [`Target::connect_timeout`] and
//! [`Target::answer_timeout`] have defaults and show in the report, so a stuck service
//! turns into counted errors instead of a hung run.
//!
//! The simulator has no target: it simulates the model's workers, queue and service time
//! whether or not a target is named.

use crate::tls::TargetTrust;
use serde::{Serialize, Serializer};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// `connect_timeout_ms` when not set: a healthy service on the same network accepts in
/// well under a millisecond; a second is a dead or overloaded one.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(1);
/// `answer_timeout_ms` when not set: from sending the request to the response's head.
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// `settle_ms` when not set: the pause between two arms against the same target, so one
/// arm's retries and the service's recovery do not spill into the next arm.
pub const DEFAULT_SETTLE: Duration = Duration::from_secs(1);

/// The scheme of a [`TargetUrl`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP/1.1.
    Http,
    /// HTTP/1.1 over TLS.
    Https,
}

/// A checked target address: `http://HOST[:PORT]` or `https://HOST[:PORT]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetUrl {
    scheme: Scheme,
    host: String,
    port: u16,
}

impl TargetUrl {
    /// The scheme.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The host, as written (a name, an IPv4 address, or an IPv6 address in brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port (the scheme's default when none was written).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `HOST:PORT`, the request's `Host` header and what to connect to.
    pub fn authority(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }
}

impl fmt::Display for TargetUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = match self.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        };
        write!(f, "{scheme}://{}:{}", self.host, self.port)
    }
}

impl Serialize for TargetUrl {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl FromStr for TargetUrl {
    type Err = String;

    /// Parses `http://HOST[:PORT][/]`; the message says what is wrong in a sentence.
    fn from_str(text: &str) -> Result<Self, String> {
        let t = text.trim();
        let (scheme, rest) = match t.split_once("://") {
            Some((s, rest)) => (s.to_ascii_lowercase(), rest),
            None => {
                return Err(format!(
                    "target `{text}` needs a scheme: write http://HOST:PORT or https://HOST:PORT"
                ))
            }
        };
        let scheme = match scheme.as_str() {
            "http" => Scheme::Http,
            "https" => Scheme::Https,
            other => {
                return Err(format!(
                    "target `{text}` has scheme `{other}`; only http and https targets are accepted"
                ))
            }
        };
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.contains(['/', '?', '#']) {
            return Err(format!(
                "target `{text}` has a path, query or fragment; write only scheme://HOST:PORT (each request's own path is forwarded)"
            ));
        }
        if rest.contains('@') {
            return Err(format!(
                "target `{text}` has user info; write only scheme://HOST:PORT"
            ));
        }
        let (host, port) = split_host_port(rest).ok_or_else(|| {
            format!("target `{text}` has a bad port; write scheme://HOST:PORT with PORT from 1 to 65535")
        })?;
        if host.is_empty() || host == "[]" {
            return Err(format!(
                "target `{text}` has no host; write scheme://HOST:PORT"
            ));
        }
        let port = port.unwrap_or(match scheme {
            Scheme::Http => 80,
            Scheme::Https => 443,
        });
        Ok(TargetUrl {
            scheme,
            host: host.to_owned(),
            port,
        })
    }
}

/// `HOST[:PORT]` (HOST may be `[v6]`); `None` for a port that is not 1..=65535.
fn split_host_port(s: &str) -> Option<(&str, Option<u16>)> {
    let colon = if s.starts_with('[') {
        let end = s.find(']')?;
        match &s[end + 1..] {
            "" => None,
            p if p.starts_with(':') => Some(end + 1),
            _ => return None,
        }
    } else {
        s.rfind(':')
    };
    match colon {
        None => Some((s, None)),
        Some(i) => {
            let port: u16 = s[i + 1..].parse().ok().filter(|&p| p > 0)?;
            Some((&s[..i], Some(port)))
        }
    }
}

/// A real service herd forwards to, and how long it waits on it.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// Where requests that draw no fault go.
    pub url: TargetUrl,
    /// Longest wait for a TCP connection to the target (`connect_timeout_ms`).
    ///
    /// # Default
    /// [`DEFAULT_CONNECT_TIMEOUT`].
    pub connect_timeout: Duration,
    /// Longest wait from sending a request to the target's response head
    /// (`answer_timeout_ms`); past it the front answers 504.
    ///
    /// # Default
    /// [`DEFAULT_ANSWER_TIMEOUT`].
    pub answer_timeout: Duration,
    /// Pause between arms in `herd bench` (`settle_ms`).
    ///
    /// # Default
    /// [`DEFAULT_SETTLE`].
    pub settle: Duration,
    /// Sent as the `x-herd-arm` header on every forwarded request, so the service's logs
    /// can tell arms apart; `herd bench` sets it to the arm's id. Not a scenario key.
    pub arm: Option<String>,
    /// `calibrated = "..."`: the scenario's model (`service_time`, `workers`,
    /// `queue_limit`, `shed`, `rate_limit`) was fitted to this target by `herd calibrate`,
    /// and the text says when and from what. The model then describes the target, for the
    /// simulator and `herd tune`; on a socket the target answers for itself and the front
    /// leaves the model out. `None`: the model is not the target's.
    pub calibrated: Option<String>,
    /// What the front trusts on an `https://` target (`target_ca`, `target_insecure`);
    /// meaningless for `http://`.
    ///
    /// # Default
    /// [`TargetTrust::System`], the system's certificate store.
    pub trust: TargetTrust,
}

impl Target {
    /// A target at `url` with the default timeouts and settle pause.
    pub fn new(url: TargetUrl) -> Target {
        Target {
            url,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            answer_timeout: DEFAULT_ANSWER_TIMEOUT,
            settle: DEFAULT_SETTLE,
            arm: None,
            calibrated: None,
            trust: TargetTrust::System,
        }
    }
}

/// The header that carries [`Target::arm`].
pub const ARM_HEADER: &str = "x-herd-arm";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_http_and_https_with_host() {
        let t: TargetUrl = "http://127.0.0.1:8080".parse().unwrap();
        assert_eq!(t.to_string(), "http://127.0.0.1:8080");
        let t: TargetUrl = "HTTPS://staging.example/".parse().unwrap();
        assert_eq!((t.scheme(), t.port()), (Scheme::Https, 443));
        let t: TargetUrl = "http://[::1]:9000".parse().unwrap();
        assert_eq!(t.authority(), "[::1]:9000");
        let t: TargetUrl = "http://localhost".parse().unwrap();
        assert_eq!(t.to_string(), "http://localhost:80");
    }

    #[test]
    fn refuses_with_a_sentence() {
        for (bad, says) in [
            ("ftp://host:21", "only http and https"),
            ("127.0.0.1:8080", "needs a scheme"),
            ("http://", "no host"),
            ("http://:8080", "no host"),
            ("http://host:0", "bad port"),
            ("http://host:99999", "bad port"),
            ("http://host:80/api", "path"),
            ("http://u:p@host", "user info"),
        ] {
            let e = bad.parse::<TargetUrl>().unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}
