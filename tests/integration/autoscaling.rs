//! Autoscaled node groups: an exact end-to-end case worked out by hand,
//! the expander's choice, and bad input refused naming the field.

use fleetsim::scenario;

use crate::support::{
    burst_group, cell, csv_column, first_start_wait_s, job, load_error, run, run_series, span,
    write_scenario, NATIVE_JOBS, NATIVE_JOBS_ONE_QUEUE,
};

/// One static 4-GPU node `n1` and a group `burst` of up to 3 × 4-GPU nodes, none at the
/// start, fixed 60 s provisioning, 2.0 per node-hour, removed after 120 s idle.
fn tiny(expander_and_groups: &str) -> String {
    format!(
        "name = \"autoscale-tiny\"\n[policy]\nqueueing_strategy = \"best-effort-fifo\"\n{expander_and_groups}\n{NATIVE_JOBS_ONE_QUEUE}"
    )
}

/// [`tiny`]'s fleet: `n1` and the group `burst` (3 nodes at most, 60 s, 2.0 per node-hour,
/// 120 s idle).
fn burst() -> String {
    cell("c", &["n1"], "H100", 4)
        + &burst_group(3, "{ distribution = \"fixed\", s = 60 }", Some("2.0"), 120)
}

/// J1: 1 × 4 GPUs at 0 for 100 s; J2: a gang of 2 × 4 GPUs at 10 for 300 s; J3: 1 × 4 GPUs
/// at 20 for 50 s.
const JOBS: &str = "id,submit_s,tenant,num_gpu,tasks,runtime_s
J1,0,a,4,1,100
J2,10,a,4,2,300
J3,20,a,4,1,50
";

/// By hand (best-effort FIFO, best-fit):
/// - t=0: J1 starts on n1 (its 4 GPUs), ends at 100.
/// - t=10: J2 (2 × 4 GPUs) cannot start: n1 is full. One burst node holds one task, so the
///   whole gang needs ⌈2/1⌉ = 2 nodes: one request for burst-0 and burst-1, joining at
///   10 + 60 = 70 (all-or-nothing: both or neither).
/// - t=20: J3 (4 GPUs) cannot start; the room on its way (burst-0/1) is all claimed by J2, so
///   J3 asks for one more node: burst-2, joining at 80 (no double provisioning: J2 does not
///   ask again).
/// - t=70: burst-0/1 join; J2 starts on them, ends at 370. J3 now claims burst-2's room.
/// - t=80: burst-2 joins; J3 starts, ends at 130.
/// - t=130: burst-2 idle; still idle at 130 + 120 = 250: removed (3 nodes > min 0).
/// - t=370: J2 ends; the run ends (burst-0/1 are still billed to here).
///
/// Waits 0, 60, 60. Billed: burst-0/1 10→370 = 2 × 360 s, burst-2 20→250 = 230 s: 950
/// node-s = 950/3600 node-h, cost × 2.0 = 1900/3600. Provisioned GPU-s: 2 × 4 × (370 − 70)
/// plus 4 × (250 − 80), i.e. 2400 + 680 = 3080; allocated: J2 8 × 300 + J3 4 × 50 = 2600.
/// Pending for capacity: 1 job over 10–20, 2 over 20–70 (J2, J3), 1 over 70–80 (J3), i.e.
/// 10 + 100 + 10 = 120 job-s.
#[test]
fn a_gang_and_a_job_scale_up_together_and_an_idle_node_scales_down() {
    let out = run(&tiny(&burst()), &[("jobs.csv", JOBS)]);
    assert_eq!(span(&out, "J1"), (Some(0), Some(100)));
    assert_eq!(span(&out, "J2"), (Some(70), Some(370)));
    assert_eq!(span(&out, "J3"), (Some(80), Some(130)));
    assert_eq!(
        (
            first_start_wait_s(&out, "J1"),
            first_start_wait_s(&out, "J2"),
            first_start_wait_s(&out, "J3")
        ),
        (Some(0), Some(60), Some(60))
    );
    let mut j2 = job(&out, "J2").nodes.clone();
    j2.sort();
    assert_eq!(j2, ["c-burst-n00000", "c-burst-n00001"]);
    assert_eq!(job(&out, "J3").nodes, ["c-burst-n00002"]);
    let a = out
        .summary
        .autoscaling
        .as_ref()
        .expect("autoscaling section");
    assert_eq!(a.expander, "least-waste");
    assert_eq!((a.scale_ups, a.scale_downs), (2, 1));
    let g = &a.groups[0];
    assert_eq!(g.name, "c/burst");
    assert_eq!(
        (g.nodes_provisioned, g.nodes_removed, g.peak_nodes),
        (3, 1, 3)
    );
    assert_eq!(a.node_hours, 950.0 / 3600.0);
    assert_eq!(a.cost, 950.0 / 3600.0 * 2.0);
    assert_eq!(a.gpu_hours_provisioned, 3080.0 / 3600.0);
    assert_eq!(a.gpu_hours_allocated, 2600.0 / 3600.0);
    assert_eq!(a.pending_for_capacity_job_s, 120.0);
}

