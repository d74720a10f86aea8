//! The account of `fleetsim kueue simulate`: per workload, when it was admitted, in which
//! flavor, the preemptions it caused or suffered and why it waited, in Kueue's terms
//! (ClusterQueue, Cohort, flavor; preemption reasons `InClusterQueue`,
//! `InCohortReclamation`, `InCohortReclaimWhileBorrowing`, `InCohortFairSharing`); and a
//! summary per ClusterQueue.
//!
//! Modelling choice, stated in every report: fleetsim admits a workload when its quota *and*
//! the placement of all its pods fit (its start); Kueue reserves quota first and leaves the
//! pods to kube-scheduler, so where nodes are short a Kueue workload is admitted earlier and
//! its pods wait as `Pending`. The reasons `no nodes …` below are those waits.
//!
//! With the Configuration's `waitForPodsReady` ([`crate::engine::pods_ready`]) a workload
//! that claims nodes still being provisioned has its quota reserved then, and each step of
//! its waiting for pods is listed in Kueue's words: `QuotaReserved` while its pods wait,
//! `Evicted` with reason `PodsReadyTimeout` (with `requeueState.count` and `requeueAt`),
//! `Requeued` with reason `BackoffFinished`, and the deactivation after more evictions than
//! `backoffLimitCount` allows (`spec.active: false`, `Evicted` with reason
//! `DeactivatedDueToRequeuingLimitExceeded`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use fleetsim_policies::{PendingReason, PreemptReason};
use serde::Serialize;

use crate::engine::pods_ready::{PodsReadyStep, DEACTIVATED};
use crate::engine::{FinalState, JobRow, RunResult};

/// Kueue's name of a preemption reason (its `Evicted`/`Preempted` condition reasons);
/// fleetsim's own rules keep their names.
pub fn kueue_preempt_reason(r: PreemptReason) -> &'static str {
    match r {
        PreemptReason::WithinQueue => "InClusterQueue",
        PreemptReason::Reclaim => "InCohortReclamation",
        PreemptReason::ReclaimWhileBorrowing => "InCohortReclaimWhileBorrowing",
        PreemptReason::FairShare => "InCohortFairSharing",
        PreemptReason::Tier => "tier (fleetsim)",
        PreemptReason::Priority => "priority (fleetsim)",
        PreemptReason::Las => "las (fleetsim)",
    }
}

/// What a workload is known by in the account.
#[derive(Clone, Debug)]
pub struct WorkloadRef {
    /// `Kind namespace/name`.
    pub id: String,
    /// Its LocalQueue (`namespace/name`), if it names one.
    pub local_queue: Option<String>,
    /// Its ClusterQueue, if the LocalQueue exists.
    pub cluster_queue: Option<String>,
    /// The ClusterQueue's cohort.
    pub cohort: Option<String>,
    /// The ClusterQueue's flavors, in order.
    pub flavors: Vec<String>,
    /// What was read and not simulated, or assumed.
    pub notes: Vec<String>,
    /// What its Topology-Aware Scheduling annotations require (`all its pods in one
    /// example.com/rack`), if anything.
    pub tas_required: Option<String>,
    /// The ProvisioningRequest AdmissionChecks of its ClusterQueue: while its pods have no
    /// room, Kueue holds it with quota reserved until the check is ready, rather than
    /// admitting it.
    pub provisioning_checks: Vec<String>,
}

/// Why a workload waited, from when to when (seconds since t = 0; `to` `None`: to the end).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PendingSpan {
    /// Start, s.
    pub from_s: f64,
    /// End, s (`None`: still waiting at the end of the run).
    pub to_s: Option<f64>,
    /// Kueue's terms.
    pub reason: String,
    /// fleetsim's reason name.
    pub code: String,
}

/// One preemption, seen from one side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Preemption {
    /// When, s.
    pub at_s: f64,
    /// The other workload.
    pub workload: String,
    /// Kueue's reason name.
    pub reason: String,
}

