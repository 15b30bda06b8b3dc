//! Distributed-matrix and transform check suites on threads-as-ranks and on one process.

use redblue_comm::{run_ranks, SelfComm};
use redblue_tests::{dist_checks, RANK_COUNTS};

#[test]
fn transforms_on_threads() {
    for p in RANK_COUNTS {
        run_ranks(p, |comm| dist_checks::check_all(&comm));
    }
}

#[test]
fn transforms_on_self() {
    dist_checks::check_all(&SelfComm::new());
}
