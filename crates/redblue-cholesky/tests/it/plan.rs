//! The planner's targets, on the pure planner (no ranks run): COnfCHOX's default plan moves
//! well below the 2D baseline at scale, by the exact per-rank model, and no plan claims to
//! move less than the lower bound.

use redblue_cholesky::{cholesky_lower_bound, CholeskyAlgorithm, CholeskyParams, CholeskyPlan};

/// The default plan and its exact largest words sent and received by a rank.
fn planned(n: usize, p: usize, algorithm: CholeskyAlgorithm) -> (CholeskyPlan, u64, u64) {
    let plan = CholeskyPlan::new(n, p, &CholeskyParams::default().with_algorithm(algorithm))
        .expect("a plan");
    let costs = plan.rank_costs(p, 8);
    let sent = costs.iter().map(|s| s.words_sent).max().unwrap();
    let received = costs.iter().map(|s| s.words_received).max().unwrap();
    (plan, sent, received)
}

#[test]
fn confchox_moves_at_most_four_fifths_of_two_d_at_512_and_4096_ranks() {
    let n = 16384;
    for p in [512, 4096] {
        let (chox, sent, received) = planned(n, p, CholeskyAlgorithm::Confchox);
        let (two_d, sent_2d, received_2d) = planned(n, p, CholeskyAlgorithm::TwoD);
        assert!(chox.block >= 32 && chox.block % chox.grid.c == 0, "P={p}");
        for (what, words, baseline) in
            [("sent", sent, sent_2d), ("received", received, received_2d)]
        {
            assert!(
                words as f64 <= 0.8 * baseline as f64,
                "P={p}: COnfCHOX {} v={} {words} words {what}, 2D {} v={} {baseline}",
                chox.grid,
                chox.block,
                two_d.grid,
                two_d.block
            );
        }
    }
}

#[test]
fn no_plan_moves_less_than_the_lower_bound() {
    // The bound with M the words a rank of the plan holds (its share of the c copies):
    // `N³/(3P√M) + N²/(2P) + N/P`, against the busiest rank's words received.
    for (n, p) in [(4096, 16), (16384, 64), (16384, 512), (16384, 4096)] {
        for algorithm in [CholeskyAlgorithm::Confchox, CholeskyAlgorithm::TwoD] {
            let (plan, _, received) = planned(n, p, algorithm);
            let used = plan.grid.ranks() as f64;
            let memory = plan.grid.c as f64 * (n * n) as f64 / used;
            let bound = cholesky_lower_bound(n as f64, used, memory);
            assert!(
                received as f64 >= bound,
                "N={n} P={p} {algorithm} {}: {received} < {bound}",
                plan.grid
            );
        }
    }
}

#[test]
fn confchox_never_moves_more_than_the_two_d_baseline() {
    // Every P from 2 to 96, then a spread up to 4096; the busiest rank, sent and received.
    let mut ranks: Vec<usize> = (2..=96).collect();
    let mut p = 96.0f64;
    while p < 4096.0 {
        p *= 1.25;
        ranks.push((p as usize).min(4096));
    }
    ranks.extend([128, 512, 729, 1000]);
    let n = 16384;
    for p in ranks {
        let (chox, sent, received) = planned(n, p, CholeskyAlgorithm::Confchox);
        let (two_d, sent_2d, received_2d) = planned(n, p, CholeskyAlgorithm::TwoD);
        assert!(
            sent <= sent_2d && received <= received_2d,
            "P={p}: COnfCHOX {} v={} {sent}/{received} words sent/received, 2D {} v={} \
             {sent_2d}/{received_2d}",
            chox.grid,
            chox.block,
            two_d.grid,
            two_d.block
        );
    }
}

/// A solve with a factor already in a caller's array plans on the array's grid and blocks
/// whenever they can be a plan's own (`CholeskyPlan::on_layout`), where a factorisation's plan
/// (`CholeskyPlan::for_layout`) may prefer another grid and move the whole matrix there.
#[test]
fn a_solves_plan_keeps_the_callers_grid_where_a_factorisations_would_move() {
    use redblue_cholesky::{CholeskyParams, CholeskyPlan};
    use redblue_core::Uplo;
    use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix};
    let params = CholeskyParams::default();
    let tall = BlockCyclicSubmatrix::from(BlockCyclic::new(4096, 4096, 64, 64, 8, 1).unwrap());
    let factoring = CholeskyPlan::for_layout(4096, 8, &params, &tall, Uplo::Lower).unwrap();
    let solving = CholeskyPlan::on_layout(4096, 8, &params, &tall, Uplo::Lower).unwrap();
    assert_ne!(factoring.grid, solving.grid);
    assert_eq!(
        (solving.grid.to_string(), solving.block),
        ("8x1x1".to_string(), 64)
    );
    let native = solving.native_layout().unwrap();
    assert!(redblue_dist::same_local_arrays(&tall, &native));
}
