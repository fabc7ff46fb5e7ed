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
    s
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
