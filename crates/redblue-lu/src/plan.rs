//! Planning a factorisation before anything is allocated: [`LuPlan`] (the grid, the tile width,
//! the native layout, the exact per-rank words and messages, the memory per rank), and the
//! functions behind it — [`lu_plan`], [`lu_rank_costs`], [`lu_average_words`].

use crate::api::{LuAlgorithm, LuParams};
use crate::factor::Pivoting;
use crate::LuError;
use redblue_comm::CommStats;
use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix};
use redblue_pipeline::{
    choose_width, estimated_words, factor_costs, grid_of_layout, plan_grid, planned_words, widths,
    Geometry, LookAhead, TileGrid,
};

/// A factorisation planned before anything is allocated — the plan convention of redblue's
/// algorithm crates: a pure planner ([`LuPlan::new`]) turns the problem and the options
/// ([`LuParams`]: grid, layers, tile width, memory, idle fraction) into a value that tells the
/// native layout ([`LuPlan::native_layout`]), the exact per-rank words and messages
/// ([`LuPlan::rank_costs`]) and the memory each rank needs ([`LuPlan::memory_bytes`]);
/// execution ([`crate::lu_with`], [`crate::lu_in_place_with`]) takes the communicator, the
/// plan, the data and a `Par`.
///
/// # Examples
/// ```
/// use redblue_comm::{run_ranks, Communicator};
/// use redblue_dist::OwnedDistMatrix;
/// use redblue_kernels::Par;
/// use redblue_lu::{lu_in_place_with, LuParams, LuPlan};
///
/// let plan = LuPlan::new(300, 4, &LuParams::default()).unwrap();
/// println!("{} per rank at most", plan.memory_bytes(8)); // before anything is allocated
/// let runs = run_ranks(4, |comm| {
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, plan.native_layout().unwrap(), 1).unwrap();
///     comm.reset_stats();
///     let fac = lu_in_place_with(&comm, &plan, a, Par::Seq).unwrap();
///     (comm.stats(), fac.step_pivots().to_vec())
/// });
/// // The exact model of the run's pivots is what every rank measured.
/// let model = plan.rank_costs_with(4, &runs[0].1, 8);
/// for (r, (stats, _)) in runs.iter().enumerate() {
///     assert_eq!(stats.words_sent, model[r].words_sent);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct LuPlan {
    /// The rows `M` (`N` for a square matrix).
    pub m: usize,
    /// The columns `N`: the order of a square matrix.
    pub n: usize,
    /// COnfLUX or 2D.
    pub algorithm: LuAlgorithm,
    /// The grid.
    pub grid: TileGrid,
    /// The tile width `v`.
    pub block: usize,
    /// Whether the next step's panel is started before the rest of the update (see
    /// [`LuParams::look_ahead`]).
    pub look_ahead: LookAhead,
}

impl LuPlan {
    /// The plan of an `n × n` factorisation on `p` ranks with `params` ([`lu_plan`]).
    ///
    /// # Errors
    /// As [`lu_plan`].
    pub fn new(n: usize, p: usize, params: &LuParams) -> Result<Self, LuError> {
        Self::rect(n, n, p, params)
    }

    /// The plan of an `m × n` factorisation on `p` ranks with `params`: `P·A = L·U` with `L`
    /// unit lower trapezoidal `m × min(m, n)` and `U` upper trapezoidal `min(m, n) × n`
    /// (ScaLAPACK's `pdgetrf` of a rectangular matrix). The grid and width are chosen as
    /// [`lu_plan`] chooses them, by this shape's exact volume.
    ///
    /// # Errors
    /// As [`lu_plan`].
    ///
    /// # Examples
    /// ```
    /// use redblue_dist::Layout;
    /// use redblue_lu::{LuParams, LuPlan};
    ///
    /// // A tall panel: its rows spread over the grid rows, so every rank solves rows of it.
    /// let plan = LuPlan::rect(4096, 256, 4, &LuParams::default()).unwrap();
    /// assert!(plan.grid.px >= plan.grid.py);
    /// assert_eq!(plan.native_layout().unwrap().shape(), (4096, 256));
    /// ```
    pub fn rect(m: usize, n: usize, p: usize, params: &LuParams) -> Result<Self, LuError> {
        let (grid, block) = plan_shape((m, n), p, params)?;
        Ok(LuPlan {
            m,
            n,
            algorithm: params.algorithm,
            grid,
            block,
            look_ahead: params.look_ahead,
        })
    }

