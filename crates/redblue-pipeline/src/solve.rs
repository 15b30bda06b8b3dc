//! Triangular solves with the factors of a tile factorisation for many right-hand sides (LU's
//! `L` and `U`, Cholesky's `L` and `Lᴴ`), and the row permutation that turns LU's packed
//! factors into `L` and `U`.
//!
//! The factors stay where the factorisation left them: layer 0's `v × v` tiles in unpermuted
//! rows (for LU, row `perm[i]` holds row `i` of `L` and of `U`). `B` is laid out like them: its rows on
//! the grid rows holding `A`'s rows, its columns `v` at a time over the grid columns
//! ([`rhs_layout`]), on layer 0. Forward substitution runs the steps in order and back
//! substitution in reverse; step `t`, with pivot rows `piv` and the rows `others` it updates
//! (those pivoted later going forward, earlier going back):
//!
//! 1. rows `piv` of `B` go to grid row `t mod Px` of every grid column ([`gather_moves`]),
//! 2. which solves with the step's diagonal block (`L00` unit lower going forward, `U00` upper
//!    going back), kept from the factorisation;
//! 3. the solved rows go to the ranks of the grid column that hold a row of `piv` or of
//!    `others` ([`spread_moves`]; of `piv` only when the step moves products, below);
//! 4. the factor's rows `others` of the panel columns go from grid column `t mod Py` along
//!    their grid rows ([`panel_moves`]) — for Cholesky's back substitution, `U = Lᴴ`, the
//!    panel's rows of the columns `others` instead, from grid row `t mod Px`
//!    ([`row_block_moves`]) — and
//! 5. every rank updates its rows of `others`: `B[others] −= panel · X`.
//!
//! With few right-hand sides steps 4 and 5 go the other way when that moves fewer words
//! (`SweepStep::moves_products`, decided from global facts): the solved rows go to the ranks
//! holding the panel ([`x_to_panel_moves`]; Cholesky's back substitution: the row block's
//! holders on the solving grid row, [`x_to_row_block_moves`]), which multiply their part of it
//! by them and keep the products as partial sums (`Partials`); step 0 of the step that solves a
//! row brings its partial sums to the ranks holding it in `B`, which subtract them. A maker makes
//! the next step's rows first, the rest once that step's sums are sent; its sums leave without
//! waiting for their receiver. Likewise a rank updating its rows with a panel updates the next
//! step's rows first and the rest once it has done its part of the next step (sent its rows of
//! the pivots, or solved them and sent them on), so that the ranks waiting for those are not
//! waiting for this update too. No send waits for its receiver (with MPI a message of more than
//! a few hundred bytes may otherwise wait until its receiver looks for it, here when it is
//! busy with its own update).
//!
//! Afterwards row `perm[j]` of `B` holds `x_j`; [`permute_moves`] put it in row `j` (nothing to
//! do without pivoting).
//!
//! On one grid row with at most `v` right-hand sides the solves run as a ring instead (the
//! rank holding a step's panel solves it: `ring.rs`), and [`solve_costs`] models that.
//!
//! Words per rank, per sweep, about `N·K/Py` for the solved rows and `N²·(Py − 1)/(2P)` for the
//! panels (`K` right-hand sides); with partial sums instead, about `N·K` for the sums and the
//! solved rows: a step moves whichever is less (judged by what sending every product back at
//! once would cost; in a sweep reading row blocks, a maker's sums count once per sweep:
//! `SweepStep::moves_products`), so few right-hand sides no longer pay for the panels. Like
//! the factorisation, every move is planned from global facts, and [`solve_costs`] replays
//! them.

use crate::geometry::{gather_runs, mark_positions, scatter_runs, Geometry, RowsByGridRow, Tiles};
use redblue_comm::{CommError, CommStats, Communicator};
use redblue_core::pool::{recycle, try_take_buffer};
use redblue_core::{Diag, Op, Side, Uplo};
use redblue_dist::exchange::{exchange, exchange_cols_into, exchange_cols_unwaited, Move, Outbox};
use redblue_dist::{BlockCyclic, DistError, GridOrder};
use redblue_kernels::{gemm, trsm, KernelError, KernelScalar, MatMut, MatRef, Par};
use std::borrow::Cow;
use std::ops::Range;

/// What the tiles of a factorisation hold, and how a solve uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Triangles {
    /// LU: `L` (unit diagonal, implied) and `U`, packed in unpermuted rows.
    Lu,
    /// LU's `L` and `U` (no row interchanges) for `Aᵀ·X = B`: the forward substitution with
    /// `Uᵀ`, the back substitution with `Lᵀ`, both reading row blocks transposed.
    LuTransposed,
    /// The same for `Aᴴ·X = B` (`Uᴴ`, then `Lᴴ`).
    LuAdjoint,
    /// Cholesky: `L` in the lower triangle (`U = Lᴴ` is not stored).
    Cholesky,
    /// Cholesky: `U` in the upper triangle (`L = Uᴴ` is not stored), as ScaLAPACK's
    /// `p?potrf` leaves `A = Uᴴ·U`: solved with as it is, the forward substitution reading
    /// `U`'s row blocks transposed.
    CholeskyUpper,
}

impl Triangles {
    /// Whether this is a Cholesky factor (one triangle; no row permutation).
    pub fn is_cholesky(self) -> bool {
        matches!(self, Triangles::Cholesky | Triangles::CholeskyUpper)
    }

    /// How a transposed panel is applied: `Op::Trans` for `Aᵀ`, `Op::ConjTrans` otherwise.
    fn transposed_op(self) -> Op {
        match self {
            Triangles::LuTransposed => Op::Trans,
            _ => Op::ConjTrans,
        }
    }
}

/// The native layout of `nrhs` right-hand sides for the factors of geometry `g`: `N × nrhs` in
/// `v × v` tiles on layer 0's `Px × Py` grid, rows like `A`'s.
pub fn rhs_layout(g: &Geometry, nrhs: usize) -> Result<BlockCyclic, DistError> {
    Ok(BlockCyclic::new(g.n, nrhs, g.v, g.v, g.px, g.py)?.with_order(GridOrder::ColMajor))
}

/// The right-hand-side columns (ascending) grid column `y` holds.
pub fn rhs_cols(g: &Geometry, nrhs: usize, y: usize) -> Vec<usize> {
    (0..nrhs).filter(|&j| (j / g.v) % g.py == y).collect()
}

/// Which triangle a sweep solves with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sweep {
    /// `L·Y = B`, steps in order.
    Forward,
    /// `U·X = Y`, steps in reverse.
    Backward,
}

/// The steps of both sweeps in order of execution, `(sweep, t)`, and the rows each updates
/// (`others`): going forward, the rows not pivoted yet (ascending); going back, the rows of the
/// earlier steps' pivots (in their order). Made step by step ([`Schedule::others`]), without a
/// list per step.
pub(crate) struct Schedule<'p> {
    pivots: &'p [Vec<usize>],
    pub(crate) order: Vec<(Sweep, usize)>,
    /// The rows not pivoted by the forward steps so far, ascending.
    later: Vec<usize>,
    pivoted: Vec<bool>,
    /// Every step's pivots in order, and where each step's begin.
    pub(crate) flat: Vec<usize>,
    starts: Vec<usize>,
}

impl<'p> Schedule<'p> {
    pub(crate) fn new(pivots: &'p [Vec<usize>], n: usize) -> Self {
        let steps = pivots.len();
        let order = (0..steps)
            .map(|t| (Sweep::Forward, t))
            .chain((0..steps).rev().map(|t| (Sweep::Backward, t)))
            .collect();
        let mut starts = Vec::with_capacity(steps);
        let mut flat = Vec::new();
        for piv in pivots {
            starts.push(flat.len());
            flat.extend_from_slice(piv);
        }
        Schedule {
            pivots,
            order,
            later: (0..n).collect(),
            pivoted: vec![false; n],
            flat,
            starts,
        }
    }

    /// The rows the step after step `k` solves when it is of the same sweep (none otherwise).
    pub(crate) fn next(&self, k: usize) -> &'p [usize] {
        match (self.order[k], self.order.get(k + 1)) {
            ((sweep, _), Some(&(s, u))) if s == sweep => &self.pivots[u],
            _ => &[],
        }
    }

    /// Step `k`'s rows to update; called for `k = 0, 1, 2, …` in turn (the forward steps
    /// strike their pivots off the rows not pivoted yet).
    pub(crate) fn others(&mut self, k: usize) -> &[usize] {
        match self.order[k] {
            (Sweep::Forward, t) => {
                for &r in &self.pivots[t] {
                    self.pivoted[r] = true;
                }
                let pivoted = &self.pivoted;
                self.later.retain(|&r| !pivoted[r]);
                &self.later
            }
            (Sweep::Backward, t) => &self.flat[..self.starts[t]],
        }
    }
}

/// Step 1: rows `piv` of `B` to grid row `t mod Px` of each grid column.
pub fn gather_moves(g: &Geometry, nrhs: usize, t: usize, piv: &[usize]) -> Vec<Move> {
    let xt = g.solver_row(t);
    let mut out = Vec::new();
    for y in 0..g.py {
        let cols = rhs_cols(g, nrhs, y);
        if cols.is_empty() {
            continue;
        }
        for x in 0..g.px {
            let rows = g.rows_of(piv, x);
            if !rows.is_empty() {
                out.push(Move {
                    from: g.rank(x, y, 0),
                    to: g.rank(xt, y, 0),
                    rows,
                    cols: cols.clone(),
                });
            }
        }
    }
    out
}

/// The solved rows `piv` from the solving grid row of each grid column holding right-hand
/// sides (its columns of them) to rank `to(x, y)` for every grid row `x` that `wanted`.
fn solved_rows_to(
    g: &Geometry,
    nrhs: usize,
    t: usize,
    piv: &[usize],
    wanted: impl Fn(usize) -> bool,
    to: impl Fn(usize, usize) -> usize,
) -> Vec<Move> {
    let mut out = Vec::new();
    for y in 0..g.py {
        let cols = rhs_cols(g, nrhs, y);
        if cols.is_empty() {
            continue;
        }
        for x in (0..g.px).filter(|&x| wanted(x)) {
            out.push(Move {
                from: g.rank(g.solver_row(t), y, 0),
                to: to(x, y),
                rows: piv.to_vec(),
                cols: cols.clone(),
            });
        }
    }
    out
}

