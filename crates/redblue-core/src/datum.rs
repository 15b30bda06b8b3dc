//! The [`Datum`] trait: plain values that may be sent between ranks, and reduction operators.

use crate::sealed::Sealed;
use num_complex::Complex;
use std::fmt::Debug;

/// Which primitive a [`Datum`] is; backends map it to their own type (for example an MPI
/// datatype).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DatumKind {
    /// `u8`
    U8,
    /// `u32`
    U32,
    /// `u64`
    U64,
    /// `usize` (sent as 64 bits)
    Usize,
    /// `i32`
    I32,
    /// `i64`
    I64,
    /// `f32`
    F32,
    /// `f64`
    F64,
    /// `Complex<f32>`
    C32,
    /// `Complex<f64>`
    C64,
}

/// An element-wise reduction operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (every datum).
    Sum,
    /// Maximum (real and integer data only).
    Max,
    /// Minimum (real and integer data only).
    Min,
}

/// A plain value that can cross a rank boundary: the four scalars and a few integer types used
/// for control data (counts, pivots, flags).
///
/// Sealed. Every implementor is `Copy`, has no padding and no invalid bit patterns, so a slice of
/// it can be moved as raw bytes.
pub trait Datum: Copy + Send + Sync + PartialEq + Debug + 'static + Sealed {
    /// Which primitive this is.
    const KIND: DatumKind;

    /// `a op b`, or `None` if `op` is not defined for this type (`Max`/`Min` on complex).
    fn combine(op: ReduceOp, a: Self, b: Self) -> Option<Self>;

    /// Whether `op` is defined for this type.
    fn supports(op: ReduceOp) -> bool {
        !(matches!(Self::KIND, DatumKind::C32 | DatumKind::C64) && op != ReduceOp::Sum)
    }
}

macro_rules! impl_ordered {
    ($t:ty, $kind:ident, $sum:ident) => {
        impl Datum for $t {
            const KIND: DatumKind = DatumKind::$kind;
            #[inline]
            fn combine(op: ReduceOp, a: Self, b: Self) -> Option<Self> {
                Some(match op {
                    ReduceOp::Sum => a.$sum(b),
                    ReduceOp::Max => {
                        if b > a {
                            b
                        } else {
                            a
                        }
                    }
                    ReduceOp::Min => {
                        if b < a {
                            b
                        } else {
                            a
                        }
                    }
                })
            }
        }
    };
}

macro_rules! impl_int {
    ($($t:ty => $kind:ident),*) => {$(
        impl Sealed for $t {}
        impl_ordered!($t, $kind, wrapping_add);
    )*};
}
impl_int!(u8 => U8, u32 => U32, u64 => U64, usize => Usize, i32 => I32, i64 => I64);

trait PlainAdd {
    fn plain_add(self, b: Self) -> Self;
}
impl PlainAdd for f32 {
    fn plain_add(self, b: Self) -> Self {
        self + b
    }
}
impl PlainAdd for f64 {
    fn plain_add(self, b: Self) -> Self {
        self + b
    }
}
impl_ordered!(f32, F32, plain_add);
impl_ordered!(f64, F64, plain_add);

macro_rules! impl_complex {
    ($t:ty, $kind:ident) => {
        impl Datum for Complex<$t> {
            const KIND: DatumKind = DatumKind::$kind;
            #[inline]
            fn combine(op: ReduceOp, a: Self, b: Self) -> Option<Self> {
                match op {
                    ReduceOp::Sum => Some(a + b),
                    ReduceOp::Max | ReduceOp::Min => None,
                }
            }
        }
    };
}
impl_complex!(f32, C32);
impl_complex!(f64, C64);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combine_follows_the_operator() {
        assert_eq!(f64::combine(ReduceOp::Sum, 1.5, 2.0), Some(3.5));
        assert_eq!(u64::combine(ReduceOp::Max, 1, 7), Some(7));
        assert_eq!(i32::combine(ReduceOp::Min, -1, 7), Some(-1));
        let z = Complex::new(1.0f64, 2.0);
        assert_eq!(Complex::<f64>::combine(ReduceOp::Sum, z, z), Some(z + z));
        assert_eq!(Complex::<f64>::combine(ReduceOp::Max, z, z), None);
        assert!(!Complex::<f32>::supports(ReduceOp::Min));
        assert!(f32::supports(ReduceOp::Min));
    }
}
