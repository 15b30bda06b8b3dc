//! Cholesky on threads-as-ranks: the factor against the definition `A = L·Lᴴ` for all four
//! scalars and both triangles, the unread triangle full of NaN, errors the same on every rank,
//! solves, and every rank's words and messages against the exact model.

use redblue_cholesky::{
    cholesky, cholesky_in_place, cholesky_overwrite, cholesky_with, CholeskyAlgorithm,
    CholeskyError, CholeskyFactor, CholeskyParams, CholeskyPlan, LookAhead, TileGrid,
};
use redblue_comm::{run_ranks, CommStats, Communicator};
use redblue_core::{c32, c64, RealScalar, Scalar, Uplo};
use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix, DistMatrix, GridLayout, OwnedDistMatrix};
use redblue_kernels::{KernelScalar, Par};

/// Words and messages sent and received: what the exact models must match.
fn counters(s: &CommStats) -> (u64, u64, u64, u64) {
    (
        s.words_sent,
        s.words_received,
        s.messages_sent,
        s.messages_received,
    )
}

/// Element `(i, j)` of a Hermitian positive definite matrix (diagonally dominant: off the
/// diagonal uniform in `[−1, 1)` in both parts, `2N` on it) in its `uplo` triangle, NaN in the
/// other.
fn hpd<T: Scalar>(n: usize, uplo: Uplo, seed: u64) -> impl Fn(usize, usize) -> T + Sync {
    move |i, j| {
        let in_triangle = match uplo {
            Uplo::Lower => i >= j,
            Uplo::Upper => i <= j,
        };
        if !in_triangle {
            T::from_f64_parts(f64::NAN, f64::NAN)
        } else if i == j {
            T::from_real(T::Real::from_f64(2.0 * n as f64))
        } else if i > j {
            redblue_core::random::uniform(i, j, seed)
        } else {
            redblue_core::random::uniform::<T>(j, i, seed).conj()
        }
    }
}

/// The threshold of ScaLAPACK's LLT tester (`LLT.dat`) on [`residual`].
const THRESHOLD: f64 = 3.0;

/// ScaLAPACK's LLT residual `‖A − L·Lᴴ‖₁ / (‖A‖₁ · N · ε)` (`Uᴴ·U` for `Upper`), for the
/// gathered column-major `a` (given by its `uplo` triangle) and factor `f`: the whole
/// Hermitian matrices, the 1-norm a largest column sum.
fn residual<T: Scalar>(a: &[T], f: &[T], n: usize, uplo: Uplo) -> f64 {
    let in_triangle = |i: usize, j: usize| if uplo == Uplo::Lower { i >= j } else { i <= j };
    let a_at = |i: usize, j: usize| {
        if in_triangle(i, j) {
            a[i + j * n]
        } else {
            a[j + i * n].conj()
        }
    };
    // Lower: (L·Lᴴ)[i,j] = Σ_k L[i,k]·conj(L[j,k]); Upper: (Uᴴ·U)[i,j] = Σ_k conj(U[k,i])·U[k,j].
    let product = |i: usize, j: usize| {
        (0..=i.min(j)).fold(T::zero(), |s, k| {
            s + match uplo {
                Uplo::Lower => f[i + k * n] * f[j + k * n].conj(),
                Uplo::Upper => f[k + i * n].conj() * f[k + j * n],
            }
        })
    };
    let (mut diff_norm, mut a_norm) = (0.0f64, 0.0f64);
    for j in 0..n {
        let (mut diff_col, mut a_col) = (0.0, 0.0);
        for i in 0..n {
            diff_col += (a_at(i, j) - product(i, j)).abs().to_f64();
            a_col += a_at(i, j).abs().to_f64();
        }
        diff_norm = diff_norm.max(diff_col);
        a_norm = a_norm.max(a_col);
    }
    diff_norm / (a_norm.max(f64::MIN_POSITIVE) * n.max(1) as f64 * T::epsilon().to_f64())
}

/// Factors the `n × n` test matrix (in its `uplo` triangle, NaN in the other) on `p` ranks in
/// a `mb × mb` block-cyclic layout; returns the residual and checks that the factor's other
/// triangle is zero.
fn check<T: KernelScalar>(
    n: usize,
    p: usize,
    mb: usize,
    uplo: Uplo,
    params: &CholeskyParams,
) -> f64 {
    let f = hpd::<T>(n, uplo, 7);
    let out = run_ranks(p, |comm| {
        let (pr, pc) = if p.is_multiple_of(2) {
            (2, p / 2)
        } else {
            (1, p)
        };
        let layout = BlockCyclic::new(n, n, mb, mb, pr, pc).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, layout, &f).unwrap();
        let fac = cholesky(&comm, &a, uplo, params).unwrap();
        let factor = fac.factor(&comm).unwrap().gather(&comm, 0).unwrap();
        factor.zip(a.gather(&comm, 0).unwrap())
    });
    let (factor, a) = out.into_iter().next().unwrap().expect("rank 0 gathers");
    for j in 0..n {
        for i in 0..n {
            let outside = if uplo == Uplo::Lower { i < j } else { i > j };
            if outside {
                assert_eq!(
                    factor[i + j * n],
                    T::zero(),
                    "({i}, {j}) outside the triangle"
                );
            }
        }
    }
    residual(&a, &factor, n, uplo)
}

