//! The write-ahead log: every accepted batch is appended, and made
//! durable with one `fsync` (`File::sync_data`), before the service answers it.
//!
//! Record layout: a sequence of records, nothing else. One record is
//!
//! | bytes | field |
//! |---|---|
//! | 4 | payload length `n`, little-endian `u32` (1 ≤ n ≤ [`MAX_RECORD_BYTES`]) |
//! | 4 | CRC-32 (IEEE, as `crc32fast`) of the payload, little-endian |
//! | n | payload (the service writes one batch as JSON) |
//!
//! **Segments.** The log is cut into files: the first is the log's own path (`--wal`), the
//! others `<wal>.<i>`, `i` the index of their first record in 20 digits. Appends go to the
//! last; once it holds [`DEFAULT_SEGMENT_BYTES`] (or the service's setting) the next
//! append starts a new one. Record indices run over the whole log. A segment whose records
//! a snapshot covers can be deleted ([`Wal::delete_covered`]; the first file, the one the
//! lock is on, is emptied instead): the log is then the record of truth from that snapshot
//! on.
//!
//! **Reading** is streaming ([`Log::reader`]): one record in memory at a time, and a reader
//! that starts at record `i` skips the segments wholly before it unread. The first record
//! whose header is incomplete, whose length is out of range, whose payload is cut short or
//! whose CRC does not match ends the log: the records before it are kept, the defect is
//! reported ([`TailDefect`]), the bytes from it to its segment's end are saved beside it
//! (`<segment>.cut-at-<offset>`), later segments are set aside (`<segment>.cut`), and the
//! segment is truncated there so that new appends follow the last good record.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Bytes of a record header (length + CRC).
pub const HEADER_BYTES: usize = 8;
/// Largest payload accepted, bytes (64 MiB: a batch is bounded by the request body limit,
/// 1 MiB by default). A larger length field marks a corrupt record.
pub const MAX_RECORD_BYTES: u32 = 64 << 20;
/// Default size at which the log starts a new segment, bytes (64 MiB).
pub const DEFAULT_SEGMENT_BYTES: u64 = 64 << 20;

/// Why the log's tail was cut off on open.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TailDefect {
    /// The segment file the bad record is in.
    pub file: String,
    /// Byte offset of the bad record in it (= the file's length after truncation).
    pub offset: u64,
    /// The file's length before truncation, bytes.
    pub file_bytes: u64,
    /// Number of good records kept before it (over the whole log).
    pub records_kept: u64,
    /// What was wrong, e.g. `payload cut short: 12 of 40 bytes`.
    pub reason: String,
    /// Where the cut bytes were saved (`<segment>.cut-at-<offset>`) before the truncation,
    /// for an operator to inspect: a flipped byte mid-log also cuts the good records after
    /// it. `None` when saving them failed (the truncation then still happens).
    pub saved_to: Option<String>,
    /// Later segments set aside (renamed `<segment>.cut`), when the defect was not in the
    /// last one.
    pub later_segments: Vec<String>,
}

impl std::fmt::Display for TailDefect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bad record at byte {} of {} of {} ({}); kept the {} records before it and truncated the log there",
            self.offset, self.file_bytes, self.file, self.reason, self.records_kept
        )?;
        match &self.saved_to {
            Some(p) => write!(
                f,
                "; the {} bytes cut are saved in {p}",
                self.file_bytes - self.offset
            )?,
            None => write!(f, "; the bytes cut could not be saved")?,
        }
        if !self.later_segments.is_empty() {
            write!(
                f,
                "; the later segments are set aside as {}",
                self.later_segments.join(", ")
            )?;
        }
        Ok(())
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
/// and the defect that ended it, if any (its `file` left empty).
pub fn scan(bytes: &[u8]) -> (Vec<&[u8]>, u64, Option<TailDefect>) {
    let mut out = Vec::new();
    let mut at = 0usize;
    let defect = loop {
        let rest = &bytes[at..];
        if rest.is_empty() {
            break None;
        }
        match check_record(rest) {
            Ok(len) => {
                out.push(&rest[HEADER_BYTES..HEADER_BYTES + len]);
                at += HEADER_BYTES + len;
            }
            Err(why) => break Some(why),
        }
    };
    let defect = defect.map(|reason| TailDefect {
        file: String::new(),
        offset: at as u64,
        file_bytes: bytes.len() as u64,
        records_kept: out.len() as u64,
        reason,
        saved_to: None,
        later_segments: Vec::new(),
    });
    (out, at as u64, defect)
}

