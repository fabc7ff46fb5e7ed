//! The fault rules: what the upstream does with one request, decided from the scenario, the
//! request's arrival time and a seeded RNG.
//!
//! This is the only copy of these rules. The real upstream (`herd-upstream`) and the simulator
//! both call [`Upstream::fate`] and [`ServiceTime::sample`], so a fault means the same thing
//! on a socket and on a virtual clock.
//!
//! Order of decision for a request arriving at `t`:
//! 1. inside a `hold` incident → [`Fate::Hold`] until the window ends (no worker used);
//! 2. one uniform draw `u` splits into injected 503 (`error_rate`), reset (`reset_rate`),
//!    stall (`stall_rate`) and normal work, using the incident's rates where it overrides;
//!    injected 503s and resets are answered in front of the workers, like a proxy would;
//! 3. normal and stalled work go through capacity (`workers`, `queue_limit`, `shed`),
//!    which is the caller's to model, with the service time returned here (× `slowdown`).

use crate::model::{HoldAnswer, Incident, ServiceTime, Upstream};
use rand::Rng;
use rand_distr::{Distribution, Exp, LogNormal};
use std::time::Duration;

/// What happens to one request. The service time is a [`Duration`] (the default, for the
/// real upstream's timers) or whole nanoseconds (`Fate<u64>`, for the simulator's clock:
/// [`Upstream::fate_nanos_with`], of which [`Upstream::fate_with`] is the wrapper).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Fate<S = Duration> {
    /// Needs a worker for `service`, then answers 200.
    Work {
        /// Time a worker spends on it.
        service: S,
        /// Whether this is an injected stall (for counting).
        stalled: bool,
    },
    /// Answer 503 at once, with `Retry-After` if configured.
    Error503,
    /// Reset the connection `after` arrival.
    Reset {
        /// Delay before the RST.
        after: Duration,
    },
    /// Park the request until `until` (from the start of the run), then fail it with `answer`.
    Hold {
        /// When the hold window ends.
        until: Duration,
        /// How it fails then.
        answer: HoldAnswer,
    },
}

impl Upstream {
    /// The incident active at `t`, if any (the first listed wins when windows overlap).
    #[inline]
    pub fn incident_at(&self, t: Duration) -> Option<&Incident> {
        self.incident_at_nanos(saturating_nanos_of(t))
    }

    /// [`Upstream::incident_at`] at `t` nanoseconds from the start of the run.
    #[inline]
    pub fn incident_at_nanos(&self, t: u64) -> Option<&Incident> {
        self.incidents.iter().find(|i| i.contains_nanos(t))
    }

    /// The longest an injected stall lasts: `stall` under the slowest incident, as
    /// [`Upstream::fate`] slows it (saturating at `u64::MAX` nanoseconds).
    pub fn longest_stall(&self) -> Duration {
        let slowdown = self
            .incidents
            .iter()
            .map(|i| i.slowdown)
            .fold(1.0, f64::max);
        Duration::from_nanos(slowed(saturating_nanos_of(self.stall), slowdown))
    }

    /// Decides the fate of a request arriving at `t` (from the start of the run).
    ///
    /// Builds the service-time distribution for this one draw; a caller that draws many
    /// fates keeps [`Upstream::rules`] and calls [`FateRules::fate`], the same rules.
    pub fn fate<R: Rng + ?Sized>(&self, t: Duration, rng: &mut R) -> Fate {
        self.fate_with(&self.service_time.sampler(), t, rng)
    }

    /// The fault rules with the service-time distribution built once, and the incidents'
    /// windows in nanoseconds kept.
    pub fn rules(&self) -> FateRules<'_> {
        FateRules {
            upstream: self,
            service: self.service_time.sampler(),
            windows: self.incidents.iter().map(Incident::window_nanos).collect(),
        }
    }
}

/// [`Upstream::fate`] with the service-time distribution built once, for a server that
/// draws millions of fates (a log-normal's parameters are two logarithms per draw
/// otherwise), and the incidents' windows in nanoseconds ([`Incident::window_nanos`]),
/// which [`FateRules::fate_nanos`] looks the active one up in without taking each
/// incident's `Duration`s apart at every request. Draws the same numbers in the same
/// order as [`Upstream::fate`].
#[derive(Clone, Debug)]
pub struct FateRules<'a> {
    upstream: &'a Upstream,
    service: ServiceSampler,
    /// Each incident's [`Incident::window_nanos`], in the upstream's order: made once,
    /// not at every request.
    windows: Box<[(u64, u64)]>,
}

