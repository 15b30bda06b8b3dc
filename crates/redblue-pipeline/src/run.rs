//! The step loop every 2.5D factorisation runs, driven by the algorithm's hooks
//! ([`TileAlgorithm`]): LU and Cholesky differ only in how the diagonal block is factored (and
//! its rows chosen), how the panel is solved, where the `U` side of the update comes from and
//! how the update is done.
//!
//! Step `t` factors the columns `J = t·v .. t·v + w` on the active rows `R`:
//!
//! 1. the `c` layers' partial sums of the panel `R × J` are added on the panel owner's layer
//!    ([`panel_reduce_moves`]); with look-ahead, posted during the previous step's update;
//! 2. the `Px` ranks holding the reduced panel choose `w` rows and factor the diagonal block on
//!    them ([`TileAlgorithm::factor_diagonal`]: tournament or partial pivoting for LU, `potrf`
//!    for Cholesky); with look-ahead, before the previous step's update of the other columns;
//! 3. the block and (when the algorithm pivots) its rows go to every rank that lacks them (a
//!    binomial tree, [`broadcast_members`]; the root, like the panel's root in 7a, waits for
//!    its sends only at the end of the step, so that it goes on while the others finish their
//!    update); every rank moves its rows of them in front of its active rows (row masking:
//!    local swaps only);
//! 4. the panel's rows below the block, `R' × J`, go 1D over the `Py·c` ranks of each grid row
//!    ([`l10_scatter_moves`]; nothing moves when a grid row is one rank: the panel is solved in
//!    place), and 6. each piece is solved with the block ([`TileAlgorithm::solve_panel`]);
//! 7. every rank receives the solved rows of its tiles, its layer's share of the `w` columns
//!    ([`l10_spread_moves`]), and keeps them in its tiles if it is on the panel's grid column;
//! 5. and 7b. the `U` side ([`TileAlgorithm::right_side`]): LU reduces, solves and spreads the
//!    pivot rows right of the panel; Cholesky takes `L10ᴴ` from the spread pieces;
//! 8. every rank updates its layer's copy ([`TileAlgorithm::update`]): the next panel's columns
//!    first, then (with look-ahead, after posting step `t + 1`'s steps 1 and 2) the rest;
//! 9. the diagonal block goes into layer 0's tiles.
//!
//! Every move is planned from facts every rank has, so [`crate::replay::factor_costs`]
//! replays the same counts without data.

use crate::geometry::{add_runs, gather_runs, mark_positions, part, scatter_runs, Geometry, Tiles};
use crate::replay::StepModel;
use crate::steps::{
    broadcast_members, l10_piece, l10_scatter_moves, l10_spread_moves, panel_reduce_moves,
    row_broadcast_members, PanelHome,
};
use crate::storage::Storage;
use redblue_comm::{wait_all, CommError, Communicator, CommunicatorExt};
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::{ReduceOp, Uplo};
use redblue_dist::exchange::{exchange_cols_into, Move, Parcel};
use redblue_kernels::{KernelError, KernelScalar, MatMut, MatRef, Par};
use std::ops::Range;

/// The tag of the posted panel reductions (step 1).
const TAG_PANEL_SUMS: u32 = 0x00C0_2A00;

/// What step 2 leaves on the ranks that hold the diagonal block.
pub struct Diagonal<T> {
    /// The step's rows in their order (pivot order for LU; the panel's own rows without
    /// pivoting).
    pub rows: Vec<usize>,
    /// The factored `w × w` block, column-major (LU: `L00\U00`; Cholesky: `L00` in its lower
    /// triangle).
    pub block: Vec<T>,
    /// The first column (0-based, within the panel) whose pivot failed (zero, or not
    /// positive), if any.
    pub failed: Option<usize>,
}

/// What [`TileAlgorithm::scan`] finds in this rank's part of the input.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scan {
    /// The largest `|a|` of the part read.
    pub max: f64,
    /// Whether every element of that part is finite.
    pub finite: bool,
    /// The first column (global) whose input already rules the factorisation out (Cholesky: a
    /// diagonal entry that is not real); the steps stop there as at a failing pivot.
    pub bad_column: Option<usize>,
}

/// The reduced panel on one of the ranks `(x, y0, z0)` that factor it (step 2's input).
pub struct PanelBlock<'a, T> {
    /// The step.
    pub t: usize,
    /// This rank's grid row.
    pub x: usize,
    /// Active rows of every grid row.
    pub avail: Vec<usize>,
    /// This rank's active rows (global), in local order.
    pub rows: &'a [usize],
    /// Their values: `rows.len() × w`, column-major with leading dimension `ld`.
    pub vals: &'a [T],
    /// Leading dimension of `vals`.
    pub ld: usize,
    /// The panel width.
    pub w: usize,
    /// The parallelism the factorisation was given, for the block's kernels.
    pub par: Par,
}

