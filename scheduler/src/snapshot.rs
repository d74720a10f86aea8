//! Snapshots of the service's state, so that a restart reads the latest snapshot and
//! replays only the log records after it (the target: restart from a 1,000,000-event log in
//! ≤ 5 s, whatever the fleet's load; replaying a saturated fleet's log repeats every
//! scheduling pass).
//!
//! With `serve --snapshot-every N`, after an accepted batch brings the events since the last
//! snapshot to `N` or more, the service writes `<log>.snapshot` beside the write-ahead log:
//! to `<log>.snapshot.tmp`, `fsync`, the old snapshot renamed `<log>.snapshot.prev`, the new
//! one renamed into place, the directory synced. A crash at any point leaves a whole
//! snapshot (the new one, or the old one as `.snapshot` or `.prev`); a write that fails
//! removes its temporary file. A start uses `.snapshot`, else `.prev`; one that cannot be
//! used is reported and the log replayed from the start. Log segments wholly covered by the
//! previous snapshot may be deleted after the operator's retention
//! ([`crate::wal::Wal::delete_covered`]), so the newest snapshot has a fallback whose
//! records are all still in the log.
//!
//! File layout:
//!
//! | bytes | field |
//! |---|---|
//! | 8 | magic `FSSNAP02` (its last two characters are the format's version) |
//! | 8 | payload length `n`, little-endian `u64` |
//! | 4 | CRC-32 (IEEE, as `crc32fast`) of the payload, little-endian |
//! | n | payload: [`Meta`], then the live state ([`LiveState::save`]), both in postcard |
//!
//! A snapshot is used only when it is whole (magic, length, CRC), was taken of a state
//! built from the same spec (the [`fingerprint`] of the state before any event), and the
//! log still holds the last record it covers unchanged (its index and CRC), with every
//! record after it.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use fleetsim_policies::live::LiveState;
use serde::{Deserialize, Serialize};

/// The file's first 8 bytes (the format's version is its last two).
pub const MAGIC: &[u8; 8] = b"FSSNAP02";
/// Bytes before the payload: magic, length, CRC.
pub const HEADER_BYTES: usize = 20;

/// What a snapshot records about the service beside the live state.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Meta {
    /// [`fingerprint`] of the state the service started from (its spec and fleet).
    pub fingerprint: u32,
    /// Log records (batches) the state includes: the first `wal_records` of the log.
    pub wal_records: u64,
    /// CRC-32 of the last included record's payload (0 when `wal_records` is 0).
    pub last_record_crc: u32,
    /// Events in the included records.
    pub events: u64,
    /// The last accepted batch number of each principal.
    pub last_batch: std::collections::BTreeMap<String, u64>,
    /// One above the largest job `seq` applied.
    pub next_seq: u64,
    /// Sequence number of the first retained decision.
    pub first_retained: u64,
    /// The retained decisions (for `GET /v1/decisions`), as a JSON array.
    pub decisions_json: Vec<u8>,
    /// The jobs that ended in the window (for `GET /v1/jobs/{id}`), as JSON.
    pub ended_json: Vec<u8>,
}

/// Where the snapshot of the log at `wal` is kept: `<wal>.snapshot`.
pub fn path_for(wal: &Path) -> PathBuf {
    crate::wal::beside(wal, ".snapshot")
}

/// Where the snapshot before the latest is kept: `<wal>.snapshot.prev`.
pub fn prev_path_for(wal: &Path) -> PathBuf {
    crate::wal::beside(wal, ".snapshot.prev")
}

/// Serializes a live state through [`LiveState::save`].
struct Saved<'a>(&'a LiveState);

impl Serialize for Saved<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.save(s)
    }
}

/// CRC-32 of `live`'s serialized state followed by `policy_digest`: called on the state
/// built from the spec before any event, it identifies the spec and fleet a snapshot
/// belongs to (queues, quota, settings, nodes, models, the seed; the policy objects, which
/// the state leaves out, through `policy_digest`).
///
/// # Errors
/// The serializer's message (a state that does not serialize).
pub fn fingerprint(live: &LiveState, policy_digest: u32) -> Result<u32, String> {
    Ok(fingerprint_of(&state_bytes(live)?, policy_digest))
}

