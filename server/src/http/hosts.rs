//! Which names this server answers to: every route refuses a request whose `Host` is not one of
//! them (403 `host_not_allowed`), so a page whose name was rebound to a loopback address (DNS
//! rebinding) reads nothing — its requests carry its own name. On a loopback listener the
//! default is the loopback names (`localhost`, `127.0.0.0/8`, `[::1]`); beyond loopback any
//! name, unless `--allowed-host` lists them (behind a reverse proxy: the public names the proxy
//! forwards).

use std::net::IpAddr;

/// The `Host` names requests may carry (ports are not compared).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AllowedHosts {
    /// Any name (`--allowed-host '*'`, or the default beyond loopback).
    Any,
    /// The loopback names: the default on a loopback listener.
    #[default]
    Loopback,
    /// These names (lowercase, without a port) and nothing else.
    Names(Vec<String>),
}

impl AllowedHosts {
    /// The rule from `--allowed-host` values: none gives the default for a listener on
    /// loopback (`loopback: true`) or beyond it; `*` among them gives any name.
    pub fn from_flags(names: &[String], loopback: bool) -> Self {
        if names.iter().any(|n| n == "*") {
            Self::Any
        } else if !names.is_empty() {
            Self::Names(names.iter().map(|n| n.to_ascii_lowercase()).collect())
        } else if loopback {
            Self::Loopback
        } else {
            Self::Any
        }
    }

    /// Whether a request addressed to `host` (a `Host` header or a URI authority: a name or an
    /// address, perhaps with a port; `None`: none given) may be answered.
    pub fn allows(&self, host: Option<&str>) -> bool {
        match self {
            Self::Any => true,
            Self::Loopback => host.is_some_and(is_loopback_host),
            Self::Names(names) => host
                .and_then(name)
                .is_some_and(|given| names.iter().any(|n| n.eq_ignore_ascii_case(given))),
        }
    }
}

/// `host` without its port and brackets: `[::1]:8080` → `::1`, `example.com:80` → `example.com`;
/// `None` when it is no `name[:port]` or `[address][:port]` (`[::1]junk`, `localhost:junk`, an
/// empty name, a port that is no number of 1 to 65535): such a host names nothing allowed.
fn name(host: &str) -> Option<&str> {
    let port_ok = |port: &str| port.parse::<u16>().is_ok_and(|p| p > 0);
    let (name, port) = match host.strip_prefix('[') {
        Some(rest) => {
            let (address, after) = rest.split_once(']')?;
            address.parse::<std::net::Ipv6Addr>().ok()?;
            let port = match after {
                "" => None,
                after => Some(after.strip_prefix(':')?),
            };
            (address, port)
        }
        None => match host.split_once(':') {
            Some((name, port)) => (name, Some(port)),
            None => (host, None),
        },
    };
    (!name.is_empty() && port.is_none_or(port_ok)).then_some(name)
}

/// Whether `host` (perhaps with a port) names a loopback host: `localhost`, `127.0.0.0/8` or
/// `[::1]`.
pub(super) fn is_loopback_host(host: &str) -> bool {
    name(host).is_some_and(|name| {
        name.eq_ignore_ascii_case("localhost")
            || name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
    })
}

/// A `--allowed-host` value: a host name, an IP address (IPv6 in brackets or not), or `*`.
pub fn parse_allowed_host(given: &str) -> Result<String, String> {
    let bare = given
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .unwrap_or(given);
    let valid = given == "*"
        || bare.parse::<IpAddr>().is_ok()
        || (!bare.is_empty()
            && bare.len() <= 253
            && bare.split('.').all(|label| {
                !label.is_empty()
                    && label.len() <= 63
                    && label
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-')
            }));
    if valid {
        Ok(bare.to_owned())
    } else {
        Err(format!(
            "expected a host name or an address without a port (or `*` for any), got {:?}",
            turnstile_host::sanitize(given, 64)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_by_default_on_loopback() {
        let hosts = AllowedHosts::from_flags(&[], true);
        for host in [
            "localhost",
            "LOCALHOST:8080",
            "127.0.0.1:1",
            "127.9.9.9",
            "[::1]:80",
            "[::1]",
        ] {
            assert!(hosts.allows(Some(host)), "{host}");
        }
        for host in [
            "rebind.example",
            "rebind.example:8080",
            "10.0.0.1",
            "localhost.evil.example",
            "",
            "[::1]junk",
            "[::1]:junk",
            "localhost:junk",
            "localhost:0",
            "localhost:70000",
            "localhost:80:80",
            "::1",
        ] {
            assert!(!hosts.allows(Some(host)), "{host}");
        }
        assert!(!hosts.allows(None));
        assert_eq!(AllowedHosts::from_flags(&[], false), AllowedHosts::Any);
    }

    #[test]
    fn named_hosts_only_when_named() {
        let hosts = AllowedHosts::from_flags(&["RAG.example.com".into(), "::1".into()], true);
        assert!(hosts.allows(Some("rag.example.com")));
        assert!(hosts.allows(Some("rag.example.com:443")));
        assert!(hosts.allows(Some("[::1]:8080")));
        assert!(
            !hosts.allows(Some("localhost")),
            "naming hosts replaces the default"
        );
        assert!(!hosts.allows(Some("evil.example.com")));
        assert!(AllowedHosts::from_flags(&["*".into()], true).allows(Some("anything")));
    }

    #[test]
    fn flag_values() {
        assert_eq!(
            parse_allowed_host("rag.example.com"),
            Ok("rag.example.com".into())
        );
        assert_eq!(parse_allowed_host("[::1]"), Ok("::1".into()));
        assert_eq!(parse_allowed_host("*"), Ok("*".into()));
        for bad in ["", "host:80", "a..b", "http://x", "x y"] {
            assert!(parse_allowed_host(bad).is_err(), "{bad}");
        }
    }
}
