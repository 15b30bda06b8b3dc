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

/// The block of `blocks` that holds the whole non-empty rectangle `rect`, if one does.
pub(crate) fn block_containing<'a>(
    blocks: &'a [LocalBlock],
    rect: &Rect,
) -> Option<&'a LocalBlock> {
    let (rows, cols) = rect;
    if rows.is_empty() || cols.is_empty() {
        return None;
    }
    blocks.iter().find(|b| {
        b.rows.start <= rows.start
            && rows.end <= b.rows.end
            && b.cols.start <= cols.start
            && cols.end <= b.cols.end
    })
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

/// One rank's part of a gather ([`GatherPlan::new`]): its packed pieces for every rank and
/// the pieces it will receive. Run it at once ([`GatherPlan::run`], one `all_to_all_v`) or in
/// the background ([`GatherPlan::post`], point-to-point, then [`GatherPlan::finish`]); both move
/// the same words in the same non-empty messages.
pub(crate) struct GatherPlan<T> {
    me: usize,
    need: Rect,
    in_place: Option<Gathered>,
    send: Vec<T>,
    send_counts: Vec<usize>,
    from: Vec<Vec<Rect>>,
    recv_counts: Vec<usize>,
}

impl<T: Scalar> GatherPlan<T> {
    /// Plans the gather on every rank of the rectangle `needs[rank]` of `op(X)`, `x` being this
    /// rank's buffer of `X` laid out by `layout` (`needs` has one entry per rank; empty
    /// rectangles for ranks that need nothing). The rank's pieces are packed now.
    pub(crate) fn new(me: usize, layout: &impl Layout, x: &[T], op: Op, needs: &[Rect]) -> Self {
        let p = needs.len();
        let mine = layout.blocks(me);
        let (rows, cols) = needs[me].clone();
        // My whole need inside one of my blocks, untransposed: the caller reads it in place.
        let in_place = (op == Op::NoTrans)
            .then(|| block_containing(&mine, &needs[me]))
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
        let recv_counts = from
            .iter()
            .map(|ps| ps.iter().map(|(r, c)| r.len() * c.len()).sum())
            .collect();
        GatherPlan {
            me,
            need: (rows, cols),
            in_place,
            send,
            send_counts,
            from,
            recv_counts,
        }
    }

    /// Elements this rank receives (its own pieces included), the length `post` needs.
    pub(crate) fn recv_len(&self) -> usize {
        self.recv_counts.iter().sum()
    }

    /// Runs the gather now: one `all_to_all_v`, then the pieces into `out`.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub(crate) fn run<C: Communicator>(
        &self,
        comm: &C,
        out: &mut Vec<T>,
    ) -> Result<Gathered, CommError> {
        if self.in_place.is_none() && self.contiguous() {
            // The pieces arrive in the need's column-major order: receive straight into `out`.
            let (rows, cols) = &self.need;
            out.clear();
            out.resize(rows.len() * cols.len(), T::zero());
            comm.all_to_all_v(&self.send, &self.send_counts, out, &self.recv_counts)?;
            return Ok(Gathered::Buffer);
        }
        let mut recv = vec![T::zero(); self.recv_len()];
        comm.all_to_all_v(&self.send, &self.send_counts, &mut recv, &self.recv_counts)?;
        Ok(self.unpack(&recv, out))
    }

    /// Whether the pieces, in arrival order, are full-height column ranges that follow each
    /// other: then the received buffer is already the need, column-major.
    fn contiguous(&self) -> bool {
        let (rows, cols) = &self.need;
        let mut next = cols.start;
        for (pr, pc) in self.from.iter().flatten() {
            if *pr != *rows || pc.start != next {
                return false;
            }
            next = pc.end;
        }
        next == cols.end
    }

    /// Starts the gather in the background: an `irecv` into `recv` (of [`recv_len`]
    /// elements) from every other rank with pieces for me, an `isend` to every other rank I
    /// have pieces for, all with `tag`; my own pieces are copied at once. Wait for the
    /// requests, then [`finish`](Self::finish).
    ///
    /// # Errors
    /// A communication failure.
    ///
    /// [`recv_len`]: Self::recv_len
    pub(crate) fn post<'a, C: Communicator>(
        &'a self,
        comm: &'a C,
        recv: &'a mut [T],
        tag: u32,
    ) -> Result<Vec<C::Request<'a>>, CommError> {
        let mut requests = Vec::new();
        let send_at: Vec<usize> = offsets(&self.send_counts);
        let mut rest = recv;
        for (src, &count) in self.recv_counts.iter().enumerate() {
            let (chunk, tail) = rest.split_at_mut(count);
            rest = tail;
            if count == 0 {
                continue;
            }
            if src == self.me {
                chunk.copy_from_slice(&self.send[send_at[src]..send_at[src] + count]);
            } else {
                requests.push(comm.irecv(chunk, src, tag)?);
            }
        }
        for (dest, &count) in self.send_counts.iter().enumerate() {
            if count > 0 && dest != self.me {
                let piece = &self.send[send_at[dest]..send_at[dest] + count];
                requests.push(comm.isend(piece, dest, tag)?);
            }
        }
        Ok(requests)
    }

    /// After the requests of [`post`](Self::post) completed: the pieces in `recv` into `out`.
    pub(crate) fn finish(&self, recv: &[T], out: &mut Vec<T>) -> Gathered {
        self.unpack(recv, out)
    }

    fn unpack(&self, recv: &[T], out: &mut Vec<T>) -> Gathered {
        if let Some(place) = self.in_place {
            return place;
        }
        let (rows, cols) = &self.need;
        let ld = rows.len();
        out.clear();
        out.resize(rows.len() * cols.len(), T::zero());
        let mut at = 0;
        for (pr, pc) in self.from.iter().flatten() {
            for j in pc.clone() {
                let start = (pr.start - rows.start) + (j - cols.start) * ld;
                out[start..start + pr.len()].copy_from_slice(&recv[at..at + pr.len()]);
                at += pr.len();
            }
        }
        Gathered::Buffer
    }
}

/// Start offsets of consecutive pieces of the given lengths.
fn offsets(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, &c| {
            let start = *at;
            *at += c;
            Some(start)
        })
        .collect()
}

/// Gathers on every rank the rectangle `needs[rank]` of `op(X)` into `out`, column-major with
/// leading dimension its row count (`out` is resized), unless it lies untransposed inside one
/// of the rank's own blocks ([`Gathered::InPlace`]): [`GatherPlan::new`] then
/// [`GatherPlan::run`].
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
    GatherPlan::new(comm.rank(), layout, x, op, needs).run(comm, out)
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
