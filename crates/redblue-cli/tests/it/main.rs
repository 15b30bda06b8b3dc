//! The miniapp's integration tests in one binary: as a binary each, every file compiled and
//! linked the same generic code again.

mod cli;
mod ooc_resume;
mod random_args;
