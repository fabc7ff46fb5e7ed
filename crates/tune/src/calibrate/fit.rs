//! The fit: candidate models simulated on the probe's steps, the one with the least error
//! kept.
//!
//! Two families are tried, because a service turns away excess in one of two ways:
//!
//! - **a rate limiter** (nginx `limit_req`, a gateway): rejections start when the offered
//!   rate passes the limit, and with `nodelay` latency does not rise, since a rejected
//!   request waits for nothing. In steady state a token bucket of rate `r` rejects
//!   `(offered − r) / offered`, so each overloaded step estimates `r` as its accepted
//!   rate less the burst it let through at the start; the grid then tries rates around
//!   the estimate and a few bursts, each with `nodelay` and without it (nginx's default,
//!   where every request over the rate waits its turn, up to `burst / rate`: latency
//!   rises as behind a queue, but nothing waits inside the service).
//! - **capacity** (workers, a queue, shedding): the service time comes from the
//!   latency of the steps that did not queue less the round trip, the workers from the
//!   throughput ceiling times the service time, and the queue from how far the saturated
//!   p99 rises over the service time (`(queue / workers + 1)` service times at the back
//!   of a full queue).
//!
//! **The round trip is fitted too.** A request to a real service crosses herd's front
//! and the network before anything turns it away, so a rejection takes about as long as
//! the path; in the model a rejection takes `[network] rtt_ms` and a success that plus
//! the service time. The lowest steps' latency is the sum of both, and how it splits
//! decides how fast an immediate retry comes back for another try (and how many workers
//! a throughput ceiling implies). So every candidate is tried with the round trip at a
//! few points between the part of it measured in herd's front (the client's p50 less
//! the target's own, [`Step::front_ms`]) and all of it; the overloaded steps' latencies
//! tell them apart, and where they cannot (a constant-time service at one worker and
//! half the service time, or at two and the whole: the same ceiling, the same wait at
//! the back of a full queue) the split the front measured wins: a round trip longer
//! than measured pays [`SPLIT_PRIOR`] times the square of its excess as a share of the
//! unqueued latency, a little more than the noise between such twins on loopback.
//! Steps of different lengths (the probe lengthens them as
//! the rate grows) tell a token bucket's rate from its burst: `accepted = burst + rate·t`
//! has one solution only when `t` varies.
//!
//! Every candidate is simulated on every step (same rate, same number of requests, no
//! retries) and scored by the squared differences of rejection ratio and throughput
//! (as fractions of the offered rate) plus a lighter term for the logarithm of the p50
//! and p99 ratios; the least score wins. The grid is small (a few hundred simulations
//! of a few thousand requests), so a fit takes seconds.

use herd_scenario::{RateLimit, Scenario, ServiceTime, Shed};
use serde::Serialize;

/// One step's figures, measured or simulated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct StepFigures {
    /// Successful requests per second over the step.
    pub throughput_rps: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// Failed requests / requests (no retries: every failure is one rejection).
    pub reject_ratio: f64,
}

/// One measured step of the probe.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Step {
    /// Offered rate, requests per second (constant arrivals).
    pub offered_rps: f64,
    /// Requests sent.
    pub requests: u64,
    /// What was measured.
    pub measured: StepFigures,
    /// Rejections answered with a 4xx status (429 and the like).
    pub rejected_4xx: u64,
    /// Rejections answered with a 5xx status (503 and the like).
    pub rejected_5xx: u64,
    /// Requests that got no answer (reset, timeout).
    pub no_answer: u64,
    /// With a target: the client's p50 less the target's own p50 (forwarded request to
    /// response head), ms: herd's front and the way to it, which every request crosses
    /// before the service can turn it away. The least the fitted round trip can be.
    pub front_ms: Option<f64>,
}

impl Step {
    /// The step's length, seconds.
    pub fn secs(&self) -> f64 {
        self.requests as f64 / self.offered_rps
    }
}

