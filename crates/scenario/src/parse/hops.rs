//! The checks for `[[hops]]` (see [`crate::hop`]): a hop's `server` is checked as
//! `[upstream]` is and its `client` as a replica arm is, by the same functions, with the
//! hop's path in every message; what a hop cannot do yet is refused by name.

use super::{under, Check, R};
use crate::hop::Hop;
use crate::model::ArmClient;
use crate::raw::RawHop;
use crate::span::Seg;
use std::time::Duration;

impl Check<'_> {
    /// Every `[[hops]]` entry, in order from the edge down. `attempt_timeout` is the
    /// `[client]` one, which every hop's client uses too.
    pub(super) fn hops(&self, raw: Vec<RawHop>, attempt_timeout: Option<Duration>) -> R<Vec<Hop>> {
        let mut hops: Vec<Hop> = Vec::with_capacity(raw.len());
        for (i, h) in raw.into_iter().enumerate() {
            let at = vec![Seg::Key("hops".into()), Seg::Index(i)];
            if h.id.trim().is_empty() || h.id.contains(char::is_whitespace) {
                return Err(self.err(&under(&at, "id"), "must be a non-empty word without spaces"));
            }
            if h.id == "upstream" || hops.iter().any(|x| x.id == h.id) {
                return Err(self.err(
                    &under(&at, "id"),
                    format!("duplicate hop id `{}` (`upstream` names the bottom)", h.id),
                ));
            }
            let server_at = under(&at, "server");
            if h.server.target.is_some() {
                return Err(self.err(
                    &under(&server_at, "target"),
                    "a hop's server is simulated; only [upstream] can forward to a real target",
                ));
            }
            if let Some(key) = [
                ("tls", h.server.tls.is_some()),
                ("tls_cert", h.server.tls_cert.is_some()),
                ("tls_key", h.server.tls_key.is_some()),
            ]
            .iter()
            .find_map(|(key, set)| set.then_some(*key))
            {
                return Err(self.err(
                    &under(&server_at, key),
                    "a hop's server is simulated; only [upstream] serves TLS on a socket",
                ));
            }
            let server = self.upstream(&server_at, h.server)?;
            let client_at = under(&at, "client");
            let mut c = h.client;
            let refused = [
                (
                    "id",
                    !c.id.is_empty(),
                    "the hop's client takes the hop's id",
                ),
                (
                    "client",
                    c.client.is_some(),
                    "a hop's client is herd's replica of a policy (set `policy`)",
                ),
                (
                    "options",
                    c.options.is_some(),
                    "`options` go to a real client's adapter",
                ),
                (
                    "consumers",
                    c.consumers.is_some(),
                    "[consumers] apply to the arms only",
                ),
                (
                    "hedge",
                    c.hedge.is_some(),
                    "hedging at a hop does not run yet (hedge at the arms)",
                ),
                (
                    "breaker",
                    c.breaker.is_some(),
                    "breakers at a hop do not run yet (put the breaker on an arm)",
                ),
            ];
            if let Some((key, _, why)) = refused.iter().find(|(_, set, _)| *set) {
                return Err(self.err(&under(&client_at, key), *why));
            }
            c.id.clone_from(&h.id);
            let arm = self.arm(&client_at, c, attempt_timeout)?;
            let ArmClient::Replica(client) = arm.client else {
                return Err(self.err(&client_at, "a hop's client must run a `policy`"));
            };
            hops.push(Hop {
                id: h.id,
                server,
                client,
            });
        }
        Ok(hops)
    }
}
