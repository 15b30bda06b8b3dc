//! Running a [`Strategy`]: [`cosma`] multiplies distributed matrices in any layouts, and
//! [`native_layouts`] gives the layouts in which it moves exactly what the cost model says.
//!
//! For each sequential iteration, every rank gathers the `op(A)` and `op(B)` blocks of its
//! [`Domain`](crate::Domain) (one `all_to_all_v` each: COSMA's broadcasts along the grid, each
//! element sent straight from its owner), multiplies them into its partial `C` block with the
//! local kernel, and after the last iteration that updates a `C` block the ranks sum their
//! partial blocks into `C`'s layout (one `all_to_all_v`: COSMA's reduction along `k`).
//!
//! Inputs in other layouts are read where they are: each element goes from its owner straight
//! to every rank that needs it, which never moves more than transforming to the native layout
//! first (a transform moves each element to its native owner, which then sends it on). The
//! words this costs beyond the native model are counted like all others.

use crate::exchange::{block_containing, reduce_blocks, GatherPlan, Gathered, Rect, TAG_A, TAG_B};
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
/// [`GemmError::Dist`] if a layout spreads over more ranks than `comm`; a communication failure.
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
    let (me, p) = (comm.rank(), comm.size());
    let domains: Vec<Vec<Domain>> = (0..p)
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
    let empty = || (0..0, 0..0);
    let at = |r: usize, it: usize| domains[r].get(it);
    let (mut a_buf, mut b_buf) = (Vec::new(), Vec::new());
    let c_rects = |it: usize| -> Vec<Rect> {
        (0..p)
            .map(|r| at(r, it).map_or_else(empty, |d| (d.rows.clone(), d.cols.clone())))
            .collect()
    };
    // Partial C blocks alive on this rank, by block id.
    let mut partials: Vec<(usize, Vec<T>)> = Vec::new();
    // The gathers of one iteration, planned (and my pieces packed).
    let plans = |it: usize| {
        let a_needs: Vec<Rect> = (0..p)
            .map(|r| at(r, it).map_or_else(empty, |d| (d.rows.clone(), d.inner.clone())))
            .collect();
        let b_needs: Vec<Rect> = (0..p)
            .map(|r| at(r, it).map_or_else(empty, |d| (d.inner.clone(), d.cols.clone())))
            .collect();
        (
            GatherPlan::new(me, a.layout(), a.local(), op_a, &a_needs),
            GatherPlan::new(me, b.layout(), b.local(), op_b, &b_needs),
        )
    };
    // Rounds with overlap (COSMA §7.3): the first round's blocks are gathered at once; then
    // each round posts the next round's transfers (point-to-point, in the background), multiplies,
    // and waits for them. Same words and messages as gathering each round at once.
    let (pa, pb) = plans(0);
    let mut ga = pa.run(comm, a.local(), &mut a_buf, TAG_A)?;
    let mut gb = pb.run(comm, b.local(), &mut b_buf, TAG_B)?;
    for it in 0..ids.len() {
        let next = (it + 1 < ids.len()).then(|| plans(it + 1));
        let rects = c_rects(it);
        let mut next_recv = next.as_ref().map(|(na, nb)| {
            (
                take_buffer(na.recv_len(), T::zero()),
                take_buffer(nb.recv_len(), T::zero()),
            )
        });
        {
            let requests = match (&next, &mut next_recv) {
                (Some((na, nb)), Some((ra, rb))) => {
                    let mut r = na.post(comm, a.local(), ra, TAG_A)?;
                    r.extend(nb.post(comm, b.local(), rb, TAG_B)?);
                    r
                }
                _ => Vec::new(),
            };
            let first = !ids[..it].contains(&ids[it]);
            if let Some(d) = at(me, it) {
                let (rows, cols, inner) = (d.rows.len(), d.cols.len(), d.inner.len());
                let lhs = gathered_view(ga, a.local(), &a_buf, rows, inner)?;
                let rhs = gathered_view(gb, b.local(), &b_buf, inner, cols)?;
                if let Some((offset, ld)) = c_in_place(c.layout(), &rects, me) {
                    // Nobody else adds to this block and it lies in one of my blocks of C:
                    // update C where it is, alpha and beta included (k = 0 still scales).
                    let beta = if first { beta } else { T::one() };
                    let dst = MatMut::from_slice(&mut c.local_mut()[offset..], rows, cols, ld)?;
                    local_gemm(alpha, lhs, Op::NoTrans, rhs, Op::NoTrans, beta, dst, par)?;
                } else {
                    if first {
                        // Overwritten by the first product (beta = 0), zero if it has none.
                        let mut fresh = take_buffer(rows * cols, T::zero());
                        if inner == 0 {
                            fresh.fill(T::zero());
                        }
                        partials.push((ids[it], fresh));
                    }
                    let slot = partials
                        .iter()
                        .position(|(id, _)| *id == ids[it])
                        .expect("a partial block is made at its first update");
                    let out = &mut partials[slot].1;
                    if rows > 0 && cols > 0 && inner > 0 {
                        let dst = MatMut::from_slice(out, rows, cols, rows.max(1))?;
                        let beta = if first { T::zero() } else { T::one() };
                        local_gemm(T::one(), lhs, Op::NoTrans, rhs, Op::NoTrans, beta, dst, par)?;
                    }
                }
            }
            wait_all(requests)?;
        }
        if let (Some((na, nb)), Some((ra, rb))) = (&next, next_recv) {
            ga = na.finish(ra, &mut a_buf);
            gb = nb.finish(rb, &mut b_buf);
        }
        if last[it] {
            // Blocks updated in place take no part in the reduction (every rank knows which).
            let layout = c.layout().clone();
            let reduced: Vec<Rect> = (0..p)
                .map(|r| match c_in_place(&layout, &rects, r) {
                    Some(_) => empty(),
                    None => rects[r].clone(),
                })
                .collect();
            let mine = partials
                .iter()
                .position(|(id, _)| *id == ids[it])
                .map(|s| partials.swap_remove(s).1)
                .unwrap_or_default();
            reduce_blocks(comm, &layout, c.local_mut(), &reduced, &mine, alpha, beta)?;
            recycle(mine);
        }
    }
    recycle(a_buf);
    recycle(b_buf);
    Ok(())
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
/// along `k` into `p_n` parts, one per rank that reads it (by its `n` coordinate); every
/// `op(B)` block along `k` into `p_m` parts (by `m` coordinate); every `C` block along `n` into
/// `p_k` parts (by `k` coordinate). In these layouts [`cosma`] moves exactly what
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
            pa.push((d.rows.clone(), part(d.inner.clone(), pn, cn), r));
            pb.push((part(d.inner.clone(), pm, cm), d.cols.clone(), r));
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
