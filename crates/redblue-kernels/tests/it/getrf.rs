//! `getrf` and `laswp`: the residual `‖P·A − L·U‖ / (‖A‖·max(m, n)·ε)` is small for four
//! scalars, square, tall and wide shapes around the recursion's leaf and block sizes, one and
//! two threads; `ipiv` and `perm` agree; the multipliers are bounded; exactly singular
//! matrices report the first zero-pivot column and keep finite, usable factors; `laswp`
//! forward then backward is the identity.

use crate::common;

use common::*;
use redblue_core::{c64, RealScalar, Scalar};
use redblue_kernels::{
    getrf, laswp, reference, Direction, KernelError, KernelScalar, LuPivots, Mat, Par,
};

/// `(m, n)`: empty, tiny, around the 16-column leaf and 64-wide blocks, several recursion
/// levels, tall panels (tournament pivoting factors `2v × v` stacks) and wide matrices.
const SHAPES: &[(usize, usize)] = &[
    (0, 0),
    (0, 3),
    (3, 0),
    (1, 1),
    (1, 5),
    (5, 1),
    (2, 2),
    (16, 16),
    (17, 17),
    (63, 63),
    (64, 64),
    (65, 65),
    (200, 200),
    (128, 64),
    (130, 7),
    (200, 40),
    (40, 200),
    (7, 130),
];

/// The unit lower trapezoidal `L` (`m × k`) and upper trapezoidal `U` (`k × n`) stored in
/// `lu`, as separate matrices with explicit zeros and ones.
fn split_lu<T: Scalar>(lu: &Padded<T>) -> (Padded<T>, Padded<T>) {
    let (m, n) = (lu.nrows, lu.ncols);
    let k = m.min(n);
    let l = Padded::from_fn(m, k, 0, |i, j| match i.cmp(&j) {
        std::cmp::Ordering::Greater => lu.get(i, j),
        std::cmp::Ordering::Equal => T::one(),
        std::cmp::Ordering::Less => T::zero(),
    });
    let u = Padded::from_fn(
        k,
        n,
        0,
        |i, j| if i <= j { lu.get(i, j) } else { T::zero() },
    );
    (l, u)
}

/// `‖P·A − L·U‖_F / (‖A‖_F·max(m, n)·ε)` for the factors in `lu` and the pivots `perm`.
fn residual<T: KernelScalar>(a: &Padded<T>, lu: &Padded<T>, perm: &[usize]) -> f64 {
    let (m, n) = (a.nrows, a.ncols);
    let (l, u) = split_lu(lu);
    let mut pa = Padded::from_fn(m, n, 0, |i, j| a.get(perm[i], j));
    // P·A − L·U, computed naively.
    reference::gemm(
        -T::one(),
        l.view(),
        redblue_core::Op::NoTrans,
        u.view(),
        redblue_core::Op::NoTrans,
        T::one(),
        pa.view_mut(),
    )
    .unwrap();
    let all = |_, _| true;
    let scale = fro(a, all) * m.max(n) as f64 * T::epsilon().to_f64();
    if scale == 0.0 {
        fro(&pa, all)
    } else {
        fro(&pa, all) / scale
    }
}

/// The largest normalised residual allowed. Partial pivoting on random matrices has a small
/// growth factor; the largest ratio measured over these tests is 0.2 (tiny matrices).
const MAX_RESIDUAL: f64 = 4.0;

/// Factors `a` and checks everything that holds for any input; returns the factors and info.
fn check_getrf<T: KernelScalar>(
    a: &Padded<T>,
    par: Par,
    what: &str,
) -> (Padded<T>, redblue_kernels::LuInfo) {
    let (m, n) = (a.nrows, a.ncols);
    let mut lu = a.clone();
    let info = getrf(lu.view_mut(), par).unwrap();
    assert!(lu.padding_intact(a), "{what}: padding written");
    let ipiv = info.pivots.ipiv();
    let perm = info.pivots.perm();
    assert_eq!(ipiv.len(), m.min(n), "{what}: ipiv length");
    assert!(
        ipiv.iter().enumerate().all(|(i, &p)| i <= p && p < m),
        "{what}: ipiv out of range: {ipiv:?}"
    );
    let rebuilt = LuPivots::from_ipiv(ipiv.to_vec(), m).unwrap();
    assert_eq!(rebuilt.perm(), perm, "{what}: perm disagrees with ipiv");
    let mut sorted = perm.to_vec();
    sorted.sort_unstable();
    assert!(
        sorted.iter().copied().eq(0..m),
        "{what}: perm is not a permutation"
    );
    let r = residual(a, &lu, perm);
    assert!(
        r <= MAX_RESIDUAL,
        "{what}: normalised residual {r:e} > {MAX_RESIDUAL}"
    );
    // Partial pivoting by |re| + |im| bounds every multiplier's modulus by √2 (1 for reals).
    let max_l = if T::IS_COMPLEX {
        std::f64::consts::SQRT_2
    } else {
        1.0
    } * (1.0 + 4.0 * T::epsilon().to_f64());
    for j in 0..m.min(n) {
        for i in j + 1..m {
            let l = lu.get(i, j).abs().to_f64();
            assert!(l <= max_l, "{what}: |L[{i}, {j}]| = {l} > {max_l}");
        }
    }
    (lu, info)
}

