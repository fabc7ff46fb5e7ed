//! What can go wrong before a search runs: every case is bad input, named by its flag.

use herd_scenario::ScenarioError;

/// A `herd tune` input that cannot be searched.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TuneError {
    /// `--vary` is not `KEY=VALUES`, or a value list is malformed.
    #[error("--vary {spec}: {why}")]
    Vary {
        /// The flag's value as given.
        spec: String,
        /// What is wrong with it.
        why: String,
    },
    /// A point's scenario does not validate (a value out of range for its key).
    #[error("--vary {key}={value}: {error}")]
    Point {
        /// The key.
        key: String,
        /// The value.
        value: String,
        /// The validation error, said in the message (so not also a `source()`: a reporter
        /// walking the chain would say it twice).
        error: Box<ScenarioError>,
    },
    /// The base scenario's text is not TOML (it validated once, so this is a bug or a
    /// file changed under us).
    #[error("the scenario's text cannot be re-read: {0}")]
    Text(String),
    /// `--arm` names no arm.
    #[error("--arm {0}: no such arm in the scenario")]
    NoArm(String),
    /// The chosen arm runs a real client, which the simulator cannot run.
    #[error("arm {0} runs a real client; herd tune searches the simulator, which runs herd's own policies")]
    RealClient(String),
    /// A limit is malformed.
    #[error("{flag} {value}: {why}")]
    Limit {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        why: String,
    },
}
