//! The HTTP edge against careless and hostile clients, on real sockets: slow headers, held
//! connections, oversized and slow bodies, and a drain that does not wait for a client dripping
//! its body. (Request ids and repeated keys, which no socket takes part in, are `http`'s.)

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{TestServer, eventually};

/// Reads until the peer closes (or `STATE_DEADLINE` passes, failing the test); returns what came.
async fn read_until_closed(stream: &mut TcpStream) -> Vec<u8> {
    let mut seen = Vec::new();
    tokio::time::timeout(
        crate::support::STATE_DEADLINE,
        stream.read_to_end(&mut seen),
    )
    .await
    .expect("the server never closed the connection")
    .unwrap();
    seen
}

/// A client that sends half a request head and stops is disconnected by the header timeout,
/// while `/healthz` keeps answering.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slowloris_connection_is_closed_by_the_header_timeout() {
    let server = TestServer::start(&["--header-timeout-ms", "300"]).await;
    let mut slow = TcpStream::connect(server.addr).await.unwrap();
    slow.write_all(b"POST /retrieve HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    let health = server.get_json("/healthz").await;
    assert_eq!(health["status"], "ok");
    let answer = read_until_closed(&mut slow).await;
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    server.stop().await;
}

/// How many connections wait in the accept queue of the socket listening at `addr` (Linux:
/// `/proc/net/tcp`, whose `rx_queue` of a listening socket is its accept backlog).
fn accept_queue(addr: std::net::SocketAddr) -> Result<u32, String> {
    let std::net::SocketAddr::V4(v4) = addr else {
        return Err(format!("{addr}: only IPv4 is looked up"));
    };
    let local = format!(
        "{:08X}:{:04X}",
        u32::from_le_bytes(v4.ip().octets()),
        v4.port()
    );
    let table = std::fs::read_to_string("/proc/net/tcp").map_err(|e| e.to_string())?;
    for line in table.lines().skip(1) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // sl, local_address, rem_address, st (0A: listening), tx_queue:rx_queue, …
        if fields.len() > 4 && fields[1] == local && fields[3] == "0A" {
            let rx = fields[4].split(':').nth(1).ok_or("no rx_queue")?;
            return u32::from_str_radix(rx, 16).map_err(|e| e.to_string());
        }
    }
    Err(format!("no socket listening at {local} in /proc/net/tcp"))
}

/// With every connection slot held by idle clients, a new connection waits in the backlog; it is
/// served as soon as one of them closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_past_the_cap_waits_until_one_closes() {
    let server = TestServer::start(&["--max-connections", "2"]).await;
    let first = TcpStream::connect(server.addr).await.unwrap();
    let _second = TcpStream::connect(server.addr).await.unwrap();
    let open = server.connections.clone();
    eventually("two connections open", || async {
        let n = open.load(std::sync::atomic::Ordering::SeqCst);
        if n == 2 {
            Ok(())
        } else {
            Err(format!("{n} open"))
        }
    })
    .await;
    let client = reqwest::Client::new();
    let health = tokio::spawn(client.get(server.url("/healthz")).send());
    // Both slots are held: the third connection is in the kernel's accept queue of the listening
    // socket, never accepted (a server that accepted past the cap would have emptied it, and
    // this would time out), and its request is not served.
    eventually(
        "the third connection waiting in the accept queue",
        || async {
            match accept_queue(server.addr) {
                Ok(1) => Ok(()),
                Ok(n) => Err(format!("{n} connections in the accept queue")),
                Err(e) => Err(e),
            }
        },
    )
    .await;
    assert_eq!(open.load(std::sync::atomic::Ordering::SeqCst), 2);
    assert!(!health.is_finished(), "served past the connection cap");
    drop(first);
    let response = tokio::time::timeout(crate::support::STATE_DEADLINE, health)
        .await
        .expect("never served after a slot freed")
        .unwrap()
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    server.stop().await;
}

/// A 1 MiB body gets a 413 the client can read (the server drains it, then closes).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_mebibyte_body_gets_a_readable_413() {
    let server = TestServer::start(&[]).await;
    let response = server
        .client
        .post(server.url("/retrieve"))
        .header("content-type", "application/json")
        .body(vec![b' '; 1 << 20])
        .send()
        .await
        .expect("the client got a reset instead of a 413");
    assert_eq!(response.status().as_u16(), 413);
    assert_eq!(response.headers()["connection"], "close");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"], "body_too_large");
    server.stop().await;
}

/// A body that stops arriving gets 408 `body_timeout`, and the connection is closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_body_gets_408() {
    let server = TestServer::start(&["--body-timeout-ms", "300"]).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            b"POST /retrieve HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{\"question\":",
        )
        .await
        .unwrap();
    let answer = String::from_utf8(read_until_closed(&mut stream).await).unwrap();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("body_timeout"), "{answer}");
    server.stop().await;
}

/// Shutdown does not wait for a client that drips its body: the body timeout ends it well
/// within the drain, and the server drains cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dripping_client_does_not_hold_up_shutdown() {
    let server = TestServer::start(&["--body-timeout-ms", "300"]).await;
    let mut stream = TcpStream::connect(server.addr).await.unwrap();
    stream
        .write_all(
            b"POST /retrieve HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
              Content-Length: 100\r\n\r\n{",
        )
        .await
        .unwrap();
    let open = server.connections.clone();
    eventually("the dripping connection open", || async {
        let n = open.load(std::sync::atomic::Ordering::SeqCst);
        if n == 1 {
            Ok(())
        } else {
            Err(format!("{n} open"))
        }
    })
    .await;
    // `stop` asserts the drain ended cleanly (no drain timeout).
    server.stop().await;
    drop(stream);
}