/// The payload length of the whole, good record at the start of `rest`, or what is wrong.
fn check_record(rest: &[u8]) -> Result<usize, String> {
    if rest.len() < HEADER_BYTES {
        return Err(format!(
            "header cut short: {} of {HEADER_BYTES} bytes",
            rest.len()
        ));
    }
    let len = u32::from_le_bytes(rest[0..4].try_into().expect("4 bytes"));
    let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
    if len == 0 || len > MAX_RECORD_BYTES {
        return Err(format!("length {len} out of range 1..={MAX_RECORD_BYTES}"));
    }
    let body = &rest[HEADER_BYTES..];
    if body.len() < len as usize {
        return Err(format!("payload cut short: {} of {len} bytes", body.len()));
    }
    let got = crc32fast::hash(&body[..len as usize]);
    if got != crc {
        return Err(format!(
            "CRC mismatch: stored {crc:#010x}, computed {got:#010x}"
        ));
    }
    Ok(len as usize)
}

/// The good records of the log at `path` (every segment), read without changing any file
/// (a bad tail is left out, not cut). Holds them all: for tests and tools, not the service.
///
/// # Errors
/// I/O errors reading the files.
pub fn read_records(path: &Path) -> io::Result<Vec<Vec<u8>>> {
    let mut log = Log::open_read_only(path)?;
    let mut out = Vec::new();
    let mut r = log.reader(0);
    while let Some(rec) = r.next()? {
        out.push(rec.payload.to_vec());
    }
    Ok(out)
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

/// One segment file: the index of its first record and its path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    /// Index of its first record in the whole log.
    pub base: u64,
    /// Its file.
    pub path: PathBuf,
}

/// Where a reader that read to the end found it.
#[derive(Clone, Copy, Debug)]
struct End {
    /// Index of the last segment.
    segment: usize,
    /// Bytes of good records in it.
    offset: u64,
    /// Records in the whole log.
    records: u64,
    /// CRC-32 of the last record's payload (0: none read, or none).
    last_crc: u32,
}

/// The log's segment files as found on disk, before it is read ([`Log::reader`]) and
/// turned into the appender ([`Log::into_wal`]).
pub struct Log {
    path: PathBuf,
    segments: Vec<Segment>,
    read_only: bool,
    defect: Option<TailDefect>,
    end: Option<End>,
}

/// The segment path of the log at `wal` whose first record is `base`.
pub fn segment_path(wal: &Path, base: u64) -> PathBuf {
    if base == 0 {
        wal.to_path_buf()
    } else {
        beside(wal, &format!(".{base:020}"))
    }
}

impl Log {
    /// Finds the segments of the log at `path` (creating the first file when absent).
    ///
    /// # Errors
    /// I/O errors creating the file or listing its directory.
    pub fn open(path: &Path) -> io::Result<Log> {
        OpenOptions::new().create(true).append(true).open(path)?;
        Log::find(path, false)
    }

    /// As [`Log::open`], changing no file: a reader stops at a defect without cutting.
    ///
    /// # Errors
    /// I/O errors listing the directory.
    pub fn open_read_only(path: &Path) -> io::Result<Log> {
        Log::find(path, true)
    }

