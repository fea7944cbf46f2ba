//! The `corpus` capability: read-only sessions over the corpus (`search`, `rank`, `snippet`,
//! `nearest`, `get`, `count`), at most [`MAX_OPEN_SESSIONS`] open at once per call, each host call
//! counted and timed, and the corpus's errors turned into the contract's.

use std::time::Instant;

use turnstile_corpus::{CorpusError, CorpusPool, CorpusSession};
use wasmtime::component::{Linker, Resource};

use super::capability::{Call, Capability, HasRoom, InRoom, Room};
use super::host_calls::HostCalls;
use crate::bindings::turnstile::retrieval::corpus;
use crate::error::PluginError;
use crate::observe::{HostCallKind, HostCallOutcome};
use crate::provision::Provision;

/// At most this many corpus sessions may be open at once within one call; it bounds how many
/// pooled connections a single (possibly hostile) plugin call can hold.
pub const MAX_OPEN_SESSIONS: usize = 4;

/// Read-only sessions over the corpus.
pub struct Corpus;

/// One call's access to the corpus: the pool its sessions come from, and how many are open.
pub struct CorpusState {
    pool: CorpusPool,
    open_sessions: usize,
    /// The call's corpus host calls so far.
    calls: HostCalls,
}

impl Capability for Corpus {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[(
        "turnstile:retrieval/corpus",
        "read-only sessions over the corpus (4 at once per call)",
    )];

    type Options = ();
    type Grant = CorpusPool;
    type State = CorpusState;
    type Report = HostCalls;

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        corpus::add_to_linker::<T, InRoom<Self>>(linker, T::room)
    }

    fn grant(_: &(), given: &Provision) -> Result<CorpusPool, PluginError> {
        Ok(given.corpus.clone())
    }

    fn state(_: &(), pool: &CorpusPool, _: &Call) -> CorpusState {
        CorpusState {
            pool: pool.clone(),
            open_sessions: 0,
            calls: HostCalls::default(),
        }
    }

    /// The call's corpus host calls. Nothing to close: the sessions live in the call's resource
    /// table, and go with its store (each returns its connection to the pool when dropped),
    /// whatever the plugin did.
    fn finish(state: &mut CorpusState, _: &Call) -> HostCalls {
        state.calls
    }
}

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

impl Room<'_, Corpus> {
    /// Ends one corpus host call begun at `started`: counts and times it (when measured), and
    /// turns the corpus's typed error into the contract's.
    fn answer<T>(
        &mut self,
        kind: HostCallKind,
        started: Instant,
        result: Result<T, CorpusError>,
    ) -> Result<T, corpus::CorpusError> {
        let outcome = match &result {
            Ok(_) => HostCallOutcome::Ok,
            Err(CorpusError::TimedOut { .. }) => HostCallOutcome::Timeout,
            Err(_) => HostCallOutcome::Error,
        };
        let elapsed = started.elapsed();
        self.state.calls.note(outcome, elapsed);
        if let Some(observer) = &self.call.observer {
            observer.host_call(kind, outcome, elapsed);
        }
        result.map_err(to_wit)
    }
}

impl corpus::Host for Room<'_, Corpus> {}

impl corpus::HostSession for Room<'_, Corpus> {
    fn open(&mut self) -> wasmtime::Result<Result<Resource<CorpusSession>, corpus::CorpusError>> {
        if self.state.open_sessions >= MAX_OPEN_SESSIONS {
            self.state
                .calls
                .note(HostCallOutcome::Error, Default::default());
            if let Some(observer) = &self.call.observer {
                observer.host_call(
                    HostCallKind::Open,
                    HostCallOutcome::Error,
                    Default::default(),
                );
            }
            return Ok(Err(corpus::CorpusError::TooManySessions));
        }
        let started = Instant::now();
        let session = match self.answer(HostCallKind::Open, started, self.state.pool.session()) {
            Ok(s) => s,
            Err(e) => return Ok(Err(e)),
        };
        let handle = self.table.push(session)?;
        self.state.open_sessions += 1;
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
            .answer(HostCallKind::Search, started, found)
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
        Ok(self.answer(HostCallKind::Rank, started, found).map(|hits| {
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
        Ok(self.answer(HostCallKind::Snippet, started, found))
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
            .answer(HostCallKind::Nearest, started, found)
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
        Ok(self.answer(HostCallKind::Get, started, found).map(|doc| {
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
        Ok(self.answer(HostCallKind::Count, started, Ok(count)))
    }

    fn drop(&mut self, session: Resource<CorpusSession>) -> wasmtime::Result<()> {
        // Deleting the entry drops the session, which returns its connection to the pool.
        self.table.delete(session)?;
        self.state.open_sessions -= 1;
        Ok(())
    }
}
