//! `--target URL` and `--direct`, turned into what the driver takes.
//!
//! Kept apart on purpose: herd's proxy mode (its fault front between the arms and a real
//! server) reads `--target` too, and owns the URL's validation once it is here; this
//! module only adds the direct mode on top.

use crate::cli::BenchArgs;
use crate::fail::Fail;
use anyhow::anyhow;
use herd_net::driver::Direct;

/// The direct target, if asked for; a bad URL (not http:// with a host), or `--target`
/// without `--direct`, is bad input (exit 2).
pub fn direct(a: &BenchArgs) -> Result<Option<Direct>, Fail> {
    let Some(url) = &a.target else {
        return Ok(None);
    };
    if !a.direct {
        return Err(Fail::input(anyhow!(
            "--target {url:?} needs --direct in this build (drive the arms straight at it)"
        )));
    }
    Direct::new(url)
        .map(Some)
        .map_err(|e| Fail::input(anyhow!(e)))
}
