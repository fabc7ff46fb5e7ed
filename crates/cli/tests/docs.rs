//! `herd completions`, `herd man` and `herd --version`: generated from the clap
//! definitions, checked by the shells and tools that read them.

mod common;

use common::{herd, stderr, stdout, tempdir};
use std::process::Command;

#[test]
fn bash_completion_sources_cleanly_and_completes_subcommands() {
    let out = herd(&["completions", "bash"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dir = tempdir("completions");
    let script = dir.join("herd.bash");
    std::fs::write(&script, &out.stdout).unwrap();
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .status()
        .unwrap();
    assert!(syntax.success(), "bash -n");
    let complete = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source {}; COMP_WORDS=(herd be); COMP_CWORD=1; COMP_LINE='herd be'; COMP_POINT=7; \
             _herd herd be herd; echo \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&complete.stdout).trim(), "bench");
}

#[test]
fn every_shell_gets_a_script() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = herd(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        assert!(stdout(&out).contains("bench"), "{shell}");
    }
    let out = herd(&["completions", "tcsh"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn man_page_is_roff_naming_every_subcommand() {
    let out = herd(&["man"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = stdout(&out);
    assert!(page.contains(".TH herd 1"), "{page}");
    for sub in ["bench", "sim", "tune", "upstream", "policy", "check"] {
        assert!(
            page.contains(&format!("herd\\-{sub}")),
            "{sub} in the man page"
        );
    }
}

#[test]
fn version_names_the_commit() {
    let out = herd(&["--version"]);
    let v = stdout(&out);
    assert!(
        v.starts_with(&format!("herd {}", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
    assert!(v.contains("(commit "), "{v}");
}
