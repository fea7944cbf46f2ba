//! The global limit across replicas, on a real `redis-server` (started here on a free loopback
//! port, stopped on drop): the limit holds across three replicas, FIFO across replicas, global
//! 429 and 503, a replica killed with SIGKILL gives its permits back, Redis down or paused (fail
//! open, fail closed, recovery), and a client that leaves mid-call keeps its global lease.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::support::{TestServer, eventually, serve_child};

/// A `redis-server` of its own, on a free loopback port, without persistence — or, made by
/// [`Redis::start_persistent`], with snapshots taken only when asked (`SAVE`) and loaded when it
/// starts again.
pub(crate) struct Redis {
    port: u16,
    child: Option<Child>,
    snapshots: Option<std::path::PathBuf>,
}

impl Redis {
    pub(crate) fn start() -> Self {
        Self::start_in(None)
    }

    /// A server whose snapshot (`dump.rdb`, written by `SAVE`) is kept in `dir` and loaded by
    /// every [`Redis::run`].
    pub(crate) fn start_persistent(dir: &std::path::Path) -> Self {
        Self::start_in(Some(dir.to_owned()))
    }

    fn start_in(snapshots: Option<std::path::PathBuf>) -> Self {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut redis = Self {
            port,
            child: None,
            snapshots,
        };
        redis.run();
        redis
    }

