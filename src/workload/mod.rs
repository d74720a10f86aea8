//! Workloads: the job model, one reader module per trace format, and the synthetic generator.
//! Every source yields [`JobSpec`]s in non-decreasing submit order (readers of unsorted
//! formats sort, and say so).

pub mod alibaba_dlrm;
pub mod alibaba_openb;
pub mod alibaba_pai;
pub mod error;
pub mod goodput_models;
pub mod helios;
pub mod inspect;
pub mod job;
pub mod line_cap;
pub mod native;
pub mod philly;
pub mod philly_raw;
pub mod pollux;
pub mod rows;
pub mod slurm_sacct;
pub mod swf;
pub mod synthetic;
pub mod throughput;
pub mod timefmt;
pub mod tiresias;

use std::collections::BTreeMap;

pub use error::TraceError;
pub use job::{ElasticSpec, JobSpec, RecordedKind, RecordedOutcome, SizedSpec, TrainedSpec};
pub use rows::TraceStream;
pub use throughput::ThroughputModel;

/// Rows a reader skipped by its format's documented convention, counted by reason
/// (snake_case reason → rows). Reported in `summary.json`.
pub type Skipped = BTreeMap<String, u64>;

/// The absolute time that a trace's t = 0 stands for (reported as `trace_start` in
/// `summary.json`). Times in every output are seconds from this instant; the workload
/// transforms never move t = 0 (`transform_window` drops jobs without shifting the rest,
/// `arrival_rate_scale` compresses the gaps after the first kept job, so after that job the
/// run's times no longer map to the trace's calendar one to one).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct TraceStart {
    /// `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339, UTC) when `utc_offset_known`; else the trace's own
    /// wall-clock time `YYYY-MM-DDTHH:MM:SS` with no offset (not an instant: its zone and DST
    /// are whatever `zone` says, or unknown).
    pub time: String,
    /// Whether `time` is an instant in UTC (the trace gives epoch seconds or UTC offsets)
    /// rather than a naive local wall-clock time.
    pub utc_offset_known: bool,
    /// The time zone as the trace (SWF `TimeZoneString`) or its documentation (Philly: "US
    /// Pacific") names it, not applied to `time`; `null` when neither does.
    pub zone: Option<String>,
}

impl TraceStart {
    /// An instant: `epoch_s` seconds since 1970-01-01T00:00:00Z.
    pub fn utc(epoch_s: i64, zone: Option<String>) -> TraceStart {
        TraceStart {
            time: format!("{}Z", timefmt::format_datetime(epoch_s)),
            utc_offset_known: true,
            zone,
        }
    }

    /// A naive wall-clock time: `naive_s` seconds since 1970-01-01 00:00:00 of the trace's
    /// own clock.
    pub fn local(naive_s: i64, zone: Option<String>) -> TraceStart {
        TraceStart {
            time: timefmt::format_datetime(naive_s),
            utc_offset_known: false,
            zone,
        }
    }
}

/// A stream of jobs in non-decreasing submit order.
pub trait JobStream: Iterator<Item = Result<JobSpec, TraceError>> + Send {
    /// The absolute time of the stream's t = 0 as far as the stream has read (a streamed
    /// trace knows it once its first job is read; see [`TraceStart`]); `None` for traces
    /// without an absolute clock (synthetic, Alibaba, native) and by default. Wrappers
    /// forward it.
    fn trace_start(&self) -> Option<TraceStart> {
        None
    }

    /// Rows skipped so far, by reason.
    fn skipped(&self) -> Skipped {
        Skipped::new()
    }

    /// Observations about rows that were kept, by snake_case label (a status breakdown,
    /// ends censored at the trace end, fields read but not simulated), as far as the
    /// stream has read. Shown by `fleetsim trace inspect`; empty by default.
    fn notes(&self) -> Skipped {
        Skipped::new()
    }
}

/// A job stream over an in-memory list (already sorted by submit time).
#[derive(Debug)]
pub struct VecStream {
    jobs: std::vec::IntoIter<JobSpec>,
    skipped: Skipped,
    notes: Skipped,
    start: Option<TraceStart>,
}

impl VecStream {
    /// Wraps `jobs`, stably sorting them by submit time first.
    pub fn new(mut jobs: Vec<JobSpec>, skipped: Skipped) -> VecStream {
        jobs.sort_by_key(|j| j.submit);
        VecStream {
            jobs: jobs.into_iter(),
            skipped,
            notes: Skipped::new(),
            start: None,
        }
    }

    /// Attaches the trace's start (see [`JobStream::trace_start`]).
    pub fn with_start(mut self, start: Option<TraceStart>) -> VecStream {
        self.start = start;
        self
    }

