//! Loading and validating scenario files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::schema::*;

/// Errors from loading a scenario. All are fatal: the run does not start.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The TOML does not parse or does not match the schema (unknown key, wrong type,
    /// unknown policy name); the message names the line, column and key.
    #[error("{origin}: {message}")]
    Parse {
        /// The file (or `<embedded default>`).
        origin: String,
        /// The parser's message.
        message: String,
    },
    /// The scenario's Kueue manifests are invalid (file, line and field named).
    #[error(transparent)]
    Kueue(#[from] super::kueue::KueueError),
    /// A value is out of range or inconsistent.
    #[error("{origin}: `{field}`: {message}")]
    Invalid {
        /// The file.
        origin: String,
        /// The dotted path of the field (e.g. `fleet.cells[1].nodes[0].count`).
        field: String,
        /// What is wrong.
        message: String,
    },
}

/// The directory holding public traces: `--trace-dir`, else `FLEETSIM_TRACE_DIR`, else
/// `traces/public/`.
#[derive(Clone, Debug)]
pub struct TraceDir(pub PathBuf);

impl TraceDir {
    /// Resolves the directory from a flag value and the environment.
    pub fn resolve(flag: Option<PathBuf>) -> TraceDir {
        TraceDir(
            flag.or_else(|| std::env::var_os("FLEETSIM_TRACE_DIR").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("traces/public")),
        )
    }
}

/// A scenario with where it came from, for resolving relative paths.
#[derive(Clone, Debug)]
pub struct Loaded {
    /// The parsed scenario.
    pub scenario: Scenario,
    /// The file's name for messages (`<embedded default>` for the default).
    pub origin: String,
    /// Directory that `path = …` entries are relative to.
    pub base_dir: PathBuf,
}

impl Loaded {
    /// Resolves a `path` / `public_path` pair.
    ///
    /// A `public_path` must stay inside the trace directory: it must be relative, without
    /// `..` components, and the file it names — after following symbolic links
    /// (canonicalization) — must lie under the canonical trace directory. The check runs
    /// before the file is opened, so nothing outside the trace directory is ever read.
    ///
    /// # Errors
    /// [`ScenarioError::Invalid`] when neither or both are given; for a `path` that does not
    /// exist; for a `public_path` that is
    /// absolute, contains `..`, does not exist, or resolves (through a symbolic link) outside
    /// the trace directory. The message names the path, never the file's content.
    pub fn resolve_path(
        &self,
        field: &str,
        path: &Option<String>,
        public_path: &Option<String>,
        trace_dir: &TraceDir,
    ) -> Result<PathBuf, ScenarioError> {
        match (path, public_path) {
            (Some(p), None) => {
                let full = self.base_dir.join(p);
                if full.exists() {
                    Ok(full)
                } else {
                    Err(ScenarioError::Invalid {
                        origin: self.origin.clone(),
                        field: format!("{field}.path"),
                        message: format!(
                            "`{}` does not exist (a `path` is relative to the scenario file's directory; `public_path` reads from the trace directory)",
                            std::path::absolute(&full).unwrap_or(full).display()
                        ),
                    })
                }
            }
            (None, Some(p)) => self.resolve_public(field, p, trace_dir),
            _ => Err(ScenarioError::Invalid {
                origin: self.origin.clone(),
                field: field.to_string(),
                message: "give exactly one of `path` (relative to the scenario) and `public_path` (under the trace directory)".into(),
            }),
        }
    }

    /// Resolves a `public_path` under the trace directory (see [`Loaded::resolve_path`]).
    fn resolve_public(
        &self,
        field: &str,
        p: &str,
        trace_dir: &TraceDir,
    ) -> Result<PathBuf, ScenarioError> {
        use std::path::Component;
        let invalid = |message: String| ScenarioError::Invalid {
            origin: self.origin.clone(),
            field: format!("{field}.public_path"),
            message,
        };
        let rel = Path::new(p);
        let escapes = rel.components().any(|c| {
            matches!(
                c,
                Component::ParentDir | Component::RootDir | Component::Prefix(_)
            )
        });
        if p.is_empty() || rel.is_absolute() || escapes {
            return Err(invalid(format!(
                "`{p}` must be a relative path inside the trace directory, without `..` (public traces are read from under `{}`; use `path = …` for a file elsewhere)",
                trace_dir.0.display()
            )));
        }
        let full = trace_dir.0.join(rel);
        if !full.exists() {
            return Err(invalid(format!(
                "`{}` does not exist: public traces are read from the trace directory `{}` (--trace-dir, else $FLEETSIM_TRACE_DIR, else traces/public); traces/README.md says where to get them",
                full.display(),
                trace_dir.0.display()
            )));
        }
        let outside = || {
            invalid(format!(
                "`{}` resolves (through a symbolic link) outside the trace directory `{}`; public traces are read from under it only",
                full.display(),
                trace_dir.0.display()
            ))
        };
        let root = std::fs::canonicalize(&trace_dir.0).map_err(|_| outside())?;
        let real = std::fs::canonicalize(&full).map_err(|_| outside())?;
        if real.starts_with(&root) {
            Ok(full)
        } else {
            Err(outside())
        }
    }
}

