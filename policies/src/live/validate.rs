//! Checks of a batch of [`Event`]s against the spec a [`LiveState`] was built from, made
//! before anything of the batch is logged or applied: a service that logs first and applies
//! after must never log what the state cannot take, or every restart replays it.
//!
//! What is checked, per event, naming the field:
//!
//! * `t`: not before the state's time nor the previous event of the batch, and at most
//!   [`MAX_TIME_MS`];
//! * node events: `node` is a node of the fleet;
//! * `job_submitted` / `job_started`: `job.id` below [`LiveState::max_job_id`] (job ids
//!   index the scheduler's tables), `job.queue` in the state's queue table
//!   ([`LiveState::queue_names`]), the shape ([`crate::TaskShape::validate`]),
//!   `job.tasks` at most [`MAX_GANG_TASKS`], every `job.models` and `job.cells` entry a
//!   model and cell of the fleet, `job.submit` not after `t`, durations
//!   (`runtime_estimate_ms`, `checkpoint_interval_ms` ≥ 1, `done_ms`) at most
//!   [`MAX_TIME_MS`], `attained_gpu_ms` at most [`MAX_ATTAINED_GPU_MS`], a topology slice
//!   of at least one task;
//! * `job_lost`: `release_at`, when given, not before `t` and at most [`MAX_TIME_MS`].
//!
//! What is *not* checked here, because it depends on what the batch's earlier events and
//! passes do: whether a job id is free or known and in the phase an event needs. Those are
//! refused by [`LiveState::apply`] ([`super::LiveError`]), which changes nothing for the
//! refused event, so a replay of the same log refuses them the same way.

use super::event::{Event, JobSpec};
use super::state::LiveState;

/// Latest event time and longest duration accepted, ms (2^52 ms, about 142,000 years: Unix
/// time in ms fits with room, and sums of two such values cannot overflow).
pub const MAX_TIME_MS: u64 = 1 << 52;

/// Largest attained service accepted, GPU·ms (2^60: 64 accelerators for 2^52 ms).
pub const MAX_ATTAINED_GPU_MS: u64 = 1 << 60;

/// Largest gang accepted, tasks. Larger than any gang a fleet of this size can place with
/// whole or fractional accelerators; a shape asking for almost nothing (no accelerator, a
/// milli-core) could otherwise make a placement build millions of bindings.
pub const MAX_GANG_TASKS: u32 = 65_536;

pub use super::state::DEFAULT_MAX_JOB_ID;

/// Why an event of a batch was refused before anything of the batch was logged or applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// The refused event's index in the batch.
    pub index: usize,
    /// The field, as a path in the event's JSON (`job.shape.gpu_milli`, `node`, `t`).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "event {}: field `{}`: {}",
            self.index, self.field, self.message
        )
    }
}

impl std::error::Error for Invalid {}

type Check = Result<(), (String, String)>;

fn bad(field: impl Into<String>, message: impl Into<String>) -> Check {
    Err((field.into(), message.into()))
}

fn duration(field: &str, v: u64) -> Check {
    if v > MAX_TIME_MS {
        return bad(field, format!("{v} ms is more than {MAX_TIME_MS} ms"));
    }
    Ok(())
}

impl LiveState {
    /// Checks every event of a batch against the spec (see the module docs), in order, the
    /// first event's time against the state's.
    ///
    /// # Errors
    /// The first refused event's index, field and reason.
    pub fn validate(&self, events: &[Event]) -> Result<(), Invalid> {
        let mut after = self.now();
        for (index, e) in events.iter().enumerate() {
            self.validate_event(e, after)
                .map_err(|(field, message)| Invalid {
                    index,
                    field,
                    message,
                })?;
            after = e.t();
        }
        Ok(())
    }

