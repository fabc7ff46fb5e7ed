//! `--json PATH` onto something that is not a regular file: written in place, never
//! replaced. (A rename over `/dev/null` once turned it into a plain file for the whole
//! machine, and every later `2>/dev/null` filled it with text.)

mod common;

use common::{herd, stderr, tempdir};
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
