//! The simulated upstream alone, driven by given arrivals: what each request got back.
//!
//! The simulator claims its upstream does, request by request, what `herd-upstream`'s real one
//! does. A whole run cannot check that (client timing differs), so this runs the model
//! upstream ([`crate::upstream`]) with no client and no network: each request arrives at
//! the instant given, and the client's connection closes when given. A test sends the same
//! requests at the same instants to a real upstream with the same seed and compares the
//! answers and counts exactly.

use crate::event::{Answer, Attempt, AttemptId, Event};
use crate::schedule::{nanos, Schedule};
use crate::upstream::Server;
use herd_scenario::{Seeds, ServerCounts};
use std::time::Duration;

/// One request sent to the upstream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arrival {
    /// The request's id (what a real client sends in `x-herd-request`).
    pub id: u64,
    /// When it reaches the upstream, from the run's start.
    pub at: Duration,
    /// When the upstream sees its connection close, if the client leaves; an answer due
    /// at or after then is neither sent nor counted.
    pub leaves: Option<Duration>,
}

/// What came back for one request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply {
    /// 200.
    Ok,
    /// 503, with `Retry-After` or without (a shed 503 never carries one).
    Unavailable {
        /// Whether `Retry-After` was set.
        retry_after: bool,
    },
    /// The connection was reset.
    Reset,
    /// Rejected by the rate limit with `status`.
    Limited {
        /// The status (the limit's `status`: 503, 429, …).
        status: u16,
        /// Whether `Retry-After` was set.
        retry_after: bool,
    },
    /// Nothing: the client left before an answer was due.
    Nothing,
}

/// One request's reply, and when the upstream sent it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fated {
    /// The request's id.
    pub id: u64,
    /// What it got back.
    pub reply: Reply,
    /// When the reply left the upstream (`None` with [`Reply::Nothing`]).
    pub at: Option<Duration>,
}

/// Runs the model of `config`, with its fault stream from `seeds`, on `arrivals` (taken in
/// time order; ties in the order given). Returns each request's reply, in the order given,
/// and the upstream's counts.
pub fn upstream_fates(
    config: &herd_scenario::Upstream,
    seeds: Seeds,
    arrivals: &[Arrival],
) -> (Vec<Fated>, ServerCounts) {
    let mut s = Schedule::new();
    let down = s.add_lane(Duration::ZERO);
    let mut server = Server::new(config, seeds.faults(), down);
    let mut order: Vec<usize> = (0..arrivals.len()).collect();
    order.sort_by_key(|&i| arrivals[i].at);
    for &i in &order {
        let a = &arrivals[i];
        let attempt = Attempt {
            id: AttemptId {
                req: u32::try_from(i).unwrap_or(u32::MAX),
                gen: 1,
            },
            gone_at: a.leaves.map_or(u64::MAX, nanos),
        };
        s.at(nanos(a.at), Event::AtServer(attempt));
    }
    let mut fated: Vec<Fated> = arrivals
        .iter()
        .map(|a| Fated {
            id: a.id,
            reply: Reply::Nothing,
            at: None,
        })
        .collect();
    while let Some((at, ev)) = s.pop() {
        match ev {
            Event::AtServer(a) => server.arrive(&mut s, a),
            Event::ServerDone { attempt, what } => server.finish(&mut s, attempt, what),
            Event::AtClient { attempt, answer } => {
                if let Some(f) = fated.get_mut(attempt.req as usize) {
                    f.reply = reply(answer);
                    f.at = Some(Duration::from_nanos(at));
                }
            }
            _ => {}
        }
    }
    (fated, server.into_counts())
}

