//! Access logs to traces: exact output for real lines of each format.

use super::*;
use std::io::Cursor;

fn opts(format: LogFormat) -> ImportOptions {
    ImportOptions {
        format,
        clf_consumer: ClfConsumer::RemoteAddr,
        json: JsonFields::default(),
        skip_bad_lines: false,
        spread: None,
        fold_retries: None,
    }
}

fn run(log: &str, o: &ImportOptions) -> Result<(String, Imported), String> {
    let mut out = Vec::new();
    let r = import(
        Cursor::new(log.as_bytes().to_vec()),
        Path::new("access.log"),
        o,
        &mut out,
    );
    r.map(|i| (String::from_utf8(out).unwrap(), i))
        .map_err(|e| e.to_string())
}

/// Lines as Debian's nginx 1.22 writes them with its default `combined` format.
const NGINX_COMBINED: &str = r#"127.0.0.1 - - [03/Dec/2026:06:40:01 +0000] "GET / HTTP/1.1" 200 615 "-" "curl/7.88.1"
10.1.2.3 - alice [03/Dec/2026:06:40:01 +0000] "POST /api/orders?x=1,2 HTTP/1.1" 201 17 "https://example.com/" "Mozilla/5.0 (X11; Linux x86_64)"
127.0.0.1 - - [03/Dec/2026:06:40:03 +0000] "DELETE /api/orders/7 HTTP/1.1" 204 0 "-" "curl/7.88.1"
10.1.2.3 - - [03/Dec/2026:06:40:02 +0000] "GET /caf\xC3\xA9?q=\x22a b\x22 HTTP/1.1" 404 153 "-" "curl/7.88.1"
"#;

#[test]
fn nginx_combined_lines_become_a_trace() {
    let (csv, done) = run(NGINX_COMBINED, &opts(LogFormat::Combined)).unwrap();
    assert_eq!(
        csv,
        "t_ms,consumer,method,path\n\
         0,0,GET,/\n\
         0,1,POST,/api/orders?x=1%2C2\n\
         2000,0,DELETE,/api/orders/7\n\
         2000,1,GET,/caf%C3%A9?q=%22a%20b%22\n"
    );
    assert_eq!(done.lines, 4);
    assert_eq!(done.consumers, 2);
    assert_eq!(done.span, Duration::from_secs(2));
    // The last line was a second earlier than the one before it: clamped, and counted.
    assert_eq!(done.clamped, 1);
    assert_eq!(done.max_step_back, Duration::from_secs(1));
}

#[test]
fn the_trace_reader_reads_what_the_importer_writes() {
    let (csv, _) = run(NGINX_COMBINED, &opts(LogFormat::Combined)).unwrap();
    let r = crate::trace::TraceReader::new(csv.as_bytes(), Path::new("t.csv"), 1.0, false);
    let lines: Vec<_> = r.collect();
    assert_eq!(lines.len(), 4);
    assert_eq!(lines[1].method, Some(Method::Post));
    assert_eq!(lines[1].path.as_deref(), Some("/api/orders?x=1%2C2"));
    assert_eq!(lines[3].path.as_deref(), Some("/caf%C3%A9?q=%22a%20b%22"));
}

#[test]
fn common_log_format_and_its_user_field() {
    // Apache's documentation example, and one more.
    let log = "127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] \"GET /apache_pb.gif HTTP/1.0\" 200 2326\n\
               127.0.0.2 - - [10/Oct/2000:13:55:37 -0700] \"HEAD http://example.com HTTP/1.0\" 200 -\n";
    let (csv, _) = run(log, &opts(LogFormat::Common)).unwrap();
    assert_eq!(
        csv,
        "t_ms,consumer,method,path\n0,0,GET,/apache_pb.gif\n1000,1,HEAD,/\n"
    );
    let mut by_user = opts(LogFormat::Common);
    by_user.clf_consumer = ClfConsumer::RemoteUser;
    let (csv, done) = run(log, &by_user).unwrap();
    assert!(
        csv.ends_with("0,0,GET,/apache_pb.gif\n1000,1,HEAD,/\n"),
        "{csv}"
    );
    assert_eq!(done.consumers, 2);
}

#[test]
fn nginx_msec_keeps_milliseconds() {
    // log_format timed '$remote_addr - $remote_user [$msec] "$request" $status $body_bytes_sent';
    let log = "127.0.0.1 - - [1764744001.250] \"GET /a HTTP/1.1\" 200 5\n\
               127.0.0.1 - - [1764744001.500] \"GET /b HTTP/1.1\" 200 5\n\
               127.0.0.1 - - 1764744003.007 \"PUT /c HTTP/1.1\" 200 5\n";
    let (csv, done) = run(log, &opts(LogFormat::Common)).unwrap();
    assert_eq!(
        csv,
        "t_ms,consumer,method,path\n0,0,GET,/a\n250,0,GET,/b\n1757,0,PUT,/c\n"
    );
    assert_eq!(done.span, Duration::from_millis(1757));
}

