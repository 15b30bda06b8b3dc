//! The [`Scalar`] trait: the four element types every redblue algorithm is generic over.

use crate::datum::Datum;
use crate::sealed::Sealed;
use num_complex::Complex;
use std::fmt::{Debug, Display};
use std::iter::Sum;
use std::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Neg, Sub, SubAssign};

/// An element type of a distributed matrix: `f32`, `f64`, `Complex<f32>` or `Complex<f64>`.
///
/// The trait is sealed: the set is closed so that every backend (MPI datatypes, BLAS) maps all
/// four. Algorithms are written once against it.
pub trait Scalar:
    Datum
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
    + Sum
    + Debug
    + Display
    + Default
    + Sealed
{
    /// The real type underneath (`f64` for `Complex<f64>`).
    type Real: RealScalar;

    /// Whether the type is complex.
    const IS_COMPLEX: bool;

    /// A short BLAS-style name: `s`, `d`, `c` or `z`.
    const BLAS_PREFIX: char;

    /// A readable name: `f32`, `f64`, `c32` or `c64`.
    const NAME: &'static str;

    /// Additive identity.
    fn zero() -> Self;
    /// Multiplicative identity.
    fn one() -> Self;
    /// Complex conjugate (identity for reals).
    fn conj(self) -> Self;
    /// Modulus `|x|`.
    fn abs(self) -> Self::Real;
    /// Squared modulus `|x|²`, cheaper than `abs` for complex numbers.
    fn abs_sqr(self) -> Self::Real;
    /// Principal square root.
    fn sqrt(self) -> Self;
    /// Real part.
    fn re(self) -> Self::Real;
    /// Imaginary part (zero for reals).
    fn im(self) -> Self::Real;
    /// Embeds a real number.
    fn from_real(r: Self::Real) -> Self;
    /// Builds a value from `f64` parts; the imaginary part is dropped for real types.
    /// Handy for test matrices given by a formula `f(i, j)`.
    fn from_f64_parts(re: f64, im: f64) -> Self;
    /// Machine epsilon of the real type.
    fn epsilon() -> Self::Real;
    /// Whether the value is finite (both parts for complex).
    fn is_finite(self) -> bool;
}

/// A real scalar: `f32` or `f64`.
pub trait RealScalar: Scalar<Real = Self> + PartialOrd {
    /// The larger of two values (`other` if `self` is NaN).
    fn max(self, other: Self) -> Self;
    /// The smaller of two values (`other` if `self` is NaN).
    fn min(self, other: Self) -> Self;
    /// Converts to `f64` (exact for both types).
    fn to_f64(self) -> f64;
    /// Converts from `f64` (rounding for `f32`).
    fn from_f64(x: f64) -> Self;
}

macro_rules! impl_real {
    ($t:ty, $prefix:literal, $name:literal) => {
        impl Sealed for $t {}
        impl Scalar for $t {
            type Real = $t;
            const IS_COMPLEX: bool = false;
            const BLAS_PREFIX: char = $prefix;
            const NAME: &'static str = $name;
            #[inline]
            fn zero() -> Self {
                0.0
            }
            #[inline]
            fn one() -> Self {
                1.0
            }
            #[inline]
            fn conj(self) -> Self {
                self
            }
            #[inline]
            fn abs(self) -> Self {
                <$t>::abs(self)
            }
            #[inline]
            fn abs_sqr(self) -> Self {
                self * self
            }
            #[inline]
            fn sqrt(self) -> Self {
                <$t>::sqrt(self)
            }
            #[inline]
            fn re(self) -> Self {
                self
            }
            #[inline]
            fn im(self) -> Self {
                0.0
            }
            #[inline]
            fn from_real(r: Self) -> Self {
                r
            }
            #[inline]
            fn from_f64_parts(re: f64, _im: f64) -> Self {
                re as $t
            }
            #[inline]
            fn is_finite(self) -> bool {
                <$t>::is_finite(self)
            }
            #[inline]
            fn epsilon() -> Self {
                <$t>::EPSILON
            }
        }
        impl RealScalar for $t {
            #[inline]
            fn max(self, other: Self) -> Self {
                <$t>::max(self, other)
            }
            #[inline]
            fn min(self, other: Self) -> Self {
                <$t>::min(self, other)
            }
            #[inline]
            fn to_f64(self) -> f64 {
                self as f64
            }
            #[inline]
            fn from_f64(x: f64) -> Self {
                x as $t
            }
        }
    };
}

impl_real!(f32, 's', "f32");
impl_real!(f64, 'd', "f64");

macro_rules! impl_complex {
    ($t:ty, $prefix:literal, $name:literal) => {
        impl Sealed for Complex<$t> {}
        impl Scalar for Complex<$t> {
            type Real = $t;
            const IS_COMPLEX: bool = true;
            const BLAS_PREFIX: char = $prefix;
            const NAME: &'static str = $name;
            #[inline]
            fn zero() -> Self {
                Complex::new(0.0, 0.0)
            }
            #[inline]
            fn one() -> Self {
                Complex::new(1.0, 0.0)
            }
            #[inline]
            fn conj(self) -> Self {
                Complex::conj(&self)
            }
            #[inline]
            fn abs(self) -> $t {
                self.norm()
            }
            #[inline]
            fn abs_sqr(self) -> $t {
                self.norm_sqr()
            }
            #[inline]
            fn sqrt(self) -> Self {
                Complex::sqrt(self)
            }
            #[inline]
            fn re(self) -> $t {
                self.re
            }
            #[inline]
            fn im(self) -> $t {
                self.im
            }
            #[inline]
            fn from_real(r: $t) -> Self {
                Complex::new(r, 0.0)
            }
            #[inline]
            fn from_f64_parts(re: f64, im: f64) -> Self {
                Complex::new(re as $t, im as $t)
            }
            #[inline]
            fn is_finite(self) -> bool {
                self.re.is_finite() && self.im.is_finite()
            }
            #[inline]
            fn epsilon() -> $t {
                <$t>::EPSILON
            }
        }
    };
}

impl_complex!(f32, 'c', "c32");
impl_complex!(f64, 'z', "c64");

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Scalar>() {
        let x = T::from_f64_parts(3.0, 4.0);
        let expect_abs = if T::IS_COMPLEX { 5.0 } else { 3.0 };
        assert!((x.abs().to_f64() - expect_abs).abs() < 1e-6);
        assert!((x.abs_sqr().to_f64() - expect_abs * expect_abs).abs() < 1e-5);
        assert_eq!(x.conj().conj(), x);
        assert_eq!(x.conj().re(), x.re());
        assert_eq!(x.conj().im(), -x.im());
        let s = x.sqrt();
        assert!((s * s - x).abs().to_f64() < 1e-5);
        assert_eq!(T::zero() + T::one(), T::one());
        assert_eq!(T::from_real(x.re()).im(), <T::Real as Scalar>::zero());
        assert!(T::epsilon().to_f64() > 0.0 && T::epsilon().to_f64() < 1e-6);
        assert!(x.is_finite());
        assert!(!T::from_f64_parts(f64::NAN, 0.0).is_finite());
    }

    #[test]
    fn all_four_scalars_obey_the_contract() {
        check::<f32>();
        check::<f64>();
        check::<Complex<f32>>();
        check::<Complex<f64>>();
    }

    #[test]
    fn names() {
        assert_eq!(<f64 as Scalar>::NAME, "f64");
        assert_eq!(<Complex<f32> as Scalar>::BLAS_PREFIX, 'c');
    }
}