fn reply(answer: Answer) -> Reply {
    match answer {
        Answer::Ok => Reply::Ok,
        Answer::Unavailable { hinted } => Reply::Unavailable {
            retry_after: hinted,
        },
        Answer::Reset => Reply::Reset,
        Answer::Limited { status, hinted, .. } => Reply::Limited {
            status,
            retry_after: hinted,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use herd_scenario::{ServiceTime, Shed};

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn one_worker_one_place_then_shed_and_a_client_that_left() {
        let config = herd_scenario::Upstream {
            service_time: ServiceTime::Constant { ms: 100.0 },
            workers: 1,
            queue_limit: 1,
            shed: Shed::Status503,
            ..herd_scenario::Upstream::fault_free()
        };
        let arrive = |id, at, leaves: Option<u64>| Arrival {
            id,
            at: ms(at),
            leaves: leaves.map(ms),
        };
        let arrivals = [
            arrive(1, 0, None),
            arrive(2, 10, Some(150)), // queued; its work ends at 200, after it left
            arrive(3, 20, None),      // shed
            arrive(4, 250, None),     // the worker is free again at 200
        ];
        let (fated, counts) = upstream_fates(&config, Seeds(1), &arrivals);
        let got: Vec<_> = fated.iter().map(|f| (f.id, f.reply, f.at)).collect();
        let ok = Reply::Ok;
        let shed = Reply::Unavailable { retry_after: false };
        assert_eq!(
            got,
            [
                (1, ok, Some(ms(100))),
                (2, Reply::Nothing, None),
                (3, shed, Some(ms(20))),
                (4, ok, Some(ms(350))),
            ]
        );
        let t = counts.totals();
        assert_eq!((t.received, t.ok, t.shed), (4, 2, 1));
    }

    /// Request `i` of a stream at `per_s` per second, at its whole nanosecond.
    fn every(i: u64, per_s: u64) -> Duration {
        Duration::from_nanos(i * 1_000_000_000 / per_s)
    }

    /// nginx's `limit_req rate=200r/s burst=20 nodelay`, offered 300 req/s for 10 s:
    /// ⌊20 + 200 · 2999/300⌋ + 1 = 2020 accepted, the other 980 answered 503 at once.
    #[test]
    fn a_rate_limit_rejects_a_third_less_the_burst() {
        let config = herd_scenario::Upstream {
            rate_limit: Some(herd_scenario::RateLimit {
                burst: 20,
                ..herd_scenario::RateLimit::nodelay_per_second(200.0)
            }),
            ..herd_scenario::Upstream::fault_free()
        };
        let arrivals: Vec<Arrival> = (0..3000)
            .map(|i| Arrival {
                id: i,
                at: every(i, 300),
                leaves: None,
            })
            .collect();
        let (fated, counts) = upstream_fates(&config, Seeds(1), &arrivals);
        let limited = Reply::Limited {
            status: 503,
            retry_after: false,
        };
        let rejected = fated.iter().filter(|f| f.reply == limited).count();
        assert_eq!(rejected, 980);
        assert!(fated
            .iter()
            .all(|f| f.reply == limited || f.reply == Reply::Ok));
        assert!(fated
            .iter()
            .all(|f| f.at == Some(arrivals[f.id as usize].at)));
        let t = counts.totals();
        assert_eq!(
            (t.received, t.ok, t.limited, t.status_503),
            (3000, 2020, 980, 0)
        );
    }

    /// Without `nodelay` the accepted requests wait, without a worker, and reach the
    /// upstream 1/rate apart; one whose client leaves while it waits never gets there (no
    /// fate drawn, no worker taken); a rejection carries the limit's status and hint.
    #[test]
    fn queued_requests_wait_for_their_turn_and_a_leaver_is_dropped() {
        let config = herd_scenario::Upstream {
            service_time: ServiceTime::Constant { ms: 1.0 },
            workers: 1,
            rate_limit: Some(herd_scenario::RateLimit {
                burst: 2,
                delay: 0,
                status: 429,
                retry_after_s: 1,
                ..herd_scenario::RateLimit::nodelay_per_second(10.0)
            }),
            ..herd_scenario::Upstream::fault_free()
        };
        let arrive = |id, leaves: Option<u64>| Arrival {
            id,
            at: ms(0),
            leaves: leaves.map(ms),
        };
        let arrivals = [
            arrive(1, None),     // excess 0: at once
            arrive(2, Some(50)), // excess 1: 100 ms; gone at 50
            arrive(3, None),     // excess 2: 200 ms
            arrive(4, None),     // excess 3 > burst: 429
        ];
        let (fated, counts) = upstream_fates(&config, Seeds(1), &arrivals);
        let got: Vec<_> = fated.iter().map(|f| (f.id, f.reply, f.at)).collect();
        let limited = Reply::Limited {
            status: 429,
            retry_after: true,
        };
        assert_eq!(
            got,
            [
                (1, Reply::Ok, Some(ms(1))),
                (2, Reply::Nothing, None),
                (3, Reply::Ok, Some(ms(201))),
                (4, limited, Some(ms(0))),
            ]
        );
        let t = counts.totals();
        assert_eq!((t.received, t.ok, t.limited), (4, 2, 1));
    }
}
