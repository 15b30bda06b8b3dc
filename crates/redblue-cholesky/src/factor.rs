//! Cholesky's hooks on the shared step loop ([`redblue_pipeline::run`]): COnfCHOX (seed 000
//! §1.5) and, with the panel solved on its grid column, the 2D baseline. The pipeline runs the
//! panel's layer sums, the broadcast of `L00`, the panel's solve and its spread; Cholesky adds:
//!
//! - step 2: `potrf` of the reduced `w × w` diagonal block `A00 = L00·L00ᴴ` on the rank of
//!   grid row `t mod Px` that holds it (no pivoting: the step's rows are the panel's own);
//! - step 6: `L10 = A10·L00⁻ᴴ`;
//! - step 7b: the `U` side is `L10ᴴ`: every rank `(x, y, z)` takes the rows `j` of `L10` of
//!   its tile columns, its layer's share of the panel columns, from a rank of grid row
//!   `row_px(j)` that holds them after step 7a ([`transpose_moves`]) — nothing is reduced;
//! - step 8: the update of the lower triangle of the layer's copy only, `A11 −= L10·L10ᴴ`
//!   (half of LU's flops): one product on the entries at or below the diagonal where the
//!   kernels' packed products run ([`gemm_lower_labelled`], the rows of `L10` packed once);
//!   elsewhere a one-triangle product (`gemmt`) on each diagonal tile, a `gemm` below it within
//!   a chunk of four tile columns and one `gemm` for the rows below the chunk; on
//!   `P×1×1` and `1×P×1` grids the update right of the next panel waits a step and is then
//!   done for two panels at once ([`update_waits`](redblue_pipeline::TileGrid::update_waits)).
//!
//! Only the lower triangle of the native array is read or written (the matrix's upper triangle
//! is factored as the lower triangle of its conjugate transpose, see [`crate::cholesky`]).

use crate::CholeskyError;
use redblue_comm::volume::Tally;
use redblue_comm::Communicator;
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::{Diag, Op, Scalar, Side, Uplo};
use redblue_dist::exchange::{exchange_cols_into, Move};
use redblue_kernels::{
    gemm, gemm_lower_labelled, gemmt, max_abs_finite, potrf, trsm, KernelError, KernelScalar,
    MatMut, MatRef, Par,
};
use redblue_pipeline::steps::{count_transpose, transpose_moves, PanelHome};
use redblue_pipeline::{
    copy_spans, mark_positions, scatter_runs, spans_between, Diagonal, Geometry, Panel, PanelBlock,
    Scan, Shares, State, Step, StepModel, StepSizes, TileAlgorithm, Tiles,
};
use std::ops::Range;

/// Cholesky's cost model: what it adds to the shared steps (the transposed spread), and where
/// its panel is solved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CholeskyModel {
    /// In 1D pieces (COnfCHOX) or on the panel's grid column (2D).
    pub home: PanelHome,
}

impl StepModel for CholeskyModel {
    fn holders(&self, g: &Geometry, t: usize) -> Range<usize> {
        let x = g.solver_row(t);
        x..x + 1
    }

    fn pivots(&self) -> bool {
        false
    }

    fn shares(&self) -> Shares {
        Shares::Lower
    }

    fn panel_home(&self, _g: &Geometry) -> PanelHome {
        self.home
    }

    fn count_own(
        &self,
        tally: &mut Tally,
        g: &Geometry,
        t: usize,
        _sizes: &StepSizes,
        _piv: &[usize],
        bytes: usize,
    ) {
        count_transpose(tally, g, t, bytes);
    }

    fn own_words(&self, g: &Geometry, t: usize, _active: &[usize]) -> usize {
        // Every rank of a grid column and layer receives the rows of its columns that the other
        // `Px − 1` grid rows hold: each row of `rest` goes to `Px − 1` ranks per layer, with
        // the layer's share of the `w` columns.
        let panel = g.panel(t);
        (g.px - 1) * panel.len() * (g.n - panel.end)
    }
}

/// How many of a rank's tile columns of the trailing update are one product below their tile
/// rows (4 tiles of 128: measured 5 % faster than a product per tile column on 2 ranks).
const CHUNK_TILES: usize = 4;

