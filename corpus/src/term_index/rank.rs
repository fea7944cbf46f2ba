//! Ranking a disjunction of phrases by FTS5's `bm25()`, with exactly the result of scoring every
//! matching document: by MaxScore over windows of documents on a large corpus
//! ([`max_score`](super::max_score)), and on a corpus small enough for a dense accumulator of one
//! score per document to stay in cache, by adding every posting term at a time into it, which is
//! then cheaper (the same result: the tests hold both to it, to the bit).

use std::collections::BinaryHeap;

use super::index::{List, TermIndex, idf};
use super::kept::Kept;
use super::max_score::{SLACK, Search};
use super::tokens::Phrase;

/// The most documents whose accumulator (8 bytes each) fits in a core's cache, about. Up to
/// this many, adding every posting term at a time into it costs less than MaxScore's work per
/// candidate (measured at 100,000 passages on the question mix, each way alone: 138 µs against
/// 238 µs, median); past it, every posting added is a cache miss and MaxScore costs less (at
/// 1,000,000: 1.1 ms against 1.9 ms).
pub(super) const CACHED_DOCUMENTS: usize = 1 << 17;

/// Idle accumulators kept for [`TermIndex::exhaustive`] (more are made when needed, and dropped
/// when returned beyond this many).
pub(super) const MAX_IDLE_SCRATCH: usize = 8;

impl TermIndex {
    /// The `limit` best documents for the disjunction of `phrases` (in query order; a phrase may
    /// repeat, as in FTS5), as (position, bm25 rank) with FTS5's sign (lower is better), best
    /// first, ties by position: what `ORDER BY bm25(docs, 0.0, 0.0, 4.0, 1.0) LIMIT limit`
    /// returns for `"t1" OR "t2 t3" OR …`.
    ///
    /// By MaxScore past [`CACHED_DOCUMENTS`] documents; up to that, every posting added term at
    /// a time, which is then cheaper. Both give the same result, to the bit. `None` when its
    /// phrases of several tokens would cost more than the phrase budget to make (FTS5 answers).
    pub(crate) fn rank(&self, phrases: &[Phrase], limit: usize) -> Option<Vec<(u32, f64)>> {
        if limit == 0 || self.norm.is_empty() {
            return Some(Vec::new());
        }
        let lists = self.lists(phrases)?;
        if self.norm.len() <= CACHED_DOCUMENTS && !forced_max_score() {
            return Some(self.exhaustive(&lists, limit));
        }
        let mut search = Search::new(&lists, self.norm.len(), limit, SLACK);
        search.seed();
        Some(search.run())
    }

    /// [`Self::rank`] by MaxScore whatever the lists, with pruning's slack given (the tests
    /// show that pruning with a bound below the truth loses documents).
    #[cfg(test)]
    pub(super) fn rank_with_slack(
        &self,
        phrases: &[Phrase],
        limit: usize,
        slack: f64,
    ) -> Vec<(u32, f64)> {
        if limit == 0 || self.norm.is_empty() {
            return Vec::new();
        }
        let lists = self.lists(phrases).expect("within the phrase budget");
        let mut search = Search::new(&lists, self.norm.len(), limit, slack);
        search.seed();
        search.run()
    }

    /// [`Self::rank`] by scoring every posting: the reference the tests hold MaxScore to.
    #[cfg(test)]
    pub(super) fn rank_exhaustive(&self, phrases: &[Phrase], limit: usize) -> Vec<(u32, f64)> {
        if limit == 0 || self.norm.is_empty() {
            return Vec::new();
        }
        let lists = self.lists(phrases).expect("within the phrase budget");
        self.exhaustive(&lists, limit)
    }

    /// Every posting of every list added term at a time (query order) into a dense accumulator
    /// (reused between calls), then the best by a bounded heap whose top is the worst kept.
    fn exhaustive(&self, lists: &[List<'_>], limit: usize) -> Vec<(u32, f64)> {
        let documents = self.norm.len();
        let mut score = self
            .scratch
            .lock()
            .ok()
            .and_then(|mut idle| idle.pop())
            .unwrap_or_else(|| vec![0.0; documents]);
        let mut touched = Vec::new();
        for list in lists {
            let idf = idf(documents, list.docs.len());
            for (&doc, &part) in list.docs.iter().zip(list.parts.iter()) {
                let d = doc as usize;
                // FTS5 adds every phrase's term, in phrase order, to a sum starting at 0.0;
                // every term is above 0, so a touched document's sum is never 0.0.
                if score[d] == 0.0 {
                    touched.push(doc);
                }
                score[d] += idf * part;
            }
        }
        let mut best: BinaryHeap<Kept> = BinaryHeap::with_capacity(limit + 1);
        for &doc in &touched {
            let kept = Kept {
                rank: -std::mem::take(&mut score[doc as usize]),
                doc,
            };
            if best.len() < limit {
                best.push(kept);
            } else if best.peek().is_some_and(|worst| kept < *worst) {
                best.pop();
                best.push(kept);
            }
        }
        if let Ok(mut idle) = self.scratch.lock()
            && idle.len() < MAX_IDLE_SCRATCH
        {
            idle.push(score);
        }
        sorted(best)
    }
}

/// The kept documents, best first, as (position, rank).
fn sorted(best: BinaryHeap<Kept>) -> Vec<(u32, f64)> {
    best.into_sorted_vec()
        .into_iter()
        .map(|k| (k.doc, k.rank))
        .collect()
}

#[cfg(test)]
thread_local! {
    /// Whether [`TermIndex::rank`] takes MaxScore on this thread whatever the corpus's size, so
    /// that a test compares the path of large corpora with FTS5 on a small one.
    pub(crate) static FORCE_MAX_SCORE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

#[cfg(test)]
fn forced_max_score() -> bool {
    FORCE_MAX_SCORE.get()
}

#[cfg(not(test))]
fn forced_max_score() -> bool {
    false
}
