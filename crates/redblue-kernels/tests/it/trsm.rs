//! `trsm` on every side × triangle × op × diagonal combination, four scalars, empty, tiny,
//! block-boundary, tall and wide shapes, one and two threads: the residual
//! `‖op(A)·X − alpha·B‖` is small, `X` agrees with the naive reference, and neither the other
//! triangle of `A` (nor a unit diagonal) is read: they hold NaNs. Plus `alpha = 0`, padding and
//! shape errors.

use crate::common;

use common::*;
use redblue_core::{Diag, Op, RealScalar, Side, Uplo};
use redblue_kernels::{reference, trsm, KernelError, KernelScalar, Mat, Par};

/// `(n, r)`: `A` is `n × n`; `B` is `n × r` on the left and `r × n` on the right. Empty, tiny,
/// around faer's 64-wide blocks and its "many right-hand sides" split (`r > 64`), deep
/// recursion, tall and wide `B`.
const SIZES: &[(usize, usize)] = &[
    (0, 0),
    (0, 3),
    (3, 0),
    (1, 1),
    (1, 5),
    (5, 1),
    (4, 4),
    (63, 63),
    (64, 64),
    (65, 65),
    (65, 1),
    (64, 130),
    (130, 7),
    (200, 3),
];

const SIDES: [Side; 2] = [Side::Left, Side::Right];
const UPLOS: [Uplo; 2] = [Uplo::Lower, Uplo::Upper];
const DIAGS: [Diag; 2] = [Diag::NonUnit, Diag::Unit];

/// Bound on the condition number of the triangular matrices of [`triangular`]: the diagonal
/// has modulus at least 1.5 (or is 1) and each row's off-diagonal part sums to at most 1/2 in
/// modulus, so `‖op(A)‖ ≤ 3` and `‖op(A)⁻¹‖ ≤ 2` in the ∞- and 1-norms.
const COND: f64 = 6.0;

/// A well-conditioned `n × n` triangular matrix, twice: as the kernel sees it (NaN outside the
/// `uplo` triangle, and on the diagonal when it is a unit one) and as the residual needs it
/// (zeros outside, ones on a unit diagonal).
fn triangular<T: KernelScalar>(
    rng: &mut Lcg,
    n: usize,
    uplo: Uplo,
    diag: Diag,
) -> (Padded<T>, Padded<T>) {
    let off = 0.5 / n.max(1) as f64;
    let clean = Padded::from_fn(n, n, 2, |i, j| {
        let x: T = rng.scalar();
        if i == j {
            match diag {
                Diag::Unit => T::one(),
                Diag::NonUnit => T::from_f64_parts(2.0 + 0.5 * x.re().to_f64(), x.im().to_f64()),
            }
        } else if uplo.contains(i, j) {
            T::from_f64_parts(off * x.re().to_f64(), off * x.im().to_f64())
        } else {
            T::zero()
        }
    });
    let mut poisoned = clean.clone();
    for j in 0..n {
        for i in 0..n {
            if !uplo.contains(i, j) || (i == j && diag == Diag::Unit) {
                poisoned.set(i, j, nan());
            }
        }
    }
    (poisoned, clean)
}

struct Case {
    side: Side,
    uplo: Uplo,
    op: Op,
    diag: Diag,
    n: usize,
    r: usize,
    par: Par,
}