/// The facts of step `t` on one rank, after the block's rows are known (step 3).
pub struct Step {
    /// The step.
    pub t: usize,
    /// The panel's columns.
    pub panel: Range<usize>,
    /// The panel owner's grid column and layer.
    pub owner: (usize, usize),
    /// The block's rows (pivot rows), in order.
    pub piv: Vec<usize>,
    /// The active rows after this step.
    pub rest: Vec<usize>,
    /// This rank's rows of `piv` are local rows `piv_start..State::a_start`, in pivot order.
    pub piv_start: usize,
    /// This rank's rows of `rest` (global), in local order: local rows `a_start..`.
    pub my_rows: Vec<usize>,
    /// This rank's columns right of the panel (global, ascending): local columns
    /// `first_col..`.
    pub my_cols: Vec<usize>,
    /// Local column of `my_cols[0]`.
    pub first_col: usize,
    /// This rank's layer's share of the `w` panel columns.
    pub share: Range<usize>,
    /// How many of `my_cols` are the next panel's (updated first).
    pub next: usize,
}

/// The solved panel on one rank (steps 4, 6 and 7a).
pub struct Panel<T> {
    /// This rank's 1D piece: its rows (global) and `L10` on them, `rows.len() × w`
    /// column-major (empty when the panel is solved in place).
    pub piece_rows: Vec<usize>,
    /// See `piece_rows`.
    pub piece: Vec<T>,
    /// `L10` on this rank's rows `Step::my_rows`, its layer's share of the columns:
    /// `my_rows.len() × share.len()` column-major (empty when in place: then in the tiles).
    pub share: Vec<T>,
    /// On the panel's grid column, when solved there: my rows of `L10` for my grid row, to be
    /// sent along it by the step loop (which waits for the sends at the end of the step).
    pub outgoing: Vec<T>,
}

/// The hooks of one factorisation: what LU and Cholesky do differently in the loop of
/// [`run`].
pub trait TileAlgorithm<T: KernelScalar> {
    /// What a hook can fail with.
    type Error: From<CommError> + From<KernelError>;
    /// The cost model of the steps (who holds the block, the algorithm's own moves).
    type Model: StepModel;
    /// The `U` side of a step's update ([`TileAlgorithm::right_side`]).
    type Right;

    /// The model.
    fn model(&self) -> Self::Model;

    /// The check of the part of the input it reads, on layer 0's `tiles` of this rank.
    fn scan(&self, tiles: &Tiles<'_, T>) -> Scan;

    /// Step 2 on panel rank `panel.x` of step `panel.t`: choose the block's rows and factor it.
    /// Returns the block on the holders ([`StepModel::holders`]), `None` elsewhere.
    ///
    /// # Errors
    /// A communication or kernel failure.
    fn factor_diagonal<C: Communicator>(
        &mut self,
        comm: &C,
        g: &Geometry,
        panel: PanelBlock<'_, T>,
    ) -> Result<Option<Diagonal<T>>, Self::Error>;

    /// Step 6: the panel rows below the block, solved with it in place (`L10 = A10·U00⁻¹`,
    /// `L10 = A10·L00⁻ᴴ`); `rows` are their global indices (an algorithm that already has
    /// `L10` on them from choosing the block may write it instead).
    ///
    /// # Errors
    /// A kernel failure.
    fn solve_panel(
        &mut self,
        block: MatRef<'_, T>,
        rows: &[usize],
        l10: MatMut<'_, T>,
        par: Par,
    ) -> Result<(), Self::Error>;

    /// Steps 5 and 7b: the `U` side of the update on this rank.
    ///
    /// # Collective
    /// # Errors
    /// A communication or kernel failure.
    fn right_side<C: Communicator>(
        &mut self,
        comm: &C,
        st: &mut State<'_, T>,
        step: &Step,
        block: &[T],
        panel: &Panel<T>,
    ) -> Result<Self::Right, Self::Error>;

    /// Step 8 on the columns `my_cols[cols]` (the next panel's first, then the rest).
    ///
    /// # Errors
    /// A kernel failure.
    fn update(
        &mut self,
        st: &mut State<'_, T>,
        step: &Step,
        panel: &Panel<T>,
        right: &mut Self::Right,
        cols: Range<usize>,
    ) -> Result<(), Self::Error>;

    /// The end of a step: the `U` side's buffers back (or kept for a later step).
    fn end_step(&mut self, st: &State<'_, T>, step: &Step, right: Self::Right);

    /// What of the block goes into layer 0's tiles: all of it (`None`) or one triangle.
    fn block_part(&self) -> Option<Uplo>;

    /// Local columns left of this global column are final after step `step` (row swaps leave
    /// them alone from then on).
    fn final_before(&self, st: &State<'_, T>, step: &Step) -> usize {
        let _ = st;
        step.panel.end
    }

    /// The largest `|entry|` of the factor it tracks (LU: `U`, for the growth factor).
    fn max_factor(&self) -> f64 {
        0.0
    }
}

/// One rank's state between steps.
pub struct State<'a, T> {
    /// The geometry.
    pub g: Geometry,
    /// This rank's grid position (`None` off the grid).
    pub coords: Option<(usize, usize, usize)>,
    /// This rank's tiles of its layer.
    pub tiles: Tiles<'a, T>,
    /// The active rows (global), in order.
    pub active: Vec<usize>,
    /// This rank's active rows are its local rows `a_start..`.
    pub a_start: usize,
    /// Whether a grid row is one rank (`Py·c = 1`): the panel is solved in place and every
    /// rank holds every column.
    pub in_place: bool,
    /// Whether the panel is solved on its grid column ([`PanelHome::Owner`], or `in_place`).
    pub on_owner: bool,
    /// Threads per rank for the local kernels.
    pub par: Par,
    /// Scratch: global index → position, `max(M, N)` entries each.
    pub pos: [Vec<usize>; 3],
    pivoted: Vec<bool>,
    /// A column the input rules out ([`Scan::bad_column`], agreed): the steps stop there.
    stop_at: Option<usize>,
}

impl<'a, T: KernelScalar> State<'a, T> {
    fn new(g: &Geometry, rank: usize, local: Storage<'a, T>, par: Par, home: PanelHome) -> Self {
        let coords = g.coords(rank);
        let tiles = match coords {
            Some((x, y, _)) => Tiles::new(g, x, y, local),
            None => Tiles::empty(g),
        };
        let (m, n) = (g.m, g.n);
        State {
            g: *g,
            coords,
            tiles,
            active: (0..m).collect(),
            a_start: 0,
            in_place: g.py * g.c == 1,
            on_owner: home == PanelHome::Owner || g.py * g.c == 1,
            par,
            pos: [
                vec![usize::MAX; m.max(n)],
                vec![usize::MAX; m.max(n)],
                vec![usize::MAX; m.max(n)],
            ],
            pivoted: vec![false; m],
            stop_at: None,
        }
    }

