//! The stable-toolchain counterpart of `fuzz/` (whose `cargo fuzz` targets need nightly):
//! every reader (and the scenario loader) is run over seeded mutations of its seeds — the
//! samples in `traces/`, inputs written here, and, when present, the first lines of the
//! public traces in `../shared/traces` — through the same harness the fuzz targets call
//! (`fleetsim::fuzzing`). A panic fails the test and prints the input.
//!
//! `FLEETSIM_FUZZ_ITERS` sets the mutations per format (default 1,500, sized for CI on a
//! debug build); `fuzz/corpus/<target>/` and `fuzz/artifacts/<target>/`, when present, are
//! replayed too.

use std::io::Read;
use std::path::{Path, PathBuf};

use fleetsim::fuzzing::{file_name, read_kueue, read_scenario, read_trace};
use fleetsim::scenario::TraceFormat;
use rand::{Rng, SeedableRng};

use crate::support::public_traces;

fn repo(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// Up to `lines` lines of a file (gunzipped when `.gz`), or nothing when absent.
fn head(path: &Path, lines: usize) -> Option<Vec<u8>> {
    let f = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    if path.extension().is_some_and(|e| e == "gz") {
        flate2::read::MultiGzDecoder::new(f)
            .take(1 << 20)
            .read_to_string(&mut text)
            .ok()?;
    } else {
        f.take(1 << 20).read_to_string(&mut text).ok()?;
    }
    let mut out: String = text.lines().take(lines).collect::<Vec<_>>().join("\n");
    out.push('\n');
    Some(out.into_bytes())
}

/// A fuzz target: its name, its format (`None` for the scenario loader) and its seeds.
type Target = (&'static str, Option<TraceFormat>, Vec<Vec<u8>>);

fn targets() -> Vec<Target> {
    let pt = public_traces();
    let file = |p: PathBuf| std::fs::read(p).ok();
    let keep = |v: Vec<Option<Vec<u8>>>| v.into_iter().flatten().collect::<Vec<_>>();
    vec![
        (
            "swf",
            Some(TraceFormat::Swf),
            keep(vec![
                head(&pt.join("swf-pwa/NASA-iPSC-1993-3.1-cln.swf"), 60),
                head(&pt.join("swf-pwa/LCG-2005-1.swf.gz"), 220),
                Some(b"; Partition: 1 a\n1 0 5 10 4 -1 -1 4 60 1024 1 1 1 -1 0 1 -1 -1\n2 1 -1 -1 -1 -1 -1 -1 -1 -1 5 2 -1 -1 -1 -1 -1 -1\n".to_vec()),
            ]),
        ),
        (
            "alibaba_dlrm",
            Some(TraceFormat::AlibabaDlrm),
            keep(vec![head(
                &pt.join("alibaba-dlrm-2025/disaggregated_DLRM_trace.csv"),
                40,
            ), Some(b"instance_sn,role,app_name,cpu_request,cpu_limit,gpu_request,gpu_limit,rdma_request,rdma_limit,memory_request,memory_limit,disk_request,disk_limit,max_instance_per_node,creation_time,scheduled_time,deletion_time\ni,HN,a,1,1,1,1,1,1,1,1,1,1,2,5,6,7\ni,CN,a,1,1,0,0,0,0,1,1,1,1,-1,,,9\n".to_vec())]),
        ),
        (
            "slurm_sacct",
            Some(TraceFormat::SlurmSacct),
            keep(vec![file(repo("traces/sample-sacct.txt"))]),
        ),
        (
            "helios",
            Some(TraceFormat::Helios),
            keep(vec![file(repo("traces/sample-helios.csv"))]),
        ),
        (
            "philly_raw",
            Some(TraceFormat::PhillyRaw),
            keep(vec![file(repo("traces/sample-philly-raw.json"))]),
        ),
        (
            "alibaba_pai",
            Some(TraceFormat::AlibabaPai),
            keep(vec![{
                let j = std::fs::read(repo("traces/sample-pai/pai_job_table.csv")).ok();
                let t = std::fs::read(repo("traces/sample-pai/pai_task_table.csv")).ok();
                j.zip(t).map(|(mut j, t)| {
                    j.extend_from_slice(b"\n---\n");
                    j.extend(t);
                    j
                })
            }]),
        ),
        (
            "philly",
            Some(TraceFormat::Philly),
            keep(vec![
                head(&pt.join("philly/philly_jobs_pollux.csv"), 40),
                Some(b"timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66.0,1,66.0,vc1\n2017-10-09 06:13:03,2951.5,16,47224.0,vc2\n".to_vec()),
            ]),
        ),
        (
            "alibaba_openb",
            Some(TraceFormat::AlibabaOpenb),
            keep(vec![
                head(&pt.join("alibaba-gpu-2023/openb_pod_list_default.csv"), 40),
                Some(b"name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\np1,1000,100,1,500,V100M16|T4,LS,Running,0,100,5\n".to_vec()),
            ]),
        ),
        (
            "pollux",
            Some(TraceFormat::Pollux),
            keep(vec![
                head(&pt.join("pollux-workloads/load-1.0/workload-1.csv"), 40),
                Some(b"name,time,application,num_replicas,batch_size\ncifar10-0,107,cifar10,6,2048\nncf-1,110,ncf,1,32768\n".to_vec()),
            ]),
        ),
        (
            "native_csv",
            Some(TraceFormat::Native),
            keep(vec![file(repo("traces/sample-small.csv"))]),
        ),
        (
            "scenario",
            None,
            std::fs::read_dir(repo("scenarios"))
                .map(|d| {
                    let mut v: Vec<PathBuf> = d.flatten().map(|e| e.path()).collect();
                    v.sort();
                    v.into_iter().filter_map(|p| std::fs::read(p).ok()).collect()
                })
                .unwrap_or_default(),
        ),
    ]
}

const TOKENS: [&[u8]; 24] = [
    b"-1",
    b"0",
    b"-0.0005",
    b"1e3",
    b"1e308",
    b"99999999999999999999",
    b"NaN",
    b"None",
    b"Unknown",
    b",",
    b"|",
    b"\n",
    b"\"",
    b" ",
    b"{",
    b"}",
    b"[",
    b"]",
    b"-",
    b":",
    b".",
    b"2017-02-29 00:00:00",
    b"2024-03-10T02:30:00",
    b"\xff",
];

/// One seeded mutation of `seed`.
fn mutate(rng: &mut rand_pcg::Pcg64Mcg, seed: &[u8]) -> Vec<u8> {
    let mut d = seed.to_vec();
    for _ in 0..rng.random_range(1..=4) {
        let len = d.len();
        match rng.random_range(0..7) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                d[i] ^= 1 << rng.random_range(0..8);
            }
            1 => {
                let i = rng.random_range(0..=len);
                let t = TOKENS[rng.random_range(0..TOKENS.len())];
                d.splice(i..i, t.iter().copied());
            }
            2 if len > 0 => {
                let i = rng.random_range(0..len);
                let j = (i + rng.random_range(1..=16)).min(len);
                d.drain(i..j);
            }
            3 if len > 0 => {
                // Replace a run of digits with a token.
                let i = rng.random_range(0..len);
                let mut j = i;
                while j < len && d[j].is_ascii_digit() {
                    j += 1;
                }
                let t = TOKENS[rng.random_range(0..8)];
                d.splice(i..j, t.iter().copied());
            }
            4 => {
                // Duplicate or drop a line.
                let lines: Vec<&[u8]> = d.split(|&b| b == b'\n').collect();
                if lines.len() > 1 {
                    let k = rng.random_range(0..lines.len());
                    let mut out: Vec<Vec<u8>> = lines.iter().map(|l| l.to_vec()).collect();
                    if rng.random_bool(0.5) {
                        out.insert(k, out[k].clone());
                    } else {
                        out.remove(k);
                    }
                    d = out.join(&b'\n');
                }
            }
            5 if len > 1 => {
                d.truncate(rng.random_range(0..len));
            }
            _ => {
                let i = rng.random_range(0..=len);
                d.insert(i, rng.random());
            }
        }
    }
    d
}