/// One step of a workload's waiting for pods (`waitForPodsReady`), in Kueue's words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PodsReadyEvent {
    /// When, s.
    pub at_s: f64,
    /// `QuotaReserved` (admitted, its pods waiting for nodes), `Evicted` (reason
    /// `PodsReadyTimeout`), `Requeued` (reason `BackoffFinished`) or `Deactivated`.
    pub event: String,
    /// Kueue's condition reason (`PodsReadyTimeout`, `BackoffFinished`,
    /// `DeactivatedDueToRequeuingLimitExceeded`); `None` for `QuotaReserved`.
    pub reason: Option<String>,
    /// `QuotaReserved`: when the timeout evicts it unless its pods are ready, s.
    pub deadline_s: Option<f64>,
    /// `Evicted`: Kueue's `requeueState.count` (evictions so far); `Deactivated`:
    /// evictions in all.
    pub count: Option<u32>,
    /// `Evicted`: Kueue's `requeueState.requeueAt`, the end of its backoff, s.
    pub requeue_at_s: Option<f64>,
}

/// One workload's account.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WorkloadAccount {
    /// `Kind namespace/name`.
    pub workload: String,
    /// LocalQueue (`namespace/name`).
    pub local_queue: Option<String>,
    /// ClusterQueue.
    pub cluster_queue: Option<String>,
    /// Submitted, s.
    pub submitted_s: f64,
    /// First admitted (started: quota and all its pods placed), s.
    pub admitted_s: Option<f64>,
    /// First-start wait (`first_start_wait_s`): first admission − submit, s.
    pub first_start_wait_s: Option<f64>,
    /// Wait (`wait_s`): every second pending, s: submit → first start, plus each
    /// preemption or pods-ready eviction → the next start (its backoff included); for a
    /// workload never started, up to its deactivation or the end of the run.
    pub wait_s: Option<f64>,
    /// The flavor of its first admission.
    pub flavor: Option<String>,
    /// Each later admission (after a preemption), s, with its flavor.
    pub readmitted: Vec<(f64, Option<String>)>,
    /// Finished, s.
    pub finished_s: Option<f64>,
    /// `COMPLETED_SUCCESSFULLY`, `REJECTED`, `CENSORED`, …
    pub state: String,
    /// Why it was rejected or is still pending (fleetsim's reason name).
    pub state_reason: Option<String>,
    /// A rejection in Kueue's terms: what Kueue would do with the workload.
    pub rejected_because: Option<String>,
    /// Preemptions it caused.
    pub preempted: Vec<Preemption>,
    /// Preemptions it suffered.
    pub preempted_by: Vec<Preemption>,
    /// Why it waited, over time.
    pub pending: Vec<PendingSpan>,
    /// Its waiting for pods (`waitForPodsReady`), in order; empty without it.
    pub pods_ready: Vec<PodsReadyEvent>,
    /// Evicted for `PodsReadyTimeout`, times (a deactivation's eviction included).
    pub pods_ready_evictions: u32,
    /// Deactivated (`spec.active: false`) after more `PodsReadyTimeout` evictions than
    /// `backoffLimitCount` allows, s; it never runs.
    pub deactivated_s: Option<f64>,
    /// What was read and not simulated, or assumed.
    pub notes: Vec<String>,
}

/// One ClusterQueue's summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClusterQueueSummary {
    /// Name.
    pub name: String,
    /// Cohort.
    pub cohort: Option<String>,
    /// Workloads submitted to it.
    pub workloads: u64,
    /// Admitted (started) at least once.
    pub admitted: u64,
    /// Mean wait (`wait_s`: every second pending, after preemptions and evictions too) of
    /// those admitted, s.
    pub mean_wait_s: Option<f64>,
    /// Longest of those, s.
    pub max_wait_s: Option<f64>,
    /// Mean first-start wait (`first_start_wait_s`: first admission − submit) of those
    /// admitted, s.
    pub mean_first_start_wait_s: Option<f64>,
    /// Longest of those, s.
    pub max_first_start_wait_s: Option<f64>,
    /// Preemptions its workloads caused.
    pub preemptions_caused: u64,
    /// Preemptions its workloads suffered.
    pub preemptions_suffered: u64,
    /// `PodsReadyTimeout` evictions of its workloads.
    pub pods_ready_evictions: u64,
    /// Its workloads deactivated after too many `PodsReadyTimeout` evictions.
    pub deactivated: u64,
    /// Not admitted by the end of the run, and not deactivated.
    pub never_admitted: u64,
}