#[test]
fn json_lines_with_named_and_nested_fields() {
    let log = r#"{"ts":"2026-12-03T06:40:01.100Z","req":{"method":"GET","uri":"/a"},"ip":"10.0.0.1"}
{"ts":"2026-12-03T06:40:01.350Z","req":{"method":"PATCH","uri":"/b"},"ip":"10.0.0.2"}
{"ts":"2026-12-03T06:40:02Z","req":{"method":"GET","uri":"/c"},"ip":"10.0.0.1"}
"#;
    let mut o = opts(LogFormat::Json);
    o.json = JsonFields {
        time: "ts".into(),
        method: "req.method".into(),
        path: "req.uri".into(),
        consumer: Some("ip".into()),
        unit: time::EpochUnit::Seconds,
    };
    let (csv, done) = run(log, &o).unwrap();
    assert_eq!(
        csv,
        "t_ms,consumer,method,path\n0,0,GET,/a\n250,1,PATCH,/b\n900,0,GET,/c\n"
    );
    assert_eq!(done.consumers, 2);
    // Defaults: time, method, path; no consumer field, one consumer. A numeric time in ms;
    // a whole request line in the path when there is no method field.
    let log = "{\"time\":1764744001000,\"path\":\"POST /x HTTP/1.1\"}\n{\"time\":1764744001005,\"method\":\"GET\",\"path\":\"/y\"}\n";
    let mut o = opts(LogFormat::Json);
    o.json.unit = time::EpochUnit::Millis;
    let (csv, _) = run(log, &o).unwrap();
    assert_eq!(csv, "t_ms,consumer,method,path\n0,0,POST,/x\n5,0,GET,/y\n");
}

