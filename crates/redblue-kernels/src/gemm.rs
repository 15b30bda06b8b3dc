//! [`gemm`]: `C = alpha·op(A)·op(B) + beta·C`, and the argument handling it shares with
//! `gemmt` and the reference kernels (shape checks, `beta` scaling, `op` as faer views).

use crate::system::matmul;
use crate::view::{faer_col, faer_col_mut};
use crate::{KernelError, KernelScalar, MatMut, MatRef, Par};
use faer::prelude::ReborrowMut;
use faer::{Accum, Conj};
use redblue_core::{Op, Scalar};
use std::ops::Range;

/// Checks the shapes of a product `C = op(A)·op(B)` and returns `(m, n, k)`: `op(A)` is
/// `m × k`, `op(B)` is `k × n` and `C` is `m × n`.
pub(crate) fn product_dims(
    kernel: &'static str,
    a: (usize, usize),
    op_a: Op,
    b: (usize, usize),
    op_b: Op,
    c: (usize, usize),
) -> Result<(usize, usize, usize), KernelError> {
    let (m, k) = op_a.apply_shape(a);
    let (kb, n) = op_b.apply_shape(b);
    if kb != k {
        return Err(KernelError::ShapeMismatch {
            kernel,
            operand: "op(B)",
            expected: (k, n),
            found: (kb, n),
        });
    }
    if c != (m, n) {
        return Err(KernelError::ShapeMismatch {
            kernel,
            operand: "C",
            expected: (m, n),
            found: c,
        });
    }
    Ok((m, n, k))
}

/// `C[rows(j), j] = beta·C[rows(j), j]` for every column `j`; `beta = 0` writes zeros without
/// reading `C`, `beta = 1` does nothing.
pub(crate) fn scale_rows<T: Scalar>(
    c: &mut MatMut<'_, T>,
    beta: T,
    rows: impl Fn(usize) -> Range<usize>,
) {
    if beta == T::one() {
        return;
    }
    for j in 0..c.ncols() {
        let col = &mut c.col_mut(j)[rows(j)];
        if beta == T::zero() {
            col.fill(T::zero());
        } else {
            for x in col {
                *x = beta * *x;
            }
        }
    }
}

/// Prepares `C` for `C = beta·C + (product)` done with faer's `Accum`: `beta = 0` gives
/// `Replace` (faer does not read `C` then), `beta = 1` gives `Add`, any other `beta` scales the
/// `rows(j)` part of `C` first and gives `Add`.
pub(crate) fn accumulate_into<T: Scalar>(
    c: &mut MatMut<'_, T>,
    beta: T,
    rows: impl Fn(usize) -> Range<usize>,
) -> Accum {
    if beta == T::zero() {
        Accum::Replace
    } else {
        scale_rows(c, beta, rows);
        Accum::Add
    }
}

/// `op(A)` as a faer view and a conjugation flag: transposes are free views, and the
/// conjugation of `ConjTrans` is applied inside faer's kernel. Real types never ask for
/// conjugation, so they stay on the plain path.
pub(crate) fn op_view<T: KernelScalar>(
    a: faer::MatRef<'_, T>,
    op: Op,
) -> (faer::MatRef<'_, T>, Conj) {
    match op {
        Op::NoTrans => (a, Conj::No),
        Op::Trans => (a.transpose(), Conj::No),
        Op::ConjTrans if T::IS_COMPLEX => (a.transpose(), Conj::Yes),
        Op::ConjTrans => (a.transpose(), Conj::No),
    }
}

