//! Running a [`Strategy`]: [`cosma`] multiplies distributed matrices in any layouts, and
//! [`native_layouts`] gives the layouts in which it moves exactly what the cost model says.
//!
//! For each sequential iteration, every rank gathers the `op(A)` and `op(B)` blocks of its
//! [`Domain`](crate::Domain) (one `all_to_all_v` each: COSMA's broadcasts along the grid, each
//! element sent straight from its owner), multiplies them into its partial `C` block with the
//! local kernel, and after the last iteration that updates a `C` block the ranks sum their
//! partial blocks into `C`'s layout (one `all_to_all_v`: COSMA's reduction along `k`). Blocks
//! gathered from deep pieces that each span them across `k` are multiplied slab by slab, a
//! rank's own slabs read where they are and, in the first round, multiplied before the others
//! arrive ([`Gathered::Slabs`]).
//!
//! Inputs in other layouts are read where they are: each element goes from its owner straight
//! to every rank that needs it, which never moves more than transforming to the native layout
//! first (a transform moves each element to its native owner, which then sends it on). The
//! words this costs beyond the native model are counted like all others.

use crate::exchange::{
    block_containing, reduce_blocks, GatherPlan, Gathered, Rect, Side, TAG_A, TAG_B,
};
use crate::memory::agree_on_working_memory;
use crate::model::cosma_rank_cost;
use crate::plan::{c_block_ids, grid_coords, last_updates, part, rank_domains, Domain, GemmShape};
use crate::{GemmError, Strategy};
use redblue_comm::{wait_all, Communicator};
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::Op;
use redblue_dist::{DistError, DistMatrix, DistMatrixMut, GridLayout, Layout};
use redblue_kernels::{gemm as local_gemm, KernelScalar, MatMut, MatRef, Par};
use std::ops::Range;

/// The shape of `C = op(A)·op(B)`, checked: the same answer on every rank, since layouts are
/// global.
pub(crate) fn check_shapes(
    a: (usize, usize),
    op_a: Op,
    b: (usize, usize),
    op_b: Op,
    c: (usize, usize),
) -> Result<GemmShape, GemmError> {
    let (m, k) = op_a.apply_shape(a);
    let (kb, n) = op_b.apply_shape(b);
    if kb != k {
        return Err(GemmError::InnerDimensions {
            op_a: (m, k),
            op_b: (kb, n),
        });
    }
    if c != (m, n) {
        return Err(GemmError::Dist(DistError::ShapeMismatch {
            what: "C",
            expected: (m, n),
            found: c,
        }));
    }
    Ok(GemmShape::new(m, n, k))
}

/// [`check_shapes`] of the matrices, and that no layout spreads over more ranks than the
/// communicator has: the same answer on every rank.
pub(crate) fn check_inputs<T, A, B, M>(
    comm_size: usize,
    a: &A,
    op_a: Op,
    b: &B,
    op_b: Op,
    c: &M,
) -> Result<GemmShape, GemmError>
where
    T: KernelScalar,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrix<T> + ?Sized,
    M: DistMatrix<T> + ?Sized,
{
    let shape = check_shapes(a.shape(), op_a, b.shape(), op_b, c.shape())?;
    for ranks in [
        a.layout().nranks(),
        b.layout().nranks(),
        c.layout().nranks(),
    ] {
        if ranks > comm_size {
            return Err(GemmError::Dist(DistError::LayoutLargerThanComm {
                layout_ranks: ranks,
                comm_size,
            }));
        }
    }
    Ok(shape)
}

/// `x = beta·x` without reading `x` when `beta = 0`.
pub(crate) fn scale<T: KernelScalar>(x: &mut [T], beta: T) {
    if beta == T::zero() {
        x.fill(T::zero());
    } else if beta != T::one() {
        x.iter_mut().for_each(|y| *y = beta * *y);
    }
}

