//! LU's hooks on the shared step loop ([`redblue_pipeline::run`]): COnfLUX (digest §1.4) with
//! tournament pivoting and row masking, and the same loop on one layer with partial pivoting
//! as the 2D baseline. The pipeline runs steps 1, 3, 4, 6, 7a and 9 (see its `run` module);
//! LU adds:
//!
//! 2. the `Px` panel ranks choose `w` pivot rows (tournament or partial pivoting) and factor
//!    `A00 = L00·U00` on them ([`crate::pivot`]);
//! 5. the pivot rows right of the panel are summed over the layers into a 1D distribution of
//!    their columns over the `Px·c` ranks of each grid column ([`u01_reduce_moves`]) and
//!    solved there, `U01 = L00⁻¹·A01`; 7b. every rank receives the `U01` columns of its tiles,
//!    its layer's share of the pivot rows ([`u01_spread_moves`]), and keeps them in its tiles;
//! 8. the update of the layer's copy, `A11 −= L10[:, share]·U01[share, :]`, on the active rows.
//!
//! The factors end spread over the layers, in unpermuted rows (row `r` holds `L` left of its
//! pivot column and `U` from it on); [`redblue_pipeline::gather::gather_moves`] brings the other
//! layers' shares to layer 0 in one exchange when they are used.
//!
//! On grids whose grid rows are one rank (`Py·c = 1`) the panel is solved in place, and the
//! update of the columns right of the next panel waits a step and is then done for
//! [`DEFER_DEPTH`] panels at once (`k = 2v`: the trailing block streams through memory half as
//! often); a deferred update reaches the next pivot rows before their `U01` is formed. On
//! one-layer grids of one process row (`1 × Py × 1`, every rank holding every row) the same:
//! the waiting `L10` is kept aside with its rows' indices, and the ranks take turns — the next
//! panel's owner waits while the others do two steps' update at once. (Those are the grids of
//! [`TileGrid::update_waits`](redblue_pipeline::TileGrid::update_waits), which the planner's
//! preferred tile width follows.)

use crate::pivot::{none, partial, tournament, Below, Chosen};
use crate::LuError;
use redblue_comm::Communicator;
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::{Diag, Op, RealScalar, Side, Uplo};
use redblue_dist::exchange::{exchange_cols_into, Move};
use redblue_kernels::{gemm, max_abs_finite as max_abs, trsm, KernelScalar, MatMut, MatRef, Par};
use redblue_pipeline::steps::layer_share;
use redblue_pipeline::{
    mark_positions, part, run, Diagonal, Geometry, Panel, PanelBlock, Run, RunOptions, Scan, State,
    Step, Stopped, Storage, TileAlgorithm, Tiles,
};
use std::ops::Range;

/// Panels whose update right of the next panel is done at once on grids with one-rank grid
/// rows (`k = DEFER_DEPTH·v` for the trailing block).
pub(crate) const DEFER_DEPTH: usize = 2;

/// How a step's pivots are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Pivoting {
    /// Tournament pivoting (COnfLUX): `⌈log₂ Px⌉` playoffs of `w × w` blocks per step.
    Tournament,
    /// Partial pivoting (ScaLAPACK): one search over the `Px` panel ranks per column.
    Partial,
    /// None (seed 001's 2.5D LU without pivoting): the panel's own rows, the diagonal block
    /// factored where it lies; a zero pivot stops the factorisation at its column.
    None,
}

/// Factors the matrix whose layer-0 local array this rank holds (`local`, empty off layer 0)
/// on `comm` (whose first `g.ranks()` ranks form the grid): the run's tiles, pivots and
/// diagonal blocks, `max |A|` and `max |U|`.
///
/// # Collective
/// # Errors
/// The same on every rank: [`LuError::NotFinite`] before any work, [`LuError::Singular`] at the
/// first exactly zero pivot; a communication or kernel failure.
pub(crate) fn factor<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    pivoting: Pivoting,
    local: Storage<'static, T>,
    options: RunOptions,
) -> Result<Run<'static, T>, LuError> {
    let mut hooks = Lu {
        pivoting,
        max_u: 0.0,
        pending: None,
        now: None,
        stacked: None,
        below: None,
    };
    let done = run(comm, g, local, &mut hooks, options)?;
    match done.stopped {
        Some(why) => {
            done.tiles.data.recycle();
            Err(match why {
                Stopped::NotFinite => LuError::NotFinite,
                Stopped::Column(column) => LuError::Singular { column },
            })
        }
        None => Ok(done),
    }
}