/// The whole account.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KueueAccount {
    /// The fleet simulated, and how it was chosen.
    pub fleet: String,
    /// What the manifests ask for that is not simulated, and the choices made.
    pub notes: Vec<String>,
    /// Per workload, in submit order.
    pub workloads: Vec<WorkloadAccount>,
    /// Per ClusterQueue, by name (`(none)`: workloads without one).
    pub cluster_queues: Vec<ClusterQueueSummary>,
}

/// Seconds of a millisecond time.
fn s(ms: u64) -> f64 {
    ms as f64 / 1000.0
}

/// A rejection (fleetsim's reason name) in Kueue's terms: what Kueue does with such a
/// workload, for a workload of `w`'s ClusterQueue.
pub fn kueue_rejection(code: &str, w: &WorkloadRef) -> String {
    let cq = w.cluster_queue.as_deref().unwrap_or("?");
    match code {
        "unknown_queue" => match &w.local_queue {
            Some(lq) => format!(
                "LocalQueue {lq} does not exist: Kueue keeps the workload pending, inadmissible"
            ),
            None => "no `kueue.x-k8s.io/queue-name` label: Kueue does not manage it".into(),
        },
        "over_quota" => format!(
            "couldn't assign flavors: it asks for more than ClusterQueue {cq} can ever have (nominal quota plus what it may borrow): Kueue keeps it pending, inadmissible"
        ),
        "no_quota_flavor" => format!(
            "couldn't assign flavors: no flavor of ClusterQueue {cq} covers its resources: Kueue keeps it pending, inadmissible"
        ),
        "topology_infeasible" => "Topology-Aware Scheduling: no group of the required level can ever hold it: Kueue keeps it pending, inadmissible".into(),
        "task_larger_than_any_node" | "gang_larger_than_cell" | "no_allowed_model"
        | "no_allowed_cell" | "request_too_large" => format!(
            "no nodes of the fleet can ever hold it ({code}): Kueue may admit it by quota and kube-scheduler keep its pods Pending"
        ),
        other => format!("rejected by fleetsim ({other})"),
    }
}

/// A pending reason in Kueue's terms, for a workload of `w`'s ClusterQueue.
pub fn kueue_reason(r: PendingReason, w: &WorkloadRef) -> String {
    let cq = w.cluster_queue.as_deref().unwrap_or("?");
    let flavors = if w.flavors.is_empty() {
        String::new()
    } else {
        format!(" (flavors {})", w.flavors.join(", "))
    };
    let cohort = w.cohort.as_deref();
    let provisioning = (!w.provisioning_checks.is_empty()
        && matches!(
            r,
            PendingReason::NoCapacity
                | PendingReason::Fragmentation
                | PendingReason::Gang
                | PendingReason::NodeShape
        ))
    .then(|| {
        format!(
            "quota reserved; waiting for AdmissionCheck {} (ProvisioningRequest): Kueue admits it when the check is ready, with nodes that have room for its pods",
            w.provisioning_checks.join(", ")
        )
    });
    if let Some(p) = provisioning {
        return p;
    }
    match r {
        PendingReason::NotTried => "not tried yet (the pass stopped before it)".into(),
        PendingReason::OverQuota => format!(
            "couldn't assign flavors: insufficient unused quota in ClusterQueue {cq}{flavors}{}",
            if cohort.is_none() {
                "; no cohort to borrow from"
            } else {
                ""
            }
        ),
        PendingReason::BorrowingLimit => format!(
            "couldn't assign flavors: borrowing limit of ClusterQueue {cq}{} reached{flavors}",
            cohort.map_or(String::new(), |c| format!(" or of Cohort {c}"))
        ),
        PendingReason::CohortQuota => format!(
            "couldn't assign flavors: insufficient unused quota in Cohort {}{flavors}: other ClusterQueues use it",
            cohort.unwrap_or("?")
        ),
        PendingReason::StrictFifoHead => {
            format!("StrictFIFO: behind the head of ClusterQueue {cq}, which cannot be admitted")
        }
        PendingReason::Preempting => {
            "Pending the preemption of workload(s) (their termination)".into()
        }
        PendingReason::NoCapacity => "quota fits; no nodes with room for its pods (Kueue would admit it and kube-scheduler keep its pods Pending)".into(),
        PendingReason::Fragmentation => "quota fits; the free capacity is fragmented: no node has room for a pod (Kueue would admit it and kube-scheduler keep its pods Pending)".into(),
        PendingReason::Gang => match &w.tas_required {
            Some(t) => format!(
                "quota fits; Topology-Aware Scheduling: no free room for {t} (the pods fit elsewhere)"
            ),
            None => "quota fits; its pods do not all fit at once (all-or-nothing)".into(),
        },
        PendingReason::NodeShape => "quota fits; the free capacity is on nodes whose shape cannot hold one of its pods (Kueue would admit it and kube-scheduler keep its pods Pending)".into(),
        PendingReason::QueueMax => format!("the maximum of queue {cq}"),
        PendingReason::Reservation => "held back for a backfill reservation".into(),
    }
}

