//! Name resolution for outbound requests, off the workers' pool: the system's resolver
//! (`getaddrinfo`: `/etc/hosts`, nsswitch, systemd-resolved — what the operator configured) runs
//! on a few threads of its own, never on the blocking pool that runs plugin calls and swaps, so a
//! slow resolver cannot starve admitted calls. Each lookup is bounded by the caller's timeout
//! (its connect timeout: resolution is part of connecting); at most [`MAX_PENDING`] wait for a
//! thread (past that a lookup fails at once); answers are kept [`CACHE_TTL`] (at most
//! [`MAX_CACHED`] names). A lookup that outlives its timeout holds its thread until the system
//! resolver answers — one of [`THREADS`], never a plugin call's.

use std::collections::HashMap;
use std::net::{IpAddr, ToSocketAddrs};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

/// Resolver threads.
pub const THREADS: usize = 4;
/// Lookups waiting for a thread, at most.
pub const MAX_PENDING: usize = 64;
/// How long an answer is kept.
pub const CACHE_TTL: Duration = Duration::from_secs(30);
/// Names kept, at most.
pub const MAX_CACHED: usize = 1024;

type Answer = std::io::Result<Vec<IpAddr>>;

struct Lookups {
    jobs: SyncSender<(String, oneshot::Sender<Answer>)>,
    cache: Mutex<HashMap<String, (Instant, Vec<IpAddr>)>>,
}

fn lookups() -> &'static Lookups {
    static LOOKUPS: OnceLock<Lookups> = OnceLock::new();
    LOOKUPS.get_or_init(|| {
        let (jobs, queue) = sync_channel::<(String, oneshot::Sender<Answer>)>(MAX_PENDING);
        let queue = std::sync::Arc::new(Mutex::new(queue));
        for n in 0..THREADS {
            let queue = std::sync::Arc::clone(&queue);
            let _ = std::thread::Builder::new()
                .name(format!("turnstile-dns-{n}"))
                .spawn(move || {
                    loop {
                        let job = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((host, answer)) = job else { return };
                        let found = (host.as_str(), 0)
                            .to_socket_addrs()
                            .map(|addrs| addrs.map(|a| a.ip()).collect::<Vec<_>>());
                        if let Ok(ips) = &found {
                            remember(&host, ips.clone());
                        }
                        let _ = answer.send(found);
                    }
                });
        }
        Lookups {
            jobs,
            cache: Mutex::new(HashMap::new()),
        }
    })
}

fn remember(host: &str, ips: Vec<IpAddr>) {
    let mut cache = lookups().cache.lock().unwrap_or_else(|p| p.into_inner());
    if cache.len() >= MAX_CACHED {
        let now = Instant::now();
        cache.retain(|_, (at, _)| now.duration_since(*at) < CACHE_TTL);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
    }
    cache.insert(host.to_owned(), (Instant::now(), ips));
}

/// The addresses of `host` (lowercase, no trailing dot), within `timeout`.
pub async fn lookup(host: &str, timeout: Duration) -> Answer {
    let lookups = lookups();
    if let Some((at, ips)) = lookups
        .cache
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(host)
        && at.elapsed() < CACHE_TTL
    {
        return Ok(ips.clone());
    }
    let (answer, answered) = oneshot::channel();
    lookups
        .jobs
        .try_send((host.to_owned(), answer))
        .map_err(|_| std::io::Error::other("the resolver is busy: too many lookups waiting"))?;
    match tokio::time::timeout(timeout, answered).await {
        Ok(Ok(found)) => found,
        Ok(Err(_)) => Err(std::io::Error::other("the resolver stopped")),
        Err(_) => Err(std::io::Error::new(
            std::io::ErrorKind::TimedOut,
            format!("{host} was not resolved within {} ms", timeout.as_millis()),
        )),
    }
}
