//! The operations endpoints' answers: `/healthz`, `/readyz`, `/state`.

use serde::Serialize;
use turnstile_corpus::{IndexChecksum, IndexOrigin};
use turnstile_gate::Snapshot;
use turnstile_global::GlobalStatus;
use turnstile_host::{Allocator, Generation};
use utoipa::ToSchema;

use super::live::LiveBody;
use super::retrieval::{CorpusRefBody, PluginBody};

/// A plugin call older than a health threshold.
#[derive(Debug, Serialize, ToSchema)]
pub struct StuckCall {
    /// The request's ticket.
    pub ticket: u64,
    /// How long it has run, ms.
    pub held_ms: u64,
    /// Its client went away.
    pub client_gone: bool,
}

/// `/healthz`'s status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HealthStatus {
    /// 200: alive.
    Ok,
    /// 503: a call has run past `--stuck-unhealthy-after-ms`.
    Unhealthy,
}

/// `GET /healthz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct HealthBody {
    /// Alive, or not.
    pub status: HealthStatus,
    /// With `unhealthy`: the threshold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stuck_after_ms: Option<u64>,
    /// With `unhealthy`: the calls past it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stuck: Option<Vec<StuckCall>>,
}

/// `/readyz`'s status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadyStatus {
    /// 200: ready.
    Ready,
    /// 503: a call has run past `--stuck-after-ms`.
    Degraded,
}

/// The corpus being served.
#[derive(Debug, Serialize, ToSchema)]
pub struct CorpusBody {
    /// 1 at start, +1 per corpus swap.
    pub generation: u64,
    /// The file's name, without its directory (this answer is public), or the embedded
    /// corpus's name.
    pub source: String,
    /// sha256 of the JSON Lines.
    pub sha256: String,
    /// Documents.
    pub documents: u64,
    /// Reused from the cache, or built when it was loaded.
    pub index: IndexOrigin,
    /// Whether the index's bytes were checked against its recorded checksum: `checking` for a
    /// while after a start that reused it on the corpus file's stamp, then `verified`, or
    /// `damaged` (not ready; the next start rebuilds it).
    pub checksum: IndexChecksum,
    /// Corpora swapped out that requests admitted before their swap still read (their memory
    /// is freed when the last of those requests ends).
    pub retired_in_memory: usize,
    /// The embedding model its vectors (and its questions') come from.
    pub embeddings: EmbeddingsBody,
}

/// The embedding model of the corpus being served.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmbeddingsBody {
    /// The model's name: the built-in one's, or the one asked of `--embeddings`' server.
    pub model: String,
    /// Dimensions of its vectors.
    pub dimensions: usize,
    /// `built_in`, or `remote` (an OpenAI-compatible server the operator named; its address is
    /// not shown here).
    pub backend: EmbeddingsBackend,
    /// For an index built through a remote model when this corpus was loaded: passages sent to
    /// the model, and passages whose vectors its passage cache held already.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passages: Option<turnstile_corpus::Embedded>,
    /// A remote model's question cache: questions answered from it, questions sent, entries
    /// held.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question_cache: Option<QuestionCacheBody>,
}

/// Where a corpus's embeddings come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum EmbeddingsBackend {
    /// The static model built into turnstile.
    BuiltIn,
    /// A model behind an OpenAI-compatible embeddings server (`--embeddings`).
    Remote,
}

/// A remote model's question cache.
#[derive(Debug, Serialize, ToSchema)]
pub struct QuestionCacheBody {
    /// Questions whose vector was held.
    pub hits: u64,
    /// Questions sent to the server.
    pub misses: u64,
    /// Vectors held now (at most `--embeddings-question-cache`).
    pub entries: usize,
}

impl CorpusBody {
    /// The corpus of `generation`, with `retired_in_memory` older ones still in use.
    pub fn of(generation: &Generation, retired_in_memory: usize) -> Self {
        let index = &generation.corpus.index;
        Self {
            generation: generation.corpus.number,
            source: std::path::Path::new(&index.source).file_name().map_or_else(
                || index.source.clone(),
                |name| name.to_string_lossy().into_owned(),
            ),
            sha256: index.sha256.clone(),
            documents: index.documents,
            index: index.origin,
            checksum: index.checksum.get(),
            retired_in_memory,
            embeddings: EmbeddingsBody::of(generation),
        }
    }
}

