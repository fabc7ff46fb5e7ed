//! The built-in adapters (Node, Python, Go): where each is, how it is set up, and the
//! command line that starts one of its clients.
//!
//! By default an adapter runs from herd's cache, unpacked from the sources compiled into
//! herd ([`super::bundle`]) and set up there on first use: `npm ci` for Node, a virtual
//! environment with the pinned `requirements.txt` for Python, `go build` (GOPATH mode,
//! against Debian's packaged libraries) for Go. Setup prints one line on stderr saying
//! what it runs. Two overrides run an adapter directory in place instead (set up there
//! the same way): `HERD_ADAPTERS` (a directory laid out like the repository's
//! `crates/adapters/kits/`, with `node/`, `python/`, `go/`) and, for Node only, `HERD_NODE_ADAPTER`.
//!
//! Every way this can fail before the adapter runs (no `node`, `python3` or `go`, no venv
//! module, a failed install) is a named [`ExternalError`] whose message says what to
//! install, never a crash of the child.

use super::bundle;
use super::command::ArmCommand;
use super::error::ExternalError;
use herd_scenario::clients::{self, Runtime};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The clients `arm.mjs` offers: the registry's Node entries
/// ([`herd_scenario::clients`], which a test checks against `arm.mjs`).
pub fn node_clients() -> Vec<&'static str> {
    clients::ids(Runtime::Node)
}

/// The packages `arm.mjs` imports; present in `node_modules` once installed.
const PACKAGES: &[&str] = &["undici", "axios", "axios-retry"];

/// The environment variable that runs the Node adapter from another directory.
pub const ADAPTER_ENV: &str = "HERD_NODE_ADAPTER";

/// The environment variable that runs every adapter from `$HERD_ADAPTERS/<runtime>`.
pub const ADAPTERS_ENV: &str = "HERD_ADAPTERS";

/// The Go adapter's binary, in its directory.
const GO_BINARY: &str = "herd-go-arm";

/// The Debian-packaged Go libraries every Go client builds against: the directory under
/// GOPATH, the library, and its package.
const GO_LIBRARIES: [(&str, &str, &str); 2] = [
    (
        "src/github.com/hashicorp/go-retryablehttp",
        "go-retryablehttp",
        "golang-github-hashicorp-go-retryablehttp-dev",
    ),
    (
        "src/gopkg.in/eapache/go-resiliency.v1",
        "go-resiliency",
        "golang-gopkg-eapache-go-resiliency.v1-dev",
    ),
];

/// grpc-go, which only `go-grpc` needs: with its sources the adapter is built with
/// `grpc.go`, without them with `grpc_absent.go` (go-grpc then says what to install), so
/// the other Go clients run on a machine without it.
const GO_GRPC: (&str, &str, &str) = (
    "src/google.golang.org/grpc",
    "grpc-go",
    "golang-google-grpc-dev",
);

/// Whether Debian's grpc-go sources are installed (the Go adapter's build and its
/// directory depend on it: installing it later sets up a new adapter with go-grpc).
pub(crate) fn go_grpc_installed() -> bool {
    Path::new(GOPATH).join(GO_GRPC.0).is_dir()
}

/// Set in the Go adapter's environment: grpc-go 1.33 (Debian 12's) applies a service
/// config's `retryPolicy` only with `GRPC_GO_RETRY=on`, which it reads once as its packages
/// initialise (grpc-go `internal/envconfig/envconfig.go`), before the adapter's own code
/// could set it. The other Go clients do not read it.
const GO_ENV: [(&str, &str); 1] = [("GRPC_GO_RETRY", "on")];

/// Written into an adapter directory once its setup has finished.
const READY: &str = ".herd-ready";

/// Debian's Go source tree, the GOPATH the Go adapter is built against.
const GOPATH: &str = "/usr/share/gocode";

/// What an external arm is asked to do: the protocol's flags and `--options`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdapterOptions {
    /// The target URL (the upstream), e.g. `http://127.0.0.1:8080/`.
    pub url: String,
    /// HTTP method.
    pub method: String,
    /// Connections in the arm's keep-alive pool.
    pub pool: usize,
    /// The library's request timeout (`None`: none); each library applies it its own way.
    pub timeout: Option<Duration>,
    /// `--options`, a JSON object; `None`: the flag is not passed.
    pub options: Option<String>,
}

/// The former name of [`AdapterOptions`].
pub type NodeArmOptions = AdapterOptions;

impl AdapterOptions {
    /// `GET url` with a pool of 256, no timeout and no options.
    pub fn new(url: impl Into<String>) -> Self {
        AdapterOptions {
            url: url.into(),
            method: "GET".to_string(),
            pool: 256,
            timeout: None,
            options: None,
        }
    }

