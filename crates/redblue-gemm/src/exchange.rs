//! The two data movements of the multiplication, on any layouts, each one `all_to_all_v`:
//! [`gather_blocks`] brings every rank the rectangle of `op(X)` it needs (several ranks may
//! need the same elements: COSMA's broadcasts), and [`reduce_blocks`] sums every rank's partial
//! rectangle of `C` into `C`'s layout (COSMA's reduction).
//!
//! Both are planned from facts every rank knows (the layouts and every rank's rectangle), so
//! every rank computes the same counts without asking; a rank sends each piece straight to the
//! rank that needs it, so the counters follow `redblue_comm::volume`'s `all_to_all_v` rule.

use redblue_comm::{CommError, Communicator};
use redblue_core::{Op, Scalar};
use redblue_dist::{Layout, LocalBlock};
use std::ops::Range;

/// A rectangle of a matrix: rows and columns.
pub(crate) type Rect = (Range<usize>, Range<usize>);

fn intersect(a: &Range<usize>, b: &Range<usize>) -> Range<usize> {
    a.start.max(b.start)..a.end.min(b.end).max(a.start.max(b.start))
}

/// The part of the rectangle `need` of `op(X)` (rows, cols in `op(X)`'s coordinates) that lies
/// in `block` of `X`, as a rectangle of `op(X)`.
fn pieces_in_block(op: Op, block: &LocalBlock, need: &Rect) -> Option<Rect> {
    // The block as a rectangle of op(X).
    let (rows, cols) = if op.is_transposed() {
        (block.cols.clone(), block.rows.clone())
    } else {
        (block.rows.clone(), block.cols.clone())
    };
    let r = intersect(&rows, &need.0);
    let c = intersect(&cols, &need.1);
    (!r.is_empty() && !c.is_empty()).then_some((r, c))
}

/// Reads element `(i, j)` of `op(X)` from `block` of `X` in `local`.
fn read_op<T: Scalar>(op: Op, block: &LocalBlock, local: &[T], i: usize, j: usize) -> T {
    match op {
        Op::NoTrans => local[block.local_index(i, j)],
        Op::Trans => local[block.local_index(j, i)],
        Op::ConjTrans => local[block.local_index(j, i)].conj(),
    }
}

/// The pieces of `need` (a rectangle of `op(X)`) held in `blocks` (blocks of `X`), as
/// `(block index, rectangle of op(X))`, in the canonical order both sides of a transfer use:
/// by first column, then first row.
fn pieces(op: Op, need: &Rect, blocks: &[LocalBlock]) -> Vec<(usize, Rect)> {
    let mut out: Vec<(usize, Rect)> = blocks
        .iter()
        .enumerate()
        .filter_map(|(b, block)| pieces_in_block(op, block, need).map(|p| (b, p)))
        .collect();
    out.sort_by_key(|(_, (r, c))| (c.start, r.start));
    out
}

/// Gathers on every rank the rectangle `needs[rank]` of `op(X)` into `out`, column-major with
/// leading dimension its row count (`out` is resized). `x` is this rank's buffer of `X` laid
/// out by `layout`; `needs` has one entry per rank of `comm` (empty rectangles for ranks that
/// need nothing).
///
/// # Collective
/// # Errors
/// A communication failure.
pub(crate) fn gather_blocks<T: Scalar, C: Communicator>(
    comm: &C,
    layout: &impl Layout,
    x: &[T],
    op: Op,
    needs: &[Rect],
    out: &mut Vec<T>,
) -> Result<(), CommError> {
    let (me, p) = (comm.rank(), comm.size());
    let mine = layout.blocks(me);
    // What I send: for each rank, my pieces of its need, packed in the need's column-major
    // order piece by piece.
    let mut send = Vec::new();
    let mut send_counts = vec![0; p];
    for (r, need) in needs.iter().enumerate() {
        let before = send.len();
        for (b, (rows, cols)) in pieces(op, need, &mine) {
            for j in cols.clone() {
                for i in rows.clone() {
                    send.push(read_op(op, &mine[b], x, i, j));
                }
            }
        }
        send_counts[r] = send.len() - before;
    }
    // What I receive: from each owner, its pieces of my need, in the same order.
    let (rows, cols) = needs[me].clone();
    let mut from: Vec<Vec<Rect>> = vec![Vec::new(); p];
    if !rows.is_empty() && !cols.is_empty() {
        for owner in 0..layout.nranks() {
            let blocks = layout.blocks(owner);
            from[owner] = pieces(op, &needs[me], &blocks)
                .into_iter()
                .map(|(_, piece)| piece)
                .collect();
        }
    }
    let recv_counts: Vec<usize> = from
        .iter()
        .map(|ps| ps.iter().map(|(r, c)| r.len() * c.len()).sum())
        .collect();
    let mut recv = vec![T::zero(); recv_counts.iter().sum()];
    comm.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    let ld = rows.len();
    out.clear();
    out.resize(rows.len() * cols.len(), T::zero());
    let mut at = 0;
    for (pr, pc) in from.iter().flatten() {
        for j in pc.clone() {
            let start = (pr.start - rows.start) + (j - cols.start) * ld;
            out[start..start + pr.len()].copy_from_slice(&recv[at..at + pr.len()]);
            at += pr.len();
        }
    }
    Ok(())
}