fn exercise(format: Option<TraceFormat>, data: &[u8]) {
    match format {
        Some(f) => read_trace(f, file_name(f), data),
        None => read_scenario(data),
    }
}

/// Mutations per target: `FLEETSIM_FUZZ_ITERS`, default 1,500.
fn iters() -> usize {
    std::env::var("FLEETSIM_FUZZ_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1500)
}

/// Feeds every file of `dir` (sorted by name) to `exercise`; the number of files.
fn replay_dir(dir: &Path, exercise: impl Fn(&[u8])) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in &paths {
        if let Ok(data) = std::fs::read(p) {
            exercise(&data);
        }
    }
    paths.len()
}

#[test]
fn no_reader_panics_on_mutated_input() {
    let iters = iters();
    for (name, format, seeds) in targets() {
        assert!(!seeds.is_empty(), "{name}: no seed");
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x5eed ^ name.len() as u64);
        for s in &seeds {
            exercise(format, s);
        }
        for i in 0..iters {
            let seed = &seeds[i % seeds.len()];
            let input = mutate(&mut rng, seed);
            let r = std::panic::catch_unwind(|| exercise(format, &input));
            assert!(
                r.is_ok(),
                "{name}: panic on mutation {i}: {:?}",
                String::from_utf8_lossy(&input)
            );
        }
        let replayed = replay_dir(&repo(&format!("fuzz/corpus/{name}")), |d| {
            exercise(format, d)
        }) + replay_dir(&repo(&format!("fuzz/artifacts/{name}")), |d| {
            exercise(format, d)
        });
        eprintln!(
            "{name}: {} seeds, {iters} mutations, {replayed} corpus files replayed",
            seeds.len()
        );
    }
}

#[test]
fn kueue_reader_never_panics_on_mutated_manifests() {
    let iters = iters();
    let seed = std::fs::read(repo("scenarios/kueue-manifests.yaml")).unwrap();
    let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(0x5eed ^ 0x6b75);
    read_kueue(&seed);
    for i in 0..iters {
        let input = mutate(&mut rng, &seed);
        let r = std::panic::catch_unwind(|| read_kueue(&input));
        assert!(
            r.is_ok(),
            "kueue: panic on mutation {i}: {:?}",
            String::from_utf8_lossy(&input)
        );
    }
    let replayed = replay_dir(&repo("fuzz/corpus/kueue"), read_kueue)
        + replay_dir(&repo("fuzz/artifacts/kueue"), read_kueue);
    eprintln!("kueue: {iters} mutations, {replayed} corpus files replayed");
}
