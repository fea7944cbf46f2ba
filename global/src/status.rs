//! This replica's counts and the global gate as `/state` shows it.

use std::sync::atomic::AtomicU64;

use serde::Serialize;

use crate::config::FailureMode;

/// Counts over this replica's life.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) granted: AtomicU64,
    pub(crate) queue_full: AtomicU64,
    pub(crate) wait_timeout: AtomicU64,
    pub(crate) unavailable: AtomicU64,
    pub(crate) failed_open: AtomicU64,
    pub(crate) renewals: AtomicU64,
    pub(crate) reasserted: AtomicU64,
    pub(crate) graces: AtomicU64,
    pub(crate) failures: AtomicU64,
    pub(crate) waited_us: AtomicU64,
}

/// The counts [`GlobalGate::status`] reports.
#[derive(Debug, Clone, Copy, Default, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GlobalTotals {
    /// Global leases this replica was granted.
    pub granted: u64,
    /// Refused: the global queue was full.
    pub queue_full: u64,
    /// Refused: the deadline passed while waiting for a global lease.
    pub wait_timeout: u64,
    /// Refused because Redis failed (`closed`).
    pub unavailable: u64,
    /// Admitted on the local gate alone because Redis failed (`open`).
    pub failed_open: u64,
    /// Lease renewals by the heartbeat.
    pub renewals: u64,
    /// Renewals that found their lease gone (expired, or Redis lost it) and asserted it again.
    pub reasserted: u64,
    /// Graces this replica opened: its call was the first to find that Redis lost writes — the
    /// deployment's data gone (Redis restarted empty or flushed, or the deployment's first start),
    /// held by another Redis server than before (a restart from a snapshot, a failover), or older
    /// than a point of its history this replica saw — so no new lease was granted for one lease
    /// TTL while the running calls' leases were asserted again.
    pub graces: u64,
    /// Redis calls that failed or timed out.
    pub failures: u64,
    /// Total time spent waiting for global leases, in microseconds.
    pub waited_us: u64,
}

/// The global gate as `/state` shows it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct GlobalStatus {
    /// The shared key.
    pub key: String,
    /// The global limit.
    pub max_active: u32,
    /// The global queue bound.
    pub max_waiting: u32,
    /// What happens when Redis fails.
    pub failure: FailureMode,
    /// Leases out across every replica (absent when Redis could not be asked).
    pub holders: Option<u64>,
    /// Requests waiting across every replica (absent when Redis could not be asked).
    pub waiting: Option<u64>,
    /// Milliseconds left of the grace after Redis was found to have lost writes (the deployment's
    /// first start, Redis restarted or failed over, or gone back to older data): no new lease is
    /// granted until it ends, while every replica asserts its running calls' leases again; 0 when
    /// none (absent when Redis could not be asked).
    pub grace_ms: Option<u64>,
    /// Of the leases, this replica's.
    pub this_replica: usize,
    /// Of the waiting requests, this replica's.
    pub this_replica_waiting: usize,
    /// Calls skip Redis now (too many failures in a row).
    pub circuit_open: bool,
    /// The last Redis failure, if any.
    pub last_error: Option<String>,
    /// Counts over this replica's life.
    pub totals: GlobalTotals,
}
