//! Argument validation shared by every backend, so that an invalid call gives the same error,
//! found by the same sequence of checks, on `ThreadComm` and on `MpiComm`.
//!
//! There is one function per call. Each checks only what every backend can check before any data
//! moves (ranks, the reduction operator, count vectors and the lengths they imply), in a fixed
//! order, and returns what the backend needs next (usually the displacements of the counts). What
//! a backend finds while data moves (a received piece of the wrong length or type, a failed peer)
//! is its own to report, with [`check_len`] for lengths.
//!
//! Functions named `*_root` check what is significant on the root only; the backend calls them on
//! the root, after the checks every rank makes.

use crate::{displacements, CommError};
use redblue_core::{Datum, ReduceOp};

/// Checks that `rank < size`.
fn check_rank(what: &'static str, rank: usize, size: usize) -> Result<(), CommError> {
    if rank < size {
        Ok(())
    } else {
        Err(CommError::RankOutOfRange { what, rank, size })
    }
}

/// Checks a buffer length.
pub(crate) fn check_len(
    what: &'static str,
    expected: usize,
    found: usize,
) -> Result<(), CommError> {
    if expected == found {
        Ok(())
    } else {
        Err(CommError::LengthMismatch {
            what,
            expected,
            found,
        })
    }
}

/// Checks that `op` is defined for `T`.
fn check_op<T: Datum>(op: ReduceOp) -> Result<(), CommError> {
    if T::supports(op) {
        Ok(())
    } else {
        Err(CommError::UnsupportedReduction { op, kind: T::KIND })
    }
}

/// `send`/`isend` on a communicator of `p` ranks: the destination.
pub(crate) fn send(p: usize, dest: usize) -> Result<(), CommError> {
    check_rank("destination", dest, p)
}

/// `recv`/`irecv` on a communicator of `p` ranks: the source.
pub(crate) fn recv(p: usize, src: usize) -> Result<(), CommError> {
    check_rank("source", src, p)
}

/// `broadcast`: the root.
pub(crate) fn broadcast(p: usize, root: usize) -> Result<(), CommError> {
    check_rank("root", root, p)
}

/// `reduce`, on every rank: the operator, then the root.
pub(crate) fn reduce<T: Datum>(p: usize, op: ReduceOp, root: usize) -> Result<(), CommError> {
    check_op::<T>(op)?;
    check_rank("root", root, p)
}

/// `reduce`, on the root after [`reduce`]: the receive buffer has the send buffer's length.
pub(crate) fn reduce_root(send_len: usize, recv_len: usize) -> Result<(), CommError> {
    check_len("reduce receive buffer", send_len, recv_len)
}

/// `all_reduce`: the operator, then the receive buffer has the send buffer's length.
pub(crate) fn all_reduce<T: Datum>(
    send_len: usize,
    recv_len: usize,
    op: ReduceOp,
) -> Result<(), CommError> {
    check_op::<T>(op)?;
    check_len("all_reduce receive buffer", send_len, recv_len)
}

/// `gather_v`, on every rank: the root.
pub(crate) fn gather_v(p: usize, root: usize) -> Result<(), CommError> {
    check_rank("root", root, p)
}

/// `gather_v`, on the root after [`gather_v`]: `p` counts, the root's own send buffer of
/// `counts[root]`, a receive buffer of their sum. Returns the displacements of `counts`.
pub(crate) fn gather_v_root(
    p: usize,
    root: usize,
    send_len: usize,
    recv_len: usize,
    counts: &[usize],
) -> Result<Vec<usize>, CommError> {
    check_len("gather_v counts", p, counts.len())?;
    check_len("gather_v send buffer", counts[root], send_len)?;
    let d = displacements(counts);
    check_len("gather_v receive buffer", d[p], recv_len)?;
    Ok(d)
}

/// `all_gather_v` on rank `me`: `p` counts, a send buffer of `counts[me]`, a receive buffer of
/// their sum. Returns the displacements of `counts`.
pub(crate) fn all_gather_v(
    p: usize,
    me: usize,
    send_len: usize,
    recv_len: usize,
    counts: &[usize],
) -> Result<Vec<usize>, CommError> {
    check_len("all_gather_v counts", p, counts.len())?;
    check_len("all_gather_v send buffer", counts[me], send_len)?;
    let d = displacements(counts);
    check_len("all_gather_v receive buffer", d[p], recv_len)?;
    Ok(d)
}

/// `scatter_v`, on every rank: the root.
pub(crate) fn scatter_v(p: usize, root: usize) -> Result<(), CommError> {
    check_rank("root", root, p)
}

/// `scatter_v`, on the root after [`scatter_v`]: `p` counts, a send buffer of their sum, the
/// root's own receive buffer of `counts[root]`. Returns the displacements of `counts`.
pub(crate) fn scatter_v_root(
    p: usize,
    root: usize,
    send_len: usize,
    counts: &[usize],
    recv_len: usize,
) -> Result<Vec<usize>, CommError> {
    check_len("scatter_v counts", p, counts.len())?;
    let d = displacements(counts);
    check_len("scatter_v send buffer", d[p], send_len)?;
    check_len("scatter_v receive buffer", counts[root], recv_len)?;
    Ok(d)
}

