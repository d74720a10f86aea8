//! What the service-process tests (`restart.rs`, `ha.rs`) share: the event stream and its
//! uninterrupted run, spawning `fleetsim-scheduler serve`, seeded random numbers, and the
//! HTTP calls that send a batch and read every decision back.
//!
//! The stream: the first [`EVENTS`] events kueue-cohorts records (cohorts, borrowing, DRF
//! and preemption), in batches of [`BATCH`]. The uninterrupted run is the same batches
//! applied in process to the scenario's twin; it is itself checked against the simulator's
//! decisions (a prefix of the event stream gives a prefix of the decision list).

// Each test crate that includes this module uses part of it.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use fleetsim::run::{run_scenario_live, RunOptions};
use fleetsim::scenario::{self, TraceDir};
use fleetsim_policies::live::{Decision, Event};
use fleetsim_scheduler::service::{Batch, DecisionsPage, Service};

/// Events of the stream.
pub const EVENTS: usize = 3_000;
/// Events per batch.
pub const BATCH: usize = 50;

/// The scenario the services run: kueue-cohorts.
pub fn spec() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../scenarios/kueue-cohorts.toml")
}

/// Run options of the spec: no trace folder (kueue-cohorts' workload is synthetic), nothing
/// written.
pub fn opts() -> RunOptions {
    RunOptions {
        seed: None,
        trace_dir: TraceDir(PathBuf::from("/nonexistent")),
        out_dir: None,
        keep_rows: false,
    }
}

/// The stream in numbered batches and the uninterrupted run's decisions.
pub struct Stream {
    pub batches: Vec<Batch>,
    pub reference: Vec<Decision>,
}

/// The stream, made once per test binary (blocking: the simulator runs the scenario).
pub fn stream() -> &'static Stream {
    static S: OnceLock<Stream> = OnceLock::new();
    S.get_or_init(|| {
        let loaded = scenario::load(&spec()).expect("scenario loads");
        let (out, twin) = run_scenario_live(&loaded, &opts()).expect("scenario runs");
        let rec = out.result.live.expect("recorder on");
        let events: Vec<Event> = rec.events.into_iter().take(EVENTS).collect();
        assert_eq!(events.len(), EVENTS);
        let batches = Batch::numbered(&events, BATCH);
        let svc = Service::new(twin);
        let mut svc = svc.lock().unwrap();
        let mut reference = Vec::new();
        for b in &batches {
            reference.extend(svc.apply(b).expect("recorded events apply").plain());
        }
        assert!(reference.len() > 500, "only {} decisions", reference.len());
        assert_eq!(reference[..], rec.decisions[..reference.len()]);
        Stream { batches, reference }
    })
}

/// Spawns `fleetsim-scheduler serve --listen 127.0.0.1:0 --spec <spec()>` with `args` after
/// them, its stderr appended to `stderr`; waits for its first line (`listening on URL`) and
/// returns the child and the URL. Panics with the stderr when it does not start.
pub fn serve<I, S>(args: I, stderr: &Path) -> (Child, String)
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let err = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(stderr)
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_fleetsim-scheduler"))
        .args(["serve", "--listen", "127.0.0.1:0", "--spec"])
        .arg(spec())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err))
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let base = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| {
            let e = std::fs::read_to_string(stderr).unwrap_or_default();
            panic!("serve did not start: {line:?}; stderr: {e}")
        })
        .to_string();
    (child, base)
}

/// splitmix64: the tests' seeded random numbers.
pub fn next(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// POSTs batch `b` to `base`'s `/v1/events` (giving up after `timeout` when one is given);
/// returns the status and the body.
pub async fn send(
    c: &reqwest::Client,
    base: &str,
    b: &Batch,
    timeout: Option<Duration>,
) -> reqwest::Result<(u16, String)> {
    let mut req = c.post(format!("{base}/v1/events")).json(b);
    if let Some(t) = timeout {
        req = req.timeout(t);
    }
    let r = req.send().await?;
    let status = r.status().as_u16();
    Ok((status, r.text().await?))
}

/// Every decision `base` serves (`GET /v1/decisions`, pages of 10,000), each page starting
/// where the last ended; the count must equal the total the service reports.
pub async fn all_decisions(c: &reqwest::Client, base: &str) -> Vec<Decision> {
    let mut out = Vec::new();
    loop {
        let page: DecisionsPage = c
            .get(format!(
                "{base}/v1/decisions?from={}&limit=10000",
                out.len()
            ))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(page.first_seq, out.len() as u64);
        let n = page.decisions.len();
        out.extend(page.decisions.into_iter().map(|d| d.decision));
        if n == 0 || out.len() as u64 >= page.total {
            assert_eq!(page.total, out.len() as u64);
            return out;
        }
    }
}