/// [`fingerprint`] of a state already serialized by [`state_bytes`].
pub fn fingerprint_of(state: &[u8], policy_digest: u32) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(state);
    h.update(&policy_digest.to_le_bytes());
    h.finalize()
}

/// `live`'s state ([`LiveState::save`]) in postcard: what [`restore_state`] puts back.
///
/// # Errors
/// The serializer's message.
pub fn state_bytes(live: &LiveState) -> Result<Vec<u8>, String> {
    postcard::to_allocvec(&Saved(live)).map_err(|e| e.to_string())
}

/// Puts the state serialized by [`state_bytes`] back into `live` (built from the same spec:
/// its policy objects are kept).
///
/// # Errors
/// The bytes do not decode, or are of another fleet.
pub fn restore_state(live: &mut LiveState, state: &[u8]) -> Result<(), String> {
    let decoded = LiveState::decode(&mut postcard::Deserializer::from_bytes(state))
        .map_err(|e| e.to_string())?;
    live.adopt(decoded)
}

/// CRC-32 of a spec's `[policy]` table as JSON: every stage's choice and setting
/// (placement, queue order and its LAS thresholds, cell selection, …), less
/// `cycle.retry_interval_s`. That one only paces the simulator's engine (the service runs
/// a pass on every batch), so like the scenario's name it does not change what the
/// service decides and a change to it keeps a snapshot valid.
pub fn policy_digest(policy: &fleetsim_policies::SchedulerSpec) -> u32 {
    let mut policy = policy.clone();
    if let Some(c) = &mut policy.cycle {
        c.retry_interval_s = None;
    }
    if policy.cycle == Some(Default::default()) {
        policy.cycle = None;
    }
    crc32fast::hash(&serde_json::to_vec(&policy).expect("a policy spec serializes"))
}

/// Writes the snapshot of `live` with `meta` to `path` (see the module docs); returns its
/// size, bytes.
///
/// # Errors
/// Serialization, or I/O on the temporary file, the rename or the directory sync.
pub fn write(path: &Path, meta: &Meta, live: &LiveState) -> io::Result<u64> {
    let mut payload = postcard::to_allocvec(meta).map_err(io::Error::other)?;
    payload = postcard::to_extend(&Saved(live), payload).map_err(io::Error::other)?;
    let tmp = crate::wal::beside(path, ".tmp");
    let at = |p: &Path, what: &str| {
        let p = p.display().to_string();
        let what = what.to_string();
        move |e: io::Error| io::Error::new(e.kind(), format!("{what} {p}: {e}"))
    };
    let written = File::create(&tmp)
        .map_err(at(&tmp, "creating"))
        .and_then(|mut f| {
            f.write_all(MAGIC)
                .and_then(|()| f.write_all(&(payload.len() as u64).to_le_bytes()))
                .and_then(|()| f.write_all(&crc32fast::hash(&payload).to_le_bytes()))
                .and_then(|()| f.write_all(&payload))
                .and_then(|()| f.sync_all())
                .map_err(at(&tmp, "writing"))
        });
    if let Err(e) = written {
        // Leave nothing behind (a full disk keeps no half snapshot): the next write makes
        // a new one.
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    let prev = crate::wal::beside(path, ".prev");
    match std::fs::rename(path, &prev) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(at(path, "renaming")(e));
        }
    }
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(at(&tmp, "renaming")(e));
    }
    crate::wal::sync_dir(path)?;
    Ok((HEADER_BYTES + payload.len()) as u64)
}

