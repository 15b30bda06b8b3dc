//! [`GemmError`]: what a distributed multiplication can report.

use crate::PlanError;
use redblue_comm::CommError;
use redblue_dist::DistError;
use redblue_kernels::KernelError;
use std::fmt;

/// Why a distributed multiplication failed. Every variant except a communication failure is a
/// deterministic function of arguments all ranks pass alike, so all ranks return the same error.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GemmError {
    /// The inner dimensions of `op(A)` (`m × k`) and `op(B)` (`k′ × n`) differ.
    InnerDimensions {
        /// Shape of `op(A)`.
        op_a: (usize, usize),
        /// Shape of `op(B)`.
        op_b: (usize, usize),
    },
    /// No strategy fits, or the given one cannot run (ranks, memory).
    Plan(PlanError),
    /// A layout or shape problem (`C` of the wrong shape, a layout larger than the
    /// communicator).
    Dist(DistError),
    /// A local kernel refused its arguments (a bug: the plan makes them consistent).
    Kernel(KernelError),
    /// A communication failure.
    Comm(CommError),
}

impl fmt::Display for GemmError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GemmError::InnerDimensions { op_a, op_b } => write!(
                f,
                "inner dimensions differ: op(A) is {} × {} but op(B) is {} × {}",
                op_a.0, op_a.1, op_b.0, op_b.1
            ),
            GemmError::Plan(e) => write!(f, "{e}"),
            GemmError::Dist(e) => write!(f, "{e}"),
            GemmError::Kernel(e) => write!(f, "local kernel: {e}"),
            GemmError::Comm(e) => write!(f, "communication: {e}"),
        }
    }
}

impl std::error::Error for GemmError {}

impl From<PlanError> for GemmError {
    fn from(e: PlanError) -> Self {
        GemmError::Plan(e)
    }
}

impl From<DistError> for GemmError {
    fn from(e: DistError) -> Self {
        GemmError::Dist(e)
    }
}

impl From<KernelError> for GemmError {
    fn from(e: KernelError) -> Self {
        GemmError::Kernel(e)
    }
}

impl From<CommError> for GemmError {
    fn from(e: CommError) -> Self {
        GemmError::Comm(e)
    }
}
