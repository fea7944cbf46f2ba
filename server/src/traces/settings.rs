//! Where traces go and how many may wait: `--otlp-endpoint` (a config key and
//! `TURNSTILE_OTLP_ENDPOINT` like every flag), else the standard OpenTelemetry variables —
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (taken as it is), `OTEL_EXPORTER_OTLP_ENDPOINT` (a base:
//! `/v1/traces` is added), `OTEL_SDK_DISABLED`, `OTEL_TRACES_EXPORTER`,
//! `OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL`, `OTEL_EXPORTER_OTLP_(TRACES_)TIMEOUT` and the batch
//! processor's `OTEL_BSP_*`. (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER(_ARG)`, `OTEL_SPAN_*_LIMIT` and `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS` are
//! read by the SDK and the exporter themselves.) Nothing named: no traces, and nothing of
//! OpenTelemetry runs.

use std::time::Duration;

use clap::Args;

/// Spans waiting for export at most, by default (`OTEL_BSP_MAX_QUEUE_SIZE`'s default).
pub const DEFAULT_QUEUE_SPANS: u32 = 2_048;
/// Most spans in one export, by default (`OTEL_BSP_MAX_EXPORT_BATCH_SIZE`).
const DEFAULT_BATCH_SPANS: u32 = 512;
/// How long a span may wait for its batch, by default (`OTEL_BSP_SCHEDULE_DELAY`, ms).
const DEFAULT_SCHEDULE_DELAY_MS: u64 = 5_000;
/// How long one export may take, by default (`OTEL_EXPORTER_OTLP_TIMEOUT`, ms).
const DEFAULT_EXPORT_TIMEOUT_MS: u64 = 10_000;
/// Most spans a queue may be given.
const MAX_QUEUE_SPANS: u64 = 1_048_576;

/// `turnstile serve`'s trace flags (flattened into `ServeArgs`).
#[derive(Debug, Clone, Default, Args)]
pub struct TraceArgs {
    /// Export traces to this OpenTelemetry collector, over OTLP/HTTP with protobuf: its base
    /// URL (`http://127.0.0.1:4318`; `/v1/traces` is added unless the URL ends with it). Without
    /// it, the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` / `OTEL_EXPORTER_OTLP_ENDPOINT`
    /// are read; with neither, nothing is traced. A `traceparent` from a --trusted-proxy peer
    /// is the request's parent; outbound requests carry the trace on.
    #[arg(long = "otlp-endpoint", value_name = "URL")]
    pub otlp_endpoint: Option<String>,

    /// Spans waiting for export at most (1..=1048576); default 2048, or
    /// `OTEL_BSP_MAX_QUEUE_SIZE`. When the collector is slower than the server, or gone, a new
    /// span is dropped and counted (`turnstile_trace_spans_total{outcome="dropped"}`), never
    /// waited for.
    #[arg(long = "otlp-queue-spans", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=1_048_576))]
    pub otlp_queue_spans: Option<u32>,
}

/// Where and how spans are exported, resolved from the flags and the environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportSettings {
    /// The full URL spans are posted to (`…/v1/traces`).
    pub endpoint: String,
    /// Spans waiting at most.
    pub queue_spans: usize,
    /// Most spans in one export.
    pub batch_spans: usize,
    /// How long a span may wait for its batch.
    pub schedule_delay: Duration,
    /// How long one export may take.
    pub export_timeout: Duration,
}

/// A trace setting that cannot be used: told at start, before anything is served.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TraceSettingsError {
    /// The endpoint is no http(s) URL.
    #[error(
        "{source_name} must be an http:// or https:// URL of an OTLP/HTTP collector (e.g. http://127.0.0.1:4318): {why}"
    )]
    BadEndpoint {
        /// Where it came from (`--otlp-endpoint`, a variable's name).
        source_name: &'static str,
        /// What is wrong with it (never the URL itself: it may hold a credential).
        why: &'static str,
    },
    /// A protocol other than OTLP/HTTP with protobuf.
    #[error(
        "{variable} asks for `{protocol}`: turnstile exports OTLP over HTTP with protobuf only (`http/protobuf`, the collector's port 4318)"
    )]
    Protocol {
        /// The variable.
        variable: &'static str,
        /// Its value (one of a few words, cut).
        protocol: String,
    },
    /// An exporter other than OTLP.
    #[error(
        "OTEL_TRACES_EXPORTER asks for `{0}`: turnstile exports traces with `otlp` (or `none`)"
    )]
    Exporter(String),
    /// A number that is not one, or out of its range.
    #[error("{variable} must be a whole number in {min}..={max}")]
    Number {
        /// The variable.
        variable: &'static str,
        /// The least it may be.
        min: u64,
        /// The most it may be.
        max: u64,
    },
}