/// The probe: the scenario the steps ran (one no-retry arm, constant arrivals) and what
/// each step measured.
#[derive(Clone, Debug)]
pub struct Probe {
    /// The probe's scenario: its single arm never retries; `load.rate` and
    /// `load.requests` are set per step.
    pub scenario: Scenario,
    /// The steps, in the order they ran.
    pub steps: Vec<Step>,
}

/// A model of the service: the `[upstream]` keys calibration sets.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Model {
    /// `workers` (0: unlimited).
    pub workers: usize,
    /// `service_time`.
    #[serde(serialize_with = "service_text")]
    pub service_time: ServiceTime,
    /// `queue_limit`.
    pub queue_limit: usize,
    /// `shed`: true for 503, false for reset.
    pub shed_503: bool,
    /// `[upstream.rate_limit]`.
    pub rate_limit: Option<Limit>,
    /// `[network] rtt_ms`: the round trip before the service (herd's front, the network).
    pub rtt_ms: f64,
    /// `[network] jitter_ms`: the mean extra delay of each way (0: none).
    pub jitter_ms: f64,
}

/// A fitted rate limiter: nginx's `limit_req` (see [`RateLimit`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Limit {
    /// Requests per second.
    pub rate: f64,
    /// Requests a client may run ahead of the rate.
    pub burst: u64,
    /// The status a rejection is answered with.
    pub status: u16,
    /// `nodelay`: accepted requests go on at once. Without it every request over the rate
    /// waits its turn (nginx's default, `delay = 0`).
    pub nodelay: bool,
}

fn service_text<S: serde::Serializer>(s: &ServiceTime, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(&service_toml(s))
}

/// The TOML inline table of a service time.
pub fn service_toml(s: &ServiceTime) -> String {
    match *s {
        ServiceTime::Constant { ms } => format!("{{ dist = \"constant\", ms = {} }}", r3(ms)),
        ServiceTime::Exponential { mean_ms } => {
            format!("{{ dist = \"exponential\", mean_ms = {} }}", r3(mean_ms))
        }
        ServiceTime::Lognormal { median_ms, p99_ms } => format!(
            "{{ dist = \"lognormal\", median_ms = {}, p99_ms = {} }}",
            r3(median_ms),
            r3(p99_ms)
        ),
    }
}

/// Rounded to 3 decimals (what the TOML and the tables show).
pub fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Model {
    /// `s`'s upstream with this model in place of its own, faults and target left out.
    pub fn apply(&self, s: &mut Scenario) {
        let u = &mut s.upstream;
        u.workers = self.workers;
        u.queue_limit = self.queue_limit;
        u.service_time = self.service_time;
        u.shed = if self.shed_503 {
            Shed::Status503
        } else {
            Shed::Reset
        };
        u.rate_limit = self.rate_limit.map(|l| RateLimit {
            burst: l.burst,
            status: l.status,
            delay: if l.nodelay { RateLimit::NODELAY } else { 0 },
            ..RateLimit::nodelay_per_second(l.rate)
        });
        u.target = None;
        s.network.rtt = std::time::Duration::from_secs_f64(r3(self.rtt_ms).max(0.0) / 1000.0);
        s.network.jitter = std::time::Duration::from_secs_f64(r3(self.jitter_ms).max(0.0) / 1000.0);
    }

    /// The `[upstream]` keys of this model, as TOML lines (without the table header).
    pub fn toml_keys(&self) -> Vec<(String, String)> {
        let mut k = vec![
            ("service_time".to_owned(), service_toml(&self.service_time)),
            ("workers".to_owned(), self.workers.to_string()),
            ("queue_limit".to_owned(), self.queue_limit.to_string()),
            (
                "shed".to_owned(),
                if self.shed_503 {
                    "\"503\""
                } else {
                    "\"reset\""
                }
                .to_owned(),
            ),
        ];
        if let Some(l) = self.rate_limit {
            k.push((
                "rate_limit".to_owned(),
                format!(
                    "{{ rate = {}, burst = {}, nodelay = {}, status = {} }}",
                    r3(l.rate),
                    l.burst,
                    l.nodelay,
                    l.status
                ),
            ));
        }
        k
    }

    /// In words, for the summary.
    pub fn describe(&self) -> String {
        let mut parts = vec![];
        if let Some(l) = self.rate_limit {
            parts.push(format!(
                "rate limit {} r/s, burst {}, {}, rejecting {}",
                r3(l.rate),
                l.burst,
                if l.nodelay {
                    "nodelay"
                } else {
                    "excess delayed"
                },
                l.status
            ));
        }
        if self.workers > 0 {
            parts.push(format!(
                "{} worker(s), queue {}, shed {}",
                self.workers,
                self.queue_limit,
                if self.shed_503 { "503" } else { "reset" }
            ));
        } else {
            parts.push("no capacity limit".to_owned());
        }
        parts.push(format!("service time {}", service_toml(&self.service_time)));
        parts.push(format!("round trip {} ms", r3(self.rtt_ms)));
        if self.jitter_ms > 0.0 {
            parts.push(format!("jitter {} ms each way", r3(self.jitter_ms)));
        }
        parts.join("; ")
    }
}

