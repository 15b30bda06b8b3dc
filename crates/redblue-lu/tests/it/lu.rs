//! LU on threads-as-ranks: factors against the definition `P·A = L·U`, pivots against
//! partial pivoting, errors, and every rank's words and messages against the exact model.

use redblue_comm::{run_ranks, Communicator};
use redblue_core::{c32, c64, Op, RealScalar, Scalar};
use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix, DistMatrix, GridLayout, OwnedDistMatrix};
use redblue_kernels::{KernelScalar, Par};
use redblue_lu::{
    diagonal_pivots, lu, lu_in_place, lu_plan, lu_rank_costs, lu_with, LookAhead, LuAlgorithm,
    LuError, LuFactors, LuParams, LuPlan, TileGrid,
};

/// Words and messages sent and received: what the exact models must match.
fn counters(s: &redblue_comm::CommStats) -> (u64, u64, u64, u64) {
    (
        s.words_sent,
        s.words_received,
        s.messages_sent,
        s.messages_received,
    )
}

/// Element `(i, j)` of the random matrix `seed`: uniform in `[−1, 1)`, both parts.
fn entry<T: Scalar>(i: usize, j: usize, seed: usize) -> T {
    redblue_core::random::uniform(i, j, seed as u64)
}

/// `‖P·A − L·U‖_max / (‖A‖_max · N · ε)` from the packed factors gathered on one rank.
fn residual<T: Scalar>(a: &[T], packed: &[T], perm: &[usize], n: usize) -> f64 {
    let mut worst = 0.0f64;
    let mut amax = 0.0f64;
    for x in a {
        amax = amax.max(x.abs().to_f64());
    }
    for i in 0..n {
        for j in 0..n {
            // (L·U)[i, j] = Σ_k L[i,k]·U[k,j], L[i,k] in packed row perm[i] (k < i), U[k,j] in
            // packed row perm[k] (k ≤ j).
            let mut s = T::zero();
            for k in 0..=i.min(j) {
                let l = if k == i {
                    T::one()
                } else {
                    packed[perm[i] + k * n]
                };
                s += l * packed[perm[k] + j * n];
            }
            let d = (s - a[perm[i] + j * n]).abs().to_f64();
            worst = worst.max(d);
        }
    }
    worst / (amax.max(f64::MIN_POSITIVE) * n.max(1) as f64 * T::epsilon().to_f64())
}

/// Factors `f(i, j)` of order `n` on `p` ranks in a block-cyclic layout and returns the
/// residual and the permutation (from rank 0).
fn check<T: KernelScalar>(
    n: usize,
    p: usize,
    params: &LuParams,
    f: impl Fn(usize, usize) -> T + Sync,
) -> (f64, Vec<usize>, f64) {
    let out = run_ranks(p, |comm| {
        let layout = BlockCyclic::new(n, n, 3, 2, 1, p).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, layout, &f).unwrap();
        let fac = lu(&comm, &a, params).unwrap();
        let packed = fac.packed(&comm).unwrap().gather(&comm, 0).unwrap();
        let whole = a.gather(&comm, 0).unwrap();
        (whole.zip(packed), fac.perm().to_vec(), fac.growth())
    });
    let (Some((a, packed)), perm, growth) = out.into_iter().next().unwrap() else {
        unreachable!("rank 0 gathers")
    };
    let mut sorted = perm.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..n).collect::<Vec<_>>(), "a permutation");
    (residual(&a, &packed, &perm, n), perm, growth)
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
fn factors_random_matrices_on_many_grids() {
    for (n, p, grid, v) in [
        (1, 1, None, 4),
        (2, 1, None, 4),
        (17, 1, None, 4),
        (23, 2, None, 4),
        (31, 4, Some(TileGrid { px: 2, py: 1, c: 2 }), 4),
        (37, 8, Some(TileGrid { px: 2, py: 2, c: 2 }), 4),
        (29, 3, None, 5),
        (41, 9, None, 3),
        (20, 5, None, 4),
        (0, 3, None, 4),
    ] {
        for algorithm in [LuAlgorithm::Conflux, LuAlgorithm::TwoD] {
            let grid = if algorithm == LuAlgorithm::TwoD {
                None
            } else {
                grid
            };
            let (res, _, growth) =
                check::<f64>(n, p, &params(algorithm, grid, v), |i, j| entry(i, j, 3));
            assert!(res < 10.0, "n={n} p={p} {algorithm}: residual {res}");
            assert!(n == 0 || growth > 0.0);
        }
    }
}

#[test]
fn every_scalar_type() {
    let pr = params(
        LuAlgorithm::Conflux,
        Some(TileGrid { px: 2, py: 1, c: 2 }),
        4,
    );
    assert!(check::<f32>(19, 4, &pr, |i, j| entry(i, j, 1)).0 < 10.0);
    assert!(check::<c32>(19, 4, &pr, |i, j| entry(i, j, 2)).0 < 10.0);
    assert!(check::<c64>(19, 4, &pr, |i, j| entry(i, j, 3)).0 < 10.0);
}

#[test]
fn partial_pivoting_picks_the_largest_entry_like_lapack() {
    // The 2D baseline's pivots are those of the kernel's getrf.
    let n = 21;
    let f = |i: usize, j: usize| entry::<f64>(i, j, 9);
    let (_, perm, _) = check::<f64>(n, 4, &params(LuAlgorithm::TwoD, None, 4), f);
    let mut a: Vec<f64> = (0..n * n).map(|k| f(k % n, k / n)).collect();
    let view = redblue_kernels::MatMut::from_slice(&mut a, n, n, n).unwrap();
    let info = redblue_kernels::getrf(view, redblue_kernels::Par::Seq).unwrap();
    assert_eq!(perm, info.pivots.perm());
}