/// Reads and validates a scenario file.
///
/// # Errors
/// [`ScenarioError`] naming the file and the offending key.
pub fn load(path: &Path) -> Result<Loaded, ScenarioError> {
    let text =
        crate::input_cap::read_capped(path, crate::input_cap::MAX_SCENARIO_BYTES, "scenario file")
            .map_err(|source| ScenarioError::Io {
                path: path.to_path_buf(),
                source,
            })?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    parse(&text, &path.display().to_string(), base)
}

/// Parses and validates scenario text. A scenario with `extends = "base.toml"` is merged
/// onto its base (resolved against `base_dir`; bases may extend further, up to 8 levels):
/// tables key by key, this file's values winning, arrays replaced whole.
///
/// # Errors
/// [`ScenarioError::Parse`] or [`ScenarioError::Invalid`], naming `origin`; a base that
/// cannot be read is an `Invalid` error of `origin`'s `extends` field, a malformed base a
/// `Parse` error naming the base and the file that extends it, and a key the schema refuses
/// after merging names `origin` and every base of the chain.
pub fn parse(text: &str, origin: &str, base_dir: PathBuf) -> Result<Loaded, ScenarioError> {
    let parse_err = |origin: &str, e: &dyn std::fmt::Display| ScenarioError::Parse {
        origin: origin.to_string(),
        message: e.to_string(),
    };
    let table: toml::Table = toml::from_str(text).map_err(|e| parse_err(origin, &e))?;
    let old_elastic_dialect = |t: &toml::Table, origin: &str| {
        if t.get("mode").and_then(toml::Value::as_str) == Some("elastic") {
            return Err(ScenarioError::Invalid {
                origin: origin.to_string(),
                field: "mode".into(),
                message: "`elastic` is not a mode: elastic jobs run in the one engine. Remove `mode`, describe the fleet in `[[fleet.cells]]`, put the jobs in `[workload]` (a native trace whose rows give `min_gpus`, `max_gpus`, `work_gpu_s`, `throughput`, or a `pollux` workload) and add `[elastic]` with `allocator = \"grow-idle\"`, `\"fixed\"`, `\"tiresias\"` or `\"pollux\"` (docs/src/reference/elastic.md)".into(),
            });
        }
        Ok(())
    };
    let scenario: Scenario = if table.contains_key("extends") {
        let mut chain = Vec::new();
        let merged = resolve_extends_chain(table, origin, &base_dir, 0, &mut chain)?;
        // A key may come from any file of the chain: name them all.
        let merged_origin = format!("{origin} (with {}, which it extends)", chain.join(", "));
        old_elastic_dialect(&merged, &merged_origin)?;
        toml::Value::Table(merged)
            .try_into()
            .map_err(|e| parse_err(&merged_origin, &e))?
    } else {
        old_elastic_dialect(&table, origin)?;
        toml::from_str(text).map_err(|e| parse_err(origin, &e))?
    };
    let mut scenario = scenario;
    validate(&scenario, origin)?;
    apply_kueue(&mut scenario, origin, &base_dir)?;
    validate_slo(&scenario, origin)?;
    Ok(Loaded {
        scenario,
        origin: origin.to_string(),
        base_dir,
    })
}

/// Reads the scenario's Kueue manifests (if any), merges their quota settings in and
/// checks the result.
fn apply_kueue(
    scenario: &mut Scenario,
    origin: &str,
    base_dir: &Path,
) -> Result<(), ScenarioError> {
    let Some(k) = &scenario.kueue else {
        return Ok(());
    };
    let paths = k.resolve(base_dir);
    if paths.is_empty() {
        return Err(ScenarioError::Invalid {
            origin: origin.to_string(),
            field: "kueue".into(),
            message: "give `path` (a manifest file or directory) or `paths` (a list of them)"
                .into(),
        });
    }
    let cfg = super::kueue::load_paths(&paths)?;
    super::kueue::merge(scenario, cfg.quota());
    let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    validate_quota(scenario, &|field, message| ScenarioError::Invalid {
        origin: format!("{origin} with the Kueue manifests {}", shown.join(", ")),
        field,
        message: message.to_string(),
    })
}

