//! No scenario makes herd panic: every numeric key, set to any number TOML can carry, is
//! accepted or refused with `file:line:col: key ...`; an accepted scenario builds what
//! `herd sim` builds before it runs (the offered duration, the demand, each arm's
//! `Retrier` and a few of its decisions, the upstream's fates and service times). And no
//! bytes make the scenario or trace parser panic.

use herd_retry::{Method, Nanos, Outcome, Retrier};
use herd_scenario::trace::TraceReader;
use herd_scenario::{parse, Demand, ScenarioError, MAX_DURATION};
use proptest::prelude::*;
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::path::Path;
use std::time::{Duration, SystemTime};

/// Every numeric key, with a valid value. One scenario with `[consumers]` and one
/// without, so the keys that only apply to one of them are all reachable.
const PLAIN: &str = r#"
name = "p"
seed = {seed}
[load]
requests = {requests}
rate = {rate}
arrival = "constant"
[client]
pool_max_connections = {pool_max_connections}
attempt_timeout_ms = {attempt_timeout_ms}
[upstream]
error_rate = {error_rate}
retry_after_s = {retry_after_s}
reset_rate = {reset_rate}
reset_after_ms = {reset_after_ms}
stall_rate = {stall_rate}
stall_ms = {stall_ms}
workers = {workers}
queue_limit = {queue_limit}
service_time = { dist = "lognormal", median_ms = {median_ms}, p99_ms = {p99_ms} }
[[upstream.incidents]]
start_ms = {start_ms}
duration_ms = {duration_ms}
error_rate = {inc_error_rate}
reset_rate = {inc_reset_rate}
slowdown = {slowdown}
[[arms]]
id = "a"
policy = "undici"
jitter = { kind = "additive", factor = {jitter_factor} }
retries = {retries}
base_ms = {base_ms}
factor = {factor}
cap_ms = {cap_ms}
deadline_ms = {deadline_ms}
retry_after = { min_ms = {ra_min_ms}, max_ms = {ra_max_ms} }
budget = { kind = "percent", percent = {percent}, ttl_ms = {ttl_ms}, min_per_sec = {min_per_sec} }
[[arms]]
id = "b"
policy = "axios-retry"
budget = { kind = "token-bucket", max_tokens = {max_tokens}, token_ratio = {token_ratio} }
[[arms]]
id = "c"
policy = "exponential"
jitter = "decorrelated"
budget = { kind = "quota", initial = {initial}, retry_cost = {retry_cost}, timeout_cost = {timeout_cost}, success_increment = {success_increment} }
[[arms]]
id = "d"
policy = "naive"
budget = { kind = "ratio", ratio = {ratio}, window_ms = {window_ms} }
[[arms]]
id = "e"
policy = "herd"
budget = { kind = "adaptive", k = {k}, window_ms = {window_ms} }
"#;

const CONSUMERS: &str = r#"
name = "c"
[load]
requests = {requests}
[upstream]
service_time = { dist = "exponential", mean_ms = {mean_ms} }
[consumers]
count = {count}
rate = {c_rate}
timeout_ms = {timeout_ms}
max_in_flight = {max_in_flight}
give_up_ms = {give_up_ms}
[[arms]]
id = "a"
policy = "undici"
consumers = { timeout_ms = {arm_timeout_ms}, max_in_flight = {arm_max_in_flight}, give_up_ms = {arm_give_up_ms} }
"#;

const CLOSED: &str = r#"
name = "k"
[upstream]
service_time = { dist = "constant", ms = {ms} }
[consumers]
count = {count}
think_ms = {think_ms}
timeout_ms = 1000
[[arms]]
id = "a"
policy = "axios-retry"
"#;

