//! Ranking a disjunction of phrases by FTS5's `bm25()`: document at a time with MaxScore, so the
//! long lists of common tokens are only looked into for documents that could still make the top
//! `limit`, with exactly the result of scoring every matching document.
//!
//! MaxScore: every phrase's contribution to a document's score is at most its idf times the
//! largest term-frequency part in its list. Sorted by that bound, the phrases whose bounds sum
//! below the `limit`-th best score so far are *non-essential*: a document found only in their
//! lists cannot make the top, so candidates come from the other (*essential*) lists alone, and
//! the non-essential lists are searched (galloping) for a candidate only while its partial score
//! plus their remaining bounds could still make it. A candidate that could is scored exactly as
//! FTS5 scores it: its phrases' `idf × part`, added in query order to a sum starting at 0.0, so
//! the `f64` is FTS5's to the bit. Bounds are compared with a relative slack ([`SLACK`]) far above
//! the rounding of a sum of at most 64 terms, so rounding never prunes a document that ties or
//! beats the `limit`-th. Documents come in position order, so a later one enters the top only
//! with a score strictly better than the `limit`-th (ties go to the lower position, as in FTS5's
//! `ORDER BY rank` over rowids).
//!
//! Two more prunings: the threshold starts from the exact scores of the best documents of the
//! strongest list ([`Search::seed`]), not from nothing; and block-max ([`Search::skip_window`]):
//! every list keeps the largest part of each block of 64 postings, so a run of documents whose
//! essential blocks cannot reach the top is skipped whole. On a corpus small enough for a dense
//! accumulator to stay in cache, adding every posting term at a time is cheaper, and
//! [`TermIndex::rank`] does that instead (the same result: the tests hold both to it).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use super::index::{BLOCK, List, TermIndex, idf};
use super::tokens::Phrase;

/// The relative slack of every pruning comparison: a bound `u` prunes a document only when
/// `u × (1 + SLACK)` is below the `limit`-th score. The rounding error of a sum of `n` positive
/// terms in any order is below `n × 2⁻⁵³` relative (about 7e-15 for 64 terms).
pub(super) const SLACK: f64 = 1e-9;

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
        let mut search = Search::new(&lists, self.norm.len(), SLACK);
        search.seed(limit);
        Some(self.max_score(search, limit))
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
        let mut search = Search::new(&lists, self.norm.len(), slack);
        search.seed(limit);
        self.max_score(search, limit)
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

    /// MaxScore, document at a time (see the module's doc).
    fn max_score(&self, mut search: Search<'_, '_>, limit: usize) -> Vec<(u32, f64)> {
        let mut best: BinaryHeap<Kept> = BinaryHeap::with_capacity(limit + 1);
        while let Some(doc) = search.next_candidate() {
            if search.skip_window(doc) {
                continue;
            }
            #[cfg(test)]
            STATS.with_borrow_mut(|s| s.0 += 1);
            let Some(score) = search.score(doc) else {
                continue;
            };
            let kept = Kept { rank: -score, doc };
            if best.len() < limit {
                best.push(kept);
            } else if best.peek().is_some_and(|worst| kept < *worst) {
                best.pop();
                best.push(kept);
            } else {
                continue;
            }
            if best.len() == limit
                && let Some(worst) = best.peek()
            {
                search.raise(-worst.rank);
            }
        }
        sorted(best)
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

#[cfg(test)]
thread_local! {
    /// Candidates, seeks into non-essential lists, documents scored exactly: for the measures.
    pub(super) static STATS: std::cell::RefCell<(usize, usize, usize)> =
        const { std::cell::RefCell::new((0, 0, 0)) };
}

/// The state of one MaxScore search over a query's lists.
struct Search<'l, 'a> {
    lists: &'l [List<'a>],
    /// Per list (query order): its idf.
    idf: Vec<f64>,
    /// The lists that match something, by bound (`idf × max_part`) ascending, and the sums of
    /// the bounds of the first `j` of them (`prefix[j]`).
    order: Vec<usize>,
    prefix: Vec<f64>,
    /// `order[..essential]` are non-essential.
    essential: usize,
    /// Per list in `order`: the next posting to read, and its document (`u32::MAX` past the
    /// end).
    cursor: Vec<usize>,
    head: Vec<u32>,
    /// Per list (query order): its contribution to the current candidate (0.0 if absent: adding
    /// it changes no sum).
    contribution: Vec<f64>,
    /// The last document of a window found not to be skippable ([`Self::skip_window`]).
    checked_until: Option<u32>,
    /// A score the `limit`-th best is known to reach, if any.
    threshold: Option<f64>,
    slack: f64,
}

