//! The parser's checks, one scenario text at a time: what is accepted, and that every
//! refusal names the file, line and key.

use super::*;
use crate::RateLimit;
use herd_retry::Jitter;

const OK: &str = r#"
name = "t"
seed = 3
[load]
requests = 10
rate = 50
[upstream]
error_rate = 0.1
service_time = { dist = "lognormal", median_ms = 10, p99_ms = 100 }
[[upstream.incidents]]
start_ms = 100
duration_ms = 200
hold = true
[[arms]]
id = "a"
policy = "axios-retry"
jitter = "none"
[[arms]]
id = "b"
policy = "undici"
jitter = { kind = "proportional", factor = 0.5 }
"#;

#[test]
fn parses_a_valid_scenario() {
    let s = parse(OK, "t.toml").unwrap();
    assert_eq!(s.seed, 3);
    assert_eq!(s.load.requests, 10);
    assert_eq!(s.arms.len(), 2);
    let policy = |i: usize| s.arms[i].strategy().unwrap().policy;
    assert_eq!(policy(0).backoff().jitter, Jitter::None);
    assert_eq!(policy(1).backoff().jitter, Jitter::Proportional(0.5));
    assert!(s.upstream.incidents[0].hold);
    assert_eq!(s.client.pool_max_connections, 256);
}

fn msg(text: &str) -> String {
    parse(text, "bad.toml").unwrap_err().to_string()
}

#[test]
fn errors_name_file_line_and_key() {
    let m = msg(&OK.replace("error_rate = 0.1", "error_rate = 1.5"));
    assert!(m.starts_with("bad.toml:8:"), "{m}");
    assert!(
        m.contains("upstream.error_rate") && m.contains("1.5"),
        "{m}"
    );

    let m = msg(&OK.replace("rate = 50", "rate = -5"));
    assert!(
        m.starts_with("bad.toml:6:") && m.contains("load.rate"),
        "{m}"
    );

    let m = msg(&OK.replace("seed = 3", "seed = 3\nsped = 4"));
    assert!(m.starts_with("bad.toml:4:") && m.contains("sped"), "{m}");

    let m = msg(&OK.replace("jitter = \"none\"", "jitter = \"fulll\""));
    assert!(m.contains("arms[0].jitter") && m.contains("fulll"), "{m}");

    let m = msg(&OK.replace("requests = 10", "requests = \"ten\""));
    assert!(
        m.starts_with("bad.toml:5:") && m.contains("load.requests"),
        "{m}"
    );

    let m = msg(&OK.replace("hold = true", "hold = true\nhodl = 1"));
    assert!(m.contains("hodl"), "{m}");

    let m = msg(&OK.replace("id = \"b\"", "id = \"a\""));
    assert!(m.contains("duplicate arm id"), "{m}");

    // Times past the bound used to panic in `Duration::from_secs_f64`.
    let m = msg(&OK.replace("error_rate = 0.1", "stall_ms = 1e30"));
    assert!(
        m.starts_with("bad.toml:8:") && m.contains("upstream.stall_ms"),
        "{m}"
    );
    assert!(m.contains("365 days") && m.contains("1e30"), "{m}");
    let m = msg(&OK.replace("rate = 50", "rate = 1e-300"));
    assert!(m.contains("load.rate") && m.contains("365 days"), "{m}");
    let m = msg(&OK.replace("hold = true", "hold = true\nslowdown = inf"));
    assert!(m.contains("slowdown"), "{m}");
    let m = msg(&OK.replace("error_rate = 0.1", "retry_after_s = 9223372036854775807"));
    assert!(m.contains("upstream.retry_after_s"), "{m}");
    let m = msg(&OK.replace("jitter = \"none\"", "retries = 70"));
    assert!(
        m.contains("arms[0].retries") && m.contains("365 days"),
        "{m}"
    );

    let m = msg("name = \"x\"\n[load\n");
    assert!(m.starts_with("bad.toml:2:"), "{m}");
}