/// The fitted model and how each step compares.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    /// The model.
    pub model: Model,
    /// Its score (lower is closer).
    pub error: f64,
    /// Per step, what the model simulated (same order as the probe's steps).
    pub simulated: Vec<StepFigures>,
    /// Candidates simulated.
    pub candidates: usize,
}

/// The model of the service that best reproduces `probe`'s steps in the simulator.
///
/// # Panics
/// If the probe has no steps.
pub fn fit(probe: &Probe) -> Fit {
    assert!(!probe.steps.is_empty(), "a fit needs at least one step");
    let (p50_low, p99_low, front) = unqueued(&probe.steps);
    let least = front.clamp(0.0, p50_low);
    let cands = candidates(probe, least, p50_low, p99_low);
    let scored = simulate_all(probe, &cands);
    let excess = |m: &Model| ((m.rtt_ms - least).max(0.0) / p50_low.max(1e-9)).powi(2);
    let (i, _) = scored
        .iter()
        .enumerate()
        .map(|(i, sim)| {
            (
                i,
                score(&probe.steps, sim) + SPLIT_PRIOR * excess(&cands[i]),
            )
        })
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .expect("at least one candidate");
    // The path's jitter, tried on the winner alone: it moves latencies, and the service
    // time it narrows keeps the winner's median or (with workers) its mean, so the shape,
    // limit and ceiling that won stay; only how the latencies spread is chosen here.
    let jittered = with_jitter(&cands[i], least, p50_low, p99_low);
    let rescored = simulate_all(probe, &jittered);
    // The winner as it stands first, so that it keeps its place on a tie.
    let (error, model, simulated) = std::iter::once((cands[i], scored[i].clone()))
        .chain(jittered.iter().copied().zip(rescored))
        .map(|(m, sim)| (score(&probe.steps, &sim), m, sim))
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .expect("the winner is among them");
    Fit {
        model,
        error,
        simulated,
        candidates: cands.len() + jittered.len(),
    }
}

