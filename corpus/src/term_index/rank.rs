//! Ranking a disjunction of phrases by FTS5's `bm25()`, term at a time into a reused
//! accumulator, keeping the best.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::index::{MAX_IDLE_SCRATCH, Scratch, TermIndex};
use super::tokens::Phrase;

impl TermIndex {
    /// The `limit` best documents for the disjunction of `phrases` (in query order; a phrase may
    /// repeat, as in FTS5), as (position, bm25 rank) with FTS5's sign (lower is better), best
    /// first, ties by position: what `ORDER BY bm25(docs, 0.0, 0.0, 4.0, 1.0) LIMIT limit`
    /// returns for `"t1" OR "t2 t3" OR …`.
    pub(crate) fn rank(&self, phrases: &[Phrase], limit: usize) -> Vec<(u32, f64)> {
        let documents = self.norm.len();
        if limit == 0 || documents == 0 {
            return Vec::new();
        }
        let mut scratch = self
            .scratch
            .lock()
            .ok()
            .and_then(|mut idle| idle.pop())
            .unwrap_or_else(|| Scratch {
                score: vec![0.0; documents],
                touched: Vec::new(),
            });
        let lists = self.lists(phrases);
        // Room for every posting, so a document is recorded without a branch: written at the
        // end, kept (the end moves on) only if its sum was still 0.0.
        let most = lists.iter().map(|p| p.docs.len()).sum::<usize>();
        let Scratch { score, touched } = &mut scratch;
        if touched.len() < most {
            touched.resize(most, 0);
        }
        let mut found = 0;
        for postings in &lists {
            // FTS5: idf = log((nRow - nHit + 0.5) / (nHit + 0.5)), at least 1e-6.
            let hits = postings.docs.len();
            let idf = (((documents - hits) as f64 + 0.5) / (hits as f64 + 0.5)).ln();
            let idf = if idf <= 0.0 { 1e-6 } else { idf };
            for (&doc, &part) in postings.docs.iter().zip(&postings.part) {
                let d = doc as usize;
                // FTS5 adds every phrase's term, in phrase order, to a sum starting at 0.0; a
                // phrase absent from the document adds exactly 0.0. Every posting's part is
                // above 0, so a touched document's sum is never 0.0.
                touched[found] = doc;
                found += usize::from(score[d] == 0.0);
                score[d] += idf * part;
            }
        }
        // The best `limit` by a bounded heap whose top is the worst kept: most documents are
        // turned away by one comparison.
        let mut best: BinaryHeap<Kept> = BinaryHeap::with_capacity(limit + 1);
        for &doc in &touched[..found] {
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
        let found: Vec<(u32, f64)> = best
            .into_sorted_vec()
            .into_iter()
            .map(|k| (k.doc, k.rank))
            .collect();
        if let Ok(mut idle) = self.scratch.lock()
            && idle.len() < MAX_IDLE_SCRATCH
        {
            idle.push(scratch);
        }
        found
    }
}

/// A document kept by [`TermIndex::rank`], ordered best first: by rank (lower is better), then
/// position.
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
