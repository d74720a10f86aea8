//! Per-tenant authorization of the service's job routes.
//!
//! Events carry tenant *numbers* (`JobSpec.tenant`); tokens name tenants. The tokens
//! file's `[tenants]` table ([`crate::security::Tokens::tenant_ids`]) joins the two. The
//! rule, checked under the service's lock so that a job's owner cannot change between the
//! check and the apply:
//!
//! * `POST /v1/events`: a tenant principal may send `job_submitted` for a tenant it is listed
//!   for, and `job_cancelled` for a job owned by such a tenant. Every other event is the
//!   cluster agent's (node events, `job_started` / `job_finished` / `job_lost` /
//!   `victim_released` reports, `pass`): admins only. A batch is checked whole before it is
//!   logged or applied, so a batch touching several tenants needs every one; ownership
//!   follows the batch (a job submitted earlier in the batch may be cancelled later in it).
//!   Refused: `403`, nothing logged or applied.
//! * Field by field, a tenant principal's submit may name only a queue its token lists
//!   (`queues`: the spec's queue names), a `priority` that is the value of one of its
//!   token's `priority_classes` (none listed: 0), a `runtime_estimate_ms` only when its
//!   token says `runtime_estimates = true` (backfill and shortest-first orders trust it:
//!   give it to principals whose jobs the cluster agent stops at their estimate), and no
//!   progress of earlier runs (`done_ms`, `attained_gpu_ms`: the cluster agent's to
//!   report, through `job_started`). What orders the queues is the service's: a tenant
//!   event's `t` is the service's time (the state's latest time under `--clock event`,
//!   the wall clock under `--clock wall`), its job's `submit` that time, and its `seq` one
//!   above every `seq` accepted before ([`Tenancy::stamp`]).
//! * `GET /v1/jobs/{id}`: a tenant principal reads jobs of its tenants. A job of another
//!   tenant and an id no job has get the **same** `403` body, so a tenant cannot tell which
//!   ids other tenants use by reading or cancelling; an admin gets `404` for an unknown id.
//!   (Ids are one cluster-wide space: a tenant submitting an id another tenant's live job
//!   holds is refused, which does tell it the id is taken; ids are the adapter's to assign.)
//! * `GET /v1/pending`: filtered to the principal's tenants' jobs (as `kubectl get
//!   workloads -n NS` or `squeue --me`); admins see every job.
//! * The decision log and its stream carry every tenant's admits and preemptions (nodes,
//!   victims): admins only, in the security layer's resolver ([`crate::serve::resolver`]).
//!
//! Without a security layer (no [`Principal`] in the request) every request is
//! [`Principal::local`], an admin.

use std::collections::BTreeMap;

use fleetsim_policies::live::{Event, JobSpec, LiveState};

use crate::security::Principal;

/// Tenant names ↔ tenant numbers, and the rule above.
#[derive(Clone, Debug, Default)]
pub struct Tenancy {
    names: BTreeMap<u32, String>,
    priority_classes: BTreeMap<String, i32>,
}

impl Tenancy {
    /// From the tokens file's `[tenants]` table (name → number; numbers distinct) and its
    /// `[priority_classes]` table (name → priority).
    pub fn new(ids: &BTreeMap<String, u32>, priority_classes: &BTreeMap<String, i32>) -> Tenancy {
        Tenancy {
            names: ids.iter().map(|(n, &i)| (i, n.clone())).collect(),
            priority_classes: priority_classes.clone(),
        }
    }

    /// The tenant name of number `id`, if the table has it.
    pub fn name(&self, id: u32) -> Option<&str> {
        self.names.get(&id).map(String::as_str)
    }

    /// Sets what a tenant principal may not choose itself (see the module docs): each
    /// event's `t` to `now`, a job's `submit` to `now` and its `seq` to the next of
    /// `next_seq`. Admins' batches are left as sent.
    pub fn stamp(p: &Principal, events: &mut [Event], now: u64, next_seq: &mut u64) {
        if p.admin {
            return;
        }
        for e in events {
            e.set_t(now);
            if let Event::JobSubmitted { job, .. } | Event::JobStarted { job, .. } = e {
                job.submit = None;
                job.seq = *next_seq;
                *next_seq = next_seq.saturating_add(1);
            }
        }
    }

    /// The priorities `p`'s jobs may take: its classes' values (none: 0).
    fn priorities(&self, p: &Principal) -> Vec<i32> {
        let mut v: Vec<i32> = p
            .priority_classes
            .iter()
            .filter_map(|c| self.priority_classes.get(c).copied())
            .collect();
        if p.priority_classes.is_empty() {
            v.push(0);
        }
        v
    }