/// A pods-ready step in Kueue's words.
fn pods_ready_event(at: u64, step: PodsReadyStep) -> PodsReadyEvent {
    let e = |event: &str, reason: Option<&str>| PodsReadyEvent {
        at_s: s(at),
        event: event.into(),
        reason: reason.map(Into::into),
        deadline_s: None,
        count: None,
        requeue_at_s: None,
    };
    match step {
        PodsReadyStep::Admitted { deadline } => PodsReadyEvent {
            deadline_s: Some(s(deadline.0)),
            ..e("QuotaReserved", None)
        },
        PodsReadyStep::Evicted { count, requeue_at } => PodsReadyEvent {
            count: Some(count),
            requeue_at_s: Some(s(requeue_at.0)),
            ..e("Evicted", Some("PodsReadyTimeout"))
        },
        PodsReadyStep::Requeued => e("Requeued", Some("BackoffFinished")),
        PodsReadyStep::Deactivated { evictions } => PodsReadyEvent {
            count: Some(evictions),
            ..e(
                "Deactivated",
                Some("DeactivatedDueToRequeuingLimitExceeded"),
            )
        },
    }
}

/// The mean and the maximum of `v` (`None` when empty).
fn mean_max(v: &[f64]) -> (Option<f64>, Option<f64>) {
    if v.is_empty() {
        return (None, None);
    }
    (
        Some(v.iter().sum::<f64>() / v.len() as f64),
        v.iter().copied().reduce(f64::max),
    )
}

