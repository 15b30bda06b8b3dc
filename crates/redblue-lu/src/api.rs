//! [`lu`]: factor a distributed matrix in any layout, with COnfLUX or the 2D baseline, into
//! [`LuFactors`].

use crate::factor::{factor, gather_moves, Pivoting};
use crate::replay::{factor_costs, gather_costs, planned_words};
use crate::solve::{permute_rows, rhs_cols, rhs_layout, solve_costs, solve_native};
use crate::LuError;
use redblue_comm::{CommStats, Communicator};
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::{Op, Scalar};
use redblue_dist::exchange::exchange;
use redblue_dist::{transform, BlockCyclic, DistMatrix, Layout, OwnedDistMatrix};
use redblue_kernels::KernelScalar;
use redblue_pipeline::{
    choose_width, estimated_words, plan_grid, widths, Geometry, TileGrid, Tiles,
};
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Which factorisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LuAlgorithm {
    /// COnfLUX: 2.5D, tournament pivoting.
    #[default]
    Conflux,
    /// Right-looking 2D block-cyclic LU with partial pivoting (ScaLAPACK's PDGETRF).
    TwoD,
}

impl fmt::Display for LuAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LuAlgorithm::Conflux => "conflux",
            LuAlgorithm::TwoD => "2d",
        })
    }
}

impl std::str::FromStr for LuAlgorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "conflux" => Ok(LuAlgorithm::Conflux),
            "2d" => Ok(LuAlgorithm::TwoD),
            _ => Err(format!("unknown LU algorithm '{s}' (conflux or 2d)")),
        }
    }
}

/// The preferred tile width `v`: [`lu_plan`] takes it (as a multiple of `c`) unless it moves
/// noticeably more words than a narrower one.
pub const DEFAULT_BLOCK: usize = redblue_pipeline::PREFERRED_WIDTH;

/// How to factor: the algorithm, and optionally the grid, the tile width, the memory per rank
/// and the idle fraction allowed when choosing the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct LuParams {
    /// COnfLUX or 2D.
    pub algorithm: LuAlgorithm,
    /// The grid; chosen from `N`, `P` and the memory when `None` (2D: `c = 1`).
    pub grid: Option<TileGrid>,
    /// The number of layers `c` when the grid is chosen (the layer grid is then the best 2D
    /// grid on `⌊P/c⌋` ranks); chosen with the grid when `None`.
    pub layers: Option<usize>,
    /// Tile width `v` (at least the number of layers); chosen with the grid when `None` (see
    /// [`lu_plan`]).
    pub block: Option<usize>,
    /// Words of memory per rank, for the choice of the grid.
    pub memory: Option<f64>,
    /// Largest fraction of ranks that may stay idle for a better grid.
    pub idle: f64,
}

impl Default for LuParams {
    fn default() -> Self {
        LuParams {
            algorithm: LuAlgorithm::Conflux,
            grid: None,
            layers: None,
            block: None,
            memory: None,
            idle: 0.03,
        }
    }
}