/// Step 3: the solved rows `piv` to the ranks of each grid column holding a row of `piv` or
/// of `others`.
pub fn spread_moves(
    g: &Geometry,
    nrhs: usize,
    t: usize,
    piv: &[usize],
    others: &RowsByGridRow<'_>,
) -> Vec<Move> {
    let piv_counts = g.row_counts(piv);
    let to = |x, y| g.rank(x, y, 0);
    solved_rows_to(g, nrhs, t, piv, |x| others.count(x) + piv_counts[x] > 0, to)
}

/// Step 4: the factor's rows `others` of step `t`'s panel columns, from grid column `t mod Py`
/// to the ranks of the same grid row that hold right-hand sides.
pub fn panel_moves(g: &Geometry, nrhs: usize, t: usize, others: &RowsByGridRow<'_>) -> Vec<Move> {
    let (y0, _) = g.panel_owner(t);
    let panel: Vec<usize> = g.panel(t).collect();
    let mut out = Vec::new();
    for x in 0..g.px {
        let rows = others.of(x);
        if rows.is_empty() {
            continue;
        }
        for y in (0..g.py).filter(|&y| !rhs_cols(g, nrhs, y).is_empty()) {
            out.push(Move {
                from: g.rank(x, y0, 0),
                to: g.rank(x, y, 0),
                rows: rows.to_vec(),
                cols: panel.clone(),
            });
        }
    }
    out
}

/// Step 4 of Cholesky's back substitution (`U = Lᴴ`): the panel's rows of the columns
/// `others` (rows of `Lᴴ`'s panel column), from grid row `t mod Px` to the ranks of the grid
/// rows holding `others` that hold right-hand sides.
pub fn row_block_moves(
    g: &Geometry,
    nrhs: usize,
    t: usize,
    others: &RowsByGridRow<'_>,
) -> Vec<Move> {
    let xt = g.solver_row(t);
    let panel: Vec<usize> = g.panel(t).collect();
    let with_rhs: Vec<usize> = (0..g.py)
        .filter(|&y| !rhs_cols(g, nrhs, y).is_empty())
        .collect();
    let mut out = Vec::new();
    for x in 0..g.px {
        let mine = others.of(x);
        for from_y in 0..g.py {
            let cols: Vec<usize> = mine
                .iter()
                .copied()
                .filter(|&j| g.col_py(j) == from_y)
                .collect();
            if cols.is_empty() {
                continue;
            }
            for &y in &with_rhs {
                out.push(Move {
                    from: g.rank(xt, from_y, 0),
                    to: g.rank(x, y, 0),
                    rows: panel.clone(),
                    cols: cols.clone(),
                });
            }
        }
    }
    out
}

/// Step 4's moves of step `t` of a sweep.
fn factor_moves(
    g: &Geometry,
    triangles: Triangles,
    sweep: Sweep,
    nrhs: usize,
    t: usize,
    others: &RowsByGridRow<'_>,
) -> Vec<Move> {
    match transposed(triangles, sweep) {
        true => row_block_moves(g, nrhs, t, others),
        false => panel_moves(g, nrhs, t, others),
    }
}

/// Step 4 when products are cheaper (`SweepStep::moves_products`): the solved rows `piv`, every
/// right-hand side, from the solving grid row to the panel's grid column `t mod Py`, on the
/// grid rows holding a row of `others`.
pub fn x_to_panel_moves(
    g: &Geometry,
    nrhs: usize,
    t: usize,
    piv: &[usize],
    others: &RowsByGridRow<'_>,
) -> Vec<Move> {
    let (y0, _) = g.panel_owner(t);
    let to = |x, _| g.rank(x, y0, 0);
    solved_rows_to(g, nrhs, t, piv, |x| others.count(x) > 0, to)
}

/// The columns of `others` each grid column holds, by grid column.
fn cols_by_grid_column(g: &Geometry, others: &[usize]) -> Vec<Vec<usize>> {
    // Room for a grid column's share of whole tiles and one more (a list of whole tiles dealt
    // round the grid columns, as a step's usually is, never grows it).
    let room = others.len().div_ceil(g.py.max(1)) + g.v;
    let mut out: Vec<Vec<usize>> = (0..g.py).map(|_| Vec::with_capacity(room)).collect();
    // A run of columns in one tile at a time (the list is mostly whole tiles, every step).
    let mut k = 0;
    while k < others.len() {
        let tile = others[k] / g.v * g.v..(others[k] / g.v + 1) * g.v;
        let len = others[k..].iter().take_while(|j| tile.contains(j)).count();
        out[g.col_py(others[k])].extend_from_slice(&others[k..k + len]);
        k += len;
    }
    out
}

/// Step 4 of Cholesky's back substitution when products are cheaper: the solved rows `piv`,
/// every right-hand side, from the solving grid row to the ranks of that grid row holding
/// columns `others` of the panel's row block.
pub fn x_to_row_block_moves(
    g: &Geometry,
    nrhs: usize,
    t: usize,
    piv: &[usize],
    others: &[usize],
) -> Vec<Move> {
    let xt = g.solver_row(t);
    // Which grid columns hold a column of `others` (they are found in the first few tiles).
    let mut holders = vec![false; g.py];
    let mut found = 0;
    for &j in others {
        let y = g.col_py(j);
        if !holders[y] {
            holders[y] = true;
            found += 1;
            if found == g.py {
                break;
            }
        }
    }
    let mut out = Vec::new();
    for y in 0..g.py {
        let cols = rhs_cols(g, nrhs, y);
        if cols.is_empty() {
            continue;
        }
        for (to_y, &held) in holders.iter().enumerate() {
            if held {
                out.push(Move {
                    from: g.rank(xt, y, 0),
                    to: g.rank(xt, to_y, 0),
                    rows: piv.to_vec(),
                    cols: cols.clone(),
                });
            }
        }
    }
    out
}

/// Which ranks hold products not yet delivered, row by row, during one sweep: a step that moves
/// products leaves them with their makers ([`SweepStep::product_makers`]), and the step that
/// solves a row first brings them to the row's owners ([`Partials::moves`]).
struct Partials {
    /// Per rank (none until it first holds one), a bit per global row: whether it holds a
    /// partial sum for that row.
    held: Vec<Vec<u64>>,
    /// The number of rows.
    n: usize,
}

impl Partials {
    fn new(n: usize) -> Self {
        Partials {
            held: Vec::new(),
            n,
        }
    }

    /// Whether rank `rank` has made products in this sweep.
    fn made(&self, rank: usize) -> bool {
        self.held.get(rank).is_some_and(|bits| !bits.is_empty())
    }

    /// Rows `rows` of rank `rank` now hold products.
    fn record(&mut self, rank: usize, rows: &[usize]) {
        if self.held.len() <= rank {
            self.held.resize_with(rank + 1, Vec::new);
        }
        let bits = &mut self.held[rank];
        if bits.is_empty() {
            bits.resize(self.n.div_ceil(64), 0);
        }
        for &i in rows {
            bits[i / 64] |= 1 << (i % 64);
        }
    }

    /// Step 0: the partial sums of rows `piv` (in `partial`, `N × K`, stored as `sums` says)
    /// brought to the ranks holding those rows of `b` ([`Partials::moves`]) and subtracted
    /// there, a column of a move at a time. What this rank sends is not waited for
    /// ([`exchange_cols_unwaited`]): a maker goes on with its products while the rank it sends
    /// to is still busy.
    ///
    /// # Collective
    fn deliver<'a, T: KernelScalar, C: Communicator>(
        &mut self,
        comm: &'a C,
        (g, nrhs): (&Geometry, usize),
        piv: &[usize],
        (partial, sums): (&[T], Sums),
        b: &mut Tiles<'_, T>,
        outbox: &mut Outbox<'a, T, C>,
    ) -> Result<(), CommError> {
        let n = g.n;
        let moves = self.moves(g, nrhs, piv);
        let read = |j: usize, rows: &[usize], out: &mut [T]| match sums {
            Sums::ByColumns => gather_runs(&partial[j * n..][..n], rows, |r| r, out),
            Sums::ByRows => {
                for (o, &r) in out.iter_mut().zip(rows) {
                    *o = partial[r * nrhs + j];
                }
            }
        };
        exchange_cols_unwaited(comm, &moves, read, outbox)?
            .apply_cols(|j, rows, vals| b.sub_rows(j, rows, vals));
        Ok(())
    }

    /// The partial sums of rows `piv` to the ranks holding those rows of `B` (every
    /// right-hand side of their grid column), in rank order of the holders; they are
    /// delivered once.
    fn moves(&mut self, g: &Geometry, nrhs: usize, piv: &[usize]) -> Vec<Move> {
        // The holders in rank order, each with its rows of `piv` in `piv`'s order.
        let mut by_holder: Vec<(usize, Vec<usize>)> = Vec::new();
        for (r, bits) in self.held.iter_mut().enumerate() {
            let mut rows = Vec::new();
            for &i in piv {
                let (word, bit) = (i / 64, 1u64 << (i % 64));
                if bits.get(word).is_some_and(|&w| w & bit != 0) {
                    bits[word] &= !bit;
                    rows.push(i);
                }
            }
            if !rows.is_empty() {
                by_holder.push((r, rows));
            }
        }
        let mut out = Vec::new();
        for (from, rows) in by_holder {
            for x in 0..g.px {
                let mine = g.rows_of(&rows, x);
                if mine.is_empty() {
                    continue;
                }
                for y in 0..g.py {
                    let cols = rhs_cols(g, nrhs, y);
                    if !cols.is_empty() {
                        out.push(Move {
                            from,
                            to: g.rank(x, y, 0),
                            rows: mine.clone(),
                            cols,
                        });
                    }
                }
            }
        }
        out
    }
}

