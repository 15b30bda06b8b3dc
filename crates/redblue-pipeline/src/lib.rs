//! The 2.5D tile pipeline of redblue's factorisations (COnfLUX LU and COnfCHOX Cholesky, with
//! their 2D baselines; seed 000, digest §1.4–1.5): everything about where data lives and moves
//! that does not depend on the algorithm's arithmetic, and the step loop the algorithms plug
//! their arithmetic into.
//!
//! Planning, pure (no communicator, no data):
//! - [`TileGrid`]: the `[Px, Py, c]` grid; [`plan_grid`] chooses it and the tile width with the
//!   algorithm's cost function ([`choose_width`]), [`choose_grid`] by the leading order
//!   ([`leading_words`]).
//! - [`Geometry`]: the grid, the tile width and the order — who holds which tile, which ranks
//!   reduce and factor step `t`'s panel; [`Tiles`]: one layer's tiles on one rank as a local
//!   array, with the local row reordering a factorisation with row masking needs.
//! - [`steps`]: the shared steps as move plans and as exact counts from sizes; [`replay`]: the
//!   exact per-rank model of a whole factorisation ([`factor_costs`], [`planned_words`]).
//!
//! Execution, on a communicator:
//! - [`run()`]: the step loop, driven by the algorithm's hooks ([`TileAlgorithm`]), with
//!   look-ahead; [`reserve()`]: the large buffers allocated and agreed on before data moves.
//! - [`TileFactors`]: the factors where the loop left them, gathered to layer 0 when first
//!   used ([`gather`]), the distributed solves ([`solve`]), the factors in any layout.

pub mod factors;
pub mod gather;
mod geometry;
mod grid;
pub mod replay;
pub mod reserve;
mod ring;
pub mod run;
pub mod solve;
pub mod steps;
mod storage;

pub use factors::TileFactors;
pub use gather::Shares;
pub use geometry::{
    copy_spans, gather_runs, grid_of_layout, mark_positions, part, scatter_runs, spans_between,
    Geometry, RowPositions, RowsByGridRow, Span, Tiles,
};
pub use grid::{
    choose_grid, choose_width, estimated_words, leading_words, plan_grid, widths, GridError,
    TileGrid, PREFERRED_WIDTH, PREFERRED_WIDTH_2D, WIDTHS,
};
pub use replay::{factor_costs, planned_words, StepModel, StepSizes};
pub use reserve::{reserve, Reserved};
pub use run::{
    run, Diagonal, LookAhead, Panel, PanelBlock, Run, RunOptions, Scan, State, Step, Stopped,
    TileAlgorithm,
};
pub use storage::Storage;
