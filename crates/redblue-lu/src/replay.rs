//! The exact per-rank counters of a factorisation from sizes alone, without listing any move.
//!
//! Every exchange of a step is a set of groups, each an outer product: every sender `s` of the
//! group sends every receiver `d` a block of `a_s × b_d` elements (its rows × their columns,
//! or the reverse) — the panel's layer sums, the scatter of `L10`, the reduction of `U01`, the
//! spreads. A rank's words and messages in a group follow from the sums and the counts of the
//! sizes, so a step costs `O(P + v)` to replay where listing its moves costs `O(P·moves)`; the
//! tests hold this replay equal to the one over the move lists that the factorisation runs.
//! The counting itself is [`Tally`]'s.

use crate::factor::{holders, Pivoting};
use crate::pivot::{butterfly_size, held_table};
use redblue_comm::volume::Tally;
use redblue_comm::CommStats;
use redblue_pipeline::steps::{count_broadcast, count_panel_pieces, count_panel_reduce, owned_in};
use redblue_pipeline::{part, Geometry};

/// Counts of a step, per grid row or column.
struct StepSizes {
    /// Active rows of each grid row.
    active: Vec<usize>,
    /// Pivot rows of each grid row.
    pivots: Vec<usize>,
    /// Columns right of the panel in each grid column.
    right: Vec<usize>,
    /// Each layer's share of the panel width.
    share: Vec<usize>,
}

/// Every rank's counters for the factorisation on `p` ranks with the given pivots (one list
/// per step), element size `bytes`: the two agreements over all ranks, and per step the panel's
/// layer sums, the pivot choice, the broadcast of `A00` and the pivots, the scatter of `L10`,
/// the reduction of `U01` and the two spreads.
pub(crate) fn factor_costs(
    g: &Geometry,
    p: usize,
    pivoting: Pivoting,
    pivots: &[Vec<usize>],
    bytes: usize,
) -> Vec<CommStats> {
    let mut tally = Tally::new(p);
    tally.all_reduce(2, 8);
    let mut sizes = StepSizes {
        active: (0..g.px).map(|x| owned_in(0, g.n, g.v, g.px, x)).collect(),
        pivots: vec![0; g.px],
        right: vec![0; g.py],
        share: (0..g.c).map(|z| part(0, g.c, z).len()).collect(),
    };
    let mut senders = Vec::with_capacity(g.ranks());
    let mut receivers = Vec::with_capacity(g.ranks());
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
        // 2. The pivots.
        pivot_costs(&mut tally, g, pivoting, t, &sizes, piv, bytes);
        // 3. A00 and the pivots.
        count_broadcast(
            &mut tally,
            g,
            holders(g, pivoting),
            t,
            (1 + w, w * w),
            bytes,
        );
        // 4. and 7a. L10: scattered to the 1D pieces, spread to the layers' shares.
        for (r, (&a, &p)) in rest.iter_mut().zip(sizes.active.iter().zip(&sizes.pivots)) {
            *r = a - p;
        }
        count_panel_pieces(&mut tally, g, t, &rest, bytes);
        // 5. and 7b. U01: reduced to the 1D pieces, spread to the layers' shares.
        let pieces = g.px * g.c;
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
        for x in 0..g.px {
            sizes.active[x] -= sizes.pivots[x];
        }
    }
    tally.all_reduce(2, 8);
    tally.stats
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
        Pivoting::Partial => {}
    }
}