impl FateRules<'_> {
    /// Decides the fate of a request arriving at `t` (from the start of the run): see
    /// the module docs for the order of decision.
    #[inline]
    pub fn fate<R: Rng + ?Sized>(&self, t: Duration, rng: &mut R) -> Fate {
        self.upstream.fate_with(&self.service, t, rng)
    }

    /// [`FateRules::fate`] at `t` nanoseconds, the service time in nanoseconds: the
    /// simulator's clock, with no `Duration` made and taken apart at every request.
    #[inline]
    pub fn fate_nanos<R: Rng + ?Sized>(&self, t: u64, rng: &mut R) -> Fate<u64> {
        let inc = (self.windows.iter())
            .position(|&w| Incident::window_holds(w, t))
            .map(|i| &self.upstream.incidents[i]);
        self.upstream.fate_in(&self.service, inc, rng)
    }
}

impl Upstream {
    /// [`Upstream::fate`] with `service`, this upstream's [`ServiceTime::sampler`] built
    /// once by the caller (the network upstream keeps it beside the configuration, the
    /// simulator in its [`FateRules`]): [`Upstream::fate_nanos_with`] in `Duration`s.
    #[inline]
    pub fn fate_with<R: Rng + ?Sized>(
        &self,
        service: &ServiceSampler,
        t: Duration,
        rng: &mut R,
    ) -> Fate {
        match self.fate_nanos_with(service, saturating_nanos_of(t), rng) {
            Fate::Work { service, stalled } => Fate::Work {
                service: Duration::from_nanos(service),
                stalled,
            },
            Fate::Error503 => Fate::Error503,
            Fate::Reset { after } => Fate::Reset { after },
            Fate::Hold { until, answer } => Fate::Hold { until, answer },
        }
    }

    /// The fault rules at `t` nanoseconds from the start of the run, the service time in
    /// whole nanoseconds (saturating at `u64::MAX`, 584 years): the incident active at `t`
    /// looked up, then the rules' one body, which [`FateRules::fate_nanos`] also calls.
    #[inline]
    pub fn fate_nanos_with<R: Rng + ?Sized>(
        &self,
        service: &ServiceSampler,
        t: u64,
        rng: &mut R,
    ) -> Fate<u64> {
        self.fate_in(service, self.incident_at_nanos(t), rng)
    }

    /// The one body of the fault rules, for a request that arrives during `inc` (the
    /// incident active then, if any). Hinted inline: the simulator calls it at every
    /// attempt, from one place.
    #[inline]
    fn fate_in<R: Rng + ?Sized>(
        &self,
        service: &ServiceSampler,
        inc: Option<&Incident>,
        rng: &mut R,
    ) -> Fate<u64> {
        if let Some(i) = inc.filter(|i| i.hold) {
            return Fate::Hold {
                until: i.end(),
                answer: i.hold_answer,
            };
        }
        let error = inc.and_then(|i| i.error_rate).unwrap_or(self.error_rate);
        let reset = inc.and_then(|i| i.reset_rate).unwrap_or(self.reset_rate);
        let u: f64 = rng.random();
        if u < error {
            return Fate::Error503;
        }
        if u < error + reset {
            return Fate::Reset {
                after: self.reset_after,
            };
        }
        let slowdown = inc.map_or(1.0, |i| i.slowdown);
        if u < error + reset + self.stall_rate {
            return Fate::Work {
                service: slowed(saturating_nanos_of(self.stall), slowdown),
                stalled: true,
            };
        }
        Fate::Work {
            service: slowed(service.sample_nanos(rng), slowdown),
            stalled: false,
        }
    }
}

/// Nanoseconds in `d`, saturating at `u64::MAX` (584 years).
#[inline]
fn saturating_nanos_of(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Below this many nanoseconds (2²⁰ s) a slowdown of 1 leaves a time as it is.
const SLOW_SAME: u64 = (1 << 20) * 1_000_000_000;

/// `d.mul_f64(slowdown)` for `d` nanoseconds, saturating where `mul_f64` would panic (a
/// product past `Duration::MAX`: a long stall slowed a million times), without the two
/// float conversions when `slowdown` is 1 (no incident: nearly every request). That is the
/// same value: `mul_f64` goes through `as_secs_f64`, which is within 0.12 ns of `d` below
/// 2^20 s, and back through `from_secs_f64`, which rounds to the nearest nanosecond, so
/// `d` itself (the test `slowing_by_one_is_the_identity` checks it). Longer durations take
/// the general path.
#[inline]
fn slowed(d: u64, slowdown: f64) -> u64 {
    if slowdown == 1.0 && d < SLOW_SAME {
        d
    } else {
        // `mul_f64`'s own arithmetic, with its overflow turned into the longest time.
        Duration::try_from_secs_f64(slowdown * Duration::from_nanos(d).as_secs_f64())
            .map_or(u64::MAX, saturating_nanos_of)
    }
}

/// z for the 99th percentile of the standard normal.
const Z99: f64 = 2.326_347_874_040_841;

impl ServiceTime {
    /// Draws one service time.
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        self.sampler().sample(rng)
    }

    /// The distribution, built once for many draws ([`ServiceTime::sample`] builds it at
    /// every draw).
    pub fn sampler(&self) -> ServiceSampler {
        ServiceSampler(match *self {
            ServiceTime::Constant { ms } => Sampler::Constant(ms),
            ServiceTime::Exponential { mean_ms } => {
                Sampler::Exponential(Exp::new(1.0 / mean_ms).ok())
            }
            ServiceTime::Lognormal { median_ms, p99_ms } => {
                let mu = median_ms.ln();
                let sigma = (p99_ms.ln() - mu) / Z99;
                Sampler::Lognormal(LogNormal::new(mu, sigma).ok(), median_ms)
            }
        })
    }

    /// The distribution's mean, milliseconds (for capacity estimates and M/M/c checks).
    pub fn mean_ms(&self) -> f64 {
        match *self {
            ServiceTime::Constant { ms } => ms,
            ServiceTime::Exponential { mean_ms } => mean_ms,
            ServiceTime::Lognormal { median_ms, p99_ms } => {
                let sigma = (p99_ms.ln() - median_ms.ln()) / Z99;
                median_ms * (sigma * sigma / 2.0).exp()
            }
        }
    }
}