fn params(algorithm: CholeskyAlgorithm, grid: Option<TileGrid>, block: usize) -> CholeskyParams {
    let mut p = CholeskyParams::default()
        .with_algorithm(algorithm)
        .with_block(block);
    if let Some(g) = grid {
        p = p.with_grid(g);
    }
    p
}

const ALGORITHMS: [CholeskyAlgorithm; 2] = [CholeskyAlgorithm::Confchox, CholeskyAlgorithm::TwoD];

/// Rank counts of the issue: 1 to 9, 12 and 16.
const RANKS: [usize; 11] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16];

/// Orders 0, 1, 2, v − 1, v, v + 1 and primes on every rank count, both algorithms, both
/// triangles, in a layout whose blocks (3) differ from the tiles (4).
fn orders_around_the_tile_width<T: KernelScalar>() {
    let v = 4;
    for p in RANKS {
        for n in [0, 1, 2, v - 1, v, v + 1, 13, 31, 37] {
            for algorithm in ALGORITHMS {
                for uplo in [Uplo::Lower, Uplo::Upper] {
                    let res = check::<T>(n, p, 3, uplo, &params(algorithm, None, v));
                    assert!(res < THRESHOLD, "n={n} p={p} {algorithm} {uplo:?}: {res}");
                }
            }
        }
    }
}

#[test]
fn orders_around_the_tile_width_and_primes_on_up_to_16_ranks_real() {
    orders_around_the_tile_width::<f32>();
    orders_around_the_tile_width::<f64>();
}

#[test]
fn orders_around_the_tile_width_and_primes_on_up_to_16_ranks_complex() {
    orders_around_the_tile_width::<c32>();
    orders_around_the_tile_width::<c64>();
}

#[test]
fn order_257_on_up_to_16_ranks() {
    for p in RANKS {
        for algorithm in ALGORITHMS {
            for uplo in [Uplo::Lower, Uplo::Upper] {
                let res = check::<f64>(257, p, 16, uplo, &params(algorithm, None, 16));
                assert!(res < THRESHOLD, "257 on {p}, {algorithm} {uplo:?}: {res}");
            }
        }
    }
}

#[test]
fn every_scalar_type_and_both_triangles_on_grids_with_layers() {
    for grid in [
        TileGrid { px: 2, py: 1, c: 2 },
        TileGrid { px: 2, py: 2, c: 2 },
        TileGrid { px: 1, py: 3, c: 2 },
    ] {
        let p = grid.ranks() + 1; // one idle rank
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let pr = params(CholeskyAlgorithm::Confchox, Some(grid), 4);
            assert!(check::<f32>(23, p, 3, uplo, &pr) < THRESHOLD);
            assert!(check::<f64>(23, p, 3, uplo, &pr) < THRESHOLD);
            assert!(check::<c32>(23, p, 3, uplo, &pr) < THRESHOLD);
            assert!(check::<c64>(23, p, 3, uplo, &pr) < THRESHOLD);
        }
    }
}

#[test]
fn the_sizes_of_dla_future_s_cholesky_tests() {
    // (m, mb): order and tile width, tile widths that do and do not divide the order.
    for (m, mb) in [
        (0, 2),
        (5, 8),
        (34, 34),
        (4, 3),
        (16, 10),
        (34, 13),
        (32, 5),
    ] {
        for p in [1, 4, 6] {
            for algorithm in ALGORITHMS {
                for uplo in [Uplo::Lower, Uplo::Upper] {
                    let res = check::<c64>(m, p, mb, uplo, &params(algorithm, None, mb));
                    assert!(res < THRESHOLD, "m={m} mb={mb} p={p} {algorithm}: {res}");
                }
            }
        }
    }
}

/// Every rank's measured counters in the native layout against the plan's exact model.
fn measured_equals_model(n: usize, p: usize, pr: &CholeskyParams) {
    let plan = CholeskyPlan::new(n, p, pr).unwrap();
    let out = run_ranks(p, |comm| {
        let layout = plan.native_layout().unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, layout, hpd::<f64>(n, Uplo::Lower, 3)).unwrap();
        comm.barrier().unwrap();
        comm.reset_stats();
        cholesky_in_place(&comm, a, Uplo::Lower, pr).unwrap();
        comm.stats()
    });
    let model = plan.rank_costs(p, 8);
    for (r, s) in out.iter().enumerate() {
        assert_eq!(
            counters(s),
            counters(&model[r]),
            "rank {r} of {p}, n = {n}, grid {}, {}",
            plan.grid,
            pr.algorithm
        );
        assert_eq!(s.bytes_sent, model[r].bytes_sent, "rank {r} bytes");
    }
}

