//! The server side from herd fronts: `/__herd/stats` snapshots, one per front, summed.
//!
//! Several fronts (proxy mode) before one service each count what they forwarded; the
//! service's load is their sum. A front counts from its own start, which precedes the
//! drivers', so each front's leading empty buckets are dropped: its first request is the
//! run's first bucket, as the drivers' first arrival is theirs.

use super::MergeError;
use herd_scenario::ServerBucket;

/// One front's snapshot: its 100 ms buckets.
#[derive(Clone, Debug, PartialEq)]
pub struct FrontStats {
    /// Where it came from (URL or file), for messages.
    pub source: String,
    /// Its buckets, from its first request.
    pub buckets: Vec<ServerBucket>,
}

impl FrontStats {
    /// Reads a `/__herd/stats` snapshot (`{"received":…,"buckets":[{"t_ms":0,…},…]}`).
    pub fn parse(source: &str, json: &str) -> Result<FrontStats, MergeError> {
        let bad =
            |why: String| MergeError(format!("{source}: not a /__herd/stats snapshot: {why}"));
        let v: serde_json::Value = serde_json::from_str(json).map_err(|e| bad(e.to_string()))?;
        let list = v
            .get("buckets")
            .and_then(|b| b.as_array())
            .ok_or_else(|| bad("no `buckets` list".to_owned()))?;
        let mut buckets = Vec::with_capacity(list.len());
        for (i, b) in list.iter().enumerate() {
            let n = |k: &str| -> Result<u64, MergeError> {
                match b.get(k) {
                    None => Ok(0),
                    Some(x) => x
                        .as_u64()
                        .ok_or_else(|| bad(format!("buckets[{i}].{k} is not a count"))),
                }
            };
            buckets.push(ServerBucket {
                received: n("received")?,
                ok: n("ok")?,
                status_503: n("503")?,
                resets: n("reset")?,
                shed: n("shed")?,
                limited: n("limited")?,
            });
        }
        let first = buckets
            .iter()
            .position(|b| *b != ServerBucket::default())
            .unwrap_or(buckets.len());
        buckets.drain(..first);
        Ok(FrontStats {
            source: source.to_owned(),
            buckets,
        })
    }
}

/// Every front's buckets, summed bucket by bucket.
pub(super) fn server_buckets(fronts: &[FrontStats]) -> Vec<ServerBucket> {
    let mut out: Vec<ServerBucket> = Vec::new();
    for f in fronts {
        if f.buckets.len() > out.len() {
            out.resize(f.buckets.len(), ServerBucket::default());
        }
        for (a, b) in out.iter_mut().zip(&f.buckets) {
            a.merge(b);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_quiet_buckets_dropped_and_fronts_summed() {
        let a = FrontStats::parse(
            "a",
            r#"{"received":3,"ok":3,"503":0,"reset":0,"shed":0,"in_flight":0,"queued":0,
               "buckets":[{"t_ms":0,"received":0,"ok":0,"503":0,"reset":0,"shed":0},
                          {"t_ms":100,"received":2,"ok":2,"503":0,"reset":0,"shed":0},
                          {"t_ms":200,"received":1,"ok":1,"503":0,"reset":0,"shed":0}]}"#,
        )
        .unwrap();
        assert_eq!(a.buckets.len(), 2);
        let sum = server_buckets(&[a.clone(), a]);
        assert_eq!((sum[0].received, sum[1].ok), (4, 2));
        assert!(FrontStats::parse("x", "{}").is_err());
    }
}
