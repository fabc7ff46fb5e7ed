//! Counts that check the client: for an arm whose client runs in another program, the
//! adapter reports each request's attempts (`client_attempts`) and herd's front counts what
//! it received (`server_requests`). An honest adapter's two numbers agree; one that reports
//! 1 (or null) where its library retried looks like a client that retries less than it
//! does, and nothing else in the report would show it. So the text under the table names
//! every such arm with both numbers.
//!
//! The tolerance: in a whole run nothing is in flight at the end (herd waits for every
//! answer and the adapter's `done`), so the counts of an honest adapter agree exactly (the
//! kits' tests check that). The one honest difference is an attempt the client abandons
//! before its request head reaches the front (a client-side timeout while connecting),
//! counted by the client and not by the server; 1 + 0.1% of the server's count leaves
//! room for those and still catches an adapter that misses one retry in a few hundred. In
//! a partial run (stopped by a signal) the attempts of requests still in flight at the
//! stop are in the server's count and in no answer, so only a client count above the
//! server's is flagged there.

use herd_scenario::table::{Align, Cell, Column, Table};
use herd_scenario::{ArmReport, Report};

/// The columns of the counts table.
const COLUMNS: &[Column] = &[
    Column {
        title: "arm",
        key: "arm",
        align: Align::Left,
    },
    Column {
        title: "client attempts",
        key: "client_attempts",
        align: Align::Right,
    },
    Column {
        title: "server requests",
        key: "server_requests",
        align: Align::Right,
    },
];

/// Whether `a`'s adapter's count differs from the front's beyond the tolerance (see the
/// module's documentation). Only arms with a client in another program and a front that
/// counted (not a direct run).
fn disagrees(r: &Report, a: &ArmReport) -> bool {
    if a.command.is_none() || r.direct.is_some() || r.mode != "real" {
        return false;
    }
    let (client, server) = (a.client_attempts, a.server_requests);
    let slack = 1 + server / 1000;
    if r.stop.is_some() {
        client > server + slack
    } else {
        client.abs_diff(server) > slack
    }
}

/// The arms whose counts disagree, with both numbers.
pub fn disagreeing(r: &Report) -> Vec<&ArmReport> {
    r.arms.iter().filter(|a| disagrees(r, a)).collect()
}

/// The text under the results table: nothing when every count agrees, else a table of
/// both counts for the arms that disagree and one warning line per arm.
pub fn render(r: &Report) -> String {
    let arms = disagreeing(r);
    if arms.is_empty() {
        return String::new();
    }
    let table = Table {
        columns: COLUMNS,
        rows: arms
            .iter()
            .map(|a| {
                vec![
                    Cell::Text(a.id.clone()),
                    Cell::Count(a.client_attempts),
                    Cell::Count(a.server_requests),
                ]
            })
            .collect(),
        policies: vec![],
        notes: arms
            .iter()
            .map(|a| {
                format!(
                    "warning: arm {}: its client reported {} attempt(s), herd's front received {} request(s); \
                     the adapter does not count its library's attempts as the server sees them (docs/external-arm-protocol.md, `attempts`), \
                     so its client_attempts is wrong; load, peak and burst come from the server's count",
                    a.id, a.client_attempts, a.server_requests
                )
            })
            .collect(),
        partial: None,
    };
    format!(
        "\nclient counts (the adapter's attempts against herd's front):\n\n{}",
        table.to_markdown()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(client: u64, server: u64, command: bool) -> Report {
        let arm = ArmReport {
            id: "cmd".into(),
            client_attempts: client,
            server_requests: server,
            command: command.then(|| vec!["python3".into()]),
            ..ArmReport::default()
        };
        Report::new("real", "s", 1, 100.0, vec![arm])
    }

    #[test]
    fn an_honest_adapter_says_nothing() {
        assert_eq!(render(&report(766, 766, true)), "");
        assert_eq!(render(&report(766, 767, true)), "", "within the tolerance");
    }

    #[test]
    fn an_undercounting_adapter_is_named_with_both_numbers() {
        let text = render(&report(600, 766, true));
        assert!(text.contains("| cmd | 600 | 766 |"), "{text}");
        assert!(
            text.contains("warning: arm cmd: its client reported 600 attempt(s), herd's front received 766 request(s)"),
            "{text}"
        );
    }

    #[test]
    fn herds_own_arms_and_direct_runs_are_not_checked() {
        assert_eq!(render(&report(600, 766, false)), "");
        let mut direct = report(600, 766, true);
        direct.direct = Some("http://x/".into());
        assert_eq!(render(&direct), "");
    }
}