/// `C = alpha·op(A)·op(B) + beta·C` under `strategy`, for matrices in any layouts on `comm`.
/// Ranks beyond `strategy.ranks()` compute nothing but take part in the exchanges (they may own
/// data). `par` is the thread count of each local multiplication.
///
/// `beta = 0` never reads `C`; `alpha = 0` or `k = 0` only scale `C` (no communication).
///
/// # Collective
/// Every rank passes the same layouts, ops, scalars and strategy.
///
/// # Errors
/// The same on every rank: [`GemmError::InnerDimensions`] or a `C` of the wrong shape,
/// [`GemmError::Plan`] if the strategy needs more ranks than `comm` has or cuts a dimension
/// into more parts than the planners ever do for this shape ([`check_parts`](crate::check_parts):
/// a strategy planned for another shape),
/// [`GemmError::Dist`] if a layout spreads over more ranks than `comm`, or (runs of at least
/// [`AGREE_FROM_WORDS`](crate::memory::AGREE_FROM_WORDS) working words) `OutOfMemory` when
/// some rank cannot have its buffers; a communication failure.
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_core::Op;
/// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
/// use redblue_gemm::{cosma, native_layouts, GemmShape, Strategy};
/// use redblue_kernels::Par;
///
/// // C = Aᵀ·B on 4 ranks: m split in two, then k in two (partial sums reduced).
/// let strategy: Strategy = "pm2,pk2".parse().unwrap();
/// let shape = GemmShape::new(30, 20, 40);
/// let norms = run_ranks(4, |comm| {
///     let [_, lb, lc] = native_layouts(&strategy, shape, (Op::Trans, Op::NoTrans), 4).unwrap();
///     // A (stored 40 × 30) block-cyclic, B and C where the strategy wants them.
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, BlockCyclic::new(40, 30, 8, 8, 2, 2).unwrap(), 1).unwrap();
///     let b = OwnedDistMatrix::<f64, _>::random(&comm, lb, 2).unwrap();
///     let mut c = OwnedDistMatrix::zeros(&comm, lc).unwrap();
///     cosma(&comm, 1.0, &a, Op::Trans, &b, Op::NoTrans, 0.0, &mut c, &strategy, Par::Seq).unwrap();
///     c.norm_fro(&comm).unwrap()
/// });
/// assert!(norms[0] > 0.0 && norms.iter().all(|&x| x == norms[0]));
/// ```
#[allow(clippy::too_many_arguments)]
pub fn cosma<T, C, A, B, M>(
    comm: &C,
    alpha: T,
    a: &A,
    op_a: Op,
    b: &B,
    op_b: Op,
    beta: T,
    c: &mut M,
    strategy: &Strategy,
    par: Par,
) -> Result<(), GemmError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrix<T> + ?Sized,
    M: DistMatrixMut<T> + ?Sized,
{
    let shape = check_inputs(comm.size(), a, op_a, b, op_b, &*c)?;
    crate::check_strategy(strategy, shape, comm.size(), &Default::default())?;
    if shape.m == 0 || shape.n == 0 {
        return Ok(());
    }
    if shape.k == 0 || alpha == T::zero() {
        scale(c.local_mut(), beta);
        return Ok(());
    }
    let me = comm.rank();
    let busiest = cosma_rank_cost(strategy, shape, strategy.ranks() - 1).working_words;
    let mine = if me < strategy.ranks() {
        cosma_rank_cost(strategy, shape, me).working_words
    } else {
        0
    };
    agree_on_working_memory::<T, C>(comm, busiest, mine)?;
    let product = Product {
        alpha,
        a,
        op_a,
        b,
        op_b,
        beta,
        par,
    };
    Rounds::new(strategy, shape, me, comm.size()).run(comm, &product, c)
}

/// The operands of `C = alpha·op(A)·op(B) + beta·C` other than `C`.
struct Product<'x, T, A: ?Sized, B: ?Sized> {
    alpha: T,
    a: &'x A,
    op_a: Op,
    b: &'x B,
    op_b: Op,
    beta: T,
    /// Threads of each local multiplication.
    par: Par,
}

/// The sequential rounds of a strategy as this rank runs them: every rank's [`Domain`] in each
/// round, which `C` block each round updates and whether it is that block's last update.
pub(crate) struct Rounds {
    me: usize,
    /// `domains[r][it]`: rank `r`'s multiplication in round `it` (none beyond the strategy).
    domains: Vec<Vec<Domain>>,
    /// The `C` block each round updates ([`c_block_ids`]).
    pub(crate) ids: Vec<usize>,
    /// Whether round `it` is the last update of its block ([`last_updates`]).
    pub(crate) last: Vec<bool>,
}

