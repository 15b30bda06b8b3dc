//! Seed 001's 2.5D LU on threads-as-ranks, without pivoting and with CA-pivoting: factors
//! against `P·A = L·U` on 1–16 ranks and all four scalars, every rank's words and messages
//! against the exact model, the zero pivot refused at its column, the square layers of the
//! plans, and the paper's cost formula against the exact model.

use redblue_comm::{run_ranks, Communicator};
use redblue_core::{c32, c64, RealScalar, Scalar};
use redblue_dist::{BlockCyclic, OwnedDistMatrix};
use redblue_kernels::KernelScalar;
use redblue_lu::{
    lu, lu_average_words, lu_in_place, lu_plan, two_five_d_words, LuAlgorithm, LuParams, LuPlan,
    TileGrid,
};

/// Element `(i, j)` of the random matrix `seed`: uniform in `[−1, 1)`, both parts.
fn entry<T: Scalar>(i: usize, j: usize, seed: usize) -> T {
    redblue_core::random::uniform(i, j, seed as u64)
}

/// A random matrix with `n` added to its diagonal: it needs no pivoting.
fn dominant<T: Scalar>(n: usize) -> impl Fn(usize, usize) -> T + Sync {
    move |i, j| {
        let a: T = entry(i, j, 7);
        if i == j {
            a + T::from_f64_parts(n as f64, 0.0)
        } else {
            a
        }
    }
}

/// `‖P·A − L·U‖_max / (‖A‖_max·N·ε)` of `f`'s LU with `params` on `p` ranks, and the
/// permutation.
fn residual<T: KernelScalar>(
    n: usize,
    p: usize,
    params: &LuParams,
    f: impl Fn(usize, usize) -> T + Sync,
) -> (f64, Vec<usize>) {
    let out = run_ranks(p, |comm| {
        let layout = BlockCyclic::new(n, n, 3, 2, 1, p).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, layout, &f).unwrap();
        let fac = lu(&comm, &a, params).unwrap();
        let (l, u) = (fac.lower(&comm).unwrap(), fac.upper(&comm).unwrap());
        (
            a.gather(&comm, 0).unwrap(),
            l.gather(&comm, 0).unwrap(),
            u.gather(&comm, 0).unwrap(),
            fac.perm().to_vec(),
        )
    });
    let (Some(a), Some(l), Some(u), perm) = out.into_iter().next().unwrap() else {
        unreachable!("rank 0 gathers")
    };
    let (mut worst, mut amax) = (0.0f64, 0.0f64);
    for x in &a {
        amax = amax.max(x.abs().to_f64());
    }
    for i in 0..n {
        for j in 0..n {
            let mut s = T::zero();
            for k in 0..n {
                s += l[i + k * n] * u[k + j * n];
            }
            worst = worst.max((s - a[perm[i] + j * n]).abs().to_f64());
        }
    }
    let r = worst / (amax.max(f64::MIN_POSITIVE) * n.max(1) as f64 * T::epsilon().to_f64());
    (r, perm)
}

fn params(algorithm: LuAlgorithm, block: usize) -> LuParams {
    LuParams::default()
        .with_algorithm(algorithm)
        .with_block(block)
}

#[test]
fn without_pivoting_diagonally_dominant_matrices_factor_on_1_to_16_ranks() {
    for (n, p) in [
        (17, 1),
        (23, 2),
        (31, 3),
        (40, 4),
        (37, 8),
        (45, 9),
        (50, 12),
        (64, 16),
    ] {
        let (r, perm) = residual::<f64>(n, p, &params(LuAlgorithm::NoPivot25d, 4), dominant(n));
        assert!(r < 10.0, "n={n} p={p}: residual {r}");
        assert_eq!(perm, (0..n).collect::<Vec<_>>(), "no interchanges");
    }
    let pr = params(LuAlgorithm::NoPivot25d, 4);
    let r = [
        residual::<f32>(29, 8, &pr, dominant(29)).0,
        residual::<c32>(29, 8, &pr, dominant(29)).0,
        residual::<c64>(29, 8, &pr, dominant(29)).0,
    ];
    assert!(r.iter().all(|&r| r < 10.0), "{r:?}");
}

#[test]
fn with_ca_pivoting_random_matrices_factor_on_1_to_16_ranks() {
    for (n, p) in [(17, 1), (23, 2), (40, 4), (37, 8), (50, 12), (64, 16)] {
        let (r, _) = residual::<f64>(n, p, &params(LuAlgorithm::CaPivot25d, 4), |i, j| {
            entry(i, j, 3)
        });
        assert!(r < 10.0, "n={n} p={p}: residual {r}");
    }
    let pr = params(LuAlgorithm::CaPivot25d, 4);
    let r = [
        residual::<f32>(29, 8, &pr, |i, j| entry(i, j, 1)).0,
        residual::<c32>(29, 8, &pr, |i, j| entry(i, j, 2)).0,
        residual::<c64>(29, 8, &pr, |i, j| entry(i, j, 3)).0,
    ];
    assert!(r.iter().all(|&r| r < 10.0), "{r:?}");
}