/// The live recorder has no events for nodes the autoscaler provisions and
/// removes yet, so its record of an autoscaled run is marked incomplete, naming why: a
/// service replaying it would diverge (philly-autoscale's stream was refused with `job …
/// is not running` before this mark).
#[test]
fn the_live_record_of_an_autoscaled_run_is_marked_incomplete() {
    let (dir, path) = write_scenario(&tiny(&burst()), &[("jobs.csv", JOBS)]);
    let loaded = scenario::load(&path).unwrap();
    let opts = fleetsim::run::RunOptions {
        seed: None,
        trace_dir: fleetsim::scenario::TraceDir(dir.path().to_path_buf()),
        out_dir: None,
        keep_rows: true,
    };
    let (out, _) = fleetsim::run::run_scenario_live(&loaded, &opts).unwrap();
    let rec = out.result.live.as_ref().expect("recorder on");
    assert_eq!(
        rec.unsupported.as_deref(),
        Some("autoscaling (nodes provisioned and removed)")
    );
    // The run itself is the one worked out by hand above.
    assert_eq!(span(&out, "J2"), (Some(70), Some(370)));
}

/// The same case's `timeseries.csv` with 100 s intervals over the window [0, 370): rows
/// [0, 100), [100, 200), [200, 300), [300, 370). By hand from the timeline above:
/// - nodes up: 2 over [70, 80), 3 over [80, 250), 2 over [250, 370): 20 + 60 = 80 in the
///   first row (0.800), then 3.000, (150 + 100) / 100 = 2.500, 2.000;
/// - nodes being provisioned: 2 over [10, 20) (burst-0/1), 3 over [20, 70) (burst-2 too), 1
///   over [70, 80) (burst-2): 20 + 150 + 10 = 180 → 1.800, then 0;
/// - jobs pending for capacity: 1 over [10, 20), 2 over [20, 70), 1 over [70, 80):
///   10 + 100 + 10 = 120 → 1.200 (the summary's 120 job-s), then 0.
///
/// Without groups the columns are absent.
#[test]
fn timeseries_has_the_autoscaling_levels() {
    let toml = format!(
        "{}
[metrics]
timeseries_interval_s = 100
",
        tiny(&burst())
    );
    let (_, series) = run_series(&toml, &[("jobs.csv", JOBS)]);
    assert_eq!(
        csv_column(&series, "time_s"),
        ["0.000", "100.000", "200.000", "300.000"]
    );
    assert_eq!(
        csv_column(&series, "autoscaling_nodes_up"),
        ["0.800", "3.000", "2.500", "2.000"]
    );
    assert_eq!(
        csv_column(&series, "autoscaling_nodes_provisioning"),
        ["1.800", "0.000", "0.000", "0.000"]
    );
    assert_eq!(
        csv_column(&series, "autoscaling_pending_for_capacity_jobs"),
        ["1.200", "0.000", "0.000", "0.000"]
    );
    let fixed = tiny(
        "[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [\"n1\"]\naccelerator = \"H100\"\ngpus = 4\n",
    );
    let (_, series) = run_series(&fixed, &[("jobs.csv", JOBS)]);
    assert!(!series.contains("autoscaling_"), "{series}");
}

