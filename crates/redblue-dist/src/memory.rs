//! Memory a collective run needs, asked for before any data moves and agreed on by every rank:
//! a buffer the machine cannot give is then [`DistError::OutOfMemory`] on every rank — not an
//! abort, and not one rank leaving the others waiting in the next collective.
//!
//! A run collects what its rank could not have ([`Refusals`]: buffers taken fallibly, trial
//! reservations of the working memory it will take later) and calls [`Refusals::agree`]: one
//! all-reduce of one word, which the run's cost model counts.

use crate::DistError;
use redblue_comm::{Communicator, CommunicatorExt, ReduceOp};

/// What one rank could not allocate: the largest refused request, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Refusals {
    worst_bytes: f64,
}

impl Refusals {
    /// No refusal yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes a refused request of `bytes` bytes.
    pub fn refused(&mut self, bytes: f64) {
        self.worst_bytes = self.worst_bytes.max(bytes);
    }

    /// Asks the allocator for `bytes` bytes and gives them back at once: a request the machine
    /// refuses now (the address space, the kernel's overcommit limit) is noted, so that the
    /// buffers taken later from the same memory are known to be available.
    pub fn trial(&mut self, bytes: u64) {
        let mut trial: Vec<u8> = Vec::new();
        let fits = usize::try_from(bytes).is_ok_and(|b| trial.try_reserve_exact(b).is_ok());
        if !fits {
            self.refused(bytes as f64);
        }
    }

    /// Whether this rank has noted a refusal.
    pub fn any(&self) -> bool {
        self.worst_bytes > 0.0
    }

    /// Every rank's refusals, agreed: `Ok` on every rank if none had one, else the same
    /// [`DistError::OutOfMemory`] on every rank, naming `what` and the largest refused request.
    ///
    /// # Collective
    /// One all-reduce of one `f64` over `comm`.
    ///
    /// # Errors
    /// As above; a communication failure.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::{run_ranks, Communicator};
    /// use redblue_dist::{memory::Refusals, DistError};
    ///
    /// let out = run_ranks(3, |comm| {
    ///     let mut refusals = Refusals::new();
    ///     // Rank 1 asks for more than any machine has.
    ///     refusals.trial(if comm.rank() == 1 { u64::MAX / 2 } else { 1 << 10 });
    ///     refusals.agree(&comm, "the example's buffers")
    /// });
    /// for r in out {
    ///     assert!(matches!(r, Err(DistError::OutOfMemory { bytes, .. }) if bytes > 1 << 62));
    /// }
    /// ```
    pub fn agree<C: Communicator>(self, comm: &C, what: &'static str) -> Result<(), DistError> {
        let worst = comm.all_reduce_one(self.worst_bytes, ReduceOp::Max)?;
        if worst > 0.0 {
            return Err(DistError::OutOfMemory {
                what,
                bytes: worst as u128,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redblue_comm::run_ranks;

    #[test]
    fn nothing_refused_is_ok_everywhere_and_one_refusal_is_the_same_error_everywhere() {
        let ok = run_ranks(4, |comm| {
            let mut r = Refusals::new();
            r.trial(1 << 20);
            r.agree(&comm, "test buffers")
        });
        assert!(ok.iter().all(|r| r.is_ok()));
        let refused = run_ranks(4, |comm| {
            let mut r = Refusals::new();
            if comm.rank() == 3 {
                r.refused(12345.0);
            }
            r.agree(&comm, "test buffers")
        });
        for r in refused {
            assert_eq!(
                r,
                Err(DistError::OutOfMemory {
                    what: "test buffers",
                    bytes: 12345
                })
            );
        }
    }
}