/// An update waiting on a grid with the panel in place: the columns right of the next panel
/// have not had the last `panels` steps' update yet.
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
    /// On a grid of one process row (panels not in place): the waiting panel's `L10` on the
    /// active rows, `rows.len() × k` column-major, and those rows (global, in the order they
    /// had); empty with the panel in place, where `L10` stays in the tiles.
    l10: Vec<T>,
    rows: Vec<usize>,
}

/// The `U` side of a step's update on one rank: `U01` of its columns (`my_cols`), its layer's
/// share of the pivot rows — column `from + jj` of `u` (leading dimension `ld`) holds column
/// `jj`, the step's rows at `off..off + share` under the waiting panels' (rows `0..off`).
pub(crate) struct URight<T> {
    u: Vec<T>,
    ld: usize,
    from: usize,
    off: usize,
}

/// LU's hooks: the pivoting, the waiting update, and the largest `|U|`.
struct Lu<T> {
    pivoting: Pivoting,
    max_u: f64,
    pending: Option<Waiting<T>>,
    /// During a step with the panel in place: the local column of the first panel whose
    /// update is being done, and how many panels that is.
    now: Option<(usize, usize)>,
    /// During a step on a grid of one process row that does a waiting update: the waiting
    /// panel's `L10` and this step's side by side on my active rows (`my_rows × k`).
    stacked: Option<Vec<T>>,
    /// `L10` of the last block chosen here, as the panel's `getrf` left it (one participant
    /// held the whole panel): its solve then copies it instead of solving again.
    below: Option<Below<T>>,
}

impl<T: KernelScalar> TileAlgorithm<T> for Lu<T> {
    type Error = LuError;
    type Model = Pivoting;
    type Right = URight<T>;

    fn model(&self) -> Pivoting {
        self.pivoting
    }

    fn scan(&self, tiles: &Tiles<'_, T>) -> Scan {
        let (max, finite) = max_abs(&tiles.data);
        Scan {
            max,
            finite,
            bad_column: None,
        }
    }

    fn factor_diagonal<C: Communicator>(
        &mut self,
        comm: &C,
        g: &Geometry,
        panel: PanelBlock<'_, T>,
    ) -> Result<Option<Diagonal<T>>, LuError> {
        let (y0, z0) = g.panel_owner(panel.t);
        let rank_of = |x: usize| g.rank(x, y0, z0);
        let (x, w, ld) = (panel.x, panel.w, panel.ld);
        let chosen: Option<Chosen<T>> = match self.pivoting {
            Pivoting::Tournament => tournament(
                comm,
                x,
                &panel.avail,
                rank_of,
                panel.rows,
                panel.vals,
                w,
                ld,
                panel.par,
            )?,
            Pivoting::None => none(panel.t, g, x, panel.rows, panel.vals, w, ld),
            Pivoting::Partial => {
                let holder = |r| g.row_px(r);
                partial(
                    comm, x, g.px, rank_of, holder, panel.rows, panel.vals, w, ld, panel.par,
                )?
            }
        };
        if let Some(old) = self.below.take() {
            recycle(old.l);
        }
        Ok(chosen.map(|ch| {
            self.below = ch.below;
            Diagonal {
                rows: ch.rows,
                block: ch.a00,
                failed: ch.first_zero,
            }
        }))
    }

    fn solve_panel(
        &mut self,
        a00: MatRef<'_, T>,
        rows: &[usize],
        mut l10: MatMut<'_, T>,
        par: Par,
    ) -> Result<(), LuError> {
        // L10 = A10·U00⁻¹, or as the panel's getrf found it when it factored these rows.
        if let Some(below) = self.below.take() {
            let found = copy_below(&below, rows, &mut l10);
            recycle(below.l);
            if found {
                return Ok(());
            }
        }
        let (side, uplo, diag) = (Side::Right, Uplo::Upper, Diag::NonUnit);
        Ok(trsm(
            side,
            uplo,
            Op::NoTrans,
            diag,
            T::one(),
            a00,
            l10,
            par,
        )?)
    }

