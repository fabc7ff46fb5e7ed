//! The validated scenario: what a run offers, how the client behaves, what the upstream
//! does wrong, and which retry strategies (arms) are compared.
//!
//! These types hold only checked values; [`crate::parse()`] builds them from TOML and is the
//! only place that reports bad input. Everything downstream (the real upstream, the driver,
//! the simulator, the report) can take them as given.

use crate::clients::ExternalClient;
use crate::duration::BoundedDuration;
use crate::rate_limit::RateLimit;
use crate::target::Target;
use herd_retry::breaker::BreakerConfig;
use herd_retry::hedge::HedgePolicy;
use herd_retry::{ConsumerRules, Method, Strategy};
use std::path::PathBuf;
use std::time::Duration;

/// One scenario: a load, a client, an upstream, and the arms to compare on them.
#[derive(Clone, Debug, PartialEq)]
pub struct Scenario {
    /// Short name, used in reports.
    pub name: String,
    /// What the scenario represents, for humans.
    pub description: String,
    /// Seed for every random draw (arrivals, faults, jitter).
    pub seed: u64,
    /// The offered load.
    pub load: Load,
    /// The HTTP client each arm uses.
    pub client: Client,
    /// The upstream's faults and capacity.
    pub upstream: Upstream,
    /// The strategies compared, each on its own pool and its own upstream instance.
    pub arms: Vec<Arm>,
    /// `[consumers]`: the retry layer above the client. `None`: each arrival is one
    /// logical request, as without consumers.
    pub consumers: Option<ConsumerSpec>,
    /// `[network]`: the path between client and upstream, as the simulator models it.
    pub network: Network,
    /// `[[hops]]`: the layers between the arms and `[upstream]`, from the edge down (see
    /// [`crate::hop`]). Empty: the arms call `[upstream]` directly, as always.
    pub hops: Vec<crate::hop::Hop>,
}

/// `[network]`: what the simulator puts between the client and the upstream. The real
/// driver ignores it: it runs on loopback, whose round trip is whatever it is.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Network {
    /// Round-trip time (`rtt_ms`): half of it on the way to the upstream, half back.
    ///
    /// # Default
    /// 0.2 ms, a slightly pessimistic stand-in for loopback plus the runtimes' scheduling.
    /// 0 removes the network, which queueing-theory checks want.
    pub rtt: Duration,
    /// `jitter_ms`: the mean of an extra delay, exponentially distributed, that each way
    /// of each trip (a request's way there, its answer's way back) takes on top of half
    /// of [`Network::rtt`]. A real path is
    /// never the same twice (a scheduler's wake-up, a queue in a switch); with a round trip
    /// that never varies, requests sent on a fixed schedule and retried at once meet a rate
    /// limiter's tokens at the same phase every time, and the simulated load follows that
    /// resonance rather than the service. `herd calibrate` fits it from the spread of the
    /// latencies it measured.
    ///
    /// # Default
    /// 0: every trip takes exactly half the round trip, and nothing is drawn.
    pub jitter: Duration,
}

impl Default for Network {
    fn default() -> Self {
        Network {
            rtt: Duration::from_micros(200),
            jitter: Duration::ZERO,
        }
    }
}

/// `[consumers]`: who generates the units of work, and what they do when a unit is slow.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsumerSpec {
    /// How many consumers.
    pub count: u32,
    /// Open loop: units per consumer per second. `None` for a closed loop (the rules'
    /// think time) or a trace (its lines).
    pub rate: Option<f64>,
    /// The default rules (timeout, re-issue or abandon, in-flight cap, give-up, think
    /// time); an arm can override them, see [`Arm::consumers`].
    pub rules: ConsumerRules,
    /// The rule keys as written, for arms' overrides to start from.
    pub fields: RuleFields,
}

/// `[consumers]` rule keys as written (checked), that arms' `consumers = { ... }` override.
#[derive(Clone, Debug, PartialEq)]
pub struct RuleFields {
    /// `timeout_ms`.
    pub timeout_ms: f64,
    /// `on_timeout`.
    pub on_timeout: String,
    /// `max_in_flight`.
    pub max_in_flight: i64,
    /// `give_up_ms`.
    pub give_up_ms: f64,
}

