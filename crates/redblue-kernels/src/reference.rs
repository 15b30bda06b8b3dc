//! Naive reference kernels: slow, obviously correct triple loops used as test oracles.
//!
//! They follow the same contracts as the fast kernels (BLAS semantics for `alpha = 0`,
//! `beta = 0`, `k = 0`; the same shape errors) but use nothing but [`Scalar`] arithmetic, so
//! they share no code path with faer. Do not use them for real work: they run at a small
//! fraction of the machine's speed.

use crate::gemm::product_dims;
use crate::trsm::trsm_dims;
use crate::{KernelError, MatMut, MatRef};
use redblue_core::{Diag, Op, Scalar, Side, Uplo};

/// Element `(i, j)` of `op(A)`.
fn op_get<T: Scalar>(a: MatRef<'_, T>, op: Op, i: usize, j: usize) -> T {
    match op {
        Op::NoTrans => a.get(i, j),
        Op::Trans => a.get(j, i),
        Op::ConjTrans => a.get(j, i).conj(),
    }
}

/// `C[i, j] = alpha·Σₗ op(A)[i, l]·op(B)[l, j] + beta·C[i, j]` for the rows `rows(j)` of each
/// column, reading neither `C` when `beta = 0` nor `A`, `B` when `alpha = 0`.
fn product<T: Scalar>(
    alpha: T,
    a: MatRef<'_, T>,
    op_a: Op,
    b: MatRef<'_, T>,
    op_b: Op,
    beta: T,
    c: &mut MatMut<'_, T>,
    k: usize,
    rows: impl Fn(usize) -> std::ops::Range<usize>,
) {
    for j in 0..c.ncols() {
        for i in rows(j) {
            let mut sum = T::zero();
            if alpha != T::zero() {
                for l in 0..k {
                    sum += op_get(a, op_a, i, l) * op_get(b, op_b, l, j);
                }
            }
            let old = if beta == T::zero() {
                T::zero()
            } else {
                beta * c.get(i, j)
            };
            *c.get_mut(i, j) = alpha * sum + old;
        }
    }
}

/// Naive [`gemm`](crate::gemm): `C = alpha·op(A)·op(B) + beta·C`.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if the shapes do not fit.
pub fn gemm<T: Scalar>(
    alpha: T,
    a: MatRef<'_, T>,
    op_a: Op,
    b: MatRef<'_, T>,
    op_b: Op,
    beta: T,
    mut c: MatMut<'_, T>,
) -> Result<(), KernelError> {
    let (m, _, k) = product_dims("gemm", a.shape(), op_a, b.shape(), op_b, c.shape())?;
    product(alpha, a, op_a, b, op_b, beta, &mut c, k, |_| 0..m);
    Ok(())
}

/// Naive [`gemmt`](crate::gemmt): the `uplo` triangle of `C = alpha·op(A)·op(B) + beta·C`.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if the shapes do not fit or `C` is not square.
pub fn gemmt<T: Scalar>(
    uplo: Uplo,
    alpha: T,
    a: MatRef<'_, T>,
    op_a: Op,
    b: MatRef<'_, T>,
    op_b: Op,
    beta: T,
    mut c: MatMut<'_, T>,
) -> Result<(), KernelError> {
    let (n, nc, k) = product_dims("gemmt", a.shape(), op_a, b.shape(), op_b, c.shape())?;
    if n != nc {
        return Err(KernelError::ShapeMismatch {
            kernel: "gemmt",
            operand: "C",
            expected: (n, n),
            found: (n, nc),
        });
    }
    product(alpha, a, op_a, b, op_b, beta, &mut c, k, |j| match uplo {
        Uplo::Lower => j..n,
        Uplo::Upper => 0..j + 1,
    });
    Ok(())
}

/// Element `(i, j)` of `op(A)` where `A` is the `uplo` triangle of the stored matrix (zeros
/// elsewhere), with ones on the diagonal when `diag` is `Unit`. Reads nothing outside that.
fn tri_get<T: Scalar>(a: MatRef<'_, T>, uplo: Uplo, op: Op, diag: Diag, i: usize, j: usize) -> T {
    let (r, c) = if op.is_transposed() { (j, i) } else { (i, j) };
    let outside = match uplo {
        Uplo::Lower => r < c,
        Uplo::Upper => r > c,
    };
    if r == c && diag == Diag::Unit {
        T::one()
    } else if outside {
        T::zero()
    } else {
        op_get(a, op, i, j)
    }
}

