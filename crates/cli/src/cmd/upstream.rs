//! `herd upstream`: the fault-injecting server on its own, for pointing any client at.

use crate::cli::UpstreamArgs;
use crate::engine::runtime_on;
use crate::fail::Fail;
use crate::target;
use anyhow::anyhow;
use herd_scenario::load;
use herd_upstream::{AdminToken, Options};
use std::net::SocketAddr;
use std::time::Duration;

pub fn run(a: UpstreamArgs) -> Result<(), Fail> {
    let loaded = load(&a.scenario).map_err(Fail::input)?;
    let listen: SocketAddr = a
        .listen
        .parse()
        .map_err(|e| Fail::input(anyhow!("--listen {}: {e}", a.listen)))?;
    let seed = a.seed.unwrap_or(loaded.scenario.seed);
    let mut upstream = loaded.scenario.upstream;
    target::apply(&mut upstream, a.target.clone(), None)?;
    let mut options = options(&a)?;
    options.tls = target::front_tls(&upstream, false)?;
    if let (Some(tls), Some(spec)) = (&options.tls, &upstream.tls) {
        match spec {
            herd_scenario::ServeTls::SelfSigned => eprintln!(
                "herd: serving HTTPS with a self-signed certificate for localhost, 127.0.0.1 and ::1; \
                 clients can trust it with {} (removed when herd stops)",
                tls.trust_file().display()
            ),
            herd_scenario::ServeTls::Files { cert, .. } => {
                eprintln!("herd: serving HTTPS with the certificate in {}", cert.display())
            }
        }
    }
    // Connections are served on the loops; the runtime only accepts them, watches for
    // signals and checks the target.
    options.loops = a.threads.map_or_else(cores, usize::from);
    let rt = runtime_on(Some(1))?;
    if let Some(t) = &upstream.target {
        eprintln!(
            "herd: forwarding every request that draws no fault to target {} (connect timeout {} ms, answer timeout {} ms)",
            t.url,
            t.connect_timeout.as_millis(),
            t.answer_timeout.as_millis()
        );
        target::preflight(&rt, t)?;
    }
    rt.block_on(herd_upstream::serve_until_signal(
        upstream, seed, listen, options,
    ))
    .map_err(|e| Fail::run(anyhow!("upstream on {listen}: {e}")))
}

/// One event loop per core the process may use.
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// The server's own settings from the flags.
fn options(a: &UpstreamArgs) -> Result<Options, Fail> {
    let admin_token = a
        .admin_token
        .as_deref()
        .map(AdminToken::new)
        .transpose()
        .map_err(|e| Fail::input(anyhow!("--admin-token: {e}")))?;
    let header_read_timeout = Duration::try_from_secs_f64(a.header_timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Fail::input(anyhow!(
                "--header-timeout {}: a positive number of seconds",
                a.header_timeout
            ))
        })?;
    Ok(Options {
        header_read_timeout,
        admin_token,
        ..Options::default()
    })
}