/// The offered load: open loop, so a slow upstream cannot slow it down.
#[derive(Clone, Debug, PartialEq)]
pub struct Load {
    /// Logical requests per arm.
    pub requests: u64,
    /// Mean arrival rate, logical requests per second.
    pub rate: f64,
    /// How arrivals are spaced.
    pub arrival: Arrival,
    /// The method of every request (it decides what is idempotent).
    pub method: Method,
    /// `trace = "FILE"`: arrivals replayed from a recorded trace instead of generated.
    /// Then `requests` is a cap and `rate` is the trace's mean rate, both set by
    /// [`crate::trace::resolve`] once the file has been scanned.
    pub trace: Option<Trace>,
    /// The real driver's bound on one arm's logical requests in flight or waiting for a
    /// connection: an arrival past it is dropped unsent and counted
    /// ([`crate::ArmReport::driver_dropped`]), so a target that cannot keep up costs
    /// bounded memory instead of an ever-growing queue. The simulator has no such
    /// limit (its queue is the model, not the machine).
    pub backlog: usize,
    /// The real driver's threads (lanes) for one arm, each with its own event loop,
    /// connections and every n-th arrival, as wrk's `-t`. `None`: by rate, one per
    /// 60,000 req/s, leaving a core for the target. The simulator has no such thing.
    pub lanes: Option<usize>,
    /// The real driver puts its thread to sleep for an arrival no sooner than this long
    /// after it last woke it for one: arrivals that come due before then leave together
    /// then, at most this late (one under 50 µs away is spun for to its instant)
    /// (`[load] coalesce_us`, default [`DEFAULT_COALESCE`]; zero: each arrival is waited
    /// for to its own instant). The lateness is lag, and in the latency, as any other.
    /// The simulator sends every arrival at its instant.
    pub coalesce: Duration,
    /// `--shard I/N`: drive only this shard's part of the schedule (see [`crate::shard`]).
    /// `None`: all of it. The simulator still runs the whole schedule (see `herd-sim`)
    /// and records only the shard's units.
    pub shard: Option<crate::shard::Shard>,
}

/// [`Load::coalesce`] when the scenario does not set it. On a virtual machine a thread
/// woken from sleep costs 15–20 µs of CPU, and the target as much again for the burst of
/// work it then gets: at 12,500 arrivals a second, one wake-up per arrival made a request
/// cost 32–34 µs in the driver and 21–25 in herd's upstream, at most one per 250 µs 25
/// and 17–18 (BENCHMARKS.md, "Waking less often"). 250 µs is a fraction of any latency herd
/// is for, and well inside a millisecond's lag.
pub const DEFAULT_COALESCE: Duration = Duration::from_micros(250);

/// The most [`Load::coalesce`] may be: past it the schedule would be a series of bursts.
pub const MAX_COALESCE_US: u64 = 100_000;

/// [`Load::coalesce`] of `us` microseconds, or why it cannot be: the one bound the
/// scenario's `[load] coalesce_us` and `herd bench --coalesce-us` share.
pub fn coalesce_of_us(us: u64) -> Result<Duration, String> {
    if us > MAX_COALESCE_US {
        return Err(format!("must be at most {MAX_COALESCE_US} (µs), got {us}"));
    }
    Ok(Duration::from_micros(us))
}

/// [`Load::backlog`] when the scenario does not set it: far above what a healthy
/// run keeps in flight (rate × latency), and a few tens of MB at most.
pub const DEFAULT_BACKLOG: usize = 20_000;

/// A trace to replay (see [`crate::trace`] for the format).
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// The CSV file, resolved against the scenario file's directory.
    pub path: PathBuf,
    /// Multiplies every `t_ms` (0.5 replays twice as fast).
    pub time_scale: f64,
    /// Skip malformed lines instead of refusing the trace (`--skip-bad-lines`).
    pub skip_bad_lines: bool,
}

/// The arrival process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// Exponential inter-arrival times (independent users).
    Poisson,
    /// Evenly spaced arrivals.
    Constant,
}

/// The client's connection pool and per-attempt timeout.
#[derive(Clone, Debug, PartialEq)]
pub struct Client {
    /// Most connections the arm's pool opens at once; attempts beyond wait for one.
    pub pool_max_connections: usize,
    /// Connections herd's driver opens before the clock starts (at most
    /// `pool_max_connections`; default 0: opened on demand, as a real client opens them).
    /// A load tool's warm-up, as wrk and oha open their connections first: with it, the
    /// first arrivals do not wait for handshakes, and a pool large enough to ride out a
    /// target's stall is there from t = 0. herd's own upstream holds up to 4096 of them
    /// (the kernel's accept queue) until its clock starts. The simulator has no
    /// handshakes and ignores it; a real client's arm opens its own connections.
    pub preconnect: usize,
    /// A single attempt's timeout; `None` waits for ever.
    pub attempt_timeout: Option<Duration>,
    /// HTTP/2 and gRPC (`[upstream] protocol`): the connections herd's driver spreads an
    /// arm's streams over, per driving thread (default 1, a gRPC channel's one
    /// connection). `pool_max_connections` still caps the attempts in flight. HTTP/1.1
    /// ignores it: there every attempt in flight holds a connection of its own.
    pub connections: usize,
}

