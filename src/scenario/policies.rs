//! From a scenario's `[policy]`, `[[queues]]` and `[[cohorts]]` to the policy crate's stage
//! objects ([`Extensions`]: quota tree, admission order, preemption, backfill, budget). Needs
//! the built fleet: quota flavors name its accelerator models. (`[[node_events]]` become the
//! engine's node changes in [`crate::engine::node_changes`].)
//!
//! Units: quota `gpus` are accelerators (× 1000 → GPU-milli), `cpus` cores (× 1000 →
//! milli-cores), `memory_gib` GiB (× 1024 → MiB), each rounded to the nearest unit; weights
//! × 1000 → thousandths.

use std::collections::BTreeMap;

use fleetsim_policies::quota::{Flavor, FlavorQuota, QuotaNodeSpec, QuotaSpec, ResourceQuota};
use fleetsim_policies::{Extensions, FleetState, ModelId, ModelSet, QueueId, QuotaTree};

use super::schema::*;
use super::{Loaded, ScenarioError};

/// Quota resources scale: (accelerators, cores, GiB) → (GPU-milli, milli-cores, MiB).
const SCALE: [f64; 3] = [1000.0, 1000.0, 1024.0];

fn units(v: f64, r: usize) -> u64 {
    (v * SCALE[r]).round() as u64
}

/// Weight in thousandths (default 1).
pub fn weight_milli(w: Option<f64>) -> u64 {
    (w.unwrap_or(1.0) * 1000.0).round() as u64
}

fn flavor_quota(f: &FlavorQuotaSpec) -> FlavorQuota {
    let conv = |q: Option<ResourceQuotaSpec>, r: usize| {
        q.map(|q| ResourceQuota {
            nominal: units(q.nominal, r),
            borrowing_limit: q.borrowing_limit.map(|v| units(v, r)),
            lending_limit: q.lending_limit.map(|v| units(v, r)),
        })
    };
    FlavorQuota {
        flavor: f.name.clone(),
        resources: [conv(f.gpus, 0), conv(f.cpus, 1), conv(f.memory_gib, 2)],
    }
}

/// The fleet model a `[[flavors]]` `models` entry names: equal to a model name ignoring
/// case, else the first model (in name order) that is a token of the entry split at `-`,
/// `_`, `.`, `/` and spaces, ignoring case (`NVIDIA-H100-80GB-HBM3` → `H100`).
fn match_model(entry: &str, models: &BTreeMap<&str, ModelId>) -> Option<ModelId> {
    if let Some((_, &id)) = models.iter().find(|(m, _)| m.eq_ignore_ascii_case(entry)) {
        return Some(id);
    }
    let tokens: Vec<&str> = entry
        .split(|c: char| matches!(c, '-' | '_' | '.' | '/') || c.is_whitespace())
        .filter(|t| !t.is_empty())
        .collect();
    models
        .iter()
        .find(|(m, _)| tokens.iter().any(|t| t.eq_ignore_ascii_case(m)))
        .map(|(_, &id)| id)
}

