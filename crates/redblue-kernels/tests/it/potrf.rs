//! `potrf` for both triangles, four scalars, sizes around the 32-wide leaf and the recursion's
//! blocks, one and two threads: the residual `‖A − L·Lᴴ‖ / (‖A‖·n·ε)` is small, the factor
//! agrees with the naive reference, the other triangle (NaN) and the imaginary parts of the
//! diagonal (NaN) are not read; a matrix that is not positive definite reports the failing
//! column and leaves the factor of the leading block; shape errors.

use crate::common;

use common::*;
use redblue_core::{c64, Op, RealScalar, Scalar, Uplo};
use redblue_kernels::{gemm, potrf, reference, KernelError, KernelScalar, Mat, Par};

/// Empty, tiny, around the 32-wide leaf, the 64 split and several recursion levels.
const SIZES: &[usize] = &[0, 1, 2, 5, 31, 32, 33, 63, 64, 65, 130, 200];

const UPLOS: [Uplo; 2] = [Uplo::Lower, Uplo::Upper];

/// Bound on the condition number of the matrices of [`hpd`]: `B·Bᴴ + n·I` has its eigenvalues
/// in `[n, n + ‖B‖₂²]`, and `‖B‖₂² ≈ 4n·E|b|² ≤ 2.7n` for entries uniform in the unit square.
const COND: f64 = 5.0;

/// A Hermitian positive definite `n × n` matrix `B·Bᴴ + n·I`, full and exactly Hermitian.
/// (Products in these tests use the fast `gemm`, tested against the reference elsewhere, so
/// that the 760 × 760 case stays quick.)
fn hpd<T: KernelScalar>(rng: &mut Lcg, n: usize) -> Padded<T> {
    let b = Padded::<T>::random(rng, n, n, 0);
    let mut a = Padded::from_fn(n, n, 0, |i, j| {
        if i == j {
            T::from_f64_parts(n as f64, 0.0)
        } else {
            T::zero()
        }
    });
    gemm(
        T::one(),
        b.view(),
        Op::NoTrans,
        b.view(),
        Op::ConjTrans,
        T::one(),
        a.view_mut(),
        Par::Seq,
    )
    .unwrap();
    // Exactly Hermitian: mirror the lower triangle, real diagonal.
    for j in 0..n {
        a.set(j, j, T::from_real(a.get(j, j).re()));
        for i in j + 1..n {
            a.set(j, i, a.get(i, j).conj());
        }
    }
    a
}

/// `a` as the kernel sees it: the `uplo` triangle, NaN in the other one and in the imaginary
/// parts of the diagonal, and `pad` NaN rows.
fn poisoned<T: Scalar>(a: &Padded<T>, uplo: Uplo, pad: usize) -> Padded<T> {
    Padded::from_fn(a.nrows, a.ncols, pad, |i, j| {
        if i == j {
            T::from_f64_parts(a.get(i, j).re().to_f64(), f64::NAN)
        } else if uplo.contains(i, j) {
            a.get(i, j)
        } else {
            nan()
        }
    })
}

/// The factor stored in the `uplo` triangle of the leading `k × k` block of `f`, with zeros
/// elsewhere: `L` (lower) or `U` (upper).
fn factor_of<T: Scalar>(f: &Padded<T>, uplo: Uplo, k: usize) -> Padded<T> {
    Padded::from_fn(k, k, 0, |i, j| {
        if uplo.contains(i, j) {
            f.get(i, j)
        } else {
            T::zero()
        }
    })
}

