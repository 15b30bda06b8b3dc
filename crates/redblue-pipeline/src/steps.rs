//! The steps every 2.5D factorisation shares, as pure plans of moves ([`Move`] lists that the
//! [exchange engine](redblue_dist::exchange) runs) and as exact counts from sizes alone (for
//! the cost replay): the panel's sums over the layers, the diagonal block's broadcast down a
//! rotating tree, the panel's rows scattered into 1D pieces and spread to the layers' shares.
//!
//! Step `t` factors the panel `J = t·v .. t·v + w` on the rows still active; the panel is
//! reduced on the grid column and layer [`Geometry::panel_owner`] names, and the rows below the
//! diagonal block (`rest`) are solved in `Py·c` pieces per grid row, one per rank of the row.

use crate::geometry::{part, Geometry};
use redblue_comm::volume::Tally;
use redblue_dist::exchange::Move;
use std::ops::Range;

/// Step 1: the layers' partial sums of the panel rows `active × J` to layer `t mod c`.
pub fn panel_reduce_moves(g: &Geometry, t: usize, active: &[usize]) -> Vec<Move> {
    let (y0, z0) = g.panel_owner(t);
    let cols: Vec<usize> = g.panel(t).collect();
    let mut out = Vec::new();
    for x in 0..g.px {
        let rows = g.rows_of(active, x);
        if rows.is_empty() {
            continue;
        }
        for z in (0..g.c).filter(|&z| z != z0) {
            out.push(Move {
                from: g.rank(x, y0, z),
                to: g.rank(x, y0, z0),
                rows: rows.clone(),
                cols: cols.clone(),
            });
        }
    }
    out
}

/// The 1D piece of `L10` rank `(x, y, z)` solves: part `y + Py·z` of grid row `x`'s rows of
/// `rest`, cut in `Py·c` parts.
pub fn l10_piece(g: &Geometry, rest: &[usize], x: usize, q: usize) -> Vec<usize> {
    let rows = g.rows_of(rest, x);
    rows[part(rows.len(), g.py * g.c, q)].to_vec()
}

/// Calls `f(x, holder, rows)` for every nonempty 1D piece of `L10` (grid row `x`, piece
/// holder rank `(x, q mod Py, ⌊q/Py⌋)`).
pub fn each_l10_piece(g: &Geometry, rest: &[usize], mut f: impl FnMut(usize, usize, Vec<usize>)) {
    for x in 0..g.px {
        for q in 0..g.py * g.c {
            let rows = l10_piece(g, rest, x, q);
            if !rows.is_empty() {
                f(x, g.rank(x, q % g.py, q / g.py), rows);
            }
        }
    }
}

/// Layer `z`'s share of a step's `w` columns or pivot rows.
pub fn layer_share(w: usize, g: &Geometry, z: usize) -> std::ops::Range<usize> {
    part(w, g.c, z)
}

/// Step 4: the reduced panel rows `rest × J` to their 1D pieces.
pub fn l10_scatter_moves(g: &Geometry, t: usize, rest: &[usize]) -> Vec<Move> {
    let (y0, z0) = g.panel_owner(t);
    let cols: Vec<usize> = g.panel(t).collect();
    let mut out = Vec::new();
    each_l10_piece(g, rest, |x, holder, rows| {
        out.push(Move {
            from: g.rank(x, y0, z0),
            to: holder,
            rows,
            cols: cols.clone(),
        });
    });
    out
}

/// Step 7a: the `L10` pieces to every rank of their grid row, each rank getting its layer's
/// share of the panel columns.
pub fn l10_spread_moves(g: &Geometry, t: usize, rest: &[usize]) -> Vec<Move> {
    let panel = g.panel(t);
    let mut out = Vec::new();
    each_l10_piece(g, rest, |x, holder, rows| {
        for z in 0..g.c {
            let cols: Vec<usize> = layer_share(panel.len(), g, z)
                .map(|j| panel.start + j)
                .collect();
            if cols.is_empty() {
                continue;
            }
            for y in 0..g.py {
                out.push(Move {
                    from: holder,
                    to: g.rank(x, y, z),
                    rows: rows.clone(),
                    cols: cols.clone(),
                });
            }
        }
    });
    out
}

