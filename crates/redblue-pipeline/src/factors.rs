//! [`TileFactors`]: the factors a tile factorisation leaves, where it leaves them — spread over
//! the layers, in the native tiles — and what every factorisation does with them: bring the
//! layers' shares to layer 0 once, solve with them, and hand them out in any layout.

use crate::gather::{gather_costs, gather_moves, Shares};
use crate::geometry::{scatter_runs, Geometry, Tiles};
use crate::run::Run;
use crate::solve::SolveError;
use crate::solve::{
    block_in_tiles, permute_moves, permute_rows, rhs_cols, rhs_layout, solve_costs, solve_native,
    Triangles,
};
use crate::storage::Storage;
use redblue_comm::{CommError, CommStats, Communicator};
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::{Op, Scalar, Uplo};
use redblue_dist::exchange::{exchange, exchange_cols_into, Move};
use redblue_dist::{
    same_local_arrays, same_owners, transform, transform_triangle, BlockCyclic, BorrowedDistMatrix,
    BorrowedDistMatrixMut, DistError, DistMatrix, DistMatrixMut, Layout, LocalBlock,
    OwnedDistMatrix, RowPermuted,
};
use redblue_kernels::{KernelError, KernelScalar, Par};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The factors of a tile factorisation on one rank: its tiles of its layer (empty off the
/// grid), the steps' rows and diagonal blocks. The first call that needs them whole brings the
/// layers' shares to layer 0's tiles in one exchange ([`TileFactors::gather_costs`]); they are
/// used there from then on. `'a` is the life of an array they are read from where it is
/// ([`TileFactors::from_factored`]); `'static` for factors in buffers of their own.
pub struct TileFactors<'a, T: Scalar> {
    geom: Geometry,
    triangles: Triangles,
    /// This rank's tiles of its layer: its layer's share of the factors, and on layer 0, once
    /// gathered, the whole factors.
    tiles: Mutex<Tiles<'a, T>>,
    /// Whether layer 0's tiles hold the whole factors (always with one layer).
    gathered: AtomicBool,
    /// Whether this rank's tiles hold their rows in the layout's order: the steps leave each
    /// column's rows in the order of its last row swaps, and the first call that needs the
    /// tiles as the layout's local array puts them in order ([`Tiles::sort_rows`]).
    sorted: AtomicBool,
    /// Whether this rank's tiles are layer 0's (or it is off the grid).
    on_layer_0: bool,
    /// No tiles: what a rank off layer 0 passes where layer 0's are wanted.
    empty: Tiles<'static, T>,
    pivots: Vec<Vec<usize>>,
    /// Each step's diagonal block on the ranks that solve with it and do not read it in their
    /// tiles (empty elsewhere).
    blocks: Mutex<Vec<Vec<T>>>,
    /// Per grid column, whether its solving ranks have their diagonal blocks: all of them for
    /// the factors a run left; for [`TileFactors::from_factored`]'s, brought by the first solve
    /// with right-hand sides on that grid column ([`TileFactors::solve_to_costs`] counts them).
    blocks_for: Mutex<Vec<bool>>,
    /// Threads of the solves' local work.
    par: Par,
}

/// The error of an operation on the factors: communication, layouts or a kernel.
///
/// Exhaustive on purpose, as [`SolveError`]: it is the pipeline's plumbing, which each
/// algorithm crate maps variant by variant into its own error, so a new variant must make
/// every such mapping fail to compile rather than fall into a catch-all.
#[derive(Debug)]
pub enum FactorsError {
    /// A communication failure.
    Comm(CommError),
    /// A layout problem (transforms in and out).
    Dist(DistError),
    /// A local kernel failure.
    Kernel(KernelError),
}

impl From<CommError> for FactorsError {
    fn from(e: CommError) -> Self {
        FactorsError::Comm(e)
    }
}

impl From<DistError> for FactorsError {
    fn from(e: DistError) -> Self {
        FactorsError::Dist(e)
    }
}

impl From<SolveError> for FactorsError {
    fn from(e: SolveError) -> Self {
        match e {
            SolveError::Comm(e) => FactorsError::Comm(e),
            SolveError::Kernel(e) => FactorsError::Kernel(e),
        }
    }
}

