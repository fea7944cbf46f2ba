//! The `config` capability: the operator's settings for this plugin (`--plugin-config`, a swap's
//! `config`), read only; requests can neither set nor see them.

use std::sync::Arc;

use wasmtime::component::Linker;

use super::capability::{Call, Capability, HasRoom, InRoom, Room};
use crate::bindings::turnstile::retrieval::config;
use crate::error::PluginError;
use crate::plugin_config::PluginConfig;
use crate::provision::Provision;

/// The plugin's settings, read-only.
pub struct Config;

impl Capability for Config {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[(
        "turnstile:retrieval/config",
        "the operator's settings for this plugin, read-only",
    )];

    type Options = ();
    type Grant = Arc<PluginConfig>;
    type State = Arc<PluginConfig>;
    type Report = ();

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        config::add_to_linker::<T, InRoom<Self>>(linker, T::room)
    }

    fn grant(_: &(), given: &Provision) -> Result<Arc<PluginConfig>, PluginError> {
        Ok(Arc::clone(&given.config))
    }

    fn state(_: &(), settings: &Arc<PluginConfig>, _: &Call) -> Arc<PluginConfig> {
        Arc::clone(settings)
    }

    fn finish(_: &mut Arc<PluginConfig>, _: &Call) {}
}

impl config::Host for Room<'_, Config> {
    fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(self.state.get(&key).cloned())
    }
}