    /// Checks one event that comes after time `after` (ms).
    fn validate_event(&self, e: &Event, after: u64) -> Check {
        let t = e.t();
        if t < after {
            return bad(
                "t",
                format!("event time {t} ms is before the current time {after} ms"),
            );
        }
        duration("t", t)?;
        match e {
            Event::NodeAdded { node, .. }
            | Event::NodeRemoved { node, .. }
            | Event::NodeFailed { node, .. }
            | Event::NodeRecovered { node, .. }
            | Event::NodeDrained { node, .. } => {
                let n = self.fleet().nodes().len();
                if *node as usize >= n {
                    return bad(
                        "node",
                        format!("node {node} is not a node of the fleet (0..{n})"),
                    );
                }
            }
            Event::JobSubmitted { job, .. } | Event::JobStarted { job, .. } => {
                self.validate_job(job, t)?;
            }
            Event::JobLost { release_at, .. } => {
                if let Some(r) = release_at {
                    if *r < t {
                        return bad(
                            "release_at",
                            format!("{r} ms is before the event's time {t} ms"),
                        );
                    }
                    duration("release_at", *r)?;
                }
            }
            Event::JobFinished { .. }
            | Event::JobCancelled { .. }
            | Event::VictimReleased { .. }
            | Event::Pass { .. } => {}
        }
        Ok(())
    }

    fn validate_job(&self, job: &JobSpec, t: u64) -> Check {
        if job.id > self.max_job_id() {
            return bad(
                "job.id",
                format!(
                    "{} is above the largest job id this service takes, {} (ids index the scheduler's tables: reuse the ids of ended jobs)",
                    job.id,
                    self.max_job_id()
                ),
            );
        }
        let queues = self.queue_names();
        if job.queue as usize >= queues.len() {
            return bad(
                "job.queue",
                format!(
                    "queue {} is not a queue of the spec (it has {}: {})",
                    job.queue,
                    queues.len(),
                    show_names(queues)
                ),
            );
        }
        job.shape
            .validate()
            .or_else(|m| bad("job.shape.gpu_milli", m))?;
        if job.tasks > MAX_GANG_TASKS {
            return bad(
                "job.tasks",
                format!("a gang of {} tasks; at most {MAX_GANG_TASKS}", job.tasks),
            );
        }
        let models = self.fleet().models().len();
        if let Some((i, m)) = job
            .models
            .iter()
            .enumerate()
            .find(|&(_, &m)| m as usize >= models)
        {
            return bad(
                format!("job.models[{i}]"),
                format!("model {m} is not a model of the fleet (0..{models})"),
            );
        }
        let cells = self.fleet().cells().len();
        if let Some((i, c)) = job
            .cells
            .iter()
            .enumerate()
            .find(|&(_, &c)| c as usize >= cells)
        {
            return bad(
                format!("job.cells[{i}]"),
                format!("cell {c} is not a cell of the fleet (0..{cells})"),
            );
        }
        if let Some(s) = job.submit {
            if s > t {
                return bad(
                    "job.submit",
                    format!("{s} ms is after the event's time {t} ms"),
                );
            }
        }
        if let Some(e) = job.runtime_estimate_ms {
            duration("job.runtime_estimate_ms", e)?;
        }
        if let Some(c) = job.checkpoint_interval_ms {
            if c == 0 {
                return bad(
                    "job.checkpoint_interval_ms",
                    "0 ms; give at least 1 ms, or leave it out (no checkpoints)",
                );
            }
            duration("job.checkpoint_interval_ms", c)?;
        }
        duration("job.done_ms", job.done_ms)?;
        if job.attained_gpu_ms > MAX_ATTAINED_GPU_MS {
            return bad(
                "job.attained_gpu_ms",
                format!(
                    "{} GPU·ms is more than {MAX_ATTAINED_GPU_MS}",
                    job.attained_gpu_ms
                ),
            );
        }
        if job.topology.and_then(|tp| tp.slice_size) == Some(0) {
            return bad(
                "job.topology.slice_size",
                "0 tasks; a slice holds at least one",
            );
        }
        Ok(())
    }
}

/// Up to 8 names, quoted, then a count of the rest.
fn show_names(names: &[String]) -> String {
    let mut s: Vec<String> = names
        .iter()
        .take(8)
        .enumerate()
        .map(|(i, n)| format!("{i} `{n}`"))
        .collect();
    if names.len() > 8 {
        s.push(format!("… {} more", names.len() - 8));
    }
    s.join(", ")
}
