//! The HTTP+JSON API over a [`LiveState`]. The routes are described in
//! `scheduler/openapi.json` (served at `GET /v1/openapi.json`).
//!
//! * `POST /v1/events` — a batch `{"batch": N?, "events": [...]}` applied in order; answers
//!   `{"first_seq": S, "decisions": [...]}`, the decisions in order with sequence numbers
//!   from `S`. A refused event stops the batch: `422` with `{"error", "index", "first_seq",
//!   "decisions"}` (the events before `index` are applied, their decisions given). A batch
//!   number at or below the last accepted one is answered `409` without applying anything
//!   (a client re-sending an acknowledged batch). With a write-ahead log ([`crate::wal`]),
//!   the batch is appended and synced *before* it is applied and answered; a log write
//!   failure is `500` and applies nothing. With `serve --ha` ([`crate::ha`]) the batch is
//!   appended to the replicated log first; a replica that may not append (a standby, or
//!   deposed) answers `503` with the leader's URL and applies nothing.
//! * `GET /v1/decisions?from=N&limit=M` — decisions `N..N+M` (`limit` default 1,000, at most
//!   10,000) as `{"first_seq", "next", "total", "decisions"}`; `410` when `N` is older than
//!   the retained window.
//! * `GET /v1/decisions/stream?from=N` — the same as server-sent events (`event: decision`,
//!   `id:` the sequence number, `data:` the decision's JSON), live as new decisions come.
//! * `GET /v1/jobs/{id}` — a job's phase and pending reason.
//! * `GET /v1/pending` — every pending job's reason as of the last pass (a tenant principal:
//!   its tenants' jobs only).
//!
//! Who may do what per tenant is [`crate::tenancy`]'s rule: a tenant principal submits and
//! cancels its tenants' jobs (`403` for anything else in a batch, nothing applied) and reads
//! only them.
//! * `GET /v1/openapi.json` — the OpenAPI 3.1 description.
//! * `GET /healthz` — `{"ok", "now", "decisions", "last_batch", "clock", "wal"}`; `wal`
//!   carries the log's path, records, bytes, the batches replayed on start and the tail
//!   defect found then (`null` when the log was clean).
//!
//! Time: with [`Clock::Event`] (the default) decisions use the events' `t`, never the wall
//! clock, so a replay is deterministic. With [`Clock::Wall`] the service overwrites each
//! accepted event's `t` with the milliseconds since it started (offset by the state's time at
//! start, so a restart continues where the log ended), never going backwards; a job's
//! `submit` becomes that stamp too and a `job_lost`'s `release_at` is raised to it (the
//! sender's times are on another clock). The stamped events are what the log holds, so a
//! restart replays them to the same state.
//!
//! [`router`] builds the routes only, so a security layer ([`crate::security::secure`]) can
//! wrap them.

use std::collections::{BTreeMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::path::Path as FsPath;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::extract::{Extension, Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use fleetsim_policies::live::{Decision, Event, Invalid, LiveState, Phase};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::metrics::Metrics;
use crate::quarantine::Quarantine;
use crate::security::Principal;
use crate::served::{Ended, EndedJobs, Kept, Namer, Owner, ServedDecision};
use crate::tenancy::Tenancy;
use crate::wal::{TailDefect, Wal};

/// The OpenAPI 3.1 description of [`router`]'s routes (`scheduler/openapi.json`).
pub const OPENAPI_JSON: &str = include_str!("../openapi.json");

/// Default number of decisions kept for `GET /v1/decisions` and the stream.
pub const DEFAULT_RETAIN_DECISIONS: usize = 1_000_000;
/// Default events between snapshots (`serve --snapshot-every`).
pub const DEFAULT_SNAPSHOT_EVERY: u64 = 100_000;
/// Default / largest `limit` of `GET /v1/decisions`.
pub const DEFAULT_DECISIONS_LIMIT: usize = 1_000;
/// Largest `limit` of `GET /v1/decisions`.
pub const MAX_DECISIONS_LIMIT: usize = 10_000;

/// One batch of events.
#[derive(schemars::JsonSchema, Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    /// The client's batch sequence number (strictly increasing), if it numbers batches.
    #[serde(default)]
    pub batch: Option<u64>,
    /// The events, in order.
    pub events: Vec<Event>,
}

impl Batch {
    /// `events` cut into batches of `size` (the last may be shorter), numbered from 0.
    ///
    /// # Panics
    /// If `size` is 0.
    pub fn numbered(events: &[Event], size: usize) -> Vec<Batch> {
        events
            .chunks(size)
            .enumerate()
            .map(|(i, c)| Batch {
                batch: Some(i as u64),
                events: c.to_vec(),
            })
            .collect()
    }
}

/// The principal of requests served without a security layer, and of log records written
/// before records named their principal.
pub const LOCAL: &str = "local";

/// One write-ahead log record: a batch as accepted (stamped where the service stamps) and
/// the principal that sent it (its batch numbers are its own).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Logged {
    /// The sender's name (`None` in records of earlier versions: [`LOCAL`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub principal: Option<String>,
    /// The sender's batch number, if it numbers batches.
    #[serde(default)]
    pub batch: Option<u64>,
    /// The events, in order.
    pub events: Vec<Event>,
}

/// The answer to an accepted batch.
#[derive(schemars::JsonSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchReply {
    /// Sequence number of the first decision below (0-based over the service's life).
    pub first_seq: u64,
    /// The decisions, in order, each with the names of what it points at.
    pub decisions: Vec<ServedDecision>,
}

impl BatchReply {
    /// The decisions without their names.
    pub fn plain(&self) -> Vec<Decision> {
        self.decisions.iter().map(|d| d.decision.clone()).collect()
    }
}

/// Where event times come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Each event's own `t` (deterministic replay).
    Event,
    /// The service's wall clock: ms since start, offset by the state's time at start.
    Wall,
}

/// How a [`Service`] is set up.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where event times come from.
    pub clock: Clock,
    /// Decisions kept for `GET /v1/decisions` (older ones answer `410`). Keeps memory
    /// bounded on a long-running service.
    pub retain_decisions: usize,
    /// With a log: write a snapshot ([`crate::snapshot`]) once this many events were
    /// accepted since the last one (0: never). A restart then replays only the records
    /// after it.
    pub snapshot_every: u64,
    /// [`crate::snapshot::policy_digest`] of the spec's `[policy]` table: part of the
    /// snapshots' fingerprint, since the policy objects are not in the state (0: unknown).
    pub policy_digest: u32,
    /// With a log: the size at which it starts a new segment file, bytes.
    pub segment_bytes: u64,
    /// With a log: how long a segment wholly covered by the previous snapshot
    /// (`<wal>.snapshot.prev`) is kept before it is deleted (`None`: kept for ever).
    pub log_retention: Option<Duration>,
    /// Jobs that ended (finished, cancelled, rejected) kept for `GET /v1/jobs/{id}`.
    pub retain_ended_jobs: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            clock: Clock::Event,
            retain_decisions: DEFAULT_RETAIN_DECISIONS,
            snapshot_every: 0,
            policy_digest: 0,
            segment_bytes: crate::wal::DEFAULT_SEGMENT_BYTES,
            log_retention: None,
            retain_ended_jobs: crate::served::DEFAULT_RETAIN_ENDED_JOBS,
        }
    }
}

/// What replaying the write-ahead log on start did.
#[derive(Clone, Debug, Serialize)]
pub struct Recovery {
    /// Batches (log records) in the log: the snapshot's and those replayed after it.
    pub batches: u64,
    /// Events in them.
    pub events: u64,
    /// Decisions they produced.
    pub decisions: u64,
    /// Batches replayed from the log (after the snapshot, when one was used).
    pub replayed_batches: u64,
    /// The snapshot the state was loaded from, if one was used.
    pub snapshot: Option<SnapshotUsed>,
    /// Why a snapshot beside the log was not used (the whole log was replayed instead).
    pub snapshot_unused: Option<String>,
    /// The defect that cut the log's tail, if any.
    pub tail_defect: Option<TailDefect>,
    /// Replayed records with a refused event. Each was refused the same way when first
    /// accepted only if the service runs the spec and fleet the log was written under;
    /// under another spec a replay can refuse what was accepted (a job started elsewhere
    /// finishes "unknown"), and the records after it diverge.
    pub refused_on_replay: u64,
    /// The first of them.
    pub first_refused: Option<RefusedRecord>,
    /// Records this start set aside ([`crate::quarantine`]): they do not decode, fail
    /// validation or panicked when applied; the state is as if they had never been logged.
    pub set_aside: Vec<crate::quarantine::Entry>,
    /// Records set aside by earlier starts (listed in the quarantine file), skipped.
    pub set_aside_before: u64,
    /// Time taken to read and replay the log, seconds.
    pub seconds: f64,
}

/// A log record whose replay refused one of its events ([`Recovery::first_refused`]).
#[derive(Clone, Debug, Serialize)]
pub struct RefusedRecord {
    /// The record's index in the log, from 0.
    pub record: u64,
    /// Its batch number, if the client numbered it.
    pub batch: Option<u64>,
    /// The refused event's index in the batch.
    pub index: usize,
    /// Why it was refused.
    pub error: String,
}

/// What [`Service::replay`] did.
struct Replayed {
    snapshot: Option<SnapshotUsed>,
    snapshot_unused: Option<String>,
    /// Records the snapshot covered (0: none used).
    covered: u64,
    /// Records in the log (deleted ones included).
    records: u64,
    refused_on_replay: u64,
    first_refused: Option<RefusedRecord>,
}

/// The message of a caught panic.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into())
}

/// The snapshot a restart loaded ([`crate::snapshot`]).
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotUsed {
    /// The snapshot file.
    pub path: String,
    /// Its size, bytes.
    pub bytes: u64,
    /// Log records (batches) it covers.
    pub batches: u64,
    /// Events in them.
    pub events: u64,
    /// Time taken to read and load it, seconds.
    pub seconds: f64,
}

