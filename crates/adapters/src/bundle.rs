//! The adapters' source files, compiled into herd, and the cache directory they are
//! unpacked and set up in, so an installed `herd` (`cargo install --path crates/cli`) runs
//! its real clients from any directory.
//!
//! # Why a content-keyed directory, built aside and renamed
//!
//! The directory is `<cache>/adapters/<runtime>-<hash of the embedded files>`: a new herd
//! with changed adapters gets a new directory and never runs stale dependencies, and an
//! unchanged one reuses the installed packages. Setup (write the files, `npm ci`, a
//! virtual environment, `go build`) happens in a temporary sibling that is renamed into
//! place only once complete, so two arms or two herd processes setting up at once cannot
//! see half an installation: one rename wins, the other's copy is removed. A Python
//! virtual environment survives the rename: its `bin/python` finds `pyvenv.cfg` next to
//! itself, wherever that is.
//!
//! The cache is `$HERD_CACHE` if set, else `$XDG_CACHE_HOME/herd`, else `~/.cache/herd`.

use herd_scenario::Runtime;
use std::path::PathBuf;

/// One embedded file: its name in the adapter directory, and its bytes.
pub(crate) type File = (&'static str, &'static [u8]);

const NODE: &[File] = &[
    ("arm.mjs", include_bytes!("../kits/node/arm.mjs")),
    ("kit.mjs", include_bytes!("../kits/node/kit.mjs")),
    ("packages.mjs", include_bytes!("../kits/node/packages.mjs")),
    (
        "grpc_clients.mjs",
        include_bytes!("../kits/node/grpc_clients.mjs"),
    ),
    ("package.json", include_bytes!("../kits/node/package.json")),
    (
        "package-lock.json",
        include_bytes!("../kits/node/package-lock.json"),
    ),
];

const PYTHON: &[File] = &[
    ("herd_arm.py", include_bytes!("../kits/python/herd_arm.py")),
    ("arm.py", include_bytes!("../kits/python/arm.py")),
    ("packages.py", include_bytes!("../kits/python/packages.py")),
    (
        "grpc_clients.py",
        include_bytes!("../kits/python/grpc_clients.py"),
    ),
    (
        "requirements.txt",
        include_bytes!("../kits/python/requirements.txt"),
    ),
];

const GO: &[File] = &[
    ("kit.go", include_bytes!("../kits/go/kit.go")),
    ("main.go", include_bytes!("../kits/go/main.go")),
    ("resiliency.go", include_bytes!("../kits/go/resiliency.go")),
    ("grpc.go", include_bytes!("../kits/go/grpc.go")),
    (
        "grpc_absent.go",
        include_bytes!("../kits/go/grpc_absent.go"),
    ),
];

/// The embedded source files of `runtime`'s adapter.
pub(crate) fn files(runtime: Runtime) -> &'static [File] {
    match runtime {
        Runtime::Python => PYTHON,
        Runtime::Go => GO,
        _ => NODE,
    }
}

/// The environment variable naming herd's cache directory.
pub const CACHE_ENV: &str = "HERD_CACHE";

/// herd's cache directory: `$HERD_CACHE`, else `$XDG_CACHE_HOME/herd`, else
/// `~/.cache/herd`, else a directory under the system's temporary directory.
pub fn cache_dir() -> PathBuf {
    let var = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = var(CACHE_ENV) {
        return d;
    }
    if let Some(d) = var("XDG_CACHE_HOME") {
        return d.join("herd");
    }
    if let Some(h) = var("HOME") {
        return h.join(".cache").join("herd");
    }
    std::env::temp_dir().join("herd-cache")
}

/// The directory `runtime`'s embedded adapter is set up in. The Go adapter built with
/// grpc-go has a directory of its own, so that installing grpc-go after a first build
/// sets up one that has go-grpc.
pub(crate) fn dir(runtime: Runtime) -> PathBuf {
    let grpc = if runtime == Runtime::Go && crate::adapter::go_grpc_installed() {
        "-grpc"
    } else {
        ""
    };
    cache_dir().join("adapters").join(format!(
        "{}-{:016x}{grpc}",
        runtime.name(),
        hash(files(runtime))
    ))
}

/// FNV-1a (64 bit) over every file's name and contents: stable across builds and
/// platforms, which std's `DefaultHasher` does not promise.
fn hash(files: &[File]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (name, bytes) in files {
        for b in name
            .bytes()
            .chain([0])
            .chain(bytes.iter().copied())
            .chain([0])
        {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_go_adapter_built_with_grpc_go_has_a_directory_of_its_own() {
        let go = dir(Runtime::Go);
        let name = go.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(
            name.ends_with("-grpc"),
            crate::adapter::go_grpc_installed(),
            "{name}"
        );
    }

    #[test]
    fn each_runtime_has_its_own_keyed_directory() {
        let dirs = [Runtime::Node, Runtime::Python, Runtime::Go].map(dir);
        assert!(dirs[0] != dirs[1] && dirs[1] != dirs[2]);
        assert_eq!(dir(Runtime::Go), dir(Runtime::Go));
        assert_ne!(hash(&[("a", b"b")]), hash(&[("ab", b"")]));
    }
}
