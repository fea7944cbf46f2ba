//! `turnstile serve` settings: a plain documented struct with defaults, read from a file, the
//! environment (`TURNSTILE_*`) and flags. Invalid values are refused with the flag, the value and
//! the range.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

use crate::edge::EdgeLimits;
use crate::http::HealthPolicy;
use crate::http::live::hub::LiveConfig;
use crate::logging::LogFormat;
use turnstile_gate::{
    AdaptiveConfig, AdaptiveConfigError, FlowConfig, GateConfig, GateConfigError,
};
use turnstile_global::{FailureMode, GlobalConfig};
use turnstile_host::{PluginConfig, PluginConfigError, PluginSource, Sha256Hex};

/// Flags of `turnstile serve`. Each is also a key of the `--config` file (the flag's name
/// without `--`) and an environment variable (`TURNSTILE_` and the name in capitals, `-` as
/// `_`); a flag overrides the environment, which overrides the file (`turnstile_config`, which
/// adds `--config FILE`; docs/turnstile.example.toml is such a file).
#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Log lines as text or as JSON objects (one per line).
    #[arg(long = "log-format", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log lines that may wait for a slow log sink (16..=1048576); past them a new line is
    /// dropped whole and counted (`turnstile_log_lines_dropped_total`): the log never blocks
    /// serving.
    #[arg(long = "log-buffer-lines", default_value_t = crate::logging::LOG_BUFFER_LINES,
          value_parser = clap::value_parser!(u64).range(16..=1_048_576))]
    pub log_buffer_lines: u64,

    /// One line per request when it completes (route, status, plugin generation, queue and
    /// execution milliseconds, inside the request's span); `--access-log false` turns it off.
    #[arg(long = "access-log", default_value_t = true, action = clap::ArgAction::Set)]
    pub access_log: bool,

    /// Address to listen on. The live page is `/dashboard` there (`GET /` leads to it): at the
    /// default, http://127.0.0.1:8080/dashboard.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// Serve on this inherited, already-listening TCP socket, a descriptor (3..=65535), instead of
    /// binding `--listen` (used by tests and `turnstile drive` to avoid port races).
    #[arg(long, value_parser = clap::value_parser!(i32).range(3..=65535))]
    pub fd: Option<i32>,

    /// Plugin component to serve (default: the embedded retrieval plugin).
    #[arg(long)]
    pub plugin: Option<PathBuf>,

    /// Refuse to start unless the plugin file has this sha256 (hex).
    #[arg(long = "plugin-sha256")]
    pub plugin_sha256: Option<Sha256Hex>,

    /// Bearer token for `/admin/*` (and `/state` when listening beyond loopback). Without one,
    /// those endpoints answer loopback clients only. Prefer the environment variable: flags are
    /// visible to other users of the machine.
    #[arg(long = "admin-token")]
    pub admin_token: Option<String>,

    /// What the plugin is given: its settings, its secrets, the origins it may reach, the
    /// credentials the host adds, the outbound bounds (the flags `check` and `eval` take too).
    #[command(flatten)]
    pub given: turnstile_host::PluginArgs,

    /// Corpus JSON Lines file, plain or gzip (default: the embedded Python-summary corpus).
    /// `POST /admin/corpus` and SIGHUP swap it at run time.
    #[arg(long)]
    pub corpus: Option<PathBuf>,

    /// Refuse to start unless the corpus's JSON Lines (decompressed) have this sha256 (hex);
    /// later corpus swaps must then name theirs.
    #[arg(long = "corpus-sha256")]
    pub corpus_sha256: Option<Sha256Hex>,

    /// Largest corpus read, at start or by a swap, in MiB of JSON Lines, decompressed
    /// (1..=4096): the bound of a corpus's memory (a swap holds at most three: docs/CORPUS.md).
    #[arg(long = "corpus-max-mib", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub corpus_max_mib: u32,

    /// A plugin instance's memory: its cap, initialisation and what stays resident.
    #[command(flatten)]
    pub memory: super::memory_args::PluginMemoryArgs,

    /// Directory for the corpus index and precompiled plugins (default: `$XDG_CACHE_HOME/turnstile`
    /// or `~/.cache/turnstile`). Created 0700; used only when owned by this user and not
    /// writable by group or others, else the cache is off (with a warning).
    #[arg(long = "cache-dir")]
    pub cache_dir: Option<PathBuf>,

    /// Do not reuse or write precompiled plugin artifacts.
    #[arg(long = "no-precompiled-cache")]
    pub no_precompiled_cache: bool,

    /// The cache's bound (`--cache-max-mib`).
    #[command(flatten)]
    pub cache: super::cache_args::CacheArgs,

    /// The embedding model, when not the built-in one (`--embeddings URL`).
    #[command(flatten)]
    pub embeddings: turnstile_embed::EmbeddingsArgs,

    /// Where traces go (`--otlp-endpoint`), and how many spans may wait.
    #[command(flatten)]
    pub traces: crate::traces::TraceArgs,

    /// Requests whose plugin call may run at once (1..=1024), or `auto`: a limit that follows
    /// the calls' latency, between --max-active-min and --max-active-max.
    #[arg(long = "max-active", default_value_t = MaxActive::Fixed(4), value_parser = parse_max_active)]
    pub max_active: MaxActive,

    /// With --max-active auto: the floor of the limit (1..=1024).
    #[arg(long = "max-active-min", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_active_min: u32,

    /// With --max-active auto: the ceiling of the limit (1..=1024), and the most calls ever run.
    #[arg(long = "max-active-max", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_active_max: u32,

    /// With --max-active auto: where the limit starts (1..=1024), by default --max-active-min.
    #[arg(long = "max-active-initial",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub max_active_initial: Option<u32>,

    /// With --max-active auto: how much slower than their baseline calls may get before the
    /// limit comes down, as a factor from 1.0 to 4.0.
    #[arg(long = "max-active-tolerance", default_value_t = 1.2)]
    pub max_active_tolerance: f64,

    /// Requests that may wait for a slot, first in first out (0..=100000); more get 429.
    #[arg(long = "max-waiting", default_value_t = 64)]
    pub max_waiting: usize,

    /// How long a request may wait for a slot, in milliseconds (1..=300000); then 503. Size it
    /// to the backend: the last of n requests at once waits about n / --max-active calls' time
    /// (1 s calls, --max-active 5: 30 at once wait up to 5 s).
    #[arg(long = "wait-ms", default_value_t = 5000)]
    pub wait_ms: u64,

    /// The request header whose value names the request's flow (a tenant, an API key's id):
    /// each flow waits in its own FIFO lane and freed slots go to the lanes in turn, so one
    /// flow's flood does not hold up the others. Off by default: one FIFO for every request.
    #[arg(long = "flow-header", value_parser = parse_flow_header)]
    pub flow_header: Option<String>,

    /// Flows live at once with --flow-header (1..=10000); new names past them share one
    /// overflow flow.
    #[arg(long = "max-flows", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub max_flows: u32,

    /// Requests one flow may have waiting with --flow-header (0..=100000), besides
    /// --max-waiting for all (default: half of --max-waiting, rounded up, so one flow never
    /// fills the queue); more get 429.
    #[arg(long = "max-waiting-per-flow",
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub max_waiting_per_flow: Option<u32>,

    /// A flow's weight with --flow-header, `NAME=W` (W 1..=1000; repeatable): while several
    /// flows wait, a flow takes W freed slots per turn.
    #[arg(long = "flow-weights", value_name = "NAME=W", value_parser = parse_flow_weight)]
    pub flow_weights: Vec<(String, u32)>,

    /// The weight of every flow --flow-weights does not name (1..=1000).
    #[arg(long = "flow-default-weight", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1_000))]
    pub flow_default_weight: u32,

    /// From a request's first byte to the end of its head, in milliseconds (1..=600000); a
    /// client slower than that (a slowloris) is disconnected.
    #[arg(long = "header-timeout-ms", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub header_timeout_ms: u64,

    /// Reading a request's whole body, in milliseconds (1..=600000); slower gets 408.
    #[arg(long = "body-timeout-ms", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub body_timeout_ms: u64,

    /// How long a keep-alive connection may wait for its next request, in milliseconds
    /// (1..=3600000).
    #[arg(long = "idle-timeout-ms", default_value_t = 60_000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub idle_timeout_ms: u64,

    /// Connections open at once (1..=100000); more wait in the listen backlog until one closes.
    #[arg(long = "max-connections", default_value_t = 1024,
          value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_connections: u64,

    /// A plugin call running longer than this, in milliseconds (1..=86400000), makes `/readyz`
    /// answer 503 `degraded` (calls are never interrupted: a load balancer should stop sending
    /// traffic here instead).
    #[arg(long = "stuck-after-ms", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub stuck_after_ms: u64,

    /// A plugin call running longer than this, in milliseconds (1..=86400000), makes `/healthz`
    /// fail too, so an orchestrator's liveness probe restarts the process — the only thing that
    /// ends such a call. Off unless set.
    #[arg(long = "stuck-unhealthy-after-ms",
          value_parser = clap::value_parser!(u64).range(1..=86_400_000))]
    pub stuck_unhealthy_after_ms: Option<u64>,

    /// `/events` streams (the live page's) open at once (1..=10000); more get 503
    /// `too_many_subscribers`.
    #[arg(long = "max-subscribers", default_value_t = 32,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_subscribers: u64,

    /// How often `/events` sends new gate events and a snapshot, in milliseconds (10..=60000).
    #[arg(long = "events-interval-ms", default_value_t = 250,
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub events_interval_ms: u64,

    /// Redis for a global limit shared by every replica with the same `--global-key`
    /// (`redis://host:port[/db]`). Off unless set; needs `--global-max-active`.
    #[arg(long = "redis-url", value_name = "URL")]
    pub redis_url: Option<String>,

    /// Plugin calls running at once across every replica (1..=100000); needs `--redis-url`.
    #[arg(long = "global-max-active",
          value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub global_max_active: Option<u32>,

    /// Requests waiting for a global lease across every replica (0..=1000000).
    #[arg(long = "global-max-waiting", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(0..=1_000_000))]
    pub global_max_waiting: u32,

    /// The name replicas of one deployment share (letters, digits, `-`, `_`, `.`; at most 64).
    #[arg(long = "global-key", default_value = "turnstile", value_parser = parse_global_key)]
    pub global_key: String,

    /// A global lease not renewed for this long, in milliseconds (300..=600000), is given back: a
    /// dead replica's permits return within it plus one heartbeat (a third of it). Also the grace
    /// without new leases after Redis lost writes (its data gone, restarted or failed over, gone
    /// back to older data) or at a deployment's first start.
    #[arg(long = "global-lease-ttl-ms", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(300..=600_000))]
    pub global_lease_ttl_ms: u64,

    /// When Redis cannot be reached: `open` admits on the local gate alone (counted), `closed`
    /// answers 503 `global_unavailable`.
    #[arg(long = "global-failure", value_enum, default_value_t = GlobalFailure::Open)]
    pub global_failure: GlobalFailure,

    /// On SIGTERM/SIGINT, how long to let in-flight requests and running workers finish, in
    /// milliseconds (1..=3600000); past it the process exits with status 1.
    #[arg(long = "drain-ms", default_value_t = 30_000,
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub drain_ms: u64,

    /// Who reaches what: the allowed `Host` names, the swap roots, the trusted proxies.
    #[command(flatten)]
    pub access: super::access_args::AccessArgs,
}

