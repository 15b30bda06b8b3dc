//! Randomised inputs, valid and not: layouts built from random parameters, shapes that may not
//! match, random ops, scalars, strategies and option sets thrown at `transform`, `multiply`, LU,
//! Cholesky and the planners, on 1 to 5 ranks as threads. Every case either works — checked
//! against a one-rank reference — or returns an error, and then the same error on every rank;
//! never a panic, an abort or a hang (`ThreadComm` turns a wait no rank will end into
//! `Deadlock`, which would fail the case).

use proptest::prelude::*;
use redblue::check::{cholesky_residual, lu_residual, CHOLESKY_THRESHOLD, LU_THRESHOLD};
use redblue::cholesky::{cholesky, CholeskyAlgorithm, CholeskyParams, CholeskyPlan};
use redblue::gemm::{multiply, Algorithm, GemmParams, GemmPlan, GemmShape, PlanOptions, Schedule};
use redblue::kernels::Par;
use redblue::lu::{lu, LuAlgorithm, LuParams, LuPlan};
use redblue::pipeline::TileGrid;
use redblue_comm::{run_ranks, ThreadComm};
use redblue_core::{random, Op, Uplo};
use redblue_dist::{
    transform, AnyLayout, BlockCyclic, DistError, GridLayout, GridOrder, Layout, OnRank,
    OwnedDistMatrix,
};

/// A layout from raw parameters, which may well be invalid.
#[derive(Clone, Debug)]
enum LayoutSpec {
    BlockCyclic {
        mb: usize,
        nb: usize,
        pr: usize,
        pc: usize,
        src: (usize, usize),
        row_major: bool,
    },
    Grid {
        row_cuts: Vec<usize>,
        col_cuts: Vec<usize>,
        owners: Vec<usize>,
        nranks: usize,
    },
    Even {
        pr: usize,
        pc: usize,
    },
    OnRank {
        root: usize,
        nranks: usize,
    },
}

/// Mostly `valid`, sometimes anything in `0..6` (zeros and too many ranks included).
fn mostly(valid: std::ops::RangeInclusive<usize>) -> impl Strategy<Value = usize> {
    prop_oneof![9 => valid, 1 => 0..6usize]
}

/// A layout for `p` ranks: mostly valid and within `p` ranks, sometimes not.
fn layout_spec(p: usize) -> impl Strategy<Value = LayoutSpec> {
    let grid = move || {
        mostly(1..=p).prop_flat_map(move |pr| {
            let pc_max = (p / pr.max(1)).max(1);
            (Just(pr), mostly(1..=pc_max))
        })
    };
    prop_oneof![
        4 => (
            mostly(1..=6),
            mostly(1..=6),
            grid(),
            prop_oneof![5 => Just((0, 0)), 1 => (0..3usize, 0..3usize)],
            any::<bool>()
        )
            .prop_map(|(mb, nb, (pr, pc), src, row_major)| LayoutSpec::BlockCyclic {
                mb,
                nb,
                pr,
                pc,
                src,
                row_major
            }),
        3 => (
            prop::collection::vec(0..30usize, 0..4),
            prop::collection::vec(0..30usize, 0..4),
            prop::collection::vec(prop_oneof![30 => 0..p, 1 => Just(p)], 1..20),
            mostly(p..=p)
        )
            .prop_map(|(row_cuts, col_cuts, owners, nranks)| LayoutSpec::Grid {
                row_cuts,
                col_cuts,
                owners,
                nranks
            }),
        2 => grid().prop_map(|(pr, pc)| LayoutSpec::Even { pr, pc }),
        1 => (0..p + 1, mostly(1..=p)).prop_map(|(root, nranks)| LayoutSpec::OnRank { root, nranks }),
    ]
}