#[test]
fn budgets_retry_after_and_deadlines() {
    use herd_retry::{AboveMax, BudgetConfig};
    let text = OK.replace(
        "jitter = \"none\"",
        "jitter = \"none\"\nbudget = { kind = \"token-bucket\", max_tokens = 20 }\nretry_after = { max_ms = 3000, above_max = \"give-up\" }\ndeadline_ms = 5000",
    ) + "[[arms]]\nid = \"h\"\npolicy = \"herd\"\n[[arms]]\nid = \"h2\"\npolicy = \"herd\"\nbudget = { kind = \"none\" }\ndeadline_ms = 0\n";
    let s = parse(&text, "t.toml").unwrap();
    let st = |i: usize| s.arms[i].strategy().unwrap();
    let a = st(0);
    assert!(
        matches!(a.budget, Some(BudgetConfig::TokenBucket(c)) if c.max_tokens() == 20.0 && c.token_ratio() == 0.1)
    );
    assert_eq!(
        a.policy.retry_after().max,
        std::time::Duration::from_secs(3)
    );
    assert_eq!(a.policy.retry_after().above_max, AboveMax::GiveUp);
    assert_eq!(a.deadline, Some(std::time::Duration::from_secs(5)));
    assert!(
        matches!(st(2).budget, Some(BudgetConfig::Percent(_))),
        "herd has a default budget"
    );
    assert_eq!(st(2).deadline, Some(std::time::Duration::from_secs(10)));
    assert_eq!(st(3).budget, None);
    assert_eq!(st(3).deadline, None);

    let m = msg(&OK.replace(
        "jitter = \"none\"",
        "budget = { kind = \"percent\", percent = -1 }",
    ));
    assert!(m.contains("arms[0].budget.percent"), "{m}");
    let m = msg(&OK.replace(
        "jitter = \"none\"",
        "budget = { kind = \"quota\", percent = 0.1 }",
    ));
    assert!(
        m.starts_with("bad.toml:17:") && m.contains("arms[0].budget.percent"),
        "{m}"
    );
    assert!(
        m.contains("unknown field") && m.contains("retry_cost"),
        "{m}"
    );
    // herd-retry's constructors check the values; the messages name the scenario's keys.
    for (budget, key, text) in [
        (
            "kind = \"percent\", ttl_ms = 500",
            "arms[0].budget.ttl_ms",
            "must be between 1000 and 60000 (Finagle's range)",
        ),
        (
            "kind = \"percent\", percent = -1",
            "arms[0].budget.percent",
            "must be at least 0 and at most 1000, got -1",
        ),
        (
            "kind = \"token-bucket\", token_ratio = 2",
            "arms[0].budget.token_ratio",
            "must be above 0 and at most 1, got 2",
        ),
        (
            "kind = \"adaptive\", k = 0.5",
            "arms[0].budget.k",
            "must be 1 or more, got 0.5",
        ),
        (
            "kind = \"ratio\", window_ms = 0",
            "arms[0].budget.window_ms",
            "must be greater than 0",
        ),
    ] {
        let m = msg(&OK.replace("jitter = \"none\"", &format!("budget = {{ {budget} }}")));
        assert!(m.contains(key) && m.ends_with(text), "{budget}: {m}");
    }
    let m = msg(&OK.replace("jitter = \"none\"", "budget = { kind = \"leaky\" }"));
    assert!(
        m.starts_with("bad.toml:17:") && m.contains("arms[0].budget.kind"),
        "{m}"
    );
    for kind in [
        "leaky",
        "none",
        "percent",
        "token-bucket",
        "quota",
        "ratio",
        "adaptive",
    ] {
        assert!(m.contains(kind), "{m}");
    }
    let m = msg(&OK.replace("jitter = \"none\"", "budget = { percent = 0.1 }"));
    assert!(m.contains("arms[0].budget") && m.contains("kind"), "{m}");
    let m = msg(&OK.replace(
        "jitter = \"none\"",
        "budget = { kind = \"quota\", initial = 1.5 }",
    ));
    assert!(m.contains("arms[0].budget"), "{m}");
    let m = msg(&OK.replace(
        "jitter = \"none\"",
        "retry_after = { above_max = \"sometimes\" }",
    ));
    assert!(m.contains("arms[0].retry_after.above_max"), "{m}");
}

