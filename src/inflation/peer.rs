//! The FGD artifact's per-attempt logs (`shared/traces/peer-fgd/results/events_*.csv`,
//! described in that folder's `SOURCE.md`): read one, take its pod order and node rank,
//! check a fleetsim run against it row by row, and write fleetsim's own attempts in the same
//! column layout so the two files can be diffed.
//!
//! # Order and rank from a log
//!
//! * **Pod order** ([`PeerLog::order`]): row `i` offers the pod named in its `base_pod`
//!   column (a clone `<base>-tuned-<k>` is a copy of `<base>`), looked up in the pod list by
//!   name. Its request columns must equal the pod list's, or the log belongs to another
//!   pod list and reading fails.
//! * **Node rank** ([`PeerLog::rank`]): a placed row names its node `NNNN-<sn>`; `NNNN` is the
//!   artifact's seeded tie-break rank of node `<sn>` (the node-name prefix its scheduler
//!   sorts ties by). A node named with two prefixes, two nodes with one prefix, or a name
//!   not in the fleet is an error. Nodes the log never names get the unused prefixes in
//!   name order — a guess, reported as [`NodeRank::inferred`] (0 for both peer-fgd logs,
//!   which name all 1,213 nodes).
//!
//! # Agreement ([`check`])
//!
//! Row by row, fleetsim's decision for the row's pod (placed or not, node, accelerators) is
//! compared with the row's, then the state after the attempt: `used_gpu_milli` exactly and,
//! with the fragmentation series on, `frag_milli` to [`FRAG_TOLERANCE_MILLI`] (the log
//! prints the artifact's `float64` sum rounded to 0.01; fleetsim's is exact). At a row that
//! disagrees, the report keeps both sides and the candidate nodes' scores in both
//! arithmetics ([`Divergence`]); the run then continues from the *log's* decision, so every
//! disagreeing row is counted, not only the first.
//!
//! # Attempt rows ([`write_attempts`])
//!
//! The log's 21 columns, in its order and formats (node `NNNN-<sn>` with the run's rank,
//! accelerators `0-1-2`, floats rounded to two decimals and printed as Python prints them).
//! `frag_milli`, `frag_ratio_pct` and `q124_ratio_pct` come from the exact per-attempt series
//! (empty when it is off). `bellman_frag_milli` and `bellman_frag_ratio_pct` are left empty:
//! the artifact's Bellman variant is used by no policy and its memo makes values depend on
//! the order nodes were visited in earlier reports.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use fleetsim_policies::placement::{Choice, PlaceCtx};
use fleetsim_policies::{FleetState, NodeId, PlacementKind, ScoreArithmetic, TaskShape};

use super::{Event, Experiment, RunConfig, RunTrace, Runner};
use crate::report::atomic::AtomicFile;
use crate::workload::native::{csv_reader, map_columns, next_record};
use crate::workload::TraceError;

/// Largest accepted |fleetsim − log| of `frag_milli`, GPU-milli (the log's rounding).
pub const FRAG_TOLERANCE_MILLI: f64 = 0.01;

/// The log's columns, in its order.
pub const COLUMNS: [&str; 21] = [
    "event",
    "pod",
    "base_pod",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "placed",
    "node",
    "gpu_index",
    "used_gpu_milli",
    "arrived_gpu_milli",
    "used_nodes",
    "used_gpus",
    "total_gpus",
    "frag_milli",
    "frag_ratio_pct",
    "q124_ratio_pct",
    "bellman_frag_milli",
    "bellman_frag_ratio_pct",
];

/// How many leading [`COLUMNS`] a log must have (the two Bellman ones may be absent).
const REQUIRED: usize = COLUMNS.len() - 2;

