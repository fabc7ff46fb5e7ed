//! `herd merge`: shard reports into one report, written as a single run's is (the table,
//! `--json`, `--out DIR`). The arithmetic is `herd_report::merge`'s; this reads the files
//! and the fronts' snapshots and refuses what cannot be merged (exit 2, nothing written).

use crate::cli::MergeArgs;
use crate::emit::emit;
use crate::fail::Fail;
use anyhow::{anyhow, Context};
use herd_report::merge::{merge, scope_words, FrontStats};
use herd_scenario::{Recorder, Report};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

pub fn run(a: MergeArgs) -> Result<(), Fail> {
    a.output.check()?;
    let mut reports = Vec::with_capacity(a.reports.len());
    for path in &a.reports {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {name}"))
            .map_err(Fail::input)?;
        let report: Report = serde_json::from_str(&text)
            .with_context(|| format!("{name} is not a herd report"))
            .map_err(Fail::input)?;
        reports.push((name, report));
    }
    let mut fronts = Vec::with_capacity(a.stats.len());
    for source in &a.stats {
        let json = if source.starts_with("http://") {
            get(source, a.admin_token.as_deref()).map_err(Fail::input)?
        } else {
            std::fs::read_to_string(source)
                .with_context(|| format!("--stats: cannot read {source}"))
                .map_err(Fail::input)?
        };
        fronts.push(FrontStats::parse(source, &json).map_err(Fail::input)?);
    }
    let merged = merge(&reports, &fronts).map_err(Fail::input)?;
    if let Some(first) = reports.first().and_then(|(_, r)| r.shard.as_ref()) {
        let covered = merged
            .report
            .shard
            .as_ref()
            .map_or(first.count as usize, |s| s.indices.len());
        let server = if fronts.is_empty() {
            scope_words(first.server).to_owned()
        } else {
            format!("from {} front(s)' /__herd/stats, summed", fronts.len())
        };
        a.output.note(format_args!(
            "herd merge: {covered} of {} shard(s) of {} (seed {}); server side: {server}",
            first.count, merged.report.scenario.name, merged.report.scenario.seed
        ));
    }
    let recorders: Vec<&Recorder> = merged.recorders.iter().collect();
    emit(
        &a.output,
        &merged.report,
        &merged.scenario,
        &merged.scenario_toml,
        &recorders,
    )
}

/// GET `url` (plain http) and return the body of a 200.
fn get(url: &str, token: Option<&str>) -> anyhow::Result<String> {
    let rest = url.trim_start_matches("http://");
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let addr = host
        .to_socket_addrs()
        .with_context(|| format!("--stats {url}: cannot resolve {host}"))?
        .next()
        .ok_or_else(|| anyhow!("--stats {url}: {host} has no address"))?;
    let limit = Duration::from_secs(10);
    let mut conn = TcpStream::connect_timeout(&addr, limit)
        .with_context(|| format!("--stats {url}: cannot connect"))?;
    conn.set_read_timeout(Some(limit))?;
    let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
    // HTTP/1.0: the answer ends with the connection, never chunked.
    write!(conn, "GET /{path} HTTP/1.0\r\nHost: {host}\r\n{auth}\r\n")?;
    let mut raw = String::new();
    conn.read_to_string(&mut raw)
        .with_context(|| format!("--stats {url}: reading the answer"))?;
    let (head, body) = raw
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("--stats {url}: not an HTTP answer"))?;
    let status = head.lines().next().unwrap_or("");
    if !status.split_whitespace().nth(1).is_some_and(|c| c == "200") {
        return Err(anyhow!(
            "--stats {url}: the front answered `{status}` (a front not on loopback needs --admin-token)"
        ));
    }
    Ok(body.to_owned())
}
