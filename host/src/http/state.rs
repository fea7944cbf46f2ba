use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use std::time::Duration;

use super::live::hub::{Hub, LiveConfig};
use crate::cache::Cache;
use crate::corpus::CorpusIndex;
use crate::gate::Gate;
use crate::metrics::Metrics;
use crate::plugin::{Allocator, Plugin, PluginSlot};
use crate::serve::EdgeLimits;
use crate::swap::HotSwap;
use turnstile_global::GlobalGate;

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
    /// Bounds on connections and request bodies.
    pub edge: EdgeLimits,
    /// When a running call counts as stuck for `/readyz` and `/healthz`.
    pub health: HealthPolicy,
    /// Log one line per completed request.
    pub access_log: bool,
    /// Connections open now (kept by the edge).
    pub connections: Arc<std::sync::atomic::AtomicUsize>,
    request_ids: Arc<AtomicU64>,
    /// What `/metrics` shows.
    pub metrics: Arc<Metrics>,
    /// The live view (`/events`, `/dashboard`).
    pub live: Arc<Hub>,
    /// The global limit shared with other replicas, if any (`--redis-url`).
    pub global: Option<GlobalGate>,
    /// Keeps a temporary cache directory (the index) alive as long as the server.
    _cache: Arc<Cache>,
}

/// The operator's rules the handlers apply.
#[derive(Debug, Clone)]
pub struct Policies {
    /// Who may call `/admin/*`.
    pub admin: AdminPolicy,
    /// Bounds on connections and bodies.
    pub edge: EdgeLimits,
    /// When a running call counts as stuck.
    pub health: HealthPolicy,
    /// Log one line per completed request.
    pub access_log: bool,
    /// Bounds of the live view.
    pub live: LiveConfig,
}

/// How long a lease may be held before the process reports it: a plugin call is never
/// interrupted, so a stuck one is made visible (and survivable by a restart) instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthPolicy {
    /// A lease held longer makes `/readyz` answer 503 `degraded`, so a load balancer stops
    /// sending traffic here.
    pub stuck_after: Duration,
    /// A lease held longer makes `/healthz` fail too, so an orchestrator's liveness probe
    /// restarts the process (the only thing that ends such a call). `None`: never.
    pub unhealthy_after: Option<Duration>,
}

impl AppState {
    /// State over a loaded plugin (in `swap`'s slot) and its corpus.
    pub fn new(
        swap: Arc<HotSwap>,
        corpus: Arc<CorpusIndex>,
        allocator: Allocator,
        gate: Gate,
        policies: Policies,
        cache: Arc<Cache>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self {
            plugins: Arc::clone(swap.slot()),
            swap,
            allocator,
            admin: Arc::new(policies.admin),
            corpus,
            gate,
            edge: policies.edge,
            health: policies.health,
            access_log: policies.access_log,
            connections: Arc::default(),
            request_ids: Arc::new(AtomicU64::new(1)),
            metrics,
            live: Arc::new(Hub::new(policies.live)),
            global: None,
            _cache: cache,
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
    /// Whether a request from `peer` with this `Authorization` header value may pass: `Bearer
    /// TOKEN`, or — for a browser, which cannot add a bearer header to a page or an
    /// `EventSource` — HTTP Basic with the token as the password (any user name).
    pub fn allows(&self, peer: std::net::IpAddr, authorization: Option<&str>) -> bool {
        match &self.token {
            Some(token) => authorization.and_then(given_token).is_some_and(|given| {
                use subtle::ConstantTimeEq;
                // Constant time over the token's bytes: the comparison leaks nothing of it.
                bool::from(given.as_bytes().ct_eq(token.as_bytes()))
            }),
            None => peer.is_loopback(),
        }
    }
}

/// The token an `Authorization` value carries: a bearer token, or a Basic password.
fn given_token(authorization: &str) -> Option<String> {
    if let Some(token) = authorization.strip_prefix("Bearer ") {
        return Some(token.to_owned());
    }
    use base64::Engine;
    let encoded = authorization.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    decoded
        .split_once(':')
        .map(|(_, password)| password.to_owned())
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
        // A browser's Basic credentials: any user, the token as password.
        assert!(
            guarded.allows(remote, Some("Basic b3BzOnMzY3JldA==")),
            "ops:s3cret"
        );
        assert!(
            guarded.allows(remote, Some("Basic OnMzY3JldA==")),
            ":s3cret"
        );
        assert!(
            !guarded.allows(remote, Some("Basic b3BzOnMzY3JldDI=")),
            "ops:s3cret2"
        );
        assert!(!guarded.allows(remote, Some("Basic s3cret")));
        assert!(!guarded.allows(remote, Some("Basic czNjcmV0")), "no colon");
    }
}
