//! `fleetsim trace inspect` and `fleetsim trace convert`: check how a trace reads before
//! trusting a run, and turn any readable trace into the native format.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Subcommand;
use serde::Deserialize;

use crate::report::atomic::AtomicFile;
use crate::scenario::TraceFormat;
use crate::workload::inspect::{inspect, Inspection};
use crate::workload::native::{NativeFormat, NativeWriter};
use crate::workload::slurm_sacct::SacctOptions;
use crate::workload::{open_trace_with, JobStream};

/// The `sacct` reader's options of `trace inspect` and `trace convert`.
#[derive(Debug, clap::Args)]
pub struct SacctArgs {
    /// `slurm-sacct` without a header line (`sacct --noheader`): its `--format` list.
    #[arg(long, value_name = "LIST")]
    sacct_format: Option<String>,
    /// `slurm-sacct` written with `sacct --delimiter=TEXT`: that delimiter (default `|`).
    #[arg(long, value_name = "TEXT")]
    sacct_delimiter: Option<String>,
    /// `slurm-sacct`: refuse the file at a row whose field count is not the header's
    /// (default: repair it when its fields place it, else skip it and count it).
    #[arg(long)]
    strict: bool,
}

/// The `--sacct-*` options as reader options.
///
/// # Errors
/// Bad input (exit 2) when one is given for another format, or is not a field list or a
/// delimiter.
fn sacct_options(format: TraceFormat, a: &SacctArgs) -> Result<SacctOptions> {
    let bad = |m: String| -> anyhow::Error { crate::study::BadInput(m).into() };
    let given = [
        (a.sacct_format.is_some(), "--sacct-format"),
        (a.sacct_delimiter.is_some(), "--sacct-delimiter"),
        (a.strict, "--strict"),
    ];
    if let Some((_, flag)) = given.iter().find(|g| g.0) {
        if format != TraceFormat::SlurmSacct {
            return Err(bad(format!("{flag} is only for --format slurm-sacct")));
        }
    }
    let mut o = SacctOptions::default();
    if let Some(l) = &a.sacct_format {
        o = o
            .format_list(l)
            .map_err(|m| bad(format!("--sacct-format: {m}")))?;
    }
    if let Some(d) = &a.sacct_delimiter {
        o = o
            .with_delimiter(d)
            .map_err(|m| bad(format!("--sacct-delimiter: {m}")))?;
    }
    o.strict = a.strict;
    Ok(o)
}

/// Parses a trace format name as the scenario file spells it (`swf`, `alibaba-dlrm`, …).
///
/// # Errors
/// A message listing the valid names.
pub fn parse_format(name: &str) -> Result<TraceFormat, String> {
    use serde::de::IntoDeserializer;
    let de: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
        name.into_deserializer();
    TraceFormat::deserialize(de).map_err(|e| e.to_string())
}

/// `fleetsim trace …` commands.
#[derive(Debug, Subcommand)]
pub enum TraceCommand {
    /// Read a whole trace and print what it reads as: jobs, skipped rows by reason, the
    /// reader's notes, time span, size and runtime distributions, offered load over time and
    /// per tenant.
    Inspect {
        /// The trace file.
        file: PathBuf,
        /// Its format, as a scenario names it (`native`, `swf`, `philly`, …).
        #[arg(long, value_parser = parse_format)]
        format: TraceFormat,
        /// Load the whole file and sort it by submit time (for unsorted files).
        #[arg(long)]
        sort: bool,
        /// The `sacct` reader's options.
        #[command(flatten)]
        sacct: SacctArgs,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Offered-load bucket width, seconds (default: a day, an hour or a minute, by span).
        #[arg(long)]
        bucket_s: Option<u64>,
        /// Tenants listed in the table (by jobs, most first; all in JSON).
        #[arg(long, default_value_t = 20)]
        top: usize,
    },
    /// Convert a trace to fleetsim's native format, written atomically: `--out` names a
    /// `.csv`, `.jsonl` or `.ndjson` file (gzip output, `.gz`, is not supported).
    Convert {
        /// The trace file.
        file: PathBuf,
        /// Its format.
        #[arg(long, value_parser = parse_format)]
        format: TraceFormat,
        /// The output: `*.csv`, `*.jsonl` or `*.ndjson` (not `.gz`).
        #[arg(long)]
        out: PathBuf,
        /// Load the whole file and sort it by submit time (for unsorted files).
        #[arg(long)]
        sort: bool,
        /// The `sacct` reader's options.
        #[command(flatten)]
        sacct: SacctArgs,
    },
}

