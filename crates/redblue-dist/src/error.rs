//! Errors of layouts, distributed matrices and transforms.

use redblue_comm::CommError;
use std::fmt;

/// What went wrong in a layout, distributed-matrix or transform call.
///
/// Every variant is a deterministic function of arguments that all ranks pass alike, or is
/// agreed across ranks before it is returned, so every rank of a collective call returns the same
/// error.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DistError {
    /// A block size is zero.
    ZeroBlockSize {
        /// Which block size (`"mb"`, `"nb"`, ...).
        what: &'static str,
    },
    /// A process grid has a zero dimension.
    EmptyGrid {
        /// Grid rows.
        rows: usize,
        /// Grid columns.
        cols: usize,
    },
    /// A rank (source rank, owner, root) is outside the range it must lie in.
    RankOutOfRange {
        /// Which rank argument.
        what: &'static str,
        /// Its value.
        rank: usize,
        /// The exclusive upper bound.
        bound: usize,
    },
    /// Shapes that must agree do not.
    ShapeMismatch {
        /// What was compared.
        what: &'static str,
        /// The expected shape.
        expected: (usize, usize),
        /// The shape found.
        found: (usize, usize),
    },
    /// A layout spreads over more ranks than the communicator has.
    LayoutLargerThanComm {
        /// Ranks of the layout.
        layout_ranks: usize,
        /// Size of the communicator.
        comm_size: usize,
    },
    /// A layout description is inconsistent (splits not increasing, wrong owner table size...).
    InvalidLayout(String),
    /// A buffer has the wrong length.
    BufferLength {
        /// Which buffer.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Length found.
        found: usize,
    },
    /// The communicator failed.
    Comm(CommError),
    /// A local buffer could not be allocated (on this rank: an allocation is not a collective).
    OutOfMemory {
        /// What was being allocated.
        what: &'static str,
        /// Its size in bytes.
        bytes: u128,
    },
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::ZeroBlockSize { what } => write!(f, "block size {what} must be at least 1"),
            DistError::EmptyGrid { rows, cols } => {
                write!(f, "process grid {rows}x{cols} has no ranks")
            }
            DistError::RankOutOfRange { what, rank, bound } => {
                write!(f, "{what} = {rank} is out of range: must be < {bound}")
            }
            DistError::ShapeMismatch {
                what,
                expected,
                found,
            } => write!(
                f,
                "shape mismatch in {what}: expected {}x{}, found {}x{}",
                expected.0, expected.1, found.0, found.1
            ),
            DistError::LayoutLargerThanComm {
                layout_ranks,
                comm_size,
            } => write!(
                f,
                "layout spreads over {layout_ranks} ranks but the communicator has only {comm_size}"
            ),
            DistError::InvalidLayout(why) => write!(f, "invalid layout: {why}"),
            DistError::BufferLength {
                what,
                expected,
                found,
            } => write!(f, "{what} has length {found}, expected {expected}"),
            DistError::Comm(e) => write!(f, "communication failed: {e}"),
            DistError::OutOfMemory { what, bytes } => {
                write!(f, "cannot allocate {what} of {bytes} bytes")
            }
        }
    }
}

/// `Comm`'s message holds the communicator's, so its `source()` is the communicator error's
/// source (a reporter walking the chain never prints a message twice).
impl std::error::Error for DistError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DistError::Comm(e) => e.source(),
            _ => None,
        }
    }
}

impl From<CommError> for DistError {
    fn from(e: CommError) -> Self {
        DistError::Comm(e)
    }
}