/// `‖A − L·Lᴴ‖_F / (‖A‖_F·k·ε)` (or `A − Uᴴ·U`) on the leading `k × k` block.
fn residual<T: KernelScalar>(a: &Padded<T>, f: &Padded<T>, uplo: Uplo, k: usize) -> f64 {
    let fac = factor_of(f, uplo, k);
    let mut res = Padded::from_fn(k, k, 0, |i, j| a.get(i, j));
    let (op_l, op_r) = match uplo {
        Uplo::Lower => (Op::NoTrans, Op::ConjTrans),
        Uplo::Upper => (Op::ConjTrans, Op::NoTrans),
    };
    gemm(
        -T::one(),
        fac.view(),
        op_l,
        fac.view(),
        op_r,
        T::one(),
        res.view_mut(),
        Par::Seq,
    )
    .unwrap();
    let all = |_, _| true;
    let a_k = Padded::from_fn(k, k, 0, |i, j| a.get(i, j));
    let scale = fro(&a_k, all) * k.max(1) as f64 * T::epsilon().to_f64();
    if scale == 0.0 {
        fro(&res, all)
    } else {
        fro(&res, all) / scale
    }
}

/// The largest normalised residual allowed (measured: at most 0.59, for n = 1).
const MAX_RESIDUAL: f64 = 4.0;

/// Factors `hpd(n)` and checks the residual, the untouched parts and, if `compare`, the
/// agreement with the reference.
fn check_potrf<T: KernelScalar>(uplo: Uplo, n: usize, par: Par, compare: bool) {
    let rng = &mut Lcg::new(n as u64 * 31 + 7);
    let a = hpd::<T>(rng, n);
    let a0 = poisoned(&a, uplo, 2);
    let mut f = a0.clone();
    potrf(uplo, f.view_mut(), par).unwrap();
    let what = format!("{} {uplo:?} n={n} {par:?}", T::NAME);
    assert!(f.padding_intact(&a0), "{what}: padding written");
    for j in 0..n {
        for i in 0..n {
            if !uplo.contains(i, j) {
                assert!(
                    same_bits(f.get(i, j), a0.get(i, j)),
                    "{what}: ({i}, {j}) outside the triangle changed"
                );
            }
        }
        let d = f.get(j, j);
        assert!(
            d.im().to_f64() == 0.0 && d.re().to_f64() > 0.0,
            "{what}: diagonal {j} is {d}"
        );
    }
    let r = residual(&a, &f, uplo, n);
    assert!(r <= MAX_RESIDUAL, "{what}: residual {r:e} > {MAX_RESIDUAL}");
    if compare {
        let mut f_ref = a0.clone();
        reference::potrf(uplo, f_ref.view_mut()).unwrap();
        let tri = |i, j| uplo.contains(i, j);
        let err = fro_diff(&f, &f_ref, tri);
        let tol = BOUND_C * COND * n.max(1) as f64 * T::epsilon().to_f64() * fro(&f_ref, tri);
        assert!(err <= tol, "{what}: |F − F_ref| {err:e} > {tol:e}");
    }
}

fn all_sizes<T: KernelScalar>() {
    for uplo in UPLOS {
        for &n in SIZES {
            for par in PARS {
                check_potrf::<T>(uplo, n, par, true);
            }
        }
    }
}

#[test]
fn residual_is_small_for_both_triangles_all_scalars_and_sizes() {
    for_all_scalars!(all_sizes);
}

/// Large matrices: several recursion levels above the leaf, work large enough for two threads
/// to split, and trailing updates beyond the 64-wide leaves of the `gemmt` recursion.
#[test]
fn large_matrices_with_a_packed_trailing_update() {
    for uplo in UPLOS {
        check_potrf::<f64>(uplo, 760, Par::Threads(2), false);
        check_potrf::<c64>(uplo, 600, Par::Seq, false);
    }
}

