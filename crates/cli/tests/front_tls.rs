//! herd's front serving HTTPS (`[upstream] tls`): a replica arm (herd's own driver over
//! rustls) and a real client (py-requests, trusting the front's certificate through the
//! environment herd gives its adapter) see the same server counts over TLS as over plain
//! HTTP for the same seed; `herd upstream` serves HTTPS that curl verifies with the
//! certificate file it names; bad certificate files are one sentence and exit 2.
//!
//! Needs `python3` with its venv module and `curl`: it fails without them, never skips.

mod common;
use common::*;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// 503s and resets drawn from the seed, retried at once: each logical request is over in
/// a few ms, long before the next arrives (every 50 ms), so the attempts reach the front
/// in the same order in every run and draw the same fates, over TLS or not.
fn scenario(dir: &Path, tls: &str) -> String {
    let text = format!(
        r#"name = "front-tls"
seed = 31
[load]
requests = 60
rate = 20
arrival = "constant"
[client]
pool_max_connections = 8
attempt_timeout_ms = 2000
[upstream]
error_rate = 0.3
reset_rate = 0.1
{tls}
[[arms]]
id = "naive"
policy = "naive"
[[arms]]
id = "py"
client = "py-requests"
options = {{ total = 3, backoff_factor = 0 }}
"#
    );
    let name = if tls.is_empty() {
        "plain.toml"
    } else {
        "tls.toml"
    };
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_owned()
}

/// Per arm: (server_requests, client_attempts, errors, resets) summed over the timeline.
fn counts(v: &Value, id: &str) -> (u64, u64, u64, u64) {
    let a = arm(v, id);
    let sum = |col: &str| -> u64 {
        a["timeline"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b[col].as_u64().unwrap())
            .sum()
    };
    (
        a["server_requests"].as_u64().unwrap(),
        a["client_attempts"].as_u64().unwrap(),
        sum("errors"),
        sum("resets"),
    )
}

#[test]
fn replica_and_py_requests_count_the_same_over_tls_as_over_plain_http() {
    let dir = tempdir("front-tls");
    let plain = bench_on_schedule(&[&scenario(&dir, "")]);
    let tls = bench_on_schedule(&[&scenario(&dir, "tls = \"self-signed\"")]);
    for id in ["naive", "py"] {
        let (p, t) = (counts(&plain, id), counts(&tls, id));
        eprintln!("{id}: plain {p:?}, tls {t:?}");
        assert_eq!(
            t, p,
            "{id}: (server, client attempts, 503s, resets) over TLS vs plain"
        );
        assert!(t.2 > 0 && t.3 > 0, "{id}: the faults were drawn: {t:?}");
        assert_eq!(t.0, t.1, "{id}: every attempt reached the front");
        assert!(t.0 > 60, "{id}: retries happened: {t:?}");
    }
    // The real client was aimed at the HTTPS front.
    let command = arm(&tls, "py")["command"].to_string();
    assert!(command.contains("https://127.0.0.1:"), "{command}");
}

#[test]
fn herd_upstream_serves_https_that_curl_verifies() {
    let dir = tempdir("front-tls-upstream");
    let scen = dir.join("up.toml");
    std::fs::write(
        &scen,
        "name = \"up\"\n[upstream]\ntls = \"self-signed\"\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_herd"))
        .args([
            "upstream",
            scen.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("herd upstream starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let mut note = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut note)
        .unwrap();
    let url = first
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{first}"))
        .to_owned();
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let ca = note
        .split("trust it with ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .unwrap_or_else(|| panic!("names the certificate file: {note}"))
        .to_owned();
    assert!(Path::new(&ca).is_file(), "{ca}");
    let curl = |extra: &[&str], target: &str| {
        Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code}",
                "--max-time",
                "5",
            ])
            .args(extra)
            .arg(target)
            .output()
            .expect("curl runs")
    };
    let ok = curl(&["--cacert", &ca], &format!("{url}/"));
    assert_eq!(String::from_utf8_lossy(&ok.stdout), "200", "{ok:?}");
    // Without the certificate, curl refuses the front; plain HTTP gets no answer.
    let untrusted = curl(&[], &format!("{url}/"));
    assert!(!untrusted.status.success(), "{untrusted:?}");
    let plain = curl(&[], &format!("{}/", url.replacen("https", "http", 1)));
    assert_ne!(String::from_utf8_lossy(&plain.stdout), "200", "{plain:?}");
    let stats = curl(&["--cacert", &ca], &format!("{url}/__herd/stats"));
    assert_eq!(String::from_utf8_lossy(&stats.stdout), "200");
    // SIGTERM, by this child's id: it stops cleanly and takes its certificate file along.
    let term = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("herd upstream did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status}");
    assert!(
        !Path::new(&ca).exists(),
        "the generated certificate is removed"
    );
}

#[test]
fn bad_certificate_files_are_one_sentence_and_exit_2() {
    let dir = tempdir("front-tls-bad");
    let junk = dir.join("junk.pem");
    std::fs::write(&junk, "not a certificate\n").unwrap();
    let other = rcgen::generate_simple_self_signed(vec!["example.com".to_string()]).unwrap();
    let (cert, key) = (dir.join("other.pem"), dir.join("other.key"));
    std::fs::write(&cert, other.cert.pem()).unwrap();
    std::fs::write(&key, other.signing_key.serialize_pem()).unwrap();
    for (lines, says) in [
        (
            "tls_cert = \"missing.pem\"\ntls_key = \"missing.key\"".to_owned(),
            format!(
                "tls_cert {}: cannot read it",
                dir.join("missing.pem").display()
            ),
        ),
        (
            format!("tls_cert = \"junk.pem\"\ntls_key = \"{}\"", key.display()),
            format!("tls_cert {}: holds no certificate", junk.display()),
        ),
        (
            "tls_cert = \"other.pem\"\ntls_key = \"junk.pem\"".to_owned(),
            format!("tls_key {}: holds no private key", junk.display()),
        ),
        // Made for example.com: herd bench's clients connect to 127.0.0.1.
        (
            "tls_cert = \"other.pem\"\ntls_key = \"other.key\"".to_owned(),
            "make it for 127.0.0.1".to_owned(),
        ),
        ("tls = \"yes\"".to_owned(), "unknown tls `yes`".to_owned()),
        (
            "tls_cert = \"other.pem\"".to_owned(),
            "needs `tls_key`".to_owned(),
        ),
    ] {
        let p = dir.join("bad.toml");
        std::fs::write(
            &p,
            format!(
                "name = \"bad\"\n[upstream]\n{lines}\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n"
            ),
        )
        .unwrap();
        let o = herd(&["bench", p.to_str().unwrap(), "--quiet"]);
        let e = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{lines}: {e}");
        assert!(e.contains(&says), "{lines}: {e}");
        assert_eq!(e.trim().lines().count(), 1, "one sentence: {e}");
        assert!(!e.contains("panicked"), "{e}");
    }
    // A Rust peer cannot run against an HTTPS front: said at start.
    let p = dir.join("peer.toml");
    std::fs::write(
        &p,
        "name = \"peer\"\n[upstream]\ntls = \"self-signed\"\n[[arms]]\nid = \"r\"\nclient = \"reqwest-retry\"\n",
    )
    .unwrap();
    let o = herd(&["bench", p.to_str().unwrap(), "--quiet"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("plain HTTP only"), "{}", stderr(&o));
}