#[test]
fn measured_words_equal_the_model_on_every_rank() {
    for (n, p, algorithm) in [
        (64, 4, LuAlgorithm::NoPivot25d),
        (70, 8, LuAlgorithm::NoPivot25d),
        (90, 16, LuAlgorithm::NoPivot25d),
        (70, 8, LuAlgorithm::CaPivot25d),
        (90, 16, LuAlgorithm::CaPivot25d),
        (50, 11, LuAlgorithm::NoPivot25d),
    ] {
        let pr = params(algorithm, 4);
        let plan = LuPlan::new(n, p, &pr).unwrap();
        let out = run_ranks(p, |comm| {
            let a = OwnedDistMatrix::from_fn(&comm, plan.native_layout().unwrap(), dominant(n))
                .unwrap();
            comm.barrier().unwrap();
            comm.reset_stats();
            let fac = lu_in_place::<f64, _, _>(&comm, a, &pr).unwrap();
            (comm.stats(), fac.step_pivots().to_vec())
        });
        let model = plan.rank_costs_with(p, &out[0].1, 8);
        for (r, (s, _)) in out.iter().enumerate() {
            let m = &model[r];
            assert_eq!(
                (
                    s.words_sent,
                    s.words_received,
                    s.messages_sent,
                    s.messages_received
                ),
                (
                    m.words_sent,
                    m.words_received,
                    m.messages_sent,
                    m.messages_received
                ),
                "rank {r} of {p}, n = {n}, grid {}, {algorithm}",
                plan.grid
            );
        }
    }
}

#[test]
fn a_zero_pivot_is_refused_at_its_column_on_every_rank() {
    // The identity with rows 5 and 6 interchanged: invertible, but its sixth pivot is zero
    // unless rows are interchanged.
    let n = 20;
    let swapped = |i: usize, j: usize| {
        let i = match i {
            5 => 6,
            6 => 5,
            i => i,
        };
        f64::from(u8::from(i == j))
    };
    let out = run_ranks(4, |comm| {
        let layout = BlockCyclic::new(n, n, 2, 2, 2, 2).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, layout, swapped).unwrap();
        let nopiv = lu(&comm, &a, &params(LuAlgorithm::NoPivot25d, 4)).err();
        let ca = lu(&comm, &a, &params(LuAlgorithm::CaPivot25d, 4)).map(|f| f.perm().to_vec());
        (nopiv.map(|e| e.to_string()), ca.ok())
    });
    for (nopiv, ca) in &out {
        assert_eq!(nopiv, &out[0].0);
        assert!(nopiv.as_ref().unwrap().contains("column 5"), "{nopiv:?}");
        assert!(ca.as_ref().is_some_and(|perm| perm[5] == 6), "{ca:?}");
    }
}

#[test]
fn the_plans_have_square_layers() {
    for p in [1, 2, 4, 8, 9, 16, 27, 64, 100, 512, 1000] {
        for algorithm in [LuAlgorithm::NoPivot25d, LuAlgorithm::CaPivot25d] {
            let (grid, v) =
                lu_plan(4096, p, &LuParams::default().with_algorithm(algorithm)).unwrap();
            assert_eq!(grid.px, grid.py, "{p}: {grid}");
            assert!(
                grid.ranks() <= p && grid.c * grid.c * grid.c <= p,
                "{p}: {grid}"
            );
            assert_eq!(v % grid.c, 0, "{p}: {grid} v={v}");
        }
    }
    // A given number of layers is kept; a grid whose layers are not square is refused.
    let eight = LuParams::default()
        .with_algorithm(LuAlgorithm::NoPivot25d)
        .with_layers(8);
    assert_eq!(
        lu_plan(16384, 512, &eight).unwrap().0,
        TileGrid { px: 8, py: 8, c: 8 }
    );
    let oblong = LuParams::default()
        .with_algorithm(LuAlgorithm::CaPivot25d)
        .with_grid(TileGrid { px: 2, py: 4, c: 1 });
    let e = lu_plan(64, 8, &oblong).unwrap_err().to_string();
    assert!(e.contains("square layers"), "{e}");
}

#[test]
fn the_papers_formula_bounds_the_exact_model_within_a_constant() {
    // Seed 001: W = O(N²/√(cP)) for c up to P^(1/3). The exact average words per rank of the
    // plans with c = 1 and c = P^(1/3) stay within a small constant of N²/√(cP), and more
    // layers move fewer words once the matrix is large.
    let n = 16384;
    for (p, c) in [(64, 1), (64, 4), (512, 1), (512, 8)] {
        let pr = LuParams::default()
            .with_algorithm(LuAlgorithm::NoPivot25d)
            .with_layers(c);
        let exact = lu_average_words(n, p, &pr).unwrap();
        let formula = two_five_d_words(n as f64, p as f64, c as f64);
        let ratio = exact / formula;
        assert!((0.5..=3.0).contains(&ratio), "P={p} c={c}: {ratio}");
    }
    let words = |c| {
        let pr = LuParams::default()
            .with_algorithm(LuAlgorithm::NoPivot25d)
            .with_layers(c);
        lu_average_words(n, 512, &pr).unwrap()
    };
    assert!(words(8) < words(1), "{} {}", words(8), words(1));
}
