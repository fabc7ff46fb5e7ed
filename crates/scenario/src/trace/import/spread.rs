//! The requests that share an instant of the log's clock, counted and, when asked, placed
//! within it.
//!
//! ## Why
//!
//! nginx's default `$time_local` (Apache's `%t`) has whole seconds: every request of a
//! second is stamped with the same instant. Replayed as logged, each second's requests go
//! out at once, a burst the service never saw: a capacity-limited upstream sheds most of
//! it, and a replay's hard-fail then describes the clock, not the traffic. So the import
//! counts how many requests share an instant ([`Sharing`]), and with a [`Spread`] places
//! the `n` requests of an instant `T` of resolution `w` within `[T, T + w)`:
//!
//! - [`Spread::Poisson`]: at `n` independent uniform offsets, sorted, drawn from a seeded
//!   generator. This is exactly where a Poisson process puts its arrivals in an interval
//!   given that it put `n` there, so the per-second counts are the log's and the gaps
//!   within a second are those of random arrivals. The same seed gives the same trace.
//! - [`Spread::Uniform`]: evenly, the `k`-th of `n` at `(k + ½)/n` of the interval: no
//!   draws, and the smoothest traffic with the log's per-second counts.
//!
//! The log order of an instant's requests is kept (the `k`-th line gets the `k`-th
//! offset). An interval never reaches past the next instant in the log, so the trace's
//! `t_ms` still never decrease whatever the log's clock. Only one instant's requests are
//! held at a time: memory follows the log's busiest instant, not its size, and an instant
//! holding more than [`MAX_GROUP`] requests stops the import.

use super::show_ms;
use super::time::Micros;
use herd_retry::Method;
use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::io::{self, Write};

/// The most requests one instant may hold when spreading (a log whose lines all clamp to
/// one instant is not a log of traffic).
pub const MAX_GROUP: usize = 1 << 22;

/// How the requests that share an instant are placed within it (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// Evenly spaced, the `k`-th of `n` at `(k + ½)/n`.
    Uniform,
    /// Sorted independent uniform offsets, seeded: a Poisson process with the log's counts.
    Poisson,
}

/// How many requests shared an instant of the log's clock (before any spreading).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sharing {
    /// Distinct instants.
    pub instants: u64,
    /// The most requests at one instant.
    pub max: u64,
    /// Requests at an instant with at least one other.
    pub shared: u64,
}

/// A request waiting for its instant to end.
struct Pending {
    consumer: u64,
    method: Method,
    path: String,
}

/// Groups the requests by instant, counts them, and writes them (spread or not).
pub(super) struct Grouper {
    spread: Option<(Spread, Pcg64Mcg)>,
    /// The current instant, its width and its requests (held only when spreading).
    at: Micros,
    width: Micros,
    count: u64,
    held: Vec<Pending>,
    /// The last `t_ms` written, µs.
    pub last: Micros,
    pub sharing: Sharing,
}

impl Grouper {
    pub fn new(spread: Option<(Spread, u64)>) -> Grouper {
        Grouper {
            spread: spread.map(|(s, seed)| (s, Pcg64Mcg::seed_from_u64(seed))),
            at: 0,
            width: 1,
            count: 0,
            held: Vec::new(),
            last: 0,
            sharing: Sharing::default(),
        }
    }

    /// Whether a request at `at` would overflow the held instant.
    pub fn full(&self, at: Micros) -> bool {
        self.spread.is_some() && self.count > 0 && at == self.at && self.held.len() >= MAX_GROUP
    }

    /// A request at `at` (never earlier than the one before), of a clock of `width` µs.
    pub fn push<W: Write>(
        &mut self,
        out: &mut W,
        at: Micros,
        width: Micros,
        consumer: u64,
        method: Method,
        path: String,
    ) -> io::Result<()> {
        if self.count > 0 && at != self.at {
            self.end(out, Some(at))?;
        }
        if self.count == 0 {
            self.at = at;
            self.width = width;
        }
        self.width = self.width.min(width);
        self.count += 1;
        if self.spread.is_some() {
            self.held.push(Pending {
                consumer,
                method,
                path,
            });
            Ok(())
        } else {
            self.last = at;
            line(out, at, consumer, method, &path)
        }
    }

