//! The command line, as raw values. Validation happens in `cmd`, against the libraries.

use clap::{Args, Parser, Subcommand};

/// herd: measure what a retry strategy does to a struggling upstream — the client's
/// latency and failures, and how many requests the server really received.
#[derive(Parser, Debug)]
#[command(name = "herd", version = env!("HERD_VERSION"), about, long_about = None, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a scenario's arms on a real socket against herd's fault-injecting upstream.
    Bench(BenchArgs),
    /// Run a scenario's arms in the discrete-event simulator (virtual clock, same policies,
    /// same report; the JSON is byte-identical for the same scenario, seed and flags).
    Sim(SimArgs),
    /// Serve the upstream of a scenario (its faults and capacity) until interrupted.
    ///
    /// The control endpoints (`/__herd/stats`, `/metrics`) are open on a loopback address;
    /// on any other address they need `--admin-token` (sent as `Authorization: Bearer
    /// TOKEN`) or are off (404).
    Upstream(UpstreamArgs),
    /// Show the delays a retry policy waits before each retry.
    Policy(PolicyArgs),
    /// List the embedded scenarios, or print one to copy and edit.
    Scenarios(ScenariosArgs),
    /// Work with arrival traces (`herd trace synth` writes a seeded example).
    Trace(TraceArgs),
    /// Check a JSON report against load and failure limits: exit 1 when an arm breaks one
    /// (the retry guard for CI).
    Check(CheckArgs),
    /// Search the simulator for the arm configuration that meets your limits (`--vary` the
    /// arm's keys), or sweep a scenario key for every arm (`--vary upstream.…`).
    Tune(TuneArgs),
    /// Probe a service (`--target`, or herd's own upstream) with a short stepped no-retry
    /// run and fit the `[upstream]` model that reproduces it: writes calibrated.toml and the
    /// fit report (fit.md, fit.json, fit.svg) into --out.
    Calibrate(CalibrateArgs),
    /// Merge shard reports (`herd bench|sim --shard I/N`) into the report one run of the
    /// whole schedule would have written: histograms, buckets and counts added, every
    /// percentile and multiplier recomputed from them.
    Merge(MergeArgs),
    /// Print a shell completion script (bash, zsh, fish, powershell, elvish) to stdout.
    Completions(CompletionsArgs),
    /// Print herd's man page (roff) to stdout.
    Man,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Flags shared by runs of a scenario.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// A scenario file, or the name of an embedded scenario (see `herd scenarios`).
    #[arg(default_value = "seed")]
    pub scenario: String,
    /// Run only this arm (repeatable).
    #[arg(long = "arm", value_name = "ID")]
    pub arms: Vec<String>,
    /// Logical requests per arm, instead of the scenario's.
    #[arg(long, value_name = "N")]
    pub requests: Option<u64>,
    /// Offered rate in requests per second, instead of the scenario's.
    #[arg(long, value_name = "R")]
    pub rate: Option<f64>,
    /// Seed for arrivals, faults and jitter, instead of the scenario's.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Replay arrivals from a CSV trace (`t_ms,consumer[,method,path]`) instead of the
    /// scenario's generated ones (`[load] trace`).
    #[arg(long, value_name = "FILE")]
    pub trace: Option<std::path::PathBuf>,
    /// Skip malformed trace lines (reporting how many, and the first few line numbers)
    /// instead of refusing the trace.
    #[arg(long)]
    pub skip_bad_lines: bool,
    #[command(flatten)]
    pub output: OutputArgs,
    /// Run the scenario on its seed and the next N-1, one after another, and report each
    /// figure as median with min–max (`herd.seeds/v1`); with `--out`, seeds.json and seeds.md.
    #[arg(long, value_name = "N")]
    pub seeds: Option<u32>,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub run: RunArgs,
    /// Run the arms one after another. Without it, herd's own arms (replicas, Rust peers)
    /// run at once, then each client in another program (Node, Python, Go, a command) alone, since its timing is its own
    /// process's CPU. Each arm always has its own upstream and pool, so counts never mix.
    /// With a target, arms always run one after another.
    #[arg(long)]
    pub sequential: bool,
    /// Put herd's fault front before a real service (`http://HOST:PORT`): every request
    /// that draws no fault is forwarded to it, one front per arm, arms one after another.
    /// Instead of the scenario's `[upstream] target`; the scenario's workers and queue are
    /// then dropped unless it names a target itself.
    #[arg(long, value_name = "URL")]
    pub target: Option<herd_scenario::TargetUrl>,
    /// With a target: pause between arms, ms, instead of `[upstream] settle_ms` (default 1000).
    #[arg(long, value_name = "MS")]
    pub settle: Option<f64>,
    /// The real driver's cap on one arm's logical requests in flight or waiting (overrides
    /// `[load] backlog`, default 20000); past it arrivals are dropped unsent, counted, and
    /// the run fails.
    #[arg(long, value_name = "N")]
    pub backlog: Option<u64>,
    /// The real driver's threads per arm (overrides `[load] lanes`; default one per 60,000
    /// req/s of an arm, up to the cores but one, which is left to the target), as wrk's `-t`.
    #[arg(long, value_name = "N")]
    pub lanes: Option<u64>,
    /// The real driver puts its thread to sleep for an arrival no sooner than this many µs
    /// after it last woke it for one; the arrivals due by then leave together, at most that
    /// late (overrides `[load] coalesce_us`, default 250; 0: each at its own instant, at a
    /// wake-up's CPU each).
    #[arg(long, value_name = "US")]
    pub coalesce_us: Option<u64>,
    /// Drive the arms straight at `--target` (http): no fault front, no server-side counts
    /// (the table shows "—"). For comparing herd's driver with another load tool against
    /// the same server.
    #[arg(long, requires = "target")]
    pub direct: bool,
    #[command(flatten)]
    pub shard: ShardArgs,
}