    /// The plan for the `m × n` matrix `layout` holds (a ScaLAPACK array's submatrix): on
    /// `layout`'s own grid with its blocks as the tiles when that makes its distribution the
    /// plan's native one ([`grid_of_layout`]) — the matrix then moves only within each rank, in
    /// and out — and that plan's model moves no more words per rank on average than
    /// [`LuPlan::rect`]'s plus moving the matrix in and out, estimated as `M·N/P` words per rank
    /// (about half of a rank's share each way on two ranks; the two layouts may share some
    /// blocks); otherwise `rect`'s plan. Options that fix the grid, the layers or the tile
    /// width keep `rect`'s plan.
    ///
    /// # Errors
    /// As [`LuPlan::rect`].
    ///
    /// # Examples
    /// ```
    /// use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix, Layout};
    /// use redblue_lu::{LuParams, LuPlan};
    ///
    /// // ScaLAPACK's 1 × 2 grid, 64 × 64 blocks.
    /// let layout = BlockCyclicSubmatrix::from(BlockCyclic::new(4096, 4096, 64, 64, 1, 2).unwrap());
    /// let plan = LuPlan::for_layout(4096, 4096, 2, &LuParams::default(), &layout).unwrap();
    /// assert_eq!((plan.grid.to_string(), plan.block), ("1x2x1".to_string(), 64));
    /// // Every element where it is: the transform in and out moves nothing between ranks.
    /// let native = plan.native_layout().unwrap();
    /// let at = |i, j| (layout.owner(i, j), layout.to_local(i, j));
    /// assert!((0..4096).step_by(61).all(|i| (0..4096).step_by(67).all(|j| {
    ///     at(i, j) == (native.owner(i, j), native.to_local(i, j))
    /// })));
    /// ```
    pub fn for_layout(
        m: usize,
        n: usize,
        p: usize,
        params: &LuParams,
        layout: &BlockCyclicSubmatrix,
    ) -> Result<Self, LuError> {
        let default = LuPlan::rect(m, n, p, params)?;
        let Some(here) = LuPlan::on_callers_grid((m, n), p, params, layout) else {
            return Ok(default);
        };
        let moves = (m as f64) * (n as f64) / default.ranks() as f64;
        Ok(if here.average_words() <= default.average_words() + moves {
            here
        } else {
            default
        })
    }

    /// The plan on `layout`'s own grid and blocks whenever they can be a plan's native layout
    /// ([`grid_of_layout`]), otherwise [`LuPlan::rect`]'s: for factors already in such an
    /// array (a solve with a caller's factors), which are then read where they are whatever a
    /// factorisation would prefer — and without weighing the plans against each other, as
    /// [`LuPlan::for_layout`] does. Options that fix the grid, the layers or the tile width
    /// keep `rect`'s plan.
    ///
    /// # Errors
    /// As [`LuPlan::rect`].
    pub fn on_layout(
        m: usize,
        n: usize,
        p: usize,
        params: &LuParams,
        layout: &BlockCyclicSubmatrix,
    ) -> Result<Self, LuError> {
        match LuPlan::on_callers_grid((m, n), p, params, layout) {
            Some(here) => Ok(here),
            None => LuPlan::rect(m, n, p, params),
        }
    }

