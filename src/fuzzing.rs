//! Fuzzing harness shared by the `cargo fuzz` targets in `fuzz/` and the stable seeded
//! mutation test (`tests/integration/fuzz_stable.rs`): feed arbitrary bytes to a reader and
//! consume everything it produces. The contract under test: **no input makes a reader
//! panic** — every bad input is an error naming file, line and field, or a counted skip.

use std::cell::RefCell;
use std::path::PathBuf;

use crate::scenario::TraceFormat;

thread_local! {
    static SCRATCH: RefCell<Option<tempfile_dir::Dir>> = const { RefCell::new(None) };
}

mod tempfile_dir {
    /// A per-thread scratch directory, removed on drop.
    pub struct Dir(pub std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// The per-thread scratch directory (under `/dev/shm` when it exists, else the temp dir).
fn scratch() -> PathBuf {
    SCRATCH.with(|s| {
        let mut s = s.borrow_mut();
        if s.is_none() {
            let base = if std::path::Path::new("/dev/shm").is_dir() {
                PathBuf::from("/dev/shm")
            } else {
                std::env::temp_dir()
            };
            let id = format!("{:?}", std::thread::current().id())
                .chars()
                .filter(char::is_ascii_alphanumeric)
                .collect::<String>();
            let dir = base.join(format!("fleetsim-fuzz-{}-{id}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("scratch directory");
            *s = Some(tempfile_dir::Dir(dir));
        }
        s.as_ref().expect("set").0.clone()
    })
}

/// The file name a format's input is written under (the readers choose encodings by name).
pub fn file_name(format: TraceFormat) -> &'static str {
    match format {
        TraceFormat::Native => "trace.csv",
        TraceFormat::AlibabaPai => "pai_task_table.csv",
        TraceFormat::Swf => "trace.swf",
        TraceFormat::PhillyRaw => "cluster_job_log",
        TraceFormat::SlurmSacct => "sacct.txt",
        _ => "trace.csv",
    }
}

/// Writes `data` as a trace of `format` and reads all of it, plain and sorted, then
/// inspects it. For `alibaba-pai`, the bytes before the first `\n---\n` are the job table
/// and the rest the task table. Errors are expected; a panic is a bug.
pub fn read_trace(format: TraceFormat, name: &str, data: &[u8]) {
    let dir = scratch();
    let path = dir.join(name);
    let body = if format == TraceFormat::AlibabaPai {
        let split = data.windows(5).position(|w| w == b"\n---\n");
        let (jobs, tasks) = match split {
            Some(i) => (&data[..i], &data[i + 5..]),
            None => (&b""[..], data),
        };
        if std::fs::write(dir.join("pai_job_table.csv"), jobs).is_err() {
            return;
        }
        tasks
    } else {
        data
    };
    if std::fs::write(&path, body).is_err() {
        return;
    }
    for sort in [false, true] {
        if let Ok(mut s) = crate::workload::open_trace(format, &path, sort) {
            for job in &mut *s {
                match job {
                    Ok(j) => {
                        let _ = j.shape.validate();
                    }
                    Err(e) => {
                        let _ = e.to_string();
                        break;
                    }
                }
            }
            let _ = (s.skipped(), s.notes());
        }
    }
    if let Ok(mut s) = crate::workload::open_trace(format, &path, false) {
        let _ = crate::workload::inspect::inspect(s.as_mut(), None);
    }
}

/// Parses `data` as a scenario file (TOML) and, when it validates, builds its fleet and
/// reads its workload with a trace directory that does not exist.
pub fn read_scenario(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let dir = scratch();
    if let Ok(loaded) = crate::scenario::parse(text, "fuzz.toml", dir.clone()) {
        // Building a fleet of billions of nodes is a resource limit, not a parsing bug.
        let nodes: u64 = loaded
            .scenario
            .fleet
            .cells
            .iter()
            .flat_map(|c| &c.nodes)
            .map(|g| {
                u64::from(g.count.unwrap_or(0))
                    + u64::from(g.racks.unwrap_or(0)) * 72
                    + g.names.as_ref().map_or(0, |n| n.len() as u64)
            })
            .sum();
        if nodes > 100_000 {
            return;
        }
        let trace_dir = crate::scenario::TraceDir(dir.join("no-such-dir"));
        let _ = crate::fleet::build::build_fleet(&loaded, &trace_dir);
        if let Ok(mut s) = crate::run::open_workload(&loaded, &trace_dir, 1) {
            for j in (&mut *s).take(1000) {
                if j.is_err() {
                    break;
                }
            }
        }
    }
}

/// Parses `data` as Kueue manifests (multi-document YAML) and maps a valid configuration onto
/// the scenario quota model ([`crate::scenario::kueue::KueueConfig::quota`]).
pub fn read_kueue(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(cfg) = crate::scenario::kueue::parse(text, std::path::Path::new("fuzz.yaml")) {
        let q = cfg.quota();
        let _ = (q.queues.len(), q.unsimulated.len());
    }
}
