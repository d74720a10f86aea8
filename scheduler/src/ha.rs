//! High availability on etcd (`serve --ha etcd://host:port[/prefix]`): replicas of the
//! service elect a leader through an etcd lease; the leader appends every batch to a log
//! held in etcd, in a transaction fenced by its leadership, before its local log; standbys
//! follow that log into their own state and take over when the leader's lease expires.
//!
//! Keys under the prefix (default [`DEFAULT_PREFIX`]):
//!
//! | key | value |
//! |---|---|
//! | `<prefix>/leader` | the leader's advertised URL; created under its lease |
//! | `<prefix>/log/<i>` | record `i` (20 digits) of the log: one batch as the local log holds it |
//!
//! **Election.** A replica grants a lease of `ttl` seconds and creates the leader key under
//! it in a transaction that succeeds only if the key does not exist. The key's create
//! revision names this leadership. The leader keeps the lease alive (every `ttl`/3); when it
//! dies or stops, the lease expires, etcd deletes the key, and a standby watching it
//! campaigns.
//!
//! **Fencing.** The leader appends record `i` in a transaction that succeeds only if the
//! leader key still has the create revision of its own election and `<prefix>/log/<i>`
//! does not exist. A deposed leader (its lease expired while it was stopped or cut off)
//! fails that comparison: it steps down and answers the batch `503` naming the new leader,
//! having applied nothing. An append etcd does not answer within 10 s also steps
//! the replica down (the record may or may not be in etcd: the replica catches up from the
//! log before it campaigns again, and a client's resend of a logged batch answers `409`).
//! So does a leader that has had no lease renewal confirmed for `ttl` seconds.
//! A batch is answered only after etcd holds it, so no acknowledged batch is lost with a
//! replica.
//!
//! **Following.** A standby reads the log from its local log's length on, applies each
//! record as a start replays its local log ([`crate::service::Service::follow`]: appended
//! to the local log, a record that fails set aside), then watches the prefix. A replica that
//! wins an election first reads the log to its end. Each replica's local log holds the same
//! records at the same indices as etcd's, so its snapshots and restarts work as without
//! `--ha`; a start checks that the local log is a prefix of etcd's (the last record's CRC).
//!
//! Reads (`GET`) on a standby answer from its own state, which trails the leader by the
//! records in flight; writes (`POST /v1/events`) answer `503` with the leader's URL.
//!
//! The log in etcd is not compacted: it grows with every batch (etcd's default space quota
//! is 2 GiB; one record must stay under its request limit, 1.5 MiB by default).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use etcd_client::{
    Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, PutOptions, Txn, TxnOp,
    TxnOpResponse, WatchOptions,
};

use crate::service::{lock, AppState, NotLeader, Replicate};

/// Key prefix when the `--ha` URL names none.
pub const DEFAULT_PREFIX: &str = "/fleetsim";
/// Default lease time to live, seconds (`serve --ha-ttl-s`).
pub const DEFAULT_TTL_S: i64 = 2;
/// How long an etcd request may take (an append waits this long, holding the service,
/// before the replica steps down): etcd commits a write with an fsync, which a loaded
/// disk can hold for seconds, and a deposed leader's late append is refused by the fence
/// anyway.
const APPEND_TIMEOUT: Duration = Duration::from_secs(10);
/// Records read from etcd per request while catching up.
const CATCH_UP_RECORDS: i64 = 64;

/// A parsed `--ha` URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HaUrl {
    /// The etcd endpoint (`http://host:port`).
    pub endpoint: String,
    /// Key prefix, without a trailing `/`.
    pub prefix: String,
}

/// Parses `etcd://host:port[/prefix]`.
///
/// # Errors
/// A message naming the flag when the scheme is not `etcd://` or the host or port is missing.
pub fn parse_url(s: &str) -> Result<HaUrl, String> {
    let bad = || format!("--ha {s}: give etcd://host:port[/prefix]");
    let rest = s.strip_prefix("etcd://").ok_or_else(bad)?;
    let (hostport, prefix) = match rest.find('/') {
        Some(i) => (&rest[..i], rest[i..].trim_end_matches('/')),
        None => (rest, ""),
    };
    let port_ok = hostport
        .rsplit_once(':')
        .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
    if !port_ok {
        return Err(bad());
    }
    Ok(HaUrl {
        endpoint: format!("http://{hostport}"),
        prefix: if prefix.is_empty() {
            DEFAULT_PREFIX.to_string()
        } else {
            prefix.to_string()
        },
    })
}

