//! The closed forms COnfCHOX is compared with: the lower bound of seed 000 and ScaLAPACK's
//! `PxPOTRF` model of seed 002, in words per rank.

/// The lower bound on the words a rank moves in a Cholesky factorisation of order `n` on `p`
/// ranks with `m` words of memory each (seed 000, digest T6): `N³/(3P√M) + N²/(2P) + N/P`.
pub fn cholesky_lower_bound(n: f64, p: f64, m: f64) -> f64 {
    n * n * n / (3.0 * p * m.sqrt()) + n * n / (2.0 * p) + n / p
}

/// ScaLAPACK's `PxPOTRF` on a `√P × √P` grid with blocks of `b` (seed 002 §3.7, digest T10),
/// words along the critical path: `(n·b/4 + n²/√P)·log₂ P`.
pub fn two_d_cholesky_words(n: f64, p: f64, b: f64) -> f64 {
    (n * b / 4.0 + n * n / p.sqrt()) * p.log2().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_s_worked_numbers() {
        // Digest T6: N = 16384, P = 512, M = N²/64: the Cholesky bound is 1,660,277.
        let n = 16384.0;
        let bound = cholesky_lower_bound(n, 512.0, n * n / 64.0);
        assert!((bound - 1_660_277.0).abs() < 1.0, "{bound}");
        // Digest T10: n = 16384, P = 64, b = 2048: 251,658,240 words.
        assert_eq!(two_d_cholesky_words(n, 64.0, 2048.0), 251_658_240.0);
    }
}
