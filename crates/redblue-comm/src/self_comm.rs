//! [`SelfComm`]: the communicator of a single process.

use crate::thread::{ThreadComm, ThreadRequest};
use crate::{CommError, CommStats, Communicator};
use redblue_core::{Datum, ReduceOp};

/// A communicator with one rank: the process itself. Collectives are copies; no word ever
/// crosses a rank boundary, so its counters stay zero.
///
/// # Examples
/// ```
/// use redblue_comm::{Communicator, ReduceOp, SelfComm};
/// let comm = SelfComm::new();
/// let mut out = [0.0];
/// comm.all_reduce(&[2.5], &mut out, ReduceOp::Sum).unwrap();
/// assert_eq!((comm.rank(), comm.size(), out[0]), (0, 1, 2.5));
/// ```
#[derive(Debug)]
pub struct SelfComm(ThreadComm);

impl SelfComm {
    /// The single-process communicator.
    pub fn new() -> Self {
        SelfComm(ThreadComm::solo())
    }
}

impl Default for SelfComm {
    fn default() -> Self {
        Self::new()
    }
}

impl Communicator for SelfComm {
    type Request<'a> = ThreadRequest<'a>;

    fn rank(&self) -> usize {
        0
    }
    fn size(&self) -> usize {
        1
    }
    fn split(&self, color: u32, key: usize) -> Result<Self, CommError> {
        self.0.split(color, key).map(SelfComm)
    }
    fn barrier(&self) -> Result<(), CommError> {
        Ok(())
    }
    fn send<T: Datum>(&self, buf: &[T], dest: usize, tag: u32) -> Result<(), CommError> {
        self.0.send(buf, dest, tag)
    }
    fn recv<T: Datum>(&self, buf: &mut [T], src: usize, tag: u32) -> Result<(), CommError> {
        self.0.recv(buf, src, tag)
    }
    fn isend<'a, T: Datum>(
        &'a self,
        buf: &'a [T],
        dest: usize,
        tag: u32,
    ) -> Result<ThreadRequest<'a>, CommError> {
        self.0.isend(buf, dest, tag)
    }
    fn irecv<'a, T: Datum>(
        &'a self,
        buf: &'a mut [T],
        src: usize,
        tag: u32,
    ) -> Result<ThreadRequest<'a>, CommError> {
        self.0.irecv(buf, src, tag)
    }
    fn broadcast<T: Datum>(&self, buf: &mut [T], root: usize) -> Result<(), CommError> {
        self.0.broadcast(buf, root)
    }
    fn reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
        root: usize,
    ) -> Result<(), CommError> {
        self.0.reduce(send, recv, op, root)
    }
    fn all_reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        self.0.all_reduce(send, recv, op)
    }
    fn gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        root: usize,
    ) -> Result<(), CommError> {
        self.0.gather_v(send, recv, counts, root)
    }
    fn all_gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<(), CommError> {
        self.0.all_gather_v(send, recv, counts)
    }
    fn scatter_v<T: Datum>(
        &self,
        send: &[T],
        counts: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<(), CommError> {
        self.0.scatter_v(send, counts, recv, root)
    }
    fn reduce_scatter<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        self.0.reduce_scatter(send, recv, counts, op)
    }
    fn all_to_all_v<T: Datum>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<(), CommError> {
        self.0.all_to_all_v(send, send_counts, recv, recv_counts)
    }
    fn stats(&self) -> CommStats {
        self.0.stats()
    }
    fn reset_stats(&self) {
        self.0.reset_stats()
    }
}
