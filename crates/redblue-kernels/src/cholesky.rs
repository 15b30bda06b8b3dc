//! [`potrf`]: Cholesky factorisation of a Hermitian (symmetric for reals) positive definite
//! matrix, `A = L·Lᴴ` (lower) or `A = Uᴴ·U` (upper).
//!
//! The factorisation is LAPACK's recursive `potrf2`. For the lower triangle: factor `A11`
//! (recursively), `A21 ← A21·L11⁻ᴴ` (the crate's triangular solve, as `conj(L11)·A21ᵀ = A21ᵀ` on
//! the transposed view), `A22 ← A22 − A21·A21ᴴ` on the lower triangle only (the
//! recursion of [`gemmt`](crate::gemmt), which puts every flop outside its small diagonal
//! leaves through the crate's rectangular matmul), then factor `A22`. The upper triangle is the
//! mirror image: `A12 ← U11⁻ᴴ·A12`, `A22 ← A22 − A12ᴴ·A12`. Blocks at most [`POTRF_LEAF`] wide are
//! factored column by column. Measurements against OpenBLAS: the book's kernels page.
//!
//! Why not faer's `cholesky::llt::factor::cholesky_in_place`: its trailing update is faer's
//! triangular matmul (`BlockStructure::TriangularLower`), the path `gemmt` avoids (see there);
//! the recursion here reuses the `gemmt` path that the tests already cover, and reports the
//! failing column exactly as LAPACK does.

use crate::gemmt::triangle_product;
use crate::simd::widest;
use crate::trsm::{conj_flag, Solver};
use crate::view::{faer_col as col, faer_col_mut as col_mut};
use crate::{KernelError, KernelScalar, MatMut, Par};
use faer::prelude::{Reborrow, ReborrowMut};
use faer::{Accum, Conj};
use redblue_core::{Diag, Scalar, Uplo};
use std::cmp::Ordering;

/// Blocks at most this many columns wide are factored column by column: chosen by measurement
/// (`cargo bench -p redblue-benches --bench potrf_leaf`, the book's kernels page): from 16 to
/// 64 the factorisation's time changes by a few percent at most, 8 is slower (more, smaller
/// products) and 128 too (the column-by-column leaf does its `O(leaf³)` flops outside the
/// matmul).
pub const POTRF_LEAF: usize = 32;

/// Cholesky factorisation of the Hermitian positive definite `n × n` matrix `A`, of which only
/// the `uplo` triangle is read: `A = L·Lᴴ` with `L` lower triangular (`Uplo::Lower`) or
/// `A = Uᴴ·U` with `U` upper triangular (`Uplo::Upper`), overwriting that triangle. The other
/// triangle is not read or written. For reals, `Lᴴ = Lᵀ`.
///
/// As in LAPACK, the imaginary parts of the diagonal of a complex `A` are not used (a Hermitian
/// matrix has a real diagonal); the diagonal of the factor is real and positive.
///
/// Runs LAPACK's recursive algorithm on the crate's triangular solve and the `gemmt` recursion with
/// `par` threads (see the module documentation of `cholesky.rs`); with the `blas` feature,
/// the system's LAPACK `?potrf`.
///
/// # Errors
/// * [`KernelError::ShapeMismatch`] if `A` is not square; nothing is written then.
/// * [`KernelError::NotPositiveDefinite`] with the first column `j` whose pivot
///   `a[j, j] − ‖row j of L so far‖²` is not positive (or is NaN): the leading `j × j` block
///   of `A` is positive definite and holds its factor, the rest of the triangle is partly
///   updated (LAPACK's `info = j + 1`).
///
/// # Examples
/// ```
/// use redblue_core::Uplo;
/// use redblue_kernels::{potrf, KernelError, Mat, Par};
///
/// // A = [4 2; 2 5] = L·Lᵀ with L = [2 0; 1 2].
/// let mut a = Mat::from_fn(2, 2, |i, j| [[4.0, 2.0], [2.0, 5.0]][i][j]);
/// potrf(Uplo::Lower, a.as_mut(), Par::Seq)?;
/// assert_eq!((a[(0, 0)], a[(1, 0)], a[(1, 1)]), (2.0, 1.0, 2.0));
/// assert_eq!(a[(0, 1)], 2.0); // the upper triangle is untouched
///
/// // [1 2; 2 1] is indefinite: the pivot of column 1 is 1 − 2² < 0.
/// let mut b = Mat::from_fn(2, 2, |i, j| if i == j { 1.0 } else { 2.0 });
/// assert_eq!(
///     potrf(Uplo::Upper, b.as_mut(), Par::Seq),
///     Err(KernelError::NotPositiveDefinite { column: 1 })
/// );
/// # Ok::<(), KernelError>(())
/// ```
pub fn potrf<T: KernelScalar>(uplo: Uplo, a: MatMut<'_, T>, par: Par) -> Result<(), KernelError> {
    check_square(a.shape())?;
    let mut a = a;
    if let Some(result) = T::system_potrf(uplo, a.rb_mut(), par) {
        return result.map_err(|column| KernelError::NotPositiveDefinite { column });
    }
    factor(uplo, a.into_faer(), par, POTRF_LEAF)
        .map_err(|column| KernelError::NotPositiveDefinite { column })
}

