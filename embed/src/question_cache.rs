//! The vectors of recent questions from a remote model, so that a question asked again costs no
//! request: at most `capacity` entries, the least recently used dropped first. An entry holds
//! its question (at most [`MAX_REMOTE_TEXT_BYTES`](super::remote::MAX_REMOTE_TEXT_BYTES)) and its
//! vector (4 bytes a dimension): 4,096 entries of a 768-dimension model hold at most 45 MiB,
//! about 15 MiB for questions of a few hundred bytes. Keyed by the text alone: one cache belongs
//! to one model.

use std::num::NonZeroUsize;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use lru::LruCache;

/// A bounded map from question to vector.
pub(crate) struct QuestionCache {
    entries: Option<Mutex<LruCache<String, Arc<[f32]>>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl QuestionCache {
    /// A cache of at most `capacity` questions (0: none kept).
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            entries: NonZeroUsize::new(capacity).map(|c| Mutex::new(LruCache::new(c))),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    /// The vector kept for `text`, if any (counted as a hit or a miss).
    pub(crate) fn get(&self, text: &str) -> Option<Vec<f32>> {
        let found = self
            .entries
            .as_ref()
            .and_then(|m| m.lock().ok()?.get(text).map(|v| v.to_vec()));
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Keeps `vector` for `text`, dropping the least recently used past the capacity.
    pub(crate) fn put(&self, text: &str, vector: &[f32]) {
        if let Some(Ok(mut entries)) = self.entries.as_ref().map(Mutex::lock) {
            entries.put(text.to_owned(), Arc::from(vector));
        }
    }

    /// (hits, misses, entries held).
    pub(crate) fn counts(&self) -> (u64, u64, usize) {
        let held = self
            .entries
            .as_ref()
            .and_then(|m| m.lock().ok().map(|e| e.len()))
            .unwrap_or(0);
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
            held,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_most_recent_and_counts() {
        let cache = QuestionCache::new(2);
        cache.put("a", &[1.0]);
        cache.put("b", &[2.0]);
        assert_eq!(cache.get("a"), Some(vec![1.0]));
        cache.put("c", &[3.0]);
        assert_eq!(cache.get("b"), None, "b was the least recently used");
        assert_eq!(cache.get("c"), Some(vec![3.0]));
        assert_eq!(cache.counts(), (2, 1, 2));
        let none = QuestionCache::new(0);
        none.put("a", &[1.0]);
        assert_eq!(none.get("a"), None);
    }
}