#[test]
fn matrices_that_need_pivoting() {
    let n = 26;
    for algorithm in [LuAlgorithm::Conflux, LuAlgorithm::TwoD] {
        let pr = params(algorithm, None, 4);
        // A permuted identity: zero diagonal everywhere.
        let (res, perm, _) =
            check::<f64>(n, 4, &pr, |i, j| f64::from(u8::from((i * 7 + 3) % n == j)));
        assert!(res < 1.0, "{algorithm}");
        assert!((0..n).all(|i| (perm[i] * 7 + 3) % n == i));
        // Rows scaled by 1e±8 and a zero diagonal.
        let (res, _, _) = check::<f64>(n, 6, &pr, |i, j| {
            let s = if i % 2 == 0 { 1e8 } else { 1e-8 };
            if i == j {
                0.0
            } else {
                s * entry::<f64>(i, j, 5)
            }
        });
        assert!(res < 10.0, "{algorithm}: {res}");
    }
}

#[test]
fn bad_input_gives_the_same_error_on_every_rank() {
    let errs = run_ranks(4, |comm| {
        let a = OwnedDistMatrix::from_fn(&comm, GridLayout::even(6, 5, 2, 2).unwrap(), |_, _| 1.0)
            .unwrap();
        let e1 = lu(&comm, &a, &LuParams::default())
            .err()
            .map(|e| e.to_string());
        // Exactly singular: column 3 is zero.
        let layout = BlockCyclic::new(9, 9, 2, 2, 2, 2).unwrap();
        let s = OwnedDistMatrix::from_fn(&comm, layout.clone(), |i, j| {
            if j == 3 {
                0.0
            } else {
                entry::<f64>(i, j, 4)
            }
        })
        .unwrap();
        let e2 = lu(&comm, &s, &params(LuAlgorithm::Conflux, None, 2)).err();
        let e3 = lu(&comm, &s, &params(LuAlgorithm::TwoD, None, 2)).err();
        let nan = OwnedDistMatrix::from_fn(&comm, layout.clone(), |i, j| {
            if (i, j) == (7, 2) {
                f64::NAN
            } else {
                1.0
            }
        })
        .unwrap();
        let inf = OwnedDistMatrix::from_fn(&comm, layout, |i, j| {
            if (i, j) == (0, 8) {
                f64::NEG_INFINITY
            } else {
                1.0
            }
        })
        .unwrap();
        let e4 = lu(&comm, &nan, &LuParams::default()).err();
        let e5 = lu(&comm, &inf, &params(LuAlgorithm::TwoD, None, 2)).err();
        let e4 = e4.zip(e5);
        (
            e1,
            e2.map(|e| e.to_string()),
            e3.map(|e| e.to_string()),
            e4.map(|(a, b)| matches!(a, LuError::NotFinite) && matches!(b, LuError::NotFinite)),
        )
    });
    for e in &errs {
        assert_eq!(e, &errs[0]);
    }
    let (e1, e2, e3, e4) = &errs[0];
    // A 6 × 5 matrix factors (see tests/it/rect.rs): of ones, it is singular at column 1.
    assert!(e1.as_ref().unwrap().contains("column 1"), "{e1:?}");
    assert!(e2.as_ref().unwrap().contains("column 3"), "{e2:?}");
    assert!(e3.as_ref().unwrap().contains("column 3"), "{e3:?}");
    assert_eq!(*e4, Some(true));
}

/// Measured counters of every rank against the model replayed with the run's pivots, in the
/// native layout (no transform traffic).
fn measured_equals_model(n: usize, p: usize, pr: &LuParams) {
    let (grid, v) = lu_plan(n, p, pr).unwrap();
    let out = run_ranks(p, |comm| {
        let g = redblue_dist::BlockCyclic::new(n, n, v, v, grid.px, grid.py)
            .unwrap()
            .with_order(redblue_dist::GridOrder::ColMajor);
        let a = OwnedDistMatrix::from_fn(&comm, g, |i, j| entry::<f64>(i, j, 11)).unwrap();
        comm.barrier().unwrap();
        comm.reset_stats();
        let fac = lu(&comm, &a, pr).unwrap();
        let stats = comm.stats();
        (stats, fac.step_pivots().to_vec())
    });
    let pivots = &out[0].1;
    let model = lu_rank_costs(n, p, pr, pivots, 8).unwrap();
    for (r, (s, _)) in out.iter().enumerate() {
        let m = &model[r];
        assert_eq!(
            counters(s),
            counters(m),
            "rank {r} of {p}, n = {n}, grid {grid}, {}",
            pr.algorithm
        );
    }
}

#[test]
fn measured_words_equal_the_model_exactly() {
    for p in [1, 2, 3, 4, 8, 12, 16, 27, 64] {
        for algorithm in [LuAlgorithm::Conflux, LuAlgorithm::TwoD] {
            measured_equals_model(60, p, &params(algorithm, None, 4));
        }
    }
    // Given grids: v a multiple of c and not, idle ranks beyond the grid.
    for (n, p, (px, py, c), v) in [
        (50, 8, (2, 2, 2), 5),
        (50, 10, (2, 2, 2), 4),
        (40, 9, (2, 2, 2), 3),
        (47, 18, (3, 2, 3), 4),
        (47, 20, (3, 2, 3), 6),
        (44, 13, (2, 3, 2), 7),
    ] {
        let grid = Some(TileGrid { px, py, c });
        measured_equals_model(n, p, &params(LuAlgorithm::Conflux, grid, v));
    }
    // The 2D baseline on given one-layer grids: tile widths that do and do not divide N,
    // one-rank grid rows and columns, idle ranks.
    for (n, p, (px, py), v) in [
        (50, 6, (3, 2), 5),
        (47, 7, (2, 3), 4),
        (45, 5, (1, 4), 6),
        (44, 3, (3, 1), 7),
    ] {
        let grid = Some(TileGrid { px, py, c: 1 });
        measured_equals_model(n, p, &params(LuAlgorithm::TwoD, grid, v));
    }
}

