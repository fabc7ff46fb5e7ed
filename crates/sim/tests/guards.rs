//! Hedging and breakers on the virtual clock: the figures their sources give, from the
//! same `Hedger` and `Breaker` the library code runs.

use herd_scenario::Scenario;

/// z of the standard normal's 95th and 99th percentiles.
const Z95: f64 = 1.644_853_626_951_472_2;
const Z99: f64 = 2.326_347_874_040_841;

fn parse(text: &str) -> Scenario {
    herd_scenario::parse(text, "guards.toml").expect("valid scenario")
}

/// A log-normal service time's p95 from the scenario's parameters (median, p99).
fn lognormal_p95(median_ms: f64, p99_ms: f64) -> f64 {
    let sigma = (p99_ms / median_ms).ln() / Z99;
    median_ms * (sigma * Z95).exp()
}

/// No overload (unlimited workers, no network): latency is the service time alone.
fn tail_at_scale(median_ms: f64, p99_ms: f64, hedge: &str) -> Scenario {
    parse(&format!(
        r#"
name = "tail-at-scale"
seed = 7
[load]
requests = 60000
rate = 200
[network]
rtt_ms = 0
[upstream]
service_time = {{ dist = "lognormal", median_ms = {median_ms}, p99_ms = {p99_ms} }}
[[arms]]
id = "no-hedge"
policy = "none"
[[arms]]
id = "hedge-p95"
policy = "none"
{hedge}
"#
    ))
}

/// The Tail at Scale: a hedge sent at the service time's p95 costs about 5% more requests
/// and cuts the p99, as long as latency does not depend on load. Any log-normal will do;
/// the p95 comes from the distribution's parameters, not from a run.
#[test]
fn a_hedge_at_the_p95_adds_about_five_percent_and_cuts_the_p99() {
    for (median, p99) in [(20.0, 200.0), (50.0, 120.0), (5.0, 400.0)] {
        let p95 = lognormal_p95(median, p99);
        let s = tail_at_scale(
            median,
            p99,
            &format!("hedge = {{ profile = \"polly-hedging\", delay_ms = {p95} }}"),
        );
        let (plain, hedged) = (herd_sim::simulate(&s, 0), herd_sim::simulate(&s, 1));
        let (a, b) = (plain.report(&s, 0), hedged.report(&s, 1));
        let added = b.server_requests as f64 / a.server_requests as f64 - 1.0;
        assert!(
            (0.04..=0.06).contains(&added),
            "lognormal({median}, {p99}): hedging at {p95:.1} ms added {:.2}%",
            added * 100.0
        );
        assert!(
            b.latency_ms.p99 < a.latency_ms.p99,
            "p99 {} vs {}",
            b.latency_ms.p99,
            a.latency_ms.p99
        );
        let h = b.hedging.expect("a hedged arm reports its hedging");
        assert_eq!(h.sent, b.server_requests - a.server_requests);
        assert!(h.won > 0 && h.won <= h.sent, "{h:?}");
        assert!(a.hedging.is_none() && a.breaker.is_none());
    }
}

/// An upstream that answers every request 503 at once; `n` calls `gap_ms` apart.
fn all_failing(n: u64, gap_ms: f64, breaker: &str) -> Scenario {
    parse(&format!(
        r#"
name = "all-failing"
[load]
requests = {n}
rate = {rate}
arrival = "constant"
[network]
rtt_ms = 0
[upstream]
error_rate = 1.0
[[arms]]
id = "guarded"
policy = "none"
breaker = {breaker}
"#,
        rate = 1000.0 / gap_ms
    ))
}

fn server_requests(s: &Scenario) -> u64 {
    herd_sim::simulate(s, 0).counts.totals().received
}

/// pybreaker's defaults on an all-503 server, as measured against the real library: the
/// 5th failure opens it (and was itself a server request), for 60 s; with
/// `reset_timeout=1`, one probe a second.
#[test]
fn pybreaker_lets_through_what_the_library_does() {
    let s = all_failing(100, 10.0, r#"{ profile = "pybreaker" }"#);
    assert_eq!(server_requests(&s), 5);
    let r = herd_sim::simulate(&s, 0).report(&s, 0);
    let b = r.breaker.expect("a breaker arm reports it");
    assert_eq!(
        (b.rejected, b.opened, b.open_ms),
        (95, Some(1), Some(60_000))
    );
    assert_eq!(r.client_attempts, 5, "a rejection is no attempt");
    let s = all_failing(500, 10.0, r#"{ profile = "pybreaker", open_ms = 1000 }"#);
    assert_eq!(server_requests(&s), 9);
    let b = herd_sim::simulate(&s, 0).report(&s, 0).breaker.unwrap();
    assert_eq!((b.probes, b.opened), (Some(4), Some(5)));
}

/// eapache go-resiliency `New(5, 1, 1s)`, 100 calls 50 ms apart, as measured: 9.
#[test]
fn go_resiliency_lets_through_what_the_library_does() {
    let s = all_failing(100, 50.0, r#"{ profile = "go-resiliency" }"#);
    assert_eq!(server_requests(&s), 9);
}

/// gobreaker opens on the 6th failure in a row, not the 5th.
#[test]
fn gobreaker_opens_on_the_sixth() {
    let s = all_failing(100, 10.0, r#"{ profile = "gobreaker" }"#);
    assert_eq!(server_requests(&s), 6);
}

/// The same seed gives the same bytes, hedges and breakers included.
#[test]
fn guarded_runs_are_deterministic() {
    let s = tail_at_scale(
        20.0,
        200.0,
        r#"hedge = { profile = "grpc-hedging", delay_ms = 30, max_attempts = 3 }
breaker = { profile = "resilience4j" }"#,
    );
    let a = herd_sim::simulate(&s, 1).report(&s, 1);
    let b = herd_sim::simulate(&s, 1).report(&s, 1);
    assert_eq!(a, b);
}

/// Under the brownout, unthrottled hedging multiplies the server's load, while A6's token
/// bucket and Finagle's budget hold it: Finagle's backups within `max_extra_load` of the
/// requests plus 10/s for every 10 s window begun (its budget's reserve).
#[test]
fn in_a_brownout_only_a_throttle_or_a_budget_bounds_hedging() {
    let s = herd_scenario::load("brownout").expect("embedded").scenario;
    let arm = |id: &str| {
        let i = s.arms.iter().position(|a| a.id == id).expect("arm");
        herd_sim::simulate(&s, i).report(&s, i)
    };
    let (none, open, a6, finagle) = (
        arm("no-hedge"),
        arm("grpc-unthrottled"),
        arm("grpc-throttled"),
        arm("finagle-budgeted"),
    );
    assert!(open.load_multiplier >= 1.8, "{}", open.load_multiplier);
    assert!(a6.load_multiplier <= 1.2, "{}", a6.load_multiplier);
    assert!(a6.hedging.unwrap().refused > 0);
    let secs = s.offered_duration().as_secs_f64();
    let bound = 0.05 * finagle.logical_requests as f64 + 100.0 * (secs / 10.0).ceil();
    let sent = finagle.hedging.unwrap().sent;
    assert!((sent as f64) <= bound, "{sent} > {bound}");
    assert_eq!(
        finagle.server_requests,
        none.server_requests + sent,
        "no retries: every extra request is a backup"
    );
}
