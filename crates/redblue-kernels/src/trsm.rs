//! [`trsm`]: triangular solve with many right-hand sides, `op(A)·X = alpha·B` or
//! `X·op(A) = alpha·B`.
//!
//! Every case becomes one left-side solve `M·Y = Y₀` with `M` lower or upper triangular
//! ([`Solver`]): `op(A)` and the right side are free views (a transpose swaps the triangle,
//! `ConjTrans` is a conjugation flag), and `X·op(A) = B` is solved as `op(A)ᵀ·Xᵀ = Bᵀ` on the
//! transposed view of `B`. The solve recurses on the crate's matmul down to diagonal blocks
//! that faer's kernel solves.

use crate::gemm::scale_rows;
use crate::system::matmul;
use crate::{KernelError, KernelScalar, MatMut, MatRef, Par};
use faer::linalg::triangular_solve::{
    solve_lower_triangular_in_place_with_conj, solve_unit_lower_triangular_in_place_with_conj,
    solve_unit_upper_triangular_in_place_with_conj, solve_upper_triangular_in_place_with_conj,
};
use faer::prelude::{Reborrow, ReborrowMut};
use faer::{Accum, Conj};
use redblue_core::{Diag, Op, Side, Uplo};

/// Checks the shapes of a triangular solve and returns `n`, the order of `A`: `A` is `n × n`,
/// and `B` has `n` rows (`Side::Left`) or `n` columns (`Side::Right`).
pub(crate) fn trsm_dims(
    kernel: &'static str,
    side: Side,
    a: (usize, usize),
    b: (usize, usize),
) -> Result<usize, KernelError> {
    let n = a.0;
    if a.1 != n {
        return Err(KernelError::ShapeMismatch {
            kernel,
            operand: "A",
            expected: (n, n),
            found: a,
        });
    }
    let expected = match side {
        Side::Left => (n, b.1),
        Side::Right => (b.0, n),
    };
    if b != expected {
        return Err(KernelError::ShapeMismatch {
            kernel,
            operand: "B",
            expected,
            found: b,
        });
    }
    Ok(n)
}

/// Triangular solve: `X` such that `op(A)·X = alpha·B` (`Side::Left`) or
/// `X·op(A) = alpha·B` (`Side::Right`); `X` overwrites `B`.
///
/// `A` is `n × n` and only its `uplo` triangle is read; with `Diag::Unit` its diagonal is not
/// read either and taken as ones. `op` is one of `A`, `Aᵀ`, `Aᴴ`. `B` is `n × nrhs` on the left
/// and `m × n` on the right; any dimension may be zero. As in BLAS, `alpha = 0` sets `B` to
/// zero without reading `A` or `B`. A zero on a non-unit diagonal is not checked: it gives
/// infinities or NaNs, as in BLAS.
///
/// The solve is recursive on the crate's matmul with `par` threads, with faer's kernel on the
/// diagonal blocks (with the `blas` feature, the system's `?trsm`).
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if `A` is not square or `B` does not fit; `B` is not
/// touched then.
///
/// # Examples
/// ```
/// use redblue_core::{Diag, Op, Side, Uplo};
/// use redblue_kernels::{trsm, Mat, Par};
///
/// // A = [2 0; 1 4] (lower); solve A·x = b with b = (2, 9).
/// let a = Mat::from_fn(2, 2, |i, j| [[2.0, 0.0], [1.0, 4.0]][i][j]);
/// let mut b = Mat::from_fn(2, 1, |i, _| [2.0, 9.0][i]);
/// trsm(Side::Left, Uplo::Lower, Op::NoTrans, Diag::NonUnit, 1.0, a.as_ref(), b.as_mut(), Par::Seq)?;
/// assert_eq!((b[(0, 0)], b[(1, 0)]), (1.0, 2.0));
/// # Ok::<(), redblue_kernels::KernelError>(())
/// ```
pub fn trsm<T: KernelScalar>(
    side: Side,
    uplo: Uplo,
    op: Op,
    diag: Diag,
    alpha: T,
    a: MatRef<'_, T>,
    mut b: MatMut<'_, T>,
    par: Par,
) -> Result<(), KernelError> {
    trsm_dims("trsm", side, a.shape(), b.shape())?;
    if b.nrows() == 0 || b.ncols() == 0 {
        return Ok(());
    }
    let rows = b.nrows();
    let all_rows = |_| 0..rows;
    if alpha == T::zero() {
        scale_rows(&mut b, T::zero(), all_rows);
        return Ok(());
    }
    if T::system_trsm(side, uplo, op, diag, alpha, a, b.rb_mut(), par) {
        return Ok(());
    }
    scale_rows(&mut b, alpha, all_rows);

    // The left-side system M·Y = Y₀: on the left M = op(A) and Y = X; on the right
    // M = op(A)ᵀ and Y = Xᵀ. `transposed` says whether M is a transposed view of A (which
    // swaps its triangle); `conj` whether M is conjugated.
    let a = a.to_faer();
    let (m, transposed, conj) = match (side, op) {
        (Side::Left, Op::NoTrans) | (Side::Right, Op::Trans) => (a, false, Conj::No),
        (Side::Left, Op::Trans) | (Side::Right, Op::NoTrans) => (a.transpose(), true, Conj::No),
        (Side::Left, Op::ConjTrans) => (a.transpose(), true, conj_flag::<T>()),
        (Side::Right, Op::ConjTrans) => (a, false, conj_flag::<T>()),
    };
    let lower = (uplo == Uplo::Lower) != transposed;
    let solver = Solver {
        lower,
        diag,
        conj,
        par,
    };
    match side {
        Side::Left => solver.solve(m, b.into_faer()),
        // On the row-major view Bᵀ: the `gemm` crate's kernels take row-major operands at
        // about the speed of column-major ones.
        Side::Right => solver.solve(m, b.into_faer().transpose_mut()),
    }
    Ok(())
}

