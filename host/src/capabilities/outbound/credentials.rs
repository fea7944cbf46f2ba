//! Credentials the host adds to a plugin's requests, so that no plugin ever holds them — as
//! Envoy's credential injector does for a workload: `--outbound-bearer ORIGIN=SOURCE` adds
//! `Authorization: Bearer <value>` to every request to that origin, `--outbound-header
//! ORIGIN=HEADER:SOURCE` adds `HEADER: <value>` (an `api-key`, an `x-api-key`). SOURCE is where
//! the value is read from once, at start, as a plugin secret's is (`env:VAR` or `file:PATH`:
//! systemd's `LoadCredential=` puts a credential in a file).
//!
//! A bound credential goes to its origin only: its origin names one host exactly (no wildcard),
//! must be granted, and a request gets it only when its scheme, host and port are that origin's
//! — whatever the plugin set in that header is replaced. The value is in no plugin's `config`,
//! is marked sensitive (never logged by the HTTP stack) and is redacted from every text of the
//! plugin's the host shows, as secrets are.

use http::{HeaderName, HeaderValue};

use super::origins::{AllowedOrigin, OriginError, Origins};
use crate::secrets::{Secret, SecretError, SecretSource, Secrets};

/// Most credentials an operator may bind.
pub const MAX_CREDENTIALS: usize = 16;

/// A credential as the operator gave it: where it goes, in which header, and where its value
/// comes from (never the value).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialSpec {
    /// The origin it is bound to (exact: no wildcard).
    pub origin: AllowedOrigin,
    /// The header it is sent in (`authorization` for a bearer token).
    pub header: HeaderName,
    /// Whether the value is sent as `Bearer <value>`.
    pub bearer: bool,
    /// Where the value is read from.
    pub source: SecretSource,
}

impl CredentialSpec {
    /// `ORIGIN header`, as `/state` and the log name it (never the value).
    pub fn describe(&self) -> String {
        format!("{} {}", self.origin, self.header)
    }
}

/// Why a credential is refused: it names the origin, header and source, never a value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialError {
    /// Not `ORIGIN=SOURCE` (or `ORIGIN=HEADER:SOURCE`).
    #[error("expected {0}")]
    Malformed(&'static str),
    /// The origin does not parse.
    #[error(transparent)]
    Origin(#[from] OriginError),
    /// A wildcard origin: a credential goes to one host.
    #[error("{0}: a credential is bound to one origin, not a wildcard")]
    Wildcard(String),
    /// A header name that is not one, or one the host sets itself.
    #[error("{0:?} is not a header a credential may be sent in")]
    BadHeader(String),
    /// Its value could not be read.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// Its value cannot be a header value (a newline, a control character).
    #[error("the credential for {0} is not a valid header value")]
    NotAHeaderValue(String),
    /// The same origin and header twice.
    #[error("{0} is given two credentials")]
    Duplicate(String),
    /// More than [`MAX_CREDENTIALS`].
    #[error("{0} credentials given; at most {MAX_CREDENTIALS} may be bound")]
    TooMany(usize),
    /// Bound to an origin the operator did not grant.
    #[error("a credential is bound to {0}, which no --outbound-allow grants")]
    NotGranted(String),
}

/// Headers a credential may not be sent in: the ones the HTTP stack or wasi:http decides.
const FORBIDDEN: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
    "http2-settings",
];

/// Parses `--outbound-bearer ORIGIN=SOURCE`.
pub fn parse_bearer_arg(arg: &str) -> Result<CredentialSpec, CredentialError> {
    const FORM: &str = "ORIGIN=env:VAR or ORIGIN=file:PATH";
    let (origin, source) = split_origin(arg).ok_or(CredentialError::Malformed(FORM))?;
    spec(
        origin,
        HeaderName::from_static("authorization"),
        true,
        source,
        FORM,
    )
}

/// Parses `--outbound-header ORIGIN=HEADER:SOURCE`.
pub fn parse_header_arg(arg: &str) -> Result<CredentialSpec, CredentialError> {
    const FORM: &str = "ORIGIN=HEADER:env:VAR or ORIGIN=HEADER:file:PATH";
    let (origin, rest) = split_origin(arg).ok_or(CredentialError::Malformed(FORM))?;
    let (header, source) = rest
        .split_once(':')
        .ok_or(CredentialError::Malformed(FORM))?;
    let name = HeaderName::from_bytes(header.trim().as_bytes())
        .ok()
        .filter(|name| !FORBIDDEN.contains(&name.as_str()))
        .ok_or_else(|| CredentialError::BadHeader(header.chars().take(64).collect::<String>()))?;
    spec(origin, name, false, source, FORM)
}