/// Row `j` of the result is row `perm[j]` of a layer-0 matrix whose grid column `y` holds the
/// columns `cols_of(y)`: the moves, one per (source, destination) pair, listed by destination
/// row (the sender reads row `perm[j]` for row `j`).
pub fn permute_moves(
    g: &Geometry,
    perm: &[usize],
    cols_of: impl Fn(usize) -> Vec<usize>,
) -> Vec<Move> {
    let mut groups = vec![Vec::new(); g.px * g.px];
    for (j, &src) in perm.iter().enumerate() {
        groups[g.row_px(src) + g.px * g.row_px(j)].push(j);
    }
    let mut out = Vec::new();
    for y in 0..g.py {
        let cols = cols_of(y);
        if cols.is_empty() {
            continue;
        }
        for (k, rows) in groups.iter().enumerate() {
            if !rows.is_empty() {
                out.push(Move {
                    from: g.rank(k % g.px, y, 0),
                    to: g.rank(k / g.px, y, 0),
                    rows: rows.clone(),
                    cols: cols.clone(),
                });
            }
        }
    }
    out
}

/// Permutes the rows of a layer-0 matrix (local array `m` on this rank, whose grid column `y`
/// holds the columns `cols_of(y)`): row `j` of the result is row `perm[j]` of `m`.
///
/// # Collective
pub fn permute_rows<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    perm: &[usize],
    cols_of: impl Fn(usize) -> Vec<usize>,
    m: &Tiles<'_, T>,
    shape: (usize, usize),
) -> Result<Tiles<'static, T>, CommError> {
    let moves = permute_moves(g, perm, cols_of);
    // The result has `m`'s rows and columns, at the same positions. A column of a move at a
    // time: its rows read from where their sources are, written in runs (a move's rows ascend,
    // and a rank's rows are neighbours in its array).
    let ld = m.ld();
    let mut data = vec![T::zero(); m.data.len()];
    exchange_cols_into(
        comm,
        &moves,
        |j, rows, vals| {
            let column = &m.data[m.col_pos(j) * ld..][..ld];
            for (v, &i) in vals.iter_mut().zip(rows) {
                *v = column[m.row_pos(perm[i])];
            }
        },
        |j, rows, vals| {
            let column = &mut data[m.col_pos(j) * ld..][..ld];
            scatter_runs(column, rows, |r| m.row_pos(r), vals);
        },
    )?;
    let out = Tiles::from_parts(m.rows.clone(), m.cols.clone(), shape, data);
    Ok(out)
}

/// The error of a solve: a communication or a kernel failure. Exhaustive on purpose (see
/// [`FactorsError`](crate::factors::FactorsError)).
#[derive(Debug)]
pub enum SolveError {
    /// A communication failure.
    Comm(CommError),
    /// A local kernel failure.
    Kernel(KernelError),
}

impl From<CommError> for SolveError {
    fn from(e: CommError) -> Self {
        SolveError::Comm(e)
    }
}

impl From<KernelError> for SolveError {
    fn from(e: KernelError) -> Self {
        SolveError::Kernel(e)
    }
}

/// Solves `A·X = B` on layer 0 with the factors `factors` (this rank's layer-0 tiles,
/// unpermuted rows, holding `triangles`), the steps' pivots and diagonal blocks (kept on the
/// solving grid rows; a block left empty is read in `factors`), for `B` given as this rank's local array `b` of [`rhs_layout`];
/// returns `X` in the same layout. The local solves and products run on `par` threads.
///
/// On one grid row with at most `v` right-hand sides the ring solves instead (`ring.rs`: the
/// rank holding a step's panel solves it; `blocks` are not read).
///
/// # Collective
/// # Errors
/// A communication or kernel failure.
#[allow(clippy::too_many_arguments)]
pub fn solve_native<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    triangles: Triangles,
    pivots: &[Vec<usize>],
    blocks: &[Vec<T>],
    factors: &Tiles<'_, T>,
    b: Tiles<'static, T>,
    nrhs: usize,
    par: Par,
) -> Result<Tiles<'static, T>, SolveError> {
    if crate::ring::applies(g, nrhs) {
        return crate::ring::ring_solve(comm, g, triangles, pivots, factors, b, nrhs, par);
    }
    let data = (pivots, blocks, factors);
    solve_general(comm, g, triangles, data, b, nrhs, par)
}

/// [`solve_native`] by the general scheme (the module's steps 1 to 5): every step solved on
/// the grid columns holding right-hand sides.
///
/// # Collective
fn solve_general<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    triangles: Triangles,
    (pivots, blocks, factors): (&[Vec<usize>], &[Vec<T>], &Tiles<'_, T>),
    mut b: Tiles<'static, T>,
    nrhs: usize,
    par: Par,
) -> Result<Tiles<'static, T>, SolveError> {
    let n = g.n;
    let at = g.coords(comm.rank()).filter(|&(_, _, z)| z == 0);
    let mut piv_pos = vec![usize::MAX; n];
    let mut row_pos = vec![usize::MAX; n];
    // Products made and not yet delivered (by steps that move products), per sweep.
    let (mut partials, mut partial, mut current) = (Partials::new(n), Vec::new(), None);
    let mut sums = Sums::ByColumns;
    let mut outbox_store = outbox_room(g, nrhs);
    let mut outbox = Outbox::new(&mut outbox_store);
    // The previous step's products not made yet (all but the rows this step solves).
    let mut deferred: Option<(SweepStep<'_>, Deferred<T>)> = None;
    // The previous step's update of this rank's rows other than this step's, made where this
    // rank has done its part of this step.
    let mut pending: Option<LaterUpdate<'_, T>> = None;
    let mut schedule = Schedule::new(pivots, n);
    let steps = schedule.order.clone();
    let nobody = RowsByGridRow::new(g, &[]);
    for (k, &(sweep, t)) in steps.iter().enumerate() {
        // The rows the next step of this sweep solves, and the rows this step updates.
        let next = schedule.next(k);
        let others = RowsByGridRow::new(g, schedule.others(k));
        let piv = &pivots[t];
        mark_positions(&mut piv_pos, piv);
        let step = SweepStep {
            g,
            triangles,
            sweep,
            t,
            nrhs,
        };
        if current != Some(sweep) {
            let sweep_sums = (vec![T::zero(); n * nrhs], Sums::of(&step));
            (partials, (partial, sums), current) = (Partials::new(n), sweep_sums, Some(sweep));
        }
        // 0. The partial sums of rows `piv` to their owners, subtracted; then the previous
        // step's other products, while they travel.
        partials.deliver(comm, (g, nrhs), piv, (&partial, sums), &mut b, &mut outbox)?;
        if let Some((step, d)) = deferred.take() {
            step.products_into(factors, (&mut partial, sums), &d.rows, &d.x, par)?;
        }
        // 1. to 3., and the previous step's rest where this rank has done its part of this
        // step (its rows of `piv` sent, or the solved rows). The solved rows go to the
        // holders of `others` only if the panel comes to them (products have their makers).
        let rest = |b: &mut Tiles<'_, T>| LaterUpdate::apply_any(pending.take(), b, par);
        let by_products = step.moves_products(piv, &others, |r| partials.made(r));
        let (xs, x_blk) = step.solve_rows(
            comm,
            (blocks, factors),
            &mut b,
            (piv, &piv_pos),
            if by_products { &nobody } else { &others },
            (&mut outbox, rest),
            par,
        )?;
        // 4. and 5. The factor's panel for the rows of `others` this rank updates, and the
        // update.
        let later = if by_products {
            let col_pos: Vec<usize> = (0..nrhs).map(|j| b.col_pos(j)).collect();
            let solved = |i: usize, j: usize| xs[piv_pos[i] + col_pos[j] * piv.len()];
            let x = (piv_pos.as_slice(), solved);
            let makers = step.product_makers(&others);
            let mine = makers.iter().find(|m| m.0 == comm.rank()).map(|m| &m.1[..]);
            let (data, rows) = (
                (factors, (&mut partial[..], sums)),
                (piv.as_slice(), &others, next),
            );
            let later = step.add_products(comm, data, rows, mine, x, &mut outbox, par)?;
            for (r, rows) in &makers {
                partials.record(*r, rows);
            }
            deferred = later.map(|d| (step, d));
            None
        } else {
            let mine = rows_held(at.filter(|_| !b.cols.is_empty()), &others);
            mark_positions(&mut row_pos, mine);
            let rows = (&others, next);
            step.update_with_panel(comm, factors, &mut b, rows, (mine, &row_pos), x_blk, par)?
        };
        pending = later;
    }
    LaterUpdate::apply_any(pending.take(), &mut b, par)?;
    outbox.finish()?;
    recycle(outbox_store);
    // Row interchanges to undo: LU's only (transposed LU solves take factors without any).
    match triangles {
        Triangles::Lu => undo_interchanges(comm, g, &schedule.flat, b, nrhs),
        _ => Ok(b),
    }
}

/// Room for what a rank sends in a solve, in flight until it ends ([`Outbox`]): per sweep,
/// each row's partial sums leave a rank once, to one holder per right-hand side, and each
/// solved row goes to at most `Px` makers; the rows gathered to the solving grid row and
/// spread from it use the same room (a rank sends a share of them). A send finding no room
/// left, or no room taken for want of memory, is waited for at once.
fn outbox_room<T: KernelScalar>(g: &Geometry, nrhs: usize) -> Vec<T> {
    try_take_buffer(2 * g.n * nrhs * (g.px + 1), T::zero()).unwrap_or_default()
}

/// The rows of `others` this rank holds at `at` (none off layer 0, or without right-hand
/// sides).
fn rows_held<'o>(at: Option<(usize, usize, usize)>, others: &'o RowsByGridRow<'_>) -> &'o [usize] {
    match at {
        Some((x, _, _)) => others.of(x),
        None => &[],
    }
}

/// Row `perm[j]` of the solved `b` (`N × nrhs`) put in row `j` (nothing moves without row
/// interchanges).
///
/// # Collective
pub(crate) fn undo_interchanges<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    perm: &[usize],
    b: Tiles<'static, T>,
    nrhs: usize,
) -> Result<Tiles<'static, T>, SolveError> {
    if perm.iter().enumerate().all(|(i, &r)| i == r) {
        return Ok(b);
    }
    let cols_of = |y| rhs_cols(g, nrhs, y);
    Ok(permute_rows(comm, g, perm, cols_of, &b, (g.n, nrhs))?)
}