    /// Step 1 packed and posted: this rank's partial sums of step `t`'s panel (on `active`)
    /// sent, the others' receives started.
    fn pack_panel_sums<C: Communicator>(&self, comm: &C, t: usize) -> (Vec<Move>, Parcel<T>) {
        let moves = panel_reduce_moves(&self.g, t, &self.active);
        let parcel = Parcel::pack(comm, &moves, |i, j| self.tiles.get(i, j));
        (moves, parcel)
    }

    /// Adds the received partial sums of a panel into the tiles.
    fn add_panel_sums(&mut self, moves: &[Move], parcel: Parcel<T>) {
        let tiles = &mut self.tiles;
        let ld = tiles.ld();
        parcel.received(moves).apply_cols(|j, rows, vals| {
            let at = tiles.col_pos(j) * ld;
            let (column, row_pos) = tiles.column_and_rows_mut(at, ld);
            add_runs(column, rows, |r| row_pos[r], vals);
        });
    }

    /// Step 2 on the panel ranks of step `t` (the hook), `None` elsewhere.
    fn choose<C: Communicator, A: TileAlgorithm<T>>(
        &self,
        comm: &C,
        algo: &mut A,
        t: usize,
    ) -> Result<Option<Diagonal<T>>, A::Error> {
        let (y0, z0) = self.g.panel_owner(t);
        match self.coords {
            Some((x, y, z)) if y == y0 && z == z0 => {
                // My active rows are the local rows `a_start..`: the panel block is `w`
                // column segments of my local array.
                let panel = self.g.panel(t);
                let (ld, pc) = (self.tiles.ld(), self.tiles.col_pos(panel.start));
                let block = PanelBlock {
                    t,
                    x,
                    avail: self.g.row_counts(&self.active),
                    rows: &self.tiles.rows[self.a_start..],
                    vals: &self.tiles.data[(pc * ld + self.a_start).min(self.tiles.data.len())..],
                    ld,
                    w: panel.len(),
                    par: self.par,
                };
                algo.factor_diagonal(comm, &self.g, block)
            }
            _ => Ok(None),
        }
    }