/// One row of a log: one attempt.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerRow {
    /// 1-based line in the file.
    pub line: u64,
    /// Attempt number, 0-based.
    pub event: u64,
    /// Pod name (`<base>-tuned-<k>` for clones).
    pub pod: String,
    /// The pod-list pod it copies.
    pub base_pod: String,
    /// CPU request, milli-cores.
    pub cpu_milli: u64,
    /// Memory request, MiB.
    pub memory_mib: u64,
    /// Accelerators requested.
    pub num_gpu: u32,
    /// GPU-milli per accelerator.
    pub gpu_milli: u32,
    /// Model constraint text (empty = any).
    pub gpu_spec: String,
    /// Placed (else dropped).
    pub placed: bool,
    /// Rank prefix and node name, when placed.
    pub node: Option<(u32, String)>,
    /// Accelerators used (bit `i` = accelerator `i`).
    pub gpu_mask: u64,
    /// Allocated GPU-milli in the fleet after the attempt.
    pub used_gpu_milli: u64,
    /// GPU-milli requested by all attempts so far.
    pub arrived_gpu_milli: u64,
    /// Nodes holding anything.
    pub used_nodes: u32,
    /// Accelerators of those nodes.
    pub used_gpus: u32,
    /// Accelerators in the fleet.
    pub total_gpus: u32,
    /// Fleet fragmentation, GPU-milli (the artifact's `float64`, rounded to 0.01).
    pub frag_milli: f64,
    /// Fragmentation, % of idle GPU-milli.
    pub frag_ratio_pct: f64,
    /// Q1 + Q2 + Q4 share of idle GPU-milli, %.
    pub q124_ratio_pct: f64,
}

/// A whole log.
#[derive(Clone, Debug)]
pub struct PeerLog {
    /// The file read.
    pub path: PathBuf,
    /// Rows in file order.
    pub rows: Vec<PeerRow>,
}

/// A node rank read from a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRank {
    /// Rank per node id (lower wins ties).
    pub rank: Vec<u32>,
    /// Nodes the log never names, ranked by the guess in the module docs.
    pub inferred: usize,
}

fn parse_u64(path: &Path, line: u64, field: &str, v: Option<&str>) -> Result<u64, TraceError> {
    let v = v.ok_or_else(|| TraceError::field(path, line, field, "empty"))?;
    v.parse()
        .map_err(|_| TraceError::field(path, line, field, format!("`{v}` is not an integer ≥ 0")))
}

fn parse_f64(path: &Path, line: u64, field: &str, v: Option<&str>) -> Result<f64, TraceError> {
    let v = v.ok_or_else(|| TraceError::field(path, line, field, "empty"))?;
    v.parse()
        .map_err(|_| TraceError::field(path, line, field, format!("`{v}` is not a number")))
}

fn parse_u32(path: &Path, line: u64, field: &str, v: Option<&str>) -> Result<u32, TraceError> {
    let n = parse_u64(path, line, field, v)?;
    u32::try_from(n).map_err(|_| TraceError::field(path, line, field, format!("{n} is too large")))
}

/// `0-1-2` → a mask.
fn parse_gpu_index(path: &Path, line: u64, v: Option<&str>) -> Result<u64, TraceError> {
    let Some(v) = v else { return Ok(0) };
    let mut mask = 0u64;
    for part in v.split('-') {
        let i: u32 = part.parse().map_err(|_| {
            TraceError::field(path, line, "gpu_index", format!("`{v}` is not a `-`-list"))
        })?;
        if i >= 64 || mask >> i & 1 == 1 {
            return Err(TraceError::field(
                path,
                line,
                "gpu_index",
                format!("`{v}`: index {i} repeated or ≥ 64"),
            ));
        }
        mask |= 1 << i;
    }
    Ok(mask)
}

/// A mask → `0-1-2` (empty for none).
pub fn gpu_index_text(mask: u64) -> String {
    fleetsim_policies::state::bits(mask)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join("-")
}

