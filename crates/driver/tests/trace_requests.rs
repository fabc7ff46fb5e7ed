//! A trace's method and path reach the server: every kind of arm sends each trace line's
//! request with its method to its path and query, and herd's own retrier retries it by
//! that method (an idempotent-only profile re-sends GET and DELETE, never POST).
//!
//! The server here is a few lines over a raw socket that records each request line as
//! received and answers every request with one status: 503 so that retries show, or 200
//! for the real clients in other languages (whose own backoffs would take seconds).

use herd_driver::drive_url;
use herd_driver::Stop;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const TRACE: &str =
    "t_ms,consumer,method,path\n0,0,GET,/a\n20,0,POST,/orders?id=7\n40,0,DELETE,/x%2Cy\n";

/// Request lines as received, `"POST /orders?id=7"`.
type Seen = Arc<Mutex<Vec<String>>>;

async fn recording_server(status: &'static str) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("binds");
    let url = format!("http://{}/", listener.local_addr().expect("addr"));
    let seen: Seen = Arc::default();
    let record = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            let record = record.clone();
            tokio::spawn(async move {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&buf[..end]).into_owned();
                        buf.drain(..end + 4);
                        let first = head.lines().next().unwrap_or_default();
                        let line = first.rsplit_once(' ').map_or(first, |(l, _)| l);
                        record.lock().unwrap().push(line.to_owned());
                        let reply = format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\n\r\n");
                        if conn.write_all(reply.as_bytes()).await.is_err() {
                            return;
                        }
                    }
                    match conn.read(&mut chunk).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            });
        }
    });
    (url, seen)
}

fn scenario(dir: &std::path::Path, arm: &str) -> herd_scenario::Scenario {
    let trace = dir.join("trace.csv");
    std::fs::write(&trace, TRACE).expect("writes the trace");
    let text = format!(
        "name = \"t\"\nseed = 1\n[load]\nrequests = 10\ntrace = \"{}\"\n[client]\nattempt_timeout_ms = 2000\n[[arms]]\n{arm}\n",
        trace.display()
    );
    let mut s = herd_scenario::parse(&text, "t.toml").expect("parses");
    herd_scenario::trace::resolve(&mut s).expect("resolves");
    s
}

async fn run(name: &str, arm: &str) -> Vec<String> {
    run_with(name, arm, "503 Service Unavailable").await
}

async fn run_with(name: &str, arm: &str, status: &'static str) -> Vec<String> {
    let dir = std::env::temp_dir().join(format!("herd-trace-req-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tempdir");
    let s = scenario(&dir, arm);
    let (url, seen) = recording_server(status).await;
    let driven = drive_url(&s, 0, &url, Stop::new())
        .await
        .expect("runs")
        .expect("not stopped");
    assert_eq!(driven.recorder.len(), 3, "{name}: three logical requests");
    std::fs::remove_dir_all(&dir).expect("cleans up");
    let mut seen = seen.lock().unwrap().clone();
    seen.sort();
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_sends_each_method_and_path_and_retries_only_idempotent_ones() {
    // undici retries idempotent methods only; two retries 10 ms apart.
    let seen = run(
        "replica",
        "id = \"u\"\npolicy = \"undici\"\nretries = 2\nbase_ms = 10\njitter = \"none\"",
    )
    .await;
    assert_eq!(
        seen,
        [
            "DELETE /x%2Cy",
            "DELETE /x%2Cy",
            "DELETE /x%2Cy",
            "GET /a",
            "GET /a",
            "GET /a",
            "POST /orders?id=7",
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_peers_send_each_method_and_path() {
    // reqwest's built-in retry: no backoff, its own rules; what matters here is that every
    // attempt it makes is the trace line's request.
    let seen = run("reqwest", "id = \"r\"\nclient = \"reqwest-builtin\"").await;
    let mut kinds = seen.clone();
    kinds.dedup();
    assert_eq!(
        kinds,
        ["DELETE /x%2Cy", "GET /a", "POST /orders?id=7"],
        "{seen:?}"
    );
    let seen = run("tower", "id = \"t\"\nclient = \"tower-retry\"").await;
    let mut kinds = seen.clone();
    kinds.dedup();
    assert_eq!(
        kinds,
        ["DELETE /x%2Cy", "GET /a", "POST /orders?id=7"],
        "{seen:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn external_adapters_send_each_method_and_path() {
    // The request line's optional method and path, through each language's kit.
    for client in [
        "node-undici",
        "node-axios-retry",
        "py-requests",
        "go-retryablehttp",
    ] {
        let seen = run_with(
            client,
            &format!("id = \"x\"\nclient = \"{client}\""),
            "200 OK",
        )
        .await;
        assert_eq!(
            seen,
            ["DELETE /x%2Cy", "GET /a", "POST /orders?id=7"],
            "{client}"
        );
    }
}
