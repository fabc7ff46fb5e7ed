//! `herd calibrate`'s arithmetic: from a stepped no-retry probe of a real service to the
//! `[upstream]` model that reproduces it in the simulator.
//!
//! A tuner that searches a model which cannot fail recommends nothing worth having; a model
//! that fails where the service does makes the simulator's answers about the service. The
//! probe itself runs on sockets and lives with the command; everything here is pure: the
//! measured steps go in, candidate models are simulated on the same steps, and the one
//! closest to what was measured comes out, with the table that shows how close.
//!
//! - [`Step`]: one measured step (offered rate, throughput, p50/p99, rejections);
//! - [`fit()`]: candidates from closed forms (a token bucket rejects `(offered − rate) /
//!   offered` in steady state; workers ≈ throughput ceiling × service time; a queue
//!   lengthens the saturated p99 by `queue / workers` service times), refined on a grid
//!   in the simulator;
//! - [`report`]: measured vs simulated per step, as Markdown, JSON and SVG.

pub mod fit;
pub mod report;

pub use fit::{fit, Fit, Model, Probe, Step, StepFigures};
pub use report::FitReport;
