//! The admin policy: who may call operator endpoints — the bearer token's holder, or loopback
//! peers when no token is set.

/// Access to the admin surface. Without a token, admin endpoints answer only loopback peers.
#[derive(Debug, Clone, Default)]
pub struct AdminPolicy {
    /// The bearer token, if the operator set one. Never logged.
    pub token: Option<String>,
    /// `/state` needs admin access too (set when the server listens beyond loopback).
    pub protect_state: bool,
}

impl AdminPolicy {
    /// Whether a request from `peer` with this `Authorization` header value may pass: `Bearer
    /// TOKEN`, or — for a browser, which cannot add a bearer header to a page or an
    /// `EventSource` — HTTP Basic with the token as the password (any user name).
    pub fn allows(&self, peer: std::net::IpAddr, authorization: Option<&str>) -> bool {
        match &self.token {
            Some(token) => authorization.and_then(given_token).is_some_and(|given| {
                use subtle::ConstantTimeEq;
                // Constant time over the token's bytes: the comparison leaks nothing of it.
                bool::from(given.as_bytes().ct_eq(token.as_bytes()))
            }),
            None => peer.is_loopback(),
        }
    }
}

/// The token an `Authorization` value carries: a bearer token, or a Basic password.
fn given_token(authorization: &str) -> Option<String> {
    if let Some(token) = authorization.strip_prefix("Bearer ") {
        return Some(token.to_owned());
    }
    use base64::Engine;
    let encoded = authorization.strip_prefix("Basic ")?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    decoded
        .split_once(':')
        .map(|(_, password)| password.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admin_policy() {
        let local: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let remote: std::net::IpAddr = "192.0.2.7".parse().unwrap();
        let open = AdminPolicy::default();
        assert!(open.allows(local, None));
        assert!(!open.allows(remote, None));
        assert!(!open.allows(remote, Some("Bearer anything")));
        let guarded = AdminPolicy {
            token: Some("s3cret".into()),
            protect_state: true,
        };
        assert!(guarded.allows(remote, Some("Bearer s3cret")));
        assert!(
            !guarded.allows(local, None),
            "a token, once set, is needed from loopback too"
        );
        assert!(!guarded.allows(local, Some("Bearer s3cre")));
        assert!(!guarded.allows(local, Some("Bearer s3cret2")));
        assert!(!guarded.allows(local, Some("s3cret")));
        // A browser's Basic credentials: any user, the token as password.
        assert!(
            guarded.allows(remote, Some("Basic b3BzOnMzY3JldA==")),
            "ops:s3cret"
        );
        assert!(
            guarded.allows(remote, Some("Basic OnMzY3JldA==")),
            ":s3cret"
        );
        assert!(
            !guarded.allows(remote, Some("Basic b3BzOnMzY3JldDI=")),
            "ops:s3cret2"
        );
        assert!(!guarded.allows(remote, Some("Basic s3cret")));
        assert!(!guarded.allows(remote, Some("Basic czNjcmV0")), "no colon");
    }
}
