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

/// Where a gathered rectangle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gathered {
    /// In the output buffer, column-major with leading dimension its row count.
    Buffer,
    /// In this rank's own buffer of `X`, from `offset` with leading dimension `ld` (the need
    /// lies inside one of its blocks and is not transposed): nothing was copied.
    InPlace {
        /// Position of the rectangle's first element.
        offset: usize,
        /// Leading dimension.
        ld: usize,
    },
}

/// Gathers on every rank the rectangle `needs[rank]` of `op(X)` into `out`, column-major with
/// leading dimension its row count (`out` is resized), unless it lies untransposed inside one
/// of the rank's own blocks ([`Gathered::InPlace`]). `x` is this rank's buffer of `X` laid
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
) -> Result<Gathered, CommError> {
    let (me, p) = (comm.rank(), comm.size());
    let mine = layout.blocks(me);
    let (rows, cols) = needs[me].clone();
    // My whole need inside one of my blocks, untransposed: the caller reads it in place.
    let in_place = (op == Op::NoTrans && !rows.is_empty() && !cols.is_empty())
        .then(|| {
            mine.iter().find(|b| {
                b.rows.start <= rows.start
                    && rows.end <= b.rows.end
                    && b.cols.start <= cols.start
                    && cols.end <= b.cols.end
            })
        })
        .flatten()
        .map(|b| Gathered::InPlace {
            offset: b.local_index(rows.start, cols.start),
            ld: b.ld,
        });
    // What I send: for each rank, my pieces of its need, packed in the need's column-major
    // order piece by piece (nothing to myself when I read in place).
    let mut send = Vec::new();
    let mut send_counts = vec![0; p];
    for (r, need) in needs.iter().enumerate() {
        if r == me && in_place.is_some() {
            continue;
        }
        let before = send.len();
        for (b, (pr, pc)) in pieces(op, need, &mine) {
            let block = &mine[b];
            for j in pc.clone() {
                if op == Op::NoTrans {
                    let start = block.local_index(pr.start, j);
                    send.extend_from_slice(&x[start..start + pr.len()]);
                } else {
                    send.extend(pr.clone().map(|i| read_op(op, block, x, i, j)));
                }
            }
        }
        send_counts[r] = send.len() - before;
    }
    // What I receive: from each owner, its pieces of my need, in the same order.
    let mut from: Vec<Vec<Rect>> = vec![Vec::new(); p];
    if !rows.is_empty() && !cols.is_empty() {
        for owner in 0..layout.nranks() {
            if owner == me && in_place.is_some() {
                continue;
            }
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
    if let Some(place) = in_place {
        return Ok(place);
    }
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
    Ok(Gathered::Buffer)
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
    // First C = beta·C on the elements the rectangles cover (zero without reading when
    // beta = 0); rectangles of different ranks are identical (the p_k partial sums of one
    // block) or disjoint, so each distinct one is scaled once. Then add alpha·v for every
    // received value, in source-rank order on every backend.
    let mut distinct: Vec<&Rect> = Vec::new();
    for rect in blocks {
        if !distinct.contains(&rect) {
            distinct.push(rect);
        }
    }
    for rect in distinct {
        for (b, (pr, pc)) in pieces(Op::NoTrans, rect, &mine) {
            for j in pc {
                let start = mine[b].local_index(pr.start, j);
                let col = &mut c[start..start + pr.len()];
                if beta == T::zero() {
                    col.fill(T::zero());
                } else if beta != T::one() {
                    col.iter_mut().for_each(|y| *y = beta * *y);
                }
            }
        }
    }
    let mut at = 0;
    for pieces in &from {
        for (b, (pr, pc)) in pieces {
            for j in pc.clone() {
                let start = mine[*b].local_index(pr.start, j);
                let col = &mut c[start..start + pr.len()];
                for (y, &v) in col.iter_mut().zip(&recv[at..at + pr.len()]) {
                    *y += alpha * v;
                }
                at += pr.len();
            }
        }
    }
    Ok(())
}
