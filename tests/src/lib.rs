//! Check suites shared by every backend: each `check_*` function takes a communicator, runs one
//! family of operations on it and asserts the results (panicking on failure).
//!
//! `cargo test` runs them on threads-as-ranks (`tests/*.rs`); `cargo xtask test-mpi` runs the
//! same functions under `mpirun` through the `mpi-suite` program.

pub mod comm_checks;
pub mod dist_checks;
pub mod faults;
pub mod residual_checks;

/// Ranks counts the threaded suites run at.
pub const RANK_COUNTS: [usize; 7] = [1, 2, 3, 4, 5, 7, 8];
