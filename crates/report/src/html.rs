//! `report.html`: one file a person can open, mail or attach to a CI run, that needs
//! nothing else: CSS and both plots are inline, there is no script and no network fetch.
//!
//! The results table is rendered from the same [`Table`] value as the terminal's markdown,
//! so the page and the terminal can never disagree on a column or a rounding. A run in
//! front of a real service adds that service's table ([`Table::target_of`]): without it a
//! reader cannot tell the service's own 503s from the ones herd injected.

use crate::Inputs;
use herd_scenario::table::{self, Align, Table};
use std::fmt::Write;

const CSS: &str = "\
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1440px;padding:0 1rem;color:#222}\
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}\
.meta{color:#555;margin-top:0}\
table{border-collapse:collapse;font-variant-numeric:tabular-nums}\
th,td{border:1px solid #ccc;padding:.3rem .6rem}th{background:#f3f3f3}\
td.r,th.r{text-align:right}tbody tr:nth-child(even){background:#fafafa}\
svg{max-width:100%;height:auto;display:block;border:1px solid #eee}\
pre{background:#f6f6f6;padding:1rem;overflow-x:auto;font-size:.85rem}\
code{background:#f3f3f3;padding:0 .2rem}\
";

/// Renders the page, with the two SVG documents inlined as given.
pub fn render_html(inputs: &Inputs<'_>, timeline_svg: &str, latency_svg: &str) -> String {
    let r = inputs.report;
    let s = inputs.scenario;
    let mut h = String::with_capacity(timeline_svg.len() + latency_svg.len() + 16_384);
    let name = esc(&r.scenario.name);
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>herd report: {name}</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <h1>herd report: {name}</h1>\n"
    );
    let _ = writeln!(
        h,
        "<p class=\"meta\">mode <b>{}</b> · seed {} · {} requests per arm offered at {} req/s · {} arm(s)</p>",
        esc(&r.mode),
        r.scenario.seed,
        s.load.requests,
        r.offered_rps,
        r.arms.len()
    );
    if let Some(note) = &r.stop {
        let _ = writeln!(h, "<p><b>{}</b></p>", esc(&table::partial_line(note)));
    }
    if !s.description.is_empty() {
        let _ = writeln!(h, "<p>{}</p>", esc(&s.description));
    }
    h.push_str("<h2>Results</h2>\n");
    h.push_str(&table_html(&Table::of(r)));
    if let (Some(t), Some(target)) = (&r.target, Table::target_of(r)) {
        let _ = write!(
            h,
            "<h2>Target</h2>\n<p class=\"meta\">{}</p>\n",
            esc(&table::target_heading(t))
        );
        h.push_str(&table_html(&target));
        h.push_str(
            "<p>Server requests reached herd's front; those not forwarded were answered there by \
             the injected faults (503s, resets, shed). The status and latency columns are the \
             target's own answers to what was forwarded; no answer: connection refused, timed \
             out or broken.</p>\n",
        );
    }
    h.push_str("<h2>Server load over time</h2>\n<figure>\n");
    h.push_str(strip_prolog(timeline_svg));
    h.push_str(
        "\n<figcaption>Requests the upstream received per 100 ms bucket (×10 = req/s), per \
         arm, against the offered rate, the upstream's capacity and the incident windows \
         (shaded).</figcaption>\n</figure>\n",
    );
    h.push_str("<h2>Latency</h2>\n<figure>\n");
    h.push_str(strip_prolog(latency_svg));
    h.push_str(
        "\n<figcaption>Latency CDF per arm, from each request's intended send time to its \
         final answer (log scale).</figcaption>\n</figure>\n",
    );
    h.push_str("<h2>Scenario</h2>\n<pre>");
    h.push_str(&esc(inputs.scenario_toml));
    h.push_str("</pre>\n</body>\n</html>\n");
    h
}