impl PeerLog {
    /// Reads a log.
    ///
    /// # Errors
    /// [`TraceError`] naming the file, line and field: a missing or unknown column, a value
    /// that does not parse, a `node` without its `NNNN-` prefix, a placed row without a
    /// node or a dropped row with one.
    pub fn read(path: &Path) -> Result<PeerLog, TraceError> {
        let mut rdr = csv_reader(path)?;
        let cols = map_columns(path, &mut rdr, &COLUMNS, &COLUMNS[..REQUIRED], None)?;
        let mut rec = csv::StringRecord::new();
        let mut rows = Vec::new();
        while let Some(line) = next_record(path, &mut rdr, &mut rec) {
            let line = line?;
            let get = |k: usize| cols.get(&rec, k);
            let text = |k: usize| get(k).unwrap_or("").to_string();
            let placed = match get(8) {
                Some("1") => true,
                Some("0") => false,
                other => {
                    return Err(TraceError::field(
                        path,
                        line,
                        "placed",
                        format!("`{}` is not 0 or 1", other.unwrap_or("")),
                    ))
                }
            };
            let node = match get(9) {
                None => None,
                Some(v) => {
                    let (r, name) = v
                        .split_once('-')
                        .filter(|(r, n)| r.len() == 4 && !n.is_empty())
                        .ok_or_else(|| {
                            TraceError::field(
                                path,
                                line,
                                "node",
                                format!("`{v}` is not NNNN-<name>"),
                            )
                        })?;
                    let r: u32 = r.parse().map_err(|_| {
                        TraceError::field(path, line, "node", format!("`{v}`: prefix not a number"))
                    })?;
                    Some((r, name.to_string()))
                }
            };
            if placed != node.is_some() {
                return Err(TraceError::field(
                    path,
                    line,
                    "node",
                    "a placed row needs a node and a dropped row has none",
                ));
            }
            rows.push(PeerRow {
                line,
                event: parse_u64(path, line, "event", get(0))?,
                pod: text(1),
                base_pod: text(2),
                cpu_milli: parse_u64(path, line, "cpu_milli", get(3))?,
                memory_mib: parse_u64(path, line, "memory_mib", get(4))?,
                num_gpu: parse_u32(path, line, "num_gpu", get(5))?,
                gpu_milli: parse_u32(path, line, "gpu_milli", get(6))?,
                gpu_spec: text(7),
                placed,
                node,
                gpu_mask: parse_gpu_index(path, line, get(10))?,
                used_gpu_milli: parse_u64(path, line, "used_gpu_milli", get(11))?,
                arrived_gpu_milli: parse_u64(path, line, "arrived_gpu_milli", get(12))?,
                used_nodes: parse_u32(path, line, "used_nodes", get(13))?,
                used_gpus: parse_u32(path, line, "used_gpus", get(14))?,
                total_gpus: parse_u32(path, line, "total_gpus", get(15))?,
                frag_milli: parse_f64(path, line, "frag_milli", get(16))?,
                frag_ratio_pct: parse_f64(path, line, "frag_ratio_pct", get(17))?,
                q124_ratio_pct: parse_f64(path, line, "q124_ratio_pct", get(18))?,
            });
        }
        Ok(PeerLog {
            path: path.to_path_buf(),
            rows,
        })
    }

    /// The arrival sequence: per row, the index in `exp.pods` of its `base_pod`.
    ///
    /// # Errors
    /// [`TraceError::BadField`] for a `base_pod` not in the pod list or a request that
    /// differs from the pod list's.
    pub fn order(&self, exp: &Experiment) -> Result<Vec<usize>, TraceError> {
        let by_name: BTreeMap<&str, usize> = exp
            .pods
            .iter()
            .enumerate()
            .map(|(i, p)| (p.name.as_str(), i))
            .collect();
        self.rows
            .iter()
            .map(|r| {
                let &i = by_name.get(r.base_pod.as_str()).ok_or_else(|| {
                    TraceError::field(
                        &self.path,
                        r.line,
                        "base_pod",
                        format!("`{}` is not in the pod list", r.base_pod),
                    )
                })?;
                let s = &exp.pods[i].shape;
                let logged = TaskShape {
                    num_gpu: r.num_gpu,
                    gpu_milli: r.gpu_milli,
                    cpu_milli: r.cpu_milli,
                    mem_mib: r.memory_mib,
                };
                if *s != logged || exp.pods[i].type_key != r.gpu_spec {
                    return Err(TraceError::field(
                        &self.path,
                        r.line,
                        "cpu_milli",
                        format!(
                            "the request of `{}` differs from the pod list's: is the log from another pod list?",
                            r.base_pod
                        ),
                    ));
                }
                Ok(i)
            })
            .collect()
    }

