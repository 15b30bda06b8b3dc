//! Multiplications of operands where they already are: the exact counters of a strategy run on
//! `A`, `B` and `C` in given layouts ([`placed_rank_costs`]), and the choice among COSMA's
//! strategies of the one that moves the least from those layouts
//! ([`GemmPlan::for_layouts`](crate::GemmPlan::for_layouts)).
//!
//! [`cosma`](crate::cosma) never copies its operands into a layout of its own: each round
//! gathers every rank's blocks of `op(A)` and `op(B)` from wherever they are, and each partial
//! block of `C` is summed straight into `C`'s layout. So what a run moves depends on the
//! layouts, and a strategy whose domains fall on the blocks a rank already holds moves little.

use crate::cosma::Rounds;
use crate::exchange::Rect;
use crate::memory::with_agreement;
use crate::model::RankCost;
use crate::plan::GemmShape;
use crate::Strategy;
use redblue_comm::CommStats;
use redblue_core::Op;
use redblue_dist::{owner_col_order, owner_row_order, Layout, Relabeled};
use std::ops::Range;

/// The intervals of `splits` (`0 = s_0 < … < s_k`) that overlap `range`.
fn overlapping(splits: &[usize], range: &Range<usize>) -> Range<usize> {
    if range.is_empty() {
        return 0..0;
    }
    let first = splits.partition_point(|&s| s <= range.start) - 1;
    let last = splits.partition_point(|&s| s < range.end);
    first..last
}

fn overlap(a: &Range<usize>, b: &Range<usize>) -> usize {
    a.end.min(b.end).saturating_sub(a.start.max(b.start))
}

/// Elements of rectangle `need` of `op(X)` each rank of `layout` (of `X`) holds, added into
/// `held` (one entry per rank of the layout); the ranks touched are listed once in `touched`.
fn holders(layout: &impl Layout, op: Op, need: &Rect, held: &mut [u64], touched: &mut Vec<usize>) {
    // The rectangle in X's own coordinates.
    let (rows, cols) = if op.is_transposed() {
        (&need.1, &need.0)
    } else {
        (&need.0, &need.1)
    };
    let (rs, cs) = (layout.row_splits(), layout.col_splits());
    for bj in overlapping(cs, cols) {
        let width = overlap(&(cs[bj]..cs[bj + 1]), cols) as u64;
        for bi in overlapping(rs, rows) {
            let area = overlap(&(rs[bi]..rs[bi + 1]), rows) as u64 * width;
            let owner = layout.block_owner(bi, bj);
            if held[owner] == 0 && area > 0 {
                touched.push(owner);
            }
            held[owner] += area;
        }
    }
}

/// Counters of one exchange in which each rank `r` gets (a gather) or gives (a reduction) the
/// rectangle `rects[r]` of `op(X)` from or to the ranks of `layout` that hold its pieces: one
/// message per pair of different ranks with a non-empty piece list.
struct Exchange<'a> {
    stats: &'a mut [CommStats],
    held: Vec<u64>,
    touched: Vec<usize>,
}

impl<'a> Exchange<'a> {
    fn new(stats: &'a mut [CommStats], nranks: usize) -> Self {
        Exchange {
            stats,
            held: vec![0; nranks],
            touched: Vec::new(),
        }
    }

    /// Rank `r`'s rectangle against the holders; `gather`: the holders send to `r`, else `r`
    /// sends to them.
    fn count(&mut self, layout: &impl Layout, op: Op, r: usize, rect: &Rect, gather: bool) {
        if rect.0.is_empty() || rect.1.is_empty() {
            return;
        }
        holders(layout, op, rect, &mut self.held, &mut self.touched);
        for o in self.touched.drain(..) {
            let words = std::mem::take(&mut self.held[o]);
            if o == r || words == 0 {
                continue;
            }
            let (from, to) = if gather { (o, r) } else { (r, o) };
            self.stats[from].words_sent += words;
            self.stats[from].messages_sent += 1;
            self.stats[to].words_received += words;
            self.stats[to].messages_received += 1;
        }
    }
}