    fn right_side<C: Communicator>(
        &mut self,
        comm: &C,
        st: &mut State<'_, T>,
        step: &Step,
        a00: &[T],
        _panel: &Panel<T>,
    ) -> Result<URight<T>, LuError> {
        let w = step.panel.len();
        for i in 0..w {
            for k in i..w {
                self.max_u = self.max_u.max(a00[i + k * w].abs().to_f64());
            }
        }
        self.pivot_rows_catch_up(st, step)?;
        if st.g.px == 1 && st.g.c == 1 {
            return self.u01_where_it_is(st, step, a00);
        }
        let (u01_cols, u01) = self.u01_pieces(comm, st, step, a00)?;
        let right = self.spread_u01(comm, st, step, &u01_cols, &u01)?;
        recycle(u01);
        Ok(right)
    }

    fn update(
        &mut self,
        st: &mut State<'_, T>,
        step: &Step,
        panel: &Panel<T>,
        right: &mut URight<T>,
        cols: Range<usize>,
    ) -> Result<(), LuError> {
        if st.in_place {
            return self.update_in_place(st, step, right, cols);
        }
        self.update_rows(st, step, panel, right, cols)
    }

    fn end_step(&mut self, _st: &State<'_, T>, _step: &Step, right: URight<T>) {
        self.now = None;
        if let Some(stacked) = self.stacked.take() {
            recycle(stacked);
        }
        recycle(right.u);
    }

    fn block_part(&self) -> Option<Uplo> {
        None
    }

    fn final_before(&self, st: &State<'_, T>, step: &Step) -> usize {
        // The waiting panels' L10 stays live, following the swaps, while their update waits.
        match &self.pending {
            Some(wait) if st.in_place => st.tiles.cols[wait.first_col],
            _ => step.panel.end,
        }
    }

    fn max_factor(&self) -> f64 {
        self.max_u
    }
}

impl<T: KernelScalar> Lu<T> {
    /// A waiting update reaches my new pivot rows before their `U01` is formed.
    fn pivot_rows_catch_up(&self, st: &mut State<'_, T>, step: &Step) -> Result<(), LuError> {
        let Some(wait) = &self.pending else {
            return Ok(());
        };
        let (k, ld) = (st.a_start - step.piv_start, st.tiles.ld());
        let first = step.first_col;
        if k == 0 || first >= st.tiles.cols.len() {
            return Ok(());
        }
        let cols = step.my_cols.len();
        let piv_rows = (!wait.rows.is_empty())
            .then(|| rows_of_waiting(wait, &st.tiles.rows[step.piv_start..st.a_start], st.g.m));
        let (left, right) = st.tiles.data.split_at_mut(first * ld);
        let l10 = match &piv_rows {
            Some(rows) => MatRef::from_slice(rows, k, wait.k, k)?,
            None => {
                MatRef::from_slice(&left[wait.first_col * ld + step.piv_start..], k, wait.k, ld)?
            }
        };
        gemm(
            T::zero() - T::one(),
            l10,
            Op::NoTrans,
            MatRef::from_slice(&wait.u[wait.from * wait.ld..], wait.k, cols, wait.ld)?,
            Op::NoTrans,
            T::one(),
            MatMut::from_slice(&mut right[step.piv_start..], k, cols, ld)?,
            st.par,
        )?;
        if let Some(rows) = piv_rows {
            recycle(rows);
        }
        Ok(())
    }

