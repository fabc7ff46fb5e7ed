//! Records the commit herd was built from, for `herd --version`: a report or a bug is only
//! reproducible against a known build. Outside a git checkout (a crates.io install) the
//! commit is unknown and says so.

use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .is_some_and(|o| !o.stdout.is_empty());
    let version = match commit {
        Some(c) if dirty => format!("{} (commit {c}, modified)", env!("CARGO_PKG_VERSION")),
        Some(c) => format!("{} (commit {c})", env!("CARGO_PKG_VERSION")),
        None => format!("{} (commit unknown)", env!("CARGO_PKG_VERSION")),
    };
    println!("cargo:rustc-env=HERD_VERSION={version}");
    // Rebuild when HEAD moves or the index changes (a commit, a checkout).
    for f in ["../../.git/HEAD", "../../.git/index"] {
        if std::path::Path::new(f).exists() {
            println!("cargo:rerun-if-changed={f}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
