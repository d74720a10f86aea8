//! Physical lines to `sacct` records. `sacct --parsable2` writes one record per line and
//! never escapes its delimiter, so a free-text field (a job name, a submit line with
//! `--wrap="env | grep SLURM"`, a constraint `intel|amd`) that holds the delimiter gives its
//! row too many fields, and one that holds a newline splits its row over several lines.
//!
//! # Repairs
//! * **Too many fields** (`k` for `n` columns): the `k − n` extra delimiters belong to the
//!   free-text columns ([`super::columns::Kind::Free`]). Every way of giving them to those
//!   columns that leaves every other column a plausible value of its kind (a timestamp, a
//!   count, a TRES list, a state word…; [`super::columns::plausible`]) is a reading of the
//!   row. Empty fields fit most columns, so the readings are ranked: the best ones place
//!   the most non-empty values in typed columns of their shape (the anchors). When all the
//!   best readings put the same text in every column the reader maps, the row is repaired
//!   (noted `repaired.delimiter_in_text`); otherwise it is skipped. The best readings are
//!   found by dynamic programming over (column, extra delimiters used so far): `O(n · e²)`
//!   for `e` extra delimiters (at most [`MAX_EXTRA`]).
//! * **Too few fields**: the row continues on the next lines (a newline inside a field):
//!   they are joined, with the newline kept, until the record has at least `n` fields, and
//!   the result is checked (and repaired) as above (noted `repaired.newline_in_text`). A
//!   line that is a whole plausible record by itself is never joined to the one before: it
//!   starts the next record, and the short row before it is skipped.
//! * A row that cannot be repaired is skipped: counted as `malformed_row`, its line the
//!   reader's note `malformed_row.first_line`. Blank lines are counted as `blank_line`.
//!
//! With `strict`, any row whose field count is not the header's is an error naming its line
//! (the behaviour of a plain CSV reader).

use std::collections::VecDeque;
use std::io::BufRead;
use std::path::{Path, PathBuf};

use super::columns::{plausible, Kind};
use crate::workload::TraceError;

/// Most extra delimiters a row may have and still be repaired.
pub(super) const MAX_EXTRA: usize = 64;

/// Most physical lines one record may span.
const MAX_LINES: usize = 256;

/// Most bytes of one record spanning several lines.
const MAX_RECORD_BYTES: usize = 4 << 20;

/// How a record was put together.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Repair {
    /// As written.
    None,
    /// Extra delimiters given to free-text fields.
    Delimiter,
    /// Joined from several lines (and possibly repaired as above).
    Newline,
}

/// One record: its text and the byte range of each of its `n` fields.
#[derive(Debug)]
pub(super) struct Record {
    /// The first physical line, 1-based.
    pub line: u64,
    pub text: String,
    pub spans: Vec<(usize, usize)>,
    pub repair: Repair,
}

impl Record {
    /// Field `i`, untrimmed.
    pub fn field(&self, i: usize) -> &str {
        let (a, b) = self.spans[i];
        &self.text[a..b]
    }
}

/// What the next lines held.
#[derive(Debug)]
pub(super) enum Item {
    Record(Record),
    /// A row that could not be read as a record: its first line and field count.
    Malformed {
        line: u64,
        fields: usize,
    },
    Blank,
}

/// The columns of a file: each one's kind, and whether the reader maps it.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    pub kinds: Vec<Kind>,
    pub read: Vec<bool>,
}

/// Splits a file's lines into records (see the module docs).
pub(super) struct RecordReader {
    path: PathBuf,
    src: Box<dyn BufRead + Send>,
    delim: String,
    layout: Layout,
    /// `sacct -p`: every record ends with the delimiter.
    pub trailing: bool,
    strict: bool,
    /// Lines read ahead and given back, in order.
    back: VecDeque<(u64, String)>,
    /// The number of the next line to read from `src`.
    next_line: u64,
    buf: Vec<u8>,
}

impl RecordReader {
    pub fn new(
        path: &Path,
        src: Box<dyn BufRead + Send>,
        delim: &str,
        layout: Layout,
        strict: bool,
    ) -> RecordReader {
        RecordReader {
            path: path.to_path_buf(),
            src,
            delim: delim.to_string(),
            layout,
            trailing: false,
            strict,
            back: VecDeque::new(),
            next_line: 1,
            buf: Vec::new(),
        }
    }

    /// Sets the columns (once the header is read).
    pub fn set_layout(&mut self, layout: Layout) {
        self.layout = layout;
    }

    /// The column count.
    pub fn width(&self) -> usize {
        self.layout.kinds.len()
    }

