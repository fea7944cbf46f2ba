//! What the operator gives one plugin of a capability beyond what every plugin has (its corpus,
//! settings and secrets): a [`Gift`] — the origins outbound HTTP may reach and the credentials
//! bound to them. A plugin swap may narrow a gift, never widen it ([`Gift::narrow`]).

use crate::secrets::Secret;

/// One capability's gift to one plugin. `Default` is "nothing".
pub trait Gift: Clone + Default + std::fmt::Debug + PartialEq + Send + Sync {
    /// What a plugin swap may name instead (`/admin/plugin`'s body); `Default` is "the same".
    type Narrowing: Clone + Default + std::fmt::Debug + Send + Sync;

    /// What a swapped-in plugin is given when the swap asked for `asked`: refused when it asks
    /// for more than this.
    fn narrow(&self, asked: &Self::Narrowing) -> Result<Self, Widened>;

    /// The values in it that no text of the plugin's may show (it never reads them: the
    /// credentials the host adds), named.
    fn redacted(&self) -> Vec<(String, Secret)> {
        Vec::new()
    }
}

/// A swap asked a capability for more than the operator gave the plugin (refused before anything
/// is read).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Widened {
    /// The error code a client reads (`outbound_not_granted`).
    pub code: &'static str,
    /// What was asked beyond the gift, and what to do instead.
    pub message: String,
}
