//! LU of rectangular matrices on threads-as-ranks: `P·A = L·U` with `L` `M × min(M, N)` and
//! `U` `min(M, N) × N`, tall and wide, on many grids and all four scalars; the 2D baseline's
//! pivots and `ipiv` against the kernel's `getrf`; every rank's words and messages against the
//! exact model; the errors a rectangular matrix can give.

use redblue_comm::{run_ranks, Communicator};
use redblue_core::{c32, c64, RealScalar, Scalar};
use redblue_dist::{same_owners, BlockCyclic, BlockCyclicSubmatrix, GridOrder, OwnedDistMatrix};
use redblue_kernels::{getrf, KernelScalar, MatMut, Par};
use redblue_lu::{lu, lu_in_place, lu_with, LuAlgorithm, LuParams, LuPlan, TileGrid};

/// Element `(i, j)` of the random matrix `seed`: uniform in `[−1, 1)`, both parts.
fn entry<T: Scalar>(i: usize, j: usize, seed: usize) -> T {
    redblue_core::random::uniform(i, j, seed as u64)
}

/// What rank 0 gathers of a factorisation: `A`, `L` and `U` (each `m × n`, column-major), the
/// permutation, `ipiv`.
struct Gathered<T> {
    a: Vec<T>,
    l: Vec<T>,
    u: Vec<T>,
    perm: Vec<usize>,
    ipiv: Vec<usize>,
}

/// Factors `f` (`m × n`, block-cyclic `3 × 2` blocks over a `1 × p` grid) on `p` ranks.
fn factor<T: KernelScalar>(
    (m, n): (usize, usize),
    p: usize,
    params: &LuParams,
    f: impl Fn(usize, usize) -> T + Sync,
) -> Gathered<T> {
    let out = run_ranks(p, |comm| {
        let layout = BlockCyclic::new(m, n, 3, 2, 1, p).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, layout, &f).unwrap();
        let fac = lu(&comm, &a, params).unwrap();
        assert_eq!(fac.shape(), (m, n));
        let (l, u) = (fac.lower(&comm).unwrap(), fac.upper(&comm).unwrap());
        (
            a.gather(&comm, 0).unwrap(),
            l.gather(&comm, 0).unwrap(),
            u.gather(&comm, 0).unwrap(),
            fac.perm().to_vec(),
            fac.ipiv(),
        )
    });
    let (Some(a), Some(l), Some(u), perm, ipiv) = out.into_iter().next().unwrap() else {
        unreachable!("rank 0 gathers")
    };
    Gathered {
        a,
        l,
        u,
        perm,
        ipiv,
    }
}

/// `‖P·A − L·U‖_max / (‖A‖_max · min(M, N) · ε)`, after checking the shapes of `L` (unit lower
/// trapezoidal, zero right of column `min(M, N)`) and `U` (upper trapezoidal, zero below row
/// `min(M, N)`) and that `ipiv` interchanges the rows into `perm`.
fn residual<T: Scalar>(g: &Gathered<T>, (m, n): (usize, usize)) -> f64 {
    let k = m.min(n);
    let mut sorted = g.perm.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        (0..m).collect::<Vec<_>>(),
        "a permutation of the rows"
    );
    assert_eq!(g.ipiv.len(), k);
    let mut rows: Vec<usize> = (0..m).collect();
    for (i, &j) in g.ipiv.iter().enumerate() {
        assert!(j >= i && j < m);
        rows.swap(i, j);
    }
    assert_eq!(rows, g.perm, "ipiv's interchanges give perm");
    let (mut worst, mut amax) = (0.0f64, 0.0f64);
    for x in &g.a {
        amax = amax.max(x.abs().to_f64());
    }
    for i in 0..m {
        for j in 0..n {
            let (l, u) = (g.l[i + j * m], g.u[i + j * m]);
            if j > i || j >= k {
                assert_eq!(l, T::zero(), "L({i}, {j})");
            }
            if j == i {
                assert_eq!(l, T::one(), "L({i}, {i})");
            }
            if i > j || i >= k {
                assert_eq!(u, T::zero(), "U({i}, {j})");
            }
            let mut s = T::zero();
            for q in 0..k {
                s += g.l[i + q * m] * g.u[q + j * m];
            }
            worst = worst.max((s - g.a[g.perm[i] + j * m]).abs().to_f64());
        }
    }
    worst / (amax.max(f64::MIN_POSITIVE) * k.max(1) as f64 * T::epsilon().to_f64())
}

