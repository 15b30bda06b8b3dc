//! The two data movements of the multiplication, on any layouts:
//! [`gather_blocks`] brings every rank the rectangle of `op(X)` it needs (several ranks may
//! need the same elements: COSMA's broadcasts), and [`reduce_blocks`] sums every rank's partial
//! rectangle of `C` into `C`'s layout (COSMA's reduction).
//!
//! Both are planned from facts every rank knows (the layouts and every rank's rectangle), so
//! every rank computes the same counts without asking; a rank sends each piece straight to the
//! rank that needs it, so the counters follow `redblue_comm::volume`'s `all_to_all_v` rule.

use redblue_comm::{wait_all, CommError, Communicator};
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::{Op, Scalar};
use redblue_dist::{Layout, LocalBlock};
use std::ops::Range;

/// Tags of the point-to-point gathers of `op(A)` and `op(B)` blocks.
pub(crate) const TAG_A: u32 = 0x00C0_5A00;
pub(crate) const TAG_B: u32 = 0x00C0_5B00;

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

/// Where the rectangle `piece` of `block` lies in its buffer when it is one run there (whole
/// columns of a block whose columns are `ld` apart, or one column): it can be sent as it is.
fn in_one_run(block: &LocalBlock, (pr, pc): &Rect) -> Option<Range<usize>> {
    let whole_columns = *pr == block.rows && block.rows.len() == block.ld;
    (whole_columns || pc.len() == 1).then(|| {
        let start = block.local_index(pr.start, pc.start);
        start..start + pr.len() * pc.len()
    })
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

/// Which operand of the product a gathered rectangle is: its inner dimension (`k`) is its
/// columns for `op(A)`, its rows for `op(B)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Side {
    /// `op(A)`: rows × inner.
    Lhs,
    /// `op(B)`: inner × columns.
    Rhs,
}

/// The least depth (inner extent) of a [`Slab`] cut along `k`: a product of at least this
/// depth runs at the kernel's full speed, so cutting the product along `k` at slab boundaries
/// costs nothing (the kernel cuts it so itself).
pub(crate) const MIN_SLAB_DEPTH: usize = 256;

/// The least width (rows of `op(A)`, columns of `op(B)`) of a [`Slab`] cut across `k`.
pub(crate) const MIN_SLAB_WIDTH: usize = 16;

/// The most slabs a gathered rectangle is multiplied in (each product packs its other operand
/// again): more pieces are assembled in one buffer.
pub(crate) const MAX_SLABS: usize = 8;

/// A part of a gathered rectangle that spans it whole in one dimension: cut along `k` (all
/// its rows for `op(A)`, all its columns for `op(B)`) or across `k` (all of `k`). Its `rows`
/// and `cols` from the rectangle's first row and column; column-major with leading dimension
/// `ld` from `offset` in this rank's own buffer of `X` (`in_x`: read where it is, ready before
/// any message arrives) or in the received buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slab {
    pub(crate) rows: Range<usize>,
    pub(crate) cols: Range<usize>,
    pub(crate) in_x: bool,
    pub(crate) offset: usize,
    pub(crate) ld: usize,
}

/// Where a gathered rectangle is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Gathered {
    /// In the output buffer, column-major with leading dimension its row count.
    Buffer,
    /// In the slabs of [`GatherPlan::slabs`]: the received ones in the output buffer (nothing
    /// was copied after the messages arrived), this rank's own in its buffer of `X`.
    Slabs,
    /// In this rank's own buffer of `X`, from `offset` with leading dimension `ld` (the need
    /// lies inside one of its blocks and is not transposed): nothing was copied.
    InPlace {
        /// Position of the rectangle's first element.
        offset: usize,
        /// Leading dimension.
        ld: usize,
    },
}