/// Whether rank `r`'s block `rects[r]` of `C` is updated in place: nobody else adds to it and
/// it lies inside one block `r` holds (then it takes no part in the reduction).
fn c_in_place(c: &impl Layout, rects: &[Rect], r: usize) -> bool {
    let (rows, cols) = &rects[r];
    if r >= c.nranks() || rows.is_empty() || cols.is_empty() {
        return false;
    }
    if rects
        .iter()
        .enumerate()
        .any(|(o, x)| o != r && x == &rects[r])
    {
        return false;
    }
    let (rs, cs) = (c.row_splits(), c.col_splits());
    let (bi, bj) = (overlapping(rs, rows), overlapping(cs, cols));
    bi.len() == 1 && bj.len() == 1 && c.block_owner(bi.start, bj.start) == r
}

/// Every rank's counters (of `p`; elements of `bytes` bytes) when [`cosma`](crate::cosma) runs
/// `strategy` on `C = alpha·op(A)·op(B) + beta·C` (`alpha ≠ 0`) with `A`, `B` and `C` laid out
/// as `a`, `b` and `c` (as stored): each round's gathers of `op(A)` and `op(B)` from where they
/// are, the reductions of the partial blocks into `C`'s layout, and the memory agreement of
/// large runs. Exact: in the native layouts it is
/// [`Schedule::rank_cost`](crate::Schedule::rank_cost), in any others what the communicator
/// counts.
///
/// # Examples
/// ```
/// use redblue_core::Op;
/// use redblue_dist::{BlockCyclic, GridLayout};
/// use redblue_gemm::{native_layouts, placed_rank_costs, GemmShape, Schedule, Strategy};
///
/// let (shape, ops) = (GemmShape::new(64, 64, 64), (Op::NoTrans, Op::NoTrans));
/// let strategy: Strategy = "pm2,pn2".parse().unwrap();
/// let [a, b, c] = native_layouts(&strategy, shape, ops, 4).unwrap();
/// let native = placed_rank_costs(&strategy, shape, ops, &a, &b, &c, 4, 8);
/// let model: Vec<_> = (0..4).map(|r| Schedule::Strategy(strategy.clone()).rank_cost(shape, 4, r)).collect();
/// assert!(native.iter().zip(&model).all(|(n, m)| n.words_sent == m.words_sent));
/// // Block-cyclic operands: every rank gathers most of what it needs.
/// let bc = BlockCyclic::new(64, 64, 8, 8, 2, 2).unwrap();
/// let moved = placed_rank_costs(&strategy, shape, ops, &bc, &bc, &bc, 4, 8);
/// assert!(moved[0].words_received > native[0].words_received);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn placed_rank_costs(
    strategy: &Strategy,
    shape: GemmShape,
    ops: (Op, Op),
    a: &impl Layout,
    b: &impl Layout,
    c: &impl Layout,
    p: usize,
    bytes: usize,
) -> Vec<CommStats> {
    let mut stats = vec![CommStats::default(); p];
    if shape.m == 0 || shape.n == 0 || shape.k == 0 {
        return stats;
    }
    let rounds = Rounds::new(strategy, shape, 0, p);
    for it in 0..rounds.ids.len() {
        let a_needs = rounds.rects(it, |d| (d.rows.clone(), d.inner.clone()));
        let b_needs = rounds.rects(it, |d| (d.inner.clone(), d.cols.clone()));
        let mut gathers = Exchange::new(&mut stats, p);
        for r in 0..p {
            gathers.count(a, ops.0, r, &a_needs[r], true);
            gathers.count(b, ops.1, r, &b_needs[r], true);
        }
        if rounds.last[it] {
            let c_rects = rounds.rects(it, |d| (d.rows.clone(), d.cols.clone()));
            let mut reduction = Exchange::new(&mut stats, p);
            for r in 0..p {
                if !c_in_place(c, &c_rects, r) {
                    reduction.count(c, Op::NoTrans, r, &c_rects[r], false);
                }
            }
        }
    }
    let busiest = crate::Schedule::Strategy(strategy.clone()).busiest_working_words(shape);
    stats
        .into_iter()
        .enumerate()
        .map(|(r, s)| {
            let cost = RankCost {
                words_sent: s.words_sent,
                words_received: s.words_received,
                messages_sent: s.messages_sent,
                messages_received: s.messages_received,
                ..RankCost::default()
            };
            with_agreement(cost, busiest, r, p).stats(bytes)
        })
        .collect()
}