    fn find(path: &Path, read_only: bool) -> io::Result<Log> {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path
            .file_name()
            .ok_or_else(|| io::Error::other("the log's path has no file name"))?
            .to_string_lossy()
            .into_owned();
        let mut segments = vec![Segment {
            base: 0,
            path: path.to_path_buf(),
        }];
        for e in std::fs::read_dir(&dir)? {
            let e = e?;
            let f = e.file_name().to_string_lossy().into_owned();
            let Some(digits) = f
                .strip_prefix(name.as_str())
                .and_then(|r| r.strip_prefix('.'))
            else {
                continue;
            };
            if digits.len() == 20 && digits.bytes().all(|b| b.is_ascii_digit()) {
                let base: u64 = digits.parse().map_err(io::Error::other)?;
                if base > 0 {
                    segments.push(Segment {
                        base,
                        path: e.path(),
                    });
                }
            }
        }
        segments.sort_by_key(|s| s.base);
        Ok(Log {
            path: path.to_path_buf(),
            segments,
            read_only,
            defect: None,
            end: None,
        })
    }

    /// The segments, in order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Index of the first record the files still hold: the first segment that is not
    /// empty, else the last segment's base (0 for a new log). Records before it were
    /// deleted once a snapshot covered them.
    pub fn first_record(&self) -> u64 {
        self.segments
            .iter()
            .find(|s| std::fs::metadata(&s.path).is_ok_and(|m| m.len() > 0))
            .or(self.segments.last())
            .map_or(0, |s| s.base)
    }

    /// The defect a reader found and cut, if any.
    pub fn defect(&self) -> Option<&TailDefect> {
        self.defect.as_ref()
    }

    /// A reader from record `from` on (the first records it returns may be earlier:
    /// it starts at the start of the segment holding `from`).
    pub fn reader(&mut self, from: u64) -> Reader<'_> {
        let seg = self
            .segments
            .iter()
            .rposition(|s| s.base <= from)
            .unwrap_or(0);
        let index = self.segments[seg].base;
        Reader {
            log: self,
            seg,
            file: None,
            offset: 0,
            index,
            last_crc: 0,
            buf: Vec::new(),
            done: false,
        }
    }

    /// The appender, positioned after the last good record. A reader must have read to
    /// the end first (that is where the end is found and a bad tail cut).
    ///
    /// # Errors
    /// I/O errors opening the last segment; `InvalidInput` when no reader reached the end.
    pub fn into_wal(self, segment_bytes: u64) -> io::Result<Wal> {
        let Some(end) = self.end else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the log was not read to its end",
            ));
        };
        let seg = &self.segments[end.segment];
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&seg.path)?;
        file.seek(SeekFrom::Start(end.offset))?;
        let mut segments = self.segments;
        segments.truncate(end.segment + 1);
        let retained = segments
            .iter()
            .map(|s| std::fs::metadata(&s.path).map_or(0, |m| m.len()))
            .sum();
        Ok(Wal {
            path: self.path,
            segments,
            file,
            end: end.offset,
            records: end.records,
            last_crc: end.last_crc,
            segment_bytes: segment_bytes.max(1),
            retained_bytes: retained,
        })
    }

    /// Cuts the log at `offset` of segment `seg` (the first record there is bad): saves the
    /// bytes cut, sets later segments aside, truncates.
    fn cut(&mut self, seg: usize, offset: u64, records: u64, reason: String) -> io::Result<()> {
        let path = self.segments[seg].path.clone();
        let file_bytes = std::fs::metadata(&path).map_or(offset, |m| m.len());
        let mut d = TailDefect {
            file: path.display().to_string(),
            offset,
            file_bytes,
            records_kept: records,
            reason,
            saved_to: None,
            later_segments: Vec::new(),
        };
        if self.read_only {
            self.defect = Some(d);
            return Ok(());
        }
        let cut = beside(&path, &format!(".cut-at-{offset}"));
        let saved = (|| -> io::Result<()> {
            let mut src = File::open(&path)?;
            src.seek(SeekFrom::Start(offset))?;
            let mut dst = File::create(&cut)?;
            io::copy(&mut src, &mut dst)?;
            dst.sync_all()
        })();
        d.saved_to = saved.ok().map(|()| cut.display().to_string());
        for later in self.segments.drain(seg + 1..) {
            let aside = beside(&later.path, ".cut");
            std::fs::rename(&later.path, &aside)?;
            d.later_segments.push(aside.display().to_string());
        }
        let f = OpenOptions::new().write(true).open(&path)?;
        f.set_len(offset)?;
        f.sync_data()?;
        self.defect = Some(d);
        Ok(())
    }
}

