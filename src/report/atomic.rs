//! Atomic output files: written to a temporary file in the target directory, renamed into
//! place when complete, so a reader never sees a half-written file and a failed run leaves
//! the previous file (or none), never a truncated one.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

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
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        let tmp = dest.with_file_name(format!(".{name}.tmp"));
        let writer = BufWriter::new(File::create(&tmp)?);
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
        std::fs::rename(&self.tmp, &self.dest)
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
            let _ = std::fs::remove_file(&self.tmp);
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