/// Whether a sweep reads the factor's row blocks transposed instead of its column panels:
/// Cholesky's back substitution (`Lᴴ`), its forward one with `U` stored (`Uᴴ`), and both sweeps
/// of a transposed LU solve.
fn transposed(triangles: Triangles, sweep: Sweep) -> bool {
    matches!(
        (triangles, sweep),
        (Triangles::Cholesky, Sweep::Backward)
            | (Triangles::CholeskyUpper, Sweep::Forward)
            | (Triangles::LuTransposed | Triangles::LuAdjoint, _)
    )
}

/// Step 2 of a sweep: `X ← op(T)⁻¹·X` with the diagonal block's triangle `T` (LU forward: unit
/// `L00`; LU back: `U00`; Cholesky forward: `L00`, or `U00ᴴ` when `U` is stored; Cholesky
/// back: `L00ᴴ`, or `U00`).
pub(crate) fn diagonal_solve<T: KernelScalar>(
    triangles: Triangles,
    sweep: Sweep,
    block: MatRef<'_, T>,
    xs: MatMut<'_, T>,
    par: Par,
) -> Result<(), KernelError> {
    let (uplo, op, diag) = match (triangles, sweep) {
        (Triangles::Lu, Sweep::Forward) => (Uplo::Lower, Op::NoTrans, Diag::Unit),
        (Triangles::Lu, Sweep::Backward) => (Uplo::Upper, Op::NoTrans, Diag::NonUnit),
        (Triangles::Cholesky, Sweep::Forward) => (Uplo::Lower, Op::NoTrans, Diag::NonUnit),
        (Triangles::Cholesky, Sweep::Backward) => (Uplo::Lower, Op::ConjTrans, Diag::NonUnit),
        (Triangles::CholeskyUpper, Sweep::Forward) => (Uplo::Upper, Op::ConjTrans, Diag::NonUnit),
        (Triangles::CholeskyUpper, Sweep::Backward) => (Uplo::Upper, Op::NoTrans, Diag::NonUnit),
        (Triangles::LuTransposed | Triangles::LuAdjoint, Sweep::Forward) => {
            (Uplo::Upper, triangles.transposed_op(), Diag::NonUnit)
        }
        (Triangles::LuTransposed | Triangles::LuAdjoint, Sweep::Backward) => {
            (Uplo::Lower, triangles.transposed_op(), Diag::Unit)
        }
    };
    trsm(Side::Left, uplo, op, diag, T::one(), block, xs, par)
}

/// The ranks that make a step's products, each with its rows of `B` (or, for a row block, its
/// columns): [`SweepStep::product_makers`].
pub(crate) type Makers<'o> = Vec<(usize, Cow<'o, [usize]>)>;

/// Step `t` of one sweep of a solve.
pub(crate) struct SweepStep<'g> {
    pub(crate) g: &'g Geometry,
    pub(crate) triangles: Triangles,
    pub(crate) sweep: Sweep,
    pub(crate) t: usize,
    pub(crate) nrhs: usize,
}