    /// Step 3's two messages, filled on the ranks that chose the block: the first failing
    /// column plus one (0 if none) followed by the block's rows when the algorithm pivots,
    /// and the block.
    fn block_message<M: StepModel>(
        &self,
        model: &M,
        t: usize,
        chosen: Option<Diagonal<T>>,
    ) -> (Vec<u64>, Vec<T>) {
        let panel = self.g.panel(t);
        let w = panel.len();
        let mut meta = vec![0u64; model.meta_words(w)];
        let mut block = vec![T::zero(); w * w];
        if let Some(ch) = chosen {
            let ruled_out = self
                .stop_at
                .filter(|j| panel.contains(j))
                .map(|j| j - panel.start);
            let failed = match (ch.failed, ruled_out) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            meta[0] = failed.map_or(0, |j| j as u64 + 1);
            for (m, &r) in meta[1..].iter_mut().zip(&ch.rows) {
                *m = r as u64;
            }
            block = ch.block;
        }
        (meta, block)
    }

    /// The rows of step `t`'s block in front of my active rows, and the step's facts.
    fn take_rows(&mut self, t: usize, piv: Vec<usize>) -> Step {
        let g = self.g;
        let panel = g.panel(t);
        for &r in &piv {
            self.pivoted[r] = true;
        }
        let piv_start = self.a_start;
        if let Some((x, _, _)) = self.coords {
            self.a_start = self.tiles.move_rows_to(&g.rows_of(&piv, x), self.a_start);
        }
        let pivoted = &self.pivoted;
        let rest: Vec<usize> = self
            .active
            .iter()
            .copied()
            .filter(|&r| !pivoted[r])
            .collect();
        let (mut my_rows, mut my_cols, mut share) = (Vec::new(), Vec::new(), 0..0);
        if let Some((_, y, z)) = self.coords {
            my_rows = self.tiles.rows[self.a_start..].to_vec();
            my_cols = (panel.end..g.n).filter(|&j| g.col_py(j) == y).collect();
            share = part(panel.len(), g.c, z);
        }
        let next = if t + 1 < g.steps() {
            let np = g.panel(t + 1);
            my_cols.partition_point(|&j| j < np.end)
        } else {
            0
        };
        Step {
            t,
            first_col: self.tiles.cols_from(panel.end).start,
            owner: g.panel_owner(t),
            panel,
            piv,
            rest,
            piv_start,
            my_rows,
            my_cols,
            share,
            next,
        }
    }

    /// Whether `L10` on my active rows is in my tiles (solved there, on the panel's grid
    /// column) rather than in [`Panel::share`].
    pub fn l10_in_tiles(&self, step: &Step) -> bool {
        self.on_owner && self.coords.is_some_and(|(_, y, _)| y == step.owner.0)
    }

    /// The update's operands on this rank: `L10` on my active rows, my layer's share of the
    /// panel columns (`my_rows × share`, in my tiles or in `panel.share`), and my tiles from
    /// local column `step.first_col` on (writable; my active rows start at row `a_start` of
    /// each column), with their leading dimension.
    ///
    /// # Errors
    /// None for the step's own panel.
    pub fn update_operands<'s>(
        &'s mut self,
        step: &Step,
        panel: &'s Panel<T>,
    ) -> Result<(MatRef<'s, T>, &'s mut [T], usize), KernelError> {
        let (mr, ks, ld) = (step.my_rows.len(), step.share.len(), self.tiles.ld());
        let in_tiles = self.l10_in_tiles(step);
        let pc = if in_tiles {
            self.tiles.col_pos(step.panel.start) + step.share.start
        } else {
            0
        };
        let (left, right) = self.tiles.data.split_at_mut(step.first_col * ld);
        let l10 = if in_tiles {
            MatRef::from_slice(
                &left[(pc * ld + self.a_start).min(left.len())..],
                mr,
                ks,
                ld,
            )?
        } else {
            MatRef::from_slice(&panel.share, mr, ks, mr.max(1))?
        };
        Ok((l10, right, ld))
    }

    /// `L10[rows, col]` of my active rows into `out` (`pos[1]` marks `my_rows`).
    pub fn l10_rows(
        &self,
        step: &Step,
        panel: &Panel<T>,
        col: usize,
        rows: &[usize],
        out: &mut [T],
    ) {
        let (column, pos) = self.l10_column(step, panel, col);
        gather_runs(column, rows, |r| pos[r], out);
    }

