//! The origins an operator grants a plugin (`--outbound-allow`, a swap's `outbound_allow`):
//! `scheme://host[:port]`, parsed once, checked for every request. A host is a name
//! (`api.example.com`), an IP literal (`127.0.0.1`, `[::1]`), or a `*.` wildcard that covers
//! every name below it (`*.example.com` covers `a.example.com` and `a.b.example.com`, not
//! `example.com`), as Spin's `allowed_outbound_hosts` does. The port defaults to the scheme's.
//!
//! A request is covered by a grant when its scheme, port and host match it. Only a *literal*
//! grant (no wildcard) lets its name resolve to a loopback, private or link-local address
//! (`super::address`): naming a host outright is how an operator says it is internal.

use std::net::IpAddr;

/// Most origins one plugin may be granted.
pub const MAX_GRANTED_ORIGINS: usize = 64;

/// Longest origin, in bytes.
const MAX_ORIGIN_BYTES: usize = 300;

/// One granted origin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowedOrigin {
    /// As the operator wrote it, normalised (lowercase, default port dropped): the label a
    /// request through it is counted under.
    text: String,
    scheme: Scheme,
    host: Host,
    port: u16,
}

/// `http` or `https`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// Plain HTTP.
    Http,
    /// HTTP over TLS.
    Https,
}

impl Scheme {
    fn default_port(self) -> u16 {
        match self {
            Self::Http => 80,
            Self::Https => 443,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Http => "http",
            Self::Https => "https",
        }
    }

    /// The scheme of a request URI's scheme, if it is one of these.
    pub fn of(scheme: &str) -> Option<Self> {
        match scheme.to_ascii_lowercase().as_str() {
            "http" => Some(Self::Http),
            "https" => Some(Self::Https),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// A name, lowercase, without a trailing dot.
    Name(String),
    /// `*.suffix`: any name ending in `.suffix`.
    Below(String),
    /// An IP literal.
    Ip(IpAddr),
}

/// Why an origin is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OriginError {
    /// Not `scheme://host[:port]`.
    #[error("expected scheme://host[:port] with scheme http or https, got {0:?}")]
    Malformed(String),
    /// A path, query, user or fragment after the host.
    #[error("an origin is scheme://host[:port] only, without a path, query or user: {0:?}")]
    NotAnOrigin(String),
    /// A host that is no DNS name, wildcard or IP literal.
    #[error("{0:?} has no valid host (a name, *.name or an IP literal)")]
    BadHost(String),
    /// A port outside 1..=65535.
    #[error("{0:?} has no valid port (1..=65535)")]
    BadPort(String),
    /// More origins than allowed.
    #[error("{0} origins given; at most {MAX_GRANTED_ORIGINS} may be granted")]
    TooMany(usize),
}

impl std::str::FromStr for AllowedOrigin {
    type Err = OriginError;

    fn from_str(given: &str) -> Result<Self, OriginError> {
        let shown = || shown(given);
        if given.len() > MAX_ORIGIN_BYTES {
            return Err(OriginError::Malformed(shown()));
        }
        let (scheme, rest) = given
            .split_once("://")
            .ok_or_else(|| OriginError::Malformed(shown()))?;
        let scheme = Scheme::of(scheme).ok_or_else(|| OriginError::Malformed(shown()))?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
            return Err(OriginError::NotAnOrigin(shown()));
        }
        let (host, port) = split_port(rest).ok_or_else(|| OriginError::BadPort(shown()))?;
        let host = parse_host(host).ok_or_else(|| OriginError::BadHost(shown()))?;
        let port = port.unwrap_or(scheme.default_port());
        Ok(Self::new(scheme, host, port))
    }
}

/// `given` as an error may quote it: at most [`MAX_ORIGIN_BYTES`], and never a user part — an
/// origin written with `user:password@` is quoted as `[user]@` and the rest, so a credential
/// put in a grant by mistake is not echoed in the error (a start-up message, a swap's refusal).
fn shown(given: &str) -> String {
    let text: String = given.chars().take(MAX_ORIGIN_BYTES).collect();
    let start = text.find("://").map_or(0, |i| i + 3);
    let end = text[start..]
        .find(['/', '?', '#'])
        .map_or(text.len(), |i| start + i);
    match text[start..end].rfind('@') {
        Some(at) => format!("{}[user]@{}", &text[..start], &text[start + at + 1..]),
        None => text,
    }
}

