//! Loading what `serve` needs — the corpus index, the plugin, the gates, the metrics — before
//! anything is served: this is startup work, never done on a request path.

use std::sync::Arc;

use anyhow::Context;
use turnstile_corpus::{
    CorpusIndex, CorpusPool, EmbeddingModel, Observation, RemoteModel, read_corpus_within,
};
use turnstile_gate::{Gate, GateOptions};
use turnstile_host::cache::Cache;
use turnstile_host::capabilities::outbound::{Credentials, Observed, Origins};
use turnstile_host::swap::{CorpusOptions, HotSwap, Runtimes, SwapObserver, SwapRoots};
use turnstile_host::{
    Observer, Plugin, PluginError, PluginRuntime, PluginSlot, PluginSource, Provision,
    RetrieveError, RuntimeOptions,
};

use super::args::ServeArgs;
use super::cache_args::TrimAfterSwaps;
use crate::admission::{Admission, AdmissionObserver, FlowSource};
use crate::http::{AdminPolicy, AllowedHosts, AppState, Policies};
use crate::metrics::Metrics;

/// Idle read-only connections kept for reuse.
pub const MAX_IDLE_CONNECTIONS: usize = 16;

/// Loads everything `serve` needs: this is startup work, never done on a request path.
pub fn load(args: &ServeArgs) -> anyhow::Result<AppState> {
    let gate_config = args.gate_config()?;
    // Before the corpus is read: a bad setting, secret, CA file or credential is the operator's
    // mistake, told at once. A credential may go to a granted origin or to the embeddings
    // server (which the host reaches, no plugin).
    let embeddings_origin = embeddings_origin(args);
    let settings = args
        .given
        .read(&|var| std::env::var(var).ok(), &embeddings_origin)?;
    let given = &settings.given;
    let outbound = &given.capabilities.outbound;
    let trusted_roots = &settings.capabilities.outbound.trusted_roots;
    if !trusted_roots.is_empty() {
        tracing::info!(
            files = ?trusted_roots.files(),
            certificates = trusted_roots.anchors().len(),
            "outbound HTTPS trusts these CA files beside the compiled-in roots"
        );
    }
    let metrics = Arc::new(Metrics::new());
    let cache = Arc::new(
        Cache::open(args.cache_dir.as_deref())
            .context("creating a cache directory")?
            .bounded(args.cache.max_bytes()),
    );
    let precompiled = cache.plugins_dir().filter(|_| !args.no_precompiled_cache);
    // Before the corpus, whose index may take minutes to build: a plugin file that is missing or
    // unreadable is told at once. These bytes are the ones loaded below.
    let source = args.plugin_source();
    let bytes = source.read().context("loading the plugin")?;
    if let Some(reason) = turnstile_host::not_a_component(&bytes) {
        return Err(PluginError::Incompatible {
            name: source.name(),
            reason,
        })
        .context("loading the plugin");
    }
    let model = embedding_model(args, &outbound.credentials)?;
    let index = open_corpus_index(args, &cache, &model)?;
    if let Some(expected) = &args.corpus_sha256
        && index.sha256 != expected.as_str()
    {
        anyhow::bail!(
            "--corpus-sha256: the corpus has sha256 {}, expected {expected}; refusing to start",
            index.sha256
        );
    }
    let pool = CorpusPool::new(&index, MAX_IDLE_CONNECTIONS)?;
    // Loaded: an index reused on its stamp has its checksum computed now, beside serving.
    index.verify_in_background();
    tracing::info!(
        source = %index.source, documents = index.documents, sha256 = %index.sha256,
        origin = ?index.origin, path = %index.path.display(),
        embedding_model = pool.model_name(), dimensions = pool.dims(),
        passages_embedded = index.embedded.map(|e| e.embedded),
        passages_reused = index.embedded.map(|e| e.reused), "corpus index ready"
    );
    let mut capabilities = settings.capabilities.clone();
    capabilities.limits.memory_limit = args.memory.memory_limit_mib as usize * 1024 * 1024;
    capabilities.outbound.observer = Observed(Some(Arc::clone(&metrics) as _));
    if !outbound.origins.is_empty() {
        let granted: Vec<&str> = outbound.origins.iter().map(|o| o.as_str()).collect();
        let named: Vec<&str> = given.secrets.names().collect();
        let bound: Vec<String> = outbound.credentials.described().collect();
        tracing::info!(origins = ?granted, secrets = ?named, credentials = ?bound, "outbound HTTP granted");
    }
    for warning in settings_outside_grants(&given.config, &outbound.origins) {
        tracing::warn!("{warning}");
    }
    let runtime = PluginRuntime::new(
        RuntimeOptions::serving(gate_config.max_active as u32, capabilities.clone())
            .with_cache(precompiled.clone())
            .with_observer(Arc::clone(&metrics) as Arc<dyn Observer>)
            .with_memory(args.memory.plugin_memory_init, args.memory.keep_resident()),
    )?;
    // Where a swap candidate's smoke checks run: not the serving engine (no epoch
    // interruption there), but one whose calls have a deadline, made anew for each candidate.
    let conformance =
        RuntimeOptions::conformance(turnstile_host::conformance::CALL_DEADLINE, capabilities)
            .with_cache(precompiled)
            .with_memory(args.memory.plugin_memory_init, None);
    let provision = Provision::of(pool, given);
    let plugin = Plugin::from_bytes(&runtime, &source, &bytes, provision.clone())
        .context("loading the plugin")?;
    drop(bytes);
    if matches!(source, PluginSource::File(_)) {
        check_settings(&conformance, &source, &plugin, provision)?;
    }
    if let Some(expected) = &args.plugin_sha256
        && plugin.sha256() != expected.as_str()
    {
        anyhow::bail!(
            "--plugin-sha256: the plugin has sha256 {}, expected {expected}; refusing to start",
            plugin.sha256()
        );
    }
    tracing::info!(plugin = plugin.name(), sha256 = plugin.sha256(), allocator = ?runtime.allocator(), "plugin ready");
    // Within the bound again, now that the index is in use (its pool lives) and the plugin's
    // artifact was just written or marked used (the newest entry).
    cache.trim(&[&index.path]);
    tracing::info!(
        max_active = gate_config.max_active, max_waiting = gate_config.max_waiting,
        wait_deadline = ?gate_config.wait_deadline, "gate ready"
    );
    let admin = AdminPolicy {
        token: args.admin_token.clone(),
        protect_state: false,
    };
    let allocator = runtime.allocator();
    let swap = HotSwap::new(
        Arc::new(PluginSlot::new(plugin, source, index, args.corpus.clone())),
        Runtimes {
            serving: Arc::new(runtime),
            conformance,
        },
        settings.given,
        MAX_IDLE_CONNECTIONS,
        args.plugin_sha256.clone(),
        CorpusOptions {
            index_dir: cache.index_dir(),
            pin: args.corpus_sha256.clone(),
            max_bytes: u64::from(args.corpus_max_mib) << 20,
        },
        Arc::new(TrimAfterSwaps {
            inner: Arc::clone(&metrics) as Arc<dyn SwapObserver>,
            cache: Arc::clone(&cache),
        }),
    );
    let roots = SwapRoots::new(
        args.access
            .swap_roots(args.plugin.iter().chain(&args.corpus).map(|p| p.as_path())),
    )
    .context("--swap-root")?;
    tracing::info!(roots = ?roots.iter().collect::<Vec<_>>(), "admin swaps read files under these directories only");
    let swap = Arc::new(swap.with_roots(roots));
    let adaptive = args.adaptive_config()?;
    if let Some(a) = &adaptive {
        tracing::info!(
            min = a.min,
            max = a.max,
            initial = a.initial,
            tolerance = a.tolerance,
            "adaptive limit: it follows the calls' latency"
        );
    }
    let (flows, flow_header) = match (args.flow_config()?, &args.flow_header) {
        (Some(flows), Some(header)) => {
            tracing::info!(header = %header, max_flows = flows.max_flows, max_waiting_per_flow = flows.max_waiting_per_flow, weights = ?flows.weights, default_weight = flows.default_weight, trusted_proxies = ?args.access.trusted_proxies(), "flows on: a FIFO lane per flow, served in turn by weight");
            let header =
                axum::http::HeaderName::from_bytes(header.as_bytes()).context("--flow-header")?;
            (Some(flows), Some(header))
        }
        _ => (None, None),
    };
    let gate = Gate::with_options(gate_config, GateOptions { flows, adaptive });
    let global = match args.global_config()? {
        Some(config) => {
            tracing::info!(key = %config.key, max_active = config.max_active, max_waiting = config.max_waiting, lease_ttl = ?config.lease_ttl, failure = ?config.failure, "global limit on Redis");
            Some(turnstile_global::GlobalGate::new(config)?)
        }
        None => None,
    };
    let state = AppState::new(
        swap,
        allocator,
        {
            let admission = Admission::new(
                gate,
                global,
                Arc::clone(&metrics) as Arc<dyn AdmissionObserver>,
            );
            match flow_header {
                Some(header) => admission
                    .with_flow_source(FlowSource::new(header, args.access.trusted_proxies())),
                None => admission,
            }
        },
        Policies {
            admin,
            // Until `run` knows the listener: on loopback, the loopback names (beyond it, any).
            hosts: AllowedHosts::from_flags(&args.access.allowed_host, true),
            edge: args.edge_limits(),
            health: args.health_policy(),
            access_log: args.access_log,
            live: args.live_config(),
        },
        cache,
        metrics,
    )
    .with_outbound_ca_files(
        trusted_roots
            .files()
            .iter()
            .map(|path| path.display().to_string())
            .collect(),
    );
    Ok(state)
}

