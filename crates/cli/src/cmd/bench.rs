//! `herd bench`: every arm on a real socket, each with its own upstream and pool.

use super::prepare::prepare;
use super::runtime;
use crate::cli::BenchArgs;
use crate::fail::Fail;
use crate::output::write_out;
use anyhow::Context;
use herd_net::driver::{run_arm, ArmRun};
use herd_scenario::{table, Report};
use std::time::Instant;

pub fn run(a: BenchArgs) -> Result<(), Fail> {
    let p = prepare(&a.run)?;
    let s = p.scenario;
    let quiet = a.run.quiet;
    if !quiet {
        eprintln!(
            "herd bench {}: {} arm(s), {} requests each at {} req/s{}",
            s.name,
            s.arms.len(),
            s.load.requests,
            s.load.rate,
            if a.sequential {
                ", one after another"
            } else {
                ", all at once"
            }
        );
    }
    let started = Instant::now();
    let rt = runtime()?;
    let runs: Vec<ArmRun> = rt
        .block_on(async {
            if a.sequential {
                let mut out = Vec::with_capacity(s.arms.len());
                for i in 0..s.arms.len() {
                    out.push(
                        run_arm(&s, i, None)
                            .await
                            .with_context(|| format!("arm {}", s.arms[i].id))?,
                    );
                }
                Ok::<_, anyhow::Error>(out)
            } else {
                let shared = std::sync::Arc::new(s.clone());
                let handles: Vec<_> = (0..s.arms.len())
                    .map(|i| {
                        let s = shared.clone();
                        tokio::spawn(async move { run_arm(&s, i, None).await })
                    })
                    .collect();
                let mut out = Vec::with_capacity(handles.len());
                for (i, h) in handles.into_iter().enumerate() {
                    let r = h.await.context("arm task panicked")?;
                    out.push(r.with_context(|| format!("arm {}", s.arms[i].id))?);
                }
                Ok(out)
            }
        })
        .map_err(Fail::run)?;
    let arms = runs
        .iter()
        .enumerate()
        .map(|(i, r)| r.report(&s, i))
        .collect();
    let report = Report::new("real", &s.name, s.seed, s.load.rate, arms);
    let table = table::render(&report);
    if let Some(path) = &a.run.json {
        let mut json = serde_json::to_vec_pretty(&report).map_err(Fail::run)?;
        json.push(b'\n');
        write_out(path, &json).map_err(Fail::run)?;
        if path == "-" {
            if !quiet {
                eprint!("{table}");
            }
        } else if !quiet {
            print!("{table}");
        }
    } else {
        print!("{table}");
    }
    if !quiet {
        eprintln!("wall time {:.1}s", started.elapsed().as_secs_f64());
    }
    Ok(())
}
