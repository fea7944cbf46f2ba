//! The flags of what the operator gives a plugin (the `cli` feature): one group, flattened into
//! every command that loads plugins (`serve`, `check`, `eval`) — its settings
//! (`--plugin-config`), its secrets (`--plugin-secret`) and each capability's flags
//! ([`CapabilityArgs`]) — read once into what the host needs ([`PluginSettings`]), every file and
//! variable read and every value checked, each error naming its flag.

use std::sync::Arc;

use clap::Args;

use crate::capabilities::{CapabilityArgs, CapabilityOptions, FlagError};
use crate::plugin_config::{PluginConfig, PluginConfigError, parse_config_entry, plugin_config};
use crate::provision::PluginGiven;
use crate::secrets::{SecretError, SecretSource, Secrets, parse_secret_arg};

/// The flags of what a plugin is given.
#[derive(Debug, Clone, Args)]
pub struct PluginArgs {
    /// A `KEY=VALUE` setting the plugin can read through its `config` import (repeatable).
    #[arg(long = "plugin-config", value_name = "KEY=VALUE", value_parser = parse_config_entry)]
    pub plugin_config: Vec<(String, String)>,

    /// A plugin secret, read once at start from an environment variable or a file
    /// (`NAME=env:VAR` or `NAME=file:PATH`; repeatable); the plugin reads it through its `config`
    /// import as it reads its settings. Its value is shown nowhere.
    #[arg(long = "plugin-secret", value_name = "NAME=env:VAR|NAME=file:PATH", value_parser = parse_secret)]
    pub plugin_secret: Vec<(String, SecretSource)>,

    /// Each capability's flags (outbound HTTP: the origins granted, the credentials the host
    /// adds, the bounds).
    #[command(flatten)]
    pub capabilities: CapabilityArgs,
}

/// What the flags give: what every plugin of the command is given, and the capabilities'
/// options for the runtime.
#[derive(Debug, Clone)]
pub struct PluginSettings {
    /// The settings, secrets and capabilities' gifts (origins, credentials) of the plugin (and
    /// of a swap's candidate, unless the swap names its own).
    pub given: PluginGiven,
    /// The capabilities' options their flags set (the bounds on outbound requests, with the CAs
    /// trusted); the others' defaults.
    pub capabilities: CapabilityOptions,
}

/// A plugin flag that cannot be used: its flag, and why (never a secret's value).
#[derive(Debug, thiserror::Error)]
pub enum PluginArgsError {
    /// `--plugin-config`.
    #[error("--plugin-config: {0}")]
    Config(#[from] PluginConfigError),
    /// `--plugin-secret`.
    #[error("--plugin-secret: {0}")]
    Secret(#[from] SecretError),
    /// A secret named as a setting is.
    #[error("--plugin-secret {0}: a --plugin-config setting has that name too")]
    SecretShadowsSetting(String),
    /// A capability's flag (the message names it).
    #[error(transparent)]
    Capability(#[from] FlagError),
}

impl PluginArgs {
    /// The settings alone, checked as every plugin setting is.
    pub fn config(&self) -> Result<PluginConfig, PluginConfigError> {
        plugin_config(self.plugin_config.iter().cloned())
    }

    /// Reads and checks everything: settings, secrets (from `env` or their files), the CA
    /// files, the credentials, the origins. A credential must go to a granted origin — or to
    /// one of `also_reached` (what the host itself reaches for the plugin: the embeddings
    /// server).
    pub fn read(
        &self,
        env: &dyn Fn(&str) -> Option<String>,
        also_reached: &[String],
    ) -> Result<PluginSettings, PluginArgsError> {
        let config = self.config()?;
        let secrets = Secrets::load(&self.plugin_secret, env)?;
        if let Some(name) = secrets.names().find(|n| config.contains_key(*n)) {
            return Err(PluginArgsError::SecretShadowsSetting(name.to_owned()));
        }
        let (gifts, capabilities) = self.capabilities.read(env, also_reached)?;
        Ok(PluginSettings {
            given: PluginGiven {
                config,
                secrets: Arc::new(secrets),
                capabilities: gifts,
            },
            capabilities,
        })
    }
}

/// One `--plugin-secret`: where a secret comes from (never its value).
fn parse_secret(given: &str) -> Result<(String, SecretSource), String> {
    parse_secret_arg(given).map_err(|e| e.to_string())
}
