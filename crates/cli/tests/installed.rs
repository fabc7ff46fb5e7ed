//! herd as `cargo install` leaves it: one binary in a directory of its own, run from an
//! empty directory on a machine where the source tree is not there. Every real client it
//! drives must still work: the adapters' sources are embedded in the binary and set up in a
//! fresh cache on first use (`npm ci`, a Python virtual environment, `go build`).
//!
//! The source tree is hidden by mounting an empty tmpfs over it in a mount namespace of
//! the child's own (`unshare -m`, as root), so a path into the repository that slipped into
//! the binary fails here as it would on a user's machine. Needs node/npm, python3 with venv
//! and go with Debian's go-retryablehttp, like the other real-client tests: it fails
//! without them, it never skips.

mod common;
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A copy of the built binary outside the repository, an empty working directory and a
/// fresh cache.
struct Installed {
    root: PathBuf,
    bin: PathBuf,
    cwd: PathBuf,
    cache: PathBuf,
}

fn install() -> Installed {
    let root = tempdir("installed");
    let bin = root.join("bin/herd");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    std::fs::copy(env!("CARGO_BIN_EXE_herd"), &bin).expect("copy herd");
    let cwd = root.join("empty");
    let cache = root.join("cache");
    std::fs::create_dir_all(&cwd).unwrap();
    Installed {
        root,
        bin,
        cwd,
        cache,
    }
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// `herd bench peers --arm ARM --requests 200` run by the installed binary with the source
/// tree hidden; returns the arm's report.
fn bench_peers(i: &Installed, arm_id: &str) -> Value {
    let o = Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            r#"mount -t tmpfs tmpfs "$1" && cd "$2" && shift 2 && exec "$@""#,
            "sh",
        ])
        .arg(repository())
        .arg(&i.cwd)
        .arg(&i.bin)
        .args(["bench", "peers", "--arm", arm_id, "--requests", "200"])
        .args(["--json", "report.json", "--quiet"])
        .env("HERD_CACHE", &i.cache)
        .env_remove("HERD_ADAPTERS")
        .env_remove("HERD_NODE_ADAPTER")
        .output()
        .expect("unshare runs");
    assert!(o.status.success(), "{arm_id}: {}\n{}", o.status, stderr(&o));
    let report = i.cwd.join("report.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&report).expect("report.json")).unwrap();
    std::fs::remove_file(report).unwrap();
    arm(&v, arm_id).clone()
}

#[test]
fn an_installed_herd_runs_node_python_and_go_clients_from_an_empty_directory() {
    let i = install();
    for id in ["node-undici", "py-requests", "go-retryablehttp"] {
        let a = bench_peers(&i, id);
        assert_eq!(a["logical_requests"], 200, "{id}: {a}");
        let server = a["server_requests"].as_u64().unwrap();
        assert!(server >= 200, "{id}: the upstream saw {server} requests");
        let cmd = a["command"].as_array().expect("the adapter's command line");
        let cache = i.cache.to_str().unwrap();
        assert!(
            cmd.iter().any(|a| a.as_str().unwrap().starts_with(cache)),
            "{id} did not run from the fresh cache: {cmd:?}"
        );
    }
    // Each runtime's adapter was set up in the fresh cache.
    let made: Vec<String> = std::fs::read_dir(&i.cache)
        .expect("the cache was made")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!made.is_empty(), "cache is empty");
    // The cache holds a virtual environment and node_modules: hundreds of MB.
    let _ = std::fs::remove_dir_all(&i.root);
}
