//! Reader of measured goodput models: one directory per training application holding
//! `placements.csv` (`placement,local_bsz,step_time,sync_time`), `scalability.csv`
//! (`num_nodes,num_replicas,local_bsz,step_time,sync_time`) and `validation-<B>.csv`
//! (`progress,iteration,metric,grad_sqr,grad_var`, one row per epoch of a run at global batch
//! size B) — the Pollux OSDI '21 artifact's layout (`shared/traces/pollux-models/SOURCE.md`).
//! The parsed rows become a [`fleetsim_policies::goodput::AppModel`].
//!
//! The artifact sets two things per application outside its tables ([`ARTIFACT_SETTINGS`]):
//! the epochs to train and, for yolov3, the largest per-GPU batch that fits in memory.

use super::TraceError;
use fleetsim_policies::goodput::{AppModel, AppSettings, EpochRow, StepRow};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// The artifact's per-application settings (`simulator/applications.py`, `APPLICATIONS`):
/// `(application, epochs to train, largest per-GPU batch size)`.
pub const ARTIFACT_SETTINGS: &[(&str, u32, Option<u32>)] = &[
    ("bert", 2, None),
    ("cifar10", 100, None),
    ("ncf", 10, None),
    ("imagenet", 90, None),
    ("deepspeech2", 80, None),
    ("yolov3", 50, Some(8)),
];

/// The artifact's settings of `app`, or the defaults (train for the shortest validation run,
/// largest measured per-GPU batch) for an application it does not name.
pub fn artifact_settings(app: &str) -> AppSettings {
    ARTIFACT_SETTINGS
        .iter()
        .find(|s| s.0 == app)
        .map(|&(_, e, m)| AppSettings {
            max_epochs: Some(e),
            max_local_bsz: m,
        })
        .unwrap_or_default()
}