impl<'a, T: KernelScalar> TileFactors<'a, T> {
    /// The factors [`crate::run()`] left on `rank`; their solves run on `par` threads (the
    /// factorisation's).
    pub fn new(
        geom: Geometry,
        triangles: Triangles,
        rank: usize,
        run: Run<'a, T>,
        par: Par,
    ) -> Self {
        let tiles = run.tiles;
        TileFactors {
            triangles,
            sorted: AtomicBool::new(tiles.rows_sorted()),
            tiles: Mutex::new(tiles),
            gathered: AtomicBool::new(geom.c == 1),
            on_layer_0: geom.coords(rank).is_none_or(|(_, _, z)| z == 0),
            empty: Tiles::empty(&geom),
            blocks_for: Mutex::new(vec![true; geom.py]),
            geom,
            pivots: run.pivots,
            blocks: Mutex::new(run.blocks),
            par,
        }
    }

    /// Factors computed elsewhere (ScaLAPACK's `p?getrf` or `p?potrf` left them in a caller's
    /// arrays), given whole in `factors` (any layout), for the solves on `geom`'s tiles — one
    /// layer. Row `i` of `op(factors)` holds the factor row of the matrix's row `perm[i]`
    /// (LAPACK's `P·A = L·U`, `L\U` in the rows of `P·A`; `None`: no permutation). For
    /// [`Triangles::Cholesky`], `op(factors)` holds `L` in its lower triangle, for
    /// [`Triangles::CholeskyUpper`] `U` (of `A = Uᴴ·U`) in its upper triangle; what the other
    /// triangle holds is ignored (no use of the factors reads it).
    ///
    /// When `factors`' local arrays are the tiles' own (no permutation, `Op::NoTrans`, the
    /// same blocks where the tiles have theirs: [`same_local_arrays`]) they are read where
    /// they are, for as long as the factors live (`'a`); otherwise they are placed in tiles of
    /// their own.
    ///
    /// # Collective
    /// # Errors
    /// [`FactorsError::Dist`] for a geometry of more than one layer, or `factors` (or `perm`)
    /// not of its order, or tiles that cannot be allocated (`OutOfMemory` on every rank);
    /// communication failures.
    pub fn from_factored<C, A>(
        comm: &C,
        geom: Geometry,
        triangles: Triangles,
        factors: &'a A,
        op: Op,
        perm: Option<&[usize]>,
        par: Par,
    ) -> Result<Self, FactorsError>
    where
        C: Communicator,
        A: DistMatrix<T> + ?Sized,
    {
        let n = geom.n;
        let identity: Vec<usize>;
        let perm = match perm {
            Some(p) => p,
            None => {
                identity = (0..n).collect();
                &identity
            }
        };
        let (rows, cols) = factors.shape();
        let shape = if op == Op::NoTrans {
            (rows, cols)
        } else {
            (cols, rows)
        };
        if geom.c != 1 || !geom.is_square() || shape != (n, n) || perm.len() != n {
            return Err(FactorsError::Dist(DistError::InvalidLayout(format!(
                "factors of order {n} on one layer: got {}x{} on {} layers, {} permuted rows",
                shape.0,
                shape.1,
                geom.c,
                perm.len()
            ))));
        }
        let native = geom.layer_layout()?;
        let rank = comm.rank();
        let identity = perm.iter().enumerate().all(|(i, &p)| i == p);
        // The same on every rank (it depends on the layouts, `op` and `perm` only).
        let local: Storage<'a, T> =
            if identity && op == Op::NoTrans && same_local_arrays(factors.layout(), &native) {
                // The factors' local arrays are the tiles': read where they are.
                Storage::Shared(&factors.local()[..native.local_len(rank)])
            } else {
                // The tiles, agreed on by every rank before any data moves (a refusal is the
                // same `OutOfMemory` everywhere); the transform with beta = 0 writes every
                // element.
                let mut local =
                    crate::reserve::reserve::<T, C>(comm, &geom, native.local_len(rank), 0)?
                        .take_copy();
                if identity {
                    // No rows to permute: whole blocks at a time (a row-permuted layout's
                    // blocks are single rows).
                    let mut placed = BorrowedDistMatrixMut::new(comm, native.clone(), &mut local)?;
                    transform(comm, T::one(), factors, op, T::zero(), &mut placed)?;
                } else {
                    let mut placed = BorrowedDistMatrixMut::new(
                        comm,
                        RowPermuted::new(native.clone(), perm.to_vec())?,
                        &mut local,
                    )?;
                    transform(comm, T::one(), factors, op, T::zero(), &mut placed)?;
                }
                Storage::Owned(local)
            };
        let pivots: Vec<Vec<usize>> = (0..geom.steps())
            .map(|t| perm[geom.panel(t)].to_vec())
            .collect();
        let tiles = match geom.coords(rank) {
            Some((x, y, _)) => Tiles::new(&geom, x, y, local),
            None => Tiles::empty(&geom),
        };
        let run = Run {
            tiles,
            pivots,
            blocks: vec![Vec::new(); geom.steps()],
            max_input: 0.0,
            max_factor: 0.0,
            stopped: None,
        };
        let mut factors = TileFactors::new(geom, triangles, rank, run, par);
        // The diagonal blocks come with the first solve that needs them, to the grid columns
        // holding its right-hand sides only.
        factors.blocks_for = Mutex::new(vec![false; factors.geom.py]);
        Ok(factors)
    }

