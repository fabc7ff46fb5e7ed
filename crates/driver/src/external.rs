//! Driving an external arm: the same arrival schedule, the same arrival loop
//! ([`super::pace`]), backlog and recorder as a replica arm, but each logical request is
//! handed to the adapter (`{"id":N}` at its intended time) and its answer line is the
//! final answer. Latency runs from the intended time to the moment herd read the answer.
//! An id that finds the backlog full (`[load] backlog` ids sent and not answered) is not
//! sent, and counts as dropped.
//!
//! A stop ends the adapter at once ([`ExternalArm::stop`]): the answers read before it are
//! the arm's partial result; requests the adapter still had are dropped.

use super::pace::{pace, Backlog, Place, Source};
use super::{arrivals, ArmRun, Finished, Lag, Progress, Tally};
use crate::Stop;
use herd_adapters::{
    command_arm, Adapter, AdapterOptions, Answered, ArmCommand, ExternalArm, ExternalError,
};
use herd_scenario::{Arm, ArmClient, BreakerReport, LogicalRecord, Scenario, ServerCounts, Unit};
use std::io;
use std::sync::Arc;
use tokio::time::Instant;

/// The error as an `io::Error` that still holds it (`get_ref` and a downcast find it),
/// so a caller can tell a refusal of the arm's options from a crash.
fn fail(e: ExternalError) -> io::Error {
    io::Error::other(e)
}

/// An adapter that has said hello and waits for its first request.
pub(super) struct Started {
    arm: ExternalArm,
    client: String,
    policy: String,
    command: Vec<String>,
}

/// The command that starts `arm`'s adapter aimed at `url`, its setup done first if
/// needed (a built-in client's packages, virtual environment or build; a command arm's
/// program checked). Everything that can go wrong here is the user's machine or input,
/// found before any request is sent.
pub async fn arm_command(
    scenario: &Scenario,
    arm: &Arm,
    url: &str,
) -> Result<ArmCommand, ExternalError> {
    arm_command_trusting(scenario, arm, url, None).await
}

/// [`arm_command`] for an `https://` `url` whose certificates are in the PEM file `ca`:
/// the adapter's environment names it in [`herd_adapters::CA_FILE_ENV`] and in the
/// variables each runtime reads on its own (see [`herd_adapters::ArmCommand::trusting`]).
pub async fn arm_command_trusting(
    scenario: &Scenario,
    arm: &Arm,
    url: &str,
    ca: Option<&std::path::Path>,
) -> Result<ArmCommand, ExternalError> {
    let cmd = arm_command_plain(scenario, arm, url).await?;
    Ok(match ca {
        Some(ca) => cmd.trusting(ca),
        None => cmd,
    })
}

async fn arm_command_plain(
    scenario: &Scenario,
    arm: &Arm,
    url: &str,
) -> Result<ArmCommand, ExternalError> {
    let opts = AdapterOptions {
        url: url.to_owned(),
        method: scenario.load.method.as_str().to_owned(),
        pool: scenario.client.pool_max_connections,
        timeout: scenario.client.attempt_timeout,
        options: arm.options.clone(),
    };
    match &arm.client {
        ArmClient::External(client) => {
            let adapter = Adapter::locate(client.id)?;
            adapter.ensure_installed(client.id).await?;
            adapter.command(client.id, &opts)
        }
        ArmClient::Command(c) => command_arm(&arm.id, c, &opts),
        _ => Err(ExternalError::UnknownClient {
            client: arm.id.clone(),
            known: vec![],
        }),
    }
}