    /// `--client ID --url … --method … --pool … --timeout-ms … [--options JSON]`;
    /// `client: None` leaves `--client` out (the command already has one).
    pub fn protocol_args(&self, client: Option<&str>) -> Vec<OsString> {
        let timeout_ms = self.timeout.map_or(0, |d| d.as_millis().max(1));
        let mut out: Vec<OsString> = Vec::new();
        if let Some(c) = client {
            out.extend(["--client".into(), c.into()]);
        }
        out.extend([
            "--url".into(),
            self.url.as_str().into(),
            "--method".into(),
            self.method.as_str().into(),
            "--pool".into(),
            self.pool.to_string().into(),
            "--timeout-ms".into(),
            timeout_ms.to_string().into(),
        ]);
        if let Some(o) = &self.options {
            out.extend(["--options".into(), o.as_str().into()]);
        }
        out
    }
}

/// A located adapter directory for one runtime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adapter {
    runtime: Runtime,
    dir: PathBuf,
    /// Unpacked from herd's embedded sources (set up aside, then renamed into place),
    /// rather than a directory given by an override (set up in place).
    embedded: bool,
}

/// The former name of [`Adapter`].
pub type NodeAdapter = Adapter;

impl Adapter {
    /// The adapter that runs `client`: `$HERD_NODE_ADAPTER` (Node), else
    /// `$HERD_ADAPTERS/<runtime>`, else herd's cache (see the module docs).
    pub fn locate(client: &str) -> Result<Adapter, ExternalError> {
        let Some(c) = clients::external_client(client) else {
            return Err(unknown(client));
        };
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        let given = match (c.runtime, var(ADAPTER_ENV), var(ADAPTERS_ENV)) {
            (Runtime::Node, Some(d), _) => Some(PathBuf::from(d)),
            (rt, _, Some(d)) => Some(PathBuf::from(d).join(rt.name())),
            _ => None,
        };
        let Some(dir) = given else {
            return Ok(Adapter {
                runtime: c.runtime,
                dir: bundle::dir(c.runtime),
                embedded: true,
            });
        };
        let adapter = Adapter::at_runtime(c.runtime, dir);
        if !adapter.entry().is_file() {
            return Err(ExternalError::AdapterNotFound {
                client: client.to_string(),
                path: adapter.entry(),
            });
        }
        Ok(adapter)
    }

    /// The Node adapter in `dir`, unchecked, set up in place.
    pub fn at(dir: impl Into<PathBuf>) -> Adapter {
        Adapter::at_runtime(Runtime::Node, dir)
    }

    /// `runtime`'s adapter in `dir`, unchecked, set up in place.
    pub fn at_runtime(runtime: Runtime, dir: impl Into<PathBuf>) -> Adapter {
        Adapter {
            runtime,
            dir: dir.into(),
            embedded: false,
        }
    }

    /// The adapter directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The runtime that hosts it.
    pub fn runtime(&self) -> Runtime {
        self.runtime
    }

    /// The entry point: `arm.mjs`, `arm.py` or `main.go`.
    pub fn entry(&self) -> PathBuf {
        self.dir.join(match self.runtime {
            Runtime::Python => "arm.py",
            Runtime::Go => "main.go",
            _ => "arm.mjs",
        })
    }

    /// Whether the adapter is ready to run: its packages installed, its virtual
    /// environment made or its binary built.
    pub fn is_installed(&self) -> bool {
        if self.embedded {
            return self.dir.join(READY).is_file();
        }
        installed_in(self.runtime, &self.dir)
    }

