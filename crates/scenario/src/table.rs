//! The results table as a value: the seed's columns (arm, p50, p99, hard-fail, server RPS
//! multiplier) plus p999, the whole-run load multiplier, the 100 ms burst and the shed
//! count, one row per arm, each cell typed.
//!
//! The terminal's markdown, `report.html` and `summary.csv` are renderings of this one
//! value, so they cannot disagree on a column, an order or a rounding. Cells keep their
//! number and their unit; each renderer decides only how to write them (markdown and HTML
//! round for people, CSV keeps full precision for spreadsheets), and no renderer ever
//! parses another's output, so an arm id may hold any character. A partial run (stopped by a
//! signal) ends with a line saying so, since its figures mean less than a whole run's; so
//! does a run whose driver dropped arrivals, and a direct run (no upstream of herd's),
//! whose server columns are "—".

use crate::report::{Report, StopNote, TargetInfo};
use std::fmt::{self, Write};

/// How a column's cells line up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// One column: its title for people, its key for machines (the CSV header).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Shown in markdown and HTML.
    pub title: &'static str,
    /// The CSV header, snake_case like the JSON report's fields.
    pub key: &'static str,
    /// Alignment.
    pub align: Align,
}

/// A typed cell.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell {
    /// Free text (an arm id).
    Text(String),
    /// Milliseconds.
    Ms(f64),
    /// A ratio shown as a percentage (0.0196 is 1.96%).
    Percent(f64),
    /// A multiplier with this many decimals when shown (1.44 is 1.44x).
    Times(f64, usize),
    /// A count.
    Count(u64),
    /// Not measured (a server figure of a direct run): "—", empty in CSV.
    Absent,
}

impl fmt::Display for Cell {
    /// The human form: what markdown and HTML show.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Cell::Text(s) => f.write_str(s),
            Cell::Ms(x) if *x >= 100.0 => write!(f, "{x:.0}ms"),
            Cell::Ms(x) => write!(f, "{x:.1}ms"),
            Cell::Percent(r) => write!(f, "{:.2}%", r * 100.0),
            Cell::Times(x, d) => write!(f, "{x:.d$}x"),
            Cell::Count(n) => write!(f, "{n}"),
            Cell::Absent => f.write_str("—"),
        }
    }
}

impl Cell {
    /// The machine form: full precision, no unit (the column's key names it).
    pub fn raw(&self) -> String {
        match self {
            Cell::Text(s) => s.clone(),
            Cell::Ms(x) | Cell::Percent(x) | Cell::Times(x, _) => x.to_string(),
            Cell::Count(n) => n.to_string(),
            Cell::Absent => String::new(),
        }
    }
}

/// The results table of one report.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// The columns, in order.
    pub columns: &'static [Column],
    /// One row per arm, in the report's order; each as long as `columns`.
    pub rows: Vec<Vec<Cell>>,
    /// Each arm's id and policy description, shown under the table.
    pub policies: Vec<(String, String)>,
    /// Lines under the policies: a direct run, arms that dropped arrivals (see
    /// [`notes`]).
    pub notes: Vec<String>,
    /// For a partial run, the line that says so (see [`partial_line`]).
    pub partial: Option<String>,
}

const fn col(title: &'static str, key: &'static str, align: Align) -> Column {
    Column { title, key, align }
}

/// The columns every results table has, then those only some arms fill, by name.
macro_rules! columns {
    ($($extra:ident),*) => {
        &[
            col("arm", "arm", Align::Left),
            col("p50", "p50_ms", Align::Right),
            col("p99", "p99_ms", Align::Right),
            col("p999", "p999_ms", Align::Right),
            col("hard-fail", "hard_fail_ratio", Align::Right),
            col(
                "server RPS multiplier (peak 1 s)",
                "peak_rps_multiplier",
                Align::Right,
            ),
            col("load multiplier", "load_multiplier", Align::Right),
            col("burst (100 ms)", "burst_multiplier", Align::Right),
            col("shed", "shed", Align::Right),
            $(columns!(@ $extra)),*
        ]
    };
    (@ hedges) => { col("hedges", "hedges_sent", Align::Right) };
    (@ won) => { col("hedges won", "hedges_won", Align::Right) };
    (@ wasted) => { col("hedges wasted", "hedges_wasted", Align::Right) };
    (@ rejected) => { col("breaker rejected", "breaker_rejected", Align::Right) };
    (@ open) => { col("breaker open", "breaker_open_ms", Align::Right) };
    (@ probes) => { col("probes", "breaker_probes", Align::Right) };
}

