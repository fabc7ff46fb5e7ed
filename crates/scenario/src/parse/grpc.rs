//! The checks for a gRPC replica arm (`policy = "grpc-core"`, `"grpc-js"`, `"grpc-go"`,
//! `"grpc-go-1.33"`): configured, as a gRPC user configures their channel, by a service
//! config (`options = { service_config = '''{"methodConfig": [...]}''' }`, or the same as a
//! TOML table), and by nothing else, so that herd runs the config unchanged.

use super::{under, Check, R};
use crate::model::{Arm, ArmClient};
use crate::raw::RawArm;
use crate::span::Seg;
use crate::strategy_spec;
use herd_retry::grpc::{replica, Implementation, ServiceConfig};

impl Check<'_> {
    /// A gRPC replica arm of implementation `imp`.
    pub(super) fn grpc_arm(&self, at: &[Seg], a: RawArm, imp: Implementation) -> R<Arm> {
        let k = |x| under(at, x);
        if let Some(knob) = super::first_knob(&a, &["policy", "deadline_ms", "breaker"]) {
            return Err(self.err(
                &k(knob),
                format!(
                    "a `{}` arm takes its retries, throttling and hedging from its service config (`options = {{ service_config = ... }}`), not from `{knob}`",
                    imp.name()
                ),
            ));
        }
        let config = match &a.options {
            None => ServiceConfig::default_call(),
            Some(table) => {
                if let Some(key) = table.keys().find(|key| *key != "service_config") {
                    return Err(self.err(
                        &k("options"),
                        format!(
                            "unknown key `{key}` (a gRPC replica's options hold `service_config`)"
                        ),
                    ));
                }
                let mut path = k("options");
                path.push(Seg::Key("service_config".into()));
                let parsed = match table.get("service_config") {
                    None => Ok(ServiceConfig::default_call()),
                    Some(toml::Value::String(json)) => ServiceConfig::parse(json),
                    Some(v) => serde_json::to_value(v)
                        .map_err(|e| herd_retry::grpc::ServiceConfigError::Json(e.to_string()))
                        .and_then(|v| ServiceConfig::from_value(&v)),
                };
                parsed.map_err(|e| self.err(&path, e.to_string()))?
            }
        };
        let r = replica(imp, &config);
        let mut strategy = r.strategy;
        if let Some(x) = a.deadline_ms {
            strategy.deadline = strategy_spec::deadline(x).map_err(|e| {
                let mut path = under(at, e.path[0]);
                path.extend(e.path[1..].iter().map(|p| Seg::Key((*p).to_owned())));
                self.err(&path, e.message)
            })?;
        }
        let breaker = (a.breaker.as_ref())
            .map(crate::guard_spec::breaker)
            .transpose()
            .map_err(|e| {
                let mut path = under(at, e.path[0]);
                path.extend(e.path[1..].iter().map(|p| Seg::Key((*p).to_owned())));
                self.err(&path, e.message)
            })?;
        Ok(Arm {
            id: a.id,
            client: ArmClient::Replica(strategy),
            consumers: None,
            options: None,
            hedge: r.hedge,
            breaker,
        })
    }
}
