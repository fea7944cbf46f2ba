//! One admitted request's plugin call, on a blocking worker that owns its leases — every route
//! that runs a plugin (`/retrieve`, `/v1/chat/completions`) runs it here: the leases are
//! released when the call has really returned (success, error, trap or panic), never because
//! the client left; then what the call gave is settled into an answer or a typed error.

use std::sync::Arc;

use turnstile_corpus::metadata::Link;
use turnstile_host::capabilities::answer::{AnswerSink, FinishReason};
use turnstile_host::capabilities::{AnswerReport, Backend, Conversation};
use turnstile_host::{
    Asked, CallInput, CallStats, ClientLink, Generation, Plugin, PluginError, Source,
};

use super::api::SourceBody;
use super::error::ApiError;
use crate::admission::Admitted;
use crate::metrics::{CallOutcome, Metrics};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use turnstile_host::TRACE_TARGET;

/// What a route asks of a call.
pub(crate) struct CallOrder {
    /// The question (validated: 1..=500 characters).
    pub question: String,
    /// At most this many sources (1..=20).
    pub limit: u32,
    /// The chat around the question (the chat route).
    pub conversation: Option<Arc<Conversation>>,
    /// Where the answer streams as it is made (a streaming client).
    pub stream: Option<AnswerSink>,
    /// The client: marked gone when it leaves, which cancels the call's outbound work.
    pub client: ClientLink,
    /// The route (the `client_gone` count's label).
    pub route: &'static str,
}

/// What a call gave, once it has returned and its leases are back.
pub(crate) struct Finished {
    /// The plugin's sources, or why it failed.
    pub result: Result<Vec<Source>, PluginError>,
    /// Each source's link from the corpus, one per source (empty on failure).
    pub links: Vec<Option<Link>>,
    /// What the call used: its answer and outbound work among it.
    pub stats: CallStats,
    /// What its backends said, and its work with them (`stats.used.backend()`, asked once).
    pub backend: Backend,
    /// The plugin call's own time.
    pub execution_ms: f64,
}

/// A call that gave its sources.
pub(crate) struct Answered {
    /// The sources, with their links, best first.
    pub sources: Vec<SourceBody>,
    /// The answer the plugin made, and how it ended.
    pub answer: AnswerReport,
    /// The plugin call's own time.
    pub execution_ms: f64,
    /// What its backends said, and its work with them.
    pub backend: Backend,
}

/// Starts an admitted request's plugin call on a blocking worker, which owns the leases: they
/// are released when the call has returned, failed, trapped or panicked — not a moment earlier.
/// The generation is the one fixed at admission.
pub(crate) fn start(
    metrics: &Arc<Metrics>,
    admitted: Admitted,
    generation: &Generation,
    order: CallOrder,
    request_id: u64,
) -> tokio::task::JoinHandle<Finished> {
    let plugin = Arc::clone(&generation.plugin);
    let metrics = Arc::clone(metrics);
    // The worker logs inside this request's span, like the handler; from here on every line of
    // the request names the plugin generation that serves it.
    let span = tracing::Span::current();
    let generation_number = generation.number;
    span.record("generation", generation.number);
    span.record("corpus_generation", generation.corpus.number);
    tokio::task::spawn_blocking(move || {
        let _in_request = span.enter();
        let mut admitted = admitted;
        let CallOrder {
            question,
            limit,
            conversation,
            stream,
            client,
            route,
        } = order;
        let started = std::time::Instant::now();
        // The call's own span (traces only): its host calls are its figures, its outbound
        // requests its children.
        let call_span = tracing::info_span!(
            target: TRACE_TARGET,
            "plugin.call",
            turnstile.plugin = plugin.name(),
            turnstile.generation = i64::try_from(generation_number).unwrap_or(i64::MAX),
            turnstile.outcome = tracing::field::Empty,
            otel.status_code = tracing::field::Empty,
        );
        let (result, stats) = call_span.in_scope(|| {
            plugin.call(CallInput {
                question: &question,
                request_id,
                asked: Asked {
                    limit,
                    conversation,
                    stream,
                },
                client: client.clone(),
            })
        });
        let outcome = call_outcome(&result);
        if !call_span.is_disabled() {
            // Each capability's host calls, as figures of the call's span (one per capability,
            // however many calls the plugin made).
            for (capability, calls) in stats.used.host_calls() {
                let key = |what: &str| format!("turnstile.host_calls.{capability}.{what}");
                call_span.set_attribute(key("calls"), i64::from(calls.calls));
                call_span.set_attribute(key("failed"), i64::from(calls.failed));
                call_span.set_attribute(key("ms"), calls.elapsed.as_secs_f64() * 1e3);
            }
        }
        call_span.record("turnstile.outcome", outcome.as_str());
        if outcome != CallOutcome::Ok {
            call_span.record("otel.status_code", "error");
        }
        drop(call_span);
        let took = started.elapsed();
        let execution_ms = millis(took);
        admitted.worked(took);
        let backend = stats.used.backend();
        if backend.requests > 0 {
            // The span carries the call's work with its backends, for every line logged in it
            // from here.
            let span = tracing::Span::current();
            span.record("outbound_requests", backend.requests);
            span.record("outbound_ms", millis(backend.elapsed));
        }
        let failed = result.is_err() || stats.used.answer.finish == Some(FinishReason::Failed);
        let embeddings_busy = result
            .as_ref()
            .err()
            .and_then(PluginError::embeddings_failure);
        if failed && (backend.signal.is_some() || embeddings_busy.is_some_and(|e| e.is_transient()))
        {
            // The call failed because its backend (or the embedding server) turned work away: the
            // adaptive limit backs off
            // instead of learning a fast failure as a latency. (A call that met a 429 and still
            // answered — a retry, a fallback — is an ordinary sample.)
            admitted.mark_dropped();
        } else if failed {
            // Failed on its own: no latency sample (a fast failure must not raise the limit).
            admitted.mark_failed();
        }
        let (waited, held) = (admitted.lease().waited(), admitted.lease().held());
        drop(admitted);
        metrics.admitted(waited, held);
        metrics.call(outcome, stats.instantiate);
        if client.is_gone() {
            metrics.client_gone(route);
        }
        // The sources' links are read once the slot is given back: they are the corpus's, not
        // the plugin's work (and a plugin cannot make one up).
        let links = match &result {
            Ok(sources) => source_links(&plugin, sources),
            Err(_) => Vec::new(),
        };
        Finished {
            result,
            links,
            stats,
            backend,
            execution_ms,
        }
    })
}

