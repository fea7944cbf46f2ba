//! Ranking a disjunction of phrases by MaxScore over windows of documents, as Lucene's
//! `MaxScoreBulkScorer` does: the long lists of common tokens are read only where a document
//! could still make the top `limit`, with exactly the result of scoring every matching document.
//!
//! The documents are taken in windows of [`WINDOW`] positions. In each window every phrase's
//! contribution to a document's score is at most its idf times the largest term-frequency part
//! of the list's blocks that overlap the window (every list keeps the largest part of each block
//! of [`BLOCK`] postings). Sorted by that bound, the phrases whose bounds sum below the
//! `limit`-th best score so far are *non-essential* in the window: a document found only in
//! their lists cannot make the top. The essential lists' postings in the window are added term
//! at a time into a window-sized accumulator (32 KiB: it stays in the core's cache), and only
//! the documents it holds are candidates, in position order: each is looked up in the
//! non-essential lists (galloping, largest bound first) only while its partial score plus their
//! remaining bounds could still make the top. A window where no document can is passed over with
//! one seek per list.
//!
//! A candidate that could make the top is scored exactly as FTS5 scores it: its phrases'
//! `idf × part`, added in query order to a sum starting at 0.0, so the `f64` is FTS5's to the
//! bit. Bounds and partial sums (added in another order) are compared with a relative slack
//! ([`SLACK`]) far above the rounding of a sum of at most 64 terms, so rounding never prunes a
//! document that ties or beats the `limit`-th. Documents come in position order, so a later one
//! enters the top only with a score strictly better than the `limit`-th (ties go to the lower
//! position, as in FTS5's `ORDER BY rank` over rowids).
//!
//! The threshold does not start from nothing ([`Search::seed`]): the exact scores of the
//! documents with the largest parts in the list of the largest bound, found among the postings
//! of that list's `limit` strongest blocks — not by copying the whole list.

use std::collections::BinaryHeap;

use super::index::{BLOCK, List, idf};
use super::kept::Kept;

/// The relative slack of every pruning comparison: a bound `u` prunes a document only when it is
/// below `(1 - SLACK) ×` the `limit`-th score. The rounding error of a sum of `n` positive
/// terms in any order is below `n × 2⁻⁵³` relative (about 7e-15 for 64 terms).
pub(super) const SLACK: f64 = 1e-9;

/// Positions per window: the accumulator (8 bytes a position) and its bitmap of touched
/// positions fit in a core's first-level cache. Lucene's inner window is the same 4,096.
pub(super) const WINDOW: u32 = 4096;

/// A non-essential list is read whole over a window (each posting tested against the live
/// candidates' bitmap) when it holds at most this many postings there per live candidate; past
/// that, each candidate is sought in it (galloping).
const MERGE_PER_CANDIDATE: usize = 8;

#[cfg(test)]
thread_local! {
    /// Candidates, look-ups of candidates in non-essential lists, documents scored exactly: for the measures.
    pub(super) static STATS: std::cell::RefCell<(usize, usize, usize)> =
        const { std::cell::RefCell::new((0, 0, 0)) };
}

/// The state of one MaxScore search over a query's lists.
pub(super) struct Search<'l, 'a> {
    lists: &'l [List<'a>],
    limit: usize,
    /// Per list (query order): its idf.
    idf: Vec<f64>,
    /// Per list: its first posting at or after the current window's start.
    cursor: Vec<usize>,
    /// Per list: its first posting at or after the current window's end.
    end: Vec<usize>,
    /// Per list: its next posting to look at for the window's exact scores (from `cursor`).
    probe: Vec<usize>,
    /// Per list: its bound in the current window (`idf ×` its blocks' largest part).
    bound: Vec<f64>,
    /// The lists with postings in the window, by bound ascending, and the sums of the bounds of
    /// the first `j` of them (`prefix[j]`); `order[..essential]` are non-essential.
    order: Vec<usize>,
    prefix: Vec<f64>,
    essential: usize,
    /// Per list (query order): its contribution to the current candidate (0.0 if absent: adding
    /// it changes no sum).
    contribution: Vec<f64>,
    /// The window's accumulator and its bitmap of touched positions (both all zero between
    /// windows).
    score: Vec<f64>,
    touched: Vec<u64>,
    /// The window's live candidates (positions from its start, ascending).
    alive: Vec<u16>,
    best: BinaryHeap<Kept>,
    /// The least bound that could still enter the top: a score the `limit`-th best is known to
    /// reach less the slack (minus infinity while there is none).
    cutoff: f64,
    slack: f64,
    /// Candidates, look-ups in non-essential lists, documents scored exactly: for the measures.
    #[cfg(test)]
    stats: (usize, usize, usize),
}

