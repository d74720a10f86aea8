//! Self-contained reports: `report.html` (plots inlined as SVG, tables with the best value of
//! each metric marked, the scenario echoed; no script, no external resource) and
//! `report.md` (the same tables, plots linked from `plots/`). Nothing in either depends on
//! the wall clock or the machine.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};

use crate::report::plots::Rendered;
use crate::report::tracked::{better, Better};

/// One table cell.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cell {
    /// The text.
    pub text: String,
    /// Marked as the best value of its metric (★, highlighted).
    pub best: bool,
    /// Marked as notable (e.g. a confidence interval that excludes 0), shown bold.
    pub strong: bool,
}

impl Cell {
    /// A plain cell.
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            ..Cell::default()
        }
    }
}

/// A table with a title and a caption.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    /// Heading.
    pub title: String,
    /// Text under the heading.
    pub caption: String,
    /// Column names.
    pub header: Vec<String>,
    /// Rows.
    pub rows: Vec<Vec<Cell>>,
}

/// A report.
#[derive(Clone, Debug, Default)]
pub struct ReportDoc {
    /// Page title.
    pub title: String,
    /// Paragraphs under the title (empty ones are skipped).
    pub intro: Vec<String>,
    /// Tables, in order.
    pub tables: Vec<Table>,
    /// Plots.
    pub plots: Vec<Rendered>,
    /// Paragraphs after the plots (method notes, what is not shown and why).
    pub notes: Vec<String>,
    /// The scenario file.
    pub scenario_text: String,
}

/// Marks, in each column named after a metric of known direction, the best parseable value
/// (all ties).
pub fn mark_best_in_columns(header: &[String], rows: &mut [Vec<Cell>]) {
    for (c, name) in header.iter().enumerate() {
        let Some(dir) = better(name) else { continue };
        let vals: Vec<Option<f64>> = rows
            .iter()
            .map(|r| r.get(c).and_then(|x| x.text.parse::<f64>().ok()))
            .collect();
        if dir == Better::Neither {
            continue;
        }
        let best = vals
            .iter()
            .flatten()
            .copied()
            .reduce(|a, b| dir.pick(a, b).unwrap_or(a));
        if let Some(b) = best {
            for (r, v) in rows.iter_mut().zip(&vals) {
                if *v == Some(b) {
                    r[c].best = true;
                }
            }
        }
    }
}

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            _ => o.push(ch),
        }
    }
    o
}

const STYLE: &str = "body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,'DejaVu Sans',sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}\
h1{font-size:1.6em}h2{font-size:1.25em;margin-top:1.6em;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right;white-space:nowrap}\
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}\
th{white-space:normal;overflow-wrap:anywhere;min-width:5em;max-width:18em}td:first-child{white-space:normal;overflow-wrap:anywhere;max-width:28em}\
.scroll{max-width:100%}svg{max-width:100%;height:auto}\
td.best{background:#dff3e4;font-weight:600}td.strong{font-weight:700}\
.scroll{overflow-x:auto}figure{margin:1em 0}figcaption{font-size:.9em;color:#555}\
pre{background:#f7f7f7;border:1px solid #ddd;padding:.8em;overflow-x:auto;font-size:.8em}";