impl EmbeddingsBody {
    /// The embedding model of `generation`'s corpus.
    pub fn of(generation: &Generation) -> Self {
        let pool = generation.plugin.corpus();
        let remote = pool.remote_model();
        Self {
            model: pool.model_name().to_owned(),
            dimensions: pool.dims(),
            backend: if remote.is_some() {
                EmbeddingsBackend::Remote
            } else {
                EmbeddingsBackend::BuiltIn
            },
            passages: generation.corpus.index.embedded,
            question_cache: remote.map(|remote| {
                let (hits, misses, entries) = remote.question_cache_counts();
                QuestionCacheBody {
                    hits,
                    misses,
                    entries,
                }
            }),
        }
    }
}

/// `GET /readyz`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReadyBody {
    /// Ready, or degraded.
    pub status: ReadyStatus,
    /// The stuck threshold, ms.
    pub stuck_after_ms: u64,
    /// Calls past it.
    pub stuck: Vec<StuckCall>,
    /// The serving plugin.
    pub plugin: PluginBody,
    /// The corpus.
    pub corpus: CorpusBody,
    /// How plugin instances get memory.
    pub allocator: AllocatorBody,
}

/// Connections open now, and the cap.
#[derive(Debug, Serialize, ToSchema)]
pub struct ConnectionsBody {
    /// Open now.
    pub open: usize,
    /// `--max-connections`.
    pub max: usize,
}

/// `GET /state`: the gate's snapshot (taken atomically) and what helps an operator.
#[derive(Debug, Serialize, ToSchema)]
pub struct StateBody {
    /// The gate.
    #[serde(flatten)]
    pub gate: Snapshot,
    /// The serving plugin.
    pub plugin: PluginBody,
    /// The serving corpus.
    pub corpus: CorpusRefBody,
    /// The serving corpus's embedding model.
    pub embeddings: EmbeddingsBody,
    /// Corpus sessions open now.
    pub corpus_sessions_open: usize,
    /// Connections.
    pub connections: ConnectionsBody,
    /// The live view's streams (`/events`).
    pub live: LiveBody,
    /// The global limit shared with other replicas (when `--redis-url` is set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub global: Option<GlobalStatus>,
    /// What the serving plugin may reach over HTTP, and what is in flight.
    pub outbound: OutboundBody,
    /// Streamed answers (`POST /v1/chat/completions` with `stream`) being sent now.
    pub streams_open: u64,
}

/// The serving plugin's outbound HTTP.
#[derive(Debug, Serialize, ToSchema)]
pub struct OutboundBody {
    /// The origins it was granted, as the operator wrote them (empty: every request is denied).
    pub granted: Vec<String>,
    /// The names of the secrets it was given (never their values).
    pub secrets: Vec<String>,
    /// The credentials the host adds to requests, each as `ORIGIN HEADER` (never a value).
    pub credentials: Vec<String>,
    /// The CA files (PEM) outbound HTTPS trusts beside the compiled-in Mozilla roots, as the
    /// operator named them (`--outbound-ca-file`; paths only). The process's, not a plugin's.
    pub ca_files: Vec<String>,
    /// Outbound requests in flight now, by origin (the grant they went through), every plugin
    /// generation's.
    pub in_flight: std::collections::BTreeMap<String, u64>,
}

/// How instances get their memory.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = Allocator)]
pub enum AllocatorBody {
    /// Slots reserved up front and reused.
    Pooling,
    /// Memory mapped per instance: the fallback where the pool's address space cannot be had.
    OnDemand,
}

impl From<Allocator> for AllocatorBody {
    fn from(allocator: Allocator) -> Self {
        match allocator {
            Allocator::Pooling => Self::Pooling,
            Allocator::OnDemand => Self::OnDemand,
        }
    }
}