impl SweepStep<'_> {
    /// Steps 1 to 3 on rows `piv` (`piv_pos`: their positions): gathered on the solving grid
    /// row, solved there with the step's diagonal block (of `blocks`, which the solving grid
    /// row holds), and spread down the grid columns to the
    /// ranks holding a row of `piv` or of `others` (their owners keep them in `b`). Returns the
    /// solved rows on the solving grid row (`w × ny`, this rank's right-hand sides) and as
    /// spread.
    ///
    /// `idle` runs where this rank has done its part of the step and would wait: on the
    /// solving grid row once the solved rows have left, elsewhere once its rows of `piv` have
    /// left and before the solved rows come.
    ///
    /// # Collective
    #[allow(clippy::too_many_arguments)]
    fn solve_rows<'a, T: KernelScalar, C: Communicator>(
        &self,
        comm: &'a C,
        (blocks, factors): (&[Vec<T>], &Tiles<'_, T>),
        b: &mut Tiles<'_, T>,
        (piv, piv_pos): (&[usize], &[usize]),
        others: &RowsByGridRow<'_>,
        (outbox, mut idle): (
            &mut Outbox<'a, T, C>,
            impl FnMut(&mut Tiles<'_, T>) -> Result<(), SolveError>,
        ),
        par: Par,
    ) -> Result<(Vec<T>, Vec<T>), SolveError> {
        let (g, t, nrhs) = (self.g, self.t, self.nrhs);
        let (w, ny) = (piv.len(), b.cols.len());
        // 1. Rows `piv` to the solving grid row.
        // A column of a move at a time: a move's rows are a tile's rows, neighbours in `b`'s
        // array, and a run of `piv` (neighbours in `xs`).
        let mut xs = vec![T::zero(); w * ny];
        let col_pos = b.col_pos.clone();
        let at = |r: usize| piv_pos[r];
        // Sends leave without waiting for their receivers (a message over a few hundred bytes
        // may otherwise wait until its receiver looks for it).
        let read = |j: usize, rows: &[usize], out: &mut [T]| b.gather_rows(j, rows, out);
        exchange_cols_unwaited(comm, &gather_moves(g, nrhs, t, piv), read, outbox)?.apply_cols(
            |j, rows, vals| {
                scatter_runs(&mut xs[col_pos[j] * w..][..w], rows, at, vals);
            },
        );
        // 2. The diagonal block's solve.
        let solver = g
            .coords(comm.rank())
            .filter(|&(x, _, z)| z == 0 && x == g.solver_row(t));
        if solver.is_none() {
            idle(b)?;
        }
        if solver.is_some() && ny > 0 && w > 0 {
            // A block left empty is read where it is in the factors.
            let in_tiles = if blocks[t].is_empty() {
                block_in_tiles(factors, piv, &g.panel(t).collect::<Vec<_>>())?
            } else {
                None
            };
            let block = match in_tiles {
                Some(view) => view,
                None => MatRef::from_slice(&blocks[t], w, w, w)?,
            };
            let xs = MatMut::from_slice(&mut xs, w, ny, w)?;
            diagonal_solve(self.triangles, self.sweep, block, xs, par)?;
        }
        // 3. The solved rows down the grid column; their owners keep them.
        let mut x_blk = vec![T::zero(); w * ny];
        let read = |j: usize, rows: &[usize], out: &mut [T]| {
            gather_runs(&xs[col_pos[j] * w..][..w], rows, at, out);
        };
        exchange_cols_unwaited(comm, &spread_moves(g, nrhs, t, piv, others), read, outbox)?
            .apply_cols(|j, rows, vals| {
                scatter_runs(&mut x_blk[col_pos[j] * w..][..w], rows, at, vals);
                b.set_held_rows(j, rows, vals);
            });
        if solver.is_some() {
            idle(b)?;
        }
        Ok((xs, x_blk))
    }

    /// Steps 4 and 5 when the panel moves: the factor's panel on this rank's rows `mine` of
    /// `others` (`row_pos`: their positions), and their update with the solved rows `x_blk`:
    /// of the run of `mine` holding the rows the next step solves (`next`) at once, of the
    /// others (returned) once this rank has done its part of the next step, so that this
    /// update is not between the next step's solve and the ranks waiting for it.
    ///
    /// # Collective
    #[allow(clippy::too_many_arguments)]
    fn update_with_panel<'t, T: KernelScalar, C: Communicator>(
        &self,
        comm: &C,
        factors: &'t Tiles<'_, T>,
        b: &mut Tiles<'_, T>,
        (others, next): (&RowsByGridRow<'_>, &[usize]),
        (mine, row_pos): (&[usize], &[usize]),
        x_blk: Vec<T>,
        par: Par,
    ) -> Result<Option<LaterUpdate<'t, T>>, SolveError> {
        let w = self.g.panel(self.t).len();
        let (copied, in_tiles) = self.factor_panel(comm, factors, others, mine, row_pos)?;
        if mine.is_empty() || w == 0 {
            return Ok(None);
        }
        let op = match self.transposed() {
            true => self.triangles.transposed_op(),
            false => Op::NoTrans,
        };
        // `mine[now]` holds every row of `next` (all of them at a sweep's last step): going
        // forward its first rows, going back its last.
        let now = match next.is_empty() {
            true => 0..mine.len(),
            false => {
                let held = || {
                    next.iter()
                        .filter(|&&r| mine.get(row_pos[r]) == Some(&r))
                        .map(|&r| row_pos[r])
                };
                match (held().min(), held().max()) {
                    (Some(lo), Some(hi)) => lo..hi + 1,
                    _ => 0..0,
                }
            }
        };
        let update = PanelUpdate {
            panel: (copied, in_tiles),
            transposed: self.transposed(),
            op,
            x: x_blk,
            w,
        };
        update.apply(b, &mine[now.clone()], now.start, par)?;
        let later = LaterUpdate {
            rows: mine.to_vec(),
            parts: [0..now.start, now.end..mine.len()],
            update,
        };
        Ok(later.parts.iter().any(|p| !p.is_empty()).then_some(later))
    }

    /// Whether the factor's panel is used transposed: Cholesky's back substitution takes the
    /// panel's row of `L` as `Lᴴ`'s column, and with `U` stored the forward substitution takes
    /// the panel's row of `U` as `Uᴴ`'s column.
    pub(crate) fn transposed(&self) -> bool {
        transposed(self.triangles, self.sweep)
    }

    /// Whether this step brings the solved rows to the factor's panel and sends back the
    /// products (few right-hand sides: `K` columns per grid column against the panel's `w`)
    /// instead of bringing the panel to the right-hand sides: when that moves fewer words in
    /// total. In a sweep reading row blocks (transposed), a maker that already made products
    /// in this sweep (`made`, by rank) holds partial sums for every row it would make now (the
    /// rows to update only shrink), so its products cost nothing more to send: they join sums
    /// delivered once anyway; a maker's first products are sums it will deliver once for all
    /// its steps left in the sweep, so they count shared among those steps
    /// ([`maker_steps_left`](Self::maker_steps_left)). A sweep reading column panels counts
    /// every product as sent at once: there one rank makes a step's products for every
    /// right-hand side, and with many of them that was slower than the panel's way, which
    /// shares that work among the ranks holding `B` (`1 × 2`, 256 right-hand sides: 0.76–0.94
    /// of the speed). Known to every rank from global facts. (Cholesky's back substitution: its
    /// panel is the row block, on the solving grid row.)
    fn moves_products(
        &self,
        piv: &[usize],
        others: &RowsByGridRow<'_>,
        made: impl Fn(usize) -> bool,
    ) -> bool {
        let left = self.maker_steps_left();
        let back = |maker: usize, words: usize| match (self.transposed(), made(maker)) {
            (false, _) => words,
            (true, true) => 0,
            (true, false) => words.div_ceil(left),
        };
        let (products, panel) = self.crossing_counts(piv, others, back);
        products < panel
    }

    /// The words between ranks of the products' way — the solved rows to the makers
    /// ([`to_makers`](Self::to_makers)) and the products back, as `back(maker, words)` counts
    /// a maker's products sent back at once (the partial sums move no more) — and of the
    /// panel's moves ([`factor_moves`]), counted from sizes without making the lists (every
    /// step asks).
    fn crossing_counts(
        &self,
        piv: &[usize],
        others: &RowsByGridRow<'_>,
        back: impl Fn(usize, usize) -> usize,
    ) -> (usize, usize) {
        let (g, t) = (self.g, self.t);
        let (w, np, xt) = (g.panel(t).len(), piv.len(), g.solver_row(t));
        let cols: Vec<usize> = (0..g.py).map(|y| rhs_cols(g, self.nrhs, y).len()).collect();
        let (mut products, mut panel) = (0, 0);
        if self.transposed() {
            // Rows of `others` by the grid row and grid column holding them (as columns).
            let mut held = vec![0usize; g.px * g.py];
            for x in 0..g.px {
                match g.py {
                    1 => held[x] = others.count(x),
                    _ => others
                        .of(x)
                        .iter()
                        .for_each(|&j| held[x + g.px * g.col_py(j)] += 1),
                }
            }
            for (y, &k) in cols.iter().enumerate().filter(|(_, &k)| k > 0) {
                for to_y in (0..g.py).filter(|&to_y| to_y != y) {
                    if (0..g.px).any(|x| held[x + g.px * to_y] > 0) {
                        products += np * k;
                    }
                }
            }
            for from_y in 0..g.py {
                for x in 0..g.px {
                    let c = held[x + g.px * from_y];
                    for (y, &k) in cols.iter().enumerate() {
                        if c > 0 && k > 0 && (xt, from_y) != (x, y) {
                            products += back(g.rank(xt, from_y, 0), c * k);
                            panel += c * w;
                        }
                    }
                }
            }
        } else {
            let y0 = g.panel_owner(t).0;
            for (y, &k) in cols.iter().enumerate().filter(|(_, &k)| k > 0) {
                for x in (0..g.px).filter(|&x| others.count(x) > 0) {
                    if (xt, y) != (x, y0) {
                        products += np * k;
                    }
                    if y != y0 {
                        products += back(g.rank(x, y0, 0), others.count(x) * k);
                        panel += others.count(x) * w;
                    }
                }
            }
        }
        (products, panel)
    }

    /// The steps of this sweep from this one on at which this step's makers make products
    /// again (those whose panel is on the same grid column, or, for a row block, that the same
    /// grid row solves), this one included.
    fn maker_steps_left(&self) -> usize {
        let g = self.g;
        let period = if self.transposed() { g.px } else { g.py };
        match self.sweep {
            Sweep::Forward => (g.steps() - 1 - self.t) / period + 1,
            Sweep::Backward => self.t / period + 1,
        }
    }

    /// The solved rows' moves to the product makers.
    fn to_makers(&self, piv: &[usize], others: &RowsByGridRow<'_>) -> Vec<Move> {
        let (g, nrhs, t) = (self.g, self.nrhs, self.t);
        match self.transposed() {
            true => x_to_row_block_moves(g, nrhs, t, piv, others.list()),
            false => x_to_panel_moves(g, nrhs, t, piv, others),
        }
    }

    /// The move lists of steps 4 and 5: the panel's, or the solved rows' to it (the products
    /// stay with their makers until their rows are solved: [`Partials`]).
    fn update_moves(
        &self,
        piv: &[usize],
        others: &RowsByGridRow<'_>,
        by_products: bool,
    ) -> Vec<Vec<Move>> {
        let (g, nrhs, t) = (self.g, self.nrhs, self.t);
        if by_products {
            let to_panel = self.to_makers(piv, others);
            vec![to_panel]
        } else {
            vec![factor_moves(g, self.triangles, self.sweep, nrhs, t, others)]
        }
    }

    /// The ranks that make this step's products and their rows of `B`: the panel's grid
    /// column, each rank its rows of `others`; or (the row block) the solving grid row, each
    /// rank its columns of `others`.
    pub(crate) fn product_makers<'o>(&self, others: &'o RowsByGridRow<'_>) -> Makers<'o> {
        let (g, t) = (self.g, self.t);
        if self.transposed() {
            let x0 = g.solver_row(t);
            cols_by_grid_column(g, others.list())
                .into_iter()
                .enumerate()
                .filter(|(_, cols)| !cols.is_empty())
                .map(|(y, cols)| (g.rank(x0, y, 0), Cow::Owned(cols)))
                .collect()
        } else {
            let y0 = g.panel_owner(t).0;
            (0..g.px)
                .map(|x| (g.rank(x, y0, 0), Cow::Borrowed(others.of(x))))
                .filter(|(_, rows)| !rows.is_empty())
                .collect()
        }
    }

    /// Step 4: the factor's panel on this rank's rows `mine` of `others` (`row_pos`: their
    /// positions), `mine.len() × w` column-major, or `w × mine.len()` when
    /// [`transposed`](Self::transposed): a view of this rank's own tiles when it holds all of
    /// it there in one block, a copy otherwise.
    ///
    /// # Collective
    fn factor_panel<'t, T: KernelScalar, C: Communicator>(
        &self,
        comm: &C,
        factors: &'t Tiles<'_, T>,
        others: &RowsByGridRow<'_>,
        mine: &[usize],
        row_pos: &[usize],
    ) -> Result<(Vec<T>, Option<MatRef<'t, T>>), SolveError> {
        let (g, t) = (self.g, self.t);
        let moves = factor_moves(g, self.triangles, self.sweep, self.nrhs, t, others);
        let (w, start) = (g.panel(t).len(), g.panel(t).start);
        let rows = mine.len();
        let me = comm.rank();
        if moves.iter().all(|m| m.to != me || m.from == me) {
            let panel: Vec<usize> = g.panel(t).collect();
            let (r, c) = match self.transposed() {
                true => (panel.as_slice(), mine),
                false => (mine, panel.as_slice()),
            };
            if let Some(view) = block_in_tiles(factors, r, c)? {
                // Nothing of it comes from another rank; the others' moves still run.
                let crossing: Vec<Move> = moves.into_iter().filter(|m| m.from != m.to).collect();
                exchange(comm, &crossing, |i, j| factors.get(i, j))?.apply(|_, _, _: T| {});
                return Ok((Vec::new(), Some(view)));
            }
        }
        let mut panel = vec![T::zero(); rows * w];
        let transposed = self.transposed();
        let mut place = |i: usize, j: usize, v: T| {
            if transposed {
                // Row `i` of the panel, column `j` (one of mine).
                panel[(i - start) + row_pos[j] * w] = v;
            } else {
                panel[row_pos[i] + (j - start) * rows] = v;
            }
        };
        // A rank's move to itself is copied here, straight from its tiles (every rank splits
        // the same list alike: such a move is one rank's alone).
        let (own, crossing): (Vec<Move>, Vec<Move>) =
            moves.into_iter().partition(|m| m.from == m.to);
        let ld = factors.ld();
        for m in own.iter().filter(|m| m.to == comm.rank()) {
            for &j in &m.cols {
                let col = &factors.data[factors.col_pos(j) * ld..][..ld];
                for &i in &m.rows {
                    place(i, j, col[factors.row_pos(i)]);
                }
            }
        }
        exchange(comm, &crossing, |i, j| factors.get(i, j))?.apply(place);
        Ok((panel, None))
    }
}

