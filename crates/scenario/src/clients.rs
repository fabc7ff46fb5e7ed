//! The real client libraries herd runs in another program, listed once.
//!
//! An external arm (`client = "node-undici"`) names a library that an adapter program
//! hosts and drives through the external-arm protocol (`docs/external-arm-protocol.md`).
//! Scenario validation needs the ids to refuse a typo, the launcher needs to know which
//! runtime starts which adapter, and the adapter has its own table of what it can run.
//! The ids used to be written in all three places; now [`EXTERNAL_CLIENTS`] is the one
//! list in Rust, and a test checks each adapter's table against it.
//!
//! An entry says what starts it ([`Runtime`]) and where its adapter lives, so a client
//! in another language is one more entry and one more `Runtime` variant, not another list.

use std::fmt;

/// The program that hosts an adapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Runtime {
    /// Node.js (`node`), with the packages of the adapter's `package-lock.json`.
    Node,
}

impl Runtime {
    /// The runtime's name, as messages and the docs write it.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Node => "node",
        }
    }
}

impl fmt::Display for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One client an adapter can run.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ExternalClient {
    /// The id a scenario writes (`client = "node-undici"`) and the adapter is given.
    pub id: &'static str,
    /// What the client is: the library and how the adapter configures it.
    pub description: &'static str,
    /// What starts the adapter.
    pub runtime: Runtime,
    /// The adapter's entry point, relative to the workspace root.
    pub adapter: &'static str,
}

/// The Node adapter's entry point.
pub const NODE_ADAPTER: &str = "adapters/node/arm.mjs";

/// Every external client herd can start.
pub const EXTERNAL_CLIENTS: &[ExternalClient] = &[
    ExternalClient {
        id: "node-undici",
        description: "undici's RetryAgent with its defaults (5 retries, 500 ms · 2^n capped at 30 s, no jitter, Retry-After honoured)",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "node-undici-fulljitter",
        description: "undici's RetryAgent with a full-jitter retry function",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "node-axios-retry",
        description: "axios + axios-retry with exponentialDelay: max(100 · 2^n, Retry-After) + up to 20%",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "node-axios-retry-nojitter",
        description: "axios + axios-retry with a retryDelay of 100 · 2^n, no jitter",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "node-axios-retry-fulljitter",
        description: "axios + axios-retry with a retryDelay drawn from [0, 100 · 2^n)",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
];

/// The external client called `id`.
pub fn external_client(id: &str) -> Option<&'static ExternalClient> {
    EXTERNAL_CLIENTS.iter().find(|c| c.id == id)
}

/// The ids of the clients `runtime` hosts, in registry order.
pub fn ids(runtime: Runtime) -> Vec<&'static str> {
    EXTERNAL_CLIENTS
        .iter()
        .filter(|c| c.runtime == runtime)
        .map(|c| c.id)
        .collect()
}

impl fmt::Display for ExternalClient {
    /// The id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_found() {
        for (i, c) in EXTERNAL_CLIENTS.iter().enumerate() {
            assert_eq!(external_client(c.id), Some(c));
            assert!(
                EXTERNAL_CLIENTS[..i].iter().all(|o| o.id != c.id),
                "{}",
                c.id
            );
            assert!(!c.id.contains(char::is_whitespace) && !c.description.is_empty());
        }
        assert_eq!(external_client("node-fetch"), None);
        assert_eq!(ids(Runtime::Node).len(), EXTERNAL_CLIENTS.len());
    }
}