#[test]
fn real_clients() {
    let text = OK.to_string() + "[[arms]]\nid = \"n\"\nclient = \"node-undici\"\n[[arms]]\nid = \"r\"\nclient = \"tower-retry\"\n";
    let s = parse(&text, "t.toml").unwrap();
    assert!(
        matches!(s.arms[2].client, ArmClient::External(c) if c.id == "node-undici"),
        "{:?}",
        s.arms[2].client
    );
    assert_eq!(s.arms[2].strategy(), None);
    assert_eq!(s.arms[3].client, ArmClient::Rust(RustPeer::TowerRetry));
    assert!(s.arms[0].client.is_replica());
    let m = msg(&(OK.to_string() + "[[arms]]\nid = \"n\"\nclient = \"node-fetch\"\n"));
    assert!(
        m.contains("arms[2].client") && m.contains("node-fetch"),
        "{m}"
    );
    let m =
        msg(&(OK.to_string()
            + "[[arms]]\nid = \"n\"\nclient = \"node-undici\"\njitter = \"full\"\n"));
    assert!(
        m.contains("arms[2].jitter") && m.contains("does not apply"),
        "{m}"
    );
    let m = msg(&(OK.to_string() + "[[arms]]\nid = \"n\"\n"));
    assert!(m.contains("arms[2].policy"), "{m}");
}