/// One record read by a [`Reader`].
pub struct RecordRef<'a> {
    /// Its index in the whole log.
    pub index: u64,
    /// Its segment's file.
    pub segment: &'a Path,
    /// Its header's byte offset in that file.
    pub offset: u64,
    /// The payload.
    pub payload: &'a [u8],
    /// CRC-32 of the payload.
    pub crc: u32,
}

/// Reads a [`Log`] record by record (see the module docs).
pub struct Reader<'a> {
    log: &'a mut Log,
    seg: usize,
    file: Option<BufReader<File>>,
    offset: u64,
    index: u64,
    last_crc: u32,
    buf: Vec<u8>,
    /// At the end (or a defect): no more records.
    done: bool,
}

/// Reads into `buf` until it is full or the file ends; returns the bytes read.
fn read_full(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

impl Reader<'_> {
    /// The next good record, or `None` at the end of the log (or at a defect, which is cut
    /// unless the log is read-only: see [`Log::defect`]).
    ///
    /// # Errors
    /// I/O errors reading, cutting or setting segments aside.
    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> io::Result<Option<RecordRef<'_>>> {
        loop {
            if self.done {
                return Ok(None);
            }
            if self.file.is_none() {
                let path = &self.log.segments[self.seg].path;
                let f = match File::open(path) {
                    Ok(f) => f,
                    Err(e) if e.kind() == io::ErrorKind::NotFound && self.log.read_only => {
                        File::open("/dev/null")?
                    }
                    Err(e) => return Err(e),
                };
                self.file = Some(BufReader::with_capacity(1 << 16, f));
                self.offset = 0;
            }
            let file = self.file.as_mut().expect("opened above");
            let mut head = [0u8; HEADER_BYTES];
            let got = read_full(file, &mut head)?;
            if got == 0 {
                // The segment's end: the next one must start at the next record.
                if self.seg + 1 < self.log.segments.len() {
                    let next = self.log.segments[self.seg + 1].base;
                    if next != self.index {
                        let why = format!(
                            "the next segment, {}, starts at record {next}; this one ends at record {}",
                            self.log.segments[self.seg + 1].path.display(),
                            self.index
                        );
                        return self.stop(why);
                    }
                    self.seg += 1;
                    self.file = None;
                    continue;
                }
                self.finish();
                return Ok(None);
            }
            if got < HEADER_BYTES {
                return self.stop(format!("header cut short: {got} of {HEADER_BYTES} bytes"));
            }
            let len = u32::from_le_bytes(head[0..4].try_into().expect("4 bytes"));
            let crc = u32::from_le_bytes(head[4..8].try_into().expect("4 bytes"));
            if len == 0 || len > MAX_RECORD_BYTES {
                return self.stop(format!("length {len} out of range 1..={MAX_RECORD_BYTES}"));
            }
            self.buf.resize(len as usize, 0);
            let got = read_full(file, &mut self.buf)?;
            if got < len as usize {
                return self.stop(format!("payload cut short: {got} of {len} bytes"));
            }
            let computed = crc32fast::hash(&self.buf);
            if computed != crc {
                return self.stop(format!(
                    "CRC mismatch: stored {crc:#010x}, computed {computed:#010x}"
                ));
            }
            let at = self.offset;
            self.offset += (HEADER_BYTES + len as usize) as u64;
            self.index += 1;
            self.last_crc = crc;
            return Ok(Some(RecordRef {
                index: self.index - 1,
                segment: &self.log.segments[self.seg].path,
                offset: at,
                payload: &self.buf,
                crc,
            }));
        }
    }

    /// The log ends here, after the records read.
    fn finish(&mut self) {
        self.log.end = Some(End {
            segment: self.seg,
            offset: self.offset,
            records: self.index,
            last_crc: self.last_crc,
        });
        self.file = None;
        self.done = true;
    }

    /// A bad record at the current position: the log is cut there.
    fn stop(&mut self, why: String) -> io::Result<Option<RecordRef<'_>>> {
        self.file = None;
        self.done = true;
        self.log.cut(self.seg, self.offset, self.index, why)?;
        self.log.end = Some(End {
            segment: self.seg,
            offset: self.offset,
            records: self.index,
            last_crc: self.last_crc,
        });
        Ok(None)
    }

    /// Index of the next record to be read.
    pub fn position(&self) -> u64 {
        self.index
    }
}

