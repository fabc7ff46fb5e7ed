//! # herd-net
//!
//! herd on a real socket: the fault-injecting [`upstream`] (hyper 1.x, real TCP resets,
//! capacity with shedding, counts of everything it receives) and the open-loop [`driver`]
//! that offers a scenario's load through an arm's retry policy.

pub mod driver;
pub mod external;
pub mod fd_limit;
pub mod precise;
pub mod steal;
mod stop;
pub mod upstream;

pub use stop::{Stop, StopTrigger};