/// Triangles at most this wide are solved by faer's kernel; wider ones are split in halves.
const SOLVE_LEAF: usize = 128;

/// An in-place left-side triangular solve `Y ← M⁻¹·Y`: `M` lower (`lower`) or upper
/// triangular, with a unit diagonal or not, conjugated if `conj` says so. The kernels' LU and
/// Cholesky use it too.
pub(crate) struct Solver {
    pub lower: bool,
    pub diag: Diag,
    pub conj: Conj,
    pub par: Par,
}

impl Solver {
    /// `Y ← M⁻¹·Y`, recursively: for a lower `M`, `Y0 ← M00⁻¹·Y0`, `Y1 ← Y1 − M10·Y0`,
    /// `Y1 ← M11⁻¹·Y1` (the mirror image for upper). So all flops outside the diagonal blocks of
    /// at most [`SOLVE_LEAF`] go through the crate's matmul (the `gemm` crate's kernels for
    /// large blocks), and only the leaves through faer's solve, whose block updates use faer's
    /// slower x86 matmul (see `system::matmul`).
    pub fn solve<T: KernelScalar>(&self, m: faer::MatRef<'_, T>, y: faer::MatMut<'_, T>) {
        let n = m.nrows();
        if n <= SOLVE_LEAF {
            return self.leaf(m, y);
        }
        let h = (n / 2).next_multiple_of(16);
        let (m00, m01, m10, m11) = m.split_at(h, h);
        let (mut y0, mut y1) = y.split_at_row_mut(h);
        let minus_one = -T::one();
        if self.lower {
            self.solve(m00, y0.rb_mut());
            matmul(
                y1.rb_mut(),
                Accum::Add,
                (m10, self.conj),
                (y0.rb(), Conj::No),
                minus_one,
                self.par,
            );
            self.solve(m11, y1);
        } else {
            self.solve(m11, y1.rb_mut());
            matmul(
                y0.rb_mut(),
                Accum::Add,
                (m01, self.conj),
                (y1.rb(), Conj::No),
                minus_one,
                self.par,
            );
            self.solve(m00, y0);
        }
    }

    /// One of faer's four in-place solves, chosen by the triangle and the diagonal.
    fn leaf<T: KernelScalar>(&self, m: faer::MatRef<'_, T>, y: faer::MatMut<'_, T>) {
        let (conj, par) = (self.conj, self.par.to_faer());
        match (self.lower, self.diag) {
            (true, Diag::NonUnit) => solve_lower_triangular_in_place_with_conj(m, conj, y, par),
            (true, Diag::Unit) => solve_unit_lower_triangular_in_place_with_conj(m, conj, y, par),
            (false, Diag::NonUnit) => solve_upper_triangular_in_place_with_conj(m, conj, y, par),
            (false, Diag::Unit) => solve_unit_upper_triangular_in_place_with_conj(m, conj, y, par),
        }
    }
}

/// `Conj::Yes` for complex types; real types never take the conjugating path.
pub(crate) fn conj_flag<T: KernelScalar>() -> Conj {
    if T::IS_COMPLEX {
        Conj::Yes
    } else {
        Conj::No
    }
}