    /// Whether this rank's factors are read where the caller's array holds them
    /// ([`TileFactors::from_factored`] without a copy).
    pub fn in_caller_array(&self) -> bool {
        let tiles = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
        matches!(tiles.data, Storage::Shared(_))
    }

    /// Whether every step pivots on its own panel's rows, in order (no row interchanges: the
    /// factors of [`TileFactors::from_factored`] with no permutation).
    pub fn unpivoted(&self) -> bool {
        self.pivots
            .iter()
            .enumerate()
            .all(|(t, piv)| piv.iter().copied().eq(self.geom.panel(t)))
    }

    /// The threads the local work runs on.
    pub fn par(&self) -> Par {
        self.par
    }

    /// The geometry.
    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }

    /// Every step's rows (pivot rows), the same on every rank.
    pub fn pivots(&self) -> &[Vec<usize>] {
        &self.pivots
    }

    fn shares(&self) -> Shares {
        match self.triangles {
            Triangles::Lu | Triangles::LuTransposed | Triangles::LuAdjoint => Shares::LowerAndUpper,
            // One triangle. `U` is only held by factors given whole, on one layer, where
            // nothing is gathered.
            Triangles::Cholesky | Triangles::CholeskyUpper => Shares::Lower,
        }
    }

    /// Runs `f` with this rank's layer-0 tiles of the whole factors (none off layer 0),
    /// gathering the layers' shares there first if no call has done so yet.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure, or what `f` returns.
    pub fn with_layer_0<C: Communicator, R, E: From<CommError>>(
        &self,
        comm: &C,
        f: impl FnOnce(&Tiles<'_, T>) -> Result<R, E>,
    ) -> Result<R, E> {
        let mut tiles = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
        if !self.sorted.load(Ordering::Acquire) {
            tiles.sort_rows();
            self.sorted.store(true, Ordering::Release);
        }
        if !self.gathered.load(Ordering::Acquire) {
            let moves = gather_moves(&self.geom, &self.pivots, self.shares());
            exchange(comm, &moves, |i, j| tiles.get(i, j))?.apply(|i, j, v| *tiles.at(i, j) = v);
            self.gathered.store(true, Ordering::Release);
        }
        f(if self.on_layer_0 { &tiles } else { &self.empty })
    }

    /// Brings the factors into the form their uses read now rather than at the first use: the
    /// rows of every tile column in the layout's order, the layers' shares on layer 0. A timing
    /// of the factorisation alone (as a single-process `getrf` or `potrf` leaves its factors)
    /// includes it.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub fn settle<C: Communicator>(&self, comm: &C) -> Result<(), CommError> {
        self.with_layer_0(comm, |_| Ok(()))
    }

    /// [`TileFactors::with_layer_0`] on a single layer, without putting the rows in order
    /// first: `f` reads each tile column in the row order it has ([`Tiles::positions_of`]).
    /// With layers, the tiles `with_layer_0` gives.
    fn with_tiles_as_left<C: Communicator, R, E: From<CommError>>(
        &self,
        comm: &C,
        f: impl FnOnce(&Tiles<'_, T>) -> Result<R, E>,
    ) -> Result<R, E> {
        if self.geom.c > 1 {
            return self.with_layer_0(comm, f);
        }
        let tiles = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
        f(&tiles)
    }

    /// The grid columns that hold some of `nrhs` right-hand sides and whose solving ranks do
    /// not have their diagonal blocks yet.
    fn missing_block_columns(&self, nrhs: usize) -> Vec<bool> {
        if crate::ring::applies(&self.geom, nrhs) {
            // The ring solves each step where its diagonal block is.
            return vec![false; self.geom.py];
        }
        let have = self.blocks_for.lock().unwrap_or_else(|e| e.into_inner());
        (0..self.geom.py)
            .map(|y| !have[y] && !rhs_cols(&self.geom, nrhs, y).is_empty())
            .collect()
    }

    /// The diagonal blocks for a solve of `nrhs` right-hand sides, brought from layer 0's
    /// `tiles` to the grid columns that hold some and do not have them yet.
    ///
    /// # Collective
    fn blocks_for_rhs<C: Communicator>(
        &self,
        comm: &C,
        tiles: &Tiles<'_, T>,
        nrhs: usize,
    ) -> Result<std::sync::MutexGuard<'_, Vec<Vec<T>>>, FactorsError> {
        let missing = self.missing_block_columns(nrhs);
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        if missing.contains(&true) {
            bring_diagonal_blocks(comm, &self.geom, &self.pivots, tiles, &missing, &mut blocks)?;
            let mut have = self.blocks_for.lock().unwrap_or_else(|e| e.into_inner());
            for (h, m) in have.iter_mut().zip(&missing) {
                *h |= m;
            }
        }
        Ok(blocks)
    }

    /// Every rank's counters (of `p`, elements of `bytes` bytes) for bringing the layers'
    /// shares of the factors to layer 0, which the first call needing them whole does: zero
    /// once done, and with one layer.
    pub fn gather_costs(&self, p: usize, bytes: usize) -> Vec<CommStats> {
        if self.gathered.load(Ordering::Acquire) {
            vec![CommStats::default(); p]
        } else {
            gather_costs(&self.geom, p, &self.pivots, self.shares(), bytes)
        }
    }

    /// The layout in which [`TileFactors::solve`] takes and returns `nrhs` right-hand sides
    /// without transforming them.
    ///
    /// # Errors
    /// None for a valid geometry.
    pub fn rhs_layout(&self, nrhs: usize) -> Result<BlockCyclic, DistError> {
        rhs_layout(&self.geom, nrhs)
    }

    /// `X` with `A·X = B` for the right-hand sides `b` (`N` rows, checked by the caller) in
    /// any layout, returned in `b`'s layout.
    ///
    /// # Collective
    /// # Errors
    /// A communication, layout or kernel failure.
    pub fn solve<C, B>(
        &self,
        comm: &C,
        b: &B,
    ) -> Result<OwnedDistMatrix<T, B::Layout>, FactorsError>
    where
        C: Communicator,
        B: DistMatrix<T> + ?Sized,
    {
        self.solve_to(comm, b, Op::NoTrans, None, b.layout().clone())
    }

    /// `X` with `op(A)·X = B` for `A = Pᵀ·L·U` — the factors are those of `P·A`, row `i` of
    /// `P·A` being row `perm[i]` of `A` (`P = I` without `perm`; a permutation of `0..N`,
    /// checked by the caller) — returned in `layout` (of `b`'s shape): one transform in and
    /// one out, whatever `b`'s layout, and the rows permuted on the solve's grid (`P·B` before
    /// the sweeps, or `Pᵀ` applied to their result; a row-permuted layout, planned row by row,
    /// is not needed). A transposed solve (`op` not `NoTrans`) reads the factors' row blocks
    /// transposed in both sweeps; it takes LU factors without row interchanges of their own
    /// ([`TileFactors::from_factored`]'s, with no permutation).
    ///
    /// # Collective
    /// # Errors
    /// A communication, layout or kernel failure; [`FactorsError::Dist`] (`InvalidLayout`) on
    /// every rank for a transposed solve of factors with row interchanges or of a Cholesky
    /// factor.
    pub fn solve_to<C, B, L>(
        &self,
        comm: &C,
        b: &B,
        op: Op,
        perm: Option<&[usize]>,
        layout: L,
    ) -> Result<OwnedDistMatrix<T, L>, FactorsError>
    where
        C: Communicator,
        B: DistMatrix<T> + ?Sized,
        L: Layout + Clone,
    {
        let g = &self.geom;
        let triangles = self.triangles_for(op)?;
        let nrhs = b.shape().1;
        let native_layout = rhs_layout(g, nrhs)?;
        let mut native = OwnedDistMatrix::zeros(comm, native_layout.clone())?;
        transform(comm, T::one(), b, Op::NoTrans, T::zero(), &mut native)?;
        let mut local = rhs_tiles(g, comm.rank(), nrhs, native.into_local());
        let cols_of = |y| rhs_cols(g, nrhs, y);
        if let (Some(perm), Op::NoTrans) = (perm, op) {
            local = permute_rows(comm, g, perm, cols_of, &local, (g.n, nrhs))?;
        }
        let mut x = self.with_layer_0(comm, |tiles| {
            let blocks = self.blocks_for_rhs(comm, tiles, nrhs)?;
            solve_native(
                comm,
                g,
                triangles,
                &self.pivots,
                &blocks,
                tiles,
                local,
                nrhs,
                self.par,
            )
            .map_err(FactorsError::from)
        })?;
        if let (Some(perm), false) = (perm, op == Op::NoTrans) {
            // `X = Pᵀ·Y`: row `perm[i]` of `X` is row `i` of `Y`.
            x = permute_rows(comm, g, &inverse(perm), cols_of, &x, (g.n, nrhs))?;
        }
        let x = OwnedDistMatrix::from_local(comm, native_layout, x.data.into_vec())?;
        let mut out = OwnedDistMatrix::zeros(comm, layout)?;
        transform(comm, T::one(), &x, Op::NoTrans, T::zero(), &mut out)?;
        Ok(out)
    }

    /// Every rank's predicted counters for [`TileFactors::solve`] of `nrhs` right-hand sides
    /// given in [`TileFactors::rhs_layout`] (no transform traffic), on `p` ranks, for elements
    /// of `bytes` bytes: the solve, and the gathering of the factors if no call has done it
    /// yet.
    pub fn solve_costs(&self, p: usize, nrhs: usize, bytes: usize) -> Vec<CommStats> {
        self.solve_to_costs(p, (nrhs, Op::NoTrans, None), bytes)
            .expect("a solve without transposition takes any factors")
    }

    /// Every rank's predicted counters for [`TileFactors::solve_to`] with `op` and `perm`, the
    /// right-hand sides given in and the solution asked for in [`TileFactors::rhs_layout`] (no
    /// transform traffic), on `p` ranks, for elements of `bytes` bytes: `perm`'s row moves
    /// (before the sweeps for `NoTrans`, after them otherwise), the sweeps with `op`'s
    /// triangles, the diagonal blocks brought to grid columns with right-hand sides that do not
    /// have them yet ([`TileFactors::from_factored`]'s factors), and the gathering of the
    /// factors if no call has done it yet.
    ///
    /// # Errors
    /// As [`TileFactors::solve_to`]: a transposed solve with factors that keep row interchanges
    /// of their own.
    pub fn solve_to_costs(
        &self,
        p: usize,
        (nrhs, op, perm): (usize, Op, Option<&[usize]>),
        bytes: usize,
    ) -> Result<Vec<CommStats>, FactorsError> {
        let g = &self.geom;
        let triangles = self.triangles_for(op)?;
        let mut stats = solve_costs(g, triangles, p, &self.pivots, nrhs, bytes);
        if let Some(perm) = perm {
            let rows = if op == Op::NoTrans {
                perm.to_vec()
            } else {
                inverse(perm)
            };
            let moves = permute_moves(g, &rows, |y| rhs_cols(g, nrhs, y));
            for (r, tr) in Move::transfers(&moves, p).iter().enumerate() {
                stats[r] = stats[r] + tr.stats(r, bytes);
            }
        }
        let missing = self.missing_block_columns(nrhs);
        if missing.contains(&true) {
            let moves = diagonal_block_moves(g, &self.pivots, &missing);
            for (r, tr) in Move::transfers(&moves, p).iter().enumerate() {
                stats[r] = stats[r] + tr.stats(r, bytes);
            }
        }
        let gather = self.gather_costs(p, bytes);
        Ok(stats.into_iter().zip(gather).map(|(s, g)| s + g).collect())
    }

    /// The triangles a solve with `op` reads: the factors' own for `NoTrans`; for LU factors
    /// without interchanges of their own, `U`'s then `L`'s row blocks transposed.
    fn triangles_for(&self, op: Op) -> Result<Triangles, FactorsError> {
        match (self.triangles, op) {
            (triangles, Op::NoTrans) => Ok(triangles),
            (Triangles::Lu, op) if self.unpivoted() => Ok(match op {
                Op::Trans => Triangles::LuTransposed,
                _ => Triangles::LuAdjoint,
            }),
            _ => Err(FactorsError::Dist(DistError::InvalidLayout(
                "a transposed solve takes LU factors without row interchanges".into(),
            ))),
        }
    }

    /// Writes `op` of the whole factors into `dst` (any layout), their rows permuted by `perm`
    /// when given (row `i` of the result is row `perm[i]`), only `dst`'s `triangle` when given
    /// (the rest of `dst` untouched): straight from layer 0's tiles, one transform, no copy.
    ///
    /// # Collective
    /// # Errors
    /// A communication or layout failure.
    pub fn write_to<C, B>(
        &self,
        comm: &C,
        perm: Option<&[usize]>,
        op: Op,
        dst: &mut B,
        triangle: Option<Uplo>,
    ) -> Result<(), FactorsError>
    where
        C: Communicator,
        B: DistMatrixMut<T> + ?Sized,
    {
        let layout = self.geom.layer_layout()?;
        let here = op == Op::NoTrans && triangle.is_none() && same_owners(&layout, dst.layout());
        if let (Some(perm), true, 1) = (perm, here, self.geom.px) {
            // One process row, every element staying on its rank: straight from the tiles in
            // one pass, each column read in the row order the steps left it.
            return self.with_tiles_as_left(comm, |tiles| {
                let blocks = dst.layout().blocks(comm.rank());
                write_rows_here(tiles, perm, &blocks, dst.local_mut());
                Ok(())
            });
        }
        self.with_layer_0(comm, |tiles| match perm {
            // One process row: every rank holding tiles holds whole columns, so the rows are
            // put in `perm`'s order locally and the columns move as they are (a row-permuted
            // transform would plan and pack every row on its own).
            Some(perm) if self.geom.px == 1 => {
                let permuted = rows_in_order(tiles, perm);
                let src = BorrowedDistMatrix::new(comm, layout, &permuted)?;
                let done = put(comm, &src, op, dst, triangle);
                recycle(permuted);
                done
            }
            Some(perm) => {
                let rows = RowPermuted::new(layout, perm.to_vec())?;
                let src = BorrowedDistMatrix::new(comm, rows, &tiles.data)?;
                put(comm, &src, op, dst, triangle)
            }
            None => {
                let src = BorrowedDistMatrix::new(comm, layout, &tiles.data)?;
                put(comm, &src, op, dst, triangle)
            }
        })
    }

    /// The whole factors in layer 0's layout, their rows permuted by `perm` when given (row `i`
    /// of the result is row `perm[i]`), every entry mapped by `keep(i, j, value)`, then moved
    /// to `layout` as `op` of that (`Op::ConjTrans`: Cholesky's `U = Lᴴ`).
    ///
    /// # Collective
    /// # Errors
    /// A communication or layout failure.
    pub fn to_layout<C: Communicator, L: Layout>(
        &self,
        comm: &C,
        perm: Option<&[usize]>,
        keep: impl Fn(usize, usize, T) -> T,
        op: Op,
        layout: L,
    ) -> Result<OwnedDistMatrix<T, L>, FactorsError> {
        let g = &self.geom;
        let mut m = self.with_layer_0(comm, |tiles| match perm {
            Some(perm) => permute_rows(comm, g, perm, |y| g.owned_cols(y), tiles, (g.m, g.n)),
            None => Ok(Tiles::from_parts(
                tiles.rows.clone(),
                tiles.cols.clone(),
                (g.m, g.n),
                tiles.data.to_vec(),
            )),
        })?;
        let ld = m.ld();
        for (jj, &j) in m.cols.clone().iter().enumerate() {
            for (ii, &i) in m.rows.clone().iter().enumerate() {
                let e = &mut m.data[ii + jj * ld];
                *e = keep(i, j, *e);
            }
        }
        let native = OwnedDistMatrix::from_local(comm, g.layer_layout()?, m.data.into_vec())?;
        let mut out = OwnedDistMatrix::zeros(comm, layout)?;
        transform(comm, T::one(), &native, op, T::zero(), &mut out)?;
        Ok(out)
    }
}