/// An open log, positioned after its last good record.
pub struct Wal {
    path: PathBuf,
    segments: Vec<Segment>,
    file: File,
    /// Bytes of records in the last segment.
    end: u64,
    /// Records in the whole log (the next record's index).
    records: u64,
    /// CRC-32 of the last record's payload (0 for an empty log).
    last_crc: u32,
    segment_bytes: u64,
    /// Bytes of the segments still on disk.
    retained_bytes: u64,
}

impl Wal {
    /// Opens the log at `path` and reads it to its end (cutting a bad tail), for a caller
    /// that does not replay it.
    ///
    /// # Errors
    /// I/O errors.
    pub fn open(path: &Path) -> io::Result<Wal> {
        let mut log = Log::open(path)?;
        let from = log.segments.last().map_or(0, |s| s.base);
        let mut r = log.reader(from);
        while r.next()?.is_some() {}
        log.into_wal(DEFAULT_SEGMENT_BYTES)
    }

    /// Appends one record and waits until it is durable (`sync_data`). Starts a new
    /// segment first when the last one holds the segment size.
    ///
    /// # Errors
    /// I/O errors writing or syncing; the file is then cut back to its length before the
    /// call (best effort) so a half-written record cannot precede later ones.
    pub fn append(&mut self, payload: &[u8]) -> io::Result<()> {
        if self.end >= self.segment_bytes {
            self.rotate()?;
        }
        let rec = encode(payload);
        let r = self
            .file
            .write_all(&rec)
            .and_then(|()| self.file.sync_data());
        if let Err(e) = r {
            let _ = self.file.set_len(self.end);
            let _ = self.file.seek(SeekFrom::Start(self.end));
            return Err(e);
        }
        self.end += rec.len() as u64;
        self.retained_bytes += rec.len() as u64;
        self.records += 1;
        self.last_crc = u32::from_le_bytes(rec[4..8].try_into().expect("a header"));
        Ok(())
    }

