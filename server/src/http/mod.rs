//! The HTTP edge: request validation, admission, the worker, the response. Every rejection is
//! decided here, before any lease or worker is involved. [`routes`] names every route once.

pub mod access;
mod access_log;
pub(crate) mod admin;
pub mod api;
mod body;
mod call;
pub(crate) mod chat;
pub(crate) mod corpus_swap;
pub(crate) mod error;
mod flow;
mod health;
mod hosts;
pub mod live;
mod openapi;
mod operator;
mod policy;
mod request;
mod request_id;
mod request_scope;
mod request_span;
mod response_metrics;
mod retrieve;
mod routes;
mod state;
mod swap_route;

pub use access::Access;
pub use body::DRAIN_BYTES;
pub use error::ApiError;
pub use hosts::{AllowedHosts, parse_allowed_host};
pub use policy::AdminPolicy;
pub use request::{MAX_BODY_BYTES, MAX_QUESTION_CHARS, RetrieveRequest};
pub use request_id::{MAX_REQUEST_ID_BYTES, REQUEST_ID_HEADER, RequestId};
pub use routes::{app, openapi_json, routes};
pub use state::{AppState, HealthPolicy, Policies};
pub use swap_route::MAX_ADMIN_BODY_BYTES;
