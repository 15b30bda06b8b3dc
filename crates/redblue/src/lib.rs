//! redblue: communication-optimal distributed dense linear algebra.
//!
//! This facade re-exports the crate family: [`core`] (scalars and flags), [`comm`] (the
//! `Communicator` trait and its backends), [`dist`] (layouts, distributed matrices and
//! `transform`), [`kernels`] (rank-local dense kernels), [`gemm`] (COSMA matrix
//! multiplication and its cost model), [`pipeline`] (the 2.5D tile pipeline of the
//! factorisations: grids, tiles, step plans and their counts), [`lu`] (COnfLUX and 2D LU,
//! their cost models), [`cholesky`] (COnfCHOX and 2D Cholesky, seed 002's sequential
//! algorithms) and [`ooc`] (out-of-core matrices and LU, seed 003). Its own: [`Error`], which
//! every crate's error converts into with `?`, and [`check`], the normalised residuals of
//! products, factorisations and solves.
//! `use redblue::prelude::*` brings the everyday names into scope.
//!
//! # Examples
//! A program written once against `Communicator` runs on threads-as-ranks, on one process, and
//! (feature `mpi`) under `mpirun`:
//! ```
//! use redblue::prelude::*;
//!
//! fn program<C: Communicator>(comm: &C) -> f64 {
//!     let p = comm.size();
//!     let a = OwnedDistMatrix::from_fn(comm, BlockCyclic::new(6, 6, 2, 2, p, 1).unwrap(), |i, j| {
//!         (i * 6 + j) as f64
//!     })
//!     .unwrap();
//!     let mut b = OwnedDistMatrix::zeros(comm, GridLayout::even(6, 6, 1, p).unwrap()).unwrap();
//!     transform(comm, 1.0, &a, Op::Trans, 0.0, &mut b).unwrap();
//!     b.norm_max(comm).unwrap()
//! }
//!
//! assert_eq!(run_ranks(3, |comm| program(&comm)), vec![35.0; 3]);
//! assert_eq!(program(&SelfComm::new()), 35.0);
//! ```

pub mod check;
mod error;

pub use error::Error;
pub use redblue_cholesky as cholesky;
pub use redblue_comm as comm;
pub use redblue_core as core;
pub use redblue_dist as dist;
pub use redblue_gemm as gemm;
pub use redblue_kernels as kernels;
pub use redblue_lu as lu;
pub use redblue_ooc as ooc;
pub use redblue_pipeline as pipeline;

/// The everyday names: scalars, flags, communicators, layouts, matrices, `transform`, and each
/// algorithm's entry points in the plan convention (the call, its options, its plan, its
/// result) with `Par`. [`Error`] stays outside (it would shadow other `Error`s):
/// write `redblue::Error`.
pub mod prelude {
    pub use redblue_cholesky::{
        cholesky, cholesky_in_place, cholesky_in_place_with, cholesky_with, CholeskyAlgorithm,
        CholeskyError, CholeskyFactor, CholeskyParams, CholeskyPlan,
    };
    pub use redblue_comm::{
        run_ranks, CommError, CommStats, Communicator, CommunicatorExt, Grid2d, Grid3d, GridOrder,
        GridShape2d, ReduceOp, Request, SelfComm, ThreadComm,
    };
    #[cfg(feature = "mpi")]
    pub use redblue_comm::{MpiComm, MpiUniverse};
    pub use redblue_core::{c32, c64, Diag, Op, RealScalar, Scalar, Side, Uplo};
    pub use redblue_dist::{
        transform, transform_volume, AnyLayout, BlockCyclic, DistError, DistMatrix, DistMatrixMut,
        GridLayout, Layout, OnRank, OwnedDistMatrix, TransformPlan,
    };
    pub use redblue_gemm::{
        gemm_with, multiply, Algorithm, GemmError, GemmParams, GemmPlan, GemmShape, Schedule,
    };
    pub use redblue_kernels::Par;
    pub use redblue_lu::{
        lu, lu_in_place, lu_in_place_with, lu_with, LookAhead, LuAlgorithm, LuError, LuFactors,
        LuParams, LuPlan, TileGrid,
    };
}

/// The README's code blocks, compiled and run as doc tests so that they cannot rot.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