    /// The plan on `layout`'s grid and blocks ([`grid_of_layout`]), if they can be a plan's
    /// native layout and `params` fix none of the grid, the layers and the tile width.
    fn on_callers_grid(
        (m, n): (usize, usize),
        p: usize,
        params: &LuParams,
        layout: &BlockCyclicSubmatrix,
    ) -> Option<Self> {
        if params.grid.is_some() || params.layers.is_some() || params.block.is_some() {
            return None;
        }
        let (grid, nb) = grid_of_layout(layout, false, p)?;
        LuPlan::rect(m, n, p, &params.clone().with_grid(grid).with_block(nb)).ok()
    }

    /// Ranks the plan uses (`Px·Py·c`); ranks beyond are idle.
    pub fn ranks(&self) -> usize {
        self.grid.ranks()
    }

    /// The layout a matrix is factored in without a copy: `N × N` in `v × v` tiles over layer
    /// 0's `Px × Py` grid, column-major rank order.
    ///
    /// # Errors
    /// None for a plan from [`LuPlan::new`].
    pub fn native_layout(&self) -> Result<BlockCyclic, LuError> {
        Ok(self.geometry().layer_layout()?)
    }

    /// Every rank's counters (of `p`, elements of `bytes` bytes) for a matrix in the native
    /// layout that needs no row interchanges ([`diagonal_pivots`]).
    pub fn rank_costs(&self, p: usize, bytes: usize) -> Vec<CommStats> {
        self.rank_costs_with(p, &diagonal_pivots(self.m.min(self.n), self.block), bytes)
    }

    /// Every rank's counters when the steps pivot on `pivots` (one list per step, as
    /// [`crate::LuFactors::step_pivots`]).
    pub fn rank_costs_with(&self, p: usize, pivots: &[Vec<usize>], bytes: usize) -> Vec<CommStats> {
        factor_costs(
            &self.geometry(),
            p,
            &pivoting_of(self.algorithm),
            pivots,
            bytes,
        )
    }

    /// The words a grid rank sends on average, exactly, with no interchanges: cheap for any
    /// size ([`lu_average_words`]).
    pub fn average_words(&self) -> f64 {
        planned_words(&self.geometry(), &pivoting_of(self.algorithm)) / self.ranks() as f64
    }

    /// Bytes the busiest rank holds, elements of `bytes` bytes: its layer's tiles (grid row
    /// and column 0 hold the most) and the steps' working buffers
    /// ([`LuPlan::working_bytes`]).
    pub fn memory_bytes(&self, bytes: usize) -> u64 {
        let g = self.geometry();
        let rows = g.owned_rows(0).len() as u64;
        let cols = g.owned_cols(0).len() as u64;
        rows * cols * bytes as u64 + self.working_bytes(bytes)
    }

    /// Bytes of the steps' working buffers on the busiest rank (the panel's copies and pieces,
    /// the update's operands: about four panels of its rows and columns), elements of `bytes`
    /// bytes.
    pub fn working_bytes(&self, bytes: usize) -> u64 {
        let g = self.geometry();
        let rows = g.owned_rows(0).len() as u64;
        let cols = g.owned_cols(0).len() as u64;
        4 * self.block as u64 * (rows + cols) * bytes as u64
    }

    /// Whether [`LuPlan::rank_costs`] stays cheap ([`replay_is_cheap`]).
    pub fn replay_is_cheap(&self, p: usize) -> bool {
        replay_is_cheap(self.m.max(self.n), p, self.block)
    }

    pub(crate) fn geometry(&self) -> Geometry {
        Geometry::rect(self.m, self.n, self.block, self.grid)
    }
}