#[test]
fn look_ahead_moves_the_same_words_and_gives_the_same_factors() {
    // Grids with and without layers, one-rank grid rows (the waiting update), idle ranks;
    // one layer, where the panel is solved on its owner and broadcast along the grid rows.
    for (n, p, grid, v, algorithm) in [
        (
            53,
            2,
            Some(TileGrid { px: 1, py: 2, c: 1 }),
            4,
            LuAlgorithm::TwoD,
        ),
        (
            61,
            6,
            Some(TileGrid { px: 2, py: 3, c: 1 }),
            4,
            LuAlgorithm::Conflux,
        ),
        (
            43,
            5,
            Some(TileGrid { px: 2, py: 2, c: 1 }),
            5,
            LuAlgorithm::TwoD,
        ),
        (
            47,
            8,
            Some(TileGrid { px: 2, py: 2, c: 2 }),
            4,
            LuAlgorithm::Conflux,
        ),
        (
            45,
            13,
            Some(TileGrid { px: 3, py: 2, c: 2 }),
            6,
            LuAlgorithm::Conflux,
        ),
        (
            50,
            2,
            Some(TileGrid { px: 2, py: 1, c: 1 }),
            4,
            LuAlgorithm::Conflux,
        ),
        (41, 6, None, 4, LuAlgorithm::TwoD),
        (
            33,
            4,
            Some(TileGrid { px: 1, py: 2, c: 2 }),
            4,
            LuAlgorithm::Conflux,
        ),
    ] {
        let run = |look_ahead: LookAhead| {
            let pr = params(algorithm, grid, v).with_look_ahead(look_ahead);
            run_ranks(p, |comm| {
                let la = BlockCyclic::new(n, n, 3, 3, 1, p).unwrap();
                let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| entry::<f64>(i, j, 5)).unwrap();
                comm.barrier().unwrap();
                comm.reset_stats();
                let fac = lu(&comm, &a, &pr).unwrap();
                let stats = counters(&comm.stats());
                let packed = fac.packed(&comm).unwrap().into_local();
                (stats, packed, fac.perm().to_vec())
            })
        };
        let (ahead, in_turn) = (run(LookAhead::On), run(LookAhead::Off));
        for (r, (a, b)) in ahead.iter().zip(&in_turn).enumerate() {
            // Idle ranks too know the permutation (they take part in `packed`, which
            // gathers the layers' shares and permutes).
            assert_eq!(a.2, ahead[0].2, "rank {r} knows the pivots");
            assert_eq!(a.0, b.0, "rank {r}: n={n} p={p} {algorithm}");
            assert_eq!(a.2, b.2, "pivots, rank {r}");
            let same =
                a.1.iter()
                    .zip(&b.1)
                    .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same && a.1.len() == b.1.len(), "factors, rank {r}");
        }
    }
}

#[test]
fn idle_ranks_return_the_same_singular_column_as_the_grid() {
    let (n, p) = (30, 11);
    let pr = params(
        LuAlgorithm::Conflux,
        Some(TileGrid { px: 2, py: 2, c: 2 }),
        4,
    );
    let errs =
        run_ranks(p, |comm| {
            let la = BlockCyclic::new(n, n, 3, 3, 1, p).unwrap();
            // Column 13 is zero: singular there.
            let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| {
                if j == 13 {
                    0.0
                } else {
                    entry::<f64>(i, j, 3)
                }
            })
            .unwrap();
            lu(&comm, &a, &pr).err().map(|e| e.to_string())
        });
    for e in &errs {
        assert_eq!(e, &errs[0]);
    }
    assert!(errs[0].as_ref().unwrap().contains("column 13"), "{errs:?}");
}

/// `X` with `A·X = B` by the kernel crate: getrf, the permutation, two trsm (column-major,
/// `a` is `n × n`, `b` is `n × k`).
fn kernel_solve<T: KernelScalar>(a: &[T], b: &[T], n: usize, k: usize) -> Vec<T> {
    use redblue_core::{Diag, Op, Side, Uplo};
    use redblue_kernels::{getrf, trsm, MatMut, MatRef, Par};
    let mut lu = a.to_vec();
    let info = getrf(
        MatMut::from_slice(&mut lu, n, n, n.max(1)).unwrap(),
        Par::Seq,
    )
    .unwrap();
    let perm = info.pivots.perm();
    let mut x: Vec<T> = (0..n * k).map(|e| b[perm[e % n] + (e / n) * n]).collect();
    for (uplo, diag) in [(Uplo::Lower, Diag::Unit), (Uplo::Upper, Diag::NonUnit)] {
        trsm(
            Side::Left,
            uplo,
            Op::NoTrans,
            diag,
            T::one(),
            MatRef::from_slice(&lu, n, n, n.max(1)).unwrap(),
            MatMut::from_slice(&mut x, n, k, n.max(1)).unwrap(),
            Par::Seq,
        )
        .unwrap();
    }
    x
}

/// Factors and solves on `p` ranks (A block-cyclic, B in an uneven grid layout) and returns,
/// from rank 0, `‖B − A·X‖_max / (‖A‖_max·‖X‖_max·N·ε)` and the largest difference from the
/// kernel's solution relative to its largest entry.
fn solve_check<T: KernelScalar>(
    n: usize,
    p: usize,
    k: usize,
    pr: &LuParams,
    seed: usize,
) -> (f64, f64) {
    let out = run_ranks(p, |comm| {
        let la = BlockCyclic::new(n, n, 3, 2, 1, p).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| entry::<T>(i, j, seed)).unwrap();
        let lb = GridLayout::even(n, k, p.min(2), 1).unwrap();
        let b = OwnedDistMatrix::from_fn(&comm, lb, |i, j| entry::<T>(i, j, seed + 100)).unwrap();
        let fac = lu(&comm, &a, pr).unwrap();
        let x = fac.solve(&comm, &b).unwrap();
        assert_eq!(x.layout(), b.layout());
        (
            a.gather(&comm, 0).unwrap(),
            b.gather(&comm, 0).unwrap(),
            x.gather(&comm, 0).unwrap(),
        )
    });
    let (Some(a), Some(b), Some(x)) = out.into_iter().next().unwrap() else {
        unreachable!("rank 0 gathers")
    };
    let reference = kernel_solve(&a, &b, n, k);
    let max = |v: &[T]| v.iter().fold(0.0f64, |m, e| m.max(e.abs().to_f64()));
    let mut resid = 0.0f64;
    for j in 0..k {
        for i in 0..n {
            let ax = (0..n).fold(T::zero(), |s, l| s + a[i + l * n] * x[l + j * n]);
            resid = resid.max((b[i + j * n] - ax).abs().to_f64());
        }
    }
    let eps = T::epsilon().to_f64();
    let scale = (max(&a) * max(&x) * n.max(1) as f64 * eps).max(f64::MIN_POSITIVE);
    let diff = x
        .iter()
        .zip(&reference)
        .fold(0.0f64, |m, (p, q)| m.max((*p - *q).abs().to_f64()));
    (resid / scale, diff / max(&reference).max(f64::MIN_POSITIVE))
}

