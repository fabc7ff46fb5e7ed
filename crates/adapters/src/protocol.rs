//! The external-arm wire protocol, version 1: JSON lines, one object per line.
//!
//! herd → adapter (stdin): `{"id":N}` when logical request `N` is due; closing stdin means
//! "no more". Adapter → herd (stdout): one handshake line first, then one answer per
//! request in any order, then `{"done":true}`. The full text is
//! `docs/external-arm-protocol.md`; this module is its only parser.
//!
//! Parsing is strict about what herd relies on (an answer must have an integer `id` and a
//! boolean `ok`) and lenient about the rest (unknown fields are ignored, so an adapter may
//! add diagnostics without a version bump). Errors say what was expected and quote what
//! came, shortened.

use serde::{Deserialize, Serialize};

/// The protocol version herd speaks, the handshake's `herd_adapter` value.
pub const VERSION: u32 = 1;

/// The adapter's first stdout line.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handshake {
    /// Protocol version; must be [`VERSION`].
    pub herd_adapter: u32,
    /// The client the adapter is running; must be the one herd asked for.
    pub client: String,
    /// The library's configuration as actually set up, for humans (the arm's `policy`).
    pub policy: String,
}

/// One finished logical request, as the adapter reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The id herd sent.
    pub id: u64,
    /// Whether the library ended with a success (a 2xx response).
    pub ok: bool,
    /// The final HTTP status, if the library ended with a response.
    #[serde(default)]
    pub status: Option<u16>,
    /// The final error code (`ECONNRESET`, `UND_ERR_SOCKET`, …) if it ended without one.
    #[serde(default)]
    pub error: Option<String>,
    /// Attempts the library made (1 = no retry), if it exposes them; 0 when it sent
    /// nothing (a client-side fast failure, such as an open breaker's rejection).
    #[serde(default)]
    pub attempts: Option<u32>,
    /// Calls the library's own breaker turned away for this request, never sent (absent:
    /// none, or an adapter that does not say).
    #[serde(default)]
    pub rejected: Option<u32>,
}

/// A line after the handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// A request finished.
    Answer(Answer),
    /// `{"done":true}`: every request is answered and the adapter is exiting.
    Done,
}

/// A line that is not valid protocol: where, and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// 1-based line number on the adapter's stdout.
    pub line: u64,
    /// What was expected and what came.
    pub detail: String,
}

/// The request line for `id`, newline included, with the request's method and path when a
/// trace gives them (version 1 adapters that predate them ignore unknown fields).
pub fn request_line(id: u64, method: Option<&str>, path: Option<&str>) -> String {
    let mut line = format!("{{\"id\":{id}");
    for (key, value) in [("method", method), ("path", path)] {
        if let Some(v) = value {
            line.push_str(&format!(",\"{key}\":{}", serde_json::Value::from(v)));
        }
    }
    line.push_str("}\n");
    line
}

/// At most 200 characters of `s`, for quoting in errors.
fn quote(s: &str) -> String {
    const MAX: usize = 200;
    let s = s.trim_end();
    match s.char_indices().nth(MAX) {
        Some((i, _)) => format!("`{}…`", &s[..i]),
        None if s.is_empty() => "an empty line".to_string(),
        None => format!("`{s}`"),
    }
}

/// Parses the handshake (stdout line `line`).
pub fn parse_handshake(line: u64, text: &str) -> Result<Handshake, LineError> {
    let err = |detail: String| LineError { line, detail };
    let value: serde_json::Value = serde_json::from_str(text).map_err(|_| {
        err(format!(
            "expected the handshake {{\"herd_adapter\":{VERSION},\"client\":…,\"policy\":…}}, got {}",
            quote(text)
        ))
    })?;
    match value
        .get("herd_adapter")
        .and_then(serde_json::Value::as_u64)
    {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) => {
            return Err(err(format!(
                "adapter speaks protocol version {v}, herd speaks {VERSION}"
            )))
        }
        None => {
            return Err(err(format!(
                "expected the handshake with \"herd_adapter\":{VERSION}, got {}",
                quote(text)
            )))
        }
    }
    serde_json::from_value(value)
        .map_err(|e| err(format!("bad handshake ({e}), got {}", quote(text))))
}

