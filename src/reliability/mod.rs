//! Failures, maintenance and startup (`[failures]` and `[startup]` in a scenario): the
//! node-availability timeline of a run and the per-run overheads the engine charges.
//!
//! ```toml
//! [startup]                       # every run: image pull, runtime start, collective set-up
//! base_s = 60
//! per_doubling_s = 15             # + 15 s per doubling of the gang size
//!
//! [failures]
//! mtbf_h = { P100 = 2000, "*" = 4000 }   # per-node MTBF by accelerator model ("*": others)
//! repair = { distribution = "lognormal", mean_s = 7200, sigma = 1.0 }
//! correlated = [{ level = "block", mtbf_h = 50000 }]   # a whole block (rack row, PDU) at once
//! grace_s = 30                    # termination grace of jobs on a failed node
//! restart_overhead_s = 300        # every restart (checkpoint reload), on top of startup
//! # start_s = 0                   # generate from start_s (default: the first job's submit time)
//! until_s = 7776000               # generate over [start_s, until_s) (default: metrics.horizon_s)
//! # timeline = { path = "failures.csv" }   # replay a timeline file instead of generating
//! # spares_per_cell = 1           # hot spares: the last N nodes of every cell, held out
//!
//! [[failures.maintenance]]        # scheduled drain: no new work from at_s; jobs still
//! at_s = 864000                   # running at at_s + deadline_s are evicted; the nodes are
//! cell = "old"                    # back deadline_s + duration_s after at_s
//! deadline_s = 3600
//! duration_s = 14400
//! ```
//!
//! # Generation (seeded, per component)
//! Failures are generated over `[start_s, until_s)`, both absolute simulated times like a job's
//! submit time. `start_s` defaults to the submit time of the workload's first job (after
//! `[transforms]`), the same origin as `metrics.warmup_s`, so a trace whose window begins late
//! (Philly's starts 26 days into its clock) has its failures where its jobs are rather than
//! before the first arrival; an empty workload starts at 0. Every renewal process (node and
//! correlated group) starts afresh at `start_s` (its first failure one exponential gap after
//! it). Scheduled maintenance is at its own absolute `at_s` and is not shifted.
//!
//! Each node draws from its own RNG stream `failures.node.<node name>` (of the run's seed),
//! each correlated group from `failures.<level>.<group id>`: times between failures are
//! exponential with the model's MTBF (a node's own failures restart their clock at repair:
//! an alternating renewal process, as in Schroeder & Gibson, DSN'06), repair times follow
//! `repair`. The workload's streams are untouched, so turning failures on does not change
//! the workload, and adding a node does not move another node's failures.
//!
//! Per node, the down intervals (own failures, correlated failures of its group, maintenance)
//! are merged in start order: an interval starting while the node is down or in maintenance
//! extends it instead of adding events, except that a failure during a maintenance drain
//! fails the node at once (no waiting for the deadline).
//!
//! # Hot spares
//! `spares_per_cell = N` holds the last N nodes of every cell (in declaration order) out
//! of scheduling as hot spares (N ≥ 0 and below the node count of every cell; N > 0 needs
//! something that fails — `mtbf_h`, `correlated`, a `timeline` or a `[[node_events]]`
//! failure — since spares would otherwise only be held out; `fleetsim validate` checks both). When a node
//! fails while running tasks of a job and a spare of the failed node's accelerator model is
//! free (up, holding nothing) in the same cell, the job's tasks on the failed node move onto
//! it — the spare of lowest node id — at the failure instant: the job loses its work since
//! its last checkpoint and pays the startup and restart overhead exactly as a requeued job
//! would, but it keeps its other tasks and its place (no termination grace, no queueing).
//! The spare becomes a regular node; the failed node becomes a spare once repaired. With
//! no free spare the job is requeued as without spares. Maintenance evictions never swap.
//! Held-out spares are not available capacity: like a down node they are not in the
//! occupancy denominator (DESIGN §6, allocated / available accelerator-time), since no
//! scheduler may place work on them (the fleet's size in `summary.json` still counts
//! them). `summary.json` counts the swaps (`reliability.hot_swaps`, present only with
//! spares).
//!
//! # Timeline file
//! Every run with `[failures]` writes the timeline it applied to `failures.csv` in its output
//! directory: `time_ms,node,event,grace_ms,cause`, one row per node event, in application
//! order (time, then node id, then event rank repair < drain < evict < fail); `event` is `fail`,
//! `repair`, `drain` or `evict`; `cause` is `node`, `block`, `domain`, `cell`, `maintenance`
//! or `file` (free text, kept). `timeline = { path = … }` replays such a file exactly (a row
//! naming an unknown node, an unknown event or a bad number is an error naming the file,
//! line and column). The file replaces the generator, so the generator's settings —
//! `mtbf_h`, `correlated`, `maintenance`, `start_s`, `until_s`, `repair` and `grace_s` (each
//! row has its own `grace_ms`) — are refused beside it, naming the field; `restart_overhead_s`
//! and `spares_per_cell` apply as with generated failures.
//!
//! Rows of one node must follow its state, as the generator writes them: a node starts up;
//! `fail` takes an up or draining node down, `drain` an up node to draining, `evict` a
//! draining node down, and `repair` a down or draining node up (a drain may end without an
//! eviction). Anything else — a `fail` of a node that is already down, a `repair` of a
//! node that is up, an `evict` without a drain — is an error naming the file, line and the
//! node. Overlapping failures (a node failure during its block's failure) are *not*
//! written as two fail/repair pairs: the engine does not count failures per node, so the
//! first `repair` would bring the node back while the file says it is still down. The
//! generator merges them into one down interval, and a hand-written file must do the same.
//! A node may end the file down. (`[[node_events]]` are applied on top of the file and are
//! not checked against it; they are checked on their own by the same rule — `fail` an up
//! node, `repair` a down one — naming `node_events[i]`. Their failures count in
//! `reliability.node_failures` with the file's.)

