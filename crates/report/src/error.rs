//! What can go wrong while rendering or writing a report: one enum, messages that name the
//! file.

use std::fmt;
use std::path::PathBuf;

/// A report could not be rendered or written.
#[derive(Debug)]
#[non_exhaustive]
pub enum ReportError {
    /// A file or directory could not be created, written or renamed.
    Io {
        /// The path involved.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// The output path exists and is not a directory.
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The report could not be serialized.
    Json(serde_json::Error),
    /// plotters failed to draw a plot.
    Plot {
        /// Which plot.
        plot: &'static str,
        /// plotters' message.
        message: String,
    },
    /// The inputs disagree (for example, fewer latency CDFs than arms).
    Mismatch(String),
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Io { path, source } => write!(f, "{}: {source}", path.display()),
            ReportError::NotADirectory { path } => {
                write!(f, "{}: exists and is not a directory", path.display())
            }
            ReportError::Json(e) => write!(f, "cannot serialize the report: {e}"),
            ReportError::Plot { plot, message } => write!(f, "cannot draw {plot}: {message}"),
            ReportError::Mismatch(m) => write!(f, "inconsistent report inputs: {m}"),
        }
    }
}

/// No `source()`: each message already says its cause, and an error reporter that walks
/// the chain (anyhow's `{:#}`) would say it twice. The causes stay reachable in the
/// variants' fields.
impl std::error::Error for ReportError {}

impl ReportError {
    /// A plotters error for `plot`.
    pub(crate) fn plot(plot: &'static str, e: impl fmt::Display) -> Self {
        ReportError::Plot {
            plot,
            message: e.to_string(),
        }
    }
}