/// The `U` side of a step on one rank: `L10` on its columns right of the panel (`my_cols`),
/// its layer's share of the panel columns: `my_cols.len() × share` from row `from` of `l`
/// (leading dimension `ld`) and its column `off`, the waiting panel's columns before it.
pub(crate) struct LCols<T> {
    l: Vec<T>,
    ld: usize,
    from: usize,
    off: usize,
}

/// An update waiting a step (on the grids of
/// [`update_waits`](redblue_pipeline::TileGrid::update_waits)): the columns right of the next
/// panel have not had the last step's update yet.
struct Waiting<T> {
    /// With the panel in place: the local column of the waiting panel's `L10` in the tiles (the
    /// next panel's follows it).
    first_col: usize,
    /// Its `L10` on the columns right of it: rows from `from` of `l` (leading dimension `ld`,
    /// room for two panels' columns), `k` columns.
    l: Vec<T>,
    ld: usize,
    from: usize,
    k: usize,
    /// Off the in-place grids: its `L10` on my rows below the next panel, `rows × k`
    /// column-major with room for two panels' columns (the panel is not in my tiles).
    below: Vec<T>,
    rows: usize,
}

impl<T: KernelScalar> Chox<T> {
    /// On a grid where the update waits: at the step's first update call, joins a waiting
    /// panel's `L10` to this one's; for the columns right of the next panel of a step
    /// with nothing waiting, lets them wait (`None`: nothing to do now). Otherwise the local
    /// column of the first panel's `L10` in the tiles (in place).
    fn wait_or_join(
        &mut self,
        st: &mut State<'_, T>,
        step: &Step,
        panel: &Panel<T>,
        right: &mut LCols<T>,
        cols: Range<usize>,
    ) -> Result<Option<usize>, CholeskyError> {
        let (mr, nc, ks) = (step.my_rows.len(), step.my_cols.len(), step.share.len());
        if self.now.is_none() {
            let now = match self.pending.take() {
                Some(wait) => {
                    if !st.in_place {
                        // The waiting panel's L10 and this one's, side by side.
                        debug_assert_eq!(wait.rows, mr);
                        let (l10, _, _) = st.update_operands(step, panel)?;
                        let mut both = wait.below;
                        both.truncate(mr * wait.k);
                        for jj in 0..ks {
                            both.extend_from_slice(&l10.col(jj)[..mr]);
                        }
                        self.stacked = Some(both);
                    }
                    (wait.first_col, 2)
                }
                None if st.in_place => (st.tiles.col_pos(step.panel.start), 1),
                None => (0, 1),
            };
            self.now = Some(now);
        }
        let (first_col, panels) = self.now.unwrap_or((0, 1));
        let is_rest = cols.start == step.next && cols.end == nc && step.next > 0;
        if is_rest && panels == 1 && nc > step.next {
            // Off the in-place grids, keep L10 on my rows below the next panel.
            let (mut below, mut rows) = (Vec::new(), 0);
            if !st.in_place {
                let next_end = st.g.panel(step.t + 1).end;
                let skip = step.my_rows.partition_point(|&i| i < next_end);
                rows = mr - skip;
                below = take_buffer(rows * 2 * st.g.v, T::zero());
                below.clear();
                let (l10, _, _) = st.update_operands(step, panel)?;
                for jj in 0..ks {
                    below.extend_from_slice(&l10.col(jj)[skip..mr]);
                }
            }
            self.pending = Some(Waiting {
                first_col,
                l: std::mem::take(&mut right.l),
                ld: right.ld,
                from: right.from + step.next,
                k: ks,
                below,
                rows,
            });
            return Ok(None);
        }
        Ok(Some(first_col))
    }
}

/// My tiles right of the panel: `tiles` from local column `step.first_col` on (leading
/// dimension `ld`), my active rows from row `from` of each column.
struct Trailing<'a, T> {
    tiles: &'a mut [T],
    ld: usize,
    from: usize,
}