/// What the global limit does when Redis fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GlobalFailure {
    /// Admit on the local gate alone, and count it.
    Open,
    /// Refuse with 503 `global_unavailable`.
    Closed,
}

fn parse_global_key(value: &str) -> Result<String, String> {
    let ok = !value.is_empty()
        && value.len() <= 64
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(value.to_owned())
    } else {
        Err("letters, digits, '-', '_' or '.', 1 to 64 of them".to_owned())
    }
}

/// Why `serve` settings are refused; each names the flag, the value and the allowed range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeConfigError {
    /// A gate limit out of range.
    #[error("{flag}: {source}")]
    Gate {
        /// `--max-active`, `--max-waiting` or `--wait-ms`.
        flag: &'static str,
        /// What is wrong.
        source: GateConfigError,
    },
    /// Invalid `--plugin-config` entries.
    #[error("--plugin-config: {0}")]
    PluginConfig(#[from] PluginConfigError),
    /// Adaptive limit settings that do not hold together.
    #[error("{flag}: {message}")]
    Adaptive {
        /// `--max-active-min` or `--max-active-tolerance`.
        flag: &'static str,
        /// What is wrong.
        message: String,
    },
    /// Flow settings that do not hold together.
    #[error("{flag}: {message}")]
    Flows {
        /// `--flow-weights`.
        flag: &'static str,
        /// What is wrong.
        message: String,
    },
    /// `--redis-url` and `--global-max-active` go together.
    #[error(
        "--redis-url and --global-max-active go together: set both for a global limit, or neither"
    )]
    GlobalIncomplete,
}

