//! What the reader knows of `sacct`'s fields beyond the ones it maps: which hold free text
//! (and so may hold the delimiter or a newline, since `sacct --parsable2` never escapes
//! them), and what the others look like, so that a row with too many fields can be split
//! back into its columns ([`super::records`]).
//!
//! The names are those of `sacct --helpformat` in Slurm 17.11 to 24.05 (`--format=ALL`
//! prints them all); any case is accepted. A field not listed here is read as opaque text
//! that holds no delimiter.

use super::parse_time;

/// How one column's values look.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    /// Free text: may hold the delimiter and newlines (a job name, a submit line, a
    /// comment, a constraint expression such as `intel|amd`).
    Free,
    /// Opaque text without the delimiter (an account, a node list).
    Other,
    /// A timestamp, `Unknown`, `None` or empty.
    Time,
    /// Digits or empty.
    Count,
    /// A signed integer or empty.
    Integer,
    /// `[D-]HH:MM:SS[.frac]`, `MM:SS[.frac]`, `UNLIMITED`, `Partition_Limit`, `INVALID` or
    /// empty.
    Duration,
    /// `name=value,…` or empty.
    Tres,
    /// A state word (`COMPLETED`, `CANCELLED by 1000`).
    State,
    /// A job id: digits first (`123`, `123_4`, `123+0.batch`, `123_[1-5]`).
    JobId,
    /// `N:M` or empty.
    ExitCode,
    /// A memory amount with an optional unit and `c`/`n` suffix, or empty.
    Mem,
}

/// Fields that hold free text.
const FREE: [&str; 14] = [
    "AdminComment",
    "Comment",
    "Constraints",
    "Container",
    "Extra",
    "FailedNode",
    "JobName",
    "Licenses",
    "StdErr",
    "StdIn",
    "StdOut",
    "SubmitLine",
    "SystemComment",
    "WorkDir",
];

const TIMES: [&str; 4] = ["Submit", "Start", "End", "Eligible"];

const COUNTS: [&str; 18] = [
    "AllocCPUS",
    "AllocNodes",
    "AssocID",
    "ConsumedEnergyRaw",
    "CPUTimeRAW",
    "DBIndex",
    "ElapsedRaw",
    "GID",
    "NCPUS",
    "NNodes",
    "NTasks",
    "QOSRAW",
    "ReqCPUS",
    "ReqNodes",
    "ReservationId",
    "ResvCPURAW",
    "TimelimitRaw",
    "UID",
];

const DURATIONS: [&str; 12] = [
    "CPUTime",
    "Elapsed",
    "Planned",
    "PlannedCPU",
    "Reserved",
    "ResvCPU",
    "Suspended",
    "SystemCPU",
    "Timelimit",
    "TotalCPU",
    "UserCPU",
    "AveCPU",
];

/// The kind of the field named `name` (any case).
pub(super) fn kind(name: &str) -> Kind {
    let is = |list: &[&str]| list.iter().any(|f| f.eq_ignore_ascii_case(name));
    if is(&FREE) {
        Kind::Free
    } else if is(&TIMES) {
        Kind::Time
    } else if is(&COUNTS) {
        Kind::Count
    } else if is(&DURATIONS) {
        Kind::Duration
    } else if is(&["AllocTRES", "ReqTRES"]) {
        Kind::Tres
    } else if is(&["State"]) {
        Kind::State
    } else if is(&["JobID", "JobIDRaw"]) {
        Kind::JobId
    } else if is(&["ExitCode", "DerivedExitCode"]) {
        Kind::ExitCode
    } else if is(&["ReqMem"]) {
        Kind::Mem
    } else if is(&["Priority"]) {
        Kind::Integer
    } else {
        Kind::Other
    }
}

/// Whether `name` is a plausible `sacct` field name (a header cell): letters, digits and
/// `_`, a letter first.
pub(super) fn is_field_name(name: &str) -> bool {
    let mut b = name.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic())
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// Whether `v` could be a value of a column of kind `k` (a shape check, not a parse: used
/// to place the fields of a row with too many).
pub(super) fn plausible(k: Kind, v: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match k {
        Kind::Free | Kind::Other => true,
        Kind::Time => parse_time(v).is_ok(),
        Kind::Count => v.is_empty() || digits(v),
        Kind::Integer => v.is_empty() || digits(v.strip_prefix('-').unwrap_or(v)),
        Kind::Duration => {
            v.is_empty()
                || matches!(v, "UNLIMITED" | "Partition_Limit" | "INVALID")
                || duration_shape(v)
        }
        Kind::Tres => {
            v.is_empty()
                || v.split(',').all(|item| {
                    item.split_once('=')
                        .is_some_and(|(name, _)| !name.is_empty() && !name.contains(' '))
                })
        }
        Kind::State => {
            let (word, rest) = v.split_once(' ').unwrap_or((v, ""));
            !word.is_empty()
                && word.bytes().all(|b| b.is_ascii_uppercase() || b == b'_')
                && (rest.is_empty() || rest.strip_prefix("by ").is_some_and(digits))
        }
        Kind::JobId => {
            v.bytes().next().is_some_and(|b| b.is_ascii_digit())
                && !v.bytes().any(|b| b.is_ascii_whitespace() || b == b'|')
        }
        Kind::ExitCode => {
            v.is_empty()
                || v.split_once(':')
                    .is_some_and(|(a, b)| digits(a) && digits(b))
        }
        Kind::Mem => {
            let t = v.trim_end_matches(['c', 'n']);
            let t = t.trim_end_matches(['K', 'M', 'G', 'T', 'P']);
            v.is_empty() || (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
        }
    }
}

/// `[D-]HH:MM:SS`, `HH:MM:SS`, `MM:SS`, each with an optional `.frac`.
fn duration_shape(v: &str) -> bool {
    let rest = match v.split_once('-') {
        Some((d, r)) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()) => r,
        Some(_) => return false,
        None => v,
    };
    let (hms, frac) = rest.split_once('.').unwrap_or((rest, "0"));
    let parts: Vec<&str> = hms.split(':').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .chain(std::iter::once(&frac))
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_shapes() {
        assert_eq!(kind("jobname"), Kind::Free);
        assert_eq!(kind("SUBMIT"), Kind::Time);
        assert_eq!(kind("Cluster"), Kind::Other);
        assert!(plausible(Kind::State, "CANCELLED by 89200431"));
        assert!(plausible(Kind::State, "OUT_OF_MEMORY"));
        assert!(!plausible(Kind::State, "#ERROR:2022"));
        assert!(!plausible(Kind::State, "cpu-b"));
        assert!(plausible(Kind::Duration, "118-17:38:31"));
        assert!(plausible(Kind::Duration, "00:01.277"));
        assert!(!plausible(Kind::Duration, "0 days 23:33:25"));
        assert!(plausible(Kind::Mem, "2800Mc") && plausible(Kind::Mem, "0n"));
        assert!(!plausible(Kind::Mem, "100Mcd") && !plausible(Kind::Mem, "cpu-a"));
        assert!(plausible(Kind::Tres, "billing=12,cpu=12,mem=33600M,node=1"));
        assert!(!plausible(Kind::Tres, " Name003"));
        assert!(plausible(Kind::JobId, "4744528_255") && !plausible(Kind::JobId, "Job"));
        assert!(plausible(Kind::Count, "") && !plausible(Kind::Count, "4k"));
        assert!(plausible(Kind::Integer, "-5"));
        assert!(is_field_name("JobIDRaw") && !is_field_name("4101") && !is_field_name(""));
    }
}