    /// Steps 5 and 6 for `U01`: my 1D piece's columns, and `U01` on them (`w × columns`),
    /// summed over the layers and solved with `L00`.
    fn u01_pieces<C: Communicator>(
        &mut self,
        comm: &C,
        st: &mut State<'_, T>,
        step: &Step,
        a00: &[T],
    ) -> Result<(Vec<usize>, Vec<T>), LuError> {
        let (g, w) = (st.g, step.panel.len());
        let u01_cols = match st.coords {
            Some((x, y, z)) => u01_piece(&g, step.t, y, x + g.px * z),
            None => Vec::new(),
        };
        let un = u01_cols.len();
        let moves = u01_reduce_moves(&g, step.t, &step.piv);
        let mut u01 = take_buffer(w * un, T::zero());
        u01.fill(T::zero());
        mark_positions(&mut st.pos[0], &step.piv);
        mark_positions(&mut st.pos[1], &u01_cols);
        // What I send are my pivot rows, in pivot order: the local rows piv_start..a_start.
        let (pos_row, pos_col) = (&st.pos[0], &st.pos[1]);
        let (tiles, piv_start, a_start) = (&st.tiles, step.piv_start, st.a_start);
        let (ld, col_pos) = (tiles.ld(), &tiles.col_pos);
        exchange_cols_into(
            comm,
            &moves,
            |j, rows, out| {
                debug_assert_eq!(rows.len(), a_start - piv_start);
                let at = col_pos[j] * ld + piv_start;
                out.copy_from_slice(&tiles.data[at..at + rows.len()]);
            },
            |j, rows, vals| {
                let col = &mut u01[pos_col[j] * w..(pos_col[j] + 1) * w];
                for (&i, &v) in rows.iter().zip(vals) {
                    col[pos_row[i]] += v;
                }
            },
        )?;
        if un > 0 {
            solve_u01(a00, MatMut::from_slice(&mut u01, w, un, w.max(1))?, st.par)?;
            self.max_u = self.max_u.max(max_abs(&u01[..w * un]).0);
        }
        Ok((u01_cols, u01))
    }

    /// Steps 5 and 7b on one grid row of one layer (`1 × Py × 1`): every rank holds its
    /// columns' pivot rows whole and is their only holder, so the reduction and the spread
    /// would move nothing between ranks. `U01` is solved in the tiles' pivot rows, where it
    /// stays, and copied once into the update's buffer (as [`Lu::spread_u01`] lays it out).
    fn u01_where_it_is(
        &mut self,
        st: &mut State<'_, T>,
        step: &Step,
        a00: &[T],
    ) -> Result<URight<T>, LuError> {
        let (g, w, nc) = (st.g, step.panel.len(), step.my_cols.len());
        debug_assert!(g.px == 1 && g.c == 1 && step.share == (0..w));
        let (mut u, ld, from, off) = match self.pending.as_mut() {
            Some(wait) => (std::mem::take(&mut wait.u), wait.ld, wait.from, wait.k),
            None => {
                let ld = DEFER_DEPTH * g.v;
                (take_buffer(ld * nc, T::zero()), ld, 0, 0)
            }
        };
        let (tl, first, piv_start) = (st.tiles.ld(), step.first_col, step.piv_start);
        if nc > 0 && w > 0 {
            debug_assert_eq!(st.a_start - piv_start, w);
            // My pivot rows, in pivot order, are the local rows piv_start..a_start.
            let tiles = &mut st.tiles.data[first * tl..];
            solve_u01(
                a00,
                MatMut::from_slice(&mut tiles[piv_start..], w, nc, tl)?,
                st.par,
            )?;
            let cols = tiles
                .chunks_exact(tl)
                .zip(u[from * ld..].chunks_exact_mut(ld));
            for (col, u_col) in cols.take(nc) {
                let rows = &col[piv_start..piv_start + w];
                u_col[off..off + w].copy_from_slice(rows);
                self.max_u = self.max_u.max(max_abs(rows).0);
            }
        }
        Ok(URight { u, ld, from, off })
    }

