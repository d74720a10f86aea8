//! Reader for the Alibaba GPU-disaggregated DLRM inference trace (L. Yang et al.,
//! "GPU-Disaggregated Serving for Deep Learning Recommendation Models at Scale", USENIX
//! NSDI '25; `alibaba/clusterdata`, `cluster-trace-gpu-v2025/disaggregated_DLRM_trace.csv`).
//!
//! # Source format
//!
//! CSV with the header
//! `instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,creation_time,scheduled_time,deletion_time`
//! (any column order; unknown or duplicated columns are errors). One row per long-running
//! inference instance (pod):
//!
//! | column | unit |
//! |---|---|
//! | `instance_sn`, `role` (`CN` CPU node / `HN` GPU node), `app_name` (service) | – |
//! | `cpu_request` / `cpu_limit` | vCPU (decimal) |
//! | `gpu_request` / `gpu_limit` | whole GPUs |
//! | `rdma_request` / `rdma_limit` | percent of one RDMA NIC's bandwidth |
//! | `memory_request` / `memory_limit`, `disk_request` / `disk_limit` | GiB (decimal) |
//! | `max_instance_per_node` | instances of the same `app_name` per node; −1 = no limit |
//! | `creation_time`, `scheduled_time`, `deletion_time` | s since the trace start (decimal); **empty = censored** |
//!
//! # Mapping to [`JobSpec`]
//!
//! * **Name** = `instance_sn`; **tenant** = `app_name` (the service); **QoS label** = `role`;
//!   one task.
//! * **Resources**: `cpu_milli` = `cpu_request` × 1000 and `mem_mib` = `memory_request` ×
//!   1024, both exact from the decimal text (memory rounded to the nearest MiB, half away
//!   from zero); `num_gpu` = `gpu_request` (whole GPUs, `gpu_milli` 1000). Limits are not
//!   used (requests are what a scheduler reserves).
//! * **Not simulated** (the job model has no such dimension yet; counted in the notes so a
//!   user sees what is left out): the RDMA share (`rdma_request_not_simulated` for rows
//!   with a non-zero request), per-node anti-affinity (`anti_affinity_not_simulated` for
//!   rows with `max_instance_per_node` ≠ −1) and disk.
//! * **Times** (field case B18; times converted exactly to ms, half away from zero). The
//!   trace end is the largest time in the file. By which fields are present (each pattern is
//!   counted in the notes as `time_pattern.<c><s><d>`, `-` = empty):
//!   * creation, scheduled, deletion → a job submitted at creation, recorded start at
//!     scheduled, runtime deletion − scheduled;
//!   * creation, scheduled, no deletion → the same, running until the trace end (noted
//!     `end_censored_at_trace_end`);
//!   * no creation, no scheduled → present before the trace: **pre-existing**, holding its
//!     resources from t = 0 until deletion, or the trace end when deletion is empty too
//!     (noted as censored); a deletion at 0 is skipped as `ended_before_window`;
//!   * no creation, scheduled → submit 0 (created before the window), start at scheduled;
//!   * creation, no scheduled, deletion → never placed: **never ran** (reported cancelled);
//!   * creation only → still pending at the trace end: skipped as `pending_at_trace_end`.
//!
//!   The recorded-times rule ([`JobSpec::set_recorded_times`]) is applied to the result, so
//!   the rows run exactly as recorded in replay mode and as services from their creation in
//!   schedule mode.
//!
//! Errors (naming file, line and field): an empty required field, a non-numeric or
//! negative number, a fractional `gpu_request`, `scheduled_time` before `creation_time`,
//! `deletion_time` before `scheduled_time` or `creation_time`.
//!
//! # Order
//!
//! The file is ordered by instance, not by time: it is read whole (23,871 rows) and stably
//! sorted by (submit, row order); memory grows with the file.

use std::path::Path;

use fleetsim_policies::{SimDuration, SimTime, TaskShape};

use super::job::RecordedOutcome;
use super::native::{
    csv_reader, map_columns, next_record, parse_count, parse_seconds_ms, ENDED_BEFORE_WINDOW,
};
use super::rows::bump;
use super::{JobSpec, RecordedKind, Skipped, TraceError, VecStream};

