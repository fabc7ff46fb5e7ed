//! From TOML text to a validated [`Scenario`]: the one place that judges user input.
//!
//! Two passes: serde checks shape (unknown keys, wrong types), then `Check` checks
//! values (ranges, names, consistency). Both report `file:line:col: key `k`: message`.

use crate::duration::BoundedDuration;
use crate::error::ScenarioError;
use crate::model::*;
use crate::policy_spec::PolicySpec;
use crate::raw::*;
use crate::span::{keys, render, Seg, Spans};
use crate::{guard_spec, strategy_spec};
use herd_retry::{Method, Strategy};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Parses and validates a scenario. `origin` names the source in error messages.
pub fn parse(text: &str, origin: &str) -> Result<Scenario, ScenarioError> {
    let spans = Spans::new(text);
    let raw: RawScenario = toml::from_str(text).map_err(|e| {
        let message = e.message().trim().to_owned();
        let mut start = e.span().map(|s| s.start);
        let key = start.map(|s| {
            let mut path = spans.path_at(s);
            // An error inside an inline table (`budget = { kind = "quota", percent = 1 }`)
            // comes with the table's span: point at the key it is about.
            if let Some(child) = offending_key(&message) {
                let parent = spans.locate(&path);
                path.push(Seg::Key(child.to_owned()));
                match spans.locate(&path) {
                    Some(r) if Some(&r) != parent.as_ref() => start = Some(r.start),
                    _ => {
                        path.pop();
                    }
                }
            }
            render(&path)
        });
        let (line, col) = start.map(|s| spans.line_col(s)).unzip();
        ScenarioError::Invalid {
            origin: origin.to_owned(),
            line,
            col,
            key,
            message,
        }
    })?;
    Check {
        spans: &spans,
        origin,
    }
    .scenario(raw)
}

/// The key a serde message is about, when it names one: the field of `unknown field
/// \`x\``, or `kind` for an unknown variant of a tagged table.
fn offending_key(message: &str) -> Option<&str> {
    if let Some(rest) = message.strip_prefix("unknown field `") {
        return rest.split('`').next();
    }
    message.starts_with("unknown variant `").then_some("kind")
}

struct Check<'a> {
    spans: &'a Spans<'a>,
    origin: &'a str,
}

type R<T> = Result<T, ScenarioError>;

impl Check<'_> {
    /// The directory a relative path in the scenario is taken from: the scenario file's
    /// (empty for a bare file name, which is the working directory), or none for an
    /// embedded scenario, whose paths are taken from the working directory.
    fn base_dir(&self) -> Option<&Path> {
        Path::new(self.origin)
            .parent()
            .filter(|_| !self.origin.starts_with("embedded:"))
    }
}

mod consumers;
mod grpc;
mod hops;
mod rate_limit;
mod target;
mod tls;