    /// Step 7b: my tiles' columns of `U01`, my layer's share of the pivot rows, which I keep
    /// in my tiles' pivot rows. With the panel in place the buffer has room for
    /// `DEFER_DEPTH` panels' `U01` per column, and this step's goes under the waiting panels'.
    fn spread_u01<C: Communicator>(
        &mut self,
        comm: &C,
        st: &mut State<'_, T>,
        step: &Step,
        u01_cols: &[usize],
        u01: &[T],
    ) -> Result<URight<T>, LuError> {
        let (g, w, nc) = (st.g, step.panel.len(), step.my_cols.len());
        let share = step.share.clone();
        let ks = share.len();
        let defer = g.grid().update_waits();
        let (mut u, ld, from, off) = match self.pending.as_mut() {
            Some(wait) if defer => (std::mem::take(&mut wait.u), wait.ld, wait.from, wait.k),
            _ if defer => {
                let ld = DEFER_DEPTH * g.v;
                (take_buffer(ld * nc, T::zero()), ld, 0, 0)
            }
            _ => (take_buffer(ks * nc, T::zero()), ks, 0, 0),
        };
        let piv_share = &step.piv[share.clone()];
        mark_positions(&mut st.pos[0], u01_cols);
        mark_positions(&mut st.pos[1], &step.piv);
        mark_positions(&mut st.pos[2], &step.my_cols);
        let [pos_piece, pos_piv, pos_mine] = &st.pos;
        // Every move carries a layer's share of the pivot rows: neighbours in u01's columns
        // and in u's.
        exchange_cols_into(
            comm,
            &u01_spread_moves(&g, step.t, &step.piv),
            |j, rows, out| {
                let at = pos_piece[j] * w + pos_piv[rows[0]];
                out.copy_from_slice(&u01[at..at + rows.len()]);
            },
            |j, rows, vals| {
                debug_assert_eq!(rows, piv_share);
                let at = (from + pos_mine[j]) * ld + off;
                u[at..at + ks].copy_from_slice(vals);
            },
        )?;
        // I keep my share of my pivot rows of U01 where my partial sums of them were.
        if let Some((x, _, _)) = st.coords {
            let mine: Vec<(usize, usize)> = piv_share
                .iter()
                .enumerate()
                .filter(|&(_, &r)| g.row_px(r) == x)
                .map(|(k, &r)| (k, st.tiles.row_pos(r)))
                .collect();
            if !mine.is_empty() {
                let tl = st.tiles.ld();
                let cols = st.tiles.data[step.first_col * tl..].chunks_exact_mut(tl);
                for (col, u_col) in cols.zip(u[from * ld..].chunks_exact(ld.max(1))) {
                    for &(k, lr) in &mine {
                        col[lr] = u_col[off + k];
                    }
                }
            }
        }
        Ok(URight { u, ld, from, off })
    }

    /// Step 8 with the panel in place (every rank holds every column): the next panel's
    /// columns now, the others when `DEFER_DEPTH` panels' updates can be done at once.
    fn update_in_place(
        &mut self,
        st: &mut State<'_, T>,
        step: &Step,
        right: &mut URight<T>,
        cols: Range<usize>,
    ) -> Result<(), LuError> {
        let (mr, nc, ld) = (step.my_rows.len(), step.my_cols.len(), st.tiles.ld());
        let kb = right.off + step.share.len();
        // The waiting panels and this one: their L10 from `first_col`, `kb` columns.
        let (first_col, panels) = *self.now.get_or_insert_with(|| match self.pending.take() {
            Some(wait) => (wait.first_col, wait.panels + 1),
            None => (
                st.tiles.col_pos.get(step.panel.start).copied().unwrap_or(0),
                1,
            ),
        });
        let is_rest = cols.start == step.next && cols.end == nc && step.next > 0;
        if is_rest && panels < DEFER_DEPTH && nc > step.next {
            self.pending = Some(Waiting {
                first_col,
                panels,
                u: std::mem::take(&mut right.u),
                ld: right.ld,
                k: kb,
                from: right.from + step.next,
                l10: Vec::new(),
                rows: Vec::new(),
            });
            return Ok(());
        }
        if mr == 0 || cols.is_empty() || kb == 0 {
            return Ok(());
        }
        let (left, right_cols) = st.tiles.data.split_at_mut(step.first_col * ld);
        let l = MatRef::from_slice(&left[first_col * ld + st.a_start..], mr, kb, ld)?;
        update_product(l, right, right_cols, ld, st.a_start, cols, st.par)?;
        Ok(())
    }
}

