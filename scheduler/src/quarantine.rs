//! Log records set aside: `<wal>.quarantine`.
//!
//! A record of the write-ahead log that cannot be replayed — its payload does not decode as
//! a batch, an event fails [`fleetsim_policies::live::LiveState::validate`], or applying it
//! panicked — is data, not a reason to stay down. The replay sets it aside here and goes
//! on without it; the state is then what it would be had the record never been logged.
//! The log file itself is left as it is (it stays the record of what was written); every
//! later replay under the same spec skips the records listed here. An entry names the
//! spec's fingerprint ([`crate::snapshot::fingerprint`]): a start under another `--spec`
//! (by mistake, say) sets aside what that spec refuses, and a start under the log's own
//! spec again replays those records, not skipping them.
//!
//! File layout: JSON lines, one per record set aside, appended and synced:
//!
//! ```json
//! {"record":3,"file":"/var/lib/fleetsim/wal","offset":1234,"bytes":57,"crc":305419896,
//!  "fingerprint":2882400001,
//!  "batch":7,"index":0,"reason":"event 0: field `job.queue`: …",
//!  "payload":"<base64 of the record's payload>"}
//! ```
//!
//! A record is identified by its index in the log and the CRC-32 of its payload, so a log
//! whose tail was cut and written again never skips a new record that happens to take an
//! old one's place; its segment file and byte offset are there for the operator. A line
//! that does not parse (a write cut by a crash) is ignored: the record it named is found
//! again and set aside again.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::wal::RecordRef;

/// One record set aside.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The record's index in the log, from 0.
    pub record: u64,
    /// The segment file holding it.
    pub file: String,
    /// Byte offset of its header in that file.
    pub offset: u64,
    /// Its payload's length, bytes.
    pub bytes: u64,
    /// CRC-32 of its payload.
    pub crc: u32,
    /// The fingerprint of the spec it was set aside under.
    pub fingerprint: u32,
    /// Its batch number, when it decoded and had one.
    pub batch: Option<u64>,
    /// The failing event's index in the batch, when one was found.
    pub index: Option<usize>,
    /// Why it was set aside.
    pub reason: String,
    /// The payload, base64 (standard alphabet, padded).
    pub payload: String,
}

/// The quarantine file of a log and the records it lists.
#[derive(Debug, Default)]
pub struct Quarantine {
    path: Option<PathBuf>,
    /// The spec's fingerprint: entries of other specs are not skipped.
    fingerprint: u32,
    keys: BTreeSet<(u64, u32)>,
    entries: Vec<Entry>,
    /// Entries added by this process (at start or since).
    added: Vec<Entry>,
    /// The last error writing the file, if any (the entry is still skipped in memory).
    write_error: Option<String>,
    /// The file ends in a line cut short: the next entry starts a new line.
    cut_line: bool,
}

/// `<wal>.quarantine`.
pub fn path_for(wal: &Path) -> PathBuf {
    crate::wal::beside(wal, ".quarantine")
}

impl Quarantine {
    /// Reads the quarantine file of the log at `wal` (none yet: empty), keeping the
    /// entries set aside under the spec of `fingerprint`.
    ///
    /// # Errors
    /// A message naming the file when it exists but cannot be read.
    pub fn open(wal: &Path, fingerprint: u32) -> Result<Quarantine, String> {
        let path = path_for(wal);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(format!("quarantine file {}: {e}", path.display())),
        };
        let mut q = Quarantine {
            path: Some(path),
            fingerprint,
            cut_line: !text.is_empty() && !text.ends_with('\n'),
            ..Quarantine::default()
        };
        for line in text.lines() {
            if let Ok(e) = serde_json::from_str::<Entry>(line) {
                if e.fingerprint == fingerprint && q.keys.insert((e.record, e.crc)) {
                    q.entries.push(e);
                }
            }
        }
        Ok(q)
    }

    /// Whether record `record` with payload CRC `crc` is set aside (under this spec).
    pub fn contains(&self, record: u64, crc: u32) -> bool {
        self.keys.contains(&(record, crc))
    }

    /// Sets a record aside: appends it to the file (synced) and skips it from now on.
    /// A write that fails is kept in [`Quarantine::write_error`]; the record is still
    /// skipped by this process, and found again by the next start.
    pub fn add(
        &mut self,
        rec: &RecordRef<'_>,
        batch: Option<u64>,
        index: Option<usize>,
        reason: String,
    ) -> Entry {
        let (record, offset, payload, crc) = (rec.index, rec.offset, rec.payload, rec.crc);
        let e = Entry {
            record,
            file: rec.segment.display().to_string(),
            offset,
            bytes: payload.len() as u64,
            crc,
            fingerprint: self.fingerprint,
            batch,
            index,
            reason,
            payload: base64::engine::general_purpose::STANDARD.encode(payload),
        };
        if let Some(path) = &self.path {
            let mut line = Vec::new();
            if self.cut_line {
                line.push(b'\n');
            }
            line.extend(serde_json::to_vec(&e).expect("an entry serializes"));
            line.push(b'\n');
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .and_then(|mut f| f.write_all(&line).and_then(|()| f.sync_data()));
            match written {
                Ok(()) => self.cut_line = false,
                Err(err) => {
                    self.write_error = Some(format!("quarantine file {}: {err}", path.display()));
                }
            }
        }
        if self.keys.insert((record, crc)) {
            self.entries.push(e.clone());
        }
        self.added.push(e.clone());
        e
    }

    /// The file's path (`None`: a service without a log).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Every record listed for this spec, in the order set aside.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The records this process set aside.
    pub fn added(&self) -> &[Entry] {
        &self.added
    }

    /// The last error writing the file.
    pub fn write_error(&self) -> Option<&str> {
        self.write_error.as_deref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_survive_a_reopen_and_a_cut_line_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let wal = dir.path().join("wal");
        let rec = |index: u64, offset: u64, payload: &'static [u8]| RecordRef {
            index,
            segment: Path::new("wal"),
            offset,
            payload,
            crc: crc32fast::hash(payload),
        };
        let mut q = Quarantine::open(&wal, 7).unwrap();
        assert!(q.entries().is_empty());
        q.add(
            &rec(2, 100, b"{\"batch\":1}"),
            Some(1),
            Some(0),
            "bad".into(),
        );
        q.add(
            &rec(5, 900, b"\xff\xfe"),
            None,
            None,
            "does not decode".into(),
        );
        assert!(q.contains(2, crc32fast::hash(b"{\"batch\":1}")));
        // The same index with another payload is another record.
        assert!(!q.contains(2, crc32fast::hash(b"other")));
        // A start under another spec does not skip them.
        let other = Quarantine::open(&wal, 8).unwrap();
        assert!(!other.contains(2, crc32fast::hash(b"{\"batch\":1}")));
        assert!(other.entries().is_empty());
        // A crash while appending leaves half a line.
        let path = path_for(&wal);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"{\"record\":7,\"off").unwrap();
        drop(f);
        let mut q2 = Quarantine::open(&wal, 7).unwrap();
        assert_eq!(q2.entries(), q.entries());
        assert!(q2.added().is_empty());
        assert_eq!(q2.entries()[1].payload, "//4=");
        // The next entry starts on a line of its own.
        q2.add(&rec(9, 2000, b"x"), None, None, "again".into());
        let q3 = Quarantine::open(&wal, 7).unwrap();
        assert_eq!(q3.entries().len(), 3);
        assert_eq!(q3.entries()[2].record, 9);
    }
}