/// `m` with the network's jitter at a few fractions of what
/// the unqueued steps' spread would make it if the path alone spread them: the sum of two
/// ways' exponential delays of mean `j` has its p99 about [`GAMMA2_P99_LESS_P50`]·`j`
/// above its p50. Each jittered candidate keeps the unqueued p50: its round trip is
/// shortened by the jitter's median ([`GAMMA2_P50`]·`j`), never below the part the front
/// measured (`least`).
///
/// Each comes twice when the winner's service time is spread (a lognormal): as it is, and
/// with the share of the spread the path now carries taken out of it ([`narrowed`]). A
/// winner fitted without jitter put all of the unqueued steps' spread into the service,
/// so the same spread added on the path overshoots the p99 of every success, and the score
/// kept it out; yet a rejection never sees the service, and on a real path it varies as
/// much as a success does. Without that variation the simulator's immediate retries came
/// back exactly one round trip later all run long and met a limiter's tokens at one phase:
/// a round trip 0.1 ms longer moved an immediate-retry arm's load from 3.49x to 2.36x,
/// where 0.15 ms of jitter held it at 2.92–2.99x over round trips 1.0–1.3 ms (the socket:
/// 2.88–3.0x).
fn with_jitter(m: &Model, least: f64, p50_low: f64, p99_low: f64) -> Vec<Model> {
    let whole = ((p99_low - p50_low) / GAMMA2_P99_LESS_P50).max(0.0);
    let mut out = vec![];
    if whole > 0.0 {
        for f in [0.25, 0.5, 0.75, 1.0] {
            let j = whole * f;
            let jittered = Model {
                jitter_ms: j,
                rtt_ms: (m.rtt_ms - GAMMA2_P50 * j).max(least.min(m.rtt_ms)),
                ..*m
            };
            out.push(jittered);
            if let Some(service_time) = narrowed(m, GAMMA2_P99_LESS_P50 * j) {
                out.push(Model {
                    service_time,
                    ..jittered
                });
            }
        }
    }
    out
}

/// `m`'s service time if lognormal, with `by` ms less between its p50 and p99; constant
/// when nothing of the spread is left. With workers, the mean is kept (the workers fitted
/// still serve the measured ceiling); without, the median (the unqueued p50). `None` for
/// any other shape.
fn narrowed(m: &Model, by: f64) -> Option<ServiceTime> {
    let ServiceTime::Lognormal { median_ms, p99_ms } = m.service_time else {
        return None;
    };
    let keep_mean = m.workers > 0;
    let mean = m.service_time.mean_ms();
    let p99 = p99_ms - by;
    if p99 <= median_ms * 1.02 {
        return Some(ServiceTime::Constant {
            ms: if keep_mean { mean } else { median_ms },
        });
    }
    let shape = ServiceTime::Lognormal {
        median_ms,
        p99_ms: p99,
    };
    Some(if keep_mean {
        scaled(&shape, mean / shape.mean_ms())
    } else {
        shape
    })
}

/// The median of the sum of two exponential delays of mean 1 (a gamma of shape 2).
const GAMMA2_P50: f64 = 1.678_346_99;

/// Its 99th percentile less its median (6.638 − 1.678).
const GAMMA2_P99_LESS_P50: f64 = 4.960_005_08;

/// What a fitted round trip pays for each (share of the unqueued latency)² it lies above
/// the part the front measured: enough to settle twins the steps cannot tell apart,
/// far below what a step's worth of wrong rejections costs (100 × 0.03² = 0.09).
pub const SPLIT_PRIOR: f64 = 0.1;

/// Every candidate simulated on every step.
fn simulate_all(probe: &Probe, cands: &[Model]) -> Vec<Vec<StepFigures>> {
    let scenarios: Vec<Scenario> = cands
        .iter()
        .flat_map(|m| {
            probe.steps.iter().map(move |st| {
                let mut s = probe.scenario.clone();
                m.apply(&mut s);
                s.load.rate = st.offered_rps;
                s.load.requests = st.requests;
                s.arms.truncate(1);
                s
            })
        })
        .collect();
    let runs = herd_sim::run_many(&scenarios, |s, j, run| figures(&run.report(s, j), s));
    runs.chunks(probe.steps.len())
        .map(|c| c.iter().map(|arms| arms[0]).collect())
        .collect()
}

/// A no-retry run's step figures.
pub fn figures(r: &herd_scenario::ArmReport, s: &Scenario) -> StepFigures {
    let secs = s.load.requests as f64 / s.load.rate;
    StepFigures {
        throughput_rps: r.succeeded as f64 / secs,
        p50_ms: r.latency_ms.p50,
        p99_ms: r.latency_ms.p99,
        reject_ratio: r.hard_fail_ratio,
    }
}