impl ServeConfigError {
    /// The flag the problem is about (for `--redis-url` with `--global-max-active`, the first).
    pub fn flag(&self) -> &'static str {
        match self {
            Self::Gate { flag, .. } => flag,
            Self::PluginConfig(_) => "--plugin-config",
            Self::Flows { flag, .. } | Self::Adaptive { flag, .. } => flag,
            Self::GlobalIncomplete => "--redis-url",
        }
    }

    /// What is wrong, without the flag ([`Self::flag`]) or the gate's machine-readable code
    /// (`invalid_capacity: `): a config problem names its setting once, where it came from.
    pub fn reason(&self) -> String {
        match self {
            Self::Gate {
                source:
                    GateConfigError::InvalidCapacity {
                        value, min, max, ..
                    },
                ..
            } => format!("must be {min}..={max}, got {value}"),
            Self::Gate {
                source: GateConfigError::InvalidWaitDeadline(deadline),
                ..
            } => format!("must be 1..=300000 ms, got {} ms", deadline.as_millis()),
            Self::PluginConfig(e) => e.to_string(),
            Self::Flows { message, .. } | Self::Adaptive { message, .. } => {
                without_code(message).to_owned()
            }
            Self::GlobalIncomplete => {
                "needs --global-max-active: set both for a global limit, or neither".to_owned()
            }
        }
    }
}

