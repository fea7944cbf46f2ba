//! A global admission limit shared by many replicas, on Redis: at most `max_active` leases out
//! across every replica that shares a key, other requests waiting in one FIFO queue (ticket
//! order across replicas), each lease renewed by its replica's heartbeat and gone within its TTL
//! when the replica dies.
//!
//! Every acquire, release and renewal is one Lua script (`src/lua/`), run atomically by Redis,
//! with times from Redis' `TIME`, never a replica's clock. Waiters are woken by pub/sub when a
//! lease is released, and re-check their place at least every [`RECHECK_INTERVAL`]. Each call
//! has [`CALL_TIMEOUT`]; failures feed a circuit breaker; when Redis fails the request is admitted
//! on the local gate alone ([`FailureMode::Open`], counted) or refused ([`FailureMode::Closed`]):
//! never does a request hang on Redis.
//!
//! Redis is the one record of the leases out, so losing writes would let the limit be granted
//! twice over: the first script to find that Redis lost writes — the deployment's data gone
//! (restarted empty, flushed, or the deployment's first start), held by another Redis server than
//! the one that wrote it (restarted from a snapshot, failed over), or older than a point of its
//! history a replica saw — opens a grace of one lease TTL in which nothing new is granted, while
//! each replica's heartbeat asserts its running calls' leases again. A replica that
//! stalls past the TTL (stopped, starved) over-admits at most the leases it held, until those
//! calls end; an answer that reaches it later than its own timeout is not relied on.
//!
//! The promise of the local gate holds here too: a [`GlobalLease`] is given back only when it is
//! dropped — by the worker, once the plugin call has really returned.

mod breaker;
mod config;
mod error;
mod gate;
mod heartbeat;
mod inner;
mod keys;
mod lease;
mod outcome;
mod scripts;
mod status;

pub use config::{
    BREAKER_FAILURES, BREAKER_OPEN_FOR, CALL_TIMEOUT, FailureMode, GlobalConfig, RECHECK_INTERVAL,
};
pub use error::GlobalError;
pub use gate::GlobalGate;
pub use lease::GlobalLease;
pub use outcome::{GlobalPass, GlobalRefusal};
pub use status::{GlobalStatus, GlobalTotals};
