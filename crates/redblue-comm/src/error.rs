//! Errors of communicator calls.

use redblue_core::{DatumKind, ReduceOp};
use std::fmt;

/// What went wrong in a communicator call.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CommError {
    /// A rank argument (destination, source, root) is not below the communicator's size.
    RankOutOfRange {
        /// Which argument.
        what: &'static str,
        /// Its value.
        rank: usize,
        /// The communicator's size.
        size: usize,
    },
    /// A buffer or a count list has the wrong length, or a received message does not have the
    /// length the receive buffer expects.
    LengthMismatch {
        /// Which buffer.
        what: &'static str,
        /// Expected length.
        expected: usize,
        /// Length found.
        found: usize,
    },
    /// A message of another element type was received.
    TypeMismatch {
        /// The element type the receiver expected.
        expected: DatumKind,
    },
    /// The reduction operator is not defined for the element type (`Max` on complex numbers).
    UnsupportedReduction {
        /// The operator.
        op: ReduceOp,
        /// The element type.
        kind: DatumKind,
    },
    /// Another rank failed (panicked): this rank's pending or next call cannot complete.
    PeerFailed {
        /// World rank of the first rank that failed.
        rank: usize,
    },
    /// Every rank of a threads-as-ranks world is waiting for a message that no rank will send
    /// (mismatched calls): reported instead of hanging.
    Deadlock,
    /// A process grid does not have as many ranks as the communicator it is laid over.
    GridSizeMismatch {
        /// The grid's dimensions.
        dims: Vec<usize>,
        /// The communicator's size.
        size: usize,
    },
    /// The MPI library reported an error.
    Mpi(String),
}

impl fmt::Display for CommError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommError::RankOutOfRange { what, rank, size } => write!(
                f,
                "{what} rank {rank} is out of range for a communicator of size {size}"
            ),
            CommError::LengthMismatch {
                what,
                expected,
                found,
            } => write!(f, "{what}: expected length {expected}, found {found}"),
            CommError::TypeMismatch { expected } => {
                write!(
                    f,
                    "received a message whose element type is not {expected:?}"
                )
            }
            CommError::UnsupportedReduction { op, kind } => {
                write!(f, "reduction {op:?} is not defined for {kind:?}")
            }
            CommError::PeerFailed { rank } => write!(f, "rank {rank} failed"),
            CommError::Deadlock => write!(
                f,
                "deadlock: every rank waits for a message that no rank will send \
                 (do all ranks make the same calls in the same order?)"
            ),
            CommError::GridSizeMismatch { dims, size } => {
                let ranks: usize = dims.iter().product();
                let dims: Vec<String> = dims.iter().map(ToString::to_string).collect();
                write!(
                    f,
                    "a {} process grid needs {ranks} ranks but the communicator has {size}",
                    dims.join("x")
                )
            }
            CommError::Mpi(msg) => write!(f, "MPI error: {msg}"),
        }
    }
}

impl std::error::Error for CommError {}
