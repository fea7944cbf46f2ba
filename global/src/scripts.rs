//! The global gate's scripts: acquire, release, heartbeat, status.

use redis::Script;

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
        Self {
            acquire: Script::new(include_str!("lua/acquire.lua")),
            release: Script::new(include_str!("lua/release.lua")),
            heartbeat: Script::new(include_str!("lua/heartbeat.lua")),
            status: Script::new(include_str!("lua/status.lua")),
        }
    }
}
