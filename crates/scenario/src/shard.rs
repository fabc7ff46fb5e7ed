//! A shard: the I-th of N interleaved parts of one arrival schedule, so that N machines
//! (N pods of a Kubernetes Indexed Job) together offer exactly the load one machine would.
//!
//! Every shard generates the *whole* schedule from the same seed and keeps its own part:
//! unit k when `k % N == I`, or, with `[consumers]`, every unit of consumer c when
//! `c % N == I`, so a consumer's units never span shards (its timeouts, re-sends and
//! busy-ness stay on one machine, as they would on one client). The instants stay the
//! global ones, and a unit's jitter stream is seeded from its global index, so the
//! requests a shard sends are the very requests the single run would send.

use crate::demand::Unit;
use std::fmt;
use std::str::FromStr;

/// Which part of the schedule a run drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Shard {
    index: u32,
    count: u32,
}

/// A `--shard` (or `JOB_COMPLETION_INDEX` / `HERD_SHARDS`) that is not `I/N` with
/// `0 <= I < N`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ShardError(String);

impl Shard {
    /// Shard `index` of `count`.
    pub fn new(index: u32, count: u32) -> Result<Shard, ShardError> {
        if count == 0 {
            return Err(ShardError(format!(
                "a shard count is at least 1, got {index}/{count}"
            )));
        }
        if index >= count {
            return Err(ShardError(format!(
                "shard {index}/{count}: the index runs from 0 to {}",
                count - 1
            )));
        }
        Ok(Shard { index, count })
    }

    /// The shard's index, from 0.
    pub fn index(self) -> u32 {
        self.index
    }

    /// How many shards the schedule is split into.
    pub fn count(self) -> u32 {
        self.count
    }

    /// Whether unit `k` of the schedule (its global index) belongs to this shard: by
    /// consumer when `by_consumer` (a scenario with `[consumers]`), else by index.
    #[inline]
    pub fn owns(self, k: u64, unit: &Unit, by_consumer: bool) -> bool {
        let key = if by_consumer {
            u64::from(unit.consumer)
        } else {
            k
        };
        key % u64::from(self.count) == u64::from(self.index)
    }

    /// Whether consumer `c` belongs to this shard.
    #[inline]
    pub fn owns_consumer(self, c: u32) -> bool {
        c % self.count == self.index
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    /// `I/N`, e.g. `0/4`.
    fn from_str(s: &str) -> Result<Shard, ShardError> {
        let bad = || ShardError(format!("`{s}` is not a shard: write I/N, e.g. 0/4"));
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let i: u32 = i.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        Shard::new(i, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(consumer: u32) -> Unit {
        Unit {
            at_ns: 0,
            consumer,
            method: None,
            path: None,
        }
    }

    #[test]
    fn parses_and_refuses() {
        assert_eq!("1/4".parse::<Shard>(), Shard::new(1, 4));
        assert_eq!("1/4".parse::<Shard>().unwrap().to_string(), "1/4");
        for bad in ["4/4", "1", "a/4", "1/0", "-1/4"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn every_unit_in_exactly_one_shard() {
        for by_consumer in [false, true] {
            for k in 0..100u64 {
                let u = unit((k * 7 % 13) as u32);
                let owners = (0..3)
                    .filter(|&i| Shard::new(i, 3).unwrap().owns(k, &u, by_consumer))
                    .count();
                assert_eq!(owners, 1);
            }
        }
    }
}
