//! The readable summary table `fleetsim run` prints.

use std::fmt::Write;

use crate::metrics::Dist;
use crate::report::summary::Summary;

fn f(v: Option<f64>, unit: &str) -> String {
    match v {
        Some(x) if unit == "%" => format!("{:.2} %", 100.0 * x),
        Some(x) => format!("{x:.1}{unit}"),
        None => "-".into(),
    }
}

/// `n` and a noun in the right number: `1 job`, `2 jobs`, `0 preemptions` (`noun` is the
/// singular; the plural adds `s`).
pub fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

fn dist_row(out: &mut String, name: &str, d: &Dist, unit: &str) {
    let _ = writeln!(
        out,
        "  {name:<18} mean {:>10}  p50 {:>10}  p90 {:>10}  p95 {:>10}  p99 {:>10}  max {:>10}",
        f(d.mean, unit),
        f(d.p50, unit),
        f(d.p90, unit),
        f(d.p95, unit),
        f(d.p99, unit),
        f(d.max, unit)
    );
}

/// Renders the summary as a few aligned lines.
pub fn render(s: &Summary) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scenario {} (seed {}, {}): {}, {}, {}{}",
        s.scenario,
        s.seed,
        s.mode,
        count(s.fleet.cells, "cell"),
        count(s.fleet.nodes, "node"),
        count(s.fleet.gpus, "GPU"),
        if s.fleet.autoscaled_nodes_max > 0 {
            format!(
                " (+ up to {} autoscaled nodes, {} GPUs)",
                s.fleet.autoscaled_nodes_max, s.fleet.autoscaled_gpus_max
            )
        } else {
            String::new()
        }
    );
    match s.elastic.as_ref().map(|e| (e, e.round_s)) {
        // Every job is round-allocated: the allocator decides, not the scheduler's stages.
        Some((e, Some(round_s))) => {
            let _ = writeln!(
                out,
                "policy   round allocator {} (rounds of {} s, {} s restart); every job is round-allocated, its length from its application's measured model (step times of the Pollux artifact's testbed GPUs, whatever the fleet's accelerators)",
                e.allocator, round_s, e.restart_s
            );
        }
        elastic => {
            let policy: Vec<String> = s.policy.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let _ = writeln!(out, "policy   {}", policy.join(" "));
            // Sizing: the scheduler runs every job's min; the policy sizes the rest.
            if let Some((e, None)) = elastic {
                let _ = writeln!(
                    out,
                    "elastic  sizing {} above each elastic job's min, {} s per resize; elastic job lengths modelled from each job's work_gpu_s and throughput",
                    e.allocator, e.restart_s
                );
            }
        }
    }
    if let Some(e) = &s.elastic {
        // Round allocators count rounds, reallocations and pauses; sizing policies plans
        // and resizes.
        let (rounds, changes, pauses) = if e.round_s.is_some() {
            ("rounds", "reallocations", format!(", {} pauses", e.pauses))
        } else {
            ("plans", "resizes", String::new())
        };
        let _ = writeln!(
            out,
            "elastic  {} jobs, {} completed; {} {rounds}, {} {changes}{pauses}; {:.1} GPU-h held (restart delays included)",
            e.jobs, e.completed, e.rounds, e.reallocations, e.gpu_hours
        );
    }
    let j = &s.jobs;
    let _ = writeln!(
        out,
        "jobs     {} submitted, {} started, {} completed, {} running at end{}, {} rejected, {} censored, {} cancelled ({})",
        j.submitted,
        j.started,
        j.completed,
        j.running_at_end,
        if j.requeued_at_end > 0 {
            format!(", {} pending again after a start", j.requeued_at_end)
        } else {
            String::new()
        },
        j.rejected,
        j.censored,
        j.cancelled,
        s.end_reason
    );
    let _ = writeln!(
        out,
        "window   {:.0} s .. {:.0} s ({:.2} days); makespan {}",
        s.window.start_s,
        s.window.end_s,
        s.window.length_s / 86_400.0,
        f(s.makespan_s, " s")
    );
    let p = &s.preemption;
    let _ = writeln!(
        out,
        "occupancy {} useful, {} allocated; {} preemptions per started job, {:.1} GPU-h lost",
        f(s.occupancy, "%"),
        f(s.allocated_occupancy, "%"),
        p.preemptions_per_job
            .map_or("-".into(), |v| format!("{v:.3}")),
        p.lost_gpu_h
    );
    for (cell, o) in &s.occupancy_by_cell {
        let a = s.allocated_occupancy_by_cell.get(cell).copied().flatten();
        let _ = writeln!(
            out,
            "  cell  {cell:<14} {} useful, {} allocated",
            f(*o, "%"),
            f(a, "%")
        );
    }
    for (model, o) in &s.occupancy_by_model {
        let a = s.allocated_occupancy_by_model.get(model).copied().flatten();
        let _ = writeln!(
            out,
            "  model {model:<14} {} useful, {} allocated",
            f(*o, "%"),
            f(a, "%")
        );
    }
    dist_row(&mut out, "wait (pending)", &s.wait_s, " s");
    dist_row(&mut out, "first-start wait", &s.first_start_wait_s, " s");
    dist_row(&mut out, "JCT", &s.jct_s, " s");
    dist_row(&mut out, "bounded slowdown", &s.bounded_slowdown, "");
    let t = &s.topology;
    if t.gangs > 0 {
        let _ = writeln!(
            out,
            "gangs    {} started, {} split across NVLink domains ({} avoidable: the rest are larger than every domain of their cell)",
            t.gangs, t.split_gangs, t.avoidable_split_gangs
        );
    }
    if let Some(lg) = &t.largest_gang_gpus {
        for (cell, levels) in lg {
            let v: Vec<String> = fleetsim_policies::Level::ALL
                .iter()
                .filter_map(|l| levels.get(l.as_str()).map(|g| (l, g)))
                .map(|(l, g)| format!("{l} {:.1} (min {})", g.mean, g.min))
                .collect();
            let _ = writeln!(out, "  largest gang, cell {cell}: {}", v.join(", "));
        }
    }
    if p.preemptions > 0 || p.failures > 0 {
        let by: Vec<String> = p
            .by_reason
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let by = if by.is_empty() {
            String::new()
        } else {
            format!(" ({})", by.join(", "))
        };
        let _ = writeln!(
            out,
            "preempt  {}{by}, {}, {:.1} GPU-h lost",
            count(p.preemptions, "preemption"),
            count(p.failures, "failure"),
            p.lost_gpu_s / 3600.0
        );
    }
    if let Some(r) = &s.reliability {
        let _ = writeln!(
            out,
            "goodput  {} of {:.1} GPU-h allocated: {:.1} lost ({:.1} to failures), {:.1} startup; {}, {} hit, {} cross-cell",
            r.goodput.map_or("-".into(), |g| format!("{:.2} %", 100.0 * g)),
            r.allocated_gpu_s / 3600.0,
            r.lost_gpu_s / 3600.0,
            r.lost_to_failures_gpu_s / 3600.0,
            r.startup_gpu_s / 3600.0,
            count(r.node_failures, "node failure"),
            count(r.job_failures, "job"),
            r.cross_cell_dispatches
        );
    }
    let fair = &s.fairness;
    let _ = writeln!(
        out,
        "fairness Jain {} (demand-capped {}) over {}, entitlement {}",
        fair.jain_index.map_or("-".into(), |v| format!("{v:.3}")),
        fair.jain_index_demand_capped
            .map_or("-".into(), |v| format!("{v:.3}")),
        count(fair.tenants, "tenant"),
        fair.entitlement_basis
    );
    let mut waiting: Vec<(&String, &f64)> = s
        .pending_reasons_job_s
        .iter()
        .filter(|(_, &v)| v > 0.0)
        .collect();
    waiting.sort_by(|a, b| b.1.total_cmp(a.1).then(a.0.cmp(b.0)));
    if !waiting.is_empty() {
        let top: Vec<String> = waiting
            .iter()
            .take(4)
            .map(|(k, v)| format!("{k} {:.0} job-h", *v / 3600.0))
            .collect();
        let _ = writeln!(out, "pending  {}", top.join(", "));
    }
    sections(&mut out, s);
    for u in &s.unusable_capacity {
        let _ = writeln!(out, "unusable {}", u.warning());
    }
    out
}