/// `solve_to` gives the same `X` as `solve`, in the layout asked for, and with `perm` the
/// same as `solve` of `B` with its rows permuted first; a layout of another shape or a `perm`
/// that is not a permutation is an error on every rank.
#[test]
fn solve_to_returns_x_in_the_layout_asked_for() {
    let (n, p, k) = (23, 2, 5);
    // Row i of P·B is row perm[i] of B.
    let perm: Vec<usize> = (0..n).map(|i| (i * 7 + 3) % n).collect();
    let out = run_ranks(p, |comm| {
        let la = BlockCyclic::new(n, n, 3, 2, 1, p).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| entry::<f64>(i, j, 31)).unwrap();
        let lb = GridLayout::even(n, k, 2, 1).unwrap();
        let b = OwnedDistMatrix::from_fn(&comm, lb.clone(), |i, j| entry::<f64>(i, j, 32)).unwrap();
        let pb = OwnedDistMatrix::from_fn(&comm, lb, |i, j| entry::<f64>(perm[i], j, 32)).unwrap();
        let fac = lu(&comm, &a, &params(LuAlgorithm::Conflux, None, 4)).unwrap();
        let wanted = BlockCyclic::new(n, k, 2, 3, 1, p).unwrap();
        let x = fac.solve(&comm, &b).unwrap();
        let x_to = fac
            .solve_to(&comm, &b, Op::NoTrans, None, wanted.clone())
            .unwrap();
        assert_eq!(x_to.layout(), &wanted);
        let px = fac.solve(&comm, &pb).unwrap();
        let px_to = fac
            .solve_to(&comm, &b, Op::NoTrans, Some(&perm), wanted.clone())
            .unwrap();
        let wrong = BlockCyclic::new(n, k + 1, 2, 3, 1, p).unwrap();
        let mut twice = perm.clone();
        twice[1] = twice[0];
        let refused = [
            fac.solve_to(&comm, &b, Op::NoTrans, None, wrong).is_err(),
            matches!(
                fac.solve_to(&comm, &b, Op::NoTrans, Some(&twice), wanted.clone()),
                Err(LuError::InvalidParams(_))
            ),
            matches!(
                fac.solve_to(&comm, &b, Op::NoTrans, Some(&perm[1..]), wanted),
                Err(LuError::InvalidParams(_))
            ),
        ];
        let gathered = [x, px].map(|m| m.gather(&comm, 0).unwrap());
        let gathered_to = [x_to, px_to].map(|m| m.gather(&comm, 0).unwrap());
        (gathered, gathered_to, refused)
    });
    assert!(out.iter().all(|(_, _, refused)| refused.iter().all(|&r| r)));
    let (solved, solved_to, _) = &out[0];
    assert_eq!(solved, solved_to);
}

#[test]
fn solves_agree_with_the_kernel_solution() {
    for algorithm in [LuAlgorithm::Conflux, LuAlgorithm::TwoD] {
        for (n, p, v, k) in [
            (1, 1, 4, 1),
            (19, 1, 4, 3),
            (23, 2, 4, 5),
            (30, 4, 3, 7),
            (37, 6, 5, 2),
            (41, 9, 3, 11),
            (0, 2, 4, 3),
            (12, 3, 4, 0),
        ] {
            let (resid, diff) = solve_check::<f64>(n, p, k, &params(algorithm, None, v), 21);
            assert!(
                resid < 10.0,
                "n={n} p={p} k={k} {algorithm}: residual {resid}"
            );
            assert!(
                diff < 1e-10,
                "n={n} p={p} k={k} {algorithm}: differs from getrf by {diff}"
            );
        }
    }
    let pr = params(
        LuAlgorithm::Conflux,
        Some(TileGrid { px: 2, py: 2, c: 2 }),
        4,
    );
    assert!(solve_check::<f64>(33, 8, 6, &pr, 22).0 < 10.0);
    // So many right-hand sides that a step's products are made a block of rows at a time.
    let wide = params(
        LuAlgorithm::Conflux,
        Some(TileGrid { px: 2, py: 1, c: 1 }),
        8,
    );
    assert!(solve_check::<f64>(400, 2, 400, &wide, 26).0 < 10.0);
    assert!(solve_check::<f32>(21, 4, 3, &pr_small(), 23).0 < 10.0);
    assert!(solve_check::<c32>(21, 4, 3, &pr_small(), 24).0 < 10.0);
    assert!(solve_check::<c64>(21, 4, 3, &pr_small(), 25).0 < 10.0);
}

fn pr_small() -> LuParams {
    params(
        LuAlgorithm::Conflux,
        Some(TileGrid { px: 2, py: 1, c: 2 }),
        4,
    )
}

