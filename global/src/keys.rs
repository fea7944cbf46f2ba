//! Where the global gate keeps its state in Redis.

/// The Redis keys of one deployment, all under the hash tag `{KEY}` (one Redis Cluster slot).
pub(crate) struct Keys {
    pub(crate) holders: String,
    pub(crate) queue: String,
    pub(crate) queue_exp: String,
    pub(crate) seq: String,
    pub(crate) channel: String,
    /// Set by the first script that runs on the deployment's data and kept with it: gone, Redis
    /// lost the data (or the deployment is new), and a grace of one TTL follows (`lua/grace.lua`).
    pub(crate) marker: String,
}

impl Keys {
    /// The keys of the deployment named `key`.
    pub(crate) fn new(key: &str) -> Self {
        let tag = format!("turnstile:{{{key}}}");
        Self {
            holders: format!("{tag}:holders"),
            queue: format!("{tag}:queue"),
            queue_exp: format!("{tag}:queue_exp"),
            seq: format!("{tag}:seq"),
            channel: format!("{tag}:released"),
            marker: format!("{tag}:marker"),
        }
    }
}