/// How far `sim` is from what `steps` measured.
fn score(steps: &[Step], sim: &[StepFigures]) -> f64 {
    let lat = |s: f64, m: f64| {
        let l = ((s.max(0.01)) / (m.max(0.01))).ln();
        l * l
    };
    steps
        .iter()
        .zip(sim)
        .map(|(st, s)| {
            let m = &st.measured;
            let dr = s.reject_ratio - m.reject_ratio;
            let dt = (s.throughput_rps - m.throughput_rps) / st.offered_rps;
            100.0 * (dr * dr + dt * dt) + 0.5 * (lat(s.p50_ms, m.p50_ms) + lat(s.p99_ms, m.p99_ms))
        })
        .sum()
}

/// The candidates: no limit, the rate-limiter family and the capacity family, each from
/// its closed form and a grid around it.
/// `least` is the round trip the front measured, `p50_low` and `p99_low` the unqueued
/// steps' latency ([`unqueued`]).
fn candidates(probe: &Probe, least: f64, p50_low: f64, p99_low: f64) -> Vec<Model> {
    let steps = &probe.steps;
    let given = probe.scenario.network.rtt.as_secs_f64() * 1000.0;
    let mut rtts: Vec<f64> = [0.0, 0.25, 0.5, 0.75, 0.9]
        .iter()
        .map(|f| least + f * (p50_low - least))
        .chain((least..=p50_low).contains(&given).then_some(given))
        .collect();
    rtts.sort_by(f64::total_cmp);
    rtts.dedup();
    let mut out = vec![];
    for rtt in rtts {
        out.extend(
            family(steps, rtt, p50_low, p99_low)
                .into_iter()
                .map(|m| Model { rtt_ms: rtt, ..m }),
        );
    }
    let mut unique: Vec<Model> = Vec::with_capacity(out.len());
    for m in out {
        if !unique.contains(&m) {
            unique.push(m);
        }
    }
    unique
}

/// The p50, the p99 and the front's share ([`Step::front_ms`], 0 without a target) of the
/// fastest step that neither rejected nor fell behind (no rejections, the whole offered
/// rate served); the first step when none did.
///
/// The fastest, not a typical one: queueing only ever adds to a step's latency, and on a
/// real path the round trip is often shortest at the higher calm rates (threads that stay
/// awake answer sooner: nginx behind herd's front measured a p50 of 1.78 ms at 27 req/s
/// and 1.49 ms at 200), which is where the retries a fit is for are sent. A model given
/// the trickle's round trip sent its immediate retries 0.3 ms too slowly.
fn unqueued(steps: &[Step]) -> (f64, f64, f64) {
    let fastest = steps
        .iter()
        .filter(|s| {
            s.measured.reject_ratio < 0.01 && s.measured.throughput_rps >= 0.97 * s.offered_rps
        })
        .min_by(|a, b| a.measured.p50_ms.total_cmp(&b.measured.p50_ms))
        .unwrap_or(&steps[0]);
    (
        fastest.measured.p50_ms,
        fastest.measured.p99_ms,
        fastest.front_ms.unwrap_or(0.0),
    )
}

