//! `[consumers]` and `[load] trace` validation: every bad value names file, line and key.

use herd_retry::OnTimeout;
use herd_scenario::parse;
use std::time::Duration;

const HEAD: &str = "name = \"c\"\n[load]\nrequests = 100\n";
const ARM: &str = "[[arms]]\nid = \"a\"\npolicy = \"none\"\n";

fn with(consumers: &str) -> String {
    format!("{HEAD}[consumers]\n{consumers}\n{ARM}")
}

fn msg(text: &str) -> String {
    parse(text, "c.toml").unwrap_err().to_string()
}

#[test]
fn a_valid_block_sets_the_demand_rate() {
    let s = parse(
        &with("count = 300\nrate = 0.5\ntimeout_ms = 3000\non_timeout = \"abandon\"\nmax_in_flight = 1\ngive_up_ms = 20000"),
        "c.toml",
    )
    .unwrap();
    let c = s.consumers.unwrap();
    assert_eq!((c.count, c.rate), (300, Some(0.5)));
    assert_eq!(c.rules.on_timeout(), OnTimeout::Abandon);
    assert_eq!(c.rules.max_in_flight(), 1);
    assert_eq!(c.rules.timeout(), Duration::from_secs(3));
    assert_eq!(c.rules.give_up(), Duration::from_secs(20));
    assert_eq!(s.load.rate, 150.0);
    let closed = parse(
        &with("count = 10\nthink_ms = 500\ntimeout_ms = 1000"),
        "c.toml",
    )
    .unwrap();
    assert_eq!(closed.load.rate, 20.0);
    assert_eq!(
        closed.consumers.unwrap().rules.think(),
        Some(Duration::from_millis(500))
    );
}

#[test]
fn bad_consumer_values_name_the_key() {
    for (body, key, what) in [
        (
            "count = 3\nrate = 1\ntimeout_ms = 0",
            "consumers.timeout_ms",
            "greater than 0 with on_timeout = \"reissue\"",
        ),
        (
            "count = 3\nrate = 1\ntimeout_ms = 0\non_timeout = \"abandon\"",
            "consumers.timeout_ms",
            "\"abandon\"",
        ),
        (
            "count = 3\nrate = 1\nthink_ms = 10\ntimeout_ms = 5",
            "consumers.think_ms",
            "exclusive",
        ),
        (
            "count = 3\ntimeout_ms = 5",
            "key `consumers`",
            "needs `rate`",
        ),
        (
            "count = 0\nrate = 1\ntimeout_ms = 5",
            "consumers.count",
            "at least 1",
        ),
        (
            "count = 3\nrate = -1\ntimeout_ms = 5",
            "consumers.rate",
            "greater than 0",
        ),
        (
            "count = 3\nrate = 1\ntimeout_ms = 5\non_timeout = \"retry\"",
            "consumers.on_timeout",
            "unknown on_timeout",
        ),
        (
            "count = 3\nrate = 1\ntimeout_ms = 5\nmax_in_flight = -2",
            "consumers.max_in_flight",
            "0 or more",
        ),
        (
            "count = 3\nrate = 1\ntimeout_ms = 5\ngive_up_ms = 0",
            "consumers.give_up_ms",
            "greater than 0",
        ),
        (
            "count = 3\nrate = 1\ntimeout_ms = 5\nthink_ms = 0",
            "consumers.think_ms",
            "",
        ),
        (
            "count = 3\nrate = 1\ntimeout_ms = 5\nbogus = 1",
            "consumers.bogus",
            "unknown field",
        ),
    ] {
        let m = msg(&with(body));
        assert!(m.starts_with("c.toml:"), "{body}: {m}");
        assert!(m.contains(key) && m.contains(what), "{body}: {m}");
    }
    // The line is the key's: timeout_ms is on line 7.
    let m = msg(&with("count = 3\nrate = 1\ntimeout_ms = 0"));
    assert!(m.starts_with("c.toml:7:"), "{m}");
}

#[test]
fn consumers_exclude_load_rate_and_real_clients() {
    let m = msg(&format!(
        "name = \"c\"\n[load]\nrate = 5\n[consumers]\ncount = 1\nrate = 1\ntimeout_ms = 5\n{ARM}"
    ));
    assert!(m.contains("load.rate") && m.contains("[consumers]"), "{m}");
    let m = msg(&with(
        "count = 1\nrate = 1\ntimeout_ms = 5\n[[arms]]\nid = \"n\"\nclient = \"node-undici\"",
    ));
    assert!(m.contains("arms[0].client") && m.contains("replica"), "{m}");
}

#[test]
fn trace_keys() {
    let s = parse(
        &format!("name = \"t\"\n[load]\ntrace = \"traces/x.csv\"\ntime_scale = 0.5\n{ARM}"),
        "dir/s.toml",
    )
    .unwrap();
    let t = s.load.trace.unwrap();
    assert_eq!(t.path, std::path::Path::new("dir/traces/x.csv"));
    assert_eq!(t.time_scale, 0.5);
    assert_eq!(
        s.load.requests,
        u64::MAX,
        "a cap to be set by trace::resolve"
    );
    for (load, key) in [
        ("trace = \"x.csv\"\nrate = 3", "load.rate"),
        ("trace = \"x.csv\"\narrival = \"constant\"", "load.arrival"),
        ("trace = \"x.csv\"\ntime_scale = 0", "load.time_scale"),
        ("time_scale = 2", "load.time_scale"),
        ("trace = \"\"", "load.trace"),
    ] {
        let m = msg(&format!("name = \"t\"\n[load]\n{load}\n{ARM}"));
        assert!(m.contains(key), "{load}: {m}");
    }
    let m = msg(&format!("name = \"t\"\n[load]\ntrace = \"x.csv\"\n[consumers]\ncount = 2\nrate = 1\ntimeout_ms = 9\n{ARM}"));
    assert!(m.contains("consumers.rate") && m.contains("trace"), "{m}");
}
