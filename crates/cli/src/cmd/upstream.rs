//! `herd upstream`: the fault-injecting server on its own, for pointing any client at.

use super::runtime;
use crate::cli::UpstreamArgs;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_scenario::load;
use std::net::SocketAddr;

pub fn run(a: UpstreamArgs) -> Result<(), Fail> {
    let loaded = load(&a.scenario).map_err(Fail::input)?;
    let listen: SocketAddr = a
        .listen
        .parse()
        .map_err(|e| Fail::input(anyhow!("--listen {}: {e}", a.listen)))?;
    let seed = a.seed.unwrap_or(loaded.scenario.seed);
    let mut upstream = loaded.scenario.upstream;
    super::target::apply(&mut upstream, a.target, None)?;
    let rt = runtime()?;
    if let Some(t) = &upstream.target {
        eprintln!(
            "herd: forwarding every request that draws no fault to target {} (connect timeout {} ms, answer timeout {} ms)",
            t.url,
            t.connect_timeout.as_millis(),
            t.answer_timeout.as_millis()
        );
        super::target::preflight(&rt, t)?;
    }
    rt.block_on(herd_net::upstream::serve_until_signal(
        upstream, seed, listen,
    ))
    .map_err(|e| Fail::run(anyhow!("upstream on {listen}: {e}")))
}