impl SweepStep<'_> {
    /// Steps 4 and 5 by products (`SweepStep::moves_products`): the solved rows `piv` (read by
    /// `solved` on the solving grid row; `piv_pos` their positions) to the ranks making the
    /// products ([`product_makers`](Self::product_makers); this rank's rows `mine` if it is
    /// one), which multiply their part of the factor's panel by them and add the products to
    /// their partial sums `partial` (`N × K`, stored as its [`Sums`] says), delivered when
    /// their rows are solved ([`Partials`]). The products of the rows `next` (the next step's,
    /// wanted first) are made now; the others are returned, to be made once the next step's
    /// partial sums are on their way.
    ///
    /// # Collective
    #[allow(clippy::too_many_arguments)]
    fn add_products<'a, T: KernelScalar, C: Communicator>(
        &self,
        comm: &'a C,
        (factors, partial): (&Tiles<'_, T>, (&mut [T], Sums)),
        (piv, others, next): (&[usize], &RowsByGridRow<'_>, &[usize]),
        mine: Option<&[usize]>,
        (piv_pos, solved): (&[usize], impl Fn(usize, usize) -> T),
        outbox: &mut Outbox<'a, T, C>,
        par: Par,
    ) -> Result<Option<Deferred<T>>, SolveError> {
        let (w, nrhs) = (piv.len(), self.nrhs);
        let to_panel = self.to_makers(piv, others);
        let mut x_all = vec![T::zero(); w * nrhs];
        // The solving rank goes on without waiting for the makers to take them.
        let read = |j: usize, rows: &[usize], out: &mut [T]| {
            for (o, &i) in out.iter_mut().zip(rows) {
                *o = solved(i, j);
            }
        };
        exchange_cols_unwaited(comm, &to_panel, read, outbox)?
            .apply(|i, j, v| x_all[piv_pos[i] + j * w] = v);
        let Some(rows) = mine else {
            return Ok(None);
        };
        // (The last step of a sweep leaves nothing for later: the next sweep starts afresh.)
        let mut wanted = vec![next.is_empty(); self.g.n];
        for &i in next {
            wanted[i] = true;
        }
        let (now, later): (Vec<usize>, Vec<usize>) = rows.iter().partition(|&&i| wanted[i]);
        self.products_into(factors, partial, &now, &x_all, par)?;
        Ok((!later.is_empty()).then_some(Deferred {
            rows: later,
            x: x_all,
        }))
    }

    /// The products of this rank's `rows` (its rows of `others`, or of the row block's
    /// columns) with the solved rows `x` (`w × K`), added to their partial sums (`N × K`,
    /// stored as `sums` says).
    pub(crate) fn products_into<T: KernelScalar>(
        &self,
        factors: &Tiles<'_, T>,
        (partial, sums): (&mut [T], Sums),
        rows: &[usize],
        x: &[T],
        par: Par,
    ) -> Result<(), SolveError> {
        let (g, t, nrhs) = (self.g, self.t, self.nrhs);
        let (mr, w) = (rows.len(), g.panel(t).len());
        if mr == 0 || w == 0 || nrhs == 0 {
            return Ok(());
        }
        // The factor's part, a run of each of its columns at a time: `mr × w` (my rows of the
        // panel's columns), or `w × mr` (the panel's rows of my columns); a view when it is one
        // block of my tiles.
        let ld = factors.ld();
        let at = |r: usize| factors.row_pos(r);
        let column = |j: usize| &factors.data[factors.col_pos(j) * ld..][..ld];
        let panel: Vec<usize> = g.panel(t).collect();
        let mut part = Vec::new();
        let (a, op) = if self.transposed() {
            let a = match block_in_tiles(factors, &panel, rows)? {
                Some(view) => view,
                None => {
                    part.resize(mr * w, T::zero());
                    for (jj, &j) in rows.iter().enumerate() {
                        gather_runs(column(j), &panel, at, &mut part[jj * w..][..w]);
                    }
                    MatRef::from_slice(&part, w, mr, w)?
                }
            };
            (a, self.triangles.transposed_op())
        } else {
            let a = match block_in_tiles(factors, rows, &panel)? {
                Some(view) => view,
                None => {
                    part.resize(mr * w, T::zero());
                    for (jj, &j) in panel.iter().enumerate() {
                        gather_runs(column(j), rows, at, &mut part[jj * mr..][..mr]);
                    }
                    MatRef::from_slice(&part, mr, w, mr)?
                }
            };
            (a, Op::NoTrans)
        };
        let (n, x) = (g.n, MatRef::from_slice(x, w, nrhs, w)?);
        let one = T::one();
        match (consecutive(rows, |i| i), sums) {
            (Some(r0), Sums::ByColumns) if op == Op::NoTrans => {
                // Added straight into the partial sums (columns `n` apart).
                let dst = MatMut::from_slice(&mut partial[r0..], mr, nrhs, n)?;
                gemm(one, a, op, x, Op::NoTrans, one, dst, par)?;
                return Ok(());
            }
            (Some(r0), Sums::ByRows)
                if op == Op::Trans || (op != Op::NoTrans && !T::IS_COMPLEX) =>
            {
                // The product's transpose `xᵀ·a` (`K × mr`) is the rows' sums where they are.
                let dst = MatMut::from_slice(&mut partial[r0 * nrhs..], nrhs, mr, nrhs)?;
                gemm(one, x, Op::Trans, a, Op::NoTrans, one, dst, par)?;
                return Ok(());
            }
            _ => {}
        }
        for (block, part) in aside_blocks(a, op, nrhs) {
            let (rows, product) = (&rows[block], narrow_product(part, op, x, par)?);
            match sums {
                Sums::ByColumns => product.apply_to_columns(rows, (partial, n), |d, v| *d += v),
                Sums::ByRows => product.add_to_rows(rows, partial),
            }
        }
        Ok(())
    }
}

/// Elements of a product made aside before it is added where its rows' sums are
/// ([`SweepStep::products_into`]): 64 Ki (512 KiB of `f64`), within a core's cache.
const PRODUCT_ASIDE: usize = 1 << 16;

/// How a rank's partial sums of a sweep (`N × K`) are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sums {
    /// Row `r` of right-hand side `j` at `r + j·N`: a product by columns is added where its
    /// rows are, and sums that travel are read in runs of a column (sweeps reading column
    /// panels).
    ByColumns,
    /// At `r·K + j`: a transposed product (the factor's row block times the solved rows,
    /// made as `xᵀ·a`) is added a column of it, one row's sums, at a time, or made where its
    /// rows are (transposed sweeps).
    ByRows,
}

impl Sums {
    /// How a sweep of steps like `step` keeps its sums: by rows when it is transposed (its
    /// products, made as `Xᵀ·A`, are whole rows' sums), by columns otherwise.
    pub(crate) fn of(step: &SweepStep<'_>) -> Sums {
        match step.transposed() {
            true => Sums::ByRows,
            false => Sums::ByColumns,
        }
    }

    /// Where the sum of row `r`, right-hand side `j`, is (`n` rows, `k` right-hand sides).
    pub(crate) fn at(self, r: usize, j: usize, n: usize, k: usize) -> usize {
        match self {
            Sums::ByColumns => r + j * n,
            Sums::ByRows => r * k + j,
        }
    }
}

/// A step's update of this rank's rows `mine` of `B` by the factor's panel
/// ([`SweepStep::update_with_panel`]): `B[mine] −= op(panel)·X`.
struct PanelUpdate<'t, T> {
    /// The panel on all of `mine`: a copy (`mine.len() × w`, or `w × mine.len()` when
    /// transposed), or a view of the tiles.
    panel: (Vec<T>, Option<MatRef<'t, T>>),
    transposed: bool,
    op: Op,
    /// The solved rows, `w × ny`.
    x: Vec<T>,
    w: usize,
}

impl<T: KernelScalar> PanelUpdate<'_, T> {
    /// The update of `rows`, which are `mine[from..from + rows.len()]`.
    fn apply(
        &self,
        b: &mut Tiles<'_, T>,
        rows: &[usize],
        from: usize,
        par: Par,
    ) -> Result<(), KernelError> {
        if rows.is_empty() {
            return Ok(());
        }
        let w = self.w;
        let panel = match &self.panel {
            (_, Some(view)) => *view,
            (copied, None) if self.transposed => {
                MatRef::from_slice(copied, w, copied.len() / w, w)?
            }
            (copied, None) => {
                let all = copied.len() / w;
                MatRef::from_slice(copied, all, w, all)?
            }
        };
        let part = match self.transposed {
            true => panel.submatrix(0, from, w, rows.len()),
            false => panel.submatrix(from, 0, rows.len(), w),
        };
        update_rows(b, rows, part, self.op, &self.x, w, par)
    }
}

/// The part of a step's [`PanelUpdate`] left for later: of the update's rows `rows`, those
/// at the positions `parts` (before and after the run updated at once).
struct LaterUpdate<'t, T> {
    rows: Vec<usize>,
    parts: [Range<usize>; 2],
    update: PanelUpdate<'t, T>,
}

impl<T: KernelScalar> LaterUpdate<'_, T> {
    /// The rest of `later`'s update, if there is one.
    fn apply_any(later: Option<Self>, b: &mut Tiles<'_, T>, par: Par) -> Result<(), SolveError> {
        let Some(later) = later else {
            return Ok(());
        };
        for part in later.parts {
            let rows = &later.rows[part.clone()];
            later.update.apply(b, rows, part.start, par)?;
        }
        Ok(())
    }
}

/// A step's products left for later ([`SweepStep::add_products`]): this rank's rows and the
/// step's solved rows.
pub(crate) struct Deferred<T> {
    pub(crate) rows: Vec<usize>,
    pub(crate) x: Vec<T>,
}

/// The block of global `rows × cols` of `tiles` as a view, when they are held here at
/// consecutive local rows and columns (`None` otherwise, or when empty).
pub(crate) fn block_in_tiles<'t, T: KernelScalar>(
    tiles: &'t Tiles<'_, T>,
    rows: &[usize],
    cols: &[usize],
) -> Result<Option<MatRef<'t, T>>, KernelError> {
    let (Some(&r0), Some(&c0)) = (rows.first(), cols.first()) else {
        return Ok(None);
    };
    let (pr, pc) = (tiles.row_pos(r0), tiles.col_pos(c0));
    let consecutive = pr != usize::MAX
        && pc != usize::MAX
        && rows
            .iter()
            .enumerate()
            .all(|(k, &r)| tiles.row_pos(r) == pr + k)
        && cols
            .iter()
            .enumerate()
            .all(|(k, &c)| tiles.col_pos(c) == pc + k);
    if !consecutive {
        return Ok(None);
    }
    let ld = tiles.ld();
    Ok(Some(MatRef::from_slice(
        &tiles.data[pr + pc * ld..],
        rows.len(),
        cols.len(),
        ld,
    )?))
}

/// `B[mine] −= op(panel)·X` (`X` is `w × ny`).
fn update_rows<T: KernelScalar>(
    b: &mut Tiles<'_, T>,
    mine: &[usize],
    panel: MatRef<'_, T>,
    op: Op,
    x_blk: &[T],
    w: usize,
    par: Par,
) -> Result<(), KernelError> {
    let (mr, ny, ld) = (mine.len(), b.cols.len(), b.ld());
    let x = MatRef::from_slice(x_blk, w, ny, w)?;
    match consecutive(mine, |r| b.row_pos(r)) {
        Some(lr0) if op == Op::NoTrans => {
            // Subtracted where the rows are.
            let rows = MatMut::from_slice(&mut b.data[lr0..], mr, ny, ld)?;
            return gemm(-T::one(), panel, op, x, Op::NoTrans, T::one(), rows, par);
        }
        _ => {}
    }
    let local: Vec<usize> = mine.iter().map(|&r| b.row_pos(r)).collect();
    let data = &mut b.data[..];
    for (block, part) in aside_blocks(panel, op, ny) {
        let product = narrow_product(part, op, x, par)?;
        product.apply_to_columns(&local[block], (&mut *data, ld), |d, v| *d -= v);
    }
    Ok(())
}

