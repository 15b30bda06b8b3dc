//! criterion benchmarks of redblue live in this package's `[[bench]]` targets; run them with
//! `cargo bench -p redblue-benches`.

/// The median of `xs` (the mean of the middle two for an even count; NaN-free input).
pub fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.is_empty() {
        f64::NAN
    } else if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}