#[test]
fn measured_words_equal_the_model_exactly() {
    for p in [1, 2, 3, 4, 8, 12, 16, 27, 64] {
        for algorithm in ALGORITHMS {
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
        measured_equals_model(n, p, &params(CholeskyAlgorithm::Confchox, grid, v));
    }
    // The 2D baseline on given one-layer grids: widths that do and do not divide N, one-rank
    // grid rows and columns, idle ranks.
    for (n, p, (px, py), v) in [
        (50, 6, (3, 2), 5),
        (47, 7, (2, 3), 4),
        (45, 5, (1, 4), 6),
        (44, 3, (3, 1), 7),
    ] {
        let grid = Some(TileGrid { px, py, c: 1 });
        measured_equals_model(n, p, &params(CholeskyAlgorithm::TwoD, grid, v));
    }
}

#[test]
fn bad_input_gives_the_same_error_on_every_rank() {
    let n = 30;
    let pr = params(
        CholeskyAlgorithm::Confchox,
        Some(TileGrid { px: 2, py: 1, c: 2 }),
        4,
    );
    let errors = |f: &(dyn Fn(usize, usize) -> c64 + Sync), shape: (usize, usize)| {
        let out = run_ranks(5, |comm| {
            let layout = BlockCyclic::new(shape.0, shape.1, 3, 3, 1, 5).unwrap();
            let a = OwnedDistMatrix::from_fn(&comm, layout, f).unwrap();
            cholesky(&comm, &a, Uplo::Lower, &pr)
                .err()
                .map(|e| e.to_string())
        });
        for e in &out {
            assert_eq!(e, &out[0]);
        }
        out[0].clone().expect("an error")
    };
    let good = hpd::<c64>(n, Uplo::Lower, 1);
    // Not positive definite from column 17 on: its diagonal is made very negative.
    let e = errors(
        &|i, j| {
            if i == 17 && j == 17 {
                c64::new(-1e3, 0.0)
            } else {
                good(i, j)
            }
        },
        (n, n),
    );
    assert!(e.contains("column 17"), "{e}");
    // A non-real diagonal entry at column 9 (and a failing pivot later).
    let e = errors(
        &|i, j| match (i, j) {
            (9, 9) => c64::new(2.0 * n as f64, 1.0),
            (20, 20) => c64::new(-1e3, 0.0),
            _ => good(i, j),
        },
        (n, n),
    );
    assert!(e.contains("column 9"), "{e}");
    // NaN in the triangle read.
    let e = errors(
        &|i, j| {
            if (i, j) == (25, 3) {
                c64::new(f64::NAN, 0.0)
            } else {
                good(i, j)
            }
        },
        (n, n),
    );
    assert!(e.contains("NaN"), "{e}");
    // Inf on the diagonal, and in the triangle read off it.
    for at in [(6, 6), (29, 11)] {
        let e = errors(
            &|i, j| {
                if (i, j) == at {
                    c64::new(f64::INFINITY, 0.0)
                } else {
                    good(i, j)
                }
            },
            (n, n),
        );
        assert!(e.contains("infinity"), "{at:?}: {e}");
    }
    // Not square.
    let e = errors(&|i, j| good(i, j), (n, n + 1));
    assert!(e.contains("square"), "{e}");
}

#[test]
fn without_the_scan_non_finite_entries_stop_at_the_pivot_of_their_row_as_lapack_s() {
    let n = 30;
    let pr = params(
        CholeskyAlgorithm::Confchox,
        Some(TileGrid { px: 2, py: 1, c: 2 }),
        4,
    );
    let good = hpd::<c64>(n, Uplo::Lower, 1);
    // Without the scan, as LAPACK's potrf: a NaN or infinity below the diagonal stops the
    // factorisation at the pivot of its row, the imaginary part of the diagonal is not read,
    // an infinite diagonal entry goes into the factor.
    let unchecked = pr.clone().with_finite_check(false);
    let outcome = |at: (usize, usize), x: c64, also_bad: Option<usize>| {
        let out = run_ranks(5, |comm| {
            let layout = BlockCyclic::new(n, n, 3, 3, 1, 5).unwrap();
            let f = |i, j| match also_bad {
                Some(b) if (i, j) == (b, b) => c64::new(-1e3, 0.0),
                _ if (i, j) == at => x,
                _ => good(i, j),
            };
            let a = OwnedDistMatrix::from_fn(&comm, layout, f).unwrap();
            match cholesky(&comm, &a, Uplo::Lower, &unchecked) {
                Ok(l) => Ok(l.lower(&comm).unwrap().norm_max(&comm).unwrap()),
                Err(CholeskyError::NotPositiveDefinite { column }) => Err(column),
                Err(e) => panic!("{e}"),
            }
        });
        assert!(out.iter().all(|o| *o == out[0]), "{out:?}");
        out[0]
    };
    assert_eq!(outcome((25, 3), c64::new(f64::NAN, 0.0), None), Err(25));
    assert_eq!(
        outcome((29, 11), c64::new(f64::INFINITY, 0.0), None),
        Err(29)
    );
    assert_eq!(
        outcome((9, 9), c64::new(2.0 * n as f64, 1.0), Some(20)),
        Err(20)
    );
    assert_eq!(
        outcome((6, 6), c64::new(f64::INFINITY, 0.0), None),
        Ok(f64::INFINITY)
    );
}

#[test]
fn the_not_positive_definite_column_is_lapack_s() {
    // A = [[4, 2, 2], [2, 1, 0], [2, 0, 5]]: the pivot of column 1 is 1 − 1 = 0.
    let a = [[4.0, 2.0, 2.0], [2.0, 1.0, 0.0], [2.0, 0.0, 5.0]];
    let out = run_ranks(3, |comm| {
        let layout = BlockCyclic::new(3, 3, 1, 1, 1, 3).unwrap();
        let m = OwnedDistMatrix::from_fn(&comm, layout, |i, j| a[i][j]).unwrap();
        let pr = params(CholeskyAlgorithm::TwoD, None, 1);
        match cholesky(&comm, &m, Uplo::Upper, &pr) {
            Err(CholeskyError::NotPositiveDefinite { column }) => column,
            other => panic!("{:?}", other.err()),
        }
    });
    assert_eq!(out, vec![1; 3]);
}

/// `X` for `A·X = B` through the distributed solve; returns `max |A·X − B| / (‖A‖·‖X‖·N·ε)`.
fn solve_check<T: KernelScalar>(
    n: usize,
    k: usize,
    p: usize,
    uplo: Uplo,
    pr: &CholeskyParams,
) -> f64 {
    let f = hpd::<T>(n, uplo, 5);
    let out = run_ranks(p, |comm| {
        let layout = BlockCyclic::new(n, n, 4, 4, 1, p).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, layout, &f).unwrap();
        let b = OwnedDistMatrix::<T, _>::random(&comm, GridLayout::even(n, k, p, 1).unwrap(), 9)
            .unwrap();
        let fac = cholesky(&comm, &a, uplo, pr).unwrap();
        let x = fac.solve(&comm, &b).unwrap();
        let gathered = (a.gather(&comm, 0).unwrap(), b.gather(&comm, 0).unwrap());
        (gathered, x.gather(&comm, 0).unwrap())
    });
    let ((a, b), x) = out.into_iter().next().unwrap();
    let (a, b, x) = (a.unwrap(), b.unwrap(), x.unwrap());
    // The full Hermitian A from its triangle.
    let at = |i: usize, j: usize| {
        let in_triangle = if uplo == Uplo::Lower { i >= j } else { i <= j };
        if in_triangle {
            a[i + j * n]
        } else {
            a[j + i * n].conj()
        }
    };
    let (mut worst, mut xmax, mut amax) = (0.0f64, 0.0f64, 0.0f64);
    for c in 0..k {
        for i in 0..n {
            let mut s = T::zero();
            for j in 0..n {
                s += at(i, j) * x[j + c * n];
                amax = amax.max(at(i, j).abs().to_f64());
            }
            worst = worst.max((s - b[i + c * n]).abs().to_f64());
            xmax = xmax.max(x[i + c * n].abs().to_f64());
        }
    }
    worst / (amax * xmax.max(f64::MIN_POSITIVE) * n as f64 * T::epsilon().to_f64())
}

