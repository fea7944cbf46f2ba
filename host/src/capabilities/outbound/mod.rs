//! The `outbound` capability: HTTP for plugins through `wasi:http/outgoing-handler` (WASI 0.2),
//! denied unless the operator granted the origin. One room, in parts: the capability's wiring
//! ([`capability`]); the origins the operator allows ([`origins`]), where their names may lead
//! ([`address`]), the credentials the host adds ([`credentials`]), the CAs trusted beyond the
//! compiled-in roots ([`trust`]) and the flags that give them (`args`, the `cli` feature); the
//! bounds ([`options`]); the plugin's pooled client ([`client`]); the policy every request passes
//! ([`policy`]) with its bounded bodies ([`body`]) and the per-origin slots ([`slots`]); what a
//! call's requests did ([`report`]) and who is told of each ([`observe`]); each request's span and
//! the trace context it carries ([`trace`]); and `check`'s proof of a denial ([`probe`]).

mod address;
#[cfg(feature = "cli")]
mod args;
mod body;
mod capability;
mod client;
mod credentials;
mod given;
mod grant;
mod lookups;
mod observe;
mod options;
mod origins;
mod policy;
mod probe;
mod report;
mod slots;
mod trace;
mod trust;

pub use address::{AddressRefused, is_public};
#[cfg(feature = "cli")]
pub use args::{OutboundArgs, OutboundArgsError, parse_origin};
pub use capability::{Outbound, OutboundState};
pub use credentials::{
    CredentialError, CredentialSpec, Credentials, MAX_CREDENTIALS, parse_bearer_arg,
    parse_header_arg,
};
pub use given::OutboundGiven;
pub use grant::OutboundGrant;
pub use observe::{Observed, OutboundEvent, OutboundObserver, OutboundOutcome};
pub use options::{
    DEFAULT_BETWEEN_BYTES_TIMEOUT, DEFAULT_CALL_TIMEOUT, DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_FIRST_BYTE_TIMEOUT, DEFAULT_MAX_CONNECTIONS_PER_ORIGIN, DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_REQUESTS_PER_CALL, DEFAULT_MAX_RESPONSE_BYTES, DEFAULT_TOTAL_TIMEOUT,
    OutboundOptions,
};
pub use origins::{AllowedOrigin, MAX_GRANTED_ORIGINS, OriginError, Origins};
pub use report::{MAX_RETRY_AFTER_SECS, OutboundReport};
pub use slots::OriginSlots;
pub use trust::{MAX_CA_FILE_BYTES, MAX_TRUSTED_CAS, TrustError, TrustedRoots};