/// Sums every rank's partial rectangle into `C`: `c = beta·c + alpha·Σ_r partial_r` on the
/// elements the rectangles cover (each element of `C` must be covered by at least one rank's
/// rectangle, which the caller guarantees; `beta = 0` never reads `c`). `blocks[r]` is rank
/// `r`'s rectangle and `partial` this rank's values of its rectangle, column-major.
///
/// # Collective
/// # Errors
/// A communication failure.
pub(crate) fn reduce_blocks<T: Scalar, C: Communicator>(
    comm: &C,
    layout: &impl Layout,
    c: &mut [T],
    blocks: &[Rect],
    partial: &[T],
    alpha: T,
    beta: T,
) -> Result<(), CommError> {
    let (me, p) = (comm.rank(), comm.size());
    // What I send: to each owner, my partial values of its blocks, in canonical order.
    let (rows, cols) = blocks[me].clone();
    let ld = rows.len();
    let mut send = Vec::new();
    let mut send_counts = vec![0; p];
    if !rows.is_empty() && !cols.is_empty() {
        for owner in 0..layout.nranks() {
            let before = send.len();
            let theirs = layout.blocks(owner);
            for (_, (pr, pc)) in pieces(Op::NoTrans, &blocks[me], &theirs) {
                for j in pc {
                    let start = (pr.start - rows.start) + (j - cols.start) * ld;
                    send.extend_from_slice(&partial[start..start + pr.len()]);
                }
            }
            send_counts[owner] = send.len() - before;
        }
    }
    // What I receive: from each rank, its partial values of my blocks.
    let mine = layout.blocks(me);
    let from: Vec<Vec<(usize, Rect)>> = blocks
        .iter()
        .map(|rect| pieces(Op::NoTrans, rect, &mine))
        .collect();
    let recv_counts: Vec<usize> = from
        .iter()
        .map(|ps| ps.iter().map(|(_, (r, c))| r.len() * c.len()).sum())
        .collect();
    let mut recv = vec![T::zero(); recv_counts.iter().sum()];
    comm.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    // Sum into a scratch copy of my covered elements first, so that beta = 0 never reads C
    // and the order of the sum is the same on every backend (by source rank).
    let mut sums: Vec<Option<T>> = vec![None; c.len()];
    let mut at = 0;
    for pieces in &from {
        for (b, (pr, pc)) in pieces {
            let block = &mine[*b];
            for j in pc.clone() {
                for i in pr.clone() {
                    let pos = block.local_index(i, j);
                    let v = recv[at];
                    at += 1;
                    sums[pos] = Some(sums[pos].map_or(v, |s| s + v));
                }
            }
        }
    }
    for (y, s) in c.iter_mut().zip(sums) {
        if let Some(s) = s {
            *y = if beta == T::zero() {
                alpha * s
            } else {
                beta * *y + alpha * s
            };
        }
    }
    Ok(())
}