/// Reads a CSV file with a header into rows of floats, in the order of `columns`.
fn read_csv(path: &Path, columns: &[&str]) -> Result<Vec<(u64, Vec<String>)>, TraceError> {
    let file = std::fs::File::open(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let capped = super::line_cap::LineCap::new(file, super::line_cap::MAX_LINE_BYTES);
    let mut lines = BufReader::new(capped).lines();
    let header = lines
        .next()
        .transpose()
        .map_err(|e| super::line_cap::io_error(path, e))?
        .unwrap_or_default();
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    let idx: Vec<usize> = columns
        .iter()
        .map(|c| {
            names
                .iter()
                .position(|h| h == c)
                .ok_or_else(|| TraceError::MissingColumn {
                    path: path.to_path_buf(),
                    column: (*c).into(),
                })
        })
        .collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    for (k, line) in lines.enumerate() {
        let line = line.map_err(|e| super::line_cap::io_error(path, e))?;
        let lineno = k as u64 + 2;
        if line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != names.len() {
            return Err(TraceError::BadRow {
                path: path.to_path_buf(),
                line: lineno,
                message: format!("{} fields, the header has {}", f.len(), names.len()),
            });
        }
        rows.push((lineno, idx.iter().map(|&i| f[i].to_string()).collect()));
    }
    Ok(rows)
}

fn num(path: &Path, line: u64, field: &str, v: &str) -> Result<f64, TraceError> {
    v.parse::<f64>()
        .ok()
        .filter(|x| x.is_finite())
        .ok_or_else(|| TraceError::field(path, line, field, format!("`{v}` is not a number")))
}

fn count(path: &Path, line: u64, field: &str, v: &str) -> Result<u32, TraceError> {
    v.parse::<u32>().ok().filter(|&x| x > 0).ok_or_else(|| {
        TraceError::field(
            path,
            line,
            field,
            format!("`{v}` is not a positive integer"),
        )
    })
}

/// Reads the application in directory `dir` (its name is the application's) with
/// `settings`.
///
/// # Errors
/// A missing or unreadable file, a missing column, a field that is not a number (naming the
/// file, line and field), a placement that is not a string of digits 1–9, or tables the model
/// refuses ([`AppModel::new`]; reported against `dir`).
pub fn read_app(dir: &Path, settings: AppSettings) -> Result<AppModel, TraceError> {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let p = dir.join("placements.csv");
    let mut placements = Vec::new();
    for (line, f) in read_csv(&p, &["placement", "local_bsz", "step_time", "sync_time"])? {
        let digits: Option<Vec<u32>> = f[0]
            .chars()
            .map(|c| c.to_digit(10).filter(|&d| d > 0))
            .collect();
        let placement = digits.filter(|d| !d.is_empty()).ok_or_else(|| {
            TraceError::field(
                &p,
                line,
                "placement",
                format!(
                    "`{}` is not a string of digits 1–9 (replicas per node)",
                    f[0]
                ),
            )
        })?;
        placements.push(StepRow {
            num_nodes: placement.len() as u32,
            num_replicas: placement.iter().sum(),
            placement,
            local_bsz: count(&p, line, "local_bsz", &f[1])?,
            step_time: num(&p, line, "step_time", &f[2])?,
            sync_time: num(&p, line, "sync_time", &f[3])?,
        });
    }
    let s = dir.join("scalability.csv");
    let mut scalability = Vec::new();
    for (line, f) in read_csv(
        &s,
        &[
            "num_nodes",
            "num_replicas",
            "local_bsz",
            "step_time",
            "sync_time",
        ],
    )? {
        scalability.push(StepRow {
            placement: Vec::new(),
            num_nodes: count(&s, line, "num_nodes", &f[0])?,
            num_replicas: count(&s, line, "num_replicas", &f[1])?,
            local_bsz: count(&s, line, "local_bsz", &f[2])?,
            step_time: num(&s, line, "step_time", &f[3])?,
            sync_time: num(&s, line, "sync_time", &f[4])?,
        });
    }
    let mut files: Vec<(u32, PathBuf)> = Vec::new();
    let entries = std::fs::read_dir(dir).map_err(|source| TraceError::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    for e in entries {
        let e = e.map_err(|source| TraceError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let fname = e.file_name().to_string_lossy().into_owned();
        if let Some(b) = fname
            .strip_prefix("validation-")
            .and_then(|r| r.strip_suffix(".csv"))
        {
            let b: u32 = b.parse().map_err(|_| {
                TraceError::field(
                    &e.path(),
                    1,
                    "file name",
                    format!("`{fname}`: the batch size is not an integer"),
                )
            })?;
            files.push((b, e.path()));
        }
    }
    files.sort();
    let mut validation = Vec::new();
    for (b, v) in files {
        let mut rows = Vec::new();
        for (line, f) in read_csv(
            &v,
            &["progress", "iteration", "metric", "grad_sqr", "grad_var"],
        )? {
            rows.push(EpochRow {
                progress: num(&v, line, "progress", &f[0])?,
                iteration: num(&v, line, "iteration", &f[1])?,
                metric: num(&v, line, "metric", &f[2])?,
                grad_sqr: num(&v, line, "grad_sqr", &f[3])?,
                grad_var: num(&v, line, "grad_var", &f[4])?,
            });
        }
        validation.push((b, rows));
    }
    AppModel::new(&name, &placements, &scalability, validation, settings).map_err(|e| {
        TraceError::BadRow {
            path: dir.to_path_buf(),
            line: 0,
            message: e.to_string(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bad_placement_names_the_file_line_and_field() {
        let d = tempfile::tempdir().unwrap();
        let app = d.path().join("toy");
        std::fs::create_dir(&app).unwrap();
        std::fs::write(
            app.join("placements.csv"),
            "placement,local_bsz,step_time,sync_time\n1,32,0.1,0.0\n1x,32,0.1,0.0\n",
        )
        .unwrap();
        std::fs::write(
            app.join("scalability.csv"),
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n",
        )
        .unwrap();
        let e = read_app(&app, AppSettings::default())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("placements.csv") && e.contains("line 3") && e.contains("placement"),
            "{e}"
        );
    }

    #[test]
    fn a_toy_application_reads_and_runs() {
        let d = tempfile::tempdir().unwrap();
        let app = d.path().join("toy");
        std::fs::create_dir(&app).unwrap();
        std::fs::write(
            app.join("placements.csv"),
            "placement,local_bsz,step_time,sync_time\n1,32,0.1,0.0\n1,64,0.2,0.0\n2,32,0.15,0.05\n2,64,0.25,0.05\n",
        )
        .unwrap();
        std::fs::write(
            app.join("scalability.csv"),
            "num_nodes,num_replicas,local_bsz,step_time,sync_time\n",
        )
        .unwrap();
        std::fs::write(
            app.join("validation-32.csv"),
            "progress,iteration,metric,grad_sqr,grad_var\n100,100,0.5,1,1\n200,200,0.6,1,1\n",
        )
        .unwrap();
        let m = read_app(&app, AppSettings::default()).unwrap();
        assert_eq!((m.max_epochs(), m.init_batch_size()), (2, 32));
        // Placement [2] at 48 samples: halfway between 0.15 and 0.25.
        let (st, sy) = m.step_time(&[2], 48.0);
        assert!((st - 0.2).abs() < 1e-12 && (sy - 0.05).abs() < 1e-12);
    }
}
