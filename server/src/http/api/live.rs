//! The live view's messages (`GET /events`) and its counts (in `/state`).

use serde::Serialize;
use turnstile_gate::{Event, FlowSnapshot, LeaseSnapshot, Totals};
use utoipa::ToSchema;

use super::retrieval::PluginBody;

/// The data of an `events` message.
#[derive(Debug, Serialize)]
pub struct EventsBody<'a> {
    /// Events that came before these and are no longer retained (the watcher missed them).
    pub missed: u64,
    /// New gate events, oldest first.
    pub events: &'a [Event],
}

/// The data of a `snapshot` message: the gate now, the serving plugin, what counts as stuck.
#[derive(Debug, Serialize)]
pub struct LiveSnapshot {
    /// When it was taken, in milliseconds since the Unix epoch (the server's clock).
    pub at_ms: u64,
    /// The order of the newest gate event when it was taken.
    pub last_event: u64,
    /// Leases out.
    pub active: usize,
    /// Requests waiting.
    pub waiting: usize,
    /// Configured bound on leases.
    pub max_active: usize,
    /// Configured bound on waiters.
    pub max_waiting: usize,
    /// Configured wait deadline, in seconds.
    pub wait_seconds: f64,
    /// The gate's counts over its life.
    pub totals: Totals,
    /// Leases whose client is gone while their work still runs.
    pub client_gone: usize,
    /// The oldest leases (at most `MAX_LIVE_LEASES`), oldest first.
    pub leases: Vec<LeaseSnapshot>,
    /// A lease held longer is stuck (`--stuck-after-ms`).
    pub stuck_after_ms: u64,
    /// The plugin serving new requests.
    pub plugin: PluginBody,
    /// Streams open now.
    pub subscribers: usize,
    /// Streamed answers (`POST /v1/chat/completions` with `stream`) being sent now.
    pub streams_open: u64,
    /// With flows on: the busiest live flows (at most `MAX_LIVE_FLOWS`); absent otherwise.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowSnapshot>,
}

/// How the live view is doing, for `/state`.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
pub struct LiveBody {
    /// `/events` streams open now.
    pub subscribers: usize,
    /// At most this many at once (`--max-subscribers`).
    pub max_subscribers: usize,
    /// Streams dropped because their reader stopped reading, over the server's life.
    pub dropped: u64,
}