/// The rows of the product `op(a)·X` with `k` columns (`a`'s rows, or its columns when `op`
/// transposes it) in blocks whose product made aside fits [`PRODUCT_ASIDE`] (with many
/// right-hand sides one product of all the rows was megabytes, fresh pages each step), each
/// with its part of `a`.
fn aside_blocks<T: KernelScalar>(
    a: MatRef<'_, T>,
    op: Op,
    k: usize,
) -> impl Iterator<Item = (Range<usize>, MatRef<'_, T>)> {
    let (m, w) = match op {
        Op::NoTrans => a.shape(),
        _ => (a.ncols(), a.nrows()),
    };
    let block = (PRODUCT_ASIDE / k.max(1)).max(1);
    (0..m).step_by(block).map(move |r0| {
        let r1 = (r0 + block).min(m);
        let part = match op {
            Op::NoTrans => a.submatrix(r0, 0, r1 - r0, w),
            _ => a.submatrix(0, r0, w, r1 - r0),
        };
        (r0..r1, part)
    })
}

/// `op(a)·x` (`op(a)` is `m × w`, `x` is `w × K`), read with [`Narrow::for_each`].
///
/// A transposed `a` (stored `w × m`: each of its columns is a row of the product) is
/// multiplied the wide way, `H = op(x)·a` (`K × m`, with `x` transposed or adjoint as `a` is),
/// and read transposed: with few right-hand sides the narrow product with a transposed operand
/// ran at half the speed of the wide one (`4096 × 64 · 64 × 16`, one core of a Zen 5: 28
/// against 44–49 GFLOP/s).
fn narrow_product<T: KernelScalar>(
    a: MatRef<'_, T>,
    op: Op,
    x: MatRef<'_, T>,
    par: Par,
) -> Result<Narrow<T>, KernelError> {
    let k = x.ncols();
    let m = if op == Op::NoTrans {
        a.nrows()
    } else {
        a.ncols()
    };
    let mut data = vec![T::zero(); m * k];
    if op == Op::NoTrans {
        let dst = MatMut::from_slice(&mut data, m, k, m.max(1))?;
        gemm(T::one(), a, op, x, Op::NoTrans, T::zero(), dst, par)?;
    } else {
        let dst = MatMut::from_slice(&mut data, k, m, k.max(1))?;
        gemm(T::one(), x, op, a, Op::NoTrans, T::zero(), dst, par)?;
    }
    Ok(Narrow { data, m, k, op })
}

/// A product of [`narrow_product`]: `m × K` column-major, or its `K × m` transpose (adjoint
/// for `Op::ConjTrans`) when `op` is not `Op::NoTrans`.
struct Narrow<T> {
    data: Vec<T>,
    m: usize,
    k: usize,
    op: Op,
}

impl<T: KernelScalar> Narrow<T> {
    /// `f(i, j, element (i, j))` for every element of the product, a column at a time (of a
    /// block of 64 rows at a time when it is stored transposed, which then stays in the cache
    /// while its columns are read).
    fn for_each(&self, mut f: impl FnMut(usize, usize, T)) {
        let (m, k) = (self.m, self.k);
        match self.op {
            Op::NoTrans => {
                for (j, column) in self.data.chunks_exact(m.max(1)).enumerate().take(k) {
                    for (i, &v) in column.iter().enumerate() {
                        f(i, j, v);
                    }
                }
            }
            op => {
                for i0 in (0..m).step_by(64) {
                    let rows = &self.data[i0 * k..(i0 + 64).min(m) * k];
                    for j in 0..k {
                        for (i, &v) in rows.iter().skip(j).step_by(k).enumerate() {
                            f(i0 + i, j, if op == Op::ConjTrans { v.conj() } else { v });
                        }
                    }
                }
            }
        }
    }

    /// `f(d, element (i, j))` for each element `d = dst[at[i] + j·ld]` of a column-major
    /// `dst` (sums by columns, [`Sums::ByColumns`], or a rank's tiles): a plain product's
    /// columns a run of consecutive positions at a time (a rank's rows on a grid of several
    /// rows are runs of a tile's height), a transposed one's elements.
    fn apply_to_columns(&self, at: &[usize], (dst, ld): (&mut [T], usize), f: impl Fn(&mut T, T)) {
        if self.op != Op::NoTrans {
            return self.for_each(|i, j, v| f(&mut dst[at[i] + j * ld], v));
        }
        // (first index in the product, first position, length) of each run.
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        for (i, &r) in at.iter().enumerate() {
            match runs.last_mut() {
                Some((_, r0, len)) if *r0 + *len == r => *len += 1,
                _ => runs.push((i, r, 1)),
            }
        }
        let columns = self.data.chunks_exact(self.m.max(1)).take(self.k);
        for (j, column) in columns.enumerate() {
            for &(i0, r0, len) in &runs {
                let out = &mut dst[r0 + j * ld..][..len];
                out.iter_mut()
                    .zip(&column[i0..i0 + len])
                    .for_each(|(d, &v)| f(d, v));
            }
        }
    }

    /// Adds the product to the partial sums `partial` of `rows` stored by rows
    /// ([`Sums::ByRows`]): a transposed product's columns whole, a plain one's elements.
    fn add_to_rows(&self, rows: &[usize], partial: &mut [T]) {
        let k = self.k;
        match self.op {
            Op::NoTrans => self.for_each(|i, j, v| partial[rows[i] * k + j] += v),
            op => {
                for (h, &r) in self.data.chunks_exact(k.max(1)).zip(rows) {
                    let dst = &mut partial[r * k..][..k];
                    if op == Op::ConjTrans {
                        dst.iter_mut().zip(h).for_each(|(d, &v)| *d += v.conj());
                    } else {
                        dst.iter_mut().zip(h).for_each(|(d, &v)| *d += v);
                    }
                }
            }
        }
    }
}

/// `at(list[0])` when `at` maps `list` to consecutive positions (`None` for an empty list).
fn consecutive(list: &[usize], at: impl Fn(usize) -> usize) -> Option<usize> {
    let first = at(*list.first()?);
    list.iter()
        .enumerate()
        .all(|(k, &i)| at(i).checked_sub(first) == Some(k))
        .then_some(first)
}

/// Every rank's counters for [`solve_native`] with `nrhs` right-hand sides on `p` ranks
/// (element size `bytes`): the moves of every step of both sweeps and, for LU, the final
/// permutation.
pub fn solve_costs(
    g: &Geometry,
    triangles: Triangles,
    p: usize,
    pivots: &[Vec<usize>],
    nrhs: usize,
    bytes: usize,
) -> Vec<CommStats> {
    if crate::ring::applies(g, nrhs) {
        return crate::ring::ring_costs(g, triangles, p, pivots, nrhs, bytes);
    }
    let mut lists = Vec::new();
    let (mut partials, mut current) = (Partials::new(g.n), None);
    let mut schedule = Schedule::new(pivots, g.n);
    let nobody = RowsByGridRow::new(g, &[]);
    for (k, (sweep, t)) in schedule.order.clone().into_iter().enumerate() {
        let others = RowsByGridRow::new(g, schedule.others(k));
        let piv = &pivots[t];
        if current != Some(sweep) {
            (partials, current) = (Partials::new(g.n), Some(sweep));
        }
        lists.push(partials.moves(g, nrhs, piv));
        lists.push(gather_moves(g, nrhs, t, piv));
        let step = SweepStep {
            g,
            triangles,
            sweep,
            t,
            nrhs,
        };
        let by_products = step.moves_products(piv, &others, |r| partials.made(r));
        let spread_to = if by_products { &nobody } else { &others };
        lists.push(spread_moves(g, nrhs, t, piv, spread_to));
        lists.extend(step.update_moves(piv, &others, by_products));
        if by_products {
            for (r, rows) in step.product_makers(&others) {
                partials.record(r, &rows);
            }
        }
    }
    lists_costs(g, triangles, p, pivots, nrhs, (lists, bytes))
}

