//! What the operator provisions one plugin with: the corpus it reads, its settings, its secrets
//! and the origins it may reach. Each
//! capability makes its grant from it when the plugin is loaded; a request can change none of it.

use std::sync::Arc;

use turnstile_corpus::CorpusPool;

use crate::capabilities::outbound::{Credentials, Origins};
use crate::plugin_config::PluginConfig;
use crate::secrets::Secrets;

/// What one plugin is given, whatever capability reads it.
#[derive(Clone)]
pub struct Provision {
    /// The corpus its sessions read (and the embedding model that indexed it).
    pub corpus: CorpusPool,
    /// Its settings, read through its `config` import.
    pub config: Arc<PluginConfig>,
    /// The origins its outbound HTTP may reach (none by default).
    pub outbound: Origins,
    /// Its secrets, read through its `config` import as settings are (none by default).
    pub secrets: Arc<Secrets>,
    /// The credentials the host adds to its requests, by origin (none by default); never
    /// readable by the plugin.
    pub credentials: Arc<Credentials>,
}

/// What the operator gives a plugin whatever corpus it reads (a swap's candidate is given the
/// same, unless the swap names its own settings or fewer origins): its settings, its secrets,
/// the origins it may reach and the credentials the host adds to its requests.
#[derive(Debug, Clone, Default)]
pub struct PluginGiven {
    /// Settings.
    pub config: PluginConfig,
    /// Origins outbound HTTP may reach.
    pub outbound: Origins,
    /// Secrets.
    pub secrets: Arc<Secrets>,
    /// The credentials the host adds to requests, by origin (every generation's).
    pub credentials: Arc<Credentials>,
}

impl Provision {
    /// A plugin reading `corpus`, given `given`.
    pub fn of(corpus: CorpusPool, given: &PluginGiven) -> Self {
        Self {
            corpus,
            config: Arc::new(given.config.clone()),
            outbound: given.outbound.clone(),
            secrets: Arc::clone(&given.secrets),
            credentials: Arc::clone(&given.credentials),
        }
    }

    /// A plugin reading `corpus`, with `config`.
    pub fn new(corpus: CorpusPool, config: PluginConfig) -> Self {
        Self {
            corpus,
            config: Arc::new(config),
            outbound: Origins::none(),
            secrets: Arc::new(Secrets::none()),
            credentials: Arc::new(Credentials::none()),
        }
    }

    /// The same, with `credentials` added by the host to its requests.
    pub fn with_credentials(mut self, credentials: Arc<Credentials>) -> Self {
        self.credentials = credentials;
        self
    }

    /// Every value no text of the plugin's may show: its secrets and the bound credentials.
    pub fn redaction(&self) -> Secrets {
        self.secrets.with_more(self.credentials.secrets())
    }

    /// The same, given `secrets`.
    pub fn with_secrets(mut self, secrets: Arc<Secrets>) -> Self {
        self.secrets = secrets;
        self
    }

    /// The same, granted `origins` for outbound HTTP.
    pub fn with_outbound(mut self, origins: Origins) -> Self {
        self.outbound = origins;
        self
    }

    /// The same, reading `corpus` instead (a corpus swap's candidate).
    pub fn with_corpus(&self, corpus: CorpusPool) -> Self {
        Self {
            corpus,
            config: Arc::clone(&self.config),
            outbound: self.outbound.clone(),
            secrets: Arc::clone(&self.secrets),
            credentials: Arc::clone(&self.credentials),
        }
    }
}