/// The last snapshot the running service wrote (or failed to write).
#[derive(Clone, Debug, Serialize)]
pub struct SnapshotWritten {
    /// Log records it covers (`null` when the write failed).
    pub batches: Option<u64>,
    /// Events accepted over the service's life when it was attempted.
    pub events: u64,
    /// Its size, bytes.
    pub bytes: u64,
    /// Time the write took (the service answers nothing meanwhile), seconds.
    pub seconds: f64,
    /// The write's error, if it failed (the log is unaffected; the next attempt comes after
    /// another interval).
    pub error: Option<String>,
}

/// The service's state: the live scheduler, the retained decisions and the log.
pub struct Service {
    live: LiveState,
    decisions: VecDeque<Kept>,
    /// Jobs that ended, for `GET /v1/jobs/{id}`.
    ended: EndedJobs,
    metrics: Arc<Metrics>,
    /// Whether passes are timed into the metrics (not during a replay).
    observe: bool,
    /// Sequence number of `decisions[0]`.
    first_retained: u64,
    /// The last batch number accepted from each principal (by name).
    last_batch: BTreeMap<String, u64>,
    /// One above the largest job `seq` applied: what a tenant's next job gets.
    next_seq: u64,
    wal: Option<Wal>,
    recovery: Option<Recovery>,
    options: Options,
    started: Instant,
    /// State time when the service started, ms (the wall clock's offset).
    wall_base: u64,
    notify: watch::Sender<u64>,
    tenancy: Tenancy,
    /// Events accepted over the service's life (the log's, replayed or from a snapshot).
    events: u64,
    /// Events accepted since the last snapshot (or start).
    since_snapshot: u64,
    /// The start state's [`crate::snapshot::fingerprint`] (with a log).
    fingerprint: Option<u32>,
    last_snapshot: Option<SnapshotWritten>,
    /// The start state, serialized ([`crate::snapshot::state_bytes`]; with a log): a
    /// rebuild after a caught panic starts from it (or from the snapshot).
    base: Vec<u8>,
    /// Log records set aside ([`crate::quarantine`]).
    quarantine: Quarantine,
    /// Panics caught while applying a batch over the service's life (each set its record
    /// aside and rebuilt the state without it).
    panics: u64,
    /// Records covered by `<wal>.snapshot` and when it was written.
    snapshot_cover: Option<(u64, SystemTime)>,
    /// Records covered by `<wal>.snapshot.prev` and when it was written (the retention's
    /// clock); `None` once its segments were deleted, or when unknown.
    prev_cover: Option<(u64, SystemTime)>,
    /// Segment files deleted (or emptied) by the retention over the service's life.
    segments_deleted: u64,
    /// With `serve --ha`: the replicated log each batch is appended to, fenced, before the
    /// local log ([`crate::ha`]).
    replica: Option<Arc<dyn Replicate>>,
}

/// A log replicated outside the process (`serve --ha`, [`crate::ha`]): the leader appends
/// each batch to it before its local log and answers only once it holds the batch.
pub trait Replicate: Send + Sync {
    /// Appends `payload` as record `index` (the local log's next record index).
    ///
    /// # Errors
    /// [`NotLeader`]: this replica is not the leader, or was deposed (the append was fenced
    /// off), or the store did not answer; nothing of the batch may be applied.
    fn append(&self, index: u64, payload: &[u8]) -> Result<(), NotLeader>;
    /// Gives up leadership: a record [`Replicate::append`] took could not be applied here
    /// (the local log refused it), so this replica must read it back from the replicated
    /// log before it decides again.
    fn step_down(&self);
    /// `/healthz`'s `ha` object: the role, the leader, the store.
    fn health(&self) -> serde_json::Value;
}

/// Why a replica refused a write ([`Replicate::append`]).
#[derive(Clone, Debug)]
pub struct NotLeader {
    /// The leader's advertised URL, when known.
    pub leader: Option<String>,
    /// What happened (not the leader; deposed; the store's error).
    pub why: String,
}

/// Shared handle to the service state.
pub type AppState = Arc<Mutex<Service>>;

/// Why a batch was not accepted.
#[derive(Debug)]
pub enum Refused {
    /// Its batch number is not above the last accepted one (nothing applied).
    Duplicate {
        /// The batch's number.
        batch: u64,
        /// The last accepted batch number.
        last: u64,
    },
    /// The principal may not send event `index` (nothing logged or applied).
    Forbidden {
        /// The refused event's index in the batch.
        index: usize,
        /// Why (the `403` body).
        error: String,
    },
    /// Event `index` has a field out of the spec's range or the caller's rights (nothing
    /// logged or applied).
    Invalid(Invalid),
    /// The log write failed (nothing applied).
    Log(std::io::Error),
    /// This replica may not append (`serve --ha`): not the leader, deposed, or the store
    /// did not answer (nothing applied here; see [`crate::ha`]).
    NotLeader(NotLeader),
    /// Applying the logged batch panicked (a defect): the record was set aside
    /// ([`crate::quarantine`]) and the state rebuilt without it, so nothing of it is
    /// applied.
    Panicked {
        /// The panic's message.
        error: String,
    },
    /// Event `index` was refused; the events before it were applied.
    Event {
        /// The refused event's index in the batch.
        index: usize,
        /// Why.
        error: String,
        /// The decisions of the events before it.
        reply: BatchReply,
    },
}

impl Service {
    /// A service on `live`, with no log and event time.
    pub fn new(live: LiveState) -> AppState {
        Arc::new(Mutex::new(Service::bare(live, Options::default())))
    }

    fn bare(live: LiveState, options: Options) -> Service {
        let wall_base = live.now();
        Service {
            live,
            decisions: VecDeque::new(),
            ended: EndedJobs::default(),
            metrics: Arc::new(Metrics::new()),
            observe: true,
            first_retained: 0,
            last_batch: BTreeMap::new(),
            next_seq: 0,
            wal: None,
            recovery: None,
            options,
            started: Instant::now(),
            wall_base,
            notify: watch::channel(0).0,
            tenancy: Tenancy::default(),
            events: 0,
            since_snapshot: 0,
            fingerprint: None,
            last_snapshot: None,
            base: Vec::new(),
            quarantine: Quarantine::default(),
            panics: 0,
            snapshot_cover: None,
            prev_cover: None,
            segments_deleted: 0,
            replica: None,
        }
    }

    /// Makes this service a replica of `r` (`serve --ha`): each batch is appended there,
    /// fenced, before the local log.
    pub fn set_replica(&mut self, r: Arc<dyn Replicate>) {
        self.replica = Some(r);
    }

    /// Records in the local log (the index the next record gets; 0 without a log).
    pub fn log_records(&self) -> u64 {
        self.wal.as_ref().map_or(0, Wal::records)
    }

    /// CRC-32 of the local log's last record (0 when empty or without a log).
    pub fn log_last_crc(&self) -> u32 {
        self.wal.as_ref().map_or(0, Wal::last_crc)
    }

    /// Applies record `index` of the replicated log (a standby following the leader,
    /// [`crate::ha`]): appends it to the local log, then replays it as a start replays the
    /// local log — a record that does not decode or validate, or that panics, is set aside
    /// ([`crate::quarantine`]) and the state is as if it had never been logged.
    ///
    /// # Errors
    /// A message: `index` is not the local log's next record, or the local append failed.
    pub fn follow(&mut self, index: u64, payload: &[u8]) -> Result<(), String> {
        let Some(wal) = &mut self.wal else {
            return Err("a replica needs a local log".into());
        };
        if index != wal.records() {
            return Err(format!(
                "replicated record {index} is not the local log's next ({})",
                wal.records()
            ));
        }
        wal.append(payload)
            .map_err(|e| format!("write-ahead log {}: {e}", wal.path().display()))?;
        let path = wal.path().to_path_buf();
        let segment = wal
            .segments()
            .last()
            .map_or_else(|| path.clone(), |s| s.path.clone());
        let len = std::fs::metadata(&segment).map_or(0, |m| m.len());
        let rec = crate::wal::RecordRef {
            index,
            segment: &segment,
            offset: len.saturating_sub((crate::wal::HEADER_BYTES + payload.len()) as u64),
            payload,
            crc: crc32fast::hash(payload),
        };
        let logged: Logged = match serde_json::from_slice(payload) {
            Ok(b) => b,
            Err(e) => {
                let why = format!("does not decode as a batch: {e}");
                self.quarantine.add(&rec, None, None, why);
                return Ok(());
            }
        };
        if let Err(bad) = self.live.validate(&logged.events) {
            let why = bad.to_string();
            self.quarantine
                .add(&rec, logged.batch, Some(bad.index), why);
            return Ok(());
        }
        match self.apply_caught(&logged) {
            Ok(_) => {}
            Err(panic) => {
                let _ = self.recover_from_panic(&logged, payload, panic);
                return Ok(());
            }
        }
        self.events += logged.events.len() as u64;
        self.since_snapshot += logged.events.len() as u64;
        self.after_append();
        Ok(())
    }

    /// After a record is applied: a snapshot when one is due, else the retention; the
    /// decision streams woken.
    fn after_append(&mut self) {
        if self.wal.is_some()
            && self.options.snapshot_every > 0
            && self.since_snapshot >= self.options.snapshot_every
        {
            self.write_snapshot();
        } else if self.prev_cover.is_some() {
            self.apply_retention();
        }
        self.notify.send_replace(self.total_decisions());
    }