/// Validates a scenario given as a parsed TOML value (after `--set` or sweep overrides, see
/// [`super::overrides`]).
///
/// # Errors
/// [`ScenarioError::Parse`] or [`ScenarioError::Invalid`], naming `origin`.
pub fn parse_value(
    value: toml::Value,
    origin: &str,
    base_dir: PathBuf,
) -> Result<Loaded, ScenarioError> {
    use serde::Deserialize;
    let value = match value {
        toml::Value::Table(t) if t.contains_key("extends") => {
            toml::Value::Table(resolve_extends(t, origin, &base_dir, 0)?)
        }
        v => v,
    };
    let scenario = Scenario::deserialize(value).map_err(|e| ScenarioError::Parse {
        origin: origin.to_string(),
        message: e.to_string(),
    })?;
    let mut scenario = scenario;
    validate(&scenario, origin)?;
    apply_kueue(&mut scenario, origin, &base_dir)?;
    validate_slo(&scenario, origin)?;
    Ok(Loaded {
        scenario,
        origin: origin.to_string(),
        base_dir,
    })
}

/// The scenario file at `path` as one TOML table: merged onto the scenarios it `extends`
/// (as [`parse`] merges them), before the schema reads it. What `schemas/scenario.schema.json`
/// validates.
///
/// # Errors
/// [`ScenarioError::Io`] when the file cannot be read, [`ScenarioError::Parse`] when it
/// is not TOML, and the errors of its `extends` chain.
pub fn merged_table(path: &Path) -> Result<toml::Table, ScenarioError> {
    let text =
        crate::input_cap::read_capped(path, crate::input_cap::MAX_SCENARIO_BYTES, "scenario file")
            .map_err(|source| ScenarioError::Io {
                path: path.to_path_buf(),
                source,
            })?;
    let origin = path.display().to_string();
    let table: toml::Table = toml::from_str(&text).map_err(|e| ScenarioError::Parse {
        origin: origin.clone(),
        message: e.to_string(),
    })?;
    if !table.contains_key("extends") {
        return Ok(table);
    }
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    resolve_extends(table, &origin, &base, 0)
}

/// Merges `table` onto the scenario it `extends`, recursively.
pub(crate) fn resolve_extends(
    table: toml::Table,
    origin: &str,
    base_dir: &Path,
    depth: u32,
) -> Result<toml::Table, ScenarioError> {
    resolve_extends_chain(table, origin, base_dir, depth, &mut Vec::new())
}

/// [`resolve_extends`], collecting the base files read in `chain`. An unreadable or
/// malformed base is an error naming the file that extends it (`origin`) and the field.
fn resolve_extends_chain(
    mut table: toml::Table,
    origin: &str,
    base_dir: &Path,
    depth: u32,
    chain: &mut Vec<String>,
) -> Result<toml::Table, ScenarioError> {
    let Some(ext) = table.remove("extends") else {
        return Ok(table);
    };
    let invalid = |message: String| ScenarioError::Invalid {
        origin: origin.to_string(),
        field: "extends".into(),
        message,
    };
    let toml::Value::String(rel) = ext else {
        return Err(invalid("must be a file name".into()));
    };
    if depth >= 8 {
        return Err(invalid("more than 8 levels of `extends` (a cycle?)".into()));
    }
    let path = base_dir.join(&rel);
    let text =
        crate::input_cap::read_capped(&path, crate::input_cap::MAX_SCENARIO_BYTES, "scenario file")
            .map_err(|e| invalid(format!("`{}` cannot be read: {e}", path.display())))?;
    let base_origin = path.display().to_string();
    let base: toml::Table = toml::from_str(&text).map_err(|e| ScenarioError::Parse {
        origin: format!("{base_origin} (extended by {origin})"),
        message: e.to_string(),
    })?;
    chain.push(base_origin.clone());
    let base_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut base = resolve_extends_chain(base, &base_origin, &base_dir, depth + 1, chain)?;
    // The base's file paths were written relative to its own directory; the merged scenario
    // resolves them against the extending file's.
    if let Some(dir) = Path::new(&rel)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        rebase_paths(&mut base, dir);
    }
    merge_tables(&mut base, table);
    Ok(base)
}