/// What a finished call answers: its sources and answer, or the typed error — 503/502 when it
/// failed because of its backend (keeping the sources it found, when the plugin returned them
/// beside a failed answer), 500 when the plugin failed on its own (the cause is logged).
pub(crate) fn settle(
    joined: Result<Finished, tokio::task::JoinError>,
    plugin: &Plugin,
    request_id: u64,
) -> Result<Answered, ApiError> {
    let finished = match joined {
        Ok(finished) => finished,
        Err(join) => {
            tracing::error!(plugin = plugin.name(), error = %join, "plugin worker panicked");
            return Err(ApiError::Internal { request_id });
        }
    };
    let Finished {
        result,
        links,
        stats,
        backend,
        execution_ms,
    } = finished;
    match result {
        Ok(sources) => {
            let sources: Vec<SourceBody> = sources
                .into_iter()
                .zip(links)
                .map(|(source, link)| SourceBody::of(source, link))
                .collect();
            if stats.used.answer.finish == Some(FinishReason::Failed) {
                let error = ApiError::upstream(backend.clone(), request_id, Some(sources));
                tracing::warn!(
                    plugin = plugin.name(),
                    upstream = error_code(&error),
                    why = stats.used.log.last_warning.as_deref(),
                    "the plugin's answer failed; its sources are kept"
                );
                return Err(error);
            }
            Ok(Answered {
                sources,
                answer: stats.used.answer,
                execution_ms,
                backend,
            })
        }
        Err(error) => {
            let answer = if let Some(failure) = error.embeddings_failure() {
                ApiError::embeddings(failure, request_id)
            } else if backend.spoke() && matches!(error, PluginError::Guest(_)) {
                // A plugin that failed after its backend refused or failed: the backend's word
                // is what the client can act on.
                ApiError::upstream(backend, request_id, None)
            } else {
                ApiError::Internal { request_id }
            };
            tracing::error!(
                plugin = plugin.name(),
                %error,
                upstream = error_code(&answer),
                "plugin call failed"
            );
            Err(answer)
        }
    }
}

/// An upstream error's code, for the log.
fn error_code(error: &ApiError) -> Option<&'static str> {
    match error {
        ApiError::Upstream { code, .. } => Some(code.as_str()),
        _ => None,
    }
}

/// A duration in milliseconds, to the microsecond (`1.4`, not `1.4003780000000001`): what the
/// answer's `timing` and the log show. A clock's nanoseconds say nothing more about a call.
pub(crate) fn millis(duration: std::time::Duration) -> f64 {
    (duration.as_nanos() as f64 / 1e3).round() / 1e3
}

/// The url and fields the corpus holds for each of `sources`' documents, in order. They add to
/// an answer and never decide it: if they cannot be read (the corpus's session budget, a read
/// error), the sources go without them and the cause is logged.
pub(crate) fn source_links(plugin: &Plugin, sources: &[Source]) -> Vec<Option<Link>> {
    let ids: Vec<&str> = sources.iter().map(|s| s.id.as_str()).collect();
    match plugin.corpus().links(&ids) {
        Ok(links) => links,
        Err(error) => {
            tracing::warn!(%error, "the sources' links could not be read: answered without them");
            vec![None; sources.len()]
        }
    }
}

/// How a plugin call ended, as the metrics count it.
fn call_outcome(result: &Result<Vec<Source>, PluginError>) -> CallOutcome {
    match result {
        Ok(_) => CallOutcome::Ok,
        Err(PluginError::Guest(_)) => CallOutcome::PluginError,
        Err(PluginError::Contract(_)) => CallOutcome::Contract,
        Err(_) => CallOutcome::Trap,
    }
}
