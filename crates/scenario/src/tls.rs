//! TLS in a scenario: how herd's front serves its clients (`[upstream] tls`, `tls_cert`,
//! `tls_key`) and what it trusts when it forwards to an `https://` target (`target_ca`,
//! `target_insecure`).
//!
//! # Why plain data here
//!
//! This crate has no sockets and no TLS library (the simulator depends on it and must stay
//! free of both). It records what the scenario asked for, with paths resolved against the
//! scenario file's directory; herd-upstream reads the files, builds the TLS configurations
//! and says in one sentence what is wrong with a file, before any load is sent. The
//! simulator ignores both: TLS changes the bytes on the wire, not a request's fate.

use std::path::PathBuf;

/// How herd's front serves: `tls = "self-signed"`, or `tls_cert` with `tls_key`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServeTls {
    /// A certificate generated at start for `localhost`, `127.0.0.1` and `::1`, with a
    /// fresh key; the clients herd runs trust it and nothing else does.
    SelfSigned,
    /// A certificate chain and its private key, PEM files of the user's.
    Files {
        /// `tls_cert`: the certificate chain, leaf first.
        cert: PathBuf,
        /// `tls_key`: the private key (PKCS#8, PKCS#1 or SEC1).
        key: PathBuf,
    },
}

/// What the front trusts when it forwards to an `https://` target.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum TargetTrust {
    /// The system's certificate store (`/etc/ssl/certs` on Debian).
    #[default]
    System,
    /// `target_ca = "ca.pem"`: the certificates in this PEM file, instead of the system's.
    CaFile(PathBuf),
    /// `target_insecure = true`: any certificate, for a test service with a throwaway one.
    /// The connection is encrypted but not authenticated.
    Insecure,
}