/// The corpus's index at start. A corpus file whose stamp says it is unchanged since it was
/// indexed (and no `--corpus-sha256` pin: a pin is checked against the bytes) is not read: its
/// index is reused on its recorded checksum, computed whole in the background once loaded.
/// Otherwise the file is read and hashed, the cache trimmed to make room, the index reused or
/// built, and the file's stamp recorded for the next start.
fn open_corpus_index(
    args: &ServeArgs,
    cache: &Cache,
    model: &EmbeddingModel,
) -> anyhow::Result<CorpusIndex> {
    let index_dir = cache.index_dir();
    let stamped = args
        .corpus
        .as_deref()
        .filter(|_| args.corpus_sha256.is_none())
        .and_then(|path| CorpusIndex::reuse_at_start(path, &index_dir, model));
    if let Some(index) = stamped {
        cache.trim(&[&index.path]);
        return Ok(index);
    }
    let observation = args.corpus.as_deref().map(Observation::before_reading);
    let corpus = read_corpus_within(args.corpus.as_deref(), u64::from(args.corpus_max_mib) << 20)?;
    let sha256 = turnstile_host::sha256_hex(&corpus.jsonl);
    // Room for the index before it is built (a full cache must not stop a start), keeping it if
    // it is there already.
    cache.trim(&[&CorpusIndex::cache_path(&index_dir, &sha256, model)]);
    let index = CorpusIndex::open_or_build_hashed(&corpus, sha256, &index_dir, model)?;
    if let Some(observation) = observation {
        observation.record(&index_dir, &index.sha256);
    }
    Ok(index)
}