/// Autoscaling figures in `check` and `compact` goals: the hand-computed case costs
/// 950/3600 × 2.0 ≈ 0.528, so `autoscaling.cost<=0.6` holds and `<=0.5` does not; the
/// group's figure reads by its name, and a cost rise is a regression (lower is better).
#[test]
fn autoscaling_figures_gate_check_and_compact_goals() {
    use fleetsim::check::{baseline_of, compare, CheckSpec, Status};
    use fleetsim::compact::Goal;
    let out = run(&tiny(&burst()), &[("jobs.csv", JOBS)]);
    let s = serde_json::to_value(&out.summary).unwrap();
    assert!(Goal::parse("autoscaling.cost<=0.6").unwrap().met(&s));
    assert!(!Goal::parse("autoscaling.cost<=0.5").unwrap().met(&s));
    assert!(Goal::parse("autoscaling.groups.c/burst.node_hours<=0.264")
        .unwrap()
        .met(&s));
    let spec: CheckSpec = toml::from_str(
        "metrics = [\"autoscaling.cost\", \"autoscaling.pending_for_capacity_job_s\"]",
    )
    .unwrap();
    // Two seeds of the same run (no spread: exact tolerances).
    let two = [s.clone(), s.clone()];
    let mut base = baseline_of(&spec, &[1, 2], &two).unwrap();
    assert_eq!(
        base.metrics.values().map(|m| m.mean).collect::<Vec<_>>(),
        [Some(950.0 / 3600.0 * 2.0), Some(120.0)]
    );
    // A baseline that cost less and waited more: now the cost rose (regression), the
    // pending time fell (better).
    for (m, v) in [
        ("autoscaling.cost", 0.5),
        ("autoscaling.pending_for_capacity_job_s", 200.0),
    ] {
        let b = base.metrics.get_mut(m).unwrap();
        b.values = vec![Some(v); 2];
        b.mean = Some(v);
    }
    let lines = compare(&spec, &base, &two).unwrap();
    assert_eq!(lines[0].status, Status::Regressed);
    assert_eq!(lines[1].status, Status::Better);
}

/// Three groups for a 1 × 8-GPU job: `small` (4-GPU nodes) can hold no task of 8 GPUs, so
/// it is no option; `big` (one 8-GPU node, 10.0 per hour) wastes nothing; `wide` (one
/// 16-GPU node, 3.0 per hour) wastes 8 GPUs. `least-waste` takes `big`, `price` takes
/// `wide`, `priority` the group of highest priority (`wide`: 5). The node joins at 30.
#[test]
fn the_expander_chooses_the_group() {
    let groups = r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.autoscaling]]
name = "small"
max_nodes = 4
node = { accelerator = "H100", gpus = 4 }
provisioning_delay = { distribution = "fixed", s = 30 }
price_per_node_hour = 1.0
[[fleet.cells.autoscaling]]
name = "big"
max_nodes = 2
node = { accelerator = "H100", gpus = 8 }
provisioning_delay = { distribution = "fixed", s = 30 }
price_per_node_hour = 10.0
[[fleet.cells.autoscaling]]
name = "wide"
max_nodes = 2
priority = 5
node = { accelerator = "H100", gpus = 16 }
provisioning_delay = { distribution = "uniform", min_s = 30, max_s = 30 }
price_per_node_hour = 3.0
"#;
    let jobs = "id,submit_s,tenant,num_gpu,tasks,runtime_s\nJ,0,a,8,1,100\n";
    for (expander, node) in [
        ("least-waste", "c-big-n00000"),
        ("price", "c-wide-n00000"),
        ("priority", "c-wide-n00000"),
    ] {
        let toml = tiny(&format!("autoscaler_expander = \"{expander}\"\n{groups}"));
        let out = run(&toml, &[("jobs.csv", jobs)]);
        assert_eq!(span(&out, "J"), (Some(30), Some(130)), "{expander}");
        assert_eq!(job(&out, "J").nodes, [node], "{expander}");
        assert_eq!(out.summary.autoscaling.as_ref().unwrap().expander, expander);
    }
}