/// `reduce_scatter` on rank `me`: the operator, `p` counts, a receive buffer of `counts[me]`, a
/// send buffer of their sum. Returns the displacements of `counts`.
pub(crate) fn reduce_scatter<T: Datum>(
    p: usize,
    me: usize,
    send_len: usize,
    recv_len: usize,
    counts: &[usize],
    op: ReduceOp,
) -> Result<Vec<usize>, CommError> {
    check_op::<T>(op)?;
    check_len("reduce_scatter counts", p, counts.len())?;
    check_len("reduce_scatter receive buffer", counts[me], recv_len)?;
    let d = displacements(counts);
    check_len("reduce_scatter send buffer", d[p], send_len)?;
    Ok(d)
}

/// `all_to_all_v` on rank `me`: `p` send counts, `p` receive counts, a send buffer and a receive
/// buffer of their sums, and the piece to itself of the same length on both sides. Returns the
/// displacements of the send counts and of the receive counts.
pub(crate) fn all_to_all_v(
    p: usize,
    me: usize,
    send_len: usize,
    send_counts: &[usize],
    recv_len: usize,
    recv_counts: &[usize],
) -> Result<(Vec<usize>, Vec<usize>), CommError> {
    check_len("all_to_all_v send counts", p, send_counts.len())?;
    check_len("all_to_all_v receive counts", p, recv_counts.len())?;
    let sd = displacements(send_counts);
    let rd = displacements(recv_counts);
    check_len("all_to_all_v send buffer", sd[p], send_len)?;
    check_len("all_to_all_v receive buffer", rd[p], recv_len)?;
    check_len(
        "all_to_all_v piece to self",
        send_counts[me],
        recv_counts[me],
    )?;
    Ok((sd, rd))
}

#[cfg(test)]
mod tests {
    use super::*;
    use redblue_core::{c64, DatumKind};

    fn len_err(what: &'static str, expected: usize, found: usize) -> CommError {
        CommError::LengthMismatch {
            what,
            expected,
            found,
        }
    }

    #[test]
    fn ranks_are_checked_by_role() {
        assert_eq!(send(3, 2), Ok(()));
        assert_eq!(
            send(3, 3),
            Err(CommError::RankOutOfRange {
                what: "destination",
                rank: 3,
                size: 3
            })
        );
        assert_eq!(
            recv(2, 5),
            Err(CommError::RankOutOfRange {
                what: "source",
                rank: 5,
                size: 2
            })
        );
        for check in [broadcast, gather_v, scatter_v] {
            assert_eq!(
                check(4, 4),
                Err(CommError::RankOutOfRange {
                    what: "root",
                    rank: 4,
                    size: 4
                })
            );
        }
    }

    #[test]
    fn the_operator_is_checked_before_anything_else() {
        let unsupported = Err(CommError::UnsupportedReduction {
            op: ReduceOp::Max,
            kind: DatumKind::C64,
        });
        assert_eq!(reduce::<c64>(2, ReduceOp::Max, 9), unsupported);
        assert_eq!(all_reduce::<c64>(1, 2, ReduceOp::Max), unsupported);
        assert_eq!(
            reduce_scatter::<c64>(2, 0, 7, 7, &[1], ReduceOp::Max).map(drop),
            unsupported
        );
        assert_eq!(
            reduce::<f64>(2, ReduceOp::Max, 2),
            Err(CommError::RankOutOfRange {
                what: "root",
                rank: 2,
                size: 2
            })
        );
    }

    #[test]
    fn count_vectors_are_checked_before_the_lengths_they_imply() {
        let sum = ReduceOp::Sum;
        assert_eq!(
            reduce_scatter::<f64>(3, 1, 0, 0, &[1, 2], sum),
            Err(len_err("reduce_scatter counts", 3, 2))
        );
        assert_eq!(
            reduce_scatter::<f64>(2, 1, 0, 0, &[1, 2], sum),
            Err(len_err("reduce_scatter receive buffer", 2, 0))
        );
        assert_eq!(
            reduce_scatter::<f64>(2, 1, 4, 2, &[1, 2], sum),
            Err(len_err("reduce_scatter send buffer", 3, 4))
        );
        assert_eq!(
            reduce_scatter::<f64>(2, 1, 3, 2, &[1, 2], sum),
            Ok(vec![0, 1, 3])
        );
        assert_eq!(
            all_to_all_v(2, 0, 3, &[1, 2], 3, &[2, 1]),
            Err(len_err("all_to_all_v piece to self", 1, 2))
        );
        assert_eq!(
            all_to_all_v(2, 0, 3, &[1, 2], 2, &[1, 1]),
            Ok((vec![0, 1, 3], vec![0, 1, 2]))
        );
        assert_eq!(
            scatter_v_root(2, 0, 5, &[1, 3], 2),
            Err(len_err("scatter_v send buffer", 4, 5))
        );
        assert_eq!(
            gather_v_root(2, 1, 1, 4, &[1, 3]),
            Err(len_err("gather_v send buffer", 3, 1))
        );
        assert_eq!(
            all_gather_v(2, 1, 3, 5, &[1, 3]),
            Err(len_err("all_gather_v receive buffer", 4, 5))
        );
    }
}
