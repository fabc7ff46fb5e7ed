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

    /// The message, with its causes. herd's error types say their cause in their own text
    /// and so return none from `source()`; a context added on top is said before them.
    pub fn message(&self) -> String {
        let (Fail::Input(e) | Fail::Run(e)) = self;
        format!("{e:#}")
    }

    /// 2 for input, 1 for a run.
    pub fn exit_code(&self) -> ExitCode {
        match self {
            Fail::Input(_) => ExitCode::from(2),
            Fail::Run(_) => ExitCode::from(1),
        }
    }
}