    /// The node rank (see the module docs).
    ///
    /// # Errors
    /// [`TraceError::BadField`] for a node not in the fleet, a node with two prefixes, or a
    /// prefix given to two nodes or not below the node count.
    pub fn rank(&self, fleet: &FleetState) -> Result<NodeRank, TraceError> {
        let n = fleet.nodes().len();
        let by_name: BTreeMap<&str, usize> = (0..n)
            .map(|i| (fleet.node_name(NodeId(i as u32)), i))
            .collect();
        let mut rank: Vec<Option<u32>> = vec![None; n];
        let mut owner: Vec<Option<usize>> = vec![None; n];
        for r in &self.rows {
            let Some((prefix, name)) = &r.node else {
                continue;
            };
            let bad = |m: String| TraceError::field(&self.path, r.line, "node", m);
            let &id = by_name
                .get(name.as_str())
                .ok_or_else(|| bad(format!("node `{name}` is not in the fleet")))?;
            let p = *prefix as usize;
            if p >= n {
                return Err(bad(format!("prefix {prefix} ≥ the fleet's {n} nodes")));
            }
            match (rank[id], owner[p]) {
                (Some(x), _) if x != *prefix => {
                    return Err(bad(format!(
                        "node `{name}` appears with prefixes {x} and {prefix}"
                    )))
                }
                (_, Some(o)) if o != id => {
                    return Err(bad(format!(
                        "prefix {prefix} names `{name}` and `{}`",
                        fleet.node_name(NodeId(o as u32))
                    )))
                }
                _ => {
                    rank[id] = Some(*prefix);
                    owner[p] = Some(id);
                }
            }
        }
        let mut unused = (0..n as u32).filter(|&p| owner[p as usize].is_none());
        let mut unnamed: Vec<usize> = (0..n).filter(|&i| rank[i].is_none()).collect();
        unnamed.sort_by(|&a, &b| {
            fleet
                .node_name(NodeId(a as u32))
                .cmp(fleet.node_name(NodeId(b as u32)))
        });
        let inferred = unnamed.len();
        for i in unnamed {
            rank[i] = unused.next();
        }
        Ok(NodeRank {
            rank: rank
                .into_iter()
                .map(|r| r.expect("every node ranked"))
                .collect(),
            inferred,
        })
    }
}

/// One side of a disagreeing row.
#[derive(Clone, Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Side {
    /// Placed.
    pub placed: bool,
    /// `NNNN-<sn>` when placed.
    pub node: Option<String>,
    /// Accelerators, `0-1-2`.
    pub gpu_index: String,
    /// Allocated GPU-milli after the attempt.
    pub used_gpu_milli: u64,
    /// Fleet fragmentation after the attempt, GPU-milli (fleetsim: exact; `None` when the
    /// series is off).
    pub frag_milli: Option<f64>,
}

/// One candidate node at a disagreeing row.
#[derive(Clone, Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Candidate {
    /// `NNNN-<sn>`.
    pub node: String,
    /// Its score with exact arithmetic, and the accelerators it would take.
    pub score_exact: Option<i64>,
    /// Its score with the artifact's arithmetic.
    pub score_artifact: Option<i64>,
    /// Accelerators chosen with the run's arithmetic, `0-1-2`.
    pub gpu_index: String,
    /// Why it is listed: `fleetsim` (fleetsim's pick), `log` (the log's), `top` (among the
    /// best-scoring nodes).
    pub why: String,
}

