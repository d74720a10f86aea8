//! Admission checks: Kueue's `AdmissionCheck` objects, the `ProvisioningRequestConfig`s of
//! the ProvisioningRequest controller (`kueue.x-k8s.io/provisioning-request`), and which
//! ClusterQueue flavors they guard (`spec.admissionChecks`,
//! `spec.admissionChecksStrategy.admissionChecks[].onFlavors`).
//!
//! A ProvisioningRequest check is simulated by its class
//! (<https://kueue.sigs.k8s.io/docs/concepts/admission_check/provisioning_request/>):
//! * `check-capacity.autoscaling.x-k8s.io`: admission waits until the nodes have room —
//!   what fleetsim's placement check does: simulated as it is;
//! * any other class (`best-effort-atomic-scale-up.autoscaling.x-k8s.io`,
//!   `queued-provisioning.gke.io`, …): the cluster autoscaler brings the flavor's nodes for
//!   the workload — simulated by an autoscaled node group of the flavor's model
//!   (`[[fleet.cells.autoscaling]]`, its `provisioning_delay` the autoscaler's), which the
//!   scenario's fleet must have (`fleetsim kueue simulate` builds it, with
//!   `--provisioning-delay`).
//!
//! Noted, not simulated: `retryStrategy` (provisioning never fails), `managedResources`
//! (every pending workload that fits the group can trigger a scale-up), `podSetUpdates`,
//! `podSetMergePolicy`, `parameters`; checks of other controllers (MultiKueue, custom).
//! Where Kueue reserves quota while nodes are provisioned, fleetsim charges it when the
//! workload starts on them. The group is marked with the check
//! ([`crate::scenario::schema::AutoscalingGroupSpec::admission_check`]): Kueue admits a
//! workload waiting for its nodes when they join, so `waitForPodsReady` does not time that
//! wait.

use std::collections::BTreeMap;

use crate::scenario::yaml::Value;

use super::{check_keys, get, string, Ctx, KueueError};

/// The ProvisioningRequest controller's name.
pub const PROVISIONING_CONTROLLER: &str = "kueue.x-k8s.io/provisioning-request";
/// The class that only checks capacity.
pub const CHECK_CAPACITY: &str = "check-capacity.autoscaling.x-k8s.io";

/// An `AdmissionCheck`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AdmissionCheck {
    /// Name.
    pub name: String,
    /// `spec.controllerName`.
    pub controller: String,
    /// `spec.parameters.name` when its kind is `ProvisioningRequestConfig`.
    pub config: Option<String>,
}

/// A `ProvisioningRequestConfig`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProvisioningConfig {
    /// Name.
    pub name: String,
    /// `spec.provisioningClassName`.
    pub class: String,
    /// The spec fields set that are not simulated.
    pub unsimulated: Vec<String>,
}

/// Reads an `AdmissionCheck`.
pub(super) fn admission_check(
    c: &Ctx,
    name: &str,
    spec: &Value,
) -> Result<AdmissionCheck, KueueError> {
    check_keys(
        c,
        spec,
        "spec",
        &["controllerName", "parameters", "retryDelayMinutes"],
    )?;
    let controller = string(c, spec, "controllerName", "spec.controllerName")?
        .ok_or_else(|| c.err("spec.controllerName", "missing"))?;
    let mut config = None;
    if let Some(p) = get(spec, "parameters") {
        check_keys(c, p, "spec.parameters", &["apiGroup", "kind", "name"])?;
        if string(c, p, "kind", "spec.parameters.kind")?.as_deref()
            == Some("ProvisioningRequestConfig")
        {
            config = string(c, p, "name", "spec.parameters.name")?;
        }
    }
    Ok(AdmissionCheck {
        name: name.to_string(),
        controller,
        config,
    })
}

/// Reads a `ProvisioningRequestConfig`.
pub(super) fn provisioning_config(
    c: &Ctx,
    name: &str,
    spec: &Value,
) -> Result<ProvisioningConfig, KueueError> {
    let keys = [
        "provisioningClassName",
        "parameters",
        "managedResources",
        "retryStrategy",
        "podSetUpdates",
        "podSetMergePolicy",
    ];
    check_keys(c, spec, "spec", &keys)?;
    let class = string(
        c,
        spec,
        "provisioningClassName",
        "spec.provisioningClassName",
    )?
    .ok_or_else(|| c.err("spec.provisioningClassName", "missing"))?;
    let unsimulated = keys[1..]
        .iter()
        .filter(|k| get(spec, k).is_some())
        .map(|k| k.to_string())
        .collect();
    Ok(ProvisioningConfig {
        name: name.to_string(),
        class,
        unsimulated,
    })
}

