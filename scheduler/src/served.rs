//! What the service keeps about decisions and ended jobs for its readers: names beside the
//! indices a decision carries ([`ServedDecision`]), and the jobs that ended (finished,
//! cancelled, rejected) for a window after ([`EndedJobs`]).
//!
//! A decision is kept compact ([`Kept`]: the decision and the queue and tenant numbers of
//! the jobs it concerns); its names are looked up when it is answered: node and cell names
//! from the fleet, queue names from the spec's queue table, tenant names from the tokens
//! file's `[tenants]` table (`null` when a number has no name there).

use std::collections::{BTreeMap, VecDeque};

use fleetsim_policies::live::{Decision, LiveState};
use serde::{Deserialize, Serialize};

use crate::tenancy::Tenancy;

/// The queue and tenant numbers of a job a decision concerns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Queue id.
    pub queue: u32,
    /// Tenant number.
    pub tenant: u32,
}

/// A decision as kept: the decision, its job's owner and, for a preemption, the
/// preemptor's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kept {
    /// The decision.
    pub decision: Decision,
    /// Queue and tenant of its job (the victim's, for a preemption).
    pub owner: Option<Owner>,
    /// Queue and tenant of the preemptor (preemptions only).
    pub preemptor: Option<Owner>,
}

/// Names of what a decision's indices point at.
#[derive(schemars::JsonSchema, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Names {
    /// The cell's name (admits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    /// The nodes' names, one per task binding, in the bindings' order (admits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nodes: Vec<String>,
    /// The job's queue (the victim's, for a preemption).
    #[serde(default)]
    pub queue: Option<String>,
    /// The job's tenant (`null` when the tokens file names none for its number).
    #[serde(default)]
    pub tenant: Option<String>,
    /// The preemptor's queue (preemptions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptor_queue: Option<String>,
    /// The preemptor's tenant (preemptions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptor_tenant: Option<String>,
}

/// A decision as the service answers it: the decision's own fields, with `names` beside
/// them (`{"type": "admit", "t": 0, "job": 1, "cell": 0, "tasks": [...], "names":
/// {"cell": "hopper", "nodes": ["hopper-000"], "queue": "research-a", "tenant":
/// "team-a"}}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServedDecision {
    /// The decision.
    pub decision: Decision,
    /// The names of what it points at.
    pub names: Names,
}

impl Serialize for ServedDecision {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The decision's fields in their order, then `names`.
        #[derive(Serialize)]
        struct Flat<'a> {
            #[serde(flatten)]
            decision: &'a Decision,
            names: &'a Names,
        }
        Flat {
            decision: &self.decision,
            names: &self.names,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ServedDecision {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut v = serde_json::Value::deserialize(d)?;
        let names = v
            .as_object_mut()
            .and_then(|m| m.remove("names"))
            .map(serde_json::from_value)
            .transpose()
            .map_err(D::Error::custom)?
            .unwrap_or_default();
        let decision = serde_json::from_value(v).map_err(D::Error::custom)?;
        Ok(ServedDecision { decision, names })
    }
}

impl schemars::JsonSchema for ServedDecision {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ServedDecision".into()
    }

    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let decision = g.subschema_for::<Decision>();
        let names = g.subschema_for::<Names>();
        schemars::json_schema!({
            "description": "A decision with `names` beside its indices.",
            "allOf": [
                decision,
                {"type": "object", "required": ["names"], "properties": {"names": names}}
            ]
        })
    }
}

/// The tables names come from.
pub struct Namer<'a> {
    /// The live state (fleet, queue table).
    pub live: &'a LiveState,
    /// The tenant table.
    pub tenancy: &'a Tenancy,
}

