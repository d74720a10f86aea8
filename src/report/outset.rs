//! All-or-nothing output sets: a folder of files that belong together (a run's
//! `summary.json`, `jobs.csv`, `timeseries.csv`, …) is complete only when its marker
//! ([`MARKER`], or a study run's `run.json`) is present and every file it lists still has
//! the size and FNV-1a 64 digest recorded there.
//!
//! Writing a set: [`begin`] removes the marker first (from then on the folder reads as
//! incomplete), the files are written (each atomically, [`crate::report::atomic`]), and
//! [`finish`] writes the marker last, atomically. A process killed at any moment therefore
//! leaves either a complete set (old or new, never a mix: the old marker is gone before the
//! first new file lands) or a folder without a marker, which readers (`sweep --resume`,
//! `compare --resume`, `merge`) treat as absent.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The marker of a `fleetsim run` output folder and of a study's top level.
pub const MARKER: &str = "complete.json";

/// One file of a set: its size and content digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// Size, bytes.
    pub bytes: u64,
    /// FNV-1a 64 of the content, 16 hex digits.
    pub fnv1a: String,
}

/// The marker's content: the files of the set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// File name (relative to the folder, `/`-separated) → digest.
    pub files: BTreeMap<String, FileDigest>,
}

/// The digest of one file, read in 64 KiB blocks.
///
/// # Errors
/// The I/O error.
pub fn digest(path: &Path) -> io::Result<FileDigest> {
    let mut f = std::fs::File::open(path)?;
    // FNV-1a 64, fed block by block (the same value as `rng::fnv1a` of the whole file).
    let mut h = fnv::FnvHasher::default();
    let mut n = 0u64;
    let mut buf = vec![0u8; 64 << 10];
    loop {
        let k = f.read(&mut buf)?;
        if k == 0 {
            break;
        }
        n += k as u64;
        std::hash::Hasher::write(&mut h, &buf[..k]);
    }
    Ok(FileDigest {
        bytes: n,
        fnv1a: format!("{:016x}", std::hash::Hasher::finish(&h)),
    })
}

/// The digests of `names` in `dir` (names that do not exist are left out).
///
/// # Errors
/// The I/O error of a file that exists but cannot be read.
pub fn digests(dir: &Path, names: &[String]) -> io::Result<BTreeMap<String, FileDigest>> {
    let mut out = BTreeMap::new();
    for n in names {
        let p = dir.join(n);
        if p.is_file() {
            out.insert(n.clone(), digest(&p)?);
        }
    }
    Ok(out)
}

/// The files below `dir`, `/`-separated and sorted, leaving out hidden names (temporaries),
/// the marker, and the top-level folders in `skip` (a study's `runs/`, which are sets of
/// their own).
///
/// # Errors
/// The I/O error of listing a folder.
pub fn files_below(dir: &Path, skip: &[&str]) -> io::Result<Vec<String>> {
    fn walk(base: &Path, rel: &str, skip: &[&str], out: &mut Vec<String>) -> io::Result<()> {
        let at = if rel.is_empty() {
            base.to_path_buf()
        } else {
            base.join(rel)
        };
        for e in std::fs::read_dir(at)? {
            let e = e?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.')
                || (rel.is_empty() && (name == MARKER || skip.contains(&name.as_str())))
            {
                continue;
            }
            let r = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let ft = e.file_type()?;
            if ft.is_dir() {
                walk(base, &r, skip, out)?;
            } else if ft.is_file() {
                out.push(r);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(dir, "", skip, &mut out)?;
    out.sort();
    Ok(out)
}

/// Starts (re)writing the set in `dir` marked by `marker`: creates `dir` and removes the
/// marker, so that the folder reads as incomplete until [`finish`].
///
/// # Errors
/// The I/O error.
pub fn begin(dir: &Path, marker: &str) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    match std::fs::remove_file(dir.join(marker)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Completes the set: writes [`MARKER`] in `dir` listing `names` (those that exist).
///
/// # Errors
/// The I/O error.
pub fn finish(dir: &Path, names: &[String]) -> io::Result<()> {
    let m = Marker {
        files: digests(dir, names)?,
    };
    let mut text = serde_json::to_string_pretty(&m).map_err(io::Error::other)?;
    text.push('\n');
    crate::report::atomic::write_atomic(&dir.join(MARKER), text.as_bytes())
}

/// Checks `files` (as recorded in a marker) against `dir`.
///
/// # Errors
/// A reason naming the first file missing or changed.
pub fn verify_files(dir: &Path, files: &BTreeMap<String, FileDigest>) -> Result<(), String> {
    for (n, d) in files {
        let p = dir.join(n);
        match digest(&p) {
            Err(e) => return Err(format!("{}: {e}", p.display())),
            Ok(now) if now != *d => {
                return Err(format!(
                    "{} changed since the set was completed ({} bytes, digest {}; recorded {} bytes, {})",
                    p.display(),
                    now.bytes,
                    now.fnv1a,
                    d.bytes,
                    d.fnv1a
                ))
            }
            Ok(_) => {}
        }
    }
    Ok(())
}

/// Checks the set in `dir`: its [`MARKER`] is present and every file listed matches.
///
/// # Errors
/// A reason: no marker (the set was never completed, e.g. a killed run), or the first file
/// missing or changed.
pub fn verify(dir: &Path) -> Result<Marker, String> {
    let p = dir.join(MARKER);
    let text = std::fs::read_to_string(&p)
        .map_err(|e| format!("{}: not a complete output set ({e})", p.display()))?;
    let m: Marker =
        serde_json::from_str(&text).map_err(|e| format!("{}: malformed: {e}", p.display()))?;
    verify_files(dir, &m.files)?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_complete_only_with_its_marker_and_unchanged_files() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        begin(d, MARKER).unwrap();
        std::fs::write(d.join("a"), "x").unwrap();
        assert!(verify(d).unwrap_err().contains("not a complete output set"));
        finish(d, &["a".into(), "absent".into()]).unwrap();
        let m = verify(d).unwrap();
        // FNV-1a 64 of "x": (0xcbf29ce484222325 ^ 0x78) * 0x100000001b3 mod 2^64.
        assert_eq!(m.files["a"].fnv1a, "af63f54c86021707");
        assert_eq!(m.files.len(), 1);
        std::fs::write(d.join("a"), "y").unwrap();
        assert!(verify(d)
            .unwrap_err()
            .contains("changed since the set was completed"));
        // Rewriting starts by removing the marker.
        begin(d, MARKER).unwrap();
        assert!(!d.join(MARKER).exists());
    }
}