impl Rounds {
    pub(crate) fn new(strategy: &Strategy, shape: GemmShape, me: usize, p: usize) -> Self {
        let domains = (0..p)
            .map(|r| {
                if r < strategy.ranks() {
                    rank_domains(strategy, shape, r)
                } else {
                    Vec::new()
                }
            })
            .collect();
        let ids = c_block_ids(strategy);
        let last = last_updates(&ids);
        Rounds {
            me,
            domains,
            ids,
            last,
        }
    }

    /// Every rank's rectangle `of(domain)` in round `it` (empty for ranks without one).
    pub(crate) fn rects(&self, it: usize, of: impl Fn(&Domain) -> Rect) -> Vec<Rect> {
        self.domains
            .iter()
            .map(|d| d.get(it).map_or((0..0, 0..0), &of))
            .collect()
    }

    /// Round `it`'s gathers of `op(A)` and `op(B)`, planned (and this rank's pieces packed).
    fn gathers<T: KernelScalar, A, B>(
        &self,
        it: usize,
        x: &Product<'_, T, A, B>,
    ) -> (GatherPlan<T>, GatherPlan<T>)
    where
        A: DistMatrix<T> + ?Sized,
        B: DistMatrix<T> + ?Sized,
    {
        let a_needs = self.rects(it, |d| (d.rows.clone(), d.inner.clone()));
        let b_needs = self.rects(it, |d| (d.inner.clone(), d.cols.clone()));
        let (la, lb) = (x.a.layout(), x.b.layout());
        (
            GatherPlan::new(self.me, la, x.a.local(), x.op_a, &a_needs, Some(Side::Lhs)),
            GatherPlan::new(self.me, lb, x.b.local(), x.op_b, &b_needs, Some(Side::Rhs)),
        )
    }

