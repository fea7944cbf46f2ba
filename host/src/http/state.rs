use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::corpus::CorpusIndex;
use crate::gate::Gate;
use crate::plugin::{Allocator, Plugin, PluginSlot};
use crate::swap::HotSwap;

/// What the handlers share.
#[derive(Clone)]
pub struct AppState {
    /// The plugin serving `/retrieve`, replaceable at run time.
    pub plugins: Arc<PluginSlot>,
    /// Replaces the plugin (`/admin/plugin`); installs into `plugins`.
    pub swap: Arc<HotSwap>,
    /// Who may call `/admin/*` (and `/state` when listening beyond loopback).
    pub admin: Arc<AdminPolicy>,
    /// The corpus index the plugin's sessions read.
    pub corpus: Arc<CorpusIndex>,
    /// The runtime's instance allocator (reported by `/readyz`).
    pub allocator: Allocator,
    /// The admission gate every `/retrieve` passes.
    pub gate: Gate,
    request_ids: Arc<AtomicU64>,
}

impl AppState {
    /// State over a loaded plugin (in `swap`'s slot) and its corpus.
    pub fn new(
        swap: Arc<HotSwap>,
        corpus: Arc<CorpusIndex>,
        allocator: Allocator,
        gate: Gate,
        admin: AdminPolicy,
    ) -> Self {
        Self {
            plugins: Arc::clone(swap.slot()),
            swap,
            allocator,
            admin: Arc::new(admin),
            corpus,
            gate,
            request_ids: Arc::new(AtomicU64::new(1)),
        }
    }

    /// The plugin serving new requests now.
    pub fn plugin(&self) -> Arc<Plugin> {
        self.plugins.current().plugin
    }

    /// A process-unique id for a request, used to match a client's error with the server log.
    pub fn next_request_id(&self) -> u64 {
        self.request_ids.fetch_add(1, Ordering::Relaxed)
    }
}

/// Access to the admin surface. Without a token, admin endpoints answer only loopback peers.
#[derive(Debug, Clone, Default)]
pub struct AdminPolicy {
    /// The bearer token, if the operator set one. Never logged.
    pub token: Option<String>,
    /// `/state` needs admin access too (set when the server listens beyond loopback).
    pub protect_state: bool,
}

impl AdminPolicy {
    /// Whether a request from `peer` with this `Authorization` header value may pass.
    pub fn allows(&self, peer: std::net::IpAddr, authorization: Option<&str>) -> bool {
        match &self.token {
            Some(token) => authorization
                .and_then(|h| h.strip_prefix("Bearer "))
                .is_some_and(|given| {
                    use subtle::ConstantTimeEq;
                    // Constant time over the token's bytes: the comparison leaks nothing of it.
                    bool::from(given.as_bytes().ct_eq(token.as_bytes()))
                }),
            None => peer.is_loopback(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_policy() {
        let local: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let remote: std::net::IpAddr = "192.0.2.7".parse().unwrap();
        let open = AdminPolicy::default();
        assert!(open.allows(local, None));
        assert!(!open.allows(remote, None));
        assert!(!open.allows(remote, Some("Bearer anything")));
        let guarded = AdminPolicy {
            token: Some("s3cret".into()),
            protect_state: true,
        };
        assert!(guarded.allows(remote, Some("Bearer s3cret")));
        assert!(
            !guarded.allows(local, None),
            "a token, once set, is needed from loopback too"
        );
        assert!(!guarded.allows(local, Some("Bearer s3cre")));
        assert!(!guarded.allows(local, Some("Bearer s3cret2")));
        assert!(!guarded.allows(local, Some("s3cret")));
    }
}