    /// Attaches the reader's notes (see [`JobStream::notes`]).
    pub fn with_notes(mut self, notes: Skipped) -> VecStream {
        self.notes = notes;
        self
    }
}

impl Iterator for VecStream {
    type Item = Result<JobSpec, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.jobs.next().map(Ok)
    }
}

impl JobStream for VecStream {
    fn skipped(&self) -> Skipped {
        self.skipped.clone()
    }

    fn notes(&self) -> Skipped {
        self.notes.clone()
    }

    fn trace_start(&self) -> Option<TraceStart> {
        self.start.clone()
    }
}

/// Trace formats, by the kebab-case names scenarios use ([`TraceFormat::name`]).
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "kebab-case")]
pub enum TraceFormat {
    /// Alibaba openb pod list.
    AlibabaOpenb,
    /// Philly per-job table (`philly_jobs_pollux.csv`).
    Philly,
    /// fleetsim native CSV or JSON Lines (by extension; `.gz` allowed).
    Native,
    /// Standard Workload Format (Parallel Workloads Archive), plain or `.gz`.
    Swf,
    /// Alibaba GPU-disaggregated DLRM inference instances (2025).
    AlibabaDlrm,
    /// Slurm `sacct --parsable2` output.
    SlurmSacct,
    /// SenseTime Helios `cluster_log.csv`.
    Helios,
    /// Microsoft Philly raw `cluster_job_log` (JSON).
    PhillyRaw,
    /// Alibaba PAI 2020 task table (`pai_task_table.csv`, joined with `pai_job_table.csv`
    /// beside it).
    AlibabaPai,
    /// The Tiresias simulator's job list (`job_id,num_gpu,submit_time,…,duration`), read
    /// under its `count` scheme: `num_gpu` one-GPU tasks.
    Tiresias,
    /// The Pollux artifact's workloads (`name,time,application,num_replicas,batch_size`):
    /// round-allocated jobs for the scenario's `[elastic]` table.
    Pollux,
}

impl TraceFormat {
    /// The name scenarios use (`alibaba-openb`, `slurm-sacct`, …): the serde name, so it
    /// cannot drift from what the scenario reader accepts.
    pub fn name(self) -> String {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(s)) => s,
            _ => unreachable!("a unit variant serializes as a string"),
        }
    }
}

/// Opens a trace file in `format` as a job stream. `sort` loads the whole file and stably
/// sorts it by (submit, row order) for formats that stream in file order; formats whose
/// reader always sorts (Philly) ignore it.
///
/// # Errors
/// [`TraceError`] when the file cannot be opened or its header is unusable; row errors come
/// from the stream.
pub fn open_trace(
    format: TraceFormat,
    path: &std::path::Path,
    sort: bool,
) -> Result<Box<dyn JobStream>, TraceError> {
    open_trace_with(format, path, sort, &slurm_sacct::SacctOptions::default())
}

/// [`open_trace`] with the `sacct` reader's options (a headerless file's `--format` list;
/// ignored by the other formats).
///
/// # Errors
/// As [`open_trace`].
pub fn open_trace_with(
    format: TraceFormat,
    path: &std::path::Path,
    sort: bool,
    sacct: &slurm_sacct::SacctOptions,
) -> Result<Box<dyn JobStream>, TraceError> {
    use TraceFormat as F;
    Ok(match (format, sort) {
        (F::AlibabaOpenb, false) => Box::new(alibaba_openb::open(path)?),
        (F::AlibabaOpenb, true) => Box::new(alibaba_openb::read_all_sorted(path)?),
        (F::Philly, _) => Box::new(philly::open(path)?),
        (F::Native, false) => Box::new(native::open(path)?),
        (F::Native, true) => Box::new(native::read_all_sorted(path)?),
        (F::Swf, false) => Box::new(swf::open(path)?),
        (F::Swf, true) => Box::new(swf::open(path)?.into_sorted()?),
        (F::AlibabaDlrm, _) => Box::new(alibaba_dlrm::open(path)?),
        (F::SlurmSacct, false) => Box::new(slurm_sacct::open_with(path, sacct)?),
        (F::SlurmSacct, true) => Box::new(slurm_sacct::read_all_sorted_with(path, sacct)?),
        (F::Helios, false) => Box::new(helios::open(path)?),
        (F::Helios, true) => Box::new(helios::read_all_sorted(path)?),
        (F::PhillyRaw, _) => Box::new(philly_raw::open(path)?),
        (F::AlibabaPai, _) => Box::new(alibaba_pai::open(path)?),
        (F::Tiresias, false) => Box::new(tiresias::open(path)?),
        (F::Tiresias, true) => Box::new(tiresias::read_all_sorted(path)?),
        (F::Pollux, false) => Box::new(pollux::open(path)?),
        (F::Pollux, true) => Box::new(pollux::read_all_sorted(path)?),
    })
}