/// One rank's part of a gather ([`GatherPlan::new`]): its packed pieces for every other rank,
/// its own pieces and the pieces it will receive. Run it at once ([`GatherPlan::run`]) or in the
/// background ([`GatherPlan::post`], then [`GatherPlan::finish`]): point-to-point messages, one
/// per non-empty piece list between two different ranks, the volume rule of `all_to_all_v`.
/// Buffers come from and go back to [`redblue_core::pool`].
pub(crate) struct GatherPlan<T: Scalar> {
    me: usize,
    op: Op,
    need: Rect,
    in_place: Option<Gathered>,
    /// My pieces for the other ranks, packed, but for those sent straight from my buffer.
    send: Vec<T>,
    send_counts: Vec<usize>,
    /// For each rank, the range of my buffer it gets as it is (one piece that is a run of
    /// whole block columns, untransposed): nothing packed.
    direct: Vec<Option<Range<usize>>>,
    /// My pieces of my own need: never sent; copied from my buffer at
    /// [`finish`](Self::finish) (unless read where they are: [`Slab::in_x`]).
    own: Vec<(LocalBlock, Rect)>,
    from: Vec<Vec<Rect>>,
    recv_counts: Vec<usize>,
    /// The need as [`slabs`](fn@slabs), when its pieces are few and large and all cut it
    /// along `k` or all across it: then nothing is copied after the messages arrive.
    slabs: Option<Vec<Slab>>,
}

/// Copies the pieces of `op(X)` (each column-major) from `block`s of `x` into `out`, in order.
fn pack<'p, T: Scalar>(
    op: Op,
    x: &[T],
    pieces: impl Iterator<Item = (&'p LocalBlock, &'p Rect)>,
    out: &mut [T],
) {
    let mut at = 0;
    for (block, (pr, pc)) in pieces {
        for j in pc.clone() {
            let dst = &mut out[at..at + pr.len()];
            if op == Op::NoTrans {
                let start = block.local_index(pr.start, j);
                dst.copy_from_slice(&x[start..start + pr.len()]);
            } else {
                for (y, i) in dst.iter_mut().zip(pr.clone()) {
                    *y = read_op(op, block, x, i, j);
                }
            }
            at += pr.len();
        }
    }
}

impl<T: Scalar> GatherPlan<T> {
    /// Plans the gather on every rank of the rectangle `needs[rank]` of `op(X)`, `x` being this
    /// rank's buffer of `X` laid out by `layout` (`needs` has one entry per rank; empty
    /// rectangles for ranks that need nothing). The pieces for other ranks are packed now.
    /// `side`, the operand it is, lets the need be gathered as [slabs](Self::slabs) where it
    /// can; without it the need is assembled in one buffer (or read in place).
    pub(crate) fn new(
        me: usize,
        layout: &impl Layout,
        x: &[T],
        op: Op,
        needs: &[Rect],
        side: Option<Side>,
    ) -> Self {
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
        // What I send: for each other rank, my pieces of its need, packed in the need's
        // column-major order piece by piece.
        let outgoing: Vec<Vec<(usize, Rect)>> = needs
            .iter()
            .enumerate()
            .map(|(r, need)| {
                if r == me {
                    Vec::new()
                } else {
                    pieces(op, need, &mine)
                }
            })
            .collect();
        let send_counts: Vec<usize> = outgoing
            .iter()
            .map(|ps| ps.iter().map(|(_, (r, c))| r.len() * c.len()).sum())
            .collect();
        let direct: Vec<Option<Range<usize>>> = outgoing
            .iter()
            .map(|ps| match ps.as_slice() {
                [(b, piece)] if op == Op::NoTrans => in_one_run(&mine[*b], piece),
                _ => None,
            })
            .collect();
        let packed = outgoing.iter().zip(&direct).filter(|(_, d)| d.is_none());
        let packed: Vec<&(usize, Rect)> = packed.flat_map(|(ps, _)| ps).collect();
        let mut send = take_buffer(
            packed.iter().map(|(_, (r, c))| r.len() * c.len()).sum(),
            T::zero(),
        );
        pack(
            op,
            x,
            packed.into_iter().map(|(b, piece)| (&mine[*b], piece)),
            &mut send,
        );
        // What I receive: from each owner, its pieces of my need, in the same order.
        let mut from: Vec<Vec<Rect>> = vec![Vec::new(); p];
        let mut own = Vec::new();
        if !rows.is_empty() && !cols.is_empty() && in_place.is_none() {
            for owner in 0..layout.nranks() {
                let blocks = layout.blocks(owner);
                let ps = pieces(op, &needs[me], &blocks);
                if owner == me {
                    own = ps
                        .iter()
                        .map(|(b, piece)| (blocks[*b].clone(), piece.clone()))
                        .collect();
                }
                from[owner] = ps.into_iter().map(|(_, piece)| piece).collect();
            }
        }
        let recv_counts = from
            .iter()
            .map(|ps| ps.iter().map(|(r, c)| r.len() * c.len()).sum())
            .collect();
        let slabs = side.and_then(|side| slabs(me, op, (&rows, &cols), &from, &own, side));
        GatherPlan {
            me,
            op,
            need: (rows, cols),
            in_place,
            send,
            send_counts,
            direct,
            own,
            from,
            recv_counts,
            slabs,
        }
    }

