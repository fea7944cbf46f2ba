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

type Lookup = std::io::Result<Vec<IpAddr>>;

struct Lookups {
    jobs: SyncSender<(String, oneshot::Sender<Lookup>)>,
    cache: Mutex<HashMap<String, (Instant, Vec<IpAddr>)>>,
}

fn lookups() -> &'static Lookups {
    static LOOKUPS: OnceLock<Lookups> = OnceLock::new();
    LOOKUPS.get_or_init(|| {
        let (jobs, queue) = sync_channel::<(String, oneshot::Sender<Lookup>)>(MAX_PENDING);
        let queue = std::sync::Arc::new(Mutex::new(queue));
        for n in 0..THREADS {
            let queue = std::sync::Arc::clone(&queue);
            let _ = std::thread::Builder::new()
                .name(format!("turnstile-dns-{n}"))
                .spawn(move || {
                    loop {
                        let job = queue.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((host, answer)) = job else { return };
                        let found = resolve(&host);
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

/// The system resolver's answer for `host` (blocking).
fn resolve(host: &str) -> Lookup {
    #[cfg(test)]
    if host.ends_with(tests::HANGS) {
        return tests::hang();
    }
    #[cfg(test)]
    if host.ends_with(tests::LOOPBACK) {
        return Ok(vec![IpAddr::from([127, 0, 0, 1])]);
    }
    (host, 0)
        .to_socket_addrs()
        .map(|addrs| addrs.map(|a| a.ip()).collect::<Vec<_>>())
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
pub async fn lookup(host: &str, timeout: Duration) -> Lookup {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Condvar;

    /// Names that end so are looked up by a resolver that does not answer until released (as a
    /// stalled DNS server would), at most 20 s.
    pub(super) const HANGS: &str = ".hang.invalid";

    /// Names that end so resolve to 127.0.0.1 (a name with several grants, in tests).
    pub(crate) const LOOPBACK: &str = ".loop.invalid";

    static RELEASED: (Mutex<bool>, Condvar) = (Mutex::new(false), Condvar::new());

    pub(super) fn hang() -> Lookup {
        let (released, changed) = &RELEASED;
        let guard = released.lock().unwrap_or_else(|p| p.into_inner());
        let _ = changed.wait_timeout_while(guard, Duration::from_secs(20), |r| !*r);
        Err(std::io::Error::other("released"))
    }

    fn release() {
        let (released, changed) = &RELEASED;
        *released.lock().unwrap_or_else(|p| p.into_inner()) = true;
        changed.notify_all();
    }

    /// With the runtime's one blocking thread held (as plugin calls hold the workers' pool), a
    /// name is still resolved; a lookup the resolver never answers ends at its timeout; with
    /// every resolver thread stalled, a cached name still answers at once, and past the waiting
    /// bound a lookup fails at once instead of queueing.
    #[test]
    fn lookups_never_wait_on_the_workers_pool_and_end_at_their_timeout() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(1)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let (held, hold) = std::sync::mpsc::channel::<()>();
            let pool = tokio::task::spawn_blocking(move || hold.recv());
            let found = lookup("localhost", Duration::from_secs(10)).await.unwrap();
            assert!(found.iter().all(|ip| ip.is_loopback()), "{found:?}");

            let error = lookup("a.hang.invalid", Duration::from_millis(100))
                .await
                .unwrap_err();
            assert_eq!(error.kind(), std::io::ErrorKind::TimedOut, "{error}");

            // Every resolver thread stalled (one already is), the queue filled.
            let stalled: Vec<_> = (0..THREADS + MAX_PENDING)
                .map(|n| tokio::spawn(lookup_owned(format!("{n}.hang.invalid"))))
                .collect();
            let busy = loop {
                match lookup("b.hang.invalid", Duration::from_millis(1)).await {
                    Err(e) if e.to_string().contains("busy") => break e,
                    _ => tokio::task::yield_now().await,
                }
            };
            assert!(
                busy.to_string().contains("too many lookups waiting"),
                "{busy}"
            );
            let cached = lookup("localhost", Duration::from_millis(1)).await.unwrap();
            assert_eq!(cached, found);

            release();
            for lookup in stalled {
                assert!(lookup.await.unwrap().is_err());
            }
            held.send(()).unwrap();
            pool.await.unwrap().unwrap();
        });
    }

    async fn lookup_owned(host: String) -> Lookup {
        lookup(&host, Duration::from_secs(20)).await
    }
}
