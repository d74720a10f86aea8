//! Parquet outputs (`[metrics] outputs`, `fleetsim run --format`): the same values as the
//! CSV files, the documented column types, identical bytes for the same run.

use std::fs::File;
use std::path::Path;

use arrow_array::{Array, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::DataType;
use fleetsim::report::tables;
use fleetsim::run::run_scenario;
use fleetsim::scenario;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

const SCENARIO: &str = r#"
name = "pq"
[policy]
queueing_strategy = "strict-fifo"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 4
[workload]
trace = { format = "native", path = "jobs.csv" }
queues = "single"
[metrics]
timeseries_interval_s = 50
outputs = ["csv", "parquet"]
"#;

const JOBS: &str = "id,submit_s,tenant,num_gpu,runtime_s
J1,0,a,2,100
J2,0,b,4,50
J3,10.5,a,1,20
";

/// Runs `toml` (with `jobs.csv` as its trace) into `<dir>/out`.
fn run_into(dir: &Path, toml: &str) -> Result<(), String> {
    std::fs::write(dir.join("jobs.csv"), JOBS).unwrap();
    let path = dir.join("scenario.toml");
    std::fs::write(&path, toml).unwrap();
    let loaded = scenario::load(&path).map_err(|e| e.to_string())?;
    let opts = crate::support::run_options(Some(dir.join("out")), false);
    run_scenario(&loaded, &opts, &mut |_, _| {})
        .map(|_| ())
        .map_err(|e| e.to_string())
}

fn read(path: &Path) -> RecordBatch {
    let r = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = r.map(Result::unwrap).collect();
    arrow_select_concat(&batches)
}

fn arrow_select_concat(b: &[RecordBatch]) -> RecordBatch {
    assert_eq!(b.len(), 1, "small tables are one batch");
    b[0].clone()
}

fn f64s<'a>(b: &'a RecordBatch, name: &str) -> &'a Float64Array {
    b.column_by_name(name)
        .unwrap()
        .as_any()
        .downcast_ref()
        .unwrap()
}

