//! The header comments of the committed scenarios quote numbers ("arrivals compressed 6x",
//! "352 nodes x 8 P40 = 2,816 GPUs", "MTBF 2,000 h"); this test reads each quoted number and
//! compares it with the value the scenario sets (after `extends`), so a header cannot drift
//! from its file. A claim is a template of the header's own words with `{}` for each number;
//! a header reworded so that a claim no longer matches fails too, naming the claim to update.

use std::path::{Path, PathBuf};

use toml::Value;

fn scenarios() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios")
}

/// The scenario file as TOML, merged onto the files it `extends`, as the scenario loader
/// merges them.
fn merged(path: &Path) -> Value {
    Value::Table(fleetsim::scenario::merged_table(path).unwrap())
}

/// The header: the comment lines before the first line of TOML, joined with spaces, runs of
/// white space collapsed.
fn header(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .take_while(|l| l.starts_with('#') || l.trim().is_empty())
        .map(|l| l.trim_start_matches('#'))
        .collect();
    lines
        .join(" ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The value at a dotted path: `a.b`, `a[0].b`, `cells[name=west].count`.
fn get<'a>(v: &'a Value, path: &str) -> &'a Value {
    let mut cur = v;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, i)) => (k, Some(i.trim_end_matches(']'))),
            None => (part, None),
        };
        cur = cur
            .get(key)
            .unwrap_or_else(|| panic!("no `{key}` in `{path}`"));
        if let Some(i) = index {
            let arr = cur
                .as_array()
                .unwrap_or_else(|| panic!("`{key}` is not an array"));
            cur = match i.split_once('=') {
                Some((field, want)) => arr
                    .iter()
                    .find(|e| e.get(field).and_then(Value::as_str) == Some(want))
                    .unwrap_or_else(|| panic!("no `{key}` with {field} = {want}")),
                None => &arr[i.parse::<usize>().unwrap()],
            };
        }
    }
    cur
}

fn num(v: &Value, path: &str) -> f64 {
    let x = get(v, path);
    x.as_float()
        .or_else(|| x.as_integer().map(|i| i as f64))
        .unwrap_or_else(|| panic!("`{path}` is not a number: {x}"))
}

/// Σ count × GPUs per node over the node groups of every cell (`[[fleet.cells.nodes]]`
/// with `count`, and `gpus` or an 8-GPU preset).
fn gpu_total(v: &Value) -> f64 {
    get(v, "fleet.cells")
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            c.get("nodes")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .map(|n| {
            let per_node = match n.get("preset").and_then(Value::as_str) {
                // The 8-GPU presets (src/catalog.rs).
                Some("hgx-h100" | "hgx-h200" | "hgx-b200" | "mi300x" | "mi355x") => 8.0,
                Some(other) => panic!("gpu_total: preset `{other}` not counted here"),
                None => num(&n, "gpus"),
            };
            num(&n, "count") * per_node
        })
        .sum()
}

