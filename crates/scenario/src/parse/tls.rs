//! The checks for `[upstream] tls`, `tls_cert` and `tls_key`: how herd's front serves.
//! The files are read later, by herd-upstream at start (see [`crate::tls`]).

use super::{Check, R};
use crate::raw::RawUpstream;
use crate::span::Seg;
use crate::tls::ServeTls;
use std::path::{Path, PathBuf};

/// The one value `tls` takes.
const SELF_SIGNED: &str = "self-signed";

impl Check<'_> {
    /// `tls = "self-signed"`, or `tls_cert` with `tls_key`, or neither (plain HTTP).
    pub(super) fn serve_tls(&self, at: &[Seg], u: &RawUpstream) -> R<Option<ServeTls>> {
        let k = |x| super::under(at, x);
        if let Some(mode) = &u.tls {
            if mode != SELF_SIGNED {
                return Err(self.err(
                    &k("tls"),
                    format!(
                        "unknown tls `{mode}` (expected \"{SELF_SIGNED}\"; for a certificate of \
                         your own set `tls_cert` and `tls_key` instead)"
                    ),
                ));
            }
            if let Some(key) = [("tls_cert", &u.tls_cert), ("tls_key", &u.tls_key)]
                .iter()
                .find_map(|(key, v)| v.is_some().then_some(*key))
            {
                return Err(self.err(
                    &k(key),
                    format!("`tls = \"{SELF_SIGNED}\"` generates its own certificate, so `{key}` would do nothing; keep one"),
                ));
            }
            return Ok(Some(ServeTls::SelfSigned));
        }
        match (&u.tls_cert, &u.tls_key) {
            (None, None) => Ok(None),
            (Some(_), None) => Err(self.err(
                &k("tls_cert"),
                "`tls_cert` needs `tls_key`, the certificate's private key (a PEM file)",
            )),
            (None, Some(_)) => Err(self.err(
                &k("tls_key"),
                "`tls_key` needs `tls_cert`, the certificate chain it belongs to (a PEM file)",
            )),
            (Some(cert), Some(key)) => {
                for (name, v) in [("tls_cert", cert), ("tls_key", key)] {
                    if v.trim().is_empty() {
                        return Err(self.err(
                            &k(name),
                            format!("`{name}` names a PEM file; it cannot be empty"),
                        ));
                    }
                }
                Ok(Some(ServeTls::Files {
                    cert: self.path(cert),
                    key: self.path(key),
                }))
            }
        }
    }

    /// A file named in the scenario: relative to the scenario file's directory (for an
    /// embedded scenario, to the working directory).
    pub(super) fn path(&self, given: &str) -> PathBuf {
        let given = Path::new(given);
        match self.base_dir() {
            Some(dir) if given.is_relative() => dir.join(given),
            _ => given.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{parse, ServeTls, TargetTrust};
    use std::path::PathBuf;

    fn scenario(upstream: &str) -> String {
        format!("name = \"t\"\n[upstream]\n{upstream}\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n")
    }

    #[test]
    fn tls_keys_become_paths_beside_the_scenario() {
        let s = parse(&scenario("tls = \"self-signed\""), "dir/s.toml").unwrap();
        assert_eq!(s.upstream.tls, Some(ServeTls::SelfSigned));
        let s = parse(
            &scenario("tls_cert = \"front.pem\"\ntls_key = \"/abs/front.key\""),
            "dir/s.toml",
        )
        .unwrap();
        assert_eq!(
            s.upstream.tls,
            Some(ServeTls::Files {
                cert: PathBuf::from("dir/front.pem"),
                key: PathBuf::from("/abs/front.key"),
            })
        );
        let s = parse(&scenario(""), "dir/s.toml").unwrap();
        assert_eq!(s.upstream.tls, None);
        let trust = |extra: &str| {
            let text = scenario(&format!("target = \"https://svc:8443\"\n{extra}"));
            parse(&text, "dir/s.toml")
                .unwrap()
                .upstream
                .target
                .unwrap()
                .trust
        };
        assert_eq!(trust(""), TargetTrust::System);
        assert_eq!(
            trust("target_ca = \"ca.pem\""),
            TargetTrust::CaFile(PathBuf::from("dir/ca.pem"))
        );
        assert_eq!(trust("target_insecure = true"), TargetTrust::Insecure);
        assert_eq!(trust("target_insecure = false"), TargetTrust::System);
    }

    #[test]
    fn tls_refusals_name_the_key() {
        for (upstream, key, says) in [
            ("tls = \"on\"", "upstream.tls", "unknown tls `on`"),
            (
                "tls = \"self-signed\"\ntls_cert = \"c.pem\"",
                "upstream.tls_cert",
                "keep one",
            ),
            (
                "tls_cert = \"c.pem\"",
                "upstream.tls_cert",
                "needs `tls_key`",
            ),
            (
                "tls_key = \"k.pem\"",
                "upstream.tls_key",
                "needs `tls_cert`",
            ),
            (
                "target_ca = \"ca.pem\"",
                "upstream.target_ca",
                "applies only with `target`",
            ),
            (
                "target = \"http://svc:80\"\ntarget_insecure = true",
                "upstream.target_insecure",
                "only to an https:// target",
            ),
            (
                "target = \"https://svc\"\ntarget_ca = \"ca.pem\"\ntarget_insecure = true",
                "upstream.target_insecure",
                "keep one",
            ),
            (
                "target = \"https://svc\"\ntarget_ca = \" \"",
                "upstream.target_ca",
                "cannot be empty",
            ),
        ] {
            let e = parse(&scenario(upstream), "s.toml")
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("s.toml:"), "{upstream}: {e}");
            assert!(e.contains(key), "{upstream}: {e}");
            assert!(e.contains(says), "{upstream}: {e}");
        }
        let hop = "name = \"t\"\n[[hops]]\nid = \"h\"\n[hops.server]\ntls = \"self-signed\"\n[hops.client]\npolicy = \"none\"\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n";
        let e = parse(hop, "s.toml").unwrap_err().to_string();
        assert!(e.contains("hops[0].server.tls"), "{e}");
    }
}
