//! [`Error`]: one error type for programs that call several redblue crates, so that `?` works
//! across them; the specific error stays matchable inside.

use redblue_cholesky::CholeskyError;
use redblue_comm::CommError;
use redblue_dist::DistError;
use redblue_gemm::GemmError;
use redblue_lu::LuError;
use std::fmt;

/// Any redblue error. Each variant holds the error of the crate that raised it, unchanged (so
/// every rank still returns the same one, and `match` reaches the specific error:
/// `Error::Lu(LuError::Singular { column })`); `Display` and `source()` are that error's.
///
/// Throughout redblue an error that wraps another (`LuError::Dist`, `DistError::Comm`, …)
/// shows the wrapped error's message in its own, so its `source()` is the wrapped error's
/// source: a reporter that walks the chain never prints a message twice, and printing the
/// error alone says everything.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// A communicator call failed.
    Comm(CommError),
    /// A layout, distributed-matrix or transform call failed.
    Dist(DistError),
    /// A multiplication failed.
    Gemm(GemmError),
    /// An LU factorisation or solve failed.
    Lu(LuError),
    /// A Cholesky factorisation or solve failed.
    Cholesky(CholeskyError),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Comm(e) => e.fmt(f),
            Error::Dist(e) => e.fmt(f),
            Error::Gemm(e) => e.fmt(f),
            Error::Lu(e) => e.fmt(f),
            Error::Cholesky(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Comm(e) => e.source(),
            Error::Dist(e) => e.source(),
            Error::Gemm(e) => e.source(),
            Error::Lu(e) => e.source(),
            Error::Cholesky(e) => e.source(),
        }
    }
}

macro_rules! from_error {
    ($($variant:ident($t:ty)),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self {
                Error::$variant(e)
            }
        }
    )*};
}

from_error!(
    Comm(CommError),
    Dist(DistError),
    Gemm(GemmError),
    Lu(LuError),
    Cholesky(CholeskyError)
);

/// A planner's refusal is the multiplication's ([`GemmError::Plan`]).
impl From<redblue_gemm::PlanError> for Error {
    fn from(e: redblue_gemm::PlanError) -> Self {
        Error::Gemm(GemmError::Plan(e))
    }
}

impl Error {
    /// The communication failure under this error, if it is one (a failed peer, a deadlock, a
    /// backend error) rather than an input or numerical error that every rank agreed on: after
    /// one, other ranks may still be waiting for this one, so under MPI the job should end
    /// (`MpiComm::abort`, feature `mpi`).
    pub fn comm_failure(&self) -> Option<&CommError> {
        fn dist(e: &DistError) -> Option<&CommError> {
            match e {
                DistError::Comm(c) => Some(c),
                _ => None,
            }
        }
        match self {
            Error::Comm(c) => Some(c),
            Error::Dist(e) => dist(e),
            Error::Gemm(GemmError::Comm(c)) => Some(c),
            Error::Gemm(GemmError::Dist(e)) => dist(e),
            Error::Lu(LuError::Comm(c)) => Some(c),
            Error::Lu(LuError::Dist(e)) => dist(e),
            Error::Cholesky(CholeskyError::Comm(c)) => Some(c),
            Error::Cholesky(CholeskyError::Dist(e)) => dist(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_errors_stay_matchable_and_no_message_repeats_down_the_chain() {
        let e: Error = LuError::Dist(DistError::Comm(CommError::Deadlock)).into();
        assert!(matches!(
            &e,
            Error::Lu(LuError::Dist(DistError::Comm(CommError::Deadlock)))
        ));
        assert_eq!(e.comm_failure(), Some(&CommError::Deadlock));
        assert!(e.to_string().contains("deadlock"));
        let mut messages = vec![e.to_string()];
        let mut next = std::error::Error::source(&e);
        while let Some(inner) = next {
            messages.push(inner.to_string());
            next = inner.source();
        }
        for pair in messages.windows(2) {
            assert!(!pair[0].contains(&pair[1]), "{messages:?}");
        }
        // A boxed error (what `?` in `main` gives) keeps the type.
        let boxed: Box<dyn std::error::Error> = Box::new(e);
        assert!(boxed.downcast_ref::<Error>().is_some());
    }

    #[test]
    fn every_crate_error_converts_and_stays_matchable() {
        fn lift<E>(e: E) -> Result<(), Error>
        where
            Error: From<E>,
        {
            Err(e)?
        }
        let e = lift(LuError::Singular { column: 3 }).unwrap_err();
        assert!(matches!(e, Error::Lu(LuError::Singular { column: 3 })));
        assert_eq!(e.to_string(), LuError::Singular { column: 3 }.to_string());
        let d = DistError::InvalidLayout("x".into());
        assert!(matches!(lift(d.clone()), Err(Error::Dist(e)) if e == d));
        let g = GemmError::InnerDimensions {
            op_a: (1, 2),
            op_b: (3, 4),
        };
        assert!(matches!(lift(g.clone()), Err(Error::Gemm(e)) if e == g));
        let c = CommError::RankOutOfRange {
            what: "dest",
            rank: 5,
            size: 2,
        };
        assert!(matches!(lift(c.clone()), Err(Error::Comm(e)) if e == c));
    }
}