#[derive(Args, Debug)]
pub struct SimArgs {
    #[command(flatten)]
    pub run: RunArgs,
    #[command(flatten)]
    pub shard: ShardArgs,
}

/// Which part of the schedule a run drives, and when it starts.
#[derive(Args, Debug, Clone, Default)]
pub struct ShardArgs {
    /// Drive shard I of N (`0/4`): every N-th unit of the same schedule from the I-th
    /// (with `[consumers]`, every N-th consumer's units), at the same instants; the report
    /// carries what `herd merge` adds up. Without it, a Kubernetes Indexed Job's
    /// `JOB_COMPLETION_INDEX` with `HERD_SHARDS` (the Job's completions) says the same.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// With a shard: start the schedule at this instant (Unix ms, or RFC 3339 such as
    /// `2026-12-05T09:00:00Z`), so that every shard begins together.
    #[arg(long, value_name = "TIME", env = "HERD_START_AT")]
    pub start_at: Option<String>,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// Shard reports (`report.json` of `herd bench|sim --shard I/N --out DIR`, or `--json`).
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<std::path::PathBuf>,
    /// The server side from herd fronts (proxy mode) instead of the shards' own fronts:
    /// a `/__herd/stats` URL (`http://HOST:PORT/__herd/stats`) or a file holding one
    /// snapshot of it (repeatable, one per front; the fronts' counts are summed).
    #[arg(long, value_name = "URL|FILE")]
    pub stats: Vec<String>,
    /// `Authorization: Bearer TOKEN` for --stats URLs (a front not on loopback needs it).
    #[arg(
        long,
        value_name = "TOKEN",
        env = "HERD_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Where a command's report goes: the text on the terminal, `--json`, `--out DIR`. Every
/// command that writes a report takes these three, and [`OutputArgs::write`] writes them
/// the same way for all.
#[derive(Args, Debug, Clone, Default)]
pub struct OutputArgs {
    /// Write the JSON report to PATH (`-` for stdout; the text then goes to stderr).
    #[arg(long, value_name = "PATH")]
    pub json: Option<String>,
    /// Write the report's files into DIR (created if missing) after a successful run:
    /// report.json, timeline.csv, timeline.svg, latency.svg and report.html (`herd bench`,
    /// `herd sim`); seeds.json and seeds.md (`--seeds`); tune.json, tune.html, the plots
    /// and, with a recommendation, tuned.toml (`herd tune`).
    #[arg(long, value_name = "DIR")]
    pub out: Option<std::path::PathBuf>,
    /// Print nothing but the requested output.
    #[arg(long, short)]
    pub quiet: bool,
}

/// Upper limits on an arm's figures, the same five for `herd check` (on a report) and
/// `herd tune` (on every seed of a point), read into one [`herd_tune::Limits`].
#[derive(Args, Debug, Clone, Default)]
pub struct LimitArgs {
    /// Limit: hard-fail ratio (`hard_fail_ratio`): a ratio (`0.01`) or a percentage (`1%`).
    #[arg(long, value_name = "RATIO")]
    pub max_hard_fail: Option<String>,
    /// Limit: load multiplier (`load_multiplier`, server requests / logical requests).
    #[arg(long, value_name = "X", alias = "max-load-multiplier")]
    pub max_load: Option<f64>,
    /// Limit: 1 s peak multiplier (`peak_rps_multiplier`, the busiest 1 s at the server
    /// against the offered rate).
    #[arg(long, value_name = "X", alias = "max-peak-multiplier")]
    pub max_peak: Option<f64>,
    /// Limit: 100 ms burst multiplier (`burst_multiplier`).
    #[arg(long, value_name = "X")]
    pub max_burst: Option<f64>,
    /// Limit: p99 latency (`latency_ms.p99`; `800ms`, `1.5s`, a bare number is milliseconds).
    #[arg(long, value_name = "DURATION")]
    pub max_p99: Option<String>,
}

#[derive(Args, Debug)]
#[command(group(
    clap::ArgGroup::new("limits")
        .required(true)
        .multiple(true)
        .args(["max_hard_fail", "max_load", "max_peak", "max_burst", "max_p99"])
))]
pub struct CheckArgs {
    /// A JSON report (`herd bench --json` or `--out`).
    pub report: String,
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Check only this arm (repeatable); the default is every arm.
    #[arg(long = "arm", value_name = "ID")]
    pub arms: Vec<String>,
}