/// The grid and tile width [`lu`] uses for an `n × n` matrix on `p` ranks: those given, or
/// those [`plan_grid`] finds best by the factorisation's exact volume per used rank (for a
/// matrix needing no interchanges: every term of the model — broadcasts, shares of the layers,
/// the tiles' discreteness — counted), the tile width a multiple of `c`.
///
/// # Errors
/// [`LuError::InvalidParams`] for a zero tile width, a given grid (or number of layers) larger
/// than `p` or with more layers than the tile width (or more than one, for 2D);
/// [`LuError::Grid`] when no grid fits.
pub fn lu_plan(n: usize, p: usize, params: &LuParams) -> Result<(TileGrid, usize), LuError> {
    if params.block == Some(0) {
        return Err(LuError::InvalidParams(
            "the tile width must be positive".into(),
        ));
    }
    let pivoting = pivoting_of(params.algorithm);
    // The exact volume costs `O(N/v·(Px + Py + c))` a grid; past a budget (orders of 10⁸ and
    // more) the leading order with the broadcast stands in.
    let exact = exact_volume_is_cheap(n, p);
    let cost = |grid: TileGrid, v: usize| {
        if exact {
            planned_words(&Geometry::new(n, v, grid), pivoting) / grid.ranks() as f64
        } else {
            estimated_words(n as f64, grid, v as f64)
        }
    };
    let layers = match params.algorithm {
        LuAlgorithm::TwoD if params.layers.is_some_and(|c| c != 1) => {
            return Err(LuError::InvalidParams("2D LU has one layer".into()));
        }
        LuAlgorithm::TwoD => Some(1),
        LuAlgorithm::Conflux => params.layers,
    };
    if let Some(c) = layers.filter(|&c| c == 0 || c > p) {
        return Err(LuError::InvalidParams(format!(
            "{c} layers do not fit on {p} ranks"
        )));
    }
    let (grid, v) = match params.grid {
        Some(g) => {
            let v = match params.block {
                Some(v) => v,
                None if g.px == 0 || g.py == 0 || g.c == 0 => 1,
                None => choose_width(g.c, None, |v| cost(g, v)),
            };
            (g, v)
        }
        None => {
            let (grid, v) =
                plan_grid(n, p, params.memory, params.idle, layers, params.block, cost)?;
            match params.algorithm {
                LuAlgorithm::Conflux if params.block.is_none() && exact => {
                    (grid, narrow_to_2d(n, p, params, grid, v, cost)?)
                }
                _ => (grid, v),
            }
        }
    };
    if grid.px == 0 || grid.py == 0 || grid.c == 0 || grid.ranks() > p {
        return Err(LuError::InvalidParams(format!(
            "grid {grid} does not fit on {p} ranks"
        )));
    }
    if grid.c > v {
        return Err(LuError::InvalidParams(format!(
            "{} layers need a tile width of at least {}, not {v}",
            grid.c, grid.c
        )));
    }
    if params.algorithm == LuAlgorithm::TwoD && grid.c != 1 {
        return Err(LuError::InvalidParams("2D LU has one layer".into()));
    }
    Ok((grid, v))
}

/// COnfLUX's tile width on `grid`, narrowed from `v` (through the widths
/// [`plan_grid`] tries) until the exact model's largest words sent and received by a rank are
/// no more than the 2D baseline's plan: tournament pivoting's butterfly moves `log₂ Px` blocks
/// of `v²` per step where partial pivoting moves about one, so on grids with few layers a wide
/// tile can cost a little more than 2D. `v` if no narrower width does better.
fn narrow_to_2d(
    n: usize,
    p: usize,
    params: &LuParams,
    grid: TileGrid,
    v: usize,
    cost: impl Fn(TileGrid, usize) -> f64,
) -> Result<usize, LuError> {
    let two_d = LuParams {
        algorithm: LuAlgorithm::TwoD,
        grid: None,
        layers: None,
        ..params.clone()
    };
    let (g2, v2) = lu_plan(n, p, &two_d)?;
    let baseline = planned_words(&Geometry::new(n, v2, g2), Pivoting::Partial) / g2.ranks() as f64;
    // Far below the baseline on average: far below it at the busiest rank too (the exact
    // replay is not needed).
    if cost(grid, v) <= 0.9 * baseline {
        return Ok(v);
    }
    if !replay_is_cheap(n, p, v) {
        // Too large to replay rank by rank: by the averages.
        return Ok(widths(grid.c, None)
            .into_iter()
            .rev()
            .filter(|&w| w <= v)
            .find(|&w| cost(grid, w) <= baseline)
            .unwrap_or(v));
    }
    let maxima = |g: TileGrid, v: usize, pivoting| {
        let stats = factor_costs(
            &Geometry::new(n, v, g),
            p,
            pivoting,
            &diagonal_pivots(n, v),
            8,
        );
        let sent = stats.iter().map(|s| s.words_sent).max().unwrap_or(0);
        let received = stats.iter().map(|s| s.words_received).max().unwrap_or(0);
        (sent, received)
    };
    let (sent_2d, received_2d) = maxima(g2, v2, Pivoting::Partial);
    let fits = |w: usize| {
        let (sent, received) = maxima(grid, w, Pivoting::Tournament);
        sent <= sent_2d && received <= received_2d
    };
    if fits(v) {
        return Ok(v);
    }
    Ok(widths(grid.c, None)
        .into_iter()
        .rev()
        .filter(|&w| w < v)
        .find(|&w| fits(w))
        .unwrap_or(v))
}