/// The relabelled layouts of `A`, `B` and `C` that [`owner_ordered`] gives.
pub type OwnerOrdered<LA, LB, LC> = (Relabeled<LA>, Relabeled<LB>, Relabeled<LC>);

/// The layouts of `A`, `B` and `C` relabelled for a product planned where they are: `m` and
/// `n` in `C`'s owners' buffer order, `k` in `A`'s ([`owner_row_order`],
/// [`owner_col_order`]), each operand seen through [`Relabeled`]. The product of the relabelled
/// operands is the relabelled product (`P·C·Rᵀ = (P·A·Qᵀ)·(Q·B·Rᵀ)`), and nothing moves to
/// relabel; but a block-cyclic layout becomes a grid of one block per process, on which
/// COSMA's domains fall on whole local arrays: on a `1 × 2` grid with 64-wide blocks,
/// `N = 4096`, the busiest rank of the best plan receives 8.4 million words instead of 16.8.
/// `A` and `B` are as stored (`op_a`, `op_b` say which of their dimensions is `k`).
///
/// # Examples
/// ```
/// use redblue_core::Op;
/// use redblue_dist::{BlockCyclic, Layout};
/// use redblue_gemm::{owner_ordered, GemmParams, GemmPlan, GemmShape};
///
/// let bc = || BlockCyclic::new(512, 512, 16, 16, 1, 2).unwrap();
/// let (shape, ops) = (GemmShape::new(512, 512, 512), (Op::NoTrans, Op::NoTrans));
/// let most = |plan: &GemmPlan| plan.rank_costs(8).iter().map(|c| c.words_received).max().unwrap();
/// let params = GemmParams::default();
/// let (a, b, c) = owner_ordered(&bc(), ops.0, &bc(), ops.1, &bc()).unwrap();
/// assert_eq!(c.num_blocks(), (1, 2)); // a 1 × 2 grid of 512 × 256 blocks
/// let relabelled = GemmPlan::for_layouts(shape, ops, 2, &params, &a, &b, &c).unwrap();
/// // Half of A moves, as from COSMA's own layouts; C and B stay where they are.
/// assert_eq!(most(&relabelled), 512 * 256);
/// // `for_layouts` on the block-cyclic layouts finds this plan itself.
/// let here = GemmPlan::for_layouts(shape, ops, 2, &params, &bc(), &bc(), &bc()).unwrap();
/// assert_eq!(most(&here), most(&relabelled));
/// ```
///
/// # Errors
/// [`DistError::InvalidLayout`](redblue_dist::DistError::InvalidLayout) if the layouts'
/// shapes do not make a product (`A`'s `k` against `B`'s, `m`, `n` against `C`'s).
pub fn owner_ordered<LA: Layout, LB: Layout, LC: Layout>(
    a: &LA,
    op_a: Op,
    b: &LB,
    op_b: Op,
    c: &LC,
) -> Result<OwnerOrdered<LA, LB, LC>, redblue_dist::DistError> {
    let (m_order, n_order) = (owner_row_order(c), owner_col_order(c));
    let k_order = if op_a == Op::NoTrans {
        owner_col_order(a)
    } else {
        owner_row_order(a)
    };
    let stored = |op: Op, rows: &[usize], cols: &[usize]| {
        if op == Op::NoTrans {
            (rows.to_vec(), cols.to_vec())
        } else {
            (cols.to_vec(), rows.to_vec())
        }
    };
    let (ar, ac) = stored(op_a, &m_order, &k_order);
    let (br, bc) = stored(op_b, &k_order, &n_order);
    Ok((
        Relabeled::new(a.clone(), ar, ac)?,
        Relabeled::new(b.clone(), br, bc)?,
        Relabeled::new(c.clone(), m_order, n_order)?,
    ))
}
