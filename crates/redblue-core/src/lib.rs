//! Shared vocabulary of redblue: the [`Scalar`] trait, the [`Datum`] trait for values that may
//! cross rank boundaries, reduction operators and BLAS-style flags ([`Op`], [`Uplo`], ...).
//!
//! Everything above this crate is generic over [`Scalar`]: one code path serves `f32`, `f64`,
//! `Complex<f32>` and `Complex<f64>`.

mod datum;
mod flags;
pub mod pool;
pub mod random;
mod scalar;

pub use datum::{Datum, DatumKind, ReduceOp};
pub use flags::{Diag, Op, Side, Uplo};
pub use num_complex::{Complex, Complex32 as c32, Complex64 as c64};
pub use scalar::{RealScalar, Scalar};

pub(crate) mod sealed {
    /// Seals [`crate::Scalar`] and [`crate::Datum`]: the set of types is closed so that every
    /// backend (MPI datatypes, BLAS) can map all of them.
    pub trait Sealed {}
}
