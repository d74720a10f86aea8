//! Per-tenant authorization of the service's job routes (issue 21 item 6).
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

use fleetsim_policies::live::{Event, LiveState};

use crate::security::Principal;

/// Tenant names ↔ tenant numbers, and the rule above.
#[derive(Clone, Debug, Default)]
pub struct Tenancy {
    names: BTreeMap<u32, String>,
}

impl Tenancy {
    /// From the tokens file's `[tenants]` table (name → number; numbers distinct).
    pub fn new(ids: &BTreeMap<String, u32>) -> Tenancy {
        Tenancy {
            names: ids.iter().map(|(n, &i)| (i, n.clone())).collect(),
        }
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

/// The wire name of an event's type (`node_added`, …), from its serde tag.
pub fn event_type(e: &Event) -> String {
    serde_json::to_value(e)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(String::from))
        .unwrap_or_default()
}
