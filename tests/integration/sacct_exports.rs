//! `sacct` exports as sites produce them: the public dumps of `tests/fixtures/sacct-public`
//! (see its SOURCE.md), every one read with exact expectations, and a 5,000-row synthetic
//! dump generated here (seeded) that exercises every resource fallback, every repair and
//! every skip, read in two renderings (a `|` file with a header; a headerless `;`-delimited
//! `sacct -p` file) that must give the same jobs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use fleetsim::scenario::TraceFormat;
use fleetsim::workload::slurm_sacct::SacctOptions;
use fleetsim::workload::{open_trace_with, JobSpec, JobStream, RecordedKind};
use fleetsim_policies::{SimDuration, SimTime};

fn public(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sacct-public")
        .join(name)
}

fn read(
    path: &std::path::Path,
    opts: &SacctOptions,
    sort: bool,
) -> (Vec<JobSpec>, Box<dyn JobStream>) {
    let mut s = open_trace_with(TraceFormat::SlurmSacct, path, sort, opts)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let jobs = s
        .by_ref()
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (jobs, s)
}

fn job<'a>(jobs: &'a [JobSpec], name: &str) -> &'a JobSpec {
    jobs.iter()
        .find(|j| j.name == name)
        .unwrap_or_else(|| panic!("no job {name}"))
}

/// The hpc-cost-simulator's data-collection `--format` list (25 fields; 26 with
/// `Partition`).
const HCS_FORMAT: &str = "State,JobID,ReqCPUS,ReqMem,ReqNodes,Constraints,Submit,Eligible,\
    Start,Elapsed,Suspended,End,ExitCode,DerivedExitCode,AllocNodes,NCPUS,MaxDiskRead,\
    MaxDiskWrite,MaxPages,MaxRSS,MaxVMSize,CPUTime,UserCPU,SystemCPU,TotalCPU";

/// `sacct --format=ALL` of Slurm 20.11, 107 fields: 16 rows. Rows 2–7 and 9–11 are held
/// array jobs cancelled before they ran (`NodeList` `None assigned`: never ran, though
/// `Start` is their cancel time); rows 12–15 hold `|` in `Constraints` (`cpu-a|cpu-b`,
/// `cpu-a|cpu-b|gpu`) and `JobName` (`Job| Name003`, `Job| Name |003`, `Jo| bNa| me003`) and
/// are repaired; row 16 is cut short (74 fields, its first 33 missing) and skipped, named
/// as the first malformed line. Job 4830976 (row 14): 40 CPUs, `mem=180000M`, one node,
/// `ElapsedRaw` 259222 s, `TimelimitRaw` 4320 min.
#[test]
fn ubccr_format_all_slurm_20_11() {
    let (jobs, s) = read(
        &public("ubccr_sacct_dump2101.log"),
        &SacctOptions::default(),
        true,
    );
    assert_eq!(jobs.len(), 12);
    let never = jobs
        .iter()
        .filter(|j| j.recorded == RecordedKind::NeverRan)
        .count();
    assert_eq!(never, 6);
    let sk = s.skipped();
    assert_eq!(
        sk,
        BTreeMap::from([("job_step".into(), 2), ("malformed_row".into(), 1)])
    );
    let n = s.notes();
    assert_eq!(n["malformed_row.first_line"], 16);
    assert_eq!(n["repaired.delimiter_in_text"], 4);
    // Started jobs from AllocTRES, the never-started ones (empty AllocTRES) from ReqTRES.
    assert_eq!((n["cpus_from.AllocTRES"], n["cpus_from.ReqTRES"]), (6, 6));
    let j = job(&jobs, "4830976");
    assert_eq!(
        (j.tasks, j.shape.cpu_milli, j.shape.mem_mib),
        (1, 40_000, 180_000)
    );
    assert_eq!(j.runtime, SimDuration::from_secs(259_222));
    assert_eq!(j.time_limit, Some(SimDuration::from_secs(4320 * 60)));
    assert_eq!(
        (j.tenant.as_str(), j.qos.as_deref()),
        ("account005", Some("mrisupport"))
    );
    // A never-ran job: `ReqMem` 2800Mc × 12 CPUs = 33,600 MiB = ReqTRES `mem=33600M`.
    let h = job(&jobs, "4745200");
    assert_eq!(h.recorded, RecordedKind::NeverRan);
    assert_eq!((h.shape.cpu_milli, h.shape.mem_mib), (12_000, 33_600));
}

