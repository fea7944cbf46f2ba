use crate::contract::{CONTRACT_PACKAGE, SUPPORTED_VERSIONS};

/// What can go wrong loading or calling a plugin.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The plugin file could not be read.
    #[error("cannot read plugin {path}: {error}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why. In the message, not a `source`: a report that prints the error's chain would
        /// otherwise say it twice.
        error: std::io::Error,
    },
    /// The bytes are not a valid component, or do not fit the `retrieval-plugin` world.
    #[error("plugin {name} is not a usable retrieval-plugin component: {reason}")]
    Incompatible {
        /// The plugin's name.
        name: String,
        /// What did not fit.
        reason: Incompatibility,
    },
    /// What the plugin was provisioned with cannot be given to it (a setting and a secret of
    /// one name; an outbound client that cannot be made).
    #[error("plugin {name} cannot be provisioned: {reason}")]
    Provision {
        /// The plugin's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// Setting up the engine or linker failed.
    #[error("wasm engine: {0:#}")]
    Engine(wasmtime::Error),
    /// The plugin trapped (including running out of its memory cap) or could not be instantiated.
    /// Shown (and logged) escaped and cut: the backtrace names the guest's own functions.
    #[error("plugin trapped: {}", trap_text(.0))]
    Trap(wasmtime::Error),
    /// A conformance call did not return within its deadline (see `Plugin::retrieve_bounded`).
    #[error("timeout: the call did not return within {} ms ({abandoned} abandoned calls still running)", .after.as_millis())]
    TimedOut {
        /// The deadline (zero: refused at once, too many abandoned calls still running).
        after: std::time::Duration,
        /// Abandoned conformance calls still running.
        abandoned: usize,
    },
    /// The plugin returned its own error. Shown (and logged) escaped and cut: the text is the
    /// plugin's.
    #[error("plugin returned an error: {}", guest_text(.0))]
    Guest(crate::bindings::RetrieveError),
    /// The plugin returned something that breaks the contract (e.g. a non-finite score).
    #[error("plugin broke the contract: {0}")]
    Contract(ContractViolation),
}

/// Longest trap description (cause and guest backtrace) shown, in bytes.
const MAX_TRAP_TEXT: usize = 4096;

fn trap_text(error: &wasmtime::Error) -> String {
    let text = format!("{}\n{error:#}", error.root_cause());
    // One line per frame is useful; a forged line is not: newlines stay, as the escape `\n`.
    crate::output::sanitize(&text, MAX_TRAP_TEXT)
}

/// A plugin's own error, as long as a log message (a language plugin puts its traceback there).
fn guest_text(error: &crate::bindings::RetrieveError) -> String {
    crate::output::sanitize(&format!("{error:?}"), crate::output::MAX_LOG_MESSAGE)
}

impl PluginError {
    /// For a trap, what trapped first (e.g. "wasm `unreachable` instruction executed"), without
    /// the guest backtrace.
    pub fn trap_cause(&self) -> Option<String> {
        match self {
            Self::Trap(error) => Some(error.root_cause().to_string()),
            _ => None,
        }
    }

    /// For a call ended by the operator's embedding server (`--embeddings`), how it failed: the
    /// server answers for it, not for the plugin.
    pub fn embeddings_failure(&self) -> Option<&turnstile_corpus::RemoteError> {
        match self {
            Self::Trap(error) => error
                .downcast_ref::<EmbeddingsFailed>()
                .map(|failed| &failed.0),
            _ => None,
        }
    }
}

/// The operator's embedding server failed a call's texts (`--embeddings`): the call ends (a trap
/// whose root cause this is), and the server answers for the embedding server, not for the
/// plugin ([`PluginError::embeddings_failure`]).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct EmbeddingsFailed(pub turnstile_corpus::RemoteError);

/// Why a component cannot serve as a plugin.
#[derive(Debug, thiserror::Error)]
pub enum Incompatibility {
    /// Not WebAssembly at all (a text file, an archive, …): it does not begin with `\0asm`.
    #[error(
        "it is not a WebAssembly file (those begin with the bytes \\0asm): a plugin is the \
         `.wasm` component its build writes (`turnstile new plugin` makes a project that builds one)"
    )]
    NotWasm,
    /// A core WebAssembly module: WebAssembly, but not a component.
    #[error(
        "it is a core WebAssembly module, not a component: build it for the wasm32-wasip2 \
         target (or wrap it with `wasm-tools component new`)"
    )]
    CoreModule,
    /// Not a valid component for this engine (wasmtime's explanation).
    #[error("{0:#}")]
    Compile(wasmtime::Error),
    /// Its imports or exports do not link against the `retrieval-plugin` world.
    #[error("{0:#}")]
    Link(wasmtime::Error),
    /// A precompiled artifact of it could not be loaded.
    #[error("its precompiled artifact did not load: {0:#}")]
    Artifact(wasmtime::Error),
    /// Built against a contract version this host does not serve.
    #[error("it was built against {CONTRACT_PACKAGE}@{version}; this host supports {}", SUPPORTED_VERSIONS.join(", "))]
    UnsupportedVersion {
        /// The version it imports.
        version: String,
    },
    /// Imports an interface of the contract's package that the contract does not define.
    #[error("it imports `{0}`, which the contract does not define")]
    UndefinedInterface(String),
    /// Imports what no plugin gets: outside WASI 0.2 and the contract (another package, another
    /// version).
    #[error(
        "it imports {}, which {} outside the plugin contract and WASI 0.2 (plugins get no \
         filesystem, no other host capability, and the network only where the operator grants it)",
        .0.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(", "),
        if .0.len() == 1 { "is" } else { "are" }
    )]
    ForbiddenImports(Vec<String>),
    /// Does not export `retrieve`.
    #[error("it does not export `retrieve`")]
    NoRetrieveExport,
}

/// A plugin answer the host refuses to serve, whatever the plugin meant.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ContractViolation {
    /// More sources than the request's `limit`.
    #[error("returned {returned} sources for limit {limit}")]
    TooManySources {
        /// How many it returned.
        returned: usize,
        /// The request's limit.
        limit: u32,
    },
    /// A score that is NaN or infinite.
    #[error("source {id:?} has score {score}")]
    NonFiniteScore {
        /// The source's id (cut and escaped for the log).
        id: String,
        /// Its score.
        score: f64,
    },
    /// An id that is empty or over the corpus's id bound.
    #[error("source id of {bytes} bytes is outside 1..={max}")]
    BadId {
        /// Its length.
        bytes: usize,
        /// The bound.
        max: usize,
    },
    /// An id that names no document of the corpus.
    #[error("source {id:?} is not a document of the corpus")]
    UnknownId {
        /// The id (cut and escaped for the log).
        id: String,
    },
    /// Scores that are not best first.
    #[error("scores increase: {before} then {after}")]
    NotBestFirst {
        /// A score.
        before: f64,
        /// The next one, higher.
        after: f64,
    },
    /// The corpus could not be asked whether the ids exist.
    #[error("cannot check the ids against the corpus: {0}")]
    Corpus(String),
    /// A title or snippet over its bound.
    #[error("source {id:?} has a {field} of {bytes} bytes, over its bound of {max}")]
    FieldTooLong {
        /// The source's id (cut and escaped for the log).
        id: String,
        /// `title` or `snippet`.
        field: &'static str,
        /// Its length.
        bytes: usize,
        /// The bound.
        max: usize,
    },
}