/// Joins `dir` before every relative file path of `table` (string values of the keys
/// `path` and `paths` — `workload.trace`, machine lists, failure timelines, Kueue manifests
/// — at any depth, in arrays of tables too); `public_path`s are the trace directory's and
/// absolute paths stay as they are.
fn rebase_paths(table: &mut toml::Table, dir: &Path) {
    let rebase = |v: &mut toml::Value| {
        if let toml::Value::String(s) = v {
            if Path::new(s.as_str()).is_relative() {
                *s = dir.join(s.as_str()).to_string_lossy().into_owned();
            }
        }
    };
    for (k, v) in table.iter_mut() {
        match (k.as_str(), v) {
            ("path", v @ toml::Value::String(_)) => rebase(v),
            ("paths", toml::Value::Array(items)) => items.iter_mut().for_each(rebase),
            (_, toml::Value::Table(t)) => rebase_paths(t, dir),
            (_, toml::Value::Array(items)) => {
                for item in items {
                    if let toml::Value::Table(t) = item {
                        rebase_paths(t, dir);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Tables merge key by key; any other value replaces.
fn merge_tables(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge_tables(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Checks a cell's `[[fleet.cells.autoscaling]]` groups (`f`: the cell's field path).
fn validate_autoscaling(
    groups: &[crate::scenario::schema::AutoscalingGroupSpec],
    f: &str,
    origin: &str,
) -> Result<(), ScenarioError> {
    use crate::scenario::schema::DelaySpec;
    let bad = |field: String, message: String| ScenarioError::Invalid {
        origin: origin.to_string(),
        field,
        message,
    };
    let mut names = BTreeSet::new();
    for (i, g) in groups.iter().enumerate() {
        let f = format!("{f}.autoscaling[{i}]");
        if g.name.trim().is_empty() {
            return Err(bad(format!("{f}.name"), "must not be empty".into()));
        }
        if !names.insert(g.name.as_str()) {
            return Err(bad(
                format!("{f}.name"),
                format!("duplicate autoscaling group `{}` in this cell", g.name),
            ));
        }
        if g.max_nodes == 0 {
            return Err(bad(
                format!("{f}.max_nodes"),
                "must be ≥ 1 (a group that can never have a node)".into(),
            ));
        }
        if g.min_nodes > g.max_nodes {
            return Err(bad(
                format!("{f}.min_nodes"),
                format!("{} is above max_nodes = {}", g.min_nodes, g.max_nodes),
            ));
        }
        if g.node.count.is_some() || g.node.racks.is_some() || g.node.names.is_some() {
            return Err(bad(
                format!("{f}.node"),
                "a node shape takes no `count`, `racks` or `names` (use min_nodes/max_nodes)"
                    .into(),
            ));
        }
        if g.node.nodes_per_domain == Some(0) || g.node.domains_per_block == Some(0) {
            return Err(bad(
                format!("{f}.node"),
                "`nodes_per_domain` and `domains_per_block` must be ≥ 1".into(),
            ));
        }
        if !finite_nonneg(g.price_per_node_hour) {
            return Err(bad(
                format!("{f}.price_per_node_hour"),
                format!("must be a number ≥ 0, not {}", g.price_per_node_hour),
            ));
        }
        if !finite_nonneg(g.scale_down_idle_s) {
            return Err(bad(
                format!("{f}.scale_down_idle_s"),
                format!(
                    "must be a number of seconds ≥ 0, not {}",
                    g.scale_down_idle_s
                ),
            ));
        }
        let d = format!("{f}.provisioning_delay");
        let check = |key: &str, v: f64| {
            if finite_nonneg(v) {
                Ok(())
            } else {
                Err(bad(
                    format!("{d}.{key}"),
                    format!("must be a number of seconds ≥ 0, not {v}"),
                ))
            }
        };
        match g.provisioning_delay {
            DelaySpec::Fixed { s } => check("s", s)?,
            DelaySpec::Uniform { min_s, max_s } => {
                check("min_s", min_s)?;
                check("max_s", max_s)?;
                if min_s > max_s {
                    return Err(bad(
                        format!("{d}.min_s"),
                        format!("{min_s} is above max_s = {max_s}"),
                    ));
                }
            }
            DelaySpec::Lognormal { median_s, sigma } => {
                check("median_s", median_s)?;
                if median_s == 0.0 {
                    return Err(bad(format!("{d}.median_s"), "must be > 0".into()));
                }
                if !finite_nonneg(sigma) {
                    return Err(bad(
                        format!("{d}.sigma"),
                        format!("must be a number ≥ 0, not {sigma}"),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn finite_nonneg(v: f64) -> bool {
    v.is_finite() && v >= 0.0
}

fn validate(s: &Scenario, origin: &str) -> Result<(), ScenarioError> {
    let bad = |field: String, message: &str| ScenarioError::Invalid {
        origin: origin.to_string(),
        field,
        message: message.to_string(),
    };
    if s.name.trim().is_empty() {
        return Err(bad("name".into(), "must not be empty"));
    }
    if s.fleet.cells.is_empty() {
        return Err(bad("fleet.cells".into(), "at least one cell is required"));
    }
    if let Some(sv) = &s.serving {
        // The replica-fits-a-node check runs again against the built fleet (run time).
        crate::serving::validate(sv, u32::MAX).map_err(|(field, message)| {
            ScenarioError::Invalid {
                origin: origin.to_string(),
                field,
                message,
            }
        })?;
    }
    {
        let pollux = s
            .workload
            .trace
            .as_ref()
            .is_some_and(|t| t.format == crate::workload::TraceFormat::Pollux);
        let mut others: Vec<&str> = Vec::new();
        // The round allocators decide every job; under a sizing policy an elastic job's min
        // is an ordinary job of the scheduler, beside rigid jobs.
        let round = s.elastic.as_ref().is_some_and(|e| e.allocator.is_round());
        if s.elastic.is_some() {
            if s.mode != Mode::Schedule {
                others.push("mode");
            }
            if round && s.serving.is_some() {
                others.push("serving");
            }
            // Elastic jobs under a sizing policy meet node failures, node events, startup
            // and the fleet transforms (`crate::engine::elastic`); round-allocated ones do not.
            if round && s.failures.is_some() {
                others.push("failures");
            }
            if round && !s.node_events.is_empty() {
                others.push("node_events");
            }
            if round && s.startup.is_some() {
                others.push("startup");
            }
            // Round-allocated jobs take no queue: quota and Kueue admission would not apply.
            if round && !s.queues.is_empty() {
                others.push("queues");
            }
            if round && !s.cohorts.is_empty() {
                others.push("cohorts");
            }
            if round && s.kueue.is_some() {
                others.push("kueue");
            }
            // The application models are measured step times: relative speeds would not apply.
            if s.platform.is_some() {
                others.push("platform");
            }
            // The allocator decides every round-allocated job: the scheduler's stages
            // would decide nothing.
            if round && s.policy != super::schema::PolicySpec::default() {
                others.push("policy");
            }
            if round && s.workload.synthetic.is_some() {
                others.push("workload.synthetic");
            }
            if round && s.fleet.cells.iter().any(|c| !c.autoscaling.is_empty()) {
                others.push("fleet.cells.autoscaling");
            }
            // The round allocators see one pool of nodes: a job would span cells (the
            // sizing policies keep each job in one cell).
            if round && s.fleet.cells.len() > 1 {
                return Err(ScenarioError::Invalid {
                    origin: origin.to_string(),
                    field: "fleet.cells".into(),
                    message: format!(
                        "{} cells: round-allocated jobs (`[elastic]`) run in one cell (the allocators see one pool of nodes, and a job would span cells)",
                        s.fleet.cells.len()
                    ),
                });
            }
            // Growth keeps to a required level's group (`crate::engine::elastic`); a
            // one-task-per-node spread and per-slice levels are not kept by it.
            if let Some(t) = s.policy.topology.as_ref().filter(|_| !round) {
                let strict_spread =
                    t.ray_strategy == Some(fleetsim_policies::topology::RayStrategy::StrictSpread);
                for (field, given) in [
                    ("policy.topology.ray_strategy", strict_spread),
                    ("policy.topology.slice_size", t.slice_size.is_some()),
                ] {
                    if given {
                        return Err(ScenarioError::Invalid {
                            origin: origin.to_string(),
                            field: field.into(),
                            message: "does not bound the growth of elastic jobs (GPUs above `min_gpus`, kept only in the group of a required level their min was placed in): remove it or `[elastic]`".into(),
                        });
                    }
                }
            }
            let t = &s.transforms.spec;
            if round && !t.scale.is_empty() {
                others.push("transforms.scale");
            }
            if round && !t.add_nodes.is_empty() {
                others.push("transforms.add_nodes");
            }
            if round && !t.remove_nodes.is_empty() {
                others.push("transforms.remove_nodes");
            }
        }
        super::elastic::check(s.elastic.as_ref(), pollux, &others).map_err(
            |(field, message)| ScenarioError::Invalid {
                origin: origin.to_string(),
                field,
                message,
            },
        )?;
    }
    if s.fleet.cells.len() > u16::MAX as usize {
        return Err(bad("fleet.cells".into(), "too many cells"));
    }
    let mut names = BTreeSet::new();
    for (i, c) in s.fleet.cells.iter().enumerate() {
        let f = format!("fleet.cells[{i}]");
        if c.name.trim().is_empty() {
            return Err(bad(format!("{f}.name"), "must not be empty"));
        }
        if !names.insert(c.name.clone()) {
            return Err(bad(
                format!("{f}.name"),
                &format!("duplicate cell name `{}`", c.name),
            ));
        }
        if c.nodes.is_empty() && c.machine_list.is_none() && c.autoscaling.is_empty() {
            return Err(bad(
                f,
                "a cell needs `nodes` groups, a `machine_list` or `autoscaling` groups",
            ));
        }
        validate_autoscaling(&c.autoscaling, &f, origin)?;
        for (g, grp) in c.nodes.iter().enumerate() {
            let f = format!("{f}.nodes[{g}]");
            let given = [
                grp.count.is_some(),
                grp.racks.is_some(),
                grp.names.is_some(),
            ];
            if given.iter().filter(|&&g| g).count() != 1 {
                return Err(bad(f, "give exactly one of `count`, `racks` and `names`"));
            }
            if grp.names.as_ref().is_some_and(|n| n.is_empty()) {
                return Err(bad(f, "`names` must not be empty"));
            }
            if grp.count == Some(0) || grp.racks == Some(0) {
                return Err(bad(f, "a node group needs at least one node"));
            }
            if grp.nodes_per_domain == Some(0) || grp.domains_per_block == Some(0) {
                return Err(bad(
                    f,
                    "`nodes_per_domain` and `domains_per_block` must be ≥ 1",
                ));
            }
        }
        if let Some(ml) = &c.machine_list {
            if ml.path.is_some() == ml.public_path.is_some() {
                return Err(bad(
                    format!("{f}.machine_list"),
                    "give exactly one of `path` and `public_path`",
                ));
            }
        }
    }
    match (&s.workload.trace, &s.workload.synthetic) {
        (Some(t), None) => {
            if t.path.is_some() == t.public_path.is_some() {
                return Err(bad(
                    "workload.trace".into(),
                    "give exactly one of `path` and `public_path`",
                ));
            }
            let (_, set) = t
                .sacct_options()
                .map_err(|(f, m)| bad(format!("workload.trace.{f}"), &m))?;
            if let (Some(f), false) = (set, t.format == super::TraceFormat::SlurmSacct) {
                return Err(bad(
                    format!("workload.trace.{f}"),
                    "only for `format = \"slurm-sacct\"` (`sacct_format`: the --format list of a \
                     `sacct --noheader` file; `sacct_delimiter`: its --delimiter; \
                     `sacct_strict`: refuse rows with the wrong field count)",
                ));
            }
        }
        (None, Some(syn)) => syn
            .validate()
            .map_err(|m: String| bad("workload.synthetic".into(), &m))?,
        _ => {
            return Err(bad(
                "workload".into(),
                "give exactly one of `[workload.trace]` and `[workload.synthetic]`",
            ))
        }
    }
    let mut qnames = BTreeSet::new();
    for (i, q) in s.queues.iter().enumerate() {
        let f = format!("queues[{i}]");
        if !qnames.insert(q.name.clone()) {
            return Err(bad(
                format!("{f}.name"),
                &format!("duplicate queue `{}`", q.name),
            ));
        }
        for (k, v) in [
            ("max_gpus", q.max_gpus),
            ("default_time_limit_s", q.default_time_limit_s),
            ("max_time_limit_s", q.max_time_limit_s),
        ] {
            if let Some(v) = v {
                if !finite_nonneg(v) {
                    return Err(bad(
                        format!("{f}.{k}"),
                        &format!("must be a number ≥ 0, got {v}"),
                    ));
                }
            }
        }
        if let Some(p) = &q.preemption {
            use fleetsim_policies::preemption::ReclaimWithinCohort;
            use fleetsim_policies::BorrowWithinCohortPolicy;
            if p.borrow_within_cohort.policy != BorrowWithinCohortPolicy::Never
                && p.reclaim_within_cohort == ReclaimWithinCohort::Never
            {
                return Err(bad(
                    format!("{f}.preemption.borrow_within_cohort"),
                    "needs `reclaim_within_cohort` other than `never` (Kueue refuses \
                     reclaimWithinCohort=Never with borrowWithinCohort.policy other than Never)",
                ));
            }
        }
    }
    validate_quota(s, &bad)?;
    validate_policy(s, &bad)?;
    super::reliability::validate(s, origin)?;
    for (i, e) in s.node_events.iter().enumerate() {
        if !finite_nonneg(e.at_s) {
            return Err(bad(
                format!("node_events[{i}].at_s"),
                "must be a number ≥ 0",
            ));
        }
        if !finite_nonneg(e.grace_s) {
            return Err(bad(
                format!("node_events[{i}].grace_s"),
                "must be a number ≥ 0",
            ));
        }
    }
    match (&s.mode, &s.inflation) {
        (Mode::Inflation, None) => {
            return Err(bad(
                "inflation".into(),
                "`mode = \"inflation\"` needs an `[inflation]` table",
            ))
        }
        (Mode::Inflation, Some(inf)) => {
            if inf.policies.is_empty() {
                return Err(bad("inflation.policies".into(), "name at least one policy"));
            }
            if inf.seeds.is_empty() && inf.seed_count.unwrap_or(0) == 0 {
                return Err(bad(
                    "inflation".into(),
                    "give `seeds = [...]` or `seed_count` ≥ 1",
                ));
            }
            if !(1..=1000).contains(&inf.target_pct) {
                return Err(bad("inflation.target_pct".into(), "must be in 1..=1000"));
            }
            if !(1..=100).contains(&inf.typical_threshold_pct) {
                return Err(bad(
                    "inflation.typical_threshold_pct".into(),
                    "must be in 1..=100",
                ));
            }
            if inf.order_from.is_some() && (inf.seeds.len() > 1 || inf.seed_count.unwrap_or(1) > 1)
            {
                return Err(bad(
                    "inflation.order_from".into(),
                    "a recorded order is one run: give one seed",
                ));
            }
            if !inf.check_against.is_empty() && inf.order_from.is_none() {
                return Err(bad(
                    "inflation.check_against".into(),
                    "checking against a log needs `order_from` (its order and rank)",
                ));
            }
            for name in inf.check_against.keys() {
                let known = name
                    .parse::<fleetsim_policies::PlacementKind>()
                    .map_err(|m| bad(format!("inflation.check_against.{name}"), m.as_str()))?;
                if !inf.policies.contains(&known) {
                    return Err(bad(
                        format!("inflation.check_against.{name}"),
                        "not one of `inflation.policies`",
                    ));
                }
            }
            match &s.workload.trace {
                Some(t) if t.format == TraceFormat::AlibabaOpenb => {}
                _ => {
                    return Err(bad(
                        "workload.trace".into(),
                        "the inflation experiment reads an `alibaba-openb` pod list",
                    ))
                }
            }
        }
        (_, Some(_)) => {
            return Err(bad(
                "inflation".into(),
                "`[inflation]` is only used with `mode = \"inflation\"`",
            ))
        }
        _ => {}
    }
    let m = &s.metrics;
    if !finite_nonneg(m.warmup_s) {
        return Err(bad("metrics.warmup_s".into(), "must be a number ≥ 0"));
    }
    if let Some(h) = m.horizon_s {
        if !(h.is_finite() && h > 0.0) {
            return Err(bad("metrics.horizon_s".into(), "must be a number > 0"));
        }
    }
    if !(m.timeseries_interval_s.is_finite() && m.timeseries_interval_s >= 0.001) {
        return Err(bad(
            "metrics.timeseries_interval_s".into(),
            "must be at least 0.001 s",
        ));
    }
    if m.outputs.is_empty() {
        return Err(bad(
            "metrics.outputs".into(),
            "must name at least one format (\"csv\", \"parquet\")",
        ));
    }
    #[cfg(not(feature = "parquet"))]
    if let Some(i) = m.outputs.iter().position(|f| *f == OutputFormat::Parquet) {
        return Err(bad(
            format!("metrics.outputs[{i}]"),
            "this build of fleetsim writes no Parquet (built without the Cargo feature `parquet`)",
        ));
    }
    if let Some(i) = (1..m.outputs.len()).find(|&i| m.outputs[..i].contains(&m.outputs[i])) {
        return Err(bad(
            format!("metrics.outputs[{i}]"),
            &format!("`{}` is listed twice", m.outputs[i].as_str()),
        ));
    }
    s.transforms.spec.validate().map_err(|(f, m)| bad(f, &m))?;
    if let Some(sw) = &s.sweep {
        sw.validate().map_err(|(f, m)| bad(f, &m))?;
    }
    if let Some(c) = &s.check {
        c.validate().map_err(|(f, m)| bad(f, &m))?;
    }
    Ok(())
}

/// The scenario's queues as the SLOs see them (after the Kueue manifests are merged in).
pub fn slo_queues(s: &Scenario) -> Vec<crate::metrics::slo::SloQueue> {
    s.queues
        .iter()
        .map(|q| crate::metrics::slo::SloQueue {
            name: q.name.clone(),
            local_queues: q.local_queues.clone(),
            tier: q.tier.unwrap_or_default(),
        })
        .collect()
}

/// Checks `[[metrics.slo]]` ([`crate::metrics::slo::validate`]) against the queues, Kueue's
/// included.
fn validate_slo(s: &Scenario, origin: &str) -> Result<(), ScenarioError> {
    let bad = |field: String, message: String| ScenarioError::Invalid {
        origin: origin.to_string(),
        field,
        message,
    };
    if s.metrics.slo.len() > crate::metrics::slo::MAX_SLOS {
        return Err(bad(
            "metrics.slo".into(),
            format!("at most {} SLOs", crate::metrics::slo::MAX_SLOS),
        ));
    }
    crate::metrics::slo::validate(&s.metrics.slo, &slo_queues(s)).map_err(|(f, m)| bad(f, m))
}

/// Checks cohorts and queue quotas: names, parents (no cycles), weights, and every quota
/// value (non-negative; limits only with a cohort; lending within nominal).
fn validate_quota(
    s: &Scenario,
    bad: &dyn Fn(String, &str) -> ScenarioError,
) -> Result<(), ScenarioError> {
    let mut cohorts = std::collections::BTreeMap::new();
    for (i, c) in s.cohorts.iter().enumerate() {
        if c.name.trim().is_empty() {
            return Err(bad(format!("cohorts[{i}].name"), "must not be empty"));
        }
        if cohorts.insert(c.name.as_str(), i).is_some() {
            return Err(bad(
                format!("cohorts[{i}].name"),
                &format!("duplicate cohort `{}`", c.name),
            ));
        }
    }
    for (i, c) in s.cohorts.iter().enumerate() {
        if let Some(p) = &c.parent {
            if !cohorts.contains_key(p.as_str()) {
                return Err(bad(
                    format!("cohorts[{i}].parent"),
                    &format!("unknown cohort `{p}`"),
                ));
            }
        }
        // Follow parents; more steps than cohorts means a cycle.
        let mut cur = c.parent.as_deref();
        let mut steps = 0;
        while let Some(p) = cur {
            steps += 1;
            if steps > s.cohorts.len() {
                return Err(bad(
                    format!("cohorts[{i}].parent"),
                    &format!(
                        "cohort `{}` is its own ancestor (a cycle of parents)",
                        c.name
                    ),
                ));
            }
            cur = s.cohorts[cohorts[p]].parent.as_deref();
        }
        check_weight(bad, format!("cohorts[{i}].weight"), c.weight)?;
        check_flavors(
            bad,
            &format!("cohorts[{i}]"),
            &c.flavors,
            c.parent.is_some(),
            "cohort",
        )?;
    }
    let mut flavor_names = BTreeSet::new();
    for (i, f) in s.flavors.iter().enumerate() {
        if f.name.is_empty() || f.name == "*" {
            return Err(bad(
                format!("flavors[{i}].name"),
                "must be a name other than `*` (which already means any model)",
            ));
        }
        if !flavor_names.insert(f.name.as_str()) {
            return Err(bad(
                format!("flavors[{i}].name"),
                &format!("duplicate flavor `{}`", f.name),
            ));
        }
    }
    // Every name a job can reach a queue by (its name and its local queues) is unique.
    let mut reach: BTreeMap<&str, String> = s
        .queues
        .iter()
        .map(|q| (q.name.as_str(), q.name.clone()))
        .collect();
    for (i, q) in s.queues.iter().enumerate() {
        for (j, lq) in q.local_queues.iter().enumerate() {
            if lq.is_empty() {
                return Err(bad(
                    format!("queues[{i}].local_queues[{j}]"),
                    "must not be empty",
                ));
            }
            if let Some(owner) = reach.insert(lq.as_str(), q.name.clone()) {
                return Err(bad(
                    format!("queues[{i}].local_queues[{j}]"),
                    &format!("`{lq}` already names queue `{owner}`"),
                ));
            }
        }
    }
    for (i, q) in s.queues.iter().enumerate() {
        if let Some(c) = &q.cohort {
            if !cohorts.contains_key(c.as_str()) {
                return Err(bad(
                    format!("queues[{i}].cohort"),
                    &format!("unknown cohort `{c}`"),
                ));
            }
        }
        check_weight(bad, format!("queues[{i}].weight"), q.weight)?;
        check_flavors(
            bad,
            &format!("queues[{i}]"),
            &q.flavors,
            q.cohort.is_some(),
            "queue",
        )?;
    }
    Ok(())
}

fn check_weight(
    bad: &dyn Fn(String, &str) -> ScenarioError,
    field: String,
    w: Option<f64>,
) -> Result<(), ScenarioError> {
    match w {
        Some(w) if !finite_nonneg(w) => Err(bad(field, &format!("must be a number ≥ 0, got {w}"))),
        _ => Ok(()),
    }
}

fn check_flavors(
    bad: &dyn Fn(String, &str) -> ScenarioError,
    node: &str,
    flavors: &[FlavorQuotaSpec],
    has_cohort: bool,
    kind: &str,
) -> Result<(), ScenarioError> {
    let mut seen = BTreeSet::new();
    for (j, fl) in flavors.iter().enumerate() {
        let f = format!("{node}.flavors[{j}]");
        if !seen.insert(fl.name.as_str()) {
            return Err(bad(
                format!("{f}.name"),
                &format!("flavor `{}` listed twice", fl.name),
            ));
        }
        for (res, q) in [
            ("gpus", fl.gpus),
            ("cpus", fl.cpus),
            ("memory_gib", fl.memory_gib),
        ] {
            let Some(q) = q else { continue };
            let f = format!("{f}.{res}");
            for (k, v) in [
                ("nominal", Some(q.nominal)),
                ("borrowing_limit", q.borrowing_limit),
                ("lending_limit", q.lending_limit),
            ] {
                if let Some(v) = v {
                    if !finite_nonneg(v) {
                        return Err(bad(
                            format!("{f}.{k}"),
                            &format!("must be a number ≥ 0, got {v}"),
                        ));
                    }
                }
            }
            for (k, v) in [
                ("borrowing_limit", q.borrowing_limit),
                ("lending_limit", q.lending_limit),
            ] {
                if v.is_some() && !has_cohort {
                    return Err(bad(
                        format!("{f}.{k}"),
                        &format!(
                            "a {} needs a cohort to borrow from or lend to, but this {kind} belongs to no cohort",
                            k.replace('_', " ")
                        ),
                    ));
                }
            }
            if q.lending_limit.is_some_and(|l| l > q.nominal) {
                return Err(bad(
                    format!("{f}.lending_limit"),
                    "must not exceed the nominal quota it lends from",
                ));
            }
        }
    }
    Ok(())
}

/// Checks the policy's settings ([`fleetsim_policies::SchedulerSpec::validate`]), naming
/// the field under `policy.`.
fn validate_policy(
    s: &Scenario,
    bad: &dyn Fn(String, &str) -> ScenarioError,
) -> Result<(), ScenarioError> {
    s.policy
        .validate()
        .map_err(|e| bad(format!("policy.{}", e.field), &e.message))
}

pub use fleetsim_policies::spec::secs_to_ms;