/// `sacct --format=ALL` of Slurm 21.x, 109 fields with `SubmitLine`: 8 rows of one job
/// 7957382 (the dump repeats it with variants), 2 steps. Every row with `|` in
/// `SubmitLine` (`--wrap=env | grep SLURM | sed …`), `Constraints` or `JobName` is repaired
/// (5 rows); each reads as 2 CPUs, 4000 MiB, 56 s, account001 in partition001, priority
/// 1,015,655, limit 1440 min.
#[test]
fn ubccr_format_all_slurm_21_with_submit_lines() {
    let (jobs, s) = read(
        &public("ubccr_sacct_dump2110.log"),
        &SacctOptions::default(),
        false,
    );
    assert_eq!(jobs.len(), 5);
    assert_eq!(s.skipped(), BTreeMap::from([("job_step".into(), 2)]));
    assert_eq!(s.notes()["repaired.delimiter_in_text"], 5);
    for j in &jobs {
        assert_eq!(j.name, "7957382");
        assert_eq!((j.shape.cpu_milli, j.shape.mem_mib), (2000, 4000));
        assert_eq!(j.runtime, SimDuration::from_secs(56));
        assert_eq!(
            (j.tenant.as_str(), j.queue.as_deref(), j.priority),
            ("account001", Some("partition001"), 1_015_655)
        );
        assert_eq!(j.time_limit, Some(SimDuration::from_secs(86_400)));
    }
}

/// A 26-field trimmed list without `AllocTRES` or `ElapsedRaw`: resources from `ReqTRES`,
/// run time from `Elapsed` (23:33:25 = 84,805 s; 00:33:29 = 2,009 s); jobs 3 and 4 have 2
/// nodes and 18 CPUs: 2 tasks of 9 CPUs and 500G / 2 = 256,000 MiB. Three rows hold `|` in
/// `JobName` (the last field but one) and are repaired.
#[test]
fn ubccr_trimmed_format_without_alloc_tres() {
    let (jobs, s) = read(
        &public("ubccr_sacct_simple.log"),
        &SacctOptions::default(),
        false,
    );
    assert_eq!(jobs.len(), 4);
    let n = s.notes();
    assert_eq!(n["repaired.delimiter_in_text"], 3);
    assert_eq!((n["cpus_from.ReqTRES"], n["memory_from.ReqTRES"]), (4, 4));
    assert_eq!(jobs[0].runtime, SimDuration::from_secs(84_805));
    assert_eq!(jobs[0].shape.mem_mib, 512_000);
    let j = job(&jobs, "3");
    assert_eq!(
        (j.tasks, j.shape.cpu_milli, j.shape.mem_mib),
        (2, 9000, 256_000)
    );
    assert_eq!(j.runtime, SimDuration::from_secs(2009));
    assert_eq!(j.recorded_start, Some(SimTime::from_secs(3)));
}

/// A `SubmitLine` spanning four lines (rows 8–12 of the file) is one record: job 9067954,
/// 576 CPUs on 16 nodes (16 tasks of 36 CPUs, 576G / 16 = 36,864 MiB), 9,600 s.
#[test]
fn ubccr_submit_line_over_several_lines() {
    let (jobs, s) = read(
        &public("ubccr_sacct_submitline_multiline.log"),
        &SacctOptions::default(),
        true,
    );
    assert_eq!(jobs.len(), 6);
    let n = s.notes();
    assert_eq!(n["repaired.newline_in_text"], 1);
    assert_eq!(n["blank_line"], 1);
    assert_eq!(s.skipped(), BTreeMap::from([("job_step".into(), 7)]));
    let j = job(&jobs, "9067954");
    assert_eq!(
        (j.tasks, j.shape.cpu_milli, j.shape.mem_mib),
        (16, 36_000, 36_864)
    );
    assert_eq!(j.runtime, SimDuration::from_secs(9600));
    // Strict reading refuses the file at the first row with the wrong count (row 2: 111).
    let strict = SacctOptions {
        strict: true,
        ..SacctOptions::default()
    };
    let e = open_trace_with(
        TraceFormat::SlurmSacct,
        &public("ubccr_sacct_submitline_multiline.log"),
        false,
        &strict,
    )
    .unwrap()
    .collect::<Result<Vec<_>, _>>()
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("line 2:") && e.contains("the header has 109, this row has 111"),
        "{e}"
    );
}

