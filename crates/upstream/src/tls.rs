//! TLS on both sides of the front: serving HTTPS to the arms' clients
//! ([`FrontTls`], `[upstream] tls`), and the client configuration that forwards to an
//! `https://` target or that herd's own clients use to reach an HTTPS front
//! ([`target_config`], [`FrontTls::client_config`]).
//!
//! # Why rustls with ring, and why the files are read here
//!
//! rustls needs no system library and its `ring` provider no C toolchain beyond a
//! compiler, so `cargo install` keeps working on a bare machine. The scenario crate only
//! records paths (it must stay free of sockets and TLS for the simulator); this module
//! reads them, and every way a file can be wrong is a [`TlsError`] whose message names the
//! scenario key and the file in one sentence. `herd bench` and `herd upstream` build these
//! once before anything is sent, so a bad file is exit 2 at start, never a run of 502s.
//!
//! # What a reset looks like over TLS
//!
//! The front's injected resets stay TCP resets: the connection is dropped without a TLS
//! `close_notify` and the socket closed with `SO_LINGER = 0` (see `conn`), so a client sees
//! `ECONNRESET` over TLS as over plain HTTP.

use crate::conn::Socket;
use herd_scenario::{ServeTls, TargetTrust};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig, SignatureScheme};
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

/// The names a self-signed certificate is made for: what herd's clients connect to.
const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// The only application protocol the front speaks over TLS (ALPN).
const HTTP1: &[u8] = b"http/1.1";

/// Why a TLS configuration could not be built, naming the key and the file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// The file could not be read.
    #[error("[upstream] {key} {}: cannot read it: {error}", path.display())]
    Read {
        /// The scenario key that named the file.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What the OS said.
        error: io::Error,
    },
    /// The file holds something other than what the key wants.
    #[error("[upstream] {key} {}: {what}", path.display())]
    Bad {
        /// The scenario key that named the file.
        key: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        what: String,
    },
    /// The system's certificate store holds no usable certificate.
    #[error(
        "the system's certificate store has no usable CA certificate ({0}); install \
         ca-certificates, or name the target's CA with [upstream] target_ca"
    )]
    NoSystemRoots(String),
    /// rustls refused the configuration, or a certificate could not be generated.
    #[error("{0}")]
    Setup(String),
}

/// The crypto provider herd uses everywhere: ring. rustls 0.23.48 deprecates it for
/// lacking post-quantum key exchange (aws-lc-rs has it); herd keeps ring because it builds
/// with a plain C compiler everywhere, and a load test's traffic is not a secret to keep
/// for a decade. The key exchange is X25519 or a NIST curve.
#[allow(deprecated)]
fn provider() -> Arc<CryptoProvider> {
    static P: OnceLock<Arc<CryptoProvider>> = OnceLock::new();
    P.get_or_init(|| Arc::new(rustls::crypto::ring::default_provider()))
        .clone()
}

/// Reads `path` for `key`.
fn read(key: &'static str, path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|error| TlsError::Read {
        key,
        path: path.to_owned(),
        error,
    })
}

/// Every certificate in the PEM text of `path` (at least one).
fn certs(
    key: &'static str,
    path: &Path,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let bad = |what: String| TlsError::Bad {
        key,
        path: path.to_owned(),
        what,
    };
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("not a PEM file of certificates ({e})")))?;
    if certs.is_empty() {
        return Err(bad(
            "holds no certificate (expected PEM: -----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(certs)
}

/// A client configuration over `roots`, or trusting anything with `insecure`.
fn client(roots: Option<RootCertStore>) -> Result<ClientConfig, TlsError> {
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Setup(format!("TLS client setup: {e}")))?;
    Ok(match roots {
        Some(roots) => builder.with_root_certificates(roots).with_no_client_auth(),
        None => builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider())))
            .with_no_client_auth(),
    })
}

/// A root store holding every certificate of the PEM file `path` (for `key`).
fn roots_from_file(key: &'static str, path: &Path) -> Result<RootCertStore, TlsError> {
    let pem = read(key, path)?;
    let mut roots = RootCertStore::empty();
    for (i, c) in certs(key, path, &pem)?.into_iter().enumerate() {
        roots.add(c).map_err(|e| TlsError::Bad {
            key,
            path: path.to_owned(),
            what: format!("certificate {} cannot be a trust anchor: {e}", i + 1),
        })?;
    }
    Ok(roots)
}

/// The system's store, read once per process.
fn system_roots() -> Result<RootCertStore, TlsError> {
    static ROOTS: OnceLock<Result<RootCertStore, String>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            let mut roots = RootCertStore::empty();
            let (added, _ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                let why = match found.errors.first() {
                    Some(e) => e.to_string(),
                    None => "none found".into(),
                };
                return Err(why);
            }
            Ok(roots)
        })
        .clone()
        .map_err(TlsError::NoSystemRoots)
}

