//! [`Move`]: a set of rows × a set of columns going from one rank to another. Every rank builds
//! the same list of moves from global facts (the grid, the active rows, the pivots), so counts
//! agree without asking; [`exchange`] runs a list as one `all_to_all_v`, and
//! [`Move::transfers`] gives what that call counts, for the cost model.

use redblue_comm::volume::{self, Transfers};
use redblue_comm::{CommError, Communicator};
use redblue_core::Scalar;

/// Rows × columns (global indices) of some matrix moving from rank `from` to rank `to`,
/// column-major in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Move {
    pub from: usize,
    pub to: usize,
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
}

impl Move {
    pub(crate) fn words(&self) -> usize {
        self.rows.len() * self.cols.len()
    }

    /// What [`exchange`] of `moves` counts on `rank` (of `p`).
    pub(crate) fn transfers(moves: &[Move], rank: usize, p: usize) -> Transfers {
        let (mut send, mut recv) = (vec![0; p], vec![0; p]);
        for m in moves {
            if m.from == rank {
                send[m.to] += m.words();
            }
            if m.to == rank {
                recv[m.from] += m.words();
            }
        }
        volume::all_to_all_v(&send, &recv)
    }
}

/// Runs `moves` on every rank of `comm` (one `all_to_all_v`; a move to oneself is a copy),
/// this rank's outgoing elements read with `read(row, col)`; apply what arrived with
/// [`Received::apply`].
///
/// # Collective
/// # Errors
/// A communication failure.
pub(crate) fn exchange<'m, T: Scalar, C: Communicator>(
    comm: &C,
    moves: &'m [Move],
    read: impl Fn(usize, usize) -> T,
) -> Result<Received<'m, T>, CommError> {
    let (me, p) = (comm.rank(), comm.size());
    let (mut send_counts, mut recv_counts) = (vec![0; p], vec![0; p]);
    for m in moves {
        if m.from == me {
            send_counts[m.to] += m.words();
        }
        if m.to == me {
            recv_counts[m.from] += m.words();
        }
    }
    let mut send = Vec::with_capacity(send_counts.iter().sum());
    for dest in 0..p {
        for m in moves.iter().filter(|m| m.from == me && m.to == dest) {
            for &j in &m.cols {
                send.extend(m.rows.iter().map(|&i| read(i, j)));
            }
        }
    }
    let mut recv = vec![T::zero(); recv_counts.iter().sum()];
    comm.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    Ok(Received { me, p, moves, recv })
}

/// What [`exchange`] brought this rank.
pub(crate) struct Received<'m, T> {
    me: usize,
    p: usize,
    moves: &'m [Move],
    recv: Vec<T>,
}

impl<T: Copy> Received<'_, T> {
    /// Hands every incoming element to `write(row, col, value)`.
    pub(crate) fn apply(self, mut write: impl FnMut(usize, usize, T)) {
        let mut at = 0;
        for src in 0..self.p {
            for m in self
                .moves
                .iter()
                .filter(|m| m.from == src && m.to == self.me)
            {
                for &j in &m.cols {
                    for &i in &m.rows {
                        write(i, j, self.recv[at]);
                        at += 1;
                    }
                }
            }
        }
    }
}