pub mod flexibility;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use rand_distr::{Distribution, Exp, LogNormal};

use fleetsim_policies::{FleetState, NodeId, SimDuration, SimTime};

use crate::engine::reliability::StartupModel;
use crate::engine::{NodeChange, NodeChangeKind};
pub use crate::scenario::reliability::{
    CorrelatedSpec, FailuresSpec, MaintenanceSpec, PlatformSpec, RepairDistribution, RepairSpec,
    StartupSpec,
};
use crate::scenario::{secs_to_ms, Loaded, ScenarioError, TraceDir};

/// Speed per accelerator model of `fleet` (model-id order), per-mille; empty without
/// `[platform]`.
///
/// # Errors
/// [`ScenarioError::Invalid`] naming `platform.speed.<model>` for a factor that is not > 0
/// or a model the catalog does not know, or `platform.reference` for an unknown model.
pub fn model_speeds(loaded: &Loaded, fleet: &FleetState) -> Result<Vec<u32>, ScenarioError> {
    let Some(p) = &loaded.scenario.platform else {
        return Ok(Vec::new());
    };
    for (m, &v) in &p.speed {
        let field = format!("platform.speed.{m}");
        if !(v.is_finite() && v > 0.0) {
            return Err(invalid(loaded, &field, "must be a number > 0".into()));
        }
        crate::catalog::lookup(m).map_err(|e| invalid(loaded, &field, e))?;
    }
    let reference = match &p.reference {
        Some(r) => Some(
            crate::catalog::lookup(r)
                .map_err(|e| invalid(loaded, "platform.reference", e))?
                .speed_permille,
        ),
        None => None,
    };
    Ok(fleet
        .models()
        .iter()
        .map(|m| match (p.speed.get(m), reference) {
            (Some(&f), _) => ((f * 1000.0).round() as u32).max(1),
            (None, Some(r)) => crate::catalog::lookup(m).map_or(1000, |a| {
                ((u64::from(a.speed_permille) * 1000 + u64::from(r) / 2) / u64::from(r.max(1)))
                    .max(1) as u32
            }),
            (None, None) => 1000,
        })
        .collect())
}

/// Why a node goes down (the `cause` column of the timeline file).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimelineEvent {
    /// The node change.
    pub change: NodeChange,
    /// `node`, `domain`, `block`, `cell`, `maintenance`, or what a replayed file said.
    pub cause: String,
}

/// A down interval of one node.
#[derive(Clone, Debug)]
struct Down {
    start: SimTime,
    /// Maintenance: the eviction deadline (drain from `start`); `None`: a failure at `start`.
    evict: Option<SimTime>,
    /// A failure hit during the drain: fail at `evict` instead of evicting.
    fail_at_evict: bool,
    end: SimTime,
    cause: String,
}

