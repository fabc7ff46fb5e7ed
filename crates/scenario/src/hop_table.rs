//! The call graph's table (`[[hops]]`): one row per arm, one column group per hop from the
//! edge down to `[upstream]`, so where the load at the bottom comes from reads across a
//! row. A separate table rather than more columns of [`crate::table::Table`]: its columns
//! are the scenario's hops, not a fixed set, and a report without hops must render
//! exactly as before.

use crate::report::Report;
use crate::table::Cell;
use std::fmt::Write;

/// The figures of each hop's group, in order.
const GROUP: &[&str] = &["requests", "x edge", "1s peak", "100ms burst", "failed"];

/// The markdown hop table of `r`, `None` when no arm has hops.
pub fn hop_table(r: &Report) -> Option<String> {
    let ids: Vec<&str> = r
        .arms
        .iter()
        .find_map(|a| a.hops.as_ref())?
        .iter()
        .map(|h| h.id.as_str())
        .collect();
    let mut s = String::from("| arm |");
    for id in &ids {
        for g in GROUP {
            let _ = write!(s, " {id} {g} |");
        }
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(ids.len() * GROUP.len()));
    s.push('\n');
    for a in &r.arms {
        let _ = write!(s, "| {} |", a.id.replace('|', "\\|"));
        for h in a.hops.iter().flatten() {
            let cells = [
                Cell::Count(h.requests),
                Cell::Times(h.amplification, 2),
                Cell::Times(h.peak_rps_multiplier, 2),
                Cell::Times(h.burst_multiplier, 1),
                Cell::Count(h.failed),
            ];
            for c in cells {
                let _ = write!(s, " {c} |");
            }
        }
        s.push('\n');
    }
    Some(s)
}
