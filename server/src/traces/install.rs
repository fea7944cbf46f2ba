//! Turning traces on: the OTLP exporter (through hyper, http or https to the collector), the
//! bounded processor, the tracer provider (its sampler and span limits from the standard
//! variables), W3C trace context as the process's propagator, and the `tracing` layer that
//! makes spans OpenTelemetry spans.

use std::time::Duration;

use opentelemetry::KeyValue;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, filter_fn};
use tracing_subscriber::registry::LookupSpan;

use super::export::BoundedExport;
use super::settings::ExportSettings;

/// The target of the spans the log shows but traces never take: the requests of the routes
/// machines ask all the time (health probes, the metrics scrape).
pub const UNTRACED_TARGET: &str = "turnstile_server::http::untraced";

/// Traces could not be turned on (told at start).
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The OTLP exporter refused its settings.
    #[error("traces: the OTLP exporter could not be set up: {0}")]
    Exporter(String),
    /// The export thread could not start.
    #[error("traces: the export thread could not start: {0}")]
    Thread(#[from] std::io::Error),
}

/// Traces, on: what exports them, until [`Traces::shutdown`].
pub struct Traces {
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    endpoint: String,
}

impl std::fmt::Debug for Traces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Traces")
            .field("endpoint", &self.endpoint)
            .finish_non_exhaustive()
    }
}

impl Traces {
    /// Starts exporting as `settings` say, and makes W3C trace context the process's
    /// propagator (so outbound requests carry the trace).
    pub fn start(settings: &ExportSettings) -> Result<Self, TraceError> {
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
            .map_err(|e| TraceError::Exporter(e.to_string()))?
            .https_or_http()
            .enable_http1()
            .build();
        let client =
            opentelemetry_http::hyper::HyperClient::new(connector, settings.export_timeout, None);
        let resource = resource();
        let mut exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(client)
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(settings.endpoint.clone())
            .with_timeout(settings.export_timeout)
            .build()
            .map_err(|e| TraceError::Exporter(e.to_string()))?;
        opentelemetry_sdk::trace::SpanExporter::set_resource(&mut exporter, &resource);
        let processor = BoundedExport::start(exporter, settings)?;
        let provider = SdkTracerProvider::builder()
            .with_resource(resource)
            .with_span_processor(processor)
            .build();
        let tracer = provider.tracer("turnstile");
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        Ok(Self {
            provider,
            tracer,
            endpoint: settings.endpoint.clone(),
        })
    }

    /// Where spans go (the full URL).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The `tracing` layer that makes turnstile's spans OpenTelemetry spans: the request's (but
    /// for those of [`UNTRACED_TARGET`]: probes and scrapes) and those of
    /// [`super::TRACE_TARGET`] (never a library's), and as their events the warnings and errors
    /// logged in them.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        tracing_opentelemetry::layer()
            .with_tracer(self.tracer.clone())
            .with_tracked_inactivity(false)
            .with_threads(false)
            .with_location(false)
            .with_level(false)
            .with_target(false)
            .with_context_activation(false)
            .with_filter(
                filter_fn(|meta| {
                    let ours =
                        meta.target().starts_with("turnstile") && meta.target() != UNTRACED_TARGET;
                    if meta.is_span() {
                        ours
                    } else {
                        ours && *meta.level() <= tracing::Level::WARN
                    }
                })
                // Info spans at most: below it nothing is asked of this layer (and a `log`
                // record of a dependency is dropped where it is made).
                .with_max_level_hint(LevelFilter::INFO),
            )
    }

    /// Exports what is waiting (at most `timeout`) and stops.
    pub fn shutdown(self, timeout: Duration) {
        if let Err(error) = self.provider.shutdown_with_timeout(timeout) {
            tracing::warn!(%error, "traces: spans still waiting at exit were not all exported");
        }
    }
}

/// The process as the collector names it: `service.name` is `turnstile` unless
/// `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names it; the version is the binary's.
fn resource() -> Resource {
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| v.contains("service.name="));
    let builder = Resource::builder()
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")));
    if named {
        builder.build()
    } else {
        builder.with_service_name("turnstile").build()
    }
}
