//! The live view: `/events` streamed over a real socket (event order, `Last-Event-ID` resume, the
//! subscriber cap, a reader that stops reading), and `/dashboard` in a real browser (headless
//! Chromium driven by Playwright, `tests/dashboard/check.py`), its numbers against `/state`.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use turnstile_fixtures as components;

use crate::support::{TestServer, delay_server, eventually};

/// One Server-Sent Events message.
#[derive(Debug)]
struct Message {
    event: String,
    id: u64,
    data: Value,
}

/// The longest a test reads one `/events` stream, from opening it to its last message: every
/// loop over a stream ends by then, whatever the stream sends.
const STREAM_DEADLINE: Duration = Duration::from_secs(60);

/// An `/events` stream read message by message, until [`STREAM_DEADLINE`] after it opened.
struct Stream {
    response: reqwest::Response,
    buffer: String,
    deadline: tokio::time::Instant,
}

impl Stream {
    async fn open(server: &TestServer, last_event_id: Option<u64>) -> Self {
        let mut request = server.client.get(server.url("/events"));
        if let Some(id) = last_event_id {
            request = request.header("last-event-id", id.to_string());
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            "text/event-stream",
            "{response:?}"
        );
        Self {
            response,
            buffer: String::new(),
            deadline: tokio::time::Instant::now() + STREAM_DEADLINE,
        }
    }

    /// The next message (failing the test past the stream's deadline, or when no message comes
    /// within [`crate::support::STATE_DEADLINE`]).
    async fn next(&mut self) -> Message {
        let deadline = self
            .deadline
            .min(tokio::time::Instant::now() + crate::support::STATE_DEADLINE);
        tokio::time::timeout_at(deadline, async {
            loop {
                if let Some(end) = self.buffer.find("\n\n") {
                    let block: String = self.buffer.drain(..end + 2).collect();
                    let (mut event, mut id, mut data) = (String::new(), None, String::new());
                    for line in block.lines() {
                        match line.split_once(':') {
                            Some(("event", v)) => event = v.trim().to_owned(),
                            Some(("id", v)) => id = Some(v.trim().parse().unwrap()),
                            Some(("data", v)) => data.push_str(v.strip_prefix(' ').unwrap_or(v)),
                            _ => {}
                        }
                    }
                    if event.is_empty() {
                        continue; // a comment or a bare `retry:`
                    }
                    return Message {
                        event,
                        id: id.expect("every message has an id"),
                        data: serde_json::from_str(&data).unwrap(),
                    };
                }
                let chunk = self
                    .response
                    .chunk()
                    .await
                    .unwrap()
                    .expect("the stream ended");
                self.buffer.push_str(std::str::from_utf8(&chunk).unwrap());
            }
        })
        .await
        .expect("no message within the deadline")
    }

    /// Gate events from the stream until `n` have arrived (snapshots skipped); also returns the
    /// `missed` counts seen.
    async fn events(&mut self, n: usize) -> (Vec<Value>, u64) {
        let (mut events, mut missed) = (Vec::new(), 0);
        while events.len() < n {
            let message = self.next().await;
            if message.event == "events" {
                missed += message.data["missed"].as_u64().unwrap();
                let batch = message.data["events"].as_array().unwrap();
                assert_eq!(
                    message.id,
                    batch.last().unwrap()["order"].as_u64().unwrap(),
                    "an events message's id is its newest event's order"
                );
                events.extend(batch.iter().cloned());
            }
        }
        (events, missed)
    }
}

fn post(server: &TestServer) -> tokio::task::JoinHandle<u16> {
    let request = server
        .client
        .post(server.url("/retrieve"))
        .json(&json!({"question": "json dumps"}));
    tokio::spawn(async move { request.send().await.unwrap().status().as_u16() })
}

fn statuses(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .map(|e| e["status"].as_str().unwrap())
        .collect()
}