    /// A service on `live` with the write-ahead log at `wal` (created if absent): its
    /// records are replayed first, reaching the state, decision sequence numbers and last
    /// batch number the service had when it wrote them; a bad tail is cut (see
    /// [`crate::wal`]) and reported in the returned [`Recovery`] and in `/healthz`.
    ///
    /// When a usable snapshot lies beside the log ([`crate::snapshot`]), the state is
    /// loaded from it and only the records after it are replayed; one that cannot be used
    /// is reported in [`Recovery::snapshot_unused`] and the whole log replayed.
    ///
    /// A record that cannot be replayed — it does not decode as a batch, fails
    /// [`LiveState::validate`], or panics when applied — is set aside in
    /// `<wal>.quarantine` ([`crate::quarantine`]) and reported in
    /// [`Recovery::set_aside`]; the state is then as if it had never been logged.
    ///
    /// # Errors
    /// A message naming the log or the quarantine file: I/O errors.
    pub fn with_wal(
        live: LiveState,
        wal: &FsPath,
        options: Options,
    ) -> Result<(AppState, Recovery), String> {
        let t0 = Instant::now();
        let base = crate::snapshot::state_bytes(&live)
            .map_err(|e| format!("the start state does not serialize: {e}"))?;
        let fingerprint = crate::snapshot::fingerprint_of(&base, options.policy_digest);
        let quarantine = Quarantine::open(wal, fingerprint)?;
        let io = |e: std::io::Error| format!("write-ahead log {}: {e}", wal.display());
        let mut log = crate::wal::Log::open(wal).map_err(io)?;
        let mut svc = Service::bare(live, options);
        svc.fingerprint = Some(fingerprint);
        svc.base = base;
        svc.quarantine = quarantine;
        let snap_path = crate::snapshot::path_for(wal);
        let Replayed {
            snapshot,
            snapshot_unused,
            covered,
            records,
            refused_on_replay,
            first_refused,
        } = svc.replay(wal, &mut log, true)?;
        svc.since_snapshot = svc.events - snapshot.as_ref().map_or(0, |s| s.events);
        let tail_defect = log.defect().cloned();
        let segment_bytes = svc.options.segment_bytes;
        svc.wal = Some(log.into_wal(segment_bytes).map_err(io)?);
        let mut recovery = Recovery {
            batches: records,
            events: svc.events,
            decisions: svc.total_decisions(),
            replayed_batches: records - covered.min(records),
            snapshot,
            snapshot_unused,
            tail_defect,
            refused_on_replay,
            first_refused,
            set_aside: svc.quarantine.added().to_vec(),
            set_aside_before: (svc.quarantine.entries().len() - svc.quarantine.added().len())
                as u64,
            seconds: t0.elapsed().as_secs_f64(),
        };
        if recovery.snapshot_unused.is_some() && svc.options.snapshot_every > 0 {
            // Replace the snapshot that could not be used now, rather than warn on every
            // restart until the next one is due. The refused one is kept aside first: it may
            // be the only copy of acknowledged state (one covering a log tail cut since).
            let aside = crate::wal::beside(&snap_path, ".refused");
            if std::fs::rename(&snap_path, &aside).is_ok() {
                if let Some(why) = &mut recovery.snapshot_unused {
                    why.push_str(&format!(" (kept as {})", aside.display()));
                }
            }
            svc.write_snapshot();
        }
        svc.recovery = Some(recovery.clone());
        svc.wall_base = svc.live.now();
        svc.started = Instant::now();
        svc.notify.send_replace(svc.total_decisions());
        Ok((Arc::new(Mutex::new(svc)), recovery))
    }

    /// Puts back the state the service started from (before any log record).
    fn reset_to_base(&mut self) -> Result<(), String> {
        crate::snapshot::restore_state(&mut self.live, &self.base)
            .map_err(|e| format!("the start state does not load back: {e}"))?;
        self.decisions.clear();
        self.ended = EndedJobs::default();
        self.first_retained = 0;
        self.last_batch.clear();
        self.next_seq = 0;
        self.events = 0;
        Ok(())
    }

