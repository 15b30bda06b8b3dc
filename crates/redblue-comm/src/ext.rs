//! [`CommunicatorExt`]: operations derived from the core [`Communicator`] methods.

use crate::{CommError, Communicator};
use redblue_core::{Datum, ReduceOp};

/// The tag of [`CommunicatorExt::tree_broadcast`]'s messages.
pub const TREE_TAG: u32 = 0x7472_6565;

/// Derived operations, available on every [`Communicator`].
pub trait CommunicatorExt: Communicator {
    /// Sends `buf` from `members[0]` to the other ranks of `members` along a binomial tree:
    /// in round `d = 1, 2, 4, …` every member at position `q < d` sends to position `q + d`.
    /// The root sends `⌈log₂ |members|⌉` copies and every other member receives one, where a
    /// linear broadcast would have the root send them all; [`crate::volume::tree_sends`] is
    /// how many a position sends. Ranks outside `members` do nothing. Point-to-point messages
    /// with the tag [`TREE_TAG`].
    ///
    /// # Collective
    /// Over `members` (every member passes the same list).
    /// # Errors
    /// A communication failure.
    fn tree_broadcast<T: Datum>(&self, buf: &mut [T], members: &[usize]) -> Result<(), CommError> {
        let Some(q) = members.iter().position(|&r| r == self.rank()) else {
            return Ok(());
        };
        let mut d = 1;
        while d < members.len() {
            if q < d && q + d < members.len() {
                self.send(buf, members[q + d], TREE_TAG)?;
            } else if (d..2 * d).contains(&q) {
                self.recv(buf, members[q - d], TREE_TAG)?;
            }
            d *= 2;
        }
        Ok(())
    }

    /// The root's part of [`CommunicatorExt::tree_broadcast`] started, not waited for: `buf`
    /// posted to the root's children (the same messages, in the same order), the requests
    /// returned. The root goes on while its children are still busy; the other members call
    /// `tree_broadcast` as usual, the root does not. Nothing is posted unless this rank is
    /// `members[0]`.
    ///
    /// # Errors
    /// A communication failure.
    fn post_tree_broadcast<'a, T: Datum>(
        &'a self,
        buf: &'a [T],
        members: &[usize],
    ) -> Result<Vec<Self::Request<'a>>, CommError> {
        if members.first() != Some(&self.rank()) {
            return Ok(Vec::new());
        }
        std::iter::successors(Some(1usize), |d| d.checked_mul(2))
            .take_while(|&d| d < members.len())
            .map(|d| self.isend(buf, members[d], TREE_TAG))
            .collect()
    }

    /// `op` over every rank's single value, returned on every rank.
    ///
    /// # Collective
    /// # Errors
    /// As [`Communicator::all_reduce`].
    fn all_reduce_one<T: Datum>(&self, x: T, op: ReduceOp) -> Result<T, CommError> {
        let mut out = [x];
        self.all_reduce(&[x], &mut out, op)?;
        Ok(out[0])
    }

    /// In-place all-reduce of `buf`.
    ///
    /// # Collective
    /// # Errors
    /// As [`Communicator::all_reduce`].
    fn all_reduce_in_place<T: Datum>(&self, buf: &mut [T], op: ReduceOp) -> Result<(), CommError> {
        let send = buf.to_vec();
        self.all_reduce(&send, buf, op)
    }

    /// Whether `flag` is true on any rank.
    ///
    /// # Collective
    /// # Errors
    /// A failed peer or a backend error.
    fn any(&self, flag: bool) -> Result<bool, CommError> {
        Ok(self.all_reduce_one(u32::from(flag), ReduceOp::Max)? == 1)
    }

    /// Whether `flag` is true on every rank.
    ///
    /// # Collective
    /// # Errors
    /// A failed peer or a backend error.
    fn all(&self, flag: bool) -> Result<bool, CommError> {
        Ok(self.all_reduce_one(u32::from(flag), ReduceOp::Min)? == 1)
    }

    /// `root`'s value of `x`, on every rank.
    ///
    /// # Collective
    /// # Errors
    /// As [`Communicator::broadcast`].
    fn broadcast_one<T: Datum>(&self, x: T, root: usize) -> Result<T, CommError> {
        let mut buf = [x];
        self.broadcast(&mut buf, root)?;
        Ok(buf[0])
    }

    /// Every rank's single value, in rank order, on every rank.
    ///
    /// # Collective
    /// # Errors
    /// As [`Communicator::all_gather`].
    fn all_gather_one<T: Datum>(&self, x: T) -> Result<Vec<T>, CommError> {
        let mut out = vec![x; self.size()];
        self.all_gather(&[x], &mut out)?;
        Ok(out)
    }

    /// The lowest rank whose `failed` is true, on every rank (`None` if no rank failed): the
    /// building block for returning the same `Result` everywhere.
    ///
    /// # Collective
    /// # Errors
    /// A failed peer or a backend error.
    fn agree_failed_rank(&self, failed: bool) -> Result<Option<usize>, CommError> {
        let me = if failed { self.rank() } else { usize::MAX };
        let first = self.all_reduce_one(me, ReduceOp::Min)?;
        Ok((first != usize::MAX).then_some(first))
    }
}

impl<C: Communicator> CommunicatorExt for C {}
