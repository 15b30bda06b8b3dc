//! Seeded random matrix elements as pure functions of (global row, global column, seed): the
//! same matrix on any number of ranks and in any layout, with no generator state to share.
//!
//! Each element hashes `(i, j, seed)` through three rounds of SplitMix64's finaliser (a
//! bijection of 64 bits that flips about half the output bits for any flipped input bit), so
//! every bit of the seed, the row and the column reaches every bit of the result, and matrices
//! of different seeds are uncorrelated. A complex element takes its imaginary part from a
//! fourth round.
//!
//! ```
//! use redblue_core::random::{normal, uniform};
//!
//! let a: f64 = uniform(3, 4, 7);
//! assert!((-1.0..1.0).contains(&a));
//! assert_eq!(a, uniform::<f64>(3, 4, 7)); // a function, not a stream
//! assert_ne!(a, uniform::<f64>(3, 4, 8));
//! let z: redblue_core::c64 = normal(0, 0, 1);
//! assert!(z.im != 0.0);
//! ```

use crate::Scalar;

/// SplitMix64's output function: a bijection on 64 bits with full avalanche.
#[inline]
pub const fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The golden-ratio increment of SplitMix64, so that seed 0 and index 0 do not hash to 0.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

/// 64 random bits for element `(i, j)` of matrix `seed`, and 64 more for a second part.
#[inline]
fn bits(i: usize, j: usize, seed: u64) -> (u64, u64) {
    let s = mix64(seed.wrapping_add(GOLDEN));
    let r = mix64(s ^ (i as u64).wrapping_mul(GOLDEN));
    let h = mix64(r.wrapping_add(j as u64) ^ GOLDEN.rotate_left(32));
    (h, mix64(h ^ GOLDEN))
}

