//! The drawing half of [`super`]: plotters backends, the PNG font, SVG and PNG rendering.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, DrawingErrorKind};

#[cfg(test)]
use super::cdf_points;
use super::font::Font;
use super::{fmt_duration, is_duration_metric, Figure, Kind, Rendered, Series, SIZE};

fn bounds(series: &[&Series], stacked: bool) -> (f64, f64, f64, f64) {
    let (mut x0, mut x1, mut y0, mut y1) =
        (f64::INFINITY, f64::NEG_INFINITY, 0.0f64, f64::NEG_INFINITY);
    for s in series {
        for &(x, y) in &s.points {
            x0 = x0.min(x);
            x1 = x1.max(x);
            y0 = y0.min(y);
            y1 = y1.max(y);
        }
    }
    if stacked {
        let n = series.first().map_or(0, |s| s.points.len());
        y1 = (0..n)
            .map(|i| {
                series
                    .iter()
                    .map(|s| s.points.get(i).map_or(0.0, |p| p.1))
                    .sum::<f64>()
            })
            .fold(0.0, f64::max);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if !y1.is_finite() {
        y1 = 1.0;
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    if y1 <= y0 {
        y1 = y0 + 1.0;
    }
    (x0, x1, y0, y1 * 1.05)
}

/// A log-10 tick as a duration (CDF axes are of waits and JCTs in seconds).
fn log_label(v: f64) -> String {
    fmt_duration(10f64.powf(v))
}

/// A tick label with as many decimals as the axis range needs.
fn fixed(v: f64, range: f64) -> String {
    if range >= 10.0 {
        format!("{v:.0}")
    } else if range >= 1.0 {
        format!("{v:.1}")
    } else if range >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The colour-blind-safe qualitative palette: Okabe & Ito's eight ("Color Universal
/// Design"; ordered so that the first three — blue, orange, reddish purple — differ most, and
/// yellow, weakest on white, comes last), then three of Paul Tol's muted scheme (indigo, wine, olive) that stay apart from
/// them. Series beyond it repeat the colours with another line pattern ([`pattern`]).
pub const PALETTE: [RGBColor; 11] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(204, 121, 167),
    RGBColor(0, 158, 115),
    RGBColor(213, 94, 0),
    RGBColor(86, 180, 233),
    RGBColor(0, 0, 0),
    RGBColor(240, 228, 66),
    RGBColor(51, 34, 136),
    RGBColor(136, 34, 85),
    RGBColor(153, 153, 51),
];

fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// The line pattern of series `i`: solid for the first [`PALETTE`]`.len()` series, then
/// dashed `(8, 4)`, then dotted `(2, 3)`, and so on in turn, so no two series look alike.
pub fn pattern(i: usize) -> Option<(u32, u32)> {
    match (i / PALETTE.len()) % 3 {
        0 => None,
        1 => Some((8, 4)),
        _ => Some((2, 3)),
    }
}

/// Width of the legend column right of the plot, pixels.
const LEGEND_W: u32 = 230;
/// Longest legend label, characters (longer ones end in `…`).
const LEGEND_CHARS: usize = 30;

fn legend_label(s: &str) -> String {
    if s.chars().count() <= LEGEND_CHARS {
        s.to_string()
    } else {
        let cut: String = s.chars().take(LEGEND_CHARS - 1).collect();
        format!("{cut}…")
    }
}

/// How a legend entry is drawn.
enum Swatch {
    Line(RGBColor, u32, Option<(u32, u32)>),
    Area(RGBColor),
}

fn draw_line<DB: DrawingBackend>(
    chart: &mut ChartContext<
        '_,
        DB,
        Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
    >,
    pts: &[(f64, f64)],
    c: RGBColor,
    width: u32,
    pat: Option<(u32, u32)>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    match pat {
        None => {
            chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(width)))?;
        }
        Some((on, off)) => {
            chart.draw_series(DashedLineSeries::new(
                pts.iter().copied(),
                on,
                off,
                c.stroke_width(width),
            ))?;
        }
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    fig: &Figure,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let (lines, refs, stacked, log_x): (Vec<&Series>, Vec<&Series>, bool, bool) = match &fig.kind {
        Kind::Lines(s) => (s.iter().collect(), vec![], false, false),
        Kind::LinesWithReference(s, r) => (s.iter().collect(), r.iter().collect(), false, false),
        Kind::Stacked(s) => (s.iter().collect(), vec![], true, false),
        Kind::LogCdf(s) => (s.iter().collect(), vec![], false, true),
    };
    let all: Vec<&Series> = lines.iter().chain(refs.iter()).copied().collect();
    let (x0, x1, y0, mut y1) = bounds(&all, stacked);
    if log_x {
        y1 = 1.0;
    }
    // The legend has a column of its own right of the plot, so it never covers data.
    let (w, _) = root.dim_in_pixel();
    let (plot_area, legend_area) = root.split_horizontally(w.saturating_sub(LEGEND_W));
    let mut chart = ChartBuilder::on(&plot_area)
        .caption(&fig.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(64)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    let y_seconds = is_duration_metric(&fig.y_label);
    let fmt_x = move |v: &f64| {
        if log_x {
            log_label(*v)
        } else {
            fixed(*v, x1 - x0)
        }
    };
    let fmt_y = move |v: &f64| {
        if y_seconds {
            fmt_duration(*v)
        } else {
            fixed(*v, y1 - y0)
        }
    };
    chart
        .configure_mesh()
        .x_desc(fig.x_label.as_str())
        .y_desc(fig.y_label.as_str())
        .x_label_formatter(&fmt_x)
        .y_label_formatter(&fmt_y)
        .light_line_style(RGBColor(235, 235, 235))
        .draw()?;
    let mut legend: Vec<(String, Swatch)> = Vec::new();
    if stacked {
        let n = lines.first().map_or(0, |s| s.points.len());
        let mut cum = vec![0.0f64; n];
        let mut bands: Vec<Vec<(f64, f64)>> = Vec::new();
        for s in &lines {
            for (i, p) in s.points.iter().enumerate().take(n) {
                cum[i] += p.1;
            }
            bands.push(s.points.iter().zip(&cum).map(|(p, &c)| (p.0, c)).collect());
        }
        for (i, band) in bands.iter().enumerate().rev() {
            let c = color(i);
            chart.draw_series(AreaSeries::new(
                band.iter().copied(),
                0.0,
                c.mix(0.85).filled(),
            ))?;
        }
        // Top band first, as the bands are stacked.
        for (i, s) in lines.iter().enumerate().rev() {
            legend.push((s.name.clone(), Swatch::Area(color(i))));
        }
    } else {
        for (i, s) in lines.iter().enumerate() {
            draw_line(&mut chart, &s.points, color(i), 2, pattern(i))?;
            legend.push((s.name.clone(), Swatch::Line(color(i), 2, pattern(i))));
        }
        for (i, s) in refs.iter().enumerate() {
            draw_line(&mut chart, &s.points, color(i), 1, Some((6, 4)))?;
            legend.push((s.name.clone(), Swatch::Line(color(i), 1, Some((6, 4)))));
        }
    }
    // Legend entries, 18 px apart from the top of the plot; those that do not fit are
    // counted in a last line.
    let (_, h) = legend_area.dim_in_pixel();
    let top = 44i32;
    let room = ((h as i32 - top - 24) / 18).max(1) as usize;
    let shown = if legend.len() > room {
        room - 1
    } else {
        legend.len()
    };
    let font = ("sans-serif", 13).into_font();
    for (k, (name, sw)) in legend.iter().take(shown).enumerate() {
        let y = top + 18 * k as i32;
        match *sw {
            Swatch::Line(c, width, pat) => {
                let segs: Vec<(i32, i32)> = match pat {
                    None => vec![(4, 26)],
                    Some((on, off)) => {
                        let (on, off) = (on as i32, off as i32);
                        (0..)
                            .map(|j| (4 + j * (on + off), (4 + j * (on + off) + on).min(26)))
                            .take_while(|(a, _)| *a < 26)
                            .collect()
                    }
                };
                for (a, b) in segs {
                    legend_area.draw(&PathElement::new(
                        vec![(a, y), (b, y)],
                        c.stroke_width(width),
                    ))?;
                }
            }
            Swatch::Area(c) => {
                legend_area.draw(&Rectangle::new([(4, y - 5), (26, y + 5)], c.filled()))?;
            }
        }
        legend_area.draw(&Text::new(legend_label(name), (32, y - 7), font.clone()))?;
    }
    if shown < legend.len() {
        legend_area.draw(&Text::new(
            format!("+{} more", legend.len() - shown),
            (32, top + 18 * shown as i32 - 7),
            font,
        ))?;
    }
    root.present()?;
    Ok(())
}

/// Draws `fig` as SVG text.
///
/// # Errors
/// A plotting error.
pub fn svg(fig: &Figure) -> Result<String> {
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, SIZE).into_drawing_area();
        draw(root, fig).map_err(|e| anyhow!("drawing {}: {e}", fig.file))?;
    }
    Ok(s)
}

