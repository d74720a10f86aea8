//! Every public trace in `../shared/traces` whose format fleetsim reads, inspected: the counts
//! printed by `fleetsim trace inspect` match the figures each folder's SOURCE.md states.
//! Skipped (with a message) when the traces are not there.

use std::path::PathBuf;

use fleetsim::scenario::TraceFormat;
use fleetsim::workload::inspect::{inspect, Inspection, SizeCount};
use fleetsim::workload::open_trace;

use crate::support::public_traces;

fn inspect_public(rel: &str, format: TraceFormat, sort: bool) -> Option<Inspection> {
    let path = public_traces().join(rel);
    if !path.exists() {
        eprintln!("skipping: {} not found", path.display());
        return None;
    }
    let mut s = open_trace(format, &path, sort).unwrap();
    Some(inspect(s.as_mut(), None).unwrap())
}

fn sizes(i: &Inspection) -> Vec<(f64, u64)> {
    i.size_gpus
        .iter()
        .map(|SizeCount { gpus, jobs }| (*gpus, *jobs))
        .collect()
}

#[test]
fn swf_nasa_matches_source() {
    for file in [
        "NASA-iPSC-1993-3.1-cln.swf",
        "NASA-iPSC-1993-3.1-cln.swf.gz",
    ] {
        let Some(i) = inspect_public(&format!("swf-pwa/{file}"), TraceFormat::Swf, false) else {
            return;
        };
        // SOURCE.md: 18,239 jobs; processors 1 (4,935), 32 (3,662), 4 (2,683), 8 (1,793),
        // 16 (1,780), 2 (1,763), 64 (1,203), 128 (420); run time median 86, p90 1,480,
        // max 62,643, 173 zero; MaxNodes 128; no wait times (no recorded starts).
        assert_eq!(i.jobs, 18_239, "{file}");
        assert_eq!(i.skipped_total, 0);
        assert_eq!(
            sizes(&i),
            [
                (1.0, 4935),
                (2.0, 1763),
                (4.0, 2683),
                (8.0, 1793),
                (16.0, 1780),
                (32.0, 3662),
                (64.0, 1203),
                (128.0, 420)
            ]
        );
        assert_eq!(i.runtime_s.dist.p50, Some(86.0));
        assert_eq!(i.runtime_s.dist.p90, Some(1480.0));
        assert_eq!(i.runtime_s.dist.max, Some(62_643.0));
        assert_eq!(i.runtime_s.zero, 173);
        assert_eq!(i.notes["header.MaxNodes"], 128);
        assert_eq!(i.notes["header.UnixStartTime"], 749_458_803);
        assert_eq!(i.recorded.with_recorded_start, 0);
        // 92 days: the last submit falls on day 92.
        assert!(i.last_submit_s.unwrap() < 93.0 * 86_400.0, "92 days");
    }
}

#[test]
fn swf_lcg_matches_source() {
    let Some(i) = inspect_public("swf-pwa/LCG-2005-1.swf.gz", TraceFormat::Swf, false) else {
        return;
    };
    // SOURCE.md: 188,041 serial jobs, 28 groups, run time median 255, p90 15,265,
    // p99 = max = 172,800, 521 zero, 170 partitions.
    assert_eq!(i.jobs, 188_041);
    assert_eq!(sizes(&i), [(1.0, 188_041)]);
    assert_eq!(i.tenants.len(), 28);
    assert_eq!(i.runtime_s.dist.p50, Some(255.0));
    assert_eq!(i.runtime_s.dist.p90, Some(15_265.0));
    assert_eq!(i.runtime_s.dist.p99, Some(172_800.0));
    assert_eq!(i.runtime_s.dist.max, Some(172_800.0));
    assert_eq!(i.runtime_s.zero, 521);
    assert_eq!(i.notes["header.MaxPartitions"], 170);
    assert!(i.last_submit_s.unwrap() < 16.0 * 86_400.0);
}