fn event_rank(k: &NodeChangeKind) -> u8 {
    match k {
        NodeChangeKind::Repair => 0,
        NodeChangeKind::Drain => 1,
        NodeChangeKind::Evict { .. } => 2,
        NodeChangeKind::Fail { .. } => 3,
    }
}

fn invalid(loaded: &Loaded, field: &str, message: String) -> ScenarioError {
    ScenarioError::Invalid {
        origin: loaded.origin.clone(),
        field: field.to_string(),
        message,
    }
}

/// The engine's startup model of a scenario (`None` when it has neither `[startup]` nor a
/// restart overhead).
pub fn startup_model(loaded: &Loaded) -> Option<StartupModel> {
    let s = &loaded.scenario;
    let restart = s.failures.as_ref().map_or(0.0, |f| f.restart_overhead_s);
    // (`[flexibility]` alone keeps the account on through `reliability` in run.rs.)
    if s.startup.is_none() && restart == 0.0 {
        return None;
    }
    let st = s.startup.clone().unwrap_or_default();
    Some(StartupModel {
        base: SimDuration(secs_to_ms(st.base_s)),
        per_doubling: SimDuration(secs_to_ms(st.per_doubling_s)),
        restart_overhead: SimDuration(secs_to_ms(restart)),
    })
}

/// The hot spares of `fleet` (`failures.spares_per_cell`): the last N nodes of each cell,
/// in node-id order; empty without spares.
///
/// # Errors
/// [`ScenarioError::Invalid`] naming `failures.spares_per_cell` for a negative count or one
/// that would leave a cell without a schedulable node.
pub fn spare_nodes(loaded: &Loaded, fleet: &FleetState) -> Result<Vec<NodeId>, ScenarioError> {
    let n = loaded
        .scenario
        .failures
        .as_ref()
        .map_or(0, |f| f.spares_per_cell);
    if n == 0 {
        return Ok(Vec::new());
    }
    let field = "failures.spares_per_cell";
    if n < 0 {
        return Err(invalid(loaded, field, format!("must be ≥ 0, got {n}")));
    }
    let mut out = Vec::new();
    for c in fleet.cells() {
        if n as u64 >= c.nodes.len() as u64 {
            return Err(invalid(
                loaded,
                field,
                format!(
                    "{n} spares would hold out every node of cell `{}` ({} nodes): at most {}",
                    c.name,
                    c.nodes.len(),
                    c.nodes.len().saturating_sub(1)
                ),
            ));
        }
        out.extend_from_slice(&c.nodes[c.nodes.len() - n as usize..]);
    }
    out.sort_unstable();
    Ok(out)
}

fn draw_repair(r: &RepairSpec, rng: &mut crate::rng::Rng) -> u64 {
    let mean = r.mean_s;
    let s = match r.distribution {
        RepairDistribution::Fixed => mean,
        RepairDistribution::Exponential => Exp::new(1.0 / mean).expect("mean > 0").sample(rng),
        RepairDistribution::Lognormal => {
            let mu = mean.ln() - r.sigma * r.sigma / 2.0;
            LogNormal::new(mu, r.sigma).expect("sigma ≥ 0").sample(rng)
        }
    };
    secs_to_ms(s).max(1)
}

/// Failure intervals of one renewal process over `[start, until)`.
fn renewal(
    mtbf_h: f64,
    repair: &RepairSpec,
    (start, until): (SimTime, SimTime),
    rng: &mut crate::rng::Rng,
    out: &mut Vec<(SimTime, SimTime)>,
) {
    let exp = Exp::new(1.0 / (mtbf_h * 3600.0)).expect("mtbf > 0");
    let mut t = start.0;
    loop {
        let gap = secs_to_ms(exp.sample(rng)).max(1);
        t = t.saturating_add(gap);
        if t >= until.0 {
            return;
        }
        let r = draw_repair(repair, rng);
        out.push((SimTime(t), SimTime(t.saturating_add(r))));
        t = t.saturating_add(r);
    }
}

