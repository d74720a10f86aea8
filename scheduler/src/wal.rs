//! The write-ahead log (issue 21 item 4): every accepted batch is appended, and made
//! durable with one `fsync` (`File::sync_data`), before the service answers it.
//!
//! File layout: a sequence of records, nothing else. One record is
//!
//! | bytes | field |
//! |---|---|
//! | 4 | payload length `n`, little-endian `u32` (1 ≤ n ≤ [`MAX_RECORD_BYTES`]) |
//! | 4 | CRC-32 (IEEE, as `crc32fast`) of the payload, little-endian |
//! | n | payload (the service writes one batch as JSON) |
//!
//! On open the records are read in order; the first one whose header is incomplete, whose
//! length is out of range, whose payload is cut short or whose CRC does not match ends the
//! log: the records before it are kept, the defect is reported ([`TailDefect`]), and the
//! file is truncated to the end of the last good record so that new appends follow it.

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Bytes of a record header (length + CRC).
pub const HEADER_BYTES: usize = 8;
/// Largest payload accepted, bytes (64 MiB: a batch is bounded by the request body limit,
/// 1 MiB by default). A larger length field marks a corrupt record.
pub const MAX_RECORD_BYTES: u32 = 64 << 20;

/// Why the log's tail was cut off on open.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TailDefect {
    /// Byte offset of the bad record (= the file's length after truncation).
    pub offset: u64,
    /// The file's length before truncation, bytes.
    pub file_bytes: u64,
    /// Number of good records kept before it.
    pub records_kept: u64,
    /// What was wrong, e.g. `payload cut short: 12 of 40 bytes`.
    pub reason: String,
    /// Where the cut bytes were saved (`<log>.cut-at-<offset>`) before the truncation, for
    /// an operator to inspect: a flipped byte mid-log also cuts the good records after it.
    /// `None` when saving them failed (the truncation then still happens).
    pub saved_to: Option<String>,
}

impl std::fmt::Display for TailDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bad record at byte {} of {} ({}); kept the {} records before it and truncated the log there",
            self.offset, self.file_bytes, self.reason, self.records_kept
        )?;
        match &self.saved_to {
            Some(p) => write!(
                f,
                "; the {} bytes cut are saved in {p}",
                self.file_bytes - self.offset
            ),
            None => write!(f, "; the bytes cut could not be saved"),
        }
    }
}

/// `path` with `suffix` appended to its file name (`wal` → `wal.snapshot`): the files the
/// service keeps beside its log.
pub fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Splits `bytes` into good record payloads; returns them, the length of the good prefix,
/// and the defect that ended it, if any.
pub fn scan(bytes: &[u8]) -> (Vec<&[u8]>, u64, Option<TailDefect>) {
    let mut out = Vec::new();
    let mut at = 0usize;
    let defect = loop {
        let rest = &bytes[at..];
        if rest.is_empty() {
            break None;
        }
        if rest.len() < HEADER_BYTES {
            break Some(format!(
                "header cut short: {} of {HEADER_BYTES} bytes",
                rest.len()
            ));
        }
        let len = u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        if len == 0 || len > MAX_RECORD_BYTES {
            break Some(format!("length {len} out of range 1..={MAX_RECORD_BYTES}"));
        }
        let body = &rest[HEADER_BYTES..];
        if body.len() < len as usize {
            break Some(format!("payload cut short: {} of {len} bytes", body.len()));
        }
        let payload = &body[..len as usize];
        let got = crc32fast::hash(payload);
        if got != crc {
            break Some(format!(
                "CRC mismatch: stored {crc:#010x}, computed {got:#010x}"
            ));
        }
        out.push(payload);
        at += HEADER_BYTES + len as usize;
    };
    let defect = defect.map(|reason| TailDefect {
        offset: at as u64,
        file_bytes: bytes.len() as u64,
        records_kept: out.len() as u64,
        reason,
        saved_to: None,
    });
    (out, at as u64, defect)
}