/// `ORIGIN` and what follows its `=`: the origin's own `://` and port come before the first `=`.
fn split_origin(arg: &str) -> Option<(&str, &str)> {
    arg.split_once('=')
}

fn spec(
    origin: &str,
    header: HeaderName,
    bearer: bool,
    source: &str,
    form: &'static str,
) -> Result<CredentialSpec, CredentialError> {
    let origin: AllowedOrigin = origin.parse()?;
    if !origin.is_literal() {
        return Err(CredentialError::Wildcard(origin.as_str().to_owned()));
    }
    let source = if let Some(var) = source.strip_prefix("env:").filter(|v| !v.is_empty()) {
        SecretSource::Env(var.to_owned())
    } else if let Some(path) = source.strip_prefix("file:").filter(|p| !p.is_empty()) {
        SecretSource::File(path.into())
    } else {
        return Err(CredentialError::Malformed(form));
    };
    Ok(CredentialSpec {
        origin,
        header,
        bearer,
        source,
    })
}

/// One credential, read.
#[derive(Clone)]
struct Bound {
    spec: CredentialSpec,
    value: HeaderValue,
    secret: Secret,
}

/// The credentials the operator bound, read once at start. Shared by every plugin: what a
/// plugin may reach is its grants; a credential follows the origin, not the plugin.
#[derive(Clone, Default)]
pub struct Credentials {
    bound: Vec<Bound>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.bound.iter().map(|b| b.spec.describe()))
            .finish()
    }
}

impl Credentials {
    /// None.
    pub fn none() -> Self {
        Self::default()
    }

    /// Reads every credential's value (`env` looks a variable up): all of them, or the first
    /// refusal.
    pub fn load(
        given: &[CredentialSpec],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, CredentialError> {
        if given.len() > MAX_CREDENTIALS {
            return Err(CredentialError::TooMany(given.len()));
        }
        let mut bound: Vec<Bound> = Vec::with_capacity(given.len());
        for spec in given {
            let described = spec.describe();
            if bound.iter().any(|b| b.spec.describe() == described) {
                return Err(CredentialError::Duplicate(described));
            }
            let name = format!("credential {described}");
            let secrets = Secrets::load(&[(name.clone(), spec.source.clone())], env)?;
            let secret = secrets
                .get(&name)
                .cloned()
                .ok_or(CredentialError::Malformed("a value"))?;
            let text = if spec.bearer {
                format!("Bearer {}", secret.expose())
            } else {
                secret.expose().to_owned()
            };
            let mut value = HeaderValue::from_str(&text)
                .map_err(|_| CredentialError::NotAHeaderValue(spec.origin.to_string()))?;
            value.set_sensitive(true);
            bound.push(Bound {
                spec: spec.clone(),
                value,
                secret,
            });
        }
        Ok(Self { bound })
    }

    /// Refuses a credential bound to an origin `granted` does not cover.
    pub fn check_granted(&self, granted: &Origins) -> Result<(), CredentialError> {
        match self
            .bound
            .iter()
            .find(|b| !granted.iter().any(|g| b.spec.origin.is_within(g)))
        {
            Some(b) => Err(CredentialError::NotGranted(b.spec.origin.to_string())),
            None => Ok(()),
        }
    }

    /// Whether none is bound.
    pub fn is_empty(&self) -> bool {
        self.bound.is_empty()
    }

    /// Each credential's origin and header (never its value).
    pub fn described(&self) -> impl Iterator<Item = String> + '_ {
        self.bound.iter().map(|b| b.spec.describe())
    }