/// The grid and tile width [`lu`](crate::lu) uses for an `n × n` matrix on `p` ranks: those given, or
/// those [`plan_grid`] finds best by the factorisation's exact volume per used rank (for a
/// matrix needing no interchanges: every term of the model — broadcasts, shares of the layers,
/// the tiles' discreteness — counted), the tile width a multiple of `c`.
///
/// # Errors
/// [`LuError::InvalidParams`] for a zero tile width, a given grid (or number of layers) larger
/// than `p` or with more layers than the tile width (or more than one, for 2D);
/// [`LuError::Grid`] when no grid fits.
///
/// # Examples
/// ```
/// use redblue_lu::{lu_plan, LuAlgorithm, LuParams, TileGrid};
///
/// // COnfLUX on 512 ranks at N = 16384: several layers, the width a multiple of them.
/// let (grid, v) = lu_plan(16384, 512, &LuParams::default()).unwrap();
/// assert!(grid.c > 1 && grid.ranks() <= 512 && v % grid.c == 0);
/// // A grid of one's own gets a width chosen for it.
/// let given = LuParams::default().with_grid(TileGrid { px: 10, py: 10, c: 5 });
/// assert_eq!(lu_plan(16384, 512, &given).unwrap().1 % 5, 0);
/// // The 2D baseline has one layer.
/// let (grid, _) = lu_plan(16384, 512, &LuParams::default().with_algorithm(LuAlgorithm::TwoD)).unwrap();
/// assert_eq!(grid.c, 1);
/// ```
pub fn lu_plan(n: usize, p: usize, params: &LuParams) -> Result<(TileGrid, usize), LuError> {
    plan_shape((n, n), p, params)
}