/// Runs a `trace` command.
///
/// # Errors
/// Bad input (unreadable trace, a bad row naming file, line and field) or an output error.
pub fn run(cmd: TraceCommand) -> Result<()> {
    match cmd {
        TraceCommand::Inspect {
            file,
            format,
            sort,
            sacct,
            json,
            bucket_s,
            top,
        } => {
            let opts = sacct_options(format, &sacct)?;
            let mut stream = open_trace_with(format, &file, sort, &opts)?;
            let i = inspect(stream.as_mut(), bucket_s)?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&i)?);
            } else {
                out!("{}", render(&file.display().to_string(), format, &i, top));
            }
            Ok(())
        }
        TraceCommand::Convert {
            file,
            format,
            out,
            sort,
            sacct,
        } => {
            let opts = sacct_options(format, &sacct)?;
            let nf = NativeFormat::from_path(&out)
                .filter(|_| !out.to_string_lossy().ends_with(".gz"))
                .ok_or_else(|| {
                    crate::study::BadInput(format!(
                        "{}: the output must be named *.csv, *.jsonl or *.ndjson (gzip output is not supported)",
                        out.display()
                    ))
                })?;
            if let (Ok(a), Ok(b)) = (file.canonicalize(), out.canonicalize()) {
                if a == b {
                    return Err(crate::study::BadInput(format!(
                        "{}: the output is the input trace; writing it would overwrite the trace: choose another --out",
                        out.display()
                    ))
                    .into());
                }
            }
            let mut stream: Box<dyn JobStream> = open_trace_with(format, &file, sort, &opts)?;
            let f = AtomicFile::create(&out).with_context(|| format!("{}", out.display()))?;
            let mut w = NativeWriter::new(f, nf)?;
            let mut n: u64 = 0;
            for job in &mut *stream {
                w.write(&job?)?;
                n += 1;
            }
            w.finish()?.commit()?;
            let skipped = stream.skipped();
            errln!(
                "wrote {} to {}{}",
                crate::report::table::count(n, "job"),
                out.display(),
                if skipped.is_empty() {
                    String::new()
                } else {
                    format!("; skipped rows {skipped:?}")
                }
            );
            Ok(())
        }
    }
}

/// The kebab-case name of a format, as scenarios spell it ([`TraceFormat::name`]).
pub fn format_name(format: TraceFormat) -> String {
    format.name()
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |v| format!("{v}"))
}

/// The human-readable report of an inspection.
pub fn render(file: &str, format: TraceFormat, i: &Inspection, top: usize) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "trace {file} ({})", format_name(format));
    let _ = writeln!(
        o,
        "jobs {}  (normal {}, pre-existing {}, never ran {}; with recorded start {}){}",
        i.jobs,
        i.recorded.normal,
        i.recorded.pre_existing,
        i.recorded.never_ran,
        i.recorded.with_recorded_start,
        if i.elastic == 0 {
            String::new()
        } else {
            format!(
                "\nelastic {}  (sized while they run by the scenario's [elastic] table: left out of the sizes, run times, GPU-hours and load below)",
                i.elastic
            )
        }
    );
    let _ = writeln!(o, "skipped rows {}", i.skipped_total);
    for (k, v) in &i.skipped {
        let _ = writeln!(o, "  {k:<32} {v}");
    }
    if !i.notes.is_empty() {
        let _ = writeln!(o, "notes");
        for (k, v) in &i.notes {
            let _ = writeln!(o, "  {k:<32} {v}");
        }
    }
    let _ = writeln!(
        o,
        "submit span {} … {} s; last end {} s",
        opt(i.first_submit_s),
        opt(i.last_submit_s),
        opt(i.last_end_s)
    );
    let _ = writeln!(o, "size (GPUs per job): jobs");
    for s in &i.size_gpus {
        let _ = writeln!(o, "  {:>8}: {}", s.gpus, s.jobs);
    }
    let _ = writeln!(o, "gang size (tasks): jobs");
    for (k, v) in &i.tasks {
        let _ = writeln!(o, "  {k:>8}: {v}");
    }
    let r = &i.runtime_s;
    let _ = writeln!(
        o,
        "runtime s (jobs that ran: {}): min {} p10 {} p25 {} p50 {} p75 {} p90 {} p99 {} max {} mean {}; zero {}",
        r.dist.count,
        opt(r.min),
        opt(r.p10),
        opt(r.p25),
        opt(r.dist.p50),
        opt(r.p75),
        opt(r.dist.p90),
        opt(r.dist.p99),
        opt(r.dist.max),
        opt(r.dist.mean.map(|m| (m * 10.0).round() / 10.0)),
        r.zero
    );
    let _ = writeln!(
        o,
        "GPU-hours {:.1}; peak GPUs demanded (no queueing) {}",
        i.gpu_hours, i.peak_gpus
    );
    let _ = writeln!(
        o,
        "offered load per {} s bucket (start s: submitted, mean GPUs)",
        i.bucket_s
    );
    for b in &i.offered_load {
        let _ = writeln!(
            o,
            "  {:>10}: {:>7} {:>10.1}",
            b.start_s, b.submitted, b.mean_gpus
        );
    }
    let mut tenants: Vec<(&String, &crate::workload::inspect::TenantStats)> =
        i.tenants.iter().collect();
    tenants.sort_by(|a, b| b.1.jobs.cmp(&a.1.jobs).then(a.0.cmp(b.0)));
    let _ = writeln!(
        o,
        "tenants {} (top {} by jobs: jobs, GPU-hours)",
        tenants.len(),
        top.min(tenants.len())
    );
    for (name, t) in tenants.into_iter().take(top) {
        let _ = writeln!(o, "  {name:<24} {:>9} {:>12.1}", t.jobs, t.gpu_hours);
    }
    o
}