    /// The headers to add to a request to `uri`: those bound to its exact origin.
    pub fn for_uri<'a>(
        &'a self,
        uri: &'a http::Uri,
    ) -> impl Iterator<Item = (&'a HeaderName, &'a HeaderValue)> + 'a {
        self.bound
            .iter()
            .filter(move |b| b.spec.origin.covers_uri(uri))
            .map(|b| (&b.spec.header, &b.value))
    }

    /// Every value, for redaction (named by their origin and header).
    pub fn secrets(&self) -> impl Iterator<Item = (String, Secret)> + '_ {
        self.bound.iter().map(|b| {
            (
                format!("credential {}", b.spec.describe()),
                b.secret.clone(),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        match var {
            "KEY" => Some("sk-canary-bearer-1234".to_owned()),
            "AZ" => Some("az-canary-5678".to_owned()),
            "BAD" => Some("two\nlines".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn credentials_parse_by_origin_and_header() {
        let bearer = parse_bearer_arg("https://API.example.com:443=env:KEY").unwrap();
        assert_eq!(bearer.origin.as_str(), "https://api.example.com");
        assert_eq!(bearer.header, "authorization");
        assert!(bearer.bearer);
        let header = parse_header_arg("http://127.0.0.1:9000=api-key:file:/run/key").unwrap();
        assert_eq!(header.origin.as_str(), "http://127.0.0.1:9000");
        assert_eq!(header.header, "api-key");
        assert_eq!(header.source, SecretSource::File("/run/key".into()));
        for bad in [
            "https://api.example.com",
            "https://api.example.com=KEY",
            "https://api.example.com=env:",
            "https://*.example.com=env:KEY",
            "api.example.com=env:KEY",
            "https://api.example.com/v1=env:KEY",
        ] {
            assert!(parse_bearer_arg(bad).is_err(), "{bad}");
        }
        for bad in [
            "https://a.example.com=env:KEY",
            "https://a.example.com=host:env:KEY",
            "https://a.example.com=bad header:env:KEY",
            "https://a.example.com=content-length:env:KEY",
        ] {
            assert!(parse_header_arg(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_credential_goes_to_its_exact_origin_only_and_never_prints() {
        let specs = [
            parse_bearer_arg("https://api.example.com=env:KEY").unwrap(),
            parse_header_arg("http://127.0.0.1:9000=api-key:env:AZ").unwrap(),
        ];
        let credentials = Credentials::load(&specs, &env).unwrap();
        let headers = |uri: &str| -> Vec<(String, String)> {
            let uri: http::Uri = uri.parse().unwrap();
            credentials
                .for_uri(&uri)
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
                .collect()
        };
        assert_eq!(
            headers("https://API.example.com./v1/chat"),
            [(
                "authorization".to_owned(),
                "Bearer sk-canary-bearer-1234".to_owned()
            )]
        );
        assert_eq!(
            headers("http://127.0.0.1:9000/v1"),
            [("api-key".to_owned(), "az-canary-5678".to_owned())]
        );
        for elsewhere in [
            "http://api.example.com/",
            "https://api.example.com:8443/",
            "https://evil.example.com/",
            "https://api.example.com.evil.net/",
            "http://127.0.0.1:9001/",
            "http://localhost:9000/",
        ] {
            assert!(headers(elsewhere).is_empty(), "{elsewhere}");
        }
        let shown = format!("{credentials:?}");
        assert!(!shown.contains("canary"), "{shown}");
        assert!(
            shown.contains("https://api.example.com authorization"),
            "{shown}"
        );
    }

    #[test]
    fn a_credential_must_be_readable_granted_and_a_header_value() {
        let spec = parse_bearer_arg("https://api.example.com=env:NOPE").unwrap();
        let error = Credentials::load(&[spec], &env).unwrap_err();
        assert!(error.to_string().contains("env:NOPE is not set"), "{error}");
        let spec = parse_bearer_arg("https://api.example.com=env:BAD").unwrap();
        let error = Credentials::load(&[spec], &env).unwrap_err();
        assert!(!error.to_string().contains("two"), "{error}");
        let spec = parse_bearer_arg("https://api.example.com=env:KEY").unwrap();
        let twice = Credentials::load(&[spec.clone(), spec.clone()], &env).unwrap_err();
        assert!(matches!(twice, CredentialError::Duplicate(_)), "{twice}");
        let credentials = Credentials::load(&[spec], &env).unwrap();
        let granted = Origins::parse(&["https://*.example.com"]).unwrap();
        assert!(credentials.check_granted(&granted).is_ok());
        let other = Origins::parse(&["https://api.example.org"]).unwrap();
        assert_eq!(
            credentials.check_granted(&other),
            Err(CredentialError::NotGranted(
                "https://api.example.com".into()
            ))
        );
    }
}