/// Splits of `0..len` at the given cuts (sorted, deduplicated, inside the range).
fn splits(len: usize, cuts: &[usize]) -> Vec<usize> {
    let mut s: Vec<usize> = cuts.iter().map(|&c| c.min(len)).collect();
    s.extend([0, len]);
    s.sort_unstable();
    s.dedup();
    s
}

impl LayoutSpec {
    /// The layout of an `m × n` matrix, or the constructor's refusal.
    fn build(&self, m: usize, n: usize) -> Result<AnyLayout, DistError> {
        Ok(match self {
            LayoutSpec::BlockCyclic {
                mb,
                nb,
                pr,
                pc,
                src,
                row_major,
            } => {
                let bc = BlockCyclic::new(m, n, *mb, *nb, *pr, *pc)?.with_source(src.0, src.1)?;
                let order = if *row_major {
                    GridOrder::RowMajor
                } else {
                    GridOrder::ColMajor
                };
                AnyLayout::BlockCyclic(bc.with_order(order))
            }
            LayoutSpec::Grid {
                row_cuts,
                col_cuts,
                owners,
                nranks,
            } => {
                let (rs, cs) = (splits(m, row_cuts), splits(n, col_cuts));
                let blocks = (rs.len() - 1) * (cs.len() - 1);
                let owners: Vec<usize> = (0..blocks).map(|b| owners[b % owners.len()]).collect();
                AnyLayout::Grid(GridLayout::new(rs, cs, owners, *nranks)?)
            }
            LayoutSpec::Even { pr, pc } => AnyLayout::Grid(GridLayout::even(m, n, *pr, *pc)?),
            LayoutSpec::OnRank { root, nranks } => {
                AnyLayout::OnRank(OnRank::new(m, n, *root, *nranks)?)
            }
        })
    }
}

/// Every rank's outcome, which must agree: all `Ok` (rank 0's value returned) or all the same
/// error.
fn agreed<T: std::fmt::Debug>(case: &str, outs: Vec<Result<T, String>>) -> Result<T, String> {
    let first_err = outs.iter().find_map(|o| o.as_ref().err().cloned());
    if let Some(e) = first_err {
        // An agreed error is an input error; a wait no rank ends is a defect even when every
        // rank reports it.
        assert!(!e.contains("deadlock"), "{case}: {e}");
        for (r, o) in outs.iter().enumerate() {
            assert_eq!(o.as_ref().err(), Some(&e), "{case}: rank {r} differs");
        }
        return Err(e);
    }
    Ok(outs.into_iter().next().expect("a rank").expect("checked"))
}

/// Element `(i, j)` of test matrix `seed`.
fn entry(i: usize, j: usize, seed: u64) -> f64 {
    random::uniform(i, j, seed)
}

