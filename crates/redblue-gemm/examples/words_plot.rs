//! Writes an SVG plot (to stdout) of the words each rank receives, by the cost model, against
//! the number of ranks, for COSMA, SUMMA, 2.5D and Cannon on `m = n = k = 16384` with unlimited memory,
//! and the lower bound. `cargo xtask plot` writes it to `book/src/img/gemm-words.svg`.

use redblue_gemm::{parallel_lower_bound, Algorithm, GemmShape, PlanOptions};
use std::fmt::Write;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 80.0;
const RIGHT: f64 = 170.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 50.0;

/// A curve: name, colour, points `(P, words)`.
type Series = (String, &'static str, Vec<(f64, f64)>);

/// Maps `log10(v)` in `[lo, hi]` to `[a, b]`.
fn scale(v: f64, (lo, hi): (f64, f64), (a, b): (f64, f64)) -> f64 {
    a + (v.log10() - lo) / (hi - lo) * (b - a)
}

fn main() {
    let shape = GemmShape::new(16384, 16384, 16384);
    let mut ranks: Vec<usize> = (0..=12)
        .flat_map(|e| [1usize << e, 3 << e])
        .filter(|&p| p <= 4096)
        .collect();
    ranks.sort_unstable();
    let options = PlanOptions::default();
    let mut series: Vec<Series> = Vec::new();
    for (algorithm, colour) in [
        (Algorithm::Cosma, "#c0392b"),
        (Algorithm::Summa, "#2471a3"),
        (Algorithm::TwoAndHalfD, "#27ae60"),
        (Algorithm::Cannon, "#8e44ad"),
    ] {
        let points = ranks
            .iter()
            .filter(|&&p| p > 1)
            .map(|&p| {
                let s = algorithm
                    .schedule(shape, p, &options)
                    .expect("unlimited memory plans");
                (p as f64, s.cost(shape, p).words_received_max as f64)
            })
            // A log plot: a schedule that leaves all work on one rank moves nothing.
            .filter(|&(_, words)| words > 0.0)
            .collect();
        series.push((algorithm.to_string(), colour, points));
    }
    let bound = ranks
        .iter()
        .filter(|&&p| p > 1)
        .map(|&p| (p as f64, parallel_lower_bound(shape, p, None)))
        .filter(|&(_, words)| words > 0.0)
        .collect();
    series.push(("lower bound".into(), "#555555", bound));

    let all = series.iter().flat_map(|s| s.2.iter());
    let (ymin, ymax) = all.fold((f64::MAX, 0f64), |(lo, hi), &(_, y)| (lo.min(y), hi.max(y)));
    let ylog = (ymin.log10().floor(), ymax.log10().ceil());
    let xlog = (2f64.log10(), 4096f64.log10());
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
        r#"<text x="{}" y="18" text-anchor="middle">words received per rank (model), m = n = k = 16384, unlimited memory</text>"#,
        (LEFT + WIDTH - RIGHT) / 2.0
    );
    // Axes, ticks and grid lines (decades on y, powers of two on x).
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
    for e in 1..=12 {
        let p = (1u32 << e) as f64;
        let x = scale(p, xlog, x_px);
        let _ = writeln!(
            svg,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#eeeeee"/><text x="{x:.1}" y="{}" text-anchor="middle">{p}</text>"##,
            y_px.0,
            y_px.1,
            y_px.0 + 16.0
        );
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
    for (i, (name, colour, points)) in series.iter().enumerate() {
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
    print!("{svg}");
}