/// Parses an answer or `done` line (stdout line `line`).
pub fn parse_line(line: u64, text: &str) -> Result<Line, LineError> {
    let err = |detail: String| LineError { line, detail };
    let expected = || err(format!("expected JSON object with id, got {}", quote(text)));
    let value: serde_json::Value = serde_json::from_str(text).map_err(|_| expected())?;
    let Some(obj) = value.as_object() else {
        return Err(expected());
    };
    if obj.get("done").and_then(serde_json::Value::as_bool) == Some(true) {
        return Ok(Line::Done);
    }
    if !obj.contains_key("id") {
        return Err(expected());
    }
    serde_json::from_value(value)
        .map(Line::Answer)
        .map_err(|e| err(format!("bad answer ({e}), got {}", quote(text))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_answers_and_done() {
        let a = parse_line(
            3,
            r#"{"id":7,"ok":false,"status":null,"error":"ECONNRESET","attempts":4}"#,
        )
        .unwrap();
        assert_eq!(
            a,
            Line::Answer(Answer {
                id: 7,
                ok: false,
                status: None,
                error: Some("ECONNRESET".into()),
                attempts: Some(4),
                rejected: None,
            })
        );
        // A call an open breaker turned away: nothing sent.
        let r = parse_line(
            6,
            r#"{"id":9,"ok":false,"status":null,"error":"CircuitBreakerError","attempts":0,"rejected":1}"#,
        )
        .unwrap();
        assert!(matches!(
            r,
            Line::Answer(Answer {
                id: 9,
                ok: false,
                attempts: Some(0),
                rejected: Some(1),
                ..
            })
        ));
        // Optional fields may be left out; unknown fields are ignored.
        let b = parse_line(4, r#"{"id":8,"ok":true,"status":200,"extra":1}"#).unwrap();
        assert!(matches!(
            b,
            Line::Answer(Answer {
                id: 8,
                ok: true,
                attempts: None,
                ..
            })
        ));
        assert_eq!(parse_line(5, r#"{"done":true}"#).unwrap(), Line::Done);
    }

    #[test]
    fn malformed_lines_say_where_and_what() {
        let e = parse_line(17, "hello world").unwrap_err();
        assert_eq!(e.line, 17);
        assert_eq!(e.detail, "expected JSON object with id, got `hello world`");
        let e = parse_line(2, r#"[1,2]"#).unwrap_err();
        assert!(
            e.detail.starts_with("expected JSON object with id"),
            "{}",
            e.detail
        );
        let e = parse_line(2, r#"{"id":"x","ok":true}"#).unwrap_err();
        assert!(e.detail.starts_with("bad answer"), "{}", e.detail);
        let e = parse_line(2, r#"{"id":1}"#).unwrap_err();
        assert!(e.detail.contains("ok"), "{}", e.detail);
        let long = "x".repeat(1000);
        assert!(parse_line(1, &long).unwrap_err().detail.len() < 300);
    }

    #[test]
    fn handshake_checks_version() {
        let h = parse_handshake(1, r#"{"herd_adapter":1,"client":"c","policy":"p"}"#).unwrap();
        assert_eq!(h.client, "c");
        let e = parse_handshake(1, r#"{"herd_adapter":2,"client":"c","policy":"p"}"#).unwrap_err();
        assert!(e.detail.contains("version 2"), "{}", e.detail);
        assert!(parse_handshake(1, r#"{"id":1,"ok":true}"#).is_err());
    }

    #[test]
    fn request_lines() {
        assert_eq!(request_line(42, None, None), "{\"id\":42}\n");
        assert_eq!(
            request_line(7, Some("POST"), Some("/o?a=\"b\"")),
            "{\"id\":7,\"method\":\"POST\",\"path\":\"/o?a=\\\"b\\\"\"}\n"
        );
    }

    /// A JSON value of any type, extremes included.
    fn json_value() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        prop_oneof![
            Just("null".to_owned()),
            any::<bool>().prop_map(|b| b.to_string()),
            any::<i64>().prop_map(|x| x.to_string()),
            any::<u64>().prop_map(|x| x.to_string()),
            Just("1e400".to_owned()),
            Just("-0".to_owned()),
            Just("18446744073709551616".to_owned()),
            any::<f64>().prop_map(|x| format!("{x:e}")),
            ".{0,20}".prop_map(|s| serde_json::Value::String(s).to_string()),
            Just("[]".to_owned()),
            Just("{}".to_owned()),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 1024, ..Default::default() })]

        /// Whatever an adapter prints, the parsers answer, and an error quotes at most a
        /// bounded piece of it.
        #[test]
        fn any_bytes_never_panic(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600), n in proptest::prelude::any::<u64>()) {
            let text = String::from_utf8_lossy(&bytes);
            if let Err(e) = parse_line(n, &text) {
                proptest::prop_assert!(e.detail.len() < 1200);
            }
            let _ = parse_handshake(n, &text);
        }

        /// Objects with the protocol's keys holding values of any type.
        #[test]
        fn any_fields_never_panic(
            fields in proptest::collection::vec(
                (proptest::sample::select(vec!["id", "ok", "status", "error", "attempts", "rejected", "done", "herd_adapter", "client", "policy", "x"]), json_value()),
                0..7,
            ),
        ) {
            let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
            let text = format!("{{{}}}", body.join(","));
            let _ = parse_line(1, &text);
            let _ = parse_handshake(1, &text);
        }
    }
}
