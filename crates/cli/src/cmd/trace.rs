//! `herd trace synth`: a seeded example trace, written with the same generator a scenario
//! uses for `[consumers] rate` (one Poisson stream at `consumers × rate`, each unit at a
//! uniformly drawn consumer), so replaying it offers what the generated demand offers.
//! `herd trace import`: an access log as a trace, by [`herd_scenario::trace::import`].
//! Both stream into an [`Out`], so a failure half-way leaves no partial trace behind.

use crate::cli::{
    ImportArgs, LogFormatArg, SpreadArg, SynthArgs, TimeUnitArg, TraceAction, TraceArgs,
};
use crate::fail::Fail;
use crate::output::{check_writable, Out};
use anyhow::{anyhow, Context};
use herd_scenario::trace::import::{
    self, time::EpochUnit, ClfConsumer, ImportError, ImportOptions, Imported, JsonFields,
    LogFormat, Spread,
};
use herd_scenario::{Arrival, BoundedDuration, Demand};
use std::io::Write;
use std::path::Path;

/// The most lines a synthetic trace may have (about 20 GB): a typo in `--rate` should be
/// refused, not fill a disk.
const MAX_LINES: f64 = 1e9;

pub fn run(a: TraceArgs) -> Result<(), Fail> {
    match a.action {
        TraceAction::Synth(s) => synth(&s),
        TraceAction::Import(i) => import_log(&i),
    }
}

fn synth(a: &SynthArgs) -> Result<(), Fail> {
    if a.consumers == 0 {
        return Err(Fail::input(anyhow!("--consumers must be at least 1")));
    }
    if !(a.seconds.is_finite() && a.seconds > 0.0) {
        return Err(Fail::input(anyhow!(
            "--seconds must be greater than 0, got {}",
            a.seconds
        )));
    }
    if !(a.rate.is_finite() && a.rate > 0.0) {
        return Err(Fail::input(anyhow!(
            "--rate must be greater than 0, got {}",
            a.rate
        )));
    }
    let end = BoundedDuration::from_secs(a.seconds)
        .map_err(|e| Fail::input(anyhow!("--seconds {e}")))?
        .get();
    let total = a.rate * f64::from(a.consumers);
    let lines = total * a.seconds;
    if lines.is_nan() || lines > MAX_LINES {
        return Err(Fail::input(anyhow!(
            "--rate × --consumers × --seconds would write about {lines:.3e} lines; herd trace synth writes at most {MAX_LINES:e} (lower one of them)"
        )));
    }
    let out_path = out_name(a.out.as_deref());
    check_writable(&out_path).map_err(Fail::input)?;
    let mut out = Out::create(&out_path).map_err(Fail::input)?;
    let write = |out: &mut Out| -> std::io::Result<u64> {
        writeln!(
            out,
            "# herd trace synth --consumers {} --seconds {} --rate {} --seed {}",
            a.consumers, a.seconds, a.rate, a.seed
        )?;
        writeln!(out, "t_ms,consumer")?;
        let mut n = 0;
        for u in Demand::generated(Arrival::Poisson, total, u64::MAX, a.consumers, a.seed)
            .take_while(|u| u.at() < end)
        {
            writeln!(out, "{:.3},{}", u.at().as_secs_f64() * 1000.0, u.consumer)?;
            n += 1;
        }
        Ok(n)
    };
    let n = write(&mut out)
        .context("writing the trace")
        .map_err(Fail::run)?;
    out.commit().map_err(Fail::run)?;
    if let Some(p) = &a.out {
        eprintln!("wrote {n} arrivals to {}", p.display());
    }
    Ok(())
}

/// `--out`'s path for [`Out`], `-` (stdout) without one.
fn out_name(out: Option<&Path>) -> String {
    out.map_or("-".into(), |p| p.to_string_lossy().into_owned())
}

