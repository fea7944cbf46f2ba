//! For the `open_cost` benchmark only: where the time of opening a built index goes, step by
//! step, as [`crate::CorpusPool::new`] takes them (each step repeated here on its own connection,
//! so a step's time is its own).

use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::clusters::Clusters;
use super::disjunction::Tokenizer;
use super::error::CorpusError;
use super::index::CorpusIndex;
use super::reader::Reader;
use super::term_index::TermIndex;
use super::vectors::{self, DocVectors};

/// The time each step of loading `index` into memory takes, in the order a pool takes them:
/// `vectors` (read, clustered and quantised), of which `vectors read` (the rows alone) and
/// `clustering`; then `token weights`, `term index`, `tokenizer` and `ids`.
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
    let started = Instant::now();
    let values = read_vectors(&reader.conn).map_err(error)?;
    timed("  vectors read (rows alone)", started);
    let started = Instant::now();
    std::hint::black_box(Clusters::build(&values, model.dims()));
    timed("  clustering (alone)", started);
    drop(values);
    let started = Instant::now();
    let loaded = DocVectors::load(&reader.conn, model.dims()).map_err(error)?;
    timed("vectors (all of DocVectors::load)", started);
    let started = Instant::now();
    std::hint::black_box(vectors::load_weights(&reader.conn, model).map_err(error)?);
    timed("token weights", started);
    let started = Instant::now();
    std::hint::black_box(TermIndex::load(&reader.conn).map_err(error)?);
    timed("term index", started);
    let started = Instant::now();
    std::hint::black_box(Tokenizer::new().map_err(error)?);
    timed("tokenizer", started);
    let started = Instant::now();
    let ids: std::collections::HashSet<Box<str>> = (0..loaded.len())
        .filter_map(|i| loaded.document(i))
        .map(|(_, id, _)| Box::from(id))
        .collect();
    std::hint::black_box(ids);
    timed("ids", started);
    Ok(steps)
}

/// Every vector's values, row-major, as `DocVectors::load` reads them (without the join).
fn read_vectors(conn: &Connection) -> rusqlite::Result<Vec<f32>> {
    let mut stmt = conn.prepare("SELECT v FROM vectors ORDER BY doc")?;
    let mut rows = stmt.query([])?;
    let mut values = Vec::new();
    while let Some(row) = rows.next()? {
        values.extend(
            row.get_ref(0)?
                .as_blob()?
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
    }
    Ok(values)
}