/// The results table and the policy list, as HTML.
fn table_html(t: &Table) -> String {
    let mut h = String::from("<table>\n<thead><tr>");
    let class = |a: Align| match a {
        Align::Right => " class=\"r\"",
        Align::Left => "",
    };
    for c in t.columns {
        let _ = write!(h, "<th{}>{}</th>", class(c.align), esc(c.title));
    }
    h.push_str("</tr></thead>\n");
    if !t.rows.is_empty() {
        h.push_str("<tbody>\n");
        for row in &t.rows {
            h.push_str("<tr>");
            for (c, cell) in t.columns.iter().zip(row) {
                let _ = write!(h, "<td{}>{}</td>", class(c.align), esc(&cell.to_string()));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n");
    }
    h.push_str("</table>\n");
    if !t.policies.is_empty() {
        h.push_str("<h2>Policies</h2>\n<ul>\n");
        for (id, policy) in &t.policies {
            let _ = writeln!(
                h,
                "<li><code>{}</code>: {}</li>",
                esc(id),
                code_spans(&esc(policy))
            );
        }
        h.push_str("</ul>\n");
    }
    for line in &t.notes {
        let _ = writeln!(h, "<p><b>{}</b></p>", esc(line));
    }
    h
}

/// Turns markdown `code` spans (in already-escaped text) into `<code>`.
fn code_spans(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 16);
    for (i, part) in s.split('`').enumerate() {
        if i % 2 == 1 {
            let _ = write!(out, "<code>{part}</code>");
        } else {
            out.push_str(part);
        }
    }
    out
}

/// Drops an XML declaration, which has no place inside HTML: an SVG file's text, ready to
/// inline in a page.
pub fn strip_prolog(svg: &str) -> &str {
    let t = svg.trim_start();
    if t.starts_with("<?xml") {
        t.find("?>").map_or(t, |i| t[i + 2..].trim_start())
    } else {
        t
    }
}

/// Escapes text for HTML element content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::Fixture;
    use crate::{render_latency_svg, render_timeline_svg};

    #[test]
    fn page_has_the_table_both_plots_and_the_scenario() {
        let f = Fixture::new(3, 40);
        let inputs = f.inputs();
        let t = render_timeline_svg(&inputs).unwrap();
        let l = render_latency_svg(&f.report, &f.cdfs).unwrap();
        let h = render_html(&inputs, &t, &l);
        assert!(h.starts_with("<!DOCTYPE html>"));
        assert_eq!(h.matches("<svg").count(), 2);
        assert!(h.contains("<th>arm</th><th class=\"r\">p50</th>"), "{h}");
        assert!(h.contains("<th class=\"r\">server RPS multiplier (peak 1 s)</th>"));
        assert!(h.contains("<td>arm-2</td><td class=\"r\">35.0ms</td>"));
        assert_eq!(h.matches("<tr>").count(), 4);
        assert!(h.contains("<li><code>arm-1</code>: policy &lt;1&gt; &amp; more</li>"));
        assert!(h.contains("<pre>name = &quot;fixture&quot;"));
        assert!(!h.contains("<script"), "no JavaScript");
        assert!(
            !h.contains("http://") || !h.contains("src=\"http"),
            "no fetches"
        );
        assert!(!h.contains("<?xml"));
    }

    #[test]
    fn a_proxy_run_shows_the_target_table() {
        let mut f = Fixture::new(2, 4);
        let inputs = f.inputs();
        let h = render_html(&inputs, "<svg/>", "<svg/>");
        assert!(!h.contains("<h2>Target</h2>"), "no target, no table");
        for a in &mut f.report.arms {
            a.target_requests = Some(90);
            a.target_status = Some(herd_scenario::StatusClasses {
                s2xx: 80,
                s5xx: 9,
                ..Default::default()
            });
            a.target_errors = Some(herd_scenario::TargetErrors {
                timeout: 1,
                ..Default::default()
            });
            a.target_latency_ms = Some(herd_scenario::Latency {
                p50: 1.25,
                p99: 30.0,
                ..Default::default()
            });
        }
        f.report.target = Some(herd_scenario::TargetInfo {
            url: "http://127.0.0.1:8089".into(),
            connect_timeout_ms: 1000,
            answer_timeout_ms: 10000,
            settle_ms: 500,
        });
        let h = render_html(&f.inputs(), "<svg/>", "<svg/>");
        assert!(h.contains("<h2>Target</h2>\n<p class=\"meta\">target http://127.0.0.1:8089 (connect timeout 1000 ms"), "{h}");
        assert!(
            h.contains("<th class=\"r\">forwarded</th><th class=\"r\">2xx</th>"),
            "{h}"
        );
        assert!(
            h.contains("<td class=\"r\">90</td><td class=\"r\">80</td><td class=\"r\">0</td><td class=\"r\">0</td><td class=\"r\">9</td><td class=\"r\">1</td><td class=\"r\">1.2ms</td><td class=\"r\">30.0ms</td></tr>"),
            "{h}"
        );
        assert_eq!(h.matches("<table>").count(), 2);
    }

    #[test]
    fn any_arm_id_keeps_its_row() {
        let mut f = Fixture::new(2, 4);
        f.report.arms[0].id = "a|b <c>".into();
        let h = table_html(&Table::of(&f.report));
        assert!(h.contains("<td>a|b &lt;c&gt;</td><td class=\"r\">"), "{h}");
        assert_eq!(h.matches("<tr>").count(), 3);
        assert!(h.contains("<li><code>a|b &lt;c&gt;</code>: "));
    }

    #[test]
    fn escaping_and_prolog() {
        assert_eq!(
            esc("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        assert_eq!(strip_prolog("<?xml version=\"1.0\"?>\n<svg/>"), "<svg/>");
        assert_eq!(strip_prolog("<svg/>"), "<svg/>");
        assert_eq!(code_spans("`a`: b `c`"), "<code>a</code>: b <code>c</code>");
    }
}
