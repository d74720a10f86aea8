//! High availability on etcd: a real etcd on a free loopback port (temporary data dir) and
//! two `fleetsim-scheduler serve --ha` replicas, each on its own local log. A client sends an
//! event stream in numbered batches to whichever replica accepts (`503` or a refused
//! connection: the other one; `409`: already logged, skip it). The leader is SIGKILLed at
//! [`KILLS`] moments — each while a batch is in flight, after a seeded delay of 0–30 ms, so
//! the kill lands before, during or after the append — and restarted as a standby once the
//! other has taken over. Required: every takeover (kill → the first batch the other replica
//! accepts) within 5 s; every acknowledged decision at its sequence number exactly once (no
//! decision issued by two leaders) and equal to the uninterrupted run's; the final decision
//! sequence, on the leader and on the standby, equal to an uninterrupted run's (no
//! acknowledged batch lost). Last, the leader is paused (SIGSTOP) past its lease, the
//! standby takes over, and the resumed replica must refuse a batch with `503` (it finds
//! its lease unrenewed and steps down, or its append is fenced off) and issue no decision.
//! A second test deposes a leader behind its back with a long lease, so that only the fence
//! can refuse its append.
//!
//! The stream and the uninterrupted run are `restart.rs`'s (`common/mod.rs`): kueue-cohorts'
//! first 3,000 recorded events in batches of 50, applied in process to the scenario's twin.
//!
//! Skipped, with the reason printed, when `etcd` is not on PATH, unless
//! `FLEETSIM_REQUIRE_ETCD=1` (CI), which makes that a failure.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fleetsim::scenario;
use fleetsim_policies::live::{Decision, Event};
use fleetsim_scheduler::service::{Batch, BatchReply, Service};

mod common;
use common::{all_decisions, next, spec, Stream};

/// Leader kills (SIGKILL) over the stream.
const KILLS: usize = 20;
/// Lease time to live, seconds.
const TTL_S: u64 = 2;
/// The longest takeover allowed.
const TAKEOVER: Duration = Duration::from_secs(5);

