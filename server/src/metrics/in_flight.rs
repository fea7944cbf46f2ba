//! The outbound requests in flight, by origin: raised when one is sent, lowered when it ends.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Requests in flight, by origin.
#[derive(Debug, Default)]
pub struct InFlight(Mutex<BTreeMap<String, u64>>);

impl InFlight {
    pub(super) fn add(&self, origin: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *map.entry(origin.to_owned()).or_default() += 1;
    }

    pub(super) fn remove(&self, origin: &str) {
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(origin) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                map.remove(origin);
            }
        }
    }

    /// Now: each origin with requests in flight, and how many.
    pub fn now(&self) -> BTreeMap<String, u64> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}
