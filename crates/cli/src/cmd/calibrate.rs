//! `herd calibrate`: probe a service with a short stepped no-retry run, fit the model that
//! reproduces it, and write the scenario with that model.
//!
//! `herd tune` and `herd sim` answer for the model in `[upstream]`. Beside a target that
//! model is whatever the scenario says, which is rarely the service; calibration measures
//! the service at a few offered rates (open loop, constant arrivals, one arm that never
//! retries, so every failure is one rejection and the load is exactly what was offered)
//! and fits workers, service time, queue, shedding, a rate limiter and the round trip
//! before the service to it in the simulator ([`herd_tune::calibrate`]). The written scenario says `calibrated = "..."`
//! beside its target, which is what `herd tune` asks for before it answers for a service.

use crate::cli::CalibrateArgs;
use crate::fail::Fail;
use crate::stop::Signals;
use crate::{engine, socket, target};
use anyhow::{anyhow, Context};
use herd_scenario::{load, Arrival, Scenario, Shed};
use herd_tune::calibrate::{fit, report, FitReport, Probe, Step};
use std::time::Duration;

/// Fractions of the limit the planned steps offer.
const FRACTIONS: [f64; 8] = [0.1, 0.25, 0.5, 0.75, 0.9, 1.1, 1.25, 1.5];

/// The pause between steps, so a queue drains and a bucket refills before the next.
const PAUSE: Duration = Duration::from_millis(400);

/// A step whose driver fell further behind its schedule than this (ms) is measured again.
const LAG_MS: f64 = 20.0;

/// Tries per step at most.
const TRIES: u32 = 3;

