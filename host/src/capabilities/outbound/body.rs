//! The two bodies of an outbound request, bounded whatever the guest or the upstream does: the
//! request body stops at its cap ([`CappedRequest`]); the response body stops at its cap, and
//! at the between-bytes timeout when a frame is late ([`MeteredResponse`]), counts what it
//! read, holds the request's connection permit until it ends, and reports the request once.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::WaitForCancellationFutureOwned;
use wasmtime_wasi_http::{Error, WasiBody};

use super::observe::OutboundOutcome;
use super::report::Finish;

/// What a request cancelled because its call's client went away answers the guest.
pub const CANCELLED: &str = "cancelled: the client went away";

/// Reads and drops what the guest still writes of a request body that will not be sent (at
/// most `cap` bytes, within `within`). A guest whose body is dropped mid-write can take the
/// broken write for its own failure rather than the request's (componentize-js's `fetch` with a
/// body traps on it); read to its end, the guest sees the request's own error.
pub async fn drain(mut body: WasiBody, cap: u64, within: Duration) {
    let read_all = async {
        let mut read = 0u64;
        while let Some(Ok(frame)) = http_body_util::BodyExt::frame(&mut body).await {
            read += frame.data_ref().map_or(0, |d| d.len() as u64);
            if read > cap {
                break;
            }
        }
    };
    let _ = tokio::time::timeout(within, read_all).await;
}

/// The guest's request body, cut off with `HttpRequestBodySize` past `cap` bytes. Dropped
/// before its end (the connection could not be made), what the guest still writes is drained.
pub struct CappedRequest {
    inner: Option<WasiBody>,
    sent: u64,
    cap: u64,
    finish: Finish,
    /// How long a drain of the rest may take.
    within: Duration,
    /// The body ended (or failed): nothing to drain.
    ended: bool,
}

impl CappedRequest {
    /// The guest's `body`, at most `cap` bytes, its size told to `finish`; the rest drained
    /// within `within` if it is dropped before its end.
    pub fn new(inner: WasiBody, cap: u64, finish: Finish, within: Duration) -> Self {
        Self {
            inner: Some(inner),
            sent: 0,
            cap,
            finish,
            within,
            ended: false,
        }
    }
}

impl Drop for CappedRequest {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        if let (Some(body), Ok(runtime)) =
            (self.inner.take(), tokio::runtime::Handle::try_current())
        {
            runtime.spawn(drain(body, self.cap.saturating_sub(self.sent), self.within));
        }
    }
}

impl Body for CappedRequest {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = ready!(Pin::new(inner).poll_frame(cx));
        if !matches!(frame, Some(Ok(_))) {
            self.ended = true;
        }
        if let Some(Ok(frame)) = &frame
            && let Some(data) = frame.data_ref()
        {
            self.sent += data.len() as u64;
            self.finish.add_bytes_out(data.len() as u64);
            if self.sent > self.cap {
                self.ended = true;
                self.finish.set_outcome(OutboundOutcome::TooLarge);
                return Poll::Ready(Some(Err(Error::HttpRequestBodySize(Some(self.cap)))));
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

/// An upstream's response body as the guest reads it: at most `cap` bytes, no frame later than
/// `between_bytes` after the one before, and the whole of it by `deadline`.
pub struct MeteredResponse {
    inner: hyper::body::Incoming,
    timer: Pin<Box<tokio::time::Sleep>>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    between_bytes: Duration,
    read: u64,
    cap: u64,
    /// The request's connection permit: given back when the body ends or is dropped.
    _permit: Option<OwnedSemaphorePermit>,
    finish: Finish,
    /// Resolves when the call's client goes: the body breaks off (and its connection closes).
    client_left: Pin<Box<WaitForCancellationFutureOwned>>,
}

impl MeteredResponse {
    /// Meters `inner`; `finish` is told how it ends (once: at its end, its error, or its drop).
    pub fn new(
        inner: hyper::body::Incoming,
        between_bytes: Duration,
        deadline: tokio::time::Instant,
        cap: u64,
        permit: Option<OwnedSemaphorePermit>,
        finish: Finish,
        client_left: WaitForCancellationFutureOwned,
    ) -> Self {
        Self {
            inner,
            timer: Box::pin(tokio::time::sleep(between_bytes)),
            deadline: Box::pin(tokio::time::sleep_until(deadline)),
            between_bytes,
            read: 0,
            cap,
            _permit: permit,
            finish,
            client_left: Box::pin(client_left),
        }
    }

    fn fail(
        &mut self,
        outcome: OutboundOutcome,
        error: Error,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        self.finish.set_outcome(outcome);
        self.finish.end();
        Poll::Ready(Some(Err(error)))
    }
}

impl Body for MeteredResponse {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = &mut *self;
        if this.client_left.as_mut().poll(cx).is_ready() {
            return this.fail(
                OutboundOutcome::Cancelled,
                Error::InternalError(Some(CANCELLED.to_owned())),
            );
        }
        if this.deadline.as_mut().poll(cx).is_ready() {
            return this.fail(OutboundOutcome::Timeout, Error::ConnectionReadTimeout);
        }
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(None) => {
                this.finish.end();
                Poll::Ready(None)
            }
            Poll::Ready(Some(Err(e))) => {
                let outcome = if e.is_timeout() {
                    OutboundOutcome::Timeout
                } else {
                    OutboundOutcome::Error
                };
                this.fail(outcome, Error::Hyper(e))
            }
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.read += data.len() as u64;
                    this.finish.add_bytes_in(data.len() as u64);
                    if this.read > this.cap {
                        return this.fail(
                            OutboundOutcome::TooLarge,
                            Error::HttpResponseBodySize(Some(this.cap)),
                        );
                    }
                }
                let next = tokio::time::Instant::now() + this.between_bytes;
                this.timer.as_mut().reset(next);
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Pending => {
                ready!(this.timer.as_mut().poll(cx));
                this.fail(OutboundOutcome::Timeout, Error::ConnectionReadTimeout)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