fn html(doc: &ReportDoc) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(&doc.title),
        esc(&doc.title)
    );
    let _ = writeln!(
        h,
        "<p>fleetsim {} — same scenario and seeds give this report byte for byte.</p>",
        env!("CARGO_PKG_VERSION")
    );
    for p in doc.intro.iter().filter(|p| !p.is_empty()) {
        let _ = writeln!(h, "<p>{}</p>", esc(p));
    }
    for t in &doc.tables {
        let _ = writeln!(h, "<h2>{}</h2>", esc(&t.title));
        if !t.caption.is_empty() {
            let _ = writeln!(h, "<p>{}</p>", esc(&t.caption));
        }
        h.push_str("<div class=\"scroll\"><table>\n<tr>");
        for c in &t.header {
            let _ = write!(h, "<th>{}</th>", esc(c));
        }
        h.push_str("</tr>\n");
        for r in &t.rows {
            h.push_str("<tr>");
            for c in r {
                let class = match (c.best, c.strong) {
                    (true, _) => " class=\"best\"",
                    (false, true) => " class=\"strong\"",
                    _ => "",
                };
                let star = if c.best { " ★" } else { "" };
                let _ = write!(h, "<td{class}>{}{star}</td>", esc(&c.text));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</table></div>\n");
    }
    if !doc.plots.is_empty() {
        h.push_str("<h2>Plots</h2>\n");
        for p in &doc.plots {
            let _ = writeln!(
                h,
                "<figure id=\"{}\">\n{}\n<figcaption>{} (plots/{}.svg)</figcaption>\n</figure>",
                esc(&p.file),
                p.svg.trim(),
                esc(&p.title),
                esc(&p.file)
            );
        }
    }
    if !doc.notes.is_empty() {
        h.push_str("<h2>Notes</h2>\n");
        for n in &doc.notes {
            let _ = writeln!(h, "<p>{}</p>", esc(n));
        }
    }
    let _ = writeln!(
        h,
        "<h2>Scenario</h2>\n<pre>{}</pre>\n</body>\n</html>",
        esc(&doc.scenario_text)
    );
    h
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn markdown(doc: &ReportDoc) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "# {}\n", doc.title);
    let _ = writeln!(m, "fleetsim {}\n", env!("CARGO_PKG_VERSION"));
    for p in doc.intro.iter().filter(|p| !p.is_empty()) {
        let _ = writeln!(m, "{p}\n");
    }
    for t in &doc.tables {
        let _ = writeln!(m, "## {}\n", t.title);
        if !t.caption.is_empty() {
            let _ = writeln!(m, "{}\n", t.caption);
        }
        let _ = writeln!(
            m,
            "| {} |",
            t.header
                .iter()
                .map(|c| md_cell(c))
                .collect::<Vec<_>>()
                .join(" | ")
        );
        let _ = writeln!(
            m,
            "|{}",
            t.header
                .iter()
                .enumerate()
                .map(|(i, _)| if i == 0 { "---|" } else { "---:|" })
                .collect::<String>()
        );
        for r in &t.rows {
            let cells: Vec<String> = r
                .iter()
                .map(|c| {
                    let t = md_cell(&c.text);
                    if c.best {
                        format!("**{t}** ★")
                    } else if c.strong {
                        format!("**{t}**")
                    } else {
                        t
                    }
                })
                .collect();
            let _ = writeln!(m, "| {} |", cells.join(" | "));
        }
        m.push('\n');
    }
    if !doc.plots.is_empty() {
        m.push_str("## Plots\n\n");
        for p in &doc.plots {
            let _ = writeln!(m, "![{}](plots/{}.svg)\n", p.title, p.file);
        }
    }
    if !doc.notes.is_empty() {
        m.push_str("## Notes\n\n");
        for n in &doc.notes {
            let _ = writeln!(m, "{n}\n");
        }
    }
    let _ = writeln!(
        m,
        "## Scenario\n\n```toml\n{}\n```",
        doc.scenario_text.trim_end()
    );
    m
}

/// Writes `DIR/report.html` and `DIR/report.md` (atomically).
///
/// # Errors
/// The I/O error.
pub fn write(dir: &Path, doc: &ReportDoc) -> Result<()> {
    for (name, text) in [("report.html", html(doc)), ("report.md", markdown(doc))] {
        let p = dir.join(name);
        crate::report::atomic::write_atomic(&p, text.as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn best_is_marked_by_direction() {
        let header: Vec<String> = ["policy", "occupancy", "wait_s.p99"]
            .map(String::from)
            .to_vec();
        let mut rows = vec![
            vec![Cell::plain("a"), Cell::plain("0.5"), Cell::plain("10")],
            vec![Cell::plain("b"), Cell::plain("0.7"), Cell::plain("20")],
        ];
        mark_best_in_columns(&header, &mut rows);
        assert!(rows[1][1].best && !rows[0][1].best);
        assert!(rows[0][2].best && !rows[1][2].best);
        assert!(!rows[0][0].best);
        assert_eq!(esc("<a&b>"), "&lt;a&amp;b&gt;");
    }
}