#[test]
fn solves_for_many_right_hand_sides_in_any_layout() {
    for (n, k, p, grid) in [
        (29, 3, 4, Some(TileGrid { px: 2, py: 1, c: 2 })),
        (33, 5, 8, Some(TileGrid { px: 2, py: 2, c: 2 })),
        (21, 1, 3, None),
        (40, 6, 6, None),
        // So many right-hand sides that a step's update is made a block of rows at a time.
        (400, 400, 2, Some(TileGrid { px: 2, py: 1, c: 1 })),
    ] {
        for algorithm in ALGORITHMS {
            let grid = if algorithm == CholeskyAlgorithm::TwoD {
                None
            } else {
                grid
            };
            for uplo in [Uplo::Lower, Uplo::Upper] {
                let pr = params(algorithm, grid, 4);
                assert!(
                    solve_check::<f64>(n, k, p, uplo, &pr) < 10.0,
                    "{n} {p} {algorithm}"
                );
                assert!(
                    solve_check::<c64>(n, k, p, uplo, &pr) < 10.0,
                    "{n} {p} {algorithm}"
                );
            }
        }
    }
}

#[test]
fn solve_words_equal_the_model_exactly() {
    for (n, k, p, grid) in [
        (37, 3, 8, TileGrid { px: 2, py: 2, c: 2 }),
        (30, 2, 7, TileGrid { px: 3, py: 2, c: 1 }),
    ] {
        let pr = params(CholeskyAlgorithm::Confchox, Some(grid), 4);
        let out = run_ranks(p, |comm| {
            let plan = CholeskyPlan::new(n, p, &pr).unwrap();
            let a = OwnedDistMatrix::from_fn(
                &comm,
                plan.native_layout().unwrap(),
                hpd::<f64>(n, Uplo::Lower, 2),
            )
            .unwrap();
            let fac = cholesky_in_place(&comm, a, Uplo::Lower, &pr).unwrap();
            let b =
                OwnedDistMatrix::<f64, _>::random(&comm, fac.rhs_layout(k).unwrap(), 4).unwrap();
            let model = fac.solve_costs(p, k, 8);
            comm.barrier().unwrap();
            comm.reset_stats();
            fac.solve(&comm, &b).unwrap();
            (comm.stats(), model)
        });
        for (r, (s, model)) in out.iter().enumerate() {
            assert_eq!(counters(s), counters(&model[r]), "rank {r}, n={n} p={p}");
        }
    }
}

