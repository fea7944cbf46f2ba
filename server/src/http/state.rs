//! What the handlers share: the server's parts and the operator's policies.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use turnstile_host::cache::Cache;
use turnstile_host::swap::HotSwap;
use turnstile_host::{Allocator, Plugin, PluginSlot};

use super::hosts::AllowedHosts;
use super::live::hub::{Hub, LiveConfig};
use super::policy::AdminPolicy;
use crate::admission::Admission;
use crate::edge::EdgeLimits;
use crate::metrics::Metrics;

/// What the handlers share: one pointer to [`SharedState`], so that the copy axum makes for
/// every middleware and handler of every request costs one reference count, not one per part.
/// Changed through `DerefMut` (before serving), a copy shared elsewhere is copied first
/// (`Arc::make_mut`), as changing a copy of the parts did.
#[derive(Clone)]
pub struct AppState(Arc<SharedState>);

impl std::ops::Deref for AppState {
    type Target = SharedState;

    fn deref(&self) -> &SharedState {
        &self.0
    }
}

impl std::ops::DerefMut for AppState {
    fn deref_mut(&mut self) -> &mut SharedState {
        Arc::make_mut(&mut self.0)
    }
}

/// The server's parts and the operator's policies, behind [`AppState`].
#[derive(Clone)]
pub struct SharedState {
    /// The plugin serving `/retrieve`, replaceable at run time.
    pub plugins: Arc<PluginSlot>,
    /// Replaces the plugin (`/admin/plugin`) or the corpus (`/admin/corpus`); installs into
    /// `plugins`.
    pub swap: Arc<HotSwap>,
    /// Who may call `/admin/*` (and `/state` when listening beyond loopback).
    pub admin: Arc<AdminPolicy>,
    /// The `Host` names every route answers to.
    pub hosts: Arc<AllowedHosts>,
    /// The runtime's instance allocator (reported by `/readyz`).
    pub allocator: Allocator,
    /// The gates every `/retrieve` passes (the local one, and the global one if replicas share a
    /// limit).
    pub admission: Admission,
    /// Bounds on connections and request bodies.
    pub edge: EdgeLimits,
    /// When a running call counts as stuck for `/readyz` and `/healthz`.
    pub health: HealthPolicy,
    /// Log one line per completed request.
    pub access_log: bool,
    /// Connections open now (kept by the edge).
    pub connections: Arc<std::sync::atomic::AtomicUsize>,
    request_ids: Arc<AtomicU64>,
    /// When the server started, in Unix seconds.
    started_unix: u64,
    /// What `/metrics` shows.
    pub metrics: Arc<Metrics>,
    /// The live view (`/events`, `/dashboard`).
    pub live: Arc<Hub>,
    /// The CA files outbound HTTPS trusts beside the compiled-in roots (`--outbound-ca-file`),
    /// as the operator named them: `/state` shows the paths, never what they hold.
    pub outbound_ca_files: Arc<[String]>,
    /// With traces on: whose `traceparent` a request's span takes as its parent.
    pub traces: Option<crate::traces::TraceIntake>,
    /// Keeps a temporary cache directory (the index) alive as long as the server.
    _cache: Arc<Cache>,
}

/// The operator's rules the handlers apply.
#[derive(Debug, Clone)]
pub struct Policies {
    /// Who may call `/admin/*`.
    pub admin: AdminPolicy,
    /// The `Host` names every route answers to.
    pub hosts: AllowedHosts,
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
    /// State over a loaded plugin and its corpus (in `swap`'s slot).
    pub fn new(
        swap: Arc<HotSwap>,
        allocator: Allocator,
        admission: Admission,
        policies: Policies,
        cache: Arc<Cache>,
        metrics: Arc<Metrics>,
    ) -> Self {
        Self(Arc::new(SharedState {
            plugins: Arc::clone(swap.slot()),
            swap,
            allocator,
            admin: Arc::new(policies.admin),
            hosts: Arc::new(policies.hosts),
            admission,
            edge: policies.edge,
            health: policies.health,
            access_log: policies.access_log,
            connections: Arc::default(),
            request_ids: Arc::new(AtomicU64::new(1)),
            started_unix: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            metrics,
            live: Arc::new(Hub::new(policies.live)),
            outbound_ca_files: Arc::new([]),
            traces: None,
            _cache: cache,
        }))
    }

    /// The same, showing `files` as the CA files outbound HTTPS trusts (read at start; no
    /// plugin or swap changes them).
    pub fn with_outbound_ca_files(mut self, files: Vec<String>) -> Self {
        self.outbound_ca_files = files.into();
        self
    }

    /// The same, with traces on: a request's span takes the `traceparent` of peers `intake`
    /// trusts as its parent.
    pub fn with_traces(mut self, intake: crate::traces::TraceIntake) -> Self {
        self.traces = Some(intake);
        self
    }

    /// The plugin serving new requests now.
    pub fn plugin(&self) -> Arc<Plugin> {
        self.plugins.current().plugin
    }

    /// When the server started, in Unix seconds.
    pub fn started_unix(&self) -> u64 {
        self.started_unix
    }

    /// A process-unique id for a request, used to match a client's error with the server log.
    pub fn next_request_id(&self) -> u64 {
        self.request_ids.fetch_add(1, Ordering::Relaxed)
    }
}
