//! The out-of-core LUs (left-looking with pivoted and unpivoted storage, right-looking): `P·A =
//! L·U` from the file each leaves, the elements each reads and writes equal to its exact model,
//! the models against seed 003's closed forms and worked numbers, and the solve from the file.

use redblue_core::{c64, random, RealScalar, Scalar};
use redblue_kernels::Par;
use redblue_ooc::{
    factor_residual, left_pivoted_io, left_unpivoted_io, lu_flops, lu_left_pivoted,
    lu_left_unpivoted, lu_right, right_io, solve_from_file, solve_io, DiskMatrix, OocError, OocLu,
};
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("redblue-ooc-lu-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn value<T: Scalar>(i: usize, j: usize) -> T {
    T::from_f64_parts(random::uniform(i, j, 11), random::uniform(i, j, 12))
}

/// A variant: its call, its model, its name.
type Variant<T> = (
    fn(&mut DiskMatrix<T>, Par) -> Result<OocLu, OocError>,
    fn(u64, u64) -> (u64, u64),
    &'static str,
);

fn variants<T: redblue_kernels::KernelScalar>() -> [Variant<T>; 3] {
    [
        (lu_right::<T>, right_io, "right"),
        (lu_left_pivoted::<T>, left_pivoted_io, "left-pivoted"),
        (lu_left_unpivoted::<T>, left_unpivoted_io, "left-unpivoted"),
    ]
}

/// Factors an `m × m` matrix in panels of `w` and checks the factors, the counts, and that
/// every checksum still holds after a sync.
fn factor_and_check<T: redblue_kernels::KernelScalar>(m: usize, w: usize, variant: Variant<T>) {
    let (factor, model, name) = variant;
    let d = dir(&format!("{name}-{m}-{w}-{}", std::mem::size_of::<T>()));
    let mut a = DiskMatrix::<T>::create_from_fn(d.join("a.rbm"), m, m, w, value::<T>).unwrap();
    let info = factor(&mut a, Par::Seq).unwrap();
    assert_eq!(info.first_zero_pivot, None);
    let want = lu_flops(m, w);
    for (got, want) in [
        (info.flops.trsm, want.trsm),
        (info.flops.gemm, want.gemm),
        (info.flops.getrf, want.getrf),
    ] {
        assert!(
            (got - want).abs() <= 1e-12 * want.abs().max(1.0),
            "{name}: flops {got} vs {want}"
        );
    }
    assert_eq!(
        (info.io.read_elems, info.io.write_elems),
        model(m as u64, w as u64),
        "{name}: m = {m}, w = {w}"
    );
    a.sync().unwrap();
    a.verify().unwrap();
    // The streamed residual, below ScaLAPACK's LU threshold; large once one factor is off.
    let mut orig =
        DiskMatrix::<T>::create_from_fn(d.join("orig.rbm"), m, m, w, value::<T>).unwrap();
    let r = factor_residual(&mut orig, &mut a, &info.ipiv, Par::Seq).unwrap();
    assert!(r < 1.0, "{name}: residual {r}");
    let mut e = [T::zero()];
    a.read(m - 1..m, 0..1, &mut e).unwrap();
    a.write(m - 1..m, 0..1, &[e[0] + T::one()]).unwrap();
    let bad = factor_residual(&mut orig, &mut a, &info.ipiv, Par::Seq).unwrap();
    assert!(bad > 1e3, "{name}: a wrong factor's residual {bad}");
    a.write(m - 1..m, 0..1, &e).unwrap();
    let mut s = vec![T::zero(); m * m];
    a.read(0..m, 0..m, &mut s).unwrap();
    // Row i of P·A is row rows[i] of A.
    let mut rows: Vec<usize> = (0..m).collect();
    for (i, &p) in info.ipiv.iter().enumerate() {
        assert!(p >= i && p < m);
        rows.swap(i, p);
    }
    let scale = (m as f64) * 100.0 * T::epsilon().to_f64();
    for i in 0..m {
        for j in 0..m {
            let mut lu = T::zero();
            for l in 0..=i.min(j) {
                let lv = if l == i { T::one() } else { s[i + l * m] };
                lu += lv * s[l + j * m];
            }
            let want = value::<T>(rows[i], j);
            assert!(
                (lu - want).abs().to_f64() <= scale * 4.0,
                "({i}, {j}) of {m} in panels of {w}"
            );
        }
    }
}

#[test]
fn the_factors_on_disk_are_lapacks_and_the_counts_the_model() {
    for variant in variants::<f64>() {
        for (m, w) in [(1, 3), (3, 5), (8, 8), (37, 5), (40, 8), (33, 4), (20, 1)] {
            factor_and_check::<f64>(m, w, variant);
        }
    }
    for (c, f) in variants::<c64>().into_iter().zip(variants::<f32>()) {
        factor_and_check::<c64>(29, 6, c);
        factor_and_check::<f32>(24, 5, f);
    }
}

