//! CPU time the machine's host took from it during a run: a virtual machine's *steal*.
//!
//! On a virtual machine the hypervisor can stop a virtual CPU to run something else. The
//! guest does not see it as a context switch: the thread that was running simply makes no
//! progress for a while, whether it was the driver or the target. A load tool on such a
//! machine then reports lag and latency that neither the target nor the tool caused, and
//! on loopback benchmarks the effect is large: on the 2-core machines herd is measured
//! on, runs at 50,000 req/s whose lag p99 stayed near 0.1 ms were the ones during which
//! the host took ≤ 10 ms; runs during which it took 40 ms or more did not keep the lag
//! p99 under 1 ms (BENCHMARKS.md, "The host's steal time"). Linux counts steal per CPU in
//! `/proc/stat`; a run reads the total before and after, so the report can say how much
//! of the machine was missing while it ran, instead of leaving the reader to guess.
//!
//! The counter moves in clock ticks (10 ms on every common kernel), so small amounts
//! round down to nothing. Where there is no `/proc/stat` (other systems) there is no
//! figure, never an error.

use std::time::Duration;

/// The host's steal counter at the start of a run.
#[derive(Clone, Copy, Debug)]
pub struct StealClock {
    start: Option<u64>,
}

impl StealClock {
    /// Reads the counter now.
    pub fn start() -> StealClock {
        StealClock {
            start: read_ticks(),
        }
    }

    /// CPU time stolen since [`StealClock::start`], summed over the machine's CPUs; `None`
    /// where the counter cannot be read.
    pub fn taken(&self) -> Option<Duration> {
        let ticks = read_ticks()?.checked_sub(self.start?)?;
        let per_second = ticks_per_second()?;
        Some(Duration::from_nanos(
            ticks.saturating_mul(1_000_000_000) / per_second,
        ))
    }
}

/// The machine's total steal, in clock ticks: the eighth value of `/proc/stat`'s `cpu`
/// line (user, nice, system, idle, iowait, irq, softirq, steal, …).
fn read_ticks() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    steal_in(&stat)
}

/// The steal ticks in a `/proc/stat` text.
fn steal_in(stat: &str) -> Option<u64> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    line.split_ascii_whitespace().nth(8)?.parse().ok()
}

#[cfg(target_os = "linux")]
fn ticks_per_second() -> Option<u64> {
    Some(rustix::param::clock_ticks_per_second()).filter(|&n| n > 0)
}

#[cfg(not(target_os = "linux"))]
fn ticks_per_second() -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steal_is_the_eighth_value_of_the_cpu_line() {
        let stat = "cpu  4705 356 584 3699 23 23 0 17 0 0\ncpu0 1393 280 234 1 0 0 0 9 0 0\n";
        assert_eq!(steal_in(stat), Some(17));
    }

    #[test]
    fn a_short_or_odd_cpu_line_gives_no_figure() {
        assert_eq!(steal_in("cpu  4705 356 584\n"), None);
        assert_eq!(steal_in("cpu  1 2 3 4 5 6 7 x\n"), None);
        assert_eq!(steal_in("intr 1 2 3\n"), None);
        assert_eq!(steal_in(""), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn on_linux_a_run_gets_a_figure() {
        let clock = StealClock::start();
        assert!(clock.taken().is_some());
    }
}