/// Every column of the file.
pub const COLUMNS: [&str; 17] = [
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "cpu_limit",
    "gpu_request",
    "gpu_limit",
    "rdma_request",
    "rdma_limit",
    "memory_request",
    "memory_limit",
    "disk_request",
    "disk_limit",
    "max_instance_per_node",
    "creation_time",
    "scheduled_time",
    "deletion_time",
];
const INSTANCE: usize = 0;
const ROLE: usize = 1;
const APP: usize = 2;
const CPU: usize = 3;
const GPU: usize = 5;
const RDMA: usize = 7;
const MEM: usize = 9;
const MAX_PER_NODE: usize = 13;
const CREATION: usize = 14;
const SCHEDULED: usize = 15;
const DELETION: usize = 16;

/// Columns that must be present.
const REQUIRED: [&str; 10] = [
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "gpu_request",
    "rdma_request",
    "memory_request",
    "max_instance_per_node",
    "creation_time",
    "deletion_time",
];

/// A row before the trace end is known.
struct Row {
    job: JobSpec,
    times: [Option<i64>; 3],
}

/// Reads the DLRM instance file (see the module docs for every rule) into a sorted stream.
///
/// # Errors
/// [`TraceError::Io`], [`TraceError::MissingColumn`], [`TraceError::BadRow`] as for any CSV;
/// [`TraceError::BadField`] for an unknown column or the first bad field.
pub fn open(path: &Path) -> Result<VecStream, TraceError> {
    let mut rdr = csv_reader(path)?;
    let cols = map_columns(path, &mut rdr, &COLUMNS, &REQUIRED, None)?;
    let mut rec = csv::StringRecord::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut notes = Skipped::new();
    let mut trace_end: i64 = 0;
    while let Some(line) = next_record(path, &mut rdr, &mut rec) {
        let line = line?;
        let bad = |k: usize, m: String| TraceError::field(path, line, COLUMNS[k], m);
        let get = |k: usize| cols.get(&rec, k);
        let need = |k: usize| get(k).ok_or_else(|| bad(k, "empty (required)".to_string()));
        let milli = |k: usize| -> Result<u64, TraceError> {
            let t = need(k)?;
            let v = parse_seconds_ms(t).map_err(|m| bad(k, m))?;
            u64::try_from(v).map_err(|_| bad(k, format!("`{t}` is negative")))
        };
        let time = |k: usize| -> Result<Option<i64>, TraceError> {
            get(k)
                .map(|t| {
                    let v = parse_seconds_ms(t).map_err(|m| bad(k, m))?;
                    if v < 0 {
                        return Err(bad(k, format!("`{t}` is negative")));
                    }
                    Ok(v)
                })
                .transpose()
        };
        let cpu_milli = milli(CPU)?;
        let mem_milli_gib = milli(MEM)?;
        let mem_mib = (u128::from(mem_milli_gib) * 1024 + 500) / 1000;
        let mem_mib = u64::try_from(mem_mib).map_err(|_| bad(MEM, "out of range".into()))?;
        let num_gpu: u32 = parse_count(need(GPU)?).map_err(|m| bad(GPU, m))?;
        let shape = TaskShape {
            cpu_milli,
            mem_mib,
            ..TaskShape::whole_gpus(num_gpu)
        };
        super::native::check_shape(path, line, &shape, COLUMNS[GPU], COLUMNS[GPU])?;
        if milli(RDMA)? > 0 {
            bump(&mut notes, "rdma_request_not_simulated");
        }
        let per_node = need(MAX_PER_NODE)?;
        if per_node != "-1" {
            let _: u32 = parse_count(per_node).map_err(|m| bad(MAX_PER_NODE, m))?;
            bump(&mut notes, "anti_affinity_not_simulated");
        }
        let times = [time(CREATION)?, time(SCHEDULED)?, time(DELETION)?];
        if let (Some(c), Some(s)) = (times[0], times[1]) {
            if s < c {
                return Err(bad(SCHEDULED, "before creation_time".into()));
            }
        }
        if let Some(d) = times[2] {
            if let Some(s) = times[1].or(times[0]) {
                if d < s {
                    let k = if times[1].is_some() {
                        "scheduled_time"
                    } else {
                        "creation_time"
                    };
                    return Err(bad(DELETION, format!("before {k}")));
                }
            }
        }
        for t in times.into_iter().flatten() {
            trace_end = trace_end.max(t);
        }
        rows.push(Row {
            job: JobSpec {
                name: need(INSTANCE)?.into(),
                tenant: need(APP)?.into(),
                queue: None,
                priority: 0,
                qos: Some(need(ROLE)?.to_string()),
                submit: SimTime::ZERO,
                tasks: 1,
                shape,
                gpu_models: Vec::new(),
                cells: Vec::new(),
                runtime: SimDuration::ZERO,
                time_limit: None,
                recorded_start: None,
                recorded: RecordedKind::Normal,
                topology: None,
                // Pod shapes are given: rigid.
                split: false,
                elastic: None,
            },
            times,
        });
    }
    let mut jobs = Vec::with_capacity(rows.len());
    let mut skipped = Skipped::new();
    for Row { mut job, times } in rows {
        let pattern: String = ["c", "s", "d"]
            .iter()
            .zip(times)
            .map(|(l, t)| if t.is_some() { *l } else { "-" })
            .collect();
        bump(&mut notes, format!("time_pattern.{pattern}"));
        let outcome = match times {
            [Some(c), None, Some(_)] => {
                job.recorded = RecordedKind::NeverRan;
                job.submit = SimTime(c as u64);
                RecordedOutcome::Kept
            }
            [Some(_), None, None] => {
                *skipped.entry("pending_at_trace_end".into()).or_insert(0) += 1;
                continue;
            }
            [c, s, d] => {
                if d.is_none() {
                    bump(&mut notes, "end_censored_at_trace_end");
                }
                // Before the window: −1 ms, so rule 3 (pre-existing) or 4 applies.
                let (c, s) = (c.unwrap_or(-1), s.unwrap_or(-1));
                job.set_recorded_times(c, s, d.unwrap_or(trace_end))
            }
        };
        if outcome == RecordedOutcome::EndedBeforeWindow {
            *skipped.entry(ENDED_BEFORE_WINDOW.into()).or_insert(0) += 1;
            continue;
        }
        jobs.push(job);
    }
    Ok(VecStream::new(jobs, skipped).with_notes(notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::JobStream;

    const H: &str = "instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,creation_time,scheduled_time,deletion_time\n";

    fn read(text: &str) -> Result<(Vec<JobSpec>, Skipped, Skipped), TraceError> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dlrm.csv");
        std::fs::write(&p, text).unwrap();
        let mut s = open(&p)?;
        let jobs = s.by_ref().collect::<Result<Vec<_>, _>>()?;
        Ok((jobs, s.skipped(), s.notes()))
    }

    #[test]
    fn time_patterns_and_resources() {
        let (jobs, skipped, notes) = read(&format!(
            "{H}i0,HN,app_0,12,12,1,1,25,25,120.5,120.5,640,800,8,,,
i1,CN,app_1,8,8,0,0,0,0,40,40,1,1,-1,100,100,400
i2,CN,app_1,8,8,0,0,0,0,40,40,1,1,-1,50,60,
i3,CN,app_1,8,8,0,0,0,0,40,40,1,1,-1,,,300.5
i4,CN,app_1,8,8,0,0,0,0,40,40,1,1,-1,70,,90
i5,CN,app_1,8,8,0,0,0,0,40,40,1,1,-1,80,,
i6,CN,app_1,8,8,0,0,0,0,40,40,1,1,-1,,,0
"
        ))
        .unwrap();
        let view: Vec<(&str, u64, Option<u64>, u64, RecordedKind)> = jobs
            .iter()
            .map(|j| {
                (
                    j.name.as_str(),
                    j.submit.0,
                    j.recorded_start.map(|t| t.0),
                    j.runtime.0,
                    j.recorded,
                )
            })
            .collect();
        use RecordedKind::*;
        assert_eq!(
            view,
            [
                ("i0", 0, Some(0), 400_000, PreExisting),
                ("i3", 0, Some(0), 300_500, PreExisting),
                ("i2", 50_000, Some(60_000), 340_000, Normal),
                ("i4", 70_000, None, 0, NeverRan),
                ("i1", 100_000, Some(100_000), 300_000, Normal),
            ]
        );
        assert_eq!(jobs[0].shape.cpu_milli, 12_000);
        assert_eq!(jobs[0].shape.mem_mib, 123_392);
        assert_eq!(jobs[0].shape.num_gpu, 1);
        assert_eq!(jobs[0].tenant, "app_0");
        assert_eq!(jobs[0].qos.as_deref(), Some("HN"));
        assert_eq!(skipped["pending_at_trace_end"], 1);
        assert_eq!(skipped[ENDED_BEFORE_WINDOW], 1);
        assert_eq!(notes["end_censored_at_trace_end"], 2);
        assert_eq!(notes["time_pattern.---"], 1);
        assert_eq!(notes["rdma_request_not_simulated"], 1);
        assert_eq!(notes["anti_affinity_not_simulated"], 1);
    }

    #[test]
    fn bad_rows_name_file_line_and_field() {
        let ok = "i0,HN,app_0,12,12,1,1,25,25,120,120,640,800,8,,,\n";
        let cases = [
            (
                "i1,HN,app_0,x,12,1,1,25,25,120,120,640,800,8,,,\n",
                "cpu_request",
            ),
            (
                "i1,HN,app_0,12,12,0.5,1,25,25,120,120,640,800,8,,,\n",
                "gpu_request",
            ),
            (
                "i1,HN,app_0,12,12,1,1,25,25,-1,120,640,800,8,,,\n",
                "memory_request",
            ),
            (
                "i1,HN,app_0,12,12,1,1,25,25,120,120,640,800,-2,,,\n",
                "max_instance_per_node",
            ),
            (
                "i1,HN,app_0,12,12,1,1,25,25,120,120,640,800,8,10,5,\n",
                "scheduled_time",
            ),
            (
                "i1,HN,app_0,12,12,1,1,25,25,120,120,640,800,8,10,20,15\n",
                "deletion_time",
            ),
            ("i1,HN,,12,12,1,1,25,25,120,120,640,800,8,,,\n", "app_name"),
            (
                "i1,HN,app_0,12,12,1,1,25,25,120,120,640,800,8,-3,,\n",
                "creation_time",
            ),
        ];
        for (row, field) in cases {
            let e = read(&format!("{H}{ok}{row}")).expect_err(row).to_string();
            assert!(
                e.contains("dlrm.csv")
                    && e.contains("line 3:")
                    && e.contains(&format!("`{field}`")),
                "{e}"
            );
        }
    }

    #[test]
    fn public_dlrm_counts_match_source() {
        let Some(p) = crate::public_trace("alibaba-dlrm-2025/disaggregated_DLRM_trace.csv") else {
            return;
        };
        let mut s = open(&p).unwrap();
        let jobs: Vec<JobSpec> = s.by_ref().map(Result::unwrap).collect();
        let notes = s.notes();
        // SOURCE.md: 23,871 rows; 12,390 / 4,201 / 2,603 / 4,677 by time pattern.
        assert_eq!(jobs.len(), 23_871);
        assert!(s.skipped().is_empty());
        assert_eq!(notes["time_pattern.csd"], 12_390);
        assert_eq!(notes["time_pattern.cs-"], 4_201);
        assert_eq!(notes["time_pattern.--d"], 2_603);
        assert_eq!(notes["time_pattern.---"], 4_677);
        let hn = jobs
            .iter()
            .filter(|j| j.qos.as_deref() == Some("HN"))
            .count();
        assert_eq!(hn, 7_386);
        assert!(jobs
            .iter()
            .all(|j| j.shape.num_gpu == u32::from(j.qos.as_deref() == Some("HN"))));
        let apps: std::collections::BTreeSet<&str> =
            jobs.iter().map(|j| j.tenant.as_str()).collect();
        assert_eq!(apps.len(), 156);
    }
}
