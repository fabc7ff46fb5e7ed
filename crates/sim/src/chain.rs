//! A call graph on the virtual clock (`[[hops]]`): the arm's client calls the first hop,
//! each hop's client calls the next, the last calls `[upstream]`.
//!
//! Each *link* (a client and the server it calls) is wired exactly as a single-hop arm is
//! ([`crate::run::Plain`]), on a schedule of its own, so a hop's server keeps the one
//! capacity and fault code and a hop's client the one retry loop (`crate::client`): a
//! hop's request is a logical request of the hop's client, begun with the forwarded
//! attempt as its owner, and its end is the hop server's answer. Nothing here decides a
//! retry or a fate; this module only carries work across links:
//!
//! - a hop's server finished its service time for an attempt: the hop's client begins a
//!   request for it, the attempt still holding its worker;
//! - that request ended: the hop's server answers the attempt (200 or 503).
//!
//! The loop takes the earliest event of all links (ties: the link nearer the edge
//! first), so a run is still a pure function of the scenario.

use crate::client::Finished;
use crate::event::Attempt;
use crate::lane;
use crate::run::{Arm, Feed, Plain, SimRun};
use herd_scenario::{ArmSeed, Demand, Scenario};

/// Forwarded attempts waiting on a hop's client, by the owner id their request carries.
#[derive(Default)]
struct Calls {
    slots: Vec<Attempt>,
    free: Vec<u32>,
}

impl Calls {
    fn put(&mut self, a: Attempt) -> u64 {
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = a;
                u64::from(i)
            }
            None => {
                self.slots.push(a);
                (self.slots.len() - 1) as u64
            }
        }
    }

    fn take(&mut self, owner: u64) -> Attempt {
        self.free.push(owner as u32);
        self.slots[owner as usize]
    }
}

/// Every link of one arm's call graph.
struct Chain<'a> {
    /// Link 0 is the arm's (its client calls hop 0); link `j ≥ 1` is hop `j − 1`'s client
    /// calling hop `j`, or `[upstream]` for the last.
    links: Vec<Arm<'a>>,
    /// Per link, the attempts of the link above waiting on this link's client (unused
    /// for link 0).
    calls: Vec<Calls>,
    /// Per link, the hop client's jitter seed and the requests it began (unused for 0).
    seeds: Vec<(ArmSeed, u64)>,
    forwarded: Vec<Attempt>,
    finished: Vec<Finished>,
}

/// Simulates arm `index` of `scenario`, which has `[[hops]]` (see [`crate::simulate`]).
pub(crate) fn simulate(scenario: &Scenario, index: usize) -> SimRun {
    let (mut demand, mut error) = match Demand::new(scenario) {
        Ok(d) => (d, None),
        Err(e) => (Demand::Closed, Some(e)),
    };
    let mut chain = Chain::wire(scenario, index);
    let mut feed = Feed::start(&mut chain.links[0].s, demand.by_ref());
    loop {
        let mut pick: Option<(u64, usize)> = None;
        let mut arrival = false;
        for (j, l) in chain.links.iter_mut().enumerate() {
            let mut k = l.s.next_key();
            if j == 0 && feed.key < k {
                k = feed.key;
                arrival = true;
            }
            if k == lane::EMPTY {
                continue;
            }
            let t = (k >> 64) as u64;
            if pick.map_or(true, |(best, _)| t < best) {
                pick = Some((t, j));
            }
        }
        let Some((t, j)) = pick else {
            break; // nothing pending on any link, nothing left to arrive
        };
        let l = &mut chain.links[j];
        if j == 0 && arrival {
            l.s.run_outside(feed.key);
            if let Some(unit) = feed.due() {
                l.arrive(unit);
            }
            feed.schedule_next(&mut l.s);
            l.collect();
        } else if let Some((_, ev)) = l.s.pop() {
            if l.handle(ev) {
                l.collect();
            }
        }
        chain.settle(t);
    }
    if error.is_none() {
        error = demand.take_error();
    }
    chain.into_run(error)
}

impl<'a> Chain<'a> {
    fn wire(scenario: &'a Scenario, index: usize) -> Self {
        let hops = &scenario.hops;
        let arm_seed = scenario.arm_seed(index);
        let mut links = vec![Arm::wire(scenario, index)];
        let mut seeds = vec![(arm_seed, 0)];
        for (j, hop) in hops.iter().enumerate() {
            let below = j + 1;
            let (config, faults, link) = match hops.get(below) {
                Some(h) => (&h.server, scenario.seeds().hop_faults(below), Some(below)),
                None => (&scenario.upstream, scenario.seeds().faults(), None),
            };
            let mut plain = Plain::wire(scenario, hop.client, config, faults, link);
            if below < hops.len() {
                plain.server = plain.server.forwarding();
            }
            links.push(plain.into_arm(arm_seed));
            seeds.push((arm_seed.hop(j), 0));
        }
        Chain {
            calls: (0..links.len()).map(|_| Calls::default()).collect(),
            links,
            seeds,
            forwarded: Vec::new(),
            finished: Vec::new(),
        }
    }

    /// Carries work across links at `t` until none is left to carry: a call begun can end
    /// at once (a budget that refuses its first attempt), a reply can start queued work.
    fn settle(&mut self, t: u64) {
        let n = self.links.len();
        loop {
            let mut moved = false;
            for j in 0..n {
                if j + 1 < n && self.links[j].server.has_forwarded() {
                    moved = true;
                    self.links[j].server.take_forwarded(&mut self.forwarded);
                    let next = &mut self.links[j + 1];
                    next.s.advance_to(t);
                    let (seed, begun) = &mut self.seeds[j + 1];
                    for a in self.forwarded.drain(..) {
                        let owner = self.calls[j + 1].put(a);
                        let rng = seed.request(*begun);
                        *begun += 1;
                        next.client.begin(&mut next.s, rng, owner, None, true);
                    }
                }
                if j >= 1 && self.links[j].client.has_finished() {
                    moved = true;
                    self.links[j].client.take_finished(&mut self.finished);
                    let above = &mut self.links[j - 1];
                    above.s.advance_to(t);
                    for f in self.finished.drain(..) {
                        let a = self.calls[j].take(f.owner);
                        above.server.reply(&mut above.s, a, f.ok);
                    }
                }
            }
            if !moved {
                return;
            }
        }
    }

    /// The arm's run: its client's records, `[upstream]`'s counts as the server's, and
    /// every hop's counts in [`SimRun::hops`].
    fn into_run(self, error: Option<herd_scenario::ScenarioError>) -> SimRun {
        let mut links = self.links.into_iter();
        let edge = links.next().expect("the arm's link");
        let mut run = edge.into_run(error);
        let mut counts = vec![std::mem::take(&mut run.counts)];
        for l in links {
            run.events += l.s.events();
            let end = std::time::Duration::from_nanos(l.s.now());
            run.end = run.end.max(end);
            counts.push(l.server.into_counts());
        }
        run.counts = counts.pop().expect("the upstream's link");
        run.hops = counts;
        run
    }
}