impl TraceArgs {
    /// What to export, with `env` the process's environment: `None` when nothing is named (or
    /// `OTEL_SDK_DISABLED=true`, or `OTEL_TRACES_EXPORTER=none`).
    pub fn resolve(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<ExportSettings>, TraceSettingsError> {
        let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
        if env("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return Ok(None);
        }
        if let Some(exporter) = env("OTEL_TRACES_EXPORTER") {
            match exporter.trim() {
                "none" => return Ok(None),
                "otlp" => {}
                other => return Err(TraceSettingsError::Exporter(cut(other))),
            }
        }
        let endpoint = match (
            &self.otlp_endpoint,
            env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
        ) {
            (Some(flag), _) => with_traces_path(checked(flag, "--otlp-endpoint")?),
            (None, Some(full)) => checked(&full, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")?.to_owned(),
            (None, None) => match env("OTEL_EXPORTER_OTLP_ENDPOINT") {
                Some(base) => with_traces_path(checked(&base, "OTEL_EXPORTER_OTLP_ENDPOINT")?),
                None => return Ok(None),
            },
        };
        for variable in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            if let Some(protocol) = env(variable) {
                if protocol.trim() != "http/protobuf" {
                    return Err(TraceSettingsError::Protocol {
                        variable,
                        protocol: cut(protocol.trim()),
                    });
                }
                break;
            }
        }
        let queue_spans = match self.otlp_queue_spans {
            Some(n) => u64::from(n),
            None => number(&env, "OTEL_BSP_MAX_QUEUE_SIZE", 1, MAX_QUEUE_SPANS)?
                .unwrap_or(u64::from(DEFAULT_QUEUE_SPANS)),
        };
        let batch_spans = number(&env, "OTEL_BSP_MAX_EXPORT_BATCH_SIZE", 1, MAX_QUEUE_SPANS)?
            .unwrap_or(u64::from(DEFAULT_BATCH_SPANS))
            .min(queue_spans);
        let schedule_delay = number(&env, "OTEL_BSP_SCHEDULE_DELAY", 1, 600_000)?
            .unwrap_or(DEFAULT_SCHEDULE_DELAY_MS);
        let timeout = match number(&env, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", 1, 600_000)? {
            Some(ms) => ms,
            None => number(&env, "OTEL_EXPORTER_OTLP_TIMEOUT", 1, 600_000)?
                .unwrap_or(DEFAULT_EXPORT_TIMEOUT_MS),
        };
        Ok(Some(ExportSettings {
            endpoint,
            queue_spans: usize::try_from(queue_spans).unwrap_or(usize::MAX),
            batch_spans: usize::try_from(batch_spans).unwrap_or(usize::MAX),
            schedule_delay: Duration::from_millis(schedule_delay),
            export_timeout: Duration::from_millis(timeout),
        }))
    }
}

/// `url`, if it is an http(s) URL with a host and no credential in it.
fn checked<'a>(url: &'a str, source_name: &'static str) -> Result<&'a str, TraceSettingsError> {
    let url = url.trim();
    let bad = |why| TraceSettingsError::BadEndpoint { source_name, why };
    let uri: http::Uri = url.parse().map_err(|_| bad("not a URL"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(bad("not http:// or https://"));
    }
    let Some(authority) = uri.authority() else {
        return Err(bad("no host"));
    };
    if authority.as_str().contains('@') {
        return Err(bad(
            "a user or password in the URL is refused (give a credential in OTEL_EXPORTER_OTLP_HEADERS)",
        ));
    }
    if uri.query().is_some() {
        return Err(bad("a query in the URL is refused"));
    }
    Ok(url)
}

/// A base URL with OTLP's traces path added (`http://h:4318` → `http://h:4318/v1/traces`,
/// `https://h/otlp` → `https://h/otlp/v1/traces`); a URL that already ends with it, as it is.
fn with_traces_path(base: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.ends_with("/v1/traces") {
        base.to_owned()
    } else {
        format!("{base}/v1/traces")
    }
}

/// The variable `variable` as a number in `min..=max`, if set.
fn number(
    env: &impl Fn(&str) -> Option<String>,
    variable: &'static str,
    min: u64,
    max: u64,
) -> Result<Option<u64>, TraceSettingsError> {
    let Some(value) = env(variable) else {
        return Ok(None);
    };
    match value.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(Some(n)),
        _ => Err(TraceSettingsError::Number { variable, min, max }),
    }
}

/// A value quoted in an error: at most 32 characters of it.
fn cut(value: &str) -> String {
    value.chars().take(32).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(
        flag: Option<&str>,
        vars: &[(&str, &str)],
    ) -> Result<Option<ExportSettings>, TraceSettingsError> {
        let args = TraceArgs {
            otlp_endpoint: flag.map(str::to_owned),
            otlp_queue_spans: None,
        };
        args.resolve(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    fn endpoint(flag: Option<&str>, vars: &[(&str, &str)]) -> Option<String> {
        resolve(flag, vars).unwrap().map(|s| s.endpoint)
    }

    #[test]
    fn nothing_named_is_nothing_traced() {
        assert_eq!(resolve(None, &[]), Ok(None));
        assert_eq!(resolve(None, &[("OTEL_SERVICE_NAME", "x")]), Ok(None));
    }

    #[test]
    fn the_flag_then_the_traces_variable_then_the_base_variable() {
        let base = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318")];
        let both = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
                "http://full:4318/custom",
            ),
        ];
        assert_eq!(
            endpoint(Some("http://flag:4318"), &both).as_deref(),
            Some("http://flag:4318/v1/traces")
        );
        assert_eq!(
            endpoint(None, &both).as_deref(),
            Some("http://full:4318/custom")
        );
        assert_eq!(
            endpoint(None, &base).as_deref(),
            Some("http://base:4318/v1/traces")
        );
        assert_eq!(
            endpoint(Some("https://h/otlp/"), &[]).as_deref(),
            Some("https://h/otlp/v1/traces")
        );
        assert_eq!(
            endpoint(Some("http://h:4318/v1/traces"), &[]).as_deref(),
            Some("http://h:4318/v1/traces")
        );
    }

    #[test]
    fn turned_off_by_the_standard_variables() {
        for off in [
            ("OTEL_SDK_DISABLED", "true"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ] {
            assert_eq!(resolve(Some("http://h:4318"), &[off]), Ok(None));
        }
    }

    #[test]
    fn what_cannot_be_used_is_told_without_the_url() {
        let secret = "http://user:hunter2@h:4318";
        let error = resolve(Some(secret), &[]).unwrap_err();
        assert!(!error.to_string().contains("hunter2"), "{error}");
        assert!(resolve(Some("ftp://h"), &[]).is_err());
        assert!(resolve(Some("not a url"), &[]).is_err());
        let grpc = [("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")];
        assert!(matches!(
            resolve(Some("http://h:4318"), &grpc),
            Err(TraceSettingsError::Protocol { .. })
        ));
        let zipkin = [("OTEL_TRACES_EXPORTER", "zipkin")];
        assert!(resolve(Some("http://h:4318"), &zipkin).is_err());
        let bad = [("OTEL_BSP_MAX_QUEUE_SIZE", "lots")];
        assert!(matches!(
            resolve(Some("http://h:4318"), &bad),
            Err(TraceSettingsError::Number { .. })
        ));
    }

    #[test]
    fn the_batch_processors_variables_are_honoured() {
        let vars = [
            ("OTEL_BSP_MAX_QUEUE_SIZE", "100"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "500"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "700"),
        ];
        let settings = resolve(Some("http://h:4318"), &vars).unwrap().unwrap();
        assert_eq!(settings.queue_spans, 100);
        assert_eq!(settings.batch_spans, 100, "a batch is at most the queue");
        assert_eq!(settings.schedule_delay, Duration::from_millis(50));
        assert_eq!(settings.export_timeout, Duration::from_millis(700));
        let flag = TraceArgs {
            otlp_endpoint: Some("http://h:4318".into()),
            otlp_queue_spans: Some(7),
        };
        let settings = flag
            .resolve(|n| (n == "OTEL_BSP_MAX_QUEUE_SIZE").then(|| "100".into()))
            .unwrap()
            .unwrap();
        assert_eq!(settings.queue_spans, 7, "the flag over the variable");
    }
}
