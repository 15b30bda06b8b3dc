//! The 2.5D tile pipeline of redblue's factorisations (COnfLUX LU now, COnfCHOX Cholesky
//! next; seed 000, digest §1.4–1.5): everything about where data lives and moves that does not
//! depend on the algorithm's arithmetic.
//!
//! - [`TileGrid`]: the `[Px, Py, c]` grid; [`plan_grid`] chooses it and the tile width with the
//!   algorithm's cost function ([`choose_width`]), [`choose_grid`] by the leading order
//!   ([`leading_words`]).
//! - [`Geometry`]: the grid, the tile width and the order — who holds which tile, which ranks
//!   reduce and factor step `t`'s panel; [`Tiles`]: one layer's tiles on one rank as a local
//!   array, with the local row reordering a factorisation with row masking needs.
//! - [`steps`]: the shared steps as move plans and as exact counts from sizes.
//!
//! All of it is pure: no communicator, no data; the algorithm crates run the plans with
//! [`redblue_dist::exchange`] and the communicator's tree broadcast.

pub mod factors;
pub mod gather;
mod geometry;
mod grid;
pub mod replay;
pub mod reserve;
pub mod run;
pub mod solve;
pub mod steps;

pub use factors::TileFactors;
pub use gather::Shares;
pub use geometry::{gather_runs, mark_positions, part, scatter_runs, Geometry, Tiles};
pub use grid::{
    choose_grid, choose_width, estimated_words, leading_words, plan_grid, widths, GridError,
    TileGrid, PREFERRED_WIDTH,
};
pub use replay::{factor_costs, planned_words, StepModel, StepSizes};
pub use reserve::{reserve, Reserved};
pub use run::{
    run, Diagonal, LookAhead, Panel, PanelBlock, Run, RunOptions, Scan, State, Step, Stopped,
    TileAlgorithm,
};
