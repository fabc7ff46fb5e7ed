//! One module per subcommand; each returns `Result<(), Fail>`, or, for the runs a signal
//! can stop, the exit code. No command calls another: what several share (the engines'
//! runtime and report, `--seeds`, the output path, the scenario's preparation) lives
//! beside this module, in the crate's root.

mod bench;
mod calibrate;
mod check;
mod docs;
mod merge;
mod policy;
mod scenarios;
mod sim;
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
        Command::Calibrate(a) => calibrate::run(a),
        Command::Merge(a) => merge::run(a),
        Command::Completions(a) => docs::completions(a),
        Command::Man => docs::man(),
    };
    done.map(|()| ExitCode::SUCCESS)
}
