//! [`KernelScalar`]: the redblue scalars as faer sees them.

use faer::traits::ComplexField;
use redblue_core::{Complex, Scalar};

/// A [`Scalar`] that faer's kernels accept: exactly `f32`, `f64`, `c32` and `c64`.
///
/// Why a trait rather than a `match` on the type: faer's kernels are generic over its own
/// `ComplexField` and already have native code for all four types (selected by associated
/// constants, so the choice costs nothing at run time). Bounding on `Scalar + ComplexField`
/// lets one generic function serve all four scalars with no `unsafe` casts and no per-type
/// copies of the kernel. Naming the pair once keeps faer out of the signatures above this
/// crate: callers write `T: KernelScalar`.
///
/// The trait is sealed and implemented for the four types only, so adding a scalar to
/// `redblue-core` fails to compile here until the kernels support it. faer's associated `Real`
/// is required to equal ours; in generic code write `<T as Scalar>::Real` (the bare `T::Real`
/// is ambiguous between the two traits).
pub trait KernelScalar: Scalar + ComplexField<Real = <Self as Scalar>::Real> + Sealed {}

mod sealed {
    /// Seals [`super::KernelScalar`], and carries the per-scalar entry points of the system
    /// BLAS / LAPACK (which take "not taken" without the `blas` feature) and of the crate's
    /// narrow and packed kernels (which take "not taken" where a scalar has none).
    pub trait Sealed:
        crate::system::System + crate::narrow::Narrow + crate::packed::Packed
    {
    }
}
use sealed::Sealed;

macro_rules! impl_kernel_scalar {
    ($($t:ty),*) => {$(
        impl Sealed for $t {}
        impl KernelScalar for $t {}
    )*};
}

impl_kernel_scalar!(f32, f64, Complex<f32>, Complex<f64>);