/// The good records of the log at `path`, read without changing the file (a bad tail is
/// left out, not cut).
///
/// # Errors
/// I/O errors reading the file.
pub fn read_records(path: &Path) -> io::Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path)?;
    Ok(scan(&bytes).0.into_iter().map(<[u8]>::to_vec).collect())
}

/// The encoded form of one record (header + payload).
///
/// # Panics
/// If `payload` is empty or longer than [`MAX_RECORD_BYTES`] (the service never writes one).
pub fn encode(payload: &[u8]) -> Vec<u8> {
    assert!(
        !payload.is_empty() && payload.len() <= MAX_RECORD_BYTES as usize,
        "WAL record of {} bytes",
        payload.len()
    );
    let mut v = Vec::with_capacity(HEADER_BYTES + payload.len());
    v.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    v.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    v.extend_from_slice(payload);
    v
}

/// An open log, positioned after its last good record.
pub struct Wal {
    file: File,
    path: PathBuf,
    bytes: u64,
    records: u64,
    /// CRC-32 of the last record's payload (0 for an empty log).
    last_crc: u32,
}

/// What [`Wal::open`] found.
pub struct Opened {
    /// The log, ready for appends.
    pub wal: Wal,
    /// The good records' payloads, in order.
    pub records: Vec<Vec<u8>>,
    /// The defect that cut the tail, if any (the file is already truncated).
    pub defect: Option<TailDefect>,
}

impl Wal {
    /// Opens (creating if absent) the log at `path`, reads its good records and truncates a
    /// bad tail (see the module docs).
    ///
    /// # Errors
    /// I/O errors opening, reading, truncating or syncing the file.
    pub fn open(path: &Path) -> io::Result<Opened> {
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let (good, good_len, mut defect) = scan(&bytes);
        let records: Vec<Vec<u8>> = good.into_iter().map(<[u8]>::to_vec).collect();
        let last_crc = records.last().map_or(0, |r| crc32fast::hash(r));
        if let Some(d) = &mut defect {
            let cut = beside(path, &format!(".cut-at-{good_len}"));
            let saved = File::create(&cut).and_then(|mut f| {
                f.write_all(&bytes[good_len as usize..])
                    .and_then(|()| f.sync_all())
            });
            d.saved_to = saved.ok().map(|()| cut.display().to_string());
        }
        drop(bytes);
        if defect.is_some() {
            file.set_len(good_len)?;
            file.sync_data()?;
        }
        file.seek(SeekFrom::Start(good_len))?;
        Ok(Opened {
            wal: Wal {
                file,
                path: path.to_path_buf(),
                bytes: good_len,
                records: records.len() as u64,
                last_crc,
            },
            records,
            defect,
        })
    }

    /// Appends one record and waits until it is durable (`sync_data`).
    ///
    /// # Errors
    /// I/O errors writing or syncing; the file is then cut back to its length before the
    /// call (best effort) so a half-written record cannot precede later ones.
    pub fn append(&mut self, payload: &[u8]) -> io::Result<()> {
        let rec = encode(payload);
        let r = self
            .file
            .write_all(&rec)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = r {
            let _ = self.file.set_len(self.bytes);
            let _ = self.file.seek(SeekFrom::Start(self.bytes));
            return Err(e);
        }
        self.bytes += rec.len() as u64;
        self.records += 1;
        self.last_crc = u32::from_le_bytes(rec[4..8].try_into().expect("a header"));
        Ok(())
    }