/// The project's reformatted copy is not `sacct` output: refused at its first row, naming
/// the field and what `sacct` writes.
#[test]
fn reformatted_copy_is_refused_clearly() {
    let e = open_trace_with(
        TraceFormat::SlurmSacct,
        &public("ubccr_sacct_simple_formatted_expected.log"),
        false,
        &SacctOptions::default(),
    )
    .unwrap()
    .collect::<Result<Vec<_>, _>>()
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("line 2: field `Submit`: `2021-12-10 14:23:28` is not a sacct timestamp"),
        "{e}"
    );
}

/// User-submitted `--noheader --parsable2` rows (hpc-cost-simulator issue #17): `ReqMem`
/// `0n` (0 per node), 8 CPUs from `NCPUS`, `Elapsed` 00:31:01 = 1,861 s; a job cancelled
/// before it started (`Start` `None`) kept as never ran with 14,947 MiB; the four comment
/// lines are skipped as malformed rows, the first on line 1.
#[test]
fn cost_simulator_issue_17_rows() {
    let opts = SacctOptions::with_format(HCS_FORMAT).unwrap();
    let (jobs, s) = read(&public("hpc-cost-simulator_issues_17.txt"), &opts, false);
    assert_eq!(jobs.len(), 2);
    let sk = s.skipped();
    assert_eq!((sk["job_step"], sk["malformed_row"]), (2, 4));
    let n = s.notes();
    assert_eq!((n["malformed_row.first_line"], n["blank_line"]), (1, 3));
    let j = job(&jobs, "2346372");
    assert_eq!((j.shape.cpu_milli, j.shape.mem_mib), (8000, 0));
    assert_eq!(j.runtime, SimDuration::from_secs(1861));
    assert_eq!(n["memory_from.ReqMem_per_node"], 1);
    let c = job(&jobs, "39");
    assert_eq!(
        (c.recorded, c.shape.mem_mib),
        (RecordedKind::NeverRan, 14_947)
    );
}

/// Issue #61's row (`CANCELLED by 32874`, `Start` `None`, `ReqMem` `2T` = 2,097,152 MiB,
/// partition `us-east-1a_all`) with the 26-field list; the made-up `INVALID` row never
/// started. A 4-node job: `AllocNodes` 4, `NCPUS` 4: 4 tasks of 1 CPU, `ReqMem` `30512M`
/// (no suffix: the job's) / 4 = 7,628 MiB, 00:05:01 = 301 s.
#[test]
fn cost_simulator_issue_61_and_a_multi_node_job() {
    let opts = SacctOptions::with_format(&format!("{HCS_FORMAT},Partition")).unwrap();
    let (jobs, s) = read(&public("hpc-cost-simulator_issues_61.txt"), &opts, false);
    assert_eq!(jobs.len(), 1);
    let j = &jobs[0];
    assert_eq!(j.recorded, RecordedKind::NeverRan);
    assert_eq!(
        (j.shape.mem_mib, j.queue.as_deref()),
        (2_097_152, Some("us-east-1a_all"))
    );
    assert_eq!(s.skipped()["never_started"], 1);
    let opts = SacctOptions::with_format(HCS_FORMAT).unwrap();
    let (jobs, s) = read(&public("hpc-cost-simulator_multi-node.txt"), &opts, false);
    let j = job(&jobs, "845");
    assert_eq!(
        (j.tasks, j.shape.cpu_milli, j.shape.mem_mib),
        (4, 1000, 7628)
    );
    assert_eq!(j.runtime, SimDuration::from_secs(301));
    let n = s.notes();
    assert_eq!((n["nodes_from.AllocNodes"], n["cpus_from.NCPUS"]), (1, 1));
}

/// `fleetsim trace inspect` reports the choices (`*_from.*`) and the skips by name.
#[test]
fn trace_inspect_reports_fallbacks_and_skips() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
        .args([
            "trace",
            "inspect",
            "--format",
            "slurm-sacct",
            "--sacct-format",
        ])
        .arg(HCS_FORMAT)
        .arg(public("hpc-cost-simulator_issues_17.txt"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for want in [
        "malformed_row                    4",
        "malformed_row.first_line         1",
        "cpus_from.NCPUS                  2",
        "gpus_from.none                   2",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
}

// --- The synthetic dump -------------------------------------------------------------------

/// SplitMix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn chance(&mut self, pct: u64) -> bool {
        self.below(100) < pct
    }
}