/// Builds the account of a run whose jobs are `refs` in input order (`refs[seq]`).
pub fn account(
    fleet: String,
    notes: Vec<String>,
    refs: &[WorkloadRef],
    rows: &[JobRow],
    r: &RunResult,
) -> KueueAccount {
    let id = |seq: u64| {
        refs.get(seq as usize)
            .map_or_else(|| format!("job {seq}"), |w| w.id.clone())
    };
    let mut by_seq: BTreeMap<u64, WorkloadAccount> = BTreeMap::new();
    for row in rows {
        let w = &refs[row.id as usize];
        let deactivated =
            row.state == FinalState::Cancelled && row.reason.as_deref() == Some(DEACTIVATED);
        by_seq.insert(
            row.id,
            WorkloadAccount {
                workload: w.id.clone(),
                local_queue: w.local_queue.clone(),
                cluster_queue: w.cluster_queue.clone(),
                submitted_s: s(row.submit.0),
                admitted_s: row.start.map(|t| s(t.0)),
                first_start_wait_s: row.start.map(|t| s((t - row.submit).0)),
                wait_s: row.pending_ms.map(s),
                flavor: None,
                readmitted: Vec::new(),
                finished_s: row.finish.map(|t| s(t.0)),
                state: row.state.as_str().into(),
                state_reason: match row.state {
                    FinalState::Rejected | FinalState::Censored | FinalState::RequeuedAtEnd => {
                        row.reason.clone()
                    }
                    FinalState::Cancelled if deactivated => row.reason.clone(),
                    _ => None,
                },
                rejected_because: match (row.state, row.reason.as_deref()) {
                    (FinalState::Rejected, Some(r)) => Some(kueue_rejection(r, w)),
                    _ => None,
                },
                preempted: Vec::new(),
                preempted_by: Vec::new(),
                pending: Vec::new(),
                pods_ready: Vec::new(),
                pods_ready_evictions: 0,
                deactivated_s: None,
                notes: w.notes.clone(),
            },
        );
    }
    for a in &r.admissions {
        if let Some(w) = by_seq.get_mut(&a.seq) {
            if w.flavor.is_none() && w.readmitted.is_empty() && w.admitted_s == Some(s(a.at.0)) {
                w.flavor = a.flavor.clone();
            } else {
                w.readmitted.push((s(a.at.0), a.flavor.clone()));
            }
        }
    }
    for p in &r.preemption_log {
        let reason = kueue_preempt_reason(p.reason).to_string();
        if let Some(w) = by_seq.get_mut(&p.preemptor) {
            w.preempted.push(Preemption {
                at_s: s(p.at.0),
                workload: id(p.victim),
                reason: reason.clone(),
            });
        }
        if let Some(w) = by_seq.get_mut(&p.victim) {
            w.preempted_by.push(Preemption {
                at_s: s(p.at.0),
                workload: id(p.preemptor),
                reason,
            });
        }
    }
    // Where a pending span ends: a start, a pods-ready eviction or a deactivation (the
    // workload leaves its queue), or the next change of reason.
    let mut ends: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for a in &r.admissions {
        ends.entry(a.seq).or_default().push(a.at.0);
    }
    for e in &r.pods_ready_log {
        if let Some(w) = by_seq.get_mut(&e.seq) {
            match e.kind {
                PodsReadyStep::Evicted { .. } => {
                    w.pods_ready_evictions += 1;
                    ends.entry(e.seq).or_default().push(e.at.0);
                }
                PodsReadyStep::Deactivated { .. } => {
                    w.pods_ready_evictions += 1;
                    w.deactivated_s = Some(s(e.at.0));
                    ends.entry(e.seq).or_default().push(e.at.0);
                }
                PodsReadyStep::Admitted { .. } | PodsReadyStep::Requeued => {}
            }
            w.pods_ready.push(pods_ready_event(e.at.0, e.kind));
        }
    }
    for v in ends.values_mut() {
        v.sort_unstable();
    }
    let mut changes: BTreeMap<u64, Vec<(u64, PendingReason)>> = BTreeMap::new();
    for c in &r.reason_log {
        changes.entry(c.seq).or_default().push((c.at.0, c.reason));
    }
    for (seq, list) in changes {
        let Some(w) = by_seq.get_mut(&seq) else {
            continue;
        };
        let st = ends.get(&seq).cloned().unwrap_or_default();
        let wref = &refs[seq as usize];
        for (i, &(at, reason)) in list.iter().enumerate() {
            let next_change = list.get(i + 1).map(|x| x.0);
            let next_end = st.iter().copied().find(|&t| t >= at);
            let to = match (next_change, next_end) {
                (Some(c), Some(t)) => Some(c.min(t)),
                (a, b) => a.or(b),
            };
            if to == Some(at) {
                continue;
            }
            w.pending.push(PendingSpan {
                from_s: s(at),
                to_s: to.map(s),
                reason: kueue_reason(reason, wref),
                code: reason.as_str().into(),
            });
        }
    }
    // Per ClusterQueue.
    let mut cqs: BTreeMap<String, ClusterQueueSummary> = BTreeMap::new();
    let mut waits: BTreeMap<String, (Vec<f64>, Vec<f64>)> = BTreeMap::new();
    for (&seq, w) in &by_seq {
        let wref = &refs[seq as usize];
        let name = w.cluster_queue.clone().unwrap_or_else(|| "(none)".into());
        let e = cqs
            .entry(name.clone())
            .or_insert_with(|| ClusterQueueSummary {
                name: name.clone(),
                cohort: wref.cohort.clone(),
                ..ClusterQueueSummary::default()
            });
        e.workloads += 1;
        match (w.first_start_wait_s, w.deactivated_s) {
            (Some(first), _) => {
                e.admitted += 1;
                let (all, firsts) = waits.entry(name).or_default();
                all.push(w.wait_s.unwrap_or(first));
                firsts.push(first);
            }
            (None, Some(_)) => {}
            (None, None) => e.never_admitted += 1,
        }
        e.deactivated += u64::from(w.deactivated_s.is_some());
        e.preemptions_caused += w.preempted.len() as u64;
        e.preemptions_suffered += w.preempted_by.len() as u64;
        e.pods_ready_evictions += u64::from(w.pods_ready_evictions);
    }
    for (name, (all, firsts)) in waits {
        let e = cqs.get_mut(&name).expect("entered above");
        (e.mean_wait_s, e.max_wait_s) = mean_max(&all);
        (e.mean_first_start_wait_s, e.max_first_start_wait_s) = mean_max(&firsts);
    }
    KueueAccount {
        fleet,
        notes,
        workloads: by_seq.into_values().collect(),
        cluster_queues: cqs.into_values().collect(),
    }
}