fn random_shapes<T: KernelScalar>() {
    for &(m, n) in SHAPES {
        for par in PARS {
            let rng = &mut Lcg::new((m * 1009 + n) as u64);
            let a = Padded::<T>::random(rng, m, n, 3);
            let what = format!("{} {m}×{n} {par:?}", T::NAME);
            let (_, info) = check_getrf(&a, par, &what);
            assert_eq!(info.first_zero_pivot, None, "{what}");
        }
    }
}

#[test]
fn residual_is_small_for_all_scalars_and_shapes() {
    for_all_scalars!(random_shapes);
}

#[test]
fn two_threads_on_a_factorisation_large_enough_to_split() {
    let rng = &mut Lcg::new(99);
    let a = Padded::<f64>::random(rng, 300, 300, 1);
    let (_, info) = check_getrf(&a, Par::Threads(2), "f64 300×300 two threads");
    assert_eq!(info.first_zero_pivot, None);
    let a = Padded::<c64>::random(rng, 400, 130, 1);
    let (_, info) = check_getrf(&a, Par::Threads(2), "c64 400×130 two threads");
    assert_eq!(info.first_zero_pivot, None);
}

fn zero_columns<T: KernelScalar>() {
    // (m, n, zero columns, the first zero pivot reported)
    let cases: &[(usize, usize, &[usize], Option<usize>)] = &[
        (1, 1, &[0], Some(0)),
        (5, 5, &[0], Some(0)),
        (5, 5, &[4], Some(4)),
        (65, 65, &[40, 50], Some(40)),
        (200, 200, &[17, 150], Some(17)),
        (200, 40, &[39], Some(39)),
        (128, 64, &[33], Some(33)),
        // A zero column past the last pivot column of a wide matrix is not a pivot.
        (30, 50, &[45], None),
        (30, 50, &[29, 45], Some(29)),
    ];
    for &(m, n, zeros, expected) in cases {
        for par in PARS {
            let rng = &mut Lcg::new((m + 7 * n) as u64);
            let a = Padded::<T>::from_fn(m, n, 2, |_, j| {
                let x = rng.scalar();
                if zeros.contains(&j) {
                    T::zero()
                } else {
                    x
                }
            });
            let what = format!("{} {m}×{n} zero columns {zeros:?} {par:?}", T::NAME);
            let (lu, info) = check_getrf(&a, par, &what);
            assert_eq!(info.first_zero_pivot, expected, "{what}");
            assert!(
                (0..n).all(|j| (0..m).all(|i| lu.get(i, j).is_finite())),
                "{what}: factors not finite"
            );
            match expected {
                Some(column) => assert_eq!(
                    info.nonsingular(),
                    Err(KernelError::SingularPivot { column })
                ),
                None => assert!(info.nonsingular().is_ok()),
            }
        }
    }
}

#[test]
fn exactly_singular_matrices_report_the_first_zero_pivot_and_keep_usable_factors() {
    for_all_scalars!(zero_columns);
}

