//! Where a request's flow comes from, with flows on: a header that an authenticating proxy in
//! front of turnstile sets (a tenant, an API key's id). A client could name any flow — a weighted
//! one included — so the header is honoured only on connections from the proxies the operator
//! trusts (`--trusted-proxy`, by default the loopback addresses: a proxy on the same machine);
//! every other request is in the default flow, whatever it sends.

use std::net::IpAddr;

use axum::http::HeaderName;
use ipnet::IpNet;

/// The flow header and the peers trusted to set it.
#[derive(Debug, Clone)]
pub struct FlowSource {
    header: HeaderName,
    trusted: Vec<IpNet>,
}

impl FlowSource {
    /// `header`, honoured from peers in `trusted`.
    pub fn new(header: HeaderName, trusted: Vec<IpNet>) -> Self {
        Self { header, trusted }
    }

    /// The header naming a request's flow.
    pub fn header(&self) -> &HeaderName {
        &self.header
    }

    /// The networks whose peers may name a flow.
    pub fn trusted(&self) -> &[IpNet] {
        &self.trusted
    }

    /// Whether a request from `peer` may name its flow (an IPv4 peer seen as an IPv4-mapped
    /// IPv6 address counts as itself).
    pub fn trusts(&self, peer: IpAddr) -> bool {
        let peer = peer.to_canonical();
        self.trusted.iter().any(|net| net.contains(&peer))
    }
}

/// The default `--trusted-proxy`: the loopback networks.
pub fn loopback_networks() -> Vec<IpNet> {
    ["127.0.0.0/8", "::1/128"]
        .iter()
        .filter_map(|net| net.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_trusted_peers_name_flows() {
        let source = FlowSource::new(HeaderName::from_static("x-tenant"), loopback_networks());
        for peer in ["127.0.0.1", "127.5.5.5", "::1", "::ffff:127.0.0.1"] {
            assert!(source.trusts(peer.parse().unwrap()), "{peer}");
        }
        for peer in ["192.0.2.7", "10.0.0.1", "::2", "::ffff:192.0.2.7"] {
            assert!(!source.trusts(peer.parse().unwrap()), "{peer}");
        }
        let proxy = FlowSource::new(
            HeaderName::from_static("x-tenant"),
            vec!["10.1.0.0/16".parse().unwrap()],
        );
        assert!(proxy.trusts("10.1.200.3".parse().unwrap()));
        assert!(
            !proxy.trusts("127.0.0.1".parse().unwrap()),
            "replaces the default"
        );
    }
}