/// A [`ServiceTime`] ready to draw from, from [`ServiceTime::sampler`].
#[derive(Clone, Copy, Debug)]
pub struct ServiceSampler(Sampler);

#[derive(Clone, Copy, Debug)]
enum Sampler {
    Constant(f64),
    /// `None`: the mean cannot make a distribution; every draw is 0.
    Exponential(Option<Exp<f64>>),
    /// `None`: the percentiles cannot make a distribution; every draw is the median.
    Lognormal(Option<LogNormal<f64>>, f64),
}

impl ServiceSampler {
    /// Draws one service time.
    #[inline]
    pub fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> Duration {
        Duration::from_nanos(self.sample_nanos(rng))
    }

    /// Draws one service time, in whole nanoseconds ([`ServiceSampler::sample`]'s value).
    /// Hinted inline: one call site draws nearly every one.
    #[inline]
    pub fn sample_nanos<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let ms = match self.0 {
            Sampler::Constant(ms) => ms,
            Sampler::Exponential(Some(d)) => d.sample(rng),
            Sampler::Exponential(None) => 0.0,
            Sampler::Lognormal(Some(d), _) => d.sample(rng),
            Sampler::Lognormal(None, median_ms) => median_ms,
        };
        crate::duration::saturating_nanos(ms / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Shed;
    use rand::SeedableRng;
    use rand_pcg::Pcg64Mcg;

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    pub(crate) fn upstream() -> Upstream {
        Upstream {
            error_rate: 0.1,
            retry_after_s: 0,
            reset_rate: 0.05,
            reset_after: ms(0),
            stall_rate: 0.02,
            stall: ms(2000),
            service_time: ServiceTime::Constant { ms: 10.0 },
            workers: 4,
            queue_limit: 8,
            shed: Shed::Reset,
            incidents: vec![
                Incident {
                    start: ms(1000),
                    duration: ms(500),
                    error_rate: None,
                    reset_rate: None,
                    slowdown: 1.0,
                    hold: true,
                    hold_answer: HoldAnswer::Reset,
                },
                Incident {
                    start: ms(3000),
                    duration: ms(1000),
                    error_rate: Some(1.0),
                    reset_rate: Some(0.0),
                    slowdown: 3.0,
                    hold: false,
                    hold_answer: HoldAnswer::Reset,
                },
            ],
            rate_limit: None,
            target: None,
            dialect: Default::default(),
            protocol: Default::default(),
            tls: None,
        }
    }

    #[test]
    fn rates_are_honoured() {
        let up = upstream();
        let mut rng = Pcg64Mcg::seed_from_u64(1);
        let n = 200_000;
        let (mut e, mut r, mut s) = (0, 0, 0);
        for _ in 0..n {
            match up.fate(ms(0), &mut rng) {
                Fate::Error503 => e += 1,
                Fate::Reset { .. } => r += 1,
                Fate::Work {
                    stalled: true,
                    service,
                } => {
                    assert_eq!(service, ms(2000));
                    s += 1
                }
                Fate::Work { service, .. } => assert_eq!(service, ms(10)),
                Fate::Hold { .. } => unreachable!(),
            }
        }
        let close = |k: i32, p: f64| ((k as f64 / n as f64) - p).abs() < 0.005;
        assert!(
            close(e, 0.1) && close(r, 0.05) && close(s, 0.02),
            "{e} {r} {s}"
        );
    }

    #[test]
    fn incidents_override() {
        let up = upstream();
        let mut rng = Pcg64Mcg::seed_from_u64(2);
        assert_eq!(
            up.fate(ms(1200), &mut rng),
            Fate::Hold {
                until: ms(1500),
                answer: HoldAnswer::Reset
            }
        );
        assert_ne!(
            up.fate(ms(1500), &mut rng),
            Fate::Hold {
                until: ms(1500),
                answer: HoldAnswer::Reset
            }
        );
        for _ in 0..1000 {
            assert_eq!(up.fate(ms(3500), &mut rng), Fate::Error503);
        }
    }

    #[test]
    fn kept_windows_find_the_incident_contains_finds() {
        let up = upstream();
        let rules = up.rules();
        let (mut a, mut b) = (Pcg64Mcg::seed_from_u64(5), Pcg64Mcg::seed_from_u64(5));
        let edges = [0, 999_999_999, 1_000_000_000, 1_499_999_999, 1_500_000_000];
        let more = [
            2_999_999_999,
            3_000_000_000,
            3_999_999_999,
            4_000_000_000,
            u64::MAX,
        ];
        for t in edges
            .into_iter()
            .chain(more)
            .chain((0..5_000).map(|i| i * 1_000_003))
        {
            let d = Duration::from_nanos(t);
            let inc = up.incident_at(d).map(|i| i.start);
            assert_eq!(up.incident_at_nanos(t).map(|i| i.start), inc, "{t}");
            for i in &up.incidents {
                assert_eq!(Incident::window_holds(i.window_nanos(), t), i.contains(d));
            }
            assert_eq!(
                rules.fate_nanos(t, &mut a),
                up.fate_nanos_with(&rules.service, t, &mut b),
                "{t}"
            );
        }
        assert_eq!(up.incidents[0].window_nanos(), (1_000_000_000, 500_000_000));
    }

    #[test]
    fn the_longest_stall_is_the_slowest_incident_s() {
        // 2 s stalls; incidents slowing by 1 and by 3.
        let mut up = upstream();
        assert_eq!(up.longest_stall(), ms(6000));
        up.incidents[1].slowdown = 1e300;
        assert_eq!(up.longest_stall(), Duration::from_nanos(u64::MAX));
        up.incidents.clear();
        assert_eq!(up.longest_stall(), ms(2000));
    }

    #[test]
    fn a_slowdown_past_the_longest_time_saturates() {
        assert_eq!(slowed(u64::MAX, 1e300), u64::MAX);
        assert_eq!(slowed(365 * 86_400 * 1_000_000_000, 1e12), u64::MAX);
        assert_eq!(slowed(1_000, 2.5), 2_500);
        assert_eq!(slowed(0, 1e300), 0);
    }

    #[test]
    fn slowing_by_one_is_the_identity() {
        let mut rng = Pcg64Mcg::seed_from_u64(4);
        let check = |d: Duration| {
            let n = saturating_nanos_of(d);
            assert_eq!(slowed(n, 1.0), saturating_nanos_of(d.mul_f64(1.0)), "{d:?}");
        };
        for _ in 0..200_000 {
            let secs = rng.random_range(0..1u64 << 20);
            let nanos = rng.random_range(0..1_000_000_000);
            check(Duration::new(secs, nanos));
            check(Duration::from_nanos(rng.random_range(0..10_000_000_000)));
        }
        for d in [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::new((1 << 20) - 1, 999_999_999),
        ] {
            check(d);
        }
        assert_eq!(slowed(10_000_000, 3.0), 30_000_000);
        assert_eq!(slowed(SLOW_SAME, 1.0), SLOW_SAME);
        assert_eq!(slowed(u64::MAX, 2.0), u64::MAX);
    }

    #[test]
    fn service_time_distributions() {
        let mut rng = Pcg64Mcg::seed_from_u64(3);
        let n = 100_000;
        let exp = ServiceTime::Exponential { mean_ms: 20.0 };
        let mean: f64 = (0..n)
            .map(|_| exp.sample(&mut rng).as_secs_f64() * 1000.0)
            .sum::<f64>()
            / n as f64;
        assert!((mean - 20.0).abs() < 0.5, "{mean}");
        let ln = ServiceTime::Lognormal {
            median_ms: 30.0,
            p99_ms: 300.0,
        };
        let mut v: Vec<f64> = (0..n)
            .map(|_| ln.sample(&mut rng).as_secs_f64() * 1000.0)
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let (p50, p99) = (v[n / 2], v[n * 99 / 100]);
        assert!((p50 - 30.0).abs() < 1.0, "{p50}");
        assert!((p99 - 300.0).abs() < 20.0, "{p99}");
        let m: f64 = v.iter().sum::<f64>() / n as f64;
        assert!(
            (m - ln.mean_ms()).abs() / ln.mean_ms() < 0.03,
            "{m} vs {}",
            ln.mean_ms()
        );
    }
}
