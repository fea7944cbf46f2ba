//! `GET /dashboard`: one self-contained page that draws the `/events` stream; `GET /` leads to it.

use axum::http::header;
use axum::response::{IntoResponse, Redirect};

/// The page, with its script and style inline (no external asset, no CDN).
const DASHBOARD_HTML: &str = include_str!("dashboard.html");

/// `GET /dashboard`: the live page.
#[utoipa::path(
    get,
    path = "/dashboard",
    tag = "operations",
    responses(
        (status = 200, description = "The live page (HTML, self-contained)", body = String, content_type = "text/html"),
    )
)]
pub async fn dashboard() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::CACHE_CONTROL, "no-store"),
        ],
        DASHBOARD_HTML,
    )
}

/// `GET /`: what a person who opens the service's address in a browser is looking for — the live
/// page (a temporary redirect, so that `/` may answer otherwise one day; `/dashboard` applies the
/// operator's token where one is set).
#[utoipa::path(
    get,
    path = "/",
    tag = "operations",
    responses(
        (status = 307, description = "To the live page", headers(("location" = String, description = "`/dashboard`"))),
    )
)]
pub async fn root() -> Redirect {
    Redirect::temporary("/dashboard")
}