#[test]
fn gzip_is_detected_by_its_magic_bytes() {
    use flate2::write::GzEncoder;
    let dir = std::env::temp_dir().join(format!("herd-import-gz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("access.log.1");
    let mut gz = GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(NGINX_COMBINED.as_bytes()).unwrap();
    std::fs::write(&path, gz.finish().unwrap()).unwrap();
    let mut out = Vec::new();
    let done = import(
        open(&path).unwrap(),
        &path,
        &opts(LogFormat::Combined),
        &mut out,
    )
    .unwrap();
    assert_eq!(done.lines, 4);
    assert_eq!(
        out,
        run(NGINX_COMBINED, &opts(LogFormat::Combined))
            .unwrap()
            .0
            .as_bytes()
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_line_names_the_file_and_line() {
    for (log, format, what) in [
        (
            "127.0.0.1 - - [03/Dec/2026:06:40:01 +0000] \"GET / HTTP/1.1\" 200 615\n",
            LogFormat::Combined,
            "access.log:1: no quoted referer and user agent after the response size (a Common Log Format line? use --format common)",
        ),
        (
            NGINX_COMBINED,
            LogFormat::Common,
            "access.log:1: unexpected `\"-\" \"curl/7.88.1\"` after the response size (a Combined Log Format line? use --format combined)",
        ),
        (
            "1.2.3.4 - - [03/Dec/2026:06:40:01 +0000] \"GET / HTTP/1.1\" 200 5\n1.2.3.4 - - [03/Dec/2026:06:40:01 +0000] \"\\x16\\x03\\x01\" 400 157\n",
            LogFormat::Common,
            "access.log:2: request `\\x16\\x03\\x01` is not `METHOD /path HTTP/x`",
        ),
        (
            "1.2.3.4 - - [03/Dec/2026:06:40:01] \"GET / HTTP/1.1\" 200 5\n",
            LogFormat::Common,
            "access.log:1: time `03/Dec/2026:06:40:01` is not a CLF date",
        ),
        (
            "1.2.3.4 - - [03/Dec/2026:06:40:01 +0000] \"PROPFIND / HTTP/1.1\" 200 5\n",
            LogFormat::Common,
            "access.log:1: method `PROPFIND` is not one herd sends",
        ),
        (
            "1.2.3.4 - - [03/Dec/2026:06:40:01 +0000] \"OPTIONS * HTTP/1.1\" 200 5\n",
            LogFormat::Common,
            "access.log:1: request target `*` is not a path",
        ),
        ("{\"time\":1}\n[1]\n", LogFormat::Json, "access.log:1: no `path` field"),
        ("\n\n", LogFormat::Json, "access.log:2: the log has no lines"),
    ] {
        let e = run(log, &opts(format)).unwrap_err();
        assert!(e.starts_with(what), "{e}\n  expected: {what}");
    }
}

#[test]
fn skipping_counts_bad_lines() {
    let log = "junk\n127.0.0.1 - - [03/Dec/2026:06:40:01 +0000] \"GET / HTTP/1.1\" 200 615\nmore junk\n127.0.0.1 - - [03/Dec/2026:06:40:02 +0000] \"GET /x HTTP/1.1\" 200 615\n";
    let mut o = opts(LogFormat::Common);
    o.skip_bad_lines = true;
    let (csv, done) = run(log, &o).unwrap();
    assert_eq!(csv, "t_ms,consumer,method,path\n0,0,GET,/\n1000,0,GET,/x\n");
    assert_eq!(
        (done.skipped, done.first_skipped.as_slice()),
        (2, &[1, 3][..])
    );
    assert_eq!(
        done.first_reason.as_deref(),
        Some("no identity field after the client address")
    );
    let e = run("junk\n", &o).unwrap_err();
    assert!(e.contains("every line was bad"), "{e}");
}

#[test]
fn an_overlong_line_is_a_bad_line_not_a_buffer() {
    let mut log = "x".repeat(MAX_LINE + 10);
    log.push_str("\n127.0.0.1 - - [03/Dec/2026:06:40:01 +0000] \"GET / HTTP/1.1\" 200 615\n");
    let e = run(&log, &opts(LogFormat::Common)).unwrap_err();
    assert!(e.starts_with("access.log:1: line longer than"), "{e}");
    let mut o = opts(LogFormat::Common);
    o.skip_bad_lines = true;
    assert_eq!(run(&log, &o).unwrap().1.lines, 1);
}

#[test]
fn the_logs_clock_and_the_requests_sharing_an_instant_are_reported() {
    let (_, done) = run(NGINX_COMBINED, &opts(LogFormat::Combined)).unwrap();
    assert_eq!(done.resolution, Duration::from_secs(1));
    // 0 s: 2 requests; 2 s: the third and the clamped fourth.
    assert_eq!(
        done.sharing,
        Sharing {
            instants: 2,
            max: 2,
            shared: 4
        }
    );
    let msec = "127.0.0.1 - - [1700000000.123] \"GET / HTTP/1.1\" 200 1 \"-\" \"c\"\n";
    let (_, done) = run(msec, &opts(LogFormat::Combined)).unwrap();
    assert_eq!(done.resolution, Duration::from_millis(1));
}

#[test]
fn a_spread_places_each_seconds_requests_within_it_and_keeps_the_rest() {
    let mut o = opts(LogFormat::Combined);
    o.spread = Some((Spread::Uniform, 1));
    let (csv, done) = run(NGINX_COMBINED, &o).unwrap();
    assert_eq!(
        csv,
        "t_ms,consumer,method,path\n\
         250,0,GET,/\n\
         750,1,POST,/api/orders?x=1%2C2\n\
         2250,0,DELETE,/api/orders/7\n\
         2750,1,GET,/caf%C3%A9?q=%22a%20b%22\n"
    );
    assert_eq!(done.span, Duration::from_millis(2750));
    o.spread = Some((Spread::Poisson, 3));
    let (a, _) = run(NGINX_COMBINED, &o).unwrap();
    let (b, _) = run(NGINX_COMBINED, &o).unwrap();
    assert_eq!(a, b, "seeded");
    let ts: Vec<f64> = a
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert!(ts[0] < 1000.0 && ts[1] < 1000.0 && ts[0] <= ts[1], "{a}");
    assert!(
        (2000.0..3000.0).contains(&ts[2]) && ts[2] <= ts[3] && ts[3] < 3000.0,
        "{a}"
    );
}

#[test]
fn folding_retries_keeps_the_first_of_each_chain() {
    let log = "\
10.0.0.1 - - [1700000000.000] \"GET /a HTTP/1.1\" 503 1 \"-\" \"c\"
10.0.0.1 - - [1700000000.150] \"GET /a HTTP/1.1\" 503 1 \"-\" \"c\"
10.0.0.2 - - [1700000000.160] \"GET /a HTTP/1.1\" 200 1 \"-\" \"c\"
10.0.0.1 - - [1700000000.400] \"GET /a HTTP/1.1\" 200 1 \"-\" \"c\"
10.0.0.1 - - [1700000001.000] \"GET /a HTTP/1.1\" 200 1 \"-\" \"c\"
";
    let mut o = opts(LogFormat::Combined);
    o.fold_retries = Some(Duration::from_millis(300));
    let (csv, done) = run(log, &o).unwrap();
    assert_eq!(
        csv,
        "t_ms,consumer,method,path\n0,0,GET,/a\n160,1,GET,/a\n1000,0,GET,/a\n"
    );
    assert_eq!((done.lines, done.folded), (3, 2));
}