/// `host[:port]`, the host possibly a bracketed IPv6 literal; `None` for a bad port.
fn split_port(authority: &str) -> Option<(&str, Option<u16>)> {
    let (host, port) = if let Some(end) = authority
        .strip_prefix('[')
        .and_then(|_| authority.find(']'))
    {
        let (host, after) = authority.split_at(end + 1);
        match after {
            "" => (host, None),
            _ => (host, Some(after.strip_prefix(':')?)),
        }
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    match port {
        None => Some((host, None)),
        Some(port) => match port.parse::<u16>() {
            Ok(0) | Err(_) => None,
            Ok(port) => Some((host, Some(port))),
        },
    }
}

fn parse_host(host: &str) -> Option<Host> {
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return inner
            .parse::<std::net::Ipv6Addr>()
            .ok()
            .map(|ip| Host::Ip(ip.into()));
    }
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Some(Host::Ip(ip.into()));
    }
    let host = host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase();
    match host.strip_prefix("*.") {
        Some(suffix) if is_dns_name(suffix) && suffix.contains('.') => {
            Some(Host::Below(suffix.to_owned()))
        }
        Some(_) => None,
        None if is_dns_name(&host) => Some(Host::Name(host)),
        None => None,
    }
}

/// A DNS name of letters, digits and `-` in labels of 1..=63, 1..=253 bytes; not all digits
/// and dots (that would be an IP address written oddly).
fn is_dns_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 253
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
        && !name.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

impl AllowedOrigin {
    fn new(scheme: Scheme, host: Host, port: u16) -> Self {
        let host_text = match &host {
            Host::Name(name) => name.clone(),
            Host::Below(suffix) => format!("*.{suffix}"),
            Host::Ip(IpAddr::V4(ip)) => ip.to_string(),
            Host::Ip(IpAddr::V6(ip)) => format!("[{ip}]"),
        };
        let text = if port == scheme.default_port() {
            format!("{}://{host_text}", scheme.as_str())
        } else {
            format!("{}://{host_text}:{port}", scheme.as_str())
        };
        Self {
            text,
            scheme,
            host,
            port,
        }
    }

    /// The origin as granted (normalised): the label its requests are counted under.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether it names its host outright (no wildcard): such a host may resolve to a loopback,
    /// private or link-local address.
    pub fn is_literal(&self) -> bool {
        !matches!(self.host, Host::Below(_))
    }

    /// Whether a request to `host` (a name or an IP literal, IPv6 without brackets) on `port`
    /// over `scheme` is covered.
    fn covers(&self, scheme: Scheme, host: &RequestHost, port: u16) -> bool {
        if scheme != self.scheme || port != self.port {
            return false;
        }
        match (&self.host, host) {
            (Host::Name(granted), RequestHost::Name(name)) => granted == name,
            (Host::Below(suffix), RequestHost::Name(name)) => name
                .strip_suffix(suffix.as_str())
                .is_some_and(|prefix| prefix.len() > 1 && prefix.ends_with('.')),
            (Host::Ip(granted), RequestHost::Ip(ip)) => granted == ip,
            _ => false,
        }
    }
}

impl AllowedOrigin {
    /// Whether every request this grant covers is covered by `wider` too: the same scheme and
    /// port, and the same host, or one below `wider`'s wildcard (a wildcard is within a wildcard
    /// of the same or a shorter suffix). How a swap's grants are held within the operator's.
    pub fn is_within(&self, wider: &AllowedOrigin) -> bool {
        if self.scheme != wider.scheme || self.port != wider.port {
            return false;
        }
        match (&self.host, &wider.host) {
            (Host::Name(name), _) => {
                wider.covers(self.scheme, &RequestHost::Name(name.clone()), self.port)
            }
            (Host::Ip(ip), _) => wider.covers(self.scheme, &RequestHost::Ip(*ip), self.port),
            (Host::Below(narrow), Host::Below(wide)) => {
                narrow == wide
                    || narrow
                        .strip_suffix(wide.as_str())
                        .is_some_and(|prefix| prefix.ends_with('.'))
            }
            (Host::Below(_), _) => false,
        }
    }

