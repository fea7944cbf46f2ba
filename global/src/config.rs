use std::time::Duration;

/// What to do when Redis cannot be reached (or answers too slowly).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FailureMode {
    /// Admit on the local gate alone, and count it.
    Open,
    /// Refuse with 503 `global_unavailable`.
    Closed,
}

/// The global limit's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalConfig {
    /// `redis://host:port[/db]`.
    pub url: String,
    /// Leases out at once across every replica sharing `key`.
    pub max_active: u32,
    /// Requests waiting for a global lease across every replica.
    pub max_waiting: u32,
    /// The name every replica of one deployment shares; all keys are under the hash tag
    /// `{key}`, so they live on one Redis Cluster slot.
    pub key: String,
    /// A lease (or a waiter) not renewed for this long is gone: a dead replica's permits come
    /// back within it plus one heartbeat.
    pub lease_ttl: Duration,
    /// What happens when Redis fails.
    pub failure: FailureMode,
}

/// How long one Redis call may take before it counts as a failure.
pub const CALL_TIMEOUT: Duration = Duration::from_millis(200);

/// A replica's oldest waiter re-checks its place at least this often, even without a wake-up
/// message; the others wait for their turn (the oldest is woken when a lease is released, and
/// the next one whenever a waiter's acquire ends).
pub const RECHECK_INTERVAL: Duration = Duration::from_millis(250);

/// Consecutive failures that open the circuit; until it opens, a waiter whose Redis call failed
/// asks again (one stall is not evidence), and only then does the failure mode (open or closed)
/// decide.
pub const BREAKER_FAILURES: u32 = 3;

/// How long an open circuit skips Redis before trying it again.
pub const BREAKER_OPEN_FOR: Duration = Duration::from_secs(1);

impl GlobalConfig {
    /// The heartbeat period: a third of the lease TTL.
    pub fn heartbeat(&self) -> Duration {
        self.lease_ttl / 3
    }
}
