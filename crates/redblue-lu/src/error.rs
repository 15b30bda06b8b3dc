//! [`LuError`]: everything that can go wrong in a factorisation or a solve, the same on every
//! rank.

use crate::GridError;
use redblue_comm::CommError;
use redblue_dist::DistError;
use redblue_kernels::KernelError;
use redblue_pipeline::factors::FactorsError;
use std::fmt;

/// Why a factorisation or a solve failed. Every rank returns the same error for bad input.
#[derive(Debug)]
#[non_exhaustive]
pub enum LuError {
    /// `A` is not square where it must be (the solves, factors given by the caller; a
    /// rectangular `A` factors).
    NotSquare {
        /// Its shape.
        shape: (usize, usize),
    },
    /// A NaN or an infinity in `A` (found before any work).
    NotFinite,
    /// `A` is exactly singular: every candidate pivot of this column (0-based) was zero.
    Singular {
        /// The column.
        column: usize,
    },
    /// A right-hand side whose height is not `N`.
    RhsHeight {
        /// `N`.
        expected: usize,
        /// Its height.
        found: usize,
    },
    /// Parameters that cannot work (a zero tile width, a grid larger than the communicator...).
    InvalidParams(String),
    /// No grid could be chosen.
    Grid(GridError),
    /// A layout problem (transforms in and out).
    Dist(DistError),
    /// A communication failure.
    Comm(CommError),
    /// A local kernel failure.
    Kernel(KernelError),
}

impl fmt::Display for LuError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LuError::NotSquare { shape } => {
                write!(
                    f,
                    "this needs the factors of a square matrix, not of a {} × {} one",
                    shape.0, shape.1
                )
            }
            LuError::NotFinite => write!(f, "the matrix holds a NaN or an infinity"),
            LuError::Singular { column } => {
                write!(
                    f,
                    "the matrix is singular: no nonzero pivot in column {column}"
                )
            }
            LuError::RhsHeight { expected, found } => write!(
                f,
                "the right-hand side has {found} rows, the matrix has {expected}"
            ),
            LuError::InvalidParams(why) => write!(f, "invalid LU parameters: {why}"),
            LuError::Grid(e) => write!(f, "{e}"),
            LuError::Dist(e) => write!(f, "{e}"),
            LuError::Comm(e) => write!(f, "{e}"),
            LuError::Kernel(e) => write!(f, "{e}"),
        }
    }
}

/// The wrapping variants are transparent: their message is the wrapped error's, so their
/// `source()` is the wrapped error's source (a reporter walking the chain never prints a
/// message twice).
impl std::error::Error for LuError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LuError::Grid(e) => e.source(),
            LuError::Dist(e) => e.source(),
            LuError::Comm(e) => e.source(),
            LuError::Kernel(e) => e.source(),
            _ => None,
        }
    }
}

impl From<GridError> for LuError {
    fn from(e: GridError) -> Self {
        LuError::Grid(e)
    }
}

impl From<DistError> for LuError {
    fn from(e: DistError) -> Self {
        LuError::Dist(e)
    }
}

impl From<CommError> for LuError {
    fn from(e: CommError) -> Self {
        LuError::Comm(e)
    }
}

impl From<FactorsError> for LuError {
    fn from(e: FactorsError) -> Self {
        match e {
            FactorsError::Comm(e) => LuError::Comm(e),
            FactorsError::Dist(e) => LuError::Dist(e),
            FactorsError::Kernel(e) => LuError::Kernel(e),
        }
    }
}

impl From<KernelError> for LuError {
    fn from(e: KernelError) -> Self {
        LuError::Kernel(e)
    }
}
