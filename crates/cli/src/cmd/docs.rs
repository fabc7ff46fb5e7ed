//! `herd completions SHELL` and `herd man`: generated from the same clap definitions that
//! parse the command line, so they can never describe a flag herd does not have.

use crate::cli::{Cli, CompletionsArgs};
use crate::fail::Fail;
use clap::CommandFactory;
use std::io::Write;

pub fn completions(a: CompletionsArgs) -> Result<(), Fail> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "herd", &mut out);
    std::io::stdout().write_all(&out).map_err(Fail::run)
}

pub fn man() -> Result<(), Fail> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut out)
        .map_err(Fail::run)?;
    std::io::stdout().write_all(&out).map_err(Fail::run)
}