/// The client configuration for forwarding to a target whose trust is `trust` (its ALPN
/// left empty: hyper-rustls sets it). Reads `target_ca` each time, the system store once.
pub fn target_config(trust: &TargetTrust) -> Result<ClientConfig, TlsError> {
    match trust {
        TargetTrust::System => client(Some(system_roots()?)),
        TargetTrust::CaFile(path) => client(Some(roots_from_file("target_ca", path)?)),
        TargetTrust::Insecure => client(None),
    }
}

/// `target_insecure = true`: any certificate from anyone. The handshake's signatures are
/// still checked, so the connection is encrypted to whoever holds the key it presented;
/// only who that is goes unchecked.
#[derive(Debug)]
struct AnyCertificate(Arc<CryptoProvider>);

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// How the front serves HTTPS: its certificate and key, and what a client of it must
/// trust (the certificates, as PEM text and as a file a client program can be pointed
/// at). Cheap to clone.
#[derive(Clone)]
pub struct FrontTls {
    acceptor: TlsAcceptor,
    /// The certificates a client must trust, PEM.
    trust_pem: Arc<[u8]>,
    /// A file holding `trust_pem`.
    trust_file: Arc<TrustFile>,
}

impl fmt::Debug for FrontTls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrontTls")
            .field("trust_file", &self.trust_file.path)
            .finish_non_exhaustive()
    }
}

/// A file of certificates to trust: the user's `tls_cert`, or a temporary file holding a
/// generated certificate, removed when the last [`FrontTls`] holding it goes.
#[derive(Debug)]
struct TrustFile {
    path: PathBuf,
    temporary: bool,
}

impl Drop for TrustFile {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

impl FrontTls {
    /// The front's TLS as the scenario says: a generated self-signed certificate, or the
    /// user's files (read and checked now).
    pub fn new(spec: &ServeTls) -> Result<FrontTls, TlsError> {
        match spec {
            ServeTls::SelfSigned => Self::self_signed(),
            ServeTls::Files { cert, key } => Self::from_files(cert, key),
        }
    }

    /// A fresh self-signed certificate for `localhost`, `127.0.0.1` and `::1`, written to
    /// a temporary file for the clients herd starts.
    pub fn self_signed() -> Result<FrontTls, TlsError> {
        let names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|s| s.to_string()).collect();
        let generated = rcgen::generate_simple_self_signed(names).map_err(|e| {
            TlsError::Setup(format!("cannot generate a self-signed certificate: {e}"))
        })?;
        let cert_pem = generated.cert.pem();
        let chain = vec![generated.cert.der().clone()];
        let key = PrivateKeyDer::Pkcs8(generated.signing_key.serialize_der().into());
        let path = temp_path();
        write_private(&path, cert_pem.as_bytes()).map_err(|error| {
            TlsError::Setup(format!(
                "cannot write the self-signed certificate to {}: {error}",
                path.display()
            ))
        })?;
        let trust_file = Arc::new(TrustFile {
            path,
            temporary: true,
        });
        let config = server(chain, key)
            .map_err(|e| TlsError::Setup(format!("self-signed certificate: {e}")))?;
        Ok(FrontTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            trust_pem: cert_pem.into_bytes().into(),
            trust_file,
        })
    }

    /// The chain in `cert` and the private key in `key` (PEM files).
    pub fn from_files(cert: &Path, key: &Path) -> Result<FrontTls, TlsError> {
        let cert_pem = read("tls_cert", cert)?;
        let chain = certs("tls_cert", cert, &cert_pem)?;
        let key_pem = read("tls_key", key)?;
        let private = PrivateKeyDer::from_pem_slice(&key_pem).map_err(|e| TlsError::Bad {
            key: "tls_key",
            path: key.to_owned(),
            what: format!(
                "holds no private key (expected PEM: PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY; {e})"
            ),
        })?;
        let config = server(chain, private).map_err(|e| TlsError::Bad {
            key: "tls_key",
            path: key.to_owned(),
            what: format!("does not go with tls_cert {}: {e}", cert.display()),
        })?;
        Ok(FrontTls {
            acceptor: TlsAcceptor::from(Arc::new(config)),
            trust_pem: cert_pem.into(),
            trust_file: Arc::new(TrustFile {
                path: cert.to_owned(),
                temporary: false,
            }),
        })
    }

    /// A PEM file of the certificates a client of this front must trust (for
    /// `NODE_EXTRA_CA_CERTS`, `SSL_CERT_FILE` and the like). It lives as long as `self`.
    pub fn trust_file(&self) -> &Path {
        &self.trust_file.path
    }

    /// A client configuration trusting this front's certificates and nothing else, with
    /// ALPN `http/1.1`: what herd's own driver connects with.
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, TlsError> {
        let mut roots = RootCertStore::empty();
        for c in certs("tls_cert", self.trust_file(), &self.trust_pem)? {
            roots.add(c).map_err(|e| TlsError::Bad {
                key: "tls_cert",
                path: self.trust_file().to_owned(),
                what: format!("its certificates cannot be trusted by a client: {e}"),
            })?;
        }
        let mut config = client(Some(roots))?;
        config.alpn_protocols = vec![HTTP1.to_vec()];
        Ok(Arc::new(config))
    }

    /// Checks that a client trusting [`FrontTls::trust_file`] accepts this front at
    /// `host` (`127.0.0.1` for the fronts of `herd bench`), with a full handshake in
    /// memory: a certificate of the user's made for another name would otherwise fail
    /// every request of the run.
    pub fn check_for(&self, host: &str) -> Result<(), TlsError> {
        let name = ServerName::try_from(host.to_owned())
            .map_err(|e| TlsError::Setup(format!("{host}: {e}")))?;
        let mut client = rustls::ClientConnection::new(self.client_config()?, name)
            .map_err(|e| TlsError::Setup(e.to_string()))?;
        let mut server = rustls::ServerConnection::new(self.acceptor.config().clone())
            .map_err(|e| TlsError::Setup(e.to_string()))?;
        let failed = |e: rustls::Error| TlsError::Bad {
            key: "tls_cert",
            path: self.trust_file().to_owned(),
            what: format!(
                "a client connecting to {host} and trusting this file refuses it ({e}); \
                 make it for {host}, or use tls = \"self-signed\""
            ),
        };
        for _ in 0..10 {
            if !client.is_handshaking() && !server.is_handshaking() {
                return Ok(());
            }
            let mut buf = Vec::new();
            client
                .write_tls(&mut buf)
                .map_err(|e| TlsError::Setup(e.to_string()))?;
            server
                .read_tls(&mut buf.as_slice())
                .map_err(|e| TlsError::Setup(e.to_string()))?;
            server.process_new_packets().map_err(failed)?;
            let mut back = Vec::new();
            server
                .write_tls(&mut back)
                .map_err(|e| TlsError::Setup(e.to_string()))?;
            client
                .read_tls(&mut back.as_slice())
                .map_err(|e| TlsError::Setup(e.to_string()))?;
            client.process_new_packets().map_err(failed)?;
        }
        Err(TlsError::Setup(format!(
            "TLS handshake with {host} in memory did not finish"
        )))
    }

    /// The TLS handshake on an accepted connection, within `within`; `None` (logged at
    /// debug) when it fails or takes longer, as a client that never sends a head does.
    pub(crate) async fn accept(
        &self,
        stream: TcpStream,
        within: Duration,
    ) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
        match tokio::time::timeout(within, self.acceptor.accept(stream)).await {
            Ok(Ok(s)) => Some(s),
            Ok(Err(e)) => {
                tracing::debug!("TLS handshake failed: {e}");
                None
            }
            Err(_) => {
                tracing::debug!("TLS handshake not done within {within:?}: closed");
                None
            }
        }
    }
}