    /// Loads the snapshot beside the log at `wal` (`<wal>.snapshot`, else
    /// `<wal>.snapshot.prev`) into the state; returns what was loaded with the records it
    /// covers and the CRC of the last of them (for the caller to check against the log),
    /// and why a snapshot beside the log was not loaded.
    fn load_snapshot(
        &mut self,
        wal: &FsPath,
    ) -> (Option<(SnapshotUsed, u64, u32)>, Option<String>) {
        let Some(fingerprint) = self.fingerprint else {
            return (None, None);
        };
        let mut unused: Option<String> = None;
        for snap_path in [
            crate::snapshot::path_for(wal),
            crate::snapshot::prev_path_for(wal),
        ] {
            let t_snap = Instant::now();
            let live = &mut self.live;
            let loaded = crate::snapshot::read(&snap_path).and_then(|p| match p {
                None => Ok(None),
                Some(p) => {
                    let len = (crate::snapshot::HEADER_BYTES + p.len()) as u64;
                    // A snapshot is input too: a decoder defect must not keep the service down.
                    let r = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        crate::snapshot::load(&p, live, fingerprint)
                    }))
                    .unwrap_or_else(|panic| {
                        Err(format!("loading it panicked: {}", panic_message(&*panic)))
                    });
                    r.map(|m| Some((m, len)))
                        .map_err(|e| format!("snapshot {}: {e}", snap_path.display()))
                }
            });
            match loaded {
                Ok(None) => {}
                Ok(Some(((meta, ds), bytes))) => {
                    self.first_retained = meta.first_retained;
                    self.decisions = ds.into();
                    self.ended = serde_json::from_slice(&meta.ended_json).unwrap_or_default();
                    self.record(&[]);
                    self.last_batch = meta.last_batch;
                    self.next_seq = meta.next_seq;
                    self.events = meta.events;
                    let written = std::fs::metadata(&snap_path)
                        .and_then(|m| m.modified())
                        .unwrap_or_else(|_| SystemTime::now());
                    let cover = Some((meta.wal_records, written));
                    if snap_path == crate::snapshot::path_for(wal) {
                        self.snapshot_cover = cover;
                    } else {
                        self.prev_cover = cover;
                    }
                    let used = SnapshotUsed {
                        path: snap_path.display().to_string(),
                        bytes,
                        batches: meta.wal_records,
                        events: meta.events,
                        seconds: t_snap.elapsed().as_secs_f64(),
                    };
                    return (Some((used, meta.wal_records, meta.last_record_crc)), unused);
                }
                Err(why) => {
                    unused.get_or_insert(why);
                }
            }
        }
        (None, unused)
    }

    /// Brings the state to the end of the log: from the snapshot when one is usable, else
    /// from the start state (`fresh`: the state is the start state already), reading the
    /// log record by record. A record that does not decode, fails [`LiveState::validate`]
    /// or panics when applied is set aside ([`crate::quarantine`]); after a panic the state
    /// is rebuilt and the replay starts again without that record, so that what follows
    /// applies to the state the log describes. A snapshot whose last record the log does
    /// not hold as it was is dropped and the log replayed from its start.
    fn replay(
        &mut self,
        wal: &FsPath,
        log: &mut crate::wal::Log,
        mut fresh: bool,
    ) -> Result<Replayed, String> {
        let io = |e: std::io::Error| format!("write-ahead log {}: {e}", wal.display());
        let mut use_snapshot = true;
        let mut dropped: Option<String> = None;
        loop {
            if !fresh {
                self.reset_to_base()?;
            }
            fresh = false;
            let (snapshot, mut unused) = if use_snapshot {
                self.load_snapshot(wal)
            } else {
                (None, None)
            };
            if let Some(why) = &dropped {
                unused = Some(why.clone());
            }
            let (covered, want_crc) = snapshot.as_ref().map_or((0, 0), |s| (s.1, s.2));
            let first = log.first_record();
            if first > covered {
                if snapshot.is_some() {
                    dropped = Some(format!(
                        "snapshot {}: it covers {covered} log records, but the log's first {first} were deleted",
                        snapshot.as_ref().map_or("", |s| s.0.path.as_str())
                    ));
                    use_snapshot = false;
                    continue;
                }
                return Err(format!(
                    "write-ahead log {}: its records before {first} were deleted once a snapshot covered them, and no snapshot beside it can be used ({}); put back {} or {} (or start a new log)",
                    wal.display(),
                    unused.as_deref().unwrap_or("none found"),
                    crate::snapshot::path_for(wal).display(),
                    crate::snapshot::prev_path_for(wal).display()
                ));
            }
            let (mut refused_on_replay, mut first_refused) = (0u64, None);
            let mut restart = false;
            let mut mismatch = None;
            let mut reader = log.reader(covered.saturating_sub(1));
            while let Some(rec) = reader.next().map_err(io)? {
                if rec.index < covered {
                    if rec.index + 1 == covered && rec.crc != want_crc {
                        mismatch = Some(format!(
                            "its last record, {}, is not in the log as it was (CRC {:08x}; the snapshot's {want_crc:08x})",
                            rec.index, rec.crc
                        ));
                        break;
                    }
                    continue;
                }
                if self.quarantine.contains(rec.index, rec.crc) {
                    continue;
                }
                let batch: Logged = match serde_json::from_slice(rec.payload) {
                    Ok(b) => b,
                    Err(e) => {
                        let why = format!("does not decode as a batch: {e}");
                        self.quarantine.add(&rec, None, None, why);
                        continue;
                    }
                };
                if let Err(bad) = self.live.validate(&batch.events) {
                    let why = bad.to_string();
                    self.quarantine.add(&rec, batch.batch, Some(bad.index), why);
                    continue;
                }
                match self.apply_caught(&batch) {
                    Ok(r) => {
                        self.events += batch.events.len() as u64;
                        // Under the spec the log was written with, a refused event was
                        // refused the same way when the batch was first accepted; counted
                        // and reported either way.
                        if let Err((index, error, _)) = r {
                            refused_on_replay += 1;
                            first_refused.get_or_insert(RefusedRecord {
                                record: rec.index,
                                batch: batch.batch,
                                index,
                                error,
                            });
                        }
                    }
                    Err(panic) => {
                        self.panics += 1;
                        let why = format!("applying it panicked: {panic}");
                        self.quarantine.add(&rec, batch.batch, None, why);
                        restart = true;
                        break;
                    }
                }
            }
            let records = reader.position();
            if restart {
                continue;
            }
            if mismatch.is_none() && covered > records {
                mismatch = Some(format!(
                    "it covers {covered} log records; the log has {records}"
                ));
            }
            if let (Some(why), Some(s)) = (mismatch, &snapshot) {
                dropped = Some(format!("snapshot {}: {why}", s.0.path));
                use_snapshot = false;
                continue;
            }
            if let Some(why) = unused.as_mut() {
                if snapshot.is_some() {
                    // Loaded from `.prev`: say which one was used.
                    why.push_str("; the previous snapshot was used");
                }
            }
            return Ok(Replayed {
                snapshot: snapshot.map(|s| s.0),
                snapshot_unused: unused,
                covered,
                records,
                refused_on_replay,
                first_refused,
            });
        }
    }

    /// [`Service::apply`] with a panic caught: `Err(message)` then, and the state is
    /// whatever the panic left (rebuild it).
    #[allow(clippy::type_complexity)]
    fn apply_caught(
        &mut self,
        logged: &Logged,
    ) -> Result<Result<Vec<Kept>, (usize, String, Vec<Kept>)>, String> {
        let who = logged.principal.as_deref().unwrap_or(LOCAL);
        std::panic::catch_unwind(AssertUnwindSafe(|| {
            self.apply_events(who, logged.batch, &logged.events)
        }))
        .map_err(|panic| panic_message(&*panic))
    }

    /// After a panic applying the last logged record: sets it aside and rebuilds the state
    /// from the log without it. Without a log the state stays as the panic left it.
    fn recover_from_panic(&mut self, batch: &Logged, payload: &[u8], error: String) -> Refused {
        self.panics += 1;
        let Some(wal) = &self.wal else {
            return Refused::Panicked { error };
        };
        let path = wal.path().to_path_buf();
        let record = wal.records() - 1;
        let segment = wal
            .segments()
            .last()
            .map_or_else(|| path.clone(), |s| s.path.clone());
        let len = std::fs::metadata(&segment).map_or(0, |m| m.len());
        let rec = crate::wal::RecordRef {
            index: record,
            segment: &segment,
            offset: len.saturating_sub((crate::wal::HEADER_BYTES + payload.len()) as u64),
            payload,
            crc: crc32fast::hash(payload),
        };
        let why = format!("applying it panicked: {error}");
        self.quarantine.add(&rec, batch.batch, None, why);
        let rebuilt = crate::wal::Log::open_read_only(&path)
            .map_err(|e| format!("write-ahead log {}: {e}", path.display()))
            .and_then(|mut log| self.replay(&path, &mut log, false));
        match rebuilt {
            Ok(_) => {
                eprintln!(
                    "fleetsim-scheduler: WARNING: applying log record {record} (batch {}) panicked: {error}; set aside in {} and the state rebuilt without it",
                    batch.batch.map_or("unnumbered".to_string(), |b| b.to_string()),
                    crate::quarantine::path_for(&path).display()
                );
                Refused::Panicked { error }
            }
            Err(e) => {
                // The state cannot be trusted and cannot be rebuilt: stop, so that a
                // restart replays the log (which skips the record set aside).
                eprintln!(
                    "fleetsim-scheduler: FATAL: applying log record {record} panicked ({error}) and the state could not be rebuilt ({e}); exiting so that a restart replays the log"
                );
                std::process::exit(70);
            }
        }
    }

    /// CRC-32 of everything a restart must give back: the live state, the retained
    /// decisions and their first sequence number, the last batch numbers, the next tenant
    /// `seq`, the events accepted. Two services with the same digest answer alike.
    pub fn state_digest(&self) -> u32 {
        let mut h = crc32fast::Hasher::new();
        h.update(&crate::snapshot::state_bytes(&self.live).unwrap_or_default());
        h.update(&serde_json::to_vec(&self.decisions).expect("decisions serialize"));
        h.update(&self.first_retained.to_le_bytes());
        h.update(&serde_json::to_vec(&self.last_batch).expect("numbers serialize"));
        h.update(&self.next_seq.to_le_bytes());
        h.update(&self.events.to_le_bytes());
        h.update(&serde_json::to_vec(&self.ended).expect("ended jobs serialize"));
        h.finalize()
    }

    /// The records set aside ([`crate::quarantine`]).
    pub fn quarantine(&self) -> &Quarantine {
        &self.quarantine
    }

    /// Panics caught while applying batches (each record was set aside).
    pub fn panics(&self) -> u64 {
        self.panics
    }

    /// Log segment files deleted (or emptied) by the retention since start.
    pub fn segments_deleted(&self) -> u64 {
        self.segments_deleted
    }

    /// `/healthz`'s `wal.quarantine`: the file, how many records it lists, the first 10 of
    /// them (without their payload), the panics caught, the last write error.
    fn quarantine_health(&self) -> serde_json::Value {
        let q = &self.quarantine;
        let first: Vec<_> = q
            .entries()
            .iter()
            .take(10)
            .map(|e| {
                serde_json::json!({"record": e.record, "offset": e.offset, "batch": e.batch,
                    "index": e.index, "reason": e.reason})
            })
            .collect();
        serde_json::json!({
            "path": q.path().map(|p| p.display().to_string()),
            "records": q.entries().len(),
            "set_aside_since_start": q.added().len(),
            "first": first,
            "panics": self.panics,
            "write_error": q.write_error(),
        })
    }

    /// The last snapshot this service wrote or failed to write (`None`: none yet).
    pub fn last_snapshot(&self) -> Option<&SnapshotWritten> {
        self.last_snapshot.as_ref()
    }

    /// Decisions made over the service's life (the next decision's sequence number).
    pub fn total_decisions(&self) -> u64 {
        self.first_retained + self.decisions.len() as u64
    }

    /// The live state.
    pub fn live(&self) -> &LiveState {
        &self.live
    }

    /// Sets the tenant names the job routes authorize by (see [`crate::tenancy`]).
    pub fn set_tenancy(&mut self, tenancy: Tenancy) {
        self.tenancy = tenancy;
    }

    /// The last batch number accepted from `principal` (by name; `local` without tokens).
    pub fn last_batch(&self, principal: &str) -> Option<u64> {
        self.last_batch.get(principal).copied()
    }

    /// Retained decisions from sequence number `from`, at most `limit`; `None` when `from`
    /// is older than the retained window.
    pub fn decisions_from(&self, from: u64, limit: usize) -> Option<Vec<Decision>> {
        if from < self.first_retained {
            return None;
        }
        let skip = (from - self.first_retained) as usize;
        Some(
            self.decisions
                .iter()
                .skip(skip)
                .take(limit)
                .map(|k| k.decision.clone())
                .collect(),
        )
    }

    /// As [`Service::decisions_from`], each decision with its names.
    pub fn served_from(&self, from: u64, limit: usize) -> Option<Vec<ServedDecision>> {
        if from < self.first_retained {
            return None;
        }
        let skip = (from - self.first_retained) as usize;
        let namer = self.namer();
        Some(
            self.decisions
                .iter()
                .skip(skip)
                .take(limit)
                .map(|k| namer.serve(k))
                .collect(),
        )
    }

    /// The service's metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }

    fn record(&mut self, ds: &[Kept]) {
        self.decisions.extend(ds.iter().cloned());
        let over = self
            .decisions
            .len()
            .saturating_sub(self.options.retain_decisions);
        if over > 0 {
            self.decisions.drain(..over);
            self.first_retained += over as u64;
        }
    }

    /// Applies `batch` to the state as the principal `local` sent it (no log, no
    /// duplicate check); `Err((index, message, reply))` when event `index` was refused.
    ///
    /// # Errors
    /// The refused event's index and error, with the decisions of the events before it.
    pub fn apply(&mut self, batch: &Batch) -> Result<BatchReply, (usize, String, BatchReply)> {
        let first_seq = self.total_decisions();
        match self.apply_events(LOCAL, batch.batch, &batch.events) {
            Ok(k) => Ok(self.reply(first_seq, &k)),
            Err((i, e, k)) => Err((i, e, self.reply(first_seq, &k))),
        }
    }

    /// The answer naming `kept`, the decisions from sequence number `first_seq`.
    fn reply(&self, first_seq: u64, kept: &[Kept]) -> BatchReply {
        let namer = self.namer();
        BatchReply {
            first_seq,
            decisions: kept.iter().map(|k| namer.serve(k)).collect(),
        }
    }

    fn namer(&self) -> Namer<'_> {
        Namer {
            live: &self.live,
            tenancy: &self.tenancy,
        }
    }

    /// The queue and tenant of job `id` in the state.
    fn owner(&self, id: u32) -> Option<Owner> {
        Some(Owner {
            queue: self.live.queue_of(id)?,
            tenant: self.live.tenant_of(id)?,
        })
    }

    /// Applies `events`, batch `number` of `principal`: the decisions are kept (with the
    /// owners of their jobs), the jobs that ended noted, the principal's last batch number
    /// advanced when every event applied, the next tenant `seq` raised past each job
    /// applied.
    fn apply_events(
        &mut self,
        principal: &str,
        number: Option<u64>,
        events: &[Event],
    ) -> Result<Vec<Kept>, (usize, String, Vec<Kept>)> {
        let mut out: Vec<Kept> = Vec::new();
        for (i, e) in events.iter().enumerate() {
            // A finish or cancel ends the job: its owner is read before it goes.
            let ending = match e {
                Event::JobFinished { job, .. } => Some((*job, "finished", self.owner(*job))),
                Event::JobCancelled { job, .. } => Some((*job, "cancelled", self.owner(*job))),
                _ => None,
            };
            let t0 = (self.observe && matches!(e, Event::Pass { .. })).then(Instant::now);
            match self.live.apply(e) {
                Ok(ds) => {
                    if let Some(t0) = t0 {
                        self.metrics
                            .pass_seconds
                            .observe(t0.elapsed().as_secs_f64());
                    }
                    let sent = match e {
                        Event::JobSubmitted { job, .. } | Event::JobStarted { job, .. } => {
                            self.next_seq = self.next_seq.max(job.seq.saturating_add(1));
                            Some((
                                job.id,
                                Owner {
                                    queue: job.queue,
                                    tenant: job.tenant,
                                },
                            ))
                        }
                        _ => None,
                    };
                    if let Some((job, state, owner)) = ending {
                        // A cancel of a job the state withdrew is an end too.
                        if self.live.phase(job).is_none() {
                            let ended = Ended {
                                state: state.into(),
                                t: e.t(),
                                reason: None,
                                owner,
                            };
                            self.ended
                                .insert(job, ended, self.options.retain_ended_jobs);
                        }
                    }
                    for d in ds {
                        let k = self.keep(d, sent);
                        out.push(k);
                    }
                }
                Err(err) => {
                    self.record(&out);
                    return Err((i, err.to_string(), out));
                }
            }
        }
        self.record(&out);
        if let Some(n) = number {
            self.last_batch.insert(principal.to_string(), n);
        }
        Ok(out)
    }

    /// `d` with the owners of its jobs; a reject also ends its job. `sent`: the job the
    /// event that caused it carried, with its owner (a reject's job is not in the state).
    fn keep(&mut self, d: Decision, sent: Option<(u32, Owner)>) -> Kept {
        match &d {
            Decision::Admit { job, .. } => Kept {
                owner: self.owner(*job),
                preemptor: None,
                decision: d,
            },
            Decision::Preempt { job, preemptor, .. } => Kept {
                owner: self.owner(*job),
                preemptor: self.owner(*preemptor),
                decision: d,
            },
            Decision::Reject { job, reason, t } => {
                let owner = sent
                    .filter(|(id, _)| id == job)
                    .map(|(_, o)| o)
                    .or_else(|| self.owner(*job));
                let reason = serde_json::to_value(reason)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string));
                let ended = Ended {
                    state: "rejected".into(),
                    t: *t,
                    reason,
                    owner,
                };
                self.ended
                    .insert(*job, ended, self.options.retain_ended_jobs);
                Kept {
                    owner,
                    preemptor: None,
                    decision: d,
                }
            }
        }
    }

    /// Accepts a batch from an admin ([`Principal::local`]); see [`Service::accept_as`].
    ///
    /// # Errors
    /// [`Refused`].
    pub fn accept(&mut self, batch: Batch) -> Result<BatchReply, Refused> {
        self.accept_as(&Principal::local(), batch)
    }

    /// Accepts a batch from `principal` as `POST /v1/events` does: duplicate check, the
    /// tenant rule ([`crate::tenancy`]; after the duplicate check, so that a resend of a
    /// logged batch is `409` even when its jobs have ended since), wall-clock stamping, log
    /// append + sync, apply, notify the decision streams.
    ///
    /// # Errors
    /// [`Refused`].
    pub fn accept_as(
        &mut self,
        principal: &Principal,
        batch: Batch,
    ) -> Result<BatchReply, Refused> {
        let r = self.accept_inner(principal, batch);
        let outcome = match &r {
            Ok(_) => "accepted",
            Err(Refused::Duplicate { .. }) => "duplicate",
            Err(Refused::Forbidden { .. }) => "forbidden",
            Err(Refused::Invalid(_)) => "invalid",
            Err(Refused::Log(_)) => "log_error",
            Err(Refused::NotLeader(_)) => "not_leader",
            Err(Refused::Panicked { .. }) => "panicked",
            Err(Refused::Event { .. }) => "refused_event",
        };
        self.metrics.batches.with_label_values(&[outcome]).inc();
        r
    }

    fn accept_inner(
        &mut self,
        principal: &Principal,
        mut batch: Batch,
    ) -> Result<BatchReply, Refused> {
        if let (Some(b), Some(&last)) = (batch.batch, self.last_batch.get(&principal.name)) {
            if b <= last {
                return Err(Refused::Duplicate { batch: b, last });
            }
        }
        self.tenancy
            .check_batch(principal, &self.live, &batch.events)
            .map_err(|(index, error)| Refused::Forbidden { index, error })?;
        let now = match self.options.clock {
            Clock::Event => self.live.now(),
            Clock::Wall => {
                let wall = self.wall_base + self.started.elapsed().as_millis() as u64;
                wall.max(self.live.now())
            }
        };
        let mut next_seq = self.next_seq;
        Tenancy::stamp(principal, &mut batch.events, now, &mut next_seq);
        if self.options.clock == Clock::Wall {
            for e in &mut batch.events {
                e.set_t(now);
                // The sender's other times are on its own clock, not the service's: a
                // submit time becomes the stamp, a release time is at least the stamp.
                match e {
                    Event::JobSubmitted { job, .. } | Event::JobStarted { job, .. } => {
                        job.submit = None;
                    }
                    Event::JobLost {
                        release_at: Some(r),
                        ..
                    } => *r = (*r).max(now),
                    _ => {}
                }
            }
        }
        self.live
            .validate(&batch.events)
            .map_err(Refused::Invalid)?;
        let logged = Logged {
            principal: Some(principal.name.clone()),
            batch: batch.batch,
            events: batch.events,
        };
        let payload = serde_json::to_vec(&logged).expect("a batch serializes");
        if let Some(r) = &self.replica {
            r.append(self.log_records(), &payload)
                .map_err(Refused::NotLeader)?;
        }
        if let Some(wal) = &mut self.wal {
            let t0 = Instant::now();
            if let Err(e) = wal.append(&payload) {
                return Err(match &self.replica {
                    // The batch is in the replicated log: whichever replica leads next
                    // applies it, so "not applied" would mislead.
                    Some(r) => {
                        r.step_down();
                        Refused::NotLeader(NotLeader {
                            leader: None,
                            why: format!(
                                "the batch is in the replicated log, but the local log refused it ({e}); this replica stepped down and the next leader applies it (a resend answers 409 there)"
                            ),
                        })
                    }
                    None => Refused::Log(e),
                });
            }
            self.metrics
                .log_append_seconds
                .observe(t0.elapsed().as_secs_f64());
        }
        let first_seq = self.total_decisions();
        let r = match self.apply_caught(&logged) {
            Ok(r) => r,
            Err(panic) => return Err(self.recover_from_panic(&logged, &payload, panic)),
        };
        let (applied, kept) = match &r {
            Ok(k) => (logged.events.len(), k),
            Err((i, _, k)) => (*i, k),
        };
        for e in &logged.events[..applied] {
            let kind = crate::tenancy::event_type(e);
            self.metrics.events.with_label_values(&[&kind]).inc();
        }
        for k in kept {
            let kind = match k.decision {
                Decision::Admit { .. } => "admit",
                Decision::Preempt { .. } => "preempt",
                Decision::Reject { .. } => "reject",
            };
            self.metrics.decisions.with_label_values(&[kind]).inc();
        }
        let r = match r {
            Ok(k) => Ok(self.reply(first_seq, &k)),
            Err((i, e, k)) => Err((i, e, self.reply(first_seq, &k))),
        };
        self.events += logged.events.len() as u64;
        self.since_snapshot += logged.events.len() as u64;
        self.after_append();
        r.map_err(|(index, error, reply)| Refused::Event {
            index,
            error,
            reply,
        })
    }
}

