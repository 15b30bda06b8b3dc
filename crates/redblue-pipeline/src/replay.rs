//! The exact per-rank counters of a factorisation from sizes alone, without listing any move:
//! the shared steps counted here, the algorithm's own (its choice of the block's rows and its
//! `U` side) by its [`StepModel`].
//!
//! Every exchange of a step is a set of groups, each an outer product: every sender `s` of the
//! group sends every receiver `d` a block of `a_s × b_d` elements — the panel's layer sums, the
//! scatter of `L10`, the spreads, LU's reduction of `U01`. A rank's words and messages in a
//! group follow from the sums and the counts of the sizes ([`Tally`]), so a step costs
//! `O(P + v)` to replay where listing its moves costs `O(P·moves)`; the algorithm crates' tests
//! hold this replay equal to the one over the move lists the factorisation runs.

use crate::gather::Shares;
use crate::geometry::{part, Geometry};
use crate::steps::{
    count_broadcast, count_panel_pieces, count_panel_reduce, count_row_broadcast, owned_in,
    PanelHome,
};
use redblue_comm::volume::Tally;
use redblue_comm::CommStats;
use std::ops::Range;

/// A step's counts, per grid row, grid column or layer.
pub struct StepSizes {
    /// Active rows of each grid row (before the step).
    pub active: Vec<usize>,
    /// The block's rows (pivot rows) of each grid row.
    pub pivots: Vec<usize>,
    /// Columns right of the panel in each grid column.
    pub right: Vec<usize>,
    /// Each layer's share of the panel width.
    pub share: Vec<usize>,
}

/// What a factorisation's cost model adds to the shared steps.
pub trait StepModel {
    /// The grid rows of the panel's grid column and layer that hold step `t`'s factored block
    /// after step 2 (the roots of its broadcast).
    fn holders(&self, g: &Geometry, t: usize) -> Range<usize>;

    /// Whether the algorithm chooses the block's rows (pivoting): they then travel with the
    /// block, and the ranks left idle by the grid receive them all at the end.
    fn pivots(&self) -> bool;

    /// Control words (8 bytes each) broadcast with a block of width `w`: the failure flag,
    /// and the `w` rows when the algorithm pivots.
    fn meta_words(&self, w: usize) -> usize {
        1 + if self.pivots() { w } else { 0 }
    }

    /// Which parts of the factors the layers keep shares of.
    fn shares(&self) -> Shares;

    /// Where the panel is solved on `g`.
    fn panel_home(&self, g: &Geometry) -> PanelHome {
        let _ = g;
        PanelHome::Pieces
    }

    /// The algorithm's own counters of step `t` (its choice of the block's rows, its `U`
    /// side), the step's rows being `piv`.
    fn count_own(
        &self,
        tally: &mut Tally,
        g: &Geometry,
        t: usize,
        sizes: &StepSizes,
        piv: &[usize],
        bytes: usize,
    );

    /// The words all ranks send in [`StepModel::count_own`] for a step whose rows are the
    /// panel's own (no interchanges), from per-grid-row sums: `active[x]` before the step.
    fn own_words(&self, g: &Geometry, t: usize, active: &[usize]) -> usize;
}

