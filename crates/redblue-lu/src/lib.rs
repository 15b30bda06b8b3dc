//! COnfLUX: LU factorisation `A = P·L·U` with tournament pivoting on a `[Px, Py, c]` grid
//! (seed 000, digest §1.4), moving `N³/(P√M)` words per rank where 2D LU moves `N²/√P`.
//!
//! This first part is the planning layer, pure functions of `N`, `P` and the memory: the
//! lower bound ([`lu_lower_bound`]), the cost models COnfLUX is compared with
//! ([`two_d_words`], [`candmc_words`], [`capital_words`]), COnfLUX's per-step model on any grid
//! ([`conflux_words`]) and the choice of the grid ([`choose_grid`]). The factorisation itself
//! builds on them (issue 5).

mod grid;
mod model;

pub use grid::{choose_grid, ConfluxGrid, GridError};
pub use model::{
    candmc_words, capital_words, conflux_leading_words, conflux_words, lu_lower_bound, two_d_words,
};