#[test]
fn swf_lcg_partitions_become_cells() {
    let path = public_traces().join("swf-pwa/LCG-2005-1.swf.gz");
    if !path.exists() {
        eprintln!("skipping: {} not found", path.display());
        return;
    }
    let cells: std::collections::BTreeSet<String> = fleetsim::workload::swf::open(&path)
        .unwrap()
        .map(|j| j.unwrap().cells.join("|"))
        .collect();
    assert_eq!(cells.len(), 170);
    assert!(cells.contains("grid.ici.ro") && cells.contains("rl.ac.uk"));
}

#[test]
fn dlrm_matches_source() {
    let Some(i) = inspect_public(
        "alibaba-dlrm-2025/disaggregated_DLRM_trace.csv",
        TraceFormat::AlibabaDlrm,
        false,
    ) else {
        return;
    };
    // SOURCE.md: 23,871 instances (16,485 CN with 0 GPUs, 7,386 HN with 1), 156 services;
    // time patterns 12,390 / 4,201 / 2,603 / 4,677; times span 75 … 2,677,541 s.
    assert_eq!(i.jobs, 23_871);
    assert_eq!(sizes(&i), [(0.0, 16_485), (1.0, 7_386)]);
    assert_eq!(i.tenants.len(), 156);
    assert_eq!(i.notes["time_pattern.csd"], 12_390);
    assert_eq!(i.notes["time_pattern.cs-"], 4_201);
    assert_eq!(i.notes["time_pattern.--d"], 2_603);
    assert_eq!(i.notes["time_pattern.---"], 4_677);
    assert_eq!(i.notes["end_censored_at_trace_end"], 4_201 + 4_677);
    assert_eq!(i.recorded.pre_existing, 2_603 + 4_677);
    assert_eq!(i.last_end_s, Some(2_677_541.0));
}

#[test]
fn philly_matches_source() {
    let Some(i) = inspect_public("philly/philly_jobs_pollux.csv", TraceFormat::Philly, false)
    else {
        return;
    };
    // SOURCE.md: 82,247 jobs, 15 VCs; duration min 1, p10 61, p25 115, median 1,144,
    // p75 2,932, p90 11,266, p99 254,884, max 4,628,226, mean 13,136 s; 978,078 GPU-hours;
    // peak offered load 1,243 GPUs.
    assert_eq!(i.jobs, 82_247);
    assert_eq!(i.tenants.len(), 15);
    assert_eq!(i.tenants["6214e9"].jobs, 41_226);
    let r = &i.runtime_s;
    assert_eq!(r.min, Some(1.0));
    assert_eq!((r.p10, r.p25), (Some(61.0), Some(115.0)));
    assert_eq!((r.dist.p50, r.p75), (Some(1144.0), Some(2932.0)));
    assert_eq!((r.dist.p90, r.dist.p99), (Some(11_266.0), Some(254_884.0)));
    assert_eq!(r.dist.max, Some(4_628_226.0));
    assert_eq!(r.dist.mean.unwrap().round(), 13_136.0);
    assert_eq!(i.gpu_hours.round(), 978_078.0);
    assert_eq!(i.peak_gpus, 1243.0);
}

#[test]
fn openb_default_matches_source() {
    let Some(i) = inspect_public(
        "alibaba-gpu-2023/openb_pod_list_default.csv",
        TraceFormat::AlibabaOpenb,
        false,
    ) else {
        return;
    };
    assert_eq!(i.jobs, 8152);
}

#[test]
fn formats_without_public_files_here_are_named_in_traces_readme() {
    // The Philly raw log, Helios job logs, PAI tables and sacct output are not in
    // ../shared/traces; their readers are tested on samples written from the schemas (unit
    // tests of each module, and the traces/ samples below).
    let readme =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("traces/README.md"))
            .unwrap();
    for f in [
        "philly-raw",
        "helios",
        "alibaba-pai",
        "slurm-sacct",
        "swf",
        "alibaba-dlrm",
    ] {
        assert!(
            readme.contains(&format!("`{f}`")),
            "traces/README.md names `{f}`"
        );
    }
}