/// Σ count over the node groups of every cell.
fn node_total(v: &Value) -> f64 {
    get(v, "fleet.cells")
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|c| {
            c.get("nodes")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .map(|n| num(&n, "count"))
        .sum()
}

/// The numbers the template's `{}` stand for, at its first place in `text` where every
/// literal part matches; `None` when it matches nowhere. A number is digits with `,`
/// thousands separators and an optional decimal part.
fn quoted(text: &str, template: &str) -> Option<Vec<f64>> {
    let parts: Vec<&str> = template.split("{}").collect();
    let mut from = 0;
    while let Some(i) = text[from..].find(parts[0]) {
        let start = from + i;
        let mut pos = start + parts[0].len();
        let mut nums = Vec::new();
        let ok = parts[1..].iter().all(|lit| {
            let rest = &text[pos..];
            let len = rest
                .char_indices()
                .take_while(|&(j, c)| {
                    c.is_ascii_digit()
                        || (j > 0
                            && (c == ',' || c == '.')
                            && rest[j + 1..].starts_with(|d: char| d.is_ascii_digit()))
                })
                .count();
            if len == 0 {
                return false;
            }
            let Ok(x) = rest[..len].replace(',', "").parse::<f64>() else {
                return false;
            };
            nums.push(x);
            pos += len;
            if text[pos..].starts_with(lit) {
                pos += lit.len();
                true
            } else {
                false
            }
        });
        if ok {
            return Some(nums);
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    None
}

/// One claim: in `file`'s header, `template`'s numbers equal `values(scenario)`.
struct Claim {
    file: &'static str,
    template: &'static str,
    values: fn(&Value) -> Vec<f64>,
}

/// Everything wrong with the claims about one header and its scenario.
fn check(file: &str, header: &str, scenario: &Value, claims: &[&Claim]) -> Vec<String> {
    let mut bad = Vec::new();
    for c in claims {
        let want = (c.values)(scenario);
        match quoted(header, c.template) {
            None => bad.push(format!(
                "{file}: the header no longer says \"{}\" (update the claim in scenario_headers.rs)",
                c.template
            )),
            Some(got) => {
                if got.len() != want.len()
                    || got.iter().zip(&want).any(|(g, w)| (g - w).abs() > 1e-9 * w.abs().max(1.0))
                {
                    bad.push(format!(
                        "{file}: the header says \"{}\" with {got:?}, the scenario's values are {want:?}",
                        c.template
                    ));
                }
            }
        }
    }
    bad
}

fn claims() -> Vec<Claim> {
    macro_rules! c {
        ($file:literal, $t:literal, |$v:ident| $e:expr) => {
            Claim {
                file: $file,
                template: $t,
                values: |$v: &Value| $e,
            }
        };
    }
    vec![
        // philly-serving: the training side
        c!("philly-serving.toml", "arrivals compressed {}x", |v| vec![num(v, "transforms.arrival_rate_scale")]),
        c!("philly-serving.toml", "a week of submissions arrives in {} hours", |v| vec![
            7.0 * 24.0 / num(v, "transforms.arrival_rate_scale")
        ]),
        c!("philly-serving.toml", "on {} nodes x 8 P40 = {} GPUs", |v| vec![
            num(v, "fleet.cells[0].nodes[0].count"),
            gpu_total(v)
        ]),
        c!("philly-serving.toml", "trace seconds {} .. {})", |v| vec![
            num(v, "transforms.window.start_s"),
            num(v, "transforms.window.end_s")
        ]),
        // philly-serving: the service
        c!("philly-serving.toml", "diurnal sinusoid of mean {} replicas and amplitude {} (", |v| vec![
            num(v, "serving.services[0].demand.mean_replicas"),
            num(v, "serving.services[0].demand.amplitude")
        ]),
        c!("philly-serving.toml", "({} .. {} replicas of load, {} .. {} GPUs", |v| {
            let (m, a) = (
                num(v, "serving.services[0].demand.mean_replicas"),
                num(v, "serving.services[0].demand.amplitude"),
            );
            let g = num(v, "serving.services[0].replica.gpus");
            vec![m - a, m + a, (m - a) * g, (m + a) * g]
        }),
        c!("philly-serving.toml", "sampled every {} min", |v| vec![
            num(v, "serving.services[0].demand.step_s") / 60.0
        ]),
        c!("philly-serving.toml", "target utilisation {} (desired", |v| vec![
            num(v, "serving.services[0].autoscaler.target_utilization")
        ]),
        c!("philly-serving.toml", "at most {} replicas)", |v| {
            let peak = num(v, "serving.services[0].demand.mean_replicas")
                + num(v, "serving.services[0].demand.amplitude");
            vec![(peak / num(v, "serving.services[0].autoscaler.target_utilization")).ceil()]
        }),
        c!("philly-serving.toml", "scale-up after {} s", |v| vec![
            num(v, "serving.services[0].autoscaler.scale_up_delay_s")
        ]),
        c!("philly-serving.toml", "scale-down after {} min", |v| vec![
            num(v, "serving.services[0].autoscaler.scale_down_delay_s") / 60.0
        ]),
        c!("philly-serving.toml", "victims get {} s of grace", |v| vec![num(v, "policy.preemption.grace_s")]),
        c!("philly-serving.toml", "last checkpoint (every {} min)", |v| vec![
            num(v, "policy.preemption.checkpoint_interval_s") / 60.0
        ]),
        c!("philly-serving.toml", "horizon ({} days)", |v| vec![
            (num(v, "metrics.horizon_s") - num(v, "transforms.window.start_s")) / 86_400.0
        ]),
        // philly-serving-reserved
        c!("philly-serving-reserved.toml", "training cell of {} nodes and a serving cell of {} nodes", |v| vec![
            num(v, "fleet.cells[name=philly].nodes[0].count"),
            num(v, "fleet.cells[name=serving].nodes[0].count")
        ]),
        c!("philly-serving-reserved.toml", "training keeps {} of the {} GPUs", |v| vec![
            num(v, "fleet.cells[name=philly].nodes[0].count") * num(v, "fleet.cells[name=philly].nodes[0].gpus"),
            gpu_total(v)
        ]),
        c!("philly-serving-reserved.toml", "peak of {} desired replicas", |v| {
            let peak = num(v, "serving.services[0].demand.mean_replicas")
                + num(v, "serving.services[0].demand.amplitude");
            vec![(peak / num(v, "serving.services[0].autoscaler.target_utilization")).ceil()]
        }),
        // philly-quota and the files that extend it
        c!("philly-quota.toml", "sized to the quotas, {} nodes x 8 P40", |v| vec![num(v, "fleet.cells[0].nodes[0].count")]),
        c!("philly-quota.toml", ") = {} GPUs. On it", |v| vec![gpu_total(v)]),
        c!("philly-quota.toml", "arrivals compressed {}x", |v| vec![num(v, "transforms.arrival_rate_scale")]),
        c!("philly-quota.toml", "so that {} days of submissions arrive in {} days", |v| {
            let days = (num(v, "transforms.window.end_s") - num(v, "transforms.window.start_s")) / 86_400.0;
            vec![days.round(), (days / num(v, "transforms.arrival_rate_scale") * 10.0).round() / 10.0]
        }),
        c!("philly-slo.toml", "2,816 P40s, arrivals compressed {}x", |v| vec![num(v, "transforms.arrival_rate_scale")]),
        c!("philly-slo-rounds.toml", "passes only at t = k x {} s", |v| vec![num(v, "policy.cycle.round_s")]),
        c!("philly-quota-fair-share.toml", "a half-life of one day of compressed time ({} days of the trace)", |v| vec![
            num(v, "policy.fair_share.half_life_s") * num(v, "transforms.arrival_rate_scale") / 86_400.0
        ]),
        // philly-multicell and its spares
        c!("philly-multicell.toml", "`west` {} x 8 and `east` {} x 8", |v| vec![
            num(v, "fleet.cells[name=west].nodes[0].count"),
            num(v, "fleet.cells[name=east].nodes[0].count")
        ]),
        c!("philly-multicell.toml", "`volta`, {} x 8 V100 (32 GB) = {} GPUs", |v| vec![
            num(v, "fleet.cells[name=volta].nodes[0].count"),
            gpu_total(v)
        ]),
        c!("philly-multicell.toml", "arrivals compressed {}x", |v| vec![num(v, "transforms.arrival_rate_scale")]),
        c!(
            "philly-multicell.toml",
            "submitted in the {} days from 2017-10-01 (trace seconds {} .. {};",
            |v| vec![
                (num(v, "transforms.window.end_s") - num(v, "transforms.window.start_s")) / 86_400.0,
                num(v, "transforms.window.start_s"),
                num(v, "transforms.window.end_s")
            ]
        ),
        c!("philly-multicell.toml", "MTBF {} h (P40) and {} h (V100)", |v| vec![
            num(v, "failures.mtbf_h.P40"),
            num(v, "failures.mtbf_h.V100M32")
        ]),
        c!("philly-multicell.toml", "at {} h, log-normal repair (mean {} h, sigma {}), {} s termination grace, {}-min checkpoints, {} s restart overhead", |v| vec![
            num(v, "failures.correlated[0].mtbf_h"),
            num(v, "failures.repair.mean_s") / 3_600.0,
            num(v, "failures.repair.sigma"),
            num(v, "failures.grace_s"),
            num(v, "policy.preemption.checkpoint_interval_s") / 60.0,
            num(v, "failures.restart_overhead_s")
        ]),
        c!("philly-multicell.toml", "a {} s startup plus {} s per doubling", |v| vec![
            num(v, "startup.base_s"),
            num(v, "startup.per_doubling_s")
        ]),
        c!("philly-multicell-spares.toml", "MTBF {} h (P40) and {} h (V100), blocks of 32 nodes at {} h", |v| vec![
            num(v, "failures.mtbf_h.P40"),
            num(v, "failures.mtbf_h.V100M32"),
            num(v, "failures.correlated[0].mtbf_h")
        ]),
        c!("philly-multicell-spares.toml", "and {} hot spares per cell", |v| vec![num(v, "failures.spares_per_cell")]),
        // philly-autoscale
        c!("philly-autoscale.toml", "a small static fleet of {} of Philly's 8 × P40 machines ({} GPUs", |v| vec![
            num(v, "fleet.cells[0].nodes[0].count"),
            gpu_total(v)
        ]),
        c!("philly-autoscale.toml", "up to {} nodes ({} GPUs)", |v| vec![
            num(v, "fleet.cells[0].autoscaling[0].max_nodes"),
            num(v, "fleet.cells[0].autoscaling[0].max_nodes") * num(v, "fleet.cells[0].autoscaling[0].node.gpus")
        ]),
        c!("philly-autoscale.toml", "log-normal delay (median {} min)", |v| vec![
            num(v, "fleet.cells[0].autoscaling[0].provisioning_delay.median_s") / 60.0
        ]),
        c!("philly-autoscale.toml", "returned after {} min idle", |v| vec![
            num(v, "fleet.cells[0].autoscaling[0].scale_down_idle_s") / 60.0
        ]),
        c!("philly-autoscale.toml", "the price ({} per node-hour", |v| vec![
            num(v, "fleet.cells[0].autoscaling[0].price_per_node_hour")
        ]),
        // others
        c!("tiresias-peer.toml", "{} nodes × 8 GPUs = {} GPUs", |v| vec![num(v, "fleet.cells[0].nodes[0].count"), gpu_total(v)]),
        c!("swf-nasa.toml", "accelerators as {} nodes x 8", |v| vec![num(v, "fleet.cells[0].nodes[0].count")]),
        c!("nvl72-topology.toml", "GB200 NVL72 cell: {} racks", |v| vec![num(v, "fleet.cells[0].nodes[0].racks")]),
        c!("las-preempt.toml", "at {} jobs on {} HGX H100 nodes ({} GPUs)", |v| vec![
            num(v, "workload.synthetic.jobs"),
            node_total(v),
            gpu_total(v)
        ]),
        c!("openb-fgd.toml", "inflated to {} % of GPU capacity", |v| vec![num(v, "inflation.target_pct")]),
        c!("openb-fgd.toml", "{} seeds each", |v| vec![
            get(v, "inflation.seeds").as_array().map_or_else(|| num(v, "inflation.seed_count"), |a| a.len() as f64)
        ]),
        c!("sweep-example.toml", "× two seeds = {} runs", |v| {
            let axes = get(v, "sweep.axes").as_array().unwrap();
            let n: usize = axes.iter().map(|a| a.get("values").unwrap().as_array().unwrap().len()).product();
            vec![n as f64 * num(v, "sweep.seeds")]
        }),
    ]
}

#[test]
fn committed_scenario_headers_agree_with_their_values() {
    let dir = scenarios();
    let claims = claims();
    let mut bad = Vec::new();
    let files: std::collections::BTreeSet<&str> = claims.iter().map(|c| c.file).collect();
    for file in files {
        let path = dir.join(file);
        let of_file: Vec<&Claim> = claims.iter().filter(|c| c.file == file).collect();
        bad.extend(check(file, &header(&path), &merged(&path), &of_file));
    }
    assert!(
        bad.is_empty(),
        "scenario headers and values disagree:\n{}",
        bad.join("\n")
    );
}

/// The header philly-serving.toml had while its values said 10x and 60 ± 40: the check
/// reports both numbers (so the test above can fail).
#[test]
fn a_header_that_contradicts_its_values_is_found() {
    let path = scenarios().join("philly-serving.toml");
    let values = merged(&path);
    let old = "arrivals compressed 4x ([transforms]; run times unchanged), so that a week of \
               submissions arrives in 1.75 days, ... a diurnal sinusoid of mean 40 replicas and \
               amplitude 30 (80 .. 560 GPUs";
    let all = claims();
    let some: Vec<&Claim> = all
        .iter()
        .filter(|c| c.file == "philly-serving.toml")
        .filter(|c| c.template.starts_with("arrivals") || c.template.starts_with("diurnal"))
        .collect();
    let bad = check("philly-serving.toml", old, &values, &some);
    assert_eq!(bad.len(), 2, "{bad:#?}");
    assert!(
        bad[0].contains("[4.0]") && bad[0].contains("[10.0]"),
        "{}",
        bad[0]
    );
    assert!(
        bad[1].contains("[40.0, 30.0]") && bad[1].contains("[60.0, 40.0]"),
        "{}",
        bad[1]
    );
    assert_eq!(quoted("mean 1,200.5 ms", "mean {} ms"), Some(vec![1200.5]));
    assert_eq!(quoted("a 3, b 4", "b {}"), Some(vec![4.0]));
    assert_eq!(quoted("no number here", "here {}"), None);
}