/// The moves bringing each step's diagonal block (rows `pivots[t]`, the panel's columns) to the
/// solving grid row of every grid column in `columns`.
fn diagonal_block_moves(geom: &Geometry, pivots: &[Vec<usize>], columns: &[bool]) -> Vec<Move> {
    let mut moves = Vec::new();
    for (t, piv) in pivots.iter().enumerate() {
        let y = geom.col_py(geom.panel(t).start);
        for x in 0..geom.px {
            let rows = geom.rows_of(piv, x);
            if rows.is_empty() {
                continue;
            }
            for to_y in (0..geom.py).filter(|&to_y| columns[to_y]) {
                moves.push(Move {
                    from: geom.rank(x, y, 0),
                    to: geom.rank(geom.solver_row(t), to_y, 0),
                    rows: rows.clone(),
                    cols: geom.panel(t).collect(),
                });
            }
        }
    }
    moves
}

/// Each step's diagonal block (rows in pivot order, `pivots[t]`) of the factors in layer 0's
/// `tiles`, brought into `blocks` on the solving grid row of each grid column in `columns`, as
/// [`crate::run()`] leaves them — except a block its solving rank holds in one piece, left
/// empty there and read in the tiles by the solve.
///
/// # Collective
/// # Errors
/// A communication failure.
fn bring_diagonal_blocks<T: KernelScalar, C: Communicator>(
    comm: &C,
    geom: &Geometry,
    pivots: &[Vec<usize>],
    tiles: &Tiles<'_, T>,
    columns: &[bool],
    blocks: &mut [Vec<T>],
) -> Result<(), FactorsError> {
    let (me, at) = (
        comm.rank(),
        geom.coords(comm.rank()).filter(|&(_, _, z)| z == 0),
    );
    // A block this rank solves with and holds itself, in one piece, is read where it is (the
    // solve finds it there when its block is left empty); the others are copied.
    let in_place = |t: usize| {
        let panel: Vec<usize> = geom.panel(t).collect();
        at.is_some_and(|(x, _, _)| x == geom.solver_row(t))
            && block_in_tiles(tiles, &pivots[t], &panel).is_ok_and(|b| b.is_some())
    };
    let kept: Vec<bool> = (0..pivots.len()).map(in_place).collect();
    let moves: Vec<Move> = diagonal_block_moves(geom, pivots, columns)
        .into_iter()
        .filter(|m| !(m.from == me && m.to == me && kept[m.cols[0] / geom.v]))
        .collect();
    let mut position = vec![0; geom.m]; // of each row in its step's pivots
    for piv in pivots {
        for (k, &r) in piv.iter().enumerate() {
            position[r] = k;
        }
    }
    for (t, block) in blocks.iter_mut().enumerate() {
        let solves = at.is_some_and(|(x, y, _)| x == geom.solver_row(t) && columns[y]);
        if solves && !kept[t] && block.is_empty() {
            *block = vec![T::zero(); geom.panel(t).len().pow(2)];
        }
    }
    // A column of a move at a time, in runs of neighbouring rows (a step's rows are a tile's
    // rows, neighbours both in the local array and in the block).
    exchange_cols_into(
        comm,
        &moves,
        |j, rows, out| tiles.gather_rows(j, rows, out),
        |j, rows, vals| {
            let t = j / geom.v;
            let w = geom.panel(t).len();
            let column = &mut blocks[t][(j - t * geom.v) * w..][..w];
            scatter_runs(column, rows, |r| position[r], vals);
        },
    )?;
    Ok(())
}