/// The quota tree of the scenario, `None` when no queue takes part in quota (has a cohort or
/// flavors) and no cohort is declared.
///
/// # Errors
/// [`ScenarioError::Invalid`] naming `queues[i].flavors[j].name` (or the cohort's) for a
/// flavor that is neither `*` nor an accelerator model of the fleet.
pub fn quota_tree(loaded: &Loaded, fleet: &FleetState) -> Result<Option<QuotaTree>, ScenarioError> {
    let s = &loaded.scenario;
    let in_quota = |q: &QueueSpec| q.cohort.is_some() || !q.flavors.is_empty();
    if s.cohorts.is_empty() && !s.queues.iter().any(in_quota) {
        return Ok(None);
    }
    let invalid = |field: String, message: String| ScenarioError::Invalid {
        origin: loaded.origin.clone(),
        field,
        message,
    };
    let models: BTreeMap<&str, ModelId> = fleet
        .models()
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), ModelId(i as u16)))
        .collect();
    let mut flavors: Vec<Flavor> = Vec::new();
    let mut add_flavors = |node: String, list: &[FlavorQuotaSpec]| -> Result<(), ScenarioError> {
        for (j, f) in list.iter().enumerate() {
            if flavors.iter().any(|x| x.name == f.name) {
                continue;
            }
            let set = if let Some((k, fl)) =
                s.flavors.iter().enumerate().find(|(_, x)| x.name == f.name)
            {
                let mut set = ModelSet::ANY;
                for (m, entry) in fl.models.iter().enumerate() {
                    let Some(id) = match_model(entry, &models) else {
                        let known: Vec<&str> = models.keys().copied().collect();
                        let message = format!(
                            "`{entry}` names no accelerator model of the fleet ({})",
                            known.join(", ")
                        );
                        // A Kueue ResourceFlavor: blame the manifests, not the scenario.
                        return Err(match &fl.source {
                            Some(src) => ScenarioError::Invalid {
                                origin: src.clone(),
                                field: "spec.nodeLabels".into(),
                                message,
                            },
                            None => invalid(format!("flavors[{k}].models[{m}]"), message),
                        });
                    };
                    set.insert(id);
                }
                set
            } else if f.name == "*" {
                ModelSet::ANY
            } else {
                let Some(&m) = models.get(f.name.as_str()) else {
                    let known: Vec<&str> = models.keys().copied().collect();
                    return Err(invalid(
                        format!("{node}.flavors[{j}].name"),
                        format!(
                            "unknown flavor `{}`: a flavor is an accelerator model of the fleet ({}) or `*` for any",
                            f.name,
                            known.join(", ")
                        ),
                    ));
                };
                let mut set = ModelSet::ANY;
                set.insert(m);
                set
            };
            flavors.push(Flavor {
                name: f.name.clone(),
                models: set,
            });
        }
        Ok(())
    };
    for (i, c) in s.cohorts.iter().enumerate() {
        add_flavors(format!("cohorts[{i}]"), &c.flavors)?;
    }
    for (i, q) in s.queues.iter().enumerate() {
        add_flavors(format!("queues[{i}]"), &q.flavors)?;
    }
    let spec = QuotaSpec {
        flavors,
        cohorts: s
            .cohorts
            .iter()
            .map(|c| QuotaNodeSpec {
                name: c.name.clone(),
                parent: c.parent.clone(),
                flavors: c.flavors.iter().map(flavor_quota).collect(),
                weight_milli: weight_milli(c.weight),
            })
            .collect(),
        queues: s
            .queues
            .iter()
            .enumerate()
            .filter(|(_, q)| in_quota(q))
            .map(|(i, q)| {
                (
                    QueueId(i as u32),
                    QuotaNodeSpec {
                        name: q.name.clone(),
                        parent: q.cohort.clone(),
                        flavors: q.flavors.iter().map(flavor_quota).collect(),
                        weight_milli: weight_milli(q.weight),
                    },
                )
            })
            .collect(),
    };
    QuotaTree::new(&spec)
        .map(Some)
        .map_err(|e| invalid("cohorts".into(), e.to_string()))
}

/// The stages beyond the basic policy choices: [`fleetsim_policies::SchedulerSpec::extensions`]
/// with the scenario's quota tree.
///
/// # Errors
/// From [`quota_tree`].
pub fn extensions(loaded: &Loaded, fleet: &FleetState) -> Result<Extensions, ScenarioError> {
    let mut ext = loaded
        .scenario
        .policy
        .extensions(quota_tree(loaded, fleet)?);
    // Queues with their own preemption rules (Kueue ClusterQueues) preempt even without
    // `[policy.preemption]`, with Kueue's defaults for the rest.
    if ext.preemption.is_none()
        && loaded
            .scenario
            .queues
            .iter()
            .any(|q| q.preemption.is_some())
    {
        ext.preemption = Some(kueue_default_preemption());
    }
    Ok(ext)
}

/// The preemption settings of queues with their own rules when `[policy.preemption]` is
/// absent: Kueue's (no scheduler-wide rule, no grace, no over-reclaim guard).
pub fn kueue_default_preemption() -> fleetsim_policies::PreemptionConfig {
    fleetsim_policies::PreemptionConfig {
        reclaim_guard: fleetsim_policies::preemption::ReclaimGuard::Off,
        ..fleetsim_policies::PreemptionConfig::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flavor_models_match_names_and_label_tokens() {
        let models: BTreeMap<&str, ModelId> = [("A100", ModelId(0)), ("H100", ModelId(1))]
            .into_iter()
            .collect();
        assert_eq!(match_model("h100", &models), Some(ModelId(1)));
        assert_eq!(
            match_model("NVIDIA-H100-80GB-HBM3", &models),
            Some(ModelId(1))
        );
        assert_eq!(
            match_model("nvidia-a100_sxm4.40gb", &models),
            Some(ModelId(0))
        );
        // A token must be the whole model name: `H1000` and `xH100` name nothing.
        assert_eq!(match_model("NVIDIA-H1000", &models), None);
        assert_eq!(match_model("xH100", &models), None);
        assert_eq!(match_model("", &models), None);
    }
}
