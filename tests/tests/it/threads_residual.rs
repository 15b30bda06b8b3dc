//! The residual checks' own checks on threads-as-ranks and on one process.

use redblue_comm::{run_ranks, SelfComm};
use redblue_tests::{residual_checks, RANK_COUNTS};

#[test]
fn residuals_on_threads() {
    for p in RANK_COUNTS {
        run_ranks(p, |comm| residual_checks::check_all(&comm));
    }
}

#[test]
fn residuals_on_self() {
    residual_checks::check_all(&SelfComm::new());
}