    /// The log's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of good records in the file.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Number of records in the file.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// CRC-32 of the last record's payload (0 for an empty log).
    pub fn last_crc(&self) -> u32 {
        self.last_crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payloads() -> Vec<Vec<u8>> {
        vec![
            b"{\"batch\":0}".to_vec(),
            vec![7u8; 300],
            b"last record".to_vec(),
        ]
    }

    fn write_all(path: &Path) -> Vec<u64> {
        let mut w = Wal::open(path).unwrap().wal;
        let mut ends = Vec::new();
        for p in payloads() {
            w.append(&p).unwrap();
            ends.push(w.bytes());
        }
        ends
    }

    #[test]
    fn round_trip_and_reopen_appends_after_the_last_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let ends = write_all(&path);
        // 3 records: 8-byte headers + 11, 300, 11 payload bytes.
        assert_eq!(ends, vec![19, 327, 346]);
        let o = Wal::open(&path).unwrap();
        assert_eq!(o.records, payloads());
        assert_eq!(o.defect, None);
        assert_eq!((o.wal.bytes(), o.wal.records()), (346, 3));
        let mut w = o.wal;
        w.append(b"four").unwrap();
        let o = Wal::open(&path).unwrap();
        assert_eq!(o.records.len(), 4);
        assert_eq!(o.records[3], b"four");
    }

    #[test]
    fn truncated_tail_at_every_offset_keeps_earlier_records() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let ends = write_all(&path);
        let full = std::fs::read(&path).unwrap();
        let start = ends[1];
        for cut in start + 1..ends[2] {
            std::fs::write(&path, &full[..cut as usize]).unwrap();
            let o = Wal::open(&path).unwrap();
            assert_eq!(o.records, payloads()[..2].to_vec(), "cut at {cut}");
            let d = o.defect.expect("a cut tail is reported");
            assert_eq!(
                (d.offset, d.file_bytes, d.records_kept),
                (start, cut, 2),
                "cut at {cut}"
            );
            let want = if cut - start < 8 {
                format!("header cut short: {} of 8 bytes", cut - start)
            } else {
                format!("payload cut short: {} of 11 bytes", cut - start - 8)
            };
            assert_eq!(d.reason, want);
            // Truncated to the last good record: a new append is readable after it.
            assert_eq!(std::fs::metadata(&path).unwrap().len(), start);
            let mut w = o.wal;
            w.append(b"again").unwrap();
            let o = Wal::open(&path).unwrap();
            assert_eq!(o.defect, None);
            assert_eq!(o.records.len(), 3);
            assert_eq!(o.records[2], b"again");
        }
        // Cut exactly at a record boundary: nothing to report.
        std::fs::write(&path, &full[..start as usize]).unwrap();
        let o = Wal::open(&path).unwrap();
        assert_eq!((o.records.len(), o.defect), (2, None));
    }

    #[test]
    fn flipped_byte_is_reported_and_earlier_records_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let ends = write_all(&path);
        let full = std::fs::read(&path).unwrap();
        // Flip a byte in the second record's payload (offset 19 + 8 + 5).
        let mut bad = full.clone();
        bad[19 + 8 + 5] ^= 0x40;
        std::fs::write(&path, &bad).unwrap();
        let o = Wal::open(&path).unwrap();
        assert_eq!(o.records, payloads()[..1].to_vec());
        let d = o.defect.unwrap();
        assert_eq!((d.offset, d.file_bytes, d.records_kept), (19, 346, 1));
        assert!(d.reason.starts_with("CRC mismatch"), "{}", d.reason);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 19);
        // The cut bytes, good third record included, are saved beside the log.
        let saved = dir.path().join("wal.cut-at-19");
        assert_eq!(d.saved_to, Some(saved.display().to_string()));
        assert_eq!(std::fs::read(&saved).unwrap(), bad[19..]);
        assert!(d.to_string().ends_with(&format!(
            "; the 327 bytes cut are saved in {}",
            saved.display()
        )));
        // A length field flipped out of range in the last record.
        let mut bad = full;
        bad[ends[1] as usize + 3] = 0xff;
        std::fs::write(&path, &bad).unwrap();
        let o = Wal::open(&path).unwrap();
        assert_eq!(o.records.len(), 2);
        let d = o.defect.unwrap();
        assert_eq!(d.offset, ends[1]);
        assert!(d.reason.starts_with("length "), "{}", d.reason);
    }
}