    /// `L10`'s column `col` on my active rows as stored here, and the position in it of each
    /// of my active rows (`pos[1]` marks `my_rows`): what [`State::l10_rows`] gathers from.
    pub fn l10_column<'s>(
        &'s self,
        step: &Step,
        panel: &'s Panel<T>,
        col: usize,
    ) -> (&'s [T], &'s [usize]) {
        if self.l10_in_tiles(step) {
            self.tiles.column_and_rows(col)
        } else {
            let mr = step.my_rows.len();
            let at = (col - step.panel.start - step.share.start) * mr;
            (&panel.share[at..at + mr], &self.pos[1])
        }
    }

    /// Steps 4, 6 and 7a: the panel's rows below the block to their 1D pieces, solved, and
    /// spread to the layers' shares on every rank of their grid row — or, on the panel's grid
    /// column, solved in place and broadcast along the grid rows.
    fn solve_and_spread<C: Communicator, A: TileAlgorithm<T>>(
        &mut self,
        comm: &C,
        algo: &mut A,
        step: &Step,
        block: &[T],
    ) -> Result<Panel<T>, A::Error> {
        let w = step.panel.len();
        let block = MatRef::from_slice(block, w, w, w.max(1))?;
        if self.on_owner {
            return self.solve_on_owner(comm, algo, step, block);
        }
        let g = self.g;
        let start = step.panel.start;
        let piece_rows = match self.coords {
            Some((x, y, z)) => l10_piece(&g, &step.rest, x, y + g.py * z),
            None => Vec::new(),
        };
        let lm = piece_rows.len();
        let mut piece = take_buffer(lm * w, T::zero());
        let moves = l10_scatter_moves(&g, step.t, &step.rest);
        mark_positions(&mut self.pos[0], &piece_rows);
        let (pos, tiles) = (&self.pos[0], &self.tiles);
        exchange_cols_into(
            comm,
            &moves,
            |j, rows, out| tiles.gather_rows(j, rows, out),
            |j, rows, vals| {
                let column = &mut piece[(j - start) * lm..(j - start + 1) * lm];
                scatter_runs(column, rows, |r| pos[r], vals);
            },
        )?;
        // 6. The solve on the piece.
        if lm > 0 {
            let view = MatMut::from_slice(&mut piece, lm, w, lm)?;
            algo.solve_panel(block, &piece_rows, view, self.par)?;
        }
        // 7a. My rows, my layer's share of the columns.
        let (mr, share) = (step.my_rows.len(), step.share.clone());
        let mut l_share = take_buffer(mr * share.len(), T::zero());
        let moves = l10_spread_moves(&g, step.t, &step.rest);
        mark_positions(&mut self.pos[1], &step.my_rows);
        let (pos, pos_mine) = (&self.pos[0], &self.pos[1]);
        exchange_cols_into(
            comm,
            &moves,
            |j, rows, out| {
                let column = &piece[(j - start) * lm..(j - start + 1) * lm];
                gather_runs(column, rows, |r| pos[r], out);
            },
            |j, rows, vals| {
                let at = (j - start - share.start) * mr;
                scatter_runs(&mut l_share[at..at + mr], rows, |r| pos_mine[r], vals);
            },
        )?;
        // The layers keep their shares where their partial sums of the panel were (no longer
        // needed: step 1 summed them).
        if self.coords.is_some_and(|(_, y, _)| y == step.owner.0) && mr > 0 {
            let (ld, pc) = (self.tiles.ld(), self.tiles.col_pos(start));
            for jj in 0..share.len() {
                let at = pc + share.start + jj;
                let col = &mut self.tiles.data[at * ld + self.a_start..(at + 1) * ld];
                col.copy_from_slice(&l_share[jj * mr..(jj + 1) * mr]);
            }
        }
        Ok(Panel {
            piece_rows,
            piece,
            share: l_share,
            outgoing: Vec::new(),
        })
    }

    /// Steps 6 and 7a on the panel's grid column: solved in place there, then broadcast along
    /// the grid rows (nothing moves when a grid row is one rank).
    fn solve_on_owner<C: Communicator, A: TileAlgorithm<T>>(
        &mut self,
        comm: &C,
        algo: &mut A,
        step: &Step,
        block: MatRef<'_, T>,
    ) -> Result<Panel<T>, A::Error> {
        let (g, w, start) = (self.g, step.panel.len(), step.panel.start);
        let ld = self.tiles.ld();
        let rows = ld - self.a_start;
        if self.l10_in_tiles(step) && rows > 0 {
            let at = self.tiles.col_pos(start) * ld + self.a_start;
            let view = MatMut::from_slice(&mut self.tiles.data[at..], rows, w, ld)?;
            algo.solve_panel(block, &self.tiles.rows[self.a_start..], view, self.par)?;
        }
        // 7a. Along my grid row, by a tree from the panel rank (ranks of a grid row hold the
        // same rows in the same local order).
        let mr = step.my_rows.len();
        let (mut l_share, mut outgoing) = (Vec::new(), Vec::new());
        if let Some((x, _, _)) = self.coords.filter(|_| g.py > 1 && mr > 0) {
            let mut buf = take_buffer(mr * w, T::zero());
            if self.l10_in_tiles(step) {
                // The root: the step loop posts the sends.
                let at = self.tiles.col_pos(start) * ld + self.a_start;
                for (dst, col) in buf
                    .chunks_exact_mut(mr)
                    .zip(self.tiles.data[at..].chunks(ld))
                {
                    dst.copy_from_slice(&col[..mr]);
                }
                outgoing = buf;
            } else {
                comm.tree_broadcast(&mut buf, &row_broadcast_members(&g, step.t, x))?;
                l_share = buf;
            }
        }
        Ok(Panel {
            piece_rows: Vec::new(),
            piece: Vec::new(),
            share: l_share,
            outgoing,
        })
    }

    /// Step 9: the block (or its `part`) into layer 0's tiles, on the rows of `piv` I hold.
    fn write_block(&mut self, step: &Step, block: &[T], part: Option<Uplo>) {
        let g = self.g;
        let Some((x, y, 0)) = self.coords else {
            return;
        };
        if y != step.owner.0 {
            return;
        }
        let w = step.panel.len();
        for (k, &r) in step.piv.iter().enumerate() {
            if g.row_px(r) != x {
                continue;
            }
            for (jj, j) in step.panel.clone().enumerate() {
                let keep = match part {
                    None => true,
                    Some(Uplo::Lower) => k >= jj,
                    Some(Uplo::Upper) => k <= jj,
                };
                if keep {
                    *self.tiles.at(r, j) = block[k + jj * w];
                }
            }
        }
    }
}

