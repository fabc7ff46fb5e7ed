//! One module per subcommand; each returns `Result<(), Fail>`, or, for the runs a signal
//! can stop, the exit code.

mod adapters;
mod bench;
mod check;
mod docs;
mod emit;
mod policy;
mod prepare;
mod scenarios;
mod seeds;
mod sim;
mod target;
mod trace;
mod tune;
mod upstream;

use crate::cli::{Cli, Command};
use crate::fail::Fail;
use std::process::ExitCode;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode, Fail> {
    let done = match cli.command {
        Command::Bench(a) => return bench::run(a),
        Command::Sim(a) => return sim::run(a),
        Command::Upstream(a) => upstream::run(a),
        Command::Policy(a) => policy::run(a),
        Command::Scenarios(a) => scenarios::run(a),
        Command::Check(a) => check::run(a),
        Command::Trace(a) => trace::run(a),
        Command::Tune(a) => tune::run(a),
        Command::Completions(a) => docs::completions(a),
        Command::Man => docs::man(),
    };
    done.map(|()| ExitCode::SUCCESS)
}

/// A tokio runtime for the commands that touch the network, with the open-file limit
/// raised as far as allowed first (every connection is a descriptor).
fn runtime() -> Result<tokio::runtime::Runtime, Fail> {
    runtime_on(None)
}

/// [`runtime`] on `threads` worker threads (`None`: one per core).
fn runtime_on(threads: Option<usize>) -> Result<tokio::runtime::Runtime, Fail> {
    herd_upstream::fd_limit::raise();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    builder.enable_all().build().map_err(Fail::run)
}