pub fn run(a: CalibrateArgs) -> Result<(), Fail> {
    let loaded = load(&a.scenario).map_err(Fail::input)?;
    let s = loaded.scenario;
    herd_report::check_dir(&a.out)
        .with_context(|| format!("--out {}", a.out.display()))
        .map_err(Fail::input)?;
    if !(a.step_secs.is_finite() && (0.2..=60.0).contains(&a.step_secs)) {
        return Err(Fail::input(anyhow!(
            "--step-secs must be between 0.2 and 60, got {}",
            a.step_secs
        )));
    }
    if a.max_requests < 100 {
        return Err(Fail::input(anyhow!(
            "--max-requests must be at least 100, got {}",
            a.max_requests
        )));
    }
    let rates = planned(&a)?;
    let mut probe_s = probe_scenario(&s)?;
    target::apply(&mut probe_s.upstream, a.target.clone(), None)?;
    if let Some(t) = &mut probe_s.upstream.target {
        // The service is probed alone: no model of herd's in front of it.
        t.calibrated = None;
        probe_s.upstream.workers = 0;
        probe_s.upstream.queue_limit = 0;
        probe_s.upstream.rate_limit = None;
    }
    let probed = probe_s
        .upstream
        .target
        .as_ref()
        .map_or_else(|| "herd's own upstream".to_owned(), |t| t.url.to_string());
    let rt = engine::runtime()?;
    if let Some(t) = &probe_s.upstream.target {
        target::preflight(&rt, t)?;
    }
    let signals = Signals::install()?;
    let stop = signals.stop();
    let mut budget = a.max_requests;
    let mut steps: Vec<Step> = vec![];
    let mut step = |rate: f64, secs: f64, budget: &mut u64| -> Result<Option<Step>, Fail> {
        let n = ((rate * secs).round() as u64).clamp(20, (*budget).max(20));
        *budget = budget.saturating_sub(n);
        let mut one = probe_s.clone();
        one.load.rate = rate;
        one.load.requests = n;
        if !steps.is_empty() {
            std::thread::sleep(PAUSE);
        }
        let mut tries = 1;
        let report = loop {
            let Some(mut reports) = socket::run(&rt, &one, &stop)? else {
                return Ok(None);
            };
            let r = reports.swap_remove(0);
            let lag = r.driver_lag_ms.map_or(0.0, |l| l.max);
            if lag <= LAG_MS || tries == TRIES || *budget < n {
                break r;
            }
            // Requests sent late went out bunched: the step measured the machine, not
            // the service (a bucket accepts fewer of a bunch). Measure it again.
            *budget -= n;
            tries += 1;
            if !a.quiet {
                eprintln!(
                    "  {rate:>8.1} req/s: the driver fell {lag:.0} ms behind its schedule (a busy machine); measuring the step again"
                );
            }
            std::thread::sleep(PAUSE);
        };
        let st = measured(&one, &report);
        if !a.quiet {
            eprintln!(
                "  {:>8.1} req/s × {:>5}: throughput {:>8.1} req/s, p50 {:.2} ms, p99 {:.2} ms, rejected {:.2}%",
                rate,
                n,
                st.measured.throughput_rps,
                st.measured.p50_ms,
                st.measured.p99_ms,
                st.measured.reject_ratio * 100.0
            );
        }
        steps.push(st.clone());
        Ok(Some(st))
    };
    if !a.quiet {
        eprintln!(
            "herd calibrate {}: probing {probed} with one no-retry arm, constant arrivals, at most {} requests",
            s.name, a.max_requests
        );
    }
    let rates = match rates {
        Some(r) => r,
        None => {
            // Discovery: double the rate on short steps until the service turns requests
            // away or falls behind, then plan the steps around the ceiling it showed.
            let mut r = 50.0;
            let mut first_p50 = None;
            let mut limit = None;
            while r <= 50_000.0 && budget > 100 {
                let Some(st) = step(r, (a.step_secs / 2.0).max(0.5), &mut budget)? else {
                    break;
                };
                let m = st.measured;
                let p50 = *first_p50.get_or_insert(m.p50_ms);
                if m.reject_ratio > 0.02
                    || m.throughput_rps < 0.9 * r
                    || m.p50_ms > 5.0 * p50.max(0.5)
                {
                    limit = Some(m.throughput_rps.max(r / 2.0));
                    break;
                }
                r *= 2.0;
            }
            let Some(limit) = limit else {
                return Err(Fail::run(anyhow!(
                    "the service took every rate up to {r} req/s without turning requests away or \
                     slowing down, within --max-requests {}; give --max-rate or --rates",
                    a.max_requests
                )));
            };
            FRACTIONS.iter().map(|f| f * limit).collect()
        }
    };
    // The planned steps lengthen from half of --step-secs to one and a half times it, so
    // the overloaded steps (the last) differ in length: a token bucket accepts `burst +
    // rate·t`, and only steps of different `t` tell the two apart. They share what is
    // left of the budget in proportion to their requests.
    let n = rates.len();
    let weight = |i: usize| {
        if n > 1 {
            0.5 + i as f64 / (n - 1) as f64
        } else {
            1.0
        }
    };
    let total: f64 = rates.iter().enumerate().map(|(i, r)| r * weight(i)).sum();
    let secs = a.step_secs.min(budget as f64 / total.max(1.0));
    for (i, &r) in rates.iter().enumerate() {
        if step(r, secs * weight(i), &mut budget)?.is_none() {
            break;
        }
    }
    if signals.caught().is_some() {
        eprintln!("herd: calibration stopped; nothing was written");
        return Ok(());
    }
    let probe = Probe {
        scenario: probe_s.clone(),
        steps,
    };
    let fitted = fit::fit(&probe);
    let rep = FitReport::new(&s.name, &probed, &probe, &fitted);
    let note = format!(
        "by herd calibrate against {probed}: {} steps from {:.0} to {:.0} req/s",
        probe.steps.len(),
        probe
            .steps
            .iter()
            .map(|s| s.offered_rps)
            .fold(f64::MAX, f64::min),
        probe
            .steps
            .iter()
            .map(|s| s.offered_rps)
            .fold(0.0, f64::max)
    );
    let mut text = loaded.text.clone();
    if a.target.is_some() && s.upstream.target.is_none() {
        // The probed target goes into the scenario, as the model now describes it.
        let mut doc: toml::Table = toml::from_str(&text).map_err(Fail::run)?;
        if let Some(u) = doc
            .entry("upstream")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
        {
            u.insert("target".into(), toml::Value::String(probed.clone()));
        }
        text = toml::to_string(&doc).map_err(Fail::run)?;
    }
    let text = absolute_tls_paths(&text, &s.upstream)?;
    let calibrated =
        report::calibrated_toml(&text, &fitted.model, &note).map_err(|e| Fail::run(anyhow!(e)))?;
    herd_scenario::parse(&calibrated, "calibrated.toml")
        .map_err(|e| Fail::run(anyhow!("the calibrated scenario does not parse: {e}")))?;
    let md = rep.markdown();
    let mut json = serde_json::to_vec_pretty(&rep).map_err(Fail::run)?;
    json.push(b'\n');
    let json = String::from_utf8(json).map_err(Fail::run)?;
    let svg = rep.svg().map_err(|e| Fail::run(anyhow!(e)))?;
    herd_report::write_files(
        &a.out,
        &[
            ("calibrated.toml", calibrated.as_str()),
            ("fit.md", md.as_str()),
            ("fit.json", json.as_str()),
            ("fit.svg", svg.as_str()),
        ],
    )
    .map_err(Fail::run)?;
    if !a.quiet {
        print!("{md}");
        eprintln!(
            "calibrated scenario written to {} (`herd tune` and `herd sim` use its model)",
            a.out.join("calibrated.toml").display()
        );
    }
    Ok(())
}