/// `op(A)[i, j]` of the `seed` matrix.
fn op_entry(op: Op, i: usize, j: usize, seed: u64) -> f64 {
    match op {
        Op::NoTrans => entry(i, j, seed),
        _ => entry(j, i, seed),
    }
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![Just(Op::NoTrans), Just(Op::Trans), Just(Op::ConjTrans)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// `B = beta·B + alpha·op(A)` between random layouts, shapes that may not match.
    #[test]
    fn transform_works_or_fails_alike(
        (p, la, lb) in (1..=5usize).prop_flat_map(|p| (Just(p), layout_spec(p), layout_spec(p))),
        (m, n) in (0..12usize, 0..12usize),
        shape_b in prop_oneof![3 => Just(None), 1 => (0..12usize, 0..12usize).prop_map(Some)],
        op in op_strategy(),
        (alpha, beta) in (-2i32..3, -2i32..3),
    ) {
        let (bm, bn) = shape_b.unwrap_or_else(|| op.apply_shape((m, n)));
        let case = format!("{la:?} {lb:?} {op:?} p={p}");
        let out = agreed(&case, run_ranks(p, |comm: ThreadComm| -> Result<Option<Vec<f64>>, String> {
            let a = OwnedDistMatrix::from_fn(&comm, la.build(m, n).map_err(|e| e.to_string())?, |i, j| entry(i, j, 1))
                .map_err(|e| e.to_string())?;
            let mut b = OwnedDistMatrix::from_fn(&comm, lb.build(bm, bn).map_err(|e| e.to_string())?, |i, j| entry(i, j, 2))
                .map_err(|e| e.to_string())?;
            transform(&comm, alpha as f64, &a, op, beta as f64, &mut b).map_err(|e| e.to_string())?;
            b.gather(&comm, 0).map_err(|e| e.to_string())
        }));
        if let Ok(Some(b)) = out {
            prop_assert_eq!(op.apply_shape((m, n)), (bm, bn));
            for j in 0..bn {
                for i in 0..bm {
                    let want = beta as f64 * entry(i, j, 2) + alpha as f64 * op_entry(op, i, j, 1);
                    prop_assert!((b[i + j * bm] - want).abs() < 1e-12, "{case}: ({i}, {j})");
                }
            }
        }
    }

    /// `C = alpha·op(A)·op(B) + beta·C` with a schedule planned for these or other operands
    /// (or a random strategy), in random layouts.
    #[test]
    fn multiply_works_or_fails_alike(
        (p, (la, lb, lc)) in (1..=5usize).prop_flat_map(|p| (Just(p), (layout_spec(p), layout_spec(p), layout_spec(p)))),
        (m, n, k) in (0..10usize, 0..10usize, 0..10usize),
        planned_for in prop_oneof![3 => Just(None), 1 => (1..12usize, 1..12usize, 1..12usize, 1..7usize).prop_map(Some)],
        schedule_kind in prop_oneof![
            Just("cosma".to_string()), Just("summa".to_string()), Just("2.5d".to_string()),
            Just("cannon".to_string()), "[ps][mnk][0-4](,[ps][mnk][0-4]){0,2}"
        ],
        (op_a, op_b) in (op_strategy(), op_strategy()),
        (alpha, beta) in (-2i32..3, -2i32..3),
    ) {
        let schedule: Result<Schedule, String> = match schedule_kind.parse::<Algorithm>() {
            Ok(algorithm) => {
                let (pm, pn, pk, pp) = planned_for.unwrap_or((m, n, k, p));
                algorithm
                    .schedule(GemmShape::new(pm, pn, pk), pp, &PlanOptions::default())
                    .map_err(|e| e.to_string())
            }
            Err(_) => schedule_kind.parse().map(Schedule::Strategy).map_err(|e: redblue::gemm::StrategyError| e.to_string()),
        };
        let Ok(schedule) = schedule else { return Ok(()) };
        let case = format!("{schedule} {la:?} {lb:?} {lc:?} {op_a:?} {op_b:?} p={p}");
        let (sa, sb) = (op_a.apply_shape((m, k)), op_b.apply_shape((k, n)));
        let out = agreed(&case, run_ranks(p, |comm: ThreadComm| -> Result<Option<Vec<f64>>, String> {
            let text = |e: DistError| e.to_string();
            let a = OwnedDistMatrix::from_fn(&comm, la.build(sa.0, sa.1).map_err(text)?, |i, j| entry(i, j, 1)).map_err(text)?;
            let b = OwnedDistMatrix::from_fn(&comm, lb.build(sb.0, sb.1).map_err(text)?, |i, j| entry(i, j, 2)).map_err(text)?;
            let mut c = OwnedDistMatrix::from_fn(&comm, lc.build(m, n).map_err(text)?, |i, j| entry(i, j, 3)).map_err(text)?;
            multiply(&comm, alpha as f64, &a, op_a, &b, op_b, beta as f64, &mut c, &schedule, Par::Seq)
                .map_err(|e| e.to_string())?;
            c.gather(&comm, 0).map_err(text)
        }));
        if let Ok(Some(c)) = out {
            for j in 0..n {
                for i in 0..m {
                    let product: f64 = (0..k).map(|l| op_entry(op_a, i, l, 1) * op_entry(op_b, l, j, 2)).sum();
                    let want = alpha as f64 * product + beta as f64 * entry(i, j, 3);
                    prop_assert!((c[i + j * m] - want).abs() < 1e-12 * (k + 1) as f64, "{case}: ({i}, {j})");
                }
            }
        }
    }
}

/// Random factorisation options: algorithm, tile width, layers, grid, idle fraction.
fn factor_options(
) -> impl Strategy<Value = (bool, Option<usize>, Option<usize>, Option<TileGrid>, f64)> {
    (
        any::<bool>(),
        prop::option::of(0..9usize),
        prop::option::of(0..4usize),
        prop::option::of(
            (0..4usize, 0..4usize, 0..3usize).prop_map(|(px, py, c)| TileGrid { px, py, c }),
        ),
        prop_oneof![4 => Just(0.03), 1 => -0.5..1.5f64],
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 500, ..ProptestConfig::default() })]

    /// LU of a random (maybe non-square) matrix in a random layout with random options.
    #[test]
    fn lu_works_or_fails_alike(
        (p, layout) in (1..=5usize).prop_flat_map(|p| (Just(p), layout_spec(p))),
        (m, n) in prop_oneof![3 => (0..20usize).prop_map(|n| (n, n)), 1 => (0..20usize, 0..20usize)],
        (two_d, block, layers, grid, idle) in factor_options(),
    ) {
        let mut params = LuParams::default()
            .with_algorithm(if two_d { LuAlgorithm::TwoD } else { LuAlgorithm::Conflux })
            .with_max_idle_fraction(idle);
        if let Some(v) = block { params = params.with_block(v) }
        if let Some(c) = layers { params = params.with_layers(c) }
        if let Some(g) = grid { params = params.with_grid(g) }
        let case = format!("{m}x{n} {layout:?} {params:?} p={p}");
        let out = agreed(&case, run_ranks(p, |comm: ThreadComm| -> Result<f64, String> {
            let a = OwnedDistMatrix::from_fn(&comm, layout.build(m, n).map_err(|e| e.to_string())?, |i, j| entry(i, j, 4))
                .map_err(|e| e.to_string())?;
            let factors = lu(&comm, &a, &params).map_err(|e| e.to_string())?;
            lu_residual(&comm, &a, &factors).map_err(|e| e.to_string())
        }));
        if let Ok(residual) = out {
            prop_assert!(residual < LU_THRESHOLD, "{case}: residual {residual}");
        }
    }

    /// Cholesky of a random Hermitian positive definite matrix (or a non-square one) in a
    /// random layout with random options.
    #[test]
    fn cholesky_works_or_fails_alike(
        (p, layout) in (1..=5usize).prop_flat_map(|p| (Just(p), layout_spec(p))),
        (m, n) in prop_oneof![3 => (0..20usize).prop_map(|n| (n, n)), 1 => (0..20usize, 0..20usize)],
        upper in any::<bool>(),
        (two_d, block, layers, grid, idle) in factor_options(),
    ) {
        let mut params = CholeskyParams::default()
            .with_algorithm(if two_d { CholeskyAlgorithm::TwoD } else { CholeskyAlgorithm::Confchox })
            .with_max_idle_fraction(idle);
        if let Some(v) = block { params = params.with_block(v) }
        if let Some(c) = layers { params = params.with_layers(c) }
        if let Some(g) = grid { params = params.with_grid(g) }
        let uplo = if upper { Uplo::Upper } else { Uplo::Lower };
        let case = format!("{m}x{n} {layout:?} {uplo:?} {params:?} p={p}");
        let out = agreed(&case, run_ranks(p, |comm: ThreadComm| -> Result<f64, String> {
            let spd = |i: usize, j: usize| if i == j { 2.0 * n as f64 } else { entry(i.max(j), i.min(j), 5) };
            let a = OwnedDistMatrix::from_fn(&comm, layout.build(m, n).map_err(|e| e.to_string())?, spd)
                .map_err(|e| e.to_string())?;
            let factor = cholesky(&comm, &a, uplo, &params).map_err(|e| e.to_string())?;
            cholesky_residual(&comm, &a, uplo, &factor).map_err(|e| e.to_string())
        }));
        if let Ok(residual) = out {
            prop_assert!(residual < CHOLESKY_THRESHOLD, "{case}: residual {residual}");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// The planners, pure: any order, rank count and option set plans or is refused; a plan
    /// fits its ranks.
    #[test]
    fn planners_plan_or_refuse(
        n in prop_oneof![8 => 0..3000usize, 1 => 0..50_000usize, 1 => Just(usize::MAX / 2)],
        p in prop_oneof![8 => 0..70usize, 1 => 0..1000usize, 1 => Just(usize::MAX / 2)],
        (two_d, block, layers, grid, idle) in factor_options(),
        memory in prop::option::of(0..10_000_000u64),
        (gm, gn, gk) in (0..3000usize, 0..3000usize, 0..3000usize),
        ops in (op_strategy(), op_strategy()),
        algorithm in prop_oneof![Just(Algorithm::Cosma), Just(Algorithm::Summa), Just(Algorithm::TwoAndHalfD), Just(Algorithm::Cannon)],
    ) {
        let mut lu_params = LuParams::default()
            .with_algorithm(if two_d { LuAlgorithm::TwoD } else { LuAlgorithm::Conflux })
            .with_max_idle_fraction(idle);
        let mut chol_params = CholeskyParams::default()
            .with_algorithm(if two_d { CholeskyAlgorithm::TwoD } else { CholeskyAlgorithm::Confchox })
            .with_max_idle_fraction(idle);
        if let Some(v) = block { lu_params = lu_params.with_block(v); chol_params = chol_params.with_block(v) }
        if let Some(c) = layers { lu_params = lu_params.with_layers(c); chol_params = chol_params.with_layers(c) }
        if let Some(g) = grid { lu_params = lu_params.with_grid(g); chol_params = chol_params.with_grid(g) }
        if let Some(w) = memory { lu_params = lu_params.with_memory_words(w); chol_params = chol_params.with_memory_words(w) }
        if let Ok(plan) = LuPlan::new(n, p, &lu_params) {
            prop_assert!(plan.grid.ranks() <= p && plan.block >= plan.grid.c && plan.grid.c >= 1);
        }
        if let Ok(plan) = CholeskyPlan::new(n, p, &chol_params) {
            prop_assert!(plan.grid.ranks() <= p && plan.block >= plan.grid.c && plan.grid.c >= 1);
        }
        let mut gemm_params = GemmParams::default().with_algorithm(algorithm).with_max_idle_fraction(idle);
        if let Some(w) = memory { gemm_params = gemm_params.with_memory_words(w) }
        if let Ok(plan) = GemmPlan::new(GemmShape::new(gm, gn, gk), ops, p, &gemm_params) {
            prop_assert!(plan.ranks() <= p.max(1));
            if let Some(w) = memory {
                prop_assert!(plan.memory_bytes(1) <= w, "{} words of {w}", plan.memory_bytes(1));
            }
        }
    }
}

#[test]
fn a_layout_larger_than_the_communicator_is_refused_everywhere() {
    let out = run_ranks(2, |comm: ThreadComm| {
        let layout = GridLayout::even(8, 8, 2, 2).unwrap();
        OwnedDistMatrix::<f64, _>::zeros(&comm, layout)
            .map(|_| ())
            .map_err(|e| e.to_string())
    });
    assert!(out.iter().all(|o| o.is_err()));
    assert_eq!(out[0], out[1]);
    assert!(GridLayout::even(8, 8, 2, 2).unwrap().nranks() > 2);
}