    /// The need as slabs ([`Gathered::Slabs`]), if it is gathered so.
    pub(crate) fn slabs(&self) -> Option<&[Slab]> {
        self.slabs.as_deref()
    }

    /// Where the need will be once gathered (what [`finish`](Self::finish) returns, but for
    /// an assembled need that arrives in order, whose buffer is also [`Gathered::Buffer`]).
    pub(crate) fn placed(&self) -> Gathered {
        match (self.in_place, &self.slabs) {
            (Some(place), _) => place,
            (None, Some(_)) => Gathered::Slabs,
            (None, None) => Gathered::Buffer,
        }
    }

    /// Whether my own pieces are read where they are, not copied.
    fn own_in_x(&self) -> bool {
        self.slabs.is_some() && self.op == Op::NoTrans
    }

    /// The room each rank's pieces take in the received buffer, in rank order: their
    /// elements, my own included (copied there at [`finish`](Self::finish)) unless they are
    /// read where they are.
    fn recv_chunks(&self) -> Vec<usize> {
        let mut chunks = self.recv_counts.clone();
        if self.own_in_x() {
            chunks[self.me] = 0;
        }
        chunks
    }

    /// The length of the received buffer `post` needs.
    pub(crate) fn recv_len(&self) -> usize {
        self.recv_chunks().iter().sum()
    }

