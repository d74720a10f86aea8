//! Elastic scenarios: a strict TOML file naming the fleet's cells, the sizing policy, the
//! resize overhead and the workload — either jobs inline (`[[jobs]]`, the native elastic
//! format) or a Pollux workload file (`[trace]`, by `path` or `public_path`).
//!
//! ```toml
//! mode = "elastic"              # required: marks the file as an elastic scenario
//! policy = "grow-idle"          # or "fixed" (every job at its min)
//! resize_overhead_s = 30
//! cells = [64]                  # whole GPUs per cell
//! [trace]
//! format = "pollux"
//! public_path = "pollux-workloads/load-1.0/workload-1.csv"
//! sizing = "elastic"            # or "rigid"
//! ```
//!
//! An inline job: `{ name, submit_s, priority (default 0), min, max, work_gpu_s,
//! throughput = { kind = "linear" | "amdahl" (serial_fraction) | "table" (speedup = [s(1), s(2), …]) } }`.
//! Unknown keys are refused; `mode` is required and must be `elastic`.

use super::pollux::{self, Sizing};
use super::sim::{
    overhead_from_secs, ElasticConfig, ElasticError, ElasticJob, MAX_SECONDS, MAX_WORK_GPU_S,
};
use super::throughput::ThroughputModel;
use crate::scenario::TraceDir;
use fleetsim_policies::{ElasticKind, SimDuration, SimTime};
use std::path::{Path, PathBuf};

/// An elastic scenario as read. See the module docs.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ElasticScenario {
    /// Must be `elastic` (what tells `fleetsim run` / `validate` this is an elastic file).
    pub mode: String,
    /// Sizing policy (default `grow-idle`).
    #[serde(default)]
    pub policy: ElasticKind,
    /// No-progress time after each resize, seconds (≥ 0).
    #[serde(default)]
    pub resize_overhead_s: f64,
    /// Whole GPUs of each cell.
    pub cells: Vec<u32>,
    /// A Pollux workload file.
    #[serde(default)]
    pub trace: Option<PolluxTrace>,
    /// Inline jobs.
    #[serde(default)]
    pub jobs: Vec<InlineJob>,
}

/// `[trace]`: a Pollux workload file.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PolluxTrace {
    /// Must be `pollux`.
    pub format: String,
    /// Path relative to the scenario file.
    #[serde(default)]
    pub path: Option<String>,
    /// Path under the public trace directory.
    #[serde(default)]
    pub public_path: Option<String>,
    /// `elastic` or `rigid`.
    pub sizing: Sizing,
}

/// One inline job (`[[jobs]]`).
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InlineJob {
    /// Name.
    pub name: String,
    /// Submission, seconds.
    pub submit_s: u64,
    /// Priority, higher first.
    #[serde(default)]
    pub priority: i32,
    /// Fewest GPUs.
    pub min: u32,
    /// Most GPUs.
    pub max: u32,
    /// Work, GPU-seconds at size 1.
    pub work_gpu_s: u64,
    /// Throughput model.
    pub throughput: ThroughputModel,
}

/// Reads `file`, resolving a `public_path` under `trace_dir`; returns the config and jobs
/// (validated by [`super::sim::validate`]).
///
/// # Errors
/// A message naming the file and the field: unreadable or unknown keys (TOML error with its
/// line), `mode` missing or not `elastic`, neither or both of `[trace]` and `[[jobs]]`, a bad
/// trace path or format, bad values.
pub fn load(file: &Path, trace_dir: &TraceDir) -> anyhow::Result<(ElasticConfig, Vec<ElasticJob>)> {
    let origin = file.display().to_string();
    let text =
        crate::input_cap::read_capped(file, crate::input_cap::MAX_SCENARIO_BYTES, "scenario file")
            .map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    let s: ElasticScenario = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{origin}: {e}"))?;
    if s.mode != "elastic" {
        anyhow::bail!(
            "{origin}: field `mode`: `{}` is not `elastic` (an elastic scenario file needs `mode = \"elastic\"`)",
            s.mode
        );
    }
    let bad = |e: ElasticError| anyhow::anyhow!("{origin}: {e}");
    let resize_overhead: SimDuration = overhead_from_secs(s.resize_overhead_s).map_err(bad)?;
    let cfg = ElasticConfig {
        kind: s.policy,
        resize_overhead,
        cells: s.cells.clone(),
    };
    let jobs = match (&s.trace, s.jobs.is_empty()) {
        (Some(t), true) => {
            if t.format != "pollux" {
                anyhow::bail!(
                    "{origin}: field `trace.format`: `{}` is not supported here (only `pollux`)",
                    t.format
                );
            }
            let base = file.parent().unwrap_or(Path::new("."));
            let p = resolve(&origin, base, t, trace_dir)?;
            pollux::read(&p, t.sizing)?
        }
        (None, false) => s
            .jobs
            .iter()
            .map(|j| {
                let over = |field: &str, v: u64, max: u64| {
                    anyhow::anyhow!(
                        "{origin}: job `{}`: field `{field}`: {v} is above the limit of {max}",
                        j.name
                    )
                };
                if j.submit_s > MAX_SECONDS {
                    return Err(over("submit_s", j.submit_s, MAX_SECONDS));
                }
                if j.work_gpu_s > MAX_WORK_GPU_S {
                    return Err(over("work_gpu_s", j.work_gpu_s, MAX_WORK_GPU_S));
                }
                Ok(ElasticJob {
                    name: j.name.clone(),
                    submit: SimTime::from_secs(j.submit_s),
                    priority: j.priority,
                    min: j.min,
                    max: j.max,
                    work_gpu_ms: j.work_gpu_s * 1000,
                    model: j.throughput.clone(),
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?,
        _ => anyhow::bail!("{origin}: give exactly one of `[trace]` and `[[jobs]]`"),
    };
    super::sim::validate(&cfg, &jobs).map_err(bad)?;
    Ok((cfg, jobs))
}

fn resolve(origin: &str, base: &Path, t: &PolluxTrace, dir: &TraceDir) -> anyhow::Result<PathBuf> {
    match (&t.path, &t.public_path) {
        (Some(p), None) => Ok(base.join(p)),
        (None, Some(p)) => {
            let rel = Path::new(p);
            if p.is_empty()
                || rel.is_absolute()
                || rel
                    .components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                anyhow::bail!("{origin}: field `trace.public_path`: `{p}` must be a relative path inside the trace directory, without `..`");
            }
            let full = dir.0.join(rel);
            let canon = full.canonicalize().map_err(|_| {
                anyhow::anyhow!(
                    "{origin}: field `trace.public_path`: `{}` does not exist (trace directory `{}`: --trace-dir, else $FLEETSIM_TRACE_DIR, else traces/public)",
                    full.display(),
                    dir.0.display()
                )
            })?;
            let root = dir.0.canonicalize()?;
            if !canon.starts_with(&root) {
                anyhow::bail!("{origin}: field `trace.public_path`: `{}` resolves outside the trace directory", full.display());
            }
            Ok(canon)
        }
        _ => anyhow::bail!("{origin}: field `trace`: give exactly one of `path` and `public_path`"),
    }
}
