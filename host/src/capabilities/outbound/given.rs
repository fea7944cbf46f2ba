//! What the operator gives one plugin of outbound HTTP: the origins it may reach
//! (`--outbound-allow`) and the credentials the host adds to its requests by origin
//! (`--outbound-bearer`, `--outbound-header`). A swap may name fewer origins (`outbound_allow` in
//! `/admin/plugin`'s body), never one outside them; the credentials stay the operator's.

use std::sync::Arc;

use super::credentials::Credentials;
use super::origins::Origins;
use crate::capabilities::gift::{Gift, Widened};
use crate::secrets::Secret;

/// One plugin's outbound gift (none by default: no origin, no credential).
#[derive(Debug, Clone, Default)]
pub struct OutboundGiven {
    /// The origins its outbound HTTP may reach.
    pub origins: Origins,
    /// The credentials the host adds to its requests, by origin; never readable by the plugin.
    pub credentials: Arc<Credentials>,
}

/// The same origins with the same credentials (the operator's, read once: the same set).
impl PartialEq for OutboundGiven {
    fn eq(&self, other: &Self) -> bool {
        self.origins == other.origins && Arc::ptr_eq(&self.credentials, &other.credentials)
    }
}

/// A swap names the origins (`outbound_allow`), or none: the operator's.
impl Gift for OutboundGiven {
    type Narrowing = Option<Origins>;

    /// Refused when an origin asked is outside those given.
    fn narrow(&self, asked: &Option<Origins>) -> Result<Self, Widened> {
        let Some(asked) = asked else {
            return Ok(self.clone());
        };
        if let Some(outside) = asked.first_outside(&self.origins) {
            return Err(Widened {
                code: "outbound_not_granted",
                message: format!(
                    "outbound_allow: {outside} is not within the operator's grants (--outbound-allow); a swap may narrow them, never widen them"
                ),
            });
        }
        Ok(Self {
            origins: asked.clone(),
            credentials: Arc::clone(&self.credentials),
        })
    }

    fn redacted(&self) -> Vec<(String, Secret)> {
        self.credentials.secrets().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origins(given: &[&str]) -> Origins {
        let given: Vec<String> = given.iter().map(|o| (*o).to_owned()).collect();
        Origins::parse(&given).unwrap()
    }

    #[test]
    fn a_swap_may_narrow_the_origins_never_widen_them() {
        let given = OutboundGiven {
            origins: origins(&["http://127.0.0.1:8001", "https://api.example.com"]),
            credentials: Arc::default(),
        };
        assert_eq!(given.narrow(&None).unwrap(), given);
        let narrowed = given
            .narrow(&Some(origins(&["https://api.example.com"])))
            .unwrap();
        assert_eq!(narrowed.origins, origins(&["https://api.example.com"]));
        assert!(Arc::ptr_eq(&narrowed.credentials, &given.credentials));
        let widened = given
            .narrow(&Some(origins(&[
                "https://api.example.com",
                "https://other.example",
            ])))
            .unwrap_err();
        assert_eq!(widened.code, "outbound_not_granted");
        assert!(
            widened.message.contains("https://other.example"),
            "{}",
            widened.message
        );
    }
}