    /// Starts a new segment at the next record.
    fn rotate(&mut self) -> io::Result<()> {
        let path = segment_path(&self.path, self.records);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)?;
        sync_dir(&path)?;
        self.file = file;
        self.end = 0;
        self.segments.push(Segment {
            base: self.records,
            path,
        });
        Ok(())
    }

    /// Deletes the segments whose every record is below `covered` (a snapshot holds them),
    /// except the last; the first file is emptied rather than deleted (the service's lock
    /// is on it). Returns the files deleted or emptied.
    ///
    /// # Errors
    /// I/O errors deleting, truncating or syncing.
    pub fn delete_covered(&mut self, covered: u64) -> io::Result<Vec<PathBuf>> {
        let mut gone = Vec::new();
        let n = self.segments.len();
        let mut keep = Vec::new();
        for i in 0..n {
            let s = &self.segments[i];
            let whole = i + 1 < n && self.segments[i + 1].base <= covered;
            if !whole {
                keep.push(s.clone());
                continue;
            }
            let len = std::fs::metadata(&s.path).map_or(0, |m| m.len());
            if s.base == 0 {
                if len > 0 {
                    let f = OpenOptions::new().write(true).open(&s.path)?;
                    f.set_len(0)?;
                    f.sync_data()?;
                    gone.push(s.path.clone());
                }
                keep.push(s.clone());
            } else {
                std::fs::remove_file(&s.path)?;
                gone.push(s.path.clone());
            }
            self.retained_bytes = self.retained_bytes.saturating_sub(len);
        }
        if !gone.is_empty() {
            sync_dir(&self.path)?;
        }
        self.segments = keep;
        Ok(gone)
    }

    /// The log's path (its first segment).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the log's segments still on disk.
    pub fn bytes(&self) -> u64 {
        self.retained_bytes
    }

    /// Number of records in the log (the next record's index), deleted ones included.
    pub fn records(&self) -> u64 {
        self.records
    }

    /// CRC-32 of the last record's payload (0 for an empty log).
    pub fn last_crc(&self) -> u32 {
        self.last_crc
    }

    /// The segments on disk, in order.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Sets the size at which a new segment starts, bytes.
    pub fn set_segment_bytes(&mut self, bytes: u64) {
        self.segment_bytes = bytes.max(1);
    }
}

