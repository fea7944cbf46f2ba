//! The list of capabilities, and the host state composed from it: one call's store holds each
//! capability's state, the call's resource table and the call's facts. Adding a capability is one
//! line in [`capabilities!`]'s list below (and its own file).
//!
//! Dropping the state, with the store, drops every capability's state and every resource still
//! in the table (an open corpus session returns its connection to the pool), whatever the plugin
//! did.

use wasmtime::ResourceLimiter;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{WasiCtxView, WasiView};

use super::answer::AnswerCapability;
use super::backend::Backend;
use super::capability::{Call, Capability, HasRoom, Probe, Report, Room};
use super::config::Config;
use super::conversation::ConversationCapability;
use super::corpus::Corpus;
use super::embeddings::Embeddings;
use super::host_calls::HostCalls;
use super::limits::{Limits, MAX_RESOURCES};
use super::log::Log;
use super::outbound::Outbound;
use super::wasi::Wasi;
use crate::error::PluginError;
use crate::provision::Provision;

/// Declares the capabilities, each as `field: Type`, and composes them: the runtime's options
/// ([`CapabilityOptions`]), a plugin's grants ([`Grants`]), a call's state ([`HostState`]) and
/// report ([`Reports`]), the linker registration, the probes and the table of interfaces.
macro_rules! capabilities {
    ($($(#[$doc:meta])* $field:ident: $capability:ty,)+) => {
        /// Every capability's settings for the whole runtime, with defaults.
        #[derive(Debug, Clone, Default)]
        pub struct CapabilityOptions {
            $($(#[$doc])* pub $field: <$capability as Capability>::Options,)+
        }

        impl CapabilityOptions {
            /// Every capability's options for conformance work.
            pub fn for_conformance(&self) -> Self {
                Self {
                    $($field: <$capability>::for_conformance(&self.$field),)+
                }
            }
        }

        /// What one plugin is granted, capability by capability (made once, when it is loaded).
        #[derive(Clone)]
        pub(crate) struct Grants {
            $(pub(crate) $field: <$capability as Capability>::Grant,)+
        }

        impl Grants {
            /// Every capability's grant to a plugin provisioned with `given`.
            pub(crate) fn new(
                options: &CapabilityOptions,
                given: &Provision,
            ) -> Result<Self, PluginError> {
                Ok(Self {
                    $($field: <$capability>::grant(&options.$field, given)?,)+
                })
            }
        }

        /// The data of one call's `Store`: every capability's state, the call's resource table
        /// and the call's facts. Dropping it (with the store) closes everything the call opened.
        pub struct HostState {
            table: ResourceTable,
            call: Call,
            $(pub(crate) $field: <$capability as Capability>::State,)+
        }

        impl HostState {
            /// A fresh state for one call of a plugin with `grants`.
            pub(crate) fn new(options: &CapabilityOptions, grants: &Grants, call: Call) -> Self {
                let mut table = ResourceTable::new();
                table.set_max_capacity(MAX_RESOURCES);
                Self {
                    $($field: <$capability>::state(&options.$field, &grants.$field, &call),)+
                    table,
                    call,
                }
            }

            /// Ends the call for every capability (after the guest returned or trapped).
            pub(crate) fn finish(&mut self) -> Reports {
                Reports {
                    $($field: <$capability>::finish(&mut self.$field, &self.call),)+
                }
            }
        }

        /// What one call used, capability by capability.
        #[derive(Debug, Clone, Default)]
        pub struct Reports {
            $($(#[$doc])* pub $field: <$capability as Capability>::Report,)+
        }

        impl Reports {
            /// Takes in a later call's reports.
            pub fn absorb(&mut self, later: &Self) {
                $(self.$field.absorb(&later.$field);)+
            }

            /// Each capability's host calls in the call (those that count them), by name.
            pub fn host_calls(&self) -> Vec<(&'static str, HostCalls)> {
                let mut counted = Vec::new();
                $(if let Some(calls) = self.$field.host_calls() {
                    counted.push((stringify!($field), calls));
                })+
                counted
            }

            /// What the call's backends said, whichever capability met them.
            pub fn backend(&self) -> Backend {
                let mut said = Backend::default();
                $(said = said.then(self.$field.backend());)+
                said
            }
        }

        $(
            impl HasRoom<$capability> for HostState {
                fn room(&mut self) -> Room<'_, $capability> {
                    Room {
                        state: &mut self.$field,
                        table: &mut self.table,
                        call: &self.call,
                    }
                }
            }
        )+

        /// Adds every capability's imports to `linker`.
        pub(crate) fn link(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
            $(<$capability>::link(linker)?;)+
            Ok(())
        }

        /// Every capability's conformance probes, over what the suite's calls used.
        pub(crate) fn probes(
            options: &CapabilityOptions,
            grants: &Grants,
            used: &Reports,
        ) -> Vec<Probe> {
            let mut probes = Vec::new();
            $(probes.extend(<$capability>::probes(&options.$field, &grants.$field, &used.$field));)+
            probes
        }

        /// Every interface a capability serves (without version), with what it grants.
        pub fn interfaces() -> impl Iterator<Item = (&'static str, &'static str)> {
            [$(<$capability as Capability>::INTERFACES,)+]
                .into_iter()
                .flatten()
                .copied()
        }
    };
}

capabilities! {
    /// WASI 0.2, granting nothing.
    wasi: Wasi,
    /// The instance's bounds.
    limits: Limits,
    /// Read-only sessions over the corpus.
    corpus: Corpus,
    /// The corpus's embedding model.
    embeddings: Embeddings,
    /// The operator's settings for the plugin.
    config: Config,
    /// The plugin's own log messages.
    log: Log,
    /// HTTP to the origins the operator granted.
    outbound: Outbound,
    /// A generated answer beside the sources, streamed to a client that asks.
    answer: AnswerCapability,
    /// The chat's earlier turns and its answer parameters.
    conversation: ConversationCapability,
}

impl WasiView for HostState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi.ctx,
            table: &mut self.table,
        }
    }
}

/// The store's limiter: the `limits` capability's meter.
pub(crate) fn limiter(state: &mut HostState) -> &mut dyn ResourceLimiter {
    &mut state.limits
}