/// The node kind of a group, as `philly-autoscale-kinds.toml` sweeps it: a static 4 × P40
/// node `n1` and a burst group of one 4-GPU node, fixed 60 s provisioning, `[platform]`
/// speeds P40 1.0 and H100 4.0 (run times scale by 1/speed). J1 (4 GPUs at 0, 100 s) takes
/// n1; J2 (4 GPUs at 10, 400 s recorded) asks for a burst node, which joins at 70.
/// - P40 burst node at 1.0 per hour: J2 runs 400 s, 70 → 470; billed 10 → 470 = 460 node-s,
///   cost 460/3600; GPU-s provisioned 4 × 400 = 1600, allocated 1600.
/// - H100 burst node at 8.0 per hour: J2 runs 400 / 4 = 100 s, 70 → 170; billed 10 → 170 =
///   160 node-s, cost 160/3600 × 8.0 = 1280/3600; provisioned and allocated 4 × 100 = 400.
#[test]
fn a_faster_node_kind_runs_at_its_speed_and_bills_its_own_price() {
    let jobs = "id,submit_s,tenant,num_gpu,tasks,runtime_s\nJ1,0,a,4,1,100\nJ2,10,a,4,1,400\n";
    for (kind, price, end, node_s, gpu_s) in [
        ("P40", 1.0, 470, 460.0, 1600.0),
        ("H100", 8.0, 170, 160.0, 400.0),
    ] {
        let groups = format!(
            r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "P40"
gpus = 4
[[fleet.cells.autoscaling]]
name = "burst"
max_nodes = 1
node = {{ accelerator = "{kind}", gpus = 4 }}
provisioning_delay = {{ distribution = "fixed", s = 60 }}
price_per_node_hour = {price}
scale_down_idle_s = 120
[platform]
speed = {{ P40 = 1.0, H100 = 4.0 }}
"#
        );
        let out = run(&tiny(&groups), &[("jobs.csv", jobs)]);
        assert_eq!(span(&out, "J1"), (Some(0), Some(100)), "{kind}");
        assert_eq!(span(&out, "J2"), (Some(70), Some(end)), "{kind}");
        assert_eq!(job(&out, "J2").nodes, ["c-burst-n00000"], "{kind}");
        let a = out.summary.autoscaling.as_ref().unwrap();
        assert_eq!(a.node_hours, node_s / 3600.0, "{kind}");
        assert_eq!(a.cost, node_s / 3600.0 * price, "{kind}");
        // Summed per node in another order than this division: equal to 1 ulp.
        for (what, v) in [
            ("provisioned", a.gpu_hours_provisioned),
            ("allocated", a.gpu_hours_allocated),
        ] {
            assert!((v - gpu_s / 3600.0).abs() < 1e-12, "{kind} {what}: {v}");
        }
    }
}

/// Without autoscaling groups the summary has no `autoscaling` section.
#[test]
fn no_groups_no_section() {
    let toml = tiny(
        "[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\nnames = [\"n1\"]\naccelerator = \"H100\"\ngpus = 4\n",
    );
    let out = run(
        &toml,
        &[(
            "jobs.csv",
            "id,submit_s,tenant,num_gpu,runtime_s\nJ,0,a,4,10\n",
        )],
    );
    assert!(out.summary.autoscaling.is_none());
    let json = serde_json::to_string(&out.summary).unwrap();
    assert!(!json.contains("autoscaling"), "{json}");
}