/// A child process, SIGKILLed and reaped when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// etcd on free loopback ports with its data in `dir`; its client URL.
async fn start_etcd(dir: &Path) -> (Proc, String) {
    let (client, peer) = (free_port(), free_port());
    let curl = format!("http://127.0.0.1:{client}");
    let purl = format!("http://127.0.0.1:{peer}");
    let log = std::fs::File::create(dir.join("etcd.log")).unwrap();
    let child = Command::new("etcd")
        .args(["--name", "ha-test", "--data-dir"])
        .arg(dir.join("etcd-data"))
        .args([
            "--listen-client-urls",
            &curl,
            "--advertise-client-urls",
            &curl,
        ])
        .args([
            "--listen-peer-urls",
            &purl,
            "--initial-advertise-peer-urls",
            &purl,
        ])
        .arg("--initial-cluster")
        .arg(format!("ha-test={purl}"))
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .expect("spawn etcd");
    let p = Proc(child);
    let c = reqwest::Client::new();
    let t0 = Instant::now();
    loop {
        if let Ok(r) = c.get(format!("{curl}/health")).send().await {
            if r.status().is_success() {
                break;
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "etcd did not become healthy: {}",
            std::fs::read_to_string(dir.join("etcd.log")).unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (p, curl)
}

/// A replica: its process, base URL, log and stderr file.
struct Replica {
    proc: Option<Proc>,
    base: String,
    wal: PathBuf,
    stderr: PathBuf,
}

fn start_replica(ha: &str, wal: &Path, stderr: &Path) -> (Proc, String) {
    start_replica_ttl(ha, wal, stderr, TTL_S)
}

fn start_replica_ttl(ha: &str, wal: &Path, stderr: &Path, ttl_s: u64) -> (Proc, String) {
    let ttl = ttl_s.to_string();
    let (child, base) = common::serve(
        [
            OsStr::new("--snapshot-every"),
            OsStr::new("400"),
            OsStr::new("--wal"),
            wal.as_os_str(),
            OsStr::new("--ha"),
            OsStr::new(ha),
            OsStr::new("--ha-ttl-s"),
            OsStr::new(&ttl),
        ],
        stderr,
    );
    (Proc(child), base)
}

async fn send(c: &reqwest::Client, base: &str, b: &Batch) -> Option<(u16, String)> {
    common::send(c, base, b, Some(Duration::from_secs(10)))
        .await
        .ok()
}

/// What the client saw.
#[derive(Default)]
struct Acks {
    /// Acknowledged decisions by sequence number.
    by_seq: BTreeMap<u64, Decision>,
    /// Batches acknowledged (200) and batches answered 409.
    accepted: usize,
    duplicates: usize,
}

impl Acks {
    /// Records an accepted batch's decisions: each sequence number once, equal to the
    /// uninterrupted run's.
    fn record(&mut self, text: &str, reference: &[Decision]) {
        let reply: BatchReply = serde_json::from_str(text).expect("a batch reply");
        for (k, d) in reply.plain().into_iter().enumerate() {
            let seq = reply.first_seq + k as u64;
            assert_eq!(
                Some(&d),
                reference.get(seq as usize),
                "decision {seq} differs from the uninterrupted run's"
            );
            assert!(
                self.by_seq.insert(seq, d).is_none(),
                "decision {seq} acknowledged twice (issued by two leaders?)"
            );
        }
        self.accepted += 1;
    }
}

/// Sends `b` to the replicas (but `skip`) until one accepts it (or answers 409), starting
/// with `*leader`; returns when and the status (200 or 409), and sets `*leader` to the one
/// that answered. A standby answers 409 for a batch it has followed from the log.
#[allow(clippy::too_many_arguments)]
async fn deliver(
    c: &reqwest::Client,
    replicas: &[Replica],
    skip: Option<usize>,
    leader: &mut usize,
    b: &Batch,
    acks: &mut Acks,
    reference: &[Decision],
    deadline: Duration,
) -> (Instant, u16) {
    let t0 = Instant::now();
    let mut at = *leader;
    loop {
        if replicas[at].proc.is_some() && skip != Some(at) {
            match send(c, &replicas[at].base, b).await {
                Some((200, text)) => {
                    acks.record(&text, reference);
                    *leader = at;
                    return (Instant::now(), 200);
                }
                Some((409, _)) => {
                    acks.duplicates += 1;
                    *leader = at;
                    return (Instant::now(), 409);
                }
                Some((503, _)) | None => {}
                Some((s, text)) => panic!("batch {:?}: {s} {text}", b.batch),
            }
        }
        assert!(
            t0.elapsed() < deadline,
            "batch {:?} accepted by no replica within {deadline:?}",
            b.batch
        );
        at = 1 - at;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Whether the test can run: `etcd` on PATH (else skipped with the reason printed, or a
/// failure under `FLEETSIM_REQUIRE_ETCD=1`).
fn etcd_present() -> bool {
    if Command::new("etcd").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var("FLEETSIM_REQUIRE_ETCD").as_deref() != Ok("1"),
        "FLEETSIM_REQUIRE_ETCD=1 but `etcd` is not on PATH"
    );
    eprintln!("skipped: `etcd` is not on PATH (Debian: apt-get install etcd-server)");
    false
}

/// The fence: a leader whose leadership ended in etcd (its lease revoked and another
/// leader key created, as after an expiry it slept through) appends nothing and answers
/// `503` naming the new leader. The lease is long (30 s), so the replica's own keep-alive
/// cannot notice first: the append's comparison is what refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_leader_appends_nothing_and_names_the_new_leader() {
    if !etcd_present() {
        return;
    }
    let Stream { batches, .. } = common::stream();
    let dir = tempfile::tempdir().unwrap();
    let (_etcd, curl) = start_etcd(dir.path()).await;
    let ha = format!("{}/fence", curl.replace("http://", "etcd://"));
    let (wal, stderr) = (dir.path().join("wal"), dir.path().join("serve.err"));
    let (_p, base) = start_replica_ttl(&ha, &wal, &stderr, 30);
    let c = reqwest::Client::new();
    // The first election: within a lease of the start.
    for b in &batches[..3] {
        let t0 = Instant::now();
        loop {
            match send(&c, &base, b).await {
                Some((200, _)) => break,
                Some((503, _)) if t0.elapsed() < Duration::from_secs(30) => {}
                other => panic!("batch {:?}: {other:?}", b.batch),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let before = all_decisions(&c, &base).await;
    let mut etcd = etcd_client::Client::connect([curl.as_str()], None)
        .await
        .unwrap();
    let lk = "/fence/leader";
    let lease = etcd.get(lk, None).await.unwrap().kvs()[0].lease();
    etcd.lease_revoke(lease).await.unwrap();
    etcd.put(lk, "http://new-leader.invalid", None)
        .await
        .unwrap();
    let (status, text) = send(&c, &base, &batches[3]).await.unwrap();
    assert_eq!(status, 503, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["leader"], "http://new-leader.invalid", "{v}");
    assert!(v["error"].as_str().unwrap().contains("deposed"), "{v}");
    // Nothing appended in etcd, nothing decided here.
    let opts = etcd_client::GetOptions::new()
        .with_prefix()
        .with_count_only();
    let logged = etcd.get("/fence/log/", Some(opts)).await.unwrap().count();
    assert_eq!(logged, 3);
    assert_eq!(all_decisions(&c, &base).await, before);
    // It stepped down: a standby now, naming the leader.
    let h: serde_json::Value = c
        .get(format!("{base}/healthz"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(h["ha"]["role"], "standby", "{h}");
    // A replica whose local log is not a prefix of etcd's (here: another service's log of
    // one batch) is refused at start, naming why.
    let other = dir.path().join("other-wal");
    {
        let loaded = scenario::load(&spec()).unwrap();
        let twin = fleetsim::run::live_twin(&loaded, &common::opts()).unwrap();
        let options = fleetsim_scheduler::service::Options::default();
        let (svc, _) = Service::with_wal(twin, &other, options).unwrap();
        let pass = Batch {
            batch: Some(0),
            events: vec![Event::Pass { t: 7 }],
        };
        svc.lock().unwrap().accept(pass).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_fleetsim-scheduler"))
        .args(["serve", "--listen", "127.0.0.1:0", "--spec"])
        .arg(spec())
        .arg("--wal")
        .arg(&other)
        .args(["--ha", &ha])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("not a prefix of the replicated log"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_standby_takes_over_from_a_killed_leader_and_nothing_acknowledged_is_lost() {
    if !etcd_present() {
        return;
    }
    let Stream { batches, reference } = common::stream();
    let dir = tempfile::tempdir().unwrap();
    let (_etcd, curl) = start_etcd(dir.path()).await;
    let ha = format!("{}/ha-test", curl.replace("http://", "etcd://"));
    let mut replicas: Vec<Replica> = (0..2)
        .map(|i| {
            let wal = dir.path().join(format!("wal-{i}"));
            let stderr = dir.path().join(format!("serve-{i}.err"));
            let (p, base) = start_replica(&ha, &wal, &stderr);
            Replica {
                proc: Some(p),
                base,
                wal,
                stderr,
            }
        })
        .collect();
    let c = reqwest::Client::new();
    let mut acks = Acks::default();
    let mut leader = 0;
    // The first election: within a lease of the start.
    let long = Duration::from_secs(30);
    deliver(
        &c,
        &replicas,
        None,
        &mut leader,
        &batches[0],
        &mut acks,
        reference,
        long,
    )
    .await;
    // Kill moments: batches 1.. spread evenly, the last batch kept for the pause.
    let sent = batches.len() - 1;
    let kill_at: Vec<usize> = (1..=KILLS)
        .map(|k| k * (sent - 1) / (KILLS + 1) + 1)
        .collect();
    let mut rng = 0x4841_u64;
    let mut takeovers: Vec<Duration> = Vec::new();
    let mut i = 1;
    while i < sent {
        let b = &batches[i];
        if !kill_at.contains(&i) {
            deliver(
                &c,
                &replicas,
                None,
                &mut leader,
                b,
                &mut acks,
                reference,
                long,
            )
            .await;
            i += 1;
            continue;
        }
        // The batch in flight while the leader is killed after 0–30 ms.
        let delay = Duration::from_millis(next(&mut rng) % 31);
        let (cc, base, bb) = (c.clone(), replicas[leader].base.clone(), b.clone());
        let inflight = tokio::spawn(async move { send(&cc, &base, &bb).await });
        tokio::time::sleep(delay).await;
        let killed = leader;
        drop(replicas[killed].proc.take());
        let t_kill = Instant::now();
        match inflight.await.unwrap() {
            Some((200, text)) => acks.record(&text, reference),
            Some((503, _)) | None => {}
            Some((s, text)) => panic!("batch {i} in flight: {s} {text}"),
        }
        // Resent to the standby: 409 when the killed leader had logged it (the standby
        // has followed it), then the next batch. The takeover ends at the first batch the
        // standby accepts as the new leader.
        leader = 1 - killed;
        let took = loop {
            let b = &batches[i];
            let (at, status) = deliver(
                &c,
                &replicas,
                None,
                &mut leader,
                b,
                &mut acks,
                reference,
                long,
            )
            .await;
            assert_eq!(leader, 1 - killed, "the killed replica cannot answer");
            i += 1;
            if status == 200 {
                break at - t_kill;
            }
            assert!(i < sent, "no batch left to accept after the kill");
        };
        let stderr = || {
            let r = |k: usize| std::fs::read_to_string(&replicas[k].stderr).unwrap_or_default();
            format!("replica 0:\n{}\nreplica 1:\n{}", r(0), r(1))
        };
        assert!(
            took <= TAKEOVER,
            "takeover after the kill at batch {i} ({delay:?} into it) took {took:?}; {}",
            stderr()
        );
        takeovers.push(took);
        eprintln!(
            "kill {}: batch {i}, {delay:?} into it: takeover {took:?}",
            takeovers.len()
        );
        // The killed replica comes back as a standby on its own log.
        let r = &mut replicas[killed];
        let (p, base) = start_replica(&ha, &r.wal, &r.stderr);
        r.proc = Some(p);
        r.base = base;
    }
    assert_eq!(takeovers.len(), KILLS);
    // A paused leader is deposed: its lease expires, the standby takes over, and the
    // resumed replica refuses writes.
    let paused = leader;
    let pid = replicas[paused].proc.as_ref().unwrap().0.id().to_string();
    let before = all_decisions(&c, &replicas[paused].base).await.len();
    assert!(Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    let t_pause = Instant::now();
    let last = &batches[sent];
    leader = 1 - paused;
    // While paused, only the standby can take the batch.
    let (at, status) = deliver(
        &c,
        &replicas,
        Some(paused),
        &mut leader,
        last,
        &mut acks,
        reference,
        long,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(leader, 1 - paused);
    let pause_takeover = at - t_pause;
    assert!(
        pause_takeover <= TAKEOVER,
        "takeover from a paused leader took {pause_takeover:?}"
    );
    assert!(Command::new("kill")
        .args(["-CONT", &pid])
        .status()
        .unwrap()
        .success());
    // The resumed replica refuses: a batch numbered past every sent one, from the admin.
    let probe = Batch {
        batch: Some(batches.len() as u64 + 10),
        events: Vec::new(),
    };
    let (status, text) = send(&c, &replicas[paused].base, &probe).await.unwrap();
    assert_eq!(status, 503, "the deposed replica answered {status} {text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    eprintln!("deposed replica: {v}");
    // It issued nothing after the pause; whatever it has now it followed from the log.
    let after = all_decisions(&c, &replicas[paused].base).await;
    assert!(after.len() >= before);
    assert_eq!(after[..], reference[..after.len()]);
    // Nothing acknowledged lost; the leader's and the standby's sequences both equal the
    // uninterrupted run's.
    let got = all_decisions(&c, &replicas[leader].base).await;
    assert_eq!(got.len(), reference.len());
    assert!(
        got == *reference,
        "the decision sequence differs from the uninterrupted run's"
    );
    let t0 = Instant::now();
    loop {
        let follower = all_decisions(&c, &replicas[paused].base).await;
        if follower.len() == reference.len() {
            assert!(follower == *reference, "the standby's decisions differ");
            break;
        }
        assert!(t0.elapsed() < long, "the standby did not catch up");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let acked: usize = acks.by_seq.len();
    takeovers.sort();
    eprintln!(
        "ha: {} batches ({} acknowledged, {} answered 409 after a kill), {acked} decisions acknowledged of {}; {KILLS} kills: takeover min {:?}, median {:?}, max {:?}; paused leader: {pause_takeover:?}",
        batches.len(),
        acks.accepted,
        acks.duplicates,
        reference.len(),
        takeovers[0],
        takeovers[takeovers.len() / 2],
        takeovers[takeovers.len() - 1],
    );
}