#[derive(Args, Debug)]
pub struct UpstreamArgs {
    /// A scenario file or embedded name; only its upstream table and seed are used.
    #[arg(default_value = "seed")]
    pub scenario: String,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080", value_name = "ADDR")]
    pub listen: String,
    /// Seed for fault draws, instead of the scenario's.
    #[arg(long, value_name = "S")]
    pub seed: Option<u64>,
    /// Forward every request that draws no fault to this service (`http://HOST:PORT`),
    /// instead of the scenario's `[upstream] target`; without either, herd answers itself.
    #[arg(long, value_name = "URL")]
    pub target: Option<herd_scenario::TargetUrl>,
    /// Require `Authorization: Bearer TOKEN` on `/__herd/stats` and `/metrics`. Without it
    /// they are open on a loopback address and off (404) on any other.
    #[arg(
        long,
        value_name = "TOKEN",
        env = "HERD_ADMIN_TOKEN",
        hide_env_values = true
    )]
    pub admin_token: Option<String>,
    /// Close a connection whose request head has not arrived in full after this many
    /// seconds (slow clients; an idle keep-alive connection too).
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub header_timeout: f64,
    /// Event loops serving connections, a thread each (default: one per core); a
    /// connection stays on the loop it was handed. One loop, like nginx with
    /// `worker_processes 1`, leaves the other cores to a client on the same machine.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    pub threads: Option<u16>,
}

