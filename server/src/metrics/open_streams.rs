//! The streams open now: one count, raised when a stream opens and lowered when its guard drops
//! (sent to its end, or dropped with a client that left).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Streams open now.
#[derive(Debug, Default)]
pub struct OpenStreams(Arc<AtomicU64>);

impl OpenStreams {
    /// How many are open now.
    pub fn now(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    /// One more, until the returned guard drops.
    pub(super) fn open(&self) -> StreamOpen {
        self.0.fetch_add(1, Ordering::Relaxed);
        StreamOpen(Arc::clone(&self.0))
    }
}

/// One open stream: counted open until dropped.
#[derive(Debug)]
pub struct StreamOpen(Arc<AtomicU64>);

impl Drop for StreamOpen {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
