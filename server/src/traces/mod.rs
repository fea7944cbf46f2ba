//! Traces: OpenTelemetry spans of every request, exported over OTLP/HTTP (protobuf) when the
//! operator names a collector (`--otlp-endpoint`, or the standard `OTEL_EXPORTER_OTLP_*`
//! variables), and the W3C `traceparent`/`tracestate` a trusted proxy sends taken as the
//! request's parent.
//!
//! The spans are `tracing` spans ([`TRACE_TARGET`] for those only traces show; the `request`
//! span the log shows too), made OpenTelemetry spans by `tracing-opentelemetry` and handed to
//! [`export::BoundedExport`]: a bounded queue and a thread of its own, so a slow or absent
//! collector never blocks a request (a span that finds the queue full is dropped and counted).
//! What each part of a request adds: the edge (`request`, a server span), the gate
//! (`gate.wait`), the worker (`plugin.call`, with its host calls as events), the outbound
//! capability (`outbound`, a client span whose context goes out as `traceparent`).

mod context;
mod export;
mod install;
mod settings;

pub use context::{TraceIntake, current_trace_id, trace_id};
pub use export::{ExportCounts, export_counts};
pub use install::{TraceError, Traces, UNTRACED_TARGET};
pub use settings::{DEFAULT_QUEUE_SPANS, ExportSettings, TraceArgs, TraceSettingsError};
pub use turnstile_host::TRACE_TARGET;