/// The timeline of a scenario on its built fleet: generated from `[failures]` (seeded by
/// `seed`) or read from its `timeline` file. Empty without `[failures]`. `first_submit` is
/// the workload's first submit time (the default of `failures.start_s`; `None`: empty
/// workload, origin 0).
///
/// # Errors
/// [`ScenarioError::Invalid`] naming the field (an unknown cell or node) or the timeline
/// file, line and column.
pub fn timeline(
    loaded: &Loaded,
    fleet: &FleetState,
    seed: u64,
    trace_dir: &TraceDir,
    first_submit: Option<SimTime>,
) -> Result<Vec<TimelineEvent>, ScenarioError> {
    let s = &loaded.scenario;
    let Some(f) = &s.failures else {
        return Ok(Vec::new());
    };
    let grace = SimDuration(secs_to_ms(f.grace_s.unwrap_or(0.0)));
    if let Some(file) = &f.timeline {
        let path = loaded.resolve_path(
            "failures.timeline",
            &file.path,
            &file.public_path,
            trace_dir,
        )?;
        return read_timeline(&path, fleet);
    }
    let until = SimTime(secs_to_ms(f.until_s.or(s.metrics.horizon_s).unwrap_or(0.0)));
    let start = match f.start_s {
        Some(v) => SimTime(secs_to_ms(v)),
        None => first_submit.unwrap_or(SimTime::ZERO),
    };
    let span = (start, until);
    let repair = f.repair.clone().unwrap_or_default();
    let mut downs: Vec<Vec<Down>> = vec![Vec::new(); fleet.nodes().len()];
    let mut iv = Vec::new();
    for (i, n) in fleet.nodes().iter().enumerate() {
        let model = n.model.map(|m| fleet.models()[m.index()].as_str());
        let mtbf = model
            .and_then(|m| f.mtbf_h.get(m))
            .or_else(|| f.mtbf_h.get("*"));
        let Some(&mtbf) = mtbf else { continue };
        let name = fleet.node_name(NodeId(i as u32));
        let mut rng = crate::rng::stream(seed, &format!("failures.node.{name}"));
        iv.clear();
        renewal(mtbf, &repair, span, &mut rng, &mut iv);
        downs[i].extend(iv.iter().map(|&(a, b)| Down {
            start: a,
            evict: None,
            fail_at_evict: false,
            end: b,
            cause: "node".into(),
        }));
    }
    for c in &f.correlated {
        let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        for i in 0..fleet.nodes().len() {
            groups
                .entry(fleet.level_id(NodeId(i as u32), c.level))
                .or_default()
                .push(i);
        }
        let lname = c.level.as_str();
        for (g, nodes) in groups {
            let mut rng = crate::rng::stream(seed, &format!("failures.{lname}.{g}"));
            iv.clear();
            renewal(c.mtbf_h, &repair, span, &mut rng, &mut iv);
            for &(a, b) in &iv {
                for &n in &nodes {
                    downs[n].push(Down {
                        start: a,
                        evict: None,
                        fail_at_evict: false,
                        end: b,
                        cause: lname.to_string(),
                    });
                }
            }
        }
    }
    for (i, m) in f.maintenance.iter().enumerate() {
        let nodes: Vec<usize> = match &m.cell {
            Some(c) => {
                let Some(cell) = fleet.cells().iter().find(|x| &x.name == c) else {
                    return Err(invalid(
                        loaded,
                        &format!("failures.maintenance[{i}].cell"),
                        format!("unknown cell `{c}`"),
                    ));
                };
                cell.nodes.iter().map(|n| n.index()).collect()
            }
            None => {
                let mut v = Vec::new();
                for (j, name) in m.nodes.iter().enumerate() {
                    let Some(n) = (0..fleet.nodes().len())
                        .find(|&k| fleet.node_name(NodeId(k as u32)) == name)
                    else {
                        return Err(invalid(
                            loaded,
                            &format!("failures.maintenance[{i}].nodes[{j}]"),
                            format!("unknown node `{name}`"),
                        ));
                    };
                    v.push(n);
                }
                v
            }
        };
        let at = secs_to_ms(m.at_s);
        let evict = at + secs_to_ms(m.deadline_s);
        let end = evict + secs_to_ms(m.duration_s).max(1);
        for n in nodes {
            downs[n].push(Down {
                start: SimTime(at),
                evict: Some(SimTime(evict)),
                fail_at_evict: false,
                end: SimTime(end),
                cause: "maintenance".into(),
            });
        }
    }
    let mut out = Vec::new();
    for (i, mut list) in downs.into_iter().enumerate() {
        // Failures before maintenance at equal starts; then merge in start order.
        list.sort_by_key(|d| (d.start, d.evict.is_some()));
        let mut merged: Vec<Down> = Vec::new();
        for d in list {
            match merged.last_mut() {
                Some(cur) if d.start <= cur.end => {
                    if let (Some(e), None) = (cur.evict, d.evict) {
                        if d.start < e {
                            cur.evict = Some(d.start);
                            cur.fail_at_evict = true;
                        }
                    }
                    cur.end = cur.end.max(d.end);
                }
                _ => merged.push(d),
            }
        }
        let node = NodeId(i as u32);
        for d in merged {
            let mut push = |at: SimTime, kind: NodeChangeKind| {
                out.push(TimelineEvent {
                    change: NodeChange { at, node, kind },
                    cause: d.cause.clone(),
                })
            };
            match d.evict {
                None => push(d.start, NodeChangeKind::Fail { grace }),
                Some(e) => {
                    push(d.start, NodeChangeKind::Drain);
                    if d.fail_at_evict {
                        push(e, NodeChangeKind::Fail { grace });
                    } else {
                        push(e, NodeChangeKind::Evict { grace });
                    }
                }
            }
            push(d.end, NodeChangeKind::Repair);
        }
    }
    sort(&mut out);
    Ok(out)
}