fn check_trsm<T: KernelScalar>(case: &Case, alpha: T) {
    let Case {
        side,
        uplo,
        op,
        diag,
        n,
        r,
        par,
    } = *case;
    let rng = &mut Lcg::new((n * 7919 + r * 31) as u64 + 11);
    let (a, a_clean) = triangular::<T>(rng, n, uplo, diag);
    let (br, bc) = match side {
        Side::Left => (n, r),
        Side::Right => (r, n),
    };
    let b0 = Padded::<T>::random(rng, br, bc, 3);
    let mut x = b0.clone();
    trsm(side, uplo, op, diag, alpha, a.view(), x.view_mut(), par).unwrap();
    let mut x_ref = b0.clone();
    reference::trsm(side, uplo, op, diag, alpha, a.view(), x_ref.view_mut()).unwrap();

    let what = format!(
        "{} {side:?} {uplo:?} op={op} {diag:?} n={n} r={r} {par:?} alpha={alpha}",
        T::NAME
    );
    assert!(x.padding_intact(&b0), "{what}: padding of B written");

    // Residual R = alpha·B₀ − op(A)·X (left) or alpha·B₀ − X·op(A) (right).
    let mut res = b0.clone();
    let minus_one = -T::one();
    match side {
        Side::Left => reference::gemm(
            minus_one,
            a_clean.view(),
            op,
            x.view(),
            Op::NoTrans,
            alpha,
            res.view_mut(),
        ),
        Side::Right => reference::gemm(
            minus_one,
            x.view(),
            Op::NoTrans,
            a_clean.view(),
            op,
            alpha,
            res.view_mut(),
        ),
    }
    .unwrap();
    let all = |_, _| true;
    let (norm_a, norm_x, norm_b) = (fro(&a_clean, all), fro(&x, all), fro(&b0, all));
    let residual = fro(&res, all);
    let tol = bound(n, minus_one, norm_a, norm_x, alpha, norm_b);
    assert!(
        residual <= tol,
        "{what}: residual {residual:e} > bound {tol:e}"
    );

    // Forward error against the reference: both solutions are within about n·ε·cond·‖X‖.
    let err = fro_diff(&x, &x_ref, all);
    let tol = BOUND_C * COND * n.max(1) as f64 * T::epsilon().to_f64() * fro(&x_ref, all);
    assert!(err <= tol, "{what}: |X − X_ref| {err:e} > bound {tol:e}");
}

fn all_cases<T: KernelScalar>(alpha: T) {
    for side in SIDES {
        for uplo in UPLOS {
            for op in Op::ALL {
                for diag in DIAGS {
                    for &(n, r) in SIZES {
                        for par in PARS {
                            let case = Case {
                                side,
                                uplo,
                                op,
                                diag,
                                n,
                                r,
                                par,
                            };
                            check_trsm(&case, alpha);
                        }
                    }
                }
            }
        }
    }
}

fn general<T: KernelScalar>() {
    all_cases(alpha_beta::<T>().0);
}

fn alpha_one<T: KernelScalar>() {
    all_cases(T::one());
}

#[test]
fn solves_every_side_triangle_op_and_diagonal_for_all_scalars() {
    for_all_scalars!(general);
}

#[test]
fn alpha_one_solves_in_place() {
    for_all_scalars!(alpha_one);
}

fn large_two_threads<T: KernelScalar>() {
    let alpha = alpha_beta::<T>().0;
    for side in SIDES {
        for op in [Op::NoTrans, Op::ConjTrans] {
            let case = Case {
                side,
                uplo: Uplo::Lower,
                op,
                diag: Diag::NonUnit,
                n: 300,
                r: 257,
                par: Par::Threads(2),
            };
            check_trsm(&case, alpha);
        }
    }
}

#[test]
fn two_threads_on_a_solve_large_enough_to_split() {
    large_two_threads::<f64>();
    large_two_threads::<redblue_core::c64>();
}

fn alpha_zero<T: KernelScalar>() {
    for side in SIDES {
        for &(n, r) in SIZES {
            let (br, bc) = match side {
                Side::Left => (n, r),
                Side::Right => (r, n),
            };
            // Neither A nor B is read: both are all NaN.
            let a = Padded::<T>::from_fn(n, n, 1, |_, _| nan());
            let b0 = Padded::<T>::from_fn(br, bc, 2, |_, _| nan());
            let mut b = b0.clone();
            trsm(
                side,
                Uplo::Upper,
                Op::Trans,
                Diag::NonUnit,
                T::zero(),
                a.view(),
                b.view_mut(),
                Par::Seq,
            )
            .unwrap();
            assert!(
                (0..bc).all(|j| (0..br).all(|i| b.get(i, j) == T::zero())),
                "{} {side:?} n={n} r={r}: B not zeroed",
                T::NAME
            );
            assert!(b.padding_intact(&b0));
            let mut b_ref = b0.clone();
            reference::trsm(
                side,
                Uplo::Upper,
                Op::Trans,
                Diag::NonUnit,
                T::zero(),
                a.view(),
                b_ref.view_mut(),
            )
            .unwrap();
            assert!((0..bc).all(|j| (0..br).all(|i| b_ref.get(i, j) == T::zero())));
        }
    }
}

#[test]
fn alpha_zero_zeroes_b_without_reading_a_or_b() {
    for_all_scalars!(alpha_zero);
}

