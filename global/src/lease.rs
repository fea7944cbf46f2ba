//! What a request holds of the global gate: its place in the queue while it waits, then its lease;
//! each given back when dropped.

use std::sync::Arc;

use crate::inner::{Inner, lock};

/// A place in the global queue, left (in the background) if the acquire ends without a lease.
pub(crate) struct Queued {
    pub(crate) inner: Arc<Inner>,
    pub(crate) id: String,
    pub(crate) armed: bool,
}

impl Queued {
    pub(crate) fn arm(&mut self) {
        if !self.armed {
            self.armed = true;
            lock(&self.inner.waiting).insert(self.id.clone());
        }
    }

    pub(crate) fn disarm(&mut self) {
        if self.armed {
            self.armed = false;
            lock(&self.inner.waiting).remove(&self.id);
        }
    }

    pub(crate) fn leave(&mut self) {
        if self.armed {
            self.disarm();
            self.inner.release(self.id.clone());
        }
    }
}

impl Drop for Queued {
    fn drop(&mut self) {
        self.leave();
    }
}

/// A global lease: given back when dropped (the worker drops it when the plugin call has
/// returned), renewed by the heartbeat until then.
#[must_use = "dropping a global lease gives it back at once"]
pub struct GlobalLease {
    pub(crate) inner: Arc<Inner>,
    pub(crate) id: String,
}

impl std::fmt::Debug for GlobalLease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GlobalLease").field("id", &self.id).finish()
    }
}

impl Drop for GlobalLease {
    fn drop(&mut self) {
        lock(&self.inner.held).remove(&self.id);
        self.inner.release(std::mem::take(&mut self.id));
    }
}
