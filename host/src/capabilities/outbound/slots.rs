//! The requests in flight to each origin, bounded per runtime — that is, per process serving:
//! every plugin generation's calls share one cap per origin, so a swap does not give an
//! origin a second one. An origin is what is dialled — scheme, normalised host (lowercase, no
//! trailing dot) and port — never the guest's spelling of it (`API.example.com`,
//! `api.example.com.` and `api.example.com:443` are one origin).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

/// The per-origin semaphores of one runtime. Clones share them.
#[derive(Clone, Default)]
pub struct OriginSlots(Arc<Mutex<HashMap<String, Arc<Semaphore>>>>);

impl std::fmt::Debug for OriginSlots {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let origins = self.0.lock().map_or(0, |map| map.len());
        write!(f, "OriginSlots({origins} origins)")
    }
}

/// Two runtimes' slots are equal when they are the same slots.
impl PartialEq for OriginSlots {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for OriginSlots {}

impl OriginSlots {
    /// The semaphore of requests in flight to `origin` (its dialled key), `max` permits.
    /// Origins with nothing in flight are forgotten as new ones come, so the map stays as small
    /// as what is in flight.
    pub(super) fn of(&self, origin: &str, max: usize) -> Arc<Semaphore> {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = map.get(origin) {
            return Arc::clone(found);
        }
        map.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < max);
        let slots = Arc::new(Semaphore::new(max.max(1)));
        map.insert(origin.to_owned(), Arc::clone(&slots));
        slots
    }
}
