//! What one plugin is granted for outbound HTTP: its origins and its own pooled client.

use std::sync::Arc;

use super::client::OutboundClient;
use super::origins::Origins;

/// What one plugin is granted: its origins, and its pooled client (none when nothing is
/// granted, or when every request is denied anyway).
pub struct OutboundGrant {
    /// The origins, as the operator wrote them.
    pub origins: Origins,
    pub(super) client: Option<Arc<OutboundClient>>,
}
