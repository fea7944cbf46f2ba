//! One plugin's HTTP client: a pool of kept-alive connections (hyper-util; HTTP/1.1 and HTTP/2,
//! TLS by rustls with the Mozilla roots compiled in — nothing read or fetched at run time) whose
//! resolver refuses the addresses the plugin's grants do not cover, and at most
//! `max_connections_per_origin` requests in flight to one origin. A swapped-in plugin gets a
//! client of its own: it inherits neither connections nor grants.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tokio::sync::Semaphore;

use super::address::GuardedResolver;
use super::body::CappedRequest;
use super::origins::Origins;

/// How long an idle pooled connection is kept.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

type Connector = hyper_rustls::HttpsConnector<HttpConnector<GuardedResolver>>;

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
#[error("the outbound HTTP client could not be set up: {0}")]
pub struct ClientError(String);

/// A plugin's pooled client.
pub struct OutboundClient {
    pub(super) client: Client<Connector, CappedRequest>,
    per_origin: Mutex<HashMap<String, Arc<Semaphore>>>,
    max_per_origin: usize,
}

impl OutboundClient {
    /// A client for a plugin granted `origins`: connects within `connect_timeout`, at most
    /// `max_per_origin` requests in flight (and idle connections kept) per origin.
    pub fn new(
        origins: &Origins,
        connect_timeout: Duration,
        max_per_origin: usize,
    ) -> Result<Self, ClientError> {
        let mut http =
            HttpConnector::new_with_resolver(GuardedResolver::new(origins.literal_names()));
        http.enforce_http(false);
        http.set_connect_timeout(Some(connect_timeout));
        http.set_nodelay(true);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let roots = rustls::RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        };
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ClientError(e.to_string()))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let client = Client::builder(TokioExecutor::new())
            .timer(TokioTimer::new())
            .pool_timer(TokioTimer::new())
            .pool_idle_timeout(IDLE_TIMEOUT)
            .pool_max_idle_per_host(max_per_origin)
            .build(https);
        Ok(Self {
            client,
            per_origin: Mutex::new(HashMap::new()),
            max_per_origin: max_per_origin.max(1),
        })
    }

    /// The semaphore of requests in flight to `origin` (`scheme://host:port`). Origins with
    /// nothing in flight are forgotten as new ones come, so the map stays as small as what is
    /// in flight.
    pub(super) fn origin_slots(&self, origin: &str) -> Arc<Semaphore> {
        let mut map = self.per_origin.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(found) = map.get(origin) {
            return Arc::clone(found);
        }
        let max = self.max_per_origin;
        map.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < max);
        let slots = Arc::new(Semaphore::new(max));
        map.insert(origin.to_owned(), Arc::clone(&slots));
        slots
    }
}
