//! The out-of-core LU's integration tests in one binary: as a binary each, every file compiled and
//! linked the same generic code again.

mod disk;
mod lu;
mod parallel;
mod resume;
