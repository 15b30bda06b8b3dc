//! Planning a Cholesky factorisation before anything is allocated: [`CholeskyParams`] (the
//! options), [`CholeskyPlan`] (the grid, the tile width, the native layout, the exact per-rank
//! words and messages, the memory per rank) and [`cholesky_plan`] behind it.

use crate::factor::CholeskyModel;
use crate::CholeskyError;
use redblue_comm::CommStats;
use redblue_core::Uplo;
use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix};
use redblue_pipeline::steps::PanelHome;
use redblue_pipeline::{
    choose_width, estimated_words, factor_costs, grid_of_layout, plan_grid, planned_words,
    Geometry, LookAhead, TileGrid,
};
use std::fmt;

/// Which factorisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CholeskyAlgorithm {
    /// COnfCHOX: 2.5D, the panel solved in 1D pieces, the trailing update split over `c`
    /// layers.
    #[default]
    Confchox,
    /// Right-looking 2D block-cyclic Cholesky, as ScaLAPACK's `PxPOTRF`: the panel solved on
    /// its grid column and broadcast along the grid rows, one layer.
    TwoD,
}

impl fmt::Display for CholeskyAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CholeskyAlgorithm::Confchox => "confchox",
            CholeskyAlgorithm::TwoD => "2d",
        })
    }
}

impl std::str::FromStr for CholeskyAlgorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "confchox" => Ok(CholeskyAlgorithm::Confchox),
            "2d" => Ok(CholeskyAlgorithm::TwoD),
            _ => Err(format!("unknown Cholesky algorithm '{s}' (confchox or 2d)")),
        }
    }
}

/// How to factor: the algorithm, and optionally the grid, the number of layers, the tile
/// width, the memory per rank and the idle fraction allowed when choosing the grid.
///
/// # Examples
/// ```
/// use redblue_cholesky::{CholeskyAlgorithm, CholeskyParams};
///
/// let params = CholeskyParams::default()
///     .with_algorithm(CholeskyAlgorithm::TwoD)
///     .with_block(64);
/// assert_eq!(params.block, Some(64));
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct CholeskyParams {
    /// COnfCHOX or 2D.
    pub algorithm: CholeskyAlgorithm,
    /// The grid; chosen from `N`, `P` and the memory when `None` (2D: `c = 1`).
    pub grid: Option<TileGrid>,
    /// The number of layers `c` when the grid is chosen; chosen with the grid when `None`.
    pub layers: Option<usize>,
    /// Tile width `v` (at least the number of layers); chosen with the grid when `None`.
    pub block: Option<usize>,
    /// Words (matrix elements) each rank may hold, for the choice of the grid.
    pub memory_words: Option<u64>,
    /// Largest fraction of ranks that may stay idle for a better grid.
    pub max_idle_fraction: f64,
    /// Whether step `t + 1`'s panel is started before the rest of step `t`'s update
    /// ([`LookAhead`]; the same words, messages and factor either way).
    pub look_ahead: LookAhead,
    /// Whether the triangle read is scanned first (default): NaN or infinity anywhere is then
    /// [`CholeskyError::NotFinite`] before any work, and a complex diagonal entry that is not
    /// real stops the factorisation at its column. Without the scan (one pass over the
    /// triangle saved, 3 % of a 2-rank `N = 4096` factorisation) the factorisation runs as
    /// LAPACK's and ScaLAPACK's `potrf` do: a NaN or infinity below the diagonal reaches the
    /// diagonal of its row at the latest and stops it there as a pivot that is not positive
    /// ([`CholeskyError::NotPositiveDefinite`]), an infinite diagonal entry goes into the
    /// factor, and only the real parts of the diagonal are read.
    pub check_finite: bool,
}

impl Default for CholeskyParams {
    fn default() -> Self {
        CholeskyParams {
            algorithm: CholeskyAlgorithm::Confchox,
            grid: None,
            layers: None,
            block: None,
            memory_words: None,
            max_idle_fraction: 0.03,
            look_ahead: LookAhead::Auto,
            check_finite: true,
        }
    }
}

impl CholeskyParams {
    /// With this algorithm.
    pub fn with_algorithm(mut self, algorithm: CholeskyAlgorithm) -> Self {
        self.algorithm = algorithm;
        self
    }

    /// On this grid.
    pub fn with_grid(mut self, grid: TileGrid) -> Self {
        self.grid = Some(grid);
        self
    }

    /// With this many layers (the grid chosen around them).
    pub fn with_layers(mut self, layers: usize) -> Self {
        self.layers = Some(layers);
        self
    }

