//! Multiplications of operands where they already are: `placed_rank_costs` equals what every
//! rank's communicator counts for any layouts, ops, shapes and strategies, and
//! `GemmPlan::for_layouts` chooses a strategy that moves no more than the layout-blind plan,
//! and tells exactly what its run moves.

use redblue_comm::{run_ranks, Communicator};
use redblue_core::{c64, Op};
use redblue_dist::{
    AnyLayout, BlockCyclic, DistMatrix, GridLayout, GridOrder, OnRank, OwnedDistMatrix,
};
use redblue_gemm::{
    gemm_with, owner_ordered, placed_rank_costs, plan_strategy, GemmParams, GemmPlan, GemmShape,
    PlanOptions, Strategy,
};
use redblue_kernels::Par;

/// A layout of an `m × n` matrix on `p` ranks, picked by `kind`.
fn layout(kind: usize, (m, n): (usize, usize), p: usize) -> AnyLayout {
    let g = redblue_comm::GridShape2d::near_square(p);
    match kind % 6 {
        0 => BlockCyclic::new(m, n, 3, 2, g.rows, g.cols)
            .unwrap()
            .with_source(g.rows - 1, g.cols / 2)
            .unwrap()
            .into(),
        1 => BlockCyclic::new(m, n, 5, 7, g.cols, g.rows)
            .unwrap()
            .with_order(GridOrder::ColMajor)
            .into(),
        2 => GridLayout::even(m, n, g.rows, g.cols).unwrap().into(),
        3 => GridLayout::even(m, n, 1, p).unwrap().into(),
        4 => GridLayout::even(m, n, p, 1).unwrap().into(),
        _ => OnRank::new(m, n, p - 1, p).unwrap().into(),
    }
}

fn stored(op: Op, (r, c): (usize, usize)) -> (usize, usize) {
    op.apply_shape((r, c))
}

#[test]
fn placed_costs_equal_the_measured_counters_for_any_layouts() {
    let ops_list = [
        (Op::NoTrans, Op::NoTrans),
        (Op::Trans, Op::NoTrans),
        (Op::NoTrans, Op::ConjTrans),
    ];
    let mut cases = 0;
    for p in 1..=5 {
        for (case, shape) in [
            GemmShape::new(31, 17, 23),
            GemmShape::new(40, 3, 50),
            GemmShape::new(6, 44, 9),
        ]
        .into_iter()
        .enumerate()
        {
            let mut strategies = vec![plan_strategy(shape, p, &PlanOptions::default()).unwrap()];
            for text in ["pk2", "pm2,sk3", "sk2,pn2,pm2"] {
                let s: Strategy = text.parse().unwrap();
                if s.ranks() <= p {
                    strategies.push(s);
                }
            }
            for (i, s) in strategies.iter().enumerate() {
                let ops = ops_list[(case + i) % 3];
                let kinds = [(case + i) % 6, (case + 2 * i + 1) % 6, (p + i) % 6];
                let la = layout(kinds[0], stored(ops.0, (shape.m, shape.k)), p);
                let lb = layout(kinds[1], stored(ops.1, (shape.k, shape.n)), p);
                let lc = layout(kinds[2], (shape.m, shape.n), p);
                let predicted = placed_rank_costs(s, shape, ops, &la, &lb, &lc, p, 8);
                let measured = run_ranks(p, |comm| {
                    let a = OwnedDistMatrix::<f64, _>::random(&comm, la.clone(), 1).unwrap();
                    let b = OwnedDistMatrix::<f64, _>::random(&comm, lb.clone(), 2).unwrap();
                    let mut c = OwnedDistMatrix::<f64, _>::random(&comm, lc.clone(), 3).unwrap();
                    comm.reset_stats();
                    redblue_gemm::cosma(&comm, 1.5, &a, ops.0, &b, ops.1, 0.5, &mut c, s, Par::Seq)
                        .unwrap();
                    comm.stats()
                });
                assert_eq!(measured, predicted, "P={p} {shape:?} {s} {ops:?} {kinds:?}");
                cases += 1;
            }
        }
    }
    assert!(cases > 40);
}

#[test]
fn the_layout_aware_plan_moves_no_more_than_the_blind_one_and_exactly_what_it_says() {
    let params = GemmParams::default();
    for p in [2, 3, 4, 6] {
        for (kind, shape) in [
            (3, GemmShape::new(120, 6, 120)),
            (4, GemmShape::new(90, 60, 30)),
        ] {
            let ops = (Op::NoTrans, Op::NoTrans);
            let la = layout(kind, (shape.m, shape.k), p);
            let lb = layout(kind + 1, (shape.k, shape.n), p);
            let lc = layout(4, (shape.m, shape.n), p);
            let blind = GemmPlan::new(shape, ops, p, &params).unwrap();
            let redblue_gemm::Schedule::Strategy(s) = blind.schedule().clone() else {
                unreachable!("COSMA plans strategies")
            };
            let blind_costs = placed_rank_costs(&s, shape, ops, &la, &lb, &lc, p, 8);
            let aware = GemmPlan::for_layouts(shape, ops, p, &params, &la, &lb, &lc).unwrap();
            let most = |c: &[redblue_comm::CommStats]| {
                c.iter()
                    .map(|s| s.words_sent.max(s.words_received))
                    .max()
                    .unwrap()
            };
            assert!(
                most(&aware.rank_costs(8)) <= most(&blind_costs),
                "P={p} {shape:?}"
            );
            let measured = run_ranks(p, |comm| {
                let a = OwnedDistMatrix::<f64, _>::random(&comm, la.clone(), 1).unwrap();
                let b = OwnedDistMatrix::<f64, _>::random(&comm, lb.clone(), 2).unwrap();
                let mut c = OwnedDistMatrix::<f64, _>::zeros(&comm, lc.clone()).unwrap();
                comm.reset_stats();
                gemm_with(&comm, &aware, 1.0, &a, &b, 0.0, &mut c, Par::Seq).unwrap();
                comm.stats()
            });
            assert_eq!(measured, aware.rank_costs(8), "P={p} {shape:?}");
        }
    }
}

