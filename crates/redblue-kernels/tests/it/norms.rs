//! Norms against naive sums in `f64` for four scalars and edge shapes (with NaN padding that
//! must not be read), no overflow or underflow in the Frobenius norm at extreme scales, NaN and
//! infinity propagation, and hand-checked values.

use crate::common;

use common::*;
use redblue_core::{c32, c64, RealScalar, Scalar};
use redblue_kernels::{norm_fro, norm_inf, norm_max, norm_one, KernelScalar, Mat};

const SHAPES: &[(usize, usize)] = &[
    (0, 0),
    (0, 3),
    (3, 0),
    (1, 1),
    (7, 5),
    (64, 65),
    (130, 7),
    (5, 140),
];

/// `|x|` in `f64`.
fn modulus<T: Scalar>(x: T) -> f64 {
    x.re().to_f64().hypot(x.im().to_f64())
}

/// The four norms computed naively in `f64`: (Frobenius, max, one, inf).
fn naive<T: Scalar>(a: &Padded<T>) -> [f64; 4] {
    let (m, n) = (a.nrows, a.ncols);
    let mut fro = 0.0;
    let mut max = 0.0f64;
    let mut cols = vec![0.0; n];
    let mut rows = vec![0.0; m];
    for j in 0..n {
        for i in 0..m {
            let x = modulus(a.get(i, j));
            fro += x * x;
            max = max.max(x);
            cols[j] += x;
            rows[i] += x;
        }
    }
    let one = cols.into_iter().fold(0.0, f64::max);
    let inf = rows.into_iter().fold(0.0, f64::max);
    [fro.sqrt(), max, one, inf]
}

fn ours<T: KernelScalar>(a: &Padded<T>) -> [f64; 4] {
    let v = a.view();
    [norm_fro(v), norm_max(v), norm_one(v), norm_inf(v)].map(|x| x.to_f64())
}

fn random_shapes<T: KernelScalar>() {
    let eps = T::epsilon().to_f64();
    for &(m, n) in SHAPES {
        let rng = &mut Lcg::new((m * 100 + n) as u64);
        let a = Padded::<T>::random(rng, m, n, 2);
        let got = ours(&a);
        let want = naive(&a);
        // Sums of N positive terms are within (N − 1)·ε relative; a modulus within 2ε.
        let tol = [2 * m * n + 2, 2, 2 * m + 2, 2 * n + 2].map(|c| c as f64 * eps);
        for k in 0..4 {
            let err = (got[k] - want[k]).abs();
            assert!(
                err <= tol[k] * want[k],
                "{} {m}×{n} norm {k}: {} vs {}",
                T::NAME,
                got[k],
                want[k]
            );
        }
        if m == 0 || n == 0 {
            assert_eq!(got, [0.0; 4]);
        }
    }
}

#[test]
fn norms_match_naive_sums_for_all_scalars_and_shapes() {
    for_all_scalars!(random_shapes);
}

/// Scaled by a power of two (exact), the Frobenius norm scales exactly as far as rounding
/// goes, although the squares of the elements overflow or underflow.
fn extreme_scales<T: KernelScalar>(scales: &[f64]) {
    let rng = &mut Lcg::new(8);
    let a = Padded::<T>::random(rng, 40, 30, 1);
    let base = norm_fro(a.view()).to_f64();
    for &s in scales {
        let b = Padded::from_fn(40, 30, 1, |i, j| {
            let x = a.get(i, j);
            T::from_f64_parts(x.re().to_f64() * s, x.im().to_f64() * s)
        });
        let got = norm_fro(b.view()).to_f64();
        let rel = (got / s - base).abs() / base;
        assert!(
            rel <= 1e3 * T::epsilon().to_f64(),
            "{} scale {s:e}: {got:e} vs {:e}",
            T::NAME,
            base * s
        );
        // The other norms are sums and maxima of moduli: no squares to overflow.
        let max = norm_max(b.view()).to_f64();
        assert!((max / s - norm_max(a.view()).to_f64()).abs() <= 4.0 * T::epsilon().to_f64());
    }
}

#[test]
fn frobenius_norm_neither_overflows_nor_underflows() {
    let big64 = 2f64.powi(1000);
    let small64 = 2f64.powi(-1000);
    extreme_scales::<f64>(&[big64, small64]);
    extreme_scales::<c64>(&[big64, small64]);
    let big32 = 2f64.powi(120);
    let small32 = 2f64.powi(-120);
    extreme_scales::<f32>(&[big32, small32]);
    extreme_scales::<c32>(&[big32, small32]);
}

fn special_values<T: KernelScalar>() {
    for (i, j) in [(0, 0), (3, 2), (6, 4)] {
        for (value, is_nan) in [(f64::NAN, true), (f64::INFINITY, false)] {
            let rng = &mut Lcg::new(2);
            let mut a = Padded::<T>::random(rng, 7, 5, 1);
            a.set(i, j, T::from_f64_parts(value, 0.0));
            for (k, x) in ours(&a).into_iter().enumerate() {
                let what = format!("{} {value} at ({i}, {j}), norm {k}: {x}", T::NAME);
                if is_nan {
                    assert!(x.is_nan(), "{what}");
                } else {
                    assert!(x == f64::INFINITY, "{what}");
                }
            }
        }
    }
}

#[test]
fn nan_and_infinity_propagate() {
    for_all_scalars!(special_values);
}

#[test]
fn hand_checked_values() {
    // [1 −2; 3 4]: √30, 4, max(1 + 3, 2 + 4) = 6, max(1 + 2, 3 + 4) = 7.
    let a = Mat::from_fn(2, 2, |i, j| [[1.0, -2.0], [3.0, 4.0]][i][j]);
    assert_eq!(norm_fro(a.as_ref()), 30f64.sqrt());
    assert_eq!(norm_max(a.as_ref()), 4.0);
    assert_eq!(norm_one(a.as_ref()), 6.0);
    assert_eq!(norm_inf(a.as_ref()), 7.0);
    // [3  4i]: moduli, not |re| + |im|.
    let z = Mat::from_fn(1, 2, |_, j| [c64::new(3.0, 0.0), c64::new(0.0, 4.0)][j]);
    assert_eq!(norm_fro(z.as_ref()), 5.0);
    assert_eq!(norm_max(z.as_ref()), 4.0);
    assert_eq!(norm_one(z.as_ref()), 4.0);
    assert_eq!(norm_inf(z.as_ref()), 7.0);
    let w = Mat::from_fn(1, 1, |_, _| c32::new(3.0, -4.0));
    assert_eq!(norm_max(w.as_ref()), 5.0);
}