/// `invalid_capacity: max_active must be …` → `max_active must be …`: the gate's errors begin
/// with their code (for the HTTP API and logs), which a person fixing a setting does not need.
fn without_code(message: &str) -> &str {
    match message.split_once(": ") {
        Some((code, rest))
            if !code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') =>
        {
            rest
        }
        _ => message,
    }
}

impl ServeArgs {
    /// Where the plugin comes from.
    pub fn plugin_source(&self) -> PluginSource {
        self.plugin
            .clone()
            .map_or(PluginSource::Embedded, PluginSource::File)
    }

    /// The plugin's settings, validated as every plugin setting is (see [`plugin_config`]).
    pub fn plugin_config(&self) -> Result<PluginConfig, ServeConfigError> {
        Ok(self.given.config()?)
    }

    /// The gate's limits, validated; the error names the flag, the value and the range.
    pub fn gate_config(&self) -> Result<GateConfig, ServeConfigError> {
        let max_active = match self.max_active {
            MaxActive::Fixed(n) => n,
            MaxActive::Auto => self.max_active_max as usize,
        };
        GateConfig::new(
            max_active,
            self.max_waiting,
            Duration::from_millis(self.wait_ms),
        )
        .map_err(|source| {
            let flag = match &source {
                GateConfigError::InvalidCapacity {
                    name: "max_active", ..
                } => "--max-active",
                GateConfigError::InvalidCapacity { .. } => "--max-waiting",
                GateConfigError::InvalidWaitDeadline(_) => "--wait-ms",
            };
            ServeConfigError::Gate { flag, source }
        })
    }

    /// The adaptive limit's settings, with `--max-active auto`.
    pub fn adaptive_config(&self) -> Result<Option<AdaptiveConfig>, ServeConfigError> {
        if self.max_active != MaxActive::Auto {
            return Ok(None);
        }
        let (min, max) = (self.max_active_min as usize, self.max_active_max as usize);
        let initial = self.max_active_initial.map_or(min, |n| n as usize);
        AdaptiveConfig::new(min, max, initial, self.max_active_tolerance)
            .map(Some)
            .map_err(|e| ServeConfigError::Adaptive {
                flag: match e {
                    AdaptiveConfigError::Tolerance(_) => "--max-active-tolerance",
                    AdaptiveConfigError::Limits { .. } => "--max-active-min",
                },
                message: e.to_string(),
            })
    }

    /// How flows share the wait queue, with `--flow-header`; `None` without (one FIFO).
    pub fn flow_config(&self) -> Result<Option<FlowConfig>, ServeConfigError> {
        if self.flow_header.is_none() {
            return Ok(None);
        }
        let mut weights = BTreeMap::new();
        for (name, weight) in &self.flow_weights {
            if weights.insert(name.clone(), *weight).is_some() {
                return Err(ServeConfigError::Flows {
                    flag: "--flow-weights",
                    message: format!("the flow {name} is given twice"),
                });
            }
        }
        let per_flow = self
            .max_waiting_per_flow
            .map_or(FlowConfig::fair_share(self.max_waiting), |n| n as usize);
        FlowConfig::new(
            self.max_flows as usize,
            per_flow,
            weights,
            self.flow_default_weight,
        )
        .map(Some)
        .map_err(|e| ServeConfigError::Flows {
            flag: "--flow-weights",
            message: e.to_string(),
        })
    }