#[test]
fn look_ahead_and_in_place_move_the_same_words_and_give_the_same_factor() {
    for (n, p, grid, algorithm) in [
        (
            41,
            8,
            Some(TileGrid { px: 2, py: 2, c: 2 }),
            CholeskyAlgorithm::Confchox,
        ),
        (
            45,
            13,
            Some(TileGrid { px: 3, py: 2, c: 2 }),
            CholeskyAlgorithm::Confchox,
        ),
        (50, 2, None, CholeskyAlgorithm::Confchox),
        (39, 6, None, CholeskyAlgorithm::TwoD),
    ] {
        let run = |look_ahead: LookAhead| {
            let pr = params(algorithm, grid, 4).with_look_ahead(look_ahead);
            run_ranks(p, |comm| {
                let plan = CholeskyPlan::new(n, p, &pr).unwrap();
                let a = OwnedDistMatrix::from_fn(
                    &comm,
                    plan.native_layout().unwrap(),
                    hpd::<f64>(n, Uplo::Lower, 8),
                )
                .unwrap();
                comm.barrier().unwrap();
                comm.reset_stats();
                let copied = cholesky(&comm, &a, Uplo::Lower, &pr).unwrap();
                let copy_stats = counters(&comm.stats());
                comm.reset_stats();
                let fac = cholesky_in_place(&comm, a, Uplo::Lower, &pr).unwrap();
                let stats = counters(&comm.stats());
                assert_eq!(stats, copy_stats, "the native layout moves nothing more");
                let l = fac.lower(&comm).unwrap().into_local();
                assert_eq!(l, copied.lower(&comm).unwrap().into_local());
                (stats, l)
            })
        };
        let (ahead, in_turn) = (run(LookAhead::On), run(LookAhead::Off));
        for (r, (a, b)) in ahead.iter().zip(&in_turn).enumerate() {
            assert_eq!(a.0, b.0, "rank {r}: n={n} p={p} {algorithm}");
            let same =
                a.1.iter()
                    .zip(&b.1)
                    .all(|(x, y)| x.to_bits() == y.to_bits());
            assert!(same && a.1.len() == b.1.len(), "factor, rank {r}");
        }
    }
}

#[test]
fn a_plan_for_another_order_or_more_ranks_is_an_error_on_every_rank() {
    let pr = CholeskyParams::default();
    let plan = CholeskyPlan::new(20, 4, &pr).unwrap();
    let out = run_ranks(3, |comm| {
        let layout = BlockCyclic::new(20, 20, 4, 4, 1, 3).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, layout, hpd::<f64>(20, Uplo::Lower, 1)).unwrap();
        let more = redblue_cholesky::cholesky_with(
            &comm,
            &plan,
            &a,
            Uplo::Lower,
            redblue_kernels::Par::Seq,
        )
        .err()
        .map(|e| e.to_string());
        let other = CholeskyPlan::new(21, 3, &pr).unwrap();
        let order = redblue_cholesky::cholesky_with(
            &comm,
            &other,
            &a,
            Uplo::Lower,
            redblue_kernels::Par::Seq,
        )
        .err()
        .map(|e| e.to_string());
        (more, order)
    });
    for o in &out {
        assert_eq!(o, &out[0]);
    }
    assert!(out[0].0.as_ref().unwrap().contains("ranks"));
    assert!(out[0].1.as_ref().unwrap().contains("order 21"));
}