fn params(algorithm: LuAlgorithm, grid: Option<TileGrid>, block: usize) -> LuParams {
    let params = LuParams::default()
        .with_algorithm(algorithm)
        .with_block(block);
    match grid {
        Some(g) => params.with_grid(g),
        None => params,
    }
}

#[test]
fn tall_and_wide_matrices_factor_on_many_grids() {
    let grid = |px, py, c| Some(TileGrid { px, py, c });
    for (shape, p, grid, v) in [
        ((37, 11), 1, None, 4),
        ((11, 37), 1, None, 4),
        ((50, 13), 2, None, 4),
        ((13, 50), 3, None, 4),
        ((64, 9), 4, grid(4, 1, 1), 4),
        ((64, 9), 4, grid(2, 1, 2), 4),
        ((9, 64), 4, grid(1, 2, 2), 4),
        ((45, 20), 8, grid(2, 2, 2), 4),
        ((20, 45), 8, grid(2, 2, 2), 4),
        ((41, 23), 12, grid(3, 2, 2), 4),
        ((23, 41), 16, grid(2, 4, 2), 4),
        ((100, 7), 6, None, 3),
        ((7, 1), 2, None, 4),
        ((1, 7), 2, None, 4),
        ((0, 5), 2, None, 4),
        ((5, 0), 2, None, 4),
    ] {
        for algorithm in [LuAlgorithm::Conflux, LuAlgorithm::TwoD] {
            let grid = grid.filter(|g| algorithm == LuAlgorithm::Conflux || g.c == 1);
            let pr = params(algorithm, grid, v);
            let g = factor::<f64>(shape, p, &pr, |i, j| entry(i, j, 3));
            let res = residual(&g, shape);
            assert!(res < 10.0, "{shape:?} p={p} {algorithm}: residual {res}");
        }
    }
}

#[test]
fn every_scalar_type_tall_and_wide() {
    let pr = params(
        LuAlgorithm::Conflux,
        Some(TileGrid { px: 2, py: 1, c: 2 }),
        4,
    );
    for shape in [(29, 10), (10, 29)] {
        let r = [
            residual(&factor::<f32>(shape, 4, &pr, |i, j| entry(i, j, 1)), shape),
            residual(&factor::<c32>(shape, 4, &pr, |i, j| entry(i, j, 2)), shape),
            residual(&factor::<c64>(shape, 4, &pr, |i, j| entry(i, j, 3)), shape),
        ];
        assert!(r.iter().all(|&r| r < 10.0), "{shape:?}: {r:?}");
    }
}

#[test]
fn the_two_d_baseline_pivots_like_the_kernels_getrf_on_tall_and_wide_matrices() {
    for (m, n) in [(33, 8), (8, 33), (40, 17)] {
        let f = |i: usize, j: usize| entry::<f64>(i, j, 9);
        let g = factor::<f64>((m, n), 4, &params(LuAlgorithm::TwoD, None, 4), f);
        let mut a: Vec<f64> = (0..m * n).map(|k| f(k % m, k / m)).collect();
        let info = getrf(MatMut::from_slice(&mut a, m, n, m).unwrap(), Par::Seq).unwrap();
        assert_eq!(g.perm, info.pivots.perm(), "{m}x{n}");
        assert_eq!(g.ipiv, info.pivots.ipiv(), "{m}x{n}");
    }
}