impl<'l, 'a> Search<'l, 'a> {
    pub(super) fn new(lists: &'l [List<'a>], documents: usize, limit: usize, slack: f64) -> Self {
        let n = lists.len();
        Self {
            lists,
            limit,
            idf: lists.iter().map(|l| idf(documents, l.docs.len())).collect(),
            cursor: vec![0; n],
            end: vec![0; n],
            probe: vec![0; n],
            bound: vec![0.0; n],
            order: Vec::with_capacity(n),
            prefix: Vec::with_capacity(n + 1),
            essential: 0,
            contribution: vec![0.0; n],
            score: vec![0.0; WINDOW as usize],
            touched: vec![0; WINDOW as usize / 64],
            alive: Vec::with_capacity(WINDOW as usize),
            best: BinaryHeap::with_capacity(limit + 1),
            cutoff: f64::NEG_INFINITY,
            slack,
            #[cfg(test)]
            stats: (0, 0, 0),
        }
    }

    /// Whether a document whose score is at most `bound` could still enter the top.
    fn could_enter(&self, bound: f64) -> bool {
        bound >= self.cutoff
    }

    /// The `limit`-th best score is known to reach `threshold`.
    fn raise(&mut self, threshold: f64) {
        self.cutoff = self.cutoff.max(threshold * (1.0 - self.slack));
    }

    /// A score the `limit`-th best reaches, found before the search: in the list of the largest
    /// bound, the `limit` postings with the largest parts among those of its `limit` strongest
    /// blocks (a selection over block maxima, not a copy of the list), each document scored
    /// exactly; the least of those scores. From the start, then, the lists of common tokens are
    /// only read where a document could make the top.
    pub(super) fn seed(&mut self) {
        let limit = self.limit;
        let Some(list) = self
            .lists
            .iter()
            .zip(&self.idf)
            .max_by(|(a, ai), (b, bi)| (*ai * a.max_part).total_cmp(&(*bi * b.max_part)))
            .map(|(list, _)| list)
        else {
            return;
        };
        if list.docs.len() < limit {
            return;
        }
        // Each of the `limit` blocks holds at least one posting: `limit` documents at least.
        let mut blocks: Vec<usize> = (0..list.blocks.len()).collect();
        if blocks.len() > limit {
            blocks.select_nth_unstable_by(limit - 1, |&a, &b| {
                list.blocks[b].total_cmp(&list.blocks[a])
            });
            blocks.truncate(limit);
        }
        let mut by_part: Vec<(f64, u32)> = blocks
            .iter()
            .flat_map(|&b| b * BLOCK..((b + 1) * BLOCK).min(list.docs.len()))
            .map(|p| (list.parts[p], list.docs[p]))
            .collect();
        by_part.select_nth_unstable_by(limit - 1, |a, b| b.0.total_cmp(&a.0));
        // The documents are distinct (a list holds a document once): the least of their exact
        // scores is a score `limit` documents reach.
        let least = by_part[..limit]
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
            .fold(f64::INFINITY, f64::min);
        self.raise(least);
    }

    /// The search, window by window: the kept documents, best first, as (position, rank).
    pub(super) fn run(mut self) -> Vec<(u32, f64)> {
        while let Some(start) = self.next_start() {
            if self.partition(start.saturating_add(WINDOW)) {
                self.accumulate(start);
                self.candidates(start);
            }
            self.cursor.clone_from(&self.end);
        }
        #[cfg(test)]
        STATS.with_borrow_mut(|s| {
            s.0 += self.stats.0;
            s.1 += self.stats.1;
            s.2 += self.stats.2;
        });
        self.best
            .into_sorted_vec()
            .into_iter()
            .map(|k| (k.doc, k.rank))
            .collect()
    }

    /// The next window's first position: the least next document among the lists, or `None`
    /// when they are all read (a gap between documents is never walked).
    fn next_start(&self) -> Option<u32> {
        self.lists
            .iter()
            .zip(&self.cursor)
            .filter_map(|(l, &c)| l.docs.get(c).copied())
            .min()
    }

    /// Finds every list's postings in the window ending before `end`, their bounds, and which
    /// lists are essential: whether any document of the window could enter the top.
    fn partition(&mut self, end: u32) -> bool {
        self.order.clear();
        for (i, list) in self.lists.iter().enumerate() {
            let (from, to) = (self.cursor[i], seek(&list.docs, self.cursor[i], end));
            self.end[i] = to;
            if to > from {
                let largest = list.blocks[from / BLOCK..=(to - 1) / BLOCK]
                    .iter()
                    .copied()
                    .fold(0.0, f64::max);
                self.bound[i] = self.idf[i] * largest;
                self.order.push(i);
            }
        }
        let bound = &self.bound;
        self.order
            .sort_unstable_by(|&a, &b| bound[a].total_cmp(&bound[b]));
        self.prefix.clear();
        self.prefix.push(0.0);
        for &i in &self.order {
            self.prefix
                .push(self.prefix[self.prefix.len() - 1] + self.bound[i]);
        }
        self.essential = 0;
        while self.essential < self.order.len()
            && !self.could_enter(self.prefix[self.essential + 1])
        {
            self.essential += 1;
        }
        self.essential < self.order.len()
    }

    /// The essential lists' postings in the window, term at a time, into the accumulator.
    fn accumulate(&mut self, start: u32) {
        for &i in &self.order[self.essential..] {
            let list = &self.lists[i];
            let idf = self.idf[i];
            let range = self.cursor[i]..self.end[i];
            for (&doc, &part) in list.docs[range.clone()].iter().zip(&list.parts[range]) {
                let at = (doc - start) as usize;
                self.score[at] += idf * part;
                self.touched[at / 64] |= 1 << (at % 64);
            }
        }
    }

    /// The window's candidates: the documents its essential lists hold. Each is looked up in
    /// the non-essential lists, largest bound first, only while its partial sum with their
    /// remaining bounds could make the top; those that still could are scored exactly and kept
    /// or not, in position order. The accumulator and its bitmap are left all zero.
    fn candidates(&mut self, start: u32) {
        self.alive.clear();
        let need = self.cutoff - self.prefix[self.essential];
        for word in 0..self.touched.len() {
            let mut bits = self.touched[word];
            while bits != 0 {
                let at = word * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                #[cfg(test)]
                {
                    self.stats.0 += 1;
                }
                if self.score[at] >= need {
                    self.alive.push(at as u16);
                } else {
                    self.score[at] = 0.0;
                    self.touched[word] &= !(1 << (at % 64));
                }
            }
        }
        for j in (0..self.essential).rev() {
            self.retain(self.cutoff - self.prefix[j + 1]);
            if self.alive.is_empty() {
                return;
            }
            self.add_non_essential(self.order[j], start);
        }
        self.retain(self.cutoff);
        self.probe.clone_from(&self.cursor);
        for k in 0..self.alive.len() {
            let at = usize::from(self.alive[k]);
            let partial = std::mem::take(&mut self.score[at]);
            self.touched[at / 64] = 0;
            // The threshold may have risen since.
            if partial >= self.cutoff {
                let doc = start + at as u32;
                let rank = -self.exact(doc);
                self.keep(Kept { rank, doc });
            }
        }
    }

    /// Drops the live candidates whose partial sum is below `need` (their accumulator zeroed,
    /// their bit cleared).
    fn retain(&mut self, need: f64) {
        let (score, touched) = (&mut self.score, &mut self.touched);
        self.alive.retain(|&at| {
            let at = usize::from(at);
            let keep = score[at] >= need;
            if !keep {
                score[at] = 0.0;
                touched[at / 64] &= !(1 << (at % 64));
            }
            keep
        });
    }

    /// Adds non-essential list `i`'s contributions to the window's live candidates: by reading
    /// its postings in the window against their bitmap when it holds few per candidate, else
    /// by seeking each candidate in it.
    fn add_non_essential(&mut self, i: usize, start: u32) {
        let list = &self.lists[i];
        let idf = self.idf[i];
        let range = self.cursor[i]..self.end[i];
        let (docs, parts) = (&list.docs[range.clone()], &list.parts[range]);
        #[cfg(test)]
        {
            self.stats.1 += self.alive.len();
        }
        if docs.len() <= MERGE_PER_CANDIDATE * self.alive.len() {
            for (&doc, &part) in docs.iter().zip(parts) {
                let at = (doc - start) as usize;
                if self.touched[at / 64] & (1 << (at % 64)) != 0 {
                    self.score[at] += idf * part;
                }
            }
        } else {
            let mut from = 0;
            for &at in &self.alive {
                let doc = start + u32::from(at);
                from = seek(docs, from, doc);
                if docs.get(from) == Some(&doc) {
                    self.score[usize::from(at)] += idf * parts[from];
                }
            }
        }
    }

    /// `doc`'s exact score: FTS5's sum, every phrase's term in query order, from 0.0 (a later
    /// document of the window than it was last asked for).
    fn exact(&mut self, doc: u32) -> f64 {
        #[cfg(test)]
        {
            self.stats.2 += 1;
        }
        for &i in &self.order {
            let list = &self.lists[i];
            let docs = &list.docs[..self.end[i]];
            let at = seek(docs, self.probe[i], doc);
            self.probe[i] = at;
            if docs.get(at) == Some(&doc) {
                self.contribution[i] = self.idf[i] * list.parts[at];
            }
        }
        let score = self.contribution.iter().fold(0.0, |sum, c| sum + c);
        self.contribution.fill(0.0);
        score
    }

    /// Keeps `kept` if it is among the `limit` best so far; the `limit`-th best, once there are
    /// `limit`, is a threshold.
    fn keep(&mut self, kept: Kept) {
        if self.best.len() < self.limit {
            self.best.push(kept);
        } else if self.best.peek().is_some_and(|worst| kept < *worst) {
            self.best.pop();
            self.best.push(kept);
        } else {
            return;
        }
        if self.best.len() == self.limit
            && let Some(worst) = self.best.peek()
        {
            self.raise(-worst.rank);
        }
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
