//! A large corpus's f32 vectors as one flat file beside its index, in the inverted file's list
//! order: what a question's candidates are scored with exactly, read by positional reads
//! (`pread`) — no SQL, no B-tree, no page cache of SQLite's — instead of a `SELECT` per vector.
//! Candidates of one list sit next to each other, so the pages a question touches are few.
//!
//! The file is `<index>.vectors`: row `r` (`dims` little-endian f32, `4 × dims` bytes) is the
//! vector of the document at position `order[r]` of the inverted file (`ivf.rs`). Written when
//! the index is built (from the `vectors` table, which stays: a corpus searched whole loads it,
//! and the recall benchmark scores it), covered by the index's checksum, removed with it by the
//! cache. Size: `4 × dims` bytes a document (1 GB at a million 256-dimension documents), on disk
//! only; a call reads `4 × dims` bytes a candidate it scores.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use rusqlite::Connection;

/// Where the flat vectors of the index at `index` are kept: `<index>.vectors`.
pub(crate) fn path_beside(index: &Path) -> PathBuf {
    let mut name = index.file_name().unwrap_or_default().to_owned();
    name.push(".vectors");
    index.with_file_name(name)
}

/// Writes the flat vectors of the index just built at `index` (its inverted file's list order)
/// to `out`; false, and nothing written, for an index without an inverted file (a corpus
/// searched whole keeps its vectors in memory).
pub(crate) fn write_for_index(index: &Path, dims: usize, out: &File) -> rusqlite::Result<bool> {
    let conn = Connection::open_with_flags(index, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut order = Vec::new();
    let mut stmt = conn.prepare("SELECT members FROM ivf ORDER BY list")?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        order.extend(
            row.get_ref(0)?
                .as_blob()?
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
    }
    if order.is_empty() {
        return Ok(false);
    }
    write(&conn, dims, &order, out)?;
    Ok(true)
}

/// Vectors written or read at once when the file is built.
const CHUNK_ROWS: usize = 4096;

/// Writes the `vectors` table of `conn` (rowid order, `dims` f32 each) to `out` in list order:
/// the vector of the document at position `order[r]` at row `r`. Every position below
/// `order.len()` must appear once in `order`.
pub(crate) fn write(
    conn: &Connection,
    dims: usize,
    order: &[u32],
    out: &File,
) -> rusqlite::Result<()> {
    let row_bytes = (dims * 4) as u64;
    let mut row_of = vec![u32::MAX; order.len()];
    for (row, &position) in order.iter().enumerate() {
        if let Some(slot) = row_of.get_mut(position as usize) {
            *slot = u32::try_from(row).unwrap_or(u32::MAX);
        }
    }
    let io = |e: std::io::Error| rusqlite::Error::ToSqlConversionFailure(Box::new(e));
    out.set_len(row_bytes * order.len() as u64).map_err(io)?;
    let mut stmt = conn.prepare("SELECT v FROM vectors ORDER BY doc")?;
    let mut rows = stmt.query([])?;
    let mut position = 0usize;
    // Runs of rows that are next to each other in the file are written together.
    let mut pending: Vec<(u32, Vec<u8>)> = Vec::with_capacity(CHUNK_ROWS);
    let flush = |pending: &mut Vec<(u32, Vec<u8>)>| -> std::io::Result<()> {
        pending.sort_unstable_by_key(|(row, _)| *row);
        let mut i = 0;
        while i < pending.len() {
            let mut j = i + 1;
            while j < pending.len() && pending[j].0 == pending[j - 1].0 + 1 {
                j += 1;
            }
            let run: Vec<u8> = pending[i..j]
                .iter()
                .flat_map(|(_, b)| b.iter().copied())
                .collect();
            out.write_all_at(&run, u64::from(pending[i].0) * row_bytes)?;
            i = j;
        }
        pending.clear();
        Ok(())
    };
    while let Some(row) = rows.next()? {
        let blob = row.get_ref(0)?.as_blob()?;
        let Some(&at) = row_of.get(position) else {
            return Err(corrupt("more vectors than documents"));
        };
        if blob.len() != dims * 4 || at == u32::MAX {
            return Err(corrupt("a vector of another size, or in no list"));
        }
        pending.push((at, blob.to_vec()));
        if pending.len() == CHUNK_ROWS {
            flush(&mut pending).map_err(io)?;
        }
        position += 1;
    }
    flush(&mut pending).map_err(io)?;
    if position != order.len() {
        return Err(corrupt("fewer vectors than documents"));
    }
    out.sync_all().map_err(io)
}

fn corrupt(what: &str) -> rusqlite::Error {
    rusqlite::Error::InvalidColumnType(0, what.into(), rusqlite::types::Type::Blob)
}

/// The flat vectors, open for positional reads (shared by every session: a `pread` needs no
/// lock).
#[derive(Debug)]
pub(crate) struct FlatVectors {
    file: File,
    dims: usize,
    rows: usize,
}

impl FlatVectors {
    /// Opens the flat vectors beside the index at `index`, which must hold `rows` rows of
    /// `dims` values.
    pub(crate) fn open(index: &Path, dims: usize, rows: usize) -> std::io::Result<Self> {
        let file = File::open(path_beside(index))?;
        let length = file.metadata()?.len();
        if length != (rows * dims * 4) as u64 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the flat vectors hold {length} bytes, not {} ({rows} rows of {dims})",
                    rows * dims * 4
                ),
            ));
        }
        Ok(Self { file, dims, rows })
    }

    /// Reads row `row` into `into` (`dims` values).
    pub(crate) fn read(
        &self,
        row: u32,
        into: &mut Vec<f32>,
        bytes: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        let row = row as usize;
        if row >= self.rows {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("row {row} of {}", self.rows),
            ));
        }
        bytes.resize(self.dims * 4, 0);
        self.file
            .read_exact_at(bytes, (row * self.dims * 4) as u64)?;
        into.clear();
        into.extend(
            bytes
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        Ok(())
    }
}