/// Application order: time, node id, event rank.
fn sort(v: &mut [TimelineEvent]) {
    v.sort_by_key(|e| (e.change.at, e.change.node, event_rank(&e.change.kind)));
}

/// The timeline file's text (module docs).
pub fn timeline_csv(events: &[TimelineEvent], fleet: &FleetState) -> String {
    let mut s = String::from("time_ms,node,event,grace_ms,cause\n");
    for e in events {
        let (ev, grace) = match e.change.kind {
            NodeChangeKind::Fail { grace } => ("fail", grace.0),
            NodeChangeKind::Evict { grace } => ("evict", grace.0),
            NodeChangeKind::Drain => ("drain", 0),
            NodeChangeKind::Repair => ("repair", 0),
        };
        let _ = writeln!(
            s,
            "{},{},{},{},{}",
            e.change.at.0,
            fleet.node_name(e.change.node),
            ev,
            grace,
            e.cause
        );
    }
    s
}

/// A node's state while a timeline file is read (module docs, "Timeline file").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NodeState {
    Up,
    Draining,
    Down,
}

impl NodeState {
    fn describe(self) -> &'static str {
        match self {
            NodeState::Up => "up",
            NodeState::Draining => "draining",
            NodeState::Down => "already down",
        }
    }
}

/// Reads a timeline file written by [`timeline_csv`] (or by hand in its format).
///
/// # Errors
/// [`ScenarioError::Io`] when it cannot be read; [`ScenarioError::Invalid`] naming the file
/// and line as origin and the column as field for a bad row, a line longer than
/// [`crate::workload::line_cap::MAX_LINE_BYTES`], or an event that does not follow from
/// the node's state (module docs): a failure of a node that is already down, a repair of
/// a node that is up.
pub fn read_timeline(path: &Path, fleet: &FleetState) -> Result<Vec<TimelineEvent>, ScenarioError> {
    use crate::workload::line_cap::{LineCap, LineTooLong, MAX_LINE_BYTES};
    use std::io::BufRead;
    let io = |source: std::io::Error| ScenarioError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    let mut input = std::io::BufReader::new(LineCap::new(file, MAX_LINE_BYTES));
    let names: BTreeMap<&str, NodeId> = (0..fleet.nodes().len())
        .map(|i| (fleet.node_name(NodeId(i as u32)), NodeId(i as u32)))
        .collect();
    let bad = |line: u64, field: &str, message: String| ScenarioError::Invalid {
        origin: format!("{}:{line}", path.display()),
        field: field.to_string(),
        message,
    };
    let mut buf = String::new();
    let mut ln = 0u64;
    // The next line without its ending, `None` at the end of the file.
    let mut next_line = |buf: &mut String, ln: &mut u64| -> Result<bool, ScenarioError> {
        buf.clear();
        *ln += 1;
        match input.read_line(buf) {
            Ok(0) => Ok(false),
            Ok(_) => Ok(true),
            Err(e) => match e.get_ref().and_then(|x| x.downcast_ref::<LineTooLong>()) {
                Some(t) => Err(bad(t.line, "row", t.to_string())),
                None if e.kind() == std::io::ErrorKind::InvalidData => {
                    Err(bad(*ln, "row", "not valid UTF-8".into()))
                }
                None => Err(io(e)),
            },
        }
    };
    const HEADER: &str = "time_ms,node,event,grace_ms,cause";
    /// The longest grace period a timeline row may give: a year. Longer is a typo, and
    /// would push the release so far that the run stops at its interval limit instead.
    const MAX_TIMELINE_GRACE: SimDuration = SimDuration(365 * 86_400_000);
    if !next_line(&mut buf, &mut ln)? || buf.trim_end() != HEADER {
        return Err(bad(
            1,
            "header",
            format!("the first line must be `{HEADER}`"),
        ));
    }
    let mut out = Vec::new();
    let mut last = SimTime::ZERO;
    // Per node: its state and the line of the event that set it.
    let mut state: BTreeMap<NodeId, (NodeState, u64)> = BTreeMap::new();
    while next_line(&mut buf, &mut ln)? {
        let line = buf.trim_end();
        if line.is_empty() {
            continue;
        }
        let cols: Vec<&str> = line.split(',').collect();
        if cols.len() != 5 {
            return Err(bad(
                ln,
                "row",
                format!("{} columns, expected 5 ({HEADER})", cols.len()),
            ));
        }
        let num = |c: usize, field: &str| {
            cols[c].trim().parse::<u64>().map_err(|_| {
                bad(
                    ln,
                    field,
                    format!("`{}` is not a whole number of milliseconds", cols[c]),
                )
            })
        };
        let at = SimTime(num(0, "time_ms")?);
        if at < last {
            return Err(bad(
                ln,
                "time_ms",
                format!(
                    "{} is before the previous row ({}): rows must be in time order",
                    at.0, last.0
                ),
            ));
        }
        last = at;
        let name = cols[1].trim();
        let Some(&node) = names.get(name) else {
            return Err(bad(ln, "node", format!("unknown node `{}`", cols[1])));
        };
        let grace = SimDuration(num(3, "grace_ms")?);
        if grace > MAX_TIMELINE_GRACE || at.0.checked_add(grace.0).is_none() {
            return Err(bad(
                ln,
                "grace_ms",
                format!(
                    "{} ms: a grace period is at most {} ms (a year)",
                    grace.0, MAX_TIMELINE_GRACE.0
                ),
            ));
        }
        let (kind, allowed, next): (_, &[NodeState], _) = match cols[2].trim() {
            "fail" => (
                NodeChangeKind::Fail { grace },
                &[NodeState::Up, NodeState::Draining],
                NodeState::Down,
            ),
            "evict" => (
                NodeChangeKind::Evict { grace },
                &[NodeState::Draining],
                NodeState::Down,
            ),
            "drain" => (NodeChangeKind::Drain, &[NodeState::Up], NodeState::Draining),
            "repair" => (
                NodeChangeKind::Repair,
                &[NodeState::Draining, NodeState::Down],
                NodeState::Up,
            ),
            other => {
                return Err(bad(
                    ln,
                    "event",
                    format!("unknown event `{other}`; expected fail, repair, drain or evict"),
                ))
            }
        };
        let (now, since) = state.get(&node).copied().unwrap_or((NodeState::Up, 0));
        if !allowed.contains(&now) {
            let since = if since == 0 {
                "from the start".to_string()
            } else {
                format!("since line {since}")
            };
            let hint = match (cols[2].trim(), now) {
                ("fail", _) | ("evict", NodeState::Down) => {
                    "; overlapping failures are one down interval (one fail, one repair), as \
                     the generator writes them: a repair brings a node up whatever failed it"
                }
                ("repair", _) => "; a repair must follow a fail, evict or drain of the node",
                ("evict", _) => "; an evict ends a maintenance drain: drain the node first",
                _ => "",
            };
            return Err(bad(
                ln,
                "event",
                format!(
                    "`{}` of node `{name}` at {} ms, but the node is {} ({since}){hint}",
                    cols[2].trim(),
                    at.0,
                    now.describe()
                ),
            ));
        }
        state.insert(node, (next, ln));
        out.push(TimelineEvent {
            change: NodeChange { at, node, kind },
            cause: cols[4].trim().to_string(),
        });
    }
    Ok(out)
}