fn import_log(a: &ImportArgs) -> Result<(), Fail> {
    let format = match a.format {
        LogFormatArg::Common => LogFormat::Common,
        LogFormatArg::Combined => LogFormat::Combined,
        LogFormatArg::Json => LogFormat::Json,
    };
    let clf_consumer = match (format, a.consumer.as_deref()) {
        (LogFormat::Json, _) | (_, None | Some("remote_addr")) => ClfConsumer::RemoteAddr,
        (_, Some("remote_user")) => ClfConsumer::RemoteUser,
        (_, Some(other)) => {
            return Err(Fail::input(anyhow!(
                "--consumer `{other}`: a Common or Combined log names its consumer by `remote_addr` (the client address, the default) or `remote_user`"
            )))
        }
    };
    let opts = ImportOptions {
        format,
        clf_consumer,
        json: JsonFields {
            time: a.time_field.clone(),
            method: a.method_field.clone(),
            path: a.path_field.clone(),
            consumer: a.consumer.clone().filter(|_| format == LogFormat::Json),
            unit: match a.time_unit {
                TimeUnitArg::S => EpochUnit::Seconds,
                TimeUnitArg::Ms => EpochUnit::Millis,
            },
        },
        skip_bad_lines: a.skip_bad_lines,
        spread: a.spread.map(|s| {
            let s = match s {
                SpreadArg::Uniform => Spread::Uniform,
                SpreadArg::Poisson => Spread::Poisson,
            };
            (s, a.seed)
        }),
        fold_retries: a.fold_retries,
    };
    if a.fold_retries.is_some() && format == LogFormat::Json && a.consumer.is_none() {
        return Err(Fail::input(anyhow!(
            "--fold-retries folds a client's repeats: with --format json, name the client's field with --consumer"
        )));
    }
    let out_path = out_name(a.out.as_deref());
    check_writable(&out_path).map_err(Fail::input)?;
    let input = import::open(&a.file).map_err(Fail::input)?;
    let mut out = Out::create(&out_path).map_err(Fail::input)?;
    writeln!(out, "# herd trace import {}{}", a.file.display(), flags(a))
        .context("writing the trace")
        .map_err(Fail::run)?;
    let done = import::import(input, &a.file, &opts, &mut out).map_err(|e| match e {
        ImportError::Input(e) => Fail::input(e),
        ImportError::Output(e) => Fail::run(anyhow!(e).context("writing the trace")),
    })?;
    out.commit().map_err(Fail::run)?;
    if done.skipped > 0 {
        let lines: Vec<String> = done.first_skipped.iter().map(u64::to_string).collect();
        let more = if done.skipped > done.first_skipped.len() as u64 {
            ", …"
        } else {
            ""
        };
        eprintln!(
            "herd: skipped {} bad line{} of {} (line{} {}{more}; line {}: {})",
            done.skipped,
            if done.skipped == 1 { "" } else { "s" },
            a.file.display(),
            if done.skipped == 1 { "" } else { "s" },
            lines.join(", "),
            lines.first().map_or("", String::as_str),
            done.first_reason.as_deref().unwrap_or("?"),
        );
    }
    if done.clamped > 0 {
        eprintln!(
            "herd: {} line{} earlier than the line before, written at its time (the largest step back: {} ms)",
            done.clamped,
            if done.clamped == 1 { " was" } else { "s were" },
            done.max_step_back.as_millis()
        );
    }
    clock_warning(a, &done);
    if let Some(w) = a.fold_retries {
        eprintln!(
            "herd: folded {} request{} into the one before (same client, method and path within {} ms of it)",
            done.folded,
            if done.folded == 1 { "" } else { "s" },
            w.as_secs_f64() * 1000.0
        );
    }
    eprintln!(
        "herd: imported {} requests from {} ({} consumer{}, {} s from the first to the last){}",
        done.lines,
        a.file.display(),
        done.consumers,
        if done.consumers == 1 { "" } else { "s" },
        done.span.as_secs_f64(),
        a.out
            .as_ref()
            .map_or(String::new(), |p| format!(" to {}", p.display())),
    );
    Ok(())
}

/// The flags that change what the import writes, for the trace's first line.
fn flags(a: &ImportArgs) -> String {
    let mut s = String::new();
    if let Some(sp) = a.spread {
        s += match sp {
            SpreadArg::Uniform => " --spread uniform",
            SpreadArg::Poisson => " --spread poisson",
        };
        if matches!(sp, SpreadArg::Poisson) {
            s += &format!(" --seed {}", a.seed);
        }
    }
    if let Some(w) = a.fold_retries {
        s += &format!(" --fold-retries {}ms", w.as_secs_f64() * 1000.0);
    }
    s
}

/// A clock coarser than 1 ms puts many requests at one instant, and a replay sends them
/// at once: said, with how many shared, and what `--spread` did or would do about it.
fn clock_warning(a: &ImportArgs, done: &Imported) {
    if done.resolution <= std::time::Duration::from_millis(1) {
        return;
    }
    let clock = show_step(done.resolution);
    let s = done.sharing;
    let mean = done.lines as f64 / s.instants.max(1) as f64;
    eprintln!(
        "herd: {} has {clock} timestamps: {} requests on {} instant{}, up to {} and {mean:.1} on average at one; {} of them share their instant with another",
        a.file.display(),
        done.lines,
        s.instants,
        if s.instants == 1 { "" } else { "s" },
        s.max,
        s.shared,
    );
    match a.spread {
        Some(SpreadArg::Poisson) => eprintln!(
            "herd: spread within each {clock} instant as a Poisson process with the log's counts (sorted uniform draws, seed {})",
            a.seed
        ),
        Some(SpreadArg::Uniform) => eprintln!(
            "herd: spread evenly within each {clock} instant (the k-th of n at (k + ½)/n)"
        ),
        None => eprintln!(
            "herd: replayed as it is, each instant's requests go out at once, a burst the service never saw; \
             --spread poisson places them within their {clock} instant, or log nginx's $msec for 1 ms instants"
        ),
    }
}

/// `1 s`, `100 ms`, `10 µs`.
fn show_step(d: std::time::Duration) -> String {
    let us = d.as_micros();
    if us >= 1_000_000 && us % 1_000_000 == 0 {
        format!("{} s", us / 1_000_000)
    } else if us >= 1_000 && us % 1_000 == 0 {
        format!("{} ms", us / 1_000)
    } else {
        format!("{us} µs")
    }
}
