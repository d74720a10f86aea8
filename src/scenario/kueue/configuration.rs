//! The Kueue controller's own settings: a `Configuration` object
//! (`config.kueue.x-k8s.io/v1beta1` or `v1beta2`, the file Kueue reads at start), given as
//! a document of the manifests or inside a `ConfigMap` (Helm's `kueue-manager-config`, key
//! `controller_manager_config.yaml`).
//!
//! Simulated: `fairSharing` (fair sharing on: admission in order of dominant resource share
//! and the preemption strategies, Kueue's `preemptionStrategies`; v1beta1's `enable`), and
//! `waitForPodsReady` (`timeout` and `requeuingStrategy`'s backoff and limit, as `[policy]
//! wait_for_pods_ready`; see [`crate::engine::pods_ready`]) — its `blockAdmission: true`,
//! `recoveryTimeout` and `requeuingStrategy.timestamp: Creation` warned.
//! Read and warned, naming the field: `admissionFairSharing` (LocalQueues are names of their ClusterQueue in fleetsim,
//! with no usage of their own), `resources` (transformations and excluded prefixes change
//! what quota counts) and `featureGates`. The rest configures the controller process
//! (`namespace`, `webhook`, `metrics`, `integrations`, …), not admission: listed as read and
//! not simulated.

use std::path::PathBuf;

use crate::scenario::yaml::Value;
use fleetsim_policies::preemption::FairStrategy;

use super::{check_keys, get, Ctx, KueueError};

/// `waitForPodsReady`, as read (durations in milliseconds).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WaitForPodsReady {
    /// `timeout` (Kueue's default 5 min in v1beta1, 30 min in v1beta2).
    pub timeout_ms: u64,
    /// `blockAdmission`.
    pub block_admission: bool,
    /// `recoveryTimeout` (default: the timeout).
    pub recovery_timeout_ms: Option<u64>,
    /// `requeuingStrategy.backoffLimitCount` (`None`: requeued for ever).
    pub backoff_limit_count: Option<i64>,
    /// `requeuingStrategy.backoffBaseSeconds` (default 60).
    pub backoff_base_s: i64,
    /// `requeuingStrategy.backoffMaxSeconds` (default 3600).
    pub backoff_max_s: i64,
    /// `requeuingStrategy.timestamp` (`Eviction`, the default, or `Creation`).
    pub timestamp: Option<String>,
}

impl WaitForPodsReady {
    /// The `[policy] wait_for_pods_ready` it maps onto.
    pub fn spec(&self) -> fleetsim_policies::spec::WaitForPodsReadySpec {
        fleetsim_policies::spec::WaitForPodsReadySpec {
            timeout_s: self.timeout_ms as f64 / 1000.0,
            backoff_base_s: Some(self.backoff_base_s as f64),
            backoff_max_s: Some(self.backoff_max_s as f64),
            backoff_limit_count: self
                .backoff_limit_count
                .map(|n| u32::try_from(n).unwrap_or(u32::MAX)),
            block_admission: None,
        }
    }

    /// A sentence for each field read and not simulated.
    fn unsimulated(&self) -> Vec<String> {
        let f = "Configuration: `waitForPodsReady";
        let mut out = Vec::new();
        if self.block_admission {
            out.push(format!(
                "{f}.blockAdmission: true` is not simulated: other workloads are admitted while one waits for its pods"
            ));
        }
        if let Some(r) = self.recovery_timeout_ms {
            out.push(format!(
                "{f}.recoveryTimeout` ({} s) is not simulated: a running workload that loses a pod is handled by `[policy] gang_recovery`, not evicted after a timeout",
                r as f64 / 1000.0
            ));
        }
        if self.timestamp.as_deref() == Some("Creation") {
            out.push(format!(
                "{f}.requeuingStrategy.timestamp: Creation` is not simulated: a requeued workload is ordered by its eviction time (Kueue's default `Eviction`)"
            ));
        }
        out
    }
}