/// A plan on the layout the matrix is in ([`CholeskyPlan::for_layout`], ScaLAPACK's `1 × Q`
/// and `P × 1` grids, either triangle): the matrix moves only within each rank, so every
/// rank's counters are the factorisation's exact model, and the factor is right. Layouts that
/// cannot be a plan's own, and a grid whose plan moves too much, keep the default plan.
#[test]
fn planned_on_the_callers_grid_the_matrix_moves_only_within_ranks() {
    let (n, nb) = (150, 16);
    let default = CholeskyParams::default();
    for (pr, pc, uplo) in [
        (1, 2, Uplo::Lower),
        (1, 3, Uplo::Upper),
        (3, 1, Uplo::Lower),
        (2, 1, Uplo::Upper),
    ] {
        let p = pr * pc;
        let layout = BlockCyclicSubmatrix::from(BlockCyclic::new(n, n, nb, nb, pr, pc).unwrap());
        let plan = CholeskyPlan::for_layout(n, p, &default, &layout, uplo).unwrap();
        let (px, py) = if uplo == Uplo::Lower {
            (pr, pc)
        } else {
            (pc, pr)
        };
        assert_eq!((plan.grid, plan.block), (TileGrid { px, py, c: 1 }, nb));
        let f = hpd::<c64>(n, uplo, 5);
        let out = run_ranks(p, |comm| {
            let a = OwnedDistMatrix::from_fn(&comm, layout.clone(), &f).unwrap();
            comm.barrier().unwrap();
            comm.reset_stats();
            let fac = cholesky_with(&comm, &plan, &a, uplo, Par::Seq).unwrap();
            let stats = comm.stats();
            let factor = fac.factor(&comm).unwrap().gather(&comm, 0).unwrap();
            (stats, factor.zip(a.gather(&comm, 0).unwrap()))
        });
        let model = plan.rank_costs(p, 16);
        for (r, (s, _)) in out.iter().enumerate() {
            assert_eq!(
                counters(s),
                counters(&model[r]),
                "{pr}x{pc} {uplo:?} rank {r}"
            );
        }
        let (factor, a) = out[0].1.clone().expect("rank 0 gathers");
        assert!(
            residual(&a, &factor, n, uplo) < THRESHOLD,
            "{pr}x{pc} {uplo:?}"
        );
    }
    let kept = |layout: BlockCyclicSubmatrix, p: usize, params: &CholeskyParams| {
        let plan = CholeskyPlan::for_layout(n, p, params, &layout, Uplo::Lower).unwrap();
        assert_eq!(plan, CholeskyPlan::new(n, p, params).unwrap(), "{layout:?}");
    };
    let bc = |mb, nb, pr, pc| BlockCyclic::new(n, n, mb, nb, pr, pc).unwrap();
    // Blocks not square; the first block on another grid column; a submatrix off the origin;
    // a row-major 2 × 2 grid for the lower triangle; a grid fixed by the options.
    kept(BlockCyclicSubmatrix::from(bc(16, 8, 1, 2)), 2, &default);
    kept(
        BlockCyclicSubmatrix::from(bc(16, 16, 1, 2).with_source(0, 1).unwrap()),
        2,
        &default,
    );
    let big = BlockCyclic::new(n + 16, n + 16, 16, 16, 1, 2).unwrap();
    let llds = (0..2).map(|r| big.lld(r)).collect();
    kept(
        BlockCyclicSubmatrix::new(big, 16..16 + n, 16..16 + n, llds).unwrap(),
        2,
        &default,
    );
    kept(BlockCyclicSubmatrix::from(bc(16, 16, 2, 2)), 4, &default);
    let fixed = default.clone().with_grid(TileGrid { px: 2, py: 1, c: 1 });
    kept(BlockCyclicSubmatrix::from(bc(16, 16, 1, 2)), 2, &fixed);
    // One grid row of 16 ranks: every rank would receive all of L10.
    let wide = BlockCyclicSubmatrix::from(BlockCyclic::new(4096, 4096, 64, 64, 1, 16).unwrap());
    let plan = CholeskyPlan::for_layout(4096, 16, &default, &wide, Uplo::Lower).unwrap();
    assert_eq!(plan, CholeskyPlan::new(4096, 16, &default).unwrap());
}

/// `cholesky_overwrite` of `a` (lower triangle given, NaN above) on `layout`: the error, and
/// every local element after it — its lower triangle, its upper, the padding.
fn overwritten<T: KernelScalar, L: redblue_dist::Layout>(
    comm: &impl Communicator,
    plan: &CholeskyPlan,
    layout: L,
    a: impl Fn(usize, usize) -> T + Sync,
) -> (Result<(), CholeskyError>, OwnedDistMatrix<T, L>) {
    let mut m = OwnedDistMatrix::from_fn(comm, layout, a).unwrap();
    let out = cholesky_overwrite(comm, plan, &mut m, Uplo::Lower, Par::Seq);
    (out, m)
}

#[test]
fn overwriting_factors_in_the_callers_array_exactly_when_it_is_the_native_one() {
    for (n, p, grid, v) in [
        (50, 2, None, 8),
        (45, 4, Some(TileGrid { px: 2, py: 2, c: 1 }), 4),
        (40, 3, Some(TileGrid { px: 3, py: 1, c: 1 }), 8),
        (37, 4, Some(TileGrid { px: 1, py: 2, c: 2 }), 4),
    ] {
        let pr = params(CholeskyAlgorithm::Confchox, grid, v);
        run_ranks(p, |comm| {
            let plan = CholeskyPlan::new(n, p, &pr).unwrap();
            let native = plan.native_layout().unwrap();
            let spd = hpd::<c64>(n, Uplo::Lower, 5);
            let given = OwnedDistMatrix::from_fn(&comm, native.clone(), &spd).unwrap();
            let l = cholesky_with(&comm, &plan, &given, Uplo::Lower, Par::Seq)
                .unwrap()
                .lower(&comm)
                .unwrap();
            // The native arrays, and the same matrix in arrays with room between columns.
            let llds = vec![n + 3; redblue_dist::Layout::nranks(&native)];
            let roomy = BlockCyclicSubmatrix::new(native.clone(), 0..n, 0..n, llds).unwrap();
            let (done, m) = overwritten(&comm, &plan, native.clone(), &spd);
            done.unwrap();
            let (done, r) = overwritten(&comm, &plan, roomy.clone(), &spd);
            done.unwrap();
            let mut expect = Vec::new();
            l.for_each_local(|i, j, x| expect.push((i, j, x)));
            let mut k = 0;
            m.for_each_local(|i, j, x| {
                let lower = expect[k];
                k += 1;
                assert_eq!((i, j), (lower.0, lower.1));
                if i >= j {
                    assert_eq!(x, lower.2, "in place: L at ({i}, {j}), n={n} p={p}");
                } else {
                    assert!(x.re.is_nan(), "in place: the upper triangle kept");
                }
            });
            r.for_each_local(|i, j, x| {
                if i < j {
                    assert!(x.re.is_nan(), "copied: the upper triangle kept");
                }
            });
            let mut rl = OwnedDistMatrix::zeros(&comm, native.clone()).unwrap();
            redblue_dist::transform(
                &comm,
                c64::ONE,
                &r,
                redblue_core::Op::NoTrans,
                c64::ZERO,
                &mut rl,
            )
            .unwrap();
            let mut k = 0;
            rl.for_each_local(|i, j, x| {
                if i >= j {
                    assert_eq!(x, expect[k].2, "copied: L at ({i}, {j})");
                }
                k += 1;
            });

            // Not positive definite at a column of the second panel or later: in place, the
            // columns before it are factored (the first diagonal entry is its square root);
            // copied, nothing is written.
            let bad = 2 * v + 1;
            let not_pd = |i: usize, j: usize| {
                if i == bad && j == bad {
                    -c64::ONE
                } else {
                    spd(i, j)
                }
            };
            let is_bad = |done: &Result<(), CholeskyError>| matches!(done, Err(CholeskyError::NotPositiveDefinite { column }) if *column == bad);
            let (done, m) = overwritten::<c64, _>(&comm, &plan, native.clone(), not_pd);
            assert!(is_bad(&done), "{done:?}");
            // (With layers, the native arrays too are copied.)
            let in_place = plan.grid.c == 1;
            if let Some(x) = entry_00(&m) {
                let want = if in_place {
                    (2.0 * n as f64).sqrt()
                } else {
                    2.0 * n as f64
                };
                assert!((x - want).abs() < 1e-12, "in place {in_place}: {x}");
            }
            let (done, m) = overwritten::<c64, _>(&comm, &plan, roomy.clone(), not_pd);
            assert!(is_bad(&done), "{done:?}");
            if let Some(x) = entry_00(&m) {
                assert_eq!(x, 2.0 * n as f64, "copied: untouched");
            }
        });
    }
}