/// Naive [`trsm`](crate::trsm): `op(A)·X = alpha·B` (left) or `X·op(A) = alpha·B` (right) by
/// forward or back substitution, one column (left) or row (right) of `B` at a time; `X`
/// overwrites `B`. `alpha = 0` sets `B` to zero without reading `A` or `B`.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if `A` is not square or `B` does not fit.
pub fn trsm<T: Scalar>(
    side: Side,
    uplo: Uplo,
    op: Op,
    diag: Diag,
    alpha: T,
    a: MatRef<'_, T>,
    mut b: MatMut<'_, T>,
) -> Result<(), KernelError> {
    let n = trsm_dims("trsm", side, a.shape(), b.shape())?;
    if alpha == T::zero() {
        b.fill(T::zero());
        return Ok(());
    }
    let m = |i, j| tri_get(a, uplo, op, diag, i, j);
    // Whether op(A) is lower triangular.
    let lower = (uplo == Uplo::Lower) != op.is_transposed();
    match side {
        Side::Left => {
            // Column by column: Σₖ M[i, k]·x[k] = alpha·b[i].
            for col in 0..b.ncols() {
                let order: Vec<usize> = if lower {
                    (0..n).collect()
                } else {
                    (0..n).rev().collect()
                };
                for &i in &order {
                    let mut s = alpha * b.get(i, col);
                    let known = if lower { 0..i } else { i + 1..n };
                    for k in known {
                        s -= m(i, k) * b.get(k, col);
                    }
                    *b.get_mut(i, col) = s / m(i, i);
                }
            }
        }
        Side::Right => {
            // Row by row: Σₖ x[k]·M[k, j] = alpha·b[j].
            for row in 0..b.nrows() {
                let order: Vec<usize> = if lower {
                    (0..n).rev().collect()
                } else {
                    (0..n).collect()
                };
                for &j in &order {
                    let mut s = alpha * b.get(row, j);
                    let known = if lower { j + 1..n } else { 0..j };
                    for k in known {
                        s -= b.get(row, k) * m(k, j);
                    }
                    *b.get_mut(row, j) = s / m(j, j);
                }
            }
        }
    }
    Ok(())
}

/// Naive [`potrf`](crate::potrf): left-looking Cholesky, `A = L·Lᴴ` in the lower triangle or
/// `A = Uᴴ·U` in the upper one (read as `L = Uᴴ`), using only the real part of the diagonal.
///
/// # Errors
/// [`KernelError::ShapeMismatch`] if `A` is not square; [`KernelError::NotPositiveDefinite`]
/// with the first column whose pivot is not positive (columns before it hold their factor).
pub fn potrf<T: Scalar>(uplo: Uplo, mut a: MatMut<'_, T>) -> Result<(), KernelError> {
    let (n, nc) = a.shape();
    if nc != n {
        return Err(KernelError::ShapeMismatch {
            kernel: "potrf",
            operand: "A",
            expected: (n, n),
            found: (n, nc),
        });
    }
    // Element (i, j), i ≥ j, of the lower-triangular form: A[i, j] or conj(A[j, i]).
    let get = |a: &MatMut<'_, T>, i: usize, j: usize| match uplo {
        Uplo::Lower => a.get(i, j),
        Uplo::Upper => a.get(j, i).conj(),
    };
    let set = |a: &mut MatMut<'_, T>, i: usize, j: usize, v: T| match uplo {
        Uplo::Lower => *a.get_mut(i, j) = v,
        Uplo::Upper => *a.get_mut(j, i) = v.conj(),
    };
    for j in 0..n {
        let mut d = get(&a, j, j).re();
        for k in 0..j {
            d -= get(&a, j, k).abs_sqr();
        }
        if d.partial_cmp(&T::Real::zero()) != Some(std::cmp::Ordering::Greater) {
            return Err(KernelError::NotPositiveDefinite { column: j });
        }
        let d = d.sqrt();
        set(&mut a, j, j, T::from_real(d));
        for i in j + 1..n {
            let mut s = get(&a, i, j);
            for k in 0..j {
                s -= get(&a, i, k) * get(&a, j, k).conj();
            }
            set(&mut a, i, j, s / T::from_real(d));
        }
    }
    Ok(())
}
