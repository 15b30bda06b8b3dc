//! `gemm` against the naive reference: four scalars × nine op pairs × edge shapes × one and two
//! threads, with a normalised error bound; BLAS semantics for `beta = 0`, `alpha = 0`, `k = 0`;
//! shape errors; an independent cross-check against matrixmultiply.

use crate::common;

use common::*;
use redblue_core::{c64, Op};
use redblue_kernels::{gemm, reference, KernelError, KernelScalar, Mat, MatMut, MatRef, Par};

/// Runs `gemm` and the reference on the same random inputs (padded, NaN in the padding) and
/// checks the normalised error and that the padding of `C` is untouched.
fn check_gemm<T: KernelScalar>(
    (m, n, k): (usize, usize, usize),
    (op_a, op_b): (Op, Op),
    (alpha, beta): (T, T),
    par: Par,
    c0: Option<Padded<T>>,
) {
    let rng = &mut Lcg::new((m * 1_000_003 + n * 1009 + k) as u64);
    let (ar, ac) = stored(op_a, m, k);
    let (br, bc) = stored(op_b, k, n);
    let a = Padded::<T>::random(rng, ar, ac, 3);
    let b = Padded::<T>::random(rng, br, bc, 2);
    let c0 = c0.unwrap_or_else(|| Padded::random(rng, m, n, 1));
    let mut c = c0.clone();
    let mut c_ref = c0.clone();
    gemm(
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
    reference::gemm(
        alpha,
        a.view(),
        op_a,
        b.view(),
        op_b,
        beta,
        c_ref.view_mut(),
    )
    .unwrap();

    let all = |_, _| true;
    let norm_c0 = if beta == T::zero() {
        0.0
    } else {
        fro(&c0, all)
    };
    let tol = bound(k, alpha, fro(&a, all), fro(&b, all), beta, norm_c0);
    let err = fro_diff(&c, &c_ref, all);
    let case = format!(
        "{} m={m} n={n} k={k} op_a={op_a} op_b={op_b} {par:?} alpha={alpha} beta={beta}",
        T::NAME
    );
    assert!(err <= tol, "{case}: error {err:e} > bound {tol:e}");
    assert!(c.padding_intact(&c0), "{case}: padding of C written");
}

fn all_ops_shapes_pars<T: KernelScalar>(alpha: T, beta: T) {
    for &shape in SHAPES {
        for op_a in Op::ALL {
            for op_b in Op::ALL {
                for par in PARS {
                    check_gemm(shape, (op_a, op_b), (alpha, beta), par, None);
                }
            }
        }
    }
}

fn general_alpha_beta<T: KernelScalar>() {
    let (alpha, beta) = alpha_beta::<T>();
    all_ops_shapes_pars(alpha, beta);
}

fn beta_one<T: KernelScalar>() {
    all_ops_shapes_pars(alpha_beta::<T>().0, T::one());
}

#[test]
fn matches_reference_for_all_ops_shapes_scalars_and_thread_counts() {
    for_all_scalars!(general_alpha_beta);
}

#[test]
fn beta_one_accumulates() {
    for_all_scalars!(beta_one);
}

fn nan_c_beta_zero<T: KernelScalar>() {
    let alpha = alpha_beta::<T>().0;
    for &(m, n, k) in SHAPES {
        for op_a in Op::ALL {
            for op_b in Op::ALL {
                for par in PARS {
                    let poisoned = Padded::from_fn(m, n, 1, |i, j| {
                        if (i + j) % 2 == 0 {
                            nan::<T>()
                        } else {
                            T::from_f64_parts(f64::INFINITY, f64::NEG_INFINITY)
                        }
                    });
                    check_gemm(
                        (m, n, k),
                        (op_a, op_b),
                        (alpha, T::zero()),
                        par,
                        Some(poisoned.clone()),
                    );
                    // The bound check above compares with a reference that does not read C
                    // either; also demand a finite result outright.
                    let rng = &mut Lcg::new(7);
                    let (ar, ac) = stored(op_a, m, k);
                    let (br, bc) = stored(op_b, k, n);
                    let a = Padded::<T>::random(rng, ar, ac, 1);
                    let b = Padded::<T>::random(rng, br, bc, 1);
                    let mut c = poisoned;
                    gemm(
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
                        for i in 0..m {
                            assert!(
                                c.get(i, j).is_finite(),
                                "{} {m}×{n}×{k} {op_a}{op_b}: NaN leaked",
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
    for_all_scalars!(nan_c_beta_zero);
}

fn scale_only<T: KernelScalar>() {
    let rng = &mut Lcg::new(11);
    let beta = alpha_beta::<T>().1;
    for (k, alpha, poison_ab) in [(0, T::one(), false), (6, T::zero(), true)] {
        let a = Padded::<T>::from_fn(5, k, 1, |_, _| if poison_ab { nan() } else { rng.scalar() });
        let b = Padded::<T>::from_fn(k, 4, 1, |_, _| if poison_ab { nan() } else { rng.scalar() });
        for par in PARS {
            // beta ≠ 0: C = beta·C₀ exactly (one rounding, the same as the test's).
            let c0 = Padded::<T>::random(rng, 5, 4, 1);
            let mut c = c0.clone();
            gemm(
                alpha,
                a.view(),
                Op::NoTrans,
                b.view(),
                Op::NoTrans,
                beta,
                c.view_mut(),
                par,
            )
            .unwrap();
            for j in 0..4 {
                for i in 0..5 {
                    assert!(
                        same_bits(c.get(i, j), beta * c0.get(i, j)),
                        "{} k={k}",
                        T::NAME
                    );
                }
            }
            // beta = 0: zeros, even from NaN.
            let mut c = Padded::<T>::from_fn(5, 4, 1, |_, _| nan());
            gemm(
                alpha,
                a.view(),
                Op::NoTrans,
                b.view(),
                Op::NoTrans,
                T::zero(),
                c.view_mut(),
                par,
            )
            .unwrap();
            assert!((0..4).all(|j| (0..5).all(|i| c.get(i, j) == T::zero())));
            // beta = 1: untouched.
            let mut c = c0.clone();
            gemm(
                alpha,
                a.view(),
                Op::NoTrans,
                b.view(),
                Op::NoTrans,
                T::one(),
                c.view_mut(),
                par,
            )
            .unwrap();
            assert!(c.data.iter().zip(&c0.data).all(|(&x, &y)| same_bits(x, y)));
        }
    }
}

#[test]
fn k_zero_and_alpha_zero_only_scale_c_by_beta() {
    for_all_scalars!(scale_only);
}

#[test]
fn shape_mismatches_are_errors_and_leave_c_alone() {
    let a = Mat::<f64>::zeros(3, 4);
    let b = Mat::<f64>::zeros(5, 2);
    let c0 = Mat::from_fn(3, 2, |i, j| (i + j) as f64);
    let mut c = c0.clone();
    let err = gemm(
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
            kernel: "gemm",
            operand: "op(B)",
            expected: (4, 2),
            found: (5, 2),
        })
    );
    // Aᵀ is 4×3, Bᵀ is 2×5: the inner dimensions 3 and 2 differ.
    assert!(gemm(
        1.0,
        a.as_ref(),
        Op::Trans,
        b.as_ref(),
        Op::Trans,
        0.0,
        c.as_mut(),
        Par::Seq
    )
    .is_err());
    let b = Mat::<f64>::zeros(4, 3);
    let err = gemm(
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
            kernel: "gemm",
            operand: "C",
            expected: (3, 3),
            found: (3, 2),
        })
    );
    assert_eq!(c, c0);
    // The reference reports the same errors.
    let r = reference::gemm(
        1.0,
        a.as_ref(),
        Op::NoTrans,
        b.as_ref(),
        Op::NoTrans,
        0.0,
        c.as_mut(),
    );
    assert_eq!(r, err);
    // Empty but consistent shapes are fine.
    let e = Mat::<f64>::zeros(0, 4);
    let mut c = Mat::<f64>::zeros(0, 3);
    assert!(gemm(
        1.0,
        e.as_ref(),
        Op::NoTrans,
        b.as_ref(),
        Op::NoTrans,
        0.0,
        c.as_mut(),
        Par::Seq
    )
    .is_ok());
}

fn large_two_threads<T: KernelScalar>() {
    let (alpha, beta) = alpha_beta::<T>();
    for (ops, par) in [
        ((Op::NoTrans, Op::NoTrans), Par::Threads(2)),
        ((Op::ConjTrans, Op::Trans), Par::Threads(2)),
    ] {
        check_gemm((257, 300, 190), ops, (alpha, beta), par, None);
    }
}

fn large_products<T: KernelScalar>() {
    let (alpha, beta) = alpha_beta::<T>();
    // Products of at least 64³ multiply-adds run in the `gemm` crate; a conjugated operand is
    // copied (conjugated) first, transposed ones are passed as strided views.
    for op_a in Op::ALL {
        for op_b in Op::ALL {
            for par in PARS {
                check_gemm((40, 512, 520), (op_a, op_b), (alpha, beta), par, None);
            }
        }
    }
    check_gemm(
        (31, 70, 130),
        (Op::ConjTrans, Op::ConjTrans),
        (alpha, beta),
        Par::Seq,
        None,
    );
    // Deep products go to the crate in blocks of columns (4 MiB of packed `B`: 512 to 2048
    // columns at this depth, by scalar); 2100 columns make a last, narrow block for every type.
    for (ops, par) in [
        ((Op::NoTrans, Op::NoTrans), Par::Seq),
        ((Op::ConjTrans, Op::Trans), Par::Threads(2)),
    ] {
        check_gemm((24, 2100, 520), ops, (alpha, beta), par, None);
    }
}

#[test]
fn large_products_with_transposed_and_conjugated_operands() {
    for_all_scalars!(large_products);
}

#[test]
fn two_threads_on_a_product_large_enough_to_split() {
    large_two_threads::<f64>();
    large_two_threads::<c64>();
}

/// faer and matrixmultiply are independent implementations: they must agree closely on a
/// product with leading dimensions larger than the row counts and a transposed operand.
#[test]
fn faer_agrees_with_matrixmultiply() {
    let (m, n, k) = (200, 150, 170);
    let rng = &mut Lcg::new(3);
    let a = Padded::<f64>::random(rng, m, k, 5);
    let b = Padded::<f64>::random(rng, n, k, 1); // used as Bᵀ
    let c0 = Padded::<f64>::random(rng, m, n, 2);
    let (alpha, beta) = (0.5, -1.25);
    let mut c = c0.clone();
    gemm(
        alpha,
        a.view(),
        Op::NoTrans,
        b.view(),
        Op::Trans,
        beta,
        c.view_mut(),
        Par::Seq,
    )
    .unwrap();
    let mut c_mm = c0.clone();
    // SAFETY: the pointers cover the m×k, k×n (as Bᵀ) and m×n operands with the given
    // strides, all in bounds of their buffers, and C does not alias A or B.
    unsafe {
        matrixmultiply::dgemm(
            m,
            k,
            n,
            alpha,
            a.data.as_ptr(),
            1,
            a.ld as isize,
            b.data.as_ptr(),
            b.ld as isize,
            1,
            beta,
            c_mm.data.as_mut_ptr(),
            1,
            c0.ld as isize,
        );
    }
    let all = |_, _| true;
    let tol = bound(k, alpha, fro(&a, all), fro(&b, all), beta, fro(&c0, all));
    let err = fro_diff(&c, &c_mm, all);
    assert!(err <= tol, "faer vs matrixmultiply: {err:e} > {tol:e}");
}

/// The views accept borrowed buffers of any length that covers them, e.g. one column block of
/// a larger local matrix.
#[test]
fn works_on_sub_blocks_of_a_larger_buffer() {
    let big = Mat::from_fn(10, 8, |i, j| (i as f64) - 0.5 * (j as f64));
    let a = big.as_ref().submatrix(2, 1, 4, 3);
    let b = big.as_ref().submatrix(5, 4, 3, 2);
    let mut out = Mat::from_fn(9, 9, |_, _| -7.0);
    let c = out.as_mut().submatrix_mut(1, 2, 4, 2);
    gemm(2.0, a, Op::NoTrans, b, Op::NoTrans, 0.0, c, Par::Seq).unwrap();
    for i in 0..4 {
        for j in 0..2 {
            let want: f64 = (0..3).map(|l| 2.0 * a.get(i, l) * b.get(l, j)).sum();
            assert!((out[(1 + i, 2 + j)] - want).abs() < 1e-12);
        }
    }
    assert_eq!(out[(0, 2)], -7.0);
    assert_eq!(out[(5, 3)], -7.0);
    assert_eq!(out[(1, 4)], -7.0);
    let raw = vec![1.0f32; 7];
    let v = MatRef::from_slice(&raw, 2, 2, 5).unwrap();
    let mut dst = [0.0f32; 4];
    let d = MatMut::from_slice(&mut dst, 2, 2, 2).unwrap();
    gemm(1.0, v, Op::Trans, v, Op::NoTrans, 0.0, d, Par::Seq).unwrap();
    assert_eq!(dst, [2.0; 4]);
}
