//! The outbound capability's flags (the `cli` feature), one group for every command that loads a
//! plugin (`serve`, `check`, `eval`, flattened into [`crate::PluginArgs`]): the origins granted
//! (`--outbound-allow`), the credentials the host adds to requests to an origin
//! (`--outbound-bearer`, `--outbound-header`), the CAs trusted beside the compiled-in roots, and
//! the host's bounds on every request — their defaults the capability's own constants (a guest
//! may ask for shorter timeouts, never longer ones).

use std::sync::Arc;
use std::time::Duration;

use clap::Args;

use super::capability::Outbound;
use super::credentials::{
    CredentialError, CredentialSpec, Credentials, parse_bearer_arg, parse_header_arg,
};
use super::given::OutboundGiven;
use super::options::{
    DEFAULT_BETWEEN_BYTES_TIMEOUT, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_MAX_CONNECTIONS_PER_ORIGIN, DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_REQUESTS_PER_CALL, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TOTAL_TIMEOUT,
    OutboundOptions,
};
use super::origins::{AllowedOrigin, OriginError, Origins};
use super::trust::{TrustError, TrustedRoots};
use crate::capabilities::CapabilityFlags;

/// The outbound flags.
#[derive(Debug, Clone, Args)]
pub struct OutboundArgs {
    /// An origin the plugin may reach over HTTP, `scheme://host[:port]` with scheme http or
    /// https and a `*.` wildcard for the names below a domain (repeatable; in a file:
    /// `outbound-allow = ["https://api.example.com"]`). None by default: every request is
    /// denied. A name matched by a wildcard must resolve to public addresses; a loopback,
    /// private or link-local one is reached only when granted by its own name or address.
    #[arg(long = "outbound-allow", value_name = "ORIGIN", value_parser = parse_origin)]
    pub outbound_allow: Vec<String>,

    /// A credential the host adds to every request to ORIGIN as `Authorization: Bearer
    /// <value>`, read once at start (`ORIGIN=env:VAR` or `ORIGIN=file:PATH`, e.g. systemd's
    /// `file:${CREDENTIALS_DIRECTORY}/openai`; repeatable). No plugin can read it, and it goes to
    /// that exact origin only, which --outbound-allow must grant. Stronger than a
    /// --plugin-secret the plugin sends itself.
    #[arg(long = "outbound-bearer", value_name = "ORIGIN=env:VAR|ORIGIN=file:PATH", value_parser = parse_bearer)]
    pub outbound_bearer: Vec<CredentialSpec>,

    /// A credential the host adds to every request to ORIGIN in header HEADER (`api-key`,
    /// `x-api-key`), read once at start (`ORIGIN=HEADER:env:VAR` or `ORIGIN=HEADER:file:PATH`;
    /// repeatable); otherwise as --outbound-bearer.
    #[arg(long = "outbound-header", value_name = "ORIGIN=HEADER:env:VAR|ORIGIN=HEADER:file:PATH", value_parser = parse_header)]
    pub outbound_header: Vec<CredentialSpec>,

    /// A PEM file of CA certificates outbound HTTPS trusts beside the compiled-in Mozilla roots
    /// (an internal CA's, for a model server inside the network; repeatable, at most 256
    /// certificates, 4 MiB a file). Read once at start; no plugin or swap can change it.
    #[arg(long = "outbound-ca-file", value_name = "PATH")]
    pub outbound_ca_file: Vec<std::path::PathBuf>,

    /// Longest wait for an outbound response's headers, in milliseconds (1..=600000); a guest
    /// may ask for less.
    #[arg(long = "outbound-timeout-ms", default_value_t = millis(DEFAULT_FIRST_BYTE_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub outbound_timeout_ms: u64,

    /// Longest wait to connect (TCP and TLS), in milliseconds (1..=60000).
    #[arg(long = "outbound-connect-timeout-ms", default_value_t = millis(DEFAULT_CONNECT_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub outbound_connect_timeout_ms: u64,

    /// Longest wait between two pieces of a response body, in milliseconds (1..=600000).
    #[arg(long = "outbound-between-bytes-ms", default_value_t = millis(DEFAULT_BETWEEN_BYTES_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=600_000))]
    pub outbound_between_bytes_ms: u64,

    /// Longest an outbound request may take from its sending to the end of its response body,
    /// in milliseconds (1..=3600000), however steadily the body arrives.
    #[arg(long = "outbound-total-timeout-ms", default_value_t = millis(DEFAULT_TOTAL_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub outbound_total_timeout_ms: u64,

