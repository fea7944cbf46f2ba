use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use tokio::time::Instant;

use crate::config::{BREAKER_FAILURES, BREAKER_OPEN_FOR};

/// A circuit breaker over Redis calls: after [`BREAKER_FAILURES`] failures in a row it opens for
/// [`BREAKER_OPEN_FOR`] (calls skip Redis and fail at once), then lets calls try again.
#[derive(Debug, Default)]
pub(crate) struct Breaker {
    failures: AtomicU32,
    open_until: Mutex<Option<Instant>>,
}

impl Breaker {
    /// Whether calls should skip Redis now.
    pub(crate) fn is_open(&self) -> bool {
        let open_until = self.open_until.lock().unwrap_or_else(|p| p.into_inner());
        open_until.is_some_and(|until| Instant::now() < until)
    }

    pub(crate) fn success(&self) {
        self.failures.store(0, Ordering::Relaxed);
        *self.open_until.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }

    pub(crate) fn failure(&self) {
        if self.failures.fetch_add(1, Ordering::Relaxed) + 1 >= BREAKER_FAILURES {
            *self.open_until.lock().unwrap_or_else(|p| p.into_inner()) =
                Some(Instant::now() + BREAKER_OPEN_FOR);
        }
    }
}
