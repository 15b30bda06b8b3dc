//! `copy_triangle` and `extract_triangle` on square, tall and wide shapes: exactly the
//! triangle is copied, nothing outside it is read (NaN there) or written, padding untouched;
//! `L` and `U` extracted from `getrf` multiply back to `P·A`; shape errors.

use crate::common;

use common::*;
use redblue_core::{Diag, Op, Scalar, Uplo};
use redblue_kernels::{
    copy_triangle, extract_triangle, gemm, getrf, laswp, Direction, KernelError, KernelScalar, Mat,
    Par,
};

const SHAPES: &[(usize, usize)] = &[(0, 0), (0, 3), (3, 0), (1, 1), (5, 5), (7, 3), (3, 7)];

/// A random `m × n` source with NaN outside the `uplo` triangle (and on the diagonal if
/// `nan_diag`).
fn source<T: Scalar>(m: usize, n: usize, uplo: Uplo, nan_diag: bool) -> Padded<T> {
    let rng = &mut Lcg::new((m * 10 + n) as u64);
    Padded::from_fn(m, n, 2, |i, j| {
        let x = rng.scalar();
        if !uplo.contains(i, j) || (nan_diag && i == j) {
            nan()
        } else {
            x
        }
    })
}

fn copies<T: KernelScalar>() {
    for &(m, n) in SHAPES {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let src = source::<T>(m, n, uplo, false);
            let dst0 =
                Padded::<T>::from_fn(m, n, 1, |i, j| T::from_f64_parts(-(i as f64), j as f64));
            let mut dst = dst0.clone();
            copy_triangle(uplo, src.view(), dst.view_mut()).unwrap();
            for j in 0..n {
                for i in 0..m {
                    let want = if uplo.contains(i, j) {
                        src.get(i, j)
                    } else {
                        dst0.get(i, j)
                    };
                    assert!(
                        same_bits(dst.get(i, j), want),
                        "{} {uplo:?} {m}×{n} ({i}, {j})",
                        T::NAME
                    );
                }
            }
            assert!(dst.padding_intact(&dst0));
        }
    }
}

#[test]
fn copy_triangle_copies_exactly_the_triangle() {
    for_all_scalars!(copies);
}

fn extracts<T: KernelScalar>() {
    for &(m, n) in SHAPES {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            for diag in [Diag::NonUnit, Diag::Unit] {
                let src = source::<T>(m, n, uplo, diag == Diag::Unit);
                let dst0 = Padded::<T>::from_fn(m, n, 1, |_, _| nan());
                let mut dst = dst0.clone();
                extract_triangle(uplo, diag, src.view(), dst.view_mut()).unwrap();
                for j in 0..n {
                    for i in 0..m {
                        let want = if i == j && diag == Diag::Unit {
                            T::one()
                        } else if uplo.contains(i, j) {
                            src.get(i, j)
                        } else {
                            T::zero()
                        };
                        assert!(
                            same_bits(dst.get(i, j), want),
                            "{} {uplo:?} {diag:?} {m}×{n} ({i}, {j})",
                            T::NAME
                        );
                    }
                }
                assert!(dst.padding_intact(&dst0));
            }
        }
    }
}

#[test]
fn extract_triangle_writes_the_whole_triangular_matrix() {
    for_all_scalars!(extracts);
}

/// `L·U = P·A` for the factors of `getrf`, tall and wide.
#[test]
fn lu_factors_extracted_multiply_back() {
    for (m, n) in [(9, 4), (4, 9), (6, 6)] {
        let rng = &mut Lcg::new(4);
        let a = Padded::<f64>::random(rng, m, n, 0);
        let mut lu = a.clone();
        let info = getrf(lu.view_mut(), Par::Seq).unwrap();
        let k = m.min(n);
        let mut l = Mat::<f64>::zeros(m, k);
        let mut u = Mat::<f64>::zeros(k, n);
        extract_triangle(
            Uplo::Lower,
            Diag::Unit,
            lu.view().submatrix(0, 0, m, k),
            l.as_mut(),
        )
        .unwrap();
        extract_triangle(
            Uplo::Upper,
            Diag::NonUnit,
            lu.view().submatrix(0, 0, k, n),
            u.as_mut(),
        )
        .unwrap();
        let mut pa = a.clone();
        laswp(pa.view_mut(), info.pivots.ipiv(), Direction::Forward).unwrap();
        gemm(
            -1.0,
            l.as_ref(),
            Op::NoTrans,
            u.as_ref(),
            Op::NoTrans,
            1.0,
            pa.view_mut(),
            Par::Seq,
        )
        .unwrap();
        let err = fro(&pa, |_, _| true);
        assert!(err <= 1e-14 * fro(&a, |_, _| true), "{m}×{n}: {err:e}");
    }
}

#[test]
fn shape_mismatches_are_errors_and_leave_dst_alone() {
    let src = Mat::<f64>::zeros(3, 2);
    let dst0 = Mat::from_fn(2, 3, |i, j| (i + j) as f64);
    let mut dst = dst0.clone();
    let expected = |kernel| {
        Err(KernelError::ShapeMismatch {
            kernel,
            operand: "dst",
            expected: (3, 2),
            found: (2, 3),
        })
    };
    assert_eq!(
        copy_triangle(Uplo::Lower, src.as_ref(), dst.as_mut()),
        expected("copy_triangle")
    );
    assert_eq!(
        extract_triangle(Uplo::Upper, Diag::Unit, src.as_ref(), dst.as_mut()),
        expected("extract_triangle")
    );
    assert_eq!(dst, dst0);
}
