//! Scenario errors: what is wrong, and where (file, line, key).

use std::fmt;

/// A scenario that could not be loaded.
#[derive(Debug)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    Io {
        /// The path given.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Neither a file nor an embedded scenario.
    NotFound {
        /// What was asked for.
        spec: String,
        /// Embedded names, for the message.
        embedded: Vec<&'static str>,
    },
    /// The file is not valid, or a value is out of range.
    Invalid {
        /// File path or `embedded:NAME`.
        origin: String,
        /// 1-based line, when known.
        line: Option<usize>,
        /// 1-based column, when known.
        col: Option<usize>,
        /// The key path (`upstream.error_rate`), when known.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScenarioError::Io { path, source } => write!(f, "{path}: cannot read: {source}"),
            ScenarioError::NotFound { spec, embedded } => write!(
                f,
                "no scenario file or embedded scenario named `{spec}` (embedded: {})",
                embedded.join(", ")
            ),
            ScenarioError::Invalid {
                origin,
                line,
                col,
                key,
                message,
            } => {
                write!(f, "{origin}")?;
                if let Some(l) = line {
                    write!(f, ":{l}")?;
                    if let Some(c) = col {
                        write!(f, ":{c}")?;
                    }
                }
                if let Some(k) = key.as_deref().filter(|k| !k.is_empty()) {
                    write!(f, ": key `{k}`")?;
                }
                write!(f, ": {message}")
            }
        }
    }
}

/// No `source()`: the I/O error's text is already in the message, and an error reporter
/// that walks the chain (anyhow's `{:#}`) would say it twice. The error itself stays
/// reachable in [`ScenarioError::Io`]'s `source` field.
impl std::error::Error for ScenarioError {}
