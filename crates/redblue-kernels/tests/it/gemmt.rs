//! `gemmt` against the naive reference: both triangles × four scalars × nine op pairs × edge
//! and recursion-boundary sizes × one and two threads; the other triangle and the padding stay
//! bit-identical; BLAS semantics for `beta = 0`, `alpha = 0`, `k = 0`; shape errors; herk use.

use crate::common;

use common::*;
use redblue_core::{c64, Op, Uplo};
use redblue_kernels::{gemmt, reference, KernelError, KernelScalar, Mat, Par};

/// `(n, k)`: empty, tiny, around the 64-wide leaf, tall and wide `A`, several recursion levels.
const SIZES: &[(usize, usize)] = &[
    (0, 0),
    (0, 3),
    (3, 0),
    (1, 1),
    (1, 5),
    (2, 3),
    (63, 63),
    (64, 64),
    (65, 65),
    (65, 1),
    (130, 7),
    (7, 130),
    (129, 33),
    (200, 40),
];

/// Runs `gemmt` and the reference on the same inputs and checks the normalised error on the
/// triangle, and that the other triangle and the padding are bit-identical to `c0`.
fn check_gemmt<T: KernelScalar>(
    uplo: Uplo,
    (n, k): (usize, usize),
    (op_a, op_b): (Op, Op),
    (alpha, beta): (T, T),
    par: Par,
    c0: Option<Padded<T>>,
    same_a_b: bool,
) {
    let rng = &mut Lcg::new((n * 7919 + k * 13) as u64 + 5);
    let (ar, ac) = stored(op_a, n, k);
    let (br, bc) = stored(op_b, k, n);
    let a = Padded::<T>::random(rng, ar, ac, 2);
    let b = if same_a_b {
        a.clone()
    } else {
        Padded::<T>::random(rng, br, bc, 3)
    };
    let c0 = c0.unwrap_or_else(|| Padded::random(rng, n, n, 1));
    let mut c = c0.clone();
    let mut c_ref = c0.clone();
    gemmt(
        uplo,
        alpha,
        a.view(),
        op_a,
        b.view(),
        op_b,
        beta,
        c.view_mut(),
        par,
    )
    .unwrap();
    reference::gemmt(
        uplo,
        alpha,
        a.view(),
        op_a,
        b.view(),
        op_b,
        beta,
        c_ref.view_mut(),
    )
    .unwrap();

    let tri = |i, j| uplo.contains(i, j);
    let all = |_, _| true;
    let norm_c0 = if beta == T::zero() {
        0.0
    } else {
        fro(&c0, tri)
    };
    let tol = bound(k, alpha, fro(&a, all), fro(&b, all), beta, norm_c0);
    let err = fro_diff(&c, &c_ref, tri);
    let case = format!(
        "{} {uplo:?} n={n} k={k} op_a={op_a} op_b={op_b} {par:?} alpha={alpha} beta={beta}",
        T::NAME
    );
    assert!(err <= tol, "{case}: error {err:e} > bound {tol:e}");
    for j in 0..n {
        for i in 0..n {
            if !tri(i, j) {
                assert!(
                    same_bits(c.get(i, j), c0.get(i, j)),
                    "{case}: ({i}, {j}) outside the triangle changed"
                );
            }
        }
    }
    assert!(c.padding_intact(&c0), "{case}: padding of C written");
}

fn all_cases<T: KernelScalar>(alpha: T, beta: T) {
    for uplo in [Uplo::Lower, Uplo::Upper] {
        for &size in SIZES {
            for op_a in Op::ALL {
                for op_b in Op::ALL {
                    for par in PARS {
                        check_gemmt(uplo, size, (op_a, op_b), (alpha, beta), par, None, false);
                    }
                }
            }
        }
    }
}

fn general<T: KernelScalar>() {
    let (alpha, beta) = alpha_beta::<T>();
    all_cases(alpha, beta);
}

fn beta_one<T: KernelScalar>() {
    all_cases(alpha_beta::<T>().0, T::one());
}

#[test]
fn matches_reference_for_both_triangles_all_ops_sizes_scalars_and_thread_counts() {
    for_all_scalars!(general);
}

#[test]
fn beta_one_accumulates() {
    for_all_scalars!(beta_one);
}