impl Service {
    /// On a clean shutdown: writes a snapshot when snapshots are on and events came since
    /// the last one, so the next start replays nothing.
    pub fn snapshot_on_shutdown(&mut self) {
        if self.options.snapshot_every > 0 && self.since_snapshot > 0 {
            self.write_snapshot();
        }
    }

    /// Writes the snapshot of the current state beside the log (see [`crate::snapshot`]);
    /// the outcome is kept for `/healthz`. A failed write is reported on stderr and
    /// retried after another interval: the log alone still restores everything.
    fn write_snapshot(&mut self) {
        let (Some(wal), Some(fingerprint)) = (&self.wal, self.fingerprint) else {
            return;
        };
        let t0 = Instant::now();
        let meta = crate::snapshot::Meta {
            fingerprint,
            wal_records: wal.records(),
            last_record_crc: wal.last_crc(),
            events: self.events,
            last_batch: self.last_batch.clone(),
            next_seq: self.next_seq,
            first_retained: self.first_retained,
            decisions_json: serde_json::to_vec(&self.decisions).expect("decisions serialize"),
            ended_json: serde_json::to_vec(&self.ended).expect("ended jobs serialize"),
        };
        let path = crate::snapshot::path_for(wal.path());
        // Reset on failure too: the next attempt comes after another interval, so a disk
        // that refuses the file does not cost a whole serialization per batch.
        self.since_snapshot = 0;
        let written = match crate::snapshot::write(&path, &meta, &self.live) {
            Ok(bytes) => {
                if self
                    .last_snapshot
                    .as_ref()
                    .is_some_and(|w| w.error.is_some())
                {
                    eprintln!(
                        "fleetsim-scheduler: snapshot {} written again after a failure",
                        path.display()
                    );
                }
                self.prev_cover = self.snapshot_cover;
                self.snapshot_cover = Some((meta.wal_records, SystemTime::now()));
                self.metrics
                    .snapshot_seconds
                    .observe(t0.elapsed().as_secs_f64());
                self.metrics.snapshot_bytes.set(bytes as i64);
                SnapshotWritten {
                    batches: Some(meta.wal_records),
                    events: meta.events,
                    bytes,
                    seconds: t0.elapsed().as_secs_f64(),
                    error: None,
                }
            }
            Err(e) => {
                eprintln!(
                    "fleetsim-scheduler: WARNING: snapshot {}: {e} (the log is unaffected; the next attempt after another {} events)",
                    path.display(),
                    self.options.snapshot_every
                );
                SnapshotWritten {
                    batches: None,
                    events: meta.events,
                    bytes: 0,
                    seconds: t0.elapsed().as_secs_f64(),
                    error: Some(e.to_string()),
                }
            }
        };
        self.last_snapshot = Some(written);
        self.apply_retention();
    }

