//! [`CholeskyError`]: everything that can go wrong in a Cholesky factorisation or a solve with
//! its factor, the same on every rank.

use redblue_comm::CommError;
use redblue_dist::DistError;
use redblue_kernels::KernelError;
use redblue_pipeline::factors::FactorsError;
use redblue_pipeline::GridError;
use std::fmt;

/// Why a factorisation or a solve failed. Every rank returns the same error for bad input.
#[derive(Debug)]
#[non_exhaustive]
pub enum CholeskyError {
    /// `A` is not square.
    NotSquare {
        /// Its shape.
        shape: (usize, usize),
    },
    /// A NaN or an infinity in the triangle of `A` that is read (found before any work).
    NotFinite,
    /// `A` is not (Hermitian) positive definite: the leading minor of this order fails, i.e.
    /// the pivot of this column (0-based, global) is not positive, or its diagonal entry is
    /// not real (LAPACK's `info = column + 1`).
    NotPositiveDefinite {
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

impl fmt::Display for CholeskyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CholeskyError::NotSquare { shape } => write!(
                f,
                "Cholesky needs a square matrix, not {} × {}",
                shape.0, shape.1
            ),
            CholeskyError::NotFinite => {
                write!(f, "the triangle read holds a NaN or an infinity")
            }
            CholeskyError::NotPositiveDefinite { column } => write!(
                f,
                "the matrix is not positive definite: the pivot of column {column} is not \
                 positive (or its diagonal entry is not real)"
            ),
            CholeskyError::RhsHeight { expected, found } => write!(
                f,
                "the right-hand side has {found} rows, the matrix has {expected}"
            ),
            CholeskyError::InvalidParams(why) => write!(f, "invalid Cholesky parameters: {why}"),
            CholeskyError::Grid(e) => write!(f, "{e}"),
            CholeskyError::Dist(e) => write!(f, "{e}"),
            CholeskyError::Comm(e) => write!(f, "{e}"),
            CholeskyError::Kernel(e) => write!(f, "{e}"),
        }
    }
}

/// The wrapping variants are transparent: their message is the wrapped error's, so their
/// `source()` is the wrapped error's source (a reporter walking the chain never prints a
/// message twice).
impl std::error::Error for CholeskyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CholeskyError::Grid(e) => e.source(),
            CholeskyError::Dist(e) => e.source(),
            CholeskyError::Comm(e) => e.source(),
            CholeskyError::Kernel(e) => e.source(),
            _ => None,
        }
    }
}

impl From<GridError> for CholeskyError {
    fn from(e: GridError) -> Self {
        CholeskyError::Grid(e)
    }
}

impl From<DistError> for CholeskyError {
    fn from(e: DistError) -> Self {
        CholeskyError::Dist(e)
    }
}

impl From<CommError> for CholeskyError {
    fn from(e: CommError) -> Self {
        CholeskyError::Comm(e)
    }
}

impl From<KernelError> for CholeskyError {
    fn from(e: KernelError) -> Self {
        CholeskyError::Kernel(e)
    }
}

impl From<FactorsError> for CholeskyError {
    fn from(e: FactorsError) -> Self {
        match e {
            FactorsError::Comm(e) => CholeskyError::Comm(e),
            FactorsError::Dist(e) => CholeskyError::Dist(e),
            FactorsError::Kernel(e) => CholeskyError::Kernel(e),
        }
    }
}
