//! The service's Prometheus metrics, served at `GET /metrics` (text exposition format; open
//! like `/healthz`, as the extender's are: scrape it from inside the cluster's network).
//!
//! | metric | type | labels | what |
//! |---|---|---|---|
//! | `fleetsim_scheduler_events_total` | counter | `type` | events applied from accepted batches |
//! | `fleetsim_scheduler_decisions_total` | counter | `type` | decisions made (`admit`, `preempt`, `reject`) |
//! | `fleetsim_scheduler_batches_total` | counter | `outcome` | `POST /v1/events` batches by answer: `accepted`, `refused_event` (422 after the log), `invalid` (422, nothing logged), `forbidden` (403), `duplicate` (409), `log_error`, `panicked` (500) |
//! | `fleetsim_scheduler_pending_jobs` | gauge | `queue`, `reason` | pending jobs by queue name and reason as of the last pass (set at each scrape) |
//! | `fleetsim_scheduler_pass_seconds` | histogram | | time of each `pass` event's scheduling pass |
//! | `fleetsim_scheduler_request_seconds` | histogram | `route`, `code` | time from a request's arrival at the router to its answer |
//! | `fleetsim_scheduler_log_append_seconds` | histogram | | appending a batch to the log, `fsync` included |
//! | `fleetsim_scheduler_snapshot_seconds` | histogram | | writing a snapshot (the service answers nothing meanwhile) |
//! | `fleetsim_scheduler_snapshot_bytes` | gauge | | size of the last snapshot written |
//! | `fleetsim_scheduler_log_bytes` | gauge | | bytes of the log's segments on disk |
//! | `fleetsim_scheduler_log_records` | gauge | | records in the log (deleted segments' included) |
//! | `fleetsim_scheduler_log_segments` | gauge | | segment files |
//! | `fleetsim_scheduler_records_set_aside` | gauge | | log records set aside (`<wal>.quarantine`) |

use prometheus::{
    Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// Latency buckets, seconds: 0.5 ms to 10 s.
const BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// The service's metrics (see the module docs), in their own registry.
pub struct Metrics {
    registry: Registry,
    /// Events applied from accepted batches, by type.
    pub events: IntCounterVec,
    /// Decisions made, by type.
    pub decisions: IntCounterVec,
    /// Batches by answer.
    pub batches: IntCounterVec,
    /// Pending jobs by queue and reason.
    pub pending_jobs: IntGaugeVec,
    /// Scheduling pass time.
    pub pass_seconds: Histogram,
    /// Request time by route and status code.
    pub request_seconds: HistogramVec,
    /// Log append (and fsync) time.
    pub log_append_seconds: Histogram,
    /// Snapshot write time.
    pub snapshot_seconds: Histogram,
    /// Last snapshot's size.
    pub snapshot_bytes: IntGauge,
    /// Log bytes on disk.
    pub log_bytes: IntGauge,
    /// Log records.
    pub log_records: IntGauge,
    /// Log segment files.
    pub log_segments: IntGauge,
    /// Records set aside.
    pub records_set_aside: IntGauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Fresh metrics, registered.
    ///
    /// # Panics
    /// Never in practice: the names and labels are constants (a registration error would
    /// be a defect caught by the tests).
    pub fn new() -> Metrics {
        let r = Registry::new();
        let counter = |name: &str, help: &str, label: &str| {
            let c = IntCounterVec::new(Opts::new(name, help), &[label]).expect("valid metric");
            r.register(Box::new(c.clone())).expect("registered once");
            c
        };
        let gauge = |name: &str, help: &str| {
            let g = IntGauge::new(name, help).expect("valid metric");
            r.register(Box::new(g.clone())).expect("registered once");
            g
        };
        let histogram = |name: &str, help: &str| {
            let h = Histogram::with_opts(HistogramOpts::new(name, help).buckets(BUCKETS.to_vec()))
                .expect("valid metric");
            r.register(Box::new(h.clone())).expect("registered once");
            h
        };
        let events = counter(
            "fleetsim_scheduler_events_total",
            "Events applied from accepted batches, by type.",
            "type",
        );
        let decisions = counter(
            "fleetsim_scheduler_decisions_total",
            "Decisions made, by type.",
            "type",
        );
        let batches = counter(
            "fleetsim_scheduler_batches_total",
            "POST /v1/events batches by answer.",
            "outcome",
        );
        let pending_jobs = IntGaugeVec::new(
            Opts::new(
                "fleetsim_scheduler_pending_jobs",
                "Pending jobs by queue and reason, as of the last pass.",
            ),
            &["queue", "reason"],
        )
        .expect("valid metric");
        r.register(Box::new(pending_jobs.clone()))
            .expect("registered once");
        let request_seconds = HistogramVec::new(
            HistogramOpts::new(
                "fleetsim_scheduler_request_seconds",
                "Request time, seconds, by route and status code.",
            )
            .buckets(BUCKETS.to_vec()),
            &["route", "code"],
        )
        .expect("valid metric");
        r.register(Box::new(request_seconds.clone()))
            .expect("registered once");
        Metrics {
            events,
            decisions,
            batches,
            pending_jobs,
            pass_seconds: histogram(
                "fleetsim_scheduler_pass_seconds",
                "Scheduling pass time, seconds.",
            ),
            request_seconds,
            log_append_seconds: histogram(
                "fleetsim_scheduler_log_append_seconds",
                "Log append time (fsync included), seconds.",
            ),
            snapshot_seconds: histogram(
                "fleetsim_scheduler_snapshot_seconds",
                "Snapshot write time, seconds.",
            ),
            snapshot_bytes: gauge(
                "fleetsim_scheduler_snapshot_bytes",
                "Size of the last snapshot written, bytes.",
            ),
            log_bytes: gauge(
                "fleetsim_scheduler_log_bytes",
                "Bytes of the log's segments on disk.",
            ),
            log_records: gauge(
                "fleetsim_scheduler_log_records",
                "Records in the log (deleted segments' included).",
            ),
            log_segments: gauge(
                "fleetsim_scheduler_log_segments",
                "The log's segment files.",
            ),
            records_set_aside: gauge(
                "fleetsim_scheduler_records_set_aside",
                "Log records set aside in the quarantine file.",
            ),
            registry: r,
        }
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut buf = Vec::new();
        // Encoding into a Vec fails only on a malformed family, which registration rules out.
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut buf);
        String::from_utf8(buf).unwrap_or_default()
    }
}