impl<T: KernelScalar> Lu<T> {
    /// Step 8 with `L10` in the panel column's tiles or in [`Panel::share`]. On a one-layer
    /// grid of one process row, as [`Lu::update_in_place`]: the next panel's columns now and
    /// the others a step later with both steps' `L10` side by side (`k = 2v`); the waiting
    /// `L10` is kept with its rows' global indices, so the row moves between need not follow
    /// it.
    fn update_rows(
        &mut self,
        st: &mut State<'_, T>,
        step: &Step,
        panel: &Panel<T>,
        right: &mut URight<T>,
        cols: Range<usize>,
    ) -> Result<(), LuError> {
        let (mr, nc) = (step.my_rows.len(), step.my_cols.len());
        let (m, a_start, par) = (st.g.m, st.a_start, st.par);
        let kb = right.off + step.share.len();
        if self.now.is_none() {
            self.now = Some((0, 1));
            if let Some(wait) = self.pending.take() {
                let (l10, _, _) = st.update_operands(step, panel)?;
                let mut stacked = rows_of_waiting(&wait, &step.my_rows, m);
                stacked.resize(mr * kb, T::zero());
                for jj in 0..l10.ncols() {
                    let at = (wait.k + jj) * mr;
                    stacked[at..at + mr].copy_from_slice(&l10.col(jj)[..mr]);
                }
                recycle(wait.l10);
                self.stacked = Some(stacked);
            }
        }
        // A rank waits when it holds the next panel's columns: the ranks of a grid row take
        // turns, one doing both steps' update while the next panel's owner goes ahead (the
        // panel's broadcasts do not wait for their receivers).
        let is_rest = cols.start == step.next && cols.end == nc && step.next > 0;
        if is_rest && self.stacked.is_none() && nc > step.next && st.g.grid().update_waits() {
            let (l10, _, _) = st.update_operands(step, panel)?;
            let mut kept = take_buffer(mr * kb, T::zero());
            for (jj, out) in kept.chunks_exact_mut(mr.max(1)).enumerate().take(kb) {
                out.copy_from_slice(&l10.col(jj)[..mr]);
            }
            self.pending = Some(Waiting {
                first_col: 0,
                panels: 1,
                u: std::mem::take(&mut right.u),
                ld: right.ld,
                k: kb,
                from: right.from + step.next,
                l10: kept,
                rows: step.my_rows.clone(),
            });
            return Ok(());
        }
        if mr == 0 || cols.is_empty() || kb == 0 {
            return Ok(());
        }
        let (l10, tiles_right, ld) = st.update_operands(step, panel)?;
        let l = match &self.stacked {
            Some(stacked) => MatRef::from_slice(stacked, mr, kb, mr)?,
            None => l10,
        };
        update_product(l, right, tiles_right, ld, a_start, cols, par)?;
        Ok(())
    }
}

/// `L10` on global `rows` (the rows of `l10`, in its order) from what the panel's `getrf` left
/// in `below`; false, writing nothing, unless `rows` are exactly `below`'s rows (a later
/// step's rows are fewer: what is kept from an earlier step is never taken for its). The rows
/// are usually in `below`'s order (the tiles' row swaps are `getrf`'s), and then each column is
/// one copy.
fn copy_below<T: KernelScalar>(below: &Below<T>, rows: &[usize], l10: &mut MatMut<'_, T>) -> bool {
    let (w, m) = (l10.ncols(), rows.len());
    if m != l10.nrows() || m != below.rows.len() || below.l.len() < below.ld * w {
        return false;
    }
    let column = |j: usize| &below.l[j * below.ld + below.from..j * below.ld + below.from + m];
    if rows == below.rows.as_slice() {
        for j in 0..w {
            l10.col_mut(j).copy_from_slice(column(j));
        }
        return true;
    }
    // Another order: where each of `below`'s rows sits, by global row.
    let top = below.rows.iter().max().map_or(0, |&r| r + 1);
    let mut at = vec![usize::MAX; top];
    for (i, &r) in below.rows.iter().enumerate() {
        at[r] = i;
    }
    let Some(from): Option<Vec<usize>> = rows
        .iter()
        .map(|&r| at.get(r).copied().filter(|&i| i != usize::MAX))
        .collect()
    else {
        return false;
    };
    for j in 0..w {
        let src = column(j);
        for (dst, &i) in l10.col_mut(j).iter_mut().zip(&from) {
            *dst = src[i];
        }
    }
    true
}

