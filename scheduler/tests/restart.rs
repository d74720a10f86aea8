//! Crash safety: the real `fleetsim-scheduler serve` binary on its
//! write-ahead log is SIGKILLed at seeded random points while a client replays an event
//! stream to it, restarted on the same log, and the client resends from its first
//! unacknowledged batch (`409` = already logged: skip it). The full decision sequence
//! (`GET /v1/decisions`) must equal an uninterrupted run's. A second test cuts the log's
//! tail after a clean SIGTERM shutdown and requires it to be reported and recovered from.
//! Others: the kill test with snapshots on, the last snapshot a SIGTERM writes, and the
//! log lock (one `serve` per log).
//!
//! The stream and the uninterrupted run: `common/mod.rs` (kueue-cohorts' first 3,000
//! recorded events in batches of 50).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use fleetsim_policies::live::Decision;
use fleetsim_scheduler::service::{Batch, BatchReply};

mod common;
use common::{all_decisions, next, spec, stream};

/// A running `serve`, its base URL and its stderr file.
struct Server {
    child: Child,
    base: String,
    stderr: PathBuf,
}

fn start(wal: &Path, stderr: PathBuf, snapshot_every: u64) -> Server {
    let every = snapshot_every.to_string();
    let (child, base) = common::serve(
        [
            OsStr::new("--wal"),
            wal.as_os_str(),
            OsStr::new("--snapshot-every"),
            OsStr::new(&every),
        ],
        &stderr,
    );
    Server {
        child,
        base,
        stderr,
    }
}

async fn send(c: &reqwest::Client, base: &str, b: &Batch) -> reqwest::Result<(u16, String)> {
    common::send(c, base, b, None).await
}

