//! The markdown table: the seed's columns (arm, p50, p99, hard-fail, server RPS multiplier)
//! plus p999, the whole-run load multiplier and the 100 ms burst.

use crate::report::Report;
use std::fmt::Write;

/// Renders the report as a markdown table followed by each arm's policy.
pub fn render(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| arm | p50 | p99 | p999 | hard-fail | server RPS multiplier (peak 1 s) | load multiplier | burst (100 ms) | shed |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for a in &r.arms {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {:.2}% | {:.2}x | {:.2}x | {:.1}x | {} |",
            a.id,
            ms(a.latency_ms.p50),
            ms(a.latency_ms.p99),
            ms(a.latency_ms.p999),
            a.hard_fail_ratio * 100.0,
            a.peak_rps_multiplier,
            a.load_multiplier,
            a.burst_multiplier,
            a.shed
        );
    }
    let _ = writeln!(s);
    for a in &r.arms {
        let _ = writeln!(s, "- `{}`: {}", a.id, a.policy);
    }
    s
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}ms")
    } else {
        format!("{x:.1}ms")
    }
}