/// Draws `fig` as PNG bytes.
///
/// # Errors
/// No usable font, or a plotting or encoding error.
pub fn png(fig: &Figure) -> Result<Vec<u8>> {
    let font = font()?;
    let (w, h) = SIZE;
    let mut buf = vec![255u8; (w * h * 3) as usize];
    {
        let backend = GlyphBackend {
            inner: BitMapBackend::with_buffer(&mut buf, SIZE),
            font,
        };
        draw(backend.into_drawing_area(), fig).map_err(|e| anyhow!("drawing {}: {e}", fig.file))?;
    }
    let mut out = Vec::new();
    {
        let mut enc = ::png::Encoder::new(&mut out, w, h);
        enc.set_color(::png::ColorType::Rgb);
        enc.set_depth(::png::BitDepth::Eight);
        let mut wr = enc.write_header().context("encoding PNG")?;
        wr.write_image_data(&buf).context("encoding PNG")?;
    }
    Ok(out)
}

/// Writes `DIR/plots/FILE.svg` (and `.png` when asked) for each figure and returns the SVGs.
///
/// # Errors
/// A plotting or I/O error.
pub fn render_all(dir: &Path, figures: &[Figure], with_png: bool) -> Result<Vec<Rendered>> {
    if figures.is_empty() {
        return Ok(Vec::new());
    }
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots).with_context(|| format!("creating {}", plots.display()))?;
    let mut out = Vec::new();
    for f in figures {
        let s = svg(f)?;
        let p = plots.join(format!("{}.svg", f.file));
        crate::report::atomic::write_atomic(&p, s.as_bytes())
            .with_context(|| format!("writing {}", p.display()))?;
        if with_png {
            let p = plots.join(format!("{}.png", f.file));
            crate::report::atomic::write_atomic(&p, &png(f)?)
                .with_context(|| format!("writing {}", p.display()))?;
        }
        out.push(Rendered {
            file: f.file.clone(),
            title: f.title.clone(),
            svg: s,
        });
    }
    Ok(out)
}