/// Every rank's counters for the factorisation on `p` ranks with the given rows (one list per
/// step), element size `bytes`: the agreement on the buffers, the check of the input and the
/// agreement on the outcome over all ranks, per step the panel's layer sums, the broadcast of the block, the scatter and
/// spread of `L10`, and the model's own; and, when the algorithm pivots and the grid leaves
/// ranks idle, the pivots to them.
pub fn factor_costs<M: StepModel>(
    g: &Geometry,
    p: usize,
    model: &M,
    pivots: &[Vec<usize>],
    bytes: usize,
) -> Vec<CommStats> {
    let mut tally = Tally::new(p);
    // The agreement on the buffers (1 word, `crate::reserve`), the input's check (3) and, at
    // the end, the agreement on the outcome (2).
    tally.all_reduce(1, 8);
    tally.all_reduce(3, 8);
    let mut sizes = StepSizes {
        active: (0..g.px).map(|x| owned_in(0, g.m, g.v, g.px, x)).collect(),
        pivots: vec![0; g.px],
        right: vec![0; g.py],
        share: vec![0; g.c],
    };
    let mut rest = vec![0usize; g.px];
    for (t, piv) in pivots.iter().enumerate() {
        let panel = g.panel(t);
        let w = panel.len();
        sizes.pivots.fill(0);
        for &r in piv {
            sizes.pivots[g.row_px(r)] += 1;
        }
        for y in 0..g.py {
            sizes.right[y] = owned_in(panel.end, g.n, g.v, g.py, y);
        }
        for z in 0..g.c {
            sizes.share[z] = part(w, g.c, z).len();
        }
        // 1. The panel's layer sums.
        count_panel_reduce(&mut tally, g, t, &sizes.active, bytes);
        // 3. The block and its rows.
        let meta = model.meta_words(w);
        count_broadcast(&mut tally, g, model.holders(g, t), t, (meta, w * w), bytes);
        // 4. and 7a. L10: scattered to the 1D pieces, spread to the layers' shares.
        for (r, (&a, &p)) in rest.iter_mut().zip(sizes.active.iter().zip(&sizes.pivots)) {
            *r = a - p;
        }
        match model.panel_home(g) {
            PanelHome::Pieces => count_panel_pieces(&mut tally, g, t, &rest, bytes),
            PanelHome::Owner => count_row_broadcast(&mut tally, g, t, &rest, bytes),
        }
        // 2., 5. and 7b. The algorithm's own.
        model.count_own(&mut tally, g, t, &sizes, piv, bytes);
        for x in 0..g.px {
            sizes.active[x] -= sizes.pivots[x];
        }
    }
    tally.all_reduce(2, 8);
    if model.pivots() && p > g.ranks() {
        let n = pivots.iter().map(Vec::len).sum();
        let position = |r: usize| match r {
            0 => Some(0),
            r if r >= g.ranks() => Some(1 + r - g.ranks()),
            _ => None,
        };
        tally.tree(1 + p - g.ranks(), position, n, 8);
    }
    tally.stats
}

/// The words all ranks together send in a factorisation whose steps' rows are the panels' own
/// (no interchanges: the planning assumption), computed from per-step sums in `O(Px + Py + c)`
/// per step plus the model's own: what the choice of grid and tile width compares. It is the
/// sum of [`factor_costs`]'s `words_sent` over the ranks, exactly.
pub fn planned_words<M: StepModel>(g: &Geometry, model: &M) -> f64 {
    let (px, py, c) = (g.px, g.py, g.c);
    let p = g.ranks();
    let mut total = 0.0f64;
    total += (all_reduce_words(p, 1) + all_reduce_words(p, 3) + all_reduce_words(p, 2)) as f64;
    let mut active: Vec<usize> = (0..px).map(|x| owned_in(0, g.m, g.v, px, x)).collect();
    let mut shares = vec![0usize; c];
    for t in 0..g.steps() {
        let panel = g.panel(t);
        let w = panel.len();
        let (y0, z0) = g.panel_owner(t);
        let pivot_row = g.solver_row(t);
        for (z, k) in shares.iter_mut().enumerate() {
            *k = part(w, c, z).len();
        }
        // The shares of the first `m` pieces when pieces come in blocks of `block` per layer
        // (piece q in layer q / block).
        let prefix = |m: usize, block: usize| -> usize {
            let whole = (m / block).min(c);
            shares[..whole].iter().sum::<usize>() * block
                + if whole < c {
                    (m % block) * shares[whole]
                } else {
                    0
                }
        };
        let mut step = 0usize;
        // 1. The layer sums of the panel.
        step += (c - 1) * w * active.iter().sum::<usize>();
        // 3. The broadcast to every grid rank but the holders.
        let holders = model.holders(g, t).len().max(1);
        step += (p - holders) * (w * w + model.meta_words(w));
        // 4. and 7a. L10 per grid row.
        let pieces = py * c;
        let own = y0 + py * z0;
        for (x, &a) in active.iter().enumerate() {
            let rest = a - if x == pivot_row { w } else { 0 };
            if model.panel_home(g) == PanelHome::Owner {
                step += (py - 1) * w * rest;
                continue;
            }
            step += w * (rest - part(rest, pieces, own).len());
            let (base, rem) = (rest / pieces, rest % pieces);
            step += py * w * rest - (base * py * w + prefix(rem, py));
        }
        // 2., 5. and 7b.
        step += model.own_words(g, t, &active);
        active[pivot_row] -= w;
        total += step as f64;
    }
    total
}

/// Words all `p` ranks send in an `all_reduce` of `n` elements (the accounting rules of
/// `redblue_comm::volume::all_reduce`).
fn all_reduce_words(p: usize, n: usize) -> usize {
    (0..p.min(n + 1))
        .map(|r| {
            let mine = n / p + usize::from(r < n % p);
            n - mine + mine * (p - 1)
        })
        .sum::<usize>()
        + (p.saturating_sub(n + 1)) * (n - n / p)
}