fn secs(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0} s")
    } else {
        format!("{v:.3} s")
    }
}

/// The account as text.
pub fn render(a: &KueueAccount) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "fleet: {}", a.fleet);
    let _ = writeln!(
        o,
        "admission: a workload is admitted when its quota and all its pods' placement fit (fleetsim); Kueue reserves quota first and kube-scheduler places the pods"
    );
    if !a.notes.is_empty() {
        let _ = writeln!(o, "not simulated, or chosen for the manifests:");
        for n in &a.notes {
            let _ = writeln!(o, "  - {n}");
        }
    }
    let _ = writeln!(o);
    for w in &a.workloads {
        render_workload(&mut o, w);
    }
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "waits: wait = every second pending, after preemptions and evictions too (wait_s); first = submit to first admission (first_start_wait_s); means over the workloads admitted"
    );
    let row = |o: &mut String, c: [&str; 13]| {
        let _ = writeln!(
            o,
            "{:<24} {:<16} {:>9} {:>8} {:>10} {:>10} {:>10} {:>10} {:>6} {:>8} {:>7} {:>11} {:>5}",
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10], c[11], c[12]
        );
    };
    row(
        &mut o,
        [
            "ClusterQueue",
            "Cohort",
            "workloads",
            "admitted",
            "mean wait",
            "max wait",
            "mean first",
            "max first",
            "caused",
            "suffered",
            "evicted",
            "deactivated",
            "never",
        ],
    );
    for q in &a.cluster_queues {
        let opt = |v: Option<f64>| v.map_or("-".into(), secs);
        row(
            &mut o,
            [
                &q.name,
                q.cohort.as_deref().unwrap_or("-"),
                &q.workloads.to_string(),
                &q.admitted.to_string(),
                &opt(q.mean_wait_s),
                &opt(q.max_wait_s),
                &opt(q.mean_first_start_wait_s),
                &opt(q.max_first_start_wait_s),
                &q.preemptions_caused.to_string(),
                &q.preemptions_suffered.to_string(),
                &q.pods_ready_evictions.to_string(),
                &q.deactivated.to_string(),
                &q.never_admitted.to_string(),
            ],
        );
    }
    o
}