/// Whether weighing grids by the exact volume stays cheap for an `n × n` factorisation on `p`
/// ranks: `⌈N/32⌉·(2√P + ∛P)` (the steps at the narrowest width times a grid's rows, columns
/// and layers) at most `10⁷`.
fn exact_volume_is_cheap(n: usize, p: usize) -> bool {
    let side = (p as f64).sqrt() * 2.0 + (p as f64).cbrt();
    n.div_ceil(32) as f64 * side <= 1e7
}

/// How each algorithm chooses its pivots.
fn pivoting_of(algorithm: LuAlgorithm) -> Pivoting {
    match algorithm {
        LuAlgorithm::Conflux => Pivoting::Tournament,
        LuAlgorithm::TwoD => Pivoting::Partial,
    }
}

/// `A = P·L·U` of a square matrix in any layout, on every rank of `comm`.
///
/// # Collective
/// # Errors
/// The same on every rank: [`LuError::NotSquare`], [`LuError::NotFinite`],
/// [`LuError::Singular`] naming the column, bad parameters (see [`lu_plan`]); communication
/// failures.
pub fn lu<T, C, A>(comm: &C, a: &A, params: &LuParams) -> Result<LuFactors<T, A::Layout>, LuError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
{
    let geom = plan_for(comm, a.shape(), a.layout().nranks(), params)?;
    let native_layout = geom.layer_layout()?;
    // The working copy in a pooled buffer (a repeated factorisation maps no new pages); the
    // transform with beta = 0 writes every element.
    let work = take_buffer(native_layout.local_len(comm.rank()), T::zero());
    let mut native = OwnedDistMatrix::from_local(comm, native_layout, work)?;
    transform(comm, T::one(), a, Op::NoTrans, T::zero(), &mut native)?;
    factor_native(comm, geom, params, a.layout().clone(), native.into_local())
}

/// [`lu`] of a matrix given by value: in place, without a copy, when it is already in the
/// factorisation's layout — `BlockCyclic::new(n, n, v, v, Px, Py)` in column-major rank
/// order, with the grid and `v` that [`lu_plan`] gives — as ScaLAPACK's `pdgetrf` overwrites
/// its input; any other layout is copied as [`lu`] does. `L` is `BlockCyclic` or a layout
/// that can hold one (`AnyLayout`).
///
/// # Collective
/// # Errors
/// As [`lu`].
pub fn lu_in_place<T, C, L>(
    comm: &C,
    a: OwnedDistMatrix<T, L>,
    params: &LuParams,
) -> Result<LuFactors<T, L>, LuError>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout + PartialEq + From<BlockCyclic>,
{
    let geom = plan_for(comm, a.shape(), a.layout().nranks(), params)?;
    if *a.layout() != L::from(geom.layer_layout()?) {
        return lu(comm, &a, params);
    }
    let layout = a.layout().clone();
    factor_native(comm, geom, params, layout, a.into_local())
}

/// The geometry of a factorisation of a matrix of `shape` spread over `layout_ranks` ranks.
fn plan_for<C: Communicator>(
    comm: &C,
    (m, n): (usize, usize),
    layout_ranks: usize,
    params: &LuParams,
) -> Result<Geometry, LuError> {
    if m != n {
        return Err(LuError::NotSquare { shape: (m, n) });
    }
    if layout_ranks > comm.size() {
        return Err(LuError::InvalidParams(format!(
            "the matrix spreads over {layout_ranks} ranks, the communicator has {}",
            comm.size()
        )));
    }
    let (grid, v) = lu_plan(n, comm.size(), params)?;
    Ok(Geometry::new(n, v, grid))
}