#[test]
fn measured_words_equal_the_model_on_tall_and_wide_matrices() {
    for ((m, n), p, algorithm) in [
        ((96, 24), 4, LuAlgorithm::Conflux),
        ((96, 24), 4, LuAlgorithm::TwoD),
        ((24, 96), 4, LuAlgorithm::Conflux),
        ((70, 33), 8, LuAlgorithm::Conflux),
        ((33, 70), 6, LuAlgorithm::TwoD),
        ((130, 20), 5, LuAlgorithm::Conflux),
        ((50, 31), 12, LuAlgorithm::Conflux),
    ] {
        let pr = LuParams::default().with_algorithm(algorithm).with_block(4);
        let plan = LuPlan::rect(m, n, p, &pr).unwrap();
        let out = run_ranks(p, |comm| {
            let layout = plan.native_layout().unwrap();
            let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| entry::<f64>(i, j, 11)).unwrap();
            comm.barrier().unwrap();
            comm.reset_stats();
            let fac = lu_in_place(&comm, a, &pr).unwrap();
            (comm.stats(), fac.step_pivots().to_vec())
        });
        let model = plan.rank_costs_with(p, &out[0].1, 8);
        for (r, (s, _)) in out.iter().enumerate() {
            assert_eq!(
                (
                    s.words_sent,
                    s.words_received,
                    s.messages_sent,
                    s.messages_received
                ),
                (
                    model[r].words_sent,
                    model[r].words_received,
                    model[r].messages_sent,
                    model[r].messages_received
                ),
                "rank {r} of {p}, {m}x{n}, grid {}, {algorithm}",
                plan.grid
            );
        }
    }
}

#[test]
fn a_tall_panel_is_planned_over_the_grid_rows() {
    // A tall panel's rows spread over every rank; its few columns over few grid columns.
    let plan = LuPlan::rect(8192, 128, 8, &LuParams::default()).unwrap();
    assert!(plan.grid.px > plan.grid.py, "{}", plan.grid);
    let square = LuPlan::new(2048, 8, &LuParams::default()).unwrap();
    assert_eq!((square.m, square.n), (2048, 2048));
    // Fewer words for the tall plan than for its transposed grid.
    let flipped = LuParams::default().with_grid(TileGrid {
        px: plan.grid.py,
        py: plan.grid.px,
        c: plan.grid.c,
    });
    let flipped = LuPlan::rect(8192, 128, 8, &flipped).unwrap();
    assert!(plan.average_words() < flipped.average_words());
}

#[test]
fn rectangular_errors_are_the_same_on_every_rank() {
    let errs = run_ranks(4, |comm| {
        // Tall, column 2 zero: singular there.
        let layout = BlockCyclic::new(30, 7, 2, 2, 2, 2).unwrap();
        let s = OwnedDistMatrix::from_fn(&comm, layout.clone(), |i, j| {
            if j == 2 {
                0.0
            } else {
                entry::<f64>(i, j, 4)
            }
        })
        .unwrap();
        let e1 = lu(&comm, &s, &params(LuAlgorithm::Conflux, None, 2)).err();
        let e2 = lu(&comm, &s, &params(LuAlgorithm::TwoD, None, 2)).err();
        // Wide, rank 1: singular at column 1.
        let wide = BlockCyclic::new(5, 12, 2, 2, 2, 2).unwrap();
        let ones = OwnedDistMatrix::from_fn(&comm, wide, |_, _| 1.0f64).unwrap();
        let e3 = lu(&comm, &ones, &LuParams::default()).err();
        // A rectangular matrix's factors do not solve; a plan of another shape refuses.
        let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| entry::<f64>(i, j, 5)).unwrap();
        let fac = lu(&comm, &a, &LuParams::default()).unwrap();
        let b =
            OwnedDistMatrix::<f64, _>::zeros(&comm, BlockCyclic::new(30, 1, 2, 2, 2, 2).unwrap())
                .unwrap();
        let e4 = fac.solve(&comm, &b).err();
        let e5 = fac.rhs_layout(1).err();
        let plan = LuPlan::rect(7, 30, 4, &LuParams::default()).unwrap();
        let e6 = redblue_lu::lu_with(&comm, &plan, &a, Par::Seq).err();
        [e1, e2, e3, e4, e5, e6].map(|e| e.map(|e| e.to_string()))
    });
    for e in &errs {
        assert_eq!(e, &errs[0]);
    }
    let [e1, e2, e3, e4, e5, e6] = &errs[0];
    assert!(e1.as_ref().unwrap().contains("column 2"), "{e1:?}");
    assert!(e2.as_ref().unwrap().contains("column 2"), "{e2:?}");
    assert!(e3.as_ref().unwrap().contains("column 1"), "{e3:?}");
    assert!(e4.as_ref().unwrap().contains("30 × 7"), "{e4:?}");
    assert!(e5.as_ref().unwrap().contains("square"), "{e5:?}");
    assert!(e6.as_ref().unwrap().contains("7x30"), "{e6:?}");
}