    /// With this tile width.
    pub fn with_block(mut self, block: usize) -> Self {
        self.block = Some(block);
        self
    }

    /// With at most this many words per rank.
    pub fn with_memory_words(mut self, words: u64) -> Self {
        self.memory_words = Some(words);
        self
    }

    /// Leaving at most this fraction of the ranks idle.
    pub fn with_max_idle_fraction(mut self, fraction: f64) -> Self {
        self.max_idle_fraction = fraction;
        self
    }

    /// With this look-ahead.
    pub fn with_look_ahead(mut self, look_ahead: LookAhead) -> Self {
        self.look_ahead = look_ahead;
        self
    }

    /// With the input scanned first or not ([`CholeskyParams::check_finite`]).
    pub fn with_finite_check(mut self, check_finite: bool) -> Self {
        self.check_finite = check_finite;
        self
    }
}

/// A Cholesky factorisation planned before anything is allocated (the plan convention of
/// redblue's algorithm crates, as `redblue_lu::LuPlan`): the grid, the tile width, the native
/// layout ([`CholeskyPlan::native_layout`]), the exact per-rank words and messages
/// ([`CholeskyPlan::rank_costs`]) and the memory each rank needs
/// ([`CholeskyPlan::memory_bytes`]); [`crate::cholesky_with`] and
/// [`crate::cholesky_in_place_with`] run it.
///
/// # Examples
/// ```
/// use redblue_cholesky::{cholesky_in_place_with, CholeskyParams, CholeskyPlan};
/// use redblue_comm::{run_ranks, Communicator};
/// use redblue_core::Uplo;
/// use redblue_dist::OwnedDistMatrix;
/// use redblue_kernels::Par;
///
/// let n = 200;
/// let plan = CholeskyPlan::new(n, 4, &CholeskyParams::default()).unwrap();
/// println!("{} bytes per rank at most", plan.memory_bytes(8)); // before anything is allocated
/// let runs = run_ranks(4, |comm| {
///     // A diagonally dominant symmetric matrix in the plan's native layout.
///     let layout = plan.native_layout().unwrap();
///     let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| {
///         if i == j { n as f64 } else { 1.0 / (1.0 + i.abs_diff(j) as f64) }
///     })
///     .unwrap();
///     comm.reset_stats();
///     let factor = cholesky_in_place_with(&comm, &plan, a, Uplo::Lower, Par::Seq).unwrap();
///     comm.stats()
/// });
/// // The exact model is what every rank measured.
/// let model = plan.rank_costs(4, 8);
/// for (r, stats) in runs.iter().enumerate() {
///     assert_eq!(stats.words_sent, model[r].words_sent);
///     assert_eq!(stats.messages_received, model[r].messages_received);
/// }
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CholeskyPlan {
    /// The order `N`.
    pub n: usize,
    /// COnfCHOX or 2D.
    pub algorithm: CholeskyAlgorithm,
    /// The grid.
    pub grid: TileGrid,
    /// The tile width `v`.
    pub block: usize,
    /// Whether the next step's panel is started before the rest of the update.
    pub look_ahead: LookAhead,
    /// Whether the input is scanned first ([`CholeskyParams::check_finite`]).
    pub check_finite: bool,
}

impl CholeskyPlan {
    /// The plan of an `n × n` factorisation on `p` ranks with `params` ([`cholesky_plan`]).
    ///
    /// # Errors
    /// As [`cholesky_plan`].
    pub fn new(n: usize, p: usize, params: &CholeskyParams) -> Result<Self, CholeskyError> {
        let (grid, block) = cholesky_plan(n, p, params)?;
        Ok(CholeskyPlan {
            n,
            algorithm: params.algorithm,
            grid,
            block,
            look_ahead: params.look_ahead,
            check_finite: params.check_finite,
        })
    }

