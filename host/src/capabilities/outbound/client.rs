//! One plugin's HTTP client: a pool of kept-alive connections (hyper-util; HTTP/1.1 and HTTP/2,
//! TLS by rustls with the Mozilla roots compiled in and the operator's CAs read at start,
//! `super::trust` — nothing read or fetched at run time) whose
//! resolver refuses the addresses the plugin's grants do not cover (the requests in flight to
//! each origin are bounded per runtime: `super::slots`). A swapped-in plugin gets a client of its
//! own: it inherits neither connections nor grants.

use std::sync::Arc;
use std::time::Duration;

use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};

use super::address::GuardedResolver;
use super::body::CappedRequest;
use super::trust::TrustedRoots;

/// How long an idle pooled connection is kept.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

type Connector = hyper_rustls::HttpsConnector<HttpConnector<GuardedResolver>>;

/// Why a client could not be made.
#[derive(Debug, thiserror::Error)]
#[error("the outbound HTTP client could not be set up: {0}")]
pub struct ClientError(String);

/// A plugin's pooled client.
pub struct OutboundClient {
    /// For requests a literal grant covers (the host named outright): any address it has.
    pub(super) literal: Client<Connector, CappedRequest>,
    /// For requests only a wildcard grant covers: public addresses only.
    pub(super) public: Client<Connector, CappedRequest>,
}

impl OutboundClient {
    /// A client for a plugin granted `origins`: connects within `connect_timeout`, at most
    /// `max_per_origin` idle connections kept per origin. Requests covered by a literal grant
    /// and those covered only by a wildcard go through two pools whose resolvers differ, so the
    /// literal exemption is the origin's, not its host name's (a name granted literally on one
    /// port and by a wildcard on another is public-only on the other).
    /// `trusted` adds the operator's CAs to the compiled-in roots.
    pub fn new(
        connect_timeout: Duration,
        max_per_origin: usize,
        trusted: &TrustedRoots,
    ) -> Result<Self, ClientError> {
        Ok(Self {
            literal: pool(true, connect_timeout, max_per_origin, trusted)?,
            public: pool(false, connect_timeout, max_per_origin, trusted)?,
        })
    }

    /// The pool for a request covered by a literal grant (`true`) or a wildcard only.
    pub(super) fn for_grant(&self, literal: bool) -> &Client<Connector, CappedRequest> {
        if literal { &self.literal } else { &self.public }
    }
}

/// A pooled client whose resolver keeps any address (`any_address`) or public ones only.
fn pool(
    any_address: bool,
    connect_timeout: Duration,
    max_per_origin: usize,
    trusted: &TrustedRoots,
) -> Result<Client<Connector, CappedRequest>, ClientError> {
    let mut http =
        HttpConnector::new_with_resolver(GuardedResolver::new(any_address, connect_timeout));
    http.enforce_http(false);
    http.set_connect_timeout(Some(connect_timeout));
    http.set_nodelay(true);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // The operator's CAs were parsed (and checked) once, when they were loaded.
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    roots.roots.extend(trusted.anchors().iter().cloned());
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
    Ok(Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .pool_idle_timeout(IDLE_TIMEOUT)
        .pool_max_idle_per_host(max_per_origin)
        .build(https))
}
