//! The factorisation on the native layout: COnfLUX's per-step pipeline (digest §1.4) with row
//! masking, and the same pipeline on one layer with partial pivoting as the 2D baseline.
//!
//! Step `t` factors the columns `J = t·v .. t·v + w` with the active (not yet pivoted) rows `R`:
//!
//! 1. the `c` layers' partial sums of the panel `R × J` are added on layer `t mod c` of grid
//!    column `t mod Py` ([`panel_reduce_moves`]);
//! 2. the `Px` ranks holding it choose `w` pivot rows (tournament or partial pivoting) and
//!    factor `A00 = L00·U00` on them;
//! 3. `A00` and the pivot rows are broadcast to every rank that lacks them (a binomial tree);
//! 4. the rest of the panel, `R' × J`, goes 1D over the `Py·c` ranks of each grid row
//!    ([`l10_scatter_moves`]), and 5. the pivot rows right of the panel are summed over the
//!    layers into a 1D distribution of their columns over the `Px·c` ranks of each grid column
//!    ([`u01_reduce_moves`]);
//! 6. local triangular solves: `L10 = A10·U00⁻¹`, `U01 = L00⁻¹·A01`;
//! 7. every rank `(x, y, z)` receives the `L10` rows of its tiles and the `U01` columns of its
//!    tiles, restricted to its layer's share of the `w` reduction columns
//!    ([`l10_spread_moves`], [`u01_spread_moves`]), and
//! 8. updates its layer's copy: `A11 −= L10[:, share]·U01[share, :]`;
//! 9. every layer keeps its share of `L10` and `U01` from step 7 in its tiles, and `A00` goes
//!    into layer 0's. The factors end spread over the layers, in unpermuted rows (row `r` holds
//!    `L` left of its pivot column and `U` from it on); [`gather_moves`] brings the other
//!    layers' shares to layer 0 in one exchange when they are used.
//!
//! Every communication is planned from global facts, so [`crate::replay::factor_costs`] replays it
//! without data.

use crate::pivot::{butterfly_size, partial, tournament, Chosen};
use crate::LuError;
use redblue_comm::{Communicator, CommunicatorExt};
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::Op;
use redblue_core::{Diag, RealScalar, ReduceOp, Scalar, Side, Uplo};
use redblue_dist::exchange::{exchange, exchange_cols_into, Move};
use redblue_kernels::{gemm, trsm, KernelScalar, MatMut, MatRef, Par};
use redblue_pipeline::steps::{
    broadcast_members, l10_piece, l10_scatter_moves, l10_spread_moves, layer_share,
    panel_reduce_moves,
};
use redblue_pipeline::{mark_positions, part, Geometry, Tiles};

/// Panels whose update right of the next panel is done at once on grids with one-rank grid
/// rows (`k = DEFER_DEPTH·v` for the trailing block).
const DEFER_DEPTH: usize = 2;

/// An update waiting on a grid with L10 in place (see [`factor`]): the columns right of the
/// next panel have not had the last `panels` steps' update yet.
struct Waiting<T> {
    /// Local column of the first waiting panel (its `L10` and the later ones' are the `k`
    /// local columns from here, on the active rows).
    first_col: usize,
    /// How many panels wait.
    panels: usize,
    /// Their stacked `U01`: `k` rows of columns of `ld` (room for `DEFER_DEPTH` panels'),
    /// column `from + jj` for the `jj`-th column right of the last waiting panel (the columns
    /// before `from` are done).
    u: Vec<T>,
    ld: usize,
    k: usize,
    from: usize,
}

/// How a step's pivots are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pivoting {
    /// Tournament pivoting (COnfLUX): `⌈log₂ Px⌉` playoffs of `w × w` blocks per step.
    Tournament,
    /// Partial pivoting (ScaLAPACK): one search over the `Px` panel ranks per column.
    Partial,
}