#[test]
fn lower_and_upper_multiply_back_to_the_permuted_matrix() {
    let (n, p) = (23, 6);
    for algorithm in [LuAlgorithm::Conflux, LuAlgorithm::TwoD] {
        let out = run_ranks(p, |comm| {
            let la = GridLayout::even(n, n, 2, 3).unwrap();
            let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| entry::<f64>(i, j, 31)).unwrap();
            let fac = lu(&comm, &a, &params(algorithm, None, 4)).unwrap();
            let l = fac.lower(&comm).unwrap();
            let u = fac.upper(&comm).unwrap();
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
        let mut worst = 0.0f64;
        for i in 0..n {
            assert_eq!(l[i + i * n], 1.0);
            for j in 0..n {
                if j > i {
                    assert_eq!(l[i + j * n], 0.0);
                }
                if j < i {
                    assert_eq!(u[i + j * n], 0.0);
                }
                let lu: f64 = (0..n).map(|k| l[i + k * n] * u[k + j * n]).sum();
                worst = worst.max((lu - a[perm[i] + j * n]).abs());
            }
        }
        assert!(worst < 1e-13 * n as f64, "{algorithm}: {worst}");
    }
}

#[test]
fn a_right_hand_side_of_the_wrong_height_is_an_error_on_every_rank() {
    let errs = run_ranks(3, |comm| {
        let a = OwnedDistMatrix::from_fn(
            &comm,
            BlockCyclic::new(8, 8, 2, 2, 1, 3).unwrap(),
            |i, j| entry::<f64>(i, j, 7),
        )
        .unwrap();
        let fac = lu(&comm, &a, &params(LuAlgorithm::Conflux, None, 2)).unwrap();
        let b = OwnedDistMatrix::from_fn(&comm, GridLayout::even(7, 2, 3, 1).unwrap(), |_, _| 1.0)
            .unwrap();
        fac.solve(&comm, &b).err().map(|e| e.to_string())
    });
    for e in &errs {
        assert_eq!(e, &errs[0]);
    }
    assert!(errs[0].as_ref().unwrap().contains("7 rows"), "{errs:?}");
}

#[test]
fn solve_words_equal_the_model_exactly() {
    for (n, p, k, grid) in [
        (40, 4, 9, None),
        (37, 6, 3, None),
        (45, 8, 12, Some(TileGrid { px: 2, py: 2, c: 2 })),
        (33, 9, 1, None),
    ] {
        let pr = params(LuAlgorithm::Conflux, grid, 4);
        let out = run_ranks(p, |comm| {
            let la = BlockCyclic::new(n, n, 2, 2, 1, p).unwrap();
            let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| entry::<f64>(i, j, 41)).unwrap();
            let fac = lu(&comm, &a, &pr).unwrap();
            let b = OwnedDistMatrix::from_fn(&comm, fac.rhs_layout(k).unwrap(), |i, j| {
                entry::<f64>(i, j, 42)
            })
            .unwrap();
            // The first solve gathers the layers' shares of the factors to layer 0 (its model
            // says so); the second finds them there.
            let mut runs = Vec::new();
            for _ in 0..2 {
                let model = fac.solve_costs(p, k, 8);
                comm.barrier().unwrap();
                comm.reset_stats();
                fac.solve(&comm, &b).unwrap();
                runs.push((comm.stats(), model));
            }
            (runs, fac.gather_costs(p, 8))
        });
        for (r, (runs, gather_after)) in out.iter().enumerate() {
            for (run, (s, model)) in runs.iter().enumerate() {
                let m = &model[r];
                assert_eq!(
                    counters(s),
                    counters(m),
                    "rank {r} of {p}, n = {n}, solve {run}"
                );
            }
            assert_eq!(gather_after[r], Default::default());
            if grid.is_some_and(|g| g.c > 1) {
                assert!(
                    runs[0].0.words_received + runs[0].0.words_sent
                        > runs[1].0.words_received + runs[1].0.words_sent
                        || r >= 8
                );
            }
        }
        assert!(out.iter().any(|(runs, _)| runs[0].0.words_sent > 0) || p == 1);
    }
}

#[test]
fn the_model_before_the_run_is_exact_for_a_matrix_needing_no_interchanges() {
    // Diagonally dominant by columns: every pivot is on the diagonal (elimination keeps the
    // dominance), so the pre-run model with `diagonal_pivots` is the measured cost.
    let (n, v) = (45, 4);
    for (p, algorithm) in [
        (6, LuAlgorithm::Conflux),
        (8, LuAlgorithm::Conflux),
        (6, LuAlgorithm::TwoD),
    ] {
        let pr = params(algorithm, None, v);
        let (grid, _) = lu_plan(n, p, &pr).unwrap();
        let model = lu_rank_costs(n, p, &pr, &diagonal_pivots(n, v), 8).unwrap();
        let out = run_ranks(p, |comm| {
            let layout = BlockCyclic::new(n, n, v, v, grid.px, grid.py)
                .unwrap()
                .with_order(redblue_dist::GridOrder::ColMajor);
            let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| {
                entry::<f64>(i, j, 17) + if i == j { 2.0 * n as f64 } else { 0.0 }
            })
            .unwrap();
            comm.barrier().unwrap();
            comm.reset_stats();
            let fac = lu(&comm, &a, &pr).unwrap();
            (comm.stats(), fac.perm().to_vec())
        });
        for (r, (s, perm)) in out.iter().enumerate() {
            assert_eq!(
                perm,
                &(0..n).collect::<Vec<_>>(),
                "{algorithm}: no interchanges"
            );
            assert_eq!(
                counters(s),
                counters(&model[r]),
                "rank {r} of {p}, {algorithm}"
            );
        }
    }
}

#[test]
fn orders_around_the_tile_width_primes_and_257_on_up_to_16_ranks() {
    let v = 8;
    for (n, p) in [
        (7, 1),
        (8, 2),
        (9, 3),
        (13, 4),
        (31, 5),
        (53, 6),
        (61, 7),
        (67, 8),
        (71, 9),
        (97, 12),
        (101, 16),
        (257, 6),
    ] {
        for algorithm in [LuAlgorithm::Conflux, LuAlgorithm::TwoD] {
            let (res, _, _) =
                check::<f64>(n, p, &params(algorithm, None, v), |i, j| entry(i, j, 13));
            assert!(res < 10.0, "n={n} p={p} {algorithm}: residual {res}");
        }
    }
}

#[test]
fn tournament_growth_stays_near_partial_pivoting_growth() {
    // Growth max|U| / max|A| on random matrices: tournament pivoting's bound is weaker than
    // partial pivoting's, in practice both stay small (the book's LU page reports the
    // miniapp's numbers at larger N).
    let (n, p) = (96, 4);
    for seed in 0..4 {
        let f = |i: usize, j: usize| entry::<f64>(i, j, 50 + seed);
        let (_, _, tournament) = check::<f64>(
            n,
            p,
            &params(
                LuAlgorithm::Conflux,
                Some(TileGrid { px: 4, py: 1, c: 1 }),
                8,
            ),
            f,
        );
        let (_, _, partial) = check::<f64>(n, p, &params(LuAlgorithm::TwoD, None, 8), f);
        eprintln!("seed {seed}: growth tournament {tournament:.2}, partial {partial:.2}");
        assert!(partial >= 1.0 && tournament >= 1.0);
        assert!(
            tournament <= 4.0 * partial,
            "seed {seed}: {tournament} against {partial}"
        );
    }
}