/// A command line as a shell would take it back: arguments with anything but safe
/// characters in single quotes.
pub fn shell_words(argv: &[String]) -> String {
    let safe = |c: char| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c);
    argv.iter()
        .map(|a| {
            if !a.is_empty() && a.chars().all(safe) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Starts `arm`'s adapter aimed at `url` (trusting the certificates in `ca` for an HTTPS
/// front) and waits for its handshake (setting it up first if needed). Prints the command
/// line on stderr.
pub(super) async fn start(
    scenario: &Scenario,
    arm: &Arm,
    url: &str,
    ca: Option<&std::path::Path>,
) -> io::Result<Started> {
    let cmd = arm_command_trusting(scenario, arm, url, ca)
        .await
        .map_err(fail)?;
    let command = cmd.argv();
    eprintln!("herd: arm {}: {}", arm.id, shell_words(&command));
    let client = cmd.client().to_owned();
    let running = ExternalArm::spawn(cmd).await.map_err(fail)?;
    let policy = format!("{client}: {}", running.policy());
    Ok(Started {
        arm: running,
        client,
        policy,
        command,
    })
}

/// Runs arm `index`, whose requests a real client in another program makes, from `epoch`
/// until every answer is in or `stop` fires.
pub(super) async fn drive(
    scenario: &Scenario,
    index: usize,
    started: Started,
    epoch: Instant,
    progress: Option<Progress>,
    stop: &Stop,
) -> io::Result<ArmRun> {
    let Started {
        arm,
        client,
        policy,
        command,
    } = started;
    let tally = Tally::new(index, progress);
    // The schedule is a pure function of the seed (or the trace), so the intended time of
    // id N is computed here once rather than kept per request in flight.
    // With a shard, its own units only (ids then count the shard's units).
    let schedule: Vec<Unit> = (0u64..)
        .zip(arrivals(scenario)?)
        .filter(|(k, u)| scenario.owns(*k, u))
        .map(|(_, u)| u)
        .collect();
    let mut run = Run {
        places: (0..schedule.len()).map(|_| None).collect(),
        schedule,
        client,
        epoch,
        tally,
        next: 0,
        lag: Lag::new(),
        backlog: Backlog::new(scenario.load.backlog),
        rejected: None,
    };
    let complete = run.drive(arm, stop, scenario.load.coalesce).await?;
    let (recorder, _) = run.tally.take();
    Ok(ArmRun {
        hedging: None,
        breaker: run.rejected.map(BreakerReport::rejections),
        recorder,
        wall: epoch.elapsed(),
        lag: run.lag,
        dropped: run.backlog.dropped(),
        policy,
        complete,
        command: Some(command),
        counts: ServerCounts::new(),
        target: None,
        hops: Vec::new(),
    })
}

/// One external arm's run.
struct Run {
    schedule: Vec<Unit>,
    client: String,
    epoch: Instant,
    tally: Tally,
    /// The next id to send.
    next: usize,
    /// Measured when the id is written to the adapter: what the adapter does with it
    /// after is its own.
    lag: Lag,
    /// Ids sent and not answered yet hold a place; an id that finds the backlog full is
    /// dropped unsent and counted, as a plain arm's arrival is.
    backlog: Arc<Backlog>,
    places: Vec<Option<Place>>,
    /// Calls the library's own breaker turned away, summed over the answers that said so
    /// (`None`: no answer did, so the report has no breaker block).
    rejected: Option<u64>,
}

impl Run {
    /// Sends the schedule and collects the answers; on a stop, ends the adapter and returns
    /// `false` (the answers recorded so far stay).
    async fn drive(
        &mut self,
        mut arm: ExternalArm,
        stop: &Stop,
        coalesce: std::time::Duration,
    ) -> io::Result<bool> {
        let sent = match pace(
            &mut Sending {
                run: self,
                arm: &mut arm,
            },
            stop,
            coalesce,
        )
        .await
        {
            Ok(sent) => sent,
            // A signal to the whole process tree (a service manager stopping herd)
            // may end the adapter before herd's own stop: that is the stop, not a failure.
            Err(_) if stop.is_cancelled() => false,
            Err(e) => return Err(e),
        };
        if !sent {
            arm.stop().await;
            return Ok(false);
        }
        let mut rest = Vec::new();
        let finished = tokio::select! {
            biased;
            () = stop.cancelled() => None,
            r = arm.finish_into(&mut rest) => Some(r),
        };
        for a in &rest {
            self.record(a)?;
        }
        match finished {
            Some(Err(_)) if stop.is_cancelled() => Ok(false),
            Some(r) => r.map(|()| true).map_err(fail),
            None => {
                arm.stop().await;
                Ok(false)
            }
        }
    }

    /// One answer, as a finished logical request; its place in the backlog is free again.
    fn record(&mut self, a: &Answered) -> io::Result<()> {
        let id = a.answer.id as usize;
        let at = self.schedule.get(id).map(Unit::at).ok_or_else(|| {
            io::Error::other(format!(
                "adapter {}: answer for unknown id {}",
                self.client, a.answer.id
            ))
        })?;
        self.places[id] = None;
        if let Some(n) = a.answer.rejected.filter(|&n| n > 0) {
            *self.rejected.get_or_insert(0) += u64::from(n);
        }
        self.tally.add(&Finished {
            record: LogicalRecord {
                intended: at,
                latency: a.at.saturating_duration_since(self.epoch + at),
                ok: a.answer.ok,
                attempts: a.answer.attempts.unwrap_or(0),
            },
            lag: None,
        });
        Ok(())
    }
}

/// The arm in the arrival loop until its last id is due: ids are due at their intended
/// instants, the adapter's answers are its events.
struct Sending<'a> {
    run: &'a mut Run,
    arm: &'a mut ExternalArm,
}

impl Source for Sending<'_> {
    type Event = Option<Result<Answered, ExternalError>>;

    fn is_done(&self) -> bool {
        self.run.next >= self.run.schedule.len()
    }

    fn next_due(&self) -> Option<Instant> {
        let unit = self.run.schedule.get(self.run.next)?;
        Some(self.run.epoch + unit.at())
    }

    /// Id `next` is due: sent with its trace method and path, if it has them, when the
    /// backlog has room.
    fn due(&mut self) -> io::Result<()> {
        let run = &mut *self.run;
        let id = run.next;
        run.next += 1;
        let Some(place) = run.backlog.admit() else {
            return Ok(());
        };
        let unit = &run.schedule[id];
        run.lag.record((run.epoch + unit.at()).elapsed());
        let method = unit.method.map(|m| m.as_str());
        self.arm
            .send_request(id as u64, method, unit.path.as_deref())
            .map_err(fail)?;
        run.places[id] = Some(place);
        Ok(())
    }

    async fn event(&mut self) -> Self::Event {
        self.arm.recv().await
    }

    fn on_event(&mut self, answered: Self::Event) -> io::Result<()> {
        match answered {
            Some(Ok(a)) => self.run.record(&a),
            Some(Err(e)) => Err(fail(e)),
            None => Err(io::Error::other(format!(
                "adapter {} said done before all requests were sent",
                self.run.client
            ))),
        }
    }
}