    /// Runs the gather now ([`post`](Self::post), wait, [`finish`](Self::finish)); `x` is the
    /// buffer given to [`new`](Self::new).
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub(crate) fn run<C: Communicator>(
        &self,
        comm: &C,
        x: &[T],
        out: &mut Vec<T>,
        tag: u32,
    ) -> Result<Gathered, CommError> {
        let mut recv = take_buffer(self.recv_len(), T::zero());
        wait_all(self.post(comm, x, &mut recv, tag)?)?;
        Ok(self.finish(x, recv, out))
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
    /// have pieces for, all with `tag` (a piece that is one run of `x`, the buffer given to
    /// [`new`](Self::new), is sent from there). Wait for the requests, then
    /// [`finish`](Self::finish).
    ///
    /// # Errors
    /// A communication failure.
    ///
    /// [`recv_len`]: Self::recv_len
    pub(crate) fn post<'a, C: Communicator>(
        &'a self,
        comm: &'a C,
        x: &'a [T],
        recv: &'a mut [T],
        tag: u32,
    ) -> Result<Vec<C::Request<'a>>, CommError> {
        let mut requests = Vec::new();
        let packed: Vec<usize> = self
            .send_counts
            .iter()
            .zip(&self.direct)
            .map(|(&count, d)| if d.is_some() { 0 } else { count })
            .collect();
        let send_at: Vec<usize> = offsets(&packed);
        let mut rest = recv;
        for (src, &count) in self.recv_chunks().iter().enumerate() {
            let (chunk, tail) = rest.split_at_mut(count);
            rest = tail;
            if count == 0 {
                continue;
            }
            if src != self.me {
                requests.push(comm.irecv(chunk, src, tag)?);
            }
        }
        for (dest, &count) in self.send_counts.iter().enumerate() {
            if count > 0 {
                let piece = match &self.direct[dest] {
                    Some(run) => &x[run.clone()],
                    None => &self.send[send_at[dest]..send_at[dest] + count],
                };
                requests.push(comm.isend(piece, dest, tag)?);
            }
        }
        Ok(requests)
    }

    /// After the requests of [`post`](Self::post) completed: the pieces in `recv` and my own
    /// from `x` (the buffer given to [`new`](Self::new)) into `out`, or `recv` taken over
    /// whole when the pieces arrived in order (mine copied to their place in it); `recv`
    /// goes back to the pool.
    pub(crate) fn finish(&self, x: &[T], mut recv: Vec<T>, out: &mut Vec<T>) -> Gathered {
        if let Some(place) = self.in_place {
            recycle(recv);
            return place;
        }
        let own = || self.own.iter().map(|(b, piece)| (b, piece));
        // Taken over whole: my pieces go to their place in it (unless read in my buffer).
        let whole = self.slabs.is_some() || self.contiguous();
        if whole {
            if !self.own_in_x() {
                let at = self.recv_counts[..self.me].iter().sum::<usize>();
                pack(
                    self.op,
                    x,
                    own(),
                    &mut recv[at..at + self.recv_counts[self.me]],
                );
            }
            recycle(std::mem::replace(out, recv));
            return self.placed();
        }
        // Assembled: the received pieces copied, mine packed straight into place.
        let (rows, cols) = &self.need;
        let ld = rows.len();
        resize_for_overwrite(out, rows.len() * cols.len());
        let mut at = 0;
        for (src, pieces) in self.from.iter().enumerate() {
            if src == self.me {
                at += self.recv_counts[src];
                continue;
            }
            for (pr, pc) in pieces {
                for j in pc.clone() {
                    let start = (pr.start - rows.start) + (j - cols.start) * ld;
                    out[start..start + pr.len()].copy_from_slice(&recv[at..at + pr.len()]);
                    at += pr.len();
                }
            }
        }
        for (block, (pr, pc)) in own() {
            for j in pc.clone() {
                let start = (pr.start - rows.start) + (j - cols.start) * ld;
                let column = (pr.clone(), j..j + 1);
                pack(
                    self.op,
                    x,
                    [(block, &column)].into_iter(),
                    &mut out[start..start + pr.len()],
                );
            }
        }
        recycle(recv);
        Gathered::Buffer
    }
}