fn load_err(group: &str, policy: &str) -> String {
    let toml = format!(
        "name = \"bad\"\n[policy]\n{policy}\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.autoscaling]]\n{group}\n{NATIVE_JOBS}"
    );
    load_error(&toml, &[])
}

const OK: &str = "name = \"g\"\nnode = { accelerator = \"H100\", gpus = 8 }\nprovisioning_delay = { distribution = \"fixed\", s = 60 }";

#[test]
fn bad_groups_are_refused_naming_the_field() {
    let cases = [
        (
            format!("{OK}\nmin_nodes = 3\nmax_nodes = 2"),
            "",
            "fleet.cells[0].autoscaling[0].min_nodes",
        ),
        (
            format!("{OK}\nmax_nodes = 0"),
            "",
            "fleet.cells[0].autoscaling[0].max_nodes",
        ),
        (
            format!("{OK}\nmax_nodes = 2\nprice_per_node_hour = -1.0"),
            "",
            "fleet.cells[0].autoscaling[0].price_per_node_hour",
        ),
        (
            format!("{OK}\nmax_nodes = 2\nscale_down_idle_s = -5"),
            "",
            "fleet.cells[0].autoscaling[0].scale_down_idle_s",
        ),
        (
            "name = \"g\"\nmax_nodes = 2\nnode = { accelerator = \"H100\", gpus = 8 }\nprovisioning_delay = { distribution = \"fixed\", s = -1 }".to_string(),
            "",
            "fleet.cells[0].autoscaling[0].provisioning_delay.s",
        ),
        (
            "name = \"g\"\nmax_nodes = 2\nnode = { accelerator = \"H100\", gpus = 8 }\nprovisioning_delay = { distribution = \"uniform\", min_s = 90, max_s = 30 }".to_string(),
            "",
            "fleet.cells[0].autoscaling[0].provisioning_delay.min_s",
        ),
        (
            "name = \"g\"\nmax_nodes = 2\nnode = { accelerator = \"H100\", gpus = 8 }\nprovisioning_delay = { distribution = \"lognormal\", median_s = 60, sigma = -1 }".to_string(),
            "",
            "fleet.cells[0].autoscaling[0].provisioning_delay.sigma",
        ),
        (
            "name = \"g\"\nmax_nodes = 2\nnode = { accelerator = \"H100\", gpus = 8, count = 4 }\nprovisioning_delay = { distribution = \"fixed\", s = 60 }".to_string(),
            "",
            "fleet.cells[0].autoscaling[0].node",
        ),
    ];
    for (group, policy, field) in cases {
        let e = load_err(&group, policy);
        assert!(e.contains(&format!("`{field}`")), "{field}: {e}");
    }
    // An unknown expander: the error shows the line with the key and the valid names.
    let e = load_err(
        &format!("{OK}\nmax_nodes = 2"),
        "autoscaler_expander = \"cheapest\"",
    );
    assert!(e.contains("autoscaler_expander = \"cheapest\""), "{e}");
    assert!(e.contains("`least-waste`, `price`, `priority`"), "{e}");
    // An unknown key in a group is refused.
    let e = load_err(&format!("{OK}\nmax_nodes = 2\nmax_node = 3"), "");
    assert!(e.contains("max_node"), "{e}");
    // A top-level `[autoscaling]` table is still unknown: groups live in the cells.
    let e = load_error("name = \"x\"\n[autoscaling]\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\ncount = 1\ngpus = 1\naccelerator = \"H100\"\n[workload]\ntrace = { format = \"native\", path = \"j.csv\" }\n", &[]);
    assert!(e.contains("autoscaling"), "{e}");
}

/// Two static `hgx-h100` nodes `n0`, `n1` (8 GPUs each, idle) and a group `burst` of up to 6
/// nodes of the same shape, none at the start, fixed 120 s provisioning, 4.0 per node-hour,
/// removed after 300 s idle.
const HGX: &str = r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
names = ["n0", "n1"]
[[fleet.cells.autoscaling]]
name = "burst"
min_nodes = 0
max_nodes = 6
node = { preset = "hgx-h100" }
provisioning_delay = { distribution = "fixed", s = 120 }
price_per_node_hour = 4.0
scale_down_idle_s = 300
"#;