    /// Sets the adapter up unless it already is (see the module docs): one line on stderr
    /// says what runs.
    pub async fn ensure_installed(&self, client: &str) -> Result<(), ExternalError> {
        if self.is_installed() {
            return Ok(());
        }
        check_runtime(self.runtime, client).await?;
        if !self.embedded {
            return setup(self.runtime, &self.dir, &self.dir, client).await;
        }
        let name = self
            .dir
            .file_name()
            .map_or_else(|| "adapter".into(), |n| n.to_string_lossy().into_owned());
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = self
            .dir
            .with_file_name(format!("{name}.tmp-{}-{nanos}", std::process::id()));
        let io = |doing: &str, e: std::io::Error| ExternalError::Install {
            client: client.to_string(),
            dir: tmp.clone(),
            detail: format!("{doing}: {e}"),
        };
        std::fs::create_dir_all(&tmp).map_err(|e| io("creating the directory", e))?;
        let result = async {
            for (file, bytes) in bundle::files(self.runtime) {
                std::fs::write(tmp.join(file), bytes).map_err(|e| io("writing the sources", e))?;
            }
            setup(self.runtime, &tmp, &self.dir, client).await?;
            std::fs::write(tmp.join(READY), b"").map_err(|e| io("marking it ready", e))?;
            Ok(())
        }
        .await;
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&tmp);
            return Err(e);
        }
        // Another arm or herd may have finished first: its copy is as good as ours.
        if std::fs::rename(&tmp, &self.dir).is_err() {
            let _ = std::fs::remove_dir_all(&tmp);
            if !self.is_installed() {
                return Err(ExternalError::Install {
                    client: client.to_string(),
                    dir: self.dir.clone(),
                    detail: "could not move the finished setup into place".into(),
                });
            }
        }
        Ok(())
    }

    /// The command that runs `client` with `opts`. Checks the client id, the runtime and
    /// the setup, so that a missing piece is named here, not as an adapter crash.
    pub fn command(
        &self,
        client: &str,
        opts: &AdapterOptions,
    ) -> Result<ArmCommand, ExternalError> {
        if clients::external_client(client).map(|c| c.runtime) != Some(self.runtime) {
            return Err(unknown(client));
        }
        let not_set_up = || ExternalError::Install {
            client: client.to_string(),
            dir: self.dir.clone(),
            detail: "not set up yet (herd bench does it on first use)".into(),
        };
        if !self.is_installed() {
            return Err(not_set_up());
        }
        let cmd = match self.runtime {
            Runtime::Python => {
                ArmCommand::new(client, venv_python(&self.dir)).with_arg(self.entry())
            }
            Runtime::Go => GO_ENV.iter().fold(
                ArmCommand::new(client, self.dir.join(GO_BINARY)),
                |c, (k, v)| c.with_env(*k, *v),
            ),
            _ => {
                let node = find_on_path("node").ok_or_else(|| ExternalError::NodeNotFound {
                    client: client.to_string(),
                })?;
                ArmCommand::new(client, node).with_arg(self.entry())
            }
        };
        Ok(opts
            .protocol_args(Some(client))
            .into_iter()
            .fold(cmd.with_cwd(&self.dir), ArmCommand::with_arg))
    }
}

fn unknown(client: &str) -> ExternalError {
    ExternalError::UnknownClient {
        client: client.to_string(),
        known: clients::EXTERNAL_CLIENTS.iter().map(|c| c.id).collect(),
    }
}

fn venv_python(dir: &Path) -> PathBuf {
    dir.join(".venv").join("bin").join("python")
}

/// Whether `dir` holds `runtime`'s adapter, set up.
fn installed_in(runtime: Runtime, dir: &Path) -> bool {
    match runtime {
        Runtime::Python => dir.join(".venv").join(READY).is_file(),
        Runtime::Go => dir.join(GO_BINARY).is_file(),
        _ => PACKAGES.iter().all(|p| {
            dir.join("node_modules")
                .join(p)
                .join("package.json")
                .is_file()
        }),
    }
}

/// The runtime's programs are there, or one sentence naming what to install.
async fn check_runtime(runtime: Runtime, client: &str) -> Result<(), ExternalError> {
    let missing = |what: &str| {
        Err(ExternalError::RuntimeMissing {
            client: client.to_string(),
            what: what.to_string(),
        })
    };
    match runtime {
        Runtime::Python => {
            let Some(py) = find_on_path("python3") else {
                return missing(
                    "python3 with the venv module: apt-get install python3 python3-venv",
                );
            };
            let ok = tokio::process::Command::new(py)
                .args(["-c", "import venv, ensurepip"])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .await
                .is_ok_and(|s| s.success());
            if !ok {
                return missing("python3 with the venv module: apt-get install python3-venv");
            }
        }
        Runtime::Go => {
            if find_on_path("go").is_none() {
                return missing("Go to build its adapter: apt-get install golang-go golang-github-hashicorp-go-retryablehttp-dev golang-gopkg-eapache-go-resiliency.v1-dev (and golang-google-grpc-dev for go-grpc)");
            }
            // The adapter is one program: every Go client needs the libraries it always
            // builds with, go-grpc grpc-go too.
            let grpc = (client == "go-grpc").then_some(GO_GRPC);
            for (dir, library, package) in GO_LIBRARIES.into_iter().chain(grpc) {
                if !Path::new(GOPATH).join(dir).is_dir() {
                    return missing(&format!(
                        "the {library} sources in /usr/share/gocode: apt-get install {package}"
                    ));
                }
            }
        }
        _ => {
            if find_on_path("node").is_none() {
                return Err(ExternalError::NodeNotFound {
                    client: client.to_string(),
                });
            }
            if find_on_path("npm").is_none() {
                return missing("npm to install its packages: apt-get install npm");
            }
        }
    }
    Ok(())
}