    /// Deletes the log segments wholly covered by the previous snapshot once it is as old
    /// as the retention ([`Options::log_retention`]); a failure is reported on stderr and
    /// the segments kept (tried again after the next snapshot).
    fn apply_retention(&mut self) {
        let (Some(keep), Some((covered, written)), Some(wal)) = (
            self.options.log_retention,
            self.prev_cover,
            self.wal.as_mut(),
        ) else {
            return;
        };
        if written.elapsed().unwrap_or_default() < keep {
            return;
        }
        match wal.delete_covered(covered) {
            Ok(gone) => {
                self.segments_deleted += gone.len() as u64;
                self.prev_cover = None;
            }
            Err(e) => eprintln!(
                "fleetsim-scheduler: WARNING: write-ahead log {}: deleting segments covered by the previous snapshot: {e} (kept; tried again after the next snapshot)",
                wal.path().display()
            ),
        }
    }
}

/// The service behind `s` (a poisoned lock is taken over: see the comment inside).
pub fn lock(s: &AppState) -> std::sync::MutexGuard<'_, Service> {
    // A panic while holding the lock cannot leave the state half-applied in a way a poison
    // flag would help with; keep serving.
    s.lock().unwrap_or_else(|p| p.into_inner())
}

fn error(code: StatusCode, v: serde_json::Value) -> Response {
    (code, Json(v)).into_response()
}

/// The request's principal: the security layer's, else (no layer) the local admin.
fn principal(p: Option<Extension<Principal>>) -> Principal {
    p.map_or_else(Principal::local, |Extension(p)| p)
}

async fn post_events(
    State(s): State<AppState>,
    p: Option<Extension<Principal>>,
    Json(batch): Json<Batch>,
) -> Response {
    let p = principal(p);
    let mut svc = lock(&s);
    match svc.accept_as(&p, batch) {
        Ok(reply) => Json(reply).into_response(),
        Err(Refused::Duplicate { batch, last }) => error(
            StatusCode::CONFLICT,
            serde_json::json!({"error": format!("batch {batch} already accepted (last {last})"), "last_batch": last}),
        ),
        Err(Refused::Forbidden { index, error: msg }) => error(
            StatusCode::FORBIDDEN,
            serde_json::json!({"error": msg, "index": index}),
        ),
        Err(Refused::Invalid(bad)) => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            serde_json::json!({
                "error": format!("{bad}; nothing of the batch was logged or applied"),
                "index": bad.index,
                "field": bad.field,
                "applied": 0,
                "first_seq": svc.total_decisions(),
                "decisions": [],
            }),
        ),
        Err(Refused::Log(e)) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            serde_json::json!({"error": format!("write-ahead log: {e}; batch not applied")}),
        ),
        Err(Refused::NotLeader(n)) => error(
            StatusCode::SERVICE_UNAVAILABLE,
            serde_json::json!({
                "error": format!("{}; batch not applied: send it to the leader", n.why),
                "leader": n.leader,
            }),
        ),
        Err(Refused::Panicked { error: msg }) => error(
            StatusCode::INTERNAL_SERVER_ERROR,
            serde_json::json!({"error": format!("applying the batch failed ({msg}); it was set aside and nothing of it is applied")}),
        ),
        Err(Refused::Event {
            index,
            error: msg,
            reply,
        }) => error(
            StatusCode::UNPROCESSABLE_ENTITY,
            serde_json::json!({
                "error": msg,
                "index": index,
                "applied": index,
                "first_seq": reply.first_seq,
                "decisions": reply.decisions,
            }),
        ),
    }
}

/// Query of `GET /v1/decisions` and its stream.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DecisionsQuery {
    #[serde(default)]
    from: u64,
    limit: Option<usize>,
}

/// The answer of `GET /v1/decisions`.
#[derive(schemars::JsonSchema, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionsPage {
    /// Sequence number of the first decision below (= the query's `from`).
    pub first_seq: u64,
    /// The `from` of the next page.
    pub next: u64,
    /// Decisions made so far.
    pub total: u64,
    /// The decisions, in order, each with the names of what it points at.
    pub decisions: Vec<ServedDecision>,
}

fn gone(from: u64, first: u64) -> Response {
    error(
        StatusCode::GONE,
        serde_json::json!({"error": format!("decision {from} is no longer retained (oldest {first})"), "oldest": first}),
    )
}

async fn get_decisions(State(s): State<AppState>, Query(q): Query<DecisionsQuery>) -> Response {
    let limit = q.limit.unwrap_or(DEFAULT_DECISIONS_LIMIT);
    if limit == 0 || limit > MAX_DECISIONS_LIMIT {
        return error(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"error": format!("limit {limit}: must be 1..={MAX_DECISIONS_LIMIT}")}),
        );
    }
    let svc = lock(&s);
    let Some(ds) = svc.served_from(q.from, limit) else {
        return gone(q.from, svc.first_retained);
    };
    Json(DecisionsPage {
        first_seq: q.from,
        next: q.from + ds.len() as u64,
        total: svc.total_decisions(),
        decisions: ds,
    })
    .into_response()
}

struct StreamState {
    app: AppState,
    rx: watch::Receiver<u64>,
    next: u64,
    buf: VecDeque<ServedDecision>,
    done: bool,
}

async fn stream_step(mut st: StreamState) -> Option<(Result<SseEvent, axum::Error>, StreamState)> {
    if st.done {
        return None;
    }
    loop {
        if let Some(d) = st.buf.pop_front() {
            let seq = st.next;
            st.next += 1;
            let ev = SseEvent::default()
                .event("decision")
                .id(seq.to_string())
                .json_data(&d);
            return Some((ev, st));
        }
        // Mark the current value seen before reading, so a change after the read wakes us.
        st.rx.borrow_and_update();
        let got = {
            let svc = lock(&st.app);
            svc.served_from(st.next, DEFAULT_DECISIONS_LIMIT)
                .ok_or(svc.first_retained)
        };
        match got {
            Ok(ds) if !ds.is_empty() => st.buf.extend(ds),
            Ok(_) => {
                if st.rx.changed().await.is_err() {
                    return None;
                }
            }
            Err(oldest) => {
                st.done = true;
                let ev = SseEvent::default().event("gone").data(format!(
                    "decision {} is no longer retained (oldest {oldest})",
                    st.next
                ));
                return Some((Ok(ev), st));
            }
        }
    }
}

async fn stream_decisions(State(s): State<AppState>, Query(q): Query<DecisionsQuery>) -> Response {
    if q.limit.is_some() {
        return error(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"error": "the stream takes no `limit`"}),
        );
    }
    let rx = lock(&s).notify.subscribe();
    let st = StreamState {
        app: s,
        rx,
        next: q.from,
        buf: VecDeque::new(),
        done: false,
    };
    let stream = futures_util::stream::unfold(st, stream_step);
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response()
}

async fn get_job(
    State(s): State<AppState>,
    p: Option<Extension<Principal>>,
    Path(id): Path<u32>,
) -> Response {
    let p = principal(p);
    let svc = lock(&s);
    let ended = svc.ended.get(id).filter(|_| svc.live.phase(id).is_none());
    let tenant = svc
        .live
        .tenant_of(id)
        .or_else(|| ended.and_then(|e| e.owner).map(|o| o.tenant));
    if !p.admin && !tenant.is_some_and(|t| svc.tenancy.may(&p, t)) {
        return error(
            StatusCode::FORBIDDEN,
            serde_json::json!({"error": Tenancy::not_yours(&p, id)}),
        );
    }
    let names = |owner: Option<Owner>, nodes: &[u32]| {
        let fleet = svc.live.fleet();
        serde_json::json!({
            "queue": owner.and_then(|o| svc.live.queue_names().get(o.queue as usize)),
            "tenant": owner.and_then(|o| svc.tenancy.name(o.tenant)),
            "nodes": nodes.iter().map(|&n| fleet.node_name(fleetsim_policies::NodeId(n))).collect::<Vec<_>>(),
        })
    };
    if let Some(e) = ended {
        return Json(serde_json::json!({
            "job": id, "state": e.state, "t": e.t, "reason": e.reason,
            "names": names(e.owner, &[]),
        }))
        .into_response();
    }
    let Some(phase) = svc.live.phase(id) else {
        return error(
            StatusCode::NOT_FOUND,
            serde_json::json!({"error": format!("unknown job {id} (neither live nor among the last jobs that ended)")}),
        );
    };
    let (state, nodes): (&str, Vec<u32>) = match phase {
        Phase::Pending => ("pending", Vec::new()),
        Phase::Running(a) => ("running", a.iter().map(|a| a.node.0).collect()),
        Phase::Evicting(a) => ("evicting", a.iter().map(|a| a.node.0).collect()),
    };
    let reason = svc.live.pending_reasons().get(&id).map(|r| r.as_str());
    Json(serde_json::json!({
        "job": id, "state": state, "nodes": nodes, "pending_reason": reason,
        "names": names(svc.owner(id), &nodes),
    }))
    .into_response()
}

/// `GET /v1/nodes/{id}`: a node's name, cell, whether it takes new work, and the jobs
/// bound to it (admins: every tenant's jobs). After `node_failed`, the jobs listed
/// `running` are the ones to report lost (`job_lost`).
async fn get_node(State(s): State<AppState>, Path(id): Path<u32>) -> Response {
    let svc = lock(&s);
    let fleet = svc.live.fleet();
    let Some(node) = fleet.nodes().get(id as usize) else {
        return error(
            StatusCode::NOT_FOUND,
            serde_json::json!({"error": format!("unknown node {id} (the fleet has {})", fleet.nodes().len())}),
        );
    };
    let jobs: Vec<_> = svc
        .live
        .jobs_on(id)
        .into_iter()
        .map(|(j, evicting)| {
            serde_json::json!({"job": j, "state": if evicting { "evicting" } else { "running" }})
        })
        .collect();
    Json(serde_json::json!({
        "node": id,
        "name": fleet.node_name(fleetsim_policies::NodeId(id)),
        "cell": fleet.cells().get(node.cell.index()).map(|c| c.name.as_str()),
        "schedulable": node.schedulable,
        "jobs": jobs,
    }))
    .into_response()
}

