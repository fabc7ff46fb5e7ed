//! How the upstream treats its connections and who may read its control endpoints, and
//! whether it is a hop of a call graph.
//!
//! Except [`Options::onward`], these are settings of the server, not of the scenario: none
//! of them changes what a run measures, only how the server stands up to clients that are
//! not herd's (a scanner, a slow or hostile peer, a curious neighbour on the network).

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

/// Connection limits and control-endpoint access; [`Options::default`] is what `herd bench`
/// and `herd upstream` use unless told otherwise.
#[derive(Clone, Debug)]
pub struct Options {
    /// A request head must arrive in full within this, counted from when the server starts
    /// waiting for it; a client that dribbles its head (slowloris) is disconnected. As in
    /// hyper, the wait for the next request on an idle keep-alive connection counts too, so
    /// this is also the idle timeout.
    ///
    /// # Default
    /// 60 s, nginx's `client_header_timeout`.
    pub header_read_timeout: Duration,
    /// The largest request head (request line and headers) accepted; a larger one is
    /// answered `431 Request Header Fields Too Large` and the connection closed.
    ///
    /// # Default
    /// 32 KiB, nginx's default limit (`large_client_header_buffers 4 8k`).
    pub max_header_bytes: usize,
    /// With a token, `/__herd/stats` and `/metrics` need `Authorization: Bearer TOKEN` on
    /// any address. Without one they are open on a loopback address and off (404)
    /// elsewhere; see [`Admin`].
    ///
    /// # Default
    /// None.
    pub admin_token: Option<AdminToken>,
    /// A hop of a call graph (`[[hops]]`): admitted work calls the next hop and is
    /// answered with how that call went (see [`crate::Onward`]).
    ///
    /// # Default
    /// None: the server answers its work itself (or forwards it to `[upstream] target`).
    pub onward: Option<crate::Onward>,
    /// Serve HTTPS with this certificate (`[upstream] tls`); see [`crate::tls`].
    ///
    /// # Default
    /// None: plain HTTP.
    pub tls: Option<crate::tls::FrontTls>,
    /// Serve connections on this many event loops of their own, each a thread with a
    /// single-threaded runtime, handed accepted connections in turn (see the `loops`
    /// module for why and what it measured); 0 serves them on the runtime the server runs on.
    ///
    /// # Default
    /// 0: `herd bench`'s upstream for each arm shares the process's runtime with the run.
    /// `herd upstream` serves on one loop per core (`--threads`).
    pub loops: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            header_read_timeout: Duration::from_secs(60),
            max_header_bytes: 32 * 1024,
            admin_token: None,
            onward: None,
            tls: None,
            loops: 0,
        }
    }
}

/// A secret for the control endpoints: visible ASCII, so it fits an HTTP header as it is.
#[derive(Clone, PartialEq, Eq)]
pub struct AdminToken(String);

/// A token that cannot be sent in an `Authorization` header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a token is one or more visible ASCII characters (no spaces)")]
pub struct BadToken;

impl AdminToken {
    /// Checks that `token` can travel in a header.
    pub fn new(token: &str) -> Result<Self, BadToken> {
        if token.is_empty() || !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(BadToken);
        }
        Ok(AdminToken(token.to_owned()))
    }

    fn as_bytes(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

/// The token is a secret: never printed.
impl fmt::Debug for AdminToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AdminToken(..)")
    }
}

/// Who may read the control endpoints, decided once from the bound address and the token.
///
/// # Why off by default on a public address
///
/// The counts tell anyone how much traffic the server sees and how it is failing; on a
/// loopback address only local processes can ask, which is how herd itself runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admin {
    /// Anyone who can connect (loopback, no token).
    Open,
    /// Only requests that carry `Authorization: Bearer TOKEN`.
    Token(AdminToken),
    /// Nobody: the endpoints answer 404 as if they did not exist.
    Off,
}

/// Why a control request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Denied {
    /// Endpoints are off: 404.
    Off,
    /// Token missing or wrong: 401.
    Unauthorized,
}

impl Admin {
    /// A token is required wherever it is given; without one, a loopback address is open
    /// and any other address is off.
    pub fn for_listen(addr: SocketAddr, token: Option<AdminToken>) -> Admin {
        match token {
            Some(t) => Admin::Token(t),
            None if addr.ip().to_canonical().is_loopback() => Admin::Open,
            None => Admin::Off,
        }
    }

    /// Checks a control request's `Authorization` header.
    pub(crate) fn check(&self, authorization: Option<&[u8]>) -> Result<(), Denied> {
        match self {
            Admin::Open => Ok(()),
            Admin::Off => Err(Denied::Off),
            Admin::Token(t) => {
                // The scheme is case-insensitive (RFC 9110 §11.1), the token is not.
                let given = authorization
                    .filter(|h| h.len() > 7 && h[..7].eq_ignore_ascii_case(b"bearer "))
                    .map(|h| &h[7..]);
                match given {
                    Some(g) if constant_time_eq(g, t.as_bytes()) => Ok(()),
                    _ => Err(Denied::Unauthorized),
                }
            }
        }
    }
}

/// Compares without an early exit, so the time taken does not tell how much of a guess was
/// right (only its length, which is not the secret).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().expect("address")
    }

    #[test]
    fn loopback_is_open_elsewhere_off_unless_a_token_is_given() {
        let tok = AdminToken::new("s3cret").expect("valid");
        assert_eq!(Admin::for_listen(addr("127.0.0.1:1"), None), Admin::Open);
        assert_eq!(Admin::for_listen(addr("127.8.9.1:1"), None), Admin::Open);
        assert_eq!(Admin::for_listen(addr("[::1]:1"), None), Admin::Open);
        assert_eq!(
            Admin::for_listen(addr("[::ffff:127.0.0.1]:1"), None),
            Admin::Open
        );
        assert_eq!(Admin::for_listen(addr("0.0.0.0:1"), None), Admin::Off);
        assert_eq!(Admin::for_listen(addr("[::]:1"), None), Admin::Off);
        assert_eq!(Admin::for_listen(addr("10.1.2.3:1"), None), Admin::Off);
        assert_eq!(
            Admin::for_listen(addr("127.0.0.1:1"), Some(tok.clone())),
            Admin::Token(tok)
        );
    }

    #[test]
    fn bearer_token_is_checked_exactly() {
        let a = Admin::Token(AdminToken::new("s3cret").expect("valid"));
        assert_eq!(a.check(Some(b"Bearer s3cret")), Ok(()));
        assert_eq!(a.check(Some(b"bearer s3cret")), Ok(()));
        for bad in [
            None,
            Some(&b"Bearer s3cre"[..]),
            Some(b"Bearer s3cret2"),
            Some(b"Bearer S3cret"),
            Some(b"Bearer  s3cret"),
            Some(b"s3cret"),
            Some(b"Basic s3cret"),
        ] {
            assert_eq!(a.check(bad), Err(Denied::Unauthorized), "{bad:?}");
        }
        assert_eq!(Admin::Off.check(Some(b"Bearer s3cret")), Err(Denied::Off));
        assert_eq!(Admin::Open.check(None), Ok(()));
    }

    #[test]
    fn tokens_must_fit_a_header_and_stay_secret() {
        assert_eq!(AdminToken::new(""), Err(BadToken));
        assert_eq!(AdminToken::new("a b"), Err(BadToken));
        assert_eq!(AdminToken::new("é"), Err(BadToken));
        let t = AdminToken::new("s3cret").expect("valid");
        assert!(!format!("{t:?}").contains("s3cret"));
    }
}