/// A singularity that only appears after elimination, in exact arithmetic: `[1 2; 2 4]`.
#[test]
fn dependent_columns_give_a_zero_pivot_after_elimination() {
    let mut a = Mat::from_fn(2, 2, |i, j| [[1.0, 2.0], [2.0, 4.0]][i][j]);
    let info = getrf(a.as_mut(), Par::Seq).unwrap();
    assert_eq!(info.pivots.ipiv(), &[1, 1]);
    assert_eq!(info.first_zero_pivot, Some(1));
    // L = [1 0; 1/2 1], U = [2 4; 0 0].
    assert_eq!(a.as_slice(), &[2.0, 0.5, 4.0, 0.0]);
    // Rank 1 with a nonzero last column: the zero pivot is column 0 of the 3×3 below,
    // and columns 1 and 2 are still factored.
    let mut b = Mat::from_fn(3, 3, |i, j| if j == 0 { 0.0 } else { (i * j + 1) as f64 });
    let info = getrf(b.as_mut(), Par::Seq).unwrap();
    assert_eq!(info.first_zero_pivot, Some(0));
    assert_eq!(info.pivots.ipiv()[0], 0);
}

fn swaps_round_trip<T: KernelScalar>() {
    for &(m, n) in &[(0, 3), (1, 4), (65, 9), (200, 3)] {
        let rng = &mut Lcg::new(m as u64 + 3);
        let a = Padded::<T>::random(rng, m, n, 2);
        let mut lu = Padded::<T>::random(rng, m, m.min(40), 0);
        let info = getrf(lu.view_mut(), Par::Seq).unwrap();
        let pivots = info.pivots;
        // Forward is P·A: row i becomes row perm[i], bit for bit.
        let mut pa = a.clone();
        laswp(pa.view_mut(), pivots.ipiv(), Direction::Forward).unwrap();
        for j in 0..n {
            for i in 0..m {
                assert!(same_bits(pa.get(i, j), a.get(pivots.perm()[i], j)));
            }
        }
        assert!(pa.padding_intact(&a));
        // Backward undoes it.
        laswp(pa.view_mut(), pivots.ipiv(), Direction::Backward).unwrap();
        assert!(pa.data.iter().zip(&a.data).all(|(&x, &y)| same_bits(x, y)));
    }
}

#[test]
fn laswp_forward_then_backward_is_the_identity() {
    for_all_scalars!(swaps_round_trip);
}

/// The interchanges of a panel factorisation, applied to the other columns with `laswp`,
/// give the same rows as factoring the whole matrix would see: `P·A` column by column.
#[test]
fn panel_pivots_applied_to_the_rest_with_laswp() {
    let rng = &mut Lcg::new(5);
    let (m, n, w) = (100, 60, 20);
    let a = Padded::<f64>::random(rng, m, n, 1);
    let mut work = a.clone();
    let mut view = work.view_mut();
    let (panel, rest) = view.rb_mut().split_at_col_mut(w);
    let info = getrf(panel, Par::Seq).unwrap();
    laswp(rest, info.pivots.ipiv(), Direction::Forward).unwrap();
    for j in w..n {
        for i in 0..m {
            assert_eq!(work.get(i, j), a.get(info.pivots.perm()[i], j));
        }
    }
}

#[test]
fn invalid_pivots_are_errors_and_leave_a_alone() {
    let a0 = Mat::from_fn(3, 2, |i, j| (i + 3 * j) as f64);
    let mut a = a0.clone();
    assert_eq!(
        laswp(a.as_mut(), &[0, 3], Direction::Forward),
        Err(KernelError::InvalidPivot {
            index: 1,
            pivot: 3,
            nrows: 3
        })
    );
    assert!(laswp(a.as_mut(), &[0, 1, 2, 3], Direction::Backward).is_err());
    assert_eq!(a, a0);
    // ipiv[i] < i is allowed, as in LAPACK: it is just an interchange.
    laswp(a.as_mut(), &[0, 0], Direction::Forward).unwrap();
    assert_eq!((a[(0, 0)], a[(1, 0)]), (1.0, 0.0));
}

/// The pivot measure is `|re| + |im|`, as LAPACK's `izamax`: `2 + 2i` (measure 4) is chosen
/// over `3` (measure 3) although its modulus, 2.83, is smaller.
#[test]
fn complex_pivots_use_the_one_norm_of_the_element() {
    let mut a = Mat::from_fn(2, 1, |i, _| [c64::new(3.0, 0.0), c64::new(2.0, 2.0)][i]);
    let info = getrf(a.as_mut(), Par::Seq).unwrap();
    assert_eq!(info.pivots.ipiv(), &[1]);
    // Ties go to the first candidate.
    let mut a = Mat::from_fn(3, 1, |i, _| [1.0, -2.0, 2.0][i]);
    let info = getrf(a.as_mut(), Par::Seq).unwrap();
    assert_eq!(info.pivots.ipiv(), &[1]);
}