/// Syncs the directory holding `path` (a created, renamed or deleted entry is durable).
pub fn sync_dir(path: &Path) -> io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    File::open(dir)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Opened {
        wal: Wal,
        records: Vec<Vec<u8>>,
        defect: Option<TailDefect>,
    }

    /// The log read whole from record 0, as the service's replay reads it.
    fn open_all(path: &Path) -> Opened {
        let mut log = Log::open(path).unwrap();
        let mut records = Vec::new();
        let mut r = log.reader(0);
        while let Some(rec) = r.next().unwrap() {
            records.push(rec.payload.to_vec());
        }
        let defect = log.defect().cloned();
        Opened {
            wal: log.into_wal(DEFAULT_SEGMENT_BYTES).unwrap(),
            records,
            defect,
        }
    }

    fn payloads() -> Vec<Vec<u8>> {
        vec![
            b"{\"batch\":0}".to_vec(),
            vec![7u8; 300],
            b"last record".to_vec(),
        ]
    }

    fn write_all(path: &Path) -> Vec<u64> {
        let mut w = open_all(path).wal;
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
        let o = open_all(&path);
        assert_eq!(o.records, payloads());
        assert_eq!(o.defect, None);
        assert_eq!((o.wal.bytes(), o.wal.records()), (346, 3));
        let mut w = o.wal;
        w.append(b"four").unwrap();
        let o = open_all(&path);
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
            let o = open_all(&path);
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
            let o = open_all(&path);
            assert_eq!(o.defect, None);
            assert_eq!(o.records.len(), 3);
            assert_eq!(o.records[2], b"again");
        }
        // Cut exactly at a record boundary: nothing to report.
        std::fs::write(&path, &full[..start as usize]).unwrap();
        let o = open_all(&path);
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
        let o = open_all(&path);
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
        let o = open_all(&path);
        assert_eq!(o.records.len(), 2);
        let d = o.defect.unwrap();
        assert_eq!(d.offset, ends[1]);
        assert!(d.reason.starts_with("length "), "{}", d.reason);
    }

    /// Ten 100-byte records in segments of 250 bytes: 3 records (324 bytes) to a segment
    /// before the next append starts a new one.
    fn segmented(path: &Path) -> Wal {
        let mut w = open_all(path).wal;
        w.set_segment_bytes(250);
        for i in 0..10u8 {
            w.append(&[i; 100]).unwrap();
        }
        w
    }

    #[test]
    fn segments_are_read_as_one_log_and_a_reader_skips_those_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let w = segmented(&path);
        let bases: Vec<u64> = w.segments().iter().map(|s| s.base).collect();
        assert_eq!(bases, vec![0, 3, 6, 9]);
        assert_eq!(
            w.segments()[1].path,
            dir.path().join("wal.00000000000000000003")
        );
        assert_eq!((w.records(), w.bytes()), (10, 1080));
        drop(w);
        let o = open_all(&path);
        let want: Vec<Vec<u8>> = (0..10u8).map(|i| vec![i; 100]).collect();
        assert_eq!((o.records, o.defect), (want, None));
        // From record 7: the segment holding it (records 6..9) on, the others unread.
        let mut log = Log::open(&path).unwrap();
        let mut r = log.reader(7);
        let mut seen = Vec::new();
        while let Some(rec) = r.next().unwrap() {
            seen.push((rec.index, rec.offset, rec.payload[0]));
        }
        assert_eq!(seen, vec![(6, 0, 6), (7, 108, 7), (8, 216, 8), (9, 0, 9)]);
        // A second reader reads again from where it starts.
        let mut r = log.reader(0);
        let mut n = 0;
        while r.next().unwrap().is_some() {
            n += 1;
        }
        assert_eq!(n, 10);
        // Appends after a reopen go on in the last segment.
        let mut w = log.into_wal(250).unwrap();
        w.append(&[10; 100]).unwrap();
        assert_eq!(read_records(&path).unwrap().len(), 11);
    }

    #[test]
    fn covered_segments_are_deleted_and_the_first_file_emptied() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        let mut w = segmented(&path);
        // Records 0..7 covered: segments [0, 3) and [3, 6) whole, [6, 9) not.
        let gone = w.delete_covered(7).unwrap();
        assert_eq!(
            gone,
            vec![path.clone(), dir.path().join("wal.00000000000000000003")]
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
        assert_eq!(w.bytes(), 1080 - 2 * 324);
        drop(w);
        let mut log = Log::open(&path).unwrap();
        assert_eq!(log.first_record(), 6);
        let mut r = log.reader(6);
        let mut n = 0;
        while let Some(rec) = r.next().unwrap() {
            assert_eq!(rec.index, 6 + n);
            n += 1;
        }
        assert_eq!(n, 4);
        // A reader from 0 finds the emptied first file and the gap after it: the log
        // is read from the first record it still holds, never across a gap.
        let mut log = Log::open_read_only(&path).unwrap();
        let mut r = log.reader(0);
        assert!(r.next().unwrap().is_none());
        assert!(log.defect().unwrap().reason.contains("starts at record 6"));
    }

    #[test]
    fn a_bad_record_in_a_middle_segment_sets_the_later_ones_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("wal");
        drop(segmented(&path));
        let mid = dir.path().join("wal.00000000000000000003");
        let mut bytes = std::fs::read(&mid).unwrap();
        bytes[108 + 8 + 50] ^= 1; // record 4's payload
        std::fs::write(&mid, &bytes).unwrap();
        let o = open_all(&path);
        assert_eq!(o.records.len(), 4);
        let d = o.defect.unwrap();
        assert_eq!((d.offset, d.records_kept), (108, 4));
        assert_eq!(
            d.later_segments,
            vec![
                dir.path()
                    .join("wal.00000000000000000006.cut")
                    .display()
                    .to_string(),
                dir.path()
                    .join("wal.00000000000000000009.cut")
                    .display()
                    .to_string(),
            ]
        );
        assert_eq!(std::fs::metadata(&mid).unwrap().len(), 108);
        // Appends continue after record 3.
        let mut w = o.wal;
        w.append(b"next").unwrap();
        drop(w);
        let o = open_all(&path);
        assert_eq!((o.records.len(), o.defect), (5, None));
    }
}