/// The candidates with round trip `rtt` (ms), the service time being the rest of the
/// unqueued latency: spread out to the unqueued p99 (a lognormal) when that lies above
/// the p50, and constant too, since some of that spread may be the client's and the
/// front's rather than the service's, and which it is changes the queue the steps imply;
/// exponential as well when the spread is that wide.
fn family(steps: &[Step], rtt: f64, p50_low: f64, p99_low: f64) -> Vec<Model> {
    let median = (p50_low - rtt).max(0.02);
    let p99 = (p99_low - rtt).max(median);
    let mut shapes = vec![ServiceTime::Constant { ms: median }];
    if p99 > median * 1.02 {
        shapes.push(ServiceTime::Lognormal {
            median_ms: median,
            p99_ms: p99,
        });
    }
    // A spread as wide as an exponential's (its p99 is 6.6 times its median) may be one:
    // work whose length is memoryless, the classic M/M/c service, whose queue a lognormal
    // of the same p50 and p99 (a longer tail beyond the p99, a thinner one before it) fills
    // differently. Four 8 ms exponential workers were fitted as three lognormal ones, and
    // the no-retry hard-fail came out 2.4–3.0 points low.
    if p99 > median * 3.0 {
        shapes.push(ServiceTime::Exponential {
            mean_ms: median / std::f64::consts::LN_2,
        });
    }
    shapes
        .into_iter()
        .flat_map(|service| shaped(steps, rtt, service))
        .collect()
}

/// The candidates with round trip `rtt` (ms) and service time `service`: no limit, the
/// rate limiters, and the capacity models, whose service time is rescaled so that their
/// workers serve the measured ceiling.
fn shaped(steps: &[Step], rtt: f64, service: ServiceTime) -> Vec<Model> {
    let mean = service.mean_ms();
    let (r4, r5, none) = steps.iter().fold((0, 0, 0), |(a, b, c), s| {
        (a + s.rejected_4xx, b + s.rejected_5xx, c + s.no_answer)
    });
    let status = if r4 > r5 { 429 } else { 503 };
    let shed_503 = r4 + r5 >= none;
    let plain = Model {
        workers: 0,
        service_time: service,
        queue_limit: 0,
        shed_503,
        rate_limit: None,
        rtt_ms: rtt,
        jitter_ms: 0.0,
    };
    let mut out = vec![plain];
    let over: Vec<&Step> = steps
        .iter()
        .filter(|s| s.measured.reject_ratio >= 0.02)
        .collect();
    let ceiling = steps
        .iter()
        .map(|s| s.measured.throughput_rps)
        .fold(0.0, f64::max);
    // A limiter that delays the excess and a capacity model are twins when the service
    // time could fill a worker at the ceiling (a limiter of 400 r/s and burst 20 before a
    // 5 ms service, or two 5 ms workers behind a queue of 20: the same ceiling, the same
    // wait at the back). Capacity explains that alone; a delaying limiter is tried where
    // the service is too quick to make the ceiling with even one worker (nginx's default
    // `limit_req` before `return 200`), which a capacity model can only imitate with a
    // worker many times slower than every unqueued request.
    let delays = if ceiling * mean / 1000.0 < 0.5 {
        &[true, false][..]
    } else {
        &[true][..]
    };
    // The rate limiter: accepted = burst + rate·t + 1 over a step of t seconds.
    if !over.is_empty() {
        for burst in [0u64, 5, 10, 20, 40, 80] {
            let mut est: Vec<f64> = over
                .iter()
                .map(|s| {
                    let accepted = s.requests as f64 * (1.0 - s.measured.reject_ratio);
                    ((accepted - burst as f64 - 1.0) / s.secs()).max(0.5)
                })
                .collect();
            est.sort_by(f64::total_cmp);
            let r = est[est.len() / 2];
            for f in [0.94, 0.97, 0.985, 1.0, 1.015, 1.03, 1.06] {
                for &nodelay in delays {
                    out.push(Model {
                        rate_limit: Some(Limit {
                            rate: r * f,
                            burst,
                            status,
                            nodelay,
                        }),
                        ..plain
                    });
                }
            }
        }
    }
    // Capacity: the ceiling, the workers it implies, and the queue behind them.
    let saturated = steps
        .iter()
        .any(|s| s.measured.throughput_rps < 0.97 * s.offered_rps);
    if saturated && ceiling > 0.0 {
        let w0 = (ceiling * mean / 1000.0).round().max(1.0) as usize;
        let p99_over = steps
            .iter()
            .filter(|s| s.measured.throughput_rps < 0.97 * s.offered_rps)
            .map(|s| s.measured.p99_ms)
            .fold(0.0, f64::max);
        for w in [w0.saturating_sub(1).max(1), w0, w0 + 1, w0 * 2] {
            // The service time that makes w workers serve the ceiling.
            let m = w as f64 * 1000.0 / ceiling;
            let scale = m / mean;
            let svc = scaled(&service, scale);
            let q0 = (w as f64 * ((p99_over - rtt) / m - 1.0)).max(0.0);
            let mut qs: Vec<usize> = [0.0, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0]
                .iter()
                .map(|f| (q0 * f).round() as usize)
                .collect();
            qs.dedup();
            for q in qs {
                for f in [0.97, 1.0, 1.03] {
                    out.push(Model {
                        workers: w,
                        service_time: scaled(&svc, f),
                        queue_limit: q,
                        ..plain
                    });
                }
            }
        }
    }
    out
}

