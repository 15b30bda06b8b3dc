//! Cholesky factorisation `A = L·Lᴴ` of Hermitian (symmetric for reals) positive definite
//! matrices: COnfCHOX (2.5D, seed 000 §1.5) and the 2D baseline (ScaLAPACK's `PxPOTRF`) on the
//! shared tile pipeline of `redblue-pipeline`, and seed 002's sequential communication-optimal
//! algorithms with the two-level memory simulator that counts what they move
//! ([`sequential`]).
//!
//! [`cholesky`] factors a matrix in any layout, reading only the named triangle;
//! [`CholeskyFactor`] holds `L` and solves `A·X = B` for many right-hand sides
//! ([`CholeskyFactor::solve`]). The planning is pure: [`CholeskyPlan`] tells the grid, the tile
//! width, the native layout, the exact per-rank words and messages and the memory per rank
//! before anything is allocated; [`cholesky_lower_bound`] and [`two_d_cholesky_words`] are the
//! bound and the ScaLAPACK model it is compared with.

mod api;
mod error;
mod factor;
mod model;
mod plan;
pub mod sequential;

pub use api::{
    cholesky, cholesky_in_place, cholesky_in_place_with, cholesky_overwrite, cholesky_with,
    CholeskyFactor,
};
pub use error::CholeskyError;
pub use model::{cholesky_lower_bound, two_d_cholesky_words};
pub use plan::{cholesky_plan, CholeskyAlgorithm, CholeskyParams, CholeskyPlan};
pub use redblue_pipeline::{LookAhead, TileGrid};