/// `write_factors` leaves in any layout what `packed()` with its rows in `perm`'s order holds:
/// on grids of one process row (whose ranks put their rows in order locally), on layers, and
/// on grids of several process rows; square, tall and wide; into block-cyclic layouts unlike
/// the tiles, and into the tiles' own distribution with padded local arrays (on one process
/// row written straight from the tiles, every element staying on its rank).
#[test]
fn written_factors_are_the_packed_ones_in_lapacks_row_order() {
    let grids = [(1, 2, 1), (1, 3, 1), (1, 2, 2), (2, 1, 1), (2, 2, 1)];
    for (px, py, c) in grids {
        let p = px * py * c;
        for (m, n) in [(23, 23), (31, 12), (9, 26)] {
            let grid = TileGrid { px, py, c };
            let pr = params(LuAlgorithm::Conflux, Some(grid), 4);
            let unlike = BlockCyclic::new(m, n, 3, 5, p.min(2), p / p.min(2)).unwrap();
            let tiles = BlockCyclic::new(m, n, 4, 4, px, py)
                .unwrap()
                .with_order(GridOrder::ColMajor);
            let llds = (0..px * py).map(|r| tiles.lld(r) + 3).collect();
            let padded = BlockCyclicSubmatrix::whole(tiles.clone(), llds).unwrap();
            assert!(same_owners(&padded, &tiles) && !same_owners(&unlike, &tiles));
            let same = run_ranks(p, |comm| {
                let a =
                    OwnedDistMatrix::from_fn(&comm, unlike.clone(), |i, j| entry::<c64>(i, j, 7))
                        .unwrap();
                let fac = lu(&comm, &a, &pr).unwrap();
                // First into the tiles' own distribution: on one process row, from the rows
                // where the steps left them (not yet put in order).
                let mut own = OwnedDistMatrix::zeros(&comm, padded.clone()).unwrap();
                fac.write_factors(&comm, &mut own).unwrap();
                let mut out = OwnedDistMatrix::zeros(&comm, unlike.clone()).unwrap();
                fac.write_factors(&comm, &mut out).unwrap();
                let packed = fac.packed(&comm).unwrap();
                let expected = packed.permute_rows(&comm, fac.perm()).unwrap();
                (
                    out.gather(&comm, 0).unwrap(),
                    own.gather(&comm, 0).unwrap(),
                    expected.gather(&comm, 0).unwrap(),
                )
            });
            let (Some(out), Some(own), Some(expected)) = &same[0] else {
                unreachable!("rank 0 gathers")
            };
            assert_eq!(out, expected, "{px}x{py}x{c}, {m}x{n}");
            assert_eq!(
                own, expected,
                "{px}x{py}x{c}, {m}x{n}, the tiles' distribution"
            );
        }
    }
}

