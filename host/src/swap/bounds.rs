//! How many swap candidates are checked at once: each costs a compile's (or a corpus's) CPU and
//! memory, and no lock is held meanwhile, so the number is bounded instead.

/// Candidates checked (compiled and smoke-checked) at once; one more is refused with
/// [`super::SwapError::Busy`]. Each costs a compile's CPU and memory; no lock is held meanwhile.
pub const MAX_CANDIDATES_CHECKED: usize = 2;

/// Corpora swapped out that requests admitted before their swap still read, beside the serving
/// one: a corpus swap while more are held is refused with
/// [`super::CorpusSwapError::MemoryHeld`], so at most this many + 2 corpora (the serving one and
/// a candidate) are ever in memory.
pub const MAX_RETIRED_CORPORA: usize = 1;

/// Corpus candidates loaded and checked at once; one more is refused with
/// [`super::CorpusSwapError::Busy`]. Each holds a whole corpus in memory (and may build its index), so
/// one at a time.
pub const MAX_CORPUS_CANDIDATES: usize = 1;
