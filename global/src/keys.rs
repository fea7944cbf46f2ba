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
    /// The run id of the Redis server that holds the data (`INFO server`'s `run_id`), set by the
    /// scripts: another server's id found there means Redis restarted (from a snapshot, maybe
    /// older than the last writes) or failed over, and a grace follows as for a missing marker.
    pub(crate) server: String,
    /// The data's history (a hash: `epoch`, `writes`), moved on by every script that writes and
    /// by every grace: a replica that saw a later point of it than Redis holds proves that Redis
    /// went back to older data, and a grace follows (`lua/grace.lua`).
    pub(crate) history: String,
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
            server: format!("{tag}:server"),
            history: format!("{tag}:history"),
        }
    }
}