fn scaled(s: &ServiceTime, f: f64) -> ServiceTime {
    match *s {
        ServiceTime::Constant { ms } => ServiceTime::Constant { ms: ms * f },
        ServiceTime::Exponential { mean_ms } => ServiceTime::Exponential {
            mean_ms: mean_ms * f,
        },
        ServiceTime::Lognormal { median_ms, p99_ms } => ServiceTime::Lognormal {
            median_ms: median_ms * f,
            p99_ms: p99_ms * f,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A probe measured on the simulator itself, from a known model: the fit finds it.
    fn probe_of(truth: Model, rates: &[f64]) -> Probe {
        let text = "name = \"p\"\n[load]\narrival = \"constant\"\n[[arms]]\nid = \"probe\"\npolicy = \"none\"\n";
        let scenario = herd_scenario::parse(text, "probe.toml").unwrap();
        let steps = rates
            .iter()
            .map(|&r| {
                let mut s = scenario.clone();
                truth.apply(&mut s);
                s.load.rate = r;
                s.load.requests = (r * 2.0) as u64;
                let run = herd_sim::simulate(&s, 0);
                let rep = run.report(&s, 0);
                let failed = rep.failed;
                Step {
                    offered_rps: r,
                    requests: s.load.requests,
                    measured: figures(&rep, &s),
                    rejected_4xx: 0,
                    rejected_5xx: failed,
                    no_answer: 0,
                    front_ms: None,
                }
            })
            .collect();
        Probe { scenario, steps }
    }

    #[test]
    fn the_path_s_share_of_the_spread_comes_out_of_the_service() {
        let lognormal = ServiceTime::Lognormal {
            median_ms: 0.25,
            p99_ms: 1.5,
        };
        let limiter = Model {
            workers: 0,
            service_time: lognormal,
            queue_limit: 0,
            shed_503: true,
            rate_limit: Some(Limit {
                rate: 200.0,
                burst: 20,
                status: 503,
                nodelay: true,
            }),
            rtt_ms: 1.5,
            jitter_ms: 0.0,
        };
        // Without workers the median stays (the unqueued p50).
        assert_eq!(
            narrowed(&limiter, 0.5),
            Some(ServiceTime::Lognormal {
                median_ms: 0.25,
                p99_ms: 1.0
            })
        );
        assert_eq!(
            narrowed(&limiter, 1.3),
            Some(ServiceTime::Constant { ms: 0.25 })
        );
        // With workers the mean stays (the ceiling they serve).
        let capacity = Model {
            workers: 2,
            ..limiter
        };
        let mean = lognormal.mean_ms();
        let n = narrowed(&capacity, 0.5).expect("lognormal");
        assert!((n.mean_ms() - mean).abs() < 1e-9, "{n:?}");
        assert!(matches!(n, ServiceTime::Lognormal { median_ms, p99_ms }
            if median_ms > 0.25 && (p99_ms / median_ms - 1.0 / 0.25).abs() < 1e-9));
        assert_eq!(
            narrowed(&capacity, 2.0),
            Some(ServiceTime::Constant { ms: mean })
        );
        // Other shapes are left as they are.
        let constant = Model {
            service_time: ServiceTime::Constant { ms: 5.0 },
            ..capacity
        };
        assert_eq!(narrowed(&constant, 0.5), None);
        // Each jittered candidate comes twice for a spread service, once otherwise.
        assert_eq!(with_jitter(&limiter, 1.0, 1.75, 3.0).len(), 8);
        assert_eq!(with_jitter(&constant, 1.0, 1.75, 3.0).len(), 4);
    }

    /// A limiter before a 0.3 ms service, probed at `rates`: the fit's limiter.
    fn fitted_limiter(rate: f64, burst: u64, nodelay: bool, rates: &[f64]) -> Limit {
        let truth = Model {
            workers: 0,
            service_time: ServiceTime::Constant { ms: 0.3 },
            queue_limit: 0,
            shed_503: true,
            rate_limit: Some(Limit {
                rate,
                burst,
                status: 503,
                nodelay,
            }),
            rtt_ms: 0.2,
            jitter_ms: 0.0,
        };
        let f = fit(&probe_of(truth, rates));
        assert_eq!(f.model.workers, 0, "{:?}", f.model);
        f.model.rate_limit.expect("a rate limit")
    }

    #[test]
    fn a_token_bucket_is_found_from_its_rejections() {
        let l = fitted_limiter(200.0, 20, true, &[40.0, 100.0, 200.0, 250.0, 300.0]);
        assert!((l.rate - 200.0).abs() < 8.0, "{l:?}");
        assert_eq!(l.status, 503);
        assert!(l.nodelay, "{l:?}");
    }

    /// nginx's default `limit_req` (no `nodelay`): the excess waits its turn, so latency
    /// rises with the rejections, and the fit says the limiter delays.
    #[test]
    fn a_delaying_limiter_is_found_from_its_rejections_and_waits() {
        let l = fitted_limiter(100.0, 10, false, &[20.0, 50.0, 90.0, 120.0, 160.0]);
        assert!((l.rate - 100.0).abs() < 5.0, "{l:?}");
        assert!(!l.nodelay, "{l:?}");
    }

    #[test]
    fn workers_and_a_queue_are_found_from_the_ceiling() {
        let truth = Model {
            workers: 2,
            service_time: ServiceTime::Constant { ms: 5.0 },
            queue_limit: 8,
            shed_503: true,
            rate_limit: None,
            rtt_ms: 0.2,
            jitter_ms: 0.0,
        };
        let p = probe_of(truth, &[40.0, 200.0, 300.0, 400.0, 500.0, 600.0]);
        let f = fit(&p);
        assert!(f.model.rate_limit.is_none(), "{:?}", f.model);
        let cap = f.model.workers as f64 * 1000.0 / f.model.service_time.mean_ms();
        assert!((cap - 400.0).abs() < 30.0, "{:?} {cap}", f.model);
    }

    #[test]
    fn the_front_s_split_picks_the_workers_of_twins() {
        // Two workers × 5 ms and one × 2.5 ms share a ceiling and a full queue's wait;
        // with the front measuring a 1.2 ms round trip only the first explains it.
        let truth = Model {
            workers: 2,
            service_time: ServiceTime::Constant { ms: 5.0 },
            queue_limit: 20,
            shed_503: true,
            rate_limit: None,
            rtt_ms: 1.2,
            jitter_ms: 0.0,
        };
        let mut p = probe_of(truth, &[40.0, 200.0, 300.0, 440.0, 500.0, 600.0]);
        for s in &mut p.steps {
            s.front_ms = Some(1.2);
        }
        let f = fit(&p);
        assert_eq!(f.model.workers, 2, "{:?}", f.model);
        assert!((f.model.rtt_ms - 1.2).abs() < 0.05, "{:?}", f.model);
    }
}