/// The words all ranks together send in a factorisation that needs no row interchanges (the
/// planning assumption, [`crate::diagonal_pivots`]), computed from per-step sums in
/// `O(Px + Py + c)` per step: what the choice of grid and tile width compares. It is the sum
/// of [`factor_costs`]'s `words_sent` over the ranks, exactly.
pub(crate) fn planned_words(g: &Geometry, pivoting: Pivoting) -> f64 {
    let (px, py, c) = (g.px, g.py, g.c);
    let p = g.ranks();
    let mut total = 0.0f64;
    // The two all-reduces of two words.
    let all_reduce = |n: usize| {
        (0..p.min(n + 1))
            .map(|r| {
                let mine = n / p + usize::from(r < n % p);
                n - mine + mine * (p - 1)
            })
            .sum::<usize>()
            + (p.saturating_sub(n + 1)) * (n - n / p)
    };
    total += 2.0 * all_reduce(2) as f64;
    let holders = match pivoting {
        Pivoting::Tournament => butterfly_size(px),
        Pivoting::Partial => 1,
    };
    let mut active: Vec<usize> = (0..px).map(|x| owned_in(0, g.n, g.v, px, x)).collect();
    let mut shares = vec![0usize; c];
    for t in 0..g.steps() {
        let panel = g.panel(t);
        let w = panel.len();
        let (y0, z0) = g.panel_owner(t);
        let pivot_row = t % px;
        for (z, k) in shares.iter_mut().enumerate() {
            *k = part(w, c, z).len();
        }
        // `prefix(m, block)`: the shares of the first `m` pieces when pieces come in blocks of
        // `block` per layer (piece q in layer q / block).
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
        // 1. layer sums of the panel.
        step += (c - 1) * w * active.iter().sum::<usize>();
        // 2. pivots.
        step += match pivoting {
            Pivoting::Tournament => {
                let p2 = holders;
                let fold: usize = (p2..px).map(|x| active[x].min(w) * (w + 1)).sum();
                let rounds = p2.trailing_zeros() as usize;
                fold + held_table(&active, w)
                    .iter()
                    .take(rounds)
                    .map(|row| row.iter().sum::<usize>() * (w + 1))
                    .sum::<usize>()
            }
            Pivoting::Partial if px > 1 => px * 2 * w * (px - 1) + w * w * (px - 1),
            Pivoting::Partial => 0,
        };
        // 3. the broadcast to every grid rank but the holders.
        step += (p - holders) * (w * w + 1 + w);
        // 4. and 7a. L10 per grid row.
        let pieces = py * c;
        let own = y0 + py * z0;
        for (x, &a) in active.iter().enumerate() {
            let rest = a - if x == pivot_row { w } else { 0 };
            step += w * (rest - part(rest, pieces, own).len());
            let (base, rem) = (rest / pieces, rest % pieces);
            step += py * w * rest - (base * py * w + prefix(rem, py));
        }
        // 5. and 7b. U01 per grid column.
        let pieces = px * c;
        for y in 0..py {
            let right = owned_in(panel.end, g.n, g.v, py, y);
            let (base, rem) = (right / pieces, right % pieces);
            // Only grid row `t mod Px` holds pivot rows; its c ranks skip their own piece.
            let own_pieces = (0..c).filter(|z| pivot_row + px * z < rem).count();
            step += c * w * right - (c * w * base + w * own_pieces);
            step += px * w * right - (base * px * w + prefix(rem, px));
        }
        active[pivot_row] -= w;
        total += step as f64;
    }
    total
}