    /// Whether this grant covers a request to `uri`'s scheme, host and port.
    pub fn covers_uri(&self, uri: &http::Uri) -> bool {
        let scheme = uri.scheme_str().and_then(Scheme::of);
        let host = uri.host().and_then(RequestHost::parse);
        match (scheme, host) {
            (Some(scheme), Some(host)) => {
                let port = uri.port_u16().unwrap_or(scheme.default_port());
                self.covers(scheme, &host, port)
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for AllowedOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The host of a request, normalised as grants are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RequestHost {
    /// A DNS name, lowercase, without a trailing dot.
    Name(String),
    /// An IP literal.
    Ip(IpAddr),
}

impl RequestHost {
    /// The host of a request URI's authority (`[::1]` for IPv6), if it is a valid name or IP.
    pub fn parse(host: &str) -> Option<Self> {
        match parse_host(host)? {
            Host::Name(name) => Some(Self::Name(name)),
            Host::Ip(ip) => Some(Self::Ip(ip)),
            Host::Below(_) => None,
        }
    }
}

/// Every origin granted to one plugin, in the operator's order, without repeats.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Origins {
    grants: Vec<AllowedOrigin>,
}

impl Origins {
    /// No origin: every request is denied.
    pub fn none() -> Self {
        Self::default()
    }

    /// Parses every origin, refusing the first bad one, more than [`MAX_GRANTED_ORIGINS`], and
    /// dropping repeats.
    pub fn parse<S: AsRef<str>>(given: &[S]) -> Result<Self, OriginError> {
        if given.len() > MAX_GRANTED_ORIGINS {
            return Err(OriginError::TooMany(given.len()));
        }
        let mut grants: Vec<AllowedOrigin> = Vec::with_capacity(given.len());
        for origin in given {
            let grant: AllowedOrigin = origin.as_ref().parse()?;
            if !grants.contains(&grant) {
                grants.push(grant);
            }
        }
        Ok(Self { grants })
    }

    /// The grants, in order.
    pub fn iter(&self) -> impl Iterator<Item = &AllowedOrigin> {
        self.grants.iter()
    }

    /// Whether nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }

    /// The grant that covers a request (a literal grant first: it allows more), if any.
    pub fn covering(
        &self,
        scheme: Scheme,
        host: &RequestHost,
        port: u16,
    ) -> Option<&AllowedOrigin> {
        let covering = |literal: bool| {
            self.grants
                .iter()
                .find(|g| g.is_literal() == literal && g.covers(scheme, host, port))
        };
        covering(true).or_else(|| covering(false))
    }

    /// The first of these grants that no grant of `wider` holds (see
    /// [`AllowedOrigin::is_within`]): `None` when all of them are within `wider`.
    pub fn first_outside<'a>(&'a self, wider: &Origins) -> Option<&'a AllowedOrigin> {
        self.grants
            .iter()
            .find(|g| !wider.grants.iter().any(|w| g.is_within(w)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(host: &str) -> RequestHost {
        RequestHost::parse(host).unwrap()
    }

    #[test]
    fn origins_parse_and_normalise() {
        let o: AllowedOrigin = "HTTPS://API.Example.com:443/".parse().unwrap();
        assert_eq!(o.as_str(), "https://api.example.com");
        assert!(o.is_literal());
        let o: AllowedOrigin = "http://127.0.0.1:9000".parse().unwrap();
        assert_eq!(o.as_str(), "http://127.0.0.1:9000");
        let o: AllowedOrigin = "http://[::1]:8080".parse().unwrap();
        assert_eq!(o.as_str(), "http://[::1]:8080");
        let o: AllowedOrigin = "https://*.example.com".parse().unwrap();
        assert!(!o.is_literal());
        for bad in [
            "example.com",
            "ftp://example.com",
            "https://",
            "https://example.com/path",
            "https://user@example.com",
            "https://example.com?q",
            "https://example.com:0",
            "https://example.com:70000",
            "https://*.com",
            "https://a.*.example.com",
            "https://exa mple.com",
            "https://-bad.example.com",
            "http://[::1",
        ] {
            assert!(bad.parse::<AllowedOrigin>().is_err(), "{bad}");
        }
    }

    #[test]
    fn an_origin_with_a_user_part_is_refused_without_quoting_it() {
        for given in [
            "https://user:s3cret-token@api.example.com",
            "https://s3cret-token@api.example.com/v1",
            "s3cret-token@api.example.com",
            "http://user:s3cret-token@[::1]:8080",
        ] {
            let error = given.parse::<AllowedOrigin>().unwrap_err().to_string();
            assert!(!error.contains("s3cret"), "{given}: {error}");
            assert!(error.contains("[user]@"), "{given}: {error}");
            assert!(
                error.contains("api.example.com") || error.contains("[::1]"),
                "{error}"
            );
        }
        // Without a user part, the value is quoted as given.
        let error = "https://example.com/path"
            .parse::<AllowedOrigin>()
            .unwrap_err();
        assert!(
            error.to_string().contains("https://example.com/path"),
            "{error}"
        );
    }

    #[test]
    fn a_grant_is_within_a_wider_one_only_for_what_it_covers() {
        let operator = Origins::parse(&[
            "https://api.example.com",
            "https://*.example.org",
            "http://127.0.0.1:9000",
        ])
        .unwrap();
        for within in [
            "https://API.example.com.",
            "https://a.example.org",
            "https://*.example.org",
            "https://*.b.example.org",
            "http://127.0.0.1:9000",
        ] {
            let swap = Origins::parse(&[within]).unwrap();
            assert_eq!(swap.first_outside(&operator), None, "{within}");
        }
        for outside in [
            "https://example.org",
            "https://*.example.com",
            "http://api.example.com",
            "https://api.example.com:8443",
            "http://127.0.0.1:9001",
            "http://localhost:9000",
            "https://*.xexample.org",
        ] {
            let swap = Origins::parse(&["https://api.example.com", outside]).unwrap();
            assert_eq!(
                swap.first_outside(&operator).map(AllowedOrigin::as_str),
                Some(outside.parse::<AllowedOrigin>().unwrap().as_str()),
                "{outside}"
            );
        }
    }

    #[test]
    fn a_grant_covers_its_scheme_port_and_host_only() {
        let origins = Origins::parse(&[
            "https://api.example.com",
            "https://*.models.example.com",
            "http://127.0.0.1:9000",
        ])
        .unwrap();
        let https = Scheme::Https;
        assert!(
            origins
                .covering(https, &name("api.example.com"), 443)
                .is_some()
        );
        assert!(
            origins
                .covering(https, &name("API.EXAMPLE.COM."), 443)
                .is_some()
        );
        assert!(
            origins
                .covering(Scheme::Http, &name("api.example.com"), 80)
                .is_none()
        );
        assert!(
            origins
                .covering(https, &name("api.example.com"), 8443)
                .is_none()
        );
        assert!(
            origins
                .covering(https, &name("evil-api.example.com"), 443)
                .is_none()
        );
        assert!(
            origins
                .covering(https, &name("a.models.example.com"), 443)
                .is_some()
        );
        assert!(
            origins
                .covering(https, &name("a.b.models.example.com"), 443)
                .is_some()
        );
        assert!(
            origins
                .covering(https, &name("models.example.com"), 443)
                .is_none()
        );
        assert!(
            origins
                .covering(https, &name("xmodels.example.com"), 443)
                .is_none()
        );
        assert!(
            origins
                .covering(Scheme::Http, &name("127.0.0.1"), 9000)
                .is_some()
        );
        assert!(
            origins
                .covering(Scheme::Http, &name("127.0.0.2"), 9000)
                .is_none()
        );
        assert!(
            origins
                .covering(Scheme::Http, &name("169.254.169.254"), 80)
                .is_none()
        );
        assert!(
            Origins::none()
                .covering(https, &name("api.example.com"), 443)
                .is_none()
        );
    }

    #[test]
    fn repeats_are_dropped_and_the_count_is_bounded() {
        let origins = Origins::parse(&["https://a.example", "https://A.example:443"]).unwrap();
        assert_eq!(origins.iter().count(), 1);
        let many: Vec<String> = (0..=MAX_GRANTED_ORIGINS)
            .map(|i| format!("https://h{i}.example"))
            .collect();
        assert_eq!(
            Origins::parse(&many),
            Err(OriginError::TooMany(MAX_GRANTED_ORIGINS + 1))
        );
    }
}
