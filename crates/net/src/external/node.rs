//! The Node.js adapter (`adapters/node/arm.mjs`): where it is, whether its dependencies are
//! installed, and the command line that starts one of its clients.
//!
//! Found through `HERD_NODE_ADAPTER` (a directory) or, by default, `adapters/node` in the
//! workspace this crate was built from, so `cargo test` and `cargo run` work from a fresh
//! checkout. Every way this can fail before the adapter runs (no `node` on `PATH`, no
//! directory, no `node_modules`) is a named [`ExternalError`] rather than a crash of the
//! child.

use super::command::ArmCommand;
use super::error::ExternalError;
use herd_scenario::clients::{self, Runtime};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

/// The clients `arm.mjs` offers: the registry's Node entries
/// ([`herd_scenario::clients`], which a test checks against `arm.mjs`).
pub fn node_clients() -> Vec<&'static str> {
    clients::ids(Runtime::Node)
}

/// The packages `arm.mjs` imports; present in `node_modules` once installed.
const PACKAGES: &[&str] = &["undici", "axios", "axios-retry"];

/// The environment variable that overrides the adapter directory.
pub const ADAPTER_ENV: &str = "HERD_NODE_ADAPTER";

/// What a Node arm is asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeArmOptions {
    /// The target URL (the upstream), e.g. `http://127.0.0.1:8080/`.
    pub url: String,
    /// HTTP method.
    pub method: String,
    /// Connections in the arm's keep-alive pool.
    pub pool: usize,
    /// The library's request timeout (`None`: none). undici applies it per attempt,
    /// axios to the whole logical request.
    pub timeout: Option<Duration>,
}

impl NodeArmOptions {
    /// `GET url` with a pool of 256 and no timeout.
    pub fn new(url: impl Into<String>) -> Self {
        NodeArmOptions {
            url: url.into(),
            method: "GET".to_string(),
            pool: 256,
            timeout: None,
        }
    }
}

/// A located Node adapter directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeAdapter {
    dir: PathBuf,
}

impl NodeAdapter {
    /// `$HERD_NODE_ADAPTER`, else `<workspace>/adapters/node`; `client` is for the error.
    pub fn locate(client: &str) -> Result<NodeAdapter, ExternalError> {
        let dir = match std::env::var_os(ADAPTER_ENV) {
            Some(d) if !d.is_empty() => PathBuf::from(d),
            _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../adapters/node"),
        };
        let adapter = NodeAdapter::at(dir);
        if !adapter.entry().is_file() {
            return Err(ExternalError::AdapterNotFound {
                client: client.to_string(),
                path: adapter.entry(),
            });
        }
        Ok(adapter)
    }

    /// The adapter in `dir`, unchecked.
    pub fn at(dir: impl Into<PathBuf>) -> NodeAdapter {
        NodeAdapter { dir: dir.into() }
    }

    /// The adapter directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `arm.mjs`.
    pub fn entry(&self) -> PathBuf {
        self.dir.join("arm.mjs")
    }

    /// Whether every package the adapter imports is in `node_modules`.
    pub fn is_installed(&self) -> bool {
        PACKAGES.iter().all(|p| {
            self.dir
                .join("node_modules")
                .join(p)
                .join("package.json")
                .is_file()
        })
    }

    /// Runs `npm ci` (the committed lockfile, exactly) unless already installed.
    pub async fn ensure_installed(&self, client: &str) -> Result<(), ExternalError> {
        if self.is_installed() {
            return Ok(());
        }
        if find_on_path("node").is_none() {
            return Err(ExternalError::NodeNotFound {
                client: client.to_string(),
            });
        }
        let install = |detail: String| ExternalError::Install {
            client: client.to_string(),
            dir: self.dir.clone(),
            detail,
        };
        let npm = find_on_path("npm").ok_or_else(|| {
            install("`npm` not found on PATH to run `npm ci` (install Node.js with npm)".into())
        })?;
        let out = tokio::process::Command::new(npm)
            .args(["ci", "--no-audit", "--no-fund"])
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output();
        let out = tokio::time::timeout(Duration::from_secs(300), out)
            .await
            .map_err(|_| install("`npm ci` did not finish within 300 s".into()))?
            .map_err(|e| install(format!("could not run `npm ci`: {e}")))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            let tail: String = err.lines().rev().take(20).collect::<Vec<_>>().join("\n");
            return Err(install(format!("`npm ci` failed ({}): {tail}", out.status)));
        }
        if !self.is_installed() {
            return Err(install(
                "`npm ci` succeeded but packages are missing".into(),
            ));
        }
        Ok(())
    }

    /// The command that runs `client` with `opts`. Checks the client id, `node` on `PATH`
    /// and the installed packages, so that a missing piece is named here, not as an
    /// adapter crash.
    pub fn command(
        &self,
        client: &str,
        opts: &NodeArmOptions,
    ) -> Result<ArmCommand, ExternalError> {
        if clients::external_client(client).map(|c| c.runtime) != Some(Runtime::Node) {
            return Err(ExternalError::UnknownClient {
                client: client.to_string(),
                known: node_clients(),
            });
        }
        let node = find_on_path("node").ok_or_else(|| ExternalError::NodeNotFound {
            client: client.to_string(),
        })?;
        if !self.is_installed() {
            return Err(ExternalError::Install {
                client: client.to_string(),
                dir: self.dir.clone(),
                detail: format!("run `npm ci` in {}", self.dir.display()),
            });
        }
        let timeout_ms = opts.timeout.map_or(0, |d| d.as_millis().max(1));
        let args: [(&str, OsString); 5] = [
            ("--client", client.into()),
            ("--url", opts.url.as_str().into()),
            ("--method", opts.method.as_str().into()),
            ("--pool", opts.pool.to_string().into()),
            ("--timeout-ms", timeout_ms.to_string().into()),
        ];
        let mut cmd = ArmCommand::new(client, node)
            .with_cwd(&self.dir)
            .with_arg(self.entry());
        for (flag, value) in args {
            cmd = cmd.with_arg(flag).with_arg(value);
        }
        Ok(cmd)
    }
}

/// The first file called `name` in a `PATH` directory.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        [
            name.to_string(),
            format!("{name}.exe"),
            format!("{name}.cmd"),
        ]
        .into_iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file())
    })
}