/// One workload's lines of the text account.
fn render_workload(o: &mut String, w: &WorkloadAccount) {
    let _ = writeln!(
        o,
        "{}  [{} → ClusterQueue {}]",
        w.workload,
        w.local_queue.as_deref().unwrap_or("no LocalQueue"),
        w.cluster_queue.as_deref().unwrap_or("none")
    );
    let _ = write!(o, "  submitted {}", secs(w.submitted_s));
    match w.admitted_s {
        Some(t) => {
            let waited = match w.wait_s {
                Some(all) if all != t - w.submitted_s => format!(
                    "waited {} to first admission, {} pending in all",
                    secs(t - w.submitted_s),
                    secs(all)
                ),
                _ => format!("waited {}", secs(t - w.submitted_s)),
            };
            let _ = write!(
                o,
                ", admitted {} ({waited}){}",
                secs(t),
                w.flavor
                    .as_ref()
                    .map_or(String::new(), |f| format!(" in flavor {f}"))
            );
        }
        None if w.deactivated_s.is_some() => {
            let _ = write!(o, ", its pods never all ready");
        }
        None => {
            let _ = write!(o, ", never admitted");
        }
    }
    match (w.finished_s, w.deactivated_s) {
        (Some(t), _) => {
            let _ = writeln!(o, ", finished {}", secs(t));
        }
        (None, Some(t)) => {
            let _ = writeln!(
                o,
                ": deactivated at {} after {} PodsReadyTimeout eviction(s), more than backoffLimitCount allows: Kueue sets spec.active: false and does not admit it again",
                secs(t),
                w.pods_ready_evictions
            );
        }
        (None, None) => {
            let _ = writeln!(
                o,
                ": {}{}",
                w.state,
                w.state_reason
                    .as_ref()
                    .map_or(String::new(), |r| format!(" ({r})"))
            );
        }
    }
    if let Some(r) = &w.rejected_because {
        let _ = writeln!(o, "  {r}");
    }
    // Its events in time order (at one instant: preemptions, evictions and requeues,
    // quota reservations waiting for pods, waits, then readmissions).
    let mut events: Vec<(f64, u8, String)> = Vec::new();
    for p in &w.preempted {
        events.push((
            p.at_s,
            0,
            format!(
                "preempted {} at {} ({})",
                p.workload,
                secs(p.at_s),
                p.reason
            ),
        ));
    }
    for p in &w.preempted_by {
        events.push((
            p.at_s,
            0,
            format!(
                "preempted by {} at {} ({})",
                p.workload,
                secs(p.at_s),
                p.reason
            ),
        ));
    }
    for e in &w.pods_ready {
        let (order, text) = match e.event.as_str() {
            "QuotaReserved" => (
                2,
                format!(
                    "quota reserved {}: its pods wait for nodes being provisioned (waitForPodsReady: evicted at {} unless all are ready)",
                    secs(e.at_s),
                    e.deadline_s.map_or("-".into(), secs)
                ),
            ),
            "Evicted" => (
                1,
                format!(
                    "evicted {}: PodsReadyTimeout (requeueState.count {}, requeueAt {})",
                    secs(e.at_s),
                    e.count.unwrap_or(0),
                    e.requeue_at_s.map_or("-".into(), secs)
                ),
            ),
            "Requeued" => (1, format!("requeued {}: BackoffFinished", secs(e.at_s))),
            _ => (
                1,
                format!(
                    "deactivated {}: PodsReadyTimeout eviction {} exceeds backoffLimitCount (Evicted: DeactivatedDueToRequeuingLimitExceeded; spec.active: false)",
                    secs(e.at_s),
                    e.count.unwrap_or(0)
                ),
            ),
        };
        events.push((e.at_s, order, text));
    }
    for p in &w.pending {
        events.push((
            p.from_s,
            3,
            format!(
                "pending {}–{}: {}",
                secs(p.from_s),
                p.to_s.map_or("end".into(), secs),
                p.reason
            ),
        ));
    }
    for (t, f) in &w.readmitted {
        events.push((
            *t,
            4,
            format!(
                "readmitted {}{}",
                secs(*t),
                f.as_ref()
                    .map_or(String::new(), |f| format!(" in flavor {f}"))
            ),
        ));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    for (_, _, e) in events {
        let _ = writeln!(o, "  {e}");
    }
    for n in &w.notes {
        let _ = writeln!(o, "  note: {n}");
    }
}
