//! Every arm of a scenario on the socket: the driver's engine, under `herd bench` and
//! `herd bench --seeds`.
//!
//! Arms run round by round ([`rounds`]): the ones herd runs in its own process together,
//! each client in another program alone, and each alone when asked or when they share a
//! real service. A round not begun when the stop fires is not started.
//!
//! Running out of file descriptors stops the run as a signal would: every socket a run
//! opens is a descriptor, and a connect or accept that fails for want of one says nothing
//! about the retry strategy, so counting it as a failed request would report the machine.
//! The arms end where they are, and the run fails with the limit and how to raise it,
//! holding what finished ([`RunError::OutOfFiles`]).

use crate::{run_arm, ArmRun, CommonStart, Direct, Progress, Stop};
use herd_scenario::Scenario;
use std::io;
use std::sync::Arc;

/// How [`run_arms`] runs a scenario's arms, besides the scenario itself.
#[derive(Clone, Default)]
pub struct RunOptions {
    /// Each arm alone, one after another (`--sequential`).
    pub sequential: bool,
    /// Drive this URL instead of herd's own upstream (`--direct`).
    pub direct: Option<Direct>,
    /// Where progress goes while the arms run.
    pub progress: Option<Progress>,
    /// A shard's common start (`--start-at`): each arm begins its schedule at that instant,
    /// once it is ready (see [`CommonStart`]).
    pub start_at: Option<CommonStart>,
}

/// Why [`run_arms`] failed: an arm's task panicked, or an arm's run failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An arm's task panicked.
    #[error("arm task panicked")]
    Panicked(#[source] tokio::task::JoinError),
    /// Arm `arm` (its id) failed with `error`.
    #[error("arm {arm}")]
    Arm {
        /// The arm's id.
        arm: String,
        /// What went wrong.
        #[source]
        error: io::Error,
    },
    /// The process ran out of file descriptors: `sentence` says the limit and how to raise
    /// it ([`herd_upstream::fd_limit::exhausted`]); `partial` holds what the arms had
    /// finished when the run stopped on it, if it got that far.
    #[error("{sentence}")]
    OutOfFiles {
        /// The limit and how to raise it.
        sentence: String,
        /// The arms' runs, as [`run_arms`] returns them, each partial.
        partial: Option<Partial>,
    },
}

/// A run cut short, one entry per arm as [`run_arms`] returns them.
pub struct Partial(pub Vec<Option<ArmRun>>);

impl std::fmt::Debug for Partial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ran = self.0.iter().filter(|r| r.is_some()).count();
        write!(f, "Partial({ran} of {} arms ran)", self.0.len())
    }
}

/// Runs the arms of `s` round by round (see [`rounds`]) until done or `stop` fires; a
/// round not begun by then is not started. One entry per arm, in scenario order: `None` if
/// it did not run.
pub async fn run_arms(
    s: &Scenario,
    options: &RunOptions,
    stop: &Stop,
) -> Result<Vec<Option<ArmRun>>, RunError> {
    // The run's own stop: the caller's, or running out of descriptors.
    let (before, _) = herd_upstream::fd_limit::ran_out();
    let run_stop = stop.child_token();
    let watch = tokio::spawn(stop_when_out_of_files(before, run_stop.clone()));
    let out = run_rounds(s, options, &run_stop).await;
    watch.abort();
    let out = out?;
    match herd_upstream::fd_limit::ran_out() {
        (after, Some(sentence)) if after > before && !stop.is_cancelled() => {
            Err(RunError::OutOfFiles {
                sentence,
                partial: Some(Partial(out)),
            })
        }
        _ => Ok(out),
    }
}

/// How often a run looks whether the process has run out of descriptors.
const FILES_TICK: std::time::Duration = std::time::Duration::from_millis(10);

/// Fires `stop` once the process has counted more exhaustions than `before`.
async fn stop_when_out_of_files(before: u64, stop: Stop) {
    let mut tick = tokio::time::interval(FILES_TICK);
    loop {
        tick.tick().await;
        if herd_upstream::fd_limit::ran_out().0 > before {
            stop.cancel();
            return;
        }
    }
}

/// [`run_arms`] with the run's own stop.
async fn run_rounds(
    s: &Scenario,
    options: &RunOptions,
    stop: &Stop,
) -> Result<Vec<Option<ArmRun>>, RunError> {
    let shared = Arc::new(s.clone());
    let mut out: Vec<Option<ArmRun>> = (0..s.arms.len()).map(|_| None).collect();
    let settle = s.upstream.target.as_ref().map(|t| t.settle);
    for (n, round) in rounds(s, options.sequential).into_iter().enumerate() {
        if let Some(pause) = settle.filter(|_| n > 0) {
            // Let the service drain the previous arm's work before the next one starts.
            tokio::select! {
                () = stop.cancelled() => {}
                () = tokio::time::sleep(pause) => {}
            }
        }
        if stop.is_cancelled() {
            break;
        }
        let handles: Vec<_> = round
            .iter()
            .map(|&i| {
                let (s, progress, stop) = (shared.clone(), options.progress.clone(), stop.clone());
                // Only the first round waits for the common start: a later round begins
                // when the one before it ends, past that instant.
                let start = options.start_at.clone().filter(|_| n == 0);
                let direct = options.direct.clone();
                (
                    i,
                    tokio::spawn(async move {
                        run_arm(&s, i, direct.as_ref(), start.as_ref(), progress, stop).await
                    }),
                )
            })
            .collect();
        for (i, h) in handles {
            match h.await.map_err(RunError::Panicked)? {
                Ok(run) => out[i] = run,
                // An arm that broke while stopping (its adapter got the signal too) is
                // left out of the partial report rather than failing it.
                Err(e) if stop.is_cancelled() => {
                    eprintln!("herd: arm {}: {e} (while stopping; left out)", s.arms[i].id);
                }
                // Out of descriptors: the sentence with the limit and how to raise it.
                Err(error) => {
                    let arm = s.arms[i].id.clone();
                    return Err(match herd_upstream::fd_limit::exhausted(&error) {
                        Some(sentence) => RunError::OutOfFiles {
                            sentence: format!("arm {arm}: {sentence}"),
                            partial: None,
                        },
                        None => RunError::Arm { arm, error },
                    });
                }
            }
        }
    }
    Ok(out)
}

/// Which arms run together, round after round: with `sequential` or a target (arms sharing
/// a real service would shape each other's results), each alone; otherwise
/// every arm herd runs in its own process (replicas and Rust peers) at once, then each arm
/// whose client is another program alone. An external client's timing is that program's
/// CPU, which herd does not schedule: five Node processes beside eight arms on two cores
/// measured the machine (a 30-request retry wave of axios reached the wire 44 ms late
/// instead of 19).
pub fn rounds(s: &Scenario, sequential: bool) -> Vec<Vec<usize>> {
    let (external, own): (Vec<usize>, Vec<usize>) =
        (0..s.arms.len()).partition(|&i| s.arms[i].client.is_external());
    if sequential || s.upstream.target.is_some() {
        return (0..s.arms.len()).map(|i| vec![i]).collect();
    }
    let mut r = vec![];
    if !own.is_empty() {
        r.push(own);
    }
    r.extend(external.into_iter().map(|i| vec![i]));
    r
}