/// The columns every results table has.
pub const COLUMNS: &[Column] = columns!();

/// [`COLUMNS`] and the hedging columns: a table in which some arm hedges. Only then: a
/// run without hedging keeps the table it always had.
pub const HEDGE_COLUMNS: &[Column] = columns!(hedges, won, wasted);

/// [`COLUMNS`] and the breaker columns: a table in which some arm has a breaker.
pub const BREAKER_COLUMNS: &[Column] = columns!(rejected, open, probes);

/// [`COLUMNS`], the hedging and the breaker columns.
pub const GUARD_COLUMNS: &[Column] = columns!(hedges, won, wasted, rejected, open, probes);

/// The columns of a proxy run's second table: per arm, what reached herd's front, what it
/// forwarded to the target and how the target answered.
pub const TARGET_COLUMNS: &[Column] = &[
    col("arm", "arm", Align::Left),
    col("server requests", "server_requests", Align::Right),
    col("forwarded", "target_requests", Align::Right),
    col("2xx", "target_2xx", Align::Right),
    col("3xx", "target_3xx", Align::Right),
    col("4xx", "target_4xx", Align::Right),
    col("5xx", "target_5xx", Align::Right),
    col("no answer", "target_errors", Align::Right),
    col("target p50", "target_p50_ms", Align::Right),
    col("target p99", "target_p99_ms", Align::Right),
];

impl Table {
    /// A proxy run's target table (see [`TARGET_COLUMNS`]; [`target_heading`] says what
    /// the target was): one row per arm the target's counts cover. `None` for a run
    /// without a target.
    pub fn target_of(r: &Report) -> Option<Table> {
        r.target.as_ref()?;
        let rows = r
            .arms
            .iter()
            .filter_map(|a| {
                let (n, st, er, lat) = (
                    a.target_requests?,
                    a.target_status?,
                    a.target_errors?,
                    a.target_latency_ms?,
                );
                Some(vec![
                    Cell::Text(a.id.clone()),
                    Cell::Count(a.server_requests),
                    Cell::Count(n),
                    Cell::Count(st.s2xx),
                    Cell::Count(st.s3xx),
                    Cell::Count(st.s4xx),
                    Cell::Count(st.s5xx),
                    Cell::Count(er.total()),
                    Cell::Ms(lat.p50),
                    Cell::Ms(lat.p99),
                ])
            })
            .collect();
        Some(Table {
            columns: TARGET_COLUMNS,
            rows,
            policies: vec![],
            notes: vec![],
            partial: None,
        })
    }

    /// The table of `r`.
    pub fn of(r: &Report) -> Table {
        let hedging = r.arms.iter().any(|a| a.hedging.is_some());
        let breaker = r.arms.iter().any(|a| a.breaker.is_some());
        let rows = r
            .arms
            .iter()
            .map(|a| {
                let server = |c: Cell| if r.direct.is_some() { Cell::Absent } else { c };
                let mut row = vec![
                    Cell::Text(a.id.clone()),
                    Cell::Ms(a.latency_ms.p50),
                    Cell::Ms(a.latency_ms.p99),
                    Cell::Ms(a.latency_ms.p999),
                    Cell::Percent(a.hard_fail_ratio),
                    server(Cell::Times(a.peak_rps_multiplier, 2)),
                    server(Cell::Times(a.load_multiplier, 2)),
                    server(Cell::Times(a.burst_multiplier, 1)),
                    server(Cell::Count(a.shed)),
                ];
                let or_absent = |x: Option<u64>| x.map_or(Cell::Absent, Cell::Count);
                if hedging {
                    let h = a.hedging;
                    row.push(or_absent(h.map(|h| h.sent)));
                    row.push(or_absent(h.map(|h| h.won)));
                    row.push(or_absent(h.map(|h| h.wasted)));
                }
                if breaker {
                    let b = a.breaker.as_ref();
                    row.push(or_absent(b.map(|b| b.rejected)));
                    row.push(
                        b.and_then(|b| b.open_ms)
                            .map_or(Cell::Absent, |ms| Cell::Ms(ms as f64)),
                    );
                    row.push(or_absent(b.and_then(|b| b.probes)));
                }
                row
            })
            .collect();
        let policies = r
            .arms
            .iter()
            .map(|a| (a.id.clone(), a.policy.clone()))
            .collect();
        Table {
            columns: match (hedging, breaker) {
                (false, false) => COLUMNS,
                (true, false) => HEDGE_COLUMNS,
                (false, true) => BREAKER_COLUMNS,
                (true, true) => GUARD_COLUMNS,
            },
            rows,
            policies,
            notes: notes(r),
            partial: r.stop.as_ref().map(partial_line),
        }
    }

