//! `[network] rtt_ms`: default, zero, and every bad value named by file, line and key.

use herd_scenario::parse;
use std::time::Duration;

const BODY: &str = "name = \"n\"\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n";

fn with(network: &str) -> String {
    format!("{BODY}[network]\n{network}\n")
}

#[test]
fn default_is_a_fifth_of_a_millisecond() {
    let s = parse(BODY, "n.toml").unwrap();
    assert_eq!(s.network.rtt, Duration::from_micros(200));
    let s = parse(&with(""), "n.toml").unwrap();
    assert_eq!(s.network.rtt, Duration::from_micros(200));
}

#[test]
fn zero_and_fractions_are_allowed() {
    let s = parse(&with("rtt_ms = 0"), "n.toml").unwrap();
    assert_eq!(s.network.rtt, Duration::ZERO);
    let s = parse(&with("rtt_ms = 1.5"), "n.toml").unwrap();
    assert_eq!(s.network.rtt, Duration::from_micros(1500));
}

#[test]
fn negative_nan_and_infinite_are_refused_with_file_line_and_key() {
    for bad in ["-1", "nan", "inf", "-inf"] {
        let m = parse(&with(&format!("rtt_ms = {bad}")), "n.toml")
            .unwrap_err()
            .to_string();
        assert!(
            m.starts_with("n.toml:6:") && m.contains("network.rtt_ms"),
            "{bad}: {m}"
        );
    }
    let m = parse(&with("rtt = 1"), "n.toml").unwrap_err().to_string();
    assert!(m.contains("rtt"), "{m}");
}

#[test]
fn jitter_defaults_to_none_and_is_checked_like_the_round_trip() {
    let s = parse(BODY, "n.toml").unwrap();
    assert_eq!(s.network.jitter, Duration::ZERO);
    let s = parse(&with("jitter_ms = 0.25"), "n.toml").unwrap();
    assert_eq!(s.network.jitter, Duration::from_micros(250));
    let m = parse(&with("jitter_ms = -1"), "n.toml")
        .unwrap_err()
        .to_string();
    assert!(
        m.starts_with("n.toml:6:") && m.contains("network.jitter_ms"),
        "{m}"
    );
}
