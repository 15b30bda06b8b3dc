//! Matrix norms: [`norm_fro`], [`norm_max`], [`norm_one`] and [`norm_inf`], as LAPACK's
//! `lange` computes them (`F`, `M`, `O`, `I`).
//!
//! Element magnitudes are moduli `|a_ij|` (for complex scalars `√(re² + im²)`, not faer's
//! `|re| + |im|`). A NaN anywhere in the matrix makes every norm NaN, as in LAPACK 3.x; the
//! padding between columns of a view is never read.

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
