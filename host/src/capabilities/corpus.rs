//! The `corpus` capability: read-only sessions over the corpus (`search`, `rank`, `snippet`,
//! `nearest`, `get`, `count`), at most [`MAX_OPEN_SESSIONS`] open at once per call, each host call
//! counted and timed, and the corpus's errors turned into the contract's.

use std::time::Instant;

use turnstile_corpus::{CorpusError, CorpusSession};
use wasmtime::component::Resource;

use super::state::HostState;
use crate::bindings::turnstile::retrieval::corpus;
use crate::observe::{HostCallKind, HostCallOutcome};

/// At most this many corpus sessions may be open at once within one call; it bounds how many
/// pooled connections a single (possibly hostile) plugin call can hold.
pub const MAX_OPEN_SESSIONS: usize = 4;

fn to_wit(error: CorpusError) -> corpus::CorpusError {
    match error {
        CorpusError::BadExpression(m) => corpus::CorpusError::BadExpression(m),
        CorpusError::InvalidArgument(m) => corpus::CorpusError::InvalidArgument(m),
        // The plugin's expression was too costly: its own doing, reported to it as such.
        timed_out @ CorpusError::TimedOut { .. } => {
            tracing::warn!(error = %timed_out, "corpus query stopped");
            corpus::CorpusError::InvalidArgument(timed_out.to_string())
        }
        other => {
            tracing::error!(error = %other, "corpus query failed");
            corpus::CorpusError::Internal("corpus query failed".into())
        }
    }
}

impl HostState {
    /// Ends one corpus host call begun at `started`: counts and times it (when measured), and
    /// turns the corpus's typed error into the contract's.
    fn finish<T>(
        &self,
        kind: HostCallKind,
        started: Instant,
        result: Result<T, CorpusError>,
    ) -> Result<T, corpus::CorpusError> {
        if let Some(observer) = &self.observer {
            let outcome = match &result {
                Ok(_) => HostCallOutcome::Ok,
                Err(CorpusError::TimedOut { .. }) => HostCallOutcome::Timeout,
                Err(_) => HostCallOutcome::Error,
            };
            observer.host_call(kind, outcome, started.elapsed());
        }
        result.map_err(to_wit)
    }
}

impl corpus::Host for HostState {}

impl corpus::HostSession for HostState {
    fn open(&mut self) -> wasmtime::Result<Result<Resource<CorpusSession>, corpus::CorpusError>> {
        if self.open_sessions >= MAX_OPEN_SESSIONS {
            if let Some(observer) = &self.observer {
                observer.host_call(
                    HostCallKind::Open,
                    HostCallOutcome::Error,
                    Default::default(),
                );
            }
            return Ok(Err(corpus::CorpusError::TooManySessions));
        }
        let started = Instant::now();
        let session = match self.finish(HostCallKind::Open, started, self.corpus.session()) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let handle = self.table.push(session)?;
        self.open_sessions += 1;
        Ok(Ok(handle))
    }

    fn search(
        &mut self,
        session: Resource<CorpusSession>,
        expression: String,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<corpus::Candidate>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.search(&expression, limit);
        Ok(self
            .finish(HostCallKind::Search, started, found)
            .map(|hits| {
                hits.into_iter()
                    .map(|c| corpus::Candidate {
                        id: c.id,
                        title: c.title,
                        snippet: c.snippet,
                        rank: c.rank,
                    })
                    .collect()
            }))
    }

    fn rank(
        &mut self,
        session: Resource<CorpusSession>,
        expression: String,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<corpus::Ranked>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.rank(&expression, limit);
        Ok(self.finish(HostCallKind::Rank, started, found).map(|hits| {
            hits.into_iter()
                .map(|r| corpus::Ranked {
                    id: r.id,
                    title: r.title,
                    rank: r.rank,
                    doc: r.doc,
                })
                .collect()
        }))
    }

    fn snippet(
        &mut self,
        session: Resource<CorpusSession>,
        expression: String,
        doc: u64,
    ) -> wasmtime::Result<Result<Option<String>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.snippet(&expression, doc);
        Ok(self.finish(HostCallKind::Snippet, started, found))
    }

    fn nearest(
        &mut self,
        session: Resource<CorpusSession>,
        vector: Vec<f32>,
        limit: u32,
    ) -> wasmtime::Result<Result<Vec<corpus::Neighbour>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.nearest(&vector, limit);
        Ok(self
            .finish(HostCallKind::Nearest, started, found)
            .map(|near| {
                near.into_iter()
                    .map(|n| corpus::Neighbour {
                        id: n.id,
                        title: n.title,
                        similarity: n.similarity,
                        doc: n.doc,
                    })
                    .collect()
            }))
    }

    fn get(
        &mut self,
        session: Resource<CorpusSession>,
        id: String,
    ) -> wasmtime::Result<Result<Option<corpus::Document>, corpus::CorpusError>> {
        let started = Instant::now();
        let found = self.table.get(&session)?.get(&id);
        Ok(self.finish(HostCallKind::Get, started, found).map(|doc| {
            doc.map(|d| corpus::Document {
                id: d.id,
                kind: d.kind,
                title: d.title,
                text: d.text,
            })
        }))
    }

    fn count(
        &mut self,
        session: Resource<CorpusSession>,
    ) -> wasmtime::Result<Result<u64, corpus::CorpusError>> {
        let started = Instant::now();
        let count = self.table.get(&session)?.count();
        Ok(self.finish(HostCallKind::Count, started, Ok(count)))
    }

    fn drop(&mut self, session: Resource<CorpusSession>) -> wasmtime::Result<()> {
        // Deleting the entry drops the session, which returns its connection to the pool.
        self.table.delete(session)?;
        self.open_sessions -= 1;
        Ok(())
    }
}