/// Block-cyclic operands seen in their owners' buffer order (`owner_ordered`): `for_layouts`
/// plans on them when that moves less (on ScaLAPACK-like grids it does: fewer words than the
/// best plan on the layouts as they are, the same as planning on the relabelled layouts), and
/// `gemm_with` then gives the same `C` as the layout-blind plan and moves exactly what the
/// plan says.
#[test]
fn block_cyclic_operands_are_planned_in_their_owners_order() {
    let params = GemmParams::default();
    for (p, grid, nb) in [
        (2, (1, 2), 8),
        (4, (2, 2), 8),
        (6, (2, 3), 5),
        (3, (3, 1), 16),
    ] {
        for ops in [(Op::NoTrans, Op::NoTrans), (Op::Trans, Op::ConjTrans)] {
            let shape = GemmShape::new(96, 80, 112);
            let bc = |(r, c): (usize, usize)| {
                let l = BlockCyclic::new(r, c, nb, nb, grid.0, grid.1).unwrap();
                l.with_source(grid.0 - 1, 0).unwrap()
            };
            let la = bc(stored(ops.0, (shape.m, shape.k)));
            let lb = bc(stored(ops.1, (shape.k, shape.n)));
            let lc = bc((shape.m, shape.n));
            let at = format!("P={p} {grid:?} nb={nb} {ops:?}");
            let plan = GemmPlan::for_layouts(shape, ops, p, &params, &la, &lb, &lc).unwrap();
            assert!(plan.to_string().ends_with("owners' order"), "{at}: {plan}");
            let (ra, rb, rc) = owner_ordered(&la, ops.0, &lb, ops.1, &lc).unwrap();
            let on_relabelled = GemmPlan::for_layouts(shape, ops, p, &params, &ra, &rb, &rc);
            assert_eq!(
                plan.rank_costs(16),
                on_relabelled.unwrap().rank_costs(16),
                "{at}"
            );
            // Fewer words than any of COSMA's strategies from the layouts as they are.
            let most = |costs: &[redblue_comm::CommStats]| {
                costs.iter().map(|s| s.words_received).max().unwrap()
            };
            let blind = GemmPlan::new(shape, ops, p, &params).unwrap();
            let redblue_gemm::Schedule::Strategy(s) = blind.schedule().clone() else {
                unreachable!("COSMA plans strategies")
            };
            let as_they_are = placed_rank_costs(&s, shape, ops, &la, &lb, &lc, p, 16);
            assert!(most(&plan.rank_costs(16)) < most(&as_they_are), "{at}");
            let results = run_ranks(p, |comm| {
                let a = OwnedDistMatrix::<c64, _>::random(&comm, la.clone(), 1).unwrap();
                let b = OwnedDistMatrix::<c64, _>::random(&comm, lb.clone(), 2).unwrap();
                let c0 = OwnedDistMatrix::<c64, _>::random(&comm, lc.clone(), 3).unwrap();
                let (alpha, beta) = (c64::new(1.5, -0.5), c64::new(0.5, 0.25));
                let mut expected = c0.clone();
                gemm_with(&comm, &blind, alpha, &a, &b, beta, &mut expected, Par::Seq).unwrap();
                let mut c = c0.clone();
                comm.reset_stats();
                gemm_with(&comm, &plan, alpha, &a, &b, beta, &mut c, Par::Seq).unwrap();
                let stats = comm.stats();
                let worst = c
                    .local()
                    .iter()
                    .zip(expected.local())
                    .map(|(x, y)| (x - y).norm())
                    .fold(0.0, f64::max);
                (stats, worst)
            });
            for (r, (stats, worst)) in results.iter().enumerate() {
                assert!(*worst <= 1e-12, "{at}: rank {r} differs by {worst}");
                assert_eq!(*stats, plan.rank_costs(16)[r], "{at}: rank {r}");
            }
        }
    }
}

#[test]
fn a_layout_of_the_wrong_shape_or_ranks_is_refused() {
    let (shape, ops, params) = (
        GemmShape::new(10, 8, 6),
        (Op::NoTrans, Op::NoTrans),
        GemmParams::default(),
    );
    let good = |m, n| GridLayout::even(m, n, 1, 2).unwrap();
    let swapped = GemmPlan::for_layouts(
        shape,
        ops,
        2,
        &params,
        &good(6, 10),
        &good(6, 8),
        &good(10, 8),
    );
    assert!(swapped.unwrap_err().to_string().contains("layout of A"));
    let wide = GridLayout::even(10, 8, 1, 4).unwrap();
    let too_many = GemmPlan::for_layouts(shape, ops, 2, &params, &good(10, 6), &good(6, 8), &wide);
    assert!(too_many.unwrap_err().to_string().contains("layout of C"));
}