/// `GET /metrics`: the Prometheus text exposition ([`crate::metrics`]); the pending-job
/// gauges and the log's figures are set from the state at each scrape.
async fn get_metrics(State(s): State<AppState>) -> Response {
    let svc = lock(&s);
    let m = svc.metrics.clone();
    m.pending_jobs.reset();
    let queues = svc.live.queue_names();
    for (job, reason) in svc.live.pending_reasons() {
        let q = svc
            .live
            .queue_of(job)
            .and_then(|q| queues.get(q as usize))
            .map_or("unknown", |q| q.as_str());
        m.pending_jobs
            .with_label_values(&[q, reason.as_str()])
            .inc();
    }
    if let Some(w) = &svc.wal {
        m.log_bytes.set(w.bytes() as i64);
        m.log_records.set(w.records() as i64);
        m.log_segments.set(w.segments().len() as i64);
    }
    m.records_set_aside
        .set(svc.quarantine.entries().len() as i64);
    drop(svc);
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        m.render(),
    )
        .into_response()
}

/// Times each request into `fleetsim_scheduler_request_seconds` by its route's pattern and
/// status code.
async fn track(
    State(m): State<Arc<Metrics>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let route = req
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or_else(|| "other".to_string(), |p| p.as_str().to_string());
    let t0 = Instant::now();
    let r = next.run(req).await;
    m.request_seconds
        .with_label_values(&[route.as_str(), r.status().as_str()])
        .observe(t0.elapsed().as_secs_f64());
    r
}

async fn get_pending(State(s): State<AppState>, p: Option<Extension<Principal>>) -> Response {
    let p = principal(p);
    let svc = lock(&s);
    let jobs: Vec<_> = svc
        .live
        .pending_reasons()
        .into_iter()
        .filter(|(j, _)| {
            p.admin
                || svc
                    .live
                    .tenant_of(*j)
                    .is_some_and(|t| svc.tenancy.may(&p, t))
        })
        .map(|(j, r)| serde_json::json!({"job": j, "pending_reason": r.as_str()}))
        .collect();
    Json(serde_json::json!({ "jobs": jobs })).into_response()
}

async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI_JSON).into_response()
}

async fn healthz(State(s): State<AppState>) -> Response {
    let svc = lock(&s);
    let wal = svc.wal.as_ref().map(|w| {
        let r = svc.recovery.as_ref();
        serde_json::json!({
            "path": w.path().display().to_string(),
            "records": w.records(),
            "bytes": w.bytes(),
            "replayed_batches": r.map_or(0, |r| r.replayed_batches),
            "snapshot_loaded": r.and_then(|r| r.snapshot.as_ref()),
            "snapshot_unused": r.and_then(|r| r.snapshot_unused.as_ref()),
            "last_snapshot": svc.last_snapshot.as_ref(),
            "tail_defect": r.and_then(|r| r.tail_defect.as_ref()),
            "refused_on_replay": r.map_or(0, |r| r.refused_on_replay),
            "first_refused": r.and_then(|r| r.first_refused.as_ref()),
            "quarantine": svc.quarantine_health(),
            "segments": w.segments().len(),
            "segments_deleted": svc.segments_deleted,
            "snapshot_covers": svc.snapshot_cover.map(|c| c.0),
            "previous_snapshot_covers": svc.prev_cover.map(|c| c.0),
        })
    });
    Json(serde_json::json!({
        "ok": true,
        "now": svc.live.now(),
        "decisions": svc.total_decisions(),
        "last_batch": &svc.last_batch,
        "clock": match svc.options.clock { Clock::Event => "event", Clock::Wall => "wall" },
        "wal": wal,
        "ha": svc.replica.as_ref().map(|r| r.health()),
    }))
    .into_response()
}

