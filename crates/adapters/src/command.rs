//! How to start an adapter, and how long to wait for it at each stage.
//!
//! Kept apart from the running arm so that a command can be built, inspected and
//! adjusted (a test shortens every bound) before anything is spawned; the defaults are
//! the bounds that keep a misbehaving adapter from ever hanging herd.

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

/// How to start an adapter for one client, and how long to wait for it.
#[derive(Clone, Debug)]
pub struct ArmCommand {
    pub(crate) client: String,
    pub(crate) program: OsString,
    pub(crate) args: Vec<OsString>,
    pub(crate) cwd: Option<PathBuf>,
    pub(crate) handshake_client: Option<String>,
    pub(crate) handshake_timeout: Duration,
    pub(crate) answer_deadline: Duration,
    pub(crate) finish_timeout: Duration,
    /// Set in the adapter's environment, beside what it inherits.
    pub(crate) envs: Vec<(OsString, OsString)>,
}

/// The variable that names, for an adapter aimed at an `https://` URL, a PEM file of the
/// certificates to trust (herd's front's own). Added within protocol version 1: an adapter
/// that ignores it still works when its runtime reads one of the variables
/// [`ArmCommand::trusting`] also sets.
pub const CA_FILE_ENV: &str = "HERD_CA_FILE";

/// The variables each runtime reads on its own for the certificates to trust, all set to
/// the same file: Node (`NODE_EXTRA_CA_CERTS`, added to its bundled roots), OpenSSL and
/// therefore Python's `ssl` and httpx, and Go's `crypto/x509` on Linux (`SSL_CERT_FILE`),
/// requests (`REQUESTS_CA_BUNDLE`, which otherwise trusts certifi's bundle only) and
/// botocore (`AWS_CA_BUNDLE`).
pub const RUNTIME_CA_ENVS: [&str; 4] = [
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "AWS_CA_BUNDLE",
];

impl ArmCommand {
    /// Runs `program` (looked up on `PATH` if it has no slash) for client `client`.
    pub fn new(client: impl Into<String>, program: impl Into<OsString>) -> Self {
        ArmCommand {
            client: client.into(),
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            handshake_client: None,
            handshake_timeout: Duration::from_secs(10),
            answer_deadline: Duration::from_secs(120),
            finish_timeout: Duration::from_secs(10),
            envs: Vec::new(),
        }
    }

    /// Appends one argument.
    pub fn with_arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Runs the program in `dir`.
    pub fn with_cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// The client id the handshake must name, when it is not [`ArmCommand::client`] (a
    /// command arm whose command line passes its own `--client`).
    pub fn with_handshake_client(mut self, id: impl Into<String>) -> Self {
        self.handshake_client = Some(id.into());
        self
    }

    /// The whole command line: the program, then its arguments.
    pub fn argv(&self) -> Vec<String> {
        std::iter::once(&self.program)
            .chain(&self.args)
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// How long to wait for the handshake line.
    ///
    /// # Default
    /// 10 s (Node cold-starts in well under one).
    pub fn with_handshake_timeout(mut self, d: Duration) -> Self {
        self.handshake_timeout = d;
        self
    }

    /// How long a request may go unanswered, from its send, before the arm fails.
    ///
    /// # Default
    /// 120 s: longer than any default retry schedule herd drives (undici's five retries
    /// with a 30 s cap), so only a hung adapter trips it.
    pub fn with_answer_deadline(mut self, d: Duration) -> Self {
        self.answer_deadline = d;
        self
    }

    /// How long, once stdin is closed and every request answered, the adapter has to say
    /// `done` and exit.
    ///
    /// # Default
    /// 10 s.
    pub fn with_finish_timeout(mut self, d: Duration) -> Self {
        self.finish_timeout = d;
        self
    }

    /// Sets `key` to `value` in the adapter's environment.
    pub fn with_env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// The adapter trusts the certificates in the PEM file `ca` (and, through the runtime
    /// variables, only those): [`CA_FILE_ENV`] and every one of [`RUNTIME_CA_ENVS`] name it.
    pub fn trusting(self, ca: &std::path::Path) -> Self {
        let mut cmd = self.with_env(CA_FILE_ENV, ca);
        for key in RUNTIME_CA_ENVS {
            cmd = cmd.with_env(key, ca);
        }
        cmd
    }

    /// What the adapter's environment gets beside what it inherits.
    pub fn envs(&self) -> &[(OsString, OsString)] {
        &self.envs
    }

    /// The client this command runs.
    pub fn client(&self) -> &str {
        &self.client
    }
}