/// Facts of a timeline for `summary.json`: node failures (fail events), maintenance drains,
/// and the mean time to repair of failures whose repair is in the timeline (node MTTR), s.
pub fn timeline_facts(events: &[TimelineEvent]) -> (u64, u64, Option<f64>) {
    let mut down_since: BTreeMap<NodeId, SimTime> = BTreeMap::new();
    let (mut fails, mut drains, mut sum, mut n) = (0u64, 0u64, 0u128, 0u64);
    for e in events {
        match e.change.kind {
            NodeChangeKind::Fail { .. } => {
                fails += 1;
                down_since.entry(e.change.node).or_insert(e.change.at);
            }
            NodeChangeKind::Drain => drains += 1,
            NodeChangeKind::Evict { .. } => {}
            NodeChangeKind::Repair => {
                if let Some(t) = down_since.remove(&e.change.node) {
                    sum += u128::from(e.change.at.0 - t.0);
                    n += 1;
                }
            }
        }
    }
    let mttr = (n > 0).then(|| sum as f64 / n as f64 / 1000.0);
    (fails, drains, mttr)
}

/// `summary.json` → `reliability` (present only with `[failures]` or `[startup]`).
/// Accelerator-times in GPU-seconds over the whole run (every job's every run, not cut to
/// the measurement window), so `goodput_gpu_s + lost_gpu_s + startup_gpu_s +
/// held_on_failed_nodes_gpu_s = allocated_gpu_s`.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct ReliabilitySummary {
    /// Goodput (DESIGN §6): kept accelerator-time / allocated accelerator-time.
    pub goodput: Option<f64>,
    /// Accelerator-time held by jobs, GPU-s.
    pub allocated_gpu_s: f64,
    /// Accelerator-time of work kept, GPU-s.
    pub goodput_gpu_s: f64,
    /// Accelerator-time lost (since the last checkpoint, plus grace), GPU-s.
    pub lost_gpu_s: f64,
    /// Of it, to node failures, GPU-s.
    pub lost_to_failures_gpu_s: f64,
    /// Of it, to maintenance evictions, GPU-s.
    pub lost_to_evictions_gpu_s: f64,
    /// Of it, to preemptions, GPU-s.
    pub lost_to_preemption_gpu_s: f64,
    /// Startup latency and restart overhead, GPU-s.
    pub startup_gpu_s: f64,
    /// Termination grace held by tasks on failed nodes (the node is out of the capacity, so
    /// this is neither occupancy nor lost work), GPU-s.
    pub held_on_failed_nodes_gpu_s: f64,
    /// Accelerator-time the surviving members of incomplete gangs held with progress
    /// paused, GPU-s (present only with `[policy] gang_recovery = "keep_survivors"`; then
    /// `goodput + lost + startup + held on failed nodes + this = allocated`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub held_by_incomplete_gangs_gpu_s: Option<f64>,
    /// Gangs made whole again after keeping their survivors (present only with
    /// `gang_recovery = "keep_survivors"`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gangs_recovered: Option<u64>,
    /// Node failure events applied: the timeline's (generated or replayed; a correlated
    /// failure counts once per node) and the `fail`s of `[[node_events]]`.
    pub node_failures: u64,
    /// Maintenance drains in the timeline (per node).
    pub maintenance_drains: u64,
    /// Mean time to repair of failed nodes (timeline and `[[node_events]]`), s.
    pub node_mttr_s: Option<f64>,
    /// Job runs stopped by node failures.
    pub job_failures: u64,
    /// Job runs stopped by maintenance evictions.
    pub evictions: u64,
    /// Mean time to recovery of a job hit by a failure: failure → its next start, s.
    pub job_mttr_s: Option<f64>,
    /// Completed jobs.
    pub completed_jobs: u64,
    /// Completed jobs that survived at least one failure.
    pub jobs_survived_failures: u64,
    /// Failures survived per completed job: mean.
    pub failures_survived_per_job_mean: Option<f64>,
    /// Failures survived by one completed job: most.
    pub failures_survived_per_job_max: u32,
    /// Jobs whose first start was in a cell other than their home cell (the first cell their
    /// row allows, with spatial flexibility on).
    pub cross_cell_dispatches: u64,
    /// Job runs moved onto a hot spare after a node failure instead of requeueing (present
    /// only with `failures.spares_per_cell` > 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_swaps: Option<u64>,
    /// Mean first-start wait (first start − submit) of measured jobs by the cell of their
    /// first start, s.
    pub first_start_wait_s_mean_by_cell: BTreeMap<String, Option<f64>>,
    /// Mean first-start wait (first start − submit) of measured jobs by the accelerator
    /// model of their first start, s
    /// (`cpu` for CPU-only jobs, present only when some started).
    pub first_start_wait_s_mean_by_model: BTreeMap<String, Option<f64>>,
}

