//! `recovery_ms`: how long after the last incident the upstream is healthy again.
//!
//! A retry storm that outlives its cause is the signature of a metastable failure, so the
//! report measures it directly: from the end of the last incident window, the first 1 s
//! window (sliding by 100 ms, within the offered period) in which the server received
//! within 10% of what was offered, and in which errors (503s, resets, shed) were under
//! twice the base error rate (`error_rate + reset_rate`, with a floor of 1% so a
//! fault-free upstream is not held to zero). `None` if that never happens in the run, or
//! if the scenario has no incident.

use crate::counts::BUCKET;
use crate::model::Upstream;
use crate::report::TimelineRow;

/// Buckets in one window.
const WINDOW: usize = 10;

/// Milliseconds from the end of the last incident to the first healthy second.
pub fn recovery_ms(timeline: &[TimelineRow], upstream: &Upstream) -> Option<u64> {
    let end = upstream.incidents.iter().map(|i| i.end()).max()?;
    let bucket_ms = BUCKET.as_millis() as u64;
    let first = end.as_millis().div_ceil(u128::from(bucket_ms)) as usize;
    let offered_len = timeline.iter().rposition(|r| r.offered > 0)? + 1;
    let threshold = (2.0 * (upstream.error_rate + upstream.reset_rate)).max(0.01);
    (first..=offered_len.saturating_sub(WINDOW)).find_map(|w| {
        let win = timeline.get(w..w + WINDOW)?;
        let offered: u64 = win.iter().map(|r| r.offered).sum();
        let server: u64 = win.iter().map(|r| r.server).sum();
        let errors: u64 = win.iter().map(|r| r.errors + r.resets + r.shed).sum();
        let close = (server as f64 - offered as f64).abs() <= 0.1 * offered as f64;
        let clean = server > 0 && (errors as f64 / server as f64) < threshold;
        (offered > 0 && close && clean)
            .then(|| (w as u64 * bucket_ms).saturating_sub(end.as_millis() as u64))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{HoldAnswer, Incident, ServiceTime, Shed};
    use std::time::Duration;

    fn up(incidents: Vec<Incident>) -> Upstream {
        Upstream {
            error_rate: 0.01,
            retry_after_s: 0,
            reset_rate: 0.0,
            reset_after: Duration::ZERO,
            stall_rate: 0.0,
            stall: Duration::ZERO,
            service_time: ServiceTime::Constant { ms: 1.0 },
            workers: 0,
            queue_limit: 0,
            shed: Shed::Reset,
            incidents,
            rate_limit: None,
            target: None,
            dialect: Default::default(),
            protocol: Default::default(),
            tls: None,
        }
    }

    fn incident(start: u64, dur: u64) -> Incident {
        Incident {
            start: Duration::from_millis(start),
            duration: Duration::from_millis(dur),
            error_rate: Some(1.0),
            reset_rate: None,
            slowdown: 1.0,
            hold: false,
            hold_answer: HoldAnswer::Reset,
        }
    }

    fn row(i: usize, offered: u64, server: u64, errors: u64) -> TimelineRow {
        TimelineRow {
            t_ms: i as u64 * 100,
            offered,
            server,
            ok: server - errors,
            errors,
            resets: 0,
            shed: 0,
        }
    }

    #[test]
    fn measures_from_the_end_of_the_last_incident() {
        // 10 s offered at 10 per bucket; the storm lasts until t = 4 s, the incident ended at 2 s.
        let tl: Vec<_> = (0..100)
            .map(|i| {
                if (20..40).contains(&i) {
                    row(i, 10, 30, 20)
                } else {
                    row(i, 10, 10, 0)
                }
            })
            .collect();
        assert_eq!(
            recovery_ms(&tl, &up(vec![incident(1000, 1000)])),
            Some(2000)
        );
        assert_eq!(
            recovery_ms(&tl, &up(vec![])),
            None,
            "no incident, nothing to recover from"
        );
        // A storm that never ends never recovers.
        let stuck: Vec<_> = (0..100)
            .map(|i| {
                if i >= 20 {
                    row(i, 10, 30, 20)
                } else {
                    row(i, 10, 10, 0)
                }
            })
            .collect();
        assert_eq!(recovery_ms(&stuck, &up(vec![incident(1000, 1000)])), None);
    }
}