/// `--rates` or `--max-rate`; `None` to discover the limit.
fn planned(a: &CalibrateArgs) -> Result<Option<Vec<f64>>, Fail> {
    if let Some(list) = &a.rates {
        let rates = list
            .split(',')
            .map(|x| x.trim().parse::<f64>().ok().filter(|r| r.is_finite() && *r > 0.0))
            .collect::<Option<Vec<f64>>>()
            .ok_or_else(|| {
                Fail::input(anyhow!(
                    "--rates takes positive request rates separated by commas (50,100,200), got `{list}`"
                ))
            })?;
        return Ok(Some(rates));
    }
    match a.max_rate {
        Some(r) if !(r.is_finite() && r > 0.0) => Err(Fail::input(anyhow!(
            "--max-rate must be greater than 0, got {r}"
        ))),
        Some(r) => Ok(Some(FRACTIONS.iter().map(|f| f * r / 1.5).collect())),
        None => Ok(None),
    }
}

/// The probe's scenario: `s` with one arm that never retries, constant arrivals, no
/// consumers, trace or injected faults (the service is measured, not herd's faults).
fn probe_scenario(s: &Scenario) -> Result<Scenario, Fail> {
    let arm = herd_scenario::parse(
        "name = \"probe\"\n[[arms]]\nid = \"probe\"\npolicy = \"none\"\n",
        "probe",
    )
    .map_err(Fail::run)?
    .arms;
    let mut p = s.clone();
    p.arms = arm;
    p.consumers = None;
    p.load.trace = None;
    p.load.arrival = Arrival::Constant;
    let u = &mut p.upstream;
    u.error_rate = 0.0;
    u.reset_rate = 0.0;
    u.stall_rate = 0.0;
    u.incidents.clear();
    Ok(p)
}

/// A step's figures from its no-retry report.
fn measured(s: &Scenario, r: &herd_scenario::ArmReport) -> Step {
    let (r4, r5) = match &r.target_status {
        Some(c) => (c.s4xx, c.s5xx),
        None => {
            let limited = r.rate_limited.unwrap_or(0);
            let (mut r4, mut r5) = (0, 0);
            match s.upstream.rate_limit.map(|l| l.status) {
                Some(st) if st < 500 => r4 += limited,
                _ => r5 += limited,
            }
            if s.upstream.shed == Shed::Status503 {
                r5 += r.shed;
            }
            (r4, r5)
        }
    };
    Step {
        offered_rps: s.load.rate,
        requests: s.load.requests,
        measured: herd_tune::calibrate::fit::figures(r, s),
        rejected_4xx: r4,
        rejected_5xx: r5,
        no_answer: r.failed.saturating_sub(r4 + r5),
        front_ms: r
            .target_latency_ms
            .as_ref()
            .map(|t| (r.latency_ms.p50 - t.p50).max(0.0)),
    }
}

/// `text` with the scenario's TLS files (`target_ca`, `tls_cert`, `tls_key`) as absolute
/// paths: `calibrated.toml` is written into `--out`, where a path relative to the
/// original scenario's directory would no longer name the file.
fn absolute_tls_paths(text: &str, u: &herd_scenario::Upstream) -> Result<String, Fail> {
    let mut files = vec![];
    if let Some(herd_scenario::TargetTrust::CaFile(p)) = u.target.as_ref().map(|t| &t.trust) {
        files.push(("target_ca", p));
    }
    if let Some(herd_scenario::ServeTls::Files { cert, key }) = &u.tls {
        files.push(("tls_cert", cert));
        files.push(("tls_key", key));
    }
    if files.is_empty() {
        return Ok(text.to_owned());
    }
    let mut doc: toml::Table = toml::from_str(text).map_err(Fail::run)?;
    if let Some(up) = doc.get_mut("upstream").and_then(toml::Value::as_table_mut) {
        for (key, path) in files {
            let abs = std::path::absolute(path).unwrap_or_else(|_| path.clone());
            up.insert(
                key.into(),
                toml::Value::String(abs.to_string_lossy().into_owned()),
            );
        }
    }
    toml::to_string(&doc).map_err(Fail::run)
}

#[cfg(test)]
mod tls_path_tests {
    use super::absolute_tls_paths;

    #[test]
    fn tls_files_keep_naming_the_same_files_from_another_directory() {
        let text = "name = \"t\"\n[upstream]\ntarget = \"https://svc:8443\"\ntarget_ca = \"ca.pem\"\n\
                    tls_cert = \"/abs/front.pem\"\ntls_key = \"k.pem\"\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n";
        let s = herd_scenario::parse(text, "dir/s.toml").unwrap();
        let out = absolute_tls_paths(text, &s.upstream).unwrap();
        let again = herd_scenario::parse(&out, "elsewhere/calibrated.toml").unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            again.upstream.target.unwrap().trust,
            herd_scenario::TargetTrust::CaFile(cwd.join("dir/ca.pem"))
        );
        assert_eq!(
            again.upstream.tls,
            Some(herd_scenario::ServeTls::Files {
                cert: "/abs/front.pem".into(),
                key: cwd.join("dir/k.pem"),
            })
        );
        let plain = "name = \"t\"\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n";
        let s = herd_scenario::parse(plain, "dir/s.toml").unwrap();
        assert_eq!(absolute_tls_paths(plain, &s.upstream).unwrap(), plain);
    }
}
