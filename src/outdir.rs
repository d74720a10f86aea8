//! A study owns its output folder: `fleetsim sweep`, `compare` and `compact` record what they
//! wrote in a manifest, `fleetsim-output.json`, and the next study into the same folder
//! removes exactly that before it writes, so no file of an earlier run (a variant's
//! `runs/<label>/`, a plot of a cell that no longer exists) is left beside the new results.
//!
//! Rules ([`prepare`]):
//! * an absent or empty folder is used as is;
//! * a folder whose manifest is of the same kind of study is cleared of the files the manifest
//!   lists (of every file but the ones it lists as foreign when the earlier study did not
//!   finish: it may have written any of them), then used;
//! * any other non-empty folder (files no study wrote, or another kind of study's) is refused
//!   (exit code 2) unless `--force`, which clears what a manifest lists, keeps every other
//!   file and records those as `foreign`; `fleetsim sweep --resume` keeps the folder as it is.
//!
//! The manifest is written first with `complete = false` and rewritten by [`finish`] with
//! every file the study wrote (relative paths with `/`, sorted), so its content is the same
//! for the same study whatever the thread count.

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::study::BadInput;

/// The manifest's file name inside the output folder.
pub const MANIFEST: &str = "fleetsim-output.json";

/// `fleetsim-output.json`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutManifest {
    /// The study that wrote the folder: `sweep`, `compare` or `compact`.
    pub kind: String,
    /// Scenario name.
    pub scenario: String,
    /// Whether the study finished; `files` is complete only then.
    pub complete: bool,
    /// Files the study wrote, relative to the folder, sorted.
    pub files: Vec<String>,
    /// Files that were in the folder before (kept under `--force`), sorted.
    pub foreign: Vec<String>,
}

/// How [`prepare`] treats a folder that is not the same study's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Refuse a non-empty folder that no study of this kind wrote.
    Refuse,
    /// `--force`: write into it, clearing what a manifest lists and keeping the rest.
    Force,
    /// `--resume`: keep every file (a sweep skips its complete runs).
    Resume,
}

/// A prepared output folder; [`finish`] it once the study has written everything.
#[derive(Debug)]
pub struct Prepared {
    dir: PathBuf,
    manifest: OutManifest,
}

/// Every file under `dir`, as sorted relative paths with `/`, the manifest excepted.
fn list(dir: &Path) -> Result<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let abs = dir.join(&rel);
        let entries =
            std::fs::read_dir(&abs).with_context(|| format!("reading {}", abs.display()))?;
        for e in entries {
            let e = e.with_context(|| format!("reading {}", abs.display()))?;
            let r = rel.join(e.file_name());
            if e.file_type()?.is_dir() {
                stack.push(r);
            } else {
                let s = r
                    .components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect::<Vec<_>>()
                    .join("/");
                if s != MANIFEST {
                    out.insert(s);
                }
            }
        }
    }
    Ok(out)
}

/// A manifest entry as a path under `dir`, or `None` when it would leave the folder.
fn entry(dir: &Path, rel: &str) -> Option<PathBuf> {
    let p = Path::new(rel);
    p.components()
        .all(|c| matches!(c, Component::Normal(_)))
        .then(|| dir.join(p))
}

/// Removes `files` (relative) and then every directory left empty under `dir`.
fn remove(dir: &Path, files: &BTreeSet<String>) -> Result<()> {
    let mut parents = BTreeSet::new();
    for f in files {
        let Some(p) = entry(dir, f) else { continue };
        match std::fs::remove_file(&p) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("removing {}", p.display())),
        }
        let mut q = p.parent();
        while let Some(d) = q.filter(|d| d.starts_with(dir) && *d != dir) {
            parents.insert(d.to_path_buf());
            q = d.parent();
        }
    }
    // Deepest first (longer paths sort after their prefixes); a directory that still holds
    // something is kept.
    for d in parents.iter().rev() {
        let _ = std::fs::remove_dir(d);
    }
    Ok(())
}

