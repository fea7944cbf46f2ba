//! The flags of what the operator gives a plugin (the `cli` feature): one group, flattened into
//! every command that loads plugins (`serve`, `check`, `eval`) — its settings
//! (`--plugin-config`), its secrets (`--plugin-secret`) and each capability's flags (outbound:
//! [`OutboundArgs`]) — read once into what the host needs ([`PluginSettings`]), every file and
//! variable read and every value checked, each error naming its flag.

use std::sync::Arc;

use clap::Args;

use crate::capabilities::outbound::{
    CredentialError, Credentials, OriginError, Origins, OutboundArgs, OutboundOptions, TrustError,
    TrustedRoots,
};
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

    /// Outbound HTTP: the origins granted, the credentials the host adds, the bounds.
    #[command(flatten)]
    pub outbound: OutboundArgs,
}

/// What the flags give: what every plugin of the command is given, and the runtime's outbound
/// bounds.
#[derive(Debug, Clone)]
pub struct PluginSettings {
    /// The settings, secrets, origins and credentials of the plugin (and of a swap's candidate,
    /// unless the swap names its own).
    pub given: PluginGiven,
    /// The host's bounds on outbound requests, with the CAs trusted.
    pub outbound: OutboundOptions,
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
    /// `--outbound-allow`.
    #[error("--outbound-allow: {0}")]
    Origins(#[from] OriginError),
    /// `--outbound-ca-file`.
    #[error("--outbound-ca-file: {0}")]
    TrustedRoots(#[from] TrustError),
    /// `--outbound-bearer` / `--outbound-header`.
    #[error("--outbound-bearer/--outbound-header: {0}")]
    Credentials(#[from] CredentialError),
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
        let outbound = Origins::parse(&self.outbound.outbound_allow)?;
        let trusted = TrustedRoots::load(&self.outbound.outbound_ca_file)?;
        let credentials = Credentials::load(&self.outbound.credentials(), env)?;
        let mut reached = self.outbound.outbound_allow.clone();
        reached.extend(also_reached.iter().cloned());
        credentials.check_granted(&Origins::parse(&reached)?)?;
        Ok(PluginSettings {
            given: PluginGiven {
                config,
                outbound,
                secrets: Arc::new(secrets),
                credentials: Arc::new(credentials),
            },
            outbound: self.outbound.options(trusted),
        })
    }
}

/// One `--plugin-secret`: where a secret comes from (never its value).
fn parse_secret(given: &str) -> Result<(String, SecretSource), String> {
    parse_secret_arg(given).map_err(|e| e.to_string())
}
