//! `turnstile serve`'s settings for who reaches what: the names the server answers to
//! (`--allowed-host`), the directories admin swaps may read files from (`--swap-root`), and the
//! proxies trusted to name a request's flow (`--trusted-proxy`).

use std::path::{Path, PathBuf};

use clap::Args;
use ipnet::IpNet;

use crate::http::parse_allowed_host;

/// Flags of access (flattened into `ServeArgs`).
#[derive(Debug, Clone, Args)]
pub struct AccessArgs {
    /// A `Host` name (or address) requests may be addressed to (repeatable; `*` for any); every
    /// route refuses others with 403 `host_not_allowed`, so a web page whose name was rebound to
    /// this server's address reads nothing. Default: the loopback names on a loopback listener,
    /// any name beyond it. Behind a reverse proxy, give the names it forwards.
    #[arg(long = "allowed-host", value_name = "NAME", value_parser = parse_allowed_host)]
    pub allowed_host: Vec<String>,

    /// A directory `POST /admin/plugin` and `/admin/corpus` may read files from (repeatable; in
    /// a file: `swap-root = ["/srv/turnstile"]`). Default: the directories of --plugin and
    /// --corpus. A path outside every root (a link out of one included) is refused with
    /// `path_not_allowed` before anything is read.
    #[arg(long = "swap-root", value_name = "DIR")]
    pub swap_root: Vec<PathBuf>,

    /// A network whose peers may name a request's flow in --flow-header, `ADDR[/PREFIX]`
    /// (repeatable): the authenticating proxy that sets the header. Others are in the default
    /// flow, whatever they send. Default: the loopback addresses (a proxy on this machine).
    #[arg(long = "trusted-proxy", value_name = "ADDR[/PREFIX]", value_parser = parse_network)]
    pub trusted_proxy: Vec<IpNet>,
}

impl AccessArgs {
    /// The networks trusted to name flows: those given, else the loopback ones.
    pub fn trusted_proxies(&self) -> Vec<IpNet> {
        if self.trusted_proxy.is_empty() {
            crate::admission::loopback_networks()
        } else {
            self.trusted_proxy.clone()
        }
    }

    /// The swap roots: those given (each unsafe one warned about: the operator named it), and
    /// the directories of the configured files — those that are safe: `/` or a directory other
    /// users can write to (`/tmp`, where `--corpus /tmp/c.jsonl` would make a root) is never
    /// implied, and a warning says so.
    pub fn swap_roots<'a>(&self, configured: impl IntoIterator<Item = &'a Path>) -> Vec<PathBuf> {
        let mut roots = self.swap_root.clone();
        for dir in &self.swap_root {
            if let Some(why) = turnstile_host::swap::unsafe_root(dir) {
                tracing::warn!(root = %dir.display(), "--swap-root names a directory where {why}: admin swaps read from it as named");
            }
        }
        for file in configured {
            let dir = file
                .parent()
                .filter(|d| !d.as_os_str().is_empty())
                .unwrap_or(Path::new("."));
            match turnstile_host::swap::unsafe_root(dir) {
                Some(why) => tracing::warn!(
                    dir = %dir.display(),
                    "not a swap root, as {why}: name it with --swap-root to swap from it"
                ),
                None => roots.push(dir.to_owned()),
            }
        }
        roots
    }
}

/// One `--trusted-proxy`: a network, or one address (a network of one).
fn parse_network(given: &str) -> Result<IpNet, String> {
    given
        .parse::<IpNet>()
        .or_else(|_| given.parse::<std::net::IpAddr>().map(IpNet::from))
        .map_err(|_| {
            format!(
                "expected an address or a network ADDR/PREFIX, got {:?}",
                turnstile_host::sanitize(given, 64)
            )
        })
}
