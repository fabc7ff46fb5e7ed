//! `timeline.csv`: the report's 100 ms buckets, long format (one row per arm per bucket),
//! the shape spreadsheets and plotting libraries take without reshaping.

use herd_scenario::table::csv_field as field;
use herd_scenario::Report;
use std::fmt::Write;

/// The CSV header.
pub const HEADER: &str = "arm,t_ms,offered,server,ok,errors,resets,shed";

/// Renders every arm's timeline; arm ids are quoted when they need to be (RFC 4180).
pub fn render_csv(report: &Report) -> String {
    let mut s = String::with_capacity(64 * (1 + report.arms.len() * 200));
    s.push_str(HEADER);
    s.push('\n');
    for a in &report.arms {
        let id = field(&a.id);
        for r in &a.timeline {
            let _ = writeln!(
                s,
                "{id},{},{},{},{},{},{},{}",
                r.t_ms, r.offered, r.server, r.ok, r.errors, r.resets, r.shed
            );
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture;

    #[test]
    fn one_row_per_arm_per_bucket() {
        let f = fixture::Fixture::new(3, 40);
        let csv = render_csv(&f.report);
        let lines: Vec<_> = csv.lines().collect();
        assert_eq!(lines[0], HEADER);
        assert_eq!(lines.len(), 1 + 3 * 40);
        assert!(lines[1].starts_with("arm-0,0,10,"), "{}", lines[1]);
        assert!(lines.iter().all(|l| l.split(',').count() == 8));
    }

    #[test]
    fn awkward_ids_are_quoted() {
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("plain"), "plain");
    }
}