/// The top 53 bits as a double in `[0, 1)`.
#[inline]
fn unit(h: u64) -> f64 {
    (h >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// Element `(i, j)` of the matrix `seed` with entries uniform in `[−1, 1)` (real and imaginary
/// parts independently for complex types): mean 0, variance 1/3 per part.
#[inline]
pub fn uniform<T: Scalar>(i: usize, j: usize, seed: u64) -> T {
    let (re, im) = bits(i, j, seed);
    T::from_f64_parts(2.0 * unit(re) - 1.0, 2.0 * unit(im) - 1.0)
}

/// Element `(i, j)` of the matrix `seed` with standard normal entries (Box–Muller): `N(0, 1)`
/// for real types; for complex types `(x + iy)/√2` with `x, y` independent `N(0, 1)`, so that
/// `E|z|² = 1`.
#[inline]
pub fn normal<T: Scalar>(i: usize, j: usize, seed: u64) -> T {
    let (a, b) = bits(i, j, seed);
    // 1 − unit is in (0, 1]: the logarithm is finite.
    let radius = (-2.0 * (1.0 - unit(a)).ln()).sqrt();
    let angle = std::f64::consts::TAU * unit(b);
    let (sin, cos) = angle.sin_cos();
    if T::IS_COMPLEX {
        let s = std::f64::consts::FRAC_1_SQRT_2;
        T::from_f64_parts(s * radius * cos, s * radius * sin)
    } else {
        T::from_f64_parts(radius * cos, 0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{c32, c64, RealScalar};

    const N: usize = 200;

    fn matrix(seed: u64) -> Vec<f64> {
        (0..N * N).map(|k| uniform(k % N, k / N, seed)).collect()
    }

    /// Pearson correlation of two equally long samples.
    fn correlation(x: &[f64], y: &[f64]) -> f64 {
        let n = x.len() as f64;
        let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
        let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
        for (a, b) in x.iter().zip(y) {
            sxy += (a - mx) * (b - my);
            sxx += (a - mx) * (a - mx);
            syy += (b - my) * (b - my);
        }
        sxy / (sxx * syy).sqrt()
    }

    /// With 40 000 samples the correlation of independent matrices has standard deviation
    /// 0.005; 0.03 is six of them.
    const UNCORRELATED: f64 = 0.03;

    #[test]
    fn different_seeds_give_uncorrelated_matrices() {
        let base = matrix(1);
        for seed in [0, 2, 3, 5, 1 << 48, u64::MAX] {
            let r = correlation(&base, &matrix(seed));
            assert!(r.abs() < UNCORRELATED, "seed {seed}: correlation {r}");
        }
    }

    #[test]
    fn every_bit_of_the_seed_changes_the_matrix() {
        for seed in [0u64, 1, 0xDEAD_BEEF] {
            let base = matrix(seed);
            for bit in 0..64 {
                let other = matrix(seed ^ (1 << bit));
                let same = base.iter().zip(&other).filter(|(a, b)| a == b).count();
                assert_eq!(same, 0, "seed {seed} bit {bit}: {same} equal elements");
                let r = correlation(&base, &other);
                assert!(r.abs() < UNCORRELATED, "seed {seed} bit {bit}: {r}");
            }
        }
    }

    #[test]
    fn neighbouring_rows_and_columns_are_uncorrelated() {
        let a = matrix(9);
        let rows: Vec<f64> = (0..N - 1)
            .flat_map(|j| (0..N).map(move |i| (i, j)))
            .map(|(i, j)| a[i + (j + 1) * N])
            .collect();
        let first: Vec<f64> = a[..N * (N - 1)].to_vec();
        assert!(correlation(&first, &rows).abs() < UNCORRELATED);
        let down: Vec<f64> = (0..N * N - 1).map(|k| a[k + 1]).collect();
        assert!(correlation(&a[..N * N - 1], &down).abs() < UNCORRELATED);
        // The transpose is another matrix, not the same one.
        let t: Vec<f64> = (0..N * N).map(|k| a[k / N + (k % N) * N]).collect();
        assert!(correlation(&a, &t).abs() < UNCORRELATED);
    }

    #[test]
    fn uniform_has_the_moments_of_uniform_minus_one_to_one() {
        let a = matrix(4);
        let n = a.len() as f64;
        let mean = a.iter().sum::<f64>() / n;
        let var = a.iter().map(|x| x * x).sum::<f64>() / n - mean * mean;
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((var - 1.0 / 3.0).abs() < 0.01, "{var}");
        assert!(a.iter().all(|x| (-1.0..1.0).contains(x)));
        // Ten equal bins hold about a tenth each.
        let mut bins = [0usize; 10];
        for x in &a {
            bins[((x + 1.0) * 5.0) as usize] += 1;
        }
        for b in bins {
            assert!((b as f64 / n - 0.1).abs() < 0.005, "{bins:?}");
        }
    }

    #[test]
    fn normal_has_mean_zero_and_variance_one_for_every_scalar() {
        fn moments<T: Scalar>() -> (f64, f64) {
            let v: Vec<T> = (0..N * N).map(|k| normal(k % N, k / N, 11)).collect();
            let n = v.len() as f64;
            let mean = v
                .iter()
                .map(|x| x.re().to_f64() + x.im().to_f64())
                .sum::<f64>()
                / n;
            let var = v.iter().map(|x| x.abs_sqr().to_f64()).sum::<f64>() / n;
            (mean, var)
        }
        for (name, (mean, var)) in [
            ("f32", moments::<f32>()),
            ("f64", moments::<f64>()),
            ("c32", moments::<c32>()),
            ("c64", moments::<c64>()),
        ] {
            assert!(mean.abs() < 0.02, "{name}: mean {mean}");
            assert!((var - 1.0).abs() < 0.03, "{name}: E|x|² {var}");
        }
    }

    #[test]
    fn complex_parts_are_independent_and_real_types_agree() {
        let z: Vec<c64> = (0..N * N).map(|k| uniform(k % N, k / N, 2)).collect();
        let re: Vec<f64> = z.iter().map(|z| z.re).collect();
        let im: Vec<f64> = z.iter().map(|z| z.im).collect();
        assert!(correlation(&re, &im).abs() < UNCORRELATED);
        // The real part of a complex matrix is the real matrix of the same seed, in every
        // precision, so runs in different types factor the same problem.
        assert_eq!(re, matrix(2));
        let f: f32 = uniform(5, 6, 2);
        assert_eq!(f, re[5 + 6 * N] as f32);
        assert_eq!(
            <f32 as RealScalar>::from_f64(re[7]),
            uniform::<f32>(7, 0, 2)
        );
    }
}
