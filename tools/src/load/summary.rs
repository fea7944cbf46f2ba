//! The result of a run, as written to `summary.json`: settings, totals, latency percentiles,
//! counts by outcome, the plateau, and the per-second series.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plan::Plan;
use super::stats::{Stats, ms};

/// How the plateau is chosen (also written into `summary.json`).
pub const PLATEAU_DEFINITION: &str = "from the moment the last user started plus twice the \
     median latency of the run (the settle time: every user has had time to complete a request \
     sent after the ramp and the queue has refilled), to the moment users stopped sending; \
     requests counted by completion time in whole 100 ms bins; requests/s = requests / window";

/// Everything `turnstile load` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    /// How the run was made.
    pub settings: Settings,
    /// Wall-clock start, seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// The run was stopped early (Ctrl-C).
    pub interrupted: bool,
    /// Seconds from the start until users stopped sending (the duration unless interrupted).
    pub load_s: f64,
    /// Seconds from the start until the last request completed (load plus draining).
    pub elapsed_s: f64,
    /// Requests completed, any outcome.
    pub requests: u64,
    /// Of which failures: not 2xx, or no complete response.
    pub failures: u64,
    /// `requests / elapsed_s`.
    pub requests_per_s: f64,
    /// Requests in flight when users stopped sending (awaited and counted).
    pub in_flight_at_end: u64,
    /// Requests abandoned unrecorded (the drain outlived the timeout, or a second Ctrl-C).
    pub abandoned: u64,
    /// The ramp-up.
    pub ramp: Ramp,
    /// The steady part of the run.
    pub plateau: Plateau,
    /// Latency of every completed request, any outcome (`None` if none completed): from sending
    /// it to its last byte (for a stream, its total time).
    pub latency_ms: Option<Latency>,
    /// `--chat --stream`: the time from sending a request to its first content delta, of every
    /// stream that had one (`None` otherwise; absent outside `--chat`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_ms: Option<Latency>,
    /// Counts by HTTP status code (`"200"`) or error kind (`"timeout"`, `"connect_error"`,
    /// `"body_error"`, `"request_error"`).
    pub statuses: BTreeMap<String, u64>,
    /// One point per second of the run, by completion time.
    pub time_series: Vec<SecondPoint>,
    /// The chart files.
    pub charts: Charts,
}

/// The flags of the run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Settings {
    /// Target URL.
    pub url: String,
    /// Users.
    pub users: u32,
    /// Users started per second.
    pub spawn_rate: f64,
    /// Total run time in seconds, ramp-up included.
    pub duration_s: f64,
    /// Per-request timeout in seconds.
    pub timeout_s: f64,
    /// The JSON body sent (the first of `--bodies`).
    pub body: Value,
    /// The `--bodies` file, if the run rotated bodies from one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bodies_file: Option<PathBuf>,
    /// How many bodies the users took in turn.
    #[serde(default = "one")]
    pub bodies: usize,
    /// Output directory.
    pub output: PathBuf,
    /// `--chat`: what each request asked (absent otherwise; then `url` is the chat route and
    /// `body` one request's, its tag `req:PREFIX-N`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat: Option<ChatSettings>,
}

/// What a `--chat` run asked.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ChatSettings {
    /// The model asked for (`--model`, or the first of `models_url`).
    pub model: String,
    /// `--stream`.
    pub stream: bool,
    /// The question, before each request's tag.
    pub question: String,
    /// Each request's tag is `req:PREFIX-N`, N from 1.
    pub tag_prefix: String,
    /// Where the model list is.
    pub models_url: String,
    /// The per-request timings, relative to the output directory (`requests.jsonl`).
    pub requests_log: String,
}

/// The ramp-up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Ramp {
    /// Users started (fewer than asked if the run ended first).
    pub users_started: u32,
    /// Seconds from the start until the last user started (`None` if not all started).
    pub all_running_at_s: Option<f64>,
}

/// The steady part of the run (see [`PLATEAU_DEFINITION`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Plateau {
    /// How it is chosen.
    pub definition: String,
    /// Start, seconds since the run start (bin-aligned).
    pub start_s: Option<f64>,
    /// End, seconds since the run start (bin-aligned).
    pub end_s: Option<f64>,
    /// Requests completed in it.
    pub requests: u64,
    /// Requests per second in it.
    pub requests_per_s: Option<f64>,
    /// Why there is none, if there is none.
    pub missing_because: Option<String>,
}

/// Latency percentiles (HDR histogram, 3 significant digits), milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Latency {
    /// Fastest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    #[serde(default)]
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
}

/// One second `[second, second + 1)` after the start; requests counted when they completed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SecondPoint {
    /// Seconds since the start at the beginning of this second.
    pub second: u64,
    /// Most users running during the second.
    pub users: u32,
    /// Requests completed in the second (= requests per second).
    pub requests: u64,
    /// Of which failures.
    pub failures: u64,
    /// Median latency of those requests, ms.
    pub p50_ms: Option<f64>,
    /// 99th percentile, ms.
    pub p99_ms: Option<f64>,
    /// Slowest, ms.
    pub max_ms: Option<f64>,
    /// `--chat --stream`: median time to first content delta of the streams completed in the
    /// second, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p50_ms: Option<f64>,
    /// Its 99th percentile, ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_p99_ms: Option<f64>,
    /// By status code or error kind.
    pub statuses: BTreeMap<String, u64>,
}

