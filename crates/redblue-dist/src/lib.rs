//! Distributed matrices: [`Layout`]s (pure index maths), the [`DistMatrix`] trait with its owned
//! implementation, [`transform`], which moves a matrix between any two layouts, and the
//! [`exchange`] engine, which moves the pieces an algorithm's steps plan.

mod error;
pub mod exchange;
pub mod layout;
mod matrix;
pub mod memory;
mod transform;

pub use error::DistError;
pub use layout::{numroc, same_local_arrays, same_owners};
pub use layout::{
    owner_col_order, owner_row_order, AnyLayout, BlockCyclic, BlockCyclicSubmatrix, GridLayout,
    GridOrder, Layout, LocalBlock, OnRank, Relabeled, RowPermuted,
};
pub use matrix::{
    BorrowedDistMatrix, BorrowedDistMatrixMut, DistMatrix, DistMatrixMut, OwnedDistMatrix,
};
pub use transform::{transform, transform_triangle, transform_volume, TransformPlan};