/// Why the steps stopped before the end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// A NaN or an infinity in the part of the input the algorithm reads (found before any
    /// work).
    NotFinite,
    /// The first failing column (0-based, global): no nonzero pivot (LU), not positive
    /// (Cholesky).
    Column(usize),
}

/// What [`run`] leaves on one rank.
pub struct Run<'a, T> {
    /// This rank's tiles of the factors: layer 0's (this rank's layer's, with its shares, off
    /// layer 0; none off the grid), each column's rows in the order the steps left them
    /// ([`Tiles::sort_rows`] puts them in the layout's order).
    pub tiles: Tiles<'a, T>,
    /// Every step's rows (pivot rows), the same on every rank.
    pub pivots: Vec<Vec<usize>>,
    /// Every step's factored block, kept on the layer-0 ranks of grid row `t mod Px` for the
    /// triangular solves (empty elsewhere).
    pub blocks: Vec<Vec<T>>,
    /// The largest `|a|` of the part of the input read, on every rank.
    pub max_input: f64,
    /// [`TileAlgorithm::max_factor`] over all ranks.
    pub max_factor: f64,
    /// Why the steps stopped early, the same on every rank.
    pub stopped: Option<Stopped>,
}

/// Whether step `t + 1`'s panel sums and diagonal block are started before the rest of step
/// `t`'s update (look-ahead). The same words and messages, and the same factors, either way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LookAhead {
    /// Never.
    Off,
    /// Always.
    On,
    /// Unless this process runs more of the communicator's ranks than it has cores
    /// ([`Communicator::ranks_in_process`]): the ranks choosing the next block would then wait
    /// for cores taken by the others' update (measured: 4 ranks as threads on 2 cores, 3–5 %
    /// slower with it; 2 ranks, 1–2 % faster).
    #[default]
    Auto,
}

impl std::fmt::Display for LookAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            LookAhead::Off => "off",
            LookAhead::On => "on",
            LookAhead::Auto => "auto",
        })
    }
}

impl std::str::FromStr for LookAhead {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "off" => Ok(LookAhead::Off),
            "on" => Ok(LookAhead::On),
            "auto" => Ok(LookAhead::Auto),
            _ => Err(format!("unknown look-ahead '{s}' (off, on or auto)")),
        }
    }
}

/// How to run the steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Threads per rank for the local kernels.
    pub par: Par,
    /// Whether to look ahead.
    pub look_ahead: LookAhead,
}

