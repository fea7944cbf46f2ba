//! The client a call answers, as the call sees it: whether it is still there. The server marks
//! it gone when the client closes its connection (a stream no one reads any more, a request
//! whose handler was dropped); the call's capabilities read it — `answer.append` then fails with
//! `client-gone`, and the call's outbound requests are cancelled, so a well-written plugin
//! returns at once and its slot goes back. Nothing interrupts the plugin itself: the call still
//! ends when the plugin returns.

use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// A call's link to its client. Cheap to clone; every clone sees the same client.
#[derive(Debug, Clone, Default)]
pub struct ClientLink(CancellationToken);

impl ClientLink {
    /// A client that is there until [`ClientLink::gone`] is called (conformance calls: never).
    pub fn new() -> Self {
        Self::default()
    }

    /// The client has gone: every clone sees it, at once.
    pub fn gone(&self) {
        self.0.cancel();
    }

    /// Whether the client has gone.
    pub fn is_gone(&self) -> bool {
        self.0.is_cancelled()
    }

    /// Resolves when the client goes (at once if it has).
    pub fn left(&self) -> WaitForCancellationFutureOwned {
        self.0.clone().cancelled_owned()
    }

    /// A guard that marks the client gone when it is dropped, unless it was disarmed first: held
    /// by whatever would be dropped if the client left (a request's handler, a stream's body).
    pub fn guard(&self) -> ClientGuard {
        ClientGuard(Some(self.clone()))
    }
}

/// Marks its client gone when dropped, unless [`ClientGuard::disarm`]ed.
#[derive(Debug)]
#[must_use = "a guard dropped at once marks the client gone"]
pub struct ClientGuard(Option<ClientLink>);

impl ClientGuard {
    /// The client was served to the end: dropping the guard marks nothing.
    pub fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for ClientGuard {
    fn drop(&mut self) {
        if let Some(link) = self.0.take() {
            link.gone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_guard_marks_every_clone_gone_and_a_disarmed_one_does_not() {
        let link = ClientLink::new();
        let seen = link.clone();
        link.guard().disarm();
        assert!(!seen.is_gone());
        drop(link.guard());
        assert!(seen.is_gone());
    }
}
