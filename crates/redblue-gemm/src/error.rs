//! [`GemmError`]: what a distributed multiplication can report.

use crate::PlanError;
use redblue_comm::CommError;
use redblue_core::Op;
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
    /// No strategy fits, or the given one cannot run (ranks, memory, too many parts).
    Plan(PlanError),
    /// The operands given to [`gemm_with`](crate::gemm_with) are not those its
    /// [`GemmPlan`](crate::GemmPlan) was made for: other shapes, or other ops (the ops come
    /// from the plan, so operands meant for other ops have other stored shapes).
    PlanMismatch {
        /// Stored shapes of `A`, `B`, `C` the plan is for.
        planned: [(usize, usize); 3],
        /// Stored shapes of the `A`, `B`, `C` given.
        given: [(usize, usize); 3],
        /// The plan's `op(A)`, `op(B)`.
        ops: (Op, Op),
    },
    /// The plan given to [`gemm_with`](crate::gemm_with) is for more ranks than the
    /// communicator has.
    PlanRanks {
        /// Ranks the plan is for ([`GemmPlan::nranks`](crate::GemmPlan::nranks)).
        planned: usize,
        /// Ranks of the communicator.
        comm_size: usize,
    },
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
            GemmError::PlanMismatch {
                planned,
                given,
                ops,
            } => {
                let shapes = |s: &[(usize, usize); 3]| {
                    format!(
                        "A {}×{}, B {}×{}, C {}×{}",
                        s[0].0, s[0].1, s[1].0, s[1].1, s[2].0, s[2].1
                    )
                };
                write!(
                    f,
                    "the plan is for {} (op(A) = {}, op(B) = {}), but the operands are {}: \
                     plan for these operands",
                    shapes(planned),
                    ops.0,
                    ops.1,
                    shapes(given)
                )
            }
            GemmError::PlanRanks { planned, comm_size } => write!(
                f,
                "the plan is for {planned} ranks, but the communicator has {comm_size}: \
                 plan for this communicator"
            ),
            GemmError::Dist(e) => write!(f, "{e}"),
            GemmError::Kernel(e) => write!(f, "local kernel: {e}"),
            GemmError::Comm(e) => write!(f, "communication: {e}"),
        }
    }
}

/// The wrapping variants' messages hold the wrapped error's, so their `source()` is the
/// wrapped error's source (a reporter walking the chain never prints a message twice).
impl std::error::Error for GemmError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            GemmError::Plan(e) => e.source(),
            GemmError::Dist(e) => e.source(),
            GemmError::Kernel(e) => e.source(),
            GemmError::Comm(e) => e.source(),
            _ => None,
        }
    }
}

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