    /// Round `it`'s products on this rank ([`pairs`] of the operands' [`slabbed`] views),
    /// `None` if it has no multiplication in that round; with `ready_only`, before the
    /// round's messages arrived: only what is in this rank's own buffers.
    fn products<'b, T: KernelScalar>(
        &self,
        it: usize,
        plans: &(GatherPlan<T>, GatherPlan<T>),
        at: (Gathered, Gathered),
        locals: (&'b [T], &'b [T]),
        bufs: (&'b [T], &'b [T]),
        ready_only: bool,
    ) -> Result<Option<Vec<Pair<'b, T>>>, GemmError> {
        let Some(d) = self.domains[self.me].get(it) else {
            return Ok(None);
        };
        let (rows, cols, inner) = (d.rows.len(), d.cols.len(), d.inner.len());
        let (pa, pb) = plans;
        let lhs = slabbed(at.0, pa, locals.0, bufs.0, (rows, inner), ready_only)?;
        let rhs = slabbed(at.1, pb, locals.1, bufs.1, (inner, cols), ready_only)?;
        Ok(Some(pairs(&lhs, &rhs, (rows, cols, inner))))
    }

    /// The rounds with overlap (COSMA §7.3): the first round's transfers are posted, the part
    /// of its product this rank has all operands of (its own slabs, [`Gathered::Slabs`]) is
    /// multiplied while they travel, and they are waited for; then each round posts the next
    /// round's transfers (point-to-point, in the background), multiplies (the rest of it),
    /// and waits for them; after a block's last update the ranks sum their partial blocks
    /// into `C`. Same words and messages as gathering each round at once.
    fn run<T, C, A, B, M>(
        &self,
        comm: &C,
        x: &Product<'_, T, A, B>,
        c: &mut M,
    ) -> Result<(), GemmError>
    where
        T: KernelScalar,
        C: Communicator,
        A: DistMatrix<T> + ?Sized,
        B: DistMatrix<T> + ?Sized,
        M: DistMatrixMut<T> + ?Sized,
    {
        let locals = (x.a.local(), x.b.local());
        let (mut a_buf, mut b_buf) = (Vec::new(), Vec::new());
        let mut partials = Partials::default();
        let mut current = self.gathers(0, x);
        // Round 0: what is here is multiplied while the rest travels (`done`: the parts of
        // its C block updated already).
        let mut done = Vec::new();
        let (mut a_at, mut b_at) = {
            let (pa, pb) = &current;
            let (mut ra, mut rb) = (
                take_buffer(pa.recv_len(), T::zero()),
                take_buffer(pb.recv_len(), T::zero()),
            );
            {
                let mut requests = pa.post(comm, locals.0, &mut ra, TAG_A)?;
                requests.extend(pb.post(comm, locals.1, &mut rb, TAG_B)?);
                let placed = (pa.placed(), pb.placed());
                let none: (&[T], &[T]) = (&[], &[]);
                if let Some(ps) = self.products(0, &current, placed, locals, none, true)? {
                    let ready: Vec<_> = ps.into_iter().filter(|p| p.ready).collect();
                    if !ready.is_empty() {
                        let c_rects = self.rects(0, |d| (d.rows.clone(), d.cols.clone()));
                        self.local_product(0, &ready, &mut done, x, c, &c_rects, &mut partials)?;
                    }
                }
                wait_all(requests)?;
            }
            (
                pa.finish(locals.0, ra, &mut a_buf),
                pb.finish(locals.1, rb, &mut b_buf),
            )
        };
        for it in 0..self.ids.len() {
            let next = (it + 1 < self.ids.len()).then(|| self.gathers(it + 1, x));
            let c_rects = self.rects(it, |d| (d.rows.clone(), d.cols.clone()));
            let mut next_recv = next.as_ref().map(|(na, nb)| {
                (
                    take_buffer(na.recv_len(), T::zero()),
                    take_buffer(nb.recv_len(), T::zero()),
                )
            });
            {
                let requests = match (&next, &mut next_recv) {
                    (Some((na, nb)), Some((ra, rb))) => {
                        let mut r = na.post(comm, locals.0, ra, TAG_A)?;
                        r.extend(nb.post(comm, locals.1, rb, TAG_B)?);
                        r
                    }
                    _ => Vec::new(),
                };
                let bufs = (a_buf.as_slice(), b_buf.as_slice());
                if let Some(ps) = self.products(it, &current, (a_at, b_at), locals, bufs, false)? {
                    // Round 0's ready part is done already.
                    let early = it == 0 && !done.is_empty();
                    let rest: Vec<_> = ps.into_iter().filter(|p| !(early && p.ready)).collect();
                    let mut done_here = if it == 0 {
                        std::mem::take(&mut done)
                    } else {
                        Vec::new()
                    };
                    self.local_product(it, &rest, &mut done_here, x, c, &c_rects, &mut partials)?;
                }
                wait_all(requests)?;
            }
            if let (Some((na, nb)), Some((ra, rb))) = (&next, next_recv) {
                a_at = na.finish(locals.0, ra, &mut a_buf);
                b_at = nb.finish(locals.1, rb, &mut b_buf);
            }
            if let Some(n) = next {
                current = n;
            }
            if self.last[it] {
                self.reduce(comm, it, &c_rects, &mut partials, x, c)?;
            }
        }
        recycle(a_buf);
        recycle(b_buf);
        Ok(())
    }

    /// This rank's product of round `it`, the sum of `parts` (each into its region of the
    /// round's `C` block; `done`: the regions updated already this round, to which it adds):
    /// straight into `C` when nobody else adds to its block and the block lies in one of its
    /// blocks of `C` (alpha, and beta at a region's first update), else into the block's
    /// partial sum (made at the block's first update).
    #[allow(clippy::too_many_arguments)]
    fn local_product<T, A, B, M>(
        &self,
        it: usize,
        parts: &[Pair<'_, T>],
        done: &mut Vec<Rect>,
        x: &Product<'_, T, A, B>,
        c: &mut M,
        c_rects: &[Rect],
        partials: &mut Partials<T>,
    ) -> Result<(), GemmError>
    where
        T: KernelScalar,
        A: ?Sized,
        B: ?Sized,
        M: DistMatrixMut<T> + ?Sized,
    {
        let Some(d) = self.domains[self.me].get(it) else {
            return Ok(());
        };
        if parts.is_empty() {
            return Ok(());
        }
        let (rows, cols, inner) = (d.rows.len(), d.cols.len(), d.inner.len());
        let block_first = !self.ids[..it].contains(&self.ids[it]);
        // Into C (alpha; beta at a region's first update) or into the partial sum.
        let (mut dst, alpha, beta) = match c_in_place(c.layout(), c_rects, self.me) {
            Some((offset, ld)) => {
                let dst = MatMut::from_slice(&mut c.local_mut()[offset..], rows, cols, ld)?;
                (dst, x.alpha, x.beta)
            }
            None => {
                let fresh = block_first && done.is_empty();
                let out = partials.block(self.ids[it], fresh, rows * cols, inner == 0);
                if rows == 0 || cols == 0 || inner == 0 {
                    done.extend(parts.iter().map(|p| (p.rows.clone(), p.cols.clone())));
                    return Ok(());
                }
                let dst = MatMut::from_slice(out, rows, cols, rows.max(1))?;
                (dst, T::one(), T::zero())
            }
        };
        for p in parts {
            let region = (p.rows.clone(), p.cols.clone());
            let first = block_first && !done.contains(&region);
            if !done.contains(&region) {
                done.push(region);
            }
            let beta = if first { beta } else { T::one() };
            let (r, k) = (p.rows.clone(), p.cols.clone());
            let part = dst
                .rb_mut()
                .submatrix_mut(r.start, k.start, r.len(), k.len());
            let nt = Op::NoTrans;
            local_gemm(alpha, p.lhs, nt, p.rhs, nt, beta, part, x.par)?;
        }
        Ok(())
    }

    /// After the last update of round `it`'s block: every rank's partial block summed into
    /// `C` (blocks updated in place take no part; every rank knows which).
    fn reduce<T, C, A, B, M>(
        &self,
        comm: &C,
        it: usize,
        c_rects: &[Rect],
        partials: &mut Partials<T>,
        x: &Product<'_, T, A, B>,
        c: &mut M,
    ) -> Result<(), GemmError>
    where
        T: KernelScalar,
        C: Communicator,
        A: ?Sized,
        B: ?Sized,
        M: DistMatrixMut<T> + ?Sized,
    {
        let layout = c.layout().clone();
        let reduced: Vec<Rect> = (0..c_rects.len())
            .map(|r| match c_in_place(&layout, c_rects, r) {
                Some(_) => (0..0, 0..0),
                None => c_rects[r].clone(),
            })
            .collect();
        let mine = partials.take(self.ids[it]);
        reduce_blocks(
            comm,
            &layout,
            c.local_mut(),
            &reduced,
            &mine,
            x.alpha,
            x.beta,
        )?;
        recycle(mine);
        Ok(())
    }
}