/// The slabs of a need `rows × cols` from its pieces (`from`, each rank's in rank order, the
/// order they lie in the received buffer; `own` my pieces with their blocks): two to
/// [`MAX_SLABS`] pieces that all span the need along `k` (cut along `k`, each at least
/// [`MIN_SLAB_DEPTH`] deep) or all span `k` (cut across it, each at least [`MIN_SLAB_WIDTH`]
/// wide); `None` otherwise (then the need is assembled in one buffer).
fn slabs(
    me: usize,
    op: Op,
    (rows, cols): (&Range<usize>, &Range<usize>),
    from: &[Vec<Rect>],
    own: &[(LocalBlock, Rect)],
    side: Side,
) -> Option<Vec<Slab>> {
    let count: usize = from.iter().map(Vec::len).sum();
    if !(2..=MAX_SLABS).contains(&count) {
        return None;
    }
    // (spans the need along k, spans k) of a piece, and its extents (across k, along k).
    let shape = |(pr, pc): &Rect| match side {
        Side::Lhs => ((pr == rows, pc == cols), (pr.len(), pc.len())),
        Side::Rhs => ((pc == cols, pr == rows), (pc.len(), pr.len())),
    };
    let all = |f: &dyn Fn(&Rect) -> bool| from.iter().flatten().all(f);
    let along_k = all(&|p| {
        let ((spans, _), (_, depth)) = shape(p);
        spans && depth >= MIN_SLAB_DEPTH
    });
    let across_k = all(&|p| {
        let ((_, spans), (width, _)) = shape(p);
        spans && width >= MIN_SLAB_WIDTH
    });
    if !along_k && !across_k {
        return None;
    }
    let relative = |r: &Range<usize>, at: usize| r.start - at..r.end - at;
    let mut out = Vec::new();
    let mut at = 0;
    for (src, pieces) in from.iter().enumerate() {
        for (i, (pr, pc)) in pieces.iter().enumerate() {
            let (rows_in, cols_in) = (relative(pr, rows.start), relative(pc, cols.start));
            // My own pieces, untransposed, are read in my buffer and take no room in the
            // received one.
            out.push(if src == me && op == Op::NoTrans {
                let block = &own[i].0;
                Slab {
                    rows: rows_in,
                    cols: cols_in,
                    in_x: true,
                    offset: block.local_index(pr.start, pc.start),
                    ld: block.ld,
                }
            } else {
                let offset = at;
                at += pr.len() * pc.len();
                Slab {
                    rows: rows_in,
                    cols: cols_in,
                    in_x: false,
                    offset,
                    ld: pr.len(),
                }
            });
        }
    }
    out.sort_by_key(|s| (s.cols.start, s.rows.start));
    Some(out)
}

impl<T: Scalar> Drop for GatherPlan<T> {
    fn drop(&mut self) {
        recycle(std::mem::take(&mut self.send));
    }
}