/// Runs `runtime`'s setup in `dir` (which holds the sources), saying on stderr that it
/// sets up `shown` (where `dir` will be renamed to).
async fn setup(
    runtime: Runtime,
    dir: &Path,
    shown: &Path,
    client: &str,
) -> Result<(), ExternalError> {
    let fail = |detail: String| ExternalError::Install {
        client: client.to_string(),
        dir: dir.to_path_buf(),
        detail,
    };
    match runtime {
        Runtime::Python => {
            eprintln!(
                "herd: {client}: creating a Python virtual environment in {} (python3 -m venv; pip install -r requirements.txt)",
                shown.display()
            );
            let venv = dir.join(".venv");
            run(
                dir,
                "python3",
                &["-m".as_ref(), "venv".as_ref(), venv.as_os_str()],
                &[],
            )
            .await
            .map_err(&fail)?;
            let py = venv_python(dir);
            let args: [&std::ffi::OsStr; 8] = [
                "-m".as_ref(),
                "pip".as_ref(),
                "install".as_ref(),
                "--quiet".as_ref(),
                "--disable-pip-version-check".as_ref(),
                "--no-input".as_ref(),
                "-r".as_ref(),
                "requirements.txt".as_ref(),
            ];
            run(dir, py.as_os_str(), &args, &[]).await.map_err(&fail)?;
            std::fs::write(venv.join(READY), b"")
                .map_err(|e| fail(format!("marking the environment ready: {e}")))?;
        }
        Runtime::Go => {
            eprintln!(
                "herd: {client}: building the Go adapter in {} (go build, GOPATH={GOPATH})",
                shown.display()
            );
            let gocache = std::env::var_os("GOCACHE")
                .filter(|v| !v.is_empty())
                .unwrap_or_else(|| bundle::cache_dir().join("go-build").into_os_string());
            let env: [(&str, &std::ffi::OsStr); 3] = [
                ("GO111MODULE", "off".as_ref()),
                ("GOPATH", GOPATH.as_ref()),
                ("GOCACHE", &gocache),
            ];
            let args: [&std::ffi::OsStr; 8] = [
                "build".as_ref(),
                "-o".as_ref(),
                GO_BINARY.as_ref(),
                "-buildvcs=false".as_ref(),
                "main.go".as_ref(),
                "kit.go".as_ref(),
                "resiliency.go".as_ref(),
                // Files named on the command line are built whatever their build tags.
                if go_grpc_installed() {
                    "grpc.go"
                } else {
                    "grpc_absent.go"
                }
                .as_ref(),
            ];
            run(dir, "go", &args, &env).await.map_err(&fail)?;
        }
        _ => {
            eprintln!("herd: {client}: npm ci in {}", shown.display());
            run(
                dir,
                "npm",
                &["ci".as_ref(), "--no-audit".as_ref(), "--no-fund".as_ref()],
                &[],
            )
            .await
            .map_err(&fail)?;
        }
    }
    if !installed_in(runtime, dir) {
        return Err(fail("the setup succeeded but its result is missing".into()));
    }
    Ok(())
}

/// Runs one setup step in `dir`, within 300 s; the error quotes its stderr's last lines.
async fn run(
    dir: &Path,
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &std::ffi::OsStr)],
) -> Result<(), String> {
    let program = program.as_ref();
    let shown = format!(
        "`{}`",
        std::iter::once(program)
            .chain(args.iter().copied())
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::time::timeout(Duration::from_secs(300), cmd.output())
        .await
        .map_err(|_| format!("{shown} did not finish within 300 s"))?
        .map_err(|e| format!("could not run {shown}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let lines: Vec<&str> = err.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        return Err(format!("{shown} failed ({}): {tail}", out.status));
    }
    Ok(())
}

/// The first file called `name` in a `PATH` directory.
pub(crate) fn find_on_path(name: &str) -> Option<PathBuf> {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// grpc-go 1.33 reads `GRPC_GO_RETRY` before the adapter's code runs, so the command
    /// has to carry it.
    #[test]
    fn the_go_adapter_runs_with_grpc_go_retries_on() {
        let dir = std::env::temp_dir().join(format!("herd-go-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(GO_BINARY), b"").unwrap();
        let cmd = Adapter::at_runtime(Runtime::Go, &dir)
            .command("go-grpc", &AdapterOptions::new("http://127.0.0.1:1/"))
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            cmd.envs()
                .iter()
                .any(|(k, v)| k == "GRPC_GO_RETRY" && v == "on"),
            "{:?}",
            cmd.envs()
        );
    }
}