/// The outcome of [`factor`] on one rank.
pub(crate) struct Factored<T: Scalar> {
    /// Layer 0's local array of the packed factors (empty off layer 0).
    pub local: Vec<T>,
    /// Every step's pivot rows, in pivot order (the same on every rank).
    pub pivots: Vec<Vec<usize>>,
    /// Every step's `A00 = L00·U00` (packed, rows in pivot order), kept on the layer-0 ranks of
    /// grid row `t mod Px` for the triangular solves (empty elsewhere).
    pub a00: Vec<Vec<T>>,
    /// `max |A|` and `max |U|` over the whole matrix.
    pub max_a: f64,
    pub max_u: f64,
}

/// The 1D piece of `U01` rank `(x, y, z)` solves: part `x + Px·z` of grid column `y`'s columns
/// right of the panel, cut in `Px·c` parts.
pub(crate) fn u01_piece(g: &Geometry, t: usize, y: usize, q: usize) -> Vec<usize> {
    let start = g.panel(t).end;
    let cols: Vec<usize> = (start..g.n).filter(|&j| g.col_py(j) == y).collect();
    cols[part(cols.len(), g.px * g.c, q)].to_vec()
}

/// Calls `f(y, holder, cols)` for every nonempty 1D piece of `U01` (grid column `y`, piece
/// holder rank `(q mod Px, y, ⌊q/Px⌋)`).
fn each_u01_piece(g: &Geometry, t: usize, mut f: impl FnMut(usize, usize, Vec<usize>)) {
    for y in 0..g.py {
        for q in 0..g.px * g.c {
            let cols = u01_piece(g, t, y, q);
            if !cols.is_empty() {
                f(y, g.rank(q % g.px, y, q / g.px), cols);
            }
        }
    }
}

/// Step 5: every layer's partial sums of the pivot rows right of the panel to the 1D pieces
/// of their columns (the receiver adds them up).
pub(crate) fn u01_reduce_moves(g: &Geometry, t: usize, piv: &[usize]) -> Vec<Move> {
    let mut out = Vec::new();
    each_u01_piece(g, t, |y, holder, cols| {
        for x in 0..g.px {
            let rows = g.rows_of(piv, x);
            if rows.is_empty() {
                continue;
            }
            for z in 0..g.c {
                out.push(Move {
                    from: g.rank(x, y, z),
                    to: holder,
                    rows: rows.clone(),
                    cols: cols.clone(),
                });
            }
        }
    });
    out
}

