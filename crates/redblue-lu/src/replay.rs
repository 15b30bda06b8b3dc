//! LU's part of the exact model ([`redblue_pipeline::replay`] counts the shared steps): the
//! choice of the pivots (the tournament's butterfly, or partial pivoting's per-column search)
//! and the `U` side (the reduction of `U01` to its 1D pieces and their spread), as groups of
//! outer products of sizes ([`Tally`]), and their words summed over the ranks for the choice
//! of the plan.

use crate::factor::Pivoting;
use crate::pivot::{butterfly_size, held_table};
use redblue_comm::volume::Tally;
use redblue_pipeline::steps::{owned_in, PanelHome};
use redblue_pipeline::{part, Geometry, Shares, StepModel, StepSizes};
use std::ops::Range;

impl StepModel for Pivoting {
    fn holders(&self, g: &Geometry, t: usize) -> Range<usize> {
        match self {
            Pivoting::Tournament => 0..butterfly_size(g.px),
            Pivoting::Partial => 0..1,
            Pivoting::None => g.solver_row(t)..g.solver_row(t) + 1,
        }
    }

    fn pivots(&self) -> bool {
        *self != Pivoting::None
    }

    fn shares(&self) -> Shares {
        Shares::LowerAndUpper
    }

    /// With layers (COnfLUX) the panel is spread over the `Py·c` ranks of a grid row, for the
    /// layers' shares; on one layer (the 2D baseline, and COnfLUX's 2D plans) it is solved
    /// where its reduction left it and broadcast along the grid rows, as ScaLAPACK does.
    fn panel_home(&self, g: &Geometry) -> PanelHome {
        if g.c > 1 {
            PanelHome::Pieces
        } else {
            PanelHome::Owner
        }
    }

    fn count_own(
        &self,
        tally: &mut Tally,
        g: &Geometry,
        t: usize,
        sizes: &StepSizes,
        piv: &[usize],
        bytes: usize,
    ) {
        pivot_costs(tally, g, *self, t, sizes, piv, bytes);
        u01_costs(tally, g, sizes, bytes);
    }

    fn own_words(&self, g: &Geometry, t: usize, active: &[usize]) -> usize {
        pivot_words(g, *self, t, active) + u01_words(g, t)
    }
}

/// Steps 5 and 7b's counters: `U01` reduced to the 1D pieces of its columns, spread to the
/// layers' shares.
fn u01_costs(tally: &mut Tally, g: &Geometry, sizes: &StepSizes, bytes: usize) {
    let pieces = g.px * g.c;
    let mut senders = Vec::with_capacity(g.ranks());
    let mut receivers = Vec::with_capacity(g.ranks());
    for y in 0..g.py {
        senders.clear();
        receivers.clear();
        for q in 0..pieces {
            receivers.push((
                g.rank(q % g.px, y, q / g.px),
                part(sizes.right[y], pieces, q).len(),
            ));
        }
        for z in 0..g.c {
            senders.extend((0..g.px).map(|x| (g.rank(x, y, z), sizes.pivots[x])));
        }
        tally.product(&senders, &receivers, bytes);
        for z in 0..g.c {
            for x in 0..g.px {
                senders[x + g.px * z].1 = sizes.share[z];
            }
        }
        tally.product(&receivers, &senders, bytes);
    }
}