/// The embedding model `--embeddings` names, connected (its dimensions learnt from the server,
/// which a start waits for as a build's batches do), or the built-in one. The credential bound
/// to the server's origin, if any, goes with its every request.
/// The embeddings server's origin (`--embeddings`), if one is named: a credential may be bound
/// to it.
fn embeddings_origin(args: &ServeArgs) -> Vec<String> {
    let Some(url) = args.embeddings.embeddings.as_deref() else {
        return Vec::new();
    };
    // A URL that is none, or carries a credential, is refused when the model is connected
    // (never echoed): no credential is bound to it meanwhile.
    let Ok(uri) = url.parse::<axum::http::Uri>() else {
        return Vec::new();
    };
    match (uri.scheme_str(), uri.authority()) {
        (Some(scheme), Some(authority)) if !authority.as_str().contains('@') => {
            vec![format!("{scheme}://{authority}")]
        }
        _ => Vec::new(),
    }
}

fn embedding_model(args: &ServeArgs, credentials: &Credentials) -> anyhow::Result<EmbeddingModel> {
    let Some(url) = args.embeddings.embeddings.as_deref() else {
        return Ok(EmbeddingModel::Shipped);
    };
    let uri: axum::http::Uri = url
        .parse()
        .map_err(|_| anyhow::anyhow!("--embeddings: {url:?} is not a URL"))?;
    let headers = credentials
        .for_uri(&uri)
        .filter_map(|(name, value)| Some((name.to_string(), value.to_str().ok()?.to_owned())))
        .collect();
    let options = args
        .embeddings
        .options(headers)
        .unwrap_or_else(|| unreachable!());
    let remote = RemoteModel::connect(options).context("--embeddings")?;
    tracing::info!(
        model = remote.name(),
        endpoint = remote.endpoint(),
        dimensions = remote.dims(),
        "embedding model ready"
    );
    Ok(EmbeddingModel::Remote(Arc::new(remote)))
}

