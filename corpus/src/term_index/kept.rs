//! A document kept among a ranking's best: ordered best first, by rank, then position.

use std::cmp::Ordering;

/// A document kept by [`TermIndex::rank`](super::TermIndex::rank), ordered best first: by rank
/// (lower is better), then position.
#[derive(Clone, Copy)]
pub(super) struct Kept {
    pub(super) rank: f64,
    pub(super) doc: u32,
}

impl Ord for Kept {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank
            .total_cmp(&other.rank)
            .then(self.doc.cmp(&other.doc))
    }
}

impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Kept {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Kept {}
