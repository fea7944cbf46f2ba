//! What a host capability is: one room that owns everything about one thing a plugin can reach —
//! its settings for the whole runtime ([`Capability::Options`], with defaults), what one plugin
//! is granted ([`Capability::Grant`], decided once when the plugin is loaded, from what the
//! operator gave it: the [`Provision`], with the capability's own [`super::Gift`]), what one call holds
//! ([`Capability::State`], in the call's store, dropped with it), its linker registration, what
//! it reports after each call ([`Capability::Report`]) and its conformance probes.
//!
//! The host composes the list in `capabilities/mod.rs`; a capability sees only its own state
//! (through a [`Room`]), the call's resource table and the call's facts, never another's.

use std::sync::Arc;

use wasmtime::component::{HasData, Linker, ResourceTable};
use wasmtime_wasi::WasiView;

use super::backend::Backend;
use super::host_calls::HostCalls;
use crate::call_input::Asked;
use crate::client_link::ClientLink;
use crate::error::PluginError;
use crate::observe::Observer;
use crate::provision::Provision;
use crate::secrets::Secrets;

/// One host capability. See the module docs, and docs/PLUGINS.md ("Adding a capability").
pub trait Capability: Sized + 'static {
    /// The interfaces it serves, without version (`turnstile:retrieval/corpus`,
    /// `wasi:http/outgoing-handler`), each with what it grants a plugin, in words: what the
    /// contract check accepts and `turnstile check` lists.
    const INTERFACES: &'static [(&'static str, &'static str)];

    /// Its settings for the whole runtime (every plugin of the engine), with defaults.
    type Options: Clone + Default + std::fmt::Debug + Send + Sync;
    /// What one plugin is granted: made once from the runtime's options and what the operator
    /// provisioned the plugin with; shared by all its calls.
    type Grant: Clone + Send + Sync;
    /// What one call holds. It lives in the call's store and is dropped with it, whatever the
    /// call did.
    type State: Send;
    /// What one call used, reported when it returns.
    type Report: Report;

    /// Adds its imports to the runtime's linker (once per engine); host functions reach this
    /// capability's state through the store's [`HasRoom::room`] (`T::room` is the getter
    /// bindgen's `add_to_linker` takes).
    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()>;

    /// What a plugin provisioned with `given` is granted (refused with a typed error when the
    /// provision asks for what the options cannot give).
    fn grant(options: &Self::Options, given: &Provision) -> Result<Self::Grant, PluginError>;

    /// A fresh state for one call.
    fn state(options: &Self::Options, grant: &Self::Grant, call: &Call) -> Self::State;

    /// Ends the call's use of the capability (after the guest returned or trapped): flushes what
    /// it buffered, and says what the call used.
    fn finish(state: &mut Self::State, call: &Call) -> Self::Report;

    /// Its options for conformance work (`turnstile check`, a swap's smoke checks), made from
    /// the serving ones: by default the same.
    fn for_conformance(options: &Self::Options) -> Self::Options {
        options.clone()
    }

    /// Its checks in `turnstile check` (and a swap's smoke checks): what it promises, checked
    /// over what every probe call of the suite used (`used`, absorbed call after call).
    fn probes(options: &Self::Options, grant: &Self::Grant, used: &Self::Report) -> Vec<Probe> {
        let _ = (options, grant, used);
        Vec::new()
    }
}

/// What a capability reports after each call. `Default` is "nothing used".
pub trait Report: Clone + Default + std::fmt::Debug + Send {
    /// Takes in a later call's report (the conformance suite reports over all its calls: the
    /// largest memory, the sum of what was dropped).
    fn absorb(&mut self, later: &Self);

    /// What the capability's backend said of the call, if it reaches one (by default, nothing).
    fn backend(&self) -> Backend {
        Backend::default()
    }

    /// The call's host calls of this capability, if it serves host calls that are counted.
    fn host_calls(&self) -> Option<HostCalls> {
        None
    }
}

impl Report for () {
    fn absorb(&mut self, _: &Self) {}
}

/// A capability that serves counted host calls reports them (the corpus, the embedding model).
impl Report for HostCalls {
    fn absorb(&mut self, later: &Self) {
        self.calls = self.calls.saturating_add(later.calls);
        self.failed = self.failed.saturating_add(later.failed);
        self.elapsed += later.elapsed;
    }

    fn host_calls(&self) -> Option<HostCalls> {
        Some(*self)
    }
}

/// The facts of one call, the same for every capability.
#[derive(Clone)]
pub struct Call {
    /// The plugin's name (log lines say which plugin wrote them).
    pub plugin: Arc<str>,
    /// The request the call serves (0 for conformance calls).
    pub request_id: u64,
    /// Told of what the call does, when measured.
    pub observer: Option<Arc<dyn Observer>>,
    /// The plugin's secrets: their values are redacted from every text of the plugin's that
    /// the host shows.
    pub secrets: Arc<Secrets>,
    /// What the request asked beyond its question (limit, conversation, answer stream).
    pub asked: Arc<Asked>,
    /// The client: once it has gone, the call's streamed answer and outbound requests stop.
    pub client: ClientLink,
}

impl Call {
    /// `text` (the plugin's) with every secret's value replaced by `[secret]`.
    pub fn redact(&self, text: &str) -> String {
        self.secrets.redact(text)
    }
}

/// A capability's view of one call's store: its own state, the call's resource table (shared:
/// a handle is an index into it) and the call's facts.
pub struct Room<'a, C: Capability> {
    /// The capability's state for this call.
    pub state: &'a mut C::State,
    /// The call's resource table.
    pub table: &'a mut ResourceTable,
    /// The call's facts.
    pub call: &'a Call,
}

/// What a call's store holds, as capability `C` sees it: the composed host state (`HostState`),
/// which gives each capability its [`Room`] — and is also WASI's view of the call (WASI's own
/// bindings are linked against the store's data, not a room).
pub trait HasRoom<C: Capability>: WasiView + Send + 'static {
    /// The capability's room in this call's store.
    fn room(&mut self) -> Room<'_, C>;
}

/// The [`HasData`] of a capability's bindings: its host functions are implemented on
/// [`Room`], so they can reach nothing but the capability's own state.
pub struct InRoom<C>(std::marker::PhantomData<C>);

impl<C: Capability> HasData for InRoom<C> {
    type Data<'a> = Room<'a, C>;
}

/// One check a capability adds to the conformance suite.
#[derive(Debug, Clone)]
pub struct Probe {
    /// e.g. `hygiene.memory`, `outbound.denied`.
    pub name: String,
    /// What the capability promises.
    pub expected: String,
    /// What was seen: `Ok` passes, `Err` fails.
    pub outcome: Result<String, String>,
}
