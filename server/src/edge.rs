//! The HTTP edge's connections: an accept loop with a connection cap, and per connection a
//! watchdog for the times hyper's HTTP/1 server does not bound by itself. A connection is in one
//! of three phases:
//!
//! - **idle**: between requests (or fresh, nothing sent yet): closed after `idle_timeout`;
//! - **head**: the first bytes of a request have arrived but not its whole head: closed after
//!   `header_timeout` (a slowloris client that drips its headers);
//! - **handling**: the application has the request, until its response's body has been sent.
//!   Reading the request's body is bounded by the handler (`body_timeout`); the response may
//!   take as long as the plugin call does — a lease is unfinished work — and a stream
//!   (`/events`) lasts as long as its reader reads, so no connection timeout applies.
//!
//! Past `max_connections` open connections, new ones wait in the listen backlog until one
//! closes: each connection holds a permit of a semaphore, taken before `accept`.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::task::JoinSet;
use tokio::time::Instant;
use tower::ServiceExt;

/// The edge's bounds on connections, each a `serve` flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeLimits {
    /// From a request's first byte to the end of its head.
    pub header_timeout: Duration,
    /// Reading a request's whole body (enforced by the handlers).
    pub body_timeout: Duration,
    /// A keep-alive connection with no request in progress.
    pub idle_timeout: Duration,
    /// Connections open at once; more wait in the listen backlog.
    pub max_connections: usize,
}

/// Largest request head hyper buffers (request line and headers), in bytes; past it the client
/// gets 431.
const MAX_HEAD_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Copy)]
enum Phase {
    Idle {
        since: Instant,
    },
    Head {
        since: Instant,
    },
    /// The `request`th request of the connection is being answered: from its head to the end of
    /// its response's body (a stream's included).
    Handling {
        request: u64,
    },
}

/// One connection's phase, moved by its reads (idle → head) and by its service (→ handling →
/// idle).
struct ConnectionWatch {
    phase: Mutex<Phase>,
    /// Wakes the watchdog when the phase changes (its deadline changes with it).
    changed: Notify,
    /// A kernel send-buffer size a handler asked for (0: none pending), applied by the socket's
    /// next write.
    send_buffer: AtomicUsize,
    /// A handler asked for the connection to be closed now, whatever it is doing.
    abort: Notify,
    /// Requests the connection has had.
    requests: std::sync::atomic::AtomicU64,
}

/// A request extension: the socket of the request's connection, for handlers that answer with
/// an endless stream.
#[derive(Clone)]
pub struct ConnectionSocket(Arc<ConnectionWatch>);

impl ConnectionSocket {
    /// Caps the connection's kernel send buffer (`SO_SNDBUF`, which also turns off its
    /// autotuning, up to 4 MiB on Linux), so that a peer that stops reading is noticed after
    /// about `bytes` instead of megabytes. Applied before the next write.
    pub fn limit_send_buffer(&self, bytes: usize) {
        self.0.send_buffer.store(bytes.max(1), Ordering::Relaxed);
    }

    /// Closes the connection now, even in the middle of a response (a stream whose reader
    /// stopped reading: a graceful end would wait for its socket to drain).
    pub fn close(&self) {
        self.0.abort.notify_one();
    }
}

impl ConnectionWatch {
    fn new() -> Self {
        Self {
            phase: Mutex::new(Phase::Idle {
                since: Instant::now(),
            }),
            changed: Notify::new(),
            send_buffer: AtomicUsize::new(0),
            abort: Notify::new(),
            requests: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn set(&self, to: impl FnOnce(Phase) -> Phase) {
        let mut phase = self.phase.lock().unwrap_or_else(|p| p.into_inner());
        let next = to(*phase);
        let moved = std::mem::discriminant(&next) != std::mem::discriminant(&*phase);
        *phase = next;
        drop(phase);
        if moved {
            self.changed.notify_one();
        }
    }

    fn bytes_arrived(&self) {
        self.set(|phase| match phase {
            Phase::Idle { .. } => Phase::Head {
                since: Instant::now(),
            },
            other => other,
        });
    }

    /// The connection's next request is being answered; returns its number.
    fn handling(&self) -> u64 {
        let request = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        self.set(|_| Phase::Handling { request });
        request
    }

    /// The `request`th request's response has been sent (or dropped): the connection is idle,
    /// unless a later request is already being answered.
    fn sent(&self, request: u64) {
        self.set(|phase| match phase {
            Phase::Handling { request: current } if current == request => Phase::Idle {
                since: Instant::now(),
            },
            other => other,
        });
    }

    /// When the current phase runs out (`None` while handling), and why.
    fn deadline(&self, limits: &EdgeLimits) -> Option<(Instant, &'static str)> {
        match *self.phase.lock().unwrap_or_else(|p| p.into_inner()) {
            Phase::Idle { since } => Some((since + limits.idle_timeout, "idle timeout")),
            Phase::Head { since } => Some((since + limits.header_timeout, "header timeout")),
            Phase::Handling { .. } => None,
        }
    }
}

/// A connection's socket, reporting the bytes it reads to the watch.
struct WatchedIo {
    stream: TcpStream,
    watch: Arc<ConnectionWatch>,
}

impl AsyncRead for WatchedIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let result = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.watch.bytes_arrived();
        }
        result
    }
}

