//! [`KernelError`]: why a local kernel refused its arguments or could not finish.

use std::fmt;

/// The error of a local kernel or of building a matrix view.
///
/// Kernels check their arguments before touching any data, so an `Err` from a shape check
/// means nothing was written. The numerical variants ([`SingularPivot`](Self::SingularPivot),
/// [`NotPositiveDefinite`](Self::NotPositiveDefinite)) are reported after the factorisation
/// ran, like LAPACK's `info > 0`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelError {
    /// An operand does not have the shape the others imply.
    ShapeMismatch {
        /// The kernel, e.g. `"gemm"`.
        kernel: &'static str,
        /// The operand whose shape is wrong, e.g. `"op(B)"` or `"C"`.
        operand: &'static str,
        /// The shape implied by the other operands, `(rows, cols)`.
        expected: (usize, usize),
        /// The shape that was passed, `(rows, cols)`.
        found: (usize, usize),
    },
    /// The leading dimension is smaller than `max(1, nrows)`.
    InvalidLeadingDimension {
        /// Number of rows of the view.
        nrows: usize,
        /// The leading dimension that was passed.
        ld: usize,
    },
    /// The buffer is too short for the shape and leading dimension (or its size overflows).
    BufferTooShort {
        /// Elements needed: `ld·(ncols − 1) + nrows`.
        needed: usize,
        /// Elements available.
        len: usize,
    },
    /// A row interchange names a row outside the matrix, or there are more interchanges than
    /// rows.
    InvalidPivot {
        /// The position of the offending entry in `ipiv`.
        index: usize,
        /// Its value.
        pivot: usize,
        /// The number of rows of the matrix.
        nrows: usize,
    },
    /// LU factorisation met an exactly zero pivot in this column (0-based); the factors are
    /// complete and usable, but `U` is singular.
    SingularPivot {
        /// The first column whose pivot is zero.
        column: usize,
    },
    /// Cholesky factorisation failed: the matrix is not positive definite, detected at this
    /// column (0-based).
    NotPositiveDefinite {
        /// The column whose diagonal was not positive.
        column: usize,
    },
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelError::ShapeMismatch {
                kernel,
                operand,
                expected,
                found,
            } => write!(
                f,
                "{kernel}: {operand} has shape {}×{}, expected {}×{}",
                found.0, found.1, expected.0, expected.1
            ),
            KernelError::InvalidLeadingDimension { nrows, ld } => write!(
                f,
                "leading dimension {ld} is smaller than max(1, nrows) for {nrows} rows"
            ),
            KernelError::BufferTooShort { needed, len } => write!(
                f,
                "buffer of {len} elements is too short: the view needs {needed}"
            ),
            KernelError::InvalidPivot {
                index,
                pivot,
                nrows,
            } => write!(
                f,
                "ipiv[{index}] = {pivot} is not a valid row interchange for a matrix of {nrows} rows"
            ),
            KernelError::SingularPivot { column } => {
                write!(
                    f,
                    "exactly zero pivot in column {column}: the matrix is singular"
                )
            }
            KernelError::NotPositiveDefinite { column } => write!(
                f,
                "the matrix is not positive definite (failed at column {column})"
            ),
        }
    }
}

impl std::error::Error for KernelError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_both_shapes_and_the_column() {
        let e = KernelError::ShapeMismatch {
            kernel: "gemm",
            operand: "C",
            expected: (3, 4),
            found: (4, 3),
        };
        assert_eq!(e.to_string(), "gemm: C has shape 4×3, expected 3×4");
        assert!(KernelError::SingularPivot { column: 7 }
            .to_string()
            .contains("column 7"));
        assert!(KernelError::NotPositiveDefinite { column: 2 }
            .to_string()
            .contains("column 2"));
        assert!(KernelError::InvalidPivot {
            index: 1,
            pivot: 3,
            nrows: 3
        }
        .to_string()
        .contains("ipiv[1] = 3"));
        let boxed: Box<dyn std::error::Error> =
            Box::new(KernelError::InvalidLeadingDimension { nrows: 5, ld: 4 });
        assert!(boxed.to_string().contains("leading dimension 4"));
    }
}
