//! Triangular copies: [`copy_triangle`] (one triangle onto another matrix, the rest of it
//! untouched) and [`extract_triangle`] (a triangular factor with explicit zeros, e.g. `L` and
//! `U` out of [`getrf`](crate::getrf)'s packed result).
//!
//! Both work on any `m × n` shape: the lower triangle is the elements `i ≥ j`, the upper one
//! `i ≤ j` (trapezoids when the matrix is not square).

use crate::{KernelError, MatMut, MatRef};
use redblue_core::{Diag, Scalar, Uplo};
use std::ops::Range;

/// The rows of column `j` in the `uplo` triangle of an `m`-row matrix, diagonal included
/// (empty when the triangle has no element in that column).
fn rows(uplo: Uplo, m: usize, j: usize) -> Range<usize> {
    match uplo {
        Uplo::Lower => j.min(m)..m,
        Uplo::Upper => 0..(j + 1).min(m),
    }
}

fn check_same_shape<T>(
    kernel: &'static str,
    src: &MatRef<'_, T>,
    dst: &MatMut<'_, T>,
) -> Result<(), KernelError> {
    if src.shape() != dst.shape() {
        return Err(KernelError::ShapeMismatch {
            kernel,
            operand: "dst",
            expected: src.shape(),
            found: dst.shape(),
        });
    }
    Ok(())
}

/// Copies the `uplo` triangle of `src` (diagonal included) into the same triangle of `dst`;
/// the other triangle of `dst` is not read or written, and that of `src` is not read.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if the shapes differ; `dst` is not touched then.
pub fn copy_triangle<T: Copy>(
    uplo: Uplo,
    src: MatRef<'_, T>,
    mut dst: MatMut<'_, T>,
) -> Result<(), KernelError> {
    check_same_shape("copy_triangle", &src, &dst)?;
    let m = src.nrows();
    for j in 0..src.ncols() {
        let r = rows(uplo, m, j);
        dst.col_mut(j)[r.clone()].copy_from_slice(&src.col(j)[r]);
    }
    Ok(())
}

/// Writes the triangular matrix held in the `uplo` triangle of `src` to the whole of `dst`:
/// that triangle copied, zeros in the other one, and with [`Diag::Unit`] ones on the diagonal
/// (the diagonal of `src` is then not read). Only the `uplo` triangle of `src` is read.
///
/// After `getrf` on an `m × n` matrix `A` with `k = min(m, n)`, `L` is
/// `extract_triangle(Lower, Unit, a.submatrix(0, 0, m, k), l)` and `U` is
/// `extract_triangle(Upper, NonUnit, a.submatrix(0, 0, k, n), u)`.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if the shapes differ; `dst` is not touched then.
///
/// # Examples
/// ```
/// use redblue_core::{Diag, Uplo};
/// use redblue_kernels::{extract_triangle, Mat};
///
/// let a = Mat::from_fn(2, 3, |i, j| (1 + i + 10 * j) as f64); // [1 11 21; 2 12 22]
/// let mut l = Mat::from_fn(2, 3, |_, _| f64::NAN);
/// extract_triangle(Uplo::Lower, Diag::Unit, a.as_ref(), l.as_mut())?;
/// assert_eq!(l.as_slice(), &[1.0, 2.0, 0.0, 1.0, 0.0, 0.0]);
/// # Ok::<(), redblue_kernels::KernelError>(())
/// ```
pub fn extract_triangle<T: Scalar>(
    uplo: Uplo,
    diag: Diag,
    src: MatRef<'_, T>,
    mut dst: MatMut<'_, T>,
) -> Result<(), KernelError> {
    check_same_shape("extract_triangle", &src, &dst)?;
    let m = src.nrows();
    for j in 0..src.ncols() {
        let r = rows(uplo, m, j);
        let s = src.col(j);
        let d = dst.col_mut(j);
        d[..r.start].fill(T::zero());
        d[r.end..].fill(T::zero());
        d[r.clone()].copy_from_slice(&s[r]);
        if diag == Diag::Unit && j < m {
            d[j] = T::one();
        }
    }
    Ok(())
}