/// Factors this rank's local array `local` of the layer layout of `geom` (empty off layer 0);
/// `layout` is the caller's layout, for the factors given back.
fn factor_native<T: KernelScalar, C: Communicator, L: Layout>(
    comm: &C,
    geom: Geometry,
    params: &LuParams,
    layout: L,
    local: Vec<T>,
) -> Result<LuFactors<T, L>, LuError> {
    let f = factor(comm, &geom, pivoting_of(params.algorithm), local)?;
    let tiles = rank_tiles(&geom, comm.rank(), f.local);
    let perm: Vec<usize> = f.pivots.iter().flatten().copied().collect();
    let growth = if f.max_a == 0.0 {
        0.0
    } else {
        f.max_u / f.max_a
    };
    let on_layer_0 = geom.coords(comm.rank()).is_none_or(|(_, _, z)| z == 0);
    Ok(LuFactors {
        layout,
        tiles: Mutex::new(tiles),
        gathered: AtomicBool::new(geom.c == 1),
        on_layer_0,
        empty: Tiles::empty(&geom),
        geom,
        pivots: f.pivots,
        a00: f.a00,
        perm,
        growth,
    })
}

/// The factors of [`lu`], kept where the factorisation left them — spread over the layers, in
/// unpermuted rows (row `perm[i]` holds row `i` of `L` left of column `i`, unit diagonal
/// implied, and row `i` of `U` from column `i` on) — and the permutation. The first call that
/// needs them whole ([`LuFactors::packed`], [`LuFactors::lower`], [`LuFactors::upper`],
/// [`LuFactors::solve`]) brings the layers' shares to layer 0's tiles in one exchange
/// ([`LuFactors::gather_costs`]); they are used there from then on.
pub struct LuFactors<T: Scalar, L> {
    /// The input's layout.
    layout: L,
    /// This rank's tiles of its layer (empty off the grid): its layer's share of the factors,
    /// and on layer 0, once gathered, the whole factors.
    tiles: Mutex<Tiles<T>>,
    /// Whether layer 0's tiles hold the whole factors (always with one layer).
    gathered: AtomicBool,
    /// Whether this rank's tiles are layer 0's (or it is off the grid).
    on_layer_0: bool,
    /// No tiles: what a rank off layer 0 passes where layer 0's are wanted.
    empty: Tiles<T>,
    geom: Geometry,
    pivots: Vec<Vec<usize>>,
    a00: Vec<Vec<T>>,
    perm: Vec<usize>,
    growth: f64,
}

impl<T: KernelScalar, L: Layout> LuFactors<T, L> {
    /// `L` and `U` packed in unpermuted rows (as LAPACK's getrf leaves them before its row
    /// interchanges), in the input's layout.
    ///
    /// # Collective
    /// # Errors
    /// As [`LuFactors::lower`].
    pub fn packed<C: Communicator>(&self, comm: &C) -> Result<OwnedDistMatrix<T, L>, LuError> {
        self.check_comm(comm, self.layout.nranks())?;
        let g = &self.geom;
        let data = self.with_layer_0(comm, |tiles| Ok(tiles.data.clone()))?;
        let native = OwnedDistMatrix::from_local(comm, g.layer_layout()?, data)?;
        let mut out = OwnedDistMatrix::zeros(comm, self.layout.clone())?;
        transform(comm, T::one(), &native, Op::NoTrans, T::zero(), &mut out)?;
        Ok(out)
    }

    /// Runs `f` with this rank's layer-0 tiles of the whole factors (none off layer 0),
    /// gathering the layers' shares there first if no call has done so yet.
    ///
    /// # Collective
    fn with_layer_0<C: Communicator, R>(
        &self,
        comm: &C,
        f: impl FnOnce(&Tiles<T>) -> Result<R, LuError>,
    ) -> Result<R, LuError> {
        let mut tiles = self.tiles.lock().unwrap_or_else(|e| e.into_inner());
        if !self.gathered.load(Ordering::Acquire) {
            let moves = gather_moves(&self.geom, &self.pivots);
            exchange(comm, &moves, |i, j| tiles.get(i, j))?.apply(|i, j, v| *tiles.at(i, j) = v);
            self.gathered.store(true, Ordering::Release);
        }
        f(if self.on_layer_0 { &tiles } else { &self.empty })
    }

