//! Driving an external arm: the same arrival schedule and the same recorder as a replica
//! arm, but each logical request is handed to the adapter (`{"id":N}` at its intended
//! time) and its answer line is the final answer. Latency runs from the intended time to
//! the moment herd read the answer.

use super::{aggregator, arrivals, Driven, Progress};
use crate::external::{Answered, ExternalArm, ExternalError, NodeAdapter, NodeArmOptions};
use herd_scenario::{ExternalClient, LogicalRecord, Runtime, Scenario};
use std::io;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;
use tokio::time::{sleep_until, Instant};

fn fail(e: ExternalError) -> io::Error {
    io::Error::other(e.to_string())
}

/// An adapter that has said hello and waits for its first request.
pub(super) struct Started {
    arm: ExternalArm,
    client: String,
    policy: String,
}

/// Starts the adapter for `client` aimed at `url` and waits for its handshake (installing
/// its packages first if they are missing).
pub(super) async fn start(
    scenario: &Scenario,
    client: &ExternalClient,
    url: &str,
) -> io::Result<Started> {
    let client = match client.runtime {
        Runtime::Node => client.id,
        other => {
            return Err(io::Error::other(format!(
                "{client}: herd cannot start a {other} adapter yet"
            )))
        }
    };
    let adapter = NodeAdapter::locate(client).map_err(fail)?;
    adapter.ensure_installed(client).await.map_err(fail)?;
    let opts = NodeArmOptions {
        url: url.to_owned(),
        method: scenario.load.method.as_str().to_owned(),
        pool: scenario.client.pool_max_connections,
        timeout: scenario.client.attempt_timeout,
    };
    let cmd = adapter.command(client, &opts).map_err(fail)?;
    let arm = ExternalArm::spawn(cmd).await.map_err(fail)?;
    let policy = format!("{client}: {}", arm.policy());
    Ok(Started {
        arm,
        client: client.to_owned(),
        policy,
    })
}

/// Runs arm `index`, whose requests a real client in another program makes, from `epoch`.
pub(super) async fn drive(
    scenario: &Scenario,
    index: usize,
    started: Started,
    epoch: Instant,
    progress: Option<Progress>,
) -> io::Result<Driven> {
    let Started {
        mut arm,
        client,
        policy,
    } = started;
    // The schedule is a pure function of the seed, so the intended time of id N is
    // recomputed here rather than kept per request.
    let schedule: Vec<Duration> = arrivals(scenario)?.collect();
    let (tx, aggregate) = aggregator(index, progress);
    let record = |a: &Answered, tx: &UnboundedSender<LogicalRecord>| -> io::Result<()> {
        let at = schedule.get(a.answer.id as usize).copied().ok_or_else(|| {
            io::Error::other(format!(
                "adapter {client}: answer for unknown id {}",
                a.answer.id
            ))
        })?;
        let _ = tx.send(LogicalRecord {
            intended: at,
            latency: a.at.saturating_duration_since(epoch + at),
            ok: a.answer.ok,
            attempts: a.answer.attempts.unwrap_or(0),
        });
        Ok(())
    };
    let mut max_lag = Duration::ZERO;
    let mut next = 0usize;
    while next < schedule.len() {
        let intended: Instant = epoch + schedule[next];
        tokio::select! {
            biased;
            () = sleep_until(intended) => {
                max_lag = max_lag.max(intended.elapsed());
                arm.send(next as u64).map_err(fail)?;
                next += 1;
            }
            answered = arm.recv() => match answered {
                Some(Ok(a)) => record(&a, &tx)?,
                Some(Err(e)) => return Err(fail(e)),
                None => return Err(io::Error::other(format!("adapter {client} said done before all requests were sent"))),
            },
        }
    }
    for a in arm.finish().await.map_err(fail)? {
        record(&a, &tx)?;
    }
    drop(tx);
    let recorder = aggregate.await.map_err(io::Error::other)?;
    Ok(Driven {
        recorder,
        wall: epoch.elapsed(),
        max_lag,
        policy,
    })
}
