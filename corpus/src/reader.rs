//! A pooled, read-only SQLite connection: opened read-only by construction, and with a deadline
//! on every query it runs (SQLite's progress handler stops a statement past its budget).

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::{Connection, ErrorCode, OpenFlags};

use super::error::CorpusError;
use super::limits::SessionLimits;

/// A pooled read-only connection and the deadline of the call running on it.
pub(crate) struct Reader {
    pub(crate) conn: Connection,
    pub(crate) deadline: Arc<CallDeadline>,
}

impl Reader {
    /// Runs one query within [`SessionLimits::CALL_TIME_BUDGET`]: past it, SQLite stops the
    /// statement and the query fails with [`CorpusError::TimedOut`].
    pub(crate) fn budgeted<T>(
        &self,
        query: impl FnOnce(&Connection) -> rusqlite::Result<T>,
    ) -> Result<T, CorpusError> {
        self.deadline.start(SessionLimits::CALL_TIME_BUDGET);
        let result = query(&self.conn);
        self.deadline.clear();
        result.map_err(classify)
    }

    pub(crate) fn open(path: &Path) -> rusqlite::Result<Self> {
        let mut conn = open_read_only(path)?;
        let deadline = Arc::new(CallDeadline::default());
        // SQLite calls this every 1,000 virtual-machine instructions of a statement (a few
        // microseconds): past the call's deadline, the statement stops with SQLITE_INTERRUPT.
        let watched = Arc::clone(&deadline);
        conn.progress_handler(1000, Some(move || watched.passed()))?;
        Ok(Self { conn, deadline })
    }
}

/// When the running call's time budget ends (0: no call running). Set by the session around each
/// query; read by SQLite's progress handler.
#[derive(Default)]
pub(crate) struct CallDeadline {
    /// Nanoseconds after [`CallDeadline::epoch`], or 0.
    at: AtomicU64,
}

impl CallDeadline {
    fn epoch() -> Instant {
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *EPOCH.get_or_init(Instant::now)
    }

    /// Starts a call that may run for `budget`.
    pub(crate) fn start(&self, budget: Duration) {
        let at = (Self::epoch().elapsed() + budget).as_nanos();
        self.at.store(
            u64::try_from(at).unwrap_or(u64::MAX).max(1),
            Ordering::Relaxed,
        );
    }

    /// The call is over.
    pub(crate) fn clear(&self) {
        self.at.store(0, Ordering::Relaxed);
    }

    fn passed(&self) -> bool {
        let at = self.at.load(Ordering::Relaxed);
        at != 0 && Self::epoch().elapsed().as_nanos() >= u128::from(at)
    }
}

/// The page cache of each read-only connection (at most this much per connection, filled as
/// pages are read).
pub(crate) const PAGE_CACHE_BYTES: usize = 8 << 20;

/// `file:PATH?immutable=1`, the path's bytes percent-encoded where a URI would read them
/// otherwise (`%`, `?`, `#`, and anything not printable ASCII), as SQLite decodes them.
fn immutable_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file:");
    for &byte in path.as_os_str().as_bytes() {
        if byte.is_ascii_graphic() && !matches!(byte, b'%' | b'?' | b'#') {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri.push_str("?immutable=1");
    uri
}

/// SQL functions a corpus query may call; everything else is refused at prepare time.
const ALLOWED_FUNCTIONS: &[&str] = &["match", "bm25", "snippet", "highlight", "count"];

/// Opens the index read-only by construction: read-only open flags, `PRAGMA query_only`, and an
/// authorizer that lets a statement read and nothing else (no write, attach, pragma, transaction
/// or schema change), so even a bug in the host's SQL cannot modify the corpus.
///
/// The file is opened `immutable` (a URI parameter): an index file is written once, under a
/// temporary name renamed into place, and never changed after, so SQLite may skip what it does
/// for a file others might write — a shared lock taken and released (`fcntl`) and the journal and
/// WAL files looked for (`stat`) around every read transaction, several system calls on every
/// query of every plugin call.
pub(crate) fn open_read_only(path: &Path) -> rusqlite::Result<Connection> {
    let mut conn = Connection::open_with_flags(
        immutable_uri(path),
        OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI,
    )?;
    // A page cache of 8 MiB (SQLite's default is 2): a large corpus's candidates are read by
    // rowid from the `vectors` table, and its interior pages (about 3 MB at a million passages)
    // then stay cached, so a read costs one page from the file instead of three.
    conn.execute_batch(&format!(
        "PRAGMA query_only = ON; PRAGMA cache_size = -{};",
        PAGE_CACHE_BYTES / 1024
    ))?;
    conn.set_prepared_statement_cache_capacity(8);
    conn.authorizer(Some(|ctx: AuthContext<'_>| match ctx.action {
        AuthAction::Select | AuthAction::Read { .. } => Authorization::Allow,
        AuthAction::Function { function_name }
            if ALLOWED_FUNCTIONS
                .iter()
                .any(|f| f.eq_ignore_ascii_case(function_name)) =>
        {
            Authorization::Allow
        }
        // FTS5 reads this to notice other writers; reading it changes nothing.
        AuthAction::Pragma {
            pragma_name: "data_version",
            pragma_value: None,
        } => Authorization::Allow,
        other => {
            tracing::warn!(action = ?other, "corpus authorizer denied a statement");
            Authorization::Deny
        }
    }))?;
    Ok(conn)
}

/// A MATCH expression that FTS5 cannot parse surfaces as a plain `SQLITE_ERROR` while stepping
/// (e.g. `fts5: syntax error near "("`, `no such column: x`); a query stopped by the progress
/// handler as `SQLITE_INTERRUPT`; anything else is a real failure.
pub(crate) fn classify(error: rusqlite::Error) -> CorpusError {
    match &error {
        rusqlite::Error::SqliteFailure(e, _) if e.code == ErrorCode::OperationInterrupted => {
            CorpusError::TimedOut {
                budget: SessionLimits::CALL_TIME_BUDGET,
            }
        }
        rusqlite::Error::SqliteFailure(e, msg) if e.code == ErrorCode::Unknown => {
            CorpusError::BadExpression(msg.clone().unwrap_or_else(|| e.to_string()))
        }
        _ => CorpusError::Query(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path with the characters a URI reads otherwise (`?`, `#`, `%`, a space, non-ASCII)
    /// opens the very file, read-only.
    #[test]
    fn an_index_at_any_path_opens_immutable_and_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a b?c#d%41é");
        std::fs::create_dir(&folder).unwrap();
        let path = folder.join("index.sqlite");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (42);")
            .unwrap();
        drop(conn);
        let reader = open_read_only(&path).unwrap();
        let x: i64 = reader
            .query_row("SELECT x FROM t", [], |r| r.get(0))
            .unwrap();
        assert_eq!(x, 42);
        assert!(reader.execute("INSERT INTO t VALUES (1)", []).is_err());
        // Nothing else was made beside it (no file named after a misread URI).
        assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 1);
    }
}