/// Every rank's counters (of `p`, elements of `bytes` bytes) for a solve's move `lists` and,
/// for LU, the final permutation.
pub(crate) fn lists_costs(
    g: &Geometry,
    triangles: Triangles,
    p: usize,
    pivots: &[Vec<usize>],
    nrhs: usize,
    (mut lists, bytes): (Vec<Vec<Move>>, usize),
) -> Vec<CommStats> {
    if triangles == Triangles::Lu {
        let perm: Vec<usize> = pivots.iter().flatten().copied().collect();
        lists.push(permute_moves(g, &perm, |y| rhs_cols(g, nrhs, y)));
    }
    let mut stats = vec![CommStats::default(); p];
    for list in &lists {
        for (r, tr) in Move::transfers(list, p).iter().enumerate() {
            stats[r] = stats[r] + tr.stats(r, bytes);
        }
    }
    stats
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TileGrid;

    #[test]
    fn the_schedule_updates_later_rows_forward_and_earlier_rows_back() {
        let pivots = vec![vec![3, 0], vec![1, 4], vec![2]];
        let mut schedule = Schedule::new(&pivots, 5);
        let order = schedule.order.clone();
        let s: Vec<Vec<usize>> = (0..order.len())
            .map(|k| schedule.others(k).to_vec())
            .collect();
        assert_eq!(
            order,
            [
                (Sweep::Forward, 0),
                (Sweep::Forward, 1),
                (Sweep::Forward, 2),
                (Sweep::Backward, 2),
                (Sweep::Backward, 1),
                (Sweep::Backward, 0),
            ]
        );
        assert_eq!(s[0], [1, 2, 4]);
        assert_eq!(s[1], [2]);
        assert!(s[2].is_empty());
        assert_eq!(s[3], [3, 0, 1, 4]);
        assert_eq!(s[4], [3, 0]);
        assert!(s[5].is_empty());
    }

    #[test]
    fn columns_are_split_by_grid_column_in_their_order() {
        // Tiles of 4 on 3 grid columns: tile b on grid column b mod 3.
        let g = Geometry::new(40, 4, TileGrid { px: 1, py: 3, c: 1 });
        let others = [5, 6, 7, 8, 9, 30, 31, 13, 12, 1, 2, 25, 39];
        assert_eq!(
            cols_by_grid_column(&g, &others),
            [
                vec![13, 12, 1, 2, 25, 39],
                vec![5, 6, 7, 30, 31],
                vec![8, 9]
            ]
        );
        assert_eq!(cols_by_grid_column(&g, &[]), vec![Vec::<usize>::new(); 3]);
    }

    #[test]
    fn few_right_hand_sides_move_products_and_many_move_the_panel() {
        let g = Geometry::new(64, 8, TileGrid { px: 2, py: 2, c: 1 });
        // Step 1: the panel on grid column 1, one to four right-hand sides on grid column 0.
        let piv: Vec<usize> = (8..16).collect();
        let others: Vec<usize> = (16..64).collect();
        let others = RowsByGridRow::new(&g, &others);
        // No maker has made products yet.
        let no = |_| false;
        let step = |triangles, sweep, nrhs, t| SweepStep {
            g: &g,
            triangles,
            sweep,
            t,
            nrhs,
        };
        let decide =
            |nrhs| step(Triangles::Lu, Sweep::Forward, nrhs, 1).moves_products(&piv, &others, no);
        assert!(decide(1) && decide(4));
        assert!(!decide(32));
        // Cholesky's back substitution (its panel the row block on the solving grid row) too.
        let back = |nrhs| {
            step(Triangles::Cholesky, Sweep::Backward, nrhs, 1).moves_products(&piv, &others, no)
        };
        assert!(back(1) && !back(32));
        // A row block's maker that already made products in this sweep sends no more back:
        // with 16 right-hand sides the step moves products then (the solved rows only), not
        // before; a column panel's products all count (one maker makes them for every
        // right-hand side).
        let back16 = step(Triangles::Cholesky, Sweep::Backward, 16, 1);
        assert!(!back16.moves_products(&piv, &others, no));
        assert!(back16.moves_products(&piv, &others, |_| true));
        let forward16 = step(Triangles::Lu, Sweep::Forward, 16, 1);
        assert!(!forward16.moves_products(&piv, &others, |_| true));
        // One right-hand side: the 8 solved rows to grid column 1 of both grid rows, the 24
        // products of each grid row back to grid column 0; against 24 × 8 panel rows per grid
        // row.
        assert_eq!(
            crossing_words(&x_to_panel_moves(&g, 1, 1, &piv, &others)),
            16
        );
        assert_eq!(crossing_words(&product_moves(&g, 1, 1, others.list())), 48);
        assert_eq!(crossing_words(&panel_moves(&g, 1, 1, &others)), 48 * 8);
        // Step 0: panel and right-hand sides on grid column 0, so the panel moves nothing.
        let (piv0, others0): (Vec<usize>, Vec<usize>) = ((0..8).collect(), (8..64).collect());
        let first = step(Triangles::Lu, Sweep::Forward, 1, 0);
        assert!(!first.moves_products(&piv0, &RowsByGridRow::new(&g, &others0), no));
    }

    // The products sent back at once, as the solves did before their partial sums: the
    // reference `SweepStep::crossing_counts` is checked against.

    /// The products `F[others, panel]·X` of each grid row, made on the panel's grid column, to
    /// the ranks of the same grid row holding right-hand sides.
    fn product_moves(g: &Geometry, nrhs: usize, t: usize, others: &[usize]) -> Vec<Move> {
        let (y0, _) = g.panel_owner(t);
        let mut out = Vec::new();
        for x in 0..g.px {
            let rows = g.rows_of(others, x);
            if rows.is_empty() {
                continue;
            }
            for y in 0..g.py {
                let cols = rhs_cols(g, nrhs, y);
                if !cols.is_empty() {
                    out.push(Move {
                        from: g.rank(x, y0, 0),
                        to: g.rank(x, y, 0),
                        rows: rows.clone(),
                        cols,
                    });
                }
            }
        }
        out
    }

    /// Cholesky's back substitution: the products `(L[panel, j])ᴴ·X` for the columns `j` of `others` each rank of the solving grid row holds,
    /// to the ranks holding rows `j` of `B`.
    fn row_block_product_moves(g: &Geometry, nrhs: usize, t: usize, others: &[usize]) -> Vec<Move> {
        let xt = g.solver_row(t);
        let mut out = Vec::new();
        for (from_y, held) in cols_by_grid_column(g, others).iter().enumerate() {
            for x in 0..g.px {
                let rows = g.rows_of(held, x);
                if rows.is_empty() {
                    continue;
                }
                for y in 0..g.py {
                    let cols = rhs_cols(g, nrhs, y);
                    if !cols.is_empty() {
                        out.push(Move {
                            from: g.rank(xt, from_y, 0),
                            to: g.rank(x, y, 0),
                            rows: rows.clone(),
                            cols,
                        });
                    }
                }
            }
        }
        out
    }

    /// Words of `moves` that cross a rank boundary.
    fn crossing_words(moves: &[Move]) -> usize {
        moves
            .iter()
            .filter(|m| m.from != m.to)
            .map(|m| m.rows.len() * m.cols.len())
            .sum()
    }

    /// The solved rows' moves to the panel and the products' back, were they sent at once.
    fn product_lists(
        step: &SweepStep<'_>,
        piv: &[usize],
        others: &RowsByGridRow<'_>,
    ) -> [Vec<Move>; 2] {
        let (g, nrhs, t) = (step.g, step.nrhs, step.t);
        if step.transposed() {
            [
                x_to_row_block_moves(g, nrhs, t, piv, others.list()),
                row_block_product_moves(g, nrhs, t, others.list()),
            ]
        } else {
            [
                x_to_panel_moves(g, nrhs, t, piv, others),
                product_moves(g, nrhs, t, others.list()),
            ]
        }
    }

    #[test]
    fn the_words_counted_from_sizes_are_the_lists_words() {
        for (n, v, px, py, nrhs) in [
            (64, 8, 2, 2, 3),
            (50, 4, 3, 2, 9),
            (37, 5, 1, 3, 1),
            (41, 4, 2, 3, 20),
        ] {
            let g = Geometry::new(n, v, TileGrid { px, py, c: 1 });
            let pivots: Vec<Vec<usize>> = (0..g.steps()).map(|t| g.panel(t).collect()).collect();
            for triangles in [Triangles::Lu, Triangles::Cholesky, Triangles::CholeskyUpper] {
                let mut schedule = Schedule::new(&pivots, n);
                for (k, (sweep, t)) in schedule.order.clone().into_iter().enumerate() {
                    let others = RowsByGridRow::new(&g, schedule.others(k));
                    let step = SweepStep {
                        g: &g,
                        triangles,
                        sweep,
                        t,
                        nrhs,
                    };
                    let piv = &pivots[t];
                    let lists: usize = product_lists(&step, piv, &others)
                        .iter()
                        .map(|m| crossing_words(m))
                        .sum();
                    let panel = factor_moves(&g, triangles, sweep, nrhs, t, &others);
                    assert_eq!(
                        step.crossing_counts(piv, &others, |_, words| words),
                        (lists, crossing_words(&panel)),
                        "{n} {v} {px}x{py} {nrhs} {triangles:?} {sweep:?} {t}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_step_that_moves_products_sends_the_solved_rows_only_to_their_owners() {
        // 2 × 1, 16 rows in 4-row tiles (grid row 0: rows 0–3 and 8–11), one right-hand side,
        // Cholesky. Forward (the panel is every rank's own): each step's 4 solved rows to the
        // other grid row while it holds rows to update (steps 0 to 2: rank 0 sends 8, rank 1
        // 4). Back (by products, made on the solving rank): no solved row leaves (its owner
        // solved it); the partial sums of rows 8–11, 4–7 and 0–3 go to their owners from the
        // other rank (rank 1 sends 8, rank 0 4). Sending the solved rows to the holders of
        // the rows to update as well would add 4 words to rank 0 and 8 to rank 1.
        let g = Geometry::new(16, 4, TileGrid { px: 2, py: 1, c: 1 });
        let pivots: Vec<Vec<usize>> = (0..4).map(|t| g.panel(t).collect()).collect();
        let costs = solve_costs(&g, Triangles::Cholesky, 2, &pivots, 1, 8);
        let sent: Vec<u64> = costs.iter().map(|c| c.words_sent).collect();
        assert_eq!(sent, [12, 12]);
    }

    #[test]
    fn products_made_aside_go_a_block_of_rows_at_a_time() {
        // 10 rows of a 10 × 3 factor part (or its 3 × 10 transpose) with so many right-hand
        // sides that 4 rows' products fill the room.
        let data: Vec<f64> = (0..30).map(f64::from).collect();
        let k = PRODUCT_ASIDE / 4;
        for op in [Op::NoTrans, Op::Trans] {
            let a = match op {
                Op::NoTrans => MatRef::from_slice(&data, 10, 3, 10).unwrap(),
                _ => MatRef::from_slice(&data, 3, 10, 3).unwrap(),
            };
            let blocks: Vec<_> = aside_blocks(a, op, k).collect();
            let ranges: Vec<Range<usize>> = blocks.iter().map(|(r, _)| r.clone()).collect();
            assert_eq!(ranges, [0..4, 4..8, 8..10]);
            for (rows, part) in &blocks {
                for (i, r) in rows.clone().enumerate() {
                    for j in 0..3 {
                        match op {
                            Op::NoTrans => assert_eq!(part.get(i, j), a.get(r, j)),
                            _ => assert_eq!(part.get(j, i), a.get(j, r)),
                        }
                    }
                }
            }
        }
        assert_eq!(
            aside_blocks(
                MatRef::<f64>::from_slice(&[], 0, 3, 1).unwrap(),
                Op::NoTrans,
                8
            )
            .count(),
            0
        );
    }

    #[test]
    fn permute_moves_carry_every_row_once() {
        let g = Geometry::new(11, 2, TileGrid { px: 3, py: 2, c: 1 });
        let perm = [5, 2, 9, 0, 10, 1, 3, 8, 4, 7, 6];
        let moves = permute_moves(&g, &perm, |y| rhs_cols(&g, 3, y));
        let mut seen = vec![0; 11];
        for m in &moves {
            for &j in &m.rows {
                seen[j] += m.cols.len();
                assert_eq!(g.coords(m.from).unwrap().0, g.row_px(perm[j]));
                assert_eq!(g.coords(m.to).unwrap().0, g.row_px(j));
            }
        }
        assert_eq!(seen, vec![3; 11]);
    }
}
