//! What the commands run on: the tokio runtime of the socket commands, and the one way a
//! run of every arm becomes a report, whichever engine ran it ([`herd_sim::run_arms`] or
//! [`herd_driver::run_arms`]).

use crate::emit::{left_out, stop_note};
use crate::fail::Fail;
use crate::stop::Caught;
use herd_driver::ArmRun;
use herd_scenario::{ArmReport, Recorder, Report, Scenario};
use herd_sim::SimRun;

/// A tokio runtime for the commands that touch the network, with the open-file limit
/// raised as far as allowed first (every connection is a descriptor).
pub fn runtime() -> Result<tokio::runtime::Runtime, Fail> {
    runtime_on(None)
}

/// [`runtime`] on `threads` worker threads (`None`: one per core).
pub fn runtime_on(threads: Option<usize>) -> Result<tokio::runtime::Runtime, Fail> {
    herd_upstream::fd_limit::raise();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = threads {
        builder.worker_threads(n);
    }
    builder.enable_all().build().map_err(Fail::run)
}

/// One arm's result from either engine: its report entry and its client-side recorder.
pub trait ArmResult {
    /// The arm's report entry (arm `index` of `scenario`).
    fn report(&self, scenario: &Scenario, index: usize) -> ArmReport;
    /// The client side, for the latency plot.
    fn recorder(&self) -> &Recorder;
}

impl ArmResult for SimRun {
    fn report(&self, scenario: &Scenario, index: usize) -> ArmReport {
        SimRun::report(self, scenario, index)
    }

    fn recorder(&self) -> &Recorder {
        &self.recorder
    }
}

impl ArmResult for ArmRun {
    fn report(&self, scenario: &Scenario, index: usize) -> ArmReport {
        ArmRun::report(self, scenario, index)
    }

    fn recorder(&self) -> &Recorder {
        &self.recorder
    }
}

/// The report of a run of every arm (`mode` `sim` or `real`): the arms that ran, in
/// scenario order, and, when a signal cut the run short, the stop note with the arms left
/// out. Returns the recorders of the arms reported, in the same order.
pub fn assemble<'a, R: ArmResult>(
    mode: &str,
    s: &Scenario,
    runs: &'a [Option<R>],
    caught: Option<Caught>,
) -> (Report, Vec<&'a Recorder>) {
    let ran: Vec<(usize, &R)> = runs
        .iter()
        .enumerate()
        .filter_map(|(i, r)| r.as_ref().map(|r| (i, r)))
        .collect();
    let arms = ran.iter().map(|&(i, r)| r.report(s, i)).collect();
    let recorders: Vec<&Recorder> = ran.iter().map(|(_, r)| r.recorder()).collect();
    let mut report = Report::new(mode, &s.name, s.seed, s.load.rate, arms);
    if let Some(caught) = caught {
        let left_out = left_out(s, runs.iter().map(Option::is_some));
        report = report.stopped(stop_note(caught, s, &recorders, left_out));
    }
    (report, recorders)
}

/// Each arm's report entry, or `None` unless every arm ran (`--seeds` keeps whole seeds).
pub fn reports<R: ArmResult>(s: &Scenario, runs: &[Option<R>]) -> Option<Vec<ArmReport>> {
    runs.iter()
        .enumerate()
        .map(|(i, r)| r.as_ref().map(|r| r.report(s, i)))
        .collect()
}
