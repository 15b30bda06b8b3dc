//! The check suites' integration tests in one binary: as a binary each, every file compiled and
//! linked the same generic code again.
//! `tests/threads_faults.rs` is a binary of its own: it changes state the whole process shares.

mod random_inputs;
mod threads_comm;
mod threads_dist;
mod threads_non_finite;
mod threads_residual;