/// The synthetic file's columns: a union of Slurm 17.11–24.05 field names, in `sacct
/// --format=ALL`'s alphabetical order (free text: `AdminComment`, `Comment`, `Constraints`,
/// `JobName`, `SubmitLine`, `WorkDir`).
const COLUMNS: [&str; 33] = [
    "Account",
    "AdminComment",
    "AllocCPUS",
    "AllocGRES",
    "AllocNodes",
    "AllocTRES",
    "Comment",
    "Constraints",
    "Elapsed",
    "ElapsedRaw",
    "End",
    "JobID",
    "JobIDRaw",
    "JobName",
    "NCPUS",
    "NNodes",
    "NodeList",
    "Partition",
    "Priority",
    "QOS",
    "ReqCPUS",
    "ReqGRES",
    "ReqMem",
    "ReqNodes",
    "ReqTRES",
    "Start",
    "State",
    "Submit",
    "SubmitLine",
    "Timelimit",
    "TimelimitRaw",
    "User",
    "WorkDir",
];

/// `D` in generated free text stands for the rendering's delimiter.
const D: &str = "\u{1}";

/// What the generator wrote, and what the reader must give.
#[derive(Default)]
struct Dump {
    /// Data lines (records, possibly spanning lines; malformed rows; blank lines), each a
    /// map column → value (`None`: a raw line written as is).
    rows: Vec<Row>,
    jobs: Vec<JobSpec>,
    skipped: BTreeMap<String, u64>,
    notes: BTreeMap<String, u64>,
    /// Records written (job and step rows and malformed rows; blank lines not counted).
    records: u64,
}