/// A warning for each setting that names an `http(s)://` origin no grant covers: the plugin
/// will be refused every request there (a swapped-in plugin's settings are its own affair).
pub fn settings_outside_grants(
    config: &turnstile_host::PluginConfig,
    granted: &Origins,
) -> Vec<String> {
    let mut warnings = Vec::new();
    for (key, value) in config.iter() {
        let value = value.trim();
        let lower = value.to_ascii_lowercase();
        if !(lower.starts_with("http://") || lower.starts_with("https://")) {
            continue;
        }
        let Ok(uri) = value.parse::<axum::http::Uri>() else {
            continue;
        };
        if !granted.iter().any(|grant| grant.covers_uri(&uri)) {
            // Host and port only: a value's userinfo (a key in a URL) is never echoed.
            let origin = format!(
                "{}://{}{}",
                uri.scheme_str().unwrap_or_default(),
                uri.host().unwrap_or_default(),
                uri.port_u16().map(|p| format!(":{p}")).unwrap_or_default()
            );
            warnings.push(format!(
                "--plugin-config {key} names {}, which no --outbound-allow grants: every request the plugin makes there will be refused",
                turnstile_host::sanitize(&origin, 256)
            ));
        }
    }
    warnings
}

/// The longest the start waits for the settings check's call.
pub const SETTINGS_CHECK_DEADLINE: std::time::Duration = std::time::Duration::from_millis(500);

/// Refuses to serve a plugin whose own settings are wrong, as `turnstile check` reports them:
/// one call of it on the conformance engine (under [`SETTINGS_CHECK_DEADLINE`], every outbound
/// request denied: a check costs no model call), failing only if the plugin says its settings are
/// wrong (`retrieve-error.config`). Any other outcome is the calls' business, not the start's.
fn check_settings(
    conformance: &RuntimeOptions,
    source: &PluginSource,
    plugin: &Plugin,
    given: Provision,
) -> anyhow::Result<()> {
    // A plugin reads its settings before any work: a call that takes longer is not refusing
    // them, and the start waits no longer for it.
    let runtime = PluginRuntime::new(conformance.clone().with_deadline(SETTINGS_CHECK_DEADLINE))?;
    // A pool of its own over the same index: the check's session is not the serving pool's.
    let given = given.with_corpus(plugin.corpus().sibling(1)?);
    let trial = Arc::new(
        Plugin::from_bytes(&runtime, source, plugin.bytes(), given)
            .context("checking the plugin's settings")?,
    );
    match trial.retrieve_bounded("What does this cover?", 1).0 {
        Err(PluginError::Guest(RetrieveError::Config(why))) => anyhow::bail!(
            "the plugin {} refuses its settings (as `turnstile check` reports): {why}",
            plugin.name()
        ),
        _ => Ok(()),
    }
}
