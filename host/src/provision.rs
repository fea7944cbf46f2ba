//! What the operator provisions one plugin with: the corpus it reads, its settings, its secrets
//! and what each capability gives it ([`CapabilityGiven`]: the origins outbound HTTP may reach,
//! …). Each capability makes its grant from it when the plugin is loaded; a request can change
//! none of it.

use std::sync::Arc;

use turnstile_corpus::CorpusPool;

use crate::capabilities::CapabilityGiven;
use crate::plugin_config::PluginConfig;
use crate::secrets::Secrets;

/// What one plugin is given, whatever capability reads it.
#[derive(Clone)]
pub struct Provision {
    /// The corpus its sessions read (and the embedding model that indexed it).
    pub corpus: CorpusPool,
    /// Its settings, read through its `config` import.
    pub config: Arc<PluginConfig>,
    /// Its secrets, read through its `config` import as settings are (none by default).
    pub secrets: Arc<Secrets>,
    /// What each capability gives it (by default, nothing beyond what every plugin has).
    pub capabilities: CapabilityGiven,
}

/// What the operator gives a plugin whatever corpus it reads (a swap's candidate is given the
/// same, unless the swap names its own settings or narrows a capability's gift): its settings,
/// its secrets and what each capability gives it.
#[derive(Debug, Clone, Default)]
pub struct PluginGiven {
    /// Settings.
    pub config: PluginConfig,
    /// Secrets.
    pub secrets: Arc<Secrets>,
    /// Each capability's gift (the origins outbound HTTP may reach and the credentials bound
    /// to them, …).
    pub capabilities: CapabilityGiven,
}

impl Provision {
    /// A plugin reading `corpus`, given `given`.
    pub fn of(corpus: CorpusPool, given: &PluginGiven) -> Self {
        Self {
            corpus,
            config: Arc::new(given.config.clone()),
            secrets: Arc::clone(&given.secrets),
            capabilities: given.capabilities.clone(),
        }
    }

    /// A plugin reading `corpus`, with `config`.
    pub fn new(corpus: CorpusPool, config: PluginConfig) -> Self {
        Self {
            corpus,
            config: Arc::new(config),
            secrets: Arc::new(Secrets::none()),
            capabilities: CapabilityGiven::default(),
        }
    }

    /// Every value no text of the plugin's may show: its secrets and what a capability gave it
    /// that it never reads (the bound credentials).
    pub fn redaction(&self) -> Secrets {
        self.secrets
            .with_more(self.capabilities.redacted().into_iter())
    }

    /// The same, with what the capabilities give it changed by `change` (more origins, …).
    pub fn with(mut self, change: impl FnOnce(&mut CapabilityGiven)) -> Self {
        change(&mut self.capabilities);
        self
    }

    /// The same, given `secrets`.
    pub fn with_secrets(mut self, secrets: Arc<Secrets>) -> Self {
        self.secrets = secrets;
        self
    }

    /// The same, reading `corpus` instead (a corpus swap's candidate).
    pub fn with_corpus(&self, corpus: CorpusPool) -> Self {
        Self {
            corpus,
            ..self.clone()
        }
    }
}