/// The partial `C` blocks alive on this rank, by block id: from a block's first update to its
/// reduction.
struct Partials<T>(Vec<(usize, Vec<T>)>);

impl<T> Default for Partials<T> {
    fn default() -> Self {
        Partials(Vec::new())
    }
}

impl<T: KernelScalar> Partials<T> {
    /// Block `id`'s partial sum of `len` elements; made at its `first` update (overwritten by
    /// that update's product, zeros when it has none: `empty`).
    fn block(&mut self, id: usize, first: bool, len: usize, empty: bool) -> &mut Vec<T> {
        if first {
            let mut fresh = take_buffer(len, T::zero());
            if empty {
                fresh.fill(T::zero());
            }
            self.0.push((id, fresh));
        }
        let slot = self
            .0
            .iter()
            .position(|(i, _)| *i == id)
            .expect("a partial block is made at its first update");
        &mut self.0[slot].1
    }

    /// Block `id`'s partial sum, no longer kept (empty if this rank has none).
    fn take(&mut self, id: usize) -> Vec<T> {
        self.0
            .iter()
            .position(|(i, _)| *i == id)
            .map(|s| self.0.swap_remove(s).1)
            .unwrap_or_default()
    }
}

/// Where rank `r` can update its `C` rectangle in place: `(offset, ld)` in its own buffer of
/// `C` if the rectangle is non-empty, no other rank has the same rectangle (no partial sums to
/// add) and it lies inside one of `r`'s blocks of `layout`. A pure function of global facts,
/// so every rank gets the same answer for every `r`.
pub(crate) fn c_in_place(layout: &impl Layout, rects: &[Rect], r: usize) -> Option<(usize, usize)> {
    if r >= layout.nranks()
        || rects
            .iter()
            .enumerate()
            .any(|(o, rect)| o != r && rect == &rects[r])
    {
        return None;
    }
    let (rows, cols) = &rects[r];
    block_containing(&layout.blocks(r), &rects[r])
        .map(|b| (b.local_index(rows.start, cols.start), b.ld))
}