#[derive(Args, Debug)]
pub struct PolicyArgs {
    /// undici, axios-retry, none, naive, exponential, herd, urllib3, go-retryablehttp, tenacity,
    /// envoy, istio-default, linkerd-budget, linkerd-limit, aws-standard, aws-standard-2.0,
    /// aws-adaptive, aws-legacy, got, ky, p-retry, stamina, backoff or backon; or a hedging
    /// replica (grpc-hedging, polly-hedging, finagle-backup, tower-hedge) or a
    /// breaker replica (resilience4j, polly-breaker, hystrix, gobreaker, pybreaker, failsafe,
    /// opossum, cockatiel, go-resiliency), shown with its defaults and sources.
    pub profile: String,
    /// Jitter kind: none, full, equal, decorrelated, proportional, additive, noise.
    #[arg(long, value_name = "KIND")]
    pub jitter: Option<String>,
    /// Factor for proportional / additive jitter; seconds for noise.
    #[arg(long, value_name = "F")]
    pub jitter_factor: Option<f64>,
    /// Number of retries, instead of the profile's default.
    #[arg(long, value_name = "N")]
    pub retries: Option<u32>,
    /// Base delay in ms, instead of the profile's.
    #[arg(long, value_name = "MS")]
    pub base_ms: Option<f64>,
    /// Growth factor, instead of the profile's.
    #[arg(long, value_name = "X")]
    pub factor: Option<f64>,
    /// Cap on the nominal delay in ms, instead of the profile's.
    #[arg(long, value_name = "MS")]
    pub cap_ms: Option<f64>,
    /// How many request histories to sample.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub samples: u32,
    /// Seed for the jitter draws.
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub seed: u64,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct ScenariosArgs {
    #[command(subcommand)]
    pub action: Option<ScenariosAction>,
}

#[derive(Subcommand, Debug)]
pub enum ScenariosAction {
    /// Print an embedded scenario's TOML.
    Show {
        /// The scenario's name.
        name: String,
    },
}

#[derive(Args, Debug)]
pub struct TraceArgs {
    #[command(subcommand)]
    pub action: TraceAction,
}

#[derive(Subcommand, Debug)]
pub enum TraceAction {
    /// Write a synthetic trace: each consumer an independent Poisson stream of units, seeded
    /// (the same flags give the same bytes).
    Synth(SynthArgs),
    /// Turn an access log (nginx's or Apache's Common or Combined Log Format, nginx with
    /// `$msec`, or JSON lines; gzipped or not) into a trace: t_ms from the first line,
    /// consumer from the client address (or --consumer), method and path kept.
    Import(ImportArgs),
}

/// The kinds of access log `herd trace import` reads.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum LogFormatArg {
    /// `host ident user [time] "request" status bytes`.
    Common,
    /// Common, then `"referer" "user-agent"` (nginx's and Apache's default `combined`).
    Combined,
    /// One JSON object per line (field names: --time-field, --method-field, --path-field).
    Json,
}

/// What a numeric time in a JSON log counts.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum TimeUnitArg {
    /// Seconds since the epoch, decimals allowed (nginx's `$msec`).
    S,
    /// Milliseconds since the epoch.
    Ms,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The access log (gzip is recognised by its first bytes).
    #[arg(value_name = "FILE")]
    pub file: std::path::PathBuf,
    /// The log's format. The time field of `common` and `combined` may be a CLF date
    /// (`[10/Oct/2000:13:55:36 -0700]`, 1 s resolution) or nginx's `$msec` (1 ms),
    /// recognised line by line.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub format: LogFormatArg,
    /// Which field is the consumer: for common/combined `remote_addr` (default) or
    /// `remote_user`; for json a field name (default: none, every line consumer 0).
    /// Consumers are numbered 0, 1, … in order of first appearance.
    #[arg(long, value_name = "FIELD")]
    pub consumer: Option<String>,
    /// json: the time's field (a dotted name reaches into nested objects).
    #[arg(long, default_value = "time", value_name = "NAME")]
    pub time_field: String,
    /// json: the method's field; a line without it needs a whole request line
    /// (`GET /x HTTP/1.1`) in the path's field.
    #[arg(long, default_value = "method", value_name = "NAME")]
    pub method_field: String,
    /// json: the path's (and query's) field.
    #[arg(long, default_value = "path", value_name = "NAME")]
    pub path_field: String,
    /// json: what a numeric time counts.
    #[arg(long, value_enum, default_value = "s", value_name = "UNIT")]
    pub time_unit: TimeUnitArg,
    /// Skip malformed lines (counted and reported on stderr) instead of stopping at the first.
    #[arg(long)]
    pub skip_bad_lines: bool,
    /// Place the requests that share an instant of the log's clock (a `$time_local` log's
    /// second) within it: `poisson` at sorted uniform draws (a Poisson process with the
    /// log's per-second counts; seeded), `uniform` evenly, the k-th of n at (k + ½)/n.
    #[arg(long, value_enum, value_name = "HOW")]
    pub spread: Option<SpreadArg>,
    /// Seed for `--spread poisson` (the same seed gives the same trace).
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub seed: u64,
    /// Fold obvious retries into the request they repeat: the same client, method and path
    /// within WINDOW of the previous one (`300ms`, `2s`; a bare number is ms). Counted.
    #[arg(long, value_name = "WINDOW", value_parser = window)]
    pub fold_retries: Option<std::time::Duration>,
    /// Write to FILE (atomically) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
}