/// A `Configuration` as read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ControllerConfig {
    /// Where it was read: file and first line of the object.
    pub source: Option<(PathBuf, u64)>,
    /// Fair sharing on: its preemption strategies, in order.
    pub fair_sharing: Option<Vec<FairStrategy>>,
    /// `waitForPodsReady` when set (v1beta1: `enable: true`).
    pub wait_for_pods_ready: Option<WaitForPodsReady>,
    /// `admissionFairSharing` is set.
    pub admission_fair_sharing: bool,
    /// The fields read but not simulated, one sentence each.
    pub notes: Vec<String>,
}

/// Kueue's configuration keys (`Configuration` of v1beta1 and v1beta2).
const KEYS: [&str; 30] = [
    "apiVersion",
    "kind",
    "metadata",
    "namespace",
    "manageJobsWithoutQueueName",
    "managedJobsNamespaceSelector",
    "internalCertManagement",
    "waitForPodsReady",
    "clientConnection",
    "integrations",
    "multiKueue",
    "fairSharing",
    "admissionFairSharing",
    "resources",
    "featureGates",
    "objectRetentionPolicies",
    "visibilityServer",
    "webhook",
    "leaderElection",
    "metrics",
    "health",
    "pprofBindAddress",
    "controller",
    "tls",
    "queueVisibility",
    "port",
    "host",
    "certDir",
    "bindAddress",
    "status",
];

/// Keys that change what gets admitted, and why fleetsim does not simulate them.
const WARNED: [(&str, &str); 4] = [
    (
        "admissionFairSharing",
        "admission fair sharing orders a ClusterQueue's workloads by their LocalQueues' decayed usage; in fleetsim a LocalQueue is a name of its ClusterQueue with no usage of its own, and the [policy] queue order decides",
    ),
    (
        "resources",
        "resource transformations and excluded prefixes change what Kueue counts against quota; fleetsim counts accelerators, cpu and memory as requested",
    ),
    (
        "featureGates",
        "fleetsim simulates Kueue's default behaviour; feature gates are not read",
    ),
    (
        "multiKueue",
        "MultiKueue dispatch is not simulated (see [policy] cell_selection for several cells)",
    ),
];

/// A Go duration (`5m`, `1h30m`, `300s`, `1.5h`, `0s`) in milliseconds, rounded.
pub fn go_duration_ms(text: &str) -> Result<u64, String> {
    let bad = || format!("`{text}` is not a duration (e.g. `5m`, `1h30m`, `300s`)");
    if text == "0" {
        return Ok(0);
    }
    let mut rest = text;
    let mut total = 0f64;
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let n = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(bad)?;
        let (num, tail) = rest.split_at(n);
        let value: f64 = num.parse().map_err(|_| bad())?;
        let u = tail
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(tail.len());
        let (unit, tail) = tail.split_at(u);
        let ms = match unit {
            "ns" => 1e-6,
            "us" | "µs" => 1e-3,
            "ms" => 1.0,
            "s" => 1e3,
            "m" => 60e3,
            "h" => 3600e3,
            _ => return Err(bad()),
        };
        total += value * ms;
        rest = tail;
    }
    if !total.is_finite() || total > u64::MAX as f64 {
        return Err(bad());
    }
    Ok(total.round() as u64)
}

fn duration(c: &Ctx, v: &Value, key: &str, field: &str) -> Result<Option<u64>, KueueError> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::String(s)) => go_duration_ms(s).map(Some).map_err(|m| c.err(field, m)),
        Some(other) => Err(c.err(field, format!("expected a duration, found {other:?}"))),
    }
}

fn boolean(c: &Ctx, v: &Value, key: &str, field: &str) -> Result<Option<bool>, KueueError> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(c.err(field, format!("expected true or false, found {other:?}"))),
    }
}

