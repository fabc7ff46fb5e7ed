//! The AWS SDK for Python (boto3/botocore) through `herd bench`, each retry mode beside its
//! replica in `herd sim`, on an upstream that answers as S3 or DynamoDB would
//! (`[upstream] dialect`):
//!
//! - standard mode, 200 calls to an S3 that fails every request: the server counts of the
//!   real client and of `aws-standard` are equal. Under the 2026 rules botocore 1.44 runs
//!   (a 500-token quota, 14 per retry, that only successes refill) that is 200 + 500/14 =
//!   235;
//! - adaptive mode, calls to a DynamoDB that throttles every request: after the first
//!   throttle the client's rate limiter spaces every request ~2 s apart (its 0.5/s floor),
//!   first attempts included; the spacing the server sees from the real client (from the
//!   report's 100 ms timeline) is within 10% of `aws-adaptive`'s.
//!
//! These need python3 with venv (herd pip-installs the Python kit's pinned boto3); they
//! fail without it, never skip.

mod common;
use common::own_upstream::OwnUpstream;
use common::*;
use serde_json::Value;
use std::path::Path;
use std::thread;

/// A scenario of one replica arm and one real arm: `requests` calls at `rate` per second
/// against `upstream` (the `[upstream]` table's lines).
fn scenario(requests: u32, rate: f64, upstream: &str, replica: &str, real: &str) -> String {
    format!(
        r#"
name = "aws"
seed = 3
[load]
requests = {requests}
rate = {rate}
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 5000
[upstream]
{upstream}
[[arms]]
id = "replica"
{replica}
[[arms]]
id = "real"
{real}
"#
    )
}

/// The replica's arm in `herd sim` and the real one in `herd bench` of `file`, the real
/// arm's reported attempts checked against its server count.
fn sim_and_bench(file: &Path) -> (Value, Value) {
    let file = file.to_str().unwrap();
    let s = report(&["sim", file, "--arm", "replica"]);
    let b = report(&["bench", file, "--arm", "real"]);
    let replica = arm(&s, "replica").clone();
    let real = arm(&b, "real").clone();
    assert_eq!(
        real["client_attempts"], real["server_requests"],
        "the adapter's attempts are what the server received: {real}"
    );
    (replica, real)
}

#[test]
fn botocore_standard_and_adaptive_send_what_their_replicas_send() {
    let dir = tempdir("real-aws");
    let standard = dir.join("standard.toml");
    std::fs::write(
        &standard,
        scenario(
            200,
            100.0,
            "dialect = \"s3\"\nerror_rate = 1.0",
            "policy = \"aws-standard\"",
            "client = \"py-boto3-standard\"",
        ),
    )
    .unwrap();
    // Eight DynamoDB calls at once, every request throttled (a rate limit that lets
    // nothing through: one request per 1000 s, no burst): 4 attempts each, 32 requests
    // that the limiter spaces ~2 s apart after the first throttle.
    let adaptive = dir.join("adaptive.toml");
    std::fs::write(
        &adaptive,
        scenario(
            8,
            1000.0,
            "dialect = \"dynamodb\"\nrate_limit = { rate = \"1r/m\", nodelay = true }",
            "policy = \"aws-adaptive\"\nretries = 3\nbase_ms = 25",
            "client = \"py-boto3-adaptive\"\noptions = { service = \"dynamodb\" }",
        ),
    )
    .unwrap();
    let a = thread::spawn(move || sim_and_bench(&adaptive));
    let (replica, real) = sim_and_bench(&standard);
    let (r, b) = (
        replica["server_requests"].as_u64().unwrap(),
        real["server_requests"].as_u64().unwrap(),
    );
    eprintln!("standard, 200 failing S3 calls: botocore {b} requests, aws-standard {r}");
    assert_eq!(b, r, "real {real}\nreplica {replica}");
    assert_eq!(r, 200 + 500 / 14, "the quota's arithmetic: 35 retries");

    let (replica, real) = a.join().unwrap();
    let (r, b) = (spacing(&replica), spacing(&real));
    eprintln!(
        "adaptive, 8 throttled DynamoDB calls: botocore {} requests, {b:.0} ms apart after the first wave; aws-adaptive {} requests, {r:.0} ms apart",
        real["server_requests"], replica["server_requests"]
    );
    assert_eq!(real["server_requests"], replica["server_requests"]);
    assert!(
        (b / r - 1.0).abs() <= 0.10,
        "real {real}\nreplica {replica}"
    );
    assert!((1_900.0..=2_100.0).contains(&r), "the 0.5/s floor: {r} ms");
}

/// The mean gap between the requests the server saw after the first wave (the calls'
/// first attempts, all within the first 500 ms), from the arm's 100 ms timeline: once the
/// limiter is on, one request per limiter period.
fn spacing(v: &Value) -> f64 {
    let mut at = vec![];
    for b in v["timeline"].as_array().expect("a timeline") {
        let t = b["t_ms"].as_f64().unwrap();
        for _ in 0..b["server"].as_u64().unwrap() {
            at.push(t);
        }
    }
    let late: Vec<f64> = at.into_iter().filter(|&t| t >= 500.0).collect();
    assert!(late.len() > 10, "{v}");
    (late[late.len() - 1] - late[0]) / (late.len() - 1) as f64
}

/// botocore tells the server which attempt each request is (`amz-sdk-request:
/// attempt=N; max=3`): with herd's front before a service (here another herd upstream,
/// answering every request as a failing S3 does), the service counts them by number. 200
/// failing calls under the 2026 quota: 200 first attempts, then its 35 retries as second
/// and third attempts. One call at a time that is 18 and 17 (17 calls retried twice, one
/// once); at 100 calls a second the calls overlap and the quota runs out with several of
/// them between their retries, so the split moves (19 and 16 in one run): what holds is
/// 35 retries, at most two a call.
#[test]
fn botocore_declares_each_attempt_to_the_service() {
    let dir = tempdir("real-aws-attempts");
    let s3 = OwnUpstream::start(
        &dir,
        "name = \"s3\"\n[upstream]\ndialect = \"s3\"\nerror_rate = 1.0\n[[arms]]\nid = \"unused\"\npolicy = \"none\"\n",
    );
    let file = dir.join("front.toml");
    std::fs::write(
        &file,
        format!(
            r#"
name = "aws-attempts"
seed = 3
[load]
requests = 200
rate = 100
arrival = "constant"
[client]
pool_max_connections = 64
attempt_timeout_ms = 5000
[upstream]
target = "{}"
[[arms]]
id = "botocore"
client = "py-boto3-standard"
"#,
            s3.url
        ),
    )
    .unwrap();
    let v = report(&["bench", file.to_str().unwrap()]);
    let stats = s3.stats();
    eprintln!(
        "botocore standard, 200 failing calls: the service saw {} requests, by attempt {}",
        stats["received"], stats["aws_attempts"]
    );
    let by_attempt: Vec<u64> = (stats["aws_attempts"].as_array().expect("aws_attempts"))
        .iter()
        .map(|n| n.as_u64().unwrap())
        .collect();
    let [first, second, third] = by_attempt[..] else {
        panic!("three attempts at most: {by_attempt:?}");
    };
    assert_eq!(first, 200);
    assert_eq!(
        second + third,
        500 / 14,
        "the quota's 35 retries: {by_attempt:?}"
    );
    assert!(
        third <= second,
        "a third attempt follows a second: {by_attempt:?}"
    );
    assert_eq!(stats["received"], 235);
    assert_eq!(arm(&v, "botocore")["server_requests"], 235);
}
