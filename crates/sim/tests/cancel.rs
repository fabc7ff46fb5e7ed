//! An attempt a consumer abandons is gone for the upstream one hop after the cancel, as on
//! a socket (the real driver drops the request, which closes its connection, and the
//! upstream drops the handler): the work still runs, but its answer is neither sent nor
//! counted. The same holds for an attempt whose client timeout fires.

use herd_scenario::Scenario;

/// One consumer, one unit, 500 ms of work per request; the unit is abandoned (and
/// re-issued) every 100 ms until it is given up at 250 ms, long before any work ends.
fn scenario(consumer_rules: &str, attempt_timeout_ms: u64) -> Scenario {
    let text = format!(
        r#"
name = "cancel"
[load]
requests = 1
[consumers]
count = 1
rate = 1
{consumer_rules}
[client]
attempt_timeout_ms = {attempt_timeout_ms}
[upstream]
service_time = {{ dist = "constant", ms = 500 }}
[[arms]]
id = "none"
policy = "none"
"#
    );
    herd_scenario::parse(&text, "cancel.toml").expect("valid scenario")
}

#[test]
fn abandoned_attempts_are_not_answered_nor_counted() {
    let s = scenario(
        "timeout_ms = 100\non_timeout = \"abandon\"\ngive_up_ms = 250",
        0,
    );
    let run = herd_sim::simulate(&s, 0);
    let t = run.counts.totals();
    assert_eq!((t.received, t.ok), (3, 0), "{t:?}");
    assert_eq!(run.recorder.failed(), 1);
}

#[test]
fn timed_out_attempts_are_not_answered_nor_counted() {
    let s = scenario("timeout_ms = 10000\ngive_up_ms = 20000", 100);
    let run = herd_sim::simulate(&s, 0);
    let t = run.counts.totals();
    assert!(t.received >= 1 && t.ok == 0, "{t:?}");
    assert_eq!(run.recorder.failed(), 1);
}
