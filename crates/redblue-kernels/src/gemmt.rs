//! [`gemmt`]: a matrix product that updates one triangle of a square `C` (`syrk` / `herk` and
//! Cholesky's trailing update).
//!
//! The triangle is split recursively: for the lower triangle,
//! `[C00 ·; C10 C11]`, `C10` is a plain rectangular product and `C00`, `C11` recurse, until a
//! diagonal block is at most [`LEAF`] wide. A leaf is computed whole into a scratch block and
//! only its triangle is added to `C`. So every flop outside the leaves goes through the rectangular
//! matmul (faer's, or the system BLAS's with the `blas` feature) (its fastest and most used path), the extra work is about `LEAF / n` of
//! the triangle's, and the other triangle of `C` is never written by construction.
//!
//! We do not call faer's own triangular matmul (`BlockStructure::TriangularLower`): on x86-64
//! it goes to `private-gemm-x86`'s triangular kernel, which a downstream project traced a wrong
//! sparse Cholesky to (luiswirth/formoniq#122). The recursion above gives the same flop saving
//! on the path we already test as gemm.

use crate::gemm::{accumulate_into, op_view, product_dims, scale_rows};
use crate::system::matmul;
use crate::{KernelError, KernelScalar, MatMut, MatRef, Par};
use faer::prelude::ReborrowMut;
use faer::{Accum, Conj};
use redblue_core::{Op, Uplo};
use std::ops::Range;

/// Diagonal blocks at most this wide are computed whole into scratch.
const LEAF: usize = 64;

/// The rows of column `j` that lie in the `uplo` triangle (diagonal included) of an `n × n`
/// matrix.
fn triangle_rows(uplo: Uplo, n: usize, j: usize) -> Range<usize> {
    match uplo {
        Uplo::Lower => j..n,
        Uplo::Upper => 0..j + 1,
    }
}

/// Triangular matrix product: the `uplo` triangle (diagonal included) of the square `C`
/// becomes that of `alpha·op(A)·op(B) + beta·C`; the other triangle is not read or written.
///
/// `op(A)` is `n × k`, `op(B)` is `k × n` and `C` is `n × n`; `n` and `k` may be zero. The
/// `beta = 0`, `alpha = 0` and `k = 0` rules of [`gemm`](crate::gemm) hold for the triangle.
/// A Hermitian rank-k update (`herk`, `C = alpha·A·Aᴴ + beta·C`) is
/// `gemmt(uplo, alpha, a, Op::NoTrans, a, Op::ConjTrans, beta, c, par)`. Unlike BLAS `herk`,
/// the imaginary parts of the diagonal are not forced to zero: they hold rounding errors of
/// order `ε·‖A‖²`.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if the shapes do not fit (including a non-square `C`); `C`
/// is not touched then.
pub fn gemmt<T: KernelScalar>(
    uplo: Uplo,
    alpha: T,
    a: MatRef<'_, T>,
    op_a: Op,
    b: MatRef<'_, T>,
    op_b: Op,
    beta: T,
    mut c: MatMut<'_, T>,
    par: Par,
) -> Result<(), KernelError> {
    let n = op_a.apply_shape(a.shape()).0;
    let (kb, nb) = op_b.apply_shape(b.shape());
    if nb != n {
        return Err(KernelError::ShapeMismatch {
            kernel: "gemmt",
            operand: "op(B)",
            expected: (kb, n),
            found: (kb, nb),
        });
    }
    let (n, _, k) = product_dims("gemmt", a.shape(), op_a, b.shape(), op_b, c.shape())?;
    if n == 0 {
        return Ok(());
    }
    let rows = |j| triangle_rows(uplo, n, j);
    if k == 0 || alpha == T::zero() {
        scale_rows(&mut c, beta, rows);
        return Ok(());
    }
    let accum = accumulate_into(&mut c, beta, rows);
    let (lhs, conj_lhs) = op_view(a.to_faer(), op_a);
    let (rhs, conj_rhs) = op_view(b.to_faer(), op_b);
    triangle_product(
        uplo,
        c.into_faer(),
        accum,
        alpha,
        (lhs, conj_lhs),
        (rhs, conj_rhs),
        par,
    );
    Ok(())
}