/// [`potrf`]'s recursive algorithm (never the system LAPACK) with blocks at most `leaf` columns
/// wide factored column by column: for measuring [`POTRF_LEAF`].
///
/// # Errors
/// As [`potrf`].
#[doc(hidden)]
pub fn potrf_with_leaf<T: KernelScalar>(
    uplo: Uplo,
    a: MatMut<'_, T>,
    par: Par,
    leaf: usize,
) -> Result<(), KernelError> {
    check_square(a.shape())?;
    factor(uplo, a.into_faer(), par, leaf.max(1))
        .map_err(|column| KernelError::NotPositiveDefinite { column })
}

/// `A` square, or [`KernelError::ShapeMismatch`].
fn check_square((n, nc): (usize, usize)) -> Result<(), KernelError> {
    if nc != n {
        return Err(KernelError::ShapeMismatch {
            kernel: "potrf",
            operand: "A",
            expected: (n, n),
            found: (n, nc),
        });
    }
    Ok(())
}

/// Factors the `uplo` triangle of `a` in place (LAPACK `potrf2`); `Err(j)` names the first
/// column whose pivot is not positive.
fn factor<T: KernelScalar>(
    uplo: Uplo,
    a: faer::MatMut<'_, T>,
    par: Par,
    leaf: usize,
) -> Result<(), usize> {
    let n = a.nrows();
    if n <= leaf {
        return match uplo {
            Uplo::Lower => factor_unblocked(a),
            Uplo::Upper => factor_unblocked_upper(a),
        };
    }
    // Split about in half, on a multiple of 16 (or 8), like the LU.
    let half = n / 2;
    let n1 = half.next_multiple_of(half.next_power_of_two().min(16));
    debug_assert!(0 < n1 && n1 < n);
    let conj = conj_flag::<T>();
    let lower_solver = Solver {
        lower: true,
        diag: Diag::NonUnit,
        conj,
        par,
    };
    let (mut a11, mut a12, mut a21, mut a22) = a.split_at_mut(n1, n1);
    factor(uplo, a11.rb_mut(), par, leaf)?;
    match uplo {
        Uplo::Lower => {
            // A21·L11ᴴ = A21₀  ⇔  conj(L11)·A21ᵀ = A21₀ᵀ, solved on the row-major view A21ᵀ
            // (the `gemm` crate's kernels under the solver take row-major operands at full
            // speed; faer's own solve did not, and needed a column-major copy).
            lower_solver.solve(a11.rb(), a21.rb_mut().transpose_mut());
            triangle_product(
                Uplo::Lower,
                a22.rb_mut(),
                Accum::Add,
                -T::one(),
                (a21.rb(), Conj::No),
                (a21.rb().transpose(), conj),
                par,
            );
        }
        Uplo::Upper => {
            // U11ᴴ·A12 = A12₀, with U11ᴴ = conj(U11ᵀ) lower triangular.
            lower_solver.solve(a11.rb().transpose(), a12.rb_mut());
            triangle_product(
                Uplo::Upper,
                a22.rb_mut(),
                Accum::Add,
                -T::one(),
                (a12.rb().transpose(), conj),
                (a12.rb(), Conj::No),
                par,
            );
        }
    }
    factor(uplo, a22, par, leaf).map_err(|j| j + n1)
}

widest! {
    /// The column-by-column factorisation (LAPACK `potf2`, right-looking) of the lower
    /// triangle, compiled for the CPU's widest vectors.
    fn factor_unblocked<T: KernelScalar>(a: faer::MatMut<'_, T>) -> Result<(), usize>
        = factor_unblocked_body
}

#[inline(always)]
fn factor_unblocked_body<T: KernelScalar>(mut a: faer::MatMut<'_, T>) -> Result<(), usize> {
    let n = a.nrows();
    for j in 0..n {
        let cj = col_mut(a.rb_mut(), j);
        let d = cj[j].re();
        // Not positive, or NaN (incomparable), as LAPACK's `ajj <= 0 or isnan(ajj)`.
        if d.partial_cmp(&<T as Scalar>::Real::zero()) != Some(Ordering::Greater) {
            return Err(j);
        }
        let d = d.sqrt();
        cj[j] = T::from_real(d);
        let inv = T::from_real(<T as Scalar>::Real::one() / d);
        for x in &mut cj[j + 1..] {
            *x *= inv;
        }
        // a[c.., c] −= l[c..]·conj(l[c]) for the columns c > j (lower triangle only).
        let (left, mut right) = a.rb_mut().split_at_col_mut(j + 1);
        let l = col(left.rb(), j);
        for c in j + 1..n {
            let cc = col_mut(right.rb_mut(), c - j - 1);
            let f = l[c].conj();
            for (x, &li) in cc[c..].iter_mut().zip(&l[c..]) {
                *x -= li * f;
            }
        }
    }
    Ok(())
}

/// The upper triangle of a block at most [`POTRF_LEAF`] wide: copied as the lower triangle of its
/// adjoint (`Aᴴ = A` for Hermitian `A`, so that lower triangle holds the same matrix), factored
/// there as `L·Lᴴ`, and `U = Lᴴ` copied back. The copies cost `O(n²)` against `O(n³)`.
fn factor_unblocked_upper<T: KernelScalar>(mut a: faer::MatMut<'_, T>) -> Result<(), usize> {
    let n = a.nrows();
    let mut s = vec![T::zero(); n * n];
    for i in 0..n {
        let ci = col(a.rb(), i);
        for j in 0..=i {
            s[i + j * n] = ci[j].conj();
        }
    }
    let result = factor_unblocked(faer::MatMut::from_column_major_slice_mut(&mut s, n, n));
    for i in 0..n {
        let ci = col_mut(a.rb_mut(), i);
        for j in 0..=i {
            ci[j] = s[i + j * n].conj();
        }
    }
    result
}
