//! Scenario errors: what is wrong, and where (file, line, key).

use std::fmt;

/// A scenario that could not be loaded.
///
/// No `source()`: the I/O error's text is already in the message, and an error reporter
/// that walks the chain (anyhow's `{:#}`) would say it twice. The error itself stays
/// reachable in [`ScenarioError::Io`]'s `error` field.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{path}: cannot read: {error}")]
    Io {
        /// The path given.
        path: String,
        /// The I/O error.
        error: std::io::Error,
    },
    /// Neither a file nor an embedded scenario.
    #[error("no scenario file or embedded scenario named `{spec}` (embedded: {})", .embedded.join(", "))]
    NotFound {
        /// What was asked for.
        spec: String,
        /// Embedded names, for the message.
        embedded: Vec<&'static str>,
    },
    /// The file is not valid, or a value is out of range.
    #[error("{origin}{}: {message}", Place(*.line, *.col, .key.as_deref()))]
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

/// `:LINE[:COL]` when the line is known, then `: key `KEY`` when the key is.
struct Place<'a>(Option<usize>, Option<usize>, Option<&'a str>);

impl fmt::Display for Place<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = self.0 {
            write!(f, ":{l}")?;
            if let Some(c) = self.1 {
                write!(f, ":{c}")?;
            }
        }
        if let Some(k) = self.2.filter(|k| !k.is_empty()) {
            write!(f, ": key `{k}`")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error;

    #[test]
    fn the_message_says_the_cause_once_and_there_is_no_source() {
        let e = ScenarioError::Io {
            path: "s.toml".into(),
            error: std::io::Error::other("gone"),
        };
        assert_eq!(e.to_string(), "s.toml: cannot read: gone");
        assert!(e.source().is_none());
        let e = ScenarioError::Invalid {
            origin: "s.toml".into(),
            line: Some(3),
            col: Some(7),
            key: Some("upstream.error_rate".into()),
            message: "must be at most 1".into(),
        };
        assert_eq!(
            e.to_string(),
            "s.toml:3:7: key `upstream.error_rate`: must be at most 1"
        );
        let e = ScenarioError::Invalid {
            origin: "s.toml".into(),
            line: None,
            col: Some(7),
            key: Some(String::new()),
            message: "bad".into(),
        };
        assert_eq!(e.to_string(), "s.toml: bad");
    }
}