/// `dst = srcᵀ` for `src` `n × k` and `dst` `k × n`, both with row stride 1; copied in tiles
/// that stay in L1.
///
/// # Panics
/// If the shapes do not match or a row stride is not 1.
pub(crate) fn transpose_copy<T: Copy>(src: faer::MatRef<'_, T>, mut dst: faer::MatMut<'_, T>) {
    const TILE: usize = 32;
    let (n, k) = (src.nrows(), src.ncols());
    assert!(
        dst.nrows() == k && dst.ncols() == n,
        "transpose_copy: shapes do not match"
    );
    let mut tile: [&[T]; TILE] = [&[]; TILE];
    for j0 in (0..n).step_by(TILE) {
        let j1 = (j0 + TILE).min(n);
        for l0 in (0..k).step_by(TILE) {
            let l1 = (l0 + TILE).min(k);
            // The tile's pieces of the source columns l0..l1, then one destination column
            // (a source row) at a time.
            for (t, l) in tile.iter_mut().zip(l0..l1) {
                *t = &faer_col(src, l)[j0..j1];
            }
            for j in j0..j1 {
                let d = &mut faer_col_mut(dst.rb_mut(), j)[l0..l1];
                for (x, s) in d.iter_mut().zip(&tile) {
                    *x = s[j - j0];
                }
            }
        }
    }
}

/// General matrix product: `C = alpha·op(A)·op(B) + beta·C` with `op(X)` one of `X`, `Xᵀ`,
/// `Xᴴ`.
///
/// `op(A)` is `m × k`, `op(B)` is `k × n` and `C` is `m × n`; any of `m`, `n`, `k` may be zero.
/// BLAS semantics: when `beta = 0`, `C` is not read (a NaN or infinity in `C` does not reach
/// the result); when `alpha = 0` or `k = 0`, `A` and `B` are not read and `C = beta·C`.
///
/// `C` is scaled by `beta` first (unless `beta` is 0 or 1), then the product is added to it (or
/// written, when `beta = 0`) by the crate's matmul with `par` threads: the `gemm` crate's
/// kernels for large products, faer's for small ones, the crate's own for narrow real ones on
/// an AVX-512 or AVX2 CPU (at most 16 columns or rows: a solve's updates), the system's
/// `?gemm` with the `blas` feature.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if the shapes do not fit; `C` is not touched then.
///
/// # Examples
/// ```
/// use redblue_core::{c64, Op};
/// use redblue_kernels::{gemm, Mat, Par};
///
/// let a = Mat::from_fn(2, 2, |i, j| c64::new(i as f64, j as f64));
/// let mut c = Mat::from_fn(2, 2, |_, _| c64::new(f64::NAN, 0.0));
/// // C = Aᴴ·A; the NaNs in C are never read because beta = 0.
/// let (one, zero) = (c64::new(1.0, 0.0), c64::new(0.0, 0.0));
/// gemm(one, a.as_ref(), Op::ConjTrans, a.as_ref(), Op::NoTrans, zero, c.as_mut(), Par::Seq)?;
/// assert_eq!(c[(1, 1)], c64::new(3.0, 0.0)); // |A₀₁|² + |A₁₁|² = |i|² + |1 + i|²
/// # Ok::<(), redblue_kernels::KernelError>(())
/// ```
pub fn gemm<T: KernelScalar>(
    alpha: T,
    a: MatRef<'_, T>,
    op_a: Op,
    b: MatRef<'_, T>,
    op_b: Op,
    beta: T,
    mut c: MatMut<'_, T>,
    par: Par,
) -> Result<(), KernelError> {
    let (m, n, k) = product_dims("gemm", a.shape(), op_a, b.shape(), op_b, c.shape())?;
    if m == 0 || n == 0 {
        return Ok(());
    }
    let all_rows = |_| 0..m;
    if k == 0 || alpha == T::zero() {
        scale_rows(&mut c, beta, all_rows);
        return Ok(());
    }
    let accum = accumulate_into(&mut c, beta, all_rows);
    let (lhs, rhs) = (op_view(a.to_faer(), op_a), op_view(b.to_faer(), op_b));
    matmul(c.into_faer(), accum, lhs, rhs, alpha, par);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_copy_copies_every_tile_edge() {
        // 37 × 70 stored with ld 40: neither dimension a multiple of the tile.
        let data: Vec<f64> = (0..40 * 70).map(|x| x as f64).collect();
        let b = MatRef::from_slice(&data, 37, 70, 40).unwrap();
        let mut out = vec![-1.0; 70 * 37];
        transpose_copy(
            b.to_faer(),
            faer::MatMut::from_column_major_slice_mut(&mut out, 70, 37),
        );
        for j in 0..37 {
            for l in 0..70 {
                assert_eq!(out[l + j * 70], b.get(j, l));
            }
        }
    }
}