/// The real part of element `(0, 0)` of `m`, on the rank that holds it.
fn entry_00<L: redblue_dist::Layout>(m: &OwnedDistMatrix<c64, L>) -> Option<f64> {
    let mut out = None;
    m.for_each_local(|i, j, x| {
        if (i, j) == (0, 0) {
            out = Some(x.re);
        }
    });
    out
}

/// A factor left in the caller's array (ScaLAPACK's `p?potrf` does so; NaN above the diagonal)
/// is read where it is when the array is the tiles' own (the lower triangle on a plan made for
/// its layout): no copy, the array untouched, and the solve equal to the factorisation's own.
/// The upper triangle through the same plan is copied, and solves alike.
#[test]
fn a_factor_in_the_callers_array_is_read_where_it_is() {
    let (n, nb, k) = (150, 16, 3);
    for (pr, pc, uplo, in_place) in [
        (1, 2, Uplo::Lower, true),
        (3, 1, Uplo::Lower, true),
        (1, 1, Uplo::Lower, true),
        (1, 2, Uplo::Upper, true),
        (3, 1, Uplo::Upper, true),
    ] {
        let p = pr * pc;
        let layout = BlockCyclicSubmatrix::from(BlockCyclic::new(n, n, nb, nb, pr, pc).unwrap());
        let plan =
            CholeskyPlan::for_layout(n, p, &CholeskyParams::default(), &layout, uplo).unwrap();
        let f = hpd::<c64>(n, uplo, 5);
        let out = run_ranks(p, |comm| {
            let a = OwnedDistMatrix::from_fn(&comm, layout.clone(), &f).unwrap();
            let b =
                OwnedDistMatrix::<c64, _>::random(&comm, GridLayout::even(n, k, p, 1).unwrap(), 9)
                    .unwrap();
            let fac = cholesky_with(&comm, &plan, &a, uplo, Par::Seq).unwrap();
            // The caller's array: the factor over its triangle, NaN in the other.
            let mut stored = a.clone();
            fac.write_factor(&comm, &mut stored).unwrap();
            let before: Vec<u64> = stored
                .local()
                .iter()
                .map(|z| z.re.to_bits() ^ z.im.to_bits())
                .collect();
            // Solved with on the layout's own grid, whichever the triangle.
            let params = CholeskyParams::default();
            let on_grid = CholeskyPlan::for_layout(n, p, &params, &layout, Uplo::Lower).unwrap();
            let again =
                CholeskyFactor::from_factor(&comm, &on_grid, &stored, uplo, Par::Seq).unwrap();
            let (x, y) = (
                fac.solve(&comm, &b).unwrap(),
                again.solve(&comm, &b).unwrap(),
            );
            let mut diff = x.clone();
            diff.axpy(&comm, -c64::one(), &y).unwrap();
            let mut close = diff.norm_max(&comm).unwrap() <= 1e-12 * x.norm_max(&comm).unwrap();
            // Both triangles of the factor read back from either.
            for (mine, its) in [
                (fac.lower(&comm).unwrap(), again.lower(&comm).unwrap()),
                (fac.upper(&comm).unwrap(), again.upper(&comm).unwrap()),
            ] {
                let mut diff = mine.clone();
                diff.axpy(&comm, -c64::one(), &its).unwrap();
                close &= diff.norm_max(&comm).unwrap() <= 1e-14 * mine.norm_max(&comm).unwrap();
            }
            let read_in_place = again.in_caller_array();
            drop(again);
            let after: Vec<u64> = stored
                .local()
                .iter()
                .map(|z| z.re.to_bits() ^ z.im.to_bits())
                .collect();
            (close, read_in_place, before == after)
        });
        for (r, o) in out.iter().enumerate() {
            assert_eq!(*o, (true, in_place, true), "{pr}x{pc} {uplo:?} rank {r}");
        }
    }
}

