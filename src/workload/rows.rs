//! The streaming machinery the readers share: a format supplies a `RowSource` that turns
//! input rows into jobs or skips; [`TraceStream`] counts skips by reason, keeps the
//! reader's notes, checks the submit order and stops after the first error.

use std::path::{Path, PathBuf};

use fleetsim_policies::SimTime;

use super::{JobSpec, JobStream, Skipped, TraceError, TraceStart, VecStream};

/// What one input row became.
pub(crate) enum Parsed {
    /// A job.
    Job(Box<JobSpec>),
    /// A row skipped by the format's own convention, under a snake_case reason.
    Skip(&'static str),
}

/// A format's row source.
pub(crate) trait RowSource: Send {
    /// The next row and its 1-based line (the line where the record starts), `None` at the
    /// end. `notes` collects observations about kept rows (statuses, censored ends, fields
    /// read but not simulated), by snake_case label.
    fn next_row(&mut self, notes: &mut Skipped) -> Option<Result<(u64, Parsed), TraceError>>;

    /// The absolute time of t = 0 as far as read (see [`JobStream::trace_start`]).
    fn trace_start(&self) -> Option<TraceStart> {
        None
    }
}

/// Adds one to `label` in a counter map.
pub(crate) fn bump(map: &mut Skipped, label: impl Into<String>) {
    *map.entry(label.into()).or_insert(0) += 1;
}

/// A streaming reader over any of the formats built on a `RowSource`: jobs in file order,
/// each row read, converted and dropped before the next one is read, so memory does not
/// grow with the file.
///
/// Requires non-decreasing submit times (after each format's rules); a row whose submit is
/// earlier than the previous job's is an error naming its line and the format's submit
/// field, telling to sort (`sort = true` in a scenario, `--sort` on the command line, or
/// [`TraceStream::into_sorted`]). After the first error the stream ends.
pub struct TraceStream {
    path: PathBuf,
    src: Box<dyn RowSource>,
    order_field: &'static str,
    check_order: bool,
    last: Option<(SimTime, u64)>,
    skipped: Skipped,
    notes: Skipped,
    done: bool,
}

impl TraceStream {
    /// A stream over `src`, naming `order_field` when rows are out of order.
    pub(crate) fn new(
        path: &Path,
        src: Box<dyn RowSource>,
        order_field: &'static str,
    ) -> TraceStream {
        TraceStream {
            path: path.to_path_buf(),
            src,
            order_field,
            check_order: true,
            last: None,
            skipped: Skipped::new(),
            notes: Skipped::new(),
            done: false,
        }
    }

    /// Reads the whole input (any row order) and stably sorts it by (submit, row order).
    /// Memory grows with the number of jobs.
    ///
    /// # Errors
    /// The first row error.
    pub fn into_sorted(mut self) -> Result<VecStream, TraceError> {
        self.check_order = false;
        let jobs = self.by_ref().collect::<Result<Vec<_>, _>>()?;
        let start = self.src.trace_start();
        Ok(VecStream::new(jobs, self.skipped)
            .with_notes(self.notes)
            .with_start(start))
    }

    fn next_job(&mut self) -> Option<Result<JobSpec, TraceError>> {
        loop {
            let (line, parsed) = match self.src.next_row(&mut self.notes)? {
                Ok(x) => x,
                Err(e) => return Some(Err(e)),
            };
            let job = match parsed {
                Parsed::Job(j) => *j,
                Parsed::Skip(reason) => {
                    bump(&mut self.skipped, reason);
                    continue;
                }
            };
            if self.check_order {
                if let Some((prev, prev_line)) = self.last {
                    if job.submit < prev {
                        return Some(Err(TraceError::field(
                            &self.path,
                            line,
                            self.order_field,
                            format!(
                                "submit time {} is earlier than {} on line {prev_line}: the file \
                                 is not sorted by submit time; read it with sorting on \
                                 (`sort = true` in the scenario, `--sort` for `fleetsim trace`)",
                                job.submit, prev
                            ),
                        )));
                    }
                }
                self.last = Some((job.submit, line));
            }
            return Some(Ok(job));
        }
    }
}

impl Iterator for TraceStream {
    type Item = Result<JobSpec, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let item = self.next_job();
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        item
    }
}

impl JobStream for TraceStream {
    fn skipped(&self) -> Skipped {
        self.skipped.clone()
    }

    fn notes(&self) -> Skipped {
        self.notes.clone()
    }

    fn trace_start(&self) -> Option<TraceStart> {
        self.src.trace_start()
    }
}