/// The upstream's faults and capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct Upstream {
    /// Probability that a request is answered 503.
    pub error_rate: f64,
    /// `Retry-After` seconds sent with each injected 503 (0: no header).
    pub retry_after_s: u64,
    /// Probability that a request's connection is reset with a TCP RST.
    pub reset_rate: f64,
    /// How long after arrival a reset happens.
    pub reset_after: Duration,
    /// Probability that a request stalls.
    pub stall_rate: f64,
    /// How long a stalled request takes (it holds a worker).
    pub stall: Duration,
    /// Service time of a normal request.
    pub service_time: ServiceTime,
    /// Requests served at once; `0` means unlimited.
    pub workers: usize,
    /// Requests waiting for a worker (FIFO) before new ones are shed.
    pub queue_limit: usize,
    /// How a request over capacity is turned away.
    pub shed: Shed,
    /// Windows that override the faults above.
    pub incidents: Vec<Incident>,
    /// `[upstream.rate_limit]`: a limiter in front of everything else (see
    /// [`crate::rate_limit`]); `None` lets every request through.
    pub rate_limit: Option<RateLimit>,
    /// `target = "http://HOST:PORT"`: a real service that every request drawing no fault
    /// is forwarded to (proxy mode). Then `service_time` is the service's own; `workers`
    /// and `queue_limit` still apply in front of it when set. The simulator ignores it.
    pub target: Option<Target>,
    /// How herd's own answers are worded: plain, or as S3 or DynamoDB would answer
    /// (see [`crate::dialect`]).
    pub dialect: crate::Dialect,
    /// What the upstream speaks: HTTP/1.1, h2c, or gRPC over h2c with its fates answered
    /// as gRPC statuses (see [`crate::protocol`]).
    pub protocol: crate::Protocol,
    /// `tls = "self-signed"`, or `tls_cert` and `tls_key`: herd's front serves HTTPS on
    /// a socket (see [`crate::tls`]); `None` serves plain HTTP. The simulator ignores it.
    pub tls: Option<crate::ServeTls>,
}

impl Upstream {
    /// An upstream that never fails and answers at once, with no capacity limit: the
    /// starting point for tests and examples that add one fault at a time
    /// (`Upstream { error_rate: 1.0, ..Upstream::fault_free() }`).
    pub fn fault_free() -> Upstream {
        Upstream {
            error_rate: 0.0,
            retry_after_s: 0,
            reset_rate: 0.0,
            reset_after: Duration::ZERO,
            stall_rate: 0.0,
            stall: Duration::ZERO,
            service_time: ServiceTime::Constant { ms: 0.0 },
            workers: 0,
            queue_limit: 0,
            shed: Shed::Status503,
            incidents: vec![],
            rate_limit: None,
            target: None,
            dialect: Default::default(),
            protocol: Default::default(),
            tls: None,
        }
    }
}

/// A service-time distribution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ServiceTime {
    /// Always the same.
    Constant {
        /// Milliseconds.
        ms: f64,
    },
    /// Exponential with this mean.
    Exponential {
        /// Mean, milliseconds.
        mean_ms: f64,
    },
    /// Log-normal with this median and 99th percentile.
    Lognormal {
        /// Median, milliseconds.
        median_ms: f64,
        /// 99th percentile, milliseconds.
        p99_ms: f64,
    },
}

/// How the upstream turns away a request it has no room for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shed {
    /// Reset the connection (a full accept queue, a crashing proxy).
    Reset,
    /// Answer 503 at once.
    Status503,
}

/// What held requests get when a `hold` window ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HoldAnswer {
    /// Every held connection is reset at the same instant.
    Reset,
    /// Every held request is answered 503 at the same instant.
    Status503,
}

/// A window of time in which the upstream misbehaves differently.
#[derive(Clone, Debug, PartialEq)]
pub struct Incident {
    /// Start, from the beginning of the run.
    pub start: Duration,
    /// Length.
    pub duration: Duration,
    /// Replaces `error_rate` inside the window.
    pub error_rate: Option<f64>,
    /// Replaces `reset_rate` inside the window.
    pub reset_rate: Option<f64>,
    /// Multiplies service times inside the window.
    pub slowdown: f64,
    /// Hold every request arriving in the window and fail them all when it ends.
    pub hold: bool,
    /// How held requests fail.
    pub hold_answer: HoldAnswer,
}

