//! `--json PATH` onto something that is not a regular file: written in place, never
//! replaced. (A rename over `/dev/null` once turned it into a plain file for the whole
//! machine, and every later `2>/dev/null` filled it with text.)

mod common;

use common::{herd, stderr, stdout, tempdir};
use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::process::Command;

#[test]
fn json_into_a_fifo_keeps_the_fifo() {
    let dir = tempdir("fifo");
    let fifo = dir.join("report.pipe");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut s = String::new();
            std::fs::File::open(&fifo)
                .expect("open fifo")
                .read_to_string(&mut s)
                .expect("read fifo");
            s
        })
    };
    let out = herd(&[
        "sim",
        "seed-quick",
        "--arm",
        "no-retry",
        "--json",
        fifo.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = reader.join().unwrap();
    assert!(got.contains("\"schema\": \"herd.report/v1\""), "{got}");
    let kind = std::fs::metadata(&fifo).unwrap().file_type();
    assert!(kind.is_fifo(), "still a FIFO");
}

/// `--quiet` means the same in every command that writes a report: nothing but what
/// `--json` and `--out` ask for.
#[test]
fn quiet_prints_only_what_was_asked_for_in_every_command() {
    let runs: [&[&str]; 3] = [
        &["sim", "seed-quick", "--arm", "no-retry"],
        &["sim", "seed-quick", "--arm", "no-retry", "--seeds", "2"],
        &[
            "tune",
            "seed-quick",
            "--vary",
            "retries=0,1",
            "--seeds",
            "1",
        ],
    ];
    for args in runs {
        let mut quiet = args.to_vec();
        quiet.push("--quiet");
        let o = herd(&quiet);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        assert!(o.stdout.is_empty(), "{args:?}: {}", stdout(&o));
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
        quiet.extend(["--json", "-"]);
        let o = herd(&quiet);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout is the JSON alone");
        assert!(o.stderr.is_empty(), "{args:?}: {}", stderr(&o));
        let mut loud = args.to_vec();
        loud.extend(["--json", "-"]);
        let o = herd(&loud);
        assert!(o.status.success(), "{args:?}: {}", stderr(&o));
        serde_json::from_slice::<serde_json::Value>(&o.stdout).expect("stdout is the JSON alone");
        assert!(!o.stderr.is_empty(), "{args:?}: the text goes to stderr");
    }
}