/// The chart files, relative to the output directory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Charts {
    /// `chart.svg`, if written.
    pub svg: Option<String>,
    /// Why `chart.svg` could not be written.
    pub svg_error: Option<String>,
    /// `chart.png`, if written.
    pub png: Option<String>,
    /// Why `chart.png` was skipped (e.g. no usable system font for text).
    pub png_skipped: Option<String>,
}

/// How the run ended, as observed by the runner.
pub(crate) struct Ending {
    pub started_unix_s: f64,
    pub interrupted: bool,
    pub load_end: Duration,
    pub in_flight_at_end: u64,
    pub abandoned: u64,
    pub users_started: u32,
    pub chat: Option<ChatSettings>,
}

impl Summary {
    /// Builds the summary from the closed measurements.
    pub(crate) fn build(plan: &Plan, stats: &Stats, ending: &Ending) -> Self {
        let requests = stats.requests();
        let elapsed = stats
            .last_completion()
            .map_or(ending.load_end, |l| l.max(ending.load_end));
        let elapsed_s = elapsed.as_secs_f64();
        let latency_ms = Latency::of(stats.latency());
        let ttft_ms = Latency::of(stats.ttft());
        let time_series = stats
            .seconds()
            .iter()
            .zip(0u64..)
            .map(|(s, second)| SecondPoint {
                second,
                users: s.users,
                requests: s.requests,
                failures: s.failures,
                p50_ms: s.p50_us.map(ms),
                p99_ms: s.p99_us.map(ms),
                max_ms: s.max_us.map(ms),
                ttft_p50_ms: s.ttft_p50_us.map(ms),
                ttft_p99_ms: s.ttft_p99_us.map(ms),
                statuses: s.outcomes.iter().map(|(o, n)| (o.key(), *n)).collect(),
            })
            .collect();
        Self {
            settings: Settings {
                url: plan.url.to_string(),
                users: plan.users,
                spawn_rate: plan.spawn_rate,
                duration_s: plan.duration.as_secs_f64(),
                timeout_s: plan.timeout.as_secs_f64(),
                body: match &ending.chat {
                    Some(chat) => serde_json::from_slice(&super::chat::request_body(
                        &chat.model,
                        &chat.question,
                        &format!("{}-N", chat.tag_prefix),
                        chat.stream,
                    ))
                    .unwrap_or(Value::Null),
                    None => serde_json::from_slice(&plan.bodies[0]).unwrap_or(Value::Null),
                },
                bodies_file: plan.bodies_file.clone(),
                bodies: plan.bodies.len(),
                output: plan.output.clone(),
                chat: ending.chat.clone(),
            },
            started_unix_s: ending.started_unix_s,
            interrupted: ending.interrupted,
            load_s: ending.load_end.as_secs_f64(),
            elapsed_s,
            requests,
            failures: stats.failures(),
            requests_per_s: if elapsed_s > 0.0 {
                requests as f64 / elapsed_s
            } else {
                0.0
            },
            in_flight_at_end: ending.in_flight_at_end,
            abandoned: ending.abandoned,
            ramp: Ramp {
                users_started: ending.users_started,
                all_running_at_s: stats.all_running_at().map(|d| d.as_secs_f64()),
            },
            plateau: plateau(stats, ending.load_end),
            latency_ms,
            ttft_ms,
            statuses: stats
                .outcomes()
                .iter()
                .map(|(o, n)| (o.key(), *n))
                .collect(),
            time_series,
            charts: Charts::default(),
        }
    }
}

impl Latency {
    /// The percentiles of `h` (microseconds), if it has any value.
    fn of(h: &hdrhistogram::Histogram<u64>) -> Option<Self> {
        (!h.is_empty()).then(|| Self {
            min: ms(h.min()),
            mean: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
        })
    }
}

/// Shortest plateau worth reporting.
const MIN_PLATEAU: Duration = Duration::from_secs(1);

fn plateau(stats: &Stats, load_end: Duration) -> Plateau {
    let missing = |why: String| Plateau {
        definition: PLATEAU_DEFINITION.into(),
        start_s: None,
        end_s: None,
        requests: 0,
        requests_per_s: None,
        missing_because: Some(why),
    };
    let Some(all_running) = stats.all_running_at() else {
        return missing("not every user was started before the run ended".into());
    };
    let Some(p50_ms) = stats.quantile_ms(0.5) else {
        return missing("no request completed".into());
    };
    let start = all_running + Duration::from_secs_f64(2.0 * p50_ms / 1000.0);
    if start + MIN_PLATEAU > load_end {
        return missing(format!(
            "the run ended {:.1} s after all users were running, before the settle time \
             (2 × median {:.1} ms) plus {} s had passed; run longer",
            load_end.saturating_sub(all_running).as_secs_f64(),
            p50_ms,
            MIN_PLATEAU.as_secs()
        ));
    }
    let (requests, window) = stats.completions_between(start, load_end);
    Plateau {
        definition: PLATEAU_DEFINITION.into(),
        start_s: Some(Stats::bin_ceil_s(start)),
        end_s: Some(Stats::bin_floor_s(load_end)),
        requests,
        requests_per_s: (window > 0.0).then(|| requests as f64 / window),
        missing_because: None,
    }
}

fn one() -> usize {
    1
}