fn leader_key(prefix: &str) -> String {
    format!("{prefix}/leader")
}

fn log_key(prefix: &str, i: u64) -> String {
    format!("{prefix}/log/{i:020}")
}

/// The end of the log's key range (`'0'` follows `'/'`).
fn log_end(prefix: &str) -> String {
    format!("{prefix}/log0")
}

fn index_of(prefix: &str, key: &[u8]) -> Option<u64> {
    std::str::from_utf8(key)
        .ok()?
        .strip_prefix(prefix)?
        .strip_prefix("/log/")?
        .parse()
        .ok()
}

/// What this replica is.
#[derive(Clone, Debug)]
enum Role {
    /// Reading the log before its first election.
    Starting,
    /// A standby; the leader's URL when known.
    Standby { leader: Option<String> },
    /// The leader: the create revision of its leader key.
    Leader { rev: i64 },
}

struct Shared {
    url: HaUrl,
    advertise: String,
    ttl: i64,
    role: Mutex<Role>,
    step_down: tokio::sync::Notify,
    /// Elections this replica won.
    elections: std::sync::atomic::AtomicU64,
}

impl Shared {
    fn role(&self) -> Role {
        self.role.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn set_role(&self, r: Role) {
        *self.role.lock().unwrap_or_else(|p| p.into_inner()) = r;
    }
}

/// A replica's link to etcd: the [`Replicate`] the service appends through, and the task
/// (on a runtime of its own, so that an append waiting under the service's lock never
/// starves it) that campaigns, keeps the lease and follows the log.
pub struct Replica {
    shared: Arc<Shared>,
    client: Client,
    rt: Option<tokio::runtime::Runtime>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}

impl Replica {
    /// Connects to etcd, checks that the local log of `state` is a prefix of the log there,
    /// and starts the election and follow task. The replica answers writes `503` until it
    /// has read the log and won an election.
    ///
    /// # Errors
    /// A message naming the URL: etcd does not answer, or the local log is not a prefix of
    /// etcd's.
    pub async fn start(
        url: HaUrl,
        ttl: i64,
        advertise: String,
        state: AppState,
    ) -> Result<Arc<Replica>, String> {
        if !(2..=60).contains(&ttl) {
            return Err(format!(
                "--ha-ttl-s {ttl}: give 2 to 60 seconds (etcd's shortest lease is about 2 s)"
            ));
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fleetsim-ha")
            .enable_all()
            .build()
            .map_err(|e| format!("tokio runtime: {e}"))?;
        let shared = Arc::new(Shared {
            url: url.clone(),
            advertise,
            ttl,
            role: Mutex::new(Role::Starting),
            step_down: tokio::sync::Notify::new(),
            elections: 0.into(),
        });
        let where_ = format!("etcd at {}{}", url.endpoint, url.prefix);
        let (records, crc) = {
            let svc = lock(&state);
            (svc.log_records(), svc.log_last_crc())
        };
        let endpoint = url.endpoint.clone();
        let prefix = url.prefix.clone();
        let timeout = Duration::from_secs(ttl as u64);
        let client = rt
            .spawn(async move {
                let opts = ConnectOptions::new()
                    .with_connect_timeout(timeout)
                    .with_timeout(APPEND_TIMEOUT)
                    // A connection that died without a word ends the watch (and the
                    // standby campaigns or retries) instead of leaving it waiting for
                    // ever; etcd refuses pings more often than every 5 s.
                    .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
                    // Requests fail, rather than wait, while etcd's cluster has no leader.
                    .with_require_leader(true);
                let mut c = Client::connect([endpoint], Some(opts))
                    .await
                    .map_err(|e| e.to_string())?;
                if records > 0 {
                    let r = c
                        .get(log_key(&prefix, records - 1), None)
                        .await
                        .map_err(|e| e.to_string())?;
                    let held = r.kvs().first().map(|kv| crc32fast::hash(kv.value()));
                    if held != Some(crc) {
                        return Err(format!(
                            "the local log's {records} records are not a prefix of the replicated log (its record {} is {}): give this replica its own log, or an empty one",
                            records - 1,
                            if held.is_some() { "different" } else { "absent" }
                        ));
                    }
                }
                Ok::<Client, String>(c)
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r.map_err(|e| format!("{where_}: {e}")));
        let client = match client {
            Ok(c) => c,
            Err(e) => {
                // Dropping a runtime inside another one's task panics: let it go instead.
                rt.shutdown_background();
                return Err(e);
            }
        };
        let task = Task {
            shared: shared.clone(),
            client: client.clone(),
            state,
        };
        rt.spawn(task.run());
        Ok(Arc::new(Replica {
            shared,
            client,
            rt: Some(rt),
        }))
    }

    /// Steps down from leadership (the task revokes the lease and follows again); a
    /// replica that is no longer the leader only learns the leader's URL.
    fn resign(&self, leader: Option<String>) {
        let mut role = self.shared.role.lock().unwrap_or_else(|p| p.into_inner());
        let was_leader = matches!(*role, Role::Leader { .. });
        *role = Role::Standby { leader };
        drop(role);
        if was_leader {
            self.shared.step_down.notify_one();
        }
    }
}

impl Replicate for Replica {
    fn append(&self, index: u64, payload: &[u8]) -> Result<(), NotLeader> {
        let rev = match self.shared.role() {
            Role::Leader { rev } => rev,
            Role::Standby { leader } => {
                return Err(NotLeader {
                    leader,
                    why: "this replica is a standby".into(),
                })
            }
            Role::Starting => {
                return Err(NotLeader {
                    leader: None,
                    why: "this replica is reading the replicated log".into(),
                })
            }
        };
        let prefix = &self.shared.url.prefix;
        let (lk, key) = (leader_key(prefix), log_key(prefix, index));
        let txn = Txn::new()
            .when([
                Compare::create_revision(lk.clone(), CompareOp::Equal, rev),
                Compare::version(key.clone(), CompareOp::Equal, 0),
            ])
            .and_then([TxnOp::put(key, payload.to_vec(), None)])
            .or_else([TxnOp::get(lk, None)]);
        let (tx, rx) = std::sync::mpsc::channel();
        let mut c = self.client.clone();
        if let Some(rt) = &self.rt {
            rt.spawn(async move {
                let _ = tx.send(c.txn(txn).await);
            });
        }
        match rx.recv_timeout(APPEND_TIMEOUT) {
            Ok(Ok(r)) if r.succeeded() => Ok(()),
            Ok(Ok(r)) => {
                let leader = r.op_responses().into_iter().find_map(|o| match o {
                    TxnOpResponse::Get(g) => g
                        .kvs()
                        .first()
                        .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()),
                    _ => None,
                });
                self.resign(leader.clone());
                Err(NotLeader {
                    leader,
                    why: "this replica was deposed (its leadership ended in etcd) and stepped down"
                        .into(),
                })
            }
            Ok(Err(e)) => {
                self.resign(None);
                Err(NotLeader {
                    leader: None,
                    why: format!("etcd refused the append ({e}); this replica stepped down"),
                })
            }
            Err(_) => {
                self.resign(None);
                Err(NotLeader {
                    leader: None,
                    why: format!(
                        "etcd did not answer the append within {} s; this replica stepped down",
                        APPEND_TIMEOUT.as_secs()
                    ),
                })
            }
        }
    }

    fn step_down(&self) {
        self.resign(None);
    }

    fn health(&self) -> serde_json::Value {
        let (role, leader) = match self.shared.role() {
            Role::Starting => ("starting", None),
            Role::Standby { leader } => ("standby", leader),
            Role::Leader { .. } => ("leader", Some(self.shared.advertise.clone())),
        };
        serde_json::json!({
            "role": role,
            "leader": leader,
            "etcd": self.shared.url.endpoint,
            "prefix": self.shared.url.prefix,
            "ttl_s": self.shared.ttl,
            "elections_won": self.shared.elections.load(std::sync::atomic::Ordering::Relaxed),
        })
    }
}

/// The replica's background task.
struct Task {
    shared: Arc<Shared>,
    client: Client,
    state: AppState,
}

type EtcdResult<T> = Result<T, String>;

fn err(e: etcd_client::Error) -> String {
    e.to_string()
}

impl Task {
    async fn run(mut self) {
        loop {
            if let Err(e) = self.round().await {
                eprintln!(
                    "fleetsim-scheduler: WARNING: ha (etcd at {}): {e}; trying again",
                    self.shared.url.endpoint
                );
                if matches!(self.shared.role(), Role::Leader { .. }) {
                    self.shared.set_role(Role::Standby { leader: None });
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }

    /// Reads the log to its end, campaigns once, then leads or follows until that ends.
    async fn round(&mut self) -> EtcdResult<()> {
        self.catch_up().await?;
        let prefix = self.shared.url.prefix.clone();
        let lk = leader_key(&prefix);
        let lease = self
            .client
            .lease_grant(self.shared.ttl, None)
            .await
            .map_err(err)?
            .id();
        let campaign = Txn::new()
            .when([Compare::create_revision(lk.clone(), CompareOp::Equal, 0)])
            .and_then([TxnOp::put(
                lk.clone(),
                self.shared.advertise.clone(),
                Some(PutOptions::new().with_lease(lease)),
            )])
            .or_else([TxnOp::get(lk.clone(), None)]);
        let r = self.client.txn(campaign).await.map_err(err)?;
        let rev = r.header().map_or(0, |h| h.revision());
        if r.succeeded() {
            // The previous leader can append no more: its comparison names its own key.
            let led = self.lead(lease, rev).await;
            self.shared.set_role(Role::Standby { leader: None });
            let _ = self.client.lease_revoke(lease).await;
            return led;
        }
        let _ = self.client.lease_revoke(lease).await;
        let leader = r.op_responses().into_iter().find_map(|o| match o {
            TxnOpResponse::Get(g) => g
                .kvs()
                .first()
                .map(|kv| String::from_utf8_lossy(kv.value()).into_owned()),
            _ => None,
        });
        self.shared.set_role(Role::Standby { leader });
        self.follow(rev + 1).await
    }

    /// Leads: reads the log to its end, then keeps the lease alive until it is lost or an
    /// append steps the replica down.
    async fn lead(&mut self, lease: i64, rev: i64) -> EtcdResult<()> {
        self.catch_up().await?;
        let (mut keeper, mut stream) = self.client.lease_keep_alive(lease).await.map_err(err)?;
        self.shared.set_role(Role::Leader { rev });
        self.shared
            .elections
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let records = self.service(|svc| svc.log_records()).await?;
        eprintln!(
            "fleetsim-scheduler: ha: leader as {} (etcd revision {rev}, lease {lease:x}, {records} log records)",
            self.shared.advertise
        );
        let ttl = Duration::from_secs(self.shared.ttl as u64);
        let every = ttl / 3;
        // The last renewal etcd confirmed: with none for a whole time to live, the lease
        // has expired by now (or will before any append could use it).
        let mut renewed = tokio::time::Instant::now();
        let mut tick = tokio::time::interval(every);
        loop {
            let lost = tokio::select! {
                () = self.shared.step_down.notified() => {
                    eprintln!("fleetsim-scheduler: ha: stepped down");
                    return Ok(());
                }
                _ = tick.tick() => {
                    keeper.keep_alive().await.map_err(err)?;
                    None
                }
                m = stream.message() => match m {
                    Ok(Some(r)) if r.ttl() > 0 => {
                        renewed = tokio::time::Instant::now();
                        None
                    }
                    Ok(Some(_)) => Some("the lease expired".to_string()),
                    Ok(None) => Some("the lease keep-alive stream ended".to_string()),
                    Err(e) => Some(e.to_string()),
                },
            };
            let lost = lost.or_else(|| {
                (renewed.elapsed() >= ttl)
                    .then(|| format!("no lease renewal confirmed for {} s", self.shared.ttl))
            });
            if let Some(why) = lost {
                self.shared.set_role(Role::Standby { leader: None });
                return Err(format!("{why}: stepped down"));
            }
        }
    }

    /// Follows the log from etcd revision `from` until the leader key is deleted.
    async fn follow(&mut self, from: i64) -> EtcdResult<()> {
        let prefix = self.shared.url.prefix.clone();
        let lk = leader_key(&prefix);
        let opts = WatchOptions::new().with_prefix().with_start_revision(from);
        let mut stream = self
            .client
            .watch(format!("{prefix}/"), Some(opts))
            .await
            .map_err(err)?;
        // Records put between the campaign and the watch's start are in the watch.
        loop {
            let Some(msg) = stream.message().await.map_err(err)? else {
                return Err("the watch ended".into());
            };
            if msg.canceled() {
                return Err(format!("the watch was cancelled: {}", msg.cancel_reason()));
            }
            let (mut records, mut gone) = (false, false);
            for ev in msg.events() {
                let Some(kv) = ev.kv() else { continue };
                if kv.key() == lk.as_bytes() {
                    match ev.event_type() {
                        EventType::Delete => gone = true,
                        EventType::Put => self.shared.set_role(Role::Standby {
                            leader: Some(String::from_utf8_lossy(kv.value()).into_owned()),
                        }),
                    }
                } else if index_of(&prefix, kv.key()).is_some() {
                    records = true;
                }
            }
            if records {
                self.catch_up().await?;
            }
            if gone {
                self.shared.set_role(Role::Standby { leader: None });
                return Ok(());
            }
        }
    }

    /// Applies the log's records from the local log's length to the end.
    async fn catch_up(&mut self) -> EtcdResult<()> {
        let prefix = self.shared.url.prefix.clone();
        let mut kv = self.client.kv_client().max_decoding_message_size(256 << 20);
        loop {
            let next = self.service(|svc| svc.log_records()).await?;
            let opts = GetOptions::new()
                .with_range(log_end(&prefix))
                .with_limit(CATCH_UP_RECORDS);
            let r = kv
                .get(log_key(&prefix, next), Some(opts))
                .await
                .map_err(err)?;
            if r.kvs().is_empty() {
                return Ok(());
            }
            let kvs = r.kvs().to_vec();
            let prefix = prefix.clone();
            self.service(move |svc| {
                for kv in &kvs {
                    let at = svc.log_records();
                    if index_of(&prefix, kv.key()) != Some(at) {
                        return Err(format!(
                            "the replicated log has {} where record {at} should be",
                            String::from_utf8_lossy(kv.key()),
                        ));
                    }
                    svc.follow(at, kv.value())?;
                }
                Ok(())
            })
            .await??;
        }
    }

    /// Runs `f` on the service, on a blocking thread: never on this runtime's worker, which
    /// an append waiting under the service's lock needs to reach etcd.
    async fn service<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut crate::service::Service) -> T + Send + 'static,
    ) -> EtcdResult<T> {
        let state = self.state.clone();
        tokio::task::spawn_blocking(move || f(&mut lock(&state)))
            .await
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_and_without_a_prefix() {
        let u = parse_url("etcd://127.0.0.1:2379").unwrap();
        assert_eq!(u.endpoint, "http://127.0.0.1:2379");
        assert_eq!(u.prefix, DEFAULT_PREFIX);
        let u = parse_url("etcd://etcd.internal:2379/prod/sched/").unwrap();
        assert_eq!(u.endpoint, "http://etcd.internal:2379");
        assert_eq!(u.prefix, "/prod/sched");
        for bad in ["http://h:1", "etcd://h", "etcd://:1", "etcd://h:x/p"] {
            assert!(parse_url(bad).unwrap_err().contains("--ha"), "{bad}");
        }
    }

    #[test]
    fn log_keys_sort_by_index_and_parse_back() {
        let p = "/x";
        assert!(log_key(p, 9) < log_key(p, 10));
        assert!(log_key(p, u64::MAX) < log_end(p));
        assert_eq!(index_of(p, log_key(p, 42).as_bytes()), Some(42));
        assert_eq!(index_of(p, leader_key(p).as_bytes()), None);
    }
}
