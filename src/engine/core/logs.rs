//! The recorded logs of a run: the live event stream, pending reasons, quota usage and
//! the fragmentation samples.

use std::collections::BTreeMap;

use fleetsim_policies::live;
use fleetsim_policies::{PendingReason, QueueConfig, SimTime, Tier};

use crate::engine::{
    AdmissionEvent, JobState, LiveRecord, PreemptionEvent, PreemptionPlan, QuotaSample,
    ReasonChange, Simulation,
};

/// What a run records beside its counts, each kept only when its setting asks for it
/// ([`EngineConfig`](crate::engine::EngineConfig)`::record_*`) and handed to the
/// [`RunResult`](crate::engine::RunResult) fields of the same names at the end.
#[derive(Debug, Default)]
pub(in crate::engine) struct Logs {
    /// Every preemption (`record_preemptions`).
    pub(in crate::engine) preemption_log: Vec<PreemptionEvent>,
    /// Every start with its quota flavor (`record_admissions`).
    pub(in crate::engine) admissions: Vec<AdmissionEvent>,
    /// Pending reasons as they changed (`record_admissions`).
    pub(in crate::engine) reason_log: Vec<ReasonChange>,
    /// Each pending job's last logged reason, by input position (`record_admissions`).
    pub(in crate::engine) reasons_seen: BTreeMap<u64, PendingReason>,
    /// Every preemption plan of a scheduling pass (`record_preemptions`).
    pub(in crate::engine) preemption_plans: Vec<PreemptionPlan>,
    /// The live event stream and its decisions (`record_live`).
    pub(in crate::engine) live: Option<Box<LiveRecord>>,
    /// Quota usage after every instant at which it changed (`record_preemptions` with
    /// `audit_every_instant`).
    pub(in crate::engine) quota_log: Vec<QuotaSample>,
}

impl Simulation {
    /// Records `ev` for [`EngineConfig::record_live`](crate::engine::EngineConfig::record_live).
    pub(in crate::engine) fn record_live(&mut self, ev: impl FnOnce(u64) -> live::Event) {
        let t = self.now.0;
        if let Some(l) = self.logs.live.as_mut() {
            l.events.push(ev(t));
        }
    }

    /// Marks the live record incomplete
    /// ([`LiveRecord::unsupported`](crate::engine::LiveRecord::unsupported)).
    pub(in crate::engine) fn live_unsupported(&mut self, what: &str) {
        if let Some(l) = self.logs.live.as_mut() {
            l.unsupported.get_or_insert_with(|| what.to_string());
        }
    }

    /// Logs the pending jobs whose reason changed at instant `t` (`record_admissions`).
    pub(in crate::engine) fn log_reasons(&mut self, t: SimTime) {
        let mut now: BTreeMap<u64, PendingReason> = BTreeMap::new();
        for (job, r) in self.sched.pending_with_reasons() {
            now.insert(job.seq, r);
        }
        for (&seq, &reason) in &now {
            if self.logs.reasons_seen.get(&seq) != Some(&reason) {
                self.logs
                    .reason_log
                    .push(ReasonChange { at: t, seq, reason });
            }
        }
        self.logs.reasons_seen = now;
    }

    /// Samples the fleet's fragmentation (FGD measure, against the typical tasks of the jobs
    /// submitted so far) at every due time-series interval start `b` with `due(b)`.
    pub(in crate::engine) fn sample_fragmentation(&mut self, due: impl Fn(SimTime) -> bool) {
        while let Some(b) = self.metrics.next_sample_at() {
            if !due(b) {
                break;
            }
            let frag = self.sched.fleet_fragmentation_milli(&self.fleet);
            let idle = self
                .fleet
                .available_gpu_milli()
                .saturating_sub(self.fleet.allocated_gpu_milli());
            self.metrics.record_fragmentation(frag, idle);
        }
    }

    /// Appends a [`QuotaSample`] at `t` when the quota usage changed since the last one.
    pub(in crate::engine) fn log_quota(&mut self, t: SimTime) {
        let u = self.sched.quota_usage_by_queue();
        let Some(tree) = self.sched.quota() else {
            return;
        };
        let mut holding = vec![0u64; u.len()];
        let mut terminating = vec![0u64; u.len()];
        for j in self.jobs.iter().filter(|j| j.live) {
            let q = j.queue;
            let tier = self
                .cfg
                .queues
                .get(q.index())
                .map_or(QueueConfig::default().tier, |s| s.config.tier);
            if q.index() >= u.len() || !tree.has_queue(q) || tier == Tier::BestEffort {
                continue;
            }
            let g = j.shape.total_gpu_milli() * j.tasks as u64;
            match j.state {
                JobState::Running => holding[q.index()] += g,
                JobState::Terminating => {
                    holding[q.index()] += g;
                    terminating[q.index()] += g;
                }
                _ => {}
            }
        }
        let changed = self.logs.quota_log.last().is_none_or(|l| {
            l.queue_usage != u
                || l.holding_gpu_milli != holding
                || l.terminating_gpu_milli != terminating
        });
        if changed {
            self.logs.quota_log.push(QuotaSample {
                at: t,
                queue_usage: u,
                holding_gpu_milli: holding,
                terminating_gpu_milli: terminating,
            });
        }
    }
}