/// A ClusterQueue's admission checks: (check, the flavors it guards; empty: all).
pub(super) fn cluster_queue_checks(
    c: &Ctx,
    spec: &Value,
) -> Result<Vec<(String, Vec<String>)>, KueueError> {
    let mut out = Vec::new();
    if let Some(list) = get(spec, "admissionChecks") {
        let Value::Sequence(s) = list else {
            return Err(c.err("spec.admissionChecks", "expected a list of names"));
        };
        for x in s {
            let n = x
                .as_str()
                .ok_or_else(|| c.err("spec.admissionChecks", "expected a list of names"))?;
            out.push((n.to_string(), Vec::new()));
        }
    }
    if let Some(st) = get(spec, "admissionChecksStrategy") {
        check_keys(c, st, "spec.admissionChecksStrategy", &["admissionChecks"])?;
        if let Some(Value::Sequence(s)) = get(st, "admissionChecks") {
            for (i, r) in s.iter().enumerate() {
                let f = format!("spec.admissionChecksStrategy.admissionChecks[{i}]");
                check_keys(c, r, &f, &["name", "onFlavors"])?;
                let n = string(c, r, "name", &format!("{f}.name"))?
                    .ok_or_else(|| c.err(&format!("{f}.name"), "missing"))?;
                let on: Vec<String> = match get(r, "onFlavors") {
                    None => Vec::new(),
                    Some(Value::Sequence(v)) => v
                        .iter()
                        .filter_map(|x| x.as_str().map(str::to_string))
                        .collect(),
                    Some(_) => {
                        return Err(c.err(&format!("{f}.onFlavors"), "expected a list of names"))
                    }
                };
                out.push((n, on));
            }
        }
    }
    Ok(out)
}

/// One flavor of one ClusterQueue whose nodes a ProvisioningRequest brings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Provisioned {
    /// The ClusterQueue.
    pub cluster_queue: String,
    /// The flavor.
    pub flavor: String,
    /// The AdmissionCheck.
    pub check: String,
    /// Its class.
    pub class: String,
}

impl super::KueueConfig {
    /// The (ClusterQueue, flavor) pairs under a ProvisioningRequest check whose class
    /// provisions nodes (not `check-capacity`), and notes on every admission check.
    pub fn provisioning(&self) -> (Vec<Provisioned>, Vec<String>) {
        let mut out = Vec::new();
        let mut notes = Vec::new();
        let mut noted: BTreeMap<&str, ()> = BTreeMap::new();
        for cq in self.cluster_queues.values() {
            for (check, on) in &cq.admission_checks {
                let Some(ac) = self.admission_checks.get(check) else {
                    continue; // refused when read
                };
                let flavors: Vec<String> = cq
                    .resource_groups
                    .iter()
                    .flat_map(|g| g.flavors.iter().map(|f| f.flavor.clone()))
                    .filter(|f| on.is_empty() || on.contains(f))
                    .collect();
                if ac.controller != PROVISIONING_CONTROLLER {
                    notes.push(format!(
                        "ClusterQueue {}: AdmissionCheck `{check}` (controller {}) is not simulated: its workloads are admitted without it",
                        cq.name, ac.controller
                    ));
                    continue;
                }
                let Some(pc) = ac
                    .config
                    .as_ref()
                    .and_then(|n| self.provisioning_configs.get(n))
                else {
                    notes.push(format!(
                        "ClusterQueue {}: AdmissionCheck `{check}` names no ProvisioningRequestConfig among the manifests: not simulated",
                        cq.name
                    ));
                    continue;
                };
                if noted.insert(pc.name.as_str(), ()).is_none() && !pc.unsimulated.is_empty() {
                    notes.push(format!(
                        "ProvisioningRequestConfig {}: {} not simulated (provisioning never fails and every pending workload may trigger it)",
                        pc.name,
                        pc.unsimulated
                            .iter()
                            .map(|k| format!("`spec.{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if pc.class == CHECK_CAPACITY {
                    notes.push(format!(
                        "ClusterQueue {}: AdmissionCheck `{check}` ({CHECK_CAPACITY}) is simulated as the placement check: a workload is admitted when the nodes of {} have room",
                        cq.name,
                        flavors.join(", ")
                    ));
                    continue;
                }
                for f in flavors {
                    out.push(Provisioned {
                        cluster_queue: cq.name.clone(),
                        flavor: f,
                        check: check.clone(),
                        class: pc.class.clone(),
                    });
                }
            }
        }
        (out, notes)
    }
}