#[test]
fn in_place_factors_equal_the_copying_ones_and_move_nothing_more() {
    let (n, p) = (37, 4);
    let pr = params(LuAlgorithm::Conflux, None, 4);
    let (grid, v) = lu_plan(n, p, &pr).unwrap();
    let out = run_ranks(p, |comm| {
        let native = BlockCyclic::new(n, n, v, v, grid.px, grid.py)
            .unwrap()
            .with_order(redblue_dist::GridOrder::ColMajor);
        let a = OwnedDistMatrix::from_fn(&comm, native, |i, j| entry::<f64>(i, j, 61)).unwrap();
        let copied = lu(&comm, &a, &pr).unwrap();
        comm.barrier().unwrap();
        comm.reset_stats();
        let in_place = lu_in_place(&comm, a.clone(), &pr).unwrap();
        let words = comm.stats().words_sent;
        // Another block-cyclic layout is copied, with the same result.
        let other = BlockCyclic::new(n, n, 3, 5, 2, 2).unwrap();
        let b = OwnedDistMatrix::from_fn(&comm, other, |i, j| entry::<f64>(i, j, 61)).unwrap();
        let moved = lu_in_place(&comm, b, &pr).unwrap();
        let gather = |f: &redblue_lu::LuFactors<f64, BlockCyclic>| {
            f.packed(&comm).unwrap().gather(&comm, 0).unwrap()
        };
        (
            gather(&copied),
            gather(&in_place),
            gather(&moved),
            copied.perm() == in_place.perm() && copied.perm() == moved.perm(),
            words,
            in_place.step_pivots().to_vec(),
        )
    });
    let (c, i, m, _, _, pivots) = &out[0];
    assert_eq!(c, i);
    assert_eq!(c, m);
    // No transform in: every rank sends what the factorisation's model says.
    let model = lu_rank_costs(n, p, &pr, pivots, 8).unwrap();
    for (r, o) in out.iter().enumerate() {
        assert!(o.3, "rank {r}: the same permutation");
        assert_eq!(o.4, model[r].words_sent, "rank {r}");
    }
}

#[test]
fn a_plan_is_made_before_and_checked_against_the_matrix_and_the_communicator() {
    use redblue_kernels::Par;
    use redblue_lu::{lu_in_place_with, lu_with, LuPlan};
    let (n, p) = (45, 4);
    let plan = LuPlan::new(n, p, &params(LuAlgorithm::Conflux, None, 4)).unwrap();
    assert_eq!(
        redblue_dist::Layout::shape(&plan.native_layout().unwrap()),
        (n, n)
    );
    assert!(plan.memory_bytes(8) >= 8 * (n * n / p) as u64);
    assert_eq!(plan.rank_costs(p, 8).len(), p);
    let out = run_ranks(p, |comm| {
        let a = OwnedDistMatrix::from_fn(&comm, plan.native_layout().unwrap(), |i, j| {
            entry::<f64>(i, j, 71)
        })
        .unwrap();
        // The same factors with the local products on one thread and on two.
        let seq = lu_with(&comm, &plan, &a, Par::Seq).unwrap();
        let par = lu_in_place_with(&comm, &plan, a.clone(), Par::Threads(2)).unwrap();
        let (ps, pp) = (seq.packed(&comm).unwrap(), par.packed(&comm).unwrap());
        let diff = ps
            .local()
            .iter()
            .zip(pp.local())
            .map(|(x, y)| (x - y).abs())
            .fold(0.0f64, f64::max);
        // A plan of another order, or of more ranks than the communicator: the same error on
        // every rank.
        let other = LuPlan::new(n + 1, p, &LuParams::default()).unwrap();
        let wrong_order = lu_with(&comm, &other, &a, Par::Seq)
            .err()
            .map(|e| e.to_string());
        let wide = LuPlan::new(n, 2 * p, &params(LuAlgorithm::TwoD, None, 4)).unwrap();
        let too_wide = lu_with(&comm, &wide, &a, Par::Seq)
            .err()
            .map(|e| e.to_string());
        (seq.perm() == par.perm(), diff, wrong_order, too_wide)
    });
    for (same_perm, diff, wrong_order, too_wide) in &out {
        assert!(same_perm);
        assert!(*diff < 1e-12, "{diff}");
        assert_eq!(wrong_order, &out[0].2);
        assert!(
            wrong_order.as_ref().unwrap().contains("46x46"),
            "{wrong_order:?}"
        );
        assert!(
            too_wide.as_ref().unwrap().contains("need 8 ranks"),
            "{too_wide:?}"
        );
    }
}

/// An `n × n` block-cyclic layout of `nb × nb` blocks on `pr × pc` processes, as a ScaLAPACK
/// caller's array, and the LU plan made for it.
fn callers_layout(n: usize, nb: usize, (pr, pc): (usize, usize)) -> (BlockCyclicSubmatrix, LuPlan) {
    let layout = BlockCyclicSubmatrix::from(BlockCyclic::new(n, n, nb, nb, pr, pc).unwrap());
    let plan = LuPlan::for_layout(n, n, pr * pc, &LuParams::default(), &layout).unwrap();
    (layout, plan)
}

/// `A` (entries of `seed`) in `layout`, `lu_with`'s factors, and their `L\U` written into a
/// copy of `A` as ScaLAPACK's `p?getrf` leaves it (rows of `P·A`).
fn factored_into_callers_array<C: Communicator>(
    comm: &C,
    (layout, plan): &(BlockCyclicSubmatrix, LuPlan),
    seed: usize,
) -> (
    OwnedDistMatrix<c64, BlockCyclicSubmatrix>,
    LuFactors<'static, c64, BlockCyclicSubmatrix>,
    OwnedDistMatrix<c64, BlockCyclicSubmatrix>,
) {
    let a =
        OwnedDistMatrix::from_fn(comm, layout.clone(), |i, j| entry::<c64>(i, j, seed)).unwrap();
    let fac = lu_with(comm, plan, &a, Par::Seq).unwrap();
    let mut stored = a.clone();
    fac.write_factors(comm, &mut stored).unwrap();
    (a, fac, stored)
}

