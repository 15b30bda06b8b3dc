//! Multiplication's integration tests in one binary: as a binary each, every file compiled and
//! linked the same generic code again.

mod cosma;
mod placed;
mod plan;
