//! COnfLUX: LU factorisation `A = P·L·U` with tournament pivoting on a `[Px, Py, c]` grid
//! (seed 000, digest §1.4), moving `N³/(P√M)` words per rank where 2D LU moves `N²/√P`, and the
//! 2D partial-pivoting baseline on the same pipeline.
//!
//! [`lu`] factors a matrix in any layout; [`LuFactors`] holds the factors and the permutation
//! and solves `A·X = B` for many right-hand sides ([`LuFactors::solve`]). The planning layer is
//! pure: the lower bound ([`lu_lower_bound`]), the models COnfLUX is compared with
//! ([`two_d_words`], [`candmc_words`], [`capital_words`]), the leading-order model on any grid
//! ([`conflux_words`]), the exact per-rank counts of a run ([`lu_rank_costs`]) and the exact
//! average ([`lu_average_words`]), and the choice of the grid and tile width ([`lu_plan`], on
//! [`plan_grid`] with the exact volume as its cost; [`choose_grid`] by the leading order).

mod api;
mod error;
mod factor;
mod model;
mod pivot;
mod plan;
mod replay;

pub use api::{
    lu, lu_in_place, lu_in_place_with, lu_with, LuAlgorithm, LuFactors, LuParams, DEFAULT_BLOCK,
};
pub use error::LuError;
pub use model::{
    candmc_words, capital_words, conflux_leading_words, conflux_words, lu_lower_bound, two_d_words,
    two_five_d_messages, two_five_d_words,
};
pub use plan::{
    diagonal_pivots, lu_average_words, lu_plan, lu_rank_costs, replay_is_cheap, LuPlan,
    EXACT_REPLAY_LIMIT,
};
pub use redblue_pipeline::{
    choose_grid, choose_width, estimated_words, plan_grid, GridError, LookAhead, TileGrid,
};