/// Step 7b: the `U01` pieces to every rank of their grid column, each rank getting its
/// layer's share of the pivot rows.
pub(crate) fn u01_spread_moves(g: &Geometry, t: usize, piv: &[usize]) -> Vec<Move> {
    let mut out = Vec::new();
    each_u01_piece(g, t, |y, holder, cols| {
        for z in 0..g.c {
            let rows = piv[layer_share(piv.len(), g, z)].to_vec();
            if rows.is_empty() {
                continue;
            }
            for x in 0..g.px {
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

/// The panel ranks that hold step `t`'s `A00` and pivots after the choice: the butterfly's
/// `p2` for tournament pivoting, the first for partial pivoting.
pub(crate) fn holders(g: &Geometry, pivoting: Pivoting) -> usize {
    match pivoting {
        Pivoting::Tournament => butterfly_size(g.px),
        Pivoting::Partial => 1,
    }
}

/// The largest `|x|` of `xs` (0 when empty) and whether every element is finite, in one pass
/// of eight independent lanes without early exit, so that it vectorises (a `NaN` is skipped
/// by the maximum and caught by the finiteness flag).
fn max_abs<T: Scalar>(xs: &[T]) -> (f64, bool) {
    const LANES: usize = 8;
    let (mut max, mut finite) = ([0.0f64; LANES], [true; LANES]);
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for chunk in chunks {
        for ((m, f), &x) in max.iter_mut().zip(&mut finite).zip(chunk) {
            let a = x.abs().to_f64();
            *m = if a > *m { a } else { *m };
            *f &= x.is_finite();
        }
    }
    for (l, &x) in tail.iter().enumerate() {
        let a = x.abs().to_f64();
        max[l] = if a > max[l] { a } else { max[l] };
        finite[l] &= x.is_finite();
    }
    (
        max.into_iter().fold(0.0, f64::max),
        finite.into_iter().all(|f| f),
    )
}

/// Factors the matrix whose layer-0 local array this rank holds (`local`, empty off layer 0)
/// on `comm` (whose first `g.ranks()` ranks form the grid).
///
/// # Collective
/// # Errors
/// The same on every rank: [`LuError::NotFinite`] before any work, [`LuError::Singular`] at the
/// first exactly zero pivot; a communication or kernel failure.
pub(crate) fn factor<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    pivoting: Pivoting,
    local: Vec<T>,
    par: Par,
) -> Result<Factored<T>, LuError> {
    // NaN or Inf anywhere: the same error everywhere, before any work.
    let (max_a, finite) = max_abs(&local);
    let mut check = [if finite { 0.0 } else { 1.0 }, max_a];
    comm.all_reduce_in_place(&mut check, ReduceOp::Max)?;
    if check[0] > 0.0 {
        return Err(LuError::NotFinite);
    }
    let max_a = check[1];
    // Idle ranks (beyond the grid) take no part in the steps: the grid's ranks run them on a
    // communicator of their own (its ranks numbered as in `comm`).
    let in_grid = g.coords(comm.rank()).is_some();
    let steps = if g.ranks() == comm.size() {
        factor_steps(comm, g, pivoting, local, par)
    } else {
        let grid_comm = comm.split(u32::from(!in_grid), comm.rank())?;
        if in_grid {
            factor_steps(&grid_comm, g, pivoting, local, par)
        } else {
            Ok(Steps::idle())
        }
    }?;
    // Every rank learns the largest |U| and whether a column was singular (the grid's ranks
    // stopped at it).
    let mut agreed = [steps.max_u, steps.singular.map_or(0.0, |j| j as f64 + 1.0)];
    comm.all_reduce_in_place(&mut agreed, ReduceOp::Max)?;
    if agreed[1] > 0.0 {
        recycle(steps.local);
        return Err(LuError::Singular {
            column: agreed[1] as usize - 1,
        });
    }
    Ok(Factored {
        local: steps.local,
        pivots: steps.pivots,
        a00: steps.a00,
        max_a,
        max_u: agreed[0],
    })
}

/// What [`factor_steps`] leaves on one rank.
struct Steps<T> {
    local: Vec<T>,
    pivots: Vec<Vec<usize>>,
    a00: Vec<Vec<T>>,
    max_u: f64,
    /// The column with no nonzero pivot, where the steps stopped.
    singular: Option<usize>,
}

impl<T> Steps<T> {
    fn idle() -> Self {
        Steps {
            local: Vec::new(),
            pivots: Vec::new(),
            a00: Vec::new(),
            max_u: 0.0,
            singular: None,
        }
    }
}

/// The steps on the grid's ranks (`comm` holds exactly them, or idle ranks besides that do
/// not call this).
fn factor_steps<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    pivoting: Pivoting,
    local: Vec<T>,
    par: Par,
) -> Result<Steps<T>, LuError> {
    let coords = g.coords(comm.rank());
    let mut tiles = match coords {
        Some((x, y, z)) => {
            let len = g.owned(x, g.px).len() * g.owned(y, g.py).len();
            let data = if z == 0 {
                local
            } else {
                let mut zeros = take_buffer(len, T::zero());
                zeros.fill(T::zero());
                zeros
            };
            Tiles::new(g, x, y, data)
        }
        None => Tiles::empty(g),
    };
    let n = g.n;
    let mut active: Vec<usize> = (0..n).collect();
    let mut all_piv = Vec::new();
    let mut all_a00 = Vec::new();
    let mut max_u = 0.0f64;
    let mut pos = vec![usize::MAX; n];
    let mut pos2 = vec![usize::MAX; n];
    let mut pivoted = vec![false; n];
    // This rank's local rows `a_start..` are the active ones (pivot rows are swapped in front
    // of them locally, never between ranks).
    let mut a_start = 0;
    // A grid row of one rank (`Py·c = 1`) holds the whole panel and every column: it solves
    // L10 in place on its active rows and multiplies with it there (steps 4, 7a and 9a move
    // nothing then).
    let l_in_place = g.py * g.c == 1;
    // With L10 in place, the update of the columns right of the next panel waits and is then
    // done for `DEFER_DEPTH` steps at once (`k = 2v`: the trailing block streams through
    // memory half as often).
    let mut pending: Option<Waiting<T>> = None;
    for t in 0..g.steps() {
        let panel = g.panel(t);
        let w = panel.len();
        let (y0, z0) = g.panel_owner(t);
        // 1. The panel's layer sums.
        let m1 = panel_reduce_moves(g, t, &active);
        exchange(comm, &m1, |i, j| tiles.get(i, j))?.apply(|i, j, v| {
            let a = tiles.at(i, j);
            *a += v;
        });
        // 2. Pivots.
        let avail = g.row_counts(&active);
        let rank_of = |x: usize| g.rank(x, y0, z0);
        let chosen: Option<Chosen<T>> = match coords {
            Some((x, y, z)) if y == y0 && z == z0 => {
                // My active rows are the local rows `a_start..`: the panel block is `w` column
                // segments of my local array.
                let rows = tiles.rows[a_start..].to_vec();
                let (ld, pc) = (tiles.ld(), tiles.col_pos(panel.start));
                let vals = &tiles.data[(pc * ld + a_start).min(tiles.data.len())..];
                match pivoting {
                    Pivoting::Tournament => {
                        tournament(comm, x, &avail, rank_of, &rows, vals, w, ld)?
                    }
                    Pivoting::Partial => {
                        let holder = |r| g.row_px(r);
                        partial(comm, x, g.px, rank_of, holder, &rows, vals, w, ld)?
                    }
                }
            }
            _ => None,
        };
        // 3. A00 and the pivots to everyone.
        let mut meta = vec![0u64; 1 + w];
        let mut a00 = vec![T::zero(); w * w];
        if let Some(ch) = chosen {
            meta[0] = ch.first_zero.map_or(0, |j| j as u64 + 1);
            for (m, &r) in meta[1..].iter_mut().zip(&ch.rows) {
                *m = r as u64;
            }
            a00 = ch.a00;
        }
        let members = broadcast_members(g, holders(g, pivoting), t);
        comm.tree_broadcast(&mut meta, &members)?;
        comm.tree_broadcast(&mut a00, &members)?;
        if meta[0] > 0 {
            recycle(a00);
            return Ok(Steps {
                singular: Some(panel.start + meta[0] as usize - 1),
                local: tiles.data,
                ..Steps::idle()
            });
        }
        let piv: Vec<usize> = meta[1..].iter().map(|&r| r as usize).collect();
        for i in 0..w {
            for k in i..w {
                max_u = max_u.max(a00[i + k * w].abs().to_f64());
            }
        }
        // My pivot rows to the front of my active rows, in pivot order: local rows
        // piv_start..a_start.
        for &r in &piv {
            pivoted[r] = true;
        }
        let piv_start = a_start;
        if let Some((x, _, _)) = coords {
            a_start = tiles.move_rows_to(&g.rows_of(&piv, x), a_start);
        }
        let rest: Vec<usize> = active.iter().copied().filter(|&r| !pivoted[r]).collect();
        let right = panel.end..n;

        // 4. L10's 1D pieces (none to move when a grid row is one rank: L10 is solved in
        // place, see `l_in_place`).
        let (mut l10_rows, mut u01_cols) = (Vec::new(), Vec::new());
        if let Some((x, y, z)) = coords {
            if !l_in_place {
                l10_rows = l10_piece(g, &rest, x, y + g.py * z);
            }
            u01_cols = u01_piece(g, t, y, x + g.px * z);
        }
        let (lm, un) = (l10_rows.len(), u01_cols.len());
        let mut l10 = take_buffer(lm * w, T::zero());
        if !l_in_place {
            let m4 = l10_scatter_moves(g, t, &rest);
            mark_positions(&mut pos, &l10_rows);
            exchange(comm, &m4, |i, j| tiles.get(i, j))?
                .apply(|i, j, v| l10[pos[i] + (j - panel.start) * lm] = v);
        }
        // A deferred update reaches my new pivot rows before their U01 is formed.
        if let Some(wait) = &pending {
            let (k, ld, wp) = (a_start - piv_start, tiles.ld(), wait.k);
            let first = tiles.cols_from(panel.end).start;
            if k > 0 && first < tiles.cols.len() {
                let (left, right) = tiles.data.split_at_mut(first * ld);
                gemm(
                    T::zero() - T::one(),
                    MatRef::from_slice(&left[wait.first_col * ld + piv_start..], k, wp, ld)?,
                    Op::NoTrans,
                    MatRef::from_slice(&wait.u[wait.from * wait.ld..], wp, n - panel.end, wait.ld)?,
                    Op::NoTrans,
                    T::one(),
                    MatMut::from_slice(&mut right[piv_start..], k, n - panel.end, ld)?,
                    par,
                )?;
            }
        }
        // 5. U01's 1D pieces, summed over the layers.
        let m5 = u01_reduce_moves(g, t, &piv);
        let mut u01 = take_buffer(w * un, T::zero());
        u01.fill(T::zero());
        mark_positions(&mut pos, &piv);
        mark_positions(&mut pos2, &u01_cols);
        // What I send are my pivot rows, in pivot order: the local rows piv_start..a_start.
        let (tl, tc) = (tiles.ld(), &tiles.col_pos);
        exchange_cols_into(
            comm,
            &m5,
            |j, rows, out| {
                debug_assert_eq!(rows.len(), a_start - piv_start);
                let at = tc[j] * tl + piv_start;
                out.copy_from_slice(&tiles.data[at..at + rows.len()]);
            },
            |j, rows, vals| {
                let col = &mut u01[pos2[j] * w..(pos2[j] + 1) * w];
                for (&i, &v) in rows.iter().zip(vals) {
                    col[pos[i]] += v;
                }
            },
        )?;
        // 6. The triangular solves on the pieces.
        let a00_view = MatRef::from_slice(&a00, w, w, w.max(1))?;
        let (ld, in_place_rows) = (tiles.ld(), tiles.ld() - a_start);
        // L10 = A10·U00⁻¹: in the local array (L10 in place) or in my 1D piece.
        let l10_block = if l_in_place && coords.is_some() && in_place_rows > 0 {
            let pc = tiles.col_pos(panel.start);
            Some(MatMut::from_slice(
                &mut tiles.data[pc * ld + a_start..],
                in_place_rows,
                w,
                ld,
            )?)
        } else if lm > 0 {
            Some(MatMut::from_slice(&mut l10, lm, w, lm)?)
        } else {
            None
        };
        if let Some(b) = l10_block {
            trsm(
                Side::Right,
                Uplo::Upper,
                Op::NoTrans,
                Diag::NonUnit,
                T::one(),
                a00_view,
                b,
                par,
            )?;
        }
        if un > 0 {
            let b = MatMut::from_slice(&mut u01, w, un, w.max(1))?;
            trsm(
                Side::Left,
                Uplo::Lower,
                Op::NoTrans,
                Diag::Unit,
                T::one(),
                a00_view,
                b,
                par,
            )?;
            max_u = max_u.max(max_abs(&u01[..w * un]).0);
        }
        // 7. The pieces to the 2.5D owners: my tiles' rows of L10 and columns of U01, my
        // layer's share of the panel columns.
        let (mut my_rows, mut my_cols, mut share) = (Vec::new(), Vec::new(), 0..0);
        if let Some((_, y, z)) = coords {
            my_rows = tiles.rows[a_start..].to_vec();
            my_cols = right.clone().filter(|&j| g.col_py(j) == y).collect();
            share = part(w, g.c, z);
        }
        let (mr, nc, ks) = (my_rows.len(), my_cols.len(), share.len());
        let mut l_share = take_buffer(if l_in_place { 0 } else { mr * ks }, T::zero());
        if !l_in_place {
            let m7a = l10_spread_moves(g, t, &rest);
            mark_positions(&mut pos, &l10_rows);
            mark_positions(&mut pos2, &my_rows);
            exchange(comm, &m7a, |i, j| l10[pos[i] + (j - panel.start) * lm])?.apply(|i, j, v| {
                l_share[pos2[i] + (j - panel.start - share.start) * mr] = v;
            });
        }
        let m7b = u01_spread_moves(g, t, &piv);
        // U01 of my layer's share: my column `jj` at `u_share[(from + jj)·ldu + off..][..ks]`.
        // With L10 in place the buffer has room for `DEFER_DEPTH` panels' U01 per column, and
        // this step's goes under the waiting panels' (rows `0..off`): then `kb = off + ks` rows
        // from column `from` on are the right-hand side of step 8's update.
        let (mut u_share, ldu, from, off) = match pending.as_mut() {
            Some(wait) if l_in_place => (std::mem::take(&mut wait.u), wait.ld, wait.from, wait.k),
            _ if l_in_place => {
                let ldu = DEFER_DEPTH * g.v;
                (take_buffer(ldu * nc, T::zero()), ldu, 0, 0)
            }
            _ => (take_buffer(ks * nc, T::zero()), ks, 0, 0),
        };
        let kb = off + ks;
        let piv_share = &piv[share.clone()];
        mark_positions(&mut pos, &u01_cols);
        mark_positions(&mut pos2, &piv);
        // Every move carries a layer's share of the pivot rows: neighbours in u01's columns
        // and in u_share's.
        let mut pos3 = vec![usize::MAX; n];
        mark_positions(&mut pos3, &my_cols);
        exchange_cols_into(
            comm,
            &m7b,
            |j, rows, out| {
                let at = pos[j] * w + pos2[rows[0]];
                out.copy_from_slice(&u01[at..at + rows.len()]);
            },
            |j, rows, vals| {
                debug_assert_eq!(rows, piv_share);
                let at = (from + pos3[j]) * ldu + off;
                u_share[at..at + ks].copy_from_slice(vals);
            },
        )?;
        // Every layer keeps what the spread brought it of the factors: its share of the L10
        // columns (on the panel's grid column) and of the U01 rows, where its own partial
        // sums of them were (no longer needed: steps 1 and 5 summed them).
        let first = tiles.cols_from(panel.end).start;
        if let Some((x, y, _)) = coords {
            if y == y0 && !l_in_place && mr > 0 {
                let pc = tiles.col_pos(panel.start);
                for jj in 0..ks {
                    let at = pc + share.start + jj;
                    let col = &mut tiles.data[at * ld + a_start..(at + 1) * ld];
                    col.copy_from_slice(&l_share[jj * mr..(jj + 1) * mr]);
                }
            }
            // Column by column: my pivot rows are neighbours in each column.
            let mine: Vec<(usize, usize)> = piv_share
                .iter()
                .enumerate()
                .filter(|&(_, &r)| g.row_px(r) == x)
                .map(|(k, &r)| (k, tiles.row_pos(r)))
                .collect();
            if !mine.is_empty() {
                let cols = tiles.data[first * ld..].chunks_exact_mut(ld);
                let u_cols = u_share[from * ldu..].chunks_exact(ldu.max(1));
                for (col, u) in cols.zip(u_cols) {
                    for &(k, lr) in &mine {
                        col[lr] = u[off + k];
                    }
                }
            }
        }
        // 8. The update of my layer's copy, in place: my active rows are the contiguous
        // local rows `a_start..`, in the order of `my_rows`.
        if l_in_place {
            // Every rank holds every column: the columns right of the next panel wait until
            // `DEFER_DEPTH` panels' updates can be done at once.
            let next = if t + 1 < g.steps() {
                g.panel(t + 1).len()
            } else {
                0
            };
            let pc = tiles.col_pos.get(panel.start).copied().unwrap_or(0);
            // `u_share` holds the waiting panels' U01 over this step's (`kb` rows).
            let (first_col, panels) = match pending.take() {
                Some(wait) => (wait.first_col, wait.panels + 1),
                None => (pc, 1),
            };
            let defer = panels < DEFER_DEPTH && next > 0 && nc > next;
            let now = if defer { next } else { nc };
            if mr > 0 && now > 0 && kb > 0 {
                let (left, right) = tiles.data.split_at_mut(first * ld);
                gemm(
                    T::zero() - T::one(),
                    MatRef::from_slice(&left[first_col * ld + a_start..], mr, kb, ld)?,
                    Op::NoTrans,
                    MatRef::from_slice(&u_share[from * ldu..], kb, now, ldu)?,
                    Op::NoTrans,
                    T::one(),
                    MatMut::from_slice(&mut right[a_start..], mr, now, ld)?,
                    par,
                )?;
            }
            if defer {
                pending = Some(Waiting {
                    first_col,
                    panels,
                    u: std::mem::take(&mut u_share),
                    ld: ldu,
                    k: kb,
                    from: from + next,
                });
            }
        } else if mr > 0 && nc > 0 && ks > 0 {
            let right = &mut tiles.data[first * ld..];
            gemm(
                T::zero() - T::one(),
                MatRef::from_slice(&l_share, mr, ks, mr)?,
                Op::NoTrans,
                MatRef::from_slice(&u_share, ks, nc, ks)?,
                Op::NoTrans,
                T::one(),
                MatMut::from_slice(&mut right[a_start..], mr, nc, ld)?,
                par,
            )?;
        }
        recycle(l_share);
        recycle(u_share);
        // 9. A00 into layer 0's tiles (the layers' shares of L10 and U01 stay where step 7
        // left them; `gather_moves` brings them to layer 0 when the factors are used).
        if let Some((x, y, 0)) = coords {
            if y == y0 {
                for (k, &r) in piv.iter().enumerate() {
                    if g.row_px(r) == x {
                        for (jj, j) in panel.clone().enumerate() {
                            *tiles.at(r, j) = a00[k + jj * w];
                        }
                    }
                }
            }
        }
        // The panel's columns are final: later swaps leave them alone.
        // (This panel's L10 stays live, following the swaps, while its update waits.)
        tiles.freeze_before(match &pending {
            Some(wait) => tiles.cols[wait.first_col],
            None => panel.end,
        });
        recycle(l10);
        recycle(u01);
        all_piv.push(piv);
        all_a00.push(
            if coords.is_some_and(|(x, _, z)| x == g.solver_row(t) && z == 0) {
                a00
            } else {
                Vec::new()
            },
        );
        active = rest;
    }
    tiles.sort_rows();
    Ok(Steps {
        local: tiles.data,
        pivots: all_piv,
        a00: all_a00,
        max_u,
        singular: None,
    })
}

/// The moves that bring the layers' shares of the factors to layer 0's tiles, all steps in
/// one list: step 7 left rank `(x, y, z)` holding, in its tiles, layer `z`'s share of the panel
/// columns of `L10` (on the panel's grid column) and of the pivot rows of `U01`. Nothing moves
/// with one layer; the words are those a per-step write-back would move, in one message per
/// pair of ranks.
pub(crate) fn gather_moves(g: &Geometry, pivots: &[Vec<usize>]) -> Vec<Move> {
    let mut out = Vec::new();
    if g.c == 1 {
        return out;
    }
    let mut pivoted = vec![false; g.n];
    let mut rest: Vec<usize> = (0..g.n).collect();
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
            let share = layer_share(panel.len(), g, z);
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

#[cfg(test)]
mod tests {
    use super::*;
    use redblue_core::c64 as Complex64;

    #[test]
    fn max_abs_sees_every_lane_and_the_tail() {
        assert_eq!(max_abs::<f64>(&[]), (0.0, true));
        // Lengths around the lane count; the largest in each position once.
        for len in 1..20 {
            for at in 0..len {
                let mut xs = vec![0.5f64; len];
                xs[at] = -3.0;
                assert_eq!(max_abs(&xs), (3.0, true), "len {len}, at {at}");
                xs[at] = f64::NAN;
                assert!(!max_abs(&xs).1, "NaN at {at} of {len}");
                xs[at] = f64::NEG_INFINITY;
                assert!(!max_abs(&xs).1, "-Inf at {at} of {len}");
            }
        }
        let z = [Complex64::new(3.0, 4.0), Complex64::new(-1.0, 0.0)];
        assert_eq!(max_abs(&z), (5.0, true));
        assert!(!max_abs(&[Complex64::new(0.0, f64::INFINITY)]).1);
    }
}