/// Checks an accepted reply against the reference at its sequence numbers.
fn check_reply(reference: &[Decision], text: &str) {
    let r: BatchReply = serde_json::from_str(text).unwrap();
    let at = r.first_seq as usize;
    assert_eq!(r.plain()[..], reference[at..at + r.decisions.len()]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_points_loses_nothing() {
    sigkill_run(21, 0).await;
}

/// The same with a snapshot every 250 events (about every fifth batch): kills land before,
/// during and after snapshot writes, and restarts load the last whole snapshot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_with_snapshots_loses_nothing() {
    sigkill_run(2121, 250).await;
}

/// Kills the server at 24 seeded points of the stream; `snapshot_every` as `serve`'s
/// `--snapshot-every` (0: none).
async fn sigkill_run(seed: u64, snapshot_every: u64) {
    let s = tokio::task::spawn_blocking(stream).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal");
    let client = reqwest::Client::new();
    // 24 kill points: a batch index (distinct, sorted) and a delay after its POST starts,
    // 0..4 ms, so some kills land before the log write, some after it but before the reply,
    // some after the reply.
    let mut seed = seed;
    let mut points: Vec<(usize, u64)> = Vec::new();
    while points.len() < 24 {
        let b = (next(&mut seed) % s.batches.len() as u64) as usize;
        if !points.iter().any(|p| p.0 == b) {
            points.push((b, next(&mut seed) % 4_000));
        }
    }
    points.sort_unstable();
    let mut server = start(&wal, dir.path().join("stderr-0"), snapshot_every);
    let (mut kills, mut skipped, mut acked_before_kill) = (0, 0, 0);
    let mut i = 0;
    let mut p = 0;
    while i < s.batches.len() {
        if p < points.len() && points[p].0 == i {
            let (b, delay) = points[p];
            p += 1;
            let (c, base, batch) = (client.clone(), server.base.clone(), s.batches[b].clone());
            let req = tokio::spawn(async move { send(&c, &base, &batch).await });
            tokio::time::sleep(Duration::from_micros(delay)).await;
            server.child.kill().unwrap(); // SIGKILL
            server.child.wait().unwrap();
            kills += 1;
            if let Ok(Ok((200, text))) = req.await {
                check_reply(&s.reference, &text);
                acked_before_kill += 1;
                i += 1;
            }
            server = start(
                &wal,
                dir.path().join(format!("stderr-{kills}")),
                snapshot_every,
            );
            continue;
        }
        let (status, text) = send(&client, &server.base, &s.batches[i]).await.unwrap();
        match status {
            200 => check_reply(&s.reference, &text),
            // Logged before the kill but not acknowledged: the client's signal to skip.
            409 => skipped += 1,
            _ => panic!("batch {i}: {status} {text}"),
        }
        i += 1;
    }
    let got = all_decisions(&client, &server.base).await;
    let log = std::fs::read_to_string(&server.stderr).unwrap();
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    println!(
        "{kills} kills: {acked_before_kill} replies arrived before the kill, {skipped} batches \
         logged but unacknowledged (409), {} decisions",
        got.len()
    );
    assert!(kills >= 20);
    assert!(log.contains("replayed "), "{log}");
    if snapshot_every > 0 {
        // The last restart (batch > 10) loaded a snapshot.
        assert!(log.contains("loaded snapshot"), "{log}");
    }
    assert_eq!(got.len(), s.reference.len());
    assert!(got == s.reference, "decision sequence differs");
}

/// Starts `serve` on `wal` (stderr in `dir/stderr-0`), sends the stream's first 10
/// batches, stops it with SIGTERM (a clean shutdown, checked) and returns its decisions.
async fn ten_batches_then_sigterm(wal: &Path, dir: &Path, snapshot_every: u64) -> Vec<Decision> {
    ten_batches_then_signal(wal, dir, snapshot_every, "-TERM").await
}

/// As [`ten_batches_then_sigterm`] with another signal (`-HUP`).
async fn ten_batches_then_signal(
    wal: &Path,
    dir: &Path,
    snapshot_every: u64,
    signal: &str,
) -> Vec<Decision> {
    let s = tokio::task::spawn_blocking(stream).await.unwrap();
    let client = reqwest::Client::new();
    let mut server = start(wal, dir.join("stderr-0"), snapshot_every);
    for b in &s.batches[..10] {
        let (status, text) = send(&client, &server.base, b).await.unwrap();
        assert_eq!(status, 200, "{text}");
    }
    let got = all_decisions(&client, &server.base).await;
    let pid = server.child.id().to_string();
    assert!(Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap()
        .success());
    assert!(server.child.wait().unwrap().success());
    assert!(std::fs::read_to_string(&server.stderr)
        .unwrap()
        .contains("shut down"));
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncated_tail_is_reported_and_recovered() {
    let s = tokio::task::spawn_blocking(stream).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal");
    let client = reqwest::Client::new();
    ten_batches_then_sigterm(&wal, dir.path(), 0).await;
    // Cut 5 bytes off the last (10th) record.
    let len = std::fs::metadata(&wal).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(len - 5)
        .unwrap();
    let mut server = start(&wal, dir.path().join("stderr-1"), 0);
    let health: serde_json::Value = client
        .get(format!("{}/healthz", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    // Nine records kept: last batch 8, the tail defect at the 10th record's offset.
    assert_eq!(health["last_batch"]["local"], 8, "{health}");
    let d = &health["wal"]["tail_defect"];
    assert_eq!(d["records_kept"], 9, "{health}");
    assert_eq!(d["file_bytes"].as_u64(), Some(len - 5), "{health}");
    assert!(d["reason"]
        .as_str()
        .unwrap()
        .starts_with("payload cut short"));
    assert_eq!(health["wal"]["bytes"], d["offset"], "{health}");
    let log = std::fs::read_to_string(&server.stderr).unwrap();
    assert!(
        log.contains("WARNING: write-ahead log") && log.contains("kept the 9 records"),
        "{log}"
    );
    // Batch 8 is logged (409); batch 9 was lost with the tail and is accepted again.
    let (status, _) = send(&client, &server.base, &s.batches[8]).await.unwrap();
    assert_eq!(status, 409);
    for b in &s.batches[9..] {
        let (status, text) = send(&client, &server.base, b).await.unwrap();
        assert_eq!(status, 200, "{text}");
        check_reply(&s.reference, &text);
    }
    let got = all_decisions(&client, &server.base).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert!(got == s.reference, "decision sequence differs");
}

/// One `serve` per log: a second one on the same log is refused (the first holds an
/// exclusive lock on it) and says why; so is a log whose directory does not exist.
#[test]
fn a_second_serve_on_the_same_log_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal");
    let mut first = start(&wal, dir.path().join("stderr-0"), 0);
    let serve = |wal: &Path| {
        Command::new(env!("CARGO_BIN_EXE_fleetsim-scheduler"))
            .args(["serve", "--listen", "127.0.0.1:0", "--spec"])
            .arg(spec())
            .arg("--wal")
            .arg(wal)
            .output()
            .unwrap()
    };
    let second = serve(&wal);
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "{err}");
    assert!(err.contains("is locked by another process"), "{err}");
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    // Once the first is gone, the log is free again.
    let mut again = start(&wal, dir.path().join("stderr-1"), 0);
    again.child.kill().unwrap();
    again.child.wait().unwrap();
    let missing = serve(&dir.path().join("no-such-dir").join("wal"));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(!missing.status.success());
    assert!(err.contains("no-such-dir does not exist"), "{err}");
}

/// A clean shutdown (SIGTERM) writes a last snapshot when snapshots are on, so the next
/// start loads it and replays no log record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_writes_a_last_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal");
    let client = reqwest::Client::new();
    // An interval the 10 batches (500 events) do not reach: no snapshot until the shutdown.
    let before = ten_batches_then_sigterm(&wal, dir.path(), 1_000_000).await;
    assert!(fleetsim_scheduler::snapshot::path_for(&wal).exists());
    let mut server = start(&wal, dir.path().join("stderr-1"), 1_000_000);
    let log = std::fs::read_to_string(&server.stderr).unwrap();
    assert!(log.contains("loaded snapshot"), "{log}");
    assert!(log.contains("replayed 0 of 10 log records"), "{log}");
    let after = all_decisions(&client, &server.base).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert_eq!(after, before);
}

/// SIGHUP drains as SIGTERM does (issue 43, attack 8: it killed the process without a
/// drain or a snapshot): exit 0 after a last snapshot, which the next start loads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_kills_without_drain_or_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let wal = dir.path().join("wal");
    let client = reqwest::Client::new();
    let before = ten_batches_then_signal(&wal, dir.path(), 1_000_000, "-HUP").await;
    assert!(fleetsim_scheduler::snapshot::path_for(&wal).exists());
    let mut server = start(&wal, dir.path().join("stderr-1"), 1_000_000);
    let log = std::fs::read_to_string(&server.stderr).unwrap();
    assert!(log.contains("replayed 0 of 10 log records"), "{log}");
    let after = all_decisions(&client, &server.base).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    assert_eq!(after, before);
}