impl Namer<'_> {
    fn queue(&self, q: u32) -> Option<String> {
        self.live.queue_names().get(q as usize).cloned()
    }

    fn tenant(&self, t: u32) -> Option<String> {
        self.tenancy.name(t).map(str::to_string)
    }

    /// `k` with its names.
    pub fn serve(&self, k: &Kept) -> ServedDecision {
        let fleet = self.live.fleet();
        let mut n = Names::default();
        if let Decision::Admit { cell, tasks, .. } = &k.decision {
            n.cell = fleet.cells().get(*cell as usize).map(|c| c.name.clone());
            n.nodes = tasks
                .iter()
                .filter(|b| (b.node as usize) < fleet.nodes().len())
                .map(|b| {
                    fleet
                        .node_name(fleetsim_policies::NodeId(b.node))
                        .to_string()
                })
                .collect();
        }
        if let Some(o) = k.owner {
            n.queue = self.queue(o.queue);
            n.tenant = self.tenant(o.tenant);
        }
        if let Some(o) = k.preemptor {
            n.preemptor_queue = self.queue(o.queue);
            n.preemptor_tenant = self.tenant(o.tenant);
        }
        ServedDecision {
            decision: k.decision.clone(),
            names: n,
        }
    }
}

/// Default [`EndedJobs`] window: the last 100,000 jobs that ended.
pub const DEFAULT_RETAIN_ENDED_JOBS: usize = 100_000;

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ended {
    /// `finished`, `cancelled` or `rejected`.
    pub state: String,
    /// Cluster time it ended at, ms.
    pub t: u64,
    /// Why it was rejected (the reject reason's name).
    pub reason: Option<String>,
    /// Its queue and tenant, when known.
    pub owner: Option<Owner>,
}

/// The jobs that ended most recently, by id (an id reused by a later job that ended too
/// names the later one), at most a window's count.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EndedJobs {
    by_id: BTreeMap<u32, (u64, Ended)>,
    /// (generation, id) in the order they ended.
    order: VecDeque<(u64, u32)>,
    next: u64,
}

impl EndedJobs {
    /// Records that job `id` ended, keeping at most `window` jobs.
    pub fn insert(&mut self, id: u32, e: Ended, window: usize) {
        let g = self.next;
        self.next += 1;
        self.by_id.insert(id, (g, e));
        self.order.push_back((g, id));
        while self.order.len() > window {
            let Some((g, id)) = self.order.pop_front() else {
                break;
            };
            if self.by_id.get(&id).is_some_and(|(gen, _)| *gen == g) {
                self.by_id.remove(&id);
            }
        }
    }

    /// How job `id` ended, if it is in the window.
    pub fn get(&self, id: u32) -> Option<&Ended> {
        self.by_id.get(&id).map(|(_, e)| e)
    }

    /// Jobs in the window.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether the window is empty.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn served_decisions_carry_names_beside_the_decision() {
        let d = ServedDecision {
            decision: Decision::Reject {
                t: 5,
                job: 3,
                reason: fleetsim_policies::RejectReason::EmptyGang,
            },
            names: Names {
                queue: Some("research-a".into()),
                ..Names::default()
            },
        };
        let text = serde_json::to_string(&d).unwrap();
        assert_eq!(
            text,
            r#"{"type":"reject","t":5,"job":3,"reason":"EmptyGang","names":{"queue":"research-a","tenant":null}}"#
        );
        assert_eq!(serde_json::from_str::<ServedDecision>(&text).unwrap(), d);
    }

    #[test]
    fn the_ended_window_keeps_the_last_jobs_and_the_latest_of_an_id() {
        let e = |t| Ended {
            state: "finished".into(),
            t,
            reason: None,
            owner: None,
        };
        let mut w = EndedJobs::default();
        w.insert(1, e(10), 2);
        w.insert(2, e(20), 2);
        w.insert(1, e(30), 2);
        // Job 1's first end left the window; its second is kept, with job 2's.
        assert_eq!(w.get(1).map(|e| e.t), Some(30));
        assert_eq!(w.get(2).map(|e| e.t), Some(20));
        w.insert(3, e(40), 2);
        assert_eq!((w.get(2), w.len()), (None, 2));
    }
}
