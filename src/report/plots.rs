//! Plots with plotters: SVG always, PNG on request.
//!
//! SVG text is emitted as `<text>` elements laid out with plotters' built-in size estimate,
//! so an SVG needs no font file and is byte-identical on every machine. PNG text is drawn
//! from a TrueType font found at run time (outlines read by `skrifa`, filled by
//! `ab_glyph_rasterizer`): `$FLEETSIM_FONT`, else DejaVu Sans (Debian/Ubuntu package
//! `fonts-dejavu-core`), Liberation Sans or Noto Sans in their usual places; without one,
//! asking for PNG is an error that says what to install.

#[cfg(feature = "plots")]
mod draw;
#[cfg(feature = "plots")]
mod font;
#[cfg(feature = "plots")]
pub use draw::{pattern, png, render_all, svg, FONT_PATHS, PALETTE};

#[cfg(not(feature = "plots"))]
pub use disabled::render_all;

/// One line (or stacked band).
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    /// Legend entry.
    pub name: String,
    /// Points `(x, y)`, in x order.
    pub points: Vec<(f64, f64)>,
}

/// How a figure draws its series.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// One line per series.
    Lines(Vec<Series>),
    /// Lines plus dashed reference lines (e.g. entitlements).
    LinesWithReference(Vec<Series>, Vec<Series>),
    /// Stacked areas (every series on the same x values), bottom first.
    Stacked(Vec<Series>),
    /// Empirical CDFs of durations in seconds on a log-10 x axis (x ≥ 1 s; smaller values
    /// are drawn at 1 s), ticks in human units.
    LogCdf(Vec<Series>),
}

/// A figure to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    /// File stem under `plots/`.
    pub file: String,
    /// Caption.
    pub title: String,
    /// X axis description.
    pub x_label: String,
    /// Y axis description. When it names a duration metric ([`is_duration_metric`],
    /// e.g. `wait_s.p99`) the y ticks are durations in human units.
    pub y_label: String,
    /// What to draw.
    pub kind: Kind,
}

/// A drawn figure.
#[derive(Clone, Debug)]
pub struct Rendered {
    /// File stem under `plots/`.
    pub file: String,
    /// Caption.
    pub title: String,
    /// The SVG text.
    pub svg: String,
}

#[cfg(feature = "plots")]
const SIZE: (u32, u32) = (900, 420);

/// Downsamples a sorted sample to an empirical CDF of at most `n + 1` points: the
/// nearest-rank `p`-quantile for `p = 0, 1/n, …, 1`.
pub fn cdf_points(sorted: &[f64], n: usize) -> Vec<(f64, f64)> {
    if sorted.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<(f64, f64)> = Vec::with_capacity(n + 1);
    for i in 0..=n {
        let p = i as f64 / n as f64;
        let v = crate::metrics::stats::nearest_rank(sorted, p).expect("non-empty");
        out.push((v.max(1.0).log10(), p));
    }
    out
}

/// A duration in human units with three significant digits: `45.0 s`, `2.73 min`, `1.90 h`,
/// `74.1 d` (reports and axes; CSV and JSON keep raw seconds). Negative values keep their
/// sign; 0 is `0 s`.
pub fn fmt_duration(secs: f64) -> String {
    if secs == 0.0 {
        return "0 s".into();
    }
    if !secs.is_finite() {
        return format!("{secs} s");
    }
    let a = secs.abs();
    let (v, unit) = if a < 60.0 {
        (a, "s")
    } else if a < 3_600.0 {
        (a / 60.0, "min")
    } else if a < 86_400.0 {
        (a / 3_600.0, "h")
    } else {
        (a / 86_400.0, "d")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    let sign = if secs < 0.0 { "-" } else { "" };
    format!("{sign}{v:.digits$} {unit}")
}

/// Whether a metric (a dotted `summary.json` path) is a duration in seconds: its first or
/// last segment ends in `_s` (`wait_s.p99`, `makespan_s`, `reliability.job_mttr_s`), but not
/// in `_gpu_s` (accelerator-seconds, an amount of work).
pub fn is_duration_metric(name: &str) -> bool {
    let dur = |seg: &str| seg.ends_with("_s") && !seg.ends_with("_gpu_s");
    let first = name.split('.').next().unwrap_or_default();
    let last = name.rsplit('.').next().unwrap_or_default();
    dur(first) || dur(last)
}

/// Without the `plots` feature (the live scheduler's and the extender's build): no plotting
/// library is linked, and asking for a plot is an error that says so.
#[cfg(not(feature = "plots"))]
mod disabled {
    use super::{Figure, Rendered};
    use std::path::Path;

    /// Refuses: this build draws no plots.
    ///
    /// # Errors
    /// Always, when `figures` is not empty.
    pub fn render_all(
        _dir: &Path,
        figures: &[Figure],
        _with_png: bool,
    ) -> anyhow::Result<Vec<Rendered>> {
        if figures.is_empty() {
            return Ok(Vec::new());
        }
        anyhow::bail!(
            "this build of fleetsim draws no plots (built without the Cargo feature `plots`)"
        )
    }
}
