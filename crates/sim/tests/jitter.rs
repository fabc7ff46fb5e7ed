//! `[network] jitter_ms`: each way of each trip draws an exponential extra delay. A
//! no-retry arm against an upstream that answers at once then sees round trips of
//! `rtt + X + Y`, X and Y exponential with mean `jitter`: mean `rtt + 2·jitter`, median
//! `rtt + 1.678·jitter` (a gamma of shape 2). A scenario without the key draws nothing.

use herd_scenario::Scenario;

fn scenario(network: &str) -> Scenario {
    let text = format!(
        r#"
name = "jitter"
seed = 7
[load]
requests = 20000
rate = 1000
arrival = "poisson"
[upstream]
error_rate = 0.0
service_time = {{ dist = "constant", ms = 0 }}
[network]
{network}
[[arms]]
id = "none"
policy = "none"
"#
    );
    herd_scenario::parse(&text, "jitter.toml").expect("valid scenario")
}

#[test]
fn round_trips_spread_as_two_exponential_ways() {
    let s = scenario("rtt_ms = 1\njitter_ms = 0.5");
    let run = herd_sim::simulate(&s, 0);
    let h = run.recorder.histogram();
    let mean_ms = h.mean() / 1000.0;
    let p50_ms = h.value_at_quantile(0.5) as f64 / 1000.0;
    assert!((mean_ms - 2.0).abs() < 0.02 * 2.0, "mean {mean_ms} ms");
    assert!((p50_ms - 1.839).abs() < 0.02 * 1.839, "p50 {p50_ms} ms");
    assert!(h.min() as f64 / 1000.0 >= 0.999, "min {} µs", h.min());
}

#[test]
fn without_jitter_every_trip_is_the_round_trip_and_with_it_the_same_seed_repeats() {
    let flat = herd_sim::simulate(&scenario("rtt_ms = 1"), 0);
    let zero = herd_sim::simulate(&scenario("rtt_ms = 1\njitter_ms = 0"), 0);
    let h = flat.recorder.histogram();
    assert_eq!((h.min() / 10, h.max() / 10), (100, 100), "1 ms each");
    assert_eq!(h, zero.recorder.histogram());
    let s = scenario("rtt_ms = 1\njitter_ms = 0.5");
    let (a, b) = (herd_sim::simulate(&s, 0), herd_sim::simulate(&s, 0));
    assert_eq!(a.recorder.histogram(), b.recorder.histogram());
}

/// An arm with a breaker sends through the guarded client, which takes the link's
/// way-there jitter from the plain client: its round trips spread as the plain arm's do,
/// and the same seed repeats. (resilience4j's breaker lets calls run side by side;
/// pybreaker's lock would queue them, one round trip each.)
#[test]
fn a_guarded_arm_draws_the_same_jitter() {
    let text = scenario("rtt_ms = 1\njitter_ms = 0.5");
    let mut s = text.clone();
    s.arms[0].breaker = herd_scenario::parse(
        "name = \"b\"\n[[arms]]\nid = \"b\"\npolicy = \"none\"\nbreaker = { profile = \"resilience4j\" }\n",
        "b.toml",
    )
    .expect("valid")
    .arms[0]
        .breaker;
    assert!(s.arms[0].is_guarded());
    let (a, b) = (herd_sim::simulate(&s, 0), herd_sim::simulate(&s, 0));
    let h = a.recorder.histogram();
    assert_eq!(h, b.recorder.histogram());
    let mean_ms = h.mean() / 1000.0;
    assert!((mean_ms - 2.0).abs() < 0.02 * 2.0, "mean {mean_ms} ms");
    assert!(h.min() as f64 / 1000.0 >= 0.999, "min {} µs", h.min());
}
