//! `serve` flags as on the command line, and a server's state loaded from them (the corpus index,
//! the plugin, the gates) — what an in-process app and a server on a socket both start from.

use clap::Parser;
use turnstile_server::http::AppState;
use turnstile_server::serve::ServeArgs;

use super::files::cache_dir;

#[derive(Parser)]
struct Wrapper {
    #[command(flatten)]
    serve: ServeArgs,
}

/// `serve` flags as on the command line, with the shared cache directory.
pub fn args(flags: &[&str]) -> ServeArgs {
    let cache = cache_dir().display().to_string();
    let mut argv = vec!["serve"];
    if !flags.contains(&"--cache-dir") {
        argv.extend(["--cache-dir", cache.as_str()]);
    }
    argv.extend_from_slice(flags);
    Wrapper::try_parse_from(argv).unwrap().serve
}

/// Loads like `turnstile serve FLAGS`, on a blocking thread (startup work).
pub async fn load(flags: &[&str]) -> AppState {
    try_load(flags).await.unwrap()
}

/// [`load`], or why `serve` would refuse to start (the error's whole chain).
pub async fn try_load(flags: &[&str]) -> Result<AppState, String> {
    let args = args(flags);
    tokio::task::spawn_blocking(move || turnstile_server::serve::load(&args))
        .await
        .unwrap()
        .map_err(|e| format!("{e:#}"))
}