    /// Every rank's counters (of `p`, elements of `bytes` bytes) for bringing the layers'
    /// shares of the factors to layer 0, which the first of [`LuFactors::packed`],
    /// [`LuFactors::lower`], [`LuFactors::upper`] or [`LuFactors::solve`] does: zero once done,
    /// and with one layer.
    pub fn gather_costs(&self, p: usize, bytes: usize) -> Vec<CommStats> {
        if self.gathered.load(Ordering::Acquire) {
            vec![CommStats::default(); p]
        } else {
            gather_costs(&self.geom, p, &self.pivots, bytes)
        }
    }

    /// Row `i` of `P·A` is row `perm()[i]` of `A`.
    pub fn perm(&self) -> &[usize] {
        &self.perm
    }

    /// The permutation as LAPACK's (0-based) `ipiv`: for `i = 0, 1, ...` in order, row `i` was
    /// interchanged with row `ipiv[i] ≥ i`.
    pub fn ipiv(&self) -> Vec<usize> {
        let n = self.perm.len();
        let mut at: Vec<usize> = (0..n).collect(); // row now at each position
        let mut where_is: Vec<usize> = (0..n).collect(); // position of each row
        let mut ipiv = Vec::with_capacity(n);
        for (i, &row) in self.perm.iter().enumerate() {
            let j = where_is[row];
            ipiv.push(j);
            let other = at[i];
            at.swap(i, j);
            where_is[row] = i;
            where_is[other] = j;
        }
        ipiv
    }

    /// The growth factor `max |U| / max |A|`.
    pub fn growth(&self) -> f64 {
        self.growth
    }

    /// The grid used.
    pub fn grid(&self) -> TileGrid {
        TileGrid {
            px: self.geom.px,
            py: self.geom.py,
            c: self.geom.c,
        }
    }

    /// The tile width used.
    pub fn block(&self) -> usize {
        self.geom.v
    }

    /// The order `N`.
    pub fn order(&self) -> usize {
        self.geom.n
    }

    /// The layout in which [`LuFactors::solve`] takes and returns `nrhs` right-hand sides
    /// without transforming them: `N × nrhs` in `v × v` tiles over layer 0's `Px × Py` grid
    /// (ranks `0..Px·Py`, column-major), rows placed like the factors' rows.
    ///
    /// # Errors
    /// None for a factorisation that succeeded (the layout is valid for any `nrhs`).
    pub fn rhs_layout(&self, nrhs: usize) -> Result<BlockCyclic, LuError> {
        Ok(rhs_layout(&self.geom, nrhs)?)
    }

    /// `X` with `A·X = B` for the `N × K` right-hand sides `b` in any layout, returned in
    /// `b`'s layout: the permutation, then forward and back substitution on the factors'
    /// grid (distributed triangular solves, see the book's LU page). `comm` must be the
    /// communicator of the factorisation (or one of the same size).
    ///
    /// # Collective
    /// # Errors
    /// The same on every rank: [`LuError::RhsHeight`] if `b` does not have `N` rows,
    /// [`LuError::InvalidParams`] if `comm` is smaller than the factorisation's grid or `b`'s
    /// layout; communication failures.
    pub fn solve<C, B>(&self, comm: &C, b: &B) -> Result<OwnedDistMatrix<T, B::Layout>, LuError>
    where
        C: Communicator,
        B: DistMatrix<T> + ?Sized,
    {
        let (rows, nrhs) = b.shape();
        if rows != self.geom.n {
            return Err(LuError::RhsHeight {
                expected: self.geom.n,
                found: rows,
            });
        }
        self.check_comm(comm, b.layout().nranks())?;
        let g = &self.geom;
        let layout = rhs_layout(g, nrhs)?;
        let mut native = OwnedDistMatrix::zeros(comm, layout.clone())?;
        transform(comm, T::one(), b, Op::NoTrans, T::zero(), &mut native)?;
        let local = rhs_tiles(g, comm.rank(), nrhs, native.into_local());
        let x = self.with_layer_0(comm, |tiles| {
            solve_native(comm, g, &self.pivots, &self.a00, tiles, local, nrhs)
        })?;
        let x = OwnedDistMatrix::from_local(comm, layout, x.data)?;
        let mut out = OwnedDistMatrix::zeros(comm, b.layout().clone())?;
        transform(comm, T::one(), &x, Op::NoTrans, T::zero(), &mut out)?;
        Ok(out)
    }