    /// The plan for the `n × n` matrix whose `uplo` triangle `layout` holds (a ScaLAPACK
    /// array's submatrix): on `layout`'s own grid with its blocks as the tiles when that makes
    /// its distribution the plan's native one — the matrix then moves only within each rank,
    /// in and out — and that plan's model moves no more words per rank on average than
    /// [`CholeskyPlan::new`]'s plus moving the triangle in and out, otherwise `new`'s plan.
    /// The moves are estimated as `N²/P` words per rank (half the matrix each way; the two
    /// layouts may share some blocks). Options that fix the grid, the layers or the tile width
    /// keep `new`'s plan.
    ///
    /// The upper triangle is factored as the lower triangle of `Aᴴ`, whose distribution is
    /// `layout`'s transposed: its grid is `layout`'s transposed too.
    ///
    /// # Errors
    /// As [`CholeskyPlan::new`].
    ///
    /// # Examples
    /// ```
    /// use redblue_cholesky::{CholeskyParams, CholeskyPlan};
    /// use redblue_core::Uplo;
    /// use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix, Layout};
    ///
    /// // ScaLAPACK's 1 × 2 grid, 64 × 64 blocks.
    /// let layout = BlockCyclicSubmatrix::from(BlockCyclic::new(4096, 4096, 64, 64, 1, 2).unwrap());
    /// let params = CholeskyParams::default();
    /// let plan = CholeskyPlan::for_layout(4096, 2, &params, &layout, Uplo::Lower).unwrap();
    /// assert_eq!((plan.grid.to_string(), plan.block), ("1x2x1".to_string(), 64));
    /// // Every element where it is: the transform in and out moves nothing between ranks.
    /// let native = plan.native_layout().unwrap();
    /// let at = |i, j| (layout.owner(i, j), layout.to_local(i, j));
    /// assert!((0..4096).step_by(61).all(|i| (0..4096).step_by(67).all(|j| {
    ///     at(i, j) == (native.owner(i, j), native.to_local(i, j))
    /// })));
    /// // The upper triangle: the transposed grid.
    /// let plan = CholeskyPlan::for_layout(4096, 2, &params, &layout, Uplo::Upper).unwrap();
    /// assert_eq!(plan.grid.to_string(), "2x1x1");
    /// ```
    pub fn for_layout(
        n: usize,
        p: usize,
        params: &CholeskyParams,
        layout: &BlockCyclicSubmatrix,
        uplo: Uplo,
    ) -> Result<Self, CholeskyError> {
        let default = CholeskyPlan::new(n, p, params)?;
        let Some(here) = CholeskyPlan::on_callers_grid(n, p, params, layout, uplo) else {
            return Ok(default);
        };
        let moves = (n as f64) * (n as f64) / default.ranks() as f64;
        Ok(if here.average_words() <= default.average_words() + moves {
            here
        } else {
            default
        })
    }

    /// The plan on `layout`'s own grid and blocks whenever they can be a plan's native layout
    /// ([`grid_of_layout`], for the `uplo` triangle), otherwise [`CholeskyPlan::new`]'s: for a
    /// factor already in such an array (a solve with a caller's factor), which is then read
    /// where it is whatever a factorisation would prefer — and without weighing the plans
    /// against each other, as [`CholeskyPlan::for_layout`] does. Options that fix the grid,
    /// the layers or the tile width keep `new`'s plan.
    ///
    /// # Errors
    /// As [`CholeskyPlan::new`].
    pub fn on_layout(
        n: usize,
        p: usize,
        params: &CholeskyParams,
        layout: &BlockCyclicSubmatrix,
        uplo: Uplo,
    ) -> Result<Self, CholeskyError> {
        match CholeskyPlan::on_callers_grid(n, p, params, layout, uplo) {
            Some(here) => Ok(here),
            None => CholeskyPlan::new(n, p, params),
        }
    }

    /// The plan on `layout`'s grid and blocks ([`grid_of_layout`], for the `uplo` triangle),
    /// if they can be a plan's native layout and `params` fix none of the grid, the layers and
    /// the tile width.
    fn on_callers_grid(
        n: usize,
        p: usize,
        params: &CholeskyParams,
        layout: &BlockCyclicSubmatrix,
        uplo: Uplo,
    ) -> Option<Self> {
        if params.grid.is_some() || params.layers.is_some() || params.block.is_some() {
            return None;
        }
        let (grid, nb) = grid_of_layout(layout, uplo == Uplo::Upper, p)?;
        CholeskyPlan::new(n, p, &params.clone().with_grid(grid).with_block(nb)).ok()
    }

    /// Ranks the plan uses (`Px·Py·c`); ranks beyond are idle.
    pub fn ranks(&self) -> usize {
        self.grid.ranks()
    }

    /// The layout a matrix is factored in without a copy (its lower triangle, [`Uplo::Lower`]):
    /// `N × N` in `v × v` tiles over layer 0's `Px × Py` grid, column-major rank order.
    ///
    /// [`Uplo::Lower`]: redblue_core::Uplo::Lower
    ///
    /// # Errors
    /// None for a plan from [`CholeskyPlan::new`].
    pub fn native_layout(&self) -> Result<BlockCyclic, CholeskyError> {
        Ok(self.geometry().layer_layout()?)
    }