/// Step 8 on my tiles' columns `cols` (positions in `step.my_cols`): their lower triangle less
/// `l10·l_colsᴴ` (`l10` on `step.my_rows`, `l_cols` on `step.my_cols`, `k` columns each).
fn update_lower<T: KernelScalar>(
    l10: MatRef<'_, T>,
    l_cols: MatRef<'_, T>,
    c: Trailing<'_, T>,
    step: &Step,
    cols: Range<usize>,
    v: usize,
    par: Par,
) -> Result<(), CholeskyError> {
    let (mr, ks) = l10.shape();
    let Trailing {
        tiles: tiles_right,
        ld,
        from: a_start,
    } = c;
    let minus = T::zero() - T::one();
    if cols.is_empty() || mr == 0 {
        return Ok(());
    }
    // Where the kernels' packed products run: one product for all the columns, the rows of
    // `l10` packed once.
    let c = MatMut::from_slice(
        &mut tiles_right[cols.start * ld + a_start..],
        mr,
        cols.len(),
        ld,
    )?;
    let b = l_cols.submatrix(cols.start, 0, cols.len(), ks);
    let labels = (&step.my_rows[..], &step.my_cols[cols.clone()]);
    if gemm_lower_labelled(minus, l10, b, c, labels, par)? {
        return Ok(());
    }
    // Elsewhere in chunks of `CHUNK_TILES` tile columns: the rows below a chunk's last tile are one
    // product (the panel's rows are packed once per chunk, not once per tile column); the
    // rows within the chunk's own tile rows go tile column by tile column (the rows at or
    // below the diagonal are a suffix of mine).
    let mut k = cols.start;
    while k < cols.end {
        let chunk_start = k;
        // `CHUNK_TILES · v` of my columns, up to the end of a tile.
        let last = step.my_cols[(k + CHUNK_TILES * v).min(cols.end) - 1];
        let chunk_end_col = (last / v + 1) * v;
        let chunk_end = k + step.my_cols[k..cols.end].partition_point(|&j| j < chunk_end_col);
        let band_end = step.my_rows.partition_point(|&i| i < chunk_end_col);
        while k < chunk_end {
            let jb = step.my_cols[k];
            let tile_end = (jb / v + 1) * v;
            let k_end = k + step.my_cols[k..chunk_end].partition_point(|&j| j < tile_end);
            let cw = k_end - k;
            let s = step.my_rows.partition_point(|&i| i < jb);
            let b = l_cols.submatrix(k, 0, cw, ks);
            let at = k * ld + a_start + s;
            let mut below = s;
            if s < mr && step.my_rows[s] == jb {
                // The diagonal tile: its lower triangle only.
                let c = MatMut::from_slice(&mut tiles_right[at..], cw, cw, ld)?;
                let a = l10.submatrix(s, 0, cw, ks);
                gemmt(
                    Uplo::Lower,
                    minus,
                    a,
                    Op::NoTrans,
                    b,
                    Op::ConjTrans,
                    T::one(),
                    c,
                    par,
                )?;
                below = s + cw;
            }
            if below < band_end {
                let c = MatMut::from_slice(
                    &mut tiles_right[at + below - s..],
                    band_end - below,
                    cw,
                    ld,
                )?;
                let a = l10.submatrix(below, 0, band_end - below, ks);
                gemm(minus, a, Op::NoTrans, b, Op::ConjTrans, T::one(), c, par)?;
            }
            k = k_end;
        }
        if band_end < mr {
            let cw = chunk_end - chunk_start;
            let at = chunk_start * ld + a_start + band_end;
            let c = MatMut::from_slice(&mut tiles_right[at..], mr - band_end, cw, ld)?;
            let a = l10.submatrix(band_end, 0, mr - band_end, ks);
            let b = l_cols.submatrix(chunk_start, 0, cw, ks);
            gemm(minus, a, Op::NoTrans, b, Op::ConjTrans, T::one(), c, par)?;
        }
    }
    Ok(())
}