fn integer(c: &Ctx, v: &Value, key: &str, field: &str) -> Result<Option<i64>, KueueError> {
    match get(v, key) {
        None => Ok(None),
        Some(Value::Number(n)) if n.as_i64().is_some() => Ok(n.as_i64()),
        Some(other) => Err(c.err(field, format!("expected an integer, found {other:?}"))),
    }
}

/// Reads a `Configuration` object of `version` (`v1beta1` or `v1beta2`).
pub(super) fn parse(c: &Ctx, v: &Value, version: &str) -> Result<ControllerConfig, KueueError> {
    if !matches!(version, "v1beta1" | "v1beta2") {
        return Err(c.err(
            "apiVersion",
            format!(
                "`config.kueue.x-k8s.io/{version}` is not a supported Configuration version (v1beta1, v1beta2)"
            ),
        ));
    }
    check_keys(c, v, "", &KEYS)?;
    let beta1 = version == "v1beta1";
    let mut out = ControllerConfig {
        source: Some((c.path.to_path_buf(), c.line_of("kind"))),
        ..ControllerConfig::default()
    };
    if let Some(fs) = get(v, "fairSharing") {
        check_keys(c, fs, "fairSharing", &["enable", "preemptionStrategies"])?;
        let enable = boolean(c, fs, "enable", "fairSharing.enable")?;
        if !beta1 && enable.is_some() {
            return Err(c.err(
                "fairSharing.enable",
                "not a v1beta2 field: in config.kueue.x-k8s.io/v1beta2 fair sharing is on when `fairSharing` is set",
            ));
        }
        let on = if beta1 { enable.unwrap_or(false) } else { true };
        let strategies = match get(fs, "preemptionStrategies") {
            None => Vec::new(),
            Some(Value::Sequence(s)) => s
                .iter()
                .map(|x| match x.as_str() {
                    Some("LessThanOrEqualToFinalShare") => {
                        Ok(FairStrategy::LessThanOrEqualToFinalShare)
                    }
                    Some("LessThanInitialShare") => Ok(FairStrategy::LessThanInitialShare),
                    _ => Err(c.err(
                        "fairSharing.preemptionStrategies",
                        format!(
                            "`{x:?}` is not LessThanOrEqualToFinalShare or LessThanInitialShare"
                        ),
                    )),
                })
                .collect::<Result<Vec<_>, _>>()?,
            Some(other) => {
                return Err(c.err(
                    "fairSharing.preemptionStrategies",
                    format!("expected a list, found {other:?}"),
                ))
            }
        };
        use FairStrategy::{LessThanInitialShare as B, LessThanOrEqualToFinalShare as A};
        let valid = [vec![A], vec![B], vec![A, B]];
        if !strategies.is_empty() && !valid.contains(&strategies) {
            return Err(c.err(
                "fairSharing.preemptionStrategies",
                "Kueue accepts [LessThanOrEqualToFinalShare], [LessThanInitialShare] or [LessThanOrEqualToFinalShare, LessThanInitialShare]",
            ));
        }
        if on {
            // Kueue's default when none is given: both, S2-a first.
            out.fair_sharing = Some(if strategies.is_empty() {
                vec![A, B]
            } else {
                strategies
            });
        }
    }
    if let Some(w) = get(v, "waitForPodsReady") {
        let f = "waitForPodsReady";
        check_keys(
            c,
            w,
            f,
            &[
                "enable",
                "timeout",
                "blockAdmission",
                "requeuingStrategy",
                "recoveryTimeout",
            ],
        )?;
        let enable = boolean(c, w, "enable", &format!("{f}.enable"))?;
        if !beta1 && enable.is_some() {
            return Err(c.err(
                &format!("{f}.enable"),
                "not a v1beta2 field: in config.kueue.x-k8s.io/v1beta2 waitForPodsReady is on when set",
            ));
        }
        let on = if beta1 { enable.unwrap_or(false) } else { true };
        let timeout_ms = duration(c, w, "timeout", &format!("{f}.timeout"))?.unwrap_or(if beta1 {
            5 * 60_000
        } else {
            30 * 60_000
        });
        let block_admission =
            boolean(c, w, "blockAdmission", &format!("{f}.blockAdmission"))?.unwrap_or(false);
        if timeout_ms == 0 {
            return Err(c.err(&format!("{f}.timeout"), "must be above 0"));
        }
        let recovery_timeout_ms =
            duration(c, w, "recoveryTimeout", &format!("{f}.recoveryTimeout"))?;
        let mut wait = WaitForPodsReady {
            timeout_ms,
            block_admission,
            recovery_timeout_ms,
            backoff_limit_count: None,
            backoff_base_s: 60,
            backoff_max_s: 3600,
            timestamp: None,
        };
        if let Some(r) = get(w, "requeuingStrategy") {
            let rf = format!("{f}.requeuingStrategy");
            check_keys(
                c,
                r,
                &rf,
                &[
                    "timestamp",
                    "backoffLimitCount",
                    "backoffBaseSeconds",
                    "backoffMaxSeconds",
                ],
            )?;
            wait.timestamp = super::string(c, r, "timestamp", &format!("{rf}.timestamp"))?;
            if let Some(t) = wait
                .timestamp
                .as_deref()
                .filter(|t| !matches!(*t, "Eviction" | "Creation"))
            {
                return Err(c.err(
                    &format!("{rf}.timestamp"),
                    format!("`{t}`: Kueue takes `Eviction` or `Creation`"),
                ));
            }
            wait.backoff_limit_count = integer(
                c,
                r,
                "backoffLimitCount",
                &format!("{rf}.backoffLimitCount"),
            )?;
            if let Some(b) = integer(
                c,
                r,
                "backoffBaseSeconds",
                &format!("{rf}.backoffBaseSeconds"),
            )? {
                wait.backoff_base_s = b;
            }
            if let Some(m) = integer(
                c,
                r,
                "backoffMaxSeconds",
                &format!("{rf}.backoffMaxSeconds"),
            )? {
                wait.backoff_max_s = m;
            }
        }
        for (key, v) in [
            ("backoffLimitCount", wait.backoff_limit_count),
            ("backoffBaseSeconds", Some(wait.backoff_base_s)),
            ("backoffMaxSeconds", Some(wait.backoff_max_s)),
        ] {
            if v.is_some_and(|v| v < 0) {
                return Err(c.err(&format!("{f}.requeuingStrategy.{key}"), "must be ≥ 0"));
            }
        }
        if on {
            out.notes.extend(wait.unsimulated());
            out.wait_for_pods_ready = Some(wait);
        }
    }
    out.admission_fair_sharing = get(v, "admissionFairSharing").is_some();
    for (k, why) in WARNED {
        if get(v, k).is_some() {
            out.notes
                .push(format!("Configuration: `{k}` is not simulated: {why}"));
        }
    }
    let controller: Vec<&str> = KEYS
        .iter()
        .copied()
        .filter(|k| {
            !matches!(
                *k,
                "apiVersion" | "kind" | "metadata" | "status" | "fairSharing" | "waitForPodsReady"
            ) && !WARNED.iter().any(|(w, _)| w == k)
                && get(v, k).is_some()
        })
        .collect();
    if !controller.is_empty() {
        out.notes.push(format!(
            "Configuration: {} read, not simulated: they configure the controller process, not admission",
            controller
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration_ms("5m").unwrap(), 300_000);
        assert_eq!(go_duration_ms("1h30m").unwrap(), 5_400_000);
        assert_eq!(go_duration_ms("1.5h").unwrap(), 5_400_000);
        assert_eq!(go_duration_ms("300s").unwrap(), 300_000);
        assert_eq!(go_duration_ms("250ms").unwrap(), 250);
        assert_eq!(go_duration_ms("0s").unwrap(), 0);
        for bad in ["", "5", "5x", "m5", "1h-2m"] {
            assert!(go_duration_ms(bad).is_err(), "{bad}");
        }
    }
}