/// One product of a round: part of an `op(A)` slab times part of an `op(B)` slab over the
/// `k` range they share, into the region `rows × cols` of the round's `C` block.
pub(crate) struct Pair<'a, T> {
    lhs: MatRef<'a, T>,
    rhs: MatRef<'a, T>,
    rows: Range<usize>,
    cols: Range<usize>,
    /// Both read where they are in this rank's own buffers: ready before any message arrives.
    ready: bool,
}

/// A slab of an operand: its rows and columns (from the operand's first), its view, whether
/// it is in this rank's own buffer.
type SlabView<'a, T> = (Rect, MatRef<'a, T>, bool);

/// A gathered `r × c` operand as slabs: one unless it was gathered as [`Gathered::Slabs`].
/// With `ready_only`, the slabs not in this rank's own buffer `local` are left out (`buf` is
/// not filled yet).
fn slabbed<'a, T: KernelScalar>(
    g: Gathered,
    plan: &GatherPlan<T>,
    local: &'a [T],
    buf: &'a [T],
    (r, c): (usize, usize),
    ready_only: bool,
) -> Result<Vec<SlabView<'a, T>>, redblue_kernels::KernelError> {
    let whole = (0..r, 0..c);
    match (g, plan.slabs()) {
        (Gathered::Slabs, Some(slabs)) => slabs
            .iter()
            .filter(|s| s.in_x || !ready_only)
            .map(|s| {
                let data = if s.in_x { local } else { buf };
                let (rows, cols) = (s.rows.len(), s.cols.len());
                let view = MatRef::from_slice(&data[s.offset..], rows, cols, s.ld)?;
                Ok(((s.rows.clone(), s.cols.clone()), view, s.in_x))
            })
            .collect(),
        (Gathered::InPlace { .. }, _) => {
            Ok(vec![(whole, gathered_view(g, local, buf, r, c)?, true)])
        }
        _ if ready_only => Ok(Vec::new()),
        _ => Ok(vec![(whole, gathered_view(g, local, buf, r, c)?, false)]),
    }
}

/// The products of a round from its operands' slabs: for every `op(A)` slab and `op(B)` slab
/// whose `k` ranges meet, their parts over the shared range into the region of `C` the two
/// slabs span (`rows × cols × inner` the round's sizes), region by region in the order of `k`,
/// ready when both slabs are; one empty product when `inner` is 0.
fn pairs<'a, T: KernelScalar>(
    lhs: &[SlabView<'a, T>],
    rhs: &[SlabView<'a, T>],
    (rows, cols, inner): (usize, usize, usize),
) -> Vec<Pair<'a, T>> {
    if inner == 0 {
        return match (lhs.first(), rhs.first()) {
            (Some(l), Some(r)) => vec![Pair {
                lhs: l.1,
                rhs: r.1,
                rows: 0..rows,
                cols: 0..cols,
                ready: l.2 && r.2,
            }],
            _ => Vec::new(),
        };
    }
    let mut out = Vec::new();
    for ((lr, lk), l, l_own) in lhs {
        for ((rk, rc), r, r_own) in rhs {
            let k = lk.start.max(rk.start)..lk.end.min(rk.end);
            if k.is_empty() {
                continue;
            }
            out.push(Pair {
                lhs: l.submatrix(0, k.start - lk.start, lr.len(), k.len()),
                rhs: r.submatrix(k.start - rk.start, 0, k.len(), rc.len()),
                rows: lr.clone(),
                cols: rc.clone(),
                ready: *l_own && *r_own,
            });
        }
    }
    out.sort_by_key(|p| (p.rows.start, p.cols.start));
    out
}

/// The `r × c` block a gather produced: in this rank's own buffer `local`, or in `buf`.
pub(crate) fn gathered_view<'a, T>(
    g: Gathered,
    local: &'a [T],
    buf: &'a [T],
    r: usize,
    c: usize,
) -> Result<MatRef<'a, T>, redblue_kernels::KernelError> {
    match g {
        Gathered::InPlace { offset, ld } => MatRef::from_slice(&local[offset..], r, c, ld),
        Gathered::Buffer => MatRef::from_slice(buf, r, c, r.max(1)),
        Gathered::Slabs => unreachable!("slabs are read through their plan (`slabbed`)"),
    }
}

