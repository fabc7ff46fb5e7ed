//! Trace parsing, streaming and skipping.

use super::*;
use std::io::Cursor;

fn reader(text: &str, skip: bool) -> TraceReader<Cursor<Vec<u8>>> {
    TraceReader::new(
        Cursor::new(text.as_bytes().to_vec()),
        Path::new("t.csv"),
        1.0,
        skip,
    )
}

#[test]
fn reads_lines_with_comments_and_optional_columns() {
    let mut r = reader(
        "# made by hand\nt_ms,consumer,method,path\n0,3,GET,/a\n\n12.5,0,PUT,/b\n",
        false,
    );
    let got: Vec<_> = std::iter::from_fn(|| r.next_line().unwrap()).collect();
    assert_eq!(
        got,
        [
            TraceLine {
                at: Duration::ZERO,
                consumer: 3,
                method: Some(Method::Get),
                path: Some("/a".into()),
            },
            TraceLine {
                at: Duration::from_micros(12_500),
                consumer: 0,
                method: Some(Method::Put),
                path: Some("/b".into()),
            },
        ]
    );
    let mut scaled = TraceReader::new(
        Cursor::new(b"t_ms,consumer\n1000,1\n".to_vec()),
        Path::new("t.csv"),
        0.5,
        false,
    );
    assert_eq!(scaled.next().unwrap().at, Duration::from_millis(500));
}

#[test]
fn a_bad_line_names_the_file_and_line() {
    let mut r = reader("t_ms,consumer\n0,1\nabc,1\n", false);
    assert!(r.next_line().unwrap().is_some());
    let e = r.next_line().unwrap_err().to_string();
    assert!(e.starts_with("t.csv:3: ") && e.contains("abc"), "{e}");
    for (text, what) in [
        ("t_ms,consumer\n5,1\n4,1\n", "back in time"),
        ("t_ms,consumer\n5,x\n", "consumer `x`"),
        ("t_ms,consumer\n5\n", "expected 2 fields"),
        ("t_ms,consumer,method\n5,1,FETCH\n", "method"),
        (
            "t_ms,consumer,method,path\n5,1,GET,/a b\n",
            "percent-encode it",
        ),
        (
            "t_ms,consumer,method,path\n5,1,GET,a\n",
            "must start with `/`",
        ),
        ("time,who\n", "bad header"),
        ("", "empty trace"),
    ] {
        let mut r = reader(text, false);
        let e = loop {
            match r.next_line() {
                Ok(Some(_)) => continue,
                Ok(None) => panic!("{text:?} parsed"),
                Err(e) => break e.to_string(),
            }
        };
        assert!(e.contains(what), "{text:?}: {e}");
    }
}

#[test]
fn skip_bad_lines_counts_and_names_the_first_few() {
    let mut text = String::from("t_ms,consumer\n");
    for i in 0..20 {
        text.push_str(if i % 2 == 0 { "abc,1\n" } else { "10,1\n" });
    }
    let mut r = reader(&text, true);
    assert_eq!(r.by_ref().count(), 10);
    assert!(r.error().is_none());
    let (n, first) = r.skipped();
    assert_eq!(n, 10);
    assert_eq!(first, [2, 4, 6, 8, 10]);
}

#[test]
fn streams_a_long_trace_without_holding_it() {
    // A reader over a generator: a million lines that never exist at once.
    struct Lines(u64, Vec<u8>, usize);
    impl std::io::Read for Lines {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            if self.2 >= self.1.len() {
                if self.0 == 0 {
                    return Ok(0);
                }
                self.0 -= 1;
                self.1 = format!("{},{}\n", 1_000_000 - self.0, self.0 % 7).into_bytes();
                self.2 = 0;
            }
            let n = buf.len().min(self.1.len() - self.2);
            buf[..n].copy_from_slice(&self.1[self.2..self.2 + n]);
            self.2 += n;
            Ok(n)
        }
    }
    let input = std::io::BufReader::new(Lines(1_000_000, b"t_ms,consumer\n".to_vec(), 0));
    let r = TraceReader::new(input, Path::new("gen.csv"), 1.0, false);
    assert_eq!(r.count(), 1_000_000);
}

#[test]
fn resolve_sets_requests_and_rate_and_checks_consumers() {
    let dir = std::env::temp_dir().join(format!("herd-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("t.csv"),
        "t_ms,consumer\n0,0\n500,1\n1000,1\n2000,0\n",
    )
    .unwrap();
    let toml = "name = \"t\"\n[load]\ntrace = \"t.csv\"\n[consumers]\ncount = 2\ntimeout_ms = 100\n[[arms]]\nid = \"a\"\npolicy = \"none\"\n";
    std::fs::write(dir.join("s.toml"), toml).unwrap();
    let path = dir.join("s.toml").display().to_string();
    let mut s = crate::load(&path).unwrap().scenario;
    let scan = resolve(&mut s).unwrap().unwrap();
    assert_eq!((scan.lines, s.load.requests, s.load.rate), (4, 4, 2.0));
    let mut one = crate::load(&path).unwrap().scenario;
    one.consumers.as_mut().unwrap().count = 1;
    let e = resolve(&mut one).unwrap_err().to_string();
    assert!(e.contains("t.csv:3:") && e.contains("consumer 1"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn times_past_the_bound_are_bad_lines() {
    // `Duration::from_secs_f64` used to panic on these.
    let mut r = reader("t_ms,consumer\n0,0\n1e300,0\n", false);
    r.next_line().unwrap();
    let m = r.next_line().unwrap_err().to_string();
    assert!(
        m.starts_with("t.csv:3:") && m.contains("1e300") && m.contains("365 days"),
        "{m}"
    );
    let mut r = reader("t_ms,consumer\n1e300,0\n5,1\n", true);
    assert_eq!(r.next_line().unwrap().map(|l| l.consumer), Some(1));
    assert_eq!(r.skipped().0, 1);
}