#[test]
fn shape_mismatches_are_errors_and_leave_b_alone() {
    let args = (Uplo::Lower, Op::NoTrans, Diag::NonUnit, 1.0);
    let run = |side, a: &Mat<f64>, b: &mut Mat<f64>| {
        let (uplo, op, diag, alpha) = args;
        let fast = trsm(
            side,
            uplo,
            op,
            diag,
            alpha,
            a.as_ref(),
            b.as_mut(),
            Par::Seq,
        );
        let naive = reference::trsm(side, uplo, op, diag, alpha, a.as_ref(), b.as_mut());
        assert_eq!(fast, naive);
        fast
    };
    let b0 = Mat::from_fn(3, 2, |i, j| (i + 10 * j) as f64);
    let mut b = b0.clone();
    let a = Mat::<f64>::zeros(3, 2);
    assert_eq!(
        run(Side::Left, &a, &mut b),
        Err(KernelError::ShapeMismatch {
            kernel: "trsm",
            operand: "A",
            expected: (3, 3),
            found: (3, 2),
        })
    );
    let a = Mat::<f64>::zeros(2, 2);
    assert_eq!(
        run(Side::Left, &a, &mut b),
        Err(KernelError::ShapeMismatch {
            kernel: "trsm",
            operand: "B",
            expected: (2, 2),
            found: (3, 2),
        })
    );
    let a = Mat::<f64>::zeros(3, 3);
    assert_eq!(
        run(Side::Right, &a, &mut b),
        Err(KernelError::ShapeMismatch {
            kernel: "trsm",
            operand: "B",
            expected: (3, 3),
            found: (3, 2),
        })
    );
    assert_eq!(b, b0);
    // Consistent shapes are fine on either side; the identity leaves B as it is.
    let eye = Mat::from_fn(3, 3, |i, j| if i == j { 1.0 } else { 0.0 });
    assert_eq!(run(Side::Left, &eye, &mut b), Ok(()));
    assert_eq!(b, b0);
    let mut wide = Mat::from_fn(2, 3, |i, j| (i * j) as f64);
    let wide0 = wide.clone();
    assert_eq!(run(Side::Right, &eye, &mut wide), Ok(()));
    assert_eq!(wide, wide0);
}

/// Every element is 1 up to rounding (faer divides by a diagonal element as a multiplication
/// by its reciprocal, so exact results are not guaranteed).
fn assert_ones(x: &[f64]) {
    assert!(
        x.iter().all(|&v| (v - 1.0).abs() <= 4.0 * f64::EPSILON),
        "{x:?}"
    );
}

/// A hand-checked 3×3 case of each side, so the meaning of `Side` and `op` is pinned down
/// independently of the reference.
#[test]
fn small_hand_checked_solves() {
    // U = [1 2 3; 0 4 5; 0 0 6].
    let u = Mat::from_fn(3, 3, |i, j| {
        [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0], [0.0, 0.0, 6.0]][i][j]
    });
    // Left, op = T: Uᵀ·x = b with x = (1, 1, 1): b = (1, 6, 14).
    let mut b = Mat::from_fn(3, 1, |i, _| [1.0, 6.0, 14.0][i]);
    trsm(
        Side::Left,
        Uplo::Upper,
        Op::Trans,
        Diag::NonUnit,
        1.0,
        u.as_ref(),
        b.as_mut(),
        Par::Seq,
    )
    .unwrap();
    assert_ones(b.as_slice());
    // Right, op = N, alpha = 2: x·U = 2·b with x = (1, 1, 1): b = (1, 6, 14) / 2.
    let mut b = Mat::from_fn(1, 3, |_, j| [0.5, 3.0, 7.0][j]);
    trsm(
        Side::Right,
        Uplo::Upper,
        Op::NoTrans,
        Diag::NonUnit,
        2.0,
        u.as_ref(),
        b.as_mut(),
        Par::Seq,
    )
    .unwrap();
    assert_ones(b.as_slice());
    // Unit diagonal: the stored 1, 4, 6 are ignored. U₁·x = b with x = (1, 1, 1):
    // b = (1 + 2 + 3, 1 + 5, 1).
    let mut b = Mat::from_fn(3, 1, |i, _| [6.0, 6.0, 1.0][i]);
    trsm(
        Side::Left,
        Uplo::Upper,
        Op::NoTrans,
        Diag::Unit,
        1.0,
        u.as_ref(),
        b.as_mut(),
        Par::Seq,
    )
    .unwrap();
    assert_ones(b.as_slice());
}