fn read_manifest(dir: &Path) -> Option<OutManifest> {
    let text = std::fs::read_to_string(dir.join(MANIFEST)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Makes `dir` ready for a study of `kind` (see the module docs) and writes an incomplete
/// manifest.
///
/// # Errors
/// [`BadInput`] (exit code 2) for a non-empty folder that is not this kind of study's, under
/// [`Reuse::Refuse`]; I/O errors.
pub fn prepare(dir: &Path, kind: &str, scenario: &str, reuse: Reuse) -> Result<Prepared> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let old = read_manifest(dir);
    let present = list(dir)?;
    let ours = |m: &OutManifest| -> BTreeSet<String> {
        if m.complete {
            m.files.iter().cloned().collect()
        } else {
            let foreign: BTreeSet<&String> = m.foreign.iter().collect();
            present
                .iter()
                .filter(|f| !foreign.contains(f))
                .cloned()
                .collect()
        }
    };
    match (&old, reuse) {
        (_, Reuse::Resume) => {}
        (Some(m), _) if m.kind == kind => remove(dir, &ours(m))?,
        (Some(m), Reuse::Force) => remove(dir, &ours(m))?,
        (None, Reuse::Force) => {}
        (m, Reuse::Refuse) if !present.is_empty() || m.is_some() => {
            let what = match m {
                Some(m) => format!("the output of a `fleetsim {}`", m.kind),
                None => format!(
                    "{} file(s) that no fleetsim {kind} wrote (first: {})",
                    present.len(),
                    present
                        .iter()
                        .next()
                        .map(String::as_str)
                        .unwrap_or_default()
                ),
            };
            return Err(BadInput(format!(
                "{}: --out is not empty: it holds {what}; choose an empty or new --out, or pass \
                 --force to write into it (files a study wrote are removed first, others kept)",
                dir.display()
            ))
            .into());
        }
        _ => {}
    }
    let foreign: Vec<String> = match (&old, reuse) {
        // Resuming: what the earlier run did not write stays foreign, the rest stays ours.
        (Some(m), Reuse::Resume) => m.foreign.clone(),
        (None, Reuse::Resume) => Vec::new(),
        _ => list(dir)?.into_iter().collect(),
    };
    let manifest = OutManifest {
        kind: kind.to_string(),
        scenario: scenario.to_string(),
        complete: false,
        files: Vec::new(),
        foreign,
    };
    crate::study::write_json(&dir.join(MANIFEST), &manifest)
        .with_context(|| format!("writing {}", dir.join(MANIFEST).display()))?;
    Ok(Prepared {
        dir: dir.to_path_buf(),
        manifest,
    })
}

/// Records every file now in the folder but the foreign ones as the study's and marks the
/// manifest complete; returns the files written.
///
/// # Errors
/// I/O errors.
pub fn finish(p: Prepared) -> Result<Vec<String>> {
    let foreign: BTreeSet<&String> = p.manifest.foreign.iter().collect();
    let files: Vec<String> = list(&p.dir)?
        .into_iter()
        .filter(|f| !foreign.contains(f))
        .collect();
    let m = OutManifest {
        complete: true,
        files: files.clone(),
        ..p.manifest
    };
    crate::study::write_json(&p.dir.join(MANIFEST), &m)
        .with_context(|| format!("writing {}", p.dir.join(MANIFEST).display()))?;
    Ok(files)
}

/// A short account of the files written, for the "wrote …" line: the top-level files and
/// folders, with a count of the files under each folder (`runs/ (12 files)`).
pub fn describe(files: &[String]) -> String {
    let mut top: Vec<(String, usize)> = Vec::new();
    for f in files {
        let (name, nested) = match f.split_once('/') {
            Some((d, _)) => (format!("{d}/"), true),
            None => (f.clone(), false),
        };
        match top.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += usize::from(nested),
            None => top.push((name, usize::from(nested))),
        }
    }
    top.sort();
    top.iter()
        .map(|(n, c)| {
            if *c > 0 {
                format!("{n} ({c} files)")
            } else {
                n.clone()
            }
        })
        .chain(std::iter::once(MANIFEST.to_string()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(dir: &Path, rel: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }

    #[test]
    fn a_second_study_removes_what_the_first_wrote_and_nothing_else() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("out");
        let p = prepare(&d, "compare", "s", Reuse::Refuse).unwrap();
        touch(&d, "runs/a/seed-1/summary.json");
        touch(&d, "runs/b/seed-1/summary.json");
        touch(&d, "plots/occ-b.svg");
        touch(&d, "compare.json");
        let files = finish(p).unwrap();
        assert_eq!(files.len(), 4);
        assert_eq!(
            describe(&files),
            "compare.json, plots/ (1 files), runs/ (2 files), fleetsim-output.json"
        );
        // The second study writes only variant a.
        let p = prepare(&d, "compare", "s", Reuse::Refuse).unwrap();
        assert!(list(&d).unwrap().is_empty(), "{:?}", list(&d).unwrap());
        assert!(!d.join("runs").exists() && !d.join("plots").exists());
        touch(&d, "runs/a/seed-1/summary.json");
        finish(p).unwrap();
        assert_eq!(
            list(&d).unwrap().into_iter().collect::<Vec<_>>(),
            ["runs/a/seed-1/summary.json"]
        );
    }

    #[test]
    fn foreign_or_other_folders_are_refused_unless_forced() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().to_path_buf();
        touch(&d, "notes.txt");
        let e = prepare(&d, "compare", "s", Reuse::Refuse).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some(), "{e}");
        assert!(e.to_string().contains("first: notes.txt"), "{e}");
        let p = prepare(&d, "compare", "s", Reuse::Force).unwrap();
        touch(&d, "compare.json");
        assert_eq!(finish(p).unwrap(), ["compare.json"]);
        // A sweep into a compare's folder is refused; forced, it removes the compare's files.
        let e = prepare(&d, "sweep", "s", Reuse::Refuse).unwrap_err();
        assert!(e.to_string().contains("`fleetsim compare`"), "{e}");
        let _p = prepare(&d, "sweep", "s", Reuse::Force).unwrap();
        assert_eq!(
            list(&d).unwrap().into_iter().collect::<Vec<_>>(),
            ["notes.txt"]
        );
    }

    #[test]
    fn an_unfinished_study_is_cleared_whole_but_its_foreign_files() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().to_path_buf();
        touch(&d, "mine.txt");
        let _p = prepare(&d, "compare", "s", Reuse::Force).unwrap();
        touch(&d, "runs/a/seed-1/timeseries.csv");
        // Interrupted: no finish. The next compare removes the partial run, keeps mine.txt.
        let p = prepare(&d, "compare", "s", Reuse::Refuse).unwrap();
        assert_eq!(
            list(&d).unwrap().into_iter().collect::<Vec<_>>(),
            ["mine.txt"]
        );
        assert_eq!(p.manifest.foreign, ["mine.txt"]);
    }

    #[test]
    fn manifest_entries_outside_the_folder_are_ignored() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("out");
        touch(t.path(), "keep.txt");
        std::fs::create_dir_all(&d).unwrap();
        let m = OutManifest {
            kind: "compare".into(),
            scenario: "s".into(),
            complete: true,
            files: vec!["../keep.txt".into()],
            foreign: vec![],
        };
        crate::study::write_json(&d.join(MANIFEST), &m).unwrap();
        prepare(&d, "compare", "s", Reuse::Refuse).unwrap();
        assert!(t.path().join("keep.txt").exists());
    }
}
