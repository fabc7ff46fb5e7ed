//! Short socket runs for the commands that check the model against the real thing:
//! `herd calibrate`'s probe steps and `herd tune`'s verification of its recommendation.
//! Both run a scenario's arms through the socket engine exactly as `herd bench` does
//! (herd's front before the target, one arm after another) and only want the reports.

use crate::engine::reports;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_driver::{run_arms, RunOptions, Stop};
use herd_scenario::{ArmReport, Scenario};

/// Runs every arm of `s` on the socket; `None` when `stop` fired before all of them ran.
pub fn run(
    rt: &tokio::runtime::Runtime,
    s: &Scenario,
    stop: &Stop,
) -> Result<Option<Vec<ArmReport>>, Fail> {
    let options = RunOptions {
        sequential: true,
        ..RunOptions::default()
    };
    let runs = rt
        .block_on(run_arms(s, &options, stop))
        .map_err(|e| Fail::run(anyhow!(e)))?;
    for (i, r) in runs.iter().enumerate() {
        if let Some(r) = r {
            if r.dropped > 0 {
                return Err(Fail::run(anyhow!(
                    "arm {}: the driver dropped {} arrival(s) unsent (the target could not keep up \
                     with {} req/s); nothing was fitted",
                    s.arms[i].id,
                    r.dropped,
                    s.load.rate
                )));
            }
        }
    }
    Ok(reports(s, &runs))
}
