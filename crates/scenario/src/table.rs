//! The markdown table: the seed's columns (arm, p50, p99, hard-fail, server RPS multiplier)
//! plus p999, the whole-run load multiplier and the 100 ms burst; a partial run ends with a
//! line saying so, since its figures mean less than a whole run's.

use crate::report::{Report, StopNote};
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
    if let Some(note) = &r.stop {
        let _ = writeln!(s);
        let _ = writeln!(s, "{}", partial_line(note));
    }
    s
}

/// `partial run: stopped by SIGINT after 4.0 s; 1432 of 9600 requests finished; left out: a, b`.
pub fn partial_line(note: &StopNote) -> String {
    let mut line = format!(
        "partial run: stopped by {} after {:.1} s; {} of {} requests finished",
        note.signal,
        note.after_ms as f64 / 1000.0,
        note.finished,
        note.planned
    );
    if !note.left_out.is_empty() {
        line.push_str("; left out: ");
        line.push_str(&note.left_out.join(", "));
    }
    line
}

fn ms(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}ms")
    } else {
        format!("{x:.1}ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_partial_run_says_so_under_the_table() {
        let whole = Report::new("real", "s", 1, 100.0, vec![]);
        assert!(!render(&whole).contains("partial"));
        let note = StopNote {
            signal: "SIGINT".into(),
            after_ms: 4049,
            finished: 1432,
            planned: 9600,
            left_out: vec!["node-undici".into(), "tower-retry".into()],
        };
        let text = render(&whole.stopped(note));
        assert!(text.ends_with(
            "\npartial run: stopped by SIGINT after 4.0 s; 1432 of 9600 requests finished; \
             left out: node-undici, tower-retry\n"
        ));
    }
}