fn gpu_s(v: u128) -> f64 {
    // GPU-milli·ms → GPU-s.
    v as f64 / 1e6
}

/// The `reliability` section of `summary.json`.
pub fn summary(
    r: &crate::engine::reliability::ReliabilityStats,
    timeline: &[TimelineEvent],
    job_failures: u64,
    cells: &[String],
    models: &[String],
) -> ReliabilitySummary {
    let (node_failures, maintenance_drains, node_mttr_s) = timeline_facts(timeline);
    let mean = |v: &[(u128, u64)], i: usize| {
        v.get(i)
            .filter(|e| e.1 > 0)
            .map(|e| e.0 as f64 / e.1 as f64 / 1000.0)
    };
    let failures_or_evictions = r.lost_to_failures_gpu_milli_ms + r.lost_to_evictions_gpu_milli_ms;
    ReliabilitySummary {
        goodput: (r.allocated_gpu_milli_ms > 0)
            .then(|| r.goodput_gpu_milli_ms() as f64 / r.allocated_gpu_milli_ms as f64),
        allocated_gpu_s: gpu_s(r.allocated_gpu_milli_ms),
        goodput_gpu_s: gpu_s(r.goodput_gpu_milli_ms()),
        lost_gpu_s: gpu_s(r.lost_gpu_milli_ms),
        lost_to_failures_gpu_s: gpu_s(r.lost_to_failures_gpu_milli_ms),
        lost_to_evictions_gpu_s: gpu_s(r.lost_to_evictions_gpu_milli_ms),
        lost_to_preemption_gpu_s: gpu_s(r.lost_gpu_milli_ms.saturating_sub(failures_or_evictions)),
        startup_gpu_s: gpu_s(r.startup_gpu_milli_ms),
        held_on_failed_nodes_gpu_s: gpu_s(r.held_on_failed_gpu_milli_ms),
        held_by_incomplete_gangs_gpu_s: r
            .keep_survivors
            .then(|| gpu_s(r.held_by_incomplete_gangs_gpu_milli_ms)),
        gangs_recovered: r.keep_survivors.then_some(r.gangs_recovered),
        node_failures,
        maintenance_drains,
        node_mttr_s,
        job_failures,
        evictions: r.evictions,
        job_mttr_s: (r.recoveries > 0).then(|| r.recovery_ms as f64 / r.recoveries as f64 / 1000.0),
        completed_jobs: r.completed,
        jobs_survived_failures: r.jobs_survived_failures,
        failures_survived_per_job_mean: (r.completed > 0)
            .then(|| r.failures_survived as f64 / r.completed as f64),
        failures_survived_per_job_max: r.max_failures_survived,
        cross_cell_dispatches: r.cross_cell_dispatches,
        hot_swaps: r.spares.then_some(r.hot_swaps),
        first_start_wait_s_mean_by_cell: cells
            .iter()
            .enumerate()
            .map(|(i, c)| (c.clone(), mean(&r.wait_by_cell, i)))
            .collect(),
        // `cpu` only when some measured job started without an accelerator.
        first_start_wait_s_mean_by_model: models
            .iter()
            .map(String::as_str)
            .chain(std::iter::once("cpu"))
            .enumerate()
            .map(|(i, m)| (m.to_string(), mean(&r.wait_by_model, i)))
            .filter(|(m, w)| m != "cpu" || w.is_some())
            .collect(),
    }
}