impl Incident {
    /// The end of the window.
    pub fn end(&self) -> Duration {
        self.start + self.duration
    }

    /// Whether `t` (from the start of the run) falls inside the window.
    #[inline]
    pub fn contains(&self, t: Duration) -> bool {
        self.contains_nanos(u64::try_from(t.as_nanos()).unwrap_or(u64::MAX))
    }

    /// [`Incident::contains`] at `t` nanoseconds: `start ≤ t < start + duration`, which
    /// for `t ≥ start` is `t − start < duration` (the window's times are bounded, a year
    /// each, so their nanoseconds are exact).
    #[inline]
    pub fn contains_nanos(&self, t: u64) -> bool {
        Incident::window_holds(self.window_nanos(), t)
    }

    /// The window as `(start, duration)` in nanoseconds (saturating), for
    /// [`Incident::window_holds`]: what a caller that asks many times keeps.
    #[inline]
    pub fn window_nanos(&self) -> (u64, u64) {
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        (nanos(self.start), nanos(self.duration))
    }

    /// Whether `t` nanoseconds fall inside `window` (from [`Incident::window_nanos`]).
    #[inline]
    pub fn window_holds((start, length): (u64, u64), t: u64) -> bool {
        t >= start && t - start < length
    }
}

/// One strategy under test.
#[derive(Clone, Debug, PartialEq)]
pub struct Arm {
    /// Identifier, unique in the scenario.
    pub id: String,
    /// Who makes the requests, with what each kind needs: herd's replica with its
    /// [`Strategy`], or a real client library that retries by its own rules.
    pub client: ArmClient,
    /// The rules this arm's consumers follow: `[consumers]`, with the arm's
    /// `consumers = { on_timeout, max_in_flight, timeout_ms, give_up_ms }` overrides.
    /// `None` without `[consumers]`.
    pub consumers: Option<ConsumerRules>,
    /// `options = { ... }` of a real client in another program, as compact JSON: the
    /// adapter gets it as `--options '<JSON>'` and refuses (exit 2, before its handshake)
    /// a key it does not know or a value of the wrong type. `None`: no `--options`.
    pub options: Option<String>,
    /// `hedge = { profile = ..., ... }`: speculative duplicates of each retry attempt,
    /// by a hedging replica's rules (see [`herd_retry::hedge`]). Replica arms only.
    pub hedge: Option<HedgePolicy>,
    /// `breaker = { profile = ..., ... }`: a circuit breaker every attempt (hedges
    /// included) asks first (see [`herd_retry::breaker`]). Replica arms only.
    pub breaker: Option<BreakerConfig>,
}

/// Who sends an arm's requests.
#[derive(Clone, Debug, PartialEq)]
pub enum ArmClient {
    /// herd's own driver running this strategy (the only kind the simulator runs): the
    /// policy from the arm's `policy`, `jitter`, `retries`, … keys, its `budget` and its
    /// `deadline_ms`.
    Replica(Strategy),
    /// A real client in another program, through the external-arm protocol
    /// (`node-undici`, `node-axios-retry`, …; see [`crate::clients`]).
    External(&'static ExternalClient),
    /// A real Rust client compiled into herd.
    Rust(RustPeer),
    /// Any program that speaks the external-arm protocol:
    /// `client = { command = ["python3", "arms/mine.py"], cwd = "..." }`. A scenario that
    /// names a command is code, like a Makefile: herd runs it.
    Command(CommandClient),
}

/// A program run as an arm's adapter, its paths already resolved (see
/// [`ArmClient::Command`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandClient {
    /// The program and its arguments, as written except that a program given with a `/`
    /// and any argument naming an existing path relative to the scenario file's
    /// directory are made absolute against it. herd appends the protocol's flags.
    pub argv: Vec<String>,
    /// Where it runs: `cwd` (relative to the scenario file's directory), or that
    /// directory (an embedded scenario's: the current directory).
    pub cwd: PathBuf,
}

impl ArmClient {
    /// Whether the client runs in another program (and so on a CPU herd does not schedule).
    pub fn is_external(&self) -> bool {
        matches!(self, ArmClient::External(_) | ArmClient::Command(_))
    }

    /// Whether herd's own replica runs the arm (so the simulator can).
    pub fn is_replica(&self) -> bool {
        matches!(self, ArmClient::Replica(_))
    }
}

