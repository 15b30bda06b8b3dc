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

/// `op(B)` is copied to a column-major buffer when it is a row-major view (`op_b` is `T` or
/// `C`) of at least this many bytes: faer 0.24's kernel reads a large row-major right operand
/// at half speed (measured with f64 on this project's AVX-512 machine: 2048³ `N·T` at 32
/// GFLOP/s against 59 for `N·N`; no difference while `op(B)` fits in 512 KiB).
const PACK_RHS_BYTES: usize = 1 << 20;

/// ... and when `op(A)` has at least this many rows, so that the copy (`k·n` moves) is small
/// against the product (`m·k·n` multiply-adds).
const PACK_RHS_MIN_ROWS: usize = 32;

/// `op(B)` as a faer view and a conjugation flag, like [`op_view`], but copied into `packed`
/// as a column-major `k × n` matrix when that makes the product faster (see
/// [`PACK_RHS_BYTES`]). The conjugation of `ConjTrans` stays a flag for faer's kernel.
pub(crate) fn rhs_view<'a, T: KernelScalar>(
    b: MatRef<'a, T>,
    op: Op,
    m: usize,
    packed: &'a mut Vec<T>,
) -> (faer::MatRef<'a, T>, Conj) {
    let (view, conj) = op_view(b.to_faer(), op);
    (pack_rhs(view, m, packed), conj)
}

/// The right operand `rhs` (`k × n`) of a product with `m` rows, copied into `packed` as a
/// column-major matrix if it is a large row-major view (a transposed column-major matrix) and
/// the product has enough rows to pay for the copy; otherwise `rhs` itself.
fn pack_rhs<'a, T: KernelScalar>(
    rhs: faer::MatRef<'a, T>,
    m: usize,
    packed: &'a mut Vec<T>,
) -> faer::MatRef<'a, T> {
    let (k, n) = (rhs.nrows(), rhs.ncols());
    if rhs.row_stride() == 1
        || rhs.col_stride() != 1
        || m < PACK_RHS_MIN_ROWS
        || k * n * std::mem::size_of::<T>() < PACK_RHS_BYTES
    {
        return rhs;
    }
    transpose_into(rhs.transpose(), packed);
    faer::MatRef::from_column_major_slice(packed, k, n)
}

/// `out = bᵀ` as a contiguous column-major matrix, where `b` (`n × k`) has row stride 1.
fn transpose_into<T: Scalar>(b: faer::MatRef<'_, T>, out: &mut Vec<T>) {
    let (n, k) = (b.nrows(), b.ncols());
    out.clear();
    out.resize(k * n, T::zero());
    transpose_copy(b, faer::MatMut::from_column_major_slice_mut(out, k, n));
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
/// The product runs in faer's matmul (`Accum::Replace` when `beta = 0`, otherwise `C` is
/// scaled by `beta` first and faer adds to it), with `par` threads. A large transposed `B` is
/// first copied to column-major order, which faer multiplies about twice as fast. With the
/// `blas` feature it runs in the system's `?gemm` instead.
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
    let lhs = op_view(a.to_faer(), op_a);
    // The system BLAS (with the `blas` feature) takes transposed operands as they are.
    if T::system_matmul(
        c.to_faer(),
        accum,
        lhs,
        op_view(b.to_faer(), op_b),
        alpha,
        par,
    ) {
        return Ok(());
    }
    let mut packed = Vec::new();
    let rhs = rhs_view(b, op_b, m, &mut packed);
    matmul(c.into_faer(), accum, lhs, rhs, alpha, par);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mat;

    #[test]
    fn transpose_into_copies_every_tile_edge() {
        // 37 × 70 stored with ld 40: neither dimension a multiple of the tile.
        let data: Vec<f64> = (0..40 * 70).map(|x| x as f64).collect();
        let b = MatRef::from_slice(&data, 37, 70, 40).unwrap();
        let mut out = vec![-1.0; 3];
        transpose_into(b.to_faer(), &mut out);
        assert_eq!(out.len(), 70 * 37);
        for j in 0..37 {
            for l in 0..70 {
                assert_eq!(out[l + j * 70], b.get(j, l));
            }
        }
    }

    #[test]
    fn rhs_is_packed_only_when_transposed_large_and_worth_it() {
        let big = Mat::<f64>::zeros(400, 400); // 1.28 MB
        let small = Mat::<f64>::zeros(100, 100);
        let mut buf = Vec::new();
        let (v, _) = rhs_view(big.as_ref(), Op::Trans, 64, &mut buf);
        assert_eq!((v.row_stride(), v.col_stride()), (1, 400));
        assert_eq!(buf.len(), 400 * 400);
        let mut buf = Vec::new();
        let (v, _) = rhs_view(big.as_ref(), Op::Trans, 8, &mut buf);
        assert_eq!(v.row_stride(), 400, "few rows in op(A): not worth a copy");
        let (v, _) = rhs_view(small.as_ref(), Op::ConjTrans, 64, &mut buf);
        assert_eq!(v.row_stride(), 100, "fits in cache: not copied");
        let (v, conj) = rhs_view(big.as_ref(), Op::NoTrans, 64, &mut buf);
        assert_eq!((v.row_stride(), conj), (1, Conj::No));
        assert!(buf.is_empty());
    }
}