impl Socket for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

/// A server configuration for `chain` and `key`, speaking HTTP/1.1.
fn server(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<ServerConfig, rustls::Error> {
    let mut config = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(chain, key)?;
    config.alpn_protocols = vec![HTTP1.to_vec()];
    Ok(config)
}

/// A path in the temporary directory no other herd process or front uses.
fn temp_path() -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("herd-front-{}-{n}.pem", std::process::id()))
}

/// Writes `bytes` to a new file at `path` (replacing a stale one of a dead process).
fn write_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let _ = std::fs::remove_file(path);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o644);
    }
    use std::io::Write;
    opts.open(path)?.write_all(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_signed_front_is_trusted_for_loopback_names() {
        let tls = FrontTls::self_signed().expect("self-signed");
        for host in SELF_SIGNED_NAMES {
            tls.check_for(host).expect(host);
        }
        let e = tls.check_for("example.com").unwrap_err().to_string();
        assert!(e.contains("refuses it"), "{e}");
        let file = tls.trust_file().to_owned();
        assert!(file.is_file());
        drop(tls);
        assert!(
            !file.exists(),
            "the temporary certificate goes with the front"
        );
    }

    #[test]
    fn bad_files_are_one_sentence_naming_key_and_file() {
        let dir = std::env::temp_dir().join(format!("herd-tls-unit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "not a certificate\n").unwrap();
        let e = target_config(&TargetTrust::CaFile(missing.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("[upstream] target_ca "), "{e}");
        assert!(e.contains("missing.pem: cannot read it"), "{e}");
        let e = target_config(&TargetTrust::CaFile(junk.clone()))
            .unwrap_err()
            .to_string();
        assert!(e.contains("junk.pem: holds no certificate"), "{e}");
        let e = FrontTls::from_files(&junk, &junk).unwrap_err().to_string();
        assert!(e.starts_with("[upstream] tls_cert "), "{e}");
        // A key that is not the certificate's.
        let a = rcgen::generate_simple_self_signed(vec!["a".to_string()]).unwrap();
        let b = rcgen::generate_simple_self_signed(vec!["b".to_string()]).unwrap();
        let cert = dir.join("a.pem");
        let key = dir.join("b.key");
        std::fs::write(&cert, a.cert.pem()).unwrap();
        std::fs::write(&key, b.signing_key.serialize_pem()).unwrap();
        let e = FrontTls::from_files(&cert, &key).unwrap_err().to_string();
        assert!(e.contains("does not go with tls_cert"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
