//! Calls with a deadline, for conformance work only (`turnstile check`, a swap's smoke checks):
//! serving never interrupts a call. The call runs on a thread of its own; at the deadline a guest
//! running wasm is stopped at its next epoch check, and one blocked in a host call (a sleep) is
//! abandoned and counted, per engine, until it really ends.
//!
//! The rule that bounds abandoned calls: once one call of an engine is abandoned, that engine's
//! later bounded calls are refused at once (its plugin is hung); and each swap candidate is
//! checked on an engine of its own whose smoke checks stop at the first failure. So a refused
//! candidate leaves at most one call running, a healthy candidate is never refused for another
//! candidate's calls, and a deadline on one engine never interrupts a call on another.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::bindings::Source;
use crate::error::PluginError;
use crate::{CallStats, Plugin};

/// Conformance calls of one engine abandoned past their deadline (blocked in a host call) that
/// may still be running; at this many, that engine's further bounded calls are refused at once.
pub const MAX_ABANDONED_CALLS: usize = 1;
/// After the deadline's epoch tick, how long a running guest gets to reach its trap.
const ABANDON_GRACE: Duration = Duration::from_millis(200);

impl Plugin {
    /// [`Plugin::retrieve_metered`] under the runtime's call deadline (a plugin of a conformance
    /// runtime; without a deadline it is simply `retrieve_metered`). The call runs on a thread
    /// of its own; at the deadline a running guest is stopped at its next epoch check, and one
    /// blocked in a host call (a sleep) is abandoned: it ends when that host call returns. Once
    /// [`MAX_ABANDONED_CALLS`] of the engine's calls are abandoned and still running, its
    /// bounded calls are refused at once.
    pub fn retrieve_bounded(
        self: &Arc<Self>,
        question: &str,
        limit: u32,
    ) -> (Result<Vec<Source>, PluginError>, CallStats) {
        let Some(deadline) = self.call_deadline() else {
            return self.retrieve_metered(question, limit, 0);
        };
        let abandoned = Arc::clone(self.abandoned());
        if abandoned.load(Ordering::SeqCst) >= MAX_ABANDONED_CALLS {
            return (
                Err(PluginError::TimedOut {
                    after: Duration::ZERO,
                    abandoned: MAX_ABANDONED_CALLS,
                }),
                CallStats::default(),
            );
        }
        let (done, outcome) = std::sync::mpsc::sync_channel(1);
        let (plugin, question) = (Arc::clone(self), question.to_owned());
        let spawned = std::thread::Builder::new()
            .name("turnstile-conformance".into())
            .spawn(move || {
                let _ = done.send(plugin.retrieve_metered(&question, limit, 0));
            });
        if let Err(e) = spawned {
            return (
                Err(PluginError::Engine(wasmtime::Error::msg(format!(
                    "cannot start a conformance call: {e}"
                )))),
                CallStats::default(),
            );
        }
        if let Ok(result) = outcome.recv_timeout(deadline) {
            return result;
        }
        // Past the deadline: stop a guest that is running wasm, and give it a moment to trap.
        self.engine().increment_epoch();
        if outcome.recv_timeout(ABANDON_GRACE).is_err() {
            // Blocked in a host call: abandon it, counting it until it really ends.
            abandoned.fetch_add(1, Ordering::SeqCst);
            let still_running = Arc::clone(&abandoned);
            std::thread::spawn(move || {
                let _ = outcome.recv();
                still_running.fetch_sub(1, Ordering::SeqCst);
            });
        }
        (
            Err(PluginError::TimedOut {
                after: deadline,
                abandoned: abandoned.load(Ordering::SeqCst),
            }),
            CallStats::default(),
        )
    }
}
