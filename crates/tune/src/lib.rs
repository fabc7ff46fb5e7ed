//! # herd-tune
//!
//! `herd tune`: the question after "what does this configuration do?" is "so what should I
//! set?". herd answers it by searching its simulator, which runs the same policy objects as
//! production: vary the arm's keys (retries, base, jitter, budget, deadline, the consumers'
//! timeout rules), run each point on several seeds, keep the Pareto front over load, 1 s
//! peak, hard-fail and p99, and recommend the point that meets the user's limits on every
//! seed with the lowest load. Varying the scenario's own keys instead (an incident's length,
//! the workers, the rate) is a what-if sweep: every arm's figures as a function of the key,
//! which shows where a strategy tips over.
//!
//! - [`vary`]: `--vary KEY=VALUES`;
//! - [`space`]: points, written into the scenario's TOML and validated as a file would be;
//! - [`eval`]: points × seeds × arms in parallel, in a fixed order;
//! - [`search`]: grid or successive halving, the front, the recommendation;
//! - [`spread`]: figures over seeds as median and min–max;
//! - [`seeds`]: `herd sim|bench --seeds N`, one scenario over several seeds;
//! - [`verify`]: predicted against measured, for a scenario with a target;
//! - [`calibrate`]: the model of a real service fitted to a probe of it (`herd calibrate`);
//! - [`output`] and [`plot`]: `tune.json`, the summary, the SVG and HTML.

pub mod calibrate;
pub mod error;
pub mod eval;
pub mod output;
pub mod plot;
pub mod search;
pub mod seeds;
pub mod space;
pub mod spread;
pub mod vary;
pub mod verify;

pub use error::TuneError;
pub use output::{TuneReport, Tuned};
pub use search::{Limits, Verdict};
pub use seeds::SeedsReport;
pub use space::Space;
pub use spread::{Figure, Figures, Spread};
pub use vary::Vary;
