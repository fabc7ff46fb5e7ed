//! `herd bench --out DIR` end to end: the five report files, SVGs that parse as XML, a
//! CSV with a row per arm per bucket, the same JSON bytes as `--json`, bad `--out` paths
//! refused before the run, and the HTML page rendered by headless Chromium.
//!
//! Chromium comes from Debian's `chromium` package (`.ci/run` installs it). Without it the
//! screenshot test fails under CI (`CI` set) and is skipped with a note elsewhere.

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const SMALL: &str = r#"
name = "small"
seed = 9
[load]
requests = 300
rate = 300
[client]
pool_max_connections = 64
[upstream]
error_rate = 0.1
service_time = { dist = "constant", ms = 2 }
workers = 8
queue_limit = 16
[[upstream.incidents]]
start_ms = 400
duration_ms = 100
hold = true
[[arms]]
id = "none"
policy = "none"
[[arms]]
id = "undici"
policy = "undici"
base_ms = 20
"#;

const CHROMIUM: &str = "/usr/bin/chromium";

/// Runs the small scenario with `--out dir/out` (and `--json`), returns the out dir.
fn bench_out(name: &str) -> PathBuf {
    let dir = tempdir(name);
    let file = dir.join("small.toml");
    std::fs::write(&file, SMALL).unwrap();
    let out = dir.join("out");
    let json = dir.join("r.json");
    let o = herd(&[
        "bench",
        file.to_str().unwrap(),
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        std::fs::read(&json).unwrap(),
        std::fs::read(out.join("report.json")).unwrap(),
        "report.json is the --json report, byte for byte"
    );
    out
}

fn parse_svg(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text)
        .unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    let texts: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .map(str::trim)
        .collect();
    assert!(
        texts.iter().any(|t| t.starts_with("undici")),
        "{}: no legend: {texts:?}",
        path.display()
    );
    text
}

#[test]
fn out_dir_holds_the_five_files() {
    let out = bench_out("report-files");
    let mut names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "latency.svg",
            "report.html",
            "report.json",
            "summary.csv",
            "timeline.csv",
            "timeline.svg"
        ]
    );
    let timeline = parse_svg(&out.join("timeline.svg"));
    assert!(
        timeline.contains("capacity ≈ 4000 req/s"),
        "8 workers / 2 ms"
    );
    assert!(timeline.contains("incident window"));
    parse_svg(&out.join("latency.svg"));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let buckets: usize = report["arms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["timeline"].as_array().unwrap().len())
        .sum();
    let summary = std::fs::read_to_string(out.join("summary.csv")).unwrap();
    let summary: Vec<_> = summary.lines().collect();
    assert!(
        summary[0].starts_with("arm,p50_ms,p99_ms,"),
        "{}",
        summary[0]
    );
    assert_eq!(summary.len(), 1 + report["arms"].as_array().unwrap().len());
    let csv = std::fs::read_to_string(out.join("timeline.csv")).unwrap();
    let lines: Vec<_> = csv.lines().collect();
    assert_eq!(lines[0], "arm,t_ms,offered,server,ok,errors,resets,shed");
    assert_eq!(lines.len(), 1 + buckets);
    assert!(buckets >= 2 * 10, "a second of buckets per arm: {buckets}");
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert_eq!(html.matches("<svg").count(), 2);
    assert!(html.contains("<td>undici</td>"));
    assert!(html.contains("<pre>\nname = &quot;small&quot;"));
    assert!(!html.contains("<script"));
}

