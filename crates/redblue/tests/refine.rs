//! The refinement example of the "Using redblue" chapter, run as a test: its residuals on 1 to 4
//! ranks as threads and on one process, and the words of its calls against their models.

#[allow(dead_code)]
#[path = "../examples/refine.rs"]
mod refine;

use redblue::check::LU_THRESHOLD;
use redblue::prelude::*;
use refine::{refine, Placement, Report};

fn run(p: usize, n: usize, nrhs: usize, placement: Placement) -> Vec<Report> {
    run_ranks(p, |comm| refine(&comm, n, nrhs, placement))
        .into_iter()
        .collect::<Result<_, _>>()
        .expect("the solver runs")
}

fn words(report: &Report, call: &str) -> Vec<u64> {
    report
        .calls
        .iter()
        .filter(|(name, _)| *name == call)
        .map(|(_, stats)| stats.words_sent)
        .collect()
}

#[test]
fn the_residuals_are_under_scalapack_s_threshold_on_every_rank_count() {
    for placement in [Placement::BlockCyclic, Placement::Planned] {
        for p in 1..=4 {
            for report in run(p, 150, 3, placement) {
                assert_eq!(report.residuals.len(), 3);
                assert!(
                    report.residuals.iter().all(|&r| r < LU_THRESHOLD),
                    "{placement:?} on {p} ranks: {:?}",
                    report.residuals
                );
            }
        }
        let one = refine(&SelfComm::new(), 150, 3, placement).unwrap();
        assert!(one.residuals.iter().all(|&r| r < LU_THRESHOLD));
        assert!(one.calls.iter().all(|(_, s)| s.words_sent == 0));
    }
}

#[test]
fn each_residual_product_moves_exactly_what_its_plan_said() {
    for placement in [Placement::BlockCyclic, Placement::Planned] {
        for p in [2, 3, 4] {
            for report in run(p, 200, 4, placement) {
                let moved = words(&report, "R = B - A·X");
                assert_eq!(moved.len(), 2);
                for w in moved {
                    assert_eq!(w, report.product_model, "{placement:?} on {p} ranks");
                }
                // X = X + D in one layout: nothing moves.
                assert!(words(&report, "X = X + D").iter().all(|&w| w == 0));
            }
        }
    }
}

#[test]
fn the_planned_layouts_move_less_than_block_cyclic_in_every_refinement() {
    for p in [2, 4] {
        let planned = run(p, 200, 4, Placement::Planned);
        let block_cyclic = run(p, 200, 4, Placement::BlockCyclic);
        let most = |reports: &[Report], call| {
            reports
                .iter()
                .flat_map(|r| words(r, call))
                .max()
                .unwrap_or(0)
        };
        let (fast, slow) = (
            most(&planned, "R = B - A·X"),
            most(&block_cyclic, "R = B - A·X"),
        );
        assert!(fast * 10 < slow, "{p} ranks: {fast} against {slow}");
    }
}

#[test]
fn a_solve_with_few_right_hand_sides_moves_far_less_than_the_factorisation() {
    // 2 × 2 grid: the panels would cross grid columns; the products are four columns wide.
    for report in run(4, 400, 4, Placement::Planned) {
        let lu = words(&report, "lu")[0];
        for solve in words(&report, "solve A·D = R") {
            assert!(solve * 10 < lu, "solve {solve} against lu {lu}");
        }
    }
}