/// Where PNG text fonts are looked for, after `$FLEETSIM_FONT`.
pub const FONT_PATHS: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/noto/NotoSans-Regular.ttf",
    "/System/Library/Fonts/Supplemental/Arial.ttf",
];

/// Loads the PNG font: `env` (the value of `$FLEETSIM_FONT`) when set — a file that cannot
/// be read or is not a TrueType/OpenType font is an error naming it, never silently passed
/// over — else the first readable font of [`FONT_PATHS`].
///
/// # Errors
/// [`BadInput`](crate::report::tracked::BadInput) for a bad `$FLEETSIM_FONT`, or when no font is found.
fn load_font(env: Option<PathBuf>) -> Result<Font, crate::report::tracked::BadInput> {
    use crate::report::tracked::BadInput;
    if let Some(p) = env {
        let bytes = std::fs::read(&p).map_err(|e| {
            BadInput(format!(
                "FLEETSIM_FONT={}: cannot be read: {e}",
                p.display()
            ))
        })?;
        return Font::parse(bytes).ok_or_else(|| {
            BadInput(format!(
                "FLEETSIM_FONT={}: not a TrueType or OpenType font (.ttf/.otf)",
                p.display()
            ))
        });
    }
    for p in FONT_PATHS {
        if let Ok(bytes) = std::fs::read(p) {
            if let Some(f) = Font::parse(bytes) {
                return Ok(f);
            }
        }
    }
    Err(BadInput(format!(
        "PNG plots need a TrueType font and none was found (looked at {}); \
         install one, e.g. `apt-get install fonts-dejavu-core`, or set FLEETSIM_FONT=/path/to/font.ttf",
        FONT_PATHS.join(", ")
    )))
}