/// The first row where fleetsim and the log disagree.
#[derive(Clone, Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Divergence {
    /// The row's `event`.
    pub event: u64,
    /// The row's line in the log.
    pub line: u64,
    /// The pod.
    pub pod: String,
    /// Its request: CPU milli, memory MiB, accelerators, GPU-milli each.
    pub request: (u64, u64, u32, u32),
    /// Columns that disagree.
    pub fields: Vec<String>,
    /// fleetsim's outcome.
    pub fleetsim: Side,
    /// The log's outcome.
    pub log: Side,
    /// Both picks and the top candidates, with their scores in both arithmetics (fleetsim's
    /// run arithmetic decides; highest score, then lowest rank).
    pub candidates: Vec<Candidate>,
}

/// Agreement of one policy's run with one log.
#[derive(Clone, Debug, Serialize, PartialEq, schemars::JsonSchema)]
pub struct Agreement {
    /// Policy.
    pub policy: String,
    /// Score arithmetic of the run.
    pub arithmetic: String,
    /// The log.
    pub log: String,
    /// Rows compared.
    pub rows: u64,
    /// Rows where decision and state agree.
    pub matched: u64,
    /// Rows that disagree (each followed by the log's decision).
    pub diverged: u64,
    /// Rows whose decision (placed, node, accelerators) disagrees.
    pub decisions_diverged: u64,
    /// Whether `frag_milli` was compared (fragmentation series on).
    pub frag_checked: bool,
    /// Largest |fleetsim − log| of `frag_milli` over all rows, GPU-milli.
    pub max_frag_diff_milli: f64,
    /// The first disagreeing row.
    pub first_divergence: Option<Divergence>,
}

impl Agreement {
    /// Every row agrees.
    pub fn all_match(&self) -> bool {
        self.diverged == 0 && self.matched == self.rows
    }

    /// A readable account: counts, then the first disagreeing row with both sides and the
    /// candidates' scores.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "{} ({} arithmetic) vs {}: {} of {} rows agree, {} differ ({} decisions); max |frag_milli diff| {:.4}{}\n",
            self.policy,
            self.arithmetic,
            self.log,
            self.matched,
            self.rows,
            self.diverged,
            self.decisions_diverged,
            self.max_frag_diff_milli,
            if self.frag_checked { "" } else { " (fragmentation not compared)" }
        );
        if let Some(d) = &self.first_divergence {
            s.push_str(&format!(
                "first divergence: event {} (line {}), pod {} (cpu {} mCPU, mem {} MiB, {} x {} mGPU), columns {:?}\n",
                d.event, d.line, d.pod, d.request.0, d.request.1, d.request.2, d.request.3, d.fields
            ));
            for (who, side) in [("fleetsim", &d.fleetsim), ("log", &d.log)] {
                s.push_str(&format!(
                    "  {who:<8} placed {} node {} gpus [{}] used_gpu_milli {} frag_milli {}\n",
                    u8::from(side.placed),
                    side.node.as_deref().unwrap_or("-"),
                    side.gpu_index,
                    side.used_gpu_milli,
                    side.frag_milli.map_or("-".into(), |f| format!("{f:.4}"))
                ));
            }
            s.push_str("  candidates (score exact / artifact):\n");
            for c in &d.candidates {
                s.push_str(&format!(
                    "    {:<22} {:>4} / {:<4} gpus [{}] {}\n",
                    c.node,
                    c.score_exact.map_or("-".into(), |v| v.to_string()),
                    c.score_artifact.map_or("-".into(), |v| v.to_string()),
                    c.gpu_index,
                    c.why
                ));
            }
        }
        s
    }
}

/// `NNNN-<sn>` of a node under a rank.
pub fn ranked_name(fleet: &FleetState, rank: &[u32], n: NodeId) -> String {
    format!("{:04}-{}", rank[n.index()], fleet.node_name(n))
}

