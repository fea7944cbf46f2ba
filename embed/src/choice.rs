//! Which model a corpus's vectors and its questions' come from: the shipped static model (the
//! default, nothing to set) or a remote one the operator named. One choice per process; an index
//! records the fingerprint of the model it was built with and is only ever searched with
//! question vectors of that model.

use std::sync::Arc;

use super::model::{EmbedError, Embedder};
use super::remote::RemoteModel;

/// The embedding model of a corpus.
#[derive(Debug, Clone, Default)]
pub enum EmbeddingModel {
    /// The static model shipped in this crate ([`Embedder::shipped`]).
    #[default]
    Shipped,
    /// A model behind an OpenAI-compatible server.
    Remote(Arc<RemoteModel>),
}

impl EmbeddingModel {
    /// The fingerprint an index records (and is matched on).
    pub fn fingerprint(&self) -> Result<String, &'static EmbedError> {
        Ok(match self {
            Self::Shipped => Embedder::shipped()?.fingerprint().to_owned(),
            Self::Remote(remote) => remote.fingerprint().to_owned(),
        })
    }

    /// The remote model, if this is one.
    pub fn remote(&self) -> Option<&Arc<RemoteModel>> {
        match self {
            Self::Shipped => None,
            Self::Remote(remote) => Some(remote),
        }
    }
}
