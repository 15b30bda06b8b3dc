//! The words each rank moves in an `N × N` LU on `P` ranks with `M` words of memory each:
//! the lower bound, COnfLUX's per-step model, and the models seed 000 compares against (its
//! Table 2). All are pure formulas, cheap for any `N` and `P`.

use redblue_pipeline::{leading_words, TileGrid};

/// The parallel lower bound on the words some rank moves (seed 000, digest §1.3, pivoting
/// ignored): `(2N³ − 6N² + 4N)/(3P√M) + N(N − 1)/(2P)`, whose leading term is `2N³/(3P√M)`.
///
/// # Examples
/// ```
/// use redblue_lu::lu_lower_bound;
/// let (n, p, m) = (16384.0, 64.0, 16384.0f64 * 16384.0 / 16.0);
/// let lb = lu_lower_bound(n, p, m);
/// assert!((lb - (2.0 * n * n * n - 6.0 * n * n + 4.0 * n) / (3.0 * p * m.sqrt())
///     - n * (n - 1.0) / (2.0 * p)).abs() < 1e-6 * lb);
/// ```
pub fn lu_lower_bound(n: f64, p: f64, m: f64) -> f64 {
    (2.0 * n * n * n - 6.0 * n * n + 4.0 * n) / (3.0 * p * m.sqrt()) + n * (n - 1.0) / (2.0 * p)
}

/// 2D LU (ScaLAPACK / MKL / SLATE): `N²/√P` words per rank, the leading term of Table 2.
pub fn two_d_words(n: f64, p: f64) -> f64 {
    n * n / p.sqrt()
}

/// CANDMC's 2.5D LU, by its authors' model: `5N³/(P√M)`.
pub fn candmc_words(n: f64, p: f64, m: f64) -> f64 {
    5.0 * n * n * n / (p * m.sqrt())
}

/// CAPITAL's 2.5D Cholesky, by its authors' model: `45N³/(8P√M)`.
pub fn capital_words(n: f64, p: f64, m: f64) -> f64 {
    45.0 * n * n * n / (8.0 * p * m.sqrt())
}

/// Seed 001's cost of its 2.5D LU (Solomonik and Demmel, Algorithms 3 and 5) on `c` layers:
/// `W = O(N²/√(cP))` words per rank, the `O(·)` taken as 1 (seed 000 puts CANDMC, the same
/// algorithm, at `5N³/(P√M)`, which with `M = cN²/P` is five times this).
///
/// # Examples
/// ```
/// // 8 layers on 512 ranks: N²/√(8·512) = N²/64 words per rank.
/// let w = redblue_lu::two_five_d_words(16384.0, 512.0, 8.0);
/// assert_eq!(w, 16384.0 * 16384.0 / 64.0);
/// ```
pub fn two_five_d_words(n: f64, p: f64, c: f64) -> f64 {
    n * n / (c * p).sqrt()
}

/// Seed 001's message count of its 2.5D LU: `S = O(√(cP)·log₂ P)`, the `O(·)` taken as 1
/// (`√(cP)` steps of a block `N/√(cP)` wide, a broadcast or reduction of `log₂ P` messages each).
pub fn two_five_d_messages(p: f64, c: f64) -> f64 {
    (c * p).sqrt() * p.log2().max(1.0)
}

/// COnfLUX's leading term, `N³/(P√M)`: 1.5× the bound's.
pub fn conflux_leading_words(n: f64, p: f64, m: f64) -> f64 {
    n * n * n / (p * m.sqrt())
}

/// COnfLUX's words per rank on `grid` to leading order: the pipeline's
/// [`leading_words`] (the 1D→2.5D sends of `L10` and `U01`, `N²/(2c)·(1/Px + 1/Py)`; the layer
/// reductions, `c·N²/P′`; the 1D scatters, `N²/P′`). For a square grid with `c = P·M/N²` the
/// first term is [`conflux_leading_words`].
pub fn conflux_words(n: f64, grid: TileGrid) -> f64 {
    leading_words(n, grid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bound_at_one_rank_is_the_sequential_constant() {
        let (n, m) = (1e5f64, 1e4f64);
        let lb = lu_lower_bound(n, 1.0, m);
        let leading = 2.0 * n * n * n / (3.0 * m.sqrt());
        assert!((lb / leading - 1.0).abs() < 1e-3, "{lb} {leading}");
    }

    #[test]
    fn conflux_is_one_and_a_half_times_the_bound_to_leading_order() {
        // Square grid with c = P·M/N²: the leading terms are N³/(P√M) and 2N³/(3P√M).
        for (n, px, c) in [(1usize << 16, 8, 4), (1 << 18, 16, 4), (1 << 20, 32, 8)] {
            let (n, p) = (n as f64, (px * px * c) as f64);
            let m = c as f64 * n * n / p;
            // Leading terms: exactly 1.5; against the whole bound (with its N²/(2P) term): less.
            let leading_bound = 2.0 * n * n * n / (3.0 * p * m.sqrt());
            assert!((conflux_leading_words(n, p, m) / leading_bound - 1.5).abs() < 1e-12);
            let ratio = conflux_leading_words(n, p, m) / lu_lower_bound(n, p, m);
            assert!(ratio < 1.5 && ratio > 1.3, "{ratio}");
            // The grid model's 2.5D term equals the leading term.
            let grid = TileGrid { px, py: px, c };
            let two_and_half_d = n * n / (c as f64 * px as f64);
            assert!((two_and_half_d / conflux_leading_words(n, p, m) - 1.0).abs() < 1e-12);
            assert!(conflux_words(n, grid) > two_and_half_d);
        }
    }

    #[test]
    fn the_models_of_table_two_rank_as_the_paper_says() {
        // Enough memory for c = P^(1/3): COnfLUX < 2D, and CANDMC 5× COnfLUX's leading term.
        let (n, p) = (16384.0f64, 1024.0f64);
        let m = n * n / p.powf(2.0 / 3.0);
        assert!(conflux_leading_words(n, p, m) < two_d_words(n, p));
        let close = |a: f64, b: f64| (a / b - 1.0).abs() < 1e-12;
        let leading = conflux_leading_words(n, p, m);
        assert!(close(candmc_words(n, p, m), 5.0 * leading));
        assert!(close(capital_words(n, p, m), 45.0 / 8.0 * leading));
        // "Within up to 7× of the bound" (5 / (2/3) = 7.5 on the leading terms).
        assert!(candmc_words(n, p, m) / lu_lower_bound(n, p, m) > 6.5);
    }
}