    /// Every rank's counters (of `p`, elements of `bytes` bytes) for a factorisation of a
    /// matrix given in the native layout (lower triangle): exact, as measured.
    pub fn rank_costs(&self, p: usize, bytes: usize) -> Vec<CommStats> {
        let g = self.geometry();
        let rows: Vec<Vec<usize>> = (0..g.steps()).map(|t| g.panel(t).collect()).collect();
        factor_costs(&g, p, &self.model(), &rows, bytes)
    }

    /// The words a grid rank sends on average, exactly: cheap for any size.
    pub fn average_words(&self) -> f64 {
        planned_words(&self.geometry(), &self.model()) / self.ranks() as f64
    }

    /// Bytes the busiest rank holds, elements of `bytes` bytes: its layer's tiles (grid row
    /// and column 0 hold the most) and the step's working buffers (the panel's pieces and
    /// shares, the transposed rows: about three panels of its rows and columns).
    pub fn memory_bytes(&self, bytes: usize) -> u64 {
        let g = self.geometry();
        let rows = g.owned_rows(0).len() as u64;
        let cols = g.owned_cols(0).len() as u64;
        rows * cols * bytes as u64 + self.working_bytes(bytes)
    }

    /// Bytes of the steps' working buffers on the busiest rank (the panel's pieces and shares,
    /// the transposed rows: about three panels of its rows and columns), elements of `bytes`
    /// bytes.
    pub fn working_bytes(&self, bytes: usize) -> u64 {
        let g = self.geometry();
        let rows = g.owned_rows(0).len() as u64;
        let cols = g.owned_cols(0).len() as u64;
        3 * self.block as u64 * (rows + cols) * bytes as u64
    }

    /// Whether [`CholeskyPlan::rank_costs`] stays cheap: `p·⌈n/v⌉ + n·⌈n/v⌉/v` at most
    /// [`EXACT_REPLAY_LIMIT`](redblue_pipeline::replay) (the per-step work over the ranks and
    /// the tiles).
    pub fn replay_is_cheap(&self, p: usize) -> bool {
        let steps = self.n.div_ceil(self.block.max(1));
        p.saturating_mul(steps)
            .saturating_add(steps.saturating_mul(steps))
            <= 50_000_000
    }

    pub(crate) fn geometry(&self) -> Geometry {
        Geometry::new(self.n, self.block, self.grid)
    }

    pub(crate) fn model(&self) -> CholeskyModel {
        model_of(self.algorithm, self.grid)
    }
}

/// The model of an algorithm on a grid: COnfCHOX solves the panel in `Py·c` pieces per grid row
/// when it has layers; on one layer the pieces would only add a scatter and a spread to the 2D
/// algorithm's row broadcast (at `2×2×1`, `N = 4096`: 7.59 M words against 6.60 M), so there
/// COnfCHOX is the 2D algorithm.
fn model_of(algorithm: CholeskyAlgorithm, grid: TileGrid) -> CholeskyModel {
    CholeskyModel {
        home: match algorithm {
            CholeskyAlgorithm::Confchox if grid.c > 1 => PanelHome::Pieces,
            _ => PanelHome::Owner,
        },
    }
}