    /// Every rank's predicted counters for [`LuFactors::solve`] of `nrhs` right-hand sides
    /// given in [`LuFactors::rhs_layout`] (no transform traffic), on `p` ranks, for elements
    /// of `bytes` bytes: the solve, and the gathering of the factors if no call has done it
    /// yet ([`LuFactors::gather_costs`]).
    pub fn solve_costs(&self, p: usize, nrhs: usize, bytes: usize) -> Vec<CommStats> {
        let solve = solve_costs(&self.geom, p, &self.pivots, nrhs, bytes);
        let gather = self.gather_costs(p, bytes);
        solve.into_iter().zip(gather).map(|(s, g)| s + g).collect()
    }

    /// The unit lower triangular `L` of `P·A = L·U`, in the input's layout.
    ///
    /// # Collective
    /// # Errors
    /// As [`LuFactors::solve`] for the communicator; communication failures.
    pub fn lower<C: Communicator>(&self, comm: &C) -> Result<OwnedDistMatrix<T, L>, LuError> {
        self.triangle(comm, |i, j, v| match j.cmp(&i) {
            std::cmp::Ordering::Less => v,
            std::cmp::Ordering::Equal => T::one(),
            std::cmp::Ordering::Greater => T::zero(),
        })
    }

    /// The upper triangular `U` of `P·A = L·U`, in the input's layout.
    ///
    /// # Collective
    /// # Errors
    /// As [`LuFactors::lower`].
    pub fn upper<C: Communicator>(&self, comm: &C) -> Result<OwnedDistMatrix<T, L>, LuError> {
        self.triangle(comm, |i, j, v| if j >= i { v } else { T::zero() })
    }

    /// The packed factors with their rows permuted (`P·(packed)`), each entry mapped by
    /// `keep(i, j, value)`, in the input's layout.
    fn triangle<C: Communicator>(
        &self,
        comm: &C,
        keep: impl Fn(usize, usize, T) -> T,
    ) -> Result<OwnedDistMatrix<T, L>, LuError> {
        self.check_comm(comm, self.layout.nranks())?;
        let g = &self.geom;
        let mut m = self.with_layer_0(comm, |tiles| {
            permute_rows(comm, g, &self.perm, |y| g.owned(y, g.py), tiles, (g.n, g.n))
        })?;
        let ld = m.ld();
        for (jj, &j) in m.cols.clone().iter().enumerate() {
            for (ii, &i) in m.rows.clone().iter().enumerate() {
                let e = &mut m.data[ii + jj * ld];
                *e = keep(i, j, *e);
            }
        }
        let native = OwnedDistMatrix::from_local(comm, g.layer_layout()?, m.data)?;
        let mut out = OwnedDistMatrix::zeros(comm, self.layout.clone())?;
        transform(comm, T::one(), &native, Op::NoTrans, T::zero(), &mut out)?;
        Ok(out)
    }

    /// `comm` must hold the factorisation's grid and a layout over `layout_ranks` ranks.
    fn check_comm<C: Communicator>(&self, comm: &C, layout_ranks: usize) -> Result<(), LuError> {
        let need = self.geom.ranks().max(layout_ranks);
        if comm.size() < need {
            return Err(LuError::InvalidParams(format!(
                "the communicator has {} ranks, the factors and the matrix need {need}",
                comm.size()
            )));
        }
        Ok(())
    }

