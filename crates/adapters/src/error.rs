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
#[derive(Debug)]
#[non_exhaustive]
pub enum ExternalError {
    /// The client id is not one this adapter offers.
    UnknownClient {
        /// The client asked for.
        client: String,
        /// The ids that exist.
        known: Vec<&'static str>,
    },
    /// A Node client was asked for, but there is no `node` on `PATH`.
    NodeNotFound {
        /// The client asked for.
        client: String,
    },
    /// The client's runtime (or a tool its setup needs) is missing.
    RuntimeMissing {
        /// The client asked for.
        client: String,
        /// What to install, in one sentence: `python3 with the venv module: apt-get
        /// install python3-venv`.
        what: String,
    },
    /// A command arm's program does not exist or cannot be run.
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
    OptionsRefused {
        /// The client asked for.
        client: String,
        /// The end of the adapter's stderr, which names the key.
        stderr: String,
    },
    /// The adapter directory (or its entry point) does not exist.
    AdapterNotFound {
        /// The client asked for.
        client: String,
        /// Where it was looked for.
        path: PathBuf,
    },
    /// Installing the adapter's dependencies failed, or they are missing.
    Install {
        /// The client asked for.
        client: String,
        /// The adapter directory.
        dir: PathBuf,
        /// What failed.
        detail: String,
    },
    /// The adapter program could not be started.
    Spawn {
        /// The client asked for.
        client: String,
        /// The program that was run.
        program: String,
        /// Why it could not start.
        source: io::Error,
    },
    /// The handshake line was missing, late, of another protocol version or another client.
    Handshake {
        /// The client asked for.
        client: String,
        /// What was wrong.
        detail: String,
        /// The end of the adapter's stderr.
        stderr: String,
    },
    /// A line on the adapter's stdout is not valid protocol.
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
    Finish {
        /// The client asked for.
        client: String,
        /// What was wrong.
        detail: String,
        /// The end of the adapter's stderr.
        stderr: String,
    },
    /// Talking to the adapter failed at the OS level.
    Io {
        /// The client asked for.
        client: String,
        /// What herd was doing.
        doing: &'static str,
        /// The error.
        source: io::Error,
    },
    /// [`send`](super::ExternalArm::send) after the arm stopped (it failed or finished).
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
fn stderr_note(f: &mut fmt::Formatter<'_>, stderr: &str) -> fmt::Result {
    let s = stderr.trim_end();
    if s.trim().is_empty() {
        return f.write_str(" (it printed nothing on stderr)");
    }
    f.write_str("; its stderr ended with:")?;
    for line in s.lines() {
        write!(f, "\n    {line}")?;
    }
    Ok(())
}

impl fmt::Display for ExternalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExternalError::UnknownClient { client, known } => write!(
                f,
                "unknown external client `{client}` (expected one of: {})",
                known.join(", ")
            ),
            ExternalError::NodeNotFound { client } => {
                write!(f, "{client} needs Node.js: `node` not found on PATH (apt-get install nodejs npm)")
            }
            ExternalError::RuntimeMissing { client, what } => write!(f, "{client} needs {what}"),
            ExternalError::Program {
                client,
                program,
                detail,
            } => write!(f, "arm {client}: program `{program}` {detail}"),
            ExternalError::OptionsRefused { client, stderr } => {
                write!(f, "adapter {client} refused its options: ")?;
                let s = stderr.trim();
                if s.is_empty() {
                    f.write_str("(exit status 2 before its handshake; it printed nothing on stderr)")
                } else {
                    f.write_str(&s.lines().collect::<Vec<_>>().join(" / "))
                }
            }
            ExternalError::AdapterNotFound { client, path } => write!(
                f,
                "{client}: adapter not found at {} (HERD_ADAPTERS names a directory like the repository's crates/adapters/kits/, HERD_NODE_ADAPTER its node/; unset both to use the adapters built into herd)",
                path.display()
            ),
            ExternalError::Install { client, dir, detail } => write!(
                f,
                "{client}: setting up the adapter in {} failed: {detail}",
                dir.display()
            ),
            ExternalError::Spawn {
                client,
                program,
                source,
            } => write!(f, "adapter {client}: could not start `{program}`: {source}"),
            ExternalError::Handshake {
                client,
                detail,
                stderr,
            } => {
                write!(f, "adapter {client}: handshake: {detail}")?;
                stderr_note(f, stderr)
            }
            ExternalError::Malformed {
                client,
                line,
                detail,
                stderr,
            } => {
                write!(f, "adapter {client}: line {line}: {detail}")?;
                stderr_note(f, stderr)
            }
            ExternalError::Exited {
                client,
                status,
                when,
                stderr,
            } => {
                write!(f, "adapter {client} exited {when} ({status})")?;
                stderr_note(f, stderr)
            }
            ExternalError::NoAnswer {
                client,
                id,
                waited,
                stderr,
            } => {
                write!(
                    f,
                    "adapter {client}: no answer for request {id} within {} ms",
                    waited.as_millis()
                )?;
                stderr_note(f, stderr)
            }
            ExternalError::Finish {
                client,
                detail,
                stderr,
            } => {
                write!(f, "adapter {client}: finishing: {detail}")?;
                stderr_note(f, stderr)
            }
            ExternalError::Io {
                client,
                doing,
                source,
            } => write!(f, "adapter {client}: {doing}: {source}"),
            ExternalError::Stopped { client } => {
                write!(f, "adapter {client}: already stopped")
            }
        }
    }
}

/// No `source()`: each message already says its cause, and an error reporter that walks
/// the chain (anyhow's `{:#}`) would say it twice. The I/O errors stay reachable in the
/// `Spawn` and `Io` variants' fields.
impl std::error::Error for ExternalError {}