/// [`lu_plan`] for an `m × n` matrix.
fn plan_shape(
    (m, n): (usize, usize),
    p: usize,
    params: &LuParams,
) -> Result<(TileGrid, usize), LuError> {
    if params.block == Some(0) {
        return Err(LuError::InvalidParams(
            "the tile width must be positive".into(),
        ));
    }
    if let Some(g) = params
        .grid
        .filter(|g| g.px == 0 || g.py == 0 || g.c == 0 || g.ranks() > p)
    {
        // Before the width is weighed on it: a grid of no ranks or of more than `p`.
        return Err(LuError::InvalidParams(format!(
            "grid {g} does not fit on {p} ranks"
        )));
    }
    let pivoting = pivoting_of(params.algorithm);
    // The exact volume costs `O(N/v·(Px + Py + c))` a grid; past a budget (orders of 10⁸ and
    // more) the leading order with the broadcast stands in.
    // (A rectangular matrix: the leading order of a square one of as many elements.)
    let exact = exact_volume_is_cheap(m.min(n), p);
    let cost = |grid: TileGrid, v: usize| {
        if exact {
            planned_words(&Geometry::rect(m, n, v, grid), &pivoting) / grid.ranks() as f64
        } else {
            estimated_words((m as f64 * n as f64).sqrt(), grid, v as f64)
        }
    };
    let layers = match params.algorithm {
        LuAlgorithm::TwoD if params.layers.is_some_and(|c| c != 1) => {
            return Err(LuError::InvalidParams("2D LU has one layer".into()));
        }
        LuAlgorithm::TwoD => Some(1),
        _ => params.layers,
    };
    if let Some(c) = layers.filter(|&c| c == 0 || c > p) {
        return Err(LuError::InvalidParams(format!(
            "{c} layers do not fit on {p} ranks"
        )));
    }
    let (grid, v) = match params.grid {
        _ if params.algorithm.square_layers() => square_layers_plan((m, n), p, params, &cost)?,
        Some(g) => {
            let v = match params.block {
                Some(v) => v,
                None if g.px == 0 || g.py == 0 || g.c == 0 => 1,
                None => choose_width(g, None, |v| cost(g, v)),
            };
            (g, v)
        }
        None => {
            let memory = params.memory_words.map(|m| m as f64);
            let (grid, v) = plan_grid(
                (m, n),
                p,
                memory,
                params.max_idle_fraction,
                layers,
                params.block,
                cost,
            )?;
            match params.algorithm {
                LuAlgorithm::Conflux if params.block.is_none() && exact => {
                    (grid, narrow_to_2d((m, n), p, params, grid, v, cost)?)
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

/// Seed 001's 2.5D LU plans (with and without pivoting): layers of `q × q` ranks,
/// `q = ⌊√(P/c)⌋`, for `c` from 1 to `⌊P^(1/3)⌋` (or the `c` given), the one of least exact
/// volume per rank (ties to fewer layers), its tile width as [`choose_width`] finds it; a given
/// grid must have square layers. Ranks beyond `q²·c` idle, whatever the idle fraction allowed:
/// the algorithm's layers are square.
fn square_layers_plan(
    (m, n): (usize, usize),
    p: usize,
    params: &LuParams,
    cost: &impl Fn(TileGrid, usize) -> f64,
) -> Result<(TileGrid, usize), LuError> {
    let width = |g: TileGrid| match params.block {
        Some(v) => v,
        None => choose_width(g, None, |v| cost(g, v)),
    };
    if let Some(g) = params.grid {
        if g.px != g.py {
            return Err(LuError::InvalidParams(format!(
                "{} takes square layers, not {g}",
                params.algorithm
            )));
        }
        return Ok((g, width(g)));
    }
    let cube = (1..=p).take_while(|c| c * c * c <= p).last().unwrap_or(1);
    let depths = match params.layers {
        Some(c) => c..=c,
        None => 1..=cube,
    };
    let memory = params.memory_words.map(|w| w as f64);
    let mut best: Option<(TileGrid, f64)> = None;
    for c in depths {
        let q = ((p / c) as f64).sqrt() as usize;
        let q = (q.saturating_sub(1)..=q + 1)
            .rev()
            .find(|&q| q > 0 && q * q * c <= p)
            .unwrap_or(0);
        let g = TileGrid { px: q, py: q, c };
        if q == 0 || memory.is_some_and(|w| g.replica_words_of((m, n)) > w) {
            continue;
        }
        let v = params.block.unwrap_or(widths(g, None)[0]);
        if c > v {
            continue;
        }
        let words = cost(g, v);
        if best.is_none_or(|(_, b)| words < b * (1.0 - 1e-9)) {
            best = Some((g, words));
        }
    }
    let Some((grid, _)) = best else {
        return Err(LuError::Grid(
            redblue_pipeline::GridError::NotEnoughMemory {
                needed: m as f64 * n as f64 / p.max(1) as f64,
                available: memory.unwrap_or(f64::INFINITY),
            },
        ));
    };
    Ok((grid, width(grid)))
}

/// COnfLUX's tile width on `grid`, narrowed from `v` (through the widths
/// [`plan_grid`] tries) until the exact model's largest words sent and received by a rank are
/// no more than the 2D baseline's plan: tournament pivoting's butterfly moves `log₂ Px` blocks
/// of `v²` per step where partial pivoting moves about one, so on grids with few layers a wide
/// tile can cost a little more than 2D. `v` if no narrower width does better.
fn narrow_to_2d(
    (m, n): (usize, usize),
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
    let (g2, v2) = plan_shape((m, n), p, &two_d)?;
    let baseline =
        planned_words(&Geometry::rect(m, n, v2, g2), &Pivoting::Partial) / g2.ranks() as f64;
    // Far below the baseline on average: far below it at the busiest rank too (the exact
    // replay is not needed).
    if cost(grid, v) <= 0.9 * baseline {
        return Ok(v);
    }
    if !replay_is_cheap(m.max(n), p, v) {
        // Too large to replay rank by rank: by the averages.
        return Ok(widths(grid, None)
            .into_iter()
            .rev()
            .filter(|&w| w <= v)
            .find(|&w| cost(grid, w) <= baseline)
            .unwrap_or(v));
    }
    let maxima = |g: TileGrid, v: usize, pivoting| {
        let stats = factor_costs(
            &Geometry::rect(m, n, v, g),
            p,
            &pivoting,
            &diagonal_pivots(m.min(n), v),
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
    Ok(widths(grid, None)
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
pub(crate) fn pivoting_of(algorithm: LuAlgorithm) -> Pivoting {
    match algorithm {
        LuAlgorithm::Conflux | LuAlgorithm::CaPivot25d => Pivoting::Tournament,
        LuAlgorithm::TwoD => Pivoting::Partial,
        LuAlgorithm::NoPivot25d => Pivoting::None,
    }
}

/// Every rank's predicted counters for [`lu`](crate::lu) of an `n × n` matrix given in the native layout
/// (so the transforms move nothing) on `p` ranks, when the steps pivot on `pivots` (one list
/// per step, as [`LuFactors::step_pivots`](crate::LuFactors::step_pivots)); `bytes` is the element size. Before a run, pass
/// [`diagonal_pivots`]: the pivots of a matrix that needs no interchanges.
///
/// # Errors
/// As [`lu_plan`].
///
/// # Examples
/// ```
/// use redblue_comm::{run_ranks, Communicator};
/// use redblue_dist::OwnedDistMatrix;
/// use redblue_lu::{diagonal_pivots, lu, lu_rank_costs, LuParams, LuPlan};
///
/// let (n, p, params) = (40, 4, LuParams::default());
/// let plan = LuPlan::new(n, p, &params).unwrap();
/// // Before the run: the counters if no rows were interchanged.
/// let before = lu_rank_costs(n, p, &params, &diagonal_pivots(n, plan.block), 8).unwrap();
/// assert_eq!(before, plan.rank_costs(p, 8));
/// let runs = run_ranks(p, |comm| {
///     let layout = plan.native_layout().unwrap();
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, layout, 7).unwrap();
///     comm.reset_stats();
///     let factors = lu(&comm, &a, &params).unwrap();
///     (comm.stats(), factors.step_pivots().to_vec())
/// });
/// // After: with the pivots the run chose, every rank's counters exactly.
/// let after = lu_rank_costs(n, p, &params, &runs[0].1, 8).unwrap();
/// for (rank, (measured, _)) in runs.iter().enumerate() {
///     assert_eq!(*measured, after[rank]);
/// }
/// ```
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
        &pivoting,
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
///
/// # Examples
/// ```
/// use redblue_lu::{lu_average_words, lu_rank_costs, diagonal_pivots, LuParams, LuPlan};
///
/// let (n, p, params) = (256, 8, LuParams::default());
/// let average = lu_average_words(n, p, &params).unwrap();
/// // The mean of the exact per-rank replay over the grid's ranks.
/// let plan = LuPlan::new(n, p, &params).unwrap();
/// let costs = lu_rank_costs(n, p, &params, &diagonal_pivots(n, plan.block), 8).unwrap();
/// let sent: u64 = costs.iter().map(|c| c.words_sent).sum();
/// assert!((average - sent as f64 / plan.ranks() as f64).abs() < 1e-6);
/// // At sizes where the replay would be slow, the average still answers at once.
/// assert!(lu_average_words(16384, 512, &params).unwrap() > 0.0);
/// ```
pub fn lu_average_words(n: usize, p: usize, params: &LuParams) -> Result<f64, LuError> {
    let (grid, v) = lu_plan(n, p, params)?;
    let pivoting = pivoting_of(params.algorithm);
    Ok(planned_words(&Geometry::new(n, v, grid), &pivoting) / grid.ranks() as f64)
}

/// The pivots of a matrix that needs no row interchanges, step by step, for tile width `v`.
///
/// # Examples
/// ```
/// assert_eq!(redblue_lu::diagonal_pivots(5, 2), vec![vec![0, 1], vec![2, 3], vec![4]]);
/// ```
pub fn diagonal_pivots(n: usize, v: usize) -> Vec<Vec<usize>> {
    (0..n.div_ceil(v.max(1)))
        .map(|t| (t * v..((t + 1) * v).min(n)).collect())
        .collect()
}
