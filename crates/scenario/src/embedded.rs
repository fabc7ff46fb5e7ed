//! Scenarios compiled into the binary from this crate's `scenarios/*.toml`, and the one
//! function that turns a user's SCENARIO argument (a path or an embedded name) into a
//! [`Scenario`].

use crate::error::ScenarioError;
use crate::model::Scenario;
use crate::parse::parse;
use std::path::Path;

/// An embedded scenario: its name and TOML text.
pub struct Embedded {
    /// The name `herd bench NAME` accepts.
    pub name: &'static str,
    /// The TOML source, as shipped in `scenarios/`.
    pub toml: &'static str,
}

/// Every embedded scenario, in the order `herd scenarios` lists them.
pub const EMBEDDED: &[Embedded] = &[
    Embedded {
        name: "seed",
        toml: include_str!("../scenarios/seed.toml"),
    },
    Embedded {
        name: "seed-quick",
        toml: include_str!("../scenarios/seed-quick.toml"),
    },
    Embedded {
        name: "metastable",
        toml: include_str!("../scenarios/metastable.toml"),
    },
    Embedded {
        name: "incident",
        toml: include_str!("../scenarios/incident.toml"),
    },
    Embedded {
        name: "peers",
        toml: include_str!("../scenarios/peers.toml"),
    },
    Embedded {
        name: "internet",
        toml: include_str!("../scenarios/internet.toml"),
    },
    Embedded {
        name: "polyglot",
        toml: include_str!("../scenarios/polyglot.toml"),
    },
    Embedded {
        name: "brownout",
        toml: include_str!("../scenarios/brownout.toml"),
    },
    Embedded {
        name: "breakers",
        toml: include_str!("../scenarios/breakers.toml"),
    },
    Embedded {
        name: "breakers-real",
        toml: include_str!("../scenarios/breakers-real.toml"),
    },
    Embedded {
        name: "chain",
        toml: include_str!("../scenarios/chain.toml"),
    },
    Embedded {
        name: "chain-budget",
        toml: include_str!("../scenarios/chain-budget.toml"),
    },
    Embedded {
        name: "aws",
        toml: include_str!("../scenarios/aws.toml"),
    },
    Embedded {
        name: "sdks",
        toml: include_str!("../scenarios/sdks.toml"),
    },
    Embedded {
        name: "capped-waits",
        toml: include_str!("../scenarios/capped-waits.toml"),
    },
    Embedded {
        name: "grpc",
        toml: include_str!("../scenarios/grpc.toml"),
    },
];

/// Looks up an embedded scenario by name.
pub fn embedded(name: &str) -> Option<&'static Embedded> {
    EMBEDDED.iter().find(|e| e.name == name)
}

/// A loaded scenario with the text it came from (reports embed the text).
pub struct Loaded {
    /// The validated scenario.
    pub scenario: Scenario,
    /// Where it came from: a path, or `embedded:NAME`.
    pub origin: String,
    /// The TOML text.
    pub text: String,
}

/// Loads `spec`: an existing file path wins; otherwise an embedded name.
pub fn load(spec: &str) -> Result<Loaded, ScenarioError> {
    let path = Path::new(spec);
    if path.is_file() {
        let text = std::fs::read_to_string(path).map_err(|error| ScenarioError::Io {
            path: spec.to_owned(),
            error,
        })?;
        let scenario = parse(&text, spec)?;
        return Ok(Loaded {
            scenario,
            origin: spec.to_owned(),
            text,
        });
    }
    if let Some(e) = embedded(spec) {
        let origin = format!("embedded:{}", e.name);
        let scenario = parse(e.toml, &origin)?;
        return Ok(Loaded {
            scenario,
            origin,
            text: e.toml.to_owned(),
        });
    }
    if spec.contains('/') || spec.ends_with(".toml") || path.exists() {
        let error = std::fs::read_to_string(path)
            .err()
            .unwrap_or_else(|| std::io::Error::other("not a regular file"));
        return Err(ScenarioError::Io {
            path: spec.to_owned(),
            error,
        });
    }
    Err(ScenarioError::NotFound {
        spec: spec.to_owned(),
        embedded: EMBEDDED.iter().map(|e| e.name).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_scenario_is_valid() {
        for e in EMBEDDED {
            let l = load(e.name).unwrap_or_else(|err| panic!("{}: {err}", e.name));
            assert_eq!(l.scenario.name, e.name);
        }
    }

    #[test]
    fn seed_has_the_six_arms() {
        let ids: Vec<_> = load("seed")
            .unwrap()
            .scenario
            .arms
            .into_iter()
            .map(|a| a.id)
            .collect();
        assert_eq!(
            ids,
            [
                "no-retry",
                "naive",
                "axios-exp-nojitter",
                "axios-exp-fulljitter",
                "undici",
                "undici-fulljitter"
            ]
        );
    }

    #[test]
    fn unknown_names_and_paths() {
        assert!(matches!(load("nope"), Err(ScenarioError::NotFound { .. })));
        assert!(matches!(
            load("/no/such.toml"),
            Err(ScenarioError::Io { .. })
        ));
    }
}