    /// Every step's pivot rows.
    pub fn step_pivots(&self) -> &[Vec<usize>] {
        &self.pivots
    }
}

impl<T: Scalar, L> Drop for LuFactors<T, L> {
    /// The factors' buffer back to this thread's pool, for the next factorisation.
    fn drop(&mut self) {
        let tiles = self.tiles.get_mut().unwrap_or_else(|e| e.into_inner());
        recycle(std::mem::take(&mut tiles.data));
    }
}

/// This rank's tiles of its layer (`local` is its local array; empty off the grid).
fn rank_tiles<T: Scalar>(g: &Geometry, rank: usize, local: Vec<T>) -> Tiles<T> {
    match g.coords(rank) {
        Some((x, y, _)) => Tiles::new(g, x, y, local),
        _ => Tiles::empty(g),
    }
}

/// This rank's tiles of `nrhs` right-hand sides in [`rhs_layout`].
fn rhs_tiles<T: Scalar>(g: &Geometry, rank: usize, nrhs: usize, local: Vec<T>) -> Tiles<T> {
    let (rows, cols) = match g.coords(rank) {
        Some((x, y, 0)) => (g.owned(x, g.px), rhs_cols(g, nrhs, y)),
        _ => (Vec::new(), Vec::new()),
    };
    Tiles::from_parts(rows, cols, (g.n, nrhs), local)
}

/// Every rank's predicted counters for [`lu`] of an `n × n` matrix given in the native layout
/// (so the transforms move nothing) on `p` ranks, when the steps pivot on `pivots` (one list
/// per step, as [`LuFactors::step_pivots`]); `bytes` is the element size. Before a run, pass
/// [`diagonal_pivots`]: the pivots of a matrix that needs no interchanges.
///
/// # Errors
/// As [`lu_plan`].
pub fn lu_rank_costs(
    n: usize,
    p: usize,
    params: &LuParams,
    pivots: &[Vec<usize>],
    bytes: usize,
) -> Result<Vec<CommStats>, LuError> {
    let (grid, v) = lu_plan(n, p, params)?;
    let pivoting = pivoting_of(params.algorithm);
    Ok(factor_costs(
        &Geometry::new(n, v, grid),
        p,
        pivoting,
        pivots,
        bytes,
    ))
}

/// Above this many (rank, step) pairs plus rows, replaying a plan rank by rank
/// ([`lu_rank_costs`]) takes more than about a second; [`lu_average_words`] answers for any
/// size.
pub const EXACT_REPLAY_LIMIT: usize = 50_000_000;

/// Whether [`lu_rank_costs`] of an `n × n` factorisation on `p` ranks with tile width `v`
/// stays within [`EXACT_REPLAY_LIMIT`]: `p·⌈n/v⌉ + n` (the per-step work and the pivot lists).
pub fn replay_is_cheap(n: usize, p: usize, v: usize) -> bool {
    p.saturating_mul(n.div_ceil(v.max(1))).saturating_add(n) <= EXACT_REPLAY_LIMIT
}

/// The words a rank of the grid sends on average (all ranks' words over the ranks used, exact)
/// in the factorisation of an `n × n` matrix needing no interchanges on `p` ranks, with the
/// grid and tile width of [`lu_plan`]: what the choice of the plan compares, in `O(N/v·(Px +
/// Py))` — cheap where the per-rank replay ([`lu_rank_costs`]) is not.
///
/// # Errors
/// As [`lu_plan`].
pub fn lu_average_words(n: usize, p: usize, params: &LuParams) -> Result<f64, LuError> {
    let (grid, v) = lu_plan(n, p, params)?;
    let pivoting = pivoting_of(params.algorithm);
    Ok(planned_words(&Geometry::new(n, v, grid), pivoting) / grid.ranks() as f64)
}

/// The pivots of a matrix that needs no row interchanges, step by step, for tile width `v`.
pub fn diagonal_pivots(n: usize, v: usize) -> Vec<Vec<usize>> {
    (0..n.div_ceil(v.max(1)))
        .map(|t| (t * v..((t + 1) * v).min(n)).collect())
        .collect()
}
