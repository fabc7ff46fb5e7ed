//! Proxy mode on the command line: `--target URL` (and `--settle MS`) applied to a
//! scenario, its TLS settings read and checked, the line that says where load will go, and
//! the preflight.
//!
//! herd sends load to a real service only when the scenario or a flag names it, and it
//! says so before the first request: the target, the rate per arm and how the arms are
//! scheduled. A target that does not accept connections stops the run before anything is
//! counted (exit 1, naming it), instead of turning every request into a counted 502.
//!
//! `--target URL --direct` instead drives the arms straight at the URL, with no front at
//! all: for comparing herd's driver with another load tool against the same server.

use crate::cli::BenchArgs;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_driver::Direct;
use herd_scenario::{Scenario, Target, TargetInfo, TargetUrl, Upstream};
use herd_upstream::tls::FrontTls;
use herd_upstream::PreflightError;
use std::time::Duration;

/// `--target URL`: the scenario's upstream forwards to `url`. A scenario written for the
/// model (no `target` of its own) keeps its faults and incidents but drops its capacity
/// model (workers, queue) and its rate limit, since the service has its own; a scenario
/// that names a target keeps what it says, timeouts included.
pub fn apply(u: &mut Upstream, url: Option<TargetUrl>, settle_ms: Option<f64>) -> Result<(), Fail> {
    if let Some(url) = url {
        match &mut u.target {
            Some(t) => t.url = url,
            None => {
                u.target = Some(Target::new(url));
                u.workers = 0;
                u.queue_limit = 0;
                u.rate_limit = None;
            }
        }
    }
    // A calibrated model describes the target itself: on a socket the target answers for
    // itself, so the front must not put a second copy of its limits in front of it.
    if let Some(t) = &u.target {
        if t.calibrated.is_some() {
            u.workers = 0;
            u.queue_limit = 0;
            u.rate_limit = None;
        }
    }
    if let Some(ms) = settle_ms {
        let Some(t) = &mut u.target else {
            return Err(Fail::input(anyhow!(
                "--settle applies only with a target (--target or [upstream] target)"
            )));
        };
        if !(ms.is_finite() && (0.0..=3_600_000.0).contains(&ms)) {
            return Err(Fail::input(anyhow!(
                "--settle must be between 0 and 3600000 ms, got {ms}"
            )));
        }
        t.settle = Duration::from_secs_f64(ms / 1000.0);
    }
    if let Some(t) = &u.target {
        if t.url.scheme() == herd_scenario::target::Scheme::Https {
            // A target_ca that cannot be read is bad input, found before anything is sent.
            herd_upstream::tls::target_config(&t.trust)
                .map_err(|e| Fail::input(anyhow!("target {}: {e}", t.url)))?;
        }
    }
    Ok(())
}

/// The report's record of the target.
pub fn info(t: &Target) -> TargetInfo {
    TargetInfo {
        url: t.url.to_string(),
        connect_timeout_ms: t.connect_timeout.as_millis() as u64,
        answer_timeout_ms: t.answer_timeout.as_millis() as u64,
        settle_ms: t.settle.as_millis() as u64,
    }
}

/// The line printed before a proxy run starts.
pub fn announce(s: &Scenario, t: &Target) -> String {
    let planned = match &s.load.trace {
        Some(tr) => format!("a trace replay ({})", tr.path.display()),
        None => format!(
            "{} requests each at {} req/s",
            s.load.requests,
            herd_scenario::duration::show(s.load.rate)
        ),
    };
    format!(
        "herd: forwarding to target {}: {} arm(s) one after another, {planned} (plus the retries \
         they make), {} ms settle between arms; connect timeout {} ms, answer timeout {} ms",
        t.url,
        s.arms.len(),
        t.settle.as_millis(),
        t.connect_timeout.as_millis(),
        t.answer_timeout.as_millis()
    )
}

/// Fails the run unless `t` accepts connections (exit 1, naming the target) and, for an
/// https target, completes a TLS handshake with the scenario's trust (exit 2 otherwise:
/// the scenario does not fit the service).
pub fn preflight(rt: &tokio::runtime::Runtime, t: &Target) -> Result<(), Fail> {
    rt.block_on(herd_upstream::preflight(t))
        .map_err(|e| match e {
            PreflightError::Unreachable(e) => Fail::run(anyhow!("{e}; nothing was sent")),
            PreflightError::Tls(e) => Fail::input(anyhow!("{e}; nothing was sent")),
        })
}

/// `[upstream] tls`: the front's certificate, read now (a bad file is exit 2), and, when
/// herd's own clients connect to it (`for_loopback`: `herd bench`), checked against the
/// address they use.
pub fn front_tls(u: &Upstream, for_loopback: bool) -> Result<Option<FrontTls>, Fail> {
    let Some(spec) = &u.tls else { return Ok(None) };
    let tls = FrontTls::new(spec).map_err(|e| Fail::input(anyhow!(e)))?;
    if for_loopback {
        tls.check_for("127.0.0.1")
            .map_err(|e| Fail::input(anyhow!(e)))?;
    }
    Ok(Some(tls))
}

/// `--direct`: the arms straight at `--target` (http only), no fault front; `None` without
/// it. A bad URL is bad input (exit 2).
pub fn direct(a: &BenchArgs) -> Result<Option<Direct>, Fail> {
    match (&a.target, a.direct) {
        (Some(url), true) => Direct::new(&url.to_string())
            .map(Some)
            .map_err(|e| Fail::input(anyhow!(e))),
        _ => Ok(None),
    }
}
