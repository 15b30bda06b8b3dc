//! Matrix norms: [`norm_fro`], [`norm_max`], [`norm_one`] and [`norm_inf`], as LAPACK's
//! `lange` computes them (`F`, `M`, `O`, `I`); and [`max_abs_finite`], the factorisations' one-pass
//! check of their input.
//!
//! Element magnitudes are moduli `|a_ij|` (for complex scalars `√(re² + im²)`, not faer's
//! `|re| + |im|`). A NaN anywhere in the matrix makes every norm NaN, as in LAPACK 3.x; the
//! padding between columns of a view is never read.

use crate::simd::widest;
use crate::{KernelScalar, MatRef};
use redblue_core::{RealScalar, Scalar};

/// Whether a real value is NaN (the only value not comparable with itself).
fn is_nan<R: RealScalar>(x: R) -> bool {
    x.partial_cmp(&x).is_none()
}

/// The larger of `acc` and `x`, where a NaN on either side wins.
fn max_nan<R: RealScalar>(acc: R, x: R) -> R {
    if x > acc || is_nan(x) {
        x
    } else {
        acc
    }
}

/// The Frobenius norm `√(Σ |a_ij|²)`, without overflow or underflow in the intermediate sums
/// (faer's scaled three-accumulator `norm_l2`). Zero for an empty matrix.
pub fn norm_fro<T: KernelScalar>(a: MatRef<'_, T>) -> <T as Scalar>::Real {
    if a.nrows() == 0 || a.ncols() == 0 {
        return <T as Scalar>::Real::zero();
    }
    a.to_faer().norm_l2()
}

/// The max norm `max |a_ij|` (not a matrix norm, but what LAPACK's `lange('M')` returns).
/// Zero for an empty matrix.
pub fn norm_max<T: Scalar>(a: MatRef<'_, T>) -> T::Real {
    let mut acc = T::Real::zero();
    for j in 0..a.ncols() {
        for &x in a.col(j) {
            acc = max_nan(acc, x.abs());
        }
    }
    acc
}

/// The one norm `max_j Σ_i |a_ij|`: the largest column sum. Zero for an empty matrix.
pub fn norm_one<T: Scalar>(a: MatRef<'_, T>) -> T::Real {
    let mut acc = T::Real::zero();
    for j in 0..a.ncols() {
        let sum = a.col(j).iter().map(|&x| x.abs()).sum();
        acc = max_nan(acc, sum);
    }
    acc
}

/// The infinity norm `max_i Σ_j |a_ij|`: the largest row sum (the one norm of `Aᵀ`). Zero for
/// an empty matrix.
pub fn norm_inf<T: Scalar>(a: MatRef<'_, T>) -> T::Real {
    let mut rows = vec![T::Real::zero(); a.nrows()];
    for j in 0..a.ncols() {
        for (r, &x) in rows.iter_mut().zip(a.col(j)) {
            *r += x.abs();
        }
    }
    rows.into_iter().fold(T::Real::zero(), max_nan)
}

widest! {
    /// The largest modulus `|x|` of the elements `xs` (0 when empty) and whether every element is
    /// finite, in one pass of eight independent lanes without early exit, so that it vectorises (a
    /// `NaN` is skipped by the maximum and caught by the finiteness flag): the factorisations'
    /// check of their input. Compiled for the CPU's widest vectors.
    ///
    /// # Examples
    /// ```
    /// use redblue_kernels::max_abs_finite;
    ///
    /// assert_eq!(max_abs_finite(&[1.0, -3.0, 2.0]), (3.0, true));
    /// assert!(!max_abs_finite(&[1.0, f64::NAN]).1);
    /// ```
    pub fn max_abs_finite<T: Scalar>(xs: &[T]) -> (f64, bool) = max_abs_finite_body
}

#[inline(always)]
fn max_abs_finite_body<T: Scalar>(xs: &[T]) -> (f64, bool) {
    if !T::IS_COMPLEX {
        return max_finite(xs, |x| x.abs().to_f64());
    }
    // The modulus is the root of the largest square: `hypot` on every element is a libm call
    // (a tenth of a complex LU's time). A square that overflows (`|x|` above about 1e154) is
    // found again the slow, exact way.
    let (square, finite) = max_finite(xs, |x| {
        let (re, im) = (x.re().to_f64(), x.im().to_f64());
        re * re + im * im
    });
    if square.is_finite() || !finite {
        (square.sqrt(), finite)
    } else {
        max_finite(xs, |x| x.abs().to_f64())
    }
}

/// The largest `size(x)` of the elements `xs` (0 when empty) and whether every element is
/// finite, in eight independent lanes.
#[inline(always)]
fn max_finite<T: Scalar>(xs: &[T], size: impl Fn(T) -> f64) -> (f64, bool) {
    const LANES: usize = 8;
    let (mut max, mut finite) = ([0.0f64; LANES], [true; LANES]);
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for ((m, f), &x) in max.iter_mut().zip(&mut finite).zip(chunk) {
            let a = size(x);
            *m = if a > *m { a } else { *m };
            *f &= x.is_finite();
        }
    }
    for (l, &x) in tail.iter().enumerate() {
        let a = size(x);
        max[l] = if a > max[l] { a } else { max[l] };
        finite[l] &= x.is_finite();
    }
    (
        max.into_iter().fold(0.0, f64::max),
        finite.into_iter().all(|f| f),
    )
}

#[cfg(test)]
mod max_abs_tests {
    use super::*;
    use redblue_core::c64 as Complex64;

    #[test]
    fn max_abs_finite_sees_every_lane_and_the_tail() {
        assert_eq!(max_abs_finite::<f64>(&[]), (0.0, true));
        // Lengths around the lane count; the largest in each position once.
        for len in 1..20 {
            for at in 0..len {
                let mut xs = vec![0.5f64; len];
                xs[at] = -3.0;
                assert_eq!(max_abs_finite(&xs), (3.0, true), "len {len}, at {at}");
                xs[at] = f64::NAN;
                assert!(!max_abs_finite(&xs).1, "NaN at {at} of {len}");
                xs[at] = f64::NEG_INFINITY;
                assert!(!max_abs_finite(&xs).1, "-Inf at {at} of {len}");
            }
        }
        let z = [Complex64::new(3.0, 4.0), Complex64::new(-1.0, 0.0)];
        assert_eq!(max_abs_finite(&z), (5.0, true));
        // Squares that overflow: the modulus all the same.
        let big = [Complex64::new(3e200, 4e200), Complex64::new(1.0, 0.0)];
        let (m, f) = max_abs_finite(&big);
        assert!(f && (m / 5e200 - 1.0).abs() < 1e-15, "{m}");
        let c32 = [redblue_core::c32::new(3e30, 4e30)];
        let (m, f) = max_abs_finite(&c32);
        assert!(f && (m - 5e30).abs() < 1e24, "{m}");
        assert!(!max_abs_finite(&[Complex64::new(0.0, f64::INFINITY)]).1);
    }
}
