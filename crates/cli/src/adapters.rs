//! Before `herd bench` sends any request: every arm whose client is another program is
//! set up (a built-in adapter's packages, virtual environment or build) and checked (a
//! command arm's program exists and is executable), and an arm with `options` is started
//! once to see whether its adapter accepts them.
//!
//! Everything found here is the user's input or machine, so it exits 2 naming the arm,
//! before any arm runs: a typo in `options` must not surface after the replicas' round.
//! An adapter refuses options by exiting with status 2 before its handshake
//! (`docs/external-arm-protocol.md`); only arms with `options` are probed, since a probe
//! costs one start of the adapter (the Node adapter warms up for about a second).

use crate::fail::Fail;
use anyhow::anyhow;
use herd_adapters::{ExternalArm, ExternalError};
use herd_driver::arm_command;
use herd_scenario::Scenario;
use tokio::runtime::Runtime;

/// A URL nothing listens on: a probe must answer its handshake without sending.
const PROBE_URL: &str = "http://127.0.0.1:9/";

/// Sets up and checks every external arm of `s`; see the module docs.
pub fn preflight(rt: &Runtime, s: &Scenario) -> Result<(), Fail> {
    for arm in s.arms.iter().filter(|a| a.client.is_external()) {
        let blame = |e: ExternalError| -> Fail {
            match &e {
                ExternalError::OptionsRefused { stderr, .. } => Fail::input(anyhow!(
                    "arm {}: the adapter refused its options: {}",
                    arm.id,
                    tail(stderr)
                )),
                // A command arm's errors already name the arm.
                ExternalError::Program { .. } => Fail::input(anyhow!("{e}")),
                _ => Fail::input(anyhow!("arm {}: {e}", arm.id)),
            }
        };
        let cmd = rt
            .block_on(arm_command(s, arm, PROBE_URL))
            .map_err(|e| match e {
                ExternalError::Install { .. } => Fail::run(anyhow!("arm {}: {e}", arm.id)),
                e => blame(e),
            })?;
        if arm.options.is_none() {
            continue;
        }
        rt.block_on(async {
            match ExternalArm::spawn(cmd).await {
                Ok(running) => {
                    running.stop().await;
                    Ok(())
                }
                Err(e @ ExternalError::OptionsRefused { .. }) => Err(blame(e)),
                Err(e) => Err(Fail::run(anyhow!("arm {}: {e}", arm.id))),
            }
        })?;
    }
    Ok(())
}

/// The adapter's stderr on one line; what it printed last is what names the key.
fn tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return "(it exited with status 2 before its handshake and printed nothing)".into();
    }
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// A failed run's error: exit 2 if an adapter refused its options or command line during
/// the run (an arm without `options` is not probed), exit 1 otherwise.
pub fn classify(e: anyhow::Error) -> Fail {
    let refused = e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<ExternalError>())
            .is_some_and(|x| matches!(x, ExternalError::OptionsRefused { .. }))
    });
    if refused {
        Fail::input(e)
    } else {
        Fail::run(e)
    }
}