/// Cholesky's hooks.
pub(crate) struct Chox<T> {
    pub model: CholeskyModel,
    /// Whether the input is scanned for NaN, infinity and non-real diagonal entries first
    /// ([`CholeskyParams::check_finite`](crate::CholeskyParams::check_finite)).
    check_finite: bool,
    /// The update right of the next panel waits a step on some grids
    /// ([`update_waits`](redblue_pipeline::TileGrid::update_waits)) and is then done for two
    /// panels at once (`k = 2v`: the trailing triangle streams through memory half as often).
    pending: Option<Waiting<T>>,
    /// During a step on such a grid: the local column of the first panel whose update is being
    /// done (in place), and how many panels that is.
    now: Option<(usize, usize)>,
    /// During a step off the in-place grids that does a waiting update: both panels' `L10` on
    /// my rows, `my_rows × k` column-major.
    stacked: Option<Vec<T>>,
}

impl<T> Chox<T> {
    /// The hooks of `model`, scanning the input first if `check_finite`.
    pub fn new(model: CholeskyModel, check_finite: bool) -> Self {
        Chox {
            model,
            check_finite,
            pending: None,
            now: None,
            stacked: None,
        }
    }
}

impl<T: KernelScalar> TileAlgorithm<T> for Chox<T> {
    type Error = CholeskyError;
    type Model = CholeskyModel;
    type Right = LCols<T>;

    fn model(&self) -> CholeskyModel {
        self.model
    }

    /// The lower triangle of this rank's tiles (rows in ascending order: `i ≥ j` is a suffix
    /// of each local column), and the first diagonal entry that is not real.
    fn scan(&self, tiles: &Tiles<'_, T>) -> Scan {
        let ld = tiles.ld();
        let (mut max, mut finite, mut bad_column) = (0.0f64, true, None);
        if !self.check_finite {
            return Scan {
                max,
                finite,
                bad_column,
            };
        }
        for (jj, &j) in tiles.cols.iter().enumerate() {
            let from = tiles.rows.partition_point(|&i| i < j);
            let col = &tiles.data[jj * ld + from..(jj + 1) * ld];
            let (m, f) = max_abs_finite(col);
            max = max.max(m);
            finite &= f;
            if tiles.rows.get(from) == Some(&j) && Scalar::im(col[0]) != <T as Scalar>::Real::zero()
            {
                bad_column.get_or_insert(j);
            }
        }
        Scan {
            max,
            finite,
            bad_column,
        }
    }

    fn factor_diagonal<C: Communicator>(
        &mut self,
        _comm: &C,
        g: &Geometry,
        panel: PanelBlock<'_, T>,
    ) -> Result<Option<Diagonal<T>>, CholeskyError> {
        if panel.x != g.solver_row(panel.t) {
            return Ok(None);
        }
        // My first `w` active rows are the panel's own (no pivoting): the diagonal block.
        let (w, ld) = (panel.w, panel.ld);
        let rows = g.panel(panel.t);
        debug_assert!(panel.rows[..w].iter().copied().eq(rows.clone()));
        let mut block = vec![T::zero(); w * w];
        for (dst, col) in block
            .chunks_exact_mut(w.max(1))
            .zip(panel.vals.chunks(ld.max(1)))
        {
            dst.copy_from_slice(&col[..w]);
        }
        let view = MatMut::from_slice(&mut block, w, w, w.max(1))?;
        let failed = match potrf(Uplo::Lower, view, panel.par) {
            Ok(()) => None,
            Err(KernelError::NotPositiveDefinite { column }) => Some(column),
            Err(e) => return Err(e.into()),
        };
        Ok(Some(Diagonal {
            rows: rows.collect(),
            block,
            failed,
        }))
    }

    fn solve_panel(
        &mut self,
        l00: MatRef<'_, T>,
        _rows: &[usize],
        l10: MatMut<'_, T>,
        par: Par,
    ) -> Result<(), CholeskyError> {
        // L10 = A10·L00⁻ᴴ.
        let (side, uplo, diag) = (Side::Right, Uplo::Lower, Diag::NonUnit);
        Ok(trsm(
            side,
            uplo,
            Op::ConjTrans,
            diag,
            T::one(),
            l00,
            l10,
            par,
        )?)
    }