/// The grid and tile width of an `n × n` factorisation on `p` ranks: those given, or those
/// [`plan_grid`] finds best by the factorisation's exact volume per used rank (every term of
/// the model counted), the tile width a multiple of `c`.
///
/// # Errors
/// [`CholeskyError::InvalidParams`] for a zero tile width, a given grid (or number of layers)
/// larger than `p` or with more layers than the tile width (or more than one, for 2D), an
/// idle fraction outside `[0, 1)`; [`CholeskyError::Grid`] when no grid fits.
///
/// # Examples
/// ```
/// use redblue_cholesky::{cholesky_plan, CholeskyAlgorithm, CholeskyParams};
///
/// // COnfCHOX on 512 ranks at N = 16384: several layers, the width a multiple of them.
/// let (grid, v) = cholesky_plan(16384, 512, &CholeskyParams::default()).unwrap();
/// assert!(grid.c > 1 && grid.ranks() <= 512 && v % grid.c == 0);
/// let two_d = CholeskyParams::default().with_algorithm(CholeskyAlgorithm::TwoD);
/// assert_eq!(cholesky_plan(16384, 512, &two_d).unwrap().0.c, 1);
/// ```
pub fn cholesky_plan(
    n: usize,
    p: usize,
    params: &CholeskyParams,
) -> Result<(TileGrid, usize), CholeskyError> {
    let invalid = |why: String| Err(CholeskyError::InvalidParams(why));
    if params.block == Some(0) {
        return invalid("the tile width must be positive".into());
    }
    if let Some(g) = params
        .grid
        .filter(|g| g.px == 0 || g.py == 0 || g.c == 0 || g.ranks() > p)
    {
        // Before the width is weighed on it: a grid of no ranks or of more than `p`.
        return invalid(format!("grid {g} does not fit on {p} ranks"));
    }
    if !(0.0..1.0).contains(&params.max_idle_fraction) {
        return invalid(format!(
            "the idle fraction must be in [0, 1), not {}",
            params.max_idle_fraction
        ));
    }
    let two_d = params.algorithm == CholeskyAlgorithm::TwoD;
    let layers = match params.layers {
        Some(c) if two_d && c != 1 => return invalid("2D Cholesky has one layer".into()),
        _ if two_d => Some(1),
        layers => layers,
    };
    if let Some(c) = layers.filter(|&c| c == 0 || c > p) {
        return invalid(format!("{c} layers do not fit on {p} ranks"));
    }
    // The exact volume costs `O(N/v·(Px + Py + c))` a grid; past a budget (orders of 10⁸ and
    // more) the leading order with the broadcast stands in.
    let side = (p as f64).sqrt() * 2.0 + (p as f64).cbrt();
    let exact = n.div_ceil(32) as f64 * side <= 1e7;
    let cost = |grid: TileGrid, v: usize| {
        if exact {
            let model = model_of(params.algorithm, grid);
            planned_words(&Geometry::new(n, v, grid), &model) / grid.ranks() as f64
        } else {
            estimated_words(n as f64, grid, v as f64)
        }
    };
    let (grid, v) = match params.grid {
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
            let idle = params.max_idle_fraction;
            let (grid, v) = plan_grid((n, n), p, memory, idle, layers, params.block, cost)?;
            match params.algorithm {
                CholeskyAlgorithm::Confchox if grid.c > 1 && params.block.is_none() && exact => {
                    no_more_than_2d(n, p, params, (grid, v), cost)?
                }
                _ => (grid, v),
            }
        }
    };
    if grid.px == 0 || grid.py == 0 || grid.c == 0 || grid.ranks() > p {
        return invalid(format!("grid {grid} does not fit on {p} ranks"));
    }
    if grid.c > v {
        return invalid(format!(
            "{} layers need a tile width of at least {}, not {v}",
            grid.c, grid.c
        ));
    }
    if two_d && grid.c != 1 {
        return invalid("2D Cholesky has one layer".into());
    }
    Ok((grid, v))
}

/// COnfCHOX's plan `chosen` (with layers), or the 2D baseline's plan (COnfCHOX on one layer)
/// when that moves less at the busiest rank: the grid search weighs the words of all ranks,
/// and a layered grid that is best on average can still load one rank more than 2D does (at
/// `N = 16384`, `P = 16`: `4×2×2` moved 2.6 % more than `4×4×1` at the busiest rank; at
/// `P = 36`, `4×3×3` received 21 % less than 2D's busiest rank but sent 3 % more: its grid rows
/// are longer than its columns, and each rank sends about `Px/Py` copies of its grid row's
/// rows in the transposed spread).
fn no_more_than_2d(
    n: usize,
    p: usize,
    params: &CholeskyParams,
    chosen: (TileGrid, usize),
    cost: impl Fn(TileGrid, usize) -> f64,
) -> Result<(TileGrid, usize), CholeskyError> {
    let two_d = CholeskyParams {
        algorithm: CholeskyAlgorithm::TwoD,
        grid: None,
        layers: None,
        ..params.clone()
    };
    let baseline = cholesky_plan(n, p, &two_d)?;
    let plan = |(grid, block): (TileGrid, usize)| CholeskyPlan {
        n,
        algorithm: params.algorithm,
        grid,
        block,
        look_ahead: params.look_ahead,
        check_finite: params.check_finite,
    };
    if !plan(chosen).replay_is_cheap(p) {
        // Too large to replay rank by rank: by the averages.
        let better = cost(chosen.0, chosen.1) <= cost(baseline.0, baseline.1);
        return Ok(if better { chosen } else { baseline });
    }
    let maxima = |choice| {
        let stats = plan(choice).rank_costs(p, 8);
        let most = |f: fn(&CommStats) -> u64| stats.iter().map(f).max().unwrap_or(0);
        (most(|s| s.words_sent), most(|s| s.words_received))
    };
    let ((sent, received), (sent_2d, received_2d)) = (maxima(chosen), maxima(baseline));
    Ok(if sent <= sent_2d && received <= received_2d {
        chosen
    } else {
        baseline
    })
}