    /// Ends the last instant.
    pub fn finish<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        if self.count > 0 {
            self.end(out, None)?;
        }
        Ok(())
    }

    /// Ends the current instant (`next`: the next one's), writing its held requests.
    fn end<W: Write>(&mut self, out: &mut W, next: Option<Micros>) -> io::Result<()> {
        let n = self.count;
        let s = &mut self.sharing;
        s.instants += 1;
        s.max = s.max.max(n);
        if n > 1 {
            s.shared += n;
        }
        self.count = 0;
        let Some((spread, rng)) = &mut self.spread else {
            return Ok(());
        };
        let width = next
            .map_or(self.width, |t| self.width.min(t - self.at))
            .max(1);
        let offsets: Vec<Micros> = match spread {
            Spread::Uniform => (0..n as i64)
                .map(|k| ((2 * k + 1) as i128 * width as i128 / (2 * n as i128)) as Micros)
                .collect(),
            Spread::Poisson => {
                let mut o: Vec<Micros> = (0..n).map(|_| rng.random_range(0..width)).collect();
                o.sort_unstable();
                o
            }
        };
        for (p, off) in self.held.drain(..).zip(offsets) {
            let t = self.at + off;
            self.last = t;
            line(out, t, p.consumer, p.method, &p.path)?;
        }
        Ok(())
    }
}

fn line<W: Write>(
    out: &mut W,
    t: Micros,
    consumer: u64,
    method: Method,
    path: &str,
) -> io::Result<()> {
    writeln!(out, "{},{consumer},{},{path}", show_ms(t), method.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(spread: Option<(Spread, u64)>, times: &[Micros], width: Micros) -> (Vec<f64>, Sharing) {
        let mut g = Grouper::new(spread);
        let mut out = Vec::new();
        for &t in times {
            g.push(&mut out, t, width, 0, Method::Get, "/".into())
                .unwrap();
        }
        g.finish(&mut out).unwrap();
        let ts = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| l.split(',').next().unwrap().parse().unwrap())
            .collect();
        (ts, g.sharing)
    }

    const S: Micros = 1_000_000;

    #[test]
    fn sharing_is_counted_with_or_without_a_spread() {
        let times = [0, 0, 0, S, 2 * S, 2 * S];
        let (ts, sharing) = run(None, &times, S);
        assert_eq!(ts, [0.0, 0.0, 0.0, 1000.0, 2000.0, 2000.0]);
        let want = Sharing {
            instants: 3,
            max: 3,
            shared: 5,
        };
        assert_eq!(sharing, want);
        assert_eq!(run(Some((Spread::Poisson, 1)), &times, S).1, want);
    }

    #[test]
    fn uniform_places_the_kth_of_n_at_k_and_a_half_over_n() {
        let (ts, _) = run(Some((Spread::Uniform, 1)), &[0, 0, 0, 0, S, 3 * S], S);
        assert_eq!(ts, [125.0, 375.0, 625.0, 875.0, 1500.0, 3500.0]);
    }

    #[test]
    fn poisson_is_seeded_sorted_and_within_each_second() {
        let times: Vec<Micros> = (0..5).flat_map(|s| [s * S; 40]).collect();
        let (a, _) = run(Some((Spread::Poisson, 7)), &times, S);
        let (b, _) = run(Some((Spread::Poisson, 7)), &times, S);
        let (c, _) = run(Some((Spread::Poisson, 8)), &times, S);
        assert_eq!(a, b, "same seed, same trace");
        assert_ne!(a, c);
        assert!(a.windows(2).all(|w| w[0] <= w[1]), "never decreasing");
        for (i, t) in a.iter().enumerate() {
            let second = (i / 40) as f64 * 1000.0;
            assert!((second..second + 1000.0).contains(t), "{i}: {t}");
        }
        // Spread over the second, not bunched: the mean offset is near the middle.
        let mean = a
            .iter()
            .enumerate()
            .map(|(i, t)| t - (i / 40) as f64 * 1000.0)
            .sum::<f64>()
            / 200.0;
        assert!((400.0..600.0).contains(&mean), "{mean}");
    }

    #[test]
    fn a_spread_never_reaches_past_the_next_instant() {
        // A 1 s instant followed 200 ms later by a finer one.
        let mut g = Grouper::new(Some((Spread::Uniform, 1)));
        let mut out = Vec::new();
        g.push(&mut out, 0, S, 0, Method::Get, "/".into()).unwrap();
        g.push(&mut out, 0, S, 0, Method::Get, "/".into()).unwrap();
        g.push(&mut out, 200_000, 1_000, 0, Method::Get, "/".into())
            .unwrap();
        g.finish(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "50,0,GET,/\n150,0,GET,/\n200.5,0,GET,/\n"
        );
    }
}