/// `summary.json`'s `trace_start`: the absolute time of t = 0, per reader.
mod trace_start {
    use fleetsim::workload::TraceStart;

    use crate::support::run;

    const FLEET: &str = r#"
[[fleet.cells]]
name = "a"
[[fleet.cells.nodes]]
preset = "hgx-h100"
count = 2
"#;

    fn start(time: &str, utc: bool, zone: Option<&str>) -> Option<TraceStart> {
        Some(TraceStart {
            time: time.to_string(),
            utc_offset_known: utc,
            zone: zone.map(str::to_string),
        })
    }

    /// SWF: `UnixStartTime` 1,000,000,000 s = 11,574 days after 1970-01-01 (2001-09-09) +
    /// 6,400 s (01:46:40), UTC; a `[transforms] window` dropping the first job does not move
    /// t = 0 (job 2 still submits at 50 s).
    #[test]
    fn swf_unix_start_time_is_utc() {
        let log = "; UnixStartTime: 1000000000\n; TimeZoneString: US/Eastern\n\
                   1 0 -1 10 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n\
                   2 50 -1 10 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n";
        let scen = format!(
            "name = \"s\"\n{FLEET}[workload]\ntrace = {{ format = \"swf\", path = \"l.swf\" }}\n\
             [transforms]\nwindow = {{ start_s = 20 }}\n"
        );
        let out = run(&scen, &[("l.swf", log)]);
        assert_eq!(
            out.summary.trace_start,
            start("2001-09-09T01:46:40Z", true, Some("US/Eastern"))
        );
        assert_eq!(out.summary.jobs.submitted, 1);
        assert_eq!(crate::support::span(&out, "2").0, Some(50));
        let json = serde_json::to_value(&out.summary).unwrap();
        assert_eq!(
            json["trace_start"],
            serde_json::json!({"time": "2001-09-09T01:46:40Z", "utc_offset_known": true,
                               "zone": "US/Eastern"})
        );
    }

    /// Philly: t = 0 is the earliest timestamp (row 2's, the file is unsorted), naive US
    /// Pacific wall clock.
    #[test]
    fn philly_earliest_submit_is_local() {
        let csv = "timestamp,duration,num_gpus,gpu_time,cluster\n\
                   2017-10-03 04:10:00,60,1,60,c\n\
                   2017-10-03 04:00:00,60,1,60,c\n";
        let scen = format!(
            "name = \"p\"\n{FLEET}[workload]\ntrace = {{ format = \"philly\", path = \"p.csv\" }}\n"
        );
        let out = run(&scen, &[("p.csv", csv)]);
        assert_eq!(
            out.summary.trace_start,
            start("2017-10-03T04:00:00", false, Some("US Pacific"))
        );
    }

    /// A synthetic workload has no calendar: `null`.
    #[test]
    fn synthetic_has_none() {
        let scen = format!(
            "name = \"y\"\n{FLEET}[workload.synthetic]\nduration_s = 600\n\
             arrival_rate_per_hour = 60.0\nmax_gpus_per_task = 8\ncpu_milli_per_gpu = 0\n\
             mem_mib_per_gpu = 0\ntenants = [{{ name = \"t\", weight = 1.0 }}]\n\
             sizes = [{{ gpus = 1, weight = 1.0 }}]\n\
             runtime = {{ dist = \"lognormal\", median_s = 60.0, sigma = 1.0, min_s = 1.0, \
             max_s = 600.0 }}\n"
        );
        let out = run(&scen, &[]);
        assert!(out.summary.jobs.submitted > 0);
        assert_eq!(out.summary.trace_start, None);
        let json = serde_json::to_value(&out.summary).unwrap();
        assert!(json["trace_start"].is_null());
    }
}
