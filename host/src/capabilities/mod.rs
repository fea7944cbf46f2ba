//! What a plugin instance can reach, one room per capability (as Spin's factors are laid out):
//! each owns its settings, its grant to a plugin, its per-call state, its linker registration,
//! its report and its conformance probes ([`Capability`]); `host_state.rs` lists them and composes
//! the store's state. WASI grants nothing; the contract's interfaces are corpus, embeddings,
//! config, log, answer and conversation; [`outbound`] is HTTP to the origins the operator granted.

pub mod answer;
mod backend;
mod capability;
mod config;
pub mod conversation;
mod corpus;
mod embeddings;
#[cfg(feature = "cli")]
mod flags;
mod gift;
mod gifts;
mod host_calls;
mod host_state;
mod limits;
mod log;
pub mod outbound;
mod wasi;

pub use answer::{AnswerReport, MAX_ANSWER_BYTES};
pub use backend::{Backend, FailureKind, SignalKind, UpstreamSignal};
pub use capability::{Call, Capability, HasRoom, InRoom, Probe, Report, Room};
pub use conversation::Conversation;
pub use corpus::MAX_OPEN_SESSIONS;
pub use embeddings::{MAX_EMBED_TEXT_BYTES, MAX_EMBED_TEXTS};
#[cfg(feature = "cli")]
pub use flags::{CapabilityArgs, CapabilityFlags, FlagError};
pub use gift::{Gift, Widened};
pub use gifts::{CapabilityGiven, CapabilityNarrowing};
pub use host_calls::HostCalls;
pub use host_state::{CapabilityOptions, HostState, Reports, interfaces};
pub(crate) use host_state::{Grants, limiter, link, probes};
pub use limits::{
    DEFAULT_MEMORY_LIMIT, LimitsOptions, MAX_INSTANCES, MAX_MEMORIES, MAX_RESOURCES,
    MAX_TABLE_ELEMENTS, MAX_TABLES, MemoryReport,
};
pub use log::LogReport;
pub use wasi::{STDERR_TAIL, StdioReport};
