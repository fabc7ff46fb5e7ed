//! `herd trace import`: real nginx logs in (fixtures, and a live nginx started here), a
//! trace out, written atomically; bad lines exit 2 naming file and line; and the imported
//! trace replayed by `herd sim`, request methods deciding retries.

mod common;

use common::{arm, herd, stderr, stdout, tempdir};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn log(name: &str) -> String {
    format!("{}/tests/logs/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn json(o: &std::process::Output) -> serde_json::Value {
    assert!(o.status.success(), "{}", stderr(o));
    serde_json::from_str(&stdout(o)).expect("JSON on stdout")
}

/// The nginx fixture's good lines, as a trace (line 5 is a TLS hello, a bad line).
const NGINX_TRACE: &str = "t_ms,consumer,method,path
0,0,GET,/
0,0,POST,/api/orders?id=7&tags=a%2Cb
0,0,DELETE,/api/orders/7
0,0,GET,/caf%C3%A9?q=%22a
";

#[test]
fn an_nginx_log_becomes_a_trace_and_bad_lines_name_file_and_line() {
    let dir = tempdir("import-nginx");
    let out = dir.join("trace.csv");
    let file = log("nginx-combined.log");
    let args = ["trace", "import", &file, "--format", "combined"];
    // Stopping at the TLS hello: exit 2, file:line, and no trace (nor temp file) left.
    let mut a = args.to_vec();
    a.extend(["--out", out.to_str().unwrap()]);
    let o = herd(&a);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!("{file}:5: request `")),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing written"
    );
    // Skipping it.
    a.push("--skip-bad-lines");
    let o = herd(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(
        err.contains("skipped 1 bad line of")
            && err.contains("(line 5; line 5: request `\\x16\\x03\\x01\\x00\\x05hello` is not"),
        "{err}"
    );
    assert!(err.contains("imported 4 requests"), "{err}");
    let written = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        written,
        format!("# herd trace import {file}\n{NGINX_TRACE}")
    );
    // The user as consumer: `-` and `alice`.
    let o = herd(&[
        "trace",
        "import",
        &file,
        "--format",
        "combined",
        "--skip-bad-lines",
        "--consumer",
        "remote_user",
    ]);
    assert!(
        stdout(&o).contains("\n0,1,DELETE,/api/orders/7\n"),
        "{}",
        stdout(&o)
    );
    // A combined log read as common, and a consumer field CLF does not have.
    let o = herd(&["trace", "import", &file, "--format", "common"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains(":1: unexpected `\"-\" \"curl/7.88.1\"` after the response size (a Combined Log Format line? use --format combined)"), "{}", stderr(&o));
    let o = herd(&[
        "trace",
        "import",
        &file,
        "--format",
        "combined",
        "--consumer",
        "ip",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--consumer `ip`"), "{}", stderr(&o));
    let o = herd(&[
        "trace",
        "import",
        "/nonexistent.log",
        "--format",
        "combined",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("/nonexistent.log: cannot read"),
        "{}",
        stderr(&o)
    );
    let o = herd(&[
        "trace",
        "import",
        &file,
        "--format",
        "combined",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("is a directory"), "{}", stderr(&o));
}

#[test]
fn msec_gzip_and_json_logs() {
    let dir = tempdir("import-formats");
    // nginx's $msec: millisecond instants (the fixture's requests were ~30 ms apart).
    let o = herd(&[
        "trace",
        "import",
        &log("nginx-msec.log"),
        "--format",
        "combined",
        "--skip-bad-lines",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let msec = stdout(&o);
    assert!(msec.ends_with("t_ms,consumer,method,path\n0,0,GET,/\n29,0,POST,/api/orders?id=7&tags=a%2Cb\n53,0,DELETE,/api/orders/7\n86,0,GET,/caf%C3%A9?q=%22a\n"), "{msec}");
    // The same log gzipped (as logrotate leaves it): recognised by its bytes, not its name.
    let gz = dir.join("access.log.2");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&std::fs::read(log("nginx-msec.log")).unwrap())
        .unwrap();
    std::fs::write(&gz, enc.finish().unwrap()).unwrap();
    let o = herd(&[
        "trace",
        "import",
        gz.to_str().unwrap(),
        "--format",
        "combined",
        "--skip-bad-lines",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).lines().skip(1).collect::<Vec<_>>(),
        msec.lines().skip(1).collect::<Vec<_>>()
    );
    // JSON lines with the user's field names.
    let js = dir.join("app.jsonl");
    std::fs::write(
        &js,
        "{\"ts\":\"2026-12-03T07:00:00.000Z\",\"verb\":\"GET\",\"url\":\"/a\",\"client\":{\"ip\":\"10.0.0.1\"}}\n\
         {\"ts\":\"2026-12-03T07:00:00.120Z\",\"verb\":\"POST\",\"url\":\"/b\",\"client\":{\"ip\":\"10.0.0.2\"}}\n\
         {\"ts\":\"2026-12-03T07:00:01.000Z\",\"verb\":\"GET\",\"url\":\"/c\",\"client\":{\"ip\":\"10.0.0.1\"}}\n\
         not json\n",
    )
    .unwrap();
    let flags = [
        "--format",
        "json",
        "--time-field",
        "ts",
        "--method-field",
        "verb",
        "--path-field",
        "url",
        "--consumer",
        "client.ip",
    ];
    let mut a = vec!["trace", "import", js.to_str().unwrap()];
    a.extend(flags);
    let o = herd(&a);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(&format!("{}:4: not a JSON object", js.display())),
        "{}",
        stderr(&o)
    );
    a.push("--skip-bad-lines");
    let o = herd(&a);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stdout(&o)
            .ends_with("t_ms,consumer,method,path\n0,0,GET,/a\n120,1,POST,/b\n1000,0,GET,/c\n"),
        "{}",
        stdout(&o)
    );
}

/// A scenario whose upstream answers every request 503, with one undici arm (idempotent
/// methods only) retrying twice.
fn always_503(dir: &Path) -> PathBuf {
    let s = dir.join("s.toml");
    std::fs::write(
        &s,
        "name = \"all-503\"\nseed = 1\n[load]\nrequests = 100\n[upstream]\nerror_rate = 1.0\n\
         [[arms]]\nid = \"undici\"\npolicy = \"undici\"\nretries = 2\nbase_ms = 10\njitter = \"none\"\n",
    )
    .unwrap();
    s
}

#[test]
fn herd_sim_retries_by_each_requests_method() {
    let dir = tempdir("import-sim-method");
    let scenario = always_503(&dir);
    let run = |trace: &str| {
        let t = dir.join("t.csv");
        std::fs::write(&t, trace).unwrap();
        let v = json(&herd(&[
            "sim",
            scenario.to_str().unwrap(),
            "--trace",
            t.to_str().unwrap(),
            "--json",
            "-",
            "--quiet",
        ]));
        let a = arm(&v, "undici").clone();
        (
            a["logical_requests"].as_u64().unwrap(),
            a["server_requests"].as_u64().unwrap(),
        )
    };
    // No method column: [load] method (GET), retried: 3 attempts each.
    assert_eq!(run("t_ms,consumer\n0,0\n100,0\n"), (2, 6));
    assert_eq!(run("t_ms,consumer,method\n0,0,GET\n100,0,GET\n"), (2, 6));
    // POST is not idempotent: undici does not retry it.
    assert_eq!(
        run("t_ms,consumer,method,path\n0,0,POST,/o\n100,0,GET,/\n"),
        (2, 4)
    );
    assert_eq!(run("t_ms,consumer,method\n0,0,POST\n100,0,PATCH\n"), (2, 2));
}

/// Debian's nginx, on a free loopback port, logging with `$msec` (`access.log`) and with
/// its default `combined` format's `$time_local` (`access-local.log`); killed on drop.
struct Nginx {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Nginx {
    fn start(dir: &Path) -> Nginx {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let d = dir.display();
        let conf = dir.join("nginx.conf");
        std::fs::write(
            &conf,
            format!(
                "daemon off;\nmaster_process off;\nworker_processes 1;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
                 events {{ worker_connections 64; }}\nhttp {{\n  access_log off;\n\
                   client_body_temp_path {d}/body;\n  proxy_temp_path {d}/proxy;\n  fastcgi_temp_path {d}/fastcgi;\n\
                   uwsgi_temp_path {d}/uwsgi;\n  scgi_temp_path {d}/scgi;\n\
                   log_format timed '$remote_addr - $remote_user [$msec] \"$request\" $status $body_bytes_sent \"$http_referer\" \"$http_user_agent\"';\n\
                   server {{\n    listen 127.0.0.1:{port};\n    access_log {d}/access.log timed;\n    access_log {d}/access-local.log combined;\n    location / {{ return 200 \"ok\\n\"; }}\n  }}\n}}\n"
            ),
        )
        .unwrap();
        let child = Command::new("/usr/sbin/nginx")
            .args(["-p", &d.to_string(), "-c", conf.to_str().unwrap(), "-e"])
            .arg(dir.join("error.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("Debian's nginx at /usr/sbin/nginx (apt-get install nginx; .ci/run does)");
        let mut n = Nginx {
            child,
            port,
            log: dir.join("access.log"),
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = n.child.try_wait() {
                let mut err = String::new();
                let _ = n
                    .child
                    .stderr
                    .take()
                    .map(|mut e| e.read_to_string(&mut err));
                panic!("nginx exited with {status}: {err}");
            }
            assert!(
                Instant::now() < deadline,
                "nginx did not listen within 10 s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        n
    }

    /// One request on its own connection, read to the end.
    fn send(&self, method: &str, path: &str) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `$msec` of each access-log line, in ms.
fn msec_of(log: &str) -> Vec<u64> {
    log.lines()
        .map(|l| {
            let t = &l[l.find('[').unwrap() + 1..l.find(']').unwrap()];
            let (s, ms) = t.split_once('.').unwrap();
            s.parse::<u64>().unwrap() * 1000 + ms.parse::<u64>().unwrap()
        })
        .collect()
}

#[test]
fn a_live_nginx_log_replays_in_herd_sim_at_its_own_instants() {
    let dir = tempdir("import-live-nginx");
    let nginx = Nginx::start(&dir);
    // 24 requests over ~1.2 s, in groups, so that 100 ms buckets differ.
    let plan: Vec<(&str, &str, u64)> = (0..24)
        .map(|i| {
            let (m, p) = match i % 3 {
                0 => ("GET", "/items?page=1"),
                1 => ("POST", "/orders"),
                _ => ("PUT", "/orders/7"),
            };
            (m, p, if i % 4 == 3 { 150 } else { 20 })
        })
        .collect();
    for (m, p, gap) in &plan {
        nginx.send(m, p);
        std::thread::sleep(Duration::from_millis(*gap));
    }
    // nginx writes each line when its request ends, before the connection closes.
    let log = std::fs::read_to_string(&nginx.log).unwrap();
    drop(nginx);
    assert_eq!(log.lines().count(), plan.len(), "{log}");
    let trace = dir.join("trace.csv");
    let o = herd(&[
        "trace",
        "import",
        nginx_log(&dir).as_str(),
        "--format",
        "combined",
        "--out",
        trace.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    // t_ms is each line's $msec minus the first's, to the millisecond.
    let msec = msec_of(&log);
    let csv = std::fs::read_to_string(&trace).unwrap();
    let rows: Vec<&str> = csv.lines().skip(2).collect();
    assert_eq!(rows.len(), plan.len());
    for ((row, t), (m, p, _)) in rows.iter().zip(&msec).zip(&plan) {
        assert_eq!(*row, format!("{},0,{m},{p}", t - msec[0]));
    }
    // herd sim replays it: one logical request per line, arriving at those instants (the
    // report's 100 ms timeline counts them per bucket).
    let v = json(&herd(&[
        "sim",
        "seed-quick",
        "--arm",
        "no-retry",
        "--trace",
        trace.to_str().unwrap(),
        "--json",
        "-",
        "--quiet",
    ]));
    let a = arm(&v, "no-retry");
    assert_eq!(a["logical_requests"].as_u64(), Some(plan.len() as u64));
    let mut want = std::collections::BTreeMap::new();
    for t in &msec {
        *want.entry((t - msec[0]) / 100 * 100).or_insert(0u64) += 1;
    }
    let got: std::collections::BTreeMap<u64, u64> = a["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["offered"].as_u64() > Some(0))
        .map(|b| (b["t_ms"].as_u64().unwrap(), b["offered"].as_u64().unwrap()))
        .collect();
    assert_eq!(got, want);
    // The same requests in nginx's default format: 1 s instants, said; spread, each stays
    // in the second nginx stamped it with.
    let local = dir.join("access-local.log");
    let o = herd(&[
        "trace",
        "import",
        local.to_str().unwrap(),
        "--format",
        "combined",
        "--spread",
        "poisson",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(&format!(
            "{} has 1 s timestamps: {} requests on",
            local.display(),
            plan.len()
        )),
        "{}",
        stderr(&o)
    );
    let spread: Vec<f64> = stdout(&o)
        .lines()
        .skip(2)
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(spread.len(), plan.len());
    for (t, ms) in spread.iter().zip(&msec) {
        assert_eq!(
            (*t / 1000.0).floor() as u64,
            ms / 1000 - msec[0] / 1000,
            "{t}"
        );
    }
}

fn nginx_log(dir: &Path) -> String {
    dir.join("access.log").display().to_string()
}

/// Seconds since the epoch of 2026-12-03T00:00:00Z.
const DEC_3: u64 = 1_796_256_000;

/// One seeded Poisson traffic (`rate` req/s for `secs` s from 2026-12-03T00:00:00Z, three
/// clients), logged twice as nginx would: with `$msec` and with its default
/// `$time_local` (the same instant, cut to the second).
fn one_traffic_two_logs(dir: &Path, rate: f64, secs: f64) -> (PathBuf, PathBuf) {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(11);
    let (mut msec, mut local) = (String::new(), String::new());
    let mut t = 0.0;
    loop {
        t += -(1.0 - rng.random::<f64>()).ln() / rate;
        if t >= secs {
            break;
        }
        let ms = (t * 1000.0) as u64;
        let client = format!("10.0.0.{}", rng.random_range(1..4));
        let rest = "\"GET /items HTTP/1.1\" 200 3 \"-\" \"load\"";
        msec += &format!(
            "{client} - - [{}.{:03}] {rest}\n",
            DEC_3 + ms / 1000,
            ms % 1000
        );
        let s = ms / 1000;
        local += &format!(
            "{client} - - [03/Dec/2026:{:02}:{:02}:{:02} +0000] {rest}\n",
            s / 3600,
            s / 60 % 60,
            s % 60
        );
    }
    let (a, b) = (dir.join("msec.log"), dir.join("local.log"));
    std::fs::write(&a, msec).unwrap();
    std::fs::write(&b, local).unwrap();
    (a, b)
}

#[test]
fn a_seconds_clock_is_said_and_spread_replays_like_the_millisecond_log() {
    // Below the upstream's capacity and well above it.
    for rate in [380.0, 550.0] {
        seconds_clock_at(rate);
    }
}

fn seconds_clock_at(rate: f64) {
    let dir = tempdir(&format!("import-clock-{rate}"));
    let (msec, local) = one_traffic_two_logs(&dir, rate, 20.0);
    // An upstream of 4 workers × 10 ms (400 req/s) with a short queue, shedding 503s: a
    // burst of a second's requests at one instant is shed, the same requests spread are not.
    let scenario = dir.join("capacity.toml");
    std::fs::write(
        &scenario,
        "name = \"capacity\"\nseed = 5\n[load]\nrequests = 100\n\
         [upstream]\nerror_rate = 0\nreset_rate = 0\nstall_rate = 0\n\
         service_time = { dist = \"constant\", ms = 10 }\nworkers = 4\nqueue_limit = 8\nshed = \"503\"\n\
         [[arms]]\nid = \"no-retry\"\npolicy = \"none\"\n",
    )
    .unwrap();
    let import = |log: &Path, extra: &[&str]| {
        let out = dir.join(format!(
            "{}{}.csv",
            log.file_stem().unwrap().to_str().unwrap(),
            extra.join("")
        ));
        let mut a = vec![
            "trace",
            "import",
            log.to_str().unwrap(),
            "--format",
            "combined",
            "--out",
            out.to_str().unwrap(),
        ];
        a.extend(extra);
        let o = herd(&a);
        assert!(o.status.success(), "{}", stderr(&o));
        (out, stderr(&o))
    };
    let hard_fail = |trace: &Path| {
        let v = json(&herd(&[
            "sim",
            scenario.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
            "--json",
            "-",
            "--quiet",
        ]));
        arm(&v, "no-retry")["hard_fail_ratio"].as_f64().unwrap() * 100.0
    };
    let (msec_trace, said) = import(&msec, &[]);
    assert!(
        !said.contains("timestamps"),
        "a 1 ms clock is not warned about: {said}"
    );
    let (local_trace, said) = import(&local, &[]);
    let lines = std::fs::read_to_string(&local).unwrap().lines().count();
    assert!(
        said.contains(&format!(
            "{} has 1 s timestamps: {lines} requests on 20 instants",
            local.display()
        )) && said.contains("--spread poisson places them within their 1 s instant"),
        "{said}"
    );
    let (spread_trace, said) = import(&local, &["--spread", "poisson"]);
    assert!(said.contains("has 1 s timestamps"), "{said}");
    assert!(
        said.contains("spread within each 1 s instant as a Poisson process with the log's counts"),
        "{said}"
    );
    let again = import(&local, &["--spread", "poisson", "--seed", "1"]).0;
    assert_eq!(
        std::fs::read_to_string(&spread_trace).unwrap(),
        std::fs::read_to_string(&again).unwrap(),
        "the default seed is 1, and a seed gives one trace"
    );
    let (uniform_trace, _) = import(&local, &["--spread", "uniform"]);
    let (m, l, p, u) = (
        hard_fail(&msec_trace),
        hard_fail(&local_trace),
        hard_fail(&spread_trace),
        hard_fail(&uniform_trace),
    );
    eprintln!(
        "no-retry hard-fail, {rate} req/s, {lines} requests: $msec {m:.2}%, $time_local as logged {l:.2}%, \
         --spread poisson {p:.2}%, --spread uniform {u:.2}%"
    );
    assert!((p - m).abs() <= 3.0, "poisson {p:.2}% vs $msec {m:.2}%");
    assert!(l > m + 30.0, "as logged {l:.2}% vs $msec {m:.2}%");
    assert!(
        u <= m + 1.0,
        "evenly spaced is no burstier than Poisson: {u:.2}% vs {m:.2}%"
    );
}

#[test]
fn retries_behind_the_log_are_folded_and_counted() {
    let dir = tempdir("import-fold");
    let log = dir.join("access.log");
    // A client retrying a 503 twice, 100 and 300 ms later; another client's same request.
    std::fs::write(
        &log,
        "10.0.0.1 - - [1796256000.000] \"GET /a HTTP/1.1\" 503 1 \"-\" \"c\"\n\
         10.0.0.2 - - [1796256000.050] \"GET /a HTTP/1.1\" 200 1 \"-\" \"c\"\n\
         10.0.0.1 - - [1796256000.100] \"GET /a HTTP/1.1\" 503 1 \"-\" \"c\"\n\
         10.0.0.1 - - [1796256000.400] \"GET /a HTTP/1.1\" 200 1 \"-\" \"c\"\n\
         10.0.0.1 - - [1796256000.450] \"POST /a HTTP/1.1\" 200 1 \"-\" \"c\"\n",
    )
    .unwrap();
    let o = herd(&[
        "trace",
        "import",
        log.to_str().unwrap(),
        "--format",
        "combined",
        "--fold-retries",
        "500ms",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains(
            "folded 2 requests into the one before (same client, method and path within 500 ms of it)"
        ),
        "{}",
        stderr(&o)
    );
    assert!(
        stdout(&o).ends_with("t_ms,consumer,method,path\n0,0,GET,/a\n50,1,GET,/a\n450,0,POST,/a\n"),
        "{}",
        stdout(&o)
    );
    let o = herd(&[
        "trace",
        "import",
        log.to_str().unwrap(),
        "--format",
        "json",
        "--fold-retries",
        "1s",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--consumer"), "{}", stderr(&o));
    let o = herd(&[
        "trace",
        "import",
        log.to_str().unwrap(),
        "--format",
        "combined",
        "--fold-retries",
        "soon",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`soon` is not a window"),
        "{}",
        stderr(&o)
    );
}