/// `U01 = L00⁻¹·A01` in place of `a01` (`w` pivot rows), `L00` the unit lower triangle of the
/// `w × w` block `a00`.
fn solve_u01<T: KernelScalar>(a00: &[T], a01: MatMut<'_, T>, par: Par) -> Result<(), LuError> {
    let w = a01.nrows();
    let l00 = MatRef::from_slice(a00, w, w, w.max(1))?;
    let (side, uplo, op, diag) = (Side::Left, Uplo::Lower, Op::NoTrans, Diag::Unit);
    Ok(trsm(side, uplo, op, diag, T::one(), l00, a01, par)?)
}

/// Step 8's product: my tiles' `cols` (from `tiles_right`, leading dimension `ld`) on the
/// active rows from `a_start` less `l·U01` of those columns (`l` is `L10` on the active rows,
/// one or two panels' columns; `right` holds as many rows of `U01`).
fn update_product<T: KernelScalar>(
    l: MatRef<'_, T>,
    right: &URight<T>,
    tiles_right: &mut [T],
    ld: usize,
    a_start: usize,
    cols: Range<usize>,
    par: Par,
) -> Result<(), LuError> {
    let (mr, kb) = l.shape();
    gemm(
        T::zero() - T::one(),
        l,
        Op::NoTrans,
        MatRef::from_slice(
            &right.u[(right.from + cols.start) * right.ld..],
            kb,
            cols.len(),
            right.ld,
        )?,
        Op::NoTrans,
        T::one(),
        MatMut::from_slice(
            &mut tiles_right[cols.start * ld + a_start..],
            mr,
            cols.len(),
            ld,
        )?,
        par,
    )?;
    Ok(())
}

/// The waiting `L10` on `rows` (global, each among the waiting rows), `rows.len() × wait.k`
/// column-major, in a pooled buffer; `m` is the matrix's row count.
fn rows_of_waiting<T: KernelScalar>(wait: &Waiting<T>, rows: &[usize], m: usize) -> Vec<T> {
    let mut at = vec![usize::MAX; m];
    for (i, &r) in wait.rows.iter().enumerate() {
        at[r] = i;
    }
    let (n, k) = (wait.rows.len(), wait.k);
    let mut out = take_buffer(rows.len() * k, T::zero());
    for j in 0..k {
        let src = &wait.l10[j * n..(j + 1) * n];
        for (o, &r) in out[j * rows.len()..(j + 1) * rows.len()]
            .iter_mut()
            .zip(rows)
        {
            *o = src[at[r]];
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    /// `below` for rows `rows` of a panel `from + rows.len()` tall, 2 wide: element `(i, j)` of
    /// the factored copy is `10·i + j`.
    fn below(rows: Vec<usize>, from: usize) -> Below<f64> {
        let ld = from + rows.len();
        let l = (0..2 * ld)
            .map(|e| (10 * (e % ld) + e / ld) as f64)
            .collect();
        Below { rows, l, ld, from }
    }

    fn copied(below: &Below<f64>, rows: &[usize]) -> Option<Vec<f64>> {
        let mut out = vec![-1.0; rows.len() * 2];
        let mut view = MatMut::from_slice(&mut out, rows.len(), 2, rows.len()).unwrap();
        copy_below(below, rows, &mut view).then_some(out)
    }

    #[test]
    fn below_rows_are_copied_in_any_order_and_only_when_they_are_all_there() {
        let b = below(vec![7, 3, 9], 2);
        // The same order: rows 2, 3, 4 of the copy.
        assert_eq!(
            copied(&b, &[7, 3, 9]),
            Some(vec![20., 30., 40., 21., 31., 41.])
        );
        // Another order.
        assert_eq!(
            copied(&b, &[9, 7, 3]),
            Some(vec![40., 20., 30., 41., 21., 31.])
        );
        // A row that is not there, or fewer rows: nothing.
        assert_eq!(copied(&b, &[9, 7, 4]), None);
        assert_eq!(copied(&b, &[9, 7, 30]), None);
        assert_eq!(copied(&b, &[9, 7]), None);
    }
}