fn orders(events: &[Value]) -> Vec<u64> {
    events
        .iter()
        .map(|e| e["order"].as_u64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_arrive_in_order_and_resume_after_the_last_event_id() {
    let server = delay_server(3000, 1500, &["--events-interval-ms", "20"]).await;
    let mut stream = Stream::open(&server, None).await;
    let first = stream.next().await;
    assert_eq!(
        first.event, "snapshot",
        "a new stream starts with the state"
    );
    assert_eq!((first.id, &first.data["active"]), (0, &json!(0)));
    assert_eq!(first.data["plugin"]["generation"], 1);

    // A runs, B waits, C is refused (429), B's deadline passes (503), A ends.
    let a = post(&server);
    server.state_when("A running", |s| s["active"] == 1).await;
    let b = post(&server);
    server.state_when("B waiting", |s| s["waiting"] == 1).await;
    assert_eq!(post(&server).await.unwrap(), 429);
    assert_eq!(b.await.unwrap(), 503);
    assert_eq!(a.await.unwrap(), 200);
    let (events, missed) = stream.events(5).await;
    assert_eq!(missed, 0);
    assert_eq!(orders(&events), [1, 2, 3, 4, 5]);
    assert_eq!(
        statuses(&events),
        [
            "admitted",
            "queued",
            "queue_full",
            "wait_timeout",
            "released"
        ]
    );
    assert!(
        events[4]["took_us"].as_u64().unwrap() >= 3_000_000,
        "{events:?}"
    );
    // Snapshots follow, with the gate's totals.
    let snapshot = loop {
        let m = stream.next().await;
        if m.event == "snapshot" && m.data["totals"]["released"] == 1 {
            break m;
        }
    };
    assert_eq!(snapshot.id, 5);
    let totals = &snapshot.data["totals"];
    assert_eq!(
        (
            &totals["admitted"],
            &totals["queue_full"],
            &totals["wait_timeout"]
        ),
        (&json!(1), &json!(1), &json!(1))
    );

    // Reconnect after event 3 while two more requests ran: exactly 4.., nothing missed.
    drop(stream);
    assert_eq!(post(&server).await.unwrap(), 200);
    let mut resumed = Stream::open(&server, Some(3)).await;
    let (events, missed) = resumed.events(4).await;
    assert_eq!((orders(&events), missed), (vec![4, 5, 6, 7], 0));
    assert_eq!(
        statuses(&events),
        ["wait_timeout", "released", "admitted", "released"]
    );

    // A fresh stream gets the last events at once; a bad id is refused.
    let mut fresh = Stream::open(&server, None).await;
    assert_eq!(orders(&fresh.events(7).await.0), [1, 2, 3, 4, 5, 6, 7]);
    let bad = server
        .client
        .get(server.url("/events"))
        .header("last-event-id", "seven")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    let body: Value = bad.json().await.unwrap();
    assert_eq!(body["error"], "invalid_last_event_id");
    // Open streams do not hold the shutdown.
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_subscriber_cap_refuses_with_503_and_frees_on_disconnect() {
    let server = TestServer::start(&["--max-subscribers", "1"]).await;
    let mut one = Stream::open(&server, None).await;
    assert_eq!(one.next().await.event, "snapshot");
    let refused = server.get("/events").await;
    assert_eq!(refused.status(), 503);
    assert!(refused.headers().contains_key("retry-after"));
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["status"], "too_many_subscribers");
    let state = server.get_json("/state").await;
    assert_eq!(state["live"]["subscribers"], 1);
    assert_eq!(state["live"]["max_subscribers"], 1);
    drop(one);
    server
        .state_when("the stream's seat freed", |s| s["live"]["subscribers"] == 0)
        .await;
    let mut again = Stream::open(&server, None).await;
    assert_eq!(again.next().await.event, "snapshot");
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_that_stops_reading_is_dropped_and_nothing_else_slows() {
    let server = TestServer::start(&["--events-interval-ms", "10"]).await;
    // A reader that never reads, with the smallest receive buffer the kernel allows.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(1024).unwrap();
    let mut stuck = socket.connect(server.addr).await.unwrap();
    stuck
        .write_all(b"GET /events HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let mut reader = Stream::open(&server, None).await;
    server
        .state_when("both streams open", |s| s["live"]["subscribers"] == 2)
        .await;
    // A reader that reads, all along: it must keep every event, in order.
    let seen = std::sync::Arc::new(std::sync::Mutex::new((Vec::<u64>::new(), 0u64)));
    let reading = {
        let seen = std::sync::Arc::clone(&seen);
        tokio::spawn(async move {
            loop {
                let message = reader.next().await;
                if message.event == "events" {
                    let mut seen = seen.lock().unwrap();
                    seen.1 += message.data["missed"].as_u64().unwrap();
                    seen.0
                        .extend(orders(message.data["events"].as_array().unwrap()));
                }
            }
        })
    };
    // Requests flow while the stuck reader's buffers fill and it stalls. Each waits for the
    // reading stream to have the events before it, so that a busy test machine slowing the
    // reader can never push the gate past what it retains (a reader that far behind is told what
    // it missed, by design): the stuck reader is what this test watches.
    let mut served = 0;
    let dropped = eventually("the stuck reader dropped", || {
        let server = &server;
        let seen = std::sync::Arc::clone(&seen);
        served += 1;
        async move {
            let (status, _) = server.retrieve(json!({"question": "json dumps"})).await;
            assert_eq!(status, 200);
            let state = server.get_json("/state").await;
            if state["live"]["dropped"] == 1 {
                return Ok(state);
            }
            let newest = newest_order(&state);
            eventually("the reading stream keeps up", || {
                let seen = std::sync::Arc::clone(&seen);
                async move { caught_up(&seen, newest) }
            })
            .await;
            Err(state["live"].to_string())
        }
    })
    .await;
    assert_eq!(dropped["live"]["subscribers"], 1, "{dropped}");
    assert!(served > 0);
    let scrape = server.get("/metrics").await.text().await.unwrap();
    assert!(
        scrape.contains("turnstile_live_dropped_total 1\n"),
        "{scrape}"
    );
    assert!(
        scrape.contains("turnstile_live_subscribers 1\n"),
        "{scrape}"
    );
    // The reader that reads got every event up to then, in order, none missed.
    let last = newest_order(&dropped);
    eventually("the reading stream has every event", || {
        let seen = std::sync::Arc::clone(&seen);
        async move { caught_up(&seen, last) }
    })
    .await;
    reading.abort();
    let (orders, missed) = seen.lock().unwrap().clone();
    assert_eq!(missed, 0);
    assert!(
        orders
            .iter()
            .zip(1..)
            .all(|(order, expected)| *order == expected),
        "consecutive from 1: {orders:?}"
    );
    drop(stuck);
    server.stop().await;
}

/// The order of the newest event a `/state` body lists.
fn newest_order(state: &Value) -> u64 {
    state["events"].as_array().unwrap().last().unwrap()["order"]
        .as_u64()
        .unwrap()
}

/// Whether the orders a reader collected reach `order`.
fn caught_up(seen: &std::sync::Mutex<(Vec<u64>, u64)>, order: u64) -> Result<(), String> {
    let seen = seen.lock().unwrap();
    if seen.0.last().is_some_and(|o| *o >= order) {
        Ok(())
    } else {
        Err(format!("reached {:?}, waiting for {order}", seen.0.last()))
    }
}

/// The page in headless Chromium (Playwright for Python, installed by `tests/setup.sh`): after a
/// run with completions, a 429 and a 503, the counts it shows equal `/state`'s; it saves a
/// screenshot to `target/dashboard.png`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_what_state_says_in_a_real_browser() {
    let server = TestServer::start(&[
        "--plugin",
        components::DELAY,
        "--plugin-config",
        // B must time out while A runs, and C must find B still waiting. B would be admitted
        // instead only if it queued more than 1.5 s after A started, and C is refused (429)
        // only if it comes within 2.5 s of B queueing: margins a loaded two-core machine keeps.
        "delay_ms=4000",
        "--max-active",
        "1",
        "--max-waiting",
        "1",
        "--wait-ms",
        "2500",
        "--events-interval-ms",
        "50",
    ])
    .await;
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/dashboard/check.py");
    let python = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../target/test-venv/bin/python"
    );
    let screenshot = concat!(env!("CARGO_MANIFEST_DIR"), "/../target/dashboard.png");
    let mut browser = Browser(Some(
        std::process::Command::new(python)
            .arg(script)
            .arg(server.url("/dashboard"))
            .arg(screenshot)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("the test venv: run tests/setup.sh"),
    ));
    // The page is open and its stream connected when it holds a seat.
    server
        .state_when("the page's stream open", |s| s["live"]["subscribers"] == 1)
        .await;
    let a = post(&server);
    server.state_when("A running", |s| s["active"] == 1).await;
    let b = post(&server);
    server.state_when("B waiting", |s| s["waiting"] == 1).await;
    assert_eq!(post(&server).await.unwrap(), 429);
    assert_eq!(b.await.unwrap(), 503);
    assert_eq!(a.await.unwrap(), 200);
    assert_eq!(post(&server).await.unwrap(), 200);
    let state = server.get_json("/state").await;
    let expected = json!({
        "admitted": state["totals"]["admitted"],
        "released": state["totals"]["released"],
        "queue_full": state["totals"]["queue_full"],
        "wait_timeout": state["totals"]["wait_timeout"],
        "active": state["active"],
        "waiting": state["waiting"],
        "generation": state["plugin"]["generation"],
        "last_event": state["events"].as_array().unwrap().last().unwrap()["order"],
    });
    assert_eq!(expected["admitted"], 2);
    assert_eq!(
        (&expected["queue_full"], &expected["wait_timeout"]),
        (&json!(1), &json!(1))
    );
    let mut child = browser.0.take().unwrap();
    let finished = tokio::task::spawn_blocking(move || {
        use std::io::Write;
        // If the check already ended (it failed), its output below says why.
        let _ = writeln!(child.stdin.take().unwrap(), "{expected}");
        child.wait_with_output()
    });
    let out = tokio::time::timeout(Duration::from_secs(120), finished)
        .await
        .expect("the browser check finished within 120 s")
        .unwrap()
        .unwrap();
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{report}");
    assert!(report.contains("page matches /state"), "{report}");
    assert!(std::fs::metadata(screenshot).unwrap().len() > 10_000);
    server.stop().await;
}

/// The browser check's process, killed if the test fails first.
struct Browser(Option<std::process::Child>);

impl Drop for Browser {
    fn drop(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A stream lives as long as its reader reads: the idle timeout is for a connection between
/// requests, not for a response still being sent. Past three idle timeouts (by the server's own
/// clock, in its snapshots) the stream is open and has carried the events of a request made
/// after the first one passed; the subscriber cap holds all the while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_outlives_the_idle_timeout_while_its_reader_reads() {
    const IDLE_MS: u64 = 300;
    let idle = IDLE_MS.to_string();
    let server = TestServer::start(&[
        "--idle-timeout-ms",
        &idle,
        "--events-interval-ms",
        "50",
        "--max-subscribers",
        "1",
    ])
    .await;
    let mut stream = Stream::open(&server, None).await;
    let opened = stream.next().await;
    assert_eq!(opened.event, "snapshot");
    let since = |message: &Message| {
        message.data["at_ms"].as_u64().unwrap() - opened.data["at_ms"].as_u64().unwrap()
    };
    let (mut request, mut seen) = (None, Vec::new());
    loop {
        let message = stream.next().await;
        match message.event.as_str() {
            "events" => seen.extend(message.data["events"].as_array().unwrap().iter().cloned()),
            "snapshot" => {
                let elapsed = since(&message);
                if request.is_none() && elapsed > IDLE_MS {
                    request = Some(post(&server));
                    let refused = server.get("/events").await;
                    assert_eq!(refused.status(), 503, "the subscriber cap still holds");
                }
                if elapsed > 3 * IDLE_MS && statuses(&seen).contains(&"released") {
                    break;
                }
            }
            other => panic!("unexpected message {other}"),
        }
    }
    assert_eq!(request.expect("a request was made").await.unwrap(), 200);
    assert!(statuses(&seen).contains(&"admitted"), "{seen:?}");
    drop(stream);
    server.stop().await;
}