/// Step 2's counters: the tournament's butterfly, or partial pivoting's per-column search and
/// pivot rows, among the panel ranks `(·, y0, z0)`.
fn pivot_costs(
    tally: &mut Tally,
    g: &Geometry,
    pivoting: Pivoting,
    t: usize,
    sizes: &StepSizes,
    piv: &[usize],
    bytes: usize,
) {
    let (y0, z0) = g.panel_owner(t);
    let w = g.panel(t).len();
    let px = g.px;
    match pivoting {
        Pivoting::Tournament => {
            // Values (`k·w` elements) and row indices (`k`, 8 bytes each) in two messages:
            // the fold-in of `x ≥ p2` into `x − p2`, then both ways in every round.
            let p2 = butterfly_size(px);
            let rank = |x: usize| g.rank(x, y0, z0);
            let pair = |from: usize, to: usize, k: usize, tally: &mut Tally| {
                tally.send(rank(from), k * w, 1, bytes);
                tally.send(rank(from), k, 1, 8);
                tally.receive(rank(to), k * w, 1, bytes);
                tally.receive(rank(to), k, 1, 8);
            };
            for x in p2..px {
                pair(x, x - p2, sizes.active[x].min(w), tally);
            }
            let table = held_table(&sizes.active, w);
            for (k, held) in table.iter().enumerate().take(p2.trailing_zeros() as usize) {
                for x in 0..p2 {
                    pair(x, x ^ (1 << k), held[x], tally);
                }
            }
        }
        Pivoting::Partial if px > 1 => {
            // Per column: every participant's best candidate (2 elements) to every other,
            // then the pivot row (w elements) from its holder to every other.
            for x in 0..px {
                let rank = g.rank(x, y0, z0);
                let holds = piv.iter().filter(|&&r| g.row_px(r) == x).count();
                let others = px - 1;
                tally.send(
                    rank,
                    2 * w * others + holds * w * others,
                    w * others + holds * others,
                    bytes,
                );
                tally.receive(
                    rank,
                    2 * w * others + (w - holds) * w,
                    w * others + (w - holds),
                    bytes,
                );
            }
        }
        Pivoting::Partial | Pivoting::None => {}
    }
}

/// Step 2's words summed over the ranks, with no interchanges (the pivots are on grid row
/// `t mod Px`).
fn pivot_words(g: &Geometry, pivoting: Pivoting, t: usize, active: &[usize]) -> usize {
    let (px, w) = (g.px, g.panel(t).len());
    match pivoting {
        Pivoting::Tournament => {
            let p2 = butterfly_size(px);
            let fold: usize = (p2..px).map(|x| active[x].min(w) * (w + 1)).sum();
            let rounds = p2.trailing_zeros() as usize;
            fold + held_table(active, w)
                .iter()
                .take(rounds)
                .map(|row| row.iter().sum::<usize>() * (w + 1))
                .sum::<usize>()
        }
        Pivoting::Partial if px > 1 => px * 2 * w * (px - 1) + w * w * (px - 1),
        Pivoting::Partial | Pivoting::None => 0,
    }
}