/// Factors the matrix whose layer-0 local array this rank holds on `comm` (whose first
/// `g.ranks()` ranks form the grid) with `algo`'s hooks. `local` is this rank's tiles: the
/// native layout's local array on layer 0, zeros on the other layers, nothing off the grid —
/// what [`crate::reserve::Reserved::input`] gives after [`crate::reserve::reserve`], which
/// allocates the large buffers first and agrees on them. `local` may be the caller's own
/// array ([`Storage::Borrowed`]): the factors are then left in it, and a run stopped by a
/// failing column leaves it part-way (one stopped by a NaN, before any step, leaves it as it
/// was).
///
/// # Collective
/// # Errors
/// A communication or kernel failure. Bad input (a NaN, a failing column) is not an error
/// here: [`Run::stopped`] says it, the same on every rank.
pub fn run<'a, T, C, A>(
    comm: &C,
    g: &Geometry,
    local: impl Into<Storage<'a, T>>,
    algo: &mut A,
    options: RunOptions,
) -> Result<Run<'a, T>, A::Error>
where
    T: KernelScalar,
    C: Communicator,
    A: TileAlgorithm<T>,
{
    let mut st = State::new(
        g,
        comm.rank(),
        local.into(),
        options.par,
        algo.model().panel_home(g),
    );
    // NaN or Inf anywhere: the same answer everywhere, before any work. A column the input
    // rules out: the smallest over the ranks (carried as `N − j`, so that the maximum finds it).
    let scan = match st.coords {
        Some((_, _, 0)) => algo.scan(&st.tiles),
        _ => Scan {
            max: 0.0,
            finite: true,
            bad_column: None,
        },
    };
    let bad = scan.bad_column.map_or(0.0, |j| (g.n - j) as f64);
    let mut check = [if scan.finite { 0.0 } else { 1.0 }, scan.max, bad];
    comm.all_reduce_in_place(&mut check, ReduceOp::Max)?;
    let max_input = check[1];
    st.stop_at = (check[2] > 0.0).then(|| g.n - check[2] as usize);
    if check[0] > 0.0 {
        return Ok(Run {
            tiles: st.tiles,
            pivots: Vec::new(),
            blocks: Vec::new(),
            max_input,
            max_factor: 0.0,
            stopped: Some(Stopped::NotFinite),
        });
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let look_ahead = match options.look_ahead {
        LookAhead::Off => false,
        LookAhead::On => true,
        LookAhead::Auto => comm.ranks_in_process() <= cores,
    };
    // Idle ranks (beyond the grid) take no part in the steps: the grid's ranks run them on a
    // communicator of their own (its ranks numbered as in `comm`).
    let mut out = Steps::default();
    if g.ranks() == comm.size() {
        run_steps(comm, &mut st, algo, look_ahead, &mut out)?;
    } else {
        let in_grid = st.coords.is_some();
        let grid_comm = comm.split(u32::from(!in_grid), comm.rank())?;
        if in_grid {
            run_steps(&grid_comm, &mut st, algo, look_ahead, &mut out)?;
        }
    }
    // Every rank learns the largest factor entry and whether a column failed (the grid's
    // ranks stopped at it).
    let mut agreed = [
        algo.max_factor(),
        out.failed.map_or(0.0, |j| j as f64 + 1.0),
    ];
    comm.all_reduce_in_place(&mut agreed, ReduceOp::Max)?;
    let stopped = (agreed[1] > 0.0).then(|| Stopped::Column(agreed[1] as usize - 1));
    if stopped.is_none() && g.ranks() < comm.size() {
        share_pivots(comm, g, &algo.model(), &mut out.pivots)?;
    }
    Ok(Run {
        tiles: st.tiles,
        pivots: out.pivots,
        blocks: out.blocks,
        max_input,
        max_factor: agreed[0],
        stopped,
    })
}

/// The ranks left idle by the grid learn every step's rows: by a tree from rank 0 when the
/// algorithm pivots, from the panels otherwise.
///
/// # Collective
fn share_pivots<C: Communicator, M: StepModel>(
    comm: &C,
    g: &Geometry,
    model: &M,
    pivots: &mut Vec<Vec<usize>>,
) -> Result<(), CommError> {
    let idle = g.coords(comm.rank()).is_none();
    if !model.pivots() {
        if idle {
            *pivots = (0..g.steps()).map(|t| g.panel(t).collect()).collect();
        }
        return Ok(());
    }
    let members: Vec<usize> = std::iter::once(0).chain(g.ranks()..comm.size()).collect();
    let mut all: Vec<u64> = pivots.iter().flatten().map(|&r| r as u64).collect();
    all.resize(g.factored(), 0);
    comm.tree_broadcast(&mut all, &members)?;
    if idle {
        let mut rows = all.into_iter().map(|r| r as usize);
        *pivots = (0..g.steps())
            .map(|t| rows.by_ref().take(g.panel(t).len()).collect())
            .collect();
    }
    Ok(())
}

/// What the steps record on the grid's ranks.
#[derive(Default)]
struct Steps<T> {
    pivots: Vec<Vec<usize>>,
    blocks: Vec<Vec<T>>,
    failed: Option<usize>,
}

/// The steps on the grid's ranks (`comm` holds exactly them, or idle ranks besides that do
/// not call this).
fn run_steps<T, C, A>(
    comm: &C,
    st: &mut State<'_, T>,
    algo: &mut A,
    look_ahead: bool,
    out: &mut Steps<T>,
) -> Result<(), A::Error>
where
    T: KernelScalar,
    C: Communicator,
    A: TileAlgorithm<T>,
{
    let g = st.g;
    let model = algo.model();
    // Step t's block when step t − 1 chose it ahead (look-ahead).
    let mut ahead: Option<Option<Diagonal<T>>> = None;
    for t in 0..g.steps() {
        // 1. and 2. (unless done ahead).
        let chosen = match ahead.take() {
            Some(chosen) => chosen,
            None => {
                let (moves, mut parcel) = st.pack_panel_sums(comm, t);
                wait_all(parcel.post(comm, TAG_PANEL_SUMS)?)?;
                st.add_panel_sums(&moves, parcel);
                st.choose(comm, algo, t)?
            }
        };
        // 3. The block and its rows to everyone: the root's sends are not waited for until
        // the end of the step, so that it goes on while the others finish their update.
        let (mut meta, mut block) = st.block_message(&model, t, chosen);
        let members = broadcast_members(&g, model.holders(&g, t), t);
        let mut sends = Vec::new();
        if members.first() == Some(&comm.rank()) {
            sends.extend(comm.post_tree_broadcast(&meta, &members)?);
            sends.extend(comm.post_tree_broadcast(&block, &members)?);
        } else {
            comm.tree_broadcast(&mut meta, &members)?;
            comm.tree_broadcast(&mut block, &members)?;
        }
        if meta[0] > 0 {
            wait_all(sends)?;
            out.failed = Some(g.panel(t).start + meta[0] as usize - 1);
            return Ok(());
        }
        let piv = if meta.len() > 1 {
            meta[1..].iter().map(|&r| r as usize).collect()
        } else {
            g.panel(t).collect()
        };
        let step = st.take_rows(t, piv);
        // 4., 6. and 7a. The panel.
        let panel = st.solve_and_spread(comm, algo, &step, &block)?;
        let mut row_sends = Vec::new();
        if let Some((x, _, _)) = st.coords.filter(|_| !panel.outgoing.is_empty()) {
            let row = row_broadcast_members(&g, t, x);
            row_sends = comm.post_tree_broadcast(&panel.outgoing, &row)?;
        }
        // 5. and 7b. The U side.
        let mut right = algo.right_side(comm, st, &step, &block, &panel)?;
        // 8. The update: the next panel's columns first; then, with look-ahead, the next
        // step's panel sums are posted and its block chosen before the other columns.
        let nc = step.my_cols.len();
        algo.update(st, &step, &panel, &mut right, 0..step.next)?;
        if look_ahead && t + 1 < g.steps() {
            ahead = Some(update_ahead(comm, st, algo, &step, &panel, &mut right)?);
        } else {
            algo.update(st, &step, &panel, &mut right, step.next..nc)?;
        }
        wait_all(row_sends)?;
        wait_all(sends)?;
        algo.end_step(st, &step, right);
        recycle(panel.piece);
        recycle(panel.share);
        recycle(panel.outgoing);
        // 9. The block into layer 0's tiles.
        st.write_block(&step, &block, algo.block_part());
        let before = algo.final_before(st, &step);
        st.tiles.freeze_before(before);
        out.blocks.push(
            if st
                .coords
                .is_some_and(|(x, _, z)| x == g.solver_row(t) && z == 0)
            {
                block
            } else {
                recycle(block);
                Vec::new()
            },
        );
        out.pivots.push(step.piv);
        st.active = step.rest;
    }
    Ok(())
}

/// Step `t`'s update of the columns right of the next panel, with step `t + 1`'s panel sums
/// posted before it and its block chosen before it on the ranks that choose it; returns that
/// choice.
fn update_ahead<T, C, A>(
    comm: &C,
    st: &mut State<'_, T>,
    algo: &mut A,
    step: &Step,
    panel: &Panel<T>,
    right: &mut A::Right,
) -> Result<Option<Diagonal<T>>, A::Error>
where
    T: KernelScalar,
    C: Communicator,
    A: TileAlgorithm<T>,
{
    let next = step.t + 1;
    let g = st.g;
    // The next step's active rows are this step's rest.
    let active = std::mem::replace(&mut st.active, step.rest.clone());
    let (moves, mut parcel) = st.pack_panel_sums(comm, next);
    let (y1, z1) = g.panel_owner(next);
    let chooses = st.coords.is_some_and(|(_, y, z)| y == y1 && z == z1);
    let nc = step.my_cols.len();
    let chosen = if chooses {
        // The ranks that choose receive the sums and choose now; the others' update runs
        // meanwhile.
        wait_all(parcel.post(comm, TAG_PANEL_SUMS)?)?;
        st.add_panel_sums(&moves, parcel);
        let chosen = st.choose(comm, algo, next)?;
        algo.update(st, step, panel, right, step.next..nc)?;
        chosen
    } else {
        let requests = parcel.post(comm, TAG_PANEL_SUMS)?;
        let updated = algo.update(st, step, panel, right, step.next..nc);
        wait_all(requests)?;
        updated?;
        st.add_panel_sums(&moves, parcel);
        None
    };
    st.active = active;
    Ok(chosen)
}
