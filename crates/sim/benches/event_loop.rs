//! The simulator's event queue against a plain binary heap, in "hold" steady state: pop the
//! next event, push one a random delay later, with N events pending. A binary heap
//! measured on this machine kind: 11.7M events/s at 10k pending, 2.0M at 1M.
//!
//! `cargo bench -p herd-sim --bench event_loop`

// criterion_group! generates an undocumented public function.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use herd_sim::queue::{CalendarQueue, Entry};
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Delays like the simulator's: mostly a few ms (service, network), some up to seconds
/// (backoff), in ns.
fn delay(rng: &mut Pcg64Mcg) -> u64 {
    if rng.random::<f64>() < 0.9 {
        rng.random_range(100_000..20_000_000)
    } else {
        rng.random_range(20_000_000..4_000_000_000)
    }
}

const STEPS: u64 = 100_000;

fn hold(c: &mut Criterion) {
    let mut g = c.benchmark_group("hold");
    g.throughput(Throughput::Elements(STEPS));
    g.sample_size(10);
    for &pending in &[10_000u64, 1_000_000] {
        g.bench_with_input(BenchmarkId::new("calendar", pending), &pending, |b, &n| {
            let mut rng = Pcg64Mcg::seed_from_u64(1);
            let mut q = CalendarQueue::new();
            let mut seq = 0;
            for _ in 0..n {
                seq += 1;
                q.push(Entry {
                    time: delay(&mut rng),
                    seq,
                    item: (),
                });
            }
            b.iter(|| {
                for _ in 0..STEPS {
                    let e = q.pop().expect("never empty");
                    seq += 1;
                    q.push(Entry {
                        time: e.time + delay(&mut rng),
                        seq,
                        item: (),
                    });
                }
            });
        });
        g.bench_with_input(
            BenchmarkId::new("binary_heap", pending),
            &pending,
            |b, &n| {
                let mut rng = Pcg64Mcg::seed_from_u64(1);
                let mut q = BinaryHeap::new();
                let mut seq = 0u64;
                for _ in 0..n {
                    seq += 1;
                    q.push(Reverse((delay(&mut rng), seq)));
                }
                b.iter(|| {
                    for _ in 0..STEPS {
                        let Reverse((t, _)) = q.pop().expect("never empty");
                        seq += 1;
                        q.push(Reverse((t + delay(&mut rng), seq)));
                    }
                });
            },
        );
    }
    g.finish();
}

criterion_group!(benches, hold);
criterion_main!(benches);