    /// Longest one plugin call's outbound requests may take together, from the call's start,
    /// in milliseconds (1..=3600000): each request's deadline is the earlier of its own and the
    /// call's, and a request asked for past it is refused.
    #[arg(long = "outbound-call-timeout-ms", default_value_t = millis(DEFAULT_CALL_TIMEOUT),
          value_parser = clap::value_parser!(u64).range(1..=3_600_000))]
    pub outbound_call_timeout_ms: u64,

    /// Largest outbound request body, in bytes (1..=67108864).
    #[arg(long = "outbound-max-request-bytes", default_value_t = DEFAULT_MAX_REQUEST_BYTES,
          value_parser = clap::value_parser!(u64).range(1..=64 << 20))]
    pub outbound_max_request_bytes: u64,

    /// Largest outbound response body, in bytes (1..=268435456).
    #[arg(long = "outbound-max-response-bytes", default_value_t = DEFAULT_MAX_RESPONSE_BYTES,
          value_parser = clap::value_parser!(u64).range(1..=256 << 20))]
    pub outbound_max_response_bytes: u64,

    /// Outbound requests one plugin call may make (1..=1024).
    #[arg(long = "outbound-max-requests-per-call", default_value_t = DEFAULT_MAX_REQUESTS_PER_CALL,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub outbound_max_requests_per_call: u32,

    /// Outbound requests in flight to one origin at once, across calls (1..=4096); one more
    /// waits up to its connect timeout.
    #[arg(long = "outbound-max-connections-per-origin", default_value_t = DEFAULT_MAX_CONNECTIONS_PER_ORIGIN as u32,
          value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub outbound_max_connections_per_origin: u32,
}

impl OutboundArgs {
    /// Every bound credential: the bearer ones, then the others.
    pub fn credentials(&self) -> Vec<CredentialSpec> {
        self.outbound_bearer
            .iter()
            .chain(&self.outbound_header)
            .cloned()
            .collect()
    }

    /// The host's bounds on outbound requests, trusting `trusted` beside the compiled-in roots
    /// (read from `--outbound-ca-file` by [`crate::PluginArgs::read`]).
    pub fn options(&self, trusted_roots: TrustedRoots) -> OutboundOptions {
        OutboundOptions {
            connect_timeout: Duration::from_millis(self.outbound_connect_timeout_ms),
            first_byte_timeout: Duration::from_millis(self.outbound_timeout_ms),
            between_bytes_timeout: Duration::from_millis(self.outbound_between_bytes_ms),
            total_timeout: Duration::from_millis(self.outbound_total_timeout_ms),
            call_timeout: Duration::from_millis(self.outbound_call_timeout_ms),
            max_request_bytes: self.outbound_max_request_bytes,
            max_response_bytes: self.outbound_max_response_bytes,
            max_requests_per_call: self.outbound_max_requests_per_call,
            max_connections_per_origin: self.outbound_max_connections_per_origin as usize,
            slots: Default::default(),
            trusted_roots,
            deny_all: false,
            observer: Default::default(),
        }
    }
}

/// A duration as the flags give it, in milliseconds.
/// An outbound flag that cannot be used: its flag, and why (never a credential's value).
#[derive(Debug, thiserror::Error)]
pub enum OutboundArgsError {
    /// `--outbound-allow`.
    #[error("--outbound-allow: {0}")]
    Origins(#[from] OriginError),
    /// `--outbound-ca-file`.
    #[error("--outbound-ca-file: {0}")]
    TrustedRoots(#[from] TrustError),
    /// `--outbound-bearer` / `--outbound-header`.
    #[error("--outbound-bearer/--outbound-header: {0}")]
    Credentials(#[from] CredentialError),
}

impl CapabilityFlags for Outbound {
    type Args = OutboundArgs;
    type Given = OutboundGiven;
    type Error = OutboundArgsError;

    /// The origins granted, the credentials read (each bound to a granted origin or to one the
    /// host reaches itself), the CA files read, and the bounds.
    fn read(
        args: &OutboundArgs,
        env: &dyn Fn(&str) -> Option<String>,
        also_reached: &[String],
    ) -> Result<(OutboundGiven, OutboundOptions), OutboundArgsError> {
        let origins = Origins::parse(&args.outbound_allow)?;
        let trusted = TrustedRoots::load(&args.outbound_ca_file)?;
        let credentials = Credentials::load(&args.credentials(), env)?;
        let mut reached = args.outbound_allow.clone();
        reached.extend(also_reached.iter().cloned());
        credentials.check_granted(&Origins::parse(&reached)?)?;
        let given = OutboundGiven {
            origins,
            credentials: Arc::new(credentials),
        };
        Ok((given, args.options(trusted)))
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// One `--outbound-allow` origin, checked and normalised.
pub fn parse_origin(given: &str) -> Result<String, String> {
    given
        .parse::<AllowedOrigin>()
        .map(|origin| origin.as_str().to_owned())
        .map_err(|e| e.to_string())
}

/// One `--outbound-bearer`: where it goes and where its value comes from (never the value).
fn parse_bearer(given: &str) -> Result<CredentialSpec, String> {
    parse_bearer_arg(given).map_err(|e| e.to_string())
}

/// One `--outbound-header`.
fn parse_header(given: &str) -> Result<CredentialSpec, String> {
    parse_header_arg(given).map_err(|e| e.to_string())
}
