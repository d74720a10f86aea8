//! What a client may hold of the service (issue 43, attack 6 of "What was found"): before,
//! 1,100 connections trickling a body byte every 15 s held the server at its file
//! descriptor limit so that every legitimate request timed out, and 600 half-sent 1 MB
//! bodies held 626 MiB. `serve` on loopback with small bounds: connections beyond
//! `max_connections` are closed on accept, a body not whole within `body_read_timeout` is
//! answered `408` and let go, and body bytes in flight are capped (`503` beyond).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fleetsim::scenario::TraceDir;
use fleetsim_scheduler::security::serve::{serve_with, Limits, ListenOptions};
use fleetsim_scheduler::serve::{start, ServeOptions};
use fleetsim_scheduler::service::{Clock, DEFAULT_RETAIN_DECISIONS};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Server {
    addr: std::net::SocketAddr,
    _dir: tempfile::TempDir,
}

async fn server(limits: Limits, max_body_bytes: usize) -> Server {
    let dir = tempfile::tempdir().unwrap();
    let st = start(ServeOptions {
        spec: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-cohorts.toml"),
        wal: dir.path().join("wal"),
        trace_dir: TraceDir(PathBuf::from("/nonexistent")),
        listen: ListenOptions {
            listen: Some("127.0.0.1:0".parse().unwrap()),
            max_body_bytes: Some(max_body_bytes),
            limits,
            ..ListenOptions::default()
        },
        clock: Clock::Event,
        retain_decisions: DEFAULT_RETAIN_DECISIONS,
        snapshot_every: 0,
        segment_bytes: fleetsim_scheduler::wal::DEFAULT_SEGMENT_BYTES,
        log_retention: None,
        retain_ended_jobs: fleetsim_scheduler::served::DEFAULT_RETAIN_ENDED_JOBS,
        ha: None,
    })
    .await
    .unwrap();
    let addr = st.addr;
    let limits = st.limits.clone();
    tokio::spawn(async move {
        serve_with(
            st.listener,
            st.app,
            st.tls,
            &limits,
            std::future::pending::<()>(),
        )
        .await
    });
    Server { addr, _dir: dir }
}

/// Headers of a `POST /v1/events` declaring a body of `len` bytes.
fn post_head(len: usize) -> String {
    format!(
        "POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len}\r\n\r\n"
    )
}

/// What the server sent on `s` before closing it or `wait` passing: the status code of its
/// answer (`None`: closed, or nothing within `wait`).
async fn answer(s: &mut TcpStream, wait: Duration) -> Option<u16> {
    let mut buf = vec![0u8; 4096];
    let n = tokio::time::timeout(wait, s.read(&mut buf))
        .await
        .ok()?
        .ok()?;
    let text = String::from_utf8_lossy(&buf[..n]);
    text.strip_prefix("HTTP/1.1 ")?.get(..3)?.parse().ok()
}

/// A legitimate request: a pass at t = 0 (the service is at t = 0).
async fn legit(addr: std::net::SocketAddr) -> Result<u16, String> {
    let r = reqwest::Client::new()
        .post(format!("http://{addr}/v1/events"))
        .json(&serde_json::json!({"events": [{"type": "pass", "t": 0}]}))
        .timeout(Duration::from_secs(2))
        .send()
        .await
        .map_err(|e| e.to_string())?;
    Ok(r.status().as_u16())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_trickling_a_body_hold_the_server() {
    let limits = Limits {
        max_connections: 32,
        body_read_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let s = server(limits, 1 << 20).await;
    // 100 connections, each sending its headers and one byte of a 100-byte body, then a
    // byte every 300 ms (a trickle that a per-read timeout would never cut).
    let mut conns = Vec::new();
    for _ in 0..100 {
        let mut c = TcpStream::connect(s.addr).await.unwrap();
        c.write_all(post_head(100).as_bytes()).await.unwrap();
        let _ = c.write_all(b"{").await;
        conns.push(c);
    }
    let t0 = Instant::now();
    let trickle = async {
        let mut answers = vec![None; conns.len()];
        let mut open: Vec<bool> = vec![true; conns.len()];
        while t0.elapsed() < Duration::from_secs(4) && open.iter().any(|&o| o) {
            for (i, c) in conns.iter_mut().enumerate() {
                if !open[i] {
                    continue;
                }
                if c.write_all(b" ").await.is_err() {
                    open[i] = false;
                    continue;
                }
                let mut buf = [0u8; 512];
                match tokio::time::timeout(Duration::from_millis(1), c.read(&mut buf)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => open[i] = false,
                    Ok(Ok(n)) => {
                        let text = String::from_utf8_lossy(&buf[..n]);
                        answers[i] = text.get(9..12).and_then(|c| c.parse::<u16>().ok());
                        open[i] = false;
                    }
                    Err(_) => {}
                }
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        (answers, open)
    };
    let (answers, open) = trickle.await;
    // Every connection is let go within the body timeout (plus the trickle's pace): those
    // beyond the cap at once, the 32 held ones with a 408.
    assert!(open.iter().all(|o| !o), "connections still held after 4 s");
    let timed_out = answers.iter().filter(|a| **a == Some(408)).count();
    assert!(
        (1..=32).contains(&timed_out),
        "{timed_out} connections answered 408 (at most the 32 the server held): {answers:?}"
    );
    // The service answers a legitimate request.
    assert_eq!(legit(s.addr).await, Ok(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_bodies_hold_memory() {
    let limits = Limits {
        body_read_timeout: Duration::from_secs(2),
        max_inflight_body_bytes: 4 << 20,
        ..Limits::default()
    };
    let s = server(limits, 1 << 20).await;
    // 20 bodies declaring 1,000,000 bytes each, 600,000 sent, then nothing: room for 4
    // (4 MiB in flight); the other 16 are refused before a byte of theirs is read.
    let mut conns = Vec::new();
    for _ in 0..20 {
        let mut c = TcpStream::connect(s.addr).await.unwrap();
        c.write_all(post_head(1_000_000).as_bytes()).await.unwrap();
        let _ = c.write_all(&vec![b' '; 600_000]).await;
        conns.push(c);
    }
    let mut codes = Vec::new();
    for c in &mut conns {
        codes.push(answer(c, Duration::from_millis(100)).await);
    }
    let refused = codes.iter().filter(|c| **c == Some(503)).count();
    assert_eq!(refused, 16, "{codes:?}");
    // A small legitimate request fits beside the 4 held.
    assert_eq!(legit(s.addr).await, Ok(200));
    // The 4 held get 408 when their time is up, and let their bytes go.
    let mut held = Vec::new();
    for (c, code) in conns.iter_mut().zip(&codes) {
        match code {
            Some(503) => {}
            Some(other) => held.push(Some(*other)),
            None => held.push(answer(c, Duration::from_secs(3)).await),
        }
    }
    assert_eq!(held, vec![Some(408); 4]);
}