/// The lines of the optional sections the scenario turned on: SLOs, autoscaling, serving.
fn sections(out: &mut String, s: &Summary) {
    if let Some(slos) = &s.slo {
        for (name, r) in slos {
            let _ = writeln!(
                out,
                "slo      {name} ({}, first-start wait ≤ {:.0} s for {:.1} % of jobs): attainment {} of {}, {}{}",
                r.kind.as_str(),
                r.threshold_s,
                100.0 * r.target_fraction,
                r.attainment
                    .map_or("-".into(), |a| format!("{:.2} %", 100.0 * a)),
                count(r.jobs, "job"),
                match r.met {
                    Some(true) => "met",
                    Some(false) => "NOT met",
                    None => "undecided",
                },
                r.interval_attainment.map_or(String::new(), |a| format!(
                    "; {:.2} % of intervals met it",
                    100.0 * a
                ))
            );
        }
    }
    if let Some(a) = &s.autoscaling {
        let _ = writeln!(
            out,
            "autoscale {} ({}): {} scale-ups, {} scale-downs; {:.1} node-h, {:.1} GPU-h provisioned, {:.1} GPU-h allocated, cost {:.2}; {:.1} job-h pending for capacity",
            count(a.groups.len() as u64, "group"),
            a.expander,
            a.scale_ups,
            a.scale_downs,
            a.node_hours,
            a.gpu_hours_provisioned,
            a.gpu_hours_allocated,
            a.cost,
            a.pending_for_capacity_job_s / 3600.0
        );
    }
    if let Some(p) = &s.pods_ready {
        let _ = writeln!(
            out,
            "pods ready within {} s: {} admissions waited for nodes; {} evictions, {} requeues, {} deactivated, {} backing off at the end",
            p.timeout_s,
            p.admissions_waiting,
            p.evictions,
            p.requeues,
            p.deactivated,
            p.backing_off_at_end
        );
    }
    if let Some(v) = &s.serving {
        for svc in &v.services {
            let _ = writeln!(
                out,
                "serving  {}: {} replicas added (peak desired {}), SLO attainment {:.2} %, shortfall {:.0} replica-s, {} replica stops",
                svc.name,
                svc.replicas_added,
                svc.peak_desired,
                100.0 * svc.slo_attainment,
                svc.shortfall_replica_s,
                svc.replica_stops
            );
        }
        dist_row(out, "replica wait", &v.replica_wait_s, " s");
        let _ = writeln!(
            out,
            "  training {:.1} GPU-h allocated, {:.1} GPU-h goodput, {:.1} GPU-h lost ({:.1} to serving, {} preemptions by replicas); serving holds {:.2} % of the fleet",
            v.training_allocated_gpu_s / 3600.0,
            v.training_goodput_gpu_s / 3600.0,
            v.training_lost_gpu_s / 3600.0,
            v.training_lost_to_serving_gpu_s / 3600.0,
            v.training_preemptions_by_serving,
            100.0 * v.serving_occupancy
        );
    }
}