/// `dst = op(src)` (only `dst`'s `triangle` when given).
/// `tiles`' local array with its rows in `perm`'s order (local row `i` of the result is global
/// row `perm[i]`); `tiles` must hold every row (one process row) or none.
fn rows_in_order<T: Scalar>(tiles: &Tiles<'_, T>, perm: &[usize]) -> Vec<T> {
    let ld = tiles.rows.len();
    let mut out = take_buffer(tiles.data.len(), T::zero());
    if ld == 0 {
        return out;
    }
    debug_assert_eq!(ld, perm.len());
    let at: Vec<usize> = perm.iter().map(|&r| tiles.row_position(r)).collect();
    for (to, from) in out.chunks_exact_mut(ld).zip(tiles.data.chunks_exact(ld)) {
        for (x, &k) in to.iter_mut().zip(&at) {
            *x = from[k];
        }
    }
    out
}

/// The local array of `dst`'s `blocks` on this rank from the tiles of a grid of one process row
/// that hold every element of them, each column in whatever row order it has: row `i` of `dst`
/// is the tiles' row `perm[i]`. Column by column, ascending, through the blocks of each block
/// column (`blocks` in column-major block order), so that each row order is looked up once.
fn write_rows_here<T: Scalar>(
    tiles: &Tiles<'_, T>,
    perm: &[usize],
    blocks: &[LocalBlock],
    dst: &mut [T],
) {
    let ld = tiles.ld();
    let mut positions = tiles.positions_of(perm);
    let mut first = 0;
    while first < blocks.len() {
        let cols = blocks[first].cols.clone();
        let end = first
            + blocks[first..]
                .iter()
                .take_while(|b| b.cols == cols)
                .count();
        for j in cols {
            let k = tiles.col_pos(j);
            let at = positions.column(k);
            let col = &tiles.data[k * ld..][..ld];
            for b in &blocks[first..end] {
                let at = &at[b.rows.clone()];
                let out = &mut dst[b.local_index(b.rows.start, j)..][..at.len()];
                for (x, &r) in out.iter_mut().zip(at) {
                    *x = col[r];
                }
            }
        }
        first = end;
    }
}