#[test]
fn the_models_are_seed_003s_formulas_plus_the_final_interchanges_it_leaves_out() {
    for (m, w) in [
        (40u64, 8u64),
        (100, 10),
        (10_000, 50),
        (9_600, 800),
        (64, 64),
    ] {
        let k = m / w;
        let t11_reads =
            m * m + w * (m * k * (k - 1) / 2 - w * (k.saturating_sub(2)) * (k - 1) * k / 6);
        let t11_writes = m * m + w * (m * k * (k - 1) / 2 - w * (k - 1) * k * (2 * k - 1) / 6);
        let last = (k - 1) * w * (m - (k - 1) * w);
        assert_eq!(
            left_pivoted_io(m, w),
            (t11_reads + last, t11_writes),
            "m = {m}, w = {w}"
        );
    }
    for (m, w) in [(40u64, 8u64), (10_000, 50)] {
        let k = m / w;
        assert_eq!(
            left_unpivoted_io(m, w),
            (m * m * (k + 1) / 2 + m * m, 2 * m * m)
        );
    }
    for (m, w) in [(40u64, 8u64), (10_000, 50)] {
        let k = m / w;
        let steps = w * w * k * (k + 1) * (2 * k + 1) / 6;
        let last: u64 = (1..k).map(|i| (m - i * w) * w).sum();
        assert_eq!(right_io(m, w), (steps + last, steps + last));
    }
    assert_eq!(
        right_io(10_000, 50).0 - (1..200u64).map(|i| (10_000 - i * 50) * 50).sum::<u64>(),
        6_716_750_000
    );
    // Seed 003's worked numbers (digest T11): M = 10,000 and w = 50.
    let (reads, writes) = left_pivoted_io(10_000, 50);
    assert_eq!(writes, 3_433_250_000);
    assert_eq!(reads, 6_766_500_000 + 199 * 50 * 50);
    let (reads, writes) = left_unpivoted_io(10_000, 50);
    assert_eq!((reads, writes), (10_050_000_000 + 100_000_000, 200_000_000));
}

#[test]
fn a_zero_pivot_is_reported_and_the_factorisation_goes_on() {
    let d = dir("singular");
    let m = 12;
    let mut a = DiskMatrix::<f64>::create_from_fn(d.join("a.rbm"), m, m, 4, |i, j| {
        if j == 6 {
            0.0
        } else {
            value::<f64>(i, j)
        }
    })
    .unwrap();
    let info = lu_left_pivoted(&mut a, Par::Seq).unwrap();
    assert_eq!(info.first_zero_pivot, Some(6));
    let mut b = DiskMatrix::<f64>::create_from_fn(d.join("b.rbm"), m, m, 5, |i, j| {
        if j == 6 {
            0.0
        } else {
            value::<f64>(i, j)
        }
    })
    .unwrap();
    assert_eq!(
        lu_left_unpivoted(&mut b, Par::Seq)
            .unwrap()
            .first_zero_pivot,
        Some(6)
    );
    assert_eq!(info.ipiv.len(), m);
    let e = lu_left_pivoted(
        &mut DiskMatrix::<f64>::create(d.join("r.rbm"), 4, 5, 2).unwrap(),
        Par::Seq,
    );
    assert!(e.unwrap_err().to_string().contains("not square"));
}

#[test]
fn the_solve_streams_the_factors_once_each_way_and_solves() {
    for variant in variants::<f64>() {
        for (m, w) in [(1, 2), (23, 4), (30, 30), (31, 7)] {
            let d = dir(&format!("solve-{}-{m}-{w}", variant.2));
            let mut a =
                DiskMatrix::<f64>::create_from_fn(d.join("a.rbm"), m, m, w, value::<f64>).unwrap();
            let info = (variant.0)(&mut a, Par::Seq).unwrap();
            let nrhs = 3;
            let rhs = |i: usize, j: usize| random::uniform(i, j, 99);
            let mut x: Vec<f64> = (0..nrhs)
                .flat_map(|j| (0..m).map(move |i| rhs(i, j)))
                .collect();
            a.reset_io();
            solve_from_file(&mut a, &info.ipiv, &mut x, nrhs, Par::Seq).unwrap();
            assert_eq!(a.io().read_elems, solve_io(m as u64, w as u64));
            assert_eq!(a.io().write_elems, 0);
            for j in 0..nrhs {
                for i in 0..m {
                    let ax: f64 = (0..m).map(|l| value::<f64>(i, l) * x[l + j * m]).sum();
                    assert!((ax - rhs(i, j)).abs() < 1e-9, "{m} {w}: ({i}, {j})");
                }
            }
        }
    }
}

#[test]
fn the_phases_flops_are_seed_003s() {
    for (m, w) in [(40usize, 8usize), (10_000, 50), (9_600, 800)] {
        let f = lu_flops(m, w);
        let (m, w) = (m as f64, w as f64);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * b.abs();
        assert!(
            close(f.trsm, m * m * w / 2.0 - m * w * w / 2.0),
            "trsm {m} {w}"
        );
        assert!(
            close(f.gemm, 2.0 * m * m * m / 3.0 - m * m * w + m * w * w / 3.0),
            "gemm {m} {w}"
        );
        assert!(
            close(f.getrf, m * m * w / 2.0 + m * w * w / 6.0),
            "getrf {m} {w}"
        );
        assert!(
            close(f.trsm + f.gemm + f.getrf, 2.0 * m * m * m / 3.0),
            "total {m} {w}"
        );
    }
    // The digest's worked numbers (M = 10,000, w = 50): 2.4875e9, 6.61675e11, 2.504e9.
    let f = lu_flops(10_000, 50);
    assert_eq!(
        (f.trsm, f.gemm.round(), f.getrf.round()),
        (2.4875e9, 6.61675e11, 2_504_166_667.0)
    );
}
