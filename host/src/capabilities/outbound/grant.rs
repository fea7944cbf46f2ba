//! What one plugin is granted for outbound HTTP: its origins and its own pooled client.

use std::sync::Arc;

use super::client::OutboundClient;
use super::credentials::Credentials;
use super::origins::Origins;

/// What one plugin is granted: its origins, its pooled client (none when nothing is granted,
/// or when every request is denied anyway), and the credentials the host adds to its requests.
pub struct OutboundGrant {
    /// The origins, as the operator wrote them.
    pub origins: Origins,
    pub(super) client: Option<Arc<OutboundClient>>,
    /// The operator's bound credentials (added by origin; never the plugin's to read).
    pub(super) credentials: Arc<Credentials>,
}