/// Factors left in the caller's array (`L\U` in the rows of `P·A`, as ScaLAPACK's `p?getrf`
/// leaves them) are read where they are when the array is the tiles' own (a plan made for its
/// layout, no rows permuted: `P·B` is solved): no copy, the array untouched, and the solve
/// equal to the factorisation's own. With the interchanges given, they are copied.
#[test]
fn factors_in_the_callers_array_are_read_where_they_are() {
    let (n, nb, k) = (130, 16, 3);
    for (pr, pc) in [(1, 2), (2, 1), (1, 1)] {
        let p = pr * pc;
        let callers = callers_layout(n, nb, (pr, pc));
        let plan = &callers.1;
        let out = run_ranks(p, |comm| {
            let b =
                OwnedDistMatrix::from_fn(&comm, GridLayout::even(n, k, p, 1).unwrap(), |i, j| {
                    entry::<c64>(i, j, 4)
                })
                .unwrap();
            let (_, fac, stored) = factored_into_callers_array(&comm, &callers, 3);
            let before = stored.local().to_vec();
            let x = fac.solve(&comm, &b).unwrap();
            let identity: Vec<usize> = (0..n).collect();
            let mut result = Vec::new();
            for perm in [&identity[..], fac.perm()] {
                let again = LuFactors::from_packed(&comm, plan, &stored, perm, Par::Seq).unwrap();
                let rhs = if perm == &identity[..] {
                    b.permute_rows(&comm, fac.perm()).unwrap()
                } else {
                    b.clone()
                };
                let y = again.solve(&comm, &rhs).unwrap();
                let mut diff = x.clone();
                diff.axpy(&comm, -c64::one(), &y).unwrap();
                let close = diff.norm_max(&comm).unwrap() <= 1e-12 * x.norm_max(&comm).unwrap();
                result.push((close, again.in_caller_array()));
            }
            (result, stored.local() == &before[..])
        });
        for (r, o) in out.iter().enumerate() {
            assert_eq!(
                *o,
                (vec![(true, true), (true, false)], true),
                "{pr}x{pc} rank {r}"
            );
        }
    }
}

/// Transposed and adjoint solves with a ScaLAPACK-style `L\U` of `P·A` and its rows as a list,
/// and with the factors of `lu` itself (whose tiles keep their interchanges: solved on a copy):
/// `op(A)·X = B` to a residual near rounding, on grids of one and two process rows.
#[test]
fn transposed_solves_take_the_callers_factors() {
    let (n, nb, k) = (70, 8, 3);
    for (pr, pc) in [(1, 2), (2, 1), (2, 2)] {
        let p = pr * pc;
        let callers = callers_layout(n, nb, (pr, pc));
        let out = run_ranks(p, |comm| {
            let lb = GridLayout::even(n, k, p, 1).unwrap();
            let b =
                OwnedDistMatrix::from_fn(&comm, lb.clone(), |i, j| entry::<c64>(i, j, 6)).unwrap();
            let (a, fac, stored) = factored_into_callers_array(&comm, &callers, 5);
            let identity: Vec<usize> = (0..n).collect();
            let again =
                LuFactors::from_packed(&comm, &callers.1, &stored, &identity, Par::Seq).unwrap();
            let xs = [Op::Trans, Op::ConjTrans].map(|op| {
                let x = again
                    .solve_to(&comm, &b, op, Some(fac.perm()), lb.clone())
                    .unwrap();
                let y = fac.solve_to(&comm, &b, op, None, lb.clone()).unwrap();
                (x.gather(&comm, 0).unwrap(), y.gather(&comm, 0).unwrap())
            });
            (a.gather(&comm, 0).unwrap(), b.gather(&comm, 0).unwrap(), xs)
        });
        let (Some(a), Some(b), [(Some(xt), Some(yt)), (Some(xh), Some(yh))]) = &out[0] else {
            unreachable!("rank 0 gathers")
        };
        let solved = [(Op::Trans, xt), (Op::ConjTrans, xh)];
        for (op, x) in solved
            .into_iter()
            .chain([(Op::Trans, yt), (Op::ConjTrans, yh)])
        {
            let mut resid = 0.0f64;
            for j in 0..k {
                for i in 0..n {
                    // (op(A)·X)[i, j] = Σ_l op(A)[i, l]·X[l, j], op(A)[i, l] = A[l, i] (conj).
                    let ax = (0..n).fold(c64::zero(), |s, l| {
                        let e = a[l + i * n];
                        s + if op == Op::ConjTrans { e.conj() } else { e } * x[l + j * n]
                    });
                    resid = resid.max((b[i + j * n] - ax).abs());
                }
            }
            assert!(resid < 1e-10, "{pr}x{pc} {op:?}: residual {resid}");
        }
    }
}

