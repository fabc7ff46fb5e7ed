//! The built-in Node clients run with the library's own retry options from the arm's
//! `options` table, end to end: against an upstream that answers 503 to everything, the
//! server sees exactly the attempts those options allow, first retries where the
//! library's formula puts them, and a misspelt or ill-typed option stops herd (exit 2,
//! naming arm and key) before any request.
//!
//! Needs Node.js and npm (herd sets the adapter up in its cache): fails without them.

mod common;
use common::*;
use serde_json::Value;

/// Every attempt is a 503 without Retry-After: each request runs its whole schedule.
const ALL_503: &str = r#"
name = "node-options"
seed = 5
[load]
requests = 6
rate = 10
arrival = "constant"
[client]
pool_max_connections = 16
attempt_timeout_ms = 2000
[upstream]
error_rate = 1.0
retry_after_s = 0
"#;

fn run(name: &str, arms: &str) -> std::process::Output {
    let dir = tempdir(name);
    let file = dir.join("s.toml");
    std::fs::write(&file, format!("{ALL_503}{arms}")).unwrap();
    herd(&["bench", file.to_str().unwrap(), "--json", "-", "--quiet"])
}

/// The server-seen first retry's p50 is `want` within 5% + 20 ms.
fn first_retry_near(a: &Value, want: f64) {
    let p50 = a["server_first_retry_ms"]["p50"]
        .as_f64()
        .expect("first retry");
    assert!(
        (p50 - want).abs() <= want * 0.05 + 20.0,
        "{}: first retry p50 {p50} ms, want {want}",
        a["id"]
    );
}

#[test]
fn undici_and_axios_retry_follow_their_options() {
    let o = run(
        "node-options",
        r#"
[[arms]]
id = "undici-2"
client = "node-undici"
options = { maxRetries = 2, minTimeout = 100, timeoutFactor = 2 }

[[arms]]
id = "axios-linear"
client = "node-axios-retry"
options = { retries = 1, retryDelay = "linear", delayFactor = 150 }
"#,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_str(&stdout(&o)).unwrap();

    // maxRetries 2: three attempts per request, all 503, so every request fails.
    let u = arm(&v, "undici-2");
    assert_eq!(u["server_requests"], 18, "{u}");
    assert_eq!(u["client_attempts"], 18, "{u}");
    assert_eq!(u["failed"], 6);
    first_retry_near(u, 100.0);
    let cmd: Vec<&str> = u["command"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    let opts = cmd
        .iter()
        .position(|a| *a == "--options")
        .expect("--options");
    let sent: Value = serde_json::from_str(cmd[opts + 1]).unwrap();
    assert_eq!(
        sent,
        serde_json::json!({"maxRetries": 2, "minTimeout": 100, "timeoutFactor": 2})
    );

    // retries 1 with linearDelay(150): two attempts, the retry 150 ms after the first.
    let a = arm(&v, "axios-linear");
    assert_eq!(a["server_requests"], 12, "{a}");
    assert_eq!(a["failed"], 6);
    first_retry_near(a, 150.0);
}

#[test]
fn a_misspelt_or_ill_typed_library_option_stops_herd_before_any_request() {
    for (name, options, key) in [
        ("undici-unknown", "{ maxRetrys = 2 }", "maxRetrys"),
        ("undici-type", "{ maxRetries = \"2\" }", "maxRetries"),
        (
            "axios-delay",
            "{ retryDelay = \"fibonacci\" }",
            "retryDelay",
        ),
    ] {
        let client = if name.starts_with("axios") {
            "node-axios-retry"
        } else {
            "node-undici"
        };
        let o = run(
            name,
            &format!("[[arms]]\nid = \"mine\"\nclient = \"{client}\"\noptions = {options}\n"),
        );
        assert_eq!(o.status.code(), Some(2), "{name}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("arm mine") && e.contains(key), "{name}: {e}");
        assert!(stdout(&o).is_empty(), "{name}: a report was written");
    }
}