/// A plan on the layout the matrix is in ([`LuPlan::for_layout`], ScaLAPACK's `1 × Q`, `P × 1`
/// and column-major `2 × 2` grids; square, tall and wide): the matrix moves only within each
/// rank, so every rank's counters are the factorisation's exact model, and `P·A = L·U`.
/// Layouts that cannot be a plan's own, and options that fix the grid, keep `rect`'s plan.
#[test]
fn planned_on_the_callers_grid_the_matrix_moves_only_within_ranks() {
    let nb = 8;
    let default = LuParams::default();
    for ((m, n), (pr, pc)) in [
        ((60, 60), (1, 2)),
        ((70, 33), (3, 1)),
        ((33, 70), (1, 3)),
        ((64, 64), (2, 2)),
    ] {
        let p = pr * pc;
        let bc = BlockCyclic::new(m, n, nb, nb, pr, pc)
            .unwrap()
            .with_order(GridOrder::ColMajor);
        let layout = BlockCyclicSubmatrix::from(bc);
        let plan = LuPlan::for_layout(m, n, p, &default, &layout).unwrap();
        let grid = TileGrid {
            px: pr,
            py: pc,
            c: 1,
        };
        assert_eq!((plan.grid, plan.block), (grid, nb), "{m}x{n} on {pr}x{pc}");
        let out = run_ranks(p, |comm| {
            let a = OwnedDistMatrix::from_fn(&comm, layout.clone(), |i, j| entry::<c64>(i, j, 3))
                .unwrap();
            comm.barrier().unwrap();
            comm.reset_stats();
            let fac = lu_with(&comm, &plan, &a, Par::Seq).unwrap();
            let stats = comm.stats();
            let mut out = OwnedDistMatrix::zeros(&comm, layout.clone()).unwrap();
            fac.write_factors(&comm, &mut out).unwrap();
            let expected = fac
                .packed(&comm)
                .unwrap()
                .permute_rows(&comm, fac.perm())
                .unwrap();
            let same = out.gather(&comm, 0).unwrap() == expected.gather(&comm, 0).unwrap();
            let (l, u) = (fac.lower(&comm).unwrap(), fac.upper(&comm).unwrap());
            let g = [&a, &l, &u].map(|x| x.gather(&comm, 0).unwrap().unwrap_or_default());
            (
                stats,
                fac.step_pivots().to_vec(),
                same,
                g,
                fac.perm().to_vec(),
                fac.ipiv(),
            )
        });
        let model = plan.rank_costs_with(p, &out[0].1, 16);
        for (r, (s, _, same, ..)) in out.iter().enumerate() {
            let got = (s.words_sent, s.words_received, s.messages_sent);
            let want = (
                model[r].words_sent,
                model[r].words_received,
                model[r].messages_sent,
            );
            assert_eq!(got, want, "rank {r}, {m}x{n} on {pr}x{pc}");
            assert!(
                same,
                "rank {r}: the factors written back, {m}x{n} on {pr}x{pc}"
            );
        }
        let (_, _, _, [a, l, u], perm, ipiv) = out.into_iter().next().unwrap();
        let g = Gathered {
            a,
            l,
            u,
            perm,
            ipiv,
        };
        let res = residual(&g, (m, n));
        assert!(res < 10.0, "{m}x{n} on {pr}x{pc}: residual {res}");
    }
    let kept = |layout: BlockCyclicSubmatrix, p: usize, params: &LuParams| {
        let (m, n) = (60, 60);
        let plan = LuPlan::for_layout(m, n, p, params, &layout).unwrap();
        assert_eq!(plan, LuPlan::rect(m, n, p, params).unwrap(), "{layout:?}");
    };
    let bc = |mb, nb, pr, pc| BlockCyclic::new(60, 60, mb, nb, pr, pc).unwrap();
    // Blocks not square; the first block on another grid column; a submatrix off the origin;
    // a row-major 2 × 2 grid; a grid fixed by the options.
    kept(BlockCyclicSubmatrix::from(bc(8, 4, 1, 2)), 2, &default);
    kept(
        BlockCyclicSubmatrix::from(bc(8, 8, 1, 2).with_source(0, 1).unwrap()),
        2,
        &default,
    );
    let big = BlockCyclic::new(68, 68, 8, 8, 1, 2).unwrap();
    let llds = (0..2).map(|r| big.lld(r)).collect();
    kept(
        BlockCyclicSubmatrix::new(big, 8..68, 8..68, llds).unwrap(),
        2,
        &default,
    );
    kept(BlockCyclicSubmatrix::from(bc(8, 8, 2, 2)), 4, &default);
    let fixed = default.clone().with_grid(TileGrid { px: 2, py: 1, c: 1 });
    kept(BlockCyclicSubmatrix::from(bc(8, 8, 1, 2)), 2, &fixed);
}
