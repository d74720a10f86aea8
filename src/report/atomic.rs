//! Atomic output files: written to a temporary file in the target directory, renamed into
//! place when complete, so a reader never sees a half-written file and a failed run leaves
//! the previous file (or none), never a truncated one.
//!
//! Every temporary that exists is listed in a process-wide registry, so that an interrupted
//! process removes them: [`install_signal_cleanup`] (called once by the CLI) removes every
//! listed temporary on SIGINT or SIGTERM and exits with 128 + the signal number (130, 143).
//! A temporary is created while the registry is locked, so none is created after the
//! cleanup has run. A process killed outright (SIGKILL) leaves its temporaries;
//! [`remove_stale`] removes them on the next run into the same directory.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The temporaries that exist now.
static LIVE: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

fn live() -> MutexGuard<'static, BTreeSet<PathBuf>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The temporary `dest` is written through: `.<name>.tmp` beside it.
pub fn temporary_of(dest: &Path) -> PathBuf {
    let name = dest
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    dest.with_file_name(format!(".{name}.tmp"))
}

/// Removes every temporary that exists now; returns how many were removed. Called on a
/// signal; also usable before an orderly exit.
pub fn remove_live_temporaries() -> usize {
    let mut l = live();
    let n = l.iter().filter(|p| std::fs::remove_file(p).is_ok()).count();
    l.clear();
    n
}

/// Removes `.<name>.tmp` beside each of `dests` if it exists (left by a process killed
/// before it could clean up); returns how many were removed.
pub fn remove_stale(dests: &[PathBuf]) -> usize {
    dests
        .iter()
        .map(|d| temporary_of(d))
        .filter(|t| !live().contains(t) && std::fs::remove_file(t).is_ok())
        .count()
}

/// On SIGINT and SIGTERM, removes every temporary ([`remove_live_temporaries`]) and exits
/// with status 128 + the signal number. Installs a listener thread once; later calls do
/// nothing. A no-op on platforms without Unix signals.
pub fn install_signal_cleanup() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGINT, SIGTERM};
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM]) else {
                return;
            };
            let _ = std::thread::Builder::new()
                .name("signal-cleanup".into())
                .spawn(move || {
                    if let Some(sig) = signals.forever().next() {
                        // Hold the registry: no new temporary is created from here on.
                        let mut l = live();
                        for p in l.iter() {
                            let _ = std::fs::remove_file(p);
                        }
                        l.clear();
                        std::process::exit(128 + sig);
                    }
                });
        });
    }
}

/// A file being written; [`AtomicFile::commit`] renames it into place, dropping it without
/// committing removes the temporary.
pub struct AtomicFile {
    tmp: PathBuf,
    dest: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `dest` (through `.<name>.tmp` beside it).
    ///
    /// # Errors
    /// The I/O error from creating the temporary file.
    pub fn create(dest: &Path) -> std::io::Result<AtomicFile> {
        let tmp = temporary_of(dest);
        let writer = {
            let mut l = live();
            let f = File::create(&tmp)?;
            l.insert(tmp.clone());
            BufWriter::new(f)
        };
        Ok(AtomicFile {
            tmp,
            dest: dest.to_path_buf(),
            writer: Some(writer),
        })
    }

    /// The writer.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer.as_mut().expect("not yet committed")
    }

    /// Flushes, syncs and renames into place.
    ///
    /// # Errors
    /// The I/O error from flushing or renaming.
    pub fn commit(mut self) -> std::io::Result<()> {
        let w = self.writer.take().expect("not yet committed");
        let file = w.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        let mut l = live();
        let r = std::fs::rename(&self.tmp, &self.dest);
        if r.is_ok() {
            l.remove(&self.tmp);
        } else {
            drop(l);
            let _ = std::fs::remove_file(&self.tmp);
            live().remove(&self.tmp);
        }
        r
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer().write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer().flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            let mut l = live();
            let _ = std::fs::remove_file(&self.tmp);
            l.remove(&self.tmp);
        }
    }
}

/// Writes `bytes` to `dest` atomically.
///
/// # Errors
/// The I/O error from writing or renaming.
pub fn write_atomic(dest: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = AtomicFile::create(dest)?;
    f.writer().write_all(bytes)?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temporaries_are_registered_until_committed_and_stale_ones_removed() {
        let d = tempfile::tempdir().unwrap();
        let dest = d.path().join("jobs.csv");
        let mut f = AtomicFile::create(&dest).unwrap();
        f.writer().write_all(b"x").unwrap();
        let tmp = d.path().join(".jobs.csv.tmp");
        assert!(tmp.exists() && live().contains(&tmp));
        // A live temporary is not stale.
        assert_eq!(remove_stale(std::slice::from_ref(&dest)), 0);
        f.commit().unwrap();
        assert!(!tmp.exists() && !live().contains(&tmp) && dest.exists());
        // One left by a killed process is.
        std::fs::write(&tmp, "partial").unwrap();
        assert_eq!(remove_stale(&[dest]), 1);
        assert!(!tmp.exists());
    }
}
