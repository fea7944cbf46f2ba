//! The `config` capability: the operator's settings for this plugin (`--plugin-config`), read
//! only; requests can neither set nor see them.

use super::state::HostState;
use crate::bindings::turnstile::retrieval::config;

impl config::Host for HostState {
    fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.config.get(&key).cloned())
    }
}