/// A factor given in the caller's array as either triangle (`U` solved with as it is, read
/// transposed) moves what `solve_costs` says, word for word and message for message.
#[test]
fn a_callers_factor_of_either_triangle_moves_what_its_model_says() {
    let (n, nb, k) = (90, 8, 3);
    for (pr, pc) in [(1, 2), (3, 1), (2, 2)] {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let p = pr * pc;
            let layout =
                BlockCyclicSubmatrix::from(BlockCyclic::new(n, n, nb, nb, pr, pc).unwrap());
            let params = CholeskyParams::default();
            let plan = CholeskyPlan::for_layout(n, p, &params, &layout, uplo).unwrap();
            let on_grid = CholeskyPlan::for_layout(n, p, &params, &layout, Uplo::Lower).unwrap();
            let f = hpd::<c64>(n, uplo, 6);
            let out = run_ranks(p, |comm| {
                let a = OwnedDistMatrix::from_fn(&comm, layout.clone(), &f).unwrap();
                let fac = cholesky_with(&comm, &plan, &a, uplo, Par::Seq).unwrap();
                let mut stored = a.clone();
                fac.write_factor(&comm, &mut stored).unwrap();
                let again =
                    CholeskyFactor::from_factor(&comm, &on_grid, &stored, uplo, Par::Seq).unwrap();
                let b = OwnedDistMatrix::<c64, _>::random(&comm, again.rhs_layout(k).unwrap(), 2)
                    .unwrap();
                let model = again.solve_costs(p, k, 16);
                comm.barrier().unwrap();
                comm.reset_stats();
                again.solve(&comm, &b).unwrap();
                (comm.stats(), model)
            });
            for (r, (s, model)) in out.iter().enumerate() {
                assert_eq!(
                    counters(s),
                    counters(&model[r]),
                    "{pr}x{pc} {uplo:?} rank {r}"
                );
            }
            assert!(out.iter().any(|(s, _)| s.words_sent > 0));
        }
    }
}

/// On one grid row with at most `v` right-hand sides the solves run as a ring (the back
/// substitution sends each step's solved rows to the holders of the row block's columns): on
/// `1 × 3` and `1 × 2 × 2` (with an idle rank), either triangle stored, the words equal the
/// model and the solution solves the system.
#[test]
fn ring_solves_on_one_grid_row_move_their_model_and_solve() {
    for (n, k, p, grid) in [
        (37, 3, 3, TileGrid { px: 1, py: 3, c: 1 }),
        (30, 4, 5, TileGrid { px: 1, py: 2, c: 2 }),
    ] {
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let pr = params(CholeskyAlgorithm::Confchox, Some(grid), 4);
            let out = run_ranks(p, |comm| {
                let la = BlockCyclic::new(n, n, 3, 3, 1, p).unwrap();
                let a = OwnedDistMatrix::from_fn(&comm, la, hpd::<f64>(n, uplo, 5)).unwrap();
                let fac = cholesky(&comm, &a, uplo, &pr).unwrap();
                let lb = fac.rhs_layout(k).unwrap();
                let b = OwnedDistMatrix::<f64, _>::random(&comm, lb, 6).unwrap();
                fac.solve(&comm, &b).unwrap();
                let model = fac.solve_costs(p, k, 8);
                comm.barrier().unwrap();
                comm.reset_stats();
                let x = fac.solve(&comm, &b).unwrap();
                let stats = comm.stats();
                let full = OwnedDistMatrix::from_fn(
                    &comm,
                    BlockCyclic::new(n, n, 3, 3, 1, p).unwrap(),
                    hpd::<f64>(n, Uplo::Lower, 5),
                )
                .unwrap();
                (
                    stats,
                    model,
                    full.gather(&comm, 0).unwrap(),
                    b.gather(&comm, 0).unwrap(),
                    x.gather(&comm, 0).unwrap(),
                )
            });
            for (r, (s, model, ..)) in out.iter().enumerate() {
                assert_eq!(
                    counters(s),
                    counters(&model[r]),
                    "rank {r}, {uplo:?}, p={p}"
                );
            }
            let (_, _, Some(a), Some(b), Some(x)) = &out[0] else {
                unreachable!("rank 0 gathers")
            };
            // `a` holds the lower triangle of the matrix: A = its symmetric completion.
            let at = |i: usize, j: usize| if i >= j { a[i + j * n] } else { a[j + i * n] };
            for j in 0..k {
                for i in 0..n {
                    let ax: f64 = (0..n).map(|l| at(i, l) * x[l + j * n]).sum();
                    assert!(
                        (ax - b[i + j * n]).abs() < 1e-9,
                        "{uplo:?} p={p} ({i}, {j})"
                    );
                }
            }
        }
    }
}