/// How `herd trace import --spread` places the requests of one instant.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum SpreadArg {
    /// Evenly: the k-th of n at (k + ½)/n of the instant.
    Uniform,
    /// Sorted uniform draws, seeded: a Poisson process with the log's counts.
    Poisson,
}

/// `300ms`, `2s`, `1.5s` or a bare number of milliseconds, greater than 0.
fn window(s: &str) -> Result<std::time::Duration, String> {
    let (num, scale) = match s.trim() {
        t if t.ends_with("ms") => (&t[..t.len() - 2], 1e-3),
        t if t.ends_with('s') => (&t[..t.len() - 1], 1.0),
        t => (t, 1e-3),
    };
    let x: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a window (300ms, 2s, or milliseconds)"))?;
    let secs = x * scale;
    if !(secs.is_finite() && secs > 0.0 && secs <= 86_400.0) {
        return Err(format!(
            "`{s}`: a window is greater than 0 and at most a day"
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

#[derive(Args, Debug)]
pub struct SynthArgs {
    /// Consumers (the `consumer` column runs from 0 to N-1).
    #[arg(long, default_value_t = 300, value_name = "N")]
    pub consumers: u32,
    /// Length of the trace, seconds.
    #[arg(long, default_value_t = 40.0, value_name = "S")]
    pub seconds: f64,
    /// Units per consumer per second.
    #[arg(long, default_value_t = 1.0, value_name = "R")]
    pub rate: f64,
    /// Seed for the arrival draws.
    #[arg(long, default_value_t = 1, value_name = "S")]
    pub seed: u64,
    /// Write to FILE instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct TuneArgs {
    /// A scenario file, or the name of an embedded scenario.
    pub scenario: String,
    /// A key to vary and its values: `retries=0..5`, `jitter=none,full`, `budget=none,percent`,
    /// `consumers.on_timeout=reissue,abandon` (the tuned arm's keys), or a scenario key such
    /// as `upstream.incidents.0.duration_ms=300,1000` for a what-if sweep of every arm
    /// (repeatable; the points are the grid of all values).
    #[arg(long = "vary", value_name = "KEY=VALUES", required = true)]
    pub vary: Vec<String>,
    /// The arm to tune (default the first); in a sweep, the arms to run (default all).
    #[arg(long = "arm", value_name = "ID")]
    pub arms: Vec<String>,
    /// Seeds per point: the scenario's seed and the next N-1.
    #[arg(long, value_name = "N", default_value_t = 5)]
    pub seeds: u32,
    /// Most simulations before a large grid is searched by successive halving.
    #[arg(long, value_name = "N", default_value_t = 4000)]
    pub budget: u64,
    /// The limits a recommended point meets on every seed.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Threads (default: one per core). The output does not depend on it.
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// With a target: do not run the recommended point and the runner-up on the target
    /// after the search (predicted only).
    #[arg(long)]
    pub no_verify: bool,
    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// A scenario file, or the name of an embedded scenario; its target (or `--target`) is
    /// probed, and its `[upstream]` model replaced by the fitted one in calibrated.toml.
    pub scenario: String,
    /// The service to probe (`http://HOST:PORT`), instead of the scenario's target.
    /// Without either, herd's own upstream (the scenario's model) is probed.
    #[arg(long, value_name = "URL")]
    pub target: Option<herd_scenario::TargetUrl>,
    /// The offered rates of the steps, req/s, comma-separated (`50,100,200,300`).
    #[arg(long, value_name = "R,R,...", conflicts_with = "max_rate")]
    pub rates: Option<String>,
    /// The highest rate to offer: steps from 7% to 100% of it. Without it or --rates, the
    /// limit is discovered by doubling the rate from 50 req/s until the service turns
    /// requests away or falls behind, and the steps go from 10% to 150% of it.
    #[arg(long, value_name = "R")]
    pub max_rate: Option<f64>,
    /// Seconds per step, on average: the planned steps lengthen from half of it to one and
    /// a half times it (all shorter when --max-requests would be exceeded).
    #[arg(long, value_name = "S", default_value_t = 2.0)]
    pub step_secs: f64,
    /// Most requests the whole probe sends.
    #[arg(long, value_name = "N", default_value_t = 8000)]
    pub max_requests: u64,
    /// Where calibrated.toml, fit.md, fit.json and fit.svg go (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: std::path::PathBuf,
    /// Print nothing but errors.
    #[arg(long, short)]
    pub quiet: bool,
}
