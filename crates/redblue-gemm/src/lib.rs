//! COSMA: communication-optimal distributed matrix multiplication `C = alpha·op(A)·op(B) +
//! beta·C` for redblue, with the baselines it is compared with and its cost model.
//!
//! The plan convention of redblue's algorithm crates: [`GemmPlan::new`] turns the shape, the
//! ops, the ranks and the [`GemmParams`] into a plan that tells the native layouts, every
//! rank's exact words and messages and the memory it needs, before anything is allocated;
//! [`gemm_with`] runs it (communicator, plan, data, `Par`), checking first that the operands
//! are those it was planned for. [`multiply`] runs a bare [`Schedule`].
//!
//! Underneath is the planning layer, pure functions of the problem: the splitting
//! [`Strategy`] (printable and parseable, `pm2,sk2,pn2`), what each rank computes under it
//! ([`rank_domains`], [`grid_coords`]), the words each rank moves and the memory it needs
//! ([`cosma_cost`]), the choice of a strategy ([`plan_strategy`]: grid fitting with idle
//! ranks, sequential steps under a memory limit), the exact words from operands in any layouts
//! ([`placed_rank_costs`], which [`GemmPlan::for_layouts`] chooses by), the paper's formula ([`paper_cosma_words`]) and the lower bounds
//! ([`sequential_lower_bound`], [`parallel_lower_bound`]).

mod algorithm;
mod cannon;
mod cosma;
mod error;
mod exchange;
mod fit;
mod gemm_plan;
pub mod memory;
mod model;
mod placed;
mod plan;
mod strategy;

pub use algorithm::{
    carma_strategy, multiply, two_and_half_d_grid, Algorithm, Schedule, SUMMA_PANEL,
};
pub use cannon::{cannon, cannon_grid, cannon_layouts, cannon_rank_cost};
pub use cosma::{cosma, native_layouts};
pub use error::GemmError;
pub use fit::{
    check_parts, check_strategy, fit_grid, parallel_steps, plan_strategy, PlanError, PlanOptions,
};
pub use gemm_plan::{gemm_with, GemmParams, GemmPlan};
pub use model::{
    cosma_cost, cosma_rank_cost, paper_cosma_words, parallel_lower_bound, sequential_lower_bound,
    CostSummary, RankCost,
};
pub use placed::{owner_ordered, placed_rank_costs, OwnerOrdered};
pub use plan::{c_block_ids, grid_coords, last_updates, part, rank_domains, Domain, GemmShape};
pub use strategy::{Dim, Step, StepKind, Strategy, StrategyError};
