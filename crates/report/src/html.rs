//! `report.html`: one file a person can open, mail or attach to a CI run, that needs
//! nothing else: CSS and both plots are inline, there is no script and no network fetch.
//!
//! The results table is the markdown table of `herd_scenario::table::render` turned into
//! HTML, rather than a second rendering of the numbers: the page and the terminal can then
//! never disagree on a column or a rounding.

use crate::Inputs;
use herd_scenario::table;
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
    h.push_str(&markdown_to_html(&table::render(r)));
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

/// The table and policy list that `table::render` prints, as HTML.
fn markdown_to_html(md: &str) -> String {
    let mut rows: Vec<Vec<&str>> = Vec::new();
    let mut right: Vec<bool> = Vec::new();
    let mut policies = Vec::new();
    for line in md.lines() {
        if let Some(cells) = line.strip_prefix('|').and_then(|l| l.strip_suffix('|')) {
            let cells: Vec<&str> = cells.split('|').map(str::trim).collect();
            if cells
                .iter()
                .all(|c| c.starts_with("--") || c.ends_with("-:"))
            {
                right = cells.iter().map(|c| c.ends_with(':')).collect();
            } else {
                rows.push(cells);
            }
        } else if let Some(item) = line.strip_prefix("- ") {
            policies.push(item);
        }
    }
    let mut h = String::from("<table>\n");
    let class = |i: usize| {
        if right.get(i).copied().unwrap_or(false) {
            " class=\"r\""
        } else {
            ""
        }
    };
    for (n, row) in rows.iter().enumerate() {
        let tag = if n == 0 { "th" } else { "td" };
        if n == 0 {
            h.push_str("<thead>");
        } else if n == 1 {
            h.push_str("<tbody>\n");
        }
        h.push_str("<tr>");
        for (i, c) in row.iter().enumerate() {
            let _ = write!(h, "<{tag}{}>{}</{tag}>", class(i), esc(c));
        }
        h.push_str("</tr>");
        h.push_str(if n == 0 { "</thead>\n" } else { "\n" });
    }
    if rows.len() > 1 {
        h.push_str("</tbody>\n");
    }
    h.push_str("</table>\n");
    if !policies.is_empty() {
        h.push_str("<h2>Policies</h2>\n<ul>\n");
        for p in policies {
            let _ = writeln!(h, "<li>{}</li>", code_spans(&esc(p)));
        }
        h.push_str("</ul>\n");
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

/// Drops an XML declaration, which has no place inside HTML.
fn strip_prolog(svg: &str) -> &str {
    let t = svg.trim_start();
    if t.starts_with("<?xml") {
        t.find("?>").map_or(t, |i| t[i + 2..].trim_start())
    } else {
        t
    }
}

/// Escapes text for HTML element content and attribute values.
fn esc(s: &str) -> String {
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
