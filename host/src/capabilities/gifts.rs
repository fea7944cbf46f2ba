//! The capabilities that give a plugin something of its own, each as `field: GiftType`, composed
//! into what a plugin's [`crate::Provision`] holds of them ([`CapabilityGiven`]) and what a swap
//! may name instead ([`CapabilityNarrowing`]). A list of the gifts' types, not of the
//! capabilities: the provision is read by every capability's `grant`, so what it holds may not
//! depend on the capabilities' list (that would be an import circle).

use super::gift::{Gift, Widened};
use super::outbound::OutboundGiven;
use crate::secrets::Secret;

macro_rules! gifts {
    ($($(#[$doc:meta])* $field:ident: $gift:ty,)+) => {
        /// What the operator gives one plugin, capability by capability.
        #[derive(Debug, Clone, Default, PartialEq)]
        pub struct CapabilityGiven {
            $($(#[$doc])* pub $field: $gift,)+
        }

        /// What a plugin swap names instead of the operator's gifts, capability by capability
        /// (each `Default`: the same).
        #[derive(Debug, Clone, Default)]
        pub struct CapabilityNarrowing {
            $($(#[$doc])* pub $field: <$gift as Gift>::Narrowing,)+
        }

        impl CapabilityGiven {
            /// What a swapped-in plugin is given when the swap asked for `asked`: refused at the
            /// first capability asked for more than it gave.
            pub fn narrowed(&self, asked: &CapabilityNarrowing) -> Result<Self, Widened> {
                Ok(Self {
                    $($field: self.$field.narrow(&asked.$field)?,)+
                })
            }

            /// Every value given that no text of the plugin's may show, named.
            pub fn redacted(&self) -> Vec<(String, Secret)> {
                let mut all = Vec::new();
                $(all.extend(self.$field.redacted());)+
                all
            }
        }
    };
}

gifts! {
    /// The origins outbound HTTP may reach, and the credentials the host adds to them.
    outbound: OutboundGiven,
}