#[test]
fn command_arms_and_options() {
    let toml = "name = \"c\"\n[[arms]]\nid = \"mine\"\nclient = { command = [\"python3\", \"-u\", \"./a.py\"], cwd = \"sub\" }\noptions = { retries = 2, names = [\"x\"] }\n";
    let s = parse(toml, "/srv/scen/c.toml").unwrap();
    let ArmClient::Command(c) = &s.arms[0].client else {
        panic!("{:?}", s.arms[0].client)
    };
    // The program with no slash stays a PATH lookup; a flag is left alone.
    assert_eq!(c.argv[..2], ["python3", "-u"]);
    assert_eq!(c.cwd, std::path::Path::new("/srv/scen/sub"));
    assert_eq!(
        s.arms[0].options.as_deref(),
        Some(r#"{"names":["x"],"retries":2}"#)
    );
    let e = parse(
        "name = \"c\"\n[[arms]]\nid = \"r\"\npolicy = \"none\"\noptions = { a = 1 }\n",
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("arms[0].options"), "{e}");
    let e = parse(
        "name = \"c\"\n[[arms]]\nid = \"m\"\nclient = { commnd = [\"x\"] }\n",
        "x.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("unknown field `commnd`"), "{e}");
}

#[test]
fn lanes_are_the_drivers_choice_unless_set_and_at_least_one() {
    assert_eq!(parse(OK, "t.toml").unwrap().load.lanes, None);
    let s = parse(
        &OK.replace("rate = 50\n", "rate = 50\nlanes = 3\n"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(s.load.lanes, Some(3));
    let m = msg(&OK.replace("rate = 50\n", "rate = 50\nlanes = 0\n"));
    assert!(
        m.starts_with("bad.toml:7:") && m.contains("load.lanes"),
        "{m}"
    );
    assert!(m.contains("at least 1"), "{m}");
}

#[test]
fn preconnect_defaults_to_none_and_stays_within_the_pool() {
    assert_eq!(parse(OK, "t.toml").unwrap().client.preconnect, 0);
    let with = |n: u32| {
        OK.replace(
            "[upstream]\n",
            &format!("[client]\npool_max_connections = 8\npreconnect = {n}\n[upstream]\n"),
        )
    };
    assert_eq!(parse(&with(8), "t.toml").unwrap().client.preconnect, 8);
    let m = msg(&with(9));
    assert!(
        m.starts_with("bad.toml:9:") && m.contains("client.preconnect"),
        "{m}"
    );
    assert!(m.contains("at most pool_max_connections (8)"), "{m}");
}

#[test]
fn backlog_defaults_and_must_be_positive() {
    assert_eq!(
        parse(OK, "t.toml").unwrap().load.backlog,
        crate::DEFAULT_BACKLOG
    );
    let s = parse(
        &OK.replace("rate = 50\n", "rate = 50\nbacklog = 64\n"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(s.load.backlog, 64);
    let m = msg(&OK.replace("rate = 50\n", "rate = 50\nbacklog = 0\n"));
    assert!(
        m.starts_with("bad.toml:7:") && m.contains("load.backlog"),
        "{m}"
    );
    assert!(m.contains("at least 1"), "{m}");
}

#[test]
fn coalescing_has_a_default_may_be_off_and_is_bounded() {
    let load = |line: &str| OK.replace("rate = 50\n", &format!("rate = 50\n{line}\n"));
    assert_eq!(
        parse(OK, "t.toml").unwrap().load.coalesce,
        crate::DEFAULT_COALESCE
    );
    let off = parse(&load("coalesce_us = 0"), "t.toml").unwrap();
    assert_eq!(off.load.coalesce, Duration::ZERO);
    let ms = parse(&load("coalesce_us = 1000"), "t.toml").unwrap();
    assert_eq!(ms.load.coalesce, Duration::from_millis(1));
    for (bad, says) in [
        ("coalesce_us = -1", "must be 0 or more, got -1"),
        (
            "coalesce_us = 100001",
            "must be at most 100000 (µs), got 100001",
        ),
    ] {
        let m = msg(&load(bad));
        assert!(
            m.starts_with("bad.toml:7:") && m.contains("load.coalesce_us") && m.contains(says),
            "{bad}: {m}"
        );
    }
}

/// `OK` with `[upstream.rate_limit]` holding `body` (its first key on line 15).
fn limited(body: &str) -> String {
    OK.replace(
        "[[arms]]\nid = \"a\"",
        &format!("[upstream.rate_limit]\n{body}\n[[arms]]\nid = \"a\""),
    )
}

#[test]
fn rate_limits_read_as_nginx_writes_them() {
    let rl = |body: &str| parse(&limited(body), "t.toml").unwrap().upstream.rate_limit;
    assert_eq!(parse(OK, "t.toml").unwrap().upstream.rate_limit, None);
    let r = rl("rate = 200\nburst = 20\nnodelay = true").unwrap();
    assert_eq!(
        r,
        RateLimit {
            milli_rate: 200_000,
            burst: 20,
            delay: RateLimit::NODELAY,
            status: 503,
            retry_after_s: 0,
        }
    );
    // nginx's defaults: no burst, every request over the rate delayed, 503.
    let r = rl("rate = \"30r/m\"").unwrap();
    assert_eq!((r.milli_rate, r.burst, r.delay, r.status), (500, 0, 0, 503));
    assert_eq!(rl("rate = \"1r/m\"").unwrap().milli_rate, 16);
    assert_eq!(rl("rate = \"7r/s\"").unwrap().milli_rate, 7000);
    assert_eq!(rl("rate = 0.5").unwrap().milli_rate, 500);
    let r =
        rl("rate = 10\nburst = 12\ndelay = 8\nstatus = 429\nretry_after_s = 2\nkey = \"global\"")
            .unwrap();
    assert_eq!((r.delay, r.status, r.retry_after_s), (8, 429, 2));
}

#[test]
fn rate_limit_errors_name_the_line_and_key() {
    let m = |body: &str| msg(&limited(body));
    let cases = [
        ("rate = 0", 15, "upstream.rate_limit.rate", "greater than 0"),
        ("rate = 0.0001", 15, "upstream.rate_limit.rate", "0.001"),
        ("rate = 2e9", 15, "upstream.rate_limit.rate", "at most"),
        ("rate = \"200r/h\"", 15, "upstream.rate_limit.rate", "30r/m"),
        ("rate = \"0r/s\"", 15, "upstream.rate_limit.rate", "from 1"),
        ("rate = true", 15, "upstream.rate_limit.rate", "200r/s"),
        (
            "rate = 1\nburst = -1",
            16,
            "upstream.rate_limit.burst",
            "0 or more",
        ),
        (
            "rate = 1\nnodelay = true\ndelay = 2",
            17,
            "upstream.rate_limit.delay",
            "nodelay",
        ),
        (
            "rate = 1\nstatus = 200",
            16,
            "upstream.rate_limit.status",
            "400 to 599",
        ),
        (
            "rate = 1\nkey = \"consumer\"",
            16,
            "upstream.rate_limit.key",
            "not modelled",
        ),
        (
            "rate = 1\nkey = \"ip\"",
            16,
            "upstream.rate_limit.key",
            "unknown key",
        ),
        (
            "rate = 1\nretry_after_s = -1",
            16,
            "upstream.rate_limit.retry_after_s",
            "0 or more",
        ),
        (
            "rate = 1\nbrust = 3",
            16,
            "upstream.rate_limit.brust",
            "unknown field",
        ),
        (
            "burst = 3",
            14,
            "upstream.rate_limit",
            "missing field `rate`",
        ),
    ];
    for (body, line, key, says) in cases {
        let m = m(body);
        assert!(
            m.starts_with(&format!("bad.toml:{line}:")) && m.contains(key) && m.contains(says),
            "{body}: {m}"
        );
    }
}

/// axios' timeout bounds the whole request: the profile's deadline is the client's attempt
/// timeout, unless the arm sets one (0: none).
#[test]
fn axios_deadline_is_the_attempt_timeout() {
    let ms = std::time::Duration::from_millis;
    let text = OK.replace("[load]", "[client]\nattempt_timeout_ms = 1500\n[load]")
        + "[[arms]]\nid = \"c\"\npolicy = \"axios-retry\"\ndeadline_ms = 0\n";
    let s = parse(&text, "t.toml").unwrap();
    let st = |i: usize| s.arms[i].strategy().unwrap();
    assert_eq!(st(0).deadline, Some(ms(1500)));
    assert_eq!(st(1).deadline, None, "undici has no deadline");
    assert_eq!(st(2).deadline, None);
    let s = parse(OK, "t.toml").unwrap();
    assert_eq!(s.arms[0].strategy().unwrap().deadline, None, "no timeout");
}

/// Envoy's circuit breaker as a scenario writes it: the profile's `max_retries` 3 by
/// default, another `max_retries`, or the retry budget, never both.
#[test]
fn envoy_concurrency_budget() {
    use herd_retry::budget::ConcurrencyConfig;
    use herd_retry::BudgetConfig;
    let arms = "[[arms]]\nid = \"e\"\npolicy = \"envoy\"\n[[arms]]\nid = \"e2\"\npolicy = \"envoy\"\nbudget = { kind = \"concurrency\", max_retries = 10 }\n[[arms]]\nid = \"e3\"\npolicy = \"envoy\"\nbudget = { kind = \"concurrency\", budget_percent = 25 }\n[[arms]]\nid = \"i\"\npolicy = \"istio-default\"\n";
    let s = parse(&(OK.to_owned() + arms), "t.toml").unwrap();
    // OK's own two arms come first.
    let budget = |i: usize| s.arms[i + 1].strategy().unwrap().budget;
    let c = BudgetConfig::Concurrency;
    assert_eq!(budget(1), Some(c(ConcurrencyConfig::max_retries(3))));
    assert_eq!(budget(2), Some(c(ConcurrencyConfig::max_retries(10))));
    let b = ConcurrencyConfig::retry_budget(25.0, 3).unwrap();
    assert_eq!(budget(3), Some(c(b)));
    assert_eq!(budget(4), Some(c(ConcurrencyConfig::ISTIO)));
    let both = "budget = { kind = \"concurrency\", max_retries = 3, min_retry_concurrency = 1 }";
    let m = msg(&OK.replace("jitter = \"none\"", both));
    assert!(
        m.contains("arms[0].budget.max_retries") && m.contains("one or the other"),
        "{m}"
    );
    let m = msg(&OK.replace(
        "jitter = \"none\"",
        "budget = { kind = \"concurrency\", budget_percent = 120 }",
    ));
    assert!(m.contains("arms[0].budget.budget_percent"), "{m}");
}