/// Makes `v` `len` elements long for a caller that overwrites every element: no fill pass
/// over memory it already has; a pooled buffer when it has too little.
pub(crate) fn resize_for_overwrite<T: Scalar>(v: &mut Vec<T>, len: usize) {
    if v.len() >= len {
        v.truncate(len);
    } else if v.capacity() >= len {
        v.resize(len, T::zero());
    } else {
        recycle(std::mem::replace(v, take_buffer(len, T::zero())));
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
    tag: u32,
) -> Result<Gathered, CommError> {
    GatherPlan::new(comm.rank(), layout, x, op, needs, None).run(comm, x, out, tag)
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
    let mut outgoing: Vec<Vec<Rect>> = vec![Vec::new(); p];
    if !rows.is_empty() && !cols.is_empty() {
        for (owner, out) in outgoing.iter_mut().enumerate().take(layout.nranks()) {
            let theirs = layout.blocks(owner);
            *out = pieces(Op::NoTrans, &blocks[me], &theirs)
                .into_iter()
                .map(|(_, piece)| piece)
                .collect();
        }
    }
    let send_counts: Vec<usize> = outgoing
        .iter()
        .map(|ps| ps.iter().map(|(r, c)| r.len() * c.len()).sum())
        .collect();
    let mut send = take_buffer(send_counts.iter().sum(), T::zero());
    let mut at = 0;
    for (pr, pc) in outgoing.iter().flatten() {
        for j in pc.clone() {
            let start = (pr.start - rows.start) + (j - cols.start) * ld;
            send[at..at + pr.len()].copy_from_slice(&partial[start..start + pr.len()]);
            at += pr.len();
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
    let mut recv = take_buffer(recv_counts.iter().sum(), T::zero());
    comm.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
    recycle(send);
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
    recycle(recv);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cosma::native_layouts;
    use crate::plan::{rank_domains, GemmShape};
    use crate::Strategy;

    /// Rank `me`'s gathers of `op(A)` and `op(B)` in round 0 of `strategy`, native layouts.
    fn first_gathers(text: &str, shape: GemmShape, op: Op, me: usize) -> [GatherPlan<f64>; 2] {
        let s: Strategy = text.parse().unwrap();
        let p = s.ranks();
        let [la, lb, _] = native_layouts(&s, shape, (op, Op::NoTrans), p).unwrap();
        let domains: Vec<_> = (0..p)
            .map(|r| rank_domains(&s, shape, r)[0].clone())
            .collect();
        let a_needs: Vec<Rect> = domains
            .iter()
            .map(|d| (d.rows.clone(), d.inner.clone()))
            .collect();
        let b_needs: Vec<Rect> = domains
            .iter()
            .map(|d| (d.inner.clone(), d.cols.clone()))
            .collect();
        let a = vec![0.0; la.local_len(me)];
        let b = vec![0.0; lb.local_len(me)];
        [
            GatherPlan::new(me, &la, &a, op, &a_needs, Some(Side::Lhs)),
            GatherPlan::new(me, &lb, &b, Op::NoTrans, &b_needs, Some(Side::Rhs)),
        ]
    }

    #[test]
    fn native_pieces_are_slabs_read_in_place_when_untransposed() {
        // pn2: all of op(A) on both ranks, cut by rows between them; op(B) in place.
        let [a, b] = first_gathers("pn2", GemmShape::new(64, 6, 256), Op::NoTrans, 1);
        let slabs = a.slabs().expect("two slabs of 32 rows");
        assert_eq!(slabs.len(), 2);
        let at = |s: &Slab| (s.rows.clone(), s.cols.clone(), s.in_x);
        assert_eq!(at(&slabs[0]), (0..32, 0..256, false));
        assert_eq!(at(&slabs[1]), (32..64, 0..256, true));
        assert_eq!(a.placed(), Gathered::Slabs);
        assert!(matches!(b.placed(), Gathered::InPlace { .. }));
        // Transposed, rank 1's own slab is copied into the received buffer.
        let [a, _] = first_gathers("pn2", GemmShape::new(64, 6, 256), Op::Trans, 1);
        assert!(a.slabs().unwrap().iter().all(|s| !s.in_x));
        // pm2,pn2: op(B) cut by columns.
        let [a, b] = first_gathers("pm2,pn2", GemmShape::new(64, 64, 40), Op::NoTrans, 0);
        assert_eq!(a.slabs().map(<[Slab]>::len), Some(2));
        let b_slabs = b.slabs().expect("two slabs of 16 columns");
        assert!(b_slabs
            .iter()
            .all(|s| s.rows == (0..40) && s.cols.len() == 16));
        // Slabs narrower than MIN_SLAB_WIDTH: assembled in one buffer.
        let [a, _] = first_gathers("pn2", GemmShape::new(24, 6, 256), Op::NoTrans, 0);
        assert!(a.slabs().is_none());
        assert_eq!(a.placed(), Gathered::Buffer);
    }

    #[test]
    fn deep_pieces_cut_along_k_are_slabs_too() {
        // A split by columns over two ranks, everyone needing all of it (a user's layout).
        let layout = redblue_dist::GridLayout::even(40, 512, 1, 2).unwrap();
        let needs = vec![(0..40, 0..512); 2];
        let x = vec![0.0f64; layout.local_len(0)];
        let g = GatherPlan::new(0, &layout, &x, Op::NoTrans, &needs, Some(Side::Lhs));
        let slabs = g.slabs().expect("two slabs of depth 256");
        assert_eq!((slabs[0].cols.clone(), slabs[0].in_x), (0..256, true));
        assert_eq!(
            (slabs[1].cols.clone(), slabs[1].rows.clone()),
            (256..512, 0..40)
        );
        // The received slab alone takes room in the received buffer, from its start.
        assert_eq!((slabs[1].offset, g.recv_len()), (0, 40 * 256));
        // Shallower than MIN_SLAB_DEPTH: assembled.
        let layout = redblue_dist::GridLayout::even(40, 256, 1, 2).unwrap();
        let needs = vec![(0..40, 0..256); 2];
        let g = GatherPlan::new(0, &layout, &x, Op::NoTrans, &needs, Some(Side::Lhs));
        assert!(g.slabs().is_none());
    }
}
