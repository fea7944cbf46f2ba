//! The span processor: a bounded queue that a request's thread only offers its ended spans to
//! (never waiting), and a thread of its own that batches them and exports each batch (OTLP over
//! HTTP, under a timeout) on a small runtime of its own. When the queue is full — the collector
//! slower than the server, or gone — a span is dropped and counted; a failed export is counted
//! and warned about (at most once a minute), never retried into a backlog.
//!
//! (The SDK's own batch processor blocks its thread on each export with a plain executor, where
//! the hyper client the exporter is given needs a tokio runtime, and it counts what it drops
//! only in its shutdown message.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Mutex, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use opentelemetry::Context;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

use super::settings::ExportSettings;

static EXPORTED: AtomicU64 = AtomicU64::new(0);
static DROPPED: AtomicU64 = AtomicU64::new(0);
static FAILED: AtomicU64 = AtomicU64::new(0);

/// What the exporter did so far in this process (the metrics read it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExportCounts {
    /// Spans the collector took.
    pub exported: u64,
    /// Spans dropped because the queue was full.
    pub dropped: u64,
    /// Spans lost because their export failed (the collector refused them, was unreachable,
    /// or did not answer in time).
    pub failed: u64,
}

/// The counts so far (all 0 when nothing is traced).
pub fn export_counts() -> ExportCounts {
    ExportCounts {
        exported: EXPORTED.load(Ordering::Relaxed),
        dropped: DROPPED.load(Ordering::Relaxed),
        failed: FAILED.load(Ordering::Relaxed),
    }
}

/// What the queue carries: an ended span, or a request to export what is waiting now.
enum Work {
    Span(Box<SpanData>),
    Flush(SyncSender<()>),
}

/// The bounded span processor. See the module docs.
#[derive(Debug)]
pub struct BoundedExport {
    /// `None` once shut down.
    queue: RwLock<Option<SyncSender<Work>>>,
    worker: Mutex<Option<JoinHandle<()>>>,
}

impl BoundedExport {
    /// Starts the export thread, exporting through `exporter` as `settings` say.
    pub fn start<E: SpanExporter + 'static>(
        exporter: E,
        settings: &ExportSettings,
    ) -> std::io::Result<Self> {
        let (queue, waiting) = std::sync::mpsc::sync_channel(settings.queue_spans);
        let plan = Plan {
            batch: settings.batch_spans.max(1),
            delay: settings.schedule_delay,
            timeout: settings.export_timeout,
        };
        let worker = std::thread::Builder::new()
            .name("turnstile-traces".into())
            .spawn(move || export_loop(exporter, waiting, plan))?;
        Ok(Self {
            queue: RwLock::new(Some(queue)),
            worker: Mutex::new(Some(worker)),
        })
    }

    fn queue(&self) -> Option<SyncSender<Work>> {
        self.queue.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

impl SpanProcessor for BoundedExport {
    fn on_start(&self, _: &mut Span, _: &Context) {}

    fn on_end(&self, span: SpanData) {
        if !span.span_context.is_sampled() {
            return;
        }
        let queue = self.queue.read().unwrap_or_else(|p| p.into_inner());
        let Some(queue) = queue.as_ref() else {
            return;
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            queue.try_send(Work::Span(Box::new(span)))
        {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Exports what is waiting, waiting at most 5 s for room in the queue and for the export.
    fn force_flush(&self) -> OTelSdkResult {
        let Some(queue) = self.queue() else {
            return Err(OTelSdkError::AlreadyShutdown);
        };
        let (done, exported) = std::sync::mpsc::sync_channel(1);
        let until = Instant::now() + Duration::from_secs(5);
        let mut work = Work::Flush(done);
        loop {
            match queue.try_send(work) {
                Ok(()) => break,
                Err(TrySendError::Full(back)) if Instant::now() < until => {
                    work = back;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(_) => return Err(OTelSdkError::Timeout(Duration::from_secs(5))),
            }
        }
        exported
            .recv_timeout(until.saturating_duration_since(Instant::now()))
            .map_err(|_| OTelSdkError::Timeout(Duration::from_secs(5)))
    }

    /// Closes the queue: the thread exports what is waiting and ends (waited for at most
    /// `timeout`; past it, the thread is left to finish or be ended with the process).
    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let queue = self.queue.write().unwrap_or_else(|p| p.into_inner()).take();
        if queue.is_none() {
            return Err(OTelSdkError::AlreadyShutdown);
        }
        drop(queue);
        let worker = self.worker.lock().unwrap_or_else(|p| p.into_inner()).take();
        let Some(worker) = worker else {
            return Ok(());
        };
        let until = Instant::now() + timeout;
        while !worker.is_finished() {
            if Instant::now() >= until {
                return Err(OTelSdkError::Timeout(timeout));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = worker.join();
        Ok(())
    }
}

/// How the thread batches.
#[derive(Debug, Clone, Copy)]
struct Plan {
    batch: usize,
    delay: Duration,
    timeout: Duration,
}

/// The export thread: a batch goes when it is full, when its oldest span has waited `delay`,
/// when a flush asks, and when the queue closes.
fn export_loop<E: SpanExporter>(exporter: E, waiting: Receiver<Work>, plan: Plan) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!(%error, "traces: the export thread has no runtime; spans are dropped");
            return;
        }
    };
    let mut batch: Vec<SpanData> = Vec::with_capacity(plan.batch);
    let mut oldest: Option<Instant> = None;
    let mut warned: Option<Instant> = None;
    let mut export = |batch: &mut Vec<SpanData>| {
        if batch.is_empty() {
            return;
        }
        let spans = std::mem::replace(batch, Vec::with_capacity(plan.batch));
        let count = spans.len() as u64;
        let outcome = runtime
            .block_on(async { tokio::time::timeout(plan.timeout, exporter.export(spans)).await });
        match outcome {
            Ok(Ok(())) => {
                EXPORTED.fetch_add(count, Ordering::Relaxed);
            }
            failed => {
                FAILED.fetch_add(count, Ordering::Relaxed);
                if warned.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                    warned = Some(Instant::now());
                    let why = match failed {
                        Err(_) => "the collector did not answer in time".to_owned(),
                        Ok(Err(error)) => error.to_string(),
                        Ok(Ok(())) => unreachable!("an export that succeeded"),
                    };
                    tracing::warn!(
                        spans = count,
                        why = turnstile_host::sanitize(&why, 512),
                        "traces: an export failed; its spans are lost (counted in turnstile_trace_spans_failed_total; this warning is repeated at most once a minute)"
                    );
                }
            }
        }
    };
    loop {
        let wait = oldest.map_or(Duration::from_secs(3600), |at| {
            plan.delay.saturating_sub(at.elapsed())
        });
        match waiting.recv_timeout(wait) {
            Ok(Work::Span(span)) => {
                batch.push(*span);
                oldest.get_or_insert_with(Instant::now);
                if batch.len() >= plan.batch {
                    export(&mut batch);
                    oldest = None;
                }
            }
            Ok(Work::Flush(done)) => {
                export(&mut batch);
                oldest = None;
                let _ = done.try_send(());
            }
            Err(RecvTimeoutError::Timeout) => {
                export(&mut batch);
                oldest = None;
            }
            Err(RecvTimeoutError::Disconnected) => {
                export(&mut batch);
                let _ = exporter.shutdown();
                return;
            }
        }
    }
}
