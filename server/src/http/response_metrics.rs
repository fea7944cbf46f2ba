//! Every response, counted: by route and status class, and — when the edge refused the request —
//! by the refusal's code.

use axum::response::Response;

use super::error::Rejected;
use crate::metrics::Metrics;

/// Counts `response` to a request of `route` (a route template or `other`).
pub fn count_response(metrics: &Metrics, route: &'static str, response: &Response) {
    metrics.response(route, response.status().as_u16());
    if let Some(Rejected(code)) = response.extensions().get::<Rejected>() {
        metrics.rejection(code);
    }
}