/// Step 3's broadcast of step `t`'s diagonal block (and, for LU, the pivots): from one of the
/// panel ranks `(x, y0, z0)`, `x` in `holders`, that have it (LU's butterfly leaves it on the
/// first `p2` grid rows, partial pivoting on grid row 0, Cholesky's `potrf` on the diagonal
/// block's grid row `t mod Px`; they take turns as the root, one turn per round of the panel
/// over the `Py·c` (grid column, layer) pairs, so that the root's grid row does not follow the
/// panel's) to every other rank of the grid (idle ranks take no part), along a binomial tree
/// whose order rotates from step to step by a stride near the golden section of its length.
/// An interior node at position `q` sends about `log₂(L/q)` copies, so a fixed order would
/// make the same ranks send `log₂ L` copies every step; rotated, every rank sends about one
/// copy per step on average, and at most a few more over the whole factorisation.
pub fn broadcast_members(g: &Geometry, holders: Range<usize>, t: usize) -> Vec<usize> {
    let (base, count) = holder_ranks(g, &holders, t);
    let others: Vec<usize> = (0..g.ranks())
        .filter(|r| !(base..base + count).contains(r))
        .collect();
    let shift = (t * rotation_stride(others.len())) % others.len().max(1);
    let mut members = Vec::with_capacity(others.len() + 1);
    members.push(base + (t / (g.py * g.c)) % count);
    members.extend_from_slice(&others[shift..]);
    members.extend_from_slice(&others[..shift]);
    members
}

/// The first holder rank of step `t` and how many there are (consecutive ranks: `x` runs
/// fastest).
fn holder_ranks(g: &Geometry, holders: &Range<usize>, t: usize) -> (usize, usize) {
    let (y0, z0) = g.panel_owner(t);
    (g.rank(holders.start, y0, z0), holders.len().max(1))
}

/// A stride near `0.618·len`, coprime with `len`: successive rotations by it visit every
/// offset once per `len` steps, spread out (no rank stays near the front of the tree).
pub fn rotation_stride(len: usize) -> usize {
    if len <= 2 {
        return 1;
    }
    let gcd = |mut a: usize, mut b: usize| {
        while b != 0 {
            (a, b) = (b, a % b);
        }
        a
    };
    let mut s = ((len as f64) * 0.618_033_988_75).round() as usize;
    while gcd(s, len) != 1 {
        s += 1;
    }
    s
}

/// How many of `start..end` a coordinate `x` of `p` holds, tiles of `v` dealt cyclically.
pub fn owned_in(start: usize, end: usize, v: usize, p: usize, x: usize) -> usize {
    let upto = |e: usize| {
        // Indices below `e` held by `x`: whole cycles, then the partial one.
        let cycle = v * p;
        let (full, rest) = (e / cycle, e % cycle);
        full * v + rest.saturating_sub(x * v).min(v)
    };
    if end <= start {
        0
    } else {
        upto(end) - upto(start)
    }
}

/// Step 1's counts: the layers' partial sums of the panel's active rows (`active[x]` of grid
/// row `x`, `w` columns) to the panel owner's layer.
pub fn count_panel_reduce(
    tally: &mut Tally,
    g: &Geometry,
    t: usize,
    active: &[usize],
    bytes: usize,
) {
    let (y0, z0) = g.panel_owner(t);
    let w = g.panel(t).len();
    let mut senders = Vec::with_capacity(g.c);
    for (x, &a) in active.iter().enumerate() {
        senders.clear();
        senders.extend((0..g.c).filter(|&z| z != z0).map(|z| (g.rank(x, y0, z), a)));
        tally.product(&senders, &[(g.rank(x, y0, z0), w)], bytes);
    }
}

