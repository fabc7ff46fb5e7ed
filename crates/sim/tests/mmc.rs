//! Queueing theory: with Poisson arrivals, exponential service, `workers = c`, no faults and
//! no retries, the simulated upstream is an M/M/c queue, and the mean latency the client
//! sees must match the Erlang C formula within 2%. The scenarios set `[network] rtt_ms = 0`,
//! so nothing but the queue is measured; a network adds exactly its round trip to every
//! request (checked separately).

use herd_scenario::Scenario;

/// Mean time in an M/M/c system (waiting + service), seconds.
///
/// With offered load `a = λ/μ` and utilisation `ρ = a/c < 1`, the probability that an
/// arrival has to wait is Erlang C:
///
/// ```text
///            a^c / c! · 1/(1−ρ)
/// C(c, a) = ───────────────────────────────────
///           Σ_{k=0}^{c−1} a^k / k!  +  a^c / c! · 1/(1−ρ)
/// ```
///
/// the mean wait is `Wq = C(c, a) / (cμ − λ)`, and the mean time in system `W = Wq + 1/μ`.
fn erlang_c_mean_response(lambda: f64, mu: f64, c: u32) -> f64 {
    let a = lambda / mu;
    let rho = a / c as f64;
    assert!(rho < 1.0, "unstable queue");
    let mut term = 1.0; // a^k / k!
    let mut sum = 0.0;
    for k in 0..c {
        sum += term;
        term *= a / (k + 1) as f64;
    }
    let tail = term / (1.0 - rho); // term is now a^c / c!
    let wait_prob = tail / (sum + tail);
    wait_prob / (c as f64 * mu - lambda) + 1.0 / mu
}

/// The M/M/c scenario, written as a user would (so the test also covers parsing): no
/// faults, no retries, no timeout, a pool and a queue too large to matter, and a network of
/// `rtt_ms`.
fn mmc(c: usize, rate: f64, mean_ms: f64, requests: u64, seed: u64, rtt_ms: f64) -> Scenario {
    let text = format!(
        r#"
name = "mmc"
seed = {seed}
[load]
requests = {requests}
rate = {rate}
arrival = "poisson"
[client]
pool_max_connections = 1000000
[upstream]
service_time = {{ dist = "exponential", mean_ms = {mean_ms} }}
workers = {c}
queue_limit = 1000000000
[network]
rtt_ms = {rtt_ms}
[[arms]]
id = "none"
policy = "none"
"#
    );
    herd_scenario::parse(&text, "mmc.toml").expect("valid scenario")
}

fn check(c: usize, rate: f64, mean_ms: f64, requests: u64, seed: u64) {
    let s = mmc(c, rate, mean_ms, requests, seed, 0.0);
    let run = herd_sim::simulate(&s, 0);
    assert_eq!(run.recorder.len(), requests);
    assert_eq!(run.recorder.failed(), 0);
    let totals = run.counts.totals();
    assert_eq!(
        (totals.received, totals.ok, totals.shed),
        (requests, requests, 0)
    );
    // The histogram keeps 3 significant digits: its mean is exact to ~0.1%.
    let measured_ms = run.recorder.histogram().mean() / 1000.0;
    let theory_ms = erlang_c_mean_response(rate, 1000.0 / mean_ms, c as u32) * 1000.0;
    let err = (measured_ms - theory_ms).abs() / theory_ms;
    eprintln!(
        "M/M/{c}: simulated {measured_ms:.3} ms, Erlang C {theory_ms:.3} ms, {:.2}% apart",
        err * 100.0
    );
    assert!(
        err < 0.02,
        "M/M/{c} at ρ = {:.2}: simulated mean {measured_ms:.3} ms vs Erlang C {theory_ms:.3} ms ({:.2}%)",
        rate * mean_ms / 1000.0 / c as f64,
        err * 100.0
    );
}

#[test]
fn formula_sanity() {
    // M/M/1: W = 1/(μ−λ).
    let w = erlang_c_mean_response(80.0, 100.0, 1);
    assert!((w - 0.05).abs() < 1e-12);
}

#[test]
fn mm4_matches_erlang_c() {
    // 4 workers of 10 ms mean at 300 req/s: ρ = 0.75, W ≈ 15.1 ms.
    check(4, 300.0, 10.0, 300_000, 11);
}

#[test]
fn mm1_matches_erlang_c() {
    // One worker of 5 ms mean at 120 req/s: ρ = 0.6, W = 12.5 ms.
    check(1, 120.0, 5.0, 250_000, 12);
}

#[test]
fn mm16_matches_erlang_c() {
    // 16 workers of 40 ms mean at 320 req/s: ρ = 0.8.
    check(16, 320.0, 40.0, 250_000, 13);
}

#[test]
fn a_network_adds_its_round_trip_to_every_request() {
    let mean_ms = |rtt_ms| {
        let s = mmc(2, 150.0, 10.0, 20_000, 14, rtt_ms);
        herd_sim::simulate(&s, 0).recorder.histogram().mean() / 1000.0
    };
    let (none, default, slow) = (mean_ms(0.0), mean_ms(0.2), mean_ms(5.0));
    // Same arrivals and service times, shifted by one hop on the way there: every latency
    // grows by exactly the round trip (the histogram keeps 3 significant digits).
    assert!((default - none - 0.2).abs() < 0.02, "{none} -> {default}");
    assert!((slow - none - 5.0).abs() < 0.05, "{none} -> {slow}");
}
