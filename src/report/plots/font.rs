//! PNG text: glyph outlines read by `skrifa` (Google Fonts' OpenType reader), filled by
//! `ab_glyph_rasterizer` into anti-aliased coverage. No kerning and no shaping: axis labels
//! and legends are short Latin text.

use ab_glyph_rasterizer::{point, Point, Rasterizer};
use skrifa::instance::{LocationRef, Size};
use skrifa::outline::{DrawSettings, OutlinePen};
use skrifa::{FontRef, GlyphId, MetadataProvider};

/// A TrueType or OpenType font, kept as its file's bytes (`skrifa` reads them in place).
pub struct Font {
    bytes: Vec<u8>,
    /// Pixels per em for one pixel of text height (ascent − descent, the height a plotters
    /// font size gives): units per em ÷ (ascent − descent), in font units.
    em_per_height: f32,
}

impl Font {
    /// Reads a font file's bytes; `None` when they are not a font that can draw `A`.
    pub fn parse(bytes: Vec<u8>) -> Option<Font> {
        let f = FontRef::new(&bytes).ok()?;
        f.outline_glyphs().get(f.charmap().map('A')?)?;
        let m = f.metrics(Size::unscaled(), LocationRef::default());
        let height = m.ascent - m.descent;
        if height.is_nan() || height <= 0.0 {
            return None;
        }
        let em_per_height = f32::from(m.units_per_em) / height;
        Some(Font {
            bytes,
            em_per_height,
        })
    }

    fn font(&self) -> FontRef<'_> {
        FontRef::new(&self.bytes).expect("parsed once in Font::parse")
    }

    fn size(&self, height_px: f64) -> Size {
        Size::new(height_px as f32 * self.em_per_height)
    }

    fn glyph(f: &FontRef<'_>, c: char) -> GlyphId {
        f.charmap().map(c).unwrap_or(GlyphId::NOTDEF)
    }

    /// `(width, ascent, height)` of `text` at `height_px` pixels of text height.
    pub fn layout(&self, text: &str, height_px: f64) -> (f32, f32, f32) {
        let f = self.font();
        let size = self.size(height_px);
        let gm = f.glyph_metrics(size, LocationRef::default());
        let w = text
            .chars()
            .map(|c| gm.advance_width(Self::glyph(&f, c)).unwrap_or(0.0))
            .sum();
        let m = f.metrics(size, LocationRef::default());
        (w, m.ascent, m.ascent - m.descent)
    }

    /// The coverage in (0, 1] of the pixels `text` covers when its first glyph's origin (on
    /// the baseline) is at `(x, baseline)`, as `(x, y, coverage)` in image coordinates (y down).
    pub fn coverage(
        &self,
        text: &str,
        height_px: f64,
        x: f32,
        baseline: f32,
    ) -> Vec<(i32, i32, f32)> {
        let f = self.font();
        let size = self.size(height_px);
        let gm = f.glyph_metrics(size, LocationRef::default());
        let outlines = f.outline_glyphs();
        let mut out = Vec::new();
        let mut caret = x;
        for c in text.chars() {
            let id = Self::glyph(&f, c);
            if let Some(g) = outlines.get(id) {
                let mut pen = Pen {
                    ox: caret,
                    oy: baseline,
                    ..Pen::default()
                };
                let settings = DrawSettings::unhinted(size, LocationRef::default());
                if g.draw(settings, &mut pen).is_ok() {
                    pen.close();
                    pen.fill(&mut out);
                }
            }
            caret += gm.advance_width(id).unwrap_or(0.0);
        }
        out
    }
}

enum Segment {
    Line(Point, Point),
    Quad(Point, Point, Point),
    Cubic(Point, Point, Point, Point),
}

/// Collects a glyph's outline in image coordinates (origin `(ox, oy)`, y down).
#[derive(Default)]
struct Pen {
    ox: f32,
    oy: f32,
    start: Option<Point>,
    last: Option<Point>,
    segments: Vec<Segment>,
}

impl Pen {
    fn p(&self, x: f32, y: f32) -> Point {
        point(self.ox + x, self.oy - y)
    }

