//! The [`Communicator`] trait and its backends: [`SelfComm`] (one process), [`ThreadComm`]
//! (ranks as threads of one process, started by [`run_ranks`]) and `MpiComm` (feature `mpi`).
//!
//! Every backend counts the words, bytes and messages each rank sends and receives
//! ([`CommStats`]), across all sub-communicators of its world, by the same rules (see
//! [`volume`]), so one program reports the same counters on every backend.
//!
//! # Examples
//! ```
//! use redblue_comm::{run_ranks, Communicator, ReduceOp};
//!
//! let sums = run_ranks(4, |comm| {
//!     let mine = [comm.rank() as f64];
//!     let mut total = [0.0];
//!     comm.all_reduce(&mine, &mut total, ReduceOp::Sum).unwrap();
//!     total[0]
//! });
//! assert_eq!(sums, vec![6.0; 4]);
//! ```

mod error;
mod ext;
mod grid;
#[cfg(feature = "mpi")]
mod mpi;
mod self_comm;
mod stats;
mod thread;
mod validate;
pub mod volume;

pub use error::CommError;
pub use ext::{CommunicatorExt, TREE_TAG};
pub use grid::{Grid2d, Grid3d, GridOrder, GridShape2d, GridShape3d};
#[cfg(feature = "mpi")]
pub use mpi::{MpiComm, MpiUniverse};
pub use redblue_core::{Datum, DatumKind, ReduceOp};
pub use self_comm::SelfComm;
pub use stats::{CommStats, Counters};
pub use thread::{run_ranks, ThreadComm};

/// A pending non-blocking operation.
#[must_use = "a request must be waited on"]
pub trait Request {
    /// Blocks until the operation completes.
    ///
    /// # Errors
    /// What the blocking version of the operation would have returned.
    fn wait(self) -> Result<(), CommError>;
}

/// Waits for every request, returning the first error.
///
/// # Errors
/// The first error of any request; all requests are still waited on.
pub fn wait_all<R: Request>(requests: impl IntoIterator<Item = R>) -> Result<(), CommError> {
    let mut first = Ok(());
    for r in requests {
        let res = r.wait();
        if first.is_ok() {
            first = res;
        }
    }
    first
}

/// The most ranks anything in redblue is planned for or run on: MPI numbers ranks with a C
/// `int`. Planners refuse more (the same error for any larger count, instead of enumerating
/// grids for ever).
pub const MAX_RANKS: usize = i32::MAX as usize;

/// A group of ranks that exchange data: the one interface every redblue algorithm is written
/// against.
///
/// Semantics follow MPI: collectives must be called by every rank of the communicator in the
/// same order with matching arguments; point-to-point messages between a pair of ranks with the
/// same tag are received in the order they were sent. Counts are `usize` (backends split large
/// messages as they must). Buffers are packed: the `v` variants take counts and lay the pieces
/// out one after another in rank order.
///
/// Arguments that must be equal on every rank (counts of `all_gather_v`, the root, the reduction
/// operator) are validated on every rank, so an invalid one gives the same error everywhere;
/// ranks passing *different* values break the contract, as in MPI, and are not detected.
/// Arguments significant on one rank only (the receive buffer at a root) are checked on that
/// rank, and the other ranks then fail in their own way (on `ThreadComm` with
/// [`CommError::Deadlock`] or a length mismatch, never a hang).
///
/// Accounting: every element that crosses a rank boundary is counted as one word (a complex
/// number is one word) and `size_of::<T>()` bytes, and every non-empty transfer to another rank
/// as one message; [`volume`] gives the rules per call. `barrier` and `split` move no data.
pub trait Communicator: Sized {
    /// A pending `isend` or `irecv`.
    type Request<'a>: Request
    where
        Self: 'a;

    /// This rank, in `0..size()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn size(&self) -> usize;