fn not_positive_definite<T: KernelScalar>() {
    let n = 200;
    let rng = &mut Lcg::new(3);
    let a = hpd::<T>(rng, n);
    for uplo in UPLOS {
        for bad in [0, 5, 31, 32, 40, 150, 199] {
            for par in PARS {
                // A negative pivot: the leading `bad × bad` block stays positive definite.
                let mut b = a.clone();
                b.set(bad, bad, T::from_f64_parts(-1.0, 0.0));
                let b0 = poisoned(&b, uplo, 1);
                let mut f = b0.clone();
                let what = format!("{} {uplo:?} bad={bad} {par:?}", T::NAME);
                assert_eq!(
                    potrf(uplo, f.view_mut(), par),
                    Err(KernelError::NotPositiveDefinite { column: bad }),
                    "{what}"
                );
                // LAPACK's info > 0: the leading block holds its factor.
                let r = residual(&b, &f, uplo, bad);
                assert!(r <= MAX_RESIDUAL, "{what}: leading-block residual {r:e}");
                let mut f_ref = b0.clone();
                assert_eq!(
                    reference::potrf(uplo, f_ref.view_mut()),
                    Err(KernelError::NotPositiveDefinite { column: bad })
                );
            }
        }
        // A NaN pivot is not positive either.
        let mut b = a.clone();
        b.set(70, 70, nan());
        let mut f = poisoned(&b, uplo, 1);
        assert_eq!(
            potrf(uplo, f.view_mut(), Par::Seq),
            Err(KernelError::NotPositiveDefinite { column: 70 })
        );
        // The zero matrix fails at once.
        let mut z = Padded::<T>::from_fn(5, 5, 1, |_, _| T::zero());
        assert_eq!(
            potrf(uplo, z.view_mut(), Par::Seq),
            Err(KernelError::NotPositiveDefinite { column: 0 })
        );
    }
}

#[test]
fn matrices_that_are_not_positive_definite_report_the_failing_column() {
    for_all_scalars!(not_positive_definite);
}

/// Semidefinite in exact arithmetic: `[1 1; 1 1]` has pivot `1 − 1² = 0` in column 1.
#[test]
fn a_zero_pivot_is_not_positive() {
    for uplo in UPLOS {
        let mut a = Mat::from_fn(2, 2, |_, _| 1.0f64);
        assert_eq!(
            potrf(uplo, a.as_mut(), Par::Seq),
            Err(KernelError::NotPositiveDefinite { column: 1 })
        );
    }
}

#[test]
fn non_square_matrices_are_shape_errors_and_left_alone() {
    let a0 = Mat::from_fn(3, 2, |i, j| (i + j) as f64);
    let mut a = a0.clone();
    let expected = Err(KernelError::ShapeMismatch {
        kernel: "potrf",
        operand: "A",
        expected: (3, 3),
        found: (3, 2),
    });
    assert_eq!(potrf(Uplo::Lower, a.as_mut(), Par::Seq), expected);
    assert_eq!(reference::potrf(Uplo::Upper, a.as_mut()), expected);
    assert_eq!(a, a0);
}

/// A hand-checked complex case: `A = [2 i; −i 2] = L·Lᴴ` with
/// `L = [√2 0; −i/√2 √(3/2)]`, and the upper factor is `U = Lᴴ`.
#[test]
fn small_hermitian_case() {
    let i = c64::new(0.0, 1.0);
    let two = c64::new(2.0, 0.0);
    let a = Mat::from_fn(2, 2, |r, c| [[two, i], [-i, two]][r][c]);
    let s2 = 2f64.sqrt();
    let close = |x: c64, y: c64| (x - y).norm() < 1e-15;
    let mut l = a.clone();
    potrf(Uplo::Lower, l.as_mut(), Par::Seq).unwrap();
    assert!(close(l[(0, 0)], c64::new(s2, 0.0)));
    assert!(close(l[(1, 0)], c64::new(0.0, -1.0 / s2)));
    assert!(close(l[(1, 1)], c64::new(1.5f64.sqrt(), 0.0)));
    let mut u = a.clone();
    potrf(Uplo::Upper, u.as_mut(), Par::Seq).unwrap();
    assert!(close(u[(0, 1)], c64::new(0.0, 1.0 / s2)));
    assert!(close(u[(1, 1)], l[(1, 1)]));
}