    /// Checks the fields of a tenant principal's job (see the module docs).
    fn check_job(&self, p: &Principal, live: &LiveState, job: &JobSpec) -> Result<(), String> {
        let queue = live.queue_names().get(job.queue as usize);
        if !queue.is_some_and(|q| p.queues.contains(q)) {
            let shown = queue.map_or(format!("{}", job.queue), |q| format!("{} `{q}`", job.queue));
            return Err(format!(
                "field `job.queue`: principal `{}` may not submit to queue {shown}; its token lists {}",
                p.name,
                list(p.queues.iter())
            ));
        }
        let allowed = self.priorities(p);
        if !allowed.contains(&job.priority) {
            return Err(format!(
                "field `job.priority`: principal `{}` may not submit at priority {}; its token's priority classes allow {}",
                p.name,
                job.priority,
                list(allowed.iter())
            ));
        }
        if job.runtime_estimate_ms.is_some() && !p.runtime_estimates {
            return Err(format!(
                "field `job.runtime_estimate_ms`: principal `{}` may not send runtime estimates (backfill and shortest-first orders trust them; its token needs `runtime_estimates = true`, given to principals whose jobs the cluster agent stops at their estimate)",
                p.name
            ));
        }
        if job.done_ms != 0 || job.attained_gpu_ms != 0 {
            let field = if job.done_ms != 0 {
                "job.done_ms"
            } else {
                "job.attained_gpu_ms"
            };
            return Err(format!(
                "field `{field}`: principal `{}` may not report progress of earlier runs (the cluster agent's, with `job_started`)",
                p.name
            ));
        }
        Ok(())
    }

    /// Tenant number `id` as shown in messages: its name in backquotes, else `#id`.
    pub fn show(&self, id: u32) -> String {
        match self.names.get(&id) {
            Some(n) => format!("`{n}`"),
            None => format!("#{id}"),
        }
    }

    /// Whether `p` may act for tenant number `tenant`: an admin, or a principal listing the
    /// tenant's name.
    pub fn may(&self, p: &Principal, tenant: u32) -> bool {
        p.admin
            || self
                .names
                .get(&tenant)
                .is_some_and(|n| p.tenants.contains(n))
    }

    /// The `403` message of a tenant principal naming job `job` that is not its tenants'
    /// (or does not exist): the same either way.
    pub fn not_yours(p: &Principal, job: u32) -> String {
        format!(
            "principal `{}` has no job {job} among its tenants' jobs",
            p.name
        )
    }

    /// Checks a whole batch for `p` against the owners in `live` (see the module docs).
    ///
    /// # Errors
    /// The index of the first event `p` may not send and the `403` message.
    pub fn check_batch(
        &self,
        p: &Principal,
        live: &LiveState,
        events: &[Event],
    ) -> Result<(), (usize, String)> {
        if p.admin {
            return Ok(());
        }
        // Owners changed by earlier events of this batch: Some(tenant) submitted, None ended.
        let mut overlay: BTreeMap<u32, Option<u32>> = BTreeMap::new();
        let owner = |overlay: &BTreeMap<u32, Option<u32>>, job: u32| match overlay.get(&job) {
            Some(o) => *o,
            None => live.tenant_of(job),
        };
        for (i, e) in events.iter().enumerate() {
            match e {
                Event::JobSubmitted { job, .. } => {
                    if !self.may(p, job.tenant) {
                        return Err((
                            i,
                            format!(
                                "principal `{}` may not submit job {} as tenant {}",
                                p.name,
                                job.id,
                                self.show(job.tenant)
                            ),
                        ));
                    }
                    match owner(&overlay, job.id) {
                        Some(t) if !self.may(p, t) => {
                            return Err((i, Tenancy::not_yours(p, job.id)));
                        }
                        // Free, or its own live job (the apply refuses the duplicate, 422).
                        _ => {}
                    }
                    self.check_job(p, live, job).map_err(|m| (i, m))?;
                    overlay.insert(job.id, Some(job.tenant));
                }
                Event::JobCancelled { job, .. } => match owner(&overlay, *job) {
                    Some(t) if self.may(p, t) => {
                        overlay.insert(*job, None);
                    }
                    _ => return Err((i, Tenancy::not_yours(p, *job))),
                },
                other => {
                    return Err((
                        i,
                        format!(
                            "principal `{}` is not an admin; `{}` events are the cluster agent's",
                            p.name,
                            event_type(other)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `items` in backquotes, comma-separated (`none` when empty).
fn list<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    let v: Vec<String> = items.map(|x| format!("`{x}`")).collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

/// The wire name of an event's type (`node_added`, …), from its serde tag.
pub fn event_type(e: &Event) -> String {
    serde_json::to_value(e)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(String::from))
        .unwrap_or_default()
}