impl<'l, 'a> Search<'l, 'a> {
    fn new(lists: &'l [List<'a>], documents: usize, slack: f64) -> Self {
        let idf: Vec<f64> = lists.iter().map(|l| idf(documents, l.docs.len())).collect();
        let bound: Vec<f64> = lists
            .iter()
            .zip(&idf)
            .map(|(l, idf)| idf * l.max_part)
            .collect();
        let mut order: Vec<usize> = (0..lists.len())
            .filter(|&i| !lists[i].docs.is_empty())
            .collect();
        order.sort_by(|&a, &b| bound[a].total_cmp(&bound[b]));
        let mut prefix = Vec::with_capacity(order.len() + 1);
        prefix.push(0.0);
        for &i in &order {
            prefix.push(prefix[prefix.len() - 1] + bound[i]);
        }
        let head = order.iter().map(|&i| lists[i].docs[0]).collect();
        Self {
            lists,
            idf,
            cursor: vec![0; order.len()],
            head,
            order,
            prefix,
            essential: 0,
            checked_until: None,
            contribution: vec![0.0; lists.len()],
            threshold: None,
            slack,
        }
    }

    /// Whether a document whose score is at most `bound` could still enter the top.
    fn could_enter(&self, bound: f64) -> bool {
        self.threshold
            .is_none_or(|t| bound * (1.0 + self.slack) >= t)
    }

    /// The `limit`-th best score is known to reach `threshold`: lists whose bounds, with those
    /// of every list below them, cannot reach it become non-essential.
    fn raise(&mut self, threshold: f64) {
        if self.threshold.is_some_and(|t| t >= threshold) {
            return;
        }
        self.threshold = Some(threshold);
        while self.essential < self.order.len()
            && !self.could_enter(self.prefix[self.essential + 1])
        {
            self.essential += 1;
        }
    }

    /// A score the `limit`-th best reaches, found before the search: the exact scores of the
    /// `limit` documents with the largest contributions in the list of the largest bound (every
    /// list searched for them), the `limit`-th of them. From the start, then, the lists of
    /// common tokens are only searched for documents that could make the top.
    fn seed(&mut self, limit: usize) {
        let Some(&top) = self.order.last() else {
            return;
        };
        let list = &self.lists[top];
        if list.docs.len() < limit {
            return;
        }
        let mut by_part: Vec<(f64, u32)> = list
            .docs
            .iter()
            .zip(list.parts.iter())
            .map(|(&d, &part)| (part, d))
            .collect();
        by_part.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
        let mut scores: Vec<f64> = by_part[..limit]
            .iter()
            .map(|&(_, doc)| {
                self.lists
                    .iter()
                    .zip(&self.idf)
                    .map(|(l, idf)| match l.docs.binary_search(&doc) {
                        Ok(at) => idf * l.parts[at],
                        Err(_) => 0.0,
                    })
                    .fold(0.0, |sum, c| sum + c)
            })
            .collect();
        scores.sort_unstable_by(f64::total_cmp);
        self.raise(scores[0]);
    }

    /// Block-max: the window from `doc` to the end of the first block to end among the essential
    /// lists' current blocks holds, in every essential list, only postings of its current
    /// block. When the largest parts of those blocks with the bounds of the non-essential lists
    /// cannot reach the top, no document in the window can: every essential list moves past it,
    /// and this says so.
    #[inline(always)]
    fn skip_window(&mut self, doc: u32) -> bool {
        if self.threshold.is_none() || self.checked_until.is_some_and(|until| doc <= until) {
            return false;
        }
        let mut end = u32::MAX;
        for j in self.essential..self.order.len() {
            if self.head[j] != u32::MAX {
                let docs = &self.lists[self.order[j]].docs;
                let last = ((self.cursor[j] / BLOCK + 1) * BLOCK).min(docs.len()) - 1;
                end = end.min(docs[last]);
            }
        }
        let mut bound = self.prefix[self.essential];
        for j in self.essential..self.order.len() {
            if self.head[j] <= end {
                let i = self.order[j];
                bound += self.idf[i] * self.lists[i].blocks[self.cursor[j] / BLOCK];
            }
        }
        if self.could_enter(bound) {
            self.checked_until = Some(end);
            return false;
        }
        for j in self.essential..self.order.len() {
            if self.head[j] <= end {
                let docs = &self.lists[self.order[j]].docs;
                self.cursor[j] = seek(docs, self.cursor[j], end.saturating_add(1));
                self.head[j] = docs.get(self.cursor[j]).copied().unwrap_or(u32::MAX);
            }
        }
        true
    }

    /// The next document (ascending) in some essential list, or `None` when they are all read.
    fn next_candidate(&self) -> Option<u32> {
        let doc = self.head[self.essential..].iter().copied().min()?;
        (doc != u32::MAX).then_some(doc)
    }

    /// Reads `doc` from every list: its exact score (FTS5's sum, in query order), or `None` as
    /// soon as its bound shows it cannot enter the top.
    ///
    /// Inlined into MaxScore's loop, its one caller: left a call of its own (as an unrelated
    /// change to the crate once made the compiler do), `rank` took 25 % longer at a million
    /// passages (2.9 → 3.6 ms a call).
    #[inline(always)]
    fn score(&mut self, doc: u32) -> Option<f64> {
        let mut partial = 0.0;
        for j in self.essential..self.order.len() {
            if self.head[j] == doc {
                let (i, at) = (self.order[j], self.cursor[j]);
                let list = &self.lists[i];
                let c = self.idf[i] * list.parts[at];
                self.contribution[i] = c;
                partial += c;
                self.cursor[j] = at + 1;
                self.head[j] = list.docs.get(at + 1).copied().unwrap_or(u32::MAX);
            }
        }
        // The non-essential lists, largest bound first, while the document could still enter.
        let mut alive = true;
        for j in (0..self.essential).rev() {
            if !self.could_enter(partial + self.prefix[j + 1]) {
                alive = false;
                break;
            }
            let i = self.order[j];
            let list = &self.lists[i];
            #[cfg(test)]
            STATS.with_borrow_mut(|s| s.1 += 1);
            let at = seek(&list.docs, self.cursor[j], doc);
            self.cursor[j] = at;
            if list.docs.get(at) == Some(&doc) {
                let c = self.idf[i] * list.parts[at];
                self.contribution[i] = c;
                partial += c;
            }
        }
        #[cfg(test)]
        STATS.with_borrow_mut(|s| s.2 += usize::from(alive && self.could_enter(partial)));
        let score = (alive && self.could_enter(partial)).then(|| {
            // FTS5's sum: every phrase's term in query order, from 0.0.
            self.contribution.iter().fold(0.0, |sum, c| sum + c)
        });
        self.contribution.fill(0.0);
        score
    }
}

/// The first index at or after `from` whose document is at least `target` (galloping, then a
/// binary search).
fn seek(docs: &[u32], from: usize, target: u32) -> usize {
    let (mut low, mut high, mut step) = (from, from, 1);
    while high < docs.len() && docs[high] < target {
        low = high + 1;
        high += step;
        step *= 2;
    }
    let high = high.min(docs.len());
    low + docs[low..high].partition_point(|&d| d < target)
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