fn nan_beta_zero<T: KernelScalar>() {
    let alpha = alpha_beta::<T>().0;
    for uplo in [Uplo::Lower, Uplo::Upper] {
        for &(n, k) in SIZES {
            for (op_a, op_b) in [(Op::NoTrans, Op::ConjTrans), (Op::Trans, Op::NoTrans)] {
                for par in PARS {
                    let poisoned = Padded::<T>::from_fn(n, n, 1, |_, _| nan());
                    check_gemmt(
                        uplo,
                        (n, k),
                        (op_a, op_b),
                        (alpha, T::zero()),
                        par,
                        Some(poisoned.clone()),
                        false,
                    );
                    let rng = &mut Lcg::new(1);
                    let (ar, ac) = stored(op_a, n, k);
                    let (br, bc) = stored(op_b, k, n);
                    let a = Padded::<T>::random(rng, ar, ac, 1);
                    let b = Padded::<T>::random(rng, br, bc, 1);
                    let mut c = poisoned;
                    gemmt(
                        uplo,
                        alpha,
                        a.view(),
                        op_a,
                        b.view(),
                        op_b,
                        T::zero(),
                        c.view_mut(),
                        par,
                    )
                    .unwrap();
                    for j in 0..n {
                        for i in 0..n {
                            let finite = c.get(i, j).is_finite();
                            assert_eq!(
                                finite,
                                uplo.contains(i, j),
                                "{} {uplo:?} n={n} k={k} ({i}, {j})",
                                T::NAME
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn beta_zero_never_reads_c() {
    for_all_scalars!(nan_beta_zero);
}

fn scale_only<T: KernelScalar>() {
    let rng = &mut Lcg::new(17);
    let beta = alpha_beta::<T>().1;
    let n = 70;
    for (k, alpha, poison_ab) in [(0, T::one(), false), (9, T::zero(), true)] {
        let a = Padded::<T>::from_fn(n, k, 1, |_, _| if poison_ab { nan() } else { rng.scalar() });
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let c0 = Padded::<T>::random(rng, n, n, 2);
            let mut c = c0.clone();
            gemmt(
                uplo,
                alpha,
                a.view(),
                Op::NoTrans,
                a.view(),
                Op::ConjTrans,
                beta,
                c.view_mut(),
                Par::Seq,
            )
            .unwrap();
            for j in 0..n {
                for i in 0..n {
                    let want = if uplo.contains(i, j) {
                        beta * c0.get(i, j)
                    } else {
                        c0.get(i, j)
                    };
                    assert!(
                        same_bits(c.get(i, j), want),
                        "{} {uplo:?} k={k} ({i}, {j})",
                        T::NAME
                    );
                }
            }
            assert!(c.padding_intact(&c0));
        }
    }
}

#[test]
fn k_zero_and_alpha_zero_only_scale_the_triangle() {
    for_all_scalars!(scale_only);
}

fn herk<T: KernelScalar>() {
    let (alpha, beta) = (T::from_f64_parts(-1.0, 0.0), T::one());
    for uplo in [Uplo::Lower, Uplo::Upper] {
        for &size in SIZES {
            for ops in [(Op::NoTrans, Op::ConjTrans), (Op::ConjTrans, Op::NoTrans)] {
                check_gemmt(uplo, size, ops, (alpha, beta), Par::Seq, None, true);
            }
        }
    }
}

/// The Cholesky trailing update `C = C − A·Aᴴ` on one triangle, with `B` the same buffer as `A`.
#[test]
fn herk_is_gemmt_with_b_equal_to_a() {
    for_all_scalars!(herk);
}

#[test]
fn shape_mismatches_are_errors_and_leave_c_alone() {
    let a = Mat::<f64>::zeros(3, 4);
    let c0 = Mat::from_fn(3, 3, |i, j| (i * 3 + j) as f64);
    let mut c = c0.clone();
    // op(B) must be k × n with n = rows of op(A).
    let b = Mat::<f64>::zeros(4, 2);
    let err = gemmt(
        Uplo::Lower,
        1.0,
        a.as_ref(),
        Op::NoTrans,
        b.as_ref(),
        Op::NoTrans,
        0.0,
        c.as_mut(),
        Par::Seq,
    );
    assert_eq!(
        err,
        Err(KernelError::ShapeMismatch {
            kernel: "gemmt",
            operand: "op(B)",
            expected: (4, 3),
            found: (4, 2),
        })
    );
    // Inner dimension: op(A) is 3×4, op(B) 5×3.
    let b = Mat::<f64>::zeros(5, 3);
    assert!(matches!(
        gemmt(
            Uplo::Upper,
            1.0,
            a.as_ref(),
            Op::NoTrans,
            b.as_ref(),
            Op::NoTrans,
            0.0,
            c.as_mut(),
            Par::Seq
        ),
        Err(KernelError::ShapeMismatch {
            operand: "op(B)",
            ..
        })
    ));
    // C not n × n.
    let b = Mat::<f64>::zeros(4, 3);
    let mut wide = Mat::<f64>::zeros(3, 4);
    assert!(matches!(
        gemmt(
            Uplo::Lower,
            1.0,
            a.as_ref(),
            Op::NoTrans,
            b.as_ref(),
            Op::NoTrans,
            0.0,
            wide.as_mut(),
            Par::Seq
        ),
        Err(KernelError::ShapeMismatch { operand: "C", .. })
    ));
    assert!(reference::gemmt(
        Uplo::Lower,
        1.0,
        a.as_ref(),
        Op::NoTrans,
        b.as_ref(),
        Op::NoTrans,
        0.0,
        wide.as_mut()
    )
    .is_err());
    assert_eq!(c, c0);
}

#[test]
fn two_threads_on_a_triangle_large_enough_to_split() {
    let (alpha, beta) = alpha_beta::<c64>();
    for uplo in [Uplo::Lower, Uplo::Upper] {
        check_gemmt(
            uplo,
            (300, 120),
            (Op::NoTrans, Op::ConjTrans),
            (alpha, beta),
            Par::Threads(2),
            None,
            false,
        );
    }
    check_gemmt(
        Uplo::Lower,
        (301, 97),
        (Op::Trans, Op::NoTrans),
        (0.5f64, -1.5f64),
        Par::Threads(2),
        None,
        false,
    );
}

fn large_products<T: KernelScalar>() {
    let (alpha, beta) = alpha_beta::<T>();
    // The off-diagonal blocks of a 512 × 512 triangle are large products (the `gemm` crate's
    // path, with a conjugated copy of a conjugated operand).
    for uplo in [Uplo::Lower, Uplo::Upper] {
        check_gemmt(
            uplo,
            (512, 520),
            (Op::NoTrans, Op::ConjTrans),
            (alpha, beta),
            Par::Seq,
            None,
            true,
        );
    }
    check_gemmt(
        Uplo::Lower,
        (512, 520),
        (Op::Trans, Op::Trans),
        (alpha, beta),
        Par::Threads(2),
        None,
        false,
    );
}

#[test]
fn large_triangles_with_transposed_and_conjugated_operands() {
    for_all_scalars!(large_products);
}
