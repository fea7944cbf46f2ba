//! A capability's own flags (the `cli` feature): each capability with flags reads them into what
//! every plugin of the command is given of it and its options for the runtime
//! ([`CapabilityFlags`]); the list below composes them into one group ([`CapabilityArgs`]),
//! flattened into [`crate::PluginArgs`] and so into every command that loads plugins (`serve`,
//! `check`, `eval`). A capability without flags is given nothing and keeps its default options.

use super::capability::Capability;
use super::gift::Gift;
use super::gifts::CapabilityGiven;
use super::host_state::CapabilityOptions;
use super::outbound::Outbound;

/// A capability's flags, and how they are read.
pub trait CapabilityFlags: Capability {
    /// Its flags (a `clap` group, flattened; every flag's name starts with the capability's).
    type Args: clap::Args + Clone + std::fmt::Debug;
    /// What its flags give each plugin (its field of [`CapabilityGiven`]).
    type Given: Gift;
    /// A flag that cannot be used: the error names the flag (never a secret's value).
    type Error: std::error::Error + Send + Sync + 'static;

    /// Reads `args` — every file and variable (`env` looks one up), every value checked — into
    /// what each plugin is given of the capability and its options. `also_reached`: the origins
    /// the host itself reaches for a plugin (the embeddings server), to which a credential may
    /// be bound too.
    fn read(
        args: &Self::Args,
        env: &dyn Fn(&str) -> Option<String>,
        also_reached: &[String],
    ) -> Result<(Self::Given, Self::Options), Self::Error>;
}

/// A capability's flag that cannot be used (its message names the flag).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct FlagError(Box<dyn std::error::Error + Send + Sync>);

/// Declares the capabilities that have flags, each as `field: Type` (the same field as in the
/// capabilities' list), and composes their groups into [`CapabilityArgs`].
macro_rules! capability_flags {
    ($($field:ident: $capability:ty,)+) => {
        /// Every capability's flags.
        #[derive(Debug, Clone, clap::Args)]
        pub struct CapabilityArgs {
            $(
                #[command(flatten)]
                #[allow(missing_docs)]
                pub $field: <$capability as CapabilityFlags>::Args,
            )+
        }

        impl CapabilityArgs {
            /// Every capability's flags read: what each plugin is given, and the options.
            pub fn read(
                &self,
                env: &dyn Fn(&str) -> Option<String>,
                also_reached: &[String],
            ) -> Result<(CapabilityGiven, CapabilityOptions), FlagError> {
                let mut given = CapabilityGiven::default();
                let mut options = CapabilityOptions::default();
                $(
                    (given.$field, options.$field) =
                        <$capability as CapabilityFlags>::read(&self.$field, env, also_reached)
                            .map_err(|e| FlagError(Box::new(e)))?;
                )+
                Ok((given, options))
            }
        }
    };
}

capability_flags! {
    outbound: Outbound,
}