    /// Every check beyond each flag's own bounds (those clap applies): the gate's limits, the
    /// plugin's settings and the global limit's — every problem, not the first.
    pub fn validate(&self) -> Result<(), Vec<ServeConfigError>> {
        let problems: Vec<ServeConfigError> = [
            self.gate_config().err(),
            self.adaptive_config().err(),
            self.flow_config().err(),
            self.plugin_config().err(),
            self.global_config().err(),
        ]
        .into_iter()
        .flatten()
        .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems)
        }
    }

    /// The global limit's settings, if one is set.
    pub fn global_config(&self) -> Result<Option<GlobalConfig>, ServeConfigError> {
        match (&self.redis_url, self.global_max_active) {
            (None, None) => Ok(None),
            (Some(url), Some(max_active)) => Ok(Some(GlobalConfig {
                url: url.clone(),
                max_active,
                max_waiting: self.global_max_waiting,
                key: self.global_key.clone(),
                lease_ttl: Duration::from_millis(self.global_lease_ttl_ms),
                failure: match self.global_failure {
                    GlobalFailure::Open => FailureMode::Open,
                    GlobalFailure::Closed => FailureMode::Closed,
                },
            })),
            _ => Err(ServeConfigError::GlobalIncomplete),
        }
    }

    /// The edge's bounds on connections and bodies.
    pub fn edge_limits(&self) -> EdgeLimits {
        EdgeLimits {
            header_timeout: Duration::from_millis(self.header_timeout_ms),
            body_timeout: Duration::from_millis(self.body_timeout_ms),
            idle_timeout: Duration::from_millis(self.idle_timeout_ms),
            max_connections: self.max_connections as usize,
        }
    }

    /// Bounds of the live view.
    pub fn live_config(&self) -> LiveConfig {
        LiveConfig {
            max_subscribers: self.max_subscribers as usize,
            interval: Duration::from_millis(self.events_interval_ms),
        }
    }

    /// When a running call counts as stuck.
    pub fn health_policy(&self) -> HealthPolicy {
        HealthPolicy {
            stuck_after: Duration::from_millis(self.stuck_after_ms),
            unhealthy_after: self.stuck_unhealthy_after_ms.map(Duration::from_millis),
        }
    }
}

/// `--flow-header`: an HTTP header name, kept lowercase.
fn parse_flow_header(name: &str) -> Result<String, String> {
    let header = axum::http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not an HTTP header name"))?;
    Ok(header.as_str().to_owned())
}

/// `--flow-weights NAME=W`: a flow name and its weight, 1..=1000.
fn parse_flow_weight(entry: &str) -> Result<(String, u32), String> {
    let (name, weight) = entry
        .split_once('=')
        .ok_or_else(|| format!("expected NAME=W, got {entry:?}"))?;
    if !turnstile_gate::valid_flow_name(name) {
        return Err(format!(
            "a flow name is 1..={} bytes of A-Z a-z 0-9 . _ : -, got {name:?}",
            turnstile_gate::MAX_FLOW_NAME_BYTES
        ));
    }
    let weight: u32 = weight
        .parse()
        .ok()
        .filter(|w| turnstile_gate::WEIGHT_RANGE.contains(w))
        .ok_or_else(|| format!("the weight of {name} must be 1..=1000, got {weight:?}"))?;
    Ok((name.to_owned(), weight))
}

/// `--max-active`: a fixed limit, or `auto`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MaxActive {
    /// This many calls at once.
    Fixed(usize),
    /// A limit that follows the calls' latency (`turnstile_gate::AdaptiveConfig`).
    Auto,
}

impl std::fmt::Display for MaxActive {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Fixed(n) => write!(f, "{n}"),
            Self::Auto => f.write_str("auto"),
        }
    }
}

/// `--max-active N|auto` (the range of N is the gate's, checked with its other limits).
fn parse_max_active(value: &str) -> Result<MaxActive, String> {
    if value == "auto" {
        return Ok(MaxActive::Auto);
    }
    value
        .parse()
        .map(MaxActive::Fixed)
        .map_err(|_| format!("expected a number of calls or `auto`, got {value:?}"))
}
