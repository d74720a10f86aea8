//! Queue names: the queue a job joins, the queue table a run builds, and the run's tenant
//! and queue names with their ids.

use std::collections::BTreeMap;

use fleetsim_policies::{QueueId, SimDuration, SimTime, TenantId};

use super::EngineConfig;
use crate::scenario::QueueMapping;
use crate::workload::{JobStream, TraceError};

/// The tenants and queues a run has seen, each id the index of its name: the declared
/// queues first (in [`EngineConfig::queues`] order), then tenants and queues in order of
/// first appearance.
#[derive(Debug, Default)]
pub(in crate::engine) struct Names {
    /// Tenant names, by [`TenantId`].
    pub(in crate::engine) tenants: Vec<String>,
    /// Tenant name → id.
    pub(in crate::engine) tenant_ids: BTreeMap<String, TenantId>,
    /// Queue names, by [`QueueId`].
    pub(in crate::engine) queues: Vec<String>,
    /// Queue name (a declared queue's `local_queues` too) → id.
    pub(in crate::engine) queue_ids: BTreeMap<String, QueueId>,
    /// Per queue, its default and maximum time limits.
    pub(in crate::engine) queue_limits: Vec<(Option<SimDuration>, Option<SimDuration>)>,
    /// Queues with ids below this are the configured ones.
    pub(in crate::engine) known_queues: u32,
}

/// The name of the queue `spec` joins under `mapping`: its own queue, else its tenant
/// ([`QueueMapping::PerTenant`]) or `default` ([`QueueMapping::Single`]). A declared
/// queue's `local_queues` are other names of it.
pub fn queue_name(spec: &crate::workload::JobSpec, mapping: QueueMapping) -> &str {
    match (&spec.queue, mapping) {
        (Some(q), _) => q,
        (None, QueueMapping::PerTenant) => &spec.tenant,
        (None, QueueMapping::Single) => "default",
    }
}

/// The queue table a run of `cfg` over `stream` builds (names by queue id), without running
/// it: the declared queues ([`EngineConfig::queues`], a `local_queues` name being another
/// name of its queue), then the names the arrivals use ([`queue_name`]), serving replicas
/// before the trace's jobs of the same instant, up to the horizon, as the run registers
/// them. The live service's twin refuses queue ids outside it.
///
/// # Errors
/// The stream's.
pub fn queue_table(
    cfg: &EngineConfig,
    stream: &mut dyn JobStream,
) -> Result<Vec<String>, TraceError> {
    let mut names: Vec<String> = Vec::new();
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    // As `Simulation::queue_id`: a known name keeps its id, a new one gets the next.
    fn id_of(names: &mut Vec<String>, ids: &mut BTreeMap<String, usize>, n: &str) -> usize {
        if let Some(&q) = ids.get(n) {
            return q;
        }
        ids.insert(n.to_string(), names.len());
        names.push(n.to_string());
        names.len() - 1
    }
    for q in &cfg.queues {
        let id = id_of(&mut names, &mut ids, &q.name);
        for lq in &q.local_queues {
            ids.entry(lq.clone()).or_insert(id);
        }
    }
    // Replica arrivals in the engine's order: (start, service, replica index).
    let mut replicas: Vec<(SimTime, usize, u32)> = Vec::new();
    if let Some(plan) = &cfg.serving {
        for (s, svc) in plan.services.iter().enumerate() {
            replicas.extend(svc.replicas.iter().map(|r| (r.start, s, r.index)));
        }
    }
    replicas.sort_unstable();
    let mut replicas = replicas.into_iter().peekable();
    let mut next = stream.next().transpose()?;
    loop {
        let t = match (
            next.as_ref().map(|j| j.submit),
            replicas.peek().map(|r| r.0),
        ) {
            (None, None) => break,
            (Some(a), Some(r)) => a.min(r),
            (a, r) => a.or(r).expect("one is some"),
        };
        if cfg.horizon.is_some_and(|h| t > h) {
            break;
        }
        while let Some(&(_, s, _)) = replicas.peek().filter(|r| r.0 == t) {
            let plan = cfg.serving.as_ref().expect("replicas come from a plan");
            id_of(&mut names, &mut ids, &plan.services[s].queue);
            replicas.next();
        }
        while let Some(spec) = next.as_ref().filter(|j| j.submit == t) {
            id_of(&mut names, &mut ids, queue_name(spec, cfg.queue_mapping));
            next = stream.next().transpose()?;
        }
    }
    Ok(names)
}