/// Strict FIFO on one 4-GPU node (as in hand_computed.rs, J3 at 10.5 s):
/// J1 0–100, J2 (4 GPUs) 100–150, J3 150–170.
/// J2: wait 100, turnaround 150, run 50 → stretch 3, bounded slowdown 150/50 = 3.
/// J3: wait 150 − 10.5 = 139.5, turnaround 159.5, run 20 → stretch 7.975,
/// bounded slowdown 159.5 / max(20, 10) = 7.975.
#[test]
fn jobs_parquet_holds_the_csv_values_with_the_documented_types() {
    let dir = tempfile::tempdir().unwrap();
    run_into(dir.path(), SCENARIO).unwrap();
    let out = dir.path().join("out");
    let jobs = read(&out.join("jobs.parquet"));
    assert_eq!(jobs.schema(), tables::jobs_schema());
    assert_eq!(jobs.num_rows(), 3);
    let names: &StringArray = jobs
        .column_by_name("name")
        .unwrap()
        .as_any()
        .downcast_ref()
        .unwrap();
    let row = |n: &str| (0..3).find(|&i| names.value(i) == n).unwrap();
    let (j2, j3) = (row("J2"), row("J3"));
    let start = f64s(&jobs, "starting_time");
    let wait = f64s(&jobs, "waiting_time");
    let stretch = f64s(&jobs, "stretch");
    let bsld = f64s(&jobs, "bounded_slowdown");
    assert_eq!((start.value(j2), wait.value(j2)), (100.0, 100.0));
    assert_eq!((stretch.value(j2), bsld.value(j2)), (3.0, 3.0));
    assert_eq!(f64s(&jobs, "submission_time").value(j3), 10.5);
    assert_eq!((start.value(j3), wait.value(j3)), (150.0, 139.5));
    assert_eq!((stretch.value(j3), bsld.value(j3)), (7.975, 7.975));
    // Never preempted, no time limit: nulls where the CSV is empty.
    assert!(f64s(&jobs, "requested_time").is_null(j3));
    let gpus: &Int64Array = jobs
        .column_by_name("num_gpu")
        .unwrap()
        .as_any()
        .downcast_ref()
        .unwrap();
    assert_eq!(gpus.value(j2), 4);
    let measured: &BooleanArray = jobs
        .column_by_name("measured")
        .unwrap()
        .as_any()
        .downcast_ref()
        .unwrap();
    assert!(measured.value(j3));

    // Every cell equals jobs.csv's: text for text (empty = null), numbers parsed.
    let mut csv = csv::Reader::from_path(out.join("jobs.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    let schema = jobs.schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(header, names);
    for (i, rec) in csv.records().enumerate() {
        let rec = rec.unwrap();
        for (c, text) in rec.iter().enumerate() {
            let col = jobs.column(c);
            let name = &header[c];
            if text.is_empty() && name != "name" {
                assert!(col.is_null(i), "{name} row {i}: empty in the CSV, not null");
                continue;
            }
            match col.data_type() {
                DataType::Int64 => {
                    let a: &Int64Array = col.as_any().downcast_ref().unwrap();
                    assert_eq!(a.value(i), text.parse::<i64>().unwrap(), "{name}");
                }
                DataType::Float64 => {
                    let a: &Float64Array = col.as_any().downcast_ref().unwrap();
                    let v: f64 = text.parse().unwrap();
                    // Ratios are rounded to 6 decimals in the CSV; the rest is exact.
                    let tol = if name == "stretch" || name == "bounded_slowdown" {
                        5e-7
                    } else {
                        0.0
                    };
                    assert!(
                        (a.value(i) - v).abs() <= tol,
                        "{name} row {i}: {} vs {text}",
                        a.value(i)
                    );
                }
                DataType::Boolean => {
                    let a: &BooleanArray = col.as_any().downcast_ref().unwrap();
                    assert_eq!(a.value(i), text == "1", "{name}");
                }
                _ => {
                    let a: &StringArray = col.as_any().downcast_ref().unwrap();
                    assert_eq!(a.value(i), text, "{name}");
                }
            }
        }
    }

    // timeseries: every column Float64, the CSV's values; 170 s in 50 s intervals → 4 rows.
    let ts = read(&out.join("timeseries.parquet"));
    assert_eq!(ts.num_rows(), 4);
    let mut csv = csv::Reader::from_path(out.join("timeseries.csv")).unwrap();
    let header: Vec<String> = csv.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(ts.num_columns(), header.len());
    for (i, rec) in csv.records().enumerate() {
        for (c, text) in rec.unwrap().iter().enumerate() {
            assert_eq!(ts.schema().field(c).name(), &header[c]);
            let a: &Float64Array = ts.column(c).as_any().downcast_ref().unwrap();
            if text.is_empty() {
                assert!(a.is_null(i), "{} row {i}", header[c]);
            } else {
                let v: f64 = text.parse().unwrap();
                assert!((a.value(i) - v).abs() <= 5e-5, "{} row {i}", header[c]);
            }
        }
    }
    // First interval [0, 50): J1 holds 2 of 4 GPUs → 2.000 allocated, occupancy 0.5.
    assert_eq!(f64s(&ts, "time_s").value(0), 0.0);
    assert_eq!(f64s(&ts, "allocated_gpus").value(0), 2.0);
    assert_eq!(f64s(&ts, "occupancy").value(0), 0.5);
}

#[test]
fn the_same_run_writes_the_same_parquet_bytes() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    run_into(a.path(), SCENARIO).unwrap();
    run_into(b.path(), SCENARIO).unwrap();
    for f in ["jobs.parquet", "timeseries.parquet"] {
        let x = std::fs::read(a.path().join("out").join(f)).unwrap();
        let y = std::fs::read(b.path().join("out").join(f)).unwrap();
        assert!(x == y, "{f} differs between two identical runs");
    }
}

#[test]
fn parquet_alone_writes_no_csv() {
    let dir = tempfile::tempdir().unwrap();
    let toml = SCENARIO.replace(
        r#"outputs = ["csv", "parquet"]"#,
        r#"outputs = ["parquet"]"#,
    );
    run_into(dir.path(), &toml).unwrap();
    let out = dir.path().join("out");
    assert!(out.join("jobs.parquet").exists() && out.join("timeseries.parquet").exists());
    assert!(!out.join("jobs.csv").exists() && !out.join("timeseries.csv").exists());
}

#[test]
fn bad_outputs_name_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let e = run_into(dir.path(), &SCENARIO.replace(r#"["csv", "parquet"]"#, "[]")).unwrap_err();
    assert!(
        e.contains("`metrics.outputs`: must name at least one format"),
        "{e}"
    );
    let e = run_into(
        dir.path(),
        &SCENARIO.replace(r#"["csv", "parquet"]"#, r#"["csv", "csv"]"#),
    )
    .unwrap_err();
    assert!(
        e.contains("`metrics.outputs[1]`: `csv` is listed twice"),
        "{e}"
    );
    let e = run_into(
        dir.path(),
        &SCENARIO.replace(r#"["csv", "parquet"]"#, r#"["xlsx"]"#),
    )
    .unwrap_err();
    assert!(e.contains("xlsx") && e.contains("line 16"), "{e}");
}

#[test]
fn cli_format_flag_picks_the_outputs_and_rejects_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let bin = env!("CARGO_BIN_EXE_fleetsim");
    let out = dir.path().join("o");
    let s = std::process::Command::new(bin)
        .args(["run", "--quiet", "--format", "parquet", "--out"])
        .arg(&out)
        .status()
        .unwrap();
    assert!(s.success());
    assert!(out.join("jobs.parquet").exists() && !out.join("jobs.csv").exists());
    let o = std::process::Command::new(bin)
        .args(["run", "--quiet", "--format", "xlsx", "--out"])
        .arg(dir.path().join("p"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown output format `xlsx`"));
}