/// The Rust retry clients herd can run as they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RustPeer {
    /// reqwest-middleware + reqwest-retry's `RetryTransientMiddleware`.
    ReqwestRetry,
    /// reqwest's own `retry` support (0.13).
    ReqwestBuiltin,
    /// tower's `retry::Retry` with `TpsBudget` and `ExponentialBackoffMaker`.
    TowerRetry,
    /// tower's `hedge::Hedge`, with the values of tower's own hedge test.
    TowerHedge,
    /// failsafe-rs' circuit breaker with its defaults (`Config::new()`).
    FailsafeRs,
    /// backon's `ExponentialBuilder::default()` around reqwest.
    Backon,
}

impl RustPeer {
    /// Client ids, as `[[arms]] client = ...` accepts them.
    pub const NAMES: &'static [&'static str] = &[
        "reqwest-retry",
        "reqwest-builtin",
        "tower-retry",
        "tower-hedge",
        "failsafe-rs",
        "backon",
    ];

    /// Parses a client id.
    pub fn from_name(s: &str) -> Option<RustPeer> {
        match s {
            "reqwest-retry" => Some(RustPeer::ReqwestRetry),
            "reqwest-builtin" => Some(RustPeer::ReqwestBuiltin),
            "tower-retry" => Some(RustPeer::TowerRetry),
            "tower-hedge" => Some(RustPeer::TowerHedge),
            "failsafe-rs" => Some(RustPeer::FailsafeRs),
            "backon" => Some(RustPeer::Backon),
            _ => None,
        }
    }

    /// The client id.
    pub fn name(self) -> &'static str {
        match self {
            RustPeer::ReqwestRetry => "reqwest-retry",
            RustPeer::ReqwestBuiltin => "reqwest-builtin",
            RustPeer::TowerRetry => "tower-retry",
            RustPeer::TowerHedge => "tower-hedge",
            RustPeer::FailsafeRs => "failsafe-rs",
            RustPeer::Backon => "backon",
        }
    }
}

impl Arm {
    /// The arm's whole retry strategy, as the driver and the simulator run it; `None` for
    /// a real client, which retries by its own configuration.
    pub fn strategy(&self) -> Option<Strategy> {
        match &self.client {
            ArmClient::Replica(s) => Some(*s),
            _ => None,
        }
    }

    /// Whether the arm hedges or has a breaker (the simulator's guarded client runs it).
    pub fn is_guarded(&self) -> bool {
        self.hedge.is_some() || self.breaker.is_some()
    }
}

/// An offered load whose length (requests / rate) would pass [`crate::MAX_DURATION`].
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
#[error(
    "{:.3e} s; herd offers at most 365 days of load ({} s)",
    .secs,
    crate::MAX_DURATION.as_secs()
)]
pub struct OfferedTooLong {
    /// requests / rate, seconds (may be infinite).
    pub secs: f64,
}

impl Load {
    /// The time over which arrivals are offered (requests / rate), or why it is too long.
    /// Meaningless with a trace until [`crate::trace::resolve`] has set both.
    pub fn offered(&self) -> Result<BoundedDuration, OfferedTooLong> {
        BoundedDuration::from_count_at_rate(self.requests as f64, self.rate).map_err(|_| {
            OfferedTooLong {
                secs: self.requests as f64 / self.rate,
            }
        })
    }
}

impl Scenario {
    /// The time over which arrivals are offered (requests / rate), at most
    /// [`crate::MAX_DURATION`] (a validated scenario's always fits; see [`Load::offered`]).
    pub fn offered_duration(&self) -> Duration {
        self.load
            .offered()
            .map_or(crate::MAX_DURATION, BoundedDuration::get)
    }

    /// The seed for arm `index`: arms share the scenario seed for arrivals and faults (so
    /// they face the same schedule) but draw jitter from a stream of their own.
    pub fn arm_seed(&self, index: usize) -> crate::ArmSeed {
        self.seeds().arm(index)
    }

    /// Whether unit `k` of the schedule (its global index) is this run's to drive and
    /// record: always without a shard; with one, by consumer under `[consumers]`, else by
    /// index (see [`crate::shard`]).
    #[inline]
    pub fn owns(&self, k: u64, unit: &crate::Unit) -> bool {
        self.load
            .shard
            .map_or(true, |s| s.owns(k, unit, self.consumers.is_some()))
    }

    /// Whether consumer `c`'s units are this run's (always without a shard).
    #[inline]
    pub fn owns_consumer(&self, c: u32) -> bool {
        self.load.shard.map_or(true, |s| s.owns_consumer(c))
    }

    /// Every random stream of a run, from [`Scenario::seed`].
    pub fn seeds(&self) -> crate::Seeds {
        crate::Seeds(self.seed)
    }
}