/// Step 3's counts: `meta` words of 8 bytes and `block` elements down the tree of
/// [`broadcast_members`], in closed form.
pub fn count_broadcast(
    tally: &mut Tally,
    g: &Geometry,
    holders: Range<usize>,
    t: usize,
    (meta, block): (usize, usize),
    bytes: usize,
) {
    let (base, count) = holder_ranks(g, &holders, t);
    let root = base + (t / (g.py * g.c)) % count;
    let others = g.ranks() - count;
    let shift = (t * rotation_stride(others)) % others.max(1);
    let position = |r: usize| -> Option<usize> {
        if r == root {
            Some(0)
        } else if r >= g.ranks() || (base..base + count).contains(&r) {
            None
        } else {
            let idx = if r < base { r } else { r - count };
            Some(1 + (idx + others - shift) % others)
        }
    };
    tally.tree(others + 1, position, meta, 8);
    tally.tree(others + 1, position, block, bytes);
}

/// Steps 4 and 7a's counts: the panel rows below the diagonal block (`rest[x]` of grid row `x`)
/// scattered from the panel owner to their `Py·c` pieces, and spread from the pieces to every
/// rank of the grid row, layer `z` getting its share of the `w` columns.
pub fn count_panel_pieces(tally: &mut Tally, g: &Geometry, t: usize, rest: &[usize], bytes: usize) {
    let (y0, z0) = g.panel_owner(t);
    let w = g.panel(t).len();
    let pieces = g.py * g.c;
    let mut holders = Vec::with_capacity(pieces);
    let mut owners = Vec::with_capacity(pieces);
    for (x, &r) in rest.iter().enumerate() {
        holders.clear();
        owners.clear();
        for q in 0..pieces {
            holders.push((g.rank(x, q % g.py, q / g.py), part(r, pieces, q).len()));
        }
        tally.product(&[(g.rank(x, y0, z0), w)], &holders, bytes);
        for z in 0..g.c {
            let share = layer_share(w, g, z).len();
            owners.extend((0..g.py).map(|y| (g.rank(x, y, z), share)));
        }
        tally.product(&holders, &owners, bytes);
    }
}

/// Where a step's panel rows below the diagonal block are solved (steps 4 to 7a).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PanelHome {
    /// In `Py·c` 1D pieces per grid row, then spread to every rank of the grid row, each layer
    /// its share of the columns (COnfLUX, COnfCHOX).
    Pieces,
    /// On the panel's grid column, where the reduction left them, then broadcast along the
    /// grid rows (the 2D algorithms, as ScaLAPACK: one layer only).
    Owner,
}

/// Step 7a with the panel solved on its grid column ([`PanelHome::Owner`], one layer): the
/// members of grid row `x`'s broadcast of its rows of the panel, the panel rank first, the
/// others in an order that rotates from step to step (as [`broadcast_members`]'), so that the
/// interior nodes of the binomial tree change.
pub fn row_broadcast_members(g: &Geometry, t: usize, x: usize) -> Vec<usize> {
    let (y0, z0) = g.panel_owner(t);
    let others = g.py - 1;
    let shift = (t * rotation_stride(others)) % others.max(1);
    let mut members = Vec::with_capacity(g.py);
    members.push(g.rank(x, y0, z0));
    members.extend((0..others).map(|k| g.rank(x, (y0 + 1 + (k + shift) % others) % g.py, z0)));
    members
}

/// The counts of the broadcasts of [`row_broadcast_members`]: the rows below the block
/// (`rest[x]` of grid row `x`, `w` columns) along every grid row that has any.
pub fn count_row_broadcast(
    tally: &mut Tally,
    g: &Geometry,
    t: usize,
    rest: &[usize],
    bytes: usize,
) {
    let w = g.panel(t).len();
    for (x, &r) in rest.iter().enumerate() {
        if r == 0 || g.py == 1 {
            continue;
        }
        tally.tree_of(&row_broadcast_members(g, t, x), r * w, bytes);
    }
}

