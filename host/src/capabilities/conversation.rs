//! The `conversation` capability (contract 0.1.4): the turns before a call's question and what
//! its client asked of the answer, when it came through the chat route; nothing on
//! `/retrieve`. The request's own text, as untrusted as its question; the server has bounded it
//! (turns, bytes, ranges) before any call.

use std::sync::Arc;

use wasmtime::component::Linker;

use super::capability::{Call, Capability, HasRoom, InRoom, Room};
use crate::bindings::turnstile::retrieval::conversation;
use crate::error::PluginError;
use crate::provision::Provision;

pub use crate::call_input::{
    Conversation, MAX_HISTORY_TURNS, MAX_STOP_SEQUENCES, MAX_TURN_BYTES, MAX_USER_BYTES,
    Parameters, Role, Turn,
};

/// The call's conversation.
pub struct ConversationCapability;

impl Capability for ConversationCapability {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[(
        "turnstile:retrieval/conversation",
        "the chat's earlier turns and its client's answer parameters, read-only",
    )];

    type Options = ();
    type Grant = ();
    type State = Option<Arc<Conversation>>;
    type Report = ();

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        conversation::add_to_linker::<T, InRoom<Self>>(linker, T::room)
    }

    fn grant(_: &(), _: &Provision) -> Result<(), PluginError> {
        Ok(())
    }

    fn state(_: &(), _: &(), call: &Call) -> Option<Arc<Conversation>> {
        call.asked.conversation.clone()
    }

    fn finish(_: &mut Option<Arc<Conversation>>, _: &Call) {}
}

impl conversation::Host for Room<'_, ConversationCapability> {
    fn history(&mut self) -> wasmtime::Result<Vec<Turn>> {
        Ok(self
            .state
            .as_ref()
            .map(|c| c.history.clone())
            .unwrap_or_default())
    }

    fn parameters(&mut self) -> wasmtime::Result<Parameters> {
        Ok(self
            .state
            .as_ref()
            .map(|c| c.parameters.clone())
            .unwrap_or_else(|| Conversation::default().parameters))
    }
}