/// Candidates at a disagreeing row: both picks and the `top` best nodes in the run's
/// arithmetic, each scored in both arithmetics.
fn candidates(
    runner: &mut Runner<'_>,
    rank: &[u32],
    pod: usize,
    ours: Option<NodeId>,
    theirs: Option<NodeId>,
    top: usize,
) -> Vec<Candidate> {
    let p = &runner.exp.pods[pod];
    let (shape, Some(models)) = (p.shape, p.models) else {
        return Vec::new();
    };
    let run_arith = runner.ctx.arithmetic();
    let other = match run_arith {
        ScoreArithmetic::Exact => ScoreArithmetic::Artifact,
        ScoreArithmetic::Artifact => ScoreArithmetic::Exact,
    };
    let mut other_ctx: PlaceCtx = runner.ctx.clone().with_arithmetic(other);
    let fleet = &runner.fleet;
    let placement = runner.placement.as_ref();
    let n = fleet.nodes().len();
    let mut scored: Vec<(i64, u32, NodeId, Option<u64>)> = (0..n)
        .filter_map(|i| {
            let id = NodeId(i as u32);
            placement
                .node_score(&mut runner.ctx, fleet, id, &shape, models)
                .map(|(s, m)| (s, rank[i], id, m))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut list: Vec<(NodeId, &str)> = Vec::new();
    if let Some(o) = ours {
        list.push((o, "fleetsim"));
    }
    if let Some(t) = theirs.filter(|&t| Some(t) != ours) {
        list.push((t, "log"));
    }
    for &(_, _, id, _) in scored.iter().take(top) {
        if !list.iter().any(|&(x, _)| x == id) {
            list.push((id, "top"));
        }
    }
    list.into_iter()
        .map(|(id, why)| {
            let mine = placement.node_score(&mut runner.ctx, fleet, id, &shape, models);
            let alt = placement.node_score(&mut other_ctx, fleet, id, &shape, models);
            let (exact, artifact) = match run_arith {
                ScoreArithmetic::Exact => (mine, alt),
                ScoreArithmetic::Artifact => (alt, mine),
            };
            let mask = mine
                .and_then(|(_, m)| m)
                .or_else(|| fleet.choose_gpus(id, &shape));
            Candidate {
                node: ranked_name(fleet, rank, id),
                score_exact: exact.map(|x| x.0),
                score_artifact: artifact.map(|x| x.0),
                gpu_index: mask.map_or(String::new(), gpu_index_text),
                why: why.to_string(),
            }
        })
        .collect()
}

/// Runs `policy` over the log's order and rank and compares every row (see the module docs).
/// Returns the agreement and the run's events (which follow the log's decisions after a
/// disagreeing row).
///
/// # Panics
/// If `order` and the log's rows differ in length, or a placed row names a node not in the
/// fleet (both are checked by [`PeerLog::order`] and [`PeerLog::rank`]).
pub fn check(
    exp: &Experiment,
    policy: PlacementKind,
    seed: u64,
    log: &PeerLog,
    order: &[usize],
    rank: &NodeRank,
    cfg: RunConfig,
) -> (Agreement, RunTrace) {
    assert_eq!(order.len(), log.rows.len(), "one pod per row");
    let by_name: BTreeMap<&str, NodeId> = (0..exp.fleet.nodes().len())
        .map(|i| (exp.fleet.node_name(NodeId(i as u32)), NodeId(i as u32)))
        .collect();
    let w = exp.typical.weight_total() as f64;
    let mut runner = Runner::new(exp, policy, seed, rank.rank.clone(), cfg);
    let mut events: Vec<Event> = Vec::with_capacity(order.len());
    let mut a = Agreement {
        policy: policy.as_str().to_string(),
        arithmetic: cfg.arithmetic.as_str().to_string(),
        log: log.path.display().to_string(),
        rows: log.rows.len() as u64,
        matched: 0,
        diverged: 0,
        decisions_diverged: 0,
        frag_checked: cfg.frag_series,
        max_frag_diff_milli: 0.0,
        first_divergence: None,
    };
    for (row, &pod) in log.rows.iter().zip(order) {
        let shape = exp.pods[pod].shape;
        let ours: Option<(NodeId, u64)> = runner.choose(pod).and_then(|c| {
            let mask = c
                .gpu_mask
                .or_else(|| runner.fleet.choose_gpus(c.node, &shape))?;
            Some((c.node, mask))
        });
        let theirs: Option<(NodeId, u64)> = row.node.as_ref().map(|(_, name)| {
            let id = *by_name
                .get(name.as_str())
                .expect("checked by PeerLog::rank");
            (id, row.gpu_mask)
        });
        let decision_differs = ours != theirs;
        let cands = if decision_differs && a.first_divergence.is_none() {
            candidates(
                &mut runner,
                &rank.rank,
                pod,
                ours.map(|x| x.0),
                theirs.map(|x| x.0),
                5,
            )
        } else {
            Vec::new()
        };
        let side_of = |fleet: &FleetState, d: Option<(NodeId, u64)>| {
            (
                d.map(|(n, _)| ranked_name(fleet, &rank.rank, n)),
                d.map_or(String::new(), |(_, m)| gpu_index_text(m)),
            )
        };
        let (our_node, our_gpus) = side_of(&runner.fleet, ours);
        // Continue from the log's decision (identical when they agree).
        let e = runner.apply(
            pod,
            theirs.map(|(node, mask)| Choice {
                node,
                gpu_mask: Some(mask),
            }),
        );
        // fleetsim's state after its own decision equals this one when the decisions agree;
        // when they differ, report the state its own decision would have left.
        let our_state = if decision_differs {
            let mut f = runner.fleet.clone();
            if let Some((n, m)) = theirs {
                let alloc = fleetsim_policies::TaskAlloc {
                    node: n,
                    gpu_mask: m,
                    gpu_milli: if m == 0 { 0 } else { shape.gpu_milli },
                    cpu_milli: shape.cpu_milli,
                    mem_mib: shape.mem_mib,
                };
                f.release(&alloc).expect("undo the log's decision");
            }
            if let Some((n, m)) = ours {
                let _ = fleetsim_policies::placement::bind(
                    &mut f,
                    Choice {
                        node: n,
                        gpu_mask: Some(m),
                    },
                    &shape,
                    exp.pods[pod]
                        .models
                        .unwrap_or(fleetsim_policies::ModelSet::ANY),
                );
            }
            let frag: u128 = (0..f.nodes().len())
                .map(|i| u128::from(exp.typical.node_frag_now(&f, NodeId(i as u32))))
                .sum();
            (f.allocated_gpu_milli(), frag as f64 / w)
        } else {
            (e.allocated_milli, e.frag_scaled as f64 / w)
        };
        let frag_diff = (our_state.1 - row.frag_milli).abs();
        if cfg.frag_series && !decision_differs {
            a.max_frag_diff_milli = a.max_frag_diff_milli.max(frag_diff);
        }
        let mut fields = Vec::new();
        if decision_differs {
            if ours.is_some() != theirs.is_some() {
                fields.push("placed");
            }
            if ours.map(|x| x.0) != theirs.map(|x| x.0) {
                fields.push("node");
            }
            if ours.map(|x| x.1) != theirs.map(|x| x.1) {
                fields.push("gpu_index");
            }
        }
        if our_state.0 != row.used_gpu_milli {
            fields.push("used_gpu_milli");
        }
        if cfg.frag_series && frag_diff > FRAG_TOLERANCE_MILLI + 1e-9 {
            fields.push("frag_milli");
        }
        if fields.is_empty() {
            a.matched += 1;
        } else {
            a.diverged += 1;
            if decision_differs {
                a.decisions_diverged += 1;
            }
            if a.first_divergence.is_none() {
                let (log_node, log_gpus) = side_of(&runner.fleet, theirs);
                a.first_divergence = Some(Divergence {
                    event: row.event,
                    line: row.line,
                    pod: row.pod.clone(),
                    request: (
                        shape.cpu_milli,
                        shape.mem_mib,
                        shape.num_gpu,
                        shape.gpu_milli,
                    ),
                    fields: fields.iter().map(|s| s.to_string()).collect(),
                    fleetsim: Side {
                        placed: ours.is_some(),
                        node: our_node,
                        gpu_index: our_gpus,
                        used_gpu_milli: our_state.0,
                        frag_milli: cfg.frag_series.then_some(our_state.1),
                    },
                    log: Side {
                        placed: row.placed,
                        node: log_node,
                        gpu_index: log_gpus,
                        used_gpu_milli: row.used_gpu_milli,
                        frag_milli: Some(row.frag_milli),
                    },
                    candidates: cands,
                });
            }
        }
        events.push(e);
    }
    (a, runner.finish(events))
}

/// `round(x, 2)` printed as Python prints a float: the shortest text, at least one decimal
/// (`836758.0`, `13.94`).
pub fn py_round2(x: f64) -> String {
    if !x.is_finite() {
        return "nan".into();
    }
    let mut s = format!("{x:.2}");
    while s.ends_with('0') && !s.ends_with(".0") {
        s.pop();
    }
    if s == "-0.0" {
        s = "0.0".into();
    }
    s
}

/// Pod names per attempt for an order fleetsim drew itself: the pod's name for the first
/// `pods.len()` attempts, then `<name>-tuned-<k>` for the `k`-th clone (the artifact's
/// naming).
pub fn attempt_names(exp: &Experiment, order: &[usize]) -> Vec<String> {
    let n = exp.pods.len();
    order
        .iter()
        .enumerate()
        .map(|(k, &i)| {
            let name = &exp.pods[i].name;
            if k < n {
                name.clone()
            } else {
                format!("{name}-tuned-{}", k - n)
            }
        })
        .collect()
}

/// Writes one run's attempts in the log's column layout (see the module docs).
///
/// # Errors
/// The I/O error from writing.
pub fn write_attempts(
    dest: &Path,
    exp: &Experiment,
    names: &[String],
    order: &[usize],
    rank: &[u32],
    trace: &RunTrace,
    frag_series: bool,
) -> std::io::Result<()> {
    let mut f = AtomicFile::create(dest)?;
    writeln!(f, "{}", COLUMNS.join(","))?;
    let w = exp.typical.weight_total() as f64;
    let cap = exp.capacity_milli;
    let total_gpus = cap / 1000;
    for (k, (e, &i)) in trace.events.iter().zip(order).enumerate() {
        let p = &exp.pods[i];
        let s = &p.shape;
        let (node, gpus) = match e.node {
            Some(n) => (ranked_name(&exp.fleet, rank, n), gpu_index_text(e.gpu_mask)),
            None => (String::new(), String::new()),
        };
        let idle = (cap - e.allocated_milli) as f64;
        let (frag, ratio, q124) = if frag_series {
            let frag = e.frag_scaled as f64 / w;
            let q = e.q124_scaled as f64 / w;
            (
                py_round2(frag),
                py_round2(100.0 * frag / idle),
                py_round2(100.0 * q / idle),
            )
        } else {
            (String::new(), String::new(), String::new())
        };
        let base = &p.name;
        writeln!(
            f,
            "{k},{},{base},{},{},{},{},{},{},{node},{gpus},{},{},{},{},{total_gpus},{frag},{ratio},{q124},,",
            names.get(k).map_or(base.as_str(), String::as_str),
            s.cpu_milli,
            s.mem_mib,
            s.num_gpu,
            s.gpu_milli,
            if s.num_gpu > 0 { p.type_key.as_str() } else { "" },
            u8::from(e.node.is_some()),
            e.allocated_milli,
            e.arrived_milli,
            e.used_nodes,
            e.used_gpus,
        )?;
    }
    f.flush()?;
    f.commit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_float_text() {
        assert_eq!(py_round2(836758.0), "836758.0");
        assert_eq!(py_round2(866232.549), "866232.55");
        assert_eq!(py_round2(13.9401), "13.94");
        assert_eq!(py_round2(13.9), "13.9");
        assert_eq!(py_round2(0.0), "0.0");
    }

    #[test]
    fn gpu_index_round_trip() {
        let p = Path::new("x.csv");
        assert_eq!(parse_gpu_index(p, 2, Some("0-1-2-3")).unwrap(), 0b1111);
        assert_eq!(parse_gpu_index(p, 2, None).unwrap(), 0);
        assert_eq!(gpu_index_text(0b1010), "1-3");
        assert!(parse_gpu_index(p, 2, Some("1-1")).is_err());
    }
}
