//! Seed 002's sequential Cholesky algorithms on a simulated two-level memory.