    /// The next physical line (without its line ending; invalid UTF-8 replaced) and its
    /// number.
    pub fn physical(&mut self) -> Result<Option<(u64, String)>, TraceError> {
        if let Some(l) = self.back.pop_front() {
            return Ok(Some(l));
        }
        self.buf.clear();
        let n = self
            .src
            .read_until(b'\n', &mut self.buf)
            .map_err(|e| crate::workload::line_cap::io_error(&self.path, e))?;
        if n == 0 {
            return Ok(None);
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        let line = self.next_line;
        self.next_line += 1;
        Ok(Some((
            line,
            String::from_utf8_lossy(&self.buf).into_owned(),
        )))
    }

    /// Gives a line back: the next [`RecordReader::physical`] returns it.
    pub fn unread(&mut self, line: (u64, String)) {
        self.back.push_front(line);
    }

    /// The byte ranges of `text`'s fields (without the trailing delimiter of `sacct -p`).
    pub fn split(&self, text: &str) -> Vec<(usize, usize)> {
        let body = match self.trailing {
            true => text.strip_suffix(self.delim.as_str()).unwrap_or(text),
            false => text,
        };
        let mut out = Vec::new();
        let mut start = 0;
        for (i, _) in body.match_indices(self.delim.as_str()) {
            out.push((start, i));
            start = i + self.delim.len();
        }
        out.push((start, body.len()));
        out
    }

    /// The next record, malformed row or blank line; `None` at the end of the file.
    ///
    /// # Errors
    /// An I/O error or an over-long line; with `strict`, a row whose field count is off.
    pub fn next_item(&mut self) -> Result<Option<Item>, TraceError> {
        let Some((line, text)) = self.physical()? else {
            return Ok(None);
        };
        if text.is_empty() {
            return Ok(Some(Item::Blank));
        }
        let n = self.width();
        let spans = self.split(&text);
        let k = spans.len();
        if k == n {
            return Ok(Some(Item::Record(Record {
                line,
                text,
                spans,
                repair: Repair::None,
            })));
        }
        if self.strict {
            return Err(TraceError::BadRow {
                path: self.path.clone(),
                line,
                message: format!(
                    "wrong number of fields: the header has {n}, this row has {k} \
                     (without strict reading, a row whose free text holds the delimiter or a \
                     line break is repaired when its other fields place it, else skipped)"
                ),
            });
        }
        if k > n {
            return Ok(Some(match self.repair(&text, &spans) {
                Some(spans) => Item::Record(Record {
                    line,
                    text,
                    spans,
                    repair: Repair::Delimiter,
                }),
                None => Item::Malformed { line, fields: k },
            }));
        }
        // Too few: a field holds a line break; join the lines that follow.
        let mut joined = text;
        let mut taken: Vec<(u64, String)> = Vec::new();
        while taken.len() < MAX_LINES && joined.len() < MAX_RECORD_BYTES {
            let Some(next) = self.physical()? else { break };
            if !next.1.is_empty() && self.whole(&next.1) {
                self.unread(next);
                break;
            }
            joined.push('\n');
            joined.push_str(&next.1);
            taken.push(next);
            let spans = self.split(&joined);
            if spans.len() < n {
                continue;
            }
            let spans = if spans.len() == n {
                self.valid(&joined, &spans).then_some(spans)
            } else {
                self.repair(&joined, &spans)
            };
            if let Some(spans) = spans {
                return Ok(Some(Item::Record(Record {
                    line,
                    text: joined,
                    spans,
                    repair: Repair::Newline,
                })));
            }
            break;
        }
        // Not a record: the lines after the first are read again, each on its own.
        for l in taken.into_iter().rev() {
            self.unread(l);
        }
        Ok(Some(Item::Malformed { line, fields: k }))
    }

    /// Whether `text` alone is a plausible whole record.
    fn whole(&self, text: &str) -> bool {
        let spans = self.split(text);
        match spans.len().cmp(&self.width()) {
            std::cmp::Ordering::Less => false,
            std::cmp::Ordering::Equal => self.valid(text, &spans),
            std::cmp::Ordering::Greater => self.repair(text, &spans).is_some(),
        }
    }

    /// Whether every field of a record with exactly `n` fields is plausible for its column.
    pub fn valid(&self, text: &str, spans: &[(usize, usize)]) -> bool {
        spans
            .iter()
            .zip(&self.layout.kinds)
            .all(|(&(a, b), &k)| plausible(k, text[a..b].trim()))
    }

    /// The `n` field ranges of a row with more fields than columns, when the best readings
    /// agree on every column read (see the module docs).
    pub fn repair(&self, text: &str, raw: &[(usize, usize)]) -> Option<Vec<(usize, usize)>> {
        const NO: i64 = i64::MIN / 4;
        let n = self.width();
        let extra = raw.len().checked_sub(n)?;
        if extra == 0 || extra > MAX_EXTRA {
            return None;
        }
        let kinds = &self.layout.kinds;
        // A column's score for the raw field `at`: unplausible `NO`; 1 for a non-empty value
        // of its typed shape (an anchor); else 0.
        let score = |col: usize, at: usize| -> i64 {
            let (a, b) = raw[at];
            let v = text[a..b].trim();
            match kinds[col] {
                Kind::Free | Kind::Other => 0,
                k if !plausible(k, v) => NO,
                _ => i64::from(!v.is_empty()),
            }
        };
        let w = extra + 1;
        // bwd[i][s]: the best score of columns i.. with s extra fields used before column i.
        let mut bwd = vec![NO; (n + 1) * w];
        bwd[n * w + extra] = 0;
        for i in (0..n).rev() {
            for s in 0..=extra {
                bwd[i * w + s] = if kinds[i] == Kind::Free {
                    (0..=extra - s)
                        .map(|e| bwd[(i + 1) * w + s + e])
                        .max()
                        .unwrap_or(NO)
                } else {
                    let c = score(i, i + s);
                    let rest = bwd[(i + 1) * w + s];
                    if c == NO || rest == NO {
                        NO
                    } else {
                        c + rest
                    }
                };
            }
        }
        let best = bwd[0];
        if best == NO {
            return None;
        }
        // fwd[i][s]: the best score of columns ..i reaching column i with s extra used.
        let mut fwd = vec![NO; (n + 1) * w];
        fwd[0] = 0;
        for i in 0..n {
            for s in 0..=extra {
                let here = fwd[i * w + s];
                if here == NO {
                    continue;
                }
                if kinds[i] == Kind::Free {
                    for e in 0..=extra - s {
                        let t = &mut fwd[(i + 1) * w + s + e];
                        *t = (*t).max(here);
                    }
                } else {
                    let c = score(i, i + s);
                    if c != NO {
                        let t = &mut fwd[(i + 1) * w + s];
                        *t = (*t).max(here + c);
                    }
                }
            }
        }
        // The states of column i on a best reading.
        let on_best = |i: usize, s: usize| {
            fwd[i * w + s] != NO && bwd[i * w + s] != NO && fwd[i * w + s] + bwd[i * w + s] == best
        };
        // Every column read must hold the same text in every best reading (a free one: from
        // each best start to each best end).
        let field = |a: usize, b: usize| text[raw[a].0..raw[b].1].trim();
        for i in (0..n).filter(|&i| self.layout.read[i]) {
            let mut values = (0..=extra).filter(|&s| on_best(i, s)).flat_map(|s| {
                let ends: Vec<usize> = if kinds[i] == Kind::Free {
                    (s..=extra)
                        .filter(|&e| {
                            on_best(i + 1, e) && fwd[i * w + s] + bwd[(i + 1) * w + e] == best
                        })
                        .collect()
                } else {
                    vec![s]
                };
                ends.into_iter().map(move |e| field(i + s, i + e))
            });
            let first = values.next();
            if values.any(|v| Some(v) != first) {
                return None;
            }
        }
        // One best reading (they all agree on the columns read).
        let mut out = Vec::with_capacity(n);
        let mut s = 0;
        for i in 0..n {
            let first = raw[i + s].0;
            if kinds[i] == Kind::Free {
                let e = (0..=extra - s)
                    .find(|&e| on_best(i + 1, s + e))
                    .expect("a best reading goes on");
                out.push((first, raw[i + s + e].1));
                s += e;
            } else {
                out.push((first, raw[i + s].1));
            }
        }
        debug_assert_eq!(s, extra);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::slurm_sacct::columns::kind;

    fn reader(text: &str, header: &[&str], read: &[&str]) -> RecordReader {
        let layout = Layout {
            kinds: header.iter().map(|h| kind(h)).collect(),
            read: header.iter().map(|h| read.contains(h)).collect(),
        };
        RecordReader::new(
            Path::new("t.txt"),
            Box::new(std::io::Cursor::new(text.to_string().into_bytes())),
            "|",
            layout,
            false,
        )
    }

    fn items(r: &mut RecordReader) -> Vec<Item> {
        std::iter::from_fn(|| r.next_item().unwrap()).collect()
    }

    const H: [&str; 6] = ["JobIDRaw", "JobName", "State", "Submit", "Comment", "NCPUS"];

    #[test]
    fn a_delimiter_in_one_free_field_is_placed() {
        let mut r = reader(
            "7|env | grep X|COMPLETED|2024-01-01T00:00:00|ok|4\n",
            &H,
            &["JobIDRaw", "State", "Submit", "NCPUS"],
        );
        let got = items(&mut r);
        let [Item::Record(rec)] = &got[..] else {
            panic!("{got:?}")
        };
        assert_eq!(rec.repair, Repair::Delimiter);
        assert_eq!(rec.field(1), "env | grep X");
        assert_eq!((rec.field(2), rec.field(5)), ("COMPLETED", "4"));
    }

    /// Two free fields with a typed one between: the state word and the timestamp decide
    /// which one holds the extra delimiters. Two adjacent free fields (`Comment` then
    /// nothing read) are ambiguous only in columns not read.
    #[test]
    fn typed_fields_anchor_the_split_and_unread_ambiguity_is_harmless() {
        let mut r = reader(
            "8|a|b|COMPLETED|2024-01-01T00:00:00|x|y|z|2\n",
            &H,
            &["JobIDRaw", "State", "Submit", "NCPUS"],
        );
        let got = items(&mut r);
        let [Item::Record(rec)] = &got[..] else {
            panic!("{got:?}")
        };
        assert_eq!(
            (rec.field(1), rec.field(4), rec.field(5)),
            ("a|b", "x|y|z", "2")
        );
        // Reading `JobName` too, `a|b` vs `a` is still decided by `State`; an extra
        // delimiter that could go to either of two free fields next to each other, with a
        // read one between them and the typed ones, is ambiguous.
        let h2 = ["JobIDRaw", "JobName", "Comment", "NCPUS"];
        let mut r = reader("9|a|b|c|2\n", &h2, &["JobIDRaw", "JobName", "NCPUS"]);
        assert!(matches!(
            items(&mut r)[..],
            [Item::Malformed { line: 1, fields: 5 }]
        ));
        let mut r = reader("9|a|b|c|2\n", &h2, &["JobIDRaw", "NCPUS"]);
        assert!(matches!(items(&mut r)[..], [Item::Record(_)]));
    }

    /// A newline inside a field: lines joined until the record is whole; a truncated row
    /// followed by a whole one is skipped and the whole one kept; a comment line alone is
    /// malformed; blank lines are reported.
    #[test]
    fn line_breaks_in_fields_and_broken_rows() {
        let text = "1|job|COMPLETED|2024-01-01T00:00:00|line one\nline two|3\n\
                    |COMPLETED|2024-01-01T00:00:00\n\
                    2|j|FAILED|2024-01-01T00:00:01||1\n\
                    \n\
                    # a comment\n\
                    3|j|FAILED|2024-01-01T00:00:02||1\n";
        let mut r = reader(text, &H, &["JobIDRaw", "State", "Submit", "NCPUS"]);
        let got = items(&mut r);
        assert_eq!(got.len(), 6, "{got:?}");
        let Item::Record(a) = &got[0] else {
            panic!("{got:?}")
        };
        assert_eq!((a.line, a.repair), (1, Repair::Newline));
        assert_eq!(a.field(4), "line one\nline two");
        assert!(matches!(got[1], Item::Malformed { line: 3, fields: 3 }));
        assert!(matches!(&got[2], Item::Record(r) if r.line == 4 && r.field(0) == "2"));
        assert!(matches!(got[3], Item::Blank));
        assert!(matches!(got[4], Item::Malformed { line: 6, fields: 1 }));
        assert!(matches!(&got[5], Item::Record(r) if r.line == 7));
    }

    #[test]
    fn strict_refuses_a_row_with_the_wrong_count() {
        let mut r = reader(
            "7|a|b|COMPLETED|2024-01-01T00:00:00|ok|4\n",
            &H,
            &["JobIDRaw"],
        );
        r.strict = true;
        let e = r.next_item().unwrap_err().to_string();
        assert!(
            e.contains("line 1") && e.contains("header has 6, this row has 7"),
            "{e}"
        );
    }

    #[test]
    fn other_delimiters_and_parsable_trailing_delimiters() {
        let layout = Layout {
            kinds: H.iter().map(|h| kind(h)).collect(),
            read: vec![true, false, true, true, false, true],
        };
        let mut r = RecordReader::new(
            Path::new("t.txt"),
            Box::new(std::io::Cursor::new(
                b"5;;a;b;;COMPLETED;;2024-01-01T00:00:00;;;;1;;\n".to_vec(),
            )),
            ";;",
            layout,
            false,
        );
        r.trailing = true;
        let got = items(&mut r);
        let [Item::Record(rec)] = &got[..] else {
            panic!("{got:?}")
        };
        assert_eq!((rec.field(1), rec.field(5)), ("a;b", "1"));
    }
}
