//! What can go wrong while rendering or writing a report: one enum, messages that name the
//! file.

use std::fmt;
use std::path::PathBuf;

/// A report could not be rendered or written.
///
/// No `source()`: each message already says its cause, and an error reporter that walks
/// the chain (anyhow's `{:#}`) would say it twice. The causes stay reachable in the
/// variants' fields.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReportError {
    /// A file or directory could not be created, written or renamed.
    #[error("{}: {error}", .path.display())]
    Io {
        /// The path involved.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The output path exists and is not a directory.
    #[error("{}: exists and is not a directory", .path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// The report could not be serialized.
    #[error("cannot serialize the report: {0}")]
    Json(serde_json::Error),
    /// plotters failed to draw a plot.
    #[error("cannot draw {plot}: {message}")]
    Plot {
        /// Which plot.
        plot: &'static str,
        /// plotters' message.
        message: String,
    },
    /// The inputs disagree (for example, fewer latency CDFs than arms).
    #[error("inconsistent report inputs: {0}")]
    Mismatch(String),
}

impl ReportError {
    /// A plotters error for `plot`.
    pub(crate) fn plot(plot: &'static str, e: impl fmt::Display) -> Self {
        ReportError::Plot {
            plot,
            message: e.to_string(),
        }
    }
}