/// The valid value of each placeholder.
const DEFAULTS: &[(&str, &str)] = &[
    ("seed", "7"),
    ("requests", "20"),
    ("rate", "100"),
    ("pool_max_connections", "8"),
    ("attempt_timeout_ms", "1000"),
    ("error_rate", "0.1"),
    ("retry_after_s", "1"),
    ("reset_rate", "0.1"),
    ("reset_after_ms", "5"),
    ("stall_rate", "0.1"),
    ("stall_ms", "100"),
    ("workers", "4"),
    ("queue_limit", "8"),
    ("median_ms", "10"),
    ("p99_ms", "100"),
    ("start_ms", "50"),
    ("duration_ms", "100"),
    ("inc_error_rate", "0.5"),
    ("inc_reset_rate", "0.1"),
    ("slowdown", "2"),
    ("jitter_factor", "0.2"),
    ("retries", "3"),
    ("base_ms", "100"),
    ("factor", "2"),
    ("cap_ms", "5000"),
    ("deadline_ms", "10000"),
    ("ra_min_ms", "0"),
    ("ra_max_ms", "3000"),
    ("percent", "0.2"),
    ("ttl_ms", "10000"),
    ("min_per_sec", "10"),
    ("max_tokens", "10"),
    ("token_ratio", "0.1"),
    ("initial", "500"),
    ("retry_cost", "5"),
    ("timeout_cost", "10"),
    ("success_increment", "1"),
    ("ratio", "0.1"),
    ("window_ms", "1000"),
    ("k", "2"),
    ("mean_ms", "5"),
    ("count", "10"),
    ("c_rate", "2"),
    ("timeout_ms", "1000"),
    ("max_in_flight", "2"),
    ("give_up_ms", "30000"),
    ("arm_timeout_ms", "500"),
    ("arm_max_in_flight", "1"),
    ("arm_give_up_ms", "10000"),
    ("ms", "1"),
    ("think_ms", "100"),
];

/// A number as TOML can write it: the extremes, the signs, the infinities and NaN.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_owned()),
        Just("-0.0".to_owned()),
        Just("1".to_owned()),
        Just("-1".to_owned()),
        Just("1e-300".to_owned()),
        Just("5e-324".to_owned()),
        Just("1e30".to_owned()),
        Just("1e308".to_owned()),
        Just("-1e308".to_owned()),
        Just("inf".to_owned()),
        Just("-inf".to_owned()),
        Just("nan".to_owned()),
        Just(i64::MAX.to_string()),
        Just(i64::MIN.to_string()),
        Just(u32::MAX.to_string()),
        (0u32..100).prop_map(|x| x.to_string()),
        (-1e3f64..1e12).prop_map(|x| format!("{x:e}")),
        proptest::num::f64::NORMAL.prop_map(|x| format!("{x:e}")),
    ]
}

/// `template` with placeholder `keys[i]` set to `values[i]`, the rest to their defaults.
fn fill(template: &str, set: &[(usize, String)]) -> String {
    let mut text = template.to_owned();
    for (i, (name, default)) in DEFAULTS.iter().enumerate() {
        let value = set
            .iter()
            .rev()
            .find(|(j, _)| j % DEFAULTS.len() == i)
            .map_or(*default, |(_, v)| v.as_str());
        text = text.replace(&format!("{{{name}}}"), value);
    }
    text
}