fn put<T, C, A, B>(
    comm: &C,
    src: &A,
    op: Op,
    dst: &mut B,
    triangle: Option<Uplo>,
) -> Result<(), FactorsError>
where
    T: Scalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrixMut<T> + ?Sized,
{
    match triangle {
        Some(uplo) => transform_triangle(comm, T::one(), src, op, T::zero(), dst, uplo)?,
        None => transform(comm, T::one(), src, op, T::zero(), dst)?,
    }
    Ok(())
}

impl<T: Scalar> Drop for TileFactors<'_, T> {
    /// The factors' buffer back to this thread's pool, for the next factorisation (an array
    /// read where it is stays with its owner).
    fn drop(&mut self) {
        let tiles = self.tiles.get_mut().unwrap_or_else(|e| e.into_inner());
        std::mem::take(&mut tiles.data).recycle();
    }
}

/// This rank's tiles of `nrhs` right-hand sides in [`rhs_layout`].
fn rhs_tiles<T: Scalar>(
    g: &Geometry,
    rank: usize,
    nrhs: usize,
    local: Vec<T>,
) -> Tiles<'static, T> {
    let (rows, cols) = match g.coords(rank) {
        Some((x, y, 0)) => (g.owned_rows(x), rhs_cols(g, nrhs, y)),
        _ => (Vec::new(), Vec::new()),
    };
    Tiles::from_parts(rows, cols, (g.n, nrhs), local)
}

/// The inverse of the permutation `perm`: `inverse(perm)[perm[i]] = i`.
fn inverse(perm: &[usize]) -> Vec<usize> {
    let mut out = vec![0; perm.len()];
    for (i, &r) in perm.iter().enumerate() {
        out[r] = i;
    }
    out
}