/// Step 7b of a factorisation whose `U` side is `L10ᴴ` (Cholesky): every rank `(x, y, z)`
/// needs the `L10` rows `j` of its tile columns (`col_py(j) = y`), its layer's share of the
/// panel columns. After step 7a every rank `(row_px(j), ·, z)` of the row's grid row holds
/// them; rank `(x, y, z)` takes those of grid row `x' ≠ x` from rank `(x', x mod Py, z)` and
/// its own grid row's from itself. (Taking them from `(x', y, z)` would make the "diagonal"
/// ranks send everything when `Px = Py`: only tiles `b` with `b mod Px = b mod Py` hold rows
/// of grid row `x` and grid column `x`.) Every holder then sends about `Px/Py` copies of what
/// its grid row has for each grid column.
pub fn transpose_moves(g: &Geometry, t: usize, rest: &[usize]) -> Vec<Move> {
    let panel = g.panel(t);
    // The rows of `rest` by (grid row, grid column) of their index.
    let mut groups = vec![Vec::new(); g.px * g.py];
    for &j in rest {
        groups[g.row_px(j) + g.px * g.col_py(j)].push(j);
    }
    let mut out = Vec::new();
    for z in 0..g.c {
        let cols: Vec<usize> = layer_share(panel.len(), g, z)
            .map(|j| panel.start + j)
            .collect();
        if cols.is_empty() {
            continue;
        }
        for y in 0..g.py {
            for from_x in 0..g.px {
                let rows = &groups[from_x + g.px * y];
                if rows.is_empty() {
                    continue;
                }
                for x in 0..g.px {
                    let from_y = if x == from_x { y } else { x % g.py };
                    out.push(Move {
                        from: g.rank(from_x, from_y, z),
                        to: g.rank(x, y, z),
                        rows: rows.clone(),
                        cols: cols.clone(),
                    });
                }
            }
        }
    }
    out
}

/// How many of the indices `start..n` each (grid row, grid column) pair holds as a diagonal
/// pair: `counts[x + Px·y]` indices `j` with `row_px(j) = x` and `col_py(j) = y`, in `O(N/v)`.
pub fn diagonal_counts(g: &Geometry, start: usize) -> Vec<usize> {
    let mut counts = vec![0; g.px * g.py];
    let mut j = start;
    while j < g.factored() {
        let end = ((j / g.v + 1) * g.v).min(g.factored());
        counts[g.row_px(j) + g.px * g.col_py(j)] += end - j;
        j = end;
    }
    counts
}

