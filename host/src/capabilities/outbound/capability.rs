//! The `outbound` capability itself: `wasi:http/outgoing-handler` and `wasi:http/types` (WASI
//! 0.2), linked through the room, each call with a fresh `wasi:http` context whose every request
//! passes the plugin's policy ([`super::policy`]).

use std::sync::{Arc, Mutex};

use wasmtime::component::Linker;
use wasmtime_wasi_http::p2::bindings::sync::http::{outgoing_handler, types};
use wasmtime_wasi_http::{WasiHttp, WasiHttpCtx, WasiHttpCtxView};

use super::client::OutboundClient;
use super::grant::OutboundGrant;
use super::options::OutboundOptions;
use super::policy::OutboundHooks;
use super::report::{OutboundReport, Reporter};
use crate::capabilities::capability::{Call, Capability, HasRoom, Probe, Room};
use crate::error::PluginError;
use crate::provision::Provision;

/// Outbound HTTP, to the origins the operator granted.
pub struct Outbound;

/// One call's `wasi:http` context and policy.
pub struct OutboundState {
    ctx: WasiHttpCtx,
    hooks: OutboundHooks,
}

/// `wasi:http`'s view of a call's store: the context, the table, the policy.
fn http_view<T: HasRoom<Outbound>>(store: &mut T) -> WasiHttpCtxView<'_> {
    let Room { state, table, .. } = store.room();
    WasiHttpCtxView {
        ctx: &mut state.ctx,
        table,
        hooks: &mut state.hooks,
    }
}

impl Capability for Outbound {
    const INTERFACES: &'static [(&'static str, &'static str)] = &[
        (
            "wasi:http/outgoing-handler",
            "HTTP requests to the origins the operator granted (none unless granted), bounded",
        ),
        (
            "wasi:http/types",
            "the requests and responses of outgoing-handler",
        ),
    ];

    type Options = OutboundOptions;
    type Grant = Arc<OutboundGrant>;
    type State = OutboundState;
    type Report = OutboundReport;

    fn link<T: HasRoom<Self>>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
        outgoing_handler::add_to_linker::<T, WasiHttp>(linker, http_view::<T>)?;
        types::add_to_linker::<T, WasiHttp>(linker, &types::LinkOptions::default(), http_view::<T>)
    }

    fn grant(
        options: &OutboundOptions,
        given: &Provision,
    ) -> Result<Arc<OutboundGrant>, PluginError> {
        let given = &given.capabilities.outbound;
        let origins = given.origins.clone();
        let client = if origins.is_empty() || options.deny_all {
            None
        } else {
            let client = OutboundClient::new(
                options.connect_timeout,
                options.max_connections_per_origin,
                &options.trusted_roots,
            )
            .map_err(|e| PluginError::Provision {
                name: String::new(),
                reason: e.to_string(),
            })?;
            Some(Arc::new(client))
        };
        Ok(Arc::new(OutboundGrant {
            origins,
            client,
            credentials: Arc::clone(&given.credentials),
        }))
    }

    /// Every request denied, and none counted: conformance work sends nothing to a backend.
    fn for_conformance(options: &OutboundOptions) -> OutboundOptions {
        options.clone().for_conformance()
    }

    fn state(options: &OutboundOptions, grant: &Arc<OutboundGrant>, call: &Call) -> OutboundState {
        OutboundState {
            ctx: WasiHttpCtx::new(),
            hooks: OutboundHooks {
                grant: Arc::clone(grant),
                options: options.clone(),
                reporter: Reporter {
                    plugin: Arc::clone(&call.plugin),
                    request_id: call.request_id,
                    observer: options.observer.0.clone(),
                    tally: Arc::new(Mutex::new(OutboundReport::default())),
                },
                asked: 0,
                call_deadline: tokio::time::Instant::now() + options.call_timeout,
                client: call.client.clone(),
            },
        }
    }

    fn finish(state: &mut OutboundState, _: &Call) -> OutboundReport {
        state
            .hooks
            .reporter
            .tally
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// The grants, listed; and a request to an origin no grant covers, refused by the very
    /// policy serving uses (nothing is sent: the refusal comes first).
    fn probes(
        options: &OutboundOptions,
        grant: &Arc<OutboundGrant>,
        _: &OutboundReport,
    ) -> Vec<Probe> {
        let listed: Vec<&str> = grant.origins.iter().map(|g| g.as_str()).collect();
        let grants = Probe {
            name: "outbound.grants".into(),
            expected: "outbound HTTP only to the origins the operator granted".into(),
            outcome: Ok(if listed.is_empty() {
                "none: every request is denied".into()
            } else {
                format!("granted: {}", listed.join(", "))
            }),
        };
        vec![grants, super::probe::denied(options, grant)]
    }
}