fn font() -> Result<&'static Font> {
    static FONT: OnceLock<Result<Font, String>> = OnceLock::new();
    FONT.get_or_init(|| {
        load_font(std::env::var_os("FLEETSIM_FONT").map(PathBuf::from)).map_err(|e| e.0)
    })
    .as_ref()
    .map_err(|m| crate::report::tracked::BadInput(m.clone()).into())
}

/// The bitmap backend with text drawn from the font ([`Font`]; plotters' own bitmap text
/// needs the `ttf` feature, i.e. fontconfig).
struct GlyphBackend<'a> {
    inner: BitMapBackend<'a>,
    font: &'static Font,
}

type BitmapError = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

impl DrawingBackend for GlyphBackend<'_> {
    type ErrorType = BitmapError;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.present()
    }
    fn draw_pixel(
        &mut self,
        p: BackendCoord,
        c: BackendColor,
    ) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.draw_pixel(p, c)
    }
    fn draw_line<S: plotters_backend::BackendStyle>(
        &mut self,
        a: BackendCoord,
        b: BackendCoord,
        s: &S,
    ) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.draw_line(a, b, s)
    }
    fn draw_rect<S: plotters_backend::BackendStyle>(
        &mut self,
        a: BackendCoord,
        b: BackendCoord,
        s: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.draw_rect(a, b, s, fill)
    }
    fn draw_path<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        s: &S,
    ) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.draw_path(path, s)
    }
    fn draw_circle<S: plotters_backend::BackendStyle>(
        &mut self,
        c: BackendCoord,
        r: u32,
        s: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.draw_circle(c, r, s, fill)
    }
    fn fill_polygon<S: plotters_backend::BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        s: &S,
    ) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.fill_polygon(vert, s)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<BitmapError>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<T: plotters_backend::BackendTextStyle>(
        &self,
        text: &str,
        style: &T,
    ) -> Result<(u32, u32), DrawingErrorKind<BitmapError>> {
        let (w, _, h) = self.font.layout(text, style.size());
        Ok((w.ceil() as u32, h.ceil() as u32))
    }

    fn draw_text<T: plotters_backend::BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<BitmapError>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let size = style.size();
        let (w, ascent, h) = self.font.layout(text, size);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0.0,
            HPos::Center => -w / 2.0,
            HPos::Right => -w,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0.0,
            VPos::Center => -h / 2.0,
            VPos::Bottom => -h,
        };
        let trans = style.transform();
        let pixels = self.font.coverage(text, size, dx, ascent + dy);
        for (x, y, cov) in pixels {
            let (x, y) = trans.transform(x, y);
            self.inner.draw_pixel(
                (pos.0 + x, pos.1 + y),
                BackendColor {
                    alpha: color.alpha * f64::from(cov),
                    rgb: color.rgb,
                },
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue #23 defect 8: a bad `$FLEETSIM_FONT` is an error naming it, not skipped.
    #[test]
    fn a_bad_fleetsim_font_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("none.ttf");
        let e = load_font(Some(missing.clone())).err().unwrap();
        assert!(
            e.0.starts_with(&format!(
                "FLEETSIM_FONT={}: cannot be read",
                missing.display()
            )),
            "{}",
            e.0
        );
        let junk = d.path().join("junk.ttf");
        std::fs::write(&junk, "not a font").unwrap();
        let e = load_font(Some(junk)).err().unwrap();
        assert!(
            e.0.ends_with("not a TrueType or OpenType font (.ttf/.otf)"),
            "{}",
            e.0
        );
    }

    fn fig(kind: Kind) -> Figure {
        Figure {
            file: "t".into(),
            title: "t".into(),
            x_label: "x".into(),
            y_label: "y".into(),
            kind,
        }
    }

    #[test]
    fn svg_is_deterministic_and_needs_no_font() {
        let s = vec![Series {
            name: "a".into(),
            points: vec![(0.0, 1.0), (1.0, 2.0), (2.0, 0.5)],
        }];
        let a = svg(&fig(Kind::Lines(s.clone()))).unwrap();
        assert_eq!(a, svg(&fig(Kind::Lines(s.clone()))).unwrap());
        assert!(a.starts_with("<svg") && a.contains("<text"), "{a}");
        svg(&fig(Kind::Stacked(s.clone()))).unwrap();
        svg(&fig(Kind::LogCdf(s))).unwrap();
        svg(&fig(Kind::Lines(vec![]))).unwrap();
    }

    #[test]
    fn cdf_points_are_nearest_rank() {
        let v: Vec<f64> = (1..=10).map(|x| x as f64 * 10.0).collect();
        let p = cdf_points(&v, 10);
        assert_eq!(p.len(), 11);
        assert_eq!(p[5], (50f64.log10(), 0.5));
        assert_eq!(p[10], (100f64.log10(), 1.0));
    }

    /// Issue #23 defect 9: durations in human units (the 164,115 s and 6,404,787 s).
    #[test]
    fn durations_read_in_human_units() {
        assert_eq!(fmt_duration(164_115.0), "1.90 d"); // 164115 / 86400 = 1.899…
        assert_eq!(fmt_duration(6_404_787.0), "74.1 d"); // 6404787 / 86400 = 74.13
        assert_eq!(fmt_duration(4_075.0), "1.13 h"); // 4075 / 3600 = 1.132
        assert_eq!(fmt_duration(164.0), "2.73 min"); // 164 / 60 = 2.733
        assert_eq!(fmt_duration(45.0), "45.0 s");
        assert_eq!(fmt_duration(0.0), "0 s");
        assert_eq!(fmt_duration(-7_200.0), "-2.00 h");
        assert_eq!(log_label(3.0), "16.7 min"); // 1000 s
        for (m, d) in [
            ("wait_s.p99", true),
            ("jct_s.mean", true),
            ("makespan_s", true),
            ("reliability.job_mttr_s", true),
            ("reliability.lost_gpu_s", false),
            ("occupancy", false),
            ("censored_pct", false),
        ] {
            assert_eq!(is_duration_metric(m), d, "{m}");
        }
    }

    /// Issue #23 defect 9: no two of the first 3 × 11 series look alike — the palette's
    /// colours are apart (RGB distance ≥ 60; Okabe–Ito orange and vermillion are the closest, 67,
    /// told apart by hue under every colour-vision deficiency) and each cycle has its own line
    /// pattern.
    #[test]
    fn series_styles_are_distinct() {
        for (i, a) in PALETTE.iter().enumerate() {
            for b in &PALETTE[i + 1..] {
                let d = ((f64::from(a.0) - f64::from(b.0)).powi(2)
                    + (f64::from(a.1) - f64::from(b.1)).powi(2)
                    + (f64::from(a.2) - f64::from(b.2)).powi(2))
                .sqrt();
                assert!(d >= 60.0, "{a:?} vs {b:?}: {d}");
            }
        }
        let styles: Vec<_> = (0..33).map(|i| (color(i), pattern(i))).collect();
        for (i, a) in styles.iter().enumerate() {
            assert!(!styles[i + 1..].contains(a), "series {i} repeats");
        }
    }

    /// Issue #23 defect 9: the legend is drawn right of the plot area, never over data:
    /// every legend label starts right of the split (900 − 230 = 670 px) and every data
    /// point is left of it.
    #[test]
    fn the_legend_is_outside_the_data() {
        let series: Vec<Series> = (0..12)
            .map(|k| Series {
                name: format!("tenant-{k}"),
                points: vec![(0.0, 0.0), (1.0, k as f64), (2.0, 1.0)],
            })
            .collect();
        let s = svg(&fig(Kind::Lines(series))).unwrap();
        let split = (SIZE.0 - LEGEND_W) as f64;
        let mut labels = 0;
        for t in s.split("<text").skip(1) {
            let x: f64 = t
                .split("x=\"")
                .nth(1)
                .and_then(|r| r.split('"').next())
                .and_then(|v| v.parse().ok())
                .unwrap();
            if t.contains("tenant-") {
                labels += 1;
                assert!(x > split, "legend label at x = {x}");
            }
        }
        assert_eq!(labels, 12);
        // The series are the polylines of 3 points (legend swatches have 2).
        let mut data = 0;
        for pl in s.split("<polyline").skip(1) {
            let pts = pl
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            let xs: Vec<f64> = pts
                .split_whitespace()
                .map(|p| p.split(',').next().unwrap().parse().unwrap())
                .collect();
            if xs.len() == 3 {
                data += 1;
                assert!(
                    xs.iter().all(|&x| x < split),
                    "data in the legend column: {xs:?}"
                );
            }
        }
        assert_eq!(data, 12);
    }
}
