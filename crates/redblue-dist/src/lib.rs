//! Distributed matrices: [`Layout`]s (pure index maths), the [`DistMatrix`] trait with its owned
//! implementation, and [`transform`], which moves a matrix between any two layouts.

mod error;
pub mod layout;
mod matrix;
mod transform;

pub use error::DistError;
pub use layout::numroc;
pub use layout::{
    AnyLayout, BlockCyclic, GridLayout, GridOrder, Layout, LocalBlock, OnRank, RowPermuted,
};
pub use matrix::{DistMatrix, DistMatrixMut, OwnedDistMatrix};
pub use transform::{transform, transform_volume, TransformPlan};
