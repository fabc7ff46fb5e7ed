//! External arms: a real client library, in any language, driven through a small adapter
//! program that speaks herd's line protocol (v1, `docs/external-arm-protocol.md`).
//!
//! # Why a child process and not a schedule file
//!
//! herd keeps the open-loop schedule itself and tells the adapter, one stdin line per
//! logical request, *when* each is due; the adapter only starts it at once through the
//! library and answers when the library is done. So the arrival process, the seed and the
//! latency clock (intended send time to answer line) stay herd's, the same for replicas and
//! real clients, and the server-side counts stay the upstream's.
//!
//! # Why so much care about failure
//!
//! An adapter that crashes, prints garbage or goes silent must never look like a clean arm
//! with zero failures. Every way it can go wrong is an [`ExternalError`] naming the client
//! and carrying the tail of what the adapter printed on stderr, and every wait is bounded:
//! the handshake, each answer (a per-request deadline) and the final exit.
//!
//! - [`protocol`]: the wire types and their parsing, with line-numbered errors;
//! - [`ExternalArm`]: a running adapter (spawn, [`ExternalArm::send`],
//!   [`ExternalArm::recv`], [`ExternalArm::finish`], [`ExternalArm::stop`]);
//! - [`NodeAdapter`]: where the Node adapter lives and how to start one of its clients.

mod command;
mod error;
mod node;
mod process;
pub mod protocol;
mod tail;

pub use command::ArmCommand;
pub use error::ExternalError;
pub use node::{node_clients, NodeAdapter, NodeArmOptions};
pub use process::{Answered, ExternalArm, STOP_GRACE};