    /// Markdown: the table, a blank line, then one `` - `id`: policy `` line per arm.
    /// A `|` in a cell is escaped so the row keeps its columns.
    pub fn to_markdown(&self) -> String {
        let mut s = self.markdown_rows();
        let _ = writeln!(s);
        for (id, policy) in &self.policies {
            let _ = writeln!(s, "- `{id}`: {policy}");
        }
        for line in &self.notes {
            let _ = writeln!(s, "\n{line}");
        }
        if let Some(line) = &self.partial {
            let _ = writeln!(s, "\n{line}");
        }
        s
    }

    /// The header, the rule and the rows, in markdown.
    fn markdown_rows(&self) -> String {
        let mut s = String::new();
        let titles: Vec<&str> = self.columns.iter().map(|c| c.title).collect();
        let _ = writeln!(s, "| {} |", titles.join(" | "));
        let rule: Vec<&str> = self
            .columns
            .iter()
            .map(|c| match c.align {
                Align::Left => "---",
                Align::Right => "---:",
            })
            .collect();
        let _ = writeln!(s, "|{}|", rule.join("|"));
        for row in &self.rows {
            let cells: Vec<String> = row
                .iter()
                .map(|c| c.to_string().replace('|', "\\|"))
                .collect();
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        s
    }

    /// CSV (RFC 4180): a header of column keys, then one row per arm at full precision.
    pub fn to_csv(&self) -> String {
        let mut s = String::new();
        let keys: Vec<&str> = self.columns.iter().map(|c| c.key).collect();
        let _ = writeln!(s, "{}", keys.join(","));
        for row in &self.rows {
            let cells: Vec<String> = row.iter().map(|c| csv_field(&c.raw())).collect();
            let _ = writeln!(s, "{}", cells.join(","));
        }
        s
    }
}

/// What the rows cannot say: that the run was direct (server columns not counted), that
/// the machine's host took CPU from it during the run, and each arm whose driver dropped
/// arrivals (a failed run: its figures describe a thinner
/// load than the one offered).
pub fn notes(r: &Report) -> Vec<String> {
    let mut notes = vec![];
    if let Some(url) = &r.direct {
        notes.push(format!(
            "direct run: the arms drove {url} with no fault front; server-side columns (—) were not counted"
        ));
    }
    if let Some(ms) = r.steal_ms.filter(|&ms| ms > 0) {
        notes.push(format!(
            "machine: its host took {ms} ms of CPU from it during the run (steal time); \
             pauses neither the driver nor the target caused are in the latency and lag"
        ));
    }
    for a in &r.arms {
        if let Some(n) = a.rate_limited {
            notes.push(format!(
                "rate limit: arm {}: {n} of {} server requests rejected ({:.2}%)",
                a.id,
                a.server_requests,
                100.0 * n as f64 / a.server_requests.max(1) as f64
            ));
        }
    }
    for a in &r.arms {
        if let Some(n) = a.driver_dropped.filter(|&n| n > 0) {
            notes.push(format!(
                "FAILED: arm {}: the driver dropped {n} arrival(s) unsent (backlog full: the target could not keep up)",
                a.id
            ));
        }
    }
    notes
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

/// A CSV field: as is, or quoted with inner quotes doubled.
pub fn csv_field(v: &str) -> String {
    if v.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", v.replace('"', "\"\""))
    } else {
        v.to_owned()
    }
}

/// The markdown table of `r`, as the terminal shows it; a proxy run adds what the target
/// answered each arm.
pub fn render(r: &Report) -> String {
    let mut s = Table::of(r).to_markdown();
    if let Some(hops) = crate::hop_table::hop_table(r) {
        s.push_str("\nper hop, edge first (x edge: requests per logical request of the arm):\n\n");
        s.push_str(&hops);
    }
    if let Some(t) = &r.target {
        s.push_str(&target_table(r, t));
    }
    s
}

/// What a proxy run's target was, the line above its target table.
pub fn target_heading(t: &TargetInfo) -> String {
    format!(
        "target {} (connect timeout {} ms, answer timeout {} ms, {} ms settle between arms)",
        t.url, t.connect_timeout_ms, t.answer_timeout_ms, t.settle_ms
    )
}

/// A proxy run's second table: per arm, what reached herd, what went on to the target and
/// how the target answered.
fn target_table(r: &Report, t: &TargetInfo) -> String {
    let rows = Table::target_of(r).map_or(String::new(), |t| t.markdown_rows());
    format!("\n{}:\n\n{rows}", target_heading(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_round_for_people_and_not_for_machines() {
        assert_eq!(Cell::Ms(38.25).to_string(), "38.2ms");
        assert_eq!(Cell::Ms(265.4).to_string(), "265ms");
        assert_eq!(Cell::Percent(0.0196).to_string(), "1.96%");
        assert_eq!(Cell::Times(1.4449, 2).to_string(), "1.44x");
        assert_eq!(Cell::Times(6.25, 1).to_string(), "6.2x");
        assert_eq!(Cell::Ms(38.25).raw(), "38.25");
        assert_eq!(Cell::Count(30).raw(), "30");
    }

    fn table(id: &str) -> Table {
        Table {
            columns: &COLUMNS[..2],
            rows: vec![vec![Cell::Text(id.into()), Cell::Ms(1.5)]],
            policies: vec![(id.into(), "none".into())],
            notes: vec![],
            partial: None,
        }
    }

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

    #[test]
    fn the_hosts_steal_is_said_under_the_table_when_there_was_any() {
        let mut r = Report::new("real", "s", 1, 100.0, vec![]);
        r.steal_ms = Some(0);
        assert!(!render(&r).contains("steal"));
        r.steal_ms = Some(40);
        assert!(render(&r).contains(
            "\nmachine: its host took 40 ms of CPU from it during the run (steal time); \
             pauses neither the driver nor the target caused are in the latency and lag\n"
        ));
    }

    #[test]
    fn a_proxy_run_adds_what_the_target_answered() {
        let mut arm: crate::ArmReport =
            serde_json::from_str(r#"{"id":"undici","policy":"p","logical_requests":10,"succeeded":10,"failed":0,"hard_fail_ratio":0.0,"latency_ms":{"mean":1.0,"p50":1.0,"p90":1.0,"p99":2.0,"p999":2.0,"max":2.0},"client_attempts":12,"server_requests":12,"load_multiplier":1.2,"peak_rps_multiplier":1.2,"burst_multiplier":2.0,"shed":0,"recovery_ms":null,"timeline":[]}"#)
                .expect("an arm");
        arm.target_requests = Some(11);
        arm.target_status = Some(crate::StatusClasses {
            s2xx: 9,
            s5xx: 1,
            ..Default::default()
        });
        arm.target_errors = Some(crate::TargetErrors {
            connect: 1,
            ..Default::default()
        });
        arm.target_latency_ms = Some(crate::Latency {
            p50: 0.21,
            p99: 4.5,
            ..Default::default()
        });
        let mut r = Report::new("real", "s", 1, 100.0, vec![arm]);
        r.target = Some(TargetInfo {
            url: "http://127.0.0.1:8089".into(),
            connect_timeout_ms: 1000,
            answer_timeout_ms: 10000,
            settle_ms: 500,
        });
        let text = render(&r);
        assert!(text.ends_with(
            "\ntarget http://127.0.0.1:8089 (connect timeout 1000 ms, answer timeout 10000 ms, 500 ms settle between arms):\n\n\
             | arm | server requests | forwarded | 2xx | 3xx | 4xx | 5xx | no answer | target p50 | target p99 |\n\
             |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n\
             | undici | 12 | 11 | 9 | 0 | 0 | 1 | 1 | 0.2ms | 4.5ms |\n"
        ), "{text}");
    }

    #[test]
    fn markdown_escapes_pipes() {
        let md = table("a|b").to_markdown();
        assert_eq!(
            md,
            "| arm | p50 |\n|---|---:|\n| a\\|b | 1.5ms |\n\n- `a|b`: none\n"
        );
    }

    #[test]
    fn csv_quotes_awkward_ids() {
        assert_eq!(
            table("a,\"b\"").to_csv(),
            "arm,p50_ms\n\"a,\"\"b\"\"\",1.5\n"
        );
    }
}
