//! The job model every trace reader and the synthetic generator produce.

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

/// How a job's end is known in the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RecordedKind {
    /// A normal job: schedule it and run it for `runtime`.
    #[default]
    Normal,
    /// Running before the trace window opened (recorded start < 0 < recorded end): it holds
    /// its resources from `t = 0` and is left out of wait statistics (field case B18).
    PreExisting,
    /// Never ran (recorded start before submit, or start = end = 0 after a later submit):
    /// counted as cancelled, left out of wait and run statistics (field case B18).
    NeverRan,
}

/// One job as read from a trace or generated: a gang of `tasks` identical tasks.
///
/// Times are integer milliseconds since the scenario start, converted once at ingest by the
/// reader (each reader documents its rounding rule).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobSpec {
    /// The trace's id for the job (pod name, job id); the input position when the trace has
    /// none.
    pub name: String,
    /// Tenant (Philly VC, Slurm account, namespace…).
    pub tenant: String,
    /// Queue; `None` lets the scenario decide (by default, the tenant's name).
    pub queue: Option<String>,
    /// Priority; higher first under priority order.
    pub priority: i32,
    /// QoS class as the trace names it (`LS`, `BE`, …), for reports.
    pub qos: Option<String>,
    /// Submission time.
    pub submit: SimTime,
    /// Gang size (number of identical tasks), at least 1.
    pub tasks: u32,
    /// One task's request.
    pub shape: TaskShape,
    /// Accelerator models allowed (catalog names, e.g. `V100M16`); empty = any.
    pub gpu_models: Vec<String>,
    /// Cells allowed (cell names); empty = any.
    pub cells: Vec<String>,
    /// Run time at reference speed once started.
    pub runtime: SimDuration,
    /// User time limit (`None` = not given; the queue's default applies).
    pub time_limit: Option<SimDuration>,
    /// Recorded start in the trace, for replay mode; `None` when the trace has none.
    pub recorded_start: Option<SimTime>,
    /// What the trace says about whether and when the job ran.
    pub recorded: RecordedKind,
}

impl JobSpec {
    /// A single-task job of `gpus` whole accelerators, for tests and generators.
    pub fn simple(name: &str, tenant: &str, submit_s: u64, gpus: u32, runtime_s: u64) -> JobSpec {
        JobSpec {
            name: name.to_string(),
            tenant: tenant.to_string(),
            queue: None,
            priority: 0,
            qos: None,
            submit: SimTime::from_secs(submit_s),
            tasks: 1,
            shape: TaskShape::whole_gpus(gpus),
            gpu_models: Vec::new(),
            cells: Vec::new(),
            runtime: SimDuration::from_secs(runtime_s),
            time_limit: None,
            recorded_start: None,
            recorded: RecordedKind::Normal,
        }
    }

    /// Total GPU-milli of the gang.
    pub fn total_gpu_milli(&self) -> u64 {
        self.shape.total_gpu_milli() * self.tasks as u64
    }
}