impl WatchedIo {
    /// Applies a send-buffer size a handler asked for (one atomic load when none is pending).
    fn tune(&self) {
        if self.watch.send_buffer.load(Ordering::Relaxed) != 0 {
            let bytes = self.watch.send_buffer.swap(0, Ordering::Relaxed);
            if let Err(error) =
                rustix::net::sockopt::set_socket_send_buffer_size(&self.stream, bytes)
            {
                tracing::debug!(%error, bytes, "could not set the send buffer size");
            }
        }
    }
}

impl AsyncWrite for WatchedIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.tune();
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.tune();
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }
}

/// A connection's slot: its permit and its place in the open-connections count, both given back
/// when the connection ends, however it ends.
struct Held {
    _permit: OwnedSemaphorePermit,
    open: Arc<AtomicUsize>,
}

impl Held {
    fn new(permit: OwnedSemaphorePermit, open: Arc<AtomicUsize>) -> Self {
        open.fetch_add(1, Ordering::SeqCst);
        Self {
            _permit: permit,
            open,
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.open.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The open connections of a server that has stopped accepting.
pub struct Draining {
    connections: JoinSet<()>,
    closing: watch::Sender<bool>,
}

impl Draining {
    /// Asks every connection to finish its request in progress and close; resolves when all
    /// have closed.
    pub async fn closed(mut self) {
        let _ = self.closing.send(true);
        while self.connections.join_next().await.is_some() {}
    }

    /// Connections still open.
    pub fn open(&self) -> usize {
        self.connections.len()
    }
}

/// Accepts connections on `listener` and serves `app` on each until `shutdown` resolves; then
/// stops accepting (the listener is closed) and returns the connections still open.
pub async fn accept(
    listener: TcpListener,
    app: Router,
    limits: EdgeLimits,
    open: Arc<AtomicUsize>,
    shutdown: impl Future<Output = ()>,
) -> Draining {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let (closing, closing_rx) = watch::channel(false);
    let mut connections = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        // Finished connections leave the set as they end, so it holds only open ones.
        while connections.try_join_next().is_some() {}
        let permit = tokio::select! {
            biased;
            () = &mut shutdown => break,
            permit = Arc::clone(&permits).acquire_owned() => match permit {
                Ok(p) => p,
                Err(_) => break,
            },
        };
        let accepted = tokio::select! {
            biased;
            () = &mut shutdown => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                let held = Held::new(permit, Arc::clone(&open));
                connections.spawn(connection(
                    stream,
                    peer,
                    app.clone(),
                    limits,
                    closing_rx.clone(),
                    held,
                ));
            }
            Err(error) => {
                // Out of file descriptors, say: back off a little rather than spin.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
    drop(listener);
    Draining {
        connections,
        closing,
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    app: Router,
    limits: EdgeLimits,
    mut closing: watch::Receiver<bool>,
    _held: Held,
) {
    let _ = stream.set_nodelay(true);
    let watch = Arc::new(ConnectionWatch::new());
    let io = TokioIo::new(WatchedIo {
        stream,
        watch: Arc::clone(&watch),
    });
    let service_watch = Arc::clone(&watch);
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        let number = service_watch.handling();
        request.extensions_mut().insert(ConnectInfo(peer));
        request
            .extensions_mut()
            .insert(ConnectionSocket(Arc::clone(&service_watch)));
        let (app, watch) = (app.clone(), Arc::clone(&service_watch));
        async move {
            let response = app.oneshot(request.map(Body::new)).await;
            // Idle once the body has been sent, not when the handler returns: a stream
            // (`/events`) or a large body to a slow reader is still being answered.
            response.map(|response| {
                response.map(|body| {
                    Body::new(SentBody {
                        body,
                        sent: Some((watch, number)),
                    })
                })
            })
        }
    });
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        // The watch bounds the head and idle phases (hyper's own header timer would also close
        // an idle keep-alive connection after the header timeout).
        .header_read_timeout(None)
        .max_buf_size(MAX_HEAD_BYTES.max(8192))
        .serve_connection(io, service);
    tokio::pin!(conn);
    let mut shutting_down = false;
    loop {
        if !shutting_down && *closing.borrow() {
            shutting_down = true;
            conn.as_mut().graceful_shutdown();
        }
        let deadline = watch.deadline(&limits);
        let wake = deadline.map_or_else(|| Instant::now() + limits.idle_timeout, |(at, _)| at);
        tokio::select! {
            result = conn.as_mut() => {
                if let Err(error) = result {
                    tracing::debug!(%peer, %error, "connection ended with an error");
                }
                return;
            }
            () = watch.changed.notified() => {}
            () = watch.abort.notified() => {
                tracing::debug!(%peer, "closing connection: its handler gave up on it");
                return;
            }
            () = tokio::time::sleep_until(wake) => {
                if let Some((at, reason)) = watch.deadline(&limits)
                    && Instant::now() >= at
                {
                    // Dropping the connection closes the socket.
                    tracing::debug!(%peer, reason, "closing connection");
                    return;
                }
            }
            changed = closing.changed(), if !shutting_down => {
                if changed.is_err() {
                    shutting_down = true;
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}

/// A response's body that marks its connection idle when it has been sent — or dropped: a
/// client that left, a connection closed.
struct SentBody {
    body: Body,
    /// The connection and the request's number, until marked.
    sent: Option<(Arc<ConnectionWatch>, u64)>,
}

impl SentBody {
    fn mark_sent(&mut self) {
        if let Some((watch, request)) = self.sent.take() {
            watch.sent(request);
        }
    }
}

impl hyper::body::Body for SentBody {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            self.mark_sent();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

impl Drop for SentBody {
    fn drop(&mut self) {
        self.mark_sent();
    }
}
