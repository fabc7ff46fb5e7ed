//! How a command fails: bad input (exit 2) or a run that went wrong (exit 1).

use std::process::ExitCode;

/// A command's failure.
#[derive(Debug)]
pub enum Fail {
    /// The user's input is wrong: usage, scenario, flags. Nothing was run or written.
    Input(anyhow::Error),
    /// The run itself failed.
    Run(anyhow::Error),
}

impl Fail {
    /// Bad input.
    pub fn input(e: impl Into<anyhow::Error>) -> Fail {
        Fail::Input(e.into())
    }

    /// A failed run.
    pub fn run(e: impl Into<anyhow::Error>) -> Fail {
        Fail::Run(e.into())
    }

    /// The message, with its causes: each cause's text once (an error that already says
    /// its cause in its own text, as `path: cannot read: why` does, would otherwise repeat
    /// it at the end of the line).
    pub fn message(&self) -> String {
        let (Fail::Input(e) | Fail::Run(e)) = self;
        let mut message = String::new();
        for cause in e.chain() {
            let text = cause.to_string();
            if message.ends_with(&text) {
                continue;
            }
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&text);
        }
        message
    }

    /// 2 for input, 1 for a run.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Fail::Input(_) => ExitCode::from(2),
            Fail::Run(_) => ExitCode::from(1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Says(&'static str, Option<std::io::Error>);

    impl std::fmt::Display for Says {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Says {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_ref().map(|e| e as _)
        }
    }

    fn not_found() -> std::io::Error {
        std::io::Error::new(std::io::ErrorKind::NotFound, "no such file")
    }

    #[test]
    fn a_cause_the_message_already_says_is_not_said_again() {
        let e = Says("x.toml: cannot read: no such file", Some(not_found()));
        assert_eq!(
            Fail::input(e).message(),
            "x.toml: cannot read: no such file"
        );
    }

    #[test]
    fn a_cause_the_message_does_not_say_is_added() {
        let e = Says("x.toml: cannot read", Some(not_found()));
        assert_eq!(Fail::run(e).message(), "x.toml: cannot read: no such file");
        let ctx = anyhow::Error::new(Says("inner", None)).context("outer");
        assert_eq!(Fail::run(ctx).message(), "outer: inner");
    }
}
