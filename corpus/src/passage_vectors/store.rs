//! The store itself: one SQLite file per model, a row per passage text (see the folder's
//! `mod.rs` for why and its bound).

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, params};
use sha2::{Digest, Sha256};

use crate::CorpusError;

/// The key of a passage: the sha256 of the text it is embedded from.
pub(crate) type PassageKey = [u8; 32];

/// The key of `text`.
pub(crate) fn key_of(text: &str) -> PassageKey {
    Sha256::digest(text.as_bytes()).into()
}

/// One model's stored passage vectors.
pub(crate) struct PassageStore {
    conn: Connection,
    path: PathBuf,
    dims: usize,
}

impl PassageStore {
    /// Opens (or creates) the store of the model with `fingerprint` and `dims` in `index_dir`.
    pub(crate) fn open(
        index_dir: &Path,
        fingerprint: &str,
        dims: usize,
    ) -> Result<Self, CorpusError> {
        let dir = index_dir.join("embeddings");
        std::fs::create_dir_all(&dir).map_err(|source| CorpusError::IndexIo {
            path: dir.clone(),
            source,
        })?;
        let short = fingerprint.get(..32).unwrap_or(fingerprint);
        let path = dir.join(format!("{short}.sqlite"));
        let error = |source| CorpusError::Index {
            path: path.clone(),
            source,
        };
        let conn = Connection::open(&path).map_err(error)?;
        conn.busy_timeout(std::time::Duration::from_secs(60))
            .map_err(error)?;
        conn.execute_batch(
            "PRAGMA journal_mode = WAL;
             PRAGMA synchronous = NORMAL;
             CREATE TABLE IF NOT EXISTS model (fingerprint TEXT NOT NULL, dims INTEGER NOT NULL);
             CREATE TABLE IF NOT EXISTS vectors (text BLOB PRIMARY KEY, v BLOB NOT NULL) WITHOUT ROWID;",
        )
        .map_err(error)?;
        let recorded: Option<(String, i64)> = conn
            .query_row("SELECT fingerprint, dims FROM model", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(error)?;
        match recorded {
            None => {
                conn.execute(
                    "INSERT INTO model (fingerprint, dims) VALUES (?1, ?2)",
                    params![fingerprint, dims as i64],
                )
                .map_err(error)?;
            }
            Some((f, d)) if f == fingerprint && d == dims as i64 => {}
            Some(_) => {
                return Err(CorpusError::Embedding(format!(
                    "{} holds the vectors of another model; remove it",
                    path.display()
                )));
            }
        }
        Ok(Self { conn, path, dims })
    }

    /// The file.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Dimensions of every vector held.
    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Whether a vector is held for `key`.
    pub(crate) fn contains(&self, key: &PassageKey) -> rusqlite::Result<bool> {
        self.conn
            .prepare_cached("SELECT 1 FROM vectors WHERE text = ?1")?
            .exists([&key[..]])
    }

    /// The vector held for `key`, as stored (little-endian f32).
    pub(crate) fn get_bytes(&self, key: &PassageKey) -> rusqlite::Result<Option<Vec<u8>>> {
        self.conn
            .prepare_cached("SELECT v FROM vectors WHERE text = ?1")?
            .query_row([&key[..]], |r| r.get(0))
            .optional()
    }

    /// Stores one batch's vectors in one transaction (committed when this returns).
    pub(crate) fn put_batch(&mut self, batch: &[(PassageKey, Vec<f32>)]) -> rusqlite::Result<()> {
        let tx = self.conn.transaction()?;
        {
            let mut insert =
                tx.prepare_cached("INSERT OR REPLACE INTO vectors (text, v) VALUES (?1, ?2)")?;
            for (key, vector) in batch {
                let blob: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
                insert.execute(params![&key[..], blob])?;
            }
        }
        tx.commit()
    }

    /// Vectors held.
    #[cfg(test)]
    pub(crate) fn len(&self) -> rusqlite::Result<u64> {
        self.conn
            .query_row("SELECT count(*) FROM vectors", [], |r| r.get::<_, i64>(0))
            .map(i64::unsigned_abs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_are_kept_per_text_and_per_model() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = PassageStore::open(dir.path(), "aa", 2).unwrap();
        let (a, b) = (key_of("a"), key_of("b"));
        store.put_batch(&[(a, vec![0.6, 0.8])]).unwrap();
        assert!(store.contains(&a).unwrap() && !store.contains(&b).unwrap());
        drop(store);
        let store = PassageStore::open(dir.path(), "aa", 2).unwrap();
        let bytes = store.get_bytes(&a).unwrap().unwrap();
        assert_eq!(bytes.len(), 8);
        assert_eq!(store.len().unwrap(), 1);
        // Another model has its own file; the same file under other dimensions is refused.
        let other = PassageStore::open(dir.path(), "bb", 2).unwrap();
        assert_eq!(other.len().unwrap(), 0);
        std::fs::rename(other.path(), dir.path().join("embeddings/cc.sqlite")).unwrap();
        assert!(PassageStore::open(dir.path(), "cc", 2).is_err());
        assert!(PassageStore::open(dir.path(), "aa", 3).is_err());
    }
}
