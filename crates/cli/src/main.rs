//! `herd`: how much load does your retry strategy put on a struggling upstream, and what
//! does the client see?
//!
//! A thin binary: clap parses flags into raw values, each command turns them into validated
//! library objects and calls the libraries. Exit codes: 0 done, 1 a run that failed,
//! 2 bad input (usage, scenario), 130 / 143 a run stopped by SIGINT / SIGTERM (see
//! [`stop`]).

mod adapters;
mod cli;
mod client_counts;
mod cmd;
mod emit;
mod engine;
mod fail;
mod flags;
mod output;
mod prepare;
mod seeds;
mod shards;
mod socket;
mod steal;
mod stop;
mod target;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_env("HERD_LOG"))
        .with_writer(std::io::stderr)
        .init();
    match cmd::run(args) {
        Ok(code) => code,
        Err(fail) => {
            eprintln!("herd: {}", fail.message());
            fail.exit_code()
        }
    }
}
