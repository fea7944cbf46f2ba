/// What can go wrong loading or calling a plugin.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// The plugin file could not be read.
    #[error("cannot read plugin {path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The bytes are not a valid component, or do not fit the `retrieval-plugin` world.
    #[error("plugin {name} is not a usable retrieval-plugin component: {reason}")]
    Incompatible {
        /// The plugin's name.
        name: String,
        /// What did not fit, as wasmtime explains it.
        reason: String,
    },
    /// Setting up the engine failed.
    #[error("wasm engine: {0}")]
    Engine(String),
    /// The plugin trapped (including running out of its memory cap) or could not be instantiated.
    #[error("plugin trapped: {0}")]
    Trap(String),
    /// The plugin returned its own error.
    #[error("plugin returned an error: {0:?}")]
    Guest(super::RetrieveError),
    /// The plugin returned something that breaks the contract (e.g. a non-finite score).
    #[error("plugin broke the contract: {0}")]
    Contract(String),
}