    fn right_side<C: Communicator>(
        &mut self,
        comm: &C,
        st: &mut State<'_, T>,
        step: &Step,
        _l00: &[T],
        panel: &Panel<T>,
    ) -> Result<LCols<T>, CholeskyError> {
        let (nc, ks) = (step.my_cols.len(), step.share.len());
        let start = step.panel.start + step.share.start;
        let defer = st.g.grid().update_waits();
        let (mut l, ld, from, off) = match self.pending.as_mut() {
            Some(wait) if defer => (std::mem::take(&mut wait.l), wait.ld, wait.from, wait.k),
            _ if defer => (take_buffer(nc * 2 * st.g.v, T::zero()), nc, 0, 0),
            _ => (take_buffer(nc * ks, T::zero()), nc, 0, 0),
        };
        mark_positions(&mut st.pos[1], &step.my_rows);
        mark_positions(&mut st.pos[2], &step.my_cols);
        // A rank's moves to itself are copied here, the spans of their rows found once for
        // all their columns (on a `1 × P` grid that is all of them); the others exchanged.
        let (own, moves): (Vec<Move>, Vec<Move>) = transpose_moves(&st.g, step.t, &step.rest)
            .into_iter()
            .partition(|m| m.from == m.to);
        let st = &*st;
        let pos_cols = &st.pos[2];
        for m in own.iter().filter(|m| m.from == comm.rank()) {
            let Some(&first) = m.cols.first() else {
                continue;
            };
            let src_pos = st.l10_column(step, panel, first).1;
            let spans = spans_between(&m.rows, |r| src_pos[r], |r| pos_cols[r]);
            for &j in &m.cols {
                let at = (off + j - start) * ld + from;
                copy_spans(&mut l[at..at + nc], st.l10_column(step, panel, j).0, &spans);
            }
        }
        exchange_cols_into(
            comm,
            &moves,
            |j, rows, out| st.l10_rows(step, panel, j, rows, out),
            |j, rows, vals| {
                let at = (off + j - start) * ld + from;
                scatter_runs(&mut l[at..at + nc], rows, |r| pos_cols[r], vals);
            },
        )?;
        Ok(LCols { l, ld, from, off })
    }

    fn update(
        &mut self,
        st: &mut State<'_, T>,
        step: &Step,
        panel: &Panel<T>,
        right: &mut LCols<T>,
        cols: Range<usize>,
    ) -> Result<(), CholeskyError> {
        let (mr, nc) = (step.my_rows.len(), step.my_cols.len());
        let (mut ks, mut first) = (step.share.len(), None);
        if st.g.grid().update_waits() {
            let Some(first_col) = self.wait_or_join(st, step, panel, right, cols.clone())? else {
                return Ok(());
            };
            ks += right.off;
            first = st.in_place.then_some(first_col);
        }
        if mr == 0 || ks == 0 || cols.is_empty() {
            return Ok(());
        }
        let (v, a_start, par) = (st.g.v, st.a_start, st.par);
        let (l10, tiles_right, ld) = match first {
            // In place every rank holds every column: the two panels' L10 are neighbours.
            Some(first_col) => {
                let ld = st.tiles.ld();
                let (left, right_cols) = st.tiles.data.split_at_mut(step.first_col * ld);
                let at = (first_col * ld + a_start).min(left.len());
                (MatRef::from_slice(&left[at..], mr, ks, ld)?, right_cols, ld)
            }
            None => {
                let (l10, tiles_right, ld) = st.update_operands(step, panel)?;
                match &self.stacked {
                    Some(both) => (MatRef::from_slice(both, mr, ks, mr)?, tiles_right, ld),
                    None => (l10, tiles_right, ld),
                }
            }
        };
        let l_cols = MatRef::from_slice(&right.l[right.from..], nc, ks, right.ld.max(1))?;
        let c = Trailing {
            tiles: tiles_right,
            ld,
            from: a_start,
        };
        update_lower(l10, l_cols, c, step, cols, v, par)
    }

    fn end_step(&mut self, _st: &State<'_, T>, _step: &Step, right: LCols<T>) {
        self.now = None;
        recycle(right.l);
        if let Some(both) = self.stacked.take() {
            recycle(both);
        }
    }

    fn block_part(&self) -> Option<Uplo> {
        Some(Uplo::Lower)
    }
}
