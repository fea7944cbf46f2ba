//! Settings the global gate refuses.

/// Invalid settings.
#[derive(Debug, thiserror::Error)]
pub enum GlobalError {
    /// The Redis URL does not parse.
    #[error("--redis-url: {0}")]
    Url(#[from] redis::RedisError),
}