impl Check<'_> {
    fn err(&self, path: &[Seg], message: impl Into<String>) -> ScenarioError {
        let (line, col) = self
            .spans
            .locate(path)
            .map(|r| self.spans.line_col(r.start))
            .unzip();
        ScenarioError::Invalid {
            origin: self.origin.to_owned(),
            line,
            col,
            key: Some(render(path)),
            message: message.into(),
        }
    }

    fn rate(&self, path: &[Seg], x: f64) -> R<f64> {
        if (0.0..=1.0).contains(&x) {
            Ok(x)
        } else {
            Err(self.err(
                path,
                format!("must be a probability between 0 and 1, got {x}"),
            ))
        }
    }

    fn non_neg(&self, path: &[Seg], x: f64) -> R<f64> {
        if x.is_finite() && x >= 0.0 {
            Ok(x)
        } else {
            Err(self.err(path, format!("must be 0 or more, got {x}")))
        }
    }

    fn positive(&self, path: &[Seg], x: f64) -> R<f64> {
        if x.is_finite() && x > 0.0 {
            Ok(x)
        } else {
            Err(self.err(path, format!("must be greater than 0, got {x}")))
        }
    }

    /// A time in milliseconds kept as a float (service times): greater than 0 (or 0 or
    /// more with `zero_ok`) and within [`crate::MAX_DURATION`].
    fn ms_f64(&self, path: &[Seg], x: f64, zero_ok: bool) -> R<f64> {
        let x = if zero_ok {
            self.non_neg(path, x)?
        } else {
            self.positive(path, x)?
        };
        self.ms(path, x)?;
        Ok(x)
    }

    fn count(&self, path: &[Seg], x: i64) -> R<u64> {
        u64::try_from(x).map_err(|_| self.err(path, format!("must be 0 or more, got {x}")))
    }

    /// Milliseconds, bounded by [`crate::MAX_DURATION`].
    fn ms(&self, path: &[Seg], x: f64) -> R<Duration> {
        BoundedDuration::from_ms(x)
            .map(BoundedDuration::get)
            .map_err(|e| self.err(path, e.to_string()))
    }

    fn scenario(&self, raw: RawScenario) -> R<Scenario> {
        if raw.name.trim().is_empty() {
            return Err(self.err(&keys(&["name"]), "must not be empty"));
        }
        let seed = self.count(&keys(&["seed"]), raw.seed)?;
        let load_rate_set = raw.load.rate.is_some();
        // The key that set the offered rate, to blame when requests / rate is too long.
        let rate_key = match &raw.consumers {
            Some(c) if c.think_ms.is_some() => keys(&["consumers", "think_ms"]),
            Some(_) => keys(&["consumers", "rate"]),
            None if load_rate_set => keys(&["load", "rate"]),
            None => keys(&["load", "requests"]),
        };
        let mut load = self.load(raw.load)?;
        let consumers = raw
            .consumers
            .map(|c| self.consumers(c, &mut load, load_rate_set))
            .transpose()?;
        if load.trace.is_none() {
            load.offered().map_err(|e| {
                self.err(
                    &rate_key,
                    format!(
                        "{} requests at {} per second would be offered over {e}",
                        load.requests,
                        crate::duration::show(load.rate)
                    ),
                )
            })?;
        }
        let client = self.client(raw.client)?;
        let upstream = self.upstream(&keys(&["upstream"]), raw.upstream)?;
        let network = self.network(raw.network)?;
        let hops = self.hops(raw.hops, client.attempt_timeout)?;
        // Each hop calls the next over HTTP/1.1 (herd-retry's HTTP policies), so a graph
        // is HTTP/1.1 from the edge to the bottom.
        let h2 = std::iter::once((keys(&["upstream", "protocol"]), upstream.protocol)).chain(
            hops.iter().enumerate().map(|(i, h)| {
                let mut at = vec![Seg::Key("hops".into()), Seg::Index(i)];
                at.extend(["server", "protocol"].map(|k| Seg::Key(k.into())));
                (at, h.server.protocol)
            }),
        );
        for (key, protocol) in h2 {
            if protocol.is_h2() && !hops.is_empty() {
                return Err(self.err(
                    &key,
                    "a call graph ([[hops]]) is HTTP/1.1 from hop to hop; an HTTP/2 or gRPC `protocol` needs a scenario without hops",
                ));
            }
        }
        if raw.arms.is_empty() {
            return Err(self.err(
                &keys(&["arms"]),
                "a scenario needs at least one [[arms]] entry",
            ));
        }
        let mut arms: Vec<Arm> = Vec::with_capacity(raw.arms.len());
        for (i, mut a) in raw.arms.into_iter().enumerate() {
            let over = a.consumers.take();
            let mut arm = self.arm(&arm_at(i), a, client.attempt_timeout)?;
            arm.consumers = self.arm_rules(i, consumers.as_ref(), over)?;
            if arms.iter().any(|x| x.id == arm.id) {
                return Err(self.err(&arm_key(i, "id"), format!("duplicate arm id `{}`", arm.id)));
            }
            if consumers.is_some() && arm.is_guarded() {
                let key = if arm.hedge.is_some() {
                    "hedge"
                } else {
                    "breaker"
                };
                return Err(self.err(
                    &arm_key(i, key),
                    "hedging and breakers do not run under [consumers] yet (drop [consumers], or this key)",
                ));
            }
            if consumers.is_some() && !arm.client.is_replica() {
                return Err(self.err(
                    &arm_key(i, "client"),
                    "[consumers] run through herd's replica of a policy; a real client cannot take part (use `policy`, or drop [consumers])",
                ));
            }
            arms.push(arm);
        }
        Ok(Scenario {
            name: raw.name,
            description: raw.description,
            seed,
            load,
            client,
            upstream,
            arms,
            consumers,
            network,
            hops,
        })
    }

    fn network(&self, n: RawNetwork) -> R<Network> {
        let rtt = self.ms(&keys(&["network", "rtt_ms"]), n.rtt_ms)?;
        let jitter = self.ms(&keys(&["network", "jitter_ms"]), n.jitter_ms)?;
        Ok(Network { rtt, jitter })
    }

    fn load(&self, l: RawLoad) -> R<Load> {
        let k = |x| keys(&["load", x]);
        let trace = match l.trace {
            Some(t) => Some(self.trace(&t, l.time_scale)?),
            None if l.time_scale.is_some() => {
                return Err(self.err(&k("time_scale"), "applies only with `trace`"))
            }
            None => None,
        };
        if trace.is_some() {
            for (key, set) in [("rate", l.rate.is_some()), ("arrival", l.arrival.is_some())] {
                if set {
                    return Err(self.err(
                        &k(key),
                        format!("`{key}` does not apply with `trace`: the trace says when requests arrive (`time_scale` stretches it)"),
                    ));
                }
            }
        }
        let requests = match l.requests {
            Some(n) => {
                let n = self.count(&k("requests"), n)?;
                if n == 0 {
                    return Err(self.err(&k("requests"), "must be at least 1"));
                }
                n
            }
            // With a trace: every line (`trace::resolve` counts them).
            None if trace.is_some() => u64::MAX,
            None => 1000,
        };
        // With a trace, a placeholder until `trace::resolve` measures the trace's rate.
        let rate = match l.rate {
            Some(r) => self.positive(&k("rate"), r)?,
            None => 100.0,
        };
        let arrival = match l.arrival.as_deref().unwrap_or("poisson") {
            "poisson" => Arrival::Poisson,
            "constant" => Arrival::Constant,
            other => {
                return Err(self.err(
                    &k("arrival"),
                    format!("unknown arrival `{other}` (expected poisson or constant)"),
                ))
            }
        };
        let method: Method = l
            .method
            .parse()
            .map_err(|e: String| self.err(&k("method"), e))?;
        let backlog = match l.backlog {
            Some(n) => match self.count(&k("backlog"), n)? {
                0 => return Err(self.err(&k("backlog"), "must be at least 1")),
                n => usize::try_from(n).unwrap_or(usize::MAX),
            },
            None => crate::DEFAULT_BACKLOG,
        };
        let lanes = match l.lanes {
            Some(n) => match self.count(&k("lanes"), n)? {
                0 => return Err(self.err(&k("lanes"), "must be at least 1")),
                n => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            },
            None => None,
        };
        let coalesce = match l.coalesce_us {
            Some(us) => crate::coalesce_of_us(self.count(&k("coalesce_us"), us)?)
                .map_err(|e| self.err(&k("coalesce_us"), e))?,
            None => crate::DEFAULT_COALESCE,
        };
        Ok(Load {
            requests,
            rate,
            arrival,
            method,
            trace,
            backlog,
            lanes,
            coalesce,
            shard: None,
        })
    }

    fn client(&self, c: RawClient) -> R<Client> {
        let k = |x| keys(&["client", x]);
        let pool = self.count(&k("pool_max_connections"), c.pool_max_connections)?;
        if pool == 0 {
            return Err(self.err(&k("pool_max_connections"), "must be at least 1"));
        }
        let preconnect = self.count(&k("preconnect"), c.preconnect)?;
        if preconnect > pool {
            return Err(self.err(
                &k("preconnect"),
                format!("must be at most pool_max_connections ({pool})"),
            ));
        }
        let t = self.ms(&k("attempt_timeout_ms"), c.attempt_timeout_ms)?;
        let connections = self.count(&k("connections"), c.connections)?;
        if connections == 0 {
            return Err(self.err(&k("connections"), "must be at least 1"));
        }
        Ok(Client {
            pool_max_connections: pool as usize,
            preconnect: preconnect as usize,
            attempt_timeout: (!t.is_zero()).then_some(t),
            connections: connections as usize,
        })
    }

    /// `[upstream]`, or a hop's `server` (at `at`): the same keys, the same checks.
    fn upstream(&self, at: &[Seg], u: RawUpstream) -> R<Upstream> {
        let k = |x| under(at, x);
        let error_rate = self.rate(&k("error_rate"), u.error_rate)?;
        let reset_rate = self.rate(&k("reset_rate"), u.reset_rate)?;
        let stall_rate = self.rate(&k("stall_rate"), u.stall_rate)?;
        if error_rate + reset_rate + stall_rate > 1.0 + 1e-9 {
            return Err(self.err(
                &k("stall_rate"),
                "error_rate + reset_rate + stall_rate must not exceed 1",
            ));
        }
        let shed = match u.shed.as_str() {
            "reset" => Shed::Reset,
            "503" => Shed::Status503,
            other => {
                return Err(self.err(
                    &k("shed"),
                    format!("unknown shed `{other}` (expected \"reset\" or \"503\")"),
                ))
            }
        };
        let target = self.target(at, &u)?;
        let tls = self.serve_tls(at, &u)?;
        let dialect = match u.dialect.as_deref() {
            None => crate::Dialect::Plain,
            Some(name) => crate::Dialect::from_name(name).ok_or_else(|| {
                self.err(
                    &k("dialect"),
                    format!(
                        "unknown dialect `{name}` (expected one of: {})",
                        crate::Dialect::NAMES.join(", ")
                    ),
                )
            })?,
        };
        let protocol = match u.protocol.as_deref() {
            None => crate::Protocol::Http1,
            Some(name) => crate::Protocol::from_name(name).ok_or_else(|| {
                self.err(
                    &k("protocol"),
                    format!(
                        "unknown protocol `{name}` (expected one of: {})",
                        crate::Protocol::NAMES.join(", ")
                    ),
                )
            })?,
        };
        if protocol.is_grpc() && dialect != crate::Dialect::Plain {
            return Err(self.err(
                &k("dialect"),
                "a gRPC upstream answers in gRPC statuses; `dialect` is for HTTP services (S3, DynamoDB)",
            ));
        }
        if protocol.is_h2() && target.is_some() {
            return Err(self.err(
                &k("protocol"),
                "the proxy front forwards HTTP/1.1 only; an HTTP/2 or gRPC `protocol` needs herd's own upstream (no `target`)",
            ));
        }
        let rate_limit = u.rate_limit.map(|r| self.rate_limit(at, r)).transpose()?;
        let mut incidents = Vec::with_capacity(u.incidents.len());
        for (i, inc) in u.incidents.into_iter().enumerate() {
            incidents.push(self.incident(at, i, inc)?);
        }
        Ok(Upstream {
            error_rate,
            retry_after_s: self.retry_after_s(&k("retry_after_s"), u.retry_after_s)?,
            reset_rate,
            reset_after: self.ms(&k("reset_after_ms"), u.reset_after_ms)?,
            stall_rate,
            stall: self.ms(&k("stall_ms"), u.stall_ms)?,
            service_time: self.service_time(at, u.service_time)?,
            workers: self.count(&k("workers"), u.workers)? as usize,
            queue_limit: self.count(&k("queue_limit"), u.queue_limit)? as usize,
            shed,
            incidents,
            rate_limit,
            target,
            dialect,
            protocol,
            tls,
        })
    }

    /// Whole seconds for the `Retry-After` header, within [`crate::MAX_DURATION`].
    fn retry_after_s(&self, path: &[Seg], x: i64) -> R<u64> {
        let s = self.count(path, x)?;
        if s > crate::MAX_DURATION.as_secs() {
            return Err(self.err(
                path,
                format!(
                    "must be at most {} (365 days, the longest duration herd handles), got {s}",
                    crate::MAX_DURATION.as_secs()
                ),
            ));
        }
        Ok(s)
    }

    fn service_time(&self, at: &[Seg], s: RawServiceTime) -> R<ServiceTime> {
        let table = under(at, "service_time");
        let k = |x: &str| under(&table, x);
        let need = |name: &str, v: Option<f64>| -> R<f64> {
            let v = v.ok_or_else(|| {
                self.err(&k("dist"), format!("dist = \"{}\" needs `{name}`", s.dist))
            })?;
            self.ms_f64(&k(name), v, false)
        };
        let extra = |allowed: &[&str]| -> R<()> {
            for (name, v) in [
                ("ms", s.ms),
                ("mean_ms", s.mean_ms),
                ("median_ms", s.median_ms),
                ("p99_ms", s.p99_ms),
            ] {
                if v.is_some() && !allowed.contains(&name) {
                    return Err(self.err(
                        &k(name),
                        format!("`{name}` does not apply to dist = \"{}\"", s.dist),
                    ));
                }
            }
            Ok(())
        };
        match s.dist.as_str() {
            "constant" => {
                extra(&["ms"])?;
                Ok(ServiceTime::Constant {
                    ms: self.ms_f64(
                        &k("ms"),
                        s.ms.ok_or_else(|| self.err(&k("dist"), "dist = \"constant\" needs `ms`"))?,
                        true,
                    )?,
                })
            }
            "exponential" => {
                extra(&["mean_ms"])?;
                Ok(ServiceTime::Exponential {
                    mean_ms: need("mean_ms", s.mean_ms)?,
                })
            }
            "lognormal" => {
                extra(&["median_ms", "p99_ms"])?;
                let median_ms = need("median_ms", s.median_ms)?;
                let p99_ms = need("p99_ms", s.p99_ms)?;
                if p99_ms < median_ms {
                    return Err(self.err(&k("p99_ms"), "must be at least median_ms"));
                }
                Ok(ServiceTime::Lognormal { median_ms, p99_ms })
            }
            other => Err(self.err(
                &k("dist"),
                format!("unknown dist `{other}` (expected constant, exponential or lognormal)"),
            )),
        }
    }

    fn incident(&self, at: &[Seg], i: usize, r: RawIncident) -> R<Incident> {
        let mut table = under(at, "incidents");
        table.push(Seg::Index(i));
        let k = |x: &str| under(&table, x);
        let duration = self.ms(&k("duration_ms"), r.duration_ms)?;
        if duration.is_zero() {
            return Err(self.err(&k("duration_ms"), "must be greater than 0"));
        }
        let hold_answer = match r.hold_answer.as_str() {
            "reset" => HoldAnswer::Reset,
            "503" => HoldAnswer::Status503,
            other => {
                return Err(self.err(
                    &k("hold_answer"),
                    format!("unknown hold_answer `{other}` (expected \"reset\" or \"503\")"),
                ))
            }
        };
        Ok(Incident {
            start: self.ms(&k("start_ms"), r.start_ms)?,
            duration,
            error_rate: r
                .error_rate
                .map(|x| self.rate(&k("error_rate"), x))
                .transpose()?,
            reset_rate: r
                .reset_rate
                .map(|x| self.rate(&k("reset_rate"), x))
                .transpose()?,
            slowdown: self.positive(&k("slowdown"), r.slowdown)?,
            hold: r.hold,
            hold_answer,
        })
    }

    /// `attempt_timeout` is the client's: a profile's default deadline can be it (see
    /// [`herd_retry::Strategy::for_client`]).
    fn arm(&self, at: &[Seg], a: RawArm, attempt_timeout: Option<Duration>) -> R<Arm> {
        let k = |x| under(at, x);
        if a.id.trim().is_empty() || a.id.contains(char::is_whitespace) {
            return Err(self.err(&k("id"), "must be a non-empty word without spaces"));
        }
        if let Some(c) = a.client.clone() {
            return self.real_client(at, a, c);
        }
        if let Some(Ok(herd_retry::Profile::Grpc(imp))) =
            a.policy.as_deref().map(str::parse::<herd_retry::Profile>)
        {
            return self.grpc_arm(at, a, imp);
        }
        if a.options.is_some() {
            return Err(self.err(
                &k("options"),
                "`options` are passed to a real client's adapter; this arm runs herd's own policy (set its keys instead)",
            ));
        }
        let Some(profile) = a.policy.clone() else {
            return Err(self.err(&k("policy"), "an arm needs a `policy` (or a real `client`)"));
        };
        let (jitter, jitter_factor) = match a.jitter {
            Some(RawJitter::Name(n)) => (Some(n), None),
            Some(RawJitter::Table(t)) => (Some(t.kind), t.factor),
            None => (None, None),
        };
        let spec = PolicySpec {
            profile,
            jitter,
            jitter_factor,
            retries: a.retries,
            base_ms: a.base_ms,
            factor: a.factor,
            cap_ms: a.cap_ms,
        };
        let policy = spec.build().map_err(|e| self.err(&k(e.field), e.message))?;
        let knob = |e: strategy_spec::KnobError| {
            let mut path = under(at, e.path[0]);
            path.extend(e.path[1..].iter().map(|p| Seg::Key((*p).to_owned())));
            self.err(&path, e.message)
        };
        let defaults = Strategy::for_client(policy.profile(), attempt_timeout);
        let policy = match &a.retry_after {
            Some(r) => strategy_spec::retry_after(policy, r).map_err(knob)?,
            None => policy,
        };
        let budget = match &a.budget {
            Some(b) => strategy_spec::budget(b).map_err(knob)?,
            None => defaults.budget,
        };
        let deadline = match a.deadline_ms {
            Some(x) => strategy_spec::deadline(x).map_err(knob)?,
            None => defaults.deadline,
        };
        let hedge = a
            .hedge
            .as_ref()
            .map(guard_spec::hedge)
            .transpose()
            .map_err(knob)?;
        let breaker = (a.breaker.as_ref())
            .map(guard_spec::breaker)
            .transpose()
            .map_err(knob)?;
        Ok(Arm {
            id: a.id,
            client: ArmClient::Replica(Strategy {
                policy,
                budget,
                deadline,
            }),
            consumers: None,
            options: None,
            hedge,
            breaker,
        })
    }

    /// An arm run by a real client library: its own defaults are the point, so herd's
    /// policy knobs are refused rather than silently ignored.
    fn real_client(&self, at: &[Seg], a: RawArm, client: RawArmClient) -> R<Arm> {
        let k = |x| under(at, x);
        let client = match client {
            RawArmClient::Name(n) => n,
            RawArmClient::Command(c) => {
                let cmd = self.command(at, c)?;
                return self.real_client_arm(at, a, ArmClient::Command(cmd), "command");
            }
        };
        let kind = if let Some(p) = RustPeer::from_name(&client) {
            if a.options.is_some() {
                return Err(self.err(
                    &k("options"),
                    format!("`options` go to an adapter program; `{client}` runs inside herd"),
                ));
            }
            ArmClient::Rust(p)
        } else if let Some(c) = crate::clients::external_client(&client) {
            ArmClient::External(c)
        } else {
            let mut known: Vec<&str> = RustPeer::NAMES.to_vec();
            known.extend(crate::clients::EXTERNAL_CLIENTS.iter().map(|c| c.id));
            return Err(self.err(
                &k("client"),
                format!(
                    "unknown client `{client}` (expected one of: {})",
                    known.join(", ")
                ),
            ));
        };
        self.real_client_arm(at, a, kind, &client)
    }

    /// `client = { command = [...], cwd = "..." }`, paths resolved (see [`CommandClient`]).
    fn command(&self, at: &[Seg], c: RawCommand) -> R<CommandClient> {
        let mut path = under(at, "client");
        path.push(Seg::Key("command".into()));
        let Some(program) = c.command.first() else {
            return Err(self.err(&path, "must name a program (a non-empty array)"));
        };
        if program.trim().is_empty() {
            return Err(self.err(&path, "the program (its first element) must not be empty"));
        }
        let base = self.base_dir().map(Path::to_path_buf).unwrap_or_default();
        let abs = |p: &Path| {
            let joined = base.join(p);
            std::path::absolute(&joined).unwrap_or(joined)
        };
        let mut argv = Vec::with_capacity(c.command.len());
        for (j, arg) in c.command.iter().enumerate() {
            let given = Path::new(arg);
            let resolve = given.is_relative()
                && !arg.starts_with('-')
                && if j == 0 {
                    arg.contains('/')
                } else {
                    base.join(given).exists()
                };
            argv.push(if resolve {
                abs(given).to_string_lossy().into_owned()
            } else {
                arg.clone()
            });
        }
        let cwd = match &c.cwd {
            Some(d) if Path::new(d).is_absolute() => PathBuf::from(d),
            Some(d) => abs(Path::new(d)),
            None if base.as_os_str().is_empty() => {
                std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."))
            }
            None => std::path::absolute(&base).unwrap_or(base),
        };
        Ok(CommandClient { argv, cwd })
    }

    /// The arm of a real client `kind` (`client` names it in messages), refusing herd's
    /// policy knobs and keeping its `options` as JSON.
    fn real_client_arm(&self, at: &[Seg], a: RawArm, kind: ArmClient, client: &str) -> R<Arm> {
        let k = |x| under(at, x);
        if let Some(knob) = first_knob(&a, &[]) {
            return Err(self.err(
                &k(knob),
                format!("`{knob}` does not apply to client `{client}`: a real client runs with its own configuration"),
            ));
        }
        let options = a
            .options
            .map(|t| serde_json::to_string(&t))
            .transpose()
            .map_err(|e| self.err(&k("options"), format!("cannot be written as JSON: {e}")))?;
        Ok(Arm {
            id: a.id,
            client: kind,
            consumers: None,
            options,
            hedge: None,
            breaker: None,
        })
    }
}

