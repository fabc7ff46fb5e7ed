//! What can go wrong with an external arm, always said with the client's name.
//!
//! The messages are meant to be read by someone who only ran `herd bench`: which client,
//! what happened, and what the adapter itself said on stderr (its last 4 KiB), because
//! that is nearly always where the real cause is.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::time::Duration;

/// An external arm failed, or could not start.
///
/// No `source()`: each message already says its cause (the I/O errors of `Spawn` and `Io`
/// included), and an error reporter that walks the chain (anyhow's `{:#}`) would say it
/// twice. The I/O errors stay reachable in those variants' `error` fields.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExternalError {
    /// The client id is not one this adapter offers.
    #[error("unknown external client `{client}` (expected one of: {})", .known.join(", "))]
    UnknownClient {
        /// The client asked for.
        client: String,
        /// The ids that exist.
        known: Vec<&'static str>,
    },
    /// A Node client was asked for, but there is no `node` on `PATH`.
    #[error("{client} needs Node.js: `node` not found on PATH (apt-get install nodejs npm)")]
    NodeNotFound {
        /// The client asked for.
        client: String,
    },
    /// The client's runtime (or a tool its setup needs) is missing.
    #[error("{client} needs {what}")]
    RuntimeMissing {
        /// The client asked for.
        client: String,
        /// What to install, in one sentence: `python3 with the venv module: apt-get
        /// install python3-venv`.
        what: String,
    },
    /// A command arm's program does not exist or cannot be run.
    #[error("arm {client}: program `{program}` {detail}")]
    Program {
        /// The arm.
        client: String,
        /// The program as written.
        program: String,
        /// What is wrong with it.
        detail: String,
    },
    /// The adapter exited with status 2 before its handshake: it refused its
    /// `--options` (or its command line).
    #[error("adapter {client} refused its options: {}", Refused(.stderr))]
    OptionsRefused {
        /// The client asked for.
        client: String,
        /// The end of the adapter's stderr, which names the key.
        stderr: String,
    },
    /// The adapter directory (or its entry point) does not exist.
    #[error("{client}: adapter not found at {} (HERD_ADAPTERS names a directory like the repository's crates/adapters/kits/, HERD_NODE_ADAPTER its node/; unset both to use the adapters built into herd)", .path.display())]
    AdapterNotFound {
        /// The client asked for.
        client: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Installing the adapter's dependencies failed, or they are missing.
    #[error("{client}: setting up the adapter in {} failed: {detail}", .dir.display())]
    Install {
        /// The client asked for.
        client: String,
        /// The adapter directory.
        dir: PathBuf,
        /// What failed.
        detail: String,
    },
    /// The adapter program could not be started.
    #[error("adapter {client}: could not start `{program}`: {error}")]
    Spawn {
        /// The client asked for.
        client: String,
        /// The program that was run.
        program: String,
        /// Why it could not start.
        error: io::Error,
    },
    /// The handshake line was missing, late, of another protocol version or another client.
    #[error("adapter {client}: handshake: {detail}{}", Tail(.stderr))]
    Handshake {
        /// The client asked for.
        client: String,
        /// What was wrong.
        detail: String,
        /// The end of the adapter's stderr.
        stderr: String,
    },
    /// A line on the adapter's stdout is not valid protocol.
    #[error("adapter {client}: line {line}: {detail}{}", Tail(.stderr))]
    Malformed {
        /// The client asked for.
        client: String,
        /// 1-based line number on the adapter's stdout.
        line: u64,
        /// What was expected and what came.
        detail: String,
        /// The end of the adapter's stderr.
        stderr: String,
    },
    /// The adapter exited (or closed stdout) before it was done.
    #[error("adapter {client} exited {when} ({status}){}", Tail(.stderr))]
    Exited {
        /// The client asked for.
        client: String,
        /// Its exit status, as text (`exit status: 1`, `signal: 9`, `unknown`).
        status: String,
        /// When: `before its handshake`, `with 3 requests unanswered`, ….
        when: String,
        /// The end of the adapter's stderr.
        stderr: String,
    },
    /// A request got no answer within the deadline.
    #[error("adapter {client}: no answer for request {id} within {} ms{}", .waited.as_millis(), Tail(.stderr))]
    NoAnswer {
        /// The client asked for.
        client: String,
        /// The request's id.
        id: u64,
        /// How long herd waited.
        waited: Duration,
        /// The end of the adapter's stderr.
        stderr: String,
    },
    /// After stdin was closed, the adapter did not say `done` and exit in time.
    #[error("adapter {client}: finishing: {detail}{}", Tail(.stderr))]
    Finish {
        /// The client asked for.
        client: String,
        /// What was wrong.
        detail: String,
        /// The end of the adapter's stderr.
        stderr: String,
    },
    /// Talking to the adapter failed at the OS level.
    #[error("adapter {client}: {doing}: {error}")]
    Io {
        /// The client asked for.
        client: String,
        /// What herd was doing.
        doing: &'static str,
        /// The error.
        error: io::Error,
    },
    /// [`send`](super::ExternalArm::send) after the arm stopped (it failed or finished).
    #[error("adapter {client}: already stopped")]
    Stopped {
        /// The client asked for.
        client: String,
    },
}

impl ExternalError {
    /// The client this error is about.
    pub fn client(&self) -> &str {
        match self {
            ExternalError::UnknownClient { client, .. }
            | ExternalError::NodeNotFound { client }
            | ExternalError::RuntimeMissing { client, .. }
            | ExternalError::Program { client, .. }
            | ExternalError::OptionsRefused { client, .. }
            | ExternalError::AdapterNotFound { client, .. }
            | ExternalError::Install { client, .. }
            | ExternalError::Spawn { client, .. }
            | ExternalError::Handshake { client, .. }
            | ExternalError::Malformed { client, .. }
            | ExternalError::Exited { client, .. }
            | ExternalError::NoAnswer { client, .. }
            | ExternalError::Finish { client, .. }
            | ExternalError::Io { client, .. }
            | ExternalError::Stopped { client } => client,
        }
    }

    /// The end of the adapter's stderr, if this error carries it.
    pub fn stderr(&self) -> Option<&str> {
        match self {
            ExternalError::Handshake { stderr, .. }
            | ExternalError::OptionsRefused { stderr, .. }
            | ExternalError::Malformed { stderr, .. }
            | ExternalError::Exited { stderr, .. }
            | ExternalError::NoAnswer { stderr, .. }
            | ExternalError::Finish { stderr, .. } => Some(stderr),
            _ => None,
        }
    }
}

/// `; its stderr ended with:` and the indented tail, or a note that there was none.
struct Tail<'a>(&'a str);

impl fmt::Display for Tail<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0.trim_end();
        if s.trim().is_empty() {
            return f.write_str(" (it printed nothing on stderr)");
        }
        f.write_str("; its stderr ended with:")?;
        for line in s.lines() {
            write!(f, "\n    {line}")?;
        }
        Ok(())
    }
}

/// What an adapter that refused its options said: its stderr on one line, or a note that
/// it said nothing.
struct Refused<'a>(&'a str);

impl fmt::Display for Refused<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.0.trim();
        if s.is_empty() {
            f.write_str("(exit status 2 before its handshake; it printed nothing on stderr)")
        } else {
            f.write_str(&s.lines().collect::<Vec<_>>().join(" / "))
        }
    }
}