/// Solves with the caller's factors (`from_packed`, no interchanges of their own) move what
/// `solve_to_costs` says, word for word and message for message, for every `op`, with and
/// without the rows of `P·A` as a list; `lu`'s own factors, solved transposed on a copy, have
/// no model and say so.
/// Factors taken from a caller's array move no diagonal block until a solve needs them, and
/// then only to the grid columns holding its right-hand sides, once.
#[test]
fn the_callers_factors_bring_their_diagonal_blocks_to_the_right_hand_sides_only() {
    let (n, nb, k) = (70, 8, 3);
    for (pr, pc) in [(2, 3), (1, 3)] {
        let p = pr * pc;
        let callers = callers_layout(n, nb, (pr, pc));
        let out = run_ranks(p, |comm| {
            let (_, _, stored) = factored_into_callers_array(&comm, &callers, 5);
            let identity: Vec<usize> = (0..n).collect();
            comm.barrier().unwrap();
            comm.reset_stats();
            let again =
                LuFactors::from_packed(&comm, &callers.1, &stored, &identity, Par::Seq).unwrap();
            let taking = comm.stats();
            let lb = again.rhs_layout(k).unwrap();
            let b =
                OwnedDistMatrix::from_fn(&comm, lb.clone(), |i, j| entry::<c64>(i, j, 9)).unwrap();
            let first = again.solve_to_costs(p, (k, Op::NoTrans, None), 16).unwrap();
            again
                .solve_to(&comm, &b, Op::NoTrans, None, lb.clone())
                .unwrap();
            let second = again.solve_to_costs(p, (k, Op::NoTrans, None), 16).unwrap();
            (taking, first, second)
        });
        // All 3 right-hand sides are on grid column 0: with two grid rows its solving ranks
        // take the diagonal blocks of the steps whose panels the other grid columns hold, once
        // (the second solve's model has none). On one grid row the ring solves each step where
        // its diagonal block is: none moves.
        let (v, py) = (callers.1.block, callers.1.grid.py);
        let others: usize = (0..n.div_ceil(v))
            .filter(|t| t % py != 0)
            .map(|t| (v.min(n - t * v)).pow(2))
            .sum();
        let mut brought = 0;
        for (r, (taking, first, second)) in out.iter().enumerate() {
            // (On one grid row the caller's array is the tiles' own.)
            if pr == 1 {
                assert_eq!(
                    taking.words_received, 0,
                    "rank {r}: from_packed moves nothing"
                );
            }
            brought += first[r].words_received - second[r].words_received;
        }
        let expected = if pr == 1 { 0 } else { others };
        assert_eq!(
            brought, expected as u64,
            "{pr} × {pc}: words of diagonal blocks"
        );
    }
}

#[test]
fn solves_with_the_callers_factors_move_what_their_model_says() {
    let (n, nb, k) = (70, 8, 3);
    for (pr, pc) in [(1, 2), (2, 1), (2, 2), (1, 3)] {
        let p = pr * pc;
        let callers = callers_layout(n, nb, (pr, pc));
        let out = run_ranks(p, |comm| {
            let (_, fac, stored) = factored_into_callers_array(&comm, &callers, 7);
            let identity: Vec<usize> = (0..n).collect();
            let again =
                LuFactors::from_packed(&comm, &callers.1, &stored, &identity, Par::Seq).unwrap();
            let lb = again.rhs_layout(k).unwrap();
            let b =
                OwnedDistMatrix::from_fn(&comm, lb.clone(), |i, j| entry::<c64>(i, j, 8)).unwrap();
            let mut runs = Vec::new();
            for op in [Op::NoTrans, Op::Trans, Op::ConjTrans] {
                for perm in [None, Some(fac.perm())] {
                    let model = again.solve_to_costs(p, (k, op, perm), 16).unwrap();
                    comm.barrier().unwrap();
                    comm.reset_stats();
                    again.solve_to(&comm, &b, op, perm, lb.clone()).unwrap();
                    runs.push((op, perm.is_some(), comm.stats(), model));
                }
            }
            let refused = fac.solve_to_costs(p, (k, Op::Trans, None), 16).is_err();
            (runs, refused)
        });
        for (r, (runs, refused)) in out.iter().enumerate() {
            assert!(
                refused,
                "{pr}x{pc} rank {r}: lu()'s factors transposed have no model"
            );
            for (op, permuted, s, model) in runs {
                assert_eq!(
                    counters(s),
                    counters(&model[r]),
                    "{pr}x{pc} rank {r}, {op:?}, rows permuted: {permuted}"
                );
            }
        }
        let moved = |(_, permuted, s, _): &(Op, bool, redblue_comm::CommStats, _)| {
            *permuted && s.words_sent > 0
        };
        assert!(out.iter().any(|(runs, _)| runs.iter().any(moved)));
    }
}

/// On one grid row with at most `v` right-hand sides the solves run as a ring (the rank
/// holding a step's panel solves it): with layers and an idle rank (`1 × 2 × 2` of 5 ranks)
/// and on `1 × 3`, in all four scalars, the solution agrees with the kernel's `getrf` solve,
/// and its words equal its model; with more right-hand sides than `v` the general scheme
/// runs, to the same solution.
#[test]
fn ring_solves_on_one_grid_row_agree_with_the_kernel_and_their_model() {
    let ring_2x2 = params(
        LuAlgorithm::Conflux,
        Some(TileGrid { px: 1, py: 2, c: 2 }),
        4,
    );
    let ring_3 = params(
        LuAlgorithm::Conflux,
        Some(TileGrid { px: 1, py: 3, c: 1 }),
        4,
    );
    for (p, pr, k) in [(5, &ring_2x2, 3), (3, &ring_3, 4), (3, &ring_3, 9)] {
        let (resid, diff) = solve_check::<f64>(45, p, k, pr, 61);
        assert!(resid < 10.0 && diff < 1e-10, "p={p} k={k}: {resid} {diff}");
        assert!(solve_check::<f32>(31, p, k, pr, 62).0 < 10.0);
        assert!(solve_check::<c32>(31, p, k, pr, 63).0 < 10.0);
        assert!(solve_check::<c64>(31, p, k, pr, 64).0 < 10.0);
        let out = run_ranks(p, |comm| {
            let la = BlockCyclic::new(45, 45, 2, 2, 1, p).unwrap();
            let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| entry::<f64>(i, j, 65)).unwrap();
            let fac = lu(&comm, &a, pr).unwrap();
            let lb = fac.rhs_layout(k).unwrap();
            let b = OwnedDistMatrix::from_fn(&comm, lb, |i, j| entry::<f64>(i, j, 66)).unwrap();
            fac.solve(&comm, &b).unwrap(); // the first solve gathers the layers' shares
            let model = fac.solve_costs(p, k, 8);
            comm.barrier().unwrap();
            comm.reset_stats();
            fac.solve(&comm, &b).unwrap();
            (comm.stats(), model)
        });
        for (r, (s, model)) in out.iter().enumerate() {
            assert_eq!(counters(s), counters(&model[r]), "rank {r} of {p}, k = {k}");
        }
    }
}
