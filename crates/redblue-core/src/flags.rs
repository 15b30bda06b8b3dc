//! BLAS-style flags: transposition, triangle, side and diagonal.

use std::fmt;
use std::str::FromStr;

/// How an operand enters an operation: as is, transposed, or conjugate-transposed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Op {
    /// `A`
    #[default]
    NoTrans,
    /// `Aᵀ`
    Trans,
    /// `Aᴴ` (equal to `Aᵀ` for real scalars)
    ConjTrans,
}

impl Op {
    /// All three operations, for tests and loops.
    pub const ALL: [Op; 3] = [Op::NoTrans, Op::Trans, Op::ConjTrans];

    /// Whether the operation swaps rows and columns.
    pub fn is_transposed(self) -> bool {
        !matches!(self, Op::NoTrans)
    }

    /// The shape of `op(A)` for an `A` of shape `(m, n)`.
    pub fn apply_shape(self, (m, n): (usize, usize)) -> (usize, usize) {
        if self.is_transposed() {
            (n, m)
        } else {
            (m, n)
        }
    }

    /// The BLAS character: `N`, `T` or `C`.
    pub fn as_char(self) -> char {
        match self {
            Op::NoTrans => 'N',
            Op::Trans => 'T',
            Op::ConjTrans => 'C',
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.as_char())
    }
}

impl FromStr for Op {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "N" | "n" => Ok(Op::NoTrans),
            "T" | "t" => Ok(Op::Trans),
            "C" | "c" => Ok(Op::ConjTrans),
            _ => Err(format!("unknown op {s:?}: expected N, T or C")),
        }
    }
}

/// Which triangle of a matrix is referenced.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Uplo {
    /// The lower triangle.
    Lower,
    /// The upper triangle.
    Upper,
}

impl Uplo {
    /// Whether element `(i, j)` lies in this triangle (the diagonal included).
    pub fn contains(self, i: usize, j: usize) -> bool {
        match self {
            Uplo::Lower => i >= j,
            Uplo::Upper => i <= j,
        }
    }
}

/// Which side a triangular matrix multiplies from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// `op(T)·X`
    Left,
    /// `X·op(T)`
    Right,
}

/// Whether a triangular matrix has an implicit unit diagonal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Diag {
    /// The diagonal is stored.
    NonUnit,
    /// The diagonal is all ones and not read.
    Unit,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_round_trips_through_its_character() {
        for op in Op::ALL {
            assert_eq!(op.to_string().parse::<Op>().unwrap(), op);
        }
        assert!("X".parse::<Op>().is_err());
    }

    #[test]
    fn triangles_share_the_diagonal() {
        assert!(Uplo::Lower.contains(2, 1) && !Uplo::Lower.contains(1, 2));
        assert!(Uplo::Upper.contains(1, 2) && !Uplo::Upper.contains(2, 1));
        assert!(Uplo::Lower.contains(3, 3) && Uplo::Upper.contains(3, 3));
    }

    #[test]
    fn op_shape() {
        assert_eq!(Op::NoTrans.apply_shape((2, 3)), (2, 3));
        assert_eq!(Op::Trans.apply_shape((2, 3)), (3, 2));
        assert_eq!(Op::ConjTrans.apply_shape((2, 3)), (3, 2));
    }
}