/// Step 7b's counts for [`transpose_moves`] with `rest = panel.end..N` (no pivoting), from
/// [`diagonal_counts`]: holder `(x', y', z)` sends, for every grid column `y`, its grid row's
/// `R(x', y)` rows of its layer's share to every `(x, y, z)` with `x ≠ x'` and
/// `x mod Py = y'`.
pub fn count_transpose(tally: &mut Tally, g: &Geometry, t: usize, bytes: usize) {
    let panel = g.panel(t);
    let counts = diagonal_counts(g, panel.end);
    let mut receivers = Vec::with_capacity(g.px);
    for z in 0..g.c {
        let share = layer_share(panel.len(), g, z).len();
        for from_x in 0..g.px {
            for from_y in 0..g.py {
                receivers.clear();
                for y in 0..g.py {
                    let rows = counts[from_x + g.px * y];
                    if rows == 0 {
                        continue;
                    }
                    let xs = (from_y..g.px).step_by(g.py).filter(|&x| x != from_x);
                    receivers.extend(xs.map(|x| (g.rank(x, y, z), rows)));
                }
                tally.product(&[(g.rank(from_x, from_y, z), share)], &receivers, bytes);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TileGrid;
    use redblue_comm::volume::{self, Transfers};
    use redblue_comm::CommStats;

    /// Every rank's counters of `moves` as one exchange, as the exchange engine counts them.
    fn listed(moves: &[Move], p: usize, bytes: usize) -> Vec<CommStats> {
        Move::transfers(moves, p)
            .iter()
            .enumerate()
            .map(|(r, tr): (usize, &Transfers)| tr.stats(r, bytes))
            .collect()
    }

    fn add(a: &mut [CommStats], b: &[CommStats]) {
        for (x, y) in a.iter_mut().zip(b) {
            *x = *x + *y;
        }
    }

    #[test]
    fn the_counts_from_sizes_equal_the_counts_of_the_move_lists() {
        for (n, v, (px, py, c), p, holders) in [
            (23, 4, (2, 3, 2), 12, 2),
            (31, 5, (3, 2, 2), 14, 1),
            (40, 6, (2, 2, 3), 12, 2),
            (17, 3, (1, 1, 1), 1, 1),
            (33, 4, (1, 4, 2), 8, 1),
            (50, 8, (3, 3, 2), 20, 2),
        ] {
            let g = Geometry::new(n, v, TileGrid { px, py, c });
            // Active rows: every third row is gone; the rest loses the panel's rows.
            let mut by_counts = Tally::new(p);
            let mut by_lists = vec![CommStats::default(); p];
            for t in 0..g.steps() {
                let active: Vec<usize> = (0..n).filter(|r| r % 3 != 0 || *r > t).collect();
                let rest: Vec<usize> = active
                    .iter()
                    .copied()
                    .filter(|r| !g.panel(t).contains(r))
                    .collect();
                count_panel_reduce(&mut by_counts, &g, t, &g.row_counts(&active), 8);
                add(
                    &mut by_lists,
                    &listed(&panel_reduce_moves(&g, t, &active), p, 8),
                );
                count_panel_pieces(&mut by_counts, &g, t, &g.row_counts(&rest), 8);
                add(
                    &mut by_lists,
                    &listed(&l10_scatter_moves(&g, t, &rest), p, 8),
                );
                add(
                    &mut by_lists,
                    &listed(&l10_spread_moves(&g, t, &rest), p, 8),
                );
                let w = g.panel(t).len();
                count_broadcast(&mut by_counts, &g, 0..holders, t, (1 + w, w * w), 16);
                let members = broadcast_members(&g, 0..holders, t);
                for (r, s) in by_lists.iter_mut().enumerate() {
                    for tr in volume::tree_broadcast(r, &members, 1 + w) {
                        *s = *s + tr.stats(r, 8);
                    }
                    for tr in volume::tree_broadcast(r, &members, w * w) {
                        *s = *s + tr.stats(r, 16);
                    }
                }
            }
            assert_eq!(by_counts.stats, by_lists, "n={n} v={v} {px}x{py}x{c} p={p}");
        }
    }

    #[test]
    fn the_rotating_tree_spreads_the_sends_over_the_ranks() {
        // 10x10x5, 128 steps, 8 holders: 492 ranks in the tree every step.
        let g = Geometry::new(
            16384,
            128,
            TileGrid {
                px: 10,
                py: 10,
                c: 5,
            },
        );
        let mut tally = Tally::new(g.ranks());
        for t in 0..g.steps() {
            count_broadcast(&mut tally, &g, 0..8, t, (0, 1), 8);
        }
        let most = tally.stats.iter().map(|s| s.words_sent).max().unwrap() as f64;
        let mean = tally.stats.iter().map(|s| s.words_sent).sum::<u64>() as f64 / 500.0;
        assert!((mean - 128.0 * 492.0 / 500.0).abs() < 1.0, "{mean}");
        // A fixed order would have one rank send 8 copies a step (1024 in all); rotated, the
        // busiest sends 155 against a mean of 126.
        assert!(
            most < 1.5 * mean,
            "the busiest rank sends {most} copies, the mean {mean}"
        );
    }
}
