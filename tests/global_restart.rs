//! The global limit when Redis loses its data and when a replica stalls, on a real
//! `redis-server`: after Redis restarts empty, restarts from a snapshot older than the last
//! leases, or goes back to older data under the same run id, no lease is granted past the limit
//! until the running calls' leases are asserted again (the grace of one lease TTL, opened once per
//! loss), and while Redis keeps its data no grace opens; a replica stopped with SIGSTOP past the
//! lease TTL over-admits at most the leases it held, and only until those calls end. Calls are
//! counted running at once, never timed.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use turnstile_fixtures as components;

use crate::global::{Redis, global, past_grace, post};
use crate::support::{
    STATE_DEADLINE, TestServer, child_state_when, eventually, serve_child, stop_child,
};

/// The global limit in these tests.
const LIMIT: u64 = 2;

/// A replica's flags: the delay fixture (`delay`), the global limit of [`LIMIT`] on `redis`
/// with this lease TTL, `--max-active max_active`, waits of up to a minute, fail closed (nothing
/// runs without a lease, so the leases held are the calls running).
fn flags(redis: &str, ttl_ms: &str, delay: &str, max_active: &str) -> Vec<String> {
    [
        "--plugin",
        components::DELAY,
        "--plugin-config",
        delay,
        "--redis-url",
        redis,
        "--global-max-active",
        "2",
        "--global-lease-ttl-ms",
        ttl_ms,
        "--global-failure",
        "closed",
        "--max-active",
        max_active,
        "--wait-ms",
        "60000",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

async fn start(flags: &[String]) -> TestServer {
    TestServer::start(&flags.iter().map(String::as_str).collect::<Vec<_>>()).await
}

/// Global leases a replica in this process holds now: its calls running under the global limit.
fn held(server: &TestServer) -> u64 {
    server.state.admission.global().unwrap().leases_held() as u64
}

/// A's two calls, once A holds both permits with them.
async fn a_takes_the_limit(a: &TestServer) -> Vec<tokio::task::JoinHandle<(u16, Value)>> {
    let calls = vec![post(a), post(a)];
    eventually("A holds both permits", || async {
        (held(a) == LIMIT)
            .then_some(())
            .ok_or(format!("A holds {}", held(a)))
    })
    .await;
    calls
}

/// Returns right after one of A's heartbeats, so that the next one is a third of a TTL away.
async fn a_heartbeat(a: &TestServer) {
    let renewals = || a.state.admission.global().unwrap().totals().renewals;
    let before = renewals();
    eventually("a heartbeat of A", || async {
        (renewals() > before)
            .then_some(())
            .ok_or(format!("{} renewals", renewals()))
    })
    .await;
}

/// The global gate as B sees it, once B reaches Redis again.
async fn reaches_redis_again(b: &TestServer) -> Value {
    eventually("B reaches Redis again", || async {
        let g = global(b).await;
        g["holders"]
            .is_u64()
            .then_some(g.clone())
            .ok_or(g.to_string())
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_restarts_empty_no_lease_is_granted_until_the_running_ones_are_asserted_again()
{
    let mut redis = Redis::start();
    let url = redis.url();
    // TTL 3 s: a heartbeat every second, a grace of 3 s. A runs two calls of 6 s (both permits),
    // B four of 0.3 s.
    let a = start(&flags(&url, "3000", "delay_ms=6000", "2")).await;
    let b = start(&flags(&url, "3000", "delay_ms=300", "4")).await;
    past_grace(&a).await;
    let a_calls = a_takes_the_limit(&a).await;
    // Redis restarts right after one of A's heartbeats, so the next one — which asserts A's
    // leases again — is a second away: B asks Redis before it.
    a_heartbeat(&a).await;
    redis.stop();
    redis.run();
    assert_eq!(redis.holders(), 0, "Redis restarted without the leases");
    let g = reaches_redis_again(&b).await;
    // The first script to run on the empty Redis opened a grace of one TTL.
    assert!(
        g["grace_ms"].as_u64() > Some(0),
        "no grace after the restart: {g}"
    );
    let b_calls: Vec<_> = (0..4).map(|_| post(&b)).collect();
    never_past_the_limit(&a, &b, a_calls, b_calls, &redis).await;
    a.stop().await;
    b.stop().await;
}

/// Waits for `a_calls` and `b_calls` to end, reading the calls running at once meanwhile: each
/// replica's global leases, read together in process (fail closed: no call runs without one). A
/// sample above the limit is read again at once (a lease handed from A to B between the two reads
/// would count twice); an over-admission lasts a whole call. Every call must succeed, A's leases
/// must have been asserted again (none of B's calls ran beside A's) and B then ran at the limit.
async fn never_past_the_limit(
    a: &TestServer,
    b: &TestServer,
    a_calls: Vec<tokio::task::JoinHandle<(u16, Value)>>,
    b_calls: Vec<tokio::task::JoinHandle<(u16, Value)>>,
    redis: &Redis,
) {
    let running = || held(a) + held(b);
    let (mut peak, mut redis_peak) = (0, 0);
    while !(a_calls.iter().all(|c| c.is_finished()) && b_calls.iter().all(|c| c.is_finished())) {
        let now = running();
        if now > LIMIT {
            let again = running();
            assert!(
                again <= LIMIT,
                "{now}, then {again} calls running at once after Redis lost writes"
            );
        }
        peak = peak.max(now.min(LIMIT));
        let holders = redis.holders();
        assert!(holders <= LIMIT, "Redis holds {holders} leases");
        redis_peak = redis_peak.max(holders);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for call in a_calls.into_iter().chain(b_calls) {
        let (status, body) = call.await.unwrap();
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(peak, LIMIT, "B ran at the limit once A's calls had ended");
    assert_eq!(redis_peak, LIMIT);
}

/// Redis restarted from a snapshot taken before A's leases were granted: it comes back with the
/// deployment's marker (so nothing looks lost) but without the leases. The scripts find another
/// server's run id and open the grace: no lease is granted past the limit until A's are asserted
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_restarts_from_an_older_snapshot_no_lease_is_granted_past_the_limit() {
    let snapshots = tempfile::tempdir().unwrap();
    let mut redis = Redis::start_persistent(snapshots.path());
    let url = redis.url();
    let a = start(&flags(&url, "3000", "delay_ms=6000", "2")).await;
    let b = start(&flags(&url, "3000", "delay_ms=300", "4")).await;
    past_grace(&a).await;
    // The snapshot: the deployment's keys, no lease.
    assert_eq!(redis.command("SAVE"), "+OK");
    let a_calls = a_takes_the_limit(&a).await;
    a_heartbeat(&a).await;
    redis.stop();
    redis.run();
    assert_eq!(redis.holders(), 0, "Redis came back from the snapshot");
    assert_eq!(
        redis.command("EXISTS turnstile:{turnstile}:marker"),
        ":1",
        "the snapshot kept the marker"
    );
    let g = reaches_redis_again(&b).await;
    assert!(
        g["grace_ms"].as_u64() > Some(0),
        "no grace after the restart from a snapshot: {g}"
    );
    let b_calls: Vec<_> = (0..4).map(|_| post(&b)).collect();
    never_past_the_limit(&a, &b, a_calls, b_calls, &redis).await;
    // A's heartbeat carried a later point of the history than the snapshot's, and found no loss
    // in it again: the restart's grace had moved the epoch on.
    let (graces, reasserted) = graces_and_reasserted(&[&a, &b]);
    assert_eq!(graces, 2, "the fresh Redis' grace, then the restart's");
    assert_eq!(reasserted, LIMIT, "A's heartbeat put both leases back");
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_stopped_past_the_lease_ttl_over_admits_at_most_the_leases_it_held() {
    let redis = Redis::start();
    let url = redis.url();
    // Q, in this process: calls of 3 s. P, a child process to stop: two calls of 5 s.
    let q = start(&flags(&url, "1500", "delay_ms=3000", "4")).await;
    past_grace(&q).await;
    let mut p_flags = flags(&url, "1500", "delay_ms=5000", "2");
    p_flags.extend(["--listen".to_owned(), "127.0.0.1:0".to_owned()]);
    let p = serve_child("stopped", p_flags).await;
    let client = reqwest::Client::new();
    let p_calls: Vec<_> = (0..2)
        .map(|_| {
            let (client, url) = (client.clone(), p.url("/retrieve"));
            tokio::spawn(async move {
                let response = client
                    .post(url)
                    .json(&json!({"question": "q"}))
                    .send()
                    .await
                    .unwrap();
                response.status().as_u16()
            })
        })
        .collect();
    child_state_when(&client, &p, "P runs two calls under both permits", |s| {
        s["active"] == 2 && s["global"]["this_replica"] == 2
    })
    .await;
    // P stops with its two calls in flight: k = 2 leases, no heartbeat from now on.
    let k = LIMIT;
    p.pause().unwrap();
    let q_calls: Vec<_> = (0..4).map(|_| post(&q)).collect();
    let deadline = Instant::now() + STATE_DEADLINE;
    while held(&q) < LIMIT {
        assert!(
            Instant::now() < deadline,
            "P's leases never lapsed: Q holds {}, Redis {}",
            held(&q),
            redis.holders()
        );
        assert!(held(&q) <= LIMIT && redis.holders() <= LIMIT);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    // The overshoot: P's two calls (stopped in flight, a backend still working on them) and the
    // two Q was granted once P's leases lapsed, while Q's two others wait.
    let mut peak = k + held(&q);
    assert_eq!(peak, LIMIT + k);

    // P resumes: its heartbeat asserts its leases again, so Redis counts LIMIT + k and grants
    // nothing new until the calls running are back under the limit.
    p.resume().unwrap();
    let q_totals = || q.state.admission.global().unwrap().totals();
    let mut redis_peak = 0;
    while !(p_calls.iter().all(|c| c.is_finished()) && q_calls.iter().all(|c| c.is_finished())) {
        // Q first, then P: a permit goes from P to Q only after P's count went down.
        let granted = q_totals().granted;
        let q_now = held(&q);
        let p_state: Value = client
            .get(p.url("/state"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let p_now = p_state["active"].as_u64().unwrap();
        let holders = redis.holders();
        let now = q_now + p_now;
        assert!(q_now <= LIMIT, "Q alone past the limit: {q_now}");
        assert!(
            now <= LIMIT + k,
            "{now} calls running at once (Q {q_now}, P {p_now})"
        );
        assert!(holders <= LIMIT + k, "Redis holds {holders} leases");
        if granted > LIMIT {
            // Q was granted again: the count had come back under the limit and stays there.
            assert!(
                now <= LIMIT,
                "{now} running after Q's third grant: {p_state}"
            );
        }
        peak = peak.max(now);
        redis_peak = redis_peak.max(holders);
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for call in p_calls {
        assert_eq!(call.await.unwrap(), 200);
    }
    for call in q_calls {
        let (status, body) = call.await.unwrap();
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(
        peak,
        LIMIT + k,
        "the bound measured: the limit + P's leases"
    );
    assert_eq!(
        redis_peak,
        LIMIT + k,
        "P's lapsed leases were counted again on resume"
    );
    child_state_when(&client, &p, "P's calls over", |s| s["active"] == 0).await;
    assert_eq!(q_totals().granted, 4);
    stop_child(p).await;
    q.stop().await;
}

/// Copies the deployment's keys inside Redis (`DUMP`), or brings the copy back in their place
/// (`RESTORE`, the keys made since deleted): Redis then holds older data under the same run id,
/// as when it reloads an older RDB in place (`DEBUG RELOAD NOSAVE`) or a master resyncs from a
/// replica that lagged and is promoted again without a restart.
const COPY: &str = "EVAL \"for _, k in ipairs(redis.call('KEYS', 'turnstile:*')) do \
    redis.call('SET', 'copy:' .. k, redis.call('DUMP', k)) end return 1\" 0";
const BRING_BACK: &str = "EVAL \"for _, k in ipairs(redis.call('KEYS', 'turnstile:*')) do \
    redis.call('DEL', k) end for _, c in ipairs(redis.call('KEYS', 'copy:*')) do \
    redis.call('RESTORE', string.sub(c, 6), 0, redis.call('GET', c)) end return 1\" 0";

/// The graces these replicas opened, and the leases their heartbeats found gone and asserted
/// again.
fn graces_and_reasserted(replicas: &[&TestServer]) -> (u64, u64) {
    replicas.iter().fold((0, 0), |(g, r), replica| {
        let totals = replica.state.admission.global().unwrap().totals();
        (g + totals.graces, r + totals.reasserted)
    })
}

/// Redis goes back to data older than A's leases without a restart: same run id, the marker
/// there. B read the gate after A's grants, so B's next call carries a later point of the data's
/// history than Redis holds: it opens the grace, and no lease is granted past the limit until A's
/// heartbeat has asserted its leases again. A's own heartbeat, which saw as late a point, opens
/// no second grace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_redis_goes_back_to_older_data_in_place_no_lease_is_granted_past_the_limit() {
    let redis = Redis::start();
    let url = redis.url();
    let a = start(&flags(&url, "3000", "delay_ms=6000", "2")).await;
    let b = start(&flags(&url, "3000", "delay_ms=300", "4")).await;
    past_grace(&a).await;
    // The older data: the deployment's keys, no lease.
    assert_eq!(redis.command(COPY), ":1");
    let a_calls = a_takes_the_limit(&a).await;
    assert_eq!(global(&b).await["holders"], LIMIT, "B saw A's leases");
    // Right after one of A's heartbeats, so that B asks Redis before the next one.
    a_heartbeat(&a).await;
    assert_eq!(redis.command(BRING_BACK), ":1");
    assert_eq!(redis.holders(), 0, "Redis went back to before A's leases");
    let b_calls: Vec<_> = (0..4).map(|_| post(&b)).collect();
    never_past_the_limit(&a, &b, a_calls, b_calls, &redis).await;
    let (graces, reasserted) = graces_and_reasserted(&[&a, &b]);
    assert_eq!(graces, 2, "the fresh Redis' grace, then this one's");
    assert_eq!(reasserted, LIMIT, "A's heartbeat put both leases back");
    a.stop().await;
    b.stop().await;
}

/// While Redis keeps its data no grace opens: replicas that saw different points of its history
/// (B idle while A writes), and one that starts later having seen none (C), ask with what they
/// saw, never later than what Redis holds; leases held across heartbeats are renewed, none found
/// gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_keeps_its_data_no_grace_opens() {
    let redis = Redis::start();
    let url = redis.url();
    let a = start(&flags(&url, "1500", "delay_ms=20", "2")).await;
    let b = start(&flags(&url, "1500", "delay_ms=2000", "2")).await;
    past_grace(&a).await;
    // B's lease lives through heartbeats (every 0.5 s) while A's calls come and go.
    let b_call = post(&b);
    let b_totals = || b.state.admission.global().unwrap().totals();
    eventually("B's lease renewed twice", || async {
        (b_totals().renewals >= 2)
            .then_some(())
            .ok_or(format!("{:?}", b_totals()))
    })
    .await;
    assert_eq!(b_call.await.unwrap().0, 200);
    // B now holds nothing, so it stops calling Redis while A writes on; then B asks with the
    // older point it saw, and C with none.
    for _ in 0..20 {
        assert_eq!(post(&a).await.unwrap().0, 200);
    }
    let c = start(&flags(&url, "1500", "delay_ms=20", "2")).await;
    for server in [&b, &c, &a] {
        assert_eq!(post(server).await.unwrap().0, 200);
        let g = global(server).await;
        assert_eq!(g["grace_ms"], 0, "{g}");
    }
    let (graces, reasserted) = graces_and_reasserted(&[&a, &b, &c]);
    assert_eq!((graces, reasserted), (1, 0), "only the fresh Redis' grace");
    for server in [a, b, c] {
        server.stop().await;
    }
}
