//! `herd policy`: the delay before each retry, assuming every attempt fails retryably with
//! no Retry-After, sampled over many request histories (min / p50 / max per retry). Given a
//! hedging or breaker replica instead, its defaults and where they were read.

use crate::cli::PolicyArgs;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_retry::breaker::{BreakerConfig, BreakerProfile};
use herd_retry::hedge::{HedgePolicy, HedgeProfile};
use herd_retry::{Decision, Method, Outcome, Policy, RetryState};
use herd_scenario::PolicySpec;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use serde::Serialize;

/// The most delays `herd policy` draws (retries × samples): about 80 MB of samples.
const MAX_DRAWS: u64 = 10_000_000;

#[derive(Serialize)]
struct Row {
    retry: u32,
    min_ms: f64,
    p50_ms: f64,
    max_ms: f64,
}

#[derive(Serialize)]
struct Out {
    policy: String,
    retries: Vec<Row>,
}

/// A hedging or breaker replica: its defaults in words and its sources.
#[derive(Serialize)]
struct Guard {
    kind: &'static str,
    profile: String,
    defaults: String,
    source: &'static str,
}

fn hedge_source(p: HedgeProfile) -> &'static str {
    match p {
        HedgeProfile::GrpcHedging => "grpc/proposal A6-client-retries.md (hedgingPolicy, retryThrottling); grpc-java RetriableStream",
        HedgeProfile::PollyHedging => "Polly v8 src/Polly.Core/Hedging/HedgingConstants.cs, docs/strategies/hedging.md",
        HedgeProfile::FinagleBackup => "finagle-core client/BackupRequestFilter.scala, util/WindowedPercentileHistogram.scala; finagle-http MethodBuilder.scala",
        HedgeProfile::TowerHedge => "tower 0.5 tower/src/hedge/, tower/tests/hedge/main.rs",
        _ => "herd-retry's hedge module",
    }
}

fn breaker_source(p: BreakerProfile) -> &'static str {
    match p {
        BreakerProfile::Resilience4j => "resilience4j 2.x CircuitBreakerConfig.java, internal/CircuitBreakerStateMachine.java",
        BreakerProfile::PollyBreaker => "Polly v8 src/Polly.Core/CircuitBreaker/CircuitBreakerConstants.cs, Controller/CircuitStateController.cs",
        BreakerProfile::Hystrix => "Hystrix 1.5 HystrixCommandProperties, HystrixCircuitBreaker.java",
        BreakerProfile::Gobreaker => "sony/gobreaker v2.4.0 v2/gobreaker.go",
        BreakerProfile::Pybreaker => "pybreaker 1.4.1 src/pybreaker/__init__.py",
        BreakerProfile::Failsafe => "failsafe-rs 1.3.0 src/config.rs, src/failure_policy.rs, src/state_machine.rs, src/backoff.rs",
        BreakerProfile::Opossum => "opossum 10.0.0 lib/circuit.js, lib/status.js",
        BreakerProfile::Cockatiel => "cockatiel 4.0.0 src/CircuitBreakerPolicy.ts, src/breaker/ConsecutiveBreaker.ts (README's example)",
        BreakerProfile::GoResiliency => "eapache/go-resiliency v1.7.0 breaker/breaker.go, New(5, 1, time.Second)",
        _ => "herd-retry's breaker module",
    }
}

/// The replica `name` names, if it is a hedging or breaker profile.
fn guard(name: &str) -> Option<Guard> {
    if let Ok(p) = name.parse::<HedgeProfile>() {
        return Some(Guard {
            kind: "hedging",
            profile: p.to_string(),
            defaults: HedgePolicy::new(p).to_string(),
            source: hedge_source(p),
        });
    }
    name.parse::<BreakerProfile>().ok().map(|p| Guard {
        kind: "breaker",
        profile: p.to_string(),
        defaults: BreakerConfig::new(p).to_string(),
        source: breaker_source(p),
    })
}

pub fn run(a: PolicyArgs) -> Result<(), Fail> {
    if let Some(g) = guard(&a.profile) {
        if a.json {
            println!("{}", serde_json::to_string_pretty(&g).map_err(Fail::run)?);
        } else {
            println!("{} replica `{}`: {}", g.kind, g.profile, g.defaults);
            println!("source: {}", g.source);
            println!(
                "(an arm takes it as `{} = {{ profile = \"{}\" }}`, with overrides)",
                if g.kind == "hedging" {
                    "hedge"
                } else {
                    "breaker"
                },
                g.profile
            );
        }
        return Ok(());
    }
    let policy = build(&a)?;
    if a.samples == 0 {
        return Err(Fail::input(anyhow!("--samples must be at least 1")));
    }
    // Every delay of every sample is drawn and kept.
    let draws = u64::from(a.samples) * u64::from(policy.retries());
    if draws > MAX_DRAWS {
        return Err(Fail::input(anyhow!(
            "--retries × --samples must be at most {MAX_DRAWS} (every delay is drawn and kept), got {} × {}",
            policy.retries(),
            a.samples
        )));
    }
    let mut per_retry: Vec<Vec<f64>> =
        vec![Vec::with_capacity(a.samples as usize); policy.retries() as usize];
    let mut rng = Pcg64Mcg::seed_from_u64(a.seed);
    let outcome = Outcome::status(503);
    for _ in 0..a.samples {
        let mut st = RetryState::default();
        let mut n = 0;
        while let Decision::Retry { after } =
            policy.decide(&mut st, Method::Get, &outcome, &mut rng)
        {
            per_retry[n].push(after.as_secs_f64() * 1000.0);
            n += 1;
        }
    }
    let rows: Vec<Row> = per_retry
        .into_iter()
        .enumerate()
        .filter(|(_, v)| !v.is_empty())
        .map(|(i, mut v)| {
            v.sort_by(f64::total_cmp);
            let r3 = |x: f64| (x * 1000.0).round() / 1000.0;
            Row {
                retry: i as u32 + 1,
                min_ms: r3(v[0]),
                p50_ms: r3(v[v.len() / 2]),
                max_ms: r3(v[v.len() - 1]),
            }
        })
        .collect();
    let out = Out {
        policy: policy.to_string(),
        retries: rows,
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(Fail::run)?);
    } else {
        println!("{}", out.policy);
        println!(
            "(every attempt fails with a retryable 503, no Retry-After; {} samples)",
            a.samples
        );
        println!("| retry | min | p50 | max |");
        println!("|---:|---:|---:|---:|");
        for r in &out.retries {
            println!(
                "| {} | {} | {} | {} |",
                r.retry,
                num(r.min_ms),
                num(r.p50_ms),
                num(r.max_ms)
            );
        }
        if out.retries.is_empty() {
            println!("(no retries)");
        }
    }
    Ok(())
}

fn num(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}ms")
    } else {
        format!("{x:.1}ms")
    }
}

fn build(a: &PolicyArgs) -> Result<Policy, Fail> {
    let spec = PolicySpec {
        profile: a.profile.clone(),
        jitter: a.jitter.clone(),
        jitter_factor: a.jitter_factor,
        retries: a.retries.map(i64::from),
        base_ms: a.base_ms,
        factor: a.factor,
        cap_ms: a.cap_ms,
    };
    spec.build().map_err(|e| {
        let flag = if e.field == "policy" {
            "PROFILE".to_owned()
        } else {
            format!("--{}", e.field.replace('_', "-"))
        };
        Fail::input(anyhow!("{flag}: {}", e.message))
    })
}
