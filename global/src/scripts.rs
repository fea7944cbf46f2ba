//! The global gate's scripts: acquire, release, heartbeat, status.

use redis::Script;

/// Redis' clock and the grace after Redis lost writes of the deployment, shared by every script
/// that reads or grants leases.
const GRACE: &str = include_str!("lua/grace.lua");

/// The Lua scripts (`src/lua/`), each run atomically by Redis.
pub(crate) struct Scripts {
    pub(crate) acquire: Script,
    pub(crate) release: Script,
    pub(crate) heartbeat: Script,
    pub(crate) status: Script,
}

impl Scripts {
    /// The scripts, loaded from the crate.
    pub(crate) fn new() -> Self {
        let with_grace = |script: &str| Script::new(&format!("{GRACE}\n{script}"));
        Self {
            acquire: with_grace(include_str!("lua/acquire.lua")),
            release: Script::new(include_str!("lua/release.lua")),
            heartbeat: with_grace(include_str!("lua/heartbeat.lua")),
            status: with_grace(include_str!("lua/status.lua")),
        }
    }
}
