//! Stopping `herd bench` and `herd sim` on SIGINT or SIGTERM with a report of what finished.
//!
//! A run can be long (minutes for `herd bench peers --sequential`), and before this a
//! Ctrl-C killed herd with nothing to show and, on SIGTERM, left the Node adapter running.
//! Now the first signal fires a [`Stop`]: the drivers send nothing more and abort what is in
//! flight, adapters are ended, and the command reports the finished part as a partial run
//! and exits 128 + the signal (130 for SIGINT, 143 for SIGTERM), as a shell expects of a
//! program a signal ended. A second signal means "now": herd exits at once with that
//! signal's code and writes nothing (adapters then see their stdin close and their parent
//! go, and exit on their own).
//!
//! The handlers live on a thread of their own with a small runtime, so they work the same
//! whether the command runs on tokio (`bench`) or on plain threads (`sim`), and they are
//! installed before the run starts, so a signal during set-up (an adapter's `npm ci` or
//! handshake) is caught too.

use crate::fail::Fail;
use anyhow::Context;
use herd_driver::Stop;
use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

/// The two signals that stop a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    /// SIGINT (Ctrl-C).
    Int,
    /// SIGTERM.
    Term,
}

impl Signal {
    /// `SIGINT` or `SIGTERM`.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
        }
    }

    /// 128 + the signal number.
    pub fn code(self) -> u8 {
        match self {
            Signal::Int => 130,
            Signal::Term => 143,
        }
    }
}

/// The first signal and when it came.
#[derive(Clone, Copy, Debug)]
pub struct Caught {
    /// Which one.
    pub signal: Signal,
    /// From the handlers' installation (the start of the command) to the signal.
    pub after: Duration,
}

/// Installed handlers: the stops they fire (the socket driver's [`Stop`] and the
/// simulator's [`herd_sim::Stop`], fired together), and what they caught.
pub struct Signals {
    stop: Stop,
    sim: herd_sim::Stop,
    caught: Arc<OnceLock<Caught>>,
}

impl Signals {
    /// Installs the handlers (they replace the default "die at once") and returns once they
    /// are in place.
    pub fn install() -> Result<Signals, Fail> {
        let stop = Stop::new();
        let sim = herd_sim::Stop::new();
        let triggers = Triggers(stop.clone(), sim.clone());
        let caught = Arc::new(OnceLock::new());
        let first = caught.clone();
        let (ready_tx, ready) = std::sync::mpsc::channel::<std::io::Result<()>>();
        std::thread::Builder::new()
            .name("herd-signals".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                rt.block_on(listen(triggers, first, Instant::now(), ready_tx));
            })
            .context("cannot start the signal thread")
            .map_err(Fail::run)?;
        ready
            .recv()
            .context("the signal thread ended early")
            .and_then(|r| r.context("cannot install the SIGINT/SIGTERM handlers"))
            .map_err(Fail::run)?;
        Ok(Signals { stop, sim, caught })
    }

    /// The stop the first signal fires.
    pub fn stop(&self) -> Stop {
        self.stop.clone()
    }

    /// The same stop, for the simulator.
    pub fn sim_stop(&self) -> herd_sim::Stop {
        self.sim.clone()
    }

    /// The first signal, if one came.
    pub fn caught(&self) -> Option<Caught> {
        self.caught.get().copied()
    }

    /// 0, or 128 + the first signal.
    pub fn exit_code(&self) -> ExitCode {
        self.caught()
            .map_or(ExitCode::SUCCESS, |c| ExitCode::from(c.signal.code()))
    }
}

/// What the first signal fires: the driver's stop and the simulator's.
struct Triggers(Stop, herd_sim::Stop);

impl Triggers {
    fn fire(&self) {
        self.0.cancel();
        self.1.fire();
    }
}

/// The handler loop: the first signal fires the stop, the second exits.
#[cfg(unix)]
async fn listen(
    trigger: Triggers,
    first: Arc<OnceLock<Caught>>,
    since: Instant,
    ready: std::sync::mpsc::Sender<std::io::Result<()>>,
) {
    use tokio::signal::unix::{signal, SignalKind};
    let (mut int, mut term) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(int), Ok(term)) => (int, term),
        (Err(e), _) | (_, Err(e)) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let _ = ready.send(Ok(()));
    loop {
        let signal = tokio::select! {
            _ = int.recv() => Signal::Int,
            _ = term.recv() => Signal::Term,
        };
        let name = signal.name();
        if first
            .set(Caught {
                signal,
                after: since.elapsed(),
            })
            .is_err()
        {
            eprintln!("herd: second {name}: exiting at once, without a report");
            std::process::exit(i32::from(signal.code()));
        }
        eprintln!(
            "herd: {name}: stopping; the report will cover what finished (again to exit at once)"
        );
        trigger.fire();
    }
}

/// Elsewhere, Ctrl-C only.
#[cfg(not(unix))]
async fn listen(
    trigger: Triggers,
    first: Arc<OnceLock<Caught>>,
    since: Instant,
    ready: std::sync::mpsc::Sender<std::io::Result<()>>,
) {
    let _ = ready.send(Ok(()));
    loop {
        if tokio::signal::ctrl_c().await.is_err() {
            return;
        }
        let signal = Signal::Int;
        if first
            .set(Caught {
                signal,
                after: since.elapsed(),
            })
            .is_err()
        {
            eprintln!("herd: second Ctrl-C: exiting at once, without a report");
            std::process::exit(i32::from(signal.code()));
        }
        eprintln!(
            "herd: Ctrl-C: stopping; the report will cover what finished (again to exit at once)"
        );
        trigger.fire();
    }
}
