//! The whole simulator loop at a million consumers: the embedded `internet` scenario (each
//! arm on its own) cut to its first 100,000 units of work (1 s of demand), so a sample
//! takes well under a second. Throughput is in units of work, the figure `herd sim`
//! prints as "logical requests/s" (retries and consumer re-sends come on top); one arm
//! runs on one thread, so `herd sim internet` on two cores does about twice this.
//!
//! `cargo bench -p herd-sim --bench sim_loop`

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;

const UNITS: u64 = 100_000;

fn internet(c: &mut Criterion) {
    let mut scenario = herd_scenario::load("internet")
        .expect("the internet scenario is embedded")
        .scenario;
    scenario.load.requests = UNITS;
    let mut g = c.benchmark_group("internet");
    g.throughput(Throughput::Elements(UNITS));
    g.sample_size(10);
    g.warm_up_time(Duration::from_secs(1));
    g.measurement_time(Duration::from_secs(3));
    for (i, arm) in scenario.arms.iter().enumerate() {
        g.bench_with_input(BenchmarkId::new("arm", &arm.id), &i, |b, &i| {
            b.iter(|| herd_sim::simulate(&scenario, i).events)
        });
    }
    g.finish();
}

criterion_group!(benches, internet);
criterion_main!(benches);
