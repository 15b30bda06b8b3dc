//! Cholesky's integration tests in one binary: as a binary each, every file compiled and
//! linked the same generic code again.

mod cholesky;
mod plan;
mod sequential;
