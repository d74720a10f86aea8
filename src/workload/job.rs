//! The job model every trace reader and the synthetic generator produce.

use compact_str::CompactString;
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
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// The trace's id for the job (pod name, job id); the input position when the trace has
    /// none. Inline up to 24 bytes (no allocation).
    pub name: CompactString,
    /// Tenant (Philly VC, Slurm account, namespace…). Inline up to 24 bytes.
    pub tenant: CompactString,
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
    /// The job's own topology constraint (a Kueue workload's Topology-Aware Scheduling
    /// request); `None`: `[policy.topology]`'s for gangs, else none.
    pub topology: Option<fleetsim_policies::topology::TopologySpec>,
    /// Its tasks take the node's shape: in a cell whose nodes have fewer accelerators than a
    /// task, each task runs as node-sized members of one gang
    /// ([`fleetsim_policies::placement::split`]). True for the synthetic generator and the
    /// traces that record job sizes (Philly, Helios, SWF, Slurm, Tiresias, and a native
    /// row without a `tasks` column); false where the task shape is given (a native row's
    /// `tasks`, Alibaba pods, serving replicas).
    pub split: bool,
    /// A round-allocated (elastic) job's training spec ([`crate::engine::elastic`]); `None`:
    /// a rigid job with its own run time. Boxed: most jobs have none.
    pub elastic: Option<Box<ElasticSpec>>,
}

/// How an elastic job's GPUs and length are decided: by a round allocator under a measured
/// application model (a `pollux` workload row), or by a sizing policy from the user's work
/// and throughput model (a native row with elastic columns).
#[derive(Clone, Debug, PartialEq)]
pub enum ElasticSpec {
    /// A `pollux` workload row, for `[elastic] allocator = "tiresias" | "pollux"`.
    Trained(TrainedSpec),
    /// A native row with `min_gpus`, `max_gpus`, `work_gpu_s`, `throughput`, for
    /// `[elastic] allocator = "grow-idle" | "fixed"`.
    Sized(SizedSpec),
}

/// What a round-allocated job trains: its application model (a directory of the scenario's
/// `[elastic] models`), its rigid size and its fixed global batch size (as the Pollux
/// workloads give them). Its length follows from the model and its allocations.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrainedSpec {
    /// Application model name (`bert`, `cifar10`, …).
    pub application: String,
    /// Replicas (GPUs) the job asks for: its size under a rigid allocator.
    pub replicas: u32,
    /// Global batch size: kept fixed under a rigid allocator.
    pub batch_size: u32,
}

/// An elastic job sized by a policy: it runs on `min ..= max` GPUs (one replica per whole
/// GPU) and is done when it has drained `work_gpu_ms` at its throughput model's rate. Its
/// length follows from that work, the model and the sizes it gets: it is the user's
/// modelling choice, not a recorded run time.
#[derive(Clone, Debug, PartialEq)]
pub struct SizedSpec {
    /// Fewest GPUs it runs on, ≥ 1.
    pub min: u32,
    /// Most GPUs it can use, ≥ `min`.
    pub max: u32,
    /// Work, GPU-milliseconds at size 1.
    pub work_gpu_ms: u64,
    /// How fast the work drains at each size.
    pub throughput: super::ThroughputModel,
}

impl JobSpec {
    /// A single-task job of `gpus` whole accelerators, for tests and generators.
    pub fn simple(name: &str, tenant: &str, submit_s: u64, gpus: u32, runtime_s: u64) -> JobSpec {
        JobSpec {
            name: name.into(),
            tenant: tenant.into(),
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
            topology: None,
            split: false,
            elastic: None,
        }
    }

    /// Total GPU-milli of the gang.
    pub fn total_gpu_milli(&self) -> u64 {
        self.shape.total_gpu_milli() * self.tasks as u64
    }
}

/// What the recorded-times rule (field case B18) made of a row: kept as a job, or skipped
/// under a reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecordedOutcome {
    /// The job was filled in and is to be kept.
    Kept,
    /// The row ended at or before the trace start: skip it under
    /// [`crate::workload::native::ENDED_BEFORE_WINDOW`].
    EndedBeforeWindow,
}

impl JobSpec {
    /// Applies the recorded-times rule shared by every reader whose format carries start and
    /// end times (field case B18; the table in `traces/README.md`). All three times are
    /// integer milliseconds relative to the trace start (negative = before it), with
    /// `end_ms ≥ start_ms` (the caller checks that and reports a bad field otherwise). The
    /// first matching rule sets `submit`, `runtime`, `recorded_start` and `recorded`:
    ///
    /// 1. `start < submit`, or `start = end = 0` with `submit > 0` → [`RecordedKind::NeverRan`]:
    ///    submit = max(submit, 0), runtime 0, no recorded start;
    /// 2. `end ≤ 0` → [`RecordedOutcome::EndedBeforeWindow`] (the job is left untouched);
    /// 3. `start < 0 < end` → [`RecordedKind::PreExisting`]: submit 0, recorded start 0,
    ///    runtime = `end`;
    /// 4. otherwise [`RecordedKind::Normal`]: submit = max(submit, 0), recorded start =
    ///    `start`, runtime = `end − start`.
    pub fn set_recorded_times(
        &mut self,
        submit_ms: i64,
        start_ms: i64,
        end_ms: i64,
    ) -> RecordedOutcome {
        let (submit, start, end) = (submit_ms, start_ms, end_ms.max(start_ms));
        if start < submit || (start == 0 && end == 0 && submit > 0) {
            self.recorded = RecordedKind::NeverRan;
            self.submit = SimTime(submit.max(0) as u64);
            self.runtime = SimDuration::ZERO;
            self.recorded_start = None;
        } else if end <= 0 {
            return RecordedOutcome::EndedBeforeWindow;
        } else if start < 0 {
            self.recorded = RecordedKind::PreExisting;
            self.submit = SimTime::ZERO;
            self.recorded_start = Some(SimTime::ZERO);
            self.runtime = SimDuration(end as u64);
        } else {
            self.recorded = RecordedKind::Normal;
            self.submit = SimTime(submit.max(0) as u64);
            self.recorded_start = Some(SimTime(start as u64));
            self.runtime = SimDuration(end.abs_diff(start));
        }
        RecordedOutcome::Kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b18_rules() {
        let run = |s: i64, st: i64, en: i64| {
            let mut j = JobSpec::simple("x", "t", 0, 1, 5);
            let o = j.set_recorded_times(s * 1000, st * 1000, en * 1000);
            (
                o,
                j.recorded,
                j.submit.0 / 1000,
                j.recorded_start,
                j.runtime.0 / 1000,
            )
        };
        use RecordedKind::*;
        use RecordedOutcome::*;
        let at = |s: u64| Some(SimTime::from_secs(s));
        assert_eq!(run(10, 20, 120), (Kept, Normal, 10, at(20), 100));
        assert_eq!(run(30, 0, 0), (Kept, NeverRan, 30, None, 0));
        assert_eq!(run(-800, -792, -788).0, EndedBeforeWindow);
        assert_eq!(run(-50, -40, 200), (Kept, PreExisting, 0, at(0), 200));
        assert_eq!(run(50, 60, 60), (Kept, Normal, 50, at(60), 0));
        assert_eq!(run(-50, 10, 20), (Kept, Normal, 0, at(10), 10));
    }
}