    /// Splits into sub-communicators: ranks passing the same `color` form one, ordered by
    /// `(key, rank)`.
    ///
    /// # Collective
    /// Every rank calls it. Counters of the new communicator are this rank's counters: traffic
    /// on sub-communicators adds to the same [`CommStats`].
    ///
    /// # Errors
    /// [`CommError::PeerFailed`] or a backend error.
    fn split(&self, color: u32, key: usize) -> Result<Self, CommError>;

    /// Blocks until every rank has entered the barrier.
    ///
    /// # Errors
    /// [`CommError::PeerFailed`] or a backend error.
    fn barrier(&self) -> Result<(), CommError>;

    /// Sends `buf` to `dest` with `tag`.
    ///
    /// # Errors
    /// `dest` out of range, a failed peer, or a backend error.
    fn send<T: Datum>(&self, buf: &[T], dest: usize, tag: u32) -> Result<(), CommError>;

    /// Receives a message from `src` with `tag` into `buf`, whose length must equal the
    /// message's.
    ///
    /// # Errors
    /// `src` out of range, a message of another length or type, a failed peer, or a backend
    /// error.
    fn recv<T: Datum>(&self, buf: &mut [T], src: usize, tag: u32) -> Result<(), CommError>;

    /// Starts sending `buf` to `dest`; the buffer stays borrowed until the request is waited on.
    ///
    /// # Errors
    /// As [`Communicator::send`].
    fn isend<'a, T: Datum>(
        &'a self,
        buf: &'a [T],
        dest: usize,
        tag: u32,
    ) -> Result<Self::Request<'a>, CommError>;

    /// Starts receiving from `src` into `buf`; the data is there once the request is waited on.
    ///
    /// # Errors
    /// As [`Communicator::recv`] (length errors may surface only at `wait`).
    fn irecv<'a, T: Datum>(
        &'a self,
        buf: &'a mut [T],
        src: usize,
        tag: u32,
    ) -> Result<Self::Request<'a>, CommError>;

    /// Sends `send` to `dest` and receives `recv` from `src`, without deadlock.
    ///
    /// # Errors
    /// As [`Communicator::send`] and [`Communicator::recv`].
    fn sendrecv<T: Datum>(
        &self,
        send: &[T],
        dest: usize,
        recv: &mut [T],
        src: usize,
        tag: u32,
    ) -> Result<(), CommError> {
        let pending = self.irecv(recv, src, tag)?;
        let sent = self.send(send, dest, tag);
        let received = pending.wait();
        sent.and(received)
    }

    /// Copies `buf` of `root` into `buf` of every rank (all ranks pass the same length).
    ///
    /// # Collective
    /// # Errors
    /// `root` out of range, a length mismatch, a failed peer.
    fn broadcast<T: Datum>(&self, buf: &mut [T], root: usize) -> Result<(), CommError>;

    /// Element-wise `op` of every rank's `send` into `recv` on `root` (`recv` is ignored on other
    /// ranks and may be empty there).
    ///
    /// # Collective
    /// # Errors
    /// `root` out of range, `op` undefined for `T`, length mismatches, a failed peer.
    fn reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
        root: usize,
    ) -> Result<(), CommError>;

    /// Element-wise `op` of every rank's `send` into every rank's `recv`.
    ///
    /// # Collective
    /// # Errors
    /// `op` undefined for `T`, length mismatches, a failed peer.
    fn all_reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
    ) -> Result<(), CommError>;

    /// Concatenates every rank's `send` (of length `counts[rank]`) into `recv` on `root`.
    /// `counts` and `recv` are significant on `root` only.
    ///
    /// # Collective
    /// # Errors
    /// `root` out of range, lengths that disagree with `counts`, a failed peer.
    fn gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        root: usize,
    ) -> Result<(), CommError>;

    /// Concatenates every rank's `send` (of length `counts[rank]`) into every rank's `recv`.
    ///
    /// # Collective
    /// # Errors
    /// Lengths that disagree with `counts`, a failed peer.
    fn all_gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<(), CommError>;

    /// Hands piece `r` of `root`'s `send` (pieces of lengths `counts`, one after another) to rank
    /// `r`'s `recv`. `send` and `counts` are significant on `root` only.
    ///
    /// # Collective
    /// # Errors
    /// `root` out of range, lengths that disagree with `counts`, a failed peer.
    fn scatter_v<T: Datum>(
        &self,
        send: &[T],
        counts: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<(), CommError>;

    /// Element-wise `op` over ranks of `send` (length `sum(counts)`), then piece `r` (length
    /// `counts[r]`) of the result to rank `r`'s `recv`.
    ///
    /// # Collective
    /// # Errors
    /// `op` undefined for `T`, lengths that disagree with `counts`, a failed peer.
    fn reduce_scatter<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: ReduceOp,
    ) -> Result<(), CommError>;

    /// Personalised all-to-all: piece `j` of `send` (length `send_counts[j]`) goes to rank `j`,
    /// and piece `i` of `recv` (length `recv_counts[i]`) comes from rank `i`.
    ///
    /// # Collective
    /// # Errors
    /// Lengths that disagree with the counts, a sender whose count disagrees with the
    /// receiver's, a failed peer.
    fn all_to_all_v<T: Datum>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<(), CommError>;

    /// Concatenates every rank's `send` (all of one length) into `root`'s `recv`.
    ///
    /// # Collective
    /// # Errors
    /// As [`Communicator::gather_v`].
    fn gather<T: Datum>(&self, send: &[T], recv: &mut [T], root: usize) -> Result<(), CommError> {
        let counts = vec![send.len(); self.size()];
        self.gather_v(send, recv, &counts, root)
    }

    /// Concatenates every rank's `send` (all of one length) into every rank's `recv`.
    ///
    /// # Collective
    /// # Errors
    /// As [`Communicator::all_gather_v`].
    fn all_gather<T: Datum>(&self, send: &[T], recv: &mut [T]) -> Result<(), CommError> {
        let counts = vec![send.len(); self.size()];
        self.all_gather_v(send, recv, &counts)
    }

    /// Hands equal pieces of `root`'s `send` to every rank's `recv`.
    ///
    /// # Collective
    /// # Errors
    /// As [`Communicator::scatter_v`].
    fn scatter<T: Datum>(&self, send: &[T], recv: &mut [T], root: usize) -> Result<(), CommError> {
        let counts = vec![recv.len(); self.size()];
        self.scatter_v(send, &counts, recv, root)
    }

    /// How many ranks of this communicator's world run in this process, sharing its cores:
    /// every rank for [`ThreadComm`], one for a process per rank. Algorithms that overlap
    /// communication with work on other ranks ask it: when the ranks outnumber the cores, a
    /// rank waiting for a message may wait for a core first.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::{run_ranks, Communicator, SelfComm};
    ///
    /// assert_eq!(run_ranks(3, |comm| comm.ranks_in_process()), vec![3; 3]);
    /// assert_eq!(SelfComm::new().ranks_in_process(), 1);
    /// ```
    fn ranks_in_process(&self) -> usize {
        1
    }

    /// This rank's communication counters (this rank, all sub-communicators of its world).
    fn stats(&self) -> CommStats;

    /// Sets this rank's counters to zero.
    fn reset_stats(&self);
}

/// Prefix sums of `counts`: `displs[r]..displs[r + 1]` is piece `r`.
pub(crate) fn displacements(counts: &[usize]) -> Vec<usize> {
    let mut d = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0;
    d.push(0);
    for &c in counts {
        acc += c;
        d.push(acc);
    }
    d
}

/// `acc[i] = acc[i] op x[i]`.
pub(crate) fn combine_into<T: Datum>(acc: &mut [T], x: &[T], op: ReduceOp) {
    for (a, &b) in acc.iter_mut().zip(x) {
        // `op` was checked by `validate` before any data moved.
        *a = T::combine(op, *a, b).expect("reduction operator checked before use");
    }
}