fn arm_key(i: usize, x: &str) -> Vec<Seg> {
    under(&arm_at(i), x)
}

/// The path of `[[arms]]` entry `i`.
fn arm_at(i: usize) -> Vec<Seg> {
    vec![Seg::Key("arms".into()), Seg::Index(i)]
}

/// The path of key `x` in the table at `at`.
fn under(at: &[Seg], x: &str) -> Vec<Seg> {
    let mut path = at.to_vec();
    path.push(Seg::Key(x.into()));
    path
}

/// The first of herd's policy knobs `a` sets, but those in `allowed`: an arm whose retries
/// come from elsewhere (a real client, a gRPC service config) refuses it.
fn first_knob(a: &RawArm, allowed: &[&str]) -> Option<&'static str> {
    [
        ("policy", a.policy.is_some()),
        ("jitter", a.jitter.is_some()),
        ("retries", a.retries.is_some()),
        ("base_ms", a.base_ms.is_some()),
        ("factor", a.factor.is_some()),
        ("cap_ms", a.cap_ms.is_some()),
        ("budget", a.budget.is_some()),
        ("retry_after", a.retry_after.is_some()),
        ("deadline_ms", a.deadline_ms.is_some()),
        ("hedge", a.hedge.is_some()),
        ("breaker", a.breaker.is_some()),
    ]
    .into_iter()
    .find(|(knob, set)| *set && !allowed.contains(knob))
    .map(|(knob, _)| knob)
}

#[cfg(test)]
mod tests;
