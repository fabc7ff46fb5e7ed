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
    /// CPython 3 (`python3` with its `venv` module), in a virtual environment with the
    /// adapter's pinned `requirements.txt`.
    Python,
    /// Go (`go`), the adapter built in GOPATH mode against Debian's packaged libraries.
    Go,
}

impl Runtime {
    /// The runtime's name, as messages and the docs write it.
    pub fn name(self) -> &'static str {
        match self {
            Runtime::Node => "node",
            Runtime::Python => "python",
            Runtime::Go => "go",
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
pub const NODE_ADAPTER: &str = "crates/adapters/kits/node/arm.mjs";

/// The Python adapter's entry point.
pub const PYTHON_ADAPTER: &str = "crates/adapters/kits/python/arm.py";

/// The Go adapter's main package.
pub const GO_ADAPTER: &str = "crates/adapters/kits/go/main.go";

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
    ExternalClient {
        id: "node-opossum",
        description: "opossum's CircuitBreaker with its defaults (opens above 50% failures over 10 s, open 30 s, one probe) around an undici Agent, no retries",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "node-cockatiel",
        description: "cockatiel's README example: retry(handleAll, { maxAttempts: 3, backoff: new ExponentialBackoff() }) around circuitBreaker(handleAll, { halfOpenAfter: 10 s, breaker: new ConsecutiveBreaker(5) })",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    // Node retry packages
    ExternalClient {
        id: "node-got",
        description: "got 14 defaults: 2 retries, 1000 · 2^(n-1) ms + up to 100 ms, 408/413/429/5xx on idempotent methods, Retry-After honoured",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "node-ky",
        description: "ky 1 defaults around fetch: 2 retries, 300 · 2^(n-1) ms, no jitter, Retry-After honoured on 413/429/503",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "node-p-retry",
        description: "p-retry defaults around fetch (a response not ok thrown): 10 retries, 1000 · 2^(n-1) ms, no jitter",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "py-requests",
        description: "requests + urllib3 Retry(total=3, backoff_factor=0.5): 0, 1, 2 s, no jitter, Retry-After honoured",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    ExternalClient {
        id: "py-tenacity",
        description: "tenacity wait_random_exponential(multiplier=0.5, max=30), 4 attempts, around requests: U[0, 0.5 · 2^(n-1)] s",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    ExternalClient {
        id: "py-httpx-retries",
        description: "httpx + httpx-retries Retry(total=3, backoff_factor=0.5): full jitter U[0, 0.5 · 2^n] s, Retry-After honoured",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    ExternalClient {
        id: "py-httpx-retries-async",
        description: "py-httpx-retries on httpx.AsyncClient (asyncio); for correctness checks, not load",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    ExternalClient {
        id: "py-pybreaker",
        description: "pybreaker's CircuitBreaker() defaults (opens at 5 failures in a row, 60 s, calls run one at a time under its lock) around requests, no retries",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    // AWS SDK
    ExternalClient {
        id: "py-boto3-standard",
        description: "boto3/botocore S3 client (service = \"dynamodb\" for DynamoDB), retries={'mode': 'standard'}: 3 attempts (DynamoDB 4), U(0, 50 ms·2^(n-1)), U(0, 1 s·2^(n-1)) after a throttle, a 500-token quota at 14 per retry (5 per throttle) per client object",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    ExternalClient {
        id: "py-boto3-adaptive",
        description: "py-boto3-standard with retries={'mode': 'adaptive'}: after the first throttle, every attempt waits for a token from a CUBIC-controlled bucket (at least 0.5/s)",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    // Python retry packages
    ExternalClient {
        id: "py-stamina",
        description: "stamina's @stamina.retry(on=httpx.HTTPError) defaults around httpx: 10 attempts, min(5, 0.1 · 2^(n-1) + U(0, 1)) s",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    ExternalClient {
        id: "py-backoff",
        description: "backoff's @on_exception(expo, httpx.HTTPError) defaults around httpx: U(0, 2^(n-1)) s, retries forever",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    ExternalClient {
        id: "node-grpc-js",
        description: "@grpc/grpc-js client configured by the arm's service config (options.service_config), unary calls with raw bytes",
        runtime: Runtime::Node,
        adapter: NODE_ADAPTER,
    },
    ExternalClient {
        id: "py-grpcio",
        description: "grpcio (C-core) channel configured by the arm's service config (options.service_config), unary calls with raw bytes",
        runtime: Runtime::Python,
        adapter: PYTHON_ADAPTER,
    },
    ExternalClient {
        id: "go-retryablehttp",
        description: "hashicorp/go-retryablehttp defaults: 4 retries, 1 · 2^n s capped at 30 s (1, 2, 4, 8 s), no jitter, Retry-After honoured uncapped",
        runtime: Runtime::Go,
        adapter: GO_ADAPTER,
    },
    ExternalClient {
        id: "go-retryablehttp-jitter",
        description: "go-retryablehttp with LinearJitterBackoff: U[1 s, 30 s] · n",
        runtime: Runtime::Go,
        adapter: GO_ADAPTER,
    },
    ExternalClient {
        id: "go-resiliency",
        description: "eapache/go-resiliency's breaker.New(5, 1, 1 s) around net/http, no retries",
        runtime: Runtime::Go,
        adapter: GO_ADAPTER,
    },
    ExternalClient {
        id: "go-grpc",
        description: "grpc-go 1.33 ClientConn configured by the arm's service config (options.service_config, GRPC_GO_RETRY=on), unary calls with raw bytes",
        runtime: Runtime::Go,
        adapter: GO_ADAPTER,
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
        let per_runtime = [Runtime::Node, Runtime::Python, Runtime::Go].map(|r| ids(r).len());
        assert_eq!(per_runtime.iter().sum::<usize>(), EXTERNAL_CLIENTS.len());
        assert!(per_runtime.iter().all(|&n| n > 0));
    }
}
