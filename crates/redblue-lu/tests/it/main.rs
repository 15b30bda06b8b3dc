//! LU's integration tests in one binary: as a binary each, every file compiled and
//! linked the same generic code again.

mod lu;
mod plan;
mod rect;
mod two_five_d;
