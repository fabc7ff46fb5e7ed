//! `herd scenarios`: what is embedded, and its TOML to start from.

use crate::cli::{ScenariosAction, ScenariosArgs};
use crate::fail::Fail;
use anyhow::anyhow;
use herd_scenario::embedded::{embedded, EMBEDDED};
use herd_scenario::parse;

pub fn run(a: ScenariosArgs) -> Result<(), Fail> {
    match a.action {
        None => {
            for e in EMBEDDED {
                let s = parse(e.toml, e.name).map_err(Fail::run)?;
                let first = s
                    .description
                    .split(". ")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .trim_end_matches('.');
                println!(
                    "{:<12} {} arms, {} requests at {} req/s. {first}.",
                    e.name,
                    s.arms.len(),
                    s.load.requests,
                    s.load.rate
                );
            }
            Ok(())
        }
        Some(ScenariosAction::Show { name }) => {
            let e = embedded(&name).ok_or_else(|| {
                let names: Vec<_> = EMBEDDED.iter().map(|e| e.name).collect();
                Fail::input(anyhow!(
                    "no embedded scenario `{name}` (embedded: {})",
                    names.join(", ")
                ))
            })?;
            print!("{}", e.toml);
            Ok(())
        }
    }
}