/// Parses, and for an accepted scenario builds and exercises what a run builds first.
/// With `named`, a refusal must name the file, line and key (a syntax error need not have
/// a key).
fn exercise(text: &str, named: bool) {
    let s = match parse(text, "prop.toml") {
        Ok(s) => s,
        Err(_) if !named => return,
        Err(e) => {
            let m = e.to_string();
            assert!(
                matches!(&e, ScenarioError::Invalid { line: Some(_), key: Some(k), .. } if !k.is_empty()),
                "an error without file:line:key: {m}\n{text}"
            );
            assert!(m.starts_with("prop.toml:"), "{m}");
            return;
        }
    };
    assert!(s.offered_duration() <= MAX_DURATION);
    let demand = Demand::new(&s).expect("no trace to open");
    for u in demand.take(50) {
        assert!(u.at() <= MAX_DURATION);
    }
    let mut rng = Pcg64Mcg::seed_from_u64(1);
    for i in 0..50u64 {
        let t = Duration::from_millis(i * 37);
        let _ = s.upstream.fate(t, &mut rng);
        let st = s.upstream.service_time.sample(&mut rng);
        assert!(st <= MAX_DURATION);
    }
    let retry_after = s.upstream.retry_after_s.to_string();
    let outcomes = [
        Outcome::status(503),
        Outcome::from_response(503, Some(&retry_after), SystemTime::UNIX_EPOCH),
    ];
    for strategy in s.arms.iter().filter_map(|a| a.strategy()) {
        let mut r = Retrier::new(strategy);
        for outcome in &outcomes {
            let mut now = Nanos::ZERO;
            let mut req = r.begin(now);
            for _ in 0..12 {
                let _ = r.attempt_timeout(&req, now, s.client.attempt_timeout);
                if !r.admit(&mut req, now, &mut rng) {
                    break;
                }
                match r.decide(&mut req, Method::Get, outcome, now, &mut rng) {
                    herd_retry::Decision::Retry { after } => now = now + after,
                    _ => break,
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// One or two keys of the plain scenario set to any number.
    #[test]
    fn plain_keys(set in prop::collection::vec((0usize..DEFAULTS.len(), number()), 1..3)) {
        exercise(&fill(PLAIN, &set), true);
    }

    /// One or two keys of the consumer scenarios set to any number.
    #[test]
    fn consumer_keys(set in prop::collection::vec((0usize..DEFAULTS.len(), number()), 1..3)) {
        exercise(&fill(CONSUMERS, &set), true);
        exercise(&fill(CLOSED, &set), true);
    }

    /// Arbitrary bytes, and arbitrary edits of a valid scenario, into the parser.
    #[test]
    fn scenario_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400), at in any::<prop::sample::Index>(), cut in 0usize..40) {
        let _ = parse(&String::from_utf8_lossy(&bytes), "bytes.toml");
        let valid = fill(PLAIN, &[]);
        let i = at.index(valid.len());
        let mut edited = valid.as_bytes()[..i].to_vec();
        edited.extend_from_slice(&bytes[..bytes.len().min(cut)]);
        edited.extend_from_slice(&valid.as_bytes()[(i + cut).min(valid.len())..]);
        if let Ok(text) = String::from_utf8(edited) {
            exercise(&text, false);
        }
    }

    /// Arbitrary bytes into the trace reader, behind a valid header or not, with any
    /// time scale.
    #[test]
    fn trace_bytes(bytes in prop::collection::vec(any::<u8>(), 0..400), header in any::<bool>(), skip in any::<bool>(), scale in prop_oneof![Just(1.0), Just(1e300), Just(1e-300), 0.0f64..10.0]) {
        let mut input = if header { b"t_ms,consumer,method,path\n".to_vec() } else { vec![] };
        input.extend_from_slice(&bytes);
        let mut r = TraceReader::new(&input[..], Path::new("t.csv"), scale, skip);
        while let Ok(Some(l)) = r.next_line() {
            assert!(l.at <= MAX_DURATION);
        }
    }

    /// Arbitrary bytes into the access-log importer, in every format, skipping or not:
    /// an error or a trace, never a panic; and what it writes, the trace reader reads.
    #[test]
    fn access_log_bytes(bytes in prop::collection::vec(any::<u8>(), 0..600), prefix in prop_oneof![
        Just(&b""[..]),
        Just(&b"127.0.0.1 - - [03/Dec/2026:06:40:01 +0000] \"GET / HTTP/1.1\" 200 5 \"-\" \"x\"\n"[..]),
        Just(&b"{\"time\":1.5,\"method\":\"GET\",\"path\":\"/\"}\n"[..]),
    ], format in 0..3u8, skip in any::<bool>(), spread in 0..3u8, fold in any::<bool>()) {
        use herd_scenario::trace::import::{import, ImportOptions, LogFormat, Spread};
        let format = [LogFormat::Common, LogFormat::Combined, LogFormat::Json][format as usize];
        let opts = ImportOptions {
            format,
            clf_consumer: Default::default(),
            json: Default::default(),
            skip_bad_lines: skip,
            spread: [None, Some((Spread::Uniform, 1)), Some((Spread::Poisson, 1))][spread as usize],
            fold_retries: fold.then(|| std::time::Duration::from_millis(500)),
        };
        let mut input = prefix.to_vec();
        input.extend_from_slice(&bytes);
        let mut out = Vec::new();
        if let Ok(done) = import(&input[..], Path::new("a.log"), &opts, &mut out) {
            let r = TraceReader::new(&out[..], Path::new("t.csv"), 1.0, false);
            prop_assert_eq!(r.count() as u64, done.lines);
        }
    }

    /// Trace lines with extreme times.
    #[test]
    fn trace_times(times in prop::collection::vec(number(), 1..6)) {
        let mut input = "t_ms,consumer\n".to_owned();
        for t in &times {
            input.push_str(&format!("{t},0\n"));
        }
        let mut r = TraceReader::new(input.as_bytes(), Path::new("t.csv"), 1.0, false);
        while let Ok(Some(l)) = r.next_line() {
            assert!(l.at <= MAX_DURATION);
        }
    }
}

#[test]
fn the_defaults_parse() {
    for t in [PLAIN, CONSUMERS, CLOSED] {
        let text = fill(t, &[]);
        parse(&text, "ok.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        exercise(&text, true);
    }
}
