//! `GET /metrics`: the upstream's counts and gauges in the Prometheus text format (0.0.4),
//! so a long run can be watched live with any scraper or a plain `curl`.
//!
//! It is a second view of the same [`Stats`] that `/__herd/stats` serializes, and like
//! that endpoint it is neither counted nor faulted: scraping must not change what is
//! measured. Only totals and gauges are exposed; the 100 ms buckets are the scraper's job
//! (it takes `rate()` over the counters).

use super::Stats;
use std::fmt::Write;

/// The path the metrics are served on.
pub(crate) const PATH: &str = "/metrics";

/// The `Content-Type` of the text format.
pub(crate) const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Renders `stats` in the Prometheus text format.
pub(crate) fn render(stats: &Stats) -> String {
    let t = stats.counts().totals();
    let mut s = String::with_capacity(768);
    s.push_str(
        "# HELP herd_upstream_requests_total Requests the upstream received (outcome=\"received\"), and how they ended.\n\
         # TYPE herd_upstream_requests_total counter\n",
    );
    for (outcome, n) in [
        ("received", t.received),
        ("ok", t.ok),
        ("503", t.status_503),
        ("reset", t.resets),
        ("shed", t.shed),
        ("limited", t.limited),
    ] {
        let _ = writeln!(
            s,
            "herd_upstream_requests_total{{outcome=\"{outcome}\"}} {n}"
        );
    }
    let _ = write!(
        s,
        "# HELP herd_upstream_in_flight Requests holding a worker now.\n\
         # TYPE herd_upstream_in_flight gauge\n\
         herd_upstream_in_flight {}\n\
         # HELP herd_upstream_queued Requests waiting for a worker now.\n\
         # TYPE herd_upstream_queued gauge\n\
         herd_upstream_queued {}\n",
        stats.in_flight(),
        stats.queued()
    );
    if let Some(t) = stats.target() {
        target(&mut s, &t);
    }
    s
}

/// Upper bounds of the target latency histogram's buckets, seconds.
const LATENCY_BOUNDS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0,
];

/// Proxy mode: what the target answered, and its latency as a Prometheus histogram.
fn target(s: &mut String, t: &herd_scenario::TargetCounts) {
    let st = t.status();
    let er = t.errors();
    let _ = write!(
        s,
        "# HELP herd_target_requests_total Requests forwarded to the target.\n\
         # TYPE herd_target_requests_total counter\n\
         herd_target_requests_total {}\n\
         # HELP herd_target_responses_total The target's answers by status class.\n\
         # TYPE herd_target_responses_total counter\n",
        t.requests()
    );
    for (class, n) in [
        ("1xx", st.s1xx),
        ("2xx", st.s2xx),
        ("3xx", st.s3xx),
        ("4xx", st.s4xx),
        ("5xx", st.s5xx),
    ] {
        let _ = writeln!(s, "herd_target_responses_total{{class=\"{class}\"}} {n}");
    }
    s.push_str(
        "# HELP herd_target_errors_total Forwarded requests the target never answered.\n\
         # TYPE herd_target_errors_total counter\n",
    );
    for (kind, n) in [
        ("connect", er.connect),
        ("timeout", er.timeout),
        ("broken", er.broken),
    ] {
        let _ = writeln!(s, "herd_target_errors_total{{kind=\"{kind}\"}} {n}");
    }
    let h = t.histogram();
    s.push_str(
        "# HELP herd_target_latency_seconds The target's latency, forwarded request to response head.\n\
         # TYPE herd_target_latency_seconds histogram\n",
    );
    for le in LATENCY_BOUNDS {
        let us = (le * 1e6) as u64;
        let n = if h.is_empty() {
            0
        } else {
            h.count_between(0, us)
        };
        let _ = writeln!(s, "herd_target_latency_seconds_bucket{{le=\"{le}\"}} {n}");
    }
    let sum = h.mean() * h.len() as f64 / 1e6;
    let _ = write!(
        s,
        "herd_target_latency_seconds_bucket{{le=\"+Inf\"}} {n}\n\
         herd_target_latency_seconds_sum {sum}\n\
         herd_target_latency_seconds_count {n}\n",
        n = h.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd_scenario::ServerEvent;
    use std::time::Duration;

    #[test]
    fn text_format() {
        let s = Stats::new();
        let t = Duration::from_millis(5);
        for ev in [
            ServerEvent::Received,
            ServerEvent::Received,
            ServerEvent::Ok,
            ServerEvent::Shed,
        ] {
            s.record(t, ev, None);
        }
        s.set_gauges(3, 2);
        let text = render(&s);
        for line in [
            "# TYPE herd_upstream_requests_total counter",
            "herd_upstream_requests_total{outcome=\"received\"} 2",
            "herd_upstream_requests_total{outcome=\"ok\"} 1",
            "herd_upstream_requests_total{outcome=\"503\"} 0",
            "herd_upstream_requests_total{outcome=\"reset\"} 0",
            "herd_upstream_requests_total{outcome=\"shed\"} 1",
            "# TYPE herd_upstream_in_flight gauge",
            "herd_upstream_in_flight 3",
            "herd_upstream_queued 2",
        ] {
            assert!(text.lines().any(|l| l == line), "missing {line}:\n{text}");
        }
        assert!(text.ends_with('\n'));
    }
}
