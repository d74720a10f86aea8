//! `fleetsim merge`: joins the output directories of a sweep's shards into one directory
//! whose `runs.csv` (and report) is byte-identical to an unsharded sweep's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::{header, read_manifest, write_report, write_runs_csv};
use crate::study::{self, BadInput};

/// What a merge did.
#[derive(Clone, Debug)]
pub struct MergeOutcome {
    /// Runs in the merged sweep.
    pub runs: usize,
    /// Input directories.
    pub inputs: usize,
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    let mut entries: Vec<_> = std::fs::read_dir(from)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let p = e.path();
        if p.is_file() {
            let bytes = std::fs::read(&p)?;
            crate::report::atomic::write_atomic(&to.join(e.file_name()), &bytes)?;
        }
    }
    Ok(())
}

/// Merges shard directories `inputs` into `out` (which may be one of them).
///
/// # Errors
/// [`BadInput`] when the inputs are of different sweeps, a run appears twice with different
/// results, a `runs.csv` has another header, a run's folder is missing or fails its digest
/// check, or runs are missing; I/O errors.
pub fn merge(inputs: &[PathBuf], out: &Path, png: bool) -> Result<MergeOutcome> {
    if inputs.is_empty() {
        return Err(BadInput("merge needs at least one sweep directory".into()).into());
    }
    let manifest_of = |d: &PathBuf| {
        read_manifest(d).map_err(|e| {
            BadInput(format!(
                "{} is not the output directory of `fleetsim sweep`: {e:#}",
                d.display()
            ))
        })
    };
    let manifest = manifest_of(&inputs[0])?;
    for d in &inputs[1..] {
        let m = manifest_of(d)?;
        if m != manifest {
            return Err(BadInput(format!(
                "{} and {} hold different sweeps (scenario `{}` digest {} vs `{}` digest {})",
                inputs[0].display(),
                d.display(),
                manifest.scenario,
                manifest.digest,
                m.scenario,
                m.digest
            ))
            .into());
        }
    }
    // Only complete shards: a shard killed or failed has no top-level marker (or a file
    // changed since), and its runs.csv may be of an older attempt.
    for d in inputs {
        crate::report::outset::verify(d).map_err(|e| {
            BadInput(format!(
                "{} is not a complete sweep ({e}); rerun that shard with --resume",
                d.display()
            ))
        })?;
    }
    let head = header(&manifest);
    let mut rows: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for d in inputs {
        let p = d.join("runs.csv");
        let mut r =
            csv::Reader::from_path(&p).with_context(|| format!("reading {}", p.display()))?;
        let h: Vec<String> = r
            .headers()
            .with_context(|| format!("reading {}", p.display()))?
            .iter()
            .map(str::to_string)
            .collect();
        if h != head {
            return Err(BadInput(format!("{}: unexpected header", p.display())).into());
        }
        for rec in r.records() {
            let rec: Vec<String> = rec
                .with_context(|| format!("reading {}", p.display()))?
                .iter()
                .map(str::to_string)
                .collect();
            let idx: usize = rec[0]
                .parse()
                .map_err(|_| BadInput(format!("{}: bad run_index `{}`", p.display(), rec[0])))?;
            if idx >= manifest.runs {
                return Err(BadInput(format!(
                    "{}: run_index {idx} is beyond the sweep's {} runs",
                    p.display(),
                    manifest.runs
                ))
                .into());
            }
            // Every row's run folder must be complete and unchanged since it was written, as
            // the shard's own top-level marker is: a torn set is refused, never merged.
            let folder = d
                .join("runs")
                .join(format!("{idx:05}-{}", study::safe_name(&rec[1])));
            if super::complete_run(&folder, &rec[1], idx).is_none() {
                return Err(BadInput(format!(
                    "{}: run {idx} ({}) is listed in runs.csv but its folder is missing or fails verification (a file changed or is missing since the run was written); rerun that shard with --resume",
                    folder.display(),
                    rec[1]
                ))
                .into());
            }
            if let Some(old) = rows.get(&idx) {
                if *old != rec {
                    return Err(BadInput(format!(
                        "run {idx} ({}) has different results in two inputs",
                        rec[1]
                    ))
                    .into());
                }
            }
            rows.insert(idx, rec);
        }
    }
    if rows.len() != manifest.runs {
        let missing: Vec<String> = (0..manifest.runs)
            .filter(|i| !rows.contains_key(i))
            .take(5)
            .map(|i| i.to_string())
            .collect();
        return Err(BadInput(format!(
            "{} of {} runs are missing (e.g. run_index {}); merge every shard's directory",
            manifest.runs - rows.len(),
            manifest.runs,
            missing.join(", ")
        ))
        .into());
    }
    std::fs::create_dir_all(out.join("runs"))
        .with_context(|| format!("creating {}", out.display()))?;
    crate::report::outset::begin(out, crate::report::outset::MARKER)
        .with_context(|| format!("writing {}", out.display()))?;
    let out_canon = out.canonicalize().ok();
    for d in inputs {
        if d.canonicalize().ok() == out_canon {
            continue;
        }
        let runs = d.join("runs");
        let Ok(rd) = std::fs::read_dir(&runs) else {
            continue;
        };
        let mut names: Vec<_> = rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect();
        names.sort();
        for n in names {
            let from = runs.join(&n);
            let complete = std::fs::read_to_string(from.join("run.json"))
                .ok()
                .and_then(|t| serde_json::from_str::<super::RunJson>(&t).ok())
                .is_some_and(|rj| super::complete_run(&from, &rj.id, rj.index).is_some());
            if complete {
                copy_dir(&from, &out.join("runs").join(&n))
                    .with_context(|| format!("copying {}", from.display()))?;
            }
        }
    }
    study::write_json(&out.join("sweep.json"), &manifest)?;
    let rows: Vec<Vec<String>> = rows.into_values().collect();
    write_runs_csv(&out.join("runs.csv"), &head, &rows)?;
    write_report(out, &manifest, &rows, png)?;
    super::complete_top_level(out)?;
    Ok(MergeOutcome {
        runs: rows.len(),
        inputs: inputs.len(),
    })
}