/// G, a gang of 8 × 8 GPUs at 30 for 1000 s, on [`HGX`]. By hand:
/// - t=30: G needs 8 nodes; n0 and n1 are free and hold one task each, so 8 − 2 = 6 tasks
///   are left and one burst node holds one: ⌈6/1⌉ = 6 nodes, which the group can add
///   (max 6). One request for burst-0..5 at 30, joining at 30 + 120 = 150. (Sized from
///   the group alone, G would need 8 > 6 nodes: no scale-up, pending forever.)
/// - t=150: G starts on n0, n1 and burst-0..5; ends at 1150, the end of the run (the burst
///   nodes, idle from 1150, are billed to here).
///
/// Wait 120 s. Billed 6 × (1150 − 30) = 6720 node-s = 6720/3600 node-h, cost × 4.0.
/// Provisioned GPU-s 6 × 8 × (1150 − 150) = 48000, all allocated. Pending for capacity:
/// G over 30–150, 120 job-s. One scale-up of 6 nodes, none removed, peak 6.
#[test]
fn a_gang_counts_the_free_room_on_static_nodes_and_scales_up_only_the_rest() {
    let jobs = "id,submit_s,tenant,num_gpu,tasks,runtime_s\nG,30,a,8,8,1000\n";
    let out = run(&tiny(HGX), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "G"), (Some(150), Some(1150)));
    assert_eq!(first_start_wait_s(&out, "G"), Some(120));
    let mut nodes = job(&out, "G").nodes.clone();
    nodes.sort();
    let mut want = vec!["n0".to_string(), "n1".to_string()];
    want.extend((0..6).map(|i| format!("c-burst-n0000{i}")));
    want.sort();
    assert_eq!(nodes, want);
    let a = out.summary.autoscaling.as_ref().unwrap();
    assert_eq!((a.scale_ups, a.scale_downs), (1, 0));
    let g = &a.groups[0];
    assert_eq!(
        (g.nodes_provisioned, g.nodes_removed, g.peak_nodes),
        (6, 0, 6)
    );
    assert_eq!(a.node_hours, 6720.0 / 3600.0);
    assert_eq!(a.cost, 6720.0 / 3600.0 * 4.0);
    assert!((a.gpu_hours_provisioned - 48000.0 / 3600.0).abs() < 1e-12);
    assert!((a.gpu_hours_allocated - 48000.0 / 3600.0).abs() < 1e-12);
    assert_eq!(a.pending_for_capacity_job_s, 120.0);
}

/// S, one 16-GPU task at 0 for 500 s that takes the node's shape (no `tasks` column), on a
/// static `hgx-h100` node `n0` and a group `burst` of up to 3 such nodes (60 s, 2.0 per
/// node-hour, idle 100 s). By hand:
/// - On 8-GPU nodes S is placed as 2 members of 8 GPUs that must share one block (the
///   slice of its 2 members: no NVLink domain of one HGX node holds two; the group's block
///   of 3 nodes does). `n0` is a block of its own, so its free room cannot take a member
///   beside one on a burst node: the group adds ⌈2/1⌉ = 2 nodes, burst-0 and burst-1, at
///   0, joining at 60. (Sized by the 16-GPU task, one burst node holds none: no
///   scale-up, pending forever.)
/// - t=60: S starts on burst-0 + burst-1, ends at 560, the end of the run.
///
/// Billed 2 × 560 = 1120 node-s; provisioned and allocated GPU-s 2 × 8 × 500 = 8000;
/// pending for capacity 60 job-s.
#[test]
fn a_split_job_scales_up_for_its_node_sized_members() {
    let groups = r#"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
preset = "hgx-h100"
names = ["n0"]
[[fleet.cells.autoscaling]]
name = "burst"
max_nodes = 3
node = { preset = "hgx-h100" }
provisioning_delay = { distribution = "fixed", s = 60 }
price_per_node_hour = 2.0
scale_down_idle_s = 100
"#;
    let jobs = "id,submit_s,tenant,num_gpu,runtime_s\nS,0,a,16,500\n";
    let out = run(&tiny(groups), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "S"), (Some(60), Some(560)));
    let mut nodes = job(&out, "S").nodes.clone();
    nodes.sort();
    assert_eq!(nodes, ["c-burst-n00000", "c-burst-n00001"]);
    let a = out.summary.autoscaling.as_ref().unwrap();
    assert_eq!((a.scale_ups, a.groups[0].nodes_provisioned), (1, 2));
    assert_eq!(a.node_hours, 1120.0 / 3600.0);
    assert!((a.gpu_hours_provisioned - 8000.0 / 3600.0).abs() < 1e-12);
    assert!((a.gpu_hours_allocated - 8000.0 / 3600.0).abs() < 1e-12);
    assert_eq!(a.pending_for_capacity_job_s, 60.0);
}

