//! A synthetic report for the unit tests: `arms` arms over `buckets` 100 ms buckets at
//! 100 req/s, each arm with a retry wave of its own size just after a hold window.

use crate::{Cdf, Inputs};
use hdrhistogram::Histogram;
use herd_scenario::report::{Latency, TimelineRow};
use herd_scenario::{ArmReport, Report, Scenario};
use std::fmt::Write;

/// Everything [`Inputs`] borrows.
pub(crate) struct Fixture {
    pub report: Report,
    pub scenario: Scenario,
    pub toml: String,
    pub cdfs: Vec<Cdf>,
}

impl Fixture {
    pub(crate) fn new(arms: usize, buckets: usize) -> Self {
        let mut toml = String::from(
            "name = \"fixture\"\nseed = 3\n[load]\nrequests = 1000\nrate = 100\n\
             [upstream]\nworkers = 8\nqueue_limit = 16\n\
             service_time = { dist = \"constant\", ms = 50 }\n\
             [[upstream.incidents]]\nstart_ms = 1000\nduration_ms = 300\nhold = true\n",
        );
        for i in 0..arms.max(1) {
            let _ = write!(toml, "[[arms]]\nid = \"arm-{i}\"\npolicy = \"undici\"\n");
        }
        let scenario = herd_scenario::parse(&toml, "fixture.toml").expect("fixture parses");
        let arm_reports = (0..arms)
            .map(|i| {
                let timeline = (0..buckets)
                    .map(|b| {
                        let wave = if b == 13 + i { 10 * (i as u64 + 1) } else { 0 };
                        TimelineRow {
                            t_ms: b as u64 * 100,
                            offered: 10,
                            server: 10 + wave,
                            ok: 10,
                            errors: 0,
                            resets: wave,
                            shed: 0,
                        }
                    })
                    .collect();
                ArmReport {
                    id: format!("arm-{i}"),
                    policy: format!("policy <{i}> & more"),
                    logical_requests: 1000,
                    succeeded: 990,
                    failed: 10,
                    hard_fail_ratio: 0.01,
                    latency_ms: Latency {
                        mean: 40.0,
                        p50: 35.0,
                        p90: 60.0,
                        p99: 250.0,
                        p999: 600.0,
                        max: 900.0,
                    },
                    client_attempts: 1010,
                    server_requests: 1010,
                    load_multiplier: 1.01,
                    peak_rps_multiplier: 1.2,
                    burst_multiplier: 2.0,
                    hops: None,
                    timeline,
                    ..ArmReport::default()
                }
            })
            .collect();
        let report = Report::new("real", "fixture", 3, 100.0, arm_reports);
        let cdfs = (0..arms)
            .map(|i| {
                let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
                for k in 1..=1000u64 {
                    h.record(k * 50 * (i as u64 + 1)).unwrap();
                }
                Cdf::from_histogram(&h)
            })
            .collect();
        Fixture {
            report,
            scenario,
            toml,
            cdfs,
        }
    }

    pub(crate) fn inputs(&self) -> Inputs<'_> {
        Inputs {
            report: &self.report,
            scenario: &self.scenario,
            scenario_toml: &self.toml,
            latency: &self.cdfs,
        }
    }
}

/// Parses `svg` as XML and returns the text of its `<text>` elements.
pub(crate) fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("SVG is well-formed XML");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_owned())
        .collect()
}
