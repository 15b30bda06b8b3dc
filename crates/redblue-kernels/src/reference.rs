//! Naive reference kernels: slow, obviously correct triple loops used as test oracles.
//!
//! They follow the same contracts as the fast kernels (BLAS semantics for `alpha = 0`,
//! `beta = 0`, `k = 0`; the same shape errors) but use nothing but [`Scalar`] arithmetic, so
//! they share no code path with faer. Do not use them for real work: they run at a small
//! fraction of the machine's speed.

use crate::gemm::product_dims;
use crate::{KernelError, MatMut, MatRef};
use redblue_core::{Op, Scalar, Uplo};

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