/// Every rank's counters for gathering the layers' shares of the factors to layer 0
/// ([`crate::factor::gather_moves`]), from sizes: rank `(x, y, z ≥ 1)` sends layer 0's
/// `(x, y, 0)` its share of every step, in one message.
pub(crate) fn gather_costs(
    g: &Geometry,
    p: usize,
    pivots: &[Vec<usize>],
    bytes: usize,
) -> Vec<CommStats> {
    let mut tally = Tally::new(p);
    if g.c == 1 {
        return tally.stats;
    }
    let mut words = vec![0usize; g.ranks()];
    let mut active: Vec<usize> = (0..g.px).map(|x| owned_in(0, g.n, g.v, g.px, x)).collect();
    let mut share_rows = vec![0usize; g.px * g.c];
    for (t, piv) in pivots.iter().enumerate() {
        let panel = g.panel(t);
        let w = panel.len();
        let (y0, _) = g.panel_owner(t);
        share_rows.fill(0);
        for z in 0..g.c {
            for &r in &piv[part(w, g.c, z)] {
                share_rows[g.row_px(r) + g.px * z] += 1;
            }
        }
        for &r in piv {
            active[g.row_px(r)] -= 1;
        }
        for z in 1..g.c {
            let k = part(w, g.c, z).len();
            for x in 0..g.px {
                words[g.rank(x, y0, z)] += active[x] * k;
                for y in 0..g.py {
                    let cols = owned_in(panel.end, g.n, g.v, g.py, y);
                    words[g.rank(x, y, z)] += share_rows[x + g.px * z] * cols;
                }
            }
        }
    }
    for (r, &n) in words.iter().enumerate() {
        if n > 0 {
            let (x, y, _) = g.coords(r).expect("a grid rank");
            tally.send(r, n, 1, bytes);
            tally.receive(g.rank(x, y, 0), n, 1, bytes);
        }
    }
    tally.stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::factor::{gather_moves, holders, u01_reduce_moves, u01_spread_moves};
    use crate::pivot::{partial_transfers, tournament_transfers};
    use crate::TileGrid;
    use redblue_comm::volume::tree_broadcast as tree_transfers;
    use redblue_comm::volume::{self, Transfers};
    use redblue_dist::exchange::Move;
    use redblue_pipeline::steps::{
        broadcast_members, l10_scatter_moves, l10_spread_moves, panel_reduce_moves,
    };

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
            add(r, &volume::all_reduce(r, p, 2), 8);
        }
        let mut active: Vec<usize> = (0..g.n).collect();
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
            let members = broadcast_members(g, holders(g, pivoting), t);
            for r in 0..p {
                for tr in tree_transfers(r, &members, 1 + w) {
                    add(r, &tr, 8);
                }
                for tr in tree_transfers(r, &members, w * w) {
                    add(r, &tr, bytes);
                }
            }
            moves(l10_scatter_moves(g, t, &rest), &mut add);
            moves(u01_reduce_moves(g, t, piv), &mut add);
            moves(l10_spread_moves(g, t, &rest), &mut add);
            moves(u01_spread_moves(g, t, piv), &mut add);
            active = rest;
        }
        for r in 0..p {
            add(r, &volume::all_reduce(r, p, 2), 8);
        }
        stats
    }

    /// Pivots that wander over the grid rows: step `t` takes every `k`-th active row.
    fn scattered_pivots(n: usize, v: usize, k: usize) -> Vec<Vec<usize>> {
        let mut active: Vec<usize> = (0..n).collect();
        let mut out = Vec::new();
        for t in 0..n.div_ceil(v) {
            let w = v.min(n - t * v);
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
        for (n, v, (px, py, c), p) in [
            (23, 4, (2, 3, 2), 12),
            (31, 5, (3, 2, 2), 14),
            (40, 6, (2, 2, 3), 12),
            (17, 3, (1, 1, 1), 1),
            (29, 4, (4, 1, 1), 5),
            (33, 4, (1, 4, 2), 8),
            (50, 8, (3, 3, 2), 20),
            (9, 4, (2, 2, 2), 9),
        ] {
            let g = Geometry::new(n, v, TileGrid { px, py, c });
            for k in [1, 3, 7] {
                let pivots = scattered_pivots(n, v, k);
                for pivoting in [Pivoting::Tournament, Pivoting::Partial] {
                    if pivoting == Pivoting::Partial && c > 1 {
                        continue;
                    }
                    let lists = model_costs(&g, p, pivoting, &pivots, 8);
                    let sizes = factor_costs(&g, p, pivoting, &pivots, 8);
                    assert_eq!(
                        sizes, lists,
                        "n={n} v={v} grid {px}x{py}x{c} p={p} k={k} {pivoting:?}"
                    );
                }
                let lists: Vec<CommStats> = Move::transfers(&gather_moves(&g, &pivots), p)
                    .iter()
                    .enumerate()
                    .map(|(r, tr)| tr.stats(r, 16))
                    .collect();
                assert_eq!(
                    gather_costs(&g, p, &pivots, 16),
                    lists,
                    "gather n={n} {px}x{py}x{c}"
                );
            }
        }
    }
}
