//! Where a granted name may lead: its resolved addresses are checked at every connect, so a name
//! that resolves (or is rebound) to a loopback, private or link-local address — the cloud
//! metadata address `169.254.169.254` among them — is refused unless the operator granted that
//! very name ([`super::origins::AllowedOrigin::is_literal`]). The check is in the resolver the
//! connection pool uses, so no connect can skip it.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::client::legacy::connect::dns::Name;

/// Whether `ip` is an address on the public internet: not loopback, private, link-local
/// (metadata services live there), shared (CGNAT), unspecified, broadcast, multicast,
/// documentation or reserved — for IPv6 also unique-local, and IPv4-mapped addresses judged as
/// their IPv4 address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let first = segments[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // ::/96, IPv4-compatible (deprecated): an IPv4 address in disguise.
        || segments[..6].iter().all(|s| *s == 0)
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        // fec0::/10, site-local (deprecated, still routed inside some networks).
        || (first & 0xffc0) == 0xfec0
        || (first == 0x2001 && segments[1] == 0x0db8)
        // 2002::/16, 6to4: the next 32 bits are an IPv4 address, a private one as well.
        || first == 0x2002
        // 64:ff9b::/32, NAT64 (the well-known /96 and the local-use 64:ff9b:1::/48).
        || (first == 0x0064 && segments[1] == 0xff9b))
}

/// The error a connect gets when every address of a name is one its grant does not cover.
#[derive(Debug, thiserror::Error)]
#[error(
    "{host} resolves only to addresses its grant does not cover (loopback, private, link-local)"
)]
pub struct AddressRefused {
    /// The name.
    pub host: String,
}

/// Resolves names for a connection pool (off the workers' pool, within the connect timeout:
/// `super::lookups`), keeping only the addresses a grant covers: every address for the pool of
/// requests a literal grant covers, public ones only for the other.
#[derive(Clone)]
pub struct GuardedResolver {
    any_address: bool,
    within: std::time::Duration,
}

impl GuardedResolver {
    /// A resolver keeping any address (`any_address`) or public ones only, each lookup within
    /// `within`.
    pub fn new(any_address: bool, within: std::time::Duration) -> Self {
        Self {
            any_address,
            within,
        }
    }
}

type Resolving =
    Pin<Box<dyn Future<Output = std::io::Result<std::vec::IntoIter<SocketAddr>>> + Send>>;

impl tower_service::Service<Name> for GuardedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Resolving;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        let (any, within) = (self.any_address, self.within);
        Box::pin(async move {
            let host = name.as_str().trim_end_matches('.').to_ascii_lowercase();
            let found = super::lookups::lookup(&host, within).await?;
            let kept: Vec<SocketAddr> = found
                .into_iter()
                .filter(|ip| any || is_public(*ip))
                .map(|ip| SocketAddr::new(ip, 0))
                .collect();
            if kept.is_empty() {
                return Err(std::io::Error::other(AddressRefused { host }));
            }
            Ok(kept.into_iter())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fe80::1",
            "fd00:ec2::254",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::a9fe:a9fe",
            "::10.0.0.1",
            "2002:a9fe:a9fe::1",
            "2002:7f00:1::",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b:1::10.0.0.1",
            "fec0::1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["93.184.216.34", "1.1.1.1", "2606:4700:4700::1111"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_unless_granted_literally() {
        use tower_service::Service;
        let name: Name = "localhost".parse().unwrap();
        let mut guarded = GuardedResolver::new(false, std::time::Duration::from_secs(5));
        let refused = guarded.call(name.clone()).await.unwrap_err();
        assert!(
            refused.get_ref().is_some_and(|e| e.is::<AddressRefused>()),
            "{refused}"
        );
        let mut literal = GuardedResolver::new(true, std::time::Duration::from_secs(5));
        let addrs: Vec<SocketAddr> = literal.call(name).await.unwrap().collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty());
    }

    /// One name granted literally on one port and by a wildcard on another: a request to the
    /// literal grant's port reaches its private address; one to the other port, covered by the
    /// wildcard only, is refused — the exemption is the origin's, not the name's. (Each goes
    /// the way the hooks send it: the covering grant, then its pool.)
    #[tokio::test]
    async fn the_literal_exemption_is_the_origins_not_the_names() {
        use super::super::client::OutboundClient;
        use super::super::origins::{Origins, RequestHost, Scheme};
        use http_body_util::BodyExt;
        let mut ports = Vec::new();
        for _ in 0..2 {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            ports.push(listener.local_addr().unwrap().port());
            tokio::spawn(async move {
                while let Ok((mut socket, _)) = listener.accept().await {
                    use tokio::io::{AsyncReadExt, AsyncWriteExt};
                    let mut head = [0u8; 1024];
                    let _ = socket.read(&mut head).await;
                    let _ = socket
                        .write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
                        .await;
                }
            });
        }
        let name = format!("api{}", super::super::lookups::tests::LOOPBACK);
        let origins = Origins::parse(&[
            format!("http://{name}:{}", ports[0]),
            format!(
                "http://*{}:{}",
                super::super::lookups::tests::LOOPBACK,
                ports[1]
            ),
        ])
        .unwrap();
        let client =
            OutboundClient::new(std::time::Duration::from_secs(5), 4, &Default::default()).unwrap();
        let host = RequestHost::parse(&name).unwrap();
        let mut outcomes = Vec::new();
        for port in &ports {
            let grant = origins.covering(Scheme::Http, &host, *port).unwrap();
            let reporter = super::super::report::Reporter {
                plugin: "test".into(),
                request_id: 1,
                observer: None,
                tally: Default::default(),
            };
            let empty = http_body_util::Empty::<bytes::Bytes>::new()
                .map_err(|never| match never {})
                .boxed_unsync();
            let body = super::super::body::CappedRequest::new(
                empty,
                1024,
                reporter.start(grant.as_str()),
                std::time::Duration::from_secs(1),
            );
            let request = http::Request::get(format!("http://{name}:{port}/"))
                .body(body)
                .unwrap();
            let sent = client.for_grant(grant.is_literal()).request(request).await;
            outcomes.push(match sent {
                Ok(response) => {
                    let _ = response.into_body().collect().await;
                    "answered"
                }
                Err(e) if format!("{e:?}").contains("AddressRefused") => "refused",
                Err(e) => panic!("port {port}: {e:?}"),
            });
        }
        assert_eq!(outcomes, ["answered", "refused"]);
    }
}
