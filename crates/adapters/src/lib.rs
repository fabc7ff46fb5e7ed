//! # herd-adapters
//!
//! External arms: a real client library, in any language, driven through a small adapter
//! program that speaks herd's line protocol (v1, `docs/external-arm-protocol.md`).
//!
//! # Why a crate of its own
//!
//! It is herd's extension point (bring your own client), with dependencies and failure
//! modes of its own: child processes and their process groups, the Node, Python and Go
//! adapters compiled in from `kits/` and set up on first use (npm, a virtual environment,
//! a Go build), and the line protocol. It needs nothing from the socket code: the driver
//! tells it when each request is due and where the upstream listens.
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
//! - [`Adapter`]: where the built-in Node, Python and Go adapters live (herd's cache, set
//!   up on first use from sources compiled into herd), and how to start one of their
//!   clients;
//! - [`command_arm`]: any other program, from a scenario's `client = { command = [...] }`.

mod adapter;
mod bundle;
mod command;
mod error;
mod process;
mod program;
pub mod protocol;
mod tail;

pub use adapter::{
    node_clients, Adapter, AdapterOptions, NodeAdapter, NodeArmOptions, ADAPTERS_ENV, ADAPTER_ENV,
};
pub use bundle::{cache_dir, CACHE_ENV};
pub use command::{ArmCommand, CA_FILE_ENV, RUNTIME_CA_ENVS};
pub use error::ExternalError;
pub use process::{Answered, ExternalArm, STOP_GRACE};
pub use program::command_arm;