/// Reads the snapshot at `path`: `Ok(None)` when there is none, else its payload once the
/// magic, length and CRC check out.
///
/// # Errors
/// A message naming the file: unreadable, not a snapshot, cut short, or a CRC mismatch.
pub fn read(path: &Path) -> Result<Option<Vec<u8>>, String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("snapshot {}: {e}", path.display())),
    };
    let bad = |why: String| Err(format!("snapshot {}: {why}", path.display()));
    if bytes.len() >= HEADER_BYTES && bytes[..6] == MAGIC[..6] && bytes[..8] != MAGIC[..] {
        return bad(format!(
            "a snapshot of another format version ({}; this build reads {})",
            String::from_utf8_lossy(&bytes[..8]),
            String::from_utf8_lossy(MAGIC)
        ));
    }
    if bytes.len() < HEADER_BYTES || &bytes[..8] != MAGIC {
        return bad("not a fleetsim-scheduler snapshot (no FSSNAP02 header)".into());
    }
    let n = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
    let crc = u32::from_le_bytes(bytes[16..20].try_into().expect("4 bytes"));
    let payload = &bytes[HEADER_BYTES..];
    if payload.len() as u64 != n {
        return bad(format!(
            "payload is {} bytes, header says {n}",
            payload.len()
        ));
    }
    if crc32fast::hash(payload) != crc {
        return bad("CRC mismatch".into());
    }
    Ok(Some(payload.to_vec()))
}

/// Checks `payload` (from [`read`]) against the service's start state, then loads its
/// state into `live`; returns its [`Meta`] and retained decisions. `live` is changed only
/// on success. Whether the log still holds what it covers is the caller's to check
/// ([`Meta::wal_records`], [`Meta::last_record_crc`]) as it reads the log.
///
/// * `fingerprint`: of `live` as built from the spec ([`fingerprint`]).
///
/// # Errors
/// Why the snapshot cannot be used: another spec or fleet, or a payload that does not
/// decode whole.
pub fn load<D: serde::de::DeserializeOwned>(
    payload: &[u8],
    live: &mut LiveState,
    fingerprint: u32,
) -> Result<(Meta, Vec<D>), String> {
    let mut de = postcard::Deserializer::from_bytes(payload);
    let meta = Meta::deserialize(&mut de).map_err(|e| {
        format!("its metadata (fingerprint, log position, decisions) does not decode: {e}")
    })?;
    if meta.fingerprint != fingerprint {
        return Err(format!(
            "taken of another spec or fleet (fingerprint {:08x}; this one {fingerprint:08x})",
            meta.fingerprint
        ));
    }
    let decisions: Vec<D> =
        serde_json::from_slice(&meta.decisions_json).map_err(|e| format!("its decisions: {e}"))?;
    // Decoded whole, and checked for bytes left over, before `live` changes.
    let decoded = LiveState::decode(&mut de).map_err(|e| format!("its live state: {e}"))?;
    let left = de.finalize().map_err(|e| format!("its live state: {e}"))?;
    if !left.is_empty() {
        return Err(format!("{} bytes after its live state", left.len()));
    }
    live.adopt(decoded)
        .map_err(|e| format!("its live state: {e}"))?;
    Ok((meta, decisions))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Attack 8 (the threat model): a snapshot write that failed on a full disk left
    /// `<wal>.snapshot.tmp` behind. The temporary file is a link to `/dev/full` here, so
    /// that every write to it fails with "no space left on device".
    #[test]
    fn a_failed_snapshot_leaves_its_tmp_on_the_full_disk() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let path = path_for(&wal);
        let tmp = crate::wal::beside(&path, ".tmp");
        std::os::unix::fs::symlink("/dev/full", &tmp).unwrap();
        let fleet =
            fleetsim_policies::FleetState::new(vec!["c".into()], vec!["G".into()], vec![]).unwrap();
        let sched = fleetsim_policies::Scheduler::new(Default::default(), vec![]);
        let live = LiveState::new(sched, fleet, vec![]);
        let meta = Meta {
            fingerprint: 0,
            wal_records: 0,
            last_record_crc: 0,
            events: 0,
            last_batch: Default::default(),
            next_seq: 0,
            first_retained: 0,
            decisions_json: b"[]".to_vec(),
            ended_json: b"{}".to_vec(),
        };
        let e = write(&path, &meta, &live).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::StorageFull, "{e}");
        assert!(!tmp.exists() && std::fs::symlink_metadata(&tmp).is_err());
        assert!(!path.exists());
        // On a disk with room the next write succeeds; the one after keeps it as `.prev`.
        write(&path, &meta, &live).unwrap();
        write(&path, &meta, &live).unwrap();
        assert!(path.exists() && prev_path_for(&wal).exists() && !tmp.exists());
    }
}