#[test]
fn bad_out_dir_is_refused_before_the_run() {
    let dir = tempdir("report-bad-out");
    let file = dir.join("small.toml");
    std::fs::write(&file, SMALL).unwrap();
    let blocker = dir.join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    for out in [blocker.clone(), blocker.join("sub")] {
        let started = Instant::now();
        let o = herd(&[
            "bench",
            file.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
        assert!(stderr(&o).contains("not a directory"), "{}", stderr(&o));
        assert!(stdout(&o).is_empty(), "nothing ran");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

/// Whether Chromium is here to render pages (it must be under CI).
fn have_chromium() -> bool {
    if !Path::new(CHROMIUM).exists() {
        assert!(
            std::env::var_os("CI").is_none(),
            "{CHROMIUM} is missing under CI: .ci/run must install Debian's chromium"
        );
        eprintln!("note: {CHROMIUM} not found; skipping the Chromium check");
        return false;
    }
    true
}

#[test]
fn html_renders_in_headless_chromium() {
    if !have_chromium() {
        return;
    }
    let out = bench_out("report-chromium");
    let work = tempdir("report-chromium-profile");
    let png = work.join("report.png");
    let html = out.join("report.html").canonicalize().unwrap();
    chromium(
        &work,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1400,2400".into(),
        ],
        &html,
        Stdio::null(),
    );
    let size = std::fs::metadata(&png).map(|m| m.len()).unwrap_or(0);
    assert!(size > 20_000, "screenshot is {size} bytes: an empty page?");
    eprintln!("screenshot: {} ({size} bytes)", png.display());
}

/// Headless Chromium on `html` with `args`, its stdout to `stdout`, in a profile under
/// `work` (removed after); fails the test if it fails or takes more than 90 s.
fn chromium(work: &Path, args: &[String], html: &Path, stdout: Stdio) {
    let mut child = Command::new(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ])
        .arg(format!(
            "--user-data-dir={}",
            work.join("profile").display()
        ))
        .args(args)
        .arg(format!("file://{}", html.display()))
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(Stdio::null())
        .spawn()
        .expect("chromium starts");
    let deadline = Instant::now() + Duration::from_secs(90);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium took more than 90 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(status.success(), "chromium failed: {status}");
    let _ = std::fs::remove_dir_all(work.join("profile"));
}

/// A proxy run's page holds the target's table (forwarded, the target's status classes,
/// no answer, target latency), as the page Chromium renders it.
#[test]
fn a_target_runs_page_has_the_target_table_in_chromium() {
    let dir = tempdir("report-target");
    let nginx = common::nginx::Nginx::start(dir.join("nginx"));
    let file = dir.join("small-target.toml");
    std::fs::write(
        &file,
        SMALL.replace(
            "[upstream]\n",
            &format!(
                "[upstream]\ntarget = \"{}\"\nsettle_ms = 100\n",
                nginx.url()
            ),
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = herd(&[
        "bench",
        file.to_str().unwrap(),
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("report.json")).unwrap()).unwrap();
    let undici = arm(&report, "undici");
    let forwarded = undici["target_requests"].as_u64().unwrap();
    assert!(forwarded > 0);
    assert_eq!(nginx.lines_for("undici") as u64, forwarded);
    // The row as the page writes it: arm, server requests, forwarded, 2xx (nginx answers
    // every forwarded request 200), 3xx, 4xx, 5xx, no answer.
    let row = format!(
        "<tr><td>undici</td><td class=\"r\">{}</td><td class=\"r\">{forwarded}</td><td class=\"r\">{forwarded}</td><td class=\"r\">0</td><td class=\"r\">0</td><td class=\"r\">0</td><td class=\"r\">0</td>",
        undici["server_requests"]
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains(&format!(
            "<h2>Target</h2>\n<p class=\"meta\">target {}",
            nginx.url()
        )),
        "{html}"
    );
    assert!(html.contains("<th class=\"r\">target p50</th><th class=\"r\">target p99</th>"));
    assert!(html.contains(&row), "{row} not in {html}");
    if !have_chromium() {
        return;
    }
    // Chromium's DOM after parsing the page: the target table is a second table, its
    // header and the undici row inside it.
    let work = tempdir("report-target-profile");
    let dom = work.join("dom.html");
    chromium(
        &work,
        &["--dump-dom".into()],
        &out.join("report.html").canonicalize().unwrap(),
        Stdio::from(std::fs::File::create(&dom).unwrap()),
    );
    let dom = std::fs::read_to_string(&dom).unwrap();
    let target = &dom[dom
        .find("<h2>Target</h2>")
        .expect("the target section in the DOM")..];
    let table = &target[target.find("<table>").unwrap()..target.find("</table>").unwrap()];
    assert!(table.contains("<th class=\"r\">forwarded</th>"), "{table}");
    assert!(table.contains(&row), "{table}");
    assert!(table.contains("<td>none</td>"), "{table}");
}
