//! The kernels' integration tests in one binary: as a binary each, every file compiled and
//! linked the same generic code again.
//! `tests/system.rs` is a binary of its own: it changes state the whole process shares.

#[macro_use]
#[path = "../common/mod.rs"]
mod common;

mod gemm;
mod gemmt;
mod getrf;
mod norms;
mod potrf;
mod triangle;
mod trsm;