/// Boundaries of non-empty ranges, sorted and deduplicated: splits for a [`GridLayout`].
fn splits(len: usize, ranges: impl Iterator<Item = Range<usize>>) -> Vec<usize> {
    let mut s: Vec<usize> = ranges
        .filter(|r| !r.is_empty())
        .flat_map(|r| [r.start, r.end])
        .chain([0, len])
        .collect();
    s.sort_unstable();
    s.dedup();
    s
}

/// An owned rectangle: rows, columns, owner.
pub(crate) type Piece = (Range<usize>, Range<usize>, usize);

/// A [`GridLayout`] over `nranks` ranks from owned rectangles that tile a `rows × cols` matrix.
pub(crate) fn layout_from_pieces(
    (rows, cols): (usize, usize),
    pieces: &[Piece],
    nranks: usize,
) -> Result<GridLayout, DistError> {
    let rs = splits(rows, pieces.iter().map(|p| p.0.clone()));
    let cs = splits(cols, pieces.iter().map(|p| p.1.clone()));
    let mut owners = vec![usize::MAX; (rs.len() - 1) * (cs.len() - 1)];
    for (r, c, owner) in pieces {
        if r.is_empty() || c.is_empty() {
            continue;
        }
        for bi in rs.partition_point(|&x| x < r.start)..rs.partition_point(|&x| x < r.end) {
            for bj in cs.partition_point(|&x| x < c.start)..cs.partition_point(|&x| x < c.end) {
                owners[bi * (cs.len() - 1) + bj] = *owner;
            }
        }
    }
    debug_assert!(
        owners.iter().all(|&o| o < nranks),
        "pieces do not tile the matrix"
    );
    GridLayout::new(rs, cs, owners, nranks)
}

/// COSMA's native layouts of `A`, `B` and `C` as stored (`A` is `m × k`, or `k × m` when
/// `op_a` transposes; likewise `B`) for `strategy` on `nranks ≥ strategy.ranks()` ranks; in
/// `op(A)`'s coordinates: every `op(A)` block of a domain is cut
/// across `k`, by its rows, into `p_n` parts, one per rank that reads it (by its `n`
/// coordinate); every `op(B)` block by its columns into `p_m` parts (by `m` coordinate); every
/// `C` block along `n` into `p_k` parts (by `k` coordinate). Each part is a whole-depth slab,
/// so a rank multiplies what it holds and what it receives where they are. In these layouts [`cosma`] moves exactly what
/// [`cosma_rank_cost`](crate::cosma_rank_cost) predicts.
///
/// # Errors
/// [`DistError::InvalidLayout`] if `nranks` is smaller than the strategy's ranks.
pub fn native_layouts(
    strategy: &Strategy,
    shape: GemmShape,
    (op_a, op_b): (Op, Op),
    nranks: usize,
) -> Result<[GridLayout; 3], DistError> {
    if nranks < strategy.ranks() {
        return Err(DistError::InvalidLayout(format!(
            "the strategy uses {} ranks, more than {nranks}",
            strategy.ranks()
        )));
    }
    let [pm, pn, pk] = strategy.grid();
    let (mut pa, mut pb, mut pc) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..strategy.ranks() {
        let (_, [cm, cn, ck]) = grid_coords(strategy, r);
        for d in rank_domains(strategy, shape, r) {
            pa.push((part(d.rows.clone(), pn, cn), d.inner.clone(), r));
            pb.push((d.inner.clone(), part(d.cols.clone(), pm, cm), r));
            pc.push((d.rows.clone(), part(d.cols.clone(), pk, ck), r));
        }
    }
    // A transposed operand is stored transposed: swap its pieces.
    let stored = |op: Op, pieces: Vec<Piece>| -> Vec<Piece> {
        if op == Op::NoTrans {
            pieces
        } else {
            pieces.into_iter().map(|(r, c, o)| (c, r, o)).collect()
        }
    };
    let (m, n, k) = (shape.m, shape.n, shape.k);
    Ok([
        layout_from_pieces(op_a.apply_shape((m, k)), &stored(op_a, pa), nranks)?,
        layout_from_pieces(op_b.apply_shape((k, n)), &stored(op_b, pb), nranks)?,
        layout_from_pieces((m, n), &pc, nranks)?,
    ])
}
