//! Where the factors end and how they are brought together: step 7 leaves every layer its share
//! of the panel columns of `L10` (on the panel's grid column) and, for LU, of the pivot rows of
//! `U01`; [`gather_moves`] brings the other layers' shares to layer 0's tiles in one exchange
//! when the factors are first used, and [`gather_costs`] counts it from sizes.

use crate::geometry::{part, Geometry};
use crate::steps::owned_in;
use redblue_comm::volume::Tally;
use redblue_comm::CommStats;
use redblue_dist::exchange::Move;

/// Which parts of the factors the layers hold shares of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shares {
    /// `L10` only (Cholesky: the `U` side is `L10ᴴ`, never stored).
    Lower,
    /// `L10` and the pivot rows of `U01` (LU).
    LowerAndUpper,
}

/// The moves that bring the layers' shares of the factors to layer 0's tiles, all steps in
/// one list (steps pivoting on `pivots`, one list per step). Nothing moves with one layer; the
/// words are those a per-step write-back would move, in one message per pair of ranks.
pub fn gather_moves(g: &Geometry, pivots: &[Vec<usize>], shares: Shares) -> Vec<Move> {
    let mut out = Vec::new();
    if g.c == 1 {
        return out;
    }
    let mut pivoted = vec![false; g.m];
    let mut rest: Vec<usize> = (0..g.m).collect();
    for (t, piv) in pivots.iter().enumerate() {
        for &r in piv {
            pivoted[r] = true;
        }
        rest.retain(|&r| !pivoted[r]);
        let panel = g.panel(t);
        let (y0, _) = g.panel_owner(t);
        let right: Vec<Vec<usize>> = (0..g.py)
            .map(|y| (panel.end..g.n).filter(|&j| g.col_py(j) == y).collect())
            .collect();
        for z in 1..g.c {
            let share = part(panel.len(), g.c, z);
            let l_cols: Vec<usize> = share.clone().map(|j| panel.start + j).collect();
            for x in 0..g.px {
                let l_rows = g.rows_of(&rest, x);
                if !l_rows.is_empty() && !l_cols.is_empty() {
                    out.push(Move {
                        from: g.rank(x, y0, z),
                        to: g.rank(x, y0, 0),
                        rows: l_rows,
                        cols: l_cols.clone(),
                    });
                }
                if shares == Shares::Lower {
                    continue;
                }
                let u_rows = g.rows_of(&piv[share.clone()], x);
                for (y, cols) in right.iter().enumerate() {
                    if !u_rows.is_empty() && !cols.is_empty() {
                        out.push(Move {
                            from: g.rank(x, y, z),
                            to: g.rank(x, y, 0),
                            rows: u_rows.clone(),
                            cols: cols.clone(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// Every rank's counters (of `p`, elements of `bytes` bytes) for [`gather_moves`], from sizes:
/// rank `(x, y, z ≥ 1)` sends layer 0's `(x, y, 0)` its share of every step, in one message.
pub fn gather_costs(
    g: &Geometry,
    p: usize,
    pivots: &[Vec<usize>],
    shares: Shares,
    bytes: usize,
) -> Vec<CommStats> {
    let mut tally = Tally::new(p);
    if g.c == 1 {
        return tally.stats;
    }
    let mut words = vec![0usize; g.ranks()];
    let mut active: Vec<usize> = (0..g.px).map(|x| owned_in(0, g.m, g.v, g.px, x)).collect();
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
                if shares == Shares::Lower {
                    continue;
                }
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
