//! The lab's settings: the gate's limits and the timings every case is built on.

/// The scenario's fixed settings (those of the reference lab).
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct Settings {
    /// `delay_ms` given to the delay fixture.
    pub delay_ms: u64,
    /// Gate `max_active`.
    pub max_active: usize,
    /// Gate `max_waiting`.
    pub max_waiting: usize,
    /// Gate wait deadline (ms) for the main scenario.
    pub wait_ms: u64,
    /// Gate wait deadline (ms) for the FIFO-promotion case.
    pub fifo_wait_ms: u64,
    /// The client read timeout of the `client_timeout` case (ms).
    pub client_timeout_ms: u64,
}

/// Runs of the overflow scenario at most, when the machine misses its 150 ms window (see
/// [`DriveReport::overflow_retries`]).
pub const OVERFLOW_ATTEMPTS: usize = 3;

/// The reference lab's settings.
pub const SETTINGS: Settings = Settings {
    delay_ms: 350,
    max_active: 1,
    max_waiting: 1,
    wait_ms: 150,
    fifo_wait_ms: 1000,
    client_timeout_ms: 100,
};