    /// Closes the open contour (the rasterizer fills closed ones).
    fn close(&mut self) {
        if let (Some(s), Some(l)) = (self.start, self.last) {
            if s != l {
                self.segments.push(Segment::Line(l, s));
            }
        }
        self.last = self.start;
    }

    /// Rasterizes the collected outline and appends its covered pixels.
    fn fill(&self, out: &mut Vec<(i32, i32, f32)>) {
        let pts = self.segments.iter().flat_map(|s| match *s {
            Segment::Line(a, b) => vec![a, b],
            Segment::Quad(a, b, c) => vec![a, b, c],
            Segment::Cubic(a, b, c, d) => vec![a, b, c, d],
        });
        let (mut x0, mut y0, mut x1, mut y1) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
        for p in pts {
            (x0, y0, x1, y1) = (x0.min(p.x), y0.min(p.y), x1.max(p.x), y1.max(p.y));
        }
        if x0 > x1 || y0 > y1 {
            return;
        }
        let (bx, by) = (x0.floor(), y0.floor());
        let w = (x1.ceil() - bx) as usize + 1;
        let h = (y1.ceil() - by) as usize + 1;
        let mut r = Rasterizer::new(w, h);
        let at = |p: Point| point(p.x - bx, p.y - by);
        for s in &self.segments {
            match *s {
                Segment::Line(a, b) => r.draw_line(at(a), at(b)),
                Segment::Quad(a, b, c) => r.draw_quad(at(a), at(b), at(c)),
                Segment::Cubic(a, b, c, d) => r.draw_cubic(at(a), at(b), at(c), at(d)),
            }
        }
        r.for_each_pixel_2d(|gx, gy, cov| {
            if cov > 0.02 {
                out.push((bx as i32 + gx as i32, by as i32 + gy as i32, cov.min(1.0)));
            }
        });
    }
}

impl OutlinePen for Pen {
    fn move_to(&mut self, x: f32, y: f32) {
        self.close();
        let p = self.p(x, y);
        self.start = Some(p);
        self.last = Some(p);
    }

    fn line_to(&mut self, x: f32, y: f32) {
        let p = self.p(x, y);
        if let Some(l) = self.last {
            self.segments.push(Segment::Line(l, p));
        }
        self.last = Some(p);
    }

    fn quad_to(&mut self, cx0: f32, cy0: f32, x: f32, y: f32) {
        let (c, p) = (self.p(cx0, cy0), self.p(x, y));
        if let Some(l) = self.last {
            self.segments.push(Segment::Quad(l, c, p));
        }
        self.last = Some(p);
    }

    fn curve_to(&mut self, cx0: f32, cy0: f32, cx1: f32, cy1: f32, x: f32, y: f32) {
        let (c0, c1, p) = (self.p(cx0, cy0), self.p(cx1, cy1), self.p(x, y));
        if let Some(l) = self.last {
            self.segments.push(Segment::Cubic(l, c0, c1, p));
        }
        self.last = Some(p);
    }

    fn close(&mut self) {
        Pen::close(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn junk_is_not_a_font() {
        assert!(Font::parse(b"not a font".to_vec()).is_none());
    }

    /// With a system font (CI installs DejaVu): text has a width, and `I` covers a column of
    /// pixels between the baseline and the ascent.
    #[test]
    fn text_is_drawn_where_laid_out() {
        let Some(bytes) = super::super::FONT_PATHS
            .iter()
            .find_map(|p| std::fs::read(p).ok())
        else {
            return;
        };
        let f = Font::parse(bytes).expect("a system font");
        let (w, ascent, h) = f.layout("II", 20.0);
        assert!(w > 0.0 && ascent > 0.0 && h >= ascent, "{w} {ascent} {h}");
        let px = f.coverage("I", 20.0, 10.0, 30.0);
        assert!(!px.is_empty());
        // Every pixel lies within the glyph's cell: right of the origin, above the baseline.
        for &(x, y, c) in &px {
            assert!((10..10 + w as i32).contains(&x), "x {x}");
            assert!(((30.0 - ascent) as i32 - 1..=30).contains(&y), "y {y}");
            assert!(c > 0.0 && c <= 1.0);
        }
    }
}
