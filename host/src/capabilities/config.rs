//! The `config` capability: the operator's settings for this plugin (`--plugin-config`, a swap's
//! `config`) and its secrets (`--plugin-secret`), read only; requests can neither set nor see
//! them. A setting and a secret never share a name (refused when the plugin is provisioned).

use std::sync::Arc;

use wasmtime::component::Linker;

use super::capability::{Call, Capability, HasRoom, InRoom, Room};
use crate::bindings::turnstile::retrieval::config;
use crate::error::PluginError;
use crate::plugin_config::PluginConfig;
use crate::provision::Provision;
use crate::secrets::Secrets;

/// The plugin's settings, read-only.
pub struct Config;

/// What a plugin reads through `config`: its settings, then its secrets.
#[derive(Clone)]
pub struct Settings {
    config: Arc<PluginConfig>,
    secrets: Arc<Secrets>,
}

impl Capability for Config {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[(
        "turnstile:retrieval/config",
        "the operator's settings for this plugin, read-only",
    )];

    type Options = ();
    type Grant = Settings;
    type State = Settings;
    type Report = ();

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        config::add_to_linker::<T, InRoom<Self>>(linker, T::room)
    }

    fn grant(_: &(), given: &Provision) -> Result<Settings, PluginError> {
        if let Some(name) = given
            .secrets
            .names()
            .find(|n| given.config.contains_key(*n))
        {
            return Err(PluginError::Provision {
                name: String::new(),
                reason: format!("{name:?} names both a setting and a secret"),
            });
        }
        Ok(Settings {
            config: Arc::clone(&given.config),
            secrets: Arc::clone(&given.secrets),
        })
    }

    fn state(_: &(), settings: &Settings, _: &Call) -> Settings {
        settings.clone()
    }

    fn finish(_: &mut Settings, _: &Call) {}
}

impl config::Host for Room<'_, Config> {
    fn get(&mut self, key: String) -> wasmtime::Result<Option<String>> {
        Ok(match self.state.config.get(&key) {
            Some(value) => Some(value.clone()),
            None => self.state.secrets.get(&key).map(|s| s.expose().to_owned()),
        })
    }
}