/// The service's routes (no security layer: wrap with [`crate::security::secure`]). Every
/// route here is in [`OPENAPI_JSON`] (checked by `tests/api.rs`).
pub fn router(state: AppState) -> Router {
    let metrics = lock(&state).metrics.clone();
    Router::new()
        .route("/v1/events", post(post_events))
        .route("/v1/decisions", get(get_decisions))
        .route("/v1/decisions/stream", get(stream_decisions))
        .route("/v1/jobs/{id}", get(get_job))
        .route("/v1/nodes/{id}", get(get_node))
        .route("/v1/pending", get(get_pending))
        .route("/v1/openapi.json", get(openapi))
        .route("/healthz", get(healthz))
        .route("/metrics", get(get_metrics))
        .route_layer(axum::middleware::from_fn_with_state(metrics, track))
        .with_state(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn empty_live() -> LiveState {
        let fleet =
            fleetsim_policies::FleetState::new(vec!["c".into()], vec!["G".into()], vec![]).unwrap();
        let sched = fleetsim_policies::Scheduler::new(Default::default(), vec![]);
        LiveState::new(sched, fleet, vec!["q0".into()])
    }

    fn pass(batch: u64, t: u64) -> Batch {
        Batch {
            batch: Some(batch),
            events: vec![Event::Pass { t }],
        }
    }

    #[test]
    fn records_refused_on_replay_are_counted_and_the_first_named() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let (s, _) = Service::with_wal(empty_live(), &wal, Options::default()).unwrap();
        {
            let mut svc = s.lock().unwrap();
            svc.accept(pass(0, 1_000)).unwrap();
            // A job the state does not know: refused by the state, after the log
            // (write-ahead), and refused the same way on replay.
            let finish = Batch {
                batch: Some(1),
                events: vec![Event::JobFinished { t: 1_500, job: 7 }],
            };
            assert!(matches!(
                svc.accept(finish),
                Err(Refused::Event { index: 0, .. })
            ));
            svc.accept(pass(2, 2_000)).unwrap();
        }
        drop(s);
        let (_, rec) = Service::with_wal(empty_live(), &wal, Options::default()).unwrap();
        assert_eq!((rec.batches, rec.refused_on_replay), (3, 1));
        let f = rec.first_refused.unwrap();
        assert_eq!((f.record, f.batch, f.index), (1, Some(1), 0));
        assert_eq!(f.error, "unknown job 7");
    }

    #[test]
    fn an_invalid_event_refuses_the_whole_batch_before_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let (s, _) = Service::with_wal(empty_live(), &wal, Options::default()).unwrap();
        let mut svc = s.lock().unwrap();
        svc.accept(pass(0, 1_000)).unwrap();
        // A pass at 2 s, then one at 0.5 s: the second goes back in time.
        let back = Batch {
            batch: Some(1),
            events: vec![Event::Pass { t: 2_000 }, Event::Pass { t: 500 }],
        };
        let Err(Refused::Invalid(bad)) = svc.accept(back) else {
            panic!("not refused as invalid")
        };
        assert_eq!((bad.index, bad.field.as_str()), (1, "t"));
        assert_eq!(
            bad.to_string(),
            "event 1: field `t`: event time 500 ms is before the current time 2000 ms"
        );
        // Nothing logged, nothing applied (the first pass of the batch neither).
        assert_eq!(svc.wal.as_ref().unwrap().records(), 1);
        assert_eq!((svc.live().now(), svc.last_batch(LOCAL)), (1_000, Some(0)));
    }

    /// A queue order that panics on a job of priority 666 (a stand-in for a defect the
    /// validation does not foresee), after the scheduler began to change its state.
    struct PanicsOn666;

    impl fleetsim_policies::QueueOrder for PanicsOn666 {
        fn name(&self) -> &'static str {
            "panics-on-666"
        }
        fn key(&self, job: &fleetsim_policies::PendingJob) -> fleetsim_policies::OrderKey {
            assert!(job.priority != 666, "a defect met priority 666");
            fleetsim_policies::OrderKey(0, job.submit.0, job.seq)
        }
    }

    /// One cell of two 8-GPU nodes, FIFO but for [`PanicsOn666`], one queue.
    fn small_live() -> LiveState {
        let node = |i: u32| fleetsim_policies::NodeSpec {
            name: format!("n{i}"),
            cell: fleetsim_policies::CellId(0),
            block: 0,
            domain: i,
            model: Some(fleetsim_policies::ModelId(0)),
            gpus: 8,
            cpu_milli: 64_000,
            mem_mib: 512_000,
        };
        let fleet = fleetsim_policies::FleetState::new(
            vec!["c".into()],
            vec!["G".into()],
            vec![node(0), node(1)],
        )
        .unwrap();
        let sched = fleetsim_policies::Scheduler::new(Default::default(), vec![]).with(
            fleetsim_policies::Extensions {
                order: Some(Box::new(PanicsOn666)),
                ..Default::default()
            },
        );
        LiveState::new(sched, fleet, vec!["q0".into()])
    }

    fn submit(batch: u64, t: u64, id: u32, priority: i32) -> Batch {
        let job = fleetsim_policies::live::JobSpec {
            id,
            tenant: 0,
            queue: 0,
            priority,
            submit: None,
            seq: u64::from(id),
            shape: fleetsim_policies::TaskShape::whole_gpus(4),
            tasks: 1,
            models: vec![],
            cells: vec![],
            runtime_estimate_ms: None,
            topology: None,
            checkpoint_interval_ms: None,
            done_ms: 0,
            attained_gpu_ms: 0,
            split: false,
        };
        Batch {
            batch: Some(batch),
            events: vec![Event::JobSubmitted { t, job }, Event::Pass { t }],
        }
    }

    /// The digest of a service with no log fed `batches`.
    fn digest_of(batches: &[Batch]) -> u32 {
        let s = Service::new(small_live());
        let mut svc = s.lock().unwrap();
        for b in batches {
            svc.accept(b.clone()).unwrap();
        }
        svc.state_digest()
    }

    #[test]
    fn a_panic_applying_a_batch_sets_its_record_aside_and_rebuilds_the_state() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let (s, _) = Service::with_wal(small_live(), &wal, Options::default()).unwrap();
        let (b0, b1, b2) = (
            submit(0, 0, 1, 0),
            submit(1, 10, 2, 666),
            submit(2, 20, 3, 0),
        );
        let digest = {
            let mut svc = s.lock().unwrap();
            svc.accept(b0.clone()).unwrap();
            let Err(Refused::Panicked { error }) = svc.accept(b1.clone()) else {
                panic!("the panic was not caught")
            };
            assert_eq!(error, "a defect met priority 666");
            assert_eq!((svc.panics(), svc.quarantine().entries().len()), (1, 1));
            let e = &svc.quarantine().entries()[0];
            assert_eq!((e.record, e.batch), (1, Some(1)));
            // As if batch 1 had never come: job 2 unknown, and the digest of a service
            // that saw only batch 0.
            assert_eq!(svc.live().phase(2), None);
            assert_eq!(svc.state_digest(), digest_of(std::slice::from_ref(&b0)));
            // Batch 1 stays in the log, set aside; batch 2 follows it.
            svc.accept(b2.clone()).unwrap();
            assert_eq!(svc.wal.as_ref().unwrap().records(), 3);
            svc.state_digest()
        };
        drop(s);
        // A restart skips the record set aside and reaches the same state.
        let (s, rec) = Service::with_wal(small_live(), &wal, Options::default()).unwrap();
        assert_eq!((rec.set_aside.len(), rec.set_aside_before), (0, 1));
        assert_eq!(s.lock().unwrap().state_digest(), digest);
        assert_eq!(digest, digest_of(&[b0, b2]));
    }

    #[test]
    fn a_record_that_panics_on_replay_is_set_aside_and_the_rest_replayed() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        // A log as a service without the catch would have written it: the panicking
        // batch in the middle.
        let (b0, b1, b2) = (
            submit(0, 0, 1, 0),
            submit(1, 10, 2, 666),
            submit(2, 20, 3, 0),
        );
        let mut bytes = Vec::new();
        for b in [&b0, &b1, &b2] {
            bytes.extend(crate::wal::encode(&serde_json::to_vec(b).unwrap()));
        }
        std::fs::write(&wal, &bytes).unwrap();
        let (s, rec) = Service::with_wal(small_live(), &wal, Options::default()).unwrap();
        assert_eq!(rec.set_aside.len(), 1);
        let e = &rec.set_aside[0];
        let first_len = crate::wal::encode(&serde_json::to_vec(&b0).unwrap()).len() as u64;
        assert_eq!((e.record, e.offset, e.batch), (1, first_len, Some(1)));
        assert_eq!(e.reason, "applying it panicked: a defect met priority 666");
        assert_eq!(s.lock().unwrap().state_digest(), digest_of(&[b0, b2]));
    }

    #[test]
    fn wall_clock_stamps_events_and_the_log_keeps_the_stamps() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let wall = Options {
            clock: Clock::Wall,
            ..Options::default()
        };
        let (s, rec) = Service::with_wal(empty_live(), &wal, wall.clone()).unwrap();
        assert_eq!((rec.batches, rec.tail_defect), (0, None));
        let now = {
            let mut svc = s.lock().unwrap();
            // The event's own t (10^12 ms) is replaced by ms since start (this test runs in
            // well under a minute), and a later t = 0 is not "time going backwards".
            svc.accept(pass(0, 1_000_000_000_000)).unwrap();
            let first = svc.live().now();
            assert!(first < 60_000, "{first}");
            std::thread::sleep(Duration::from_millis(5));
            svc.accept(pass(1, 0)).unwrap();
            let second = svc.live().now();
            assert!(second >= first + 5, "{first} then {second}");
            // A duplicate batch number is refused before anything is logged or applied.
            assert!(matches!(
                svc.accept(pass(1, 0)),
                Err(Refused::Duplicate { batch: 1, last: 1 })
            ));
            assert_eq!(svc.wal.as_ref().unwrap().records(), 2);
            second
        };
        drop(s);
        // Replayed in event mode: the logged (stamped) times give the same state.
        let (s, rec) = Service::with_wal(empty_live(), &wal, Options::default()).unwrap();
        assert_eq!((rec.batches, rec.events), (2, 2));
        let svc = s.lock().unwrap();
        assert_eq!(svc.live().now(), now);
        assert_eq!(svc.last_batch(LOCAL), Some(1));
    }

    #[test]
    fn retention_drops_the_oldest_decisions() {
        let s = Service::new(empty_live());
        let mut svc = s.lock().unwrap();
        svc.options.retain_decisions = 2;
        let d = |t| Decision::Reject {
            t,
            job: 1,
            reason: fleetsim_policies::RejectReason::EmptyGang,
        };
        let k = |t| Kept {
            decision: d(t),
            owner: None,
            preemptor: None,
        };
        svc.record(&[k(1), k(2), k(3)]);
        assert_eq!(svc.total_decisions(), 3);
        assert_eq!(svc.decisions_from(0, 10), None);
        assert_eq!(svc.decisions_from(1, 10), Some(vec![d(2), d(3)]));
        assert_eq!(svc.decisions_from(3, 10), Some(vec![]));
    }

    /// A [`Replicate`] that keeps what it is given and refuses on demand.
    #[derive(Default)]
    struct FakeReplica {
        appended: Mutex<Vec<u64>>,
        refuse: std::sync::atomic::AtomicBool,
        stepped_down: std::sync::atomic::AtomicBool,
    }

    impl Replicate for FakeReplica {
        fn append(&self, index: u64, _payload: &[u8]) -> Result<(), NotLeader> {
            if self.refuse.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(NotLeader {
                    leader: Some("http://other".into()),
                    why: "deposed".into(),
                });
            }
            self.appended.lock().unwrap().push(index);
            Ok(())
        }
        fn step_down(&self) {
            self.stepped_down
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        fn health(&self) -> serde_json::Value {
            serde_json::Value::Null
        }
    }

    #[test]
    fn a_replica_appends_first_at_the_local_index_and_a_refusal_applies_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let (s, _) = Service::with_wal(empty_live(), &wal, Options::default()).unwrap();
        let r = Arc::new(FakeReplica::default());
        let mut svc = s.lock().unwrap();
        svc.set_replica(r.clone());
        svc.accept(pass(0, 1_000)).unwrap();
        svc.accept(pass(1, 2_000)).unwrap();
        assert_eq!(*r.appended.lock().unwrap(), vec![0, 1]);
        r.refuse.store(true, std::sync::atomic::Ordering::SeqCst);
        let Err(Refused::NotLeader(n)) = svc.accept(pass(2, 3_000)) else {
            panic!("not refused")
        };
        assert_eq!(n.leader.as_deref(), Some("http://other"));
        assert_eq!(svc.log_records(), 2);
        assert_eq!((svc.live().now(), svc.last_batch(LOCAL)), (2_000, Some(1)));
    }

    /// The batch is in the replicated log but the local log refuses it: the answer must
    /// not say "not applied" (the next leader applies it), and the replica steps down.
    #[test]
    fn a_local_log_failure_after_the_replicated_append_steps_down() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let options = Options {
            segment_bytes: 1,
            ..Options::default()
        };
        let (s, _) = Service::with_wal(empty_live(), &wal, options).unwrap();
        let r = Arc::new(FakeReplica::default());
        let mut svc = s.lock().unwrap();
        svc.set_replica(r.clone());
        svc.accept(pass(0, 1_000)).unwrap();
        // The next append starts segment 1, which is a full disk.
        std::os::unix::fs::symlink("/dev/full", crate::wal::segment_path(&wal, 1)).unwrap();
        let Err(Refused::NotLeader(n)) = svc.accept(pass(1, 2_000)) else {
            panic!("not refused as a replica")
        };
        assert!(n.why.contains("is in the replicated log"), "{}", n.why);
        assert!(r.stepped_down.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(*r.appended.lock().unwrap(), vec![0, 1]);
        assert_eq!(svc.live().now(), 1_000);
    }

    #[test]
    fn a_followed_record_is_logged_applied_or_set_aside_at_its_index() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let (s, _) = Service::with_wal(empty_live(), &wal, Options::default()).unwrap();
        let mut svc = s.lock().unwrap();
        let record = |b: Batch| {
            serde_json::to_vec(&Logged {
                principal: Some("admin".into()),
                batch: b.batch,
                events: b.events,
            })
            .unwrap()
        };
        svc.follow(0, &record(pass(0, 1_000))).unwrap();
        assert_eq!(
            (svc.live().now(), svc.last_batch("admin")),
            (1_000, Some(0))
        );
        // Out of order: refused, nothing logged.
        assert!(svc.follow(2, &record(pass(1, 2_000))).is_err());
        assert_eq!(svc.log_records(), 1);
        // Not a batch: logged (its index stays taken) and set aside.
        svc.follow(1, b"not json").unwrap();
        assert_eq!(svc.log_records(), 2);
        assert_eq!(svc.quarantine().entries().len(), 1);
        svc.follow(2, &record(pass(1, 2_000))).unwrap();
        assert_eq!(
            (svc.live().now(), svc.last_batch("admin")),
            (2_000, Some(1))
        );
        // A restart replays the local log to the same state.
        let digest = svc.state_digest();
        drop(svc);
        drop(s);
        let (s, _) = Service::with_wal(empty_live(), &wal, Options::default()).unwrap();
        assert_eq!(s.lock().unwrap().state_digest(), digest);
    }
}