enum Row {
    Fields(BTreeMap<&'static str, String>),
    /// A row cut short: the fields from `from` on.
    Cut(BTreeMap<&'static str, String>, usize),
    Blank,
}

fn bump(m: &mut BTreeMap<String, u64>, k: impl Into<String>) {
    *m.entry(k.into()).or_insert(0) += 1;
}

/// `YYYY-MM-DDTHH:MM:SS` of `s` seconds after 2024-01-01T00:00:00 (a leap year; the dump
/// spans less than its January).
fn ts(s: u64) -> String {
    let (d, r) = (s / 86_400, s % 86_400);
    assert!(d < 31);
    format!(
        "2024-01-{:02}T{:02}:{:02}:{:02}",
        d + 1,
        r / 3600,
        r % 3600 / 60,
        r % 60
    )
}

/// `[D-]HH:MM:SS`.
fn dur(s: u64) -> String {
    let (d, r) = (s / 86_400, s % 86_400);
    let hms = format!("{:02}:{:02}:{:02}", r / 3600, r % 3600 / 60, r % 60);
    if d > 0 {
        format!("{d}-{hms}")
    } else {
        hms
    }
}

/// A job's truth: nodes, per-node GPUs and CPUs, MiB per CPU.
#[derive(Clone, Copy)]
struct Shape {
    nodes: u64,
    gpn: u64,
    cpn: u64,
    mpc: u64,
}

/// How a job's resources are written; each encoding leaves its resources to a different
/// fallback (the `*_from.*` notes it must give, GPU source last).
#[derive(Clone, Copy, PartialEq, Debug)]
enum Enc {
    /// `AllocTRES` and `ReqTRES` complete.
    AllocTres,
    /// TRES without `gres/gpu`; GPUs in `AllocGRES` (the job's total).
    TresPlusAllocGres,
    /// `AllocTRES` empty: `ReqTRES`.
    ReqTres,
    /// No TRES: `NCPUS`, `NNodes`, `ReqMem` per CPU (`c`), `ReqGRES` per node.
    ColumnsPerCpu,
    /// No TRES: `ReqCPUS`, `ReqNodes`, `ReqMem` per node (`n`), typed `AllocGRES`.
    ColumnsPerNode,
    /// No TRES: `AllocCPUS`, `AllocNodes`, `ReqMem` of the job (no suffix), no GPU field.
    ColumnsJob,
}

const ENCS: [Enc; 6] = [
    Enc::AllocTres,
    Enc::TresPlusAllocGres,
    Enc::ReqTres,
    Enc::ColumnsPerCpu,
    Enc::ColumnsPerNode,
    Enc::ColumnsJob,
];

impl Enc {
    /// The fields for `sh`, and the notes they must give.
    fn write(self, sh: Shape, f: &mut BTreeMap<&'static str, String>, notes: &mut Vec<String>) {
        let (gpus, cpus) = (sh.nodes * sh.gpn, sh.nodes * sh.cpn);
        let mem = cpus * sh.mpc;
        let tres = |gpu: bool| {
            let mut t = format!("billing={cpus},cpu={cpus}");
            if gpu && gpus > 0 {
                write!(t, ",gres/gpu={gpus}").unwrap();
            }
            write!(t, ",mem={mem}M,node={}", sh.nodes).unwrap();
            t
        };
        let gpu_note = |src: &str| {
            if gpus > 0 {
                format!("gpus_from.{src}")
            } else {
                "gpus_from.none".into()
            }
        };
        let mut note = |c: &str, m: &str, n: &str, g: String| {
            notes.extend([
                format!("cpus_from.{c}"),
                format!("memory_from.{m}"),
                format!("nodes_from.{n}"),
                g,
            ])
        };
        match self {
            Enc::AllocTres => {
                f.insert("AllocTRES", tres(true));
                f.insert("ReqTRES", tres(true));
                note("AllocTRES", "AllocTRES", "AllocTRES", gpu_note("AllocTRES"));
            }
            Enc::TresPlusAllocGres => {
                f.insert("AllocTRES", tres(false));
                f.insert("ReqTRES", tres(false));
                if gpus > 0 {
                    f.insert("AllocGRES", format!("gpu:{gpus}(IDX:0-{})", gpus - 1));
                }
                note("AllocTRES", "AllocTRES", "AllocTRES", gpu_note("AllocGRES"));
            }
            Enc::ReqTres => {
                f.insert("ReqTRES", tres(true));
                note("ReqTRES", "ReqTRES", "ReqTRES", gpu_note("ReqTRES"));
            }
            Enc::ColumnsPerCpu => {
                f.insert("NCPUS", cpus.to_string());
                f.insert("NNodes", sh.nodes.to_string());
                f.insert("ReqMem", format!("{}Mc", sh.mpc));
                if gpus > 0 {
                    f.insert("ReqGRES", format!("gpu:{}", sh.gpn));
                }
                note(
                    "NCPUS",
                    "ReqMem_per_cpu",
                    "NNodes",
                    gpu_note("ReqGRES_per_node"),
                );
            }
            Enc::ColumnsPerNode => {
                f.insert("ReqCPUS", cpus.to_string());
                f.insert("ReqNodes", sh.nodes.to_string());
                f.insert("ReqMem", format!("{}Mn", sh.cpn * sh.mpc));
                if gpus > 0 {
                    f.insert("AllocGRES", format!("gpu:a100:{gpus}"));
                }
                note(
                    "ReqCPUS",
                    "ReqMem_per_node",
                    "ReqNodes",
                    gpu_note("AllocGRES"),
                );
            }
            Enc::ColumnsJob => {
                assert_eq!(gpus, 0, "no GPU field in this encoding");
                f.insert("AllocCPUS", cpus.to_string());
                f.insert("AllocNodes", sh.nodes.to_string());
                f.insert("ReqMem", format!("{mem}M"));
                note("AllocCPUS", "ReqMem", "AllocNodes", gpu_note(""));
            }
        }
    }
}

/// Generates the dump: exactly `rows` records.
fn generate(seed: u64, rows: u64) -> Dump {
    let mut r = Rng(seed);
    let mut d = Dump::default();
    let mut t = 0u64; // submit clock, s
    let mut id = 100_000u64;
    let mut after_cut = false;
    while d.records < rows {
        let left = rows - d.records;
        id += 1 + r.below(3);
        if left > 3 && r.chance(1) {
            // A blank line, then a row cut short (never a record) before the next job.
            d.rows.push(Row::Blank);
            bump(&mut d.notes, "blank_line");
            let mut f = BTreeMap::new();
            f.insert("JobIDRaw", format!("{id}"));
            f.insert("State", "COMPLETED".into());
            f.insert("Submit", ts(t));
            d.rows.push(Row::Cut(f, 14));
            t += r.below(40);
            d.records += 1;
            bump(&mut d.skipped, "malformed_row");
            d.notes
                .entry("malformed_row.first_line".into())
                .or_insert(0);
            after_cut = true;
            continue;
        }
        let sh = Shape {
            nodes: r.pick(&[1, 1, 1, 2, 4]),
            gpn: r.pick(&[0, 1, 2, 4, 8]),
            cpn: r.pick(&[4, 8, 16]),
            mpc: r.pick(&[1000, 2000, 4000]),
        };
        let mut enc = r.pick(&ENCS);
        let sh = if enc == Enc::ColumnsJob {
            Shape { gpn: 0, ..sh }
        } else {
            sh
        };
        let wait = r.below(600);
        let run = 60 + r.below(90_000);
        let limit_min = run / 60 + 1 + r.below(120);
        let roll = r.below(100);
        let het = left >= 4 && roll < 2;
        let steps = if het { 0 } else { (r.below(3)).min(left - 1) };
        let mut base = BTreeMap::new();
        base.insert("Account", format!("acct-{:02}", r.below(12)));
        base.insert("User", format!("user{:03}", r.below(50)));
        base.insert("Partition", r.pick(&["gpu", "cpu", "debug"]).to_string());
        base.insert("QOS", r.pick(&["normal", "high"]).to_string());
        base.insert("Priority", (r.below(100_000)).to_string());
        base.insert("Submit", ts(t));
        base.insert("TimelimitRaw", limit_min.to_string());
        base.insert("Timelimit", dur(limit_min * 60));
        base.insert(
            "JobName",
            if r.chance(10) {
                format!("prep {D} train")
            } else {
                format!("job-{id}")
            },
        );
        base.insert(
            "Constraints",
            if r.chance(10) {
                format!("intel{D}amd")
            } else {
                String::new()
            },
        );
        if r.chance(3) {
            base.insert("Comment", format!("see {D} ticket"));
        }
        base.insert(
            "SubmitLine",
            if !after_cut && r.chance(3) {
                format!("sbatch --wrap=\"hostname\nenv {D} grep SLURM\"")
            } else if r.chance(10) {
                format!("sbatch --wrap=\"env {D} grep SLURM\"")
            } else {
                "sbatch job.sh".into()
            },
        );
        after_cut = false;
        base.insert("WorkDir", format!("/home/u/{id}"));
        let mut notes = Vec::new();
        let start = t + wait;
        let mut spec = JobSpec {
            name: id.to_string().into(),
            tenant: base["Account"].as_str().into(),
            queue: Some(base["Partition"].clone()),
            priority: base["Priority"].parse().unwrap(),
            qos: Some(base["QOS"].clone()),
            submit: SimTime::from_secs(t),
            tasks: sh.nodes as u32,
            shape: fleetsim_policies::TaskShape {
                cpu_milli: sh.cpn * 1000,
                mem_mib: sh.cpn * sh.mpc,
                ..fleetsim_policies::TaskShape::whole_gpus(sh.gpn as u32)
            },
            gpu_models: Vec::new(),
            cells: Vec::new(),
            runtime: SimDuration::from_secs(run),
            time_limit: Some(SimDuration::from_secs(limit_min * 60)),
            recorded_start: Some(SimTime::from_secs(start)),
            recorded: RecordedKind::Normal,
            topology: None,
            // The sacct reader's jobs are job sizes: they take the node's shape.
            split: true,
            elastic: None,
        };
        if het {
            // Two components of one shape: one gang of 2 × nodes tasks.
            enc = Enc::AllocTres;
            let mut f0 = base.clone();
            let mut f1 = base.clone();
            for (i, f) in [&mut f0, &mut f1].into_iter().enumerate() {
                f.insert("JobID", format!("{id}+{i}"));
                f.insert("JobIDRaw", format!("{}", id + i as u64));
                f.insert("Start", ts(start));
                f.insert("End", ts(start + run));
                f.insert("ElapsedRaw", run.to_string());
                f.insert("State", "COMPLETED".into());
                f.insert("NodeList", "n[1-4]".into());
                enc.write(sh, f, &mut notes);
            }
            let mut step = f0.clone();
            step.insert("JobID", format!("{id}+0.batch"));
            step.insert("JobIDRaw", format!("{id}.batch"));
            d.rows
                .extend([Row::Fields(f0), Row::Fields(step), Row::Fields(f1)]);
            d.records += 3;
            id += 1;
            bump(&mut d.skipped, "job_step");
            bump(&mut d.notes, "hetjob");
            bump(&mut d.notes, "state.COMPLETED");
            spec.tasks *= 2;
            if sh.gpn > 0 && enc == Enc::ColumnsPerNode {
                spec.gpu_models = vec!["A100".into()];
            }
            for n in notes {
                bump(&mut d.notes, n);
            }
            d.jobs.push(spec);
            t += r.below(40);
            continue;
        }
        let mut f = base;
        f.insert("JobIDRaw", id.to_string());
        f.insert("JobID", id.to_string());
        enc.write(sh, &mut f, &mut notes);
        if enc == Enc::ColumnsPerNode && sh.gpn > 0 {
            spec.gpu_models = vec!["A100".into()];
        }
        let mut kept = true;
        match roll {
            2..=5 => {
                // Cancelled before it started.
                f.insert("State", format!("CANCELLED by {}", 1000 + r.below(9)));
                f.insert("Start", "None".into());
                f.insert("End", ts(t + wait));
                f.insert("ElapsedRaw", "0".into());
                f.insert("NodeList", "None assigned".into());
                spec.recorded = RecordedKind::NeverRan;
                spec.recorded_start = None;
                spec.runtime = SimDuration::ZERO;
                bump(&mut d.notes, "state.CANCELLED");
            }
            6..=8 => {
                // Held, then cancelled: Start is the cancel time, no node assigned.
                f.insert("State", "CANCELLED by 0".into());
                f.insert("Start", ts(t + wait));
                f.insert("End", ts(t + wait));
                f.insert("ElapsedRaw", "0".into());
                f.insert("NodeList", "None assigned".into());
                spec.recorded = RecordedKind::NeverRan;
                spec.recorded_start = None;
                spec.runtime = SimDuration::ZERO;
                bump(&mut d.notes, "state.CANCELLED");
            }
            9..=11 => {
                // Still pending: not a job of the trace.
                f.insert("State", "PENDING".into());
                f.insert("Start", "Unknown".into());
                f.insert("End", "Unknown".into());
                f.insert("ElapsedRaw", "0".into());
                f.insert("NodeList", "None assigned".into());
                bump(&mut d.skipped, "never_started");
                kept = false;
            }
            12..=13 => {
                // Running when sacct ran: ElapsedRaw so far is the run time.
                f.insert("State", "RUNNING".into());
                f.insert("Start", ts(start));
                f.insert("End", "Unknown".into());
                f.insert("ElapsedRaw", run.to_string());
                f.insert("NodeList", "n1".into());
                bump(&mut d.notes, "running_at_accounting_time");
                bump(&mut d.notes, "state.RUNNING");
            }
            _ => {
                let state = r.pick(&["COMPLETED", "COMPLETED", "FAILED", "TIMEOUT"]);
                f.insert("State", state.into());
                f.insert("Start", ts(start));
                f.insert("End", ts(start + run));
                if r.chance(20) {
                    // No ElapsedRaw: the run time from Elapsed.
                    f.insert("ElapsedRaw", String::new());
                    f.insert("Elapsed", dur(run));
                } else {
                    f.insert("ElapsedRaw", run.to_string());
                    f.insert("Elapsed", dur(run));
                }
                f.insert("NodeList", "n[1-4]".into());
                bump(&mut d.notes, format!("state.{state}"));
            }
        }
        if kept {
            for n in notes {
                bump(&mut d.notes, n);
            }
            d.jobs.push(spec);
        }
        let mut step_rows = Vec::new();
        for s in 0..steps {
            let mut st = f.clone();
            let sfx = if s == 0 { "batch" } else { "extern" };
            st.insert("JobIDRaw", format!("{id}.{sfx}"));
            st.insert("JobID", format!("{id}.{sfx}"));
            st.insert("JobName", sfx.into());
            st.insert("SubmitLine", String::new());
            step_rows.push(Row::Fields(st));
            bump(&mut d.skipped, "job_step");
        }
        d.rows.push(Row::Fields(f));
        d.records += 1 + steps;
        d.rows.extend(step_rows);
        t += r.below(40);
    }
    d
}

/// The text of the dump with delimiter `delim`; with `header` a header line; with
/// `trailing` every record ends with the delimiter (`sacct -p`). Fills in the first line of
/// the first cut row (its notes key was reserved with 0).
fn render(d: &mut Dump, delim: &str, header: bool, trailing: bool) -> String {
    let mut out = String::new();
    let mut line = 1u64;
    let end = if trailing { delim } else { "" };
    if header {
        writeln!(out, "{}{end}", COLUMNS.join(delim)).unwrap();
        line += 1;
    }
    let mut first_cut = None;
    for row in &d.rows {
        let text = match row {
            Row::Blank => String::new(),
            Row::Fields(f) | Row::Cut(f, _) => {
                let vals: Vec<String> = COLUMNS
                    .iter()
                    .map(|c| f.get(c).cloned().unwrap_or_default().replace(D, delim))
                    .collect();
                match row {
                    Row::Cut(_, from) => {
                        first_cut.get_or_insert(line);
                        format!("{}{end}", vals[*from..].join(delim))
                    }
                    _ => format!("{}{end}", vals.join(delim)),
                }
            }
        };
        line += 1 + text.matches('\n').count() as u64;
        writeln!(out, "{text}").unwrap();
    }
    if let Some(l) = first_cut {
        d.notes.insert("malformed_row.first_line".into(), l);
    }
    out
}

/// 5,000 rows of every kind, read as written (`|`, header) and as a headerless
/// `--delimiter=';' -p` export of the same rows: both give exactly the generated jobs,
/// skips and notes (every resource fallback, repair and skip, counted).
#[test]
fn synthetic_dump_of_5000_rows_reads_as_generated() {
    let mut d = generate(46, 5000);
    assert_eq!(d.records, 5000);
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("all.txt");
    std::fs::write(&a, render(&mut d, "|", true, false)).unwrap();
    let (jobs, s) = read(&a, &SacctOptions::default(), false);
    // Every fallback and kind is exercised.
    for key in [
        "cpus_from.AllocTRES",
        "cpus_from.ReqTRES",
        "cpus_from.NCPUS",
        "cpus_from.ReqCPUS",
        "cpus_from.AllocCPUS",
        "memory_from.ReqMem_per_cpu",
        "memory_from.ReqMem_per_node",
        "memory_from.ReqMem",
        "nodes_from.AllocNodes",
        "gpus_from.AllocGRES",
        "gpus_from.ReqGRES_per_node",
        "gpus_from.none",
        "hetjob",
        "running_at_accounting_time",
        "blank_line",
        "repaired.delimiter_in_text",
        "repaired.newline_in_text",
    ] {
        assert!(
            s.notes().get(key).copied().unwrap_or(0) > 0,
            "{key}: {:?}",
            s.notes()
        );
    }
    let mut want_notes = d.notes.clone();
    let got_notes = s.notes();
    // The repairs are the reader's own count: every row holding a delimiter or a line
    // break in its free text was repaired (none skipped: the skips are the cut rows).
    for k in ["repaired.delimiter_in_text", "repaired.newline_in_text"] {
        want_notes.insert(k.into(), got_notes[k]);
    }
    assert_eq!(got_notes, want_notes);
    assert_eq!(s.skipped(), d.skipped);
    assert_eq!(jobs.len(), d.jobs.len());
    for (g, w) in jobs.iter().zip(&d.jobs) {
        assert_eq!(g, w, "job {}", w.name);
    }
    // The same rows, headerless, `;` delimited, `sacct -p`.
    let b = dir.path().join("noheader.txt");
    std::fs::write(&b, render(&mut d, ";", false, true)).unwrap();
    let opts = SacctOptions::with_format(&COLUMNS.join(","))
        .unwrap()
        .with_delimiter(";")
        .unwrap();
    let (jobs_b, s_b) = read(&b, &opts, false);
    assert_eq!(jobs_b, jobs);
    assert_eq!(s_b.skipped(), d.skipped);
    let mut notes_b = s_b.notes();
    // Without a header the file's lines are numbered one less.
    let first = notes_b.remove("malformed_row.first_line");
    let mut notes_a = got_notes.clone();
    let first_a = notes_a.remove("malformed_row.first_line");
    assert_eq!(first.map(|l| l + 1), first_a);
    assert_eq!(notes_b, notes_a);
}

/// The scenario options `sacct_format`, `sacct_delimiter` and `sacct_strict`: a
/// headerless `;` export reads; strict reading refuses the file at its first row whose
/// field count is off; each option is refused for another format, naming it.
#[test]
fn sacct_options_in_a_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.txt");
    std::fs::write(
        &trace,
        "7;env ; grep X;COMPLETED;2024-01-01T00:00:00;2024-01-01T00:00:05;60;cpu=4,node=1\n\
         8;j;FAILED;2024-01-01T00:00:10;2024-01-01T00:00:10;30;cpu=2,node=1\n",
    )
    .unwrap();
    let run = |format: &str, extra: &str| {
        let s = dir.path().join("s.toml");
        std::fs::write(
            &s,
            format!(
                "name = \"sacct-options\"\n[[fleet.cells]]\nname = \"c\"\n[[fleet.cells.nodes]]\n\
                 preset = \"hgx-h100\"\ncount = 1\n[workload]\ntrace = {{ format = \"{format}\", \
                 path = \"t.txt\", sacct_format = \"JobIDRaw,JobName,State,Submit,Start,ElapsedRaw,AllocTRES\", \
                 sacct_delimiter = \";\"{extra} }}\n"
            ),
        )
        .unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_fleetsim"))
            .arg("validate")
            .arg(&s)
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        (o.status.success(), text)
    };
    let (ok, out) = run("slurm-sacct", "");
    assert!(ok && out.contains("2 jobs"), "{out}");
    let (ok, out) = run("slurm-sacct", ", sacct_strict = true");
    assert!(
        !ok && out.contains("line 1") && out.contains("this row has 8"),
        "{out}"
    );
    let (ok, out) = run("swf", "");
    assert!(!ok && out.contains("workload.trace.sacct_format"), "{out}");
}