/// A and B, gangs of 3 × 8 GPUs both at 0 (A first; A for 100 s, B for 200 s), on static
/// `n0`, `n1` (idle) and a group of up to 4 `hgx-h100` nodes (60 s, 1.0 per node-hour, idle
/// 300 s). By hand, in the scan at 0 (in queue order):
/// - A counts n0 and n1 (one task each) and needs ⌈1/1⌉ = 1 node: burst-0, joining at 60.
/// - B finds n0 and n1 already counted for A and burst-0's room taken by A's third task,
///   so all 3 of its tasks need new nodes: burst-1..3, joining at 60. (Counting n0 and n1
///   again, B would ask for 1 node and wait for a node that never comes.)
/// - t=60: A starts on n0, n1, burst-0 (placement ties by node id), ends 160; B on
///   burst-1..3, ends 260, the end of the run.
///
/// 2 scale-ups, 4 nodes; billed 4 × 260 = 1040 node-s (burst-0, idle from 160, would go at
/// 460); provisioned GPU-s 4 × 8 × 200 = 6400, allocated 8 × 100 + 3 × 8 × 200 = 5600;
/// pending for capacity 2 × 60 = 120 job-s.
#[test]
fn free_room_counted_for_an_earlier_job_of_the_scan_is_not_counted_again() {
    let groups = HGX.replace("max_nodes = 6", "max_nodes = 4").replace(
        "provisioning_delay = { distribution = \"fixed\", s = 120 }\nprice_per_node_hour = 4.0",
        "provisioning_delay = { distribution = \"fixed\", s = 60 }\nprice_per_node_hour = 1.0",
    );
    let jobs = "id,submit_s,tenant,num_gpu,tasks,runtime_s\nA,0,a,8,3,100\nB,0,a,8,3,200\n";
    let out = run(&tiny(&groups), &[("jobs.csv", jobs)]);
    assert_eq!(span(&out, "A"), (Some(60), Some(160)));
    assert_eq!(span(&out, "B"), (Some(60), Some(260)));
    let mut a_nodes = job(&out, "A").nodes.clone();
    a_nodes.sort();
    assert_eq!(a_nodes, ["c-burst-n00000", "n0", "n1"]);
    let mut b_nodes = job(&out, "B").nodes.clone();
    b_nodes.sort();
    assert_eq!(
        b_nodes,
        ["c-burst-n00001", "c-burst-n00002", "c-burst-n00003"]
    );
    let a = out.summary.autoscaling.as_ref().unwrap();
    assert_eq!((a.scale_ups, a.groups[0].nodes_provisioned), (2, 4));
    assert_eq!(a.node_hours, 1040.0 / 3600.0);
    assert!((a.gpu_hours_provisioned - 6400.0 / 3600.0).abs() < 1e-12);
    assert!((a.gpu_hours_allocated - 5600.0 / 3600.0).abs() < 1e-12);
    assert_eq!(a.pending_for_capacity_job_s, 120.0);
}
