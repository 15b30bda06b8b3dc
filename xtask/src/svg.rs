//! A log-log line plot as SVG, from the series the crates' `*_plot` examples print:
//!
//! ```text
//! # title: words received per rank (model), …
//! series,x,y
//! COSMA,2,1.5e8
//! ```
//!
//! Series are coloured in order of appearance; one named `lower bound` is dashed.

use std::fmt::Write;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 6] = [
    "#c0392b", "#2471a3", "#27ae60", "#8e44ad", "#d68910", "#117a65",
];

/// A curve: its name and points `(x, y)`.
type Series = (String, Vec<(f64, f64)>);

/// Maps `log10(v)` in `[lo, hi]` to `[a, b]`.
fn scale(v: f64, (lo, hi): (f64, f64), (a, b): (f64, f64)) -> f64 {
    a + (v.log10() - lo) / (hi - lo) * (b - a)
}

/// Parses the examples' output: the title and the series (positive points only).
fn parse(csv: &str) -> Result<(String, Vec<Series>), String> {
    let mut title = String::new();
    let mut series: Vec<Series> = Vec::new();
    for line in csv.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(t) = line.strip_prefix("# title:") {
            title = t.trim().to_string();
            continue;
        }
        if line.starts_with('#') || line == "series,x,y" {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let [name, x, y] = fields[..] else {
            return Err(format!("not `series,x,y`: {line}"));
        };
        let num = |s: &str| s.parse::<f64>().map_err(|e| format!("{s}: {e}"));
        let (x, y) = (num(x)?, num(y)?);
        if x <= 0.0 || y <= 0.0 {
            continue;
        }
        match series.iter_mut().find(|s| s.0 == name) {
            Some(s) => s.1.push((x, y)),
            None => series.push((name.to_string(), vec![(x, y)])),
        }
    }
    if series.is_empty() {
        return Err("no points to plot".into());
    }
    Ok((title, series))
}

/// The SVG of the series in `csv`, x as ranks (powers of two), y in decades.
pub fn render(csv: &str) -> Result<String, String> {
    let (title, series) = parse(csv)?;
    let points = || series.iter().flat_map(|s| s.1.iter());
    let (ymin, ymax) = points().fold((f64::MAX, 0f64), |(lo, hi), &(_, y)| (lo.min(y), hi.max(y)));
    let (xmin, xmax) = points().fold((f64::MAX, 0f64), |(lo, hi), &(x, _)| (lo.min(x), hi.max(x)));
    let ylog = (ymin.log10().floor(), ymax.log10().ceil());
    let xlog = (xmin.log10(), xmax.log10().max(xmin.log10() + 1e-9));
    let x_px = (LEFT, WIDTH - RIGHT);
    let y_px = (HEIGHT - BOTTOM, TOP);

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="18" text-anchor="middle">{title}</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0
    );
    for e in (ylog.0 as i32)..=(ylog.1 as i32) {
        let y = scale(10f64.powi(e), ylog, y_px);
        let _ = writeln!(
            svg,
            r##"<line x1="{}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#dddddd"/><text x="{}" y="{:.1}" text-anchor="end">1e{e}</text>"##,
            x_px.0,
            x_px.1,
            x_px.0 - 6.0,
            y + 4.0
        );
    }
    let mut p = 1.0f64;
    while p <= xmax * 1.0001 {
        if p >= xmin * 0.9999 {
            let x = scale(p, xlog, x_px);
            let _ = writeln!(
                svg,
                r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#eeeeee"/><text x="{x:.1}" y="{}" text-anchor="middle">{p}</text>"##,
                y_px.0,
                y_px.1,
                y_px.0 + 16.0
            );
        }
        p *= 2.0;
    }
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="{}" text-anchor="middle">ranks P</text>"#,
        (x_px.0 + x_px.1) / 2.0,
        HEIGHT - 10.0
    );
    let _ = writeln!(
        svg,
        r##"<rect x="{}" y="{}" width="{}" height="{}" fill="none" stroke="#333333"/>"##,
        x_px.0,
        y_px.1,
        x_px.1 - x_px.0,
        y_px.0 - y_px.1
    );
    for (i, (name, points)) in series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let path: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", scale(x, xlog, x_px), scale(y, ylog, y_px)))
            .collect();
        let dash = if name == "lower bound" {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        };
        let _ = writeln!(
            svg,
            r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>"#,
            path.join(" ")
        );
        let ly = TOP + 20.0 + 22.0 * i as f64;
        let lx = WIDTH - RIGHT + 15.0;
        let _ = writeln!(
            svg,
            r#"<line x1="{lx}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/><text x="{}" y="{}">{name}</text>"#,
            lx + 25.0,
            lx + 32.0,
            ly + 4.0
        );
    }
    svg.push_str("</svg>\n");
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_becomes_a_polyline_and_a_legend_entry() {
        let csv =
            "# title: t\nseries,x,y\na,2,10\na,4,5\nlower bound,2,3\nlower bound,4,1\nb,4,0\n";
        let svg = render(csv).unwrap();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(">lower bound</text>") && svg.contains("stroke-dasharray"));
        assert!(render("series,x,y\n").is_err());
        assert!(render("a,1\n").is_err());
    }
}