/// The lower part of a product on labelled rows and columns: `C[i, k] += alpha·(A·Bᴴ)[i, k]`
/// for every entry with `rows[i] >= cols[k]`, where `C` holds the rows `rows` and the columns
/// `cols` (both ascending) of a larger matrix — a trailing update's lower triangle on a
/// rank's tiles, whatever rows and columns they are. `A` is `m × k`, `B` is `n × k`.
///
/// Done, and `true`, where the crate's packed kernels run: f32 and f64 on an AVX2 CPU without
/// AVX-512, no system BLAS active, one thread. Elsewhere, or when the labels do not ascend,
/// `false` and `C` untouched: the caller then takes its own path (products per block of
/// columns). Unlike such a path, `A`'s rows are packed once for all the columns.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if the shapes or the labels' lengths do not fit; `C` is not
/// touched then.
pub fn gemm_lower_labelled<T: KernelScalar>(
    alpha: T,
    a: MatRef<'_, T>,
    b: MatRef<'_, T>,
    c: MatMut<'_, T>,
    (rows, cols): (&[usize], &[usize]),
    par: Par,
) -> Result<bool, KernelError> {
    const NAME: &str = "gemm_lower_labelled";
    let (m, n, _) = product_dims(
        NAME,
        a.shape(),
        Op::NoTrans,
        b.shape(),
        Op::ConjTrans,
        c.shape(),
    )?;
    for (operand, labels, len) in [("rows", rows, m), ("cols", cols, n)] {
        if labels.len() != len {
            return Err(KernelError::ShapeMismatch {
                kernel: NAME,
                operand,
                expected: (len, 1),
                found: (labels.len(), 1),
            });
        }
    }
    // Real scalars only take it (their packed kernels do not conjugate `B`).
    if T::IS_COMPLEX || !rows.is_sorted() || !cols.is_sorted() {
        return Ok(false);
    }
    let rhs = op_view(b.to_faer(), Op::ConjTrans).0;
    Ok(T::packed_lower(
        c.into_faer(),
        a.to_faer(),
        rhs,
        alpha,
        (rows, cols),
        par,
    ))
}

/// The core of [`gemmt`] on faer views, for kernels that work on faer views (Cholesky's
/// trailing update): the `uplo` triangle of the square `dst` becomes
/// `accum(dst) + alpha·lhs·rhs`, with each operand conjugated if its flag says so. No shape
/// checks (the caller's) and no packing of a row-major `rhs` (the caller's too).
pub(crate) fn triangle_product<T: KernelScalar>(
    uplo: Uplo,
    dst: faer::MatMut<'_, T>,
    accum: Accum,
    alpha: T,
    (lhs, conj_lhs): (faer::MatRef<'_, T>, Conj),
    (rhs, conj_rhs): (faer::MatRef<'_, T>, Conj),
    par: Par,
) {
    let n = dst.nrows();
    debug_assert!(dst.ncols() == n && lhs.nrows() == n && rhs.ncols() == n);
    if n == 0 {
        return;
    }
    let mut scratch = vec![T::zero(); n.min(LEAF).pow(2)];
    let product = Product {
        uplo,
        accum,
        conj_lhs,
        conj_rhs,
        alpha,
        par,
    };
    product.triangle(dst, lhs, rhs, &mut scratch);
}

/// The parameters that stay fixed through the recursion.
struct Product<T> {
    uplo: Uplo,
    accum: Accum,
    conj_lhs: Conj,
    conj_rhs: Conj,
    alpha: T,
    par: Par,
}

impl<T: KernelScalar> Product<T> {
    /// `dst = accum(dst) + alpha·lhs·rhs` on the full rectangle `dst`.
    fn rectangle(
        &self,
        dst: faer::MatMut<'_, T>,
        lhs: faer::MatRef<'_, T>,
        rhs: faer::MatRef<'_, T>,
    ) {
        matmul(
            dst,
            self.accum,
            (lhs, self.conj_lhs),
            (rhs, self.conj_rhs),
            self.alpha,
            self.par,
        );
    }

    /// The same on the `uplo` triangle of the square `dst` only.
    fn triangle(
        &self,
        dst: faer::MatMut<'_, T>,
        lhs: faer::MatRef<'_, T>,
        rhs: faer::MatRef<'_, T>,
        scratch: &mut [T],
    ) {
        let n = dst.nrows();
        if n <= LEAF {
            let mut tmp = faer::MatMut::from_column_major_slice_mut(&mut scratch[..n * n], n, n);
            matmul(
                tmp.rb_mut(),
                Accum::Replace,
                (lhs, self.conj_lhs),
                (rhs, self.conj_rhs),
                self.alpha,
                self.par,
            );
            let mut dst = dst;
            for j in 0..n {
                for i in triangle_rows(self.uplo, n, j) {
                    dst[(i, j)] = match self.accum {
                        Accum::Replace => tmp[(i, j)],
                        Accum::Add => dst[(i, j)] + tmp[(i, j)],
                    };
                }
            }
            return;
        }
        let h = n / 2;
        let (d00, d01, d10, d11) = dst.split_at_mut(h, h);
        let (l0, l1) = lhs.split_at_row(h);
        let (r0, r1) = rhs.split_at_col(h);
        match self.uplo {
            Uplo::Lower => self.rectangle(d10, l1, r0),
            Uplo::Upper => self.rectangle(d01, l0, r1),
        }
        self.triangle(d00, l0, r0, scratch);
        self.triangle(d11, l1, r1, scratch);
    }
}