    /// Starts (or restarts) the server on its port and waits until it answers.
    pub(crate) fn run(&mut self) {
        let mut command = Command::new("redis-server");
        command
            .args(["--bind", "127.0.0.1", "--port", &self.port.to_string()])
            .args(["--save", "", "--appendonly", "no"]);
        if let Some(dir) = &self.snapshots {
            command
                .arg("--dir")
                .arg(dir)
                .args(["--dbfilename", "dump.rdb"]);
        }
        let child = command
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server: run tests/setup.sh (Debian package redis-server)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.command("PING") != "+PONG" {
            assert!(Instant::now() < deadline, "redis-server never answered");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// One inline command; its first reply line ("" when Redis is not there).
    pub(crate) fn command(&self, command: &str) -> String {
        let Ok(mut stream) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return String::new();
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        if stream
            .write_all(format!("{command}\r\n").as_bytes())
            .is_err()
        {
            return String::new();
        }
        let mut reply = [0u8; 256];
        let n = stream.read(&mut reply).unwrap_or(0);
        String::from_utf8_lossy(&reply[..n])
            .lines()
            .next()
            .unwrap_or("")
            .to_owned()
    }
}

impl Redis {
    /// The global leases Redis holds for the default `--global-key` (expired ones not yet swept
    /// included).
    pub(crate) fn holders(&self) -> u64 {
        let reply = self.command("ZCARD turnstile:{turnstile}:holders");
        reply
            .strip_prefix(':')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("ZCARD answered {reply:?}"))
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

pub(crate) fn replica_flags<'a>(redis: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut flags = vec![
        "--plugin",
        components::DELAY,
        "--redis-url",
        redis,
        "--global-lease-ttl-ms",
        "1500",
    ];
    flags.extend_from_slice(extra);
    flags
}

pub(crate) fn post(server: &TestServer) -> tokio::task::JoinHandle<(u16, Value)> {
    let request = server
        .client
        .post(server.url("/retrieve"))
        .json(&json!({"question": "json dumps"}));
    tokio::spawn(async move {
        let response = request.send().await.unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    })
}

pub(crate) async fn global(server: &TestServer) -> Value {
    server.get_json("/state").await["global"].clone()
}

/// Waits out the grace a fresh Redis opens (it holds none of the deployment's data yet, as after
/// a restart): no lease is granted for one TTL after a replica's first call, `/state`'s own read
/// included.
pub(crate) async fn past_grace(server: &TestServer) {
    server
        .state_when("the grace of a fresh Redis over", |s| {
            s["global"]["grace_ms"] == 0
        })
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_never_exceed_the_global_limit_and_reach_its_plateau() {
    let redis = Redis::start();
    let url = redis.url();
    let flags = replica_flags(
        &url,
        &[
            "--plugin-config",
            "delay_ms=400",
            "--global-max-active",
            "4",
            "--max-active",
            "4",
            "--max-waiting",
            "100",
            "--wait-ms",
            "60000",
        ],
    );
    let replicas = [
        TestServer::start(&flags).await,
        TestServer::start(&flags).await,
        TestServer::start(&flags).await,
    ];
    past_grace(&replicas[0]).await;
    let stop_at = Instant::now() + Duration::from_secs(4);
    // 24 closed-loop clients, 8 per replica.
    let mut clients = Vec::new();
    for replica in &replicas {
        for _ in 0..8 {
            let (client, url) = (replica.client.clone(), replica.url("/retrieve"));
            clients.push(tokio::spawn(async move {
                let mut done = 0u32;
                while Instant::now() < stop_at {
                    let r = client
                        .post(&url)
                        .json(&json!({"question": "q"}))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                    // The plateau: calls that ended within the window.
                    if Instant::now() <= stop_at {
                        done += 1;
                    }
                }
                done
            }));
        }
    }
    // The calls actually running: each replica's own global leases (a lease is counted from
    // Redis's grant until its plugin call has returned), the three read together in process, a
    // few microseconds apart. Never above 4 while Redis is healthy: a replica that admitted past
    // Redis (failing open on a stall) would show here, where Redis's own count would not. A lease
    // handed from one replica to another between two reads could be counted twice only if the
    // release, the wake-up and the grant all fit between them, so a sample above 4 is read again
    // at once before it fails the test; an over-admission lasts a whole 0.4 s call.
    let running = || -> u64 {
        replicas
            .iter()
            .map(|r| r.state.admission.global().unwrap().leases_held() as u64)
            .sum()
    };
    let (mut samples, mut peak, mut redis_peak) = (0, 0, 0);
    while Instant::now() < stop_at {
        let now = running();
        if now > 4 {
            let again = running();
            assert!(again <= 4, "{now}, then {again} calls running at once");
        }
        peak = peak.max(now.min(4));
        let g = global(&replicas[samples % 3]).await;
        let holders = g["holders"].as_u64().unwrap();
        assert!(holders <= 4, "{holders} global leases out: {g}");
        redis_peak = redis_peak.max(holders);
        samples += 1;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut completed = 0;
    for client in clients {
        completed += client.await.unwrap();
    }
    assert!(samples > 20, "{samples} samples");
    assert_eq!(peak, 4, "the limit is reached under this load");
    assert_eq!(redis_peak, 4, "Redis counts the limit reached too");
    // Theory: 4 calls of 0.4 s at once for 4 s = 40 (4 more can end inside the window's
    // edges); never more, and not far below on a busy machine.
    assert!(
        (24..=44).contains(&completed),
        "{completed} completed in 4 s"
    );
    for replica in replicas {
        replica.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_across_replicas_and_refusals_by_the_global_gate() {
    let redis = Redis::start();
    let url = redis.url();
    let flags = |delay: &'static str, extra: &[&'static str]| {
        let mut flags = replica_flags(
            &url,
            &[
                "--plugin-config",
                delay,
                "--global-max-active",
                "1",
                "--global-max-waiting",
                "2",
            ],
        );
        flags.extend_from_slice(extra);
        flags
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<String>>()
    };
    let start = |flags: Vec<String>| async move {
        TestServer::start(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await
    };
    // A and C run 2.5 s on r1 (room for a busy machine to see B and C queued and refuse D), B
    // 0.2 s on r2; r3 waits 300 ms at most.
    let r1 = start(flags("delay_ms=2500", &[])).await;
    let r2 = start(flags("delay_ms=200", &[])).await;
    let r3 = start(flags("delay_ms=200", &["--wait-ms", "300"])).await;

    let a = post(&r1);
    eventually("A holds the global lease", || async {
        let g = global(&r1).await;
        (g["this_replica"] == 1).then_some(()).ok_or(g.to_string())
    })
    .await;
    let b = post(&r2);
    eventually("B waits", || async {
        let g = global(&r2).await;
        (g["waiting"] == 1).then_some(()).ok_or(g.to_string())
    })
    .await;
    let c = post(&r1);
    eventually("C waits behind B", || async {
        let g = global(&r1).await;
        (g["waiting"] == 2).then_some(()).ok_or(g.to_string())
    })
    .await;
    // The global queue is full: 429, and the body says which gate refused.
    let (status, body) = post(&r3).await.unwrap();
    assert_eq!(
        (status, &body["status"], &body["gate"]),
        (429, &json!("queue_full"), &json!("global"))
    );

    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut done = Vec::new();
    for (name, handle) in [("A", a), ("B", b), ("C", c)] {
        let order = std::sync::Arc::clone(&order);
        done.push(tokio::spawn(async move {
            let (status, _) = handle.await.unwrap();
            order.lock().unwrap().push(name);
            status
        }));
    }
    // While B and C wait, a request with a 300 ms deadline times out at the global gate.
    eventually("the queue has room again", || async {
        let g = global(&r3).await;
        (g["waiting"].as_u64() < Some(2))
            .then_some(())
            .ok_or(g.to_string())
    })
    .await;
    let (status, body) = post(&r3).await.unwrap();
    assert_eq!((status, &body["gate"]), (503, &json!("global")), "{body}");
    assert_eq!(body["status"], "wait_timeout");
    for d in done {
        assert_eq!(d.await.unwrap(), 200);
    }
    assert_eq!(
        *order.lock().unwrap(),
        ["A", "B", "C"],
        "served in ticket order across replicas"
    );
    assert_eq!(global(&r3).await["totals"]["wait_timeout"], 1);
    for r in [r1, r2, r3] {
        r.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_replica_gives_its_permits_back_within_the_lease_ttl() {
    let redis = Redis::start();
    let url = redis.url();
    let child_flags: Vec<String> = replica_flags(
        &url,
        &[
            "--plugin-config",
            "delay_ms=30000",
            "--global-max-active",
            "2",
        ],
    )
    .into_iter()
    .map(str::to_owned)
    .chain(["--listen".to_owned(), "127.0.0.1:0".to_owned()])
    .collect();
    let victim = serve_child("victim", child_flags).await;
    let client = reqwest::Client::new();
    // The victim takes both permits with two 30 s calls.
    for _ in 0..2 {
        let (client, url) = (client.clone(), victim.url("/retrieve"));
        tokio::spawn(async move {
            let _ = client
                .post(url)
                .json(&json!({"question": "q"}))
                .send()
                .await;
        });
    }
    let survivor = TestServer::start(&replica_flags(
        &url,
        &[
            "--plugin-config",
            "delay_ms=10",
            "--global-max-active",
            "2",
            "--wait-ms",
            "30000",
        ],
    ))
    .await;
    eventually("the victim holds both permits", || async {
        let g = global(&survivor).await;
        (g["holders"] == 2).then_some(()).ok_or(g.to_string())
    })
    .await;
    let waiting = post(&survivor);
    eventually("the survivor waits", || async {
        let g = global(&survivor).await;
        (g["this_replica_waiting"] == 1)
            .then_some(())
            .ok_or(g.to_string())
    })
    .await;
    let killed = Instant::now();
    drop(victim); // SIGKILL: no release, no more heartbeats
    // The design bound: a lease not renewed for the TTL (1.5 s) is gone, its last renewal was at
    // most one heartbeat (0.5 s) before the kill, and the waiter re-checks every 0.25 s; 1 s
    // more for a loaded machine.
    let design_bound = Duration::from_millis(1_500 + 500 + 250 + 1_000);
    // Nothing is over-admitted while the dead replica's leases run out.
    while !waiting.is_finished() {
        let g = global(&survivor).await;
        let holders = g["holders"]
            .as_u64()
            .unwrap_or_else(|| panic!("no global holders count: {g}"));
        assert!(holders <= 2, "{holders} global leases out: {g}");
        assert!(
            killed.elapsed() < design_bound,
            "not admitted within the design bound ({design_bound:?}): {g}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, _) = waiting.await.unwrap();
    assert_eq!(status, 200);
    // TTL 1.5 s, heartbeat 0.5 s: the permits came back after the TTL, not before.
    assert!(
        killed.elapsed() >= Duration::from_millis(500),
        "{:?}",
        killed.elapsed()
    );
    survivor.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_or_paused_fails_open_or_closed_and_limiting_resumes() {
    let mut redis = Redis::start();
    let url = redis.url();
    let open = TestServer::start(&replica_flags(
        &url,
        &["--plugin-config", "delay_ms=10", "--global-max-active", "1"],
    ))
    .await;
    let closed = TestServer::start(&replica_flags(
        &url,
        &[
            "--plugin-config",
            "delay_ms=10",
            "--global-max-active",
            "1",
            "--global-failure",
            "closed",
        ],
    ))
    .await;
    assert_eq!(post(&open).await.unwrap().0, 200);
    assert_eq!(global(&open).await["totals"]["granted"], 1);

    // Slow Redis: every call waits past the 200 ms call timeout.
    assert_eq!(redis.command("CLIENT PAUSE 3000 ALL"), "+OK");
    let (status, body) = post(&closed).await.unwrap();
    assert_eq!(
        (status, &body["status"]),
        (503, &json!("global_unavailable")),
        "{body}"
    );
    let (status, _) = post(&open).await.unwrap();
    assert_eq!(status, 200, "fail open: admitted on the local gate");
    redis.command("CLIENT UNPAUSE");

    // Redis gone.
    redis.stop();
    let (status, body) = post(&closed).await.unwrap();
    assert_eq!((status, &body["gate"]), (503, &json!("global")), "{body}");
    assert_eq!(post(&open).await.unwrap().0, 200);
    let g = global(&open).await;
    assert!(g["totals"]["failed_open"].as_u64().unwrap() >= 2, "{g}");
    assert!(g["last_error"].is_string(), "{g}");
    assert!(g["holders"].is_null(), "{g}");
    let scrape = open.get("/metrics").await.text().await.unwrap();
    let failed_open = g["totals"]["failed_open"].as_u64().unwrap();
    assert!(
        scrape.contains(&format!(
            "turnstile_global_requests_total{{outcome=\"failed_open\"}} {failed_open}\n"
        )),
        "{scrape}"
    );
    assert!(scrape.contains("turnstile_global_requests_total{outcome=\"granted\"} 1\n"));

    // Redis back: global limiting resumes (after the breaker's pause).
    redis.run();
    for server in [&open, &closed] {
        eventually("granted by Redis again", || async {
            let before = global(server).await["totals"]["granted"].as_u64().unwrap();
            let (status, _) = post(server).await.unwrap();
            let after = global(server).await["totals"]["granted"].as_u64().unwrap();
            (status == 200 && after == before + 1)
                .then_some(())
                .ok_or(format!("status {status}, granted {before} -> {after}"))
        })
        .await;
    }
    open.stop().await;
    closed.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_leaves_mid_call_keeps_its_global_lease() {
    let redis = Redis::start();
    let url = redis.url();
    let server = TestServer::start(&replica_flags(
        &url,
        &[
            "--plugin-config",
            "delay_ms=1500",
            "--global-max-active",
            "1",
        ],
    ))
    .await;
    // Granted at once, not queued behind the grace of a fresh Redis.
    past_grace(&server).await;
    let impatient = crate::support::impatient_client(Duration::from_millis(300));
    let gone = impatient
        .post(server.url("/retrieve"))
        .json(&json!({"question": "q"}))
        .send()
        .await;
    assert!(gone.is_err(), "the client gave up");
    // Its call runs on, and so does its global lease.
    let state = server
        .state_when("the lease marked client-gone", |s| s["client_gone"] == 1)
        .await;
    assert_eq!(state["global"]["holders"], 1, "{state}");
    assert_eq!(state["global"]["this_replica"], 1, "{state}");
    // A second request waits for it, and runs once the call has really returned.
    let (status, body) = post(&server).await.unwrap();
    assert_eq!(status, 200);
    assert!(body["timing"]["queue_ms"].as_f64().unwrap() > 0.0);
    // The global lease goes back to Redis after the local one (its release is a Redis call of
    // its own), so wait for both: a lease that never goes back fails at the deadline.
    server
        .state_when("every lease back, here and in Redis", |s| {
            s["active"] == 0 && s["global"]["holders"] == 0
        })
        .await;
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiter_whose_client_leaves_leaves_the_global_queue() {
    let redis = Redis::start();
    let url = redis.url();
    let server = TestServer::start(&replica_flags(
        &url,
        &[
            "--plugin-config",
            "delay_ms=3000",
            "--global-max-active",
            "1",
        ],
    ))
    .await;
    let running = post(&server);
    server
        .state_when("A running", |s| s["global"]["holders"] == 1)
        .await;
    let waiter = {
        let request = server
            .client
            .post(server.url("/retrieve"))
            .json(&json!({"question": "q"}));
        tokio::spawn(async move { request.send().await })
    };
    server
        .state_when("B waits in the global queue", |s| {
            s["global"]["waiting"] == 1
        })
        .await;
    // B's client gives up: its request is dropped, its connection closed.
    waiter.abort();
    assert!(waiter.await.unwrap_err().is_cancelled());
    // B never ran: it left the global queue (and its local lease), while A runs on.
    let state = server
        .state_when("B gone from the global queue", |s| {
            s["global"]["waiting"] == 0 && s["global"]["this_replica_waiting"] == 0
        })
        .await;
    assert_eq!(state["global"]["holders"], 1, "{state}");
    assert_eq!(
        state["active"], 1,
        "B's local lease was given back: {state}"
    );
    assert_eq!(running.await.unwrap().0, 200);
    server.stop().await;
}
