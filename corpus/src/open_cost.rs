//! For the `open_cost` benchmark only: where the time of opening a built index goes, step by
//! step, as [`crate::CorpusPool::new`] takes them (each step repeated here on its own, so a
//! step's time is its own).

use std::time::{Duration, Instant};

use super::disjunction::Tokenizer;
use super::error::CorpusError;
use super::index::CorpusIndex;
use super::inverted_file::InvertedFile;
use super::reader::Reader;
use super::term_index::TermIndex;
use super::vectors::{self, DocVectors};

/// The time each step of loading `index` into memory takes, in the order a pool takes them:
/// `vectors` (every document's id and title, and the inverted file or every vector), of which
/// `inverted file` alone; then `token weights`, `term index` and `tokenizer`.
pub fn load_steps(index: &CorpusIndex) -> Result<Vec<(&'static str, Duration)>, CorpusError> {
    let error = |source| CorpusError::Index {
        path: index.path.clone(),
        source,
    };
    let mut steps = Vec::new();
    let mut timed = |name, started: Instant| steps.push((name, started.elapsed()));
    let started = Instant::now();
    let reader = Reader::open(&index.path).map_err(error)?;
    let model = vectors::model()?;
    timed("connection and model", started);
    let documents = usize::try_from(index.documents).unwrap_or(usize::MAX);
    let started = Instant::now();
    std::hint::black_box(InvertedFile::load(&reader.conn, model.dims(), documents).map_err(error)?);
    timed("  inverted file (alone; none for a small corpus)", started);
    let started = Instant::now();
    std::hint::black_box(DocVectors::load(&reader.conn, model.dims(), &index.path).map_err(error)?);
    timed(
        "vectors (all of DocVectors::load: ids, titles, inverted file)",
        started,
    );
    let started = Instant::now();
    std::hint::black_box(vectors::load_weights(&reader.conn, model).map_err(error)?);
    timed("token weights", started);
    let started = Instant::now();
    std::hint::black_box(TermIndex::load(&reader.conn).map_err(error)?);
    timed("term index", started);
    let started = Instant::now();
    std::hint::black_box(Tokenizer::new().map_err(error)?);
    timed("tokenizer", started);
    Ok(steps)
}