/// Steps 5 and 7b's words summed over the ranks, with no interchanges.
fn u01_words(g: &Geometry, t: usize) -> usize {
    let (px, py, c) = (g.px, g.py, g.c);
    let panel = g.panel(t);
    let w = panel.len();
    let pivot_row = g.solver_row(t);
    let shares: Vec<usize> = (0..c).map(|z| part(w, c, z).len()).collect();
    // The shares of the first `m` pieces when pieces come in blocks of `px` per layer.
    let prefix = |m: usize| -> usize {
        let whole = (m / px).min(c);
        shares[..whole].iter().sum::<usize>() * px
            + if whole < c {
                (m % px) * shares[whole]
            } else {
                0
            }
    };
    let pieces = px * c;
    let mut words = 0;
    for y in 0..py {
        let right = owned_in(panel.end, g.n, g.v, py, y);
        let (base, rem) = (right / pieces, right % pieces);
        // Only grid row `t mod Px` holds pivot rows; its c ranks skip their own piece.
        let own_pieces = (0..c).filter(|z| pivot_row + px * z < rem).count();
        words += c * w * right - (c * w * base + w * own_pieces);
        words += px * w * right - (base * px * w + prefix(rem));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::factor::{u01_reduce_moves, u01_spread_moves};
    use crate::pivot::{partial_transfers, tournament_transfers};
    use crate::TileGrid;
    use redblue_comm::volume::tree_broadcast as tree_transfers;
    use redblue_comm::volume::{self, Transfers};
    use redblue_comm::CommStats;
    use redblue_dist::exchange::Move;
    use redblue_pipeline::gather::{gather_costs, gather_moves};
    use redblue_pipeline::steps::{
        broadcast_members, l10_scatter_moves, l10_spread_moves, panel_reduce_moves,
        row_broadcast_members,
    };
    use redblue_pipeline::{factor_costs, Shares};

    /// Every rank's counters for [`crate::factor::factor`] on `p` ranks with the given pivots (one list per
    /// step), element size `bytes`, replayed over the move lists the steps run: the moves of every
    /// step, the pivot choice, the broadcasts and the two `all_reduce` calls, by the accounting
    /// rules of `redblue_comm::volume`. The reference for [`factor_costs`], which
    /// counts the same from sizes alone.
    fn model_costs(
        g: &Geometry,
        p: usize,
        pivoting: Pivoting,
        pivots: &[Vec<usize>],
        bytes: usize,
    ) -> Vec<CommStats> {
        let mut stats = vec![CommStats::default(); p];
        let mut add = |rank: usize, tr: &Transfers, bytes: usize| {
            stats[rank] = stats[rank] + tr.stats(rank, bytes);
        };
        for r in 0..p {
            add(r, &volume::all_reduce(r, p, 1), 8);
            add(r, &volume::all_reduce(r, p, 3), 8);
        }
        let mut active: Vec<usize> = (0..g.m).collect();
        for (t, piv) in pivots.iter().enumerate() {
            let w = g.panel(t).len();
            let (y0, z0) = g.panel_owner(t);
            let rest: Vec<usize> = active
                .iter()
                .copied()
                .filter(|r| !piv.contains(r))
                .collect();
            let avail = g.row_counts(&active);
            let moves = |list: Vec<Move>, add: &mut dyn FnMut(usize, &Transfers, usize)| {
                for (r, tr) in Move::transfers(&list, p).iter().enumerate() {
                    add(r, tr, bytes);
                }
            };
            moves(panel_reduce_moves(g, t, &active), &mut add);
            for x in 0..g.px {
                let per_participant = match pivoting {
                    Pivoting::Tournament => tournament_transfers(&avail, w, x),
                    Pivoting::None => Vec::new(),
                    Pivoting::Partial => {
                        let winners: Vec<usize> = piv.iter().map(|&r| g.row_px(r)).collect();
                        partial_transfers(g.px, w, x, &winners)
                    }
                };
                let rank = g.rank(x, y0, z0);
                for tr in per_participant {
                    // Participant indices to ranks; rows and values differ in element size.
                    let to_rank = |v: &Vec<(usize, usize)>| -> Vec<(usize, usize)> {
                        v.iter().map(|&(o, n)| (g.rank(o, y0, z0), n)).collect()
                    };
                    let tr = Transfers {
                        sends: to_rank(&tr.sends),
                        recvs: to_rank(&tr.recvs),
                        point_to_point: tr.point_to_point,
                    };
                    add(rank, &tr, bytes);
                }
            }
            let members = broadcast_members(g, pivoting.holders(g, t), t);
            for r in 0..p {
                for tr in tree_transfers(r, &members, pivoting.meta_words(w)) {
                    add(r, &tr, 8);
                }
                for tr in tree_transfers(r, &members, w * w) {
                    add(r, &tr, bytes);
                }
            }
            if pivoting.panel_home(g) == PanelHome::Pieces {
                moves(l10_scatter_moves(g, t, &rest), &mut add);
            }
            moves(u01_reduce_moves(g, t, piv), &mut add);
            if pivoting.panel_home(g) == PanelHome::Pieces {
                moves(l10_spread_moves(g, t, &rest), &mut add);
            } else if g.py > 1 {
                // Along each grid row from the panel's grid column, a tree.
                for x in 0..g.px {
                    let rows = g.rows_of(&rest, x).len();
                    if rows == 0 {
                        continue;
                    }
                    let members = row_broadcast_members(g, t, x);
                    for r in 0..p {
                        for tr in tree_transfers(r, &members, rows * w) {
                            add(r, &tr, bytes);
                        }
                    }
                }
            }
            moves(u01_spread_moves(g, t, piv), &mut add);
            active = rest;
        }
        for r in 0..p {
            add(r, &volume::all_reduce(r, p, 2), 8);
        }
        // The pivots to the idle ranks.
        if p > g.ranks() && pivoting.pivots() {
            let members: Vec<usize> = std::iter::once(0).chain(g.ranks()..p).collect();
            for r in 0..p {
                for tr in tree_transfers(r, &members, g.factored()) {
                    add(r, &tr, 8);
                }
            }
        }
        stats
    }

    /// Pivots that wander over the grid rows of an `m × n` matrix: step `t` takes every
    /// `k`-th active row.
    fn scattered_pivots(m: usize, n: usize, v: usize, k: usize) -> Vec<Vec<usize>> {
        let mut active: Vec<usize> = (0..m).collect();
        let mut out = Vec::new();
        let factored = m.min(n);
        for t in 0..factored.div_ceil(v) {
            let w = v.min(factored - t * v);
            let picked: Vec<usize> = (0..w).map(|i| active[(i * k) % active.len()]).collect();
            let mut seen = std::collections::HashSet::new();
            let mut piv: Vec<usize> = picked.into_iter().filter(|r| seen.insert(*r)).collect();
            for &r in &active {
                if piv.len() == w {
                    break;
                }
                if !piv.contains(&r) {
                    piv.push(r);
                }
            }
            active.retain(|r| !piv.contains(r));
            out.push(piv);
        }
        out
    }

    #[test]
    fn owned_in_counts_like_a_filter() {
        for (v, p) in [(1, 1), (3, 2), (4, 3), (5, 1)] {
            for x in 0..p {
                for start in 0..30 {
                    for end in 0..30 {
                        let count = (start..end).filter(|g| (g / v) % p == x).count();
                        assert_eq!(
                            owned_in(start, end, v, p, x),
                            count,
                            "{v} {p} {x} {start} {end}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_replay_from_sizes_equals_the_replay_of_the_move_lists() {
        for ((m, n), v, (px, py, c), p) in [
            ((23, 23), 4, (2, 3, 2), 12),
            ((31, 31), 5, (3, 2, 2), 14),
            ((40, 40), 6, (2, 2, 3), 12),
            ((17, 17), 3, (1, 1, 1), 1),
            ((29, 29), 4, (4, 1, 1), 5),
            ((33, 33), 4, (1, 4, 2), 8),
            ((50, 50), 8, (3, 3, 2), 20),
            ((9, 9), 4, (2, 2, 2), 9),
            // Tall and wide.
            ((45, 13), 4, (3, 2, 2), 12),
            ((61, 9), 4, (4, 1, 1), 5),
            ((14, 37), 4, (2, 3, 2), 13),
            ((10, 41), 3, (1, 4, 2), 8),
        ] {
            let g = Geometry::rect(m, n, v, TileGrid { px, py, c });
            for k in [1, 3, 7] {
                let pivots = scattered_pivots(m, n, v, k);
                for pivoting in [Pivoting::Tournament, Pivoting::Partial, Pivoting::None] {
                    if pivoting == Pivoting::Partial && c > 1 {
                        continue;
                    }
                    let lists = model_costs(&g, p, pivoting, &pivots, 8);
                    let sizes = factor_costs(&g, p, &pivoting, &pivots, 8);
                    assert_eq!(
                        sizes, lists,
                        "{m}x{n} v={v} grid {px}x{py}x{c} p={p} k={k} {pivoting:?}"
                    );
                }
                let lists: Vec<CommStats> =
                    Move::transfers(&gather_moves(&g, &pivots, Shares::LowerAndUpper), p)
                        .iter()
                        .enumerate()
                        .map(|(r, tr)| tr.stats(r, 16))
                        .collect();
                assert_eq!(
                    gather_costs(&g, p, &pivots, Shares::LowerAndUpper, 16),
                    lists,
                    "gather {m}x{n} {px}x{py}x{c}"
                );
            }
        }
    }
}
