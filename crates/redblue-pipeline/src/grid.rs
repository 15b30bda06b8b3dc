//! [`TileGrid`], the `[Px, Py, c]` process grid of the 2.5D factorisations, and its choice:
//! [`plan_grid`] with the algorithm's cost function (and the tile width with it,
//! [`choose_width`]), [`choose_grid`] by the leading-order model; a few idle ranks allowed for
//! a better grid (as COSMA's grid fitting).

use redblue_comm::MAX_RANKS;
use std::fmt;

/// The process grid of a 2.5D factorisation: `Px × Py` ranks per layer, `c` layers (replicas
/// of the trailing matrix; `c = 1` is 2D).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TileGrid {
    /// Ranks along the rows of a layer.
    pub px: usize,
    /// Ranks along the columns of a layer.
    pub py: usize,
    /// Layers.
    pub c: usize,
}

impl TileGrid {
    /// Ranks the grid uses.
    pub fn ranks(self) -> usize {
        self.px * self.py * self.c
    }

    /// Whether the factorisations' update right of the next panel waits a step and is then
    /// done for two panels at once (`k = 2v`): on one layer of one grid row or one grid
    /// column (`1×P×1`, `P×1×1`). Elsewhere every step's update has depth `v/c`.
    pub fn update_waits(self) -> bool {
        self.c == 1 && (self.px == 1 || self.py == 1)
    }

    /// The tile width the planner prefers on this grid when the volume allows (see
    /// [`choose_width`]): [`PREFERRED_WIDTH`] where the update waits and on layers,
    /// [`PREFERRED_WIDTH_2D`] on one layer of at least `2 × 2`, rounded up to a multiple of `c`.
    pub fn preferred_width(self) -> usize {
        let c = self.c.max(1);
        let u = if self.c == 1 && !self.update_waits() {
            PREFERRED_WIDTH_2D
        } else {
            PREFERRED_WIDTH
        };
        c * u.div_ceil(c)
    }

    /// Words each rank holds for its layer's copy of the trailing matrix: `c·N²/P′`.
    pub fn replica_words(self, n: usize) -> f64 {
        self.replica_words_of((n, n))
    }

    /// [`TileGrid::replica_words`] of an `M × N` matrix: `c·M·N/P′`.
    pub fn replica_words_of(self, (m, n): (usize, usize)) -> f64 {
        self.c as f64 * (m as f64) * (n as f64) / self.ranks() as f64
    }
}

impl fmt::Display for TileGrid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.px, self.py, self.c)
    }
}

impl std::str::FromStr for TileGrid {
    type Err = String;

    /// `"PXxPYxC"`, e.g. `"4x4x2"` (`"PXxPY"` for one layer).
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split('x').collect();
        let nums: Result<Vec<usize>, _> = parts.iter().map(|p| p.trim().parse()).collect();
        match nums.as_deref() {
            Ok(&[px, py, c]) => Ok(TileGrid { px, py, c }),
            Ok(&[px, py]) => Ok(TileGrid { px, py, c: 1 }),
            _ => Err(format!("a grid is PXxPYxC, e.g. 4x4x2, not '{s}'")),
        }
    }
}

/// The words per rank of a 2.5D factorisation on `grid` to leading order (COnfLUX's and
/// COnfCHOX's alike, seed 000, digest §1.4), summed over the steps (`Σ_t (N − t·v)·v ≈ N²/2`),
/// in the rank count `P′ = Px·Py·c` the grid uses:
///
/// * `L10` and `U01` (or `L10ᴴ`) from the 1D panels to the 2.5D owners, each rank its tile
///   rows' (columns') part of its layer's `v/c` columns: `N²/(2c)·(1/Px + 1/Py)`;
/// * the reductions of the next panel and of the pivot rows over the `c` layers: `c·N²/P′`;
/// * the panels into the 1D distributions: `N²/P′`.
///
/// The broadcast of the diagonal block adds `N·v` and pivoting `O(N·v·log Px)`
/// ([`estimated_words`] adds the first).
pub fn leading_words(n: f64, grid: TileGrid) -> f64 {
    let TileGrid { px, py, c } = grid;
    let (px, py, c) = (px as f64, py as f64, c as f64);
    let used = px * py * c;
    n * n * ((1.0 / px + 1.0 / py) / (2.0 * c) + c / used + 1.0 / used)
}

/// [`leading_words`] plus the broadcast of the diagonal block and its metadata to every rank,
/// `N·(v + 1 + 1/v)` words per rank: the estimate that stands in for an exact volume where that
/// would take too long to compute (orders of `10⁸` and more).
pub fn estimated_words(n: f64, grid: TileGrid, v: f64) -> f64 {
    leading_words(n, grid) + n * (v + 1.0 + 1.0 / v)
}

/// Why no grid could be chosen.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum GridError {
    /// Zero ranks, or an idle fraction outside `[0, 1)`.
    InvalidOptions(String),
    /// Even a 2D grid on all ranks needs more memory per rank than the limit.
    NotEnoughMemory {
        /// Words per rank the least demanding grid needs (`N²/P`).
        needed: f64,
        /// The limit given.
        available: f64,
    },
}

impl fmt::Display for GridError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GridError::InvalidOptions(why) => write!(f, "invalid grid options: {why}"),
            GridError::NotEnoughMemory { needed, available } => write!(
                f,
                "not enough memory: the factorisation needs at least {needed:.0} words per rank, \
                 but the limit is {available:.0}"
            ),
        }
    }
}

impl std::error::Error for GridError {}

/// Every allowed grid on `p` ranks: `⌈(1 − δ)·P⌉ ≤ Px·Py·c ≤ P`, `c ≤ max_layers` (each layer
/// needs at least one of a step's `v` columns), `c ≤ Px, Py` (no more replicas than a layer has
/// rows of ranks: the model's optimum is `c = P^(1/3)`), only `layers` layers when given, and
/// the replicas fitting the memory (`c·N²/P′ ≤ M`).
fn grid_candidates(
    (m, n): (usize, usize),
    p: usize,
    memory_words: Option<f64>,
    max_layers: usize,
    layers: Option<usize>,
    max_idle_fraction: f64,
) -> Result<Vec<TileGrid>, GridError> {
    if p == 0 {
        return Err(GridError::InvalidOptions(
            "there must be at least one rank".into(),
        ));
    }
    if p > MAX_RANKS {
        return Err(GridError::InvalidOptions(format!(
            "{p} ranks: at most {MAX_RANKS} (MPI numbers ranks with a C int)"
        )));
    }
    if !(0.0..1.0).contains(&max_idle_fraction) {
        return Err(GridError::InvalidOptions(format!(
            "the idle fraction must be in [0, 1), not {max_idle_fraction}"
        )));
    }
    let lowest = ((p as f64) * (1.0 - max_idle_fraction)).ceil().max(1.0) as usize;
    let fits = |g: TileGrid| memory_words.is_none_or(|w| g.replica_words_of((m, n)) <= w);
    let fixed_depth = layers.is_some();
    let mut out = Vec::new();
    // Every depth `c` and narrower side `a ≤ b` of the layer; for each, the two largest `b`
    // within the idle limit (a smaller `b` only idles more ranks), both orientations: about
    // `2·√(P·c_max)` grids rather than every factorisation of every rank count in range.
    for c in 1..=p {
        if layers.is_some_and(|l| l != c) || c > max_layers.max(1) {
            continue;
        }
        if !fixed_depth && c > 1 && c * c * c > p {
            break;
        }
        for a in 1.. {
            let b_max = p / (c * a);
            if b_max < a {
                break;
            }
            let b_min = a.max(lowest.div_ceil(c * a));
            for b in (b_min..=b_max).rev().take(2) {
                for (px, py) in [(a, b), (b, a)]
                    .into_iter()
                    .take(if a == b { 1 } else { 2 })
                {
                    let g = TileGrid { px, py, c };
                    let deep = !fixed_depth && c > 1 && c > px.min(py);
                    if !deep && fits(g) {
                        out.push(g);
                    }
                }
            }
        }
    }
    if out.is_empty() {
        return Err(GridError::NotEnoughMemory {
            needed: (m as f64) * (n as f64) / p as f64,
            available: memory_words.unwrap_or(f64::INFINITY),
        });
    }
    Ok(out)
}

/// The order of preference among grids whose cost ties: more ranks, then fewer layers, then
/// the squarer layer, then fewer grid rows (Cholesky's `1×2×1` moves the words of `2×1×1` and
/// was 2–8 % faster on 2 ranks, measured interleaved: each rank's update has every row, and
/// the ranks take turns with the panel; LU's volumes already prefer more grid columns).
fn tie_key(g: TileGrid) -> (usize, usize, usize, usize) {
    (usize::MAX - g.ranks(), g.c, g.px.abs_diff(g.py), g.px)
}

/// The grid of least `cost`, costs within the relative `tie` of each other counting as equal
/// (then `tie_key` decides).
fn least(grids: &[TileGrid], tie: f64, cost: impl Fn(TileGrid) -> f64) -> Option<(TileGrid, f64)> {
    let costs: Vec<f64> = grids.iter().map(|&g| cost(g)).collect();
    let least = costs.iter().copied().fold(f64::INFINITY, f64::min);
    grids
        .iter()
        .zip(costs)
        .filter(|&(_, w)| w <= least * (1.0 + tie) + 1e-300)
        .min_by_key(|&(&g, _)| tie_key(g))
        .map(|(&g, w)| (g, w))
}

/// Costs within this fraction of the least are a tie in [`plan_grid`]'s choice of the grid: the
/// exact volumes of neighbouring grids differ by about a percent, and the tie rules (more
/// ranks, fewer layers, squarer, fewer grid rows) matter more for the time.
pub const GRID_TIE: f64 = 0.015;

/// The grid with the fewest words per rank by the leading-order model [`leading_words`] among
/// all `[Px, Py, c]` with `⌈(1 − δ)·P⌉ ≤ Px·Py·c ≤ P`, `c ≤ v`, `c ≤ Px, Py` and the replicas
/// fitting the memory (`c·N²/P′ ≤ M`); ties to more ranks, fewer layers, the squarer layer,
/// fewer grid rows. [`plan_grid`] chooses with a cost function instead (the factorisation's
/// exact volume), and the tile width with it.
///
/// With ample memory the model's best depth is about `c = (P/4)^(1/3)`, not the paper's
/// `P^(1/3)`: the layer reductions (steps 1 and 5) grow with `c` and, at `c = P^(1/3)`, equal
/// the 2.5D term (the digest's note on §1.4). `P = 32, 256, 500` give `4×4×2`, `8×8×4`,
/// `10×10×5`; a memory of `N²/P` words forces `c = 1` (2D).
///
/// # Errors
/// [`GridError::InvalidOptions`] for `P = 0` or `δ ∉ [0, 1)`;
/// [`GridError::NotEnoughMemory`] if even `c = 1` on every rank does not fit.
pub fn choose_grid(
    n: usize,
    p: usize,
    memory_words: Option<f64>,
    v: usize,
    max_idle_fraction: f64,
) -> Result<TileGrid, GridError> {
    let grids = grid_candidates((n, n), p, memory_words, v, None, max_idle_fraction)?;
    Ok(least(&grids, 1e-12, |g| leading_words(n as f64, g))
        .expect("candidates are not empty")
        .0)
}

/// Grids [`plan_grid`] takes from the leading-order model to weigh with the cost function.
const SHORTLIST: usize = 24;

/// Tile widths tried when none is given: multiples of `c` near these, and at least `c`.
pub const WIDTHS: [usize; 7] = [32, 40, 48, 64, 80, 96, 128];

/// The preferred tile width: local products of width `v/c` stay efficient.
pub const PREFERRED_WIDTH: usize = 128;

/// The preferred tile width on one layer of at least `2 × 2` ranks, where no update waits and
/// every product has depth `v`: on 4 ranks (`2×2×1`, `N = 4096`, threads as ranks on a Zen 5
/// core), interleaved against 128, time ratios median 1.04 (Cholesky, 1.03–1.10, 6 pairs) and
/// 1.07 (LU, 0.95–1.09, 5 pairs); on the grids whose update waits 192 was no faster
/// (0.98–0.99).
pub const PREFERRED_WIDTH_2D: usize = 192;

/// How much more than the least volume the preferred width may move and still be chosen.
pub const PREFERRED_SLACK: f64 = 0.10;

/// How much more than the least volume a narrower width may move and still be chosen over the
/// narrowest: the widest within this of the least is taken.
pub const WIDTH_SLACK: f64 = 0.05;

/// The tile widths tried on `grid` (`block`, when given), ascending: the multiples of `c`
/// nearest [`WIDTHS`] up to the grid's [`TileGrid::preferred_width`], and that.
pub fn widths(grid: TileGrid, block: Option<usize>) -> Vec<usize> {
    if let Some(v) = block {
        return vec![v];
    }
    let c = grid.c.max(1);
    let widest = grid.preferred_width();
    let mut out: Vec<usize> = WIDTHS
        .iter()
        .map(|&u| c * u.div_ceil(c))
        .chain([widest])
        .filter(|&v| v <= widest)
        .collect();
    out.dedup();
    out
}

/// The grid and the tile width for an `m × n` factorisation on `p` ranks that a `cost(grid,
/// v)` (words per used rank, say) finds best, within the constraints of [`choose_grid`]
/// (`layers` fixes `c`; `block` fixes `v`, and `c ≤ v`).
///
/// The 24 grids best by the leading-order model (with the broadcast of `A00`) are weighed by
/// `cost` at their narrowest width, in order while a work budget of about 0.1 s lasts (at
/// least four); the grid of least cost wins, costs within 1.5 % tying (then more ranks, fewer
/// layers, the squarer layer, fewer grid rows). Its width is then [`choose_width`]'s: wide tiles
/// keep the local products efficient, narrow ones broadcast less (`A00` is `v²` words per step
/// to every rank).
///
/// # Errors
/// As [`choose_grid`].
pub fn plan_grid(
    (m, n): (usize, usize),
    p: usize,
    memory_words: Option<f64>,
    max_idle_fraction: f64,
    layers: Option<usize>,
    block: Option<usize>,
    cost: impl Fn(TileGrid, usize) -> f64,
) -> Result<(TileGrid, usize), GridError> {
    let max_layers = block.unwrap_or(usize::MAX);
    let mut grids = grid_candidates(
        (m, n),
        p,
        memory_words,
        max_layers,
        layers,
        max_idle_fraction,
    )?;
    // The leading-order model plus the broadcast of `A00` at the narrowest width (`N·(v + 2)`
    // words per rank, which the leading order leaves out and which decides the depth at very
    // large `P`). The model is a square matrix's: a rectangular one is weighed by `cost`
    // itself, every grid (its `min(M, N)/v` steps are few when `M` and `N` differ much).
    let rough = |g: TileGrid| {
        let v = widths(g, block)[0];
        if m == n {
            leading_words(n as f64, g) + n as f64 * (v as f64 + 2.0)
        } else {
            cost(g, v)
        }
    };
    grids.sort_by(|&a, &b| {
        rough(a)
            .total_cmp(&rough(b))
            .then(tie_key(a).cmp(&tie_key(b)))
    });
    grids.truncate(SHORTLIST);
    // Weigh the shortlist at its narrowest width, in order, until the work spent (steps times
    // grid rows and columns, what `cost` takes) passes a budget: at least a few grids.
    let mut weighed = Vec::new();
    let mut work = 0usize;
    for g in grids {
        if weighed.len() >= MIN_WEIGHED && work > WEIGH_BUDGET {
            break;
        }
        let v = widths(g, block)[0];
        work = work.saturating_add(m.min(n).div_ceil(v).saturating_mul(g.px + g.py + g.c));
        weighed.push((g, cost(g, v)));
    }
    let candidates: Vec<TileGrid> = weighed.iter().map(|&(g, _)| g).collect();
    let (grid, _) = least(&candidates, GRID_TIE, |g| {
        weighed
            .iter()
            .find(|(h, _)| *h == g)
            .map_or(f64::INFINITY, |&(_, w)| w)
    })
    .expect("candidates are not empty");
    Ok((grid, choose_width(grid, block, |v| cost(grid, v))))
}

/// At least this many grids of the shortlist are weighed, whatever the work.
const MIN_WEIGHED: usize = 4;

/// Work (steps × (Px + Py + c)) after which [`plan_grid`] weighs no more of the shortlist:
/// about 0.1 s.
const WEIGH_BUDGET: usize = 20_000_000;

/// The tile width on `grid` (`block` when given), among [`widths`]: the grid's preferred width
/// ([`TileGrid::preferred_width`]) if `cost` finds it at most 10 % above the least, else the
/// widest within 5 % of the least.
pub fn choose_width(grid: TileGrid, block: Option<usize>, cost: impl Fn(usize) -> f64) -> usize {
    let costs: Vec<(usize, f64)> = widths(grid, block)
        .into_iter()
        .map(|v| (v, cost(v)))
        .collect();
    let least = costs.iter().map(|&(_, w)| w).fold(f64::INFINITY, f64::min);
    let preferred = grid.preferred_width();
    match costs.iter().find(|&&(v, _)| v == preferred) {
        Some(&(v, w)) if w <= least * (1.0 + PREFERRED_SLACK) => v,
        _ => costs
            .iter()
            .filter(|&&(_, w)| w <= least * (1.0 + WIDTH_SLACK))
            .map(|&(v, _)| v)
            .max()
            .unwrap_or(preferred),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_width_is_the_preferred_one_within_its_slack_else_the_widest_near_the_least() {
        let row = TileGrid { px: 1, py: 4, c: 1 };
        let square = TileGrid { px: 2, py: 2, c: 1 };
        let layers = |c| TileGrid { px: 2, py: 2, c };
        // Words falling with the width: the narrowest is least.
        let falling = |v: usize| 100.0 + v as f64 * 0.05;
        assert_eq!(
            choose_width(row, None, falling),
            128,
            "128 costs 5 % more: kept"
        );
        // Where no update waits the preferred width is 192 (8 % more here: kept).
        assert_eq!(choose_width(square, None, falling), 192);
        assert_eq!(*widths(square, None).last().unwrap(), PREFERRED_WIDTH_2D);
        let steep = |v: usize| 100.0 + v as f64 * 0.2;
        // 128 costs 24 % more than 32; within 5 % of the least (106.4, so up to 111.7) the
        // widest is 48 (109.6; 64 costs 112.8).
        assert_eq!(choose_width(row, None, steep), 48);
        assert_eq!(choose_width(square, None, steep), 48);
        // Multiples of the layers, the preferred one (128 on layers) rounded up.
        assert_eq!(choose_width(layers(5), None, falling), 130);
        assert!(widths(layers(5), None).iter().all(|v| v % 5 == 0));
        assert_eq!(widths(layers(7), Some(9)), vec![9]);
        assert_eq!(choose_width(layers(3), Some(17), steep), 17);
    }

    #[test]
    fn the_update_waits_on_one_layer_of_one_grid_row_or_column() {
        let g = |px, py, c| TileGrid { px, py, c };
        assert!(
            g(1, 4, 1).update_waits() && g(4, 1, 1).update_waits() && g(1, 1, 1).update_waits()
        );
        assert!(!g(2, 2, 1).update_waits() && !g(1, 4, 2).update_waits());
        assert_eq!(g(2, 3, 1).preferred_width(), PREFERRED_WIDTH_2D);
        assert_eq!(g(1, 3, 1).preferred_width(), PREFERRED_WIDTH);
        assert_eq!(g(2, 2, 3).preferred_width(), 129);
    }

    #[test]
    fn grids_parse_and_print_alike() {
        let g: TileGrid = "4x2x3".parse().unwrap();
        assert_eq!(g, TileGrid { px: 4, py: 2, c: 3 });
        assert_eq!(g.to_string().parse::<TileGrid>(), Ok(g));
        assert_eq!("3x5".parse::<TileGrid>().map(|g| g.c), Ok(1));
        assert!("4x".parse::<TileGrid>().is_err());
        assert!("2x2x2x2".parse::<TileGrid>().is_err());
    }

    fn grid(n: usize, p: usize) -> TileGrid {
        choose_grid(n, p, None, 256, 0.03).unwrap()
    }

    #[test]
    fn depth_about_the_cube_root_of_a_quarter_of_the_ranks_when_memory_allows() {
        assert_eq!(grid(16384, 32), TileGrid { px: 4, py: 4, c: 2 });
        assert_eq!(grid(16384, 256), TileGrid { px: 8, py: 8, c: 4 });
        assert_eq!(
            grid(16384, 500),
            TileGrid {
                px: 10,
                py: 10,
                c: 5
            }
        );
        assert_eq!(grid(16384, 1), TileGrid { px: 1, py: 1, c: 1 });
        assert_eq!(grid(16384, 4).c, 1, "c ≤ min(Px, Py)");
        // At P = 8 and 64 two depths tie in the model: the shallower one is kept.
        assert_eq!(grid(16384, 8), TileGrid { px: 2, py: 4, c: 1 });
        assert_eq!(grid(16384, 64), TileGrid { px: 4, py: 8, c: 2 });
    }

    #[test]
    fn memory_limits_the_replicas() {
        let n = 16384usize;
        let nn = (n * n) as f64;
        // Exactly one copy's worth per rank: 2D.
        let g = choose_grid(n, 64, Some(nn / 64.0), 256, 0.03).unwrap();
        assert_eq!((g.c, g.ranks()), (1, 64));
        // Two copies' worth: at most c = 2.
        let g = choose_grid(n, 64, Some(2.0 * nn / 64.0), 256, 0.03).unwrap();
        assert!(g.c <= 2 && g.replica_words(n) <= 2.0 * nn / 64.0, "{g}");
        // Less than one copy: an error that says how much is needed.
        let err = choose_grid(n, 64, Some(nn / 128.0), 256, 0.03).unwrap_err();
        assert_eq!(
            err,
            GridError::NotEnoughMemory {
                needed: nn / 64.0,
                available: nn / 128.0
            }
        );
        assert!(err.to_string().contains("needs at least"));
    }

    #[test]
    fn layers_never_exceed_the_tile_width_and_ranks_stay_within_the_idle_limit() {
        for p in 1..=70 {
            for v in [1, 2, 16] {
                let g = choose_grid(4096, p, None, v, 0.03).unwrap();
                assert!(g.c <= v.max(1), "P={p} v={v}: {g}");
                assert!(
                    g.ranks() <= p && g.ranks() as f64 >= 0.97 * p as f64 - 1.0,
                    "P={p}: {g}"
                );
            }
        }
        assert!(choose_grid(10, 0, None, 4, 0.03).is_err());
        assert!(choose_grid(10, 4, None, 4, 1.0).is_err());
    }

    #[test]
    fn the_chosen_grid_moves_fewer_words_than_2d() {
        for p in [8, 27, 64, 125, 512] {
            let n = 32768.0;
            let g = grid(32768, p);
            let flat = TileGrid {
                px: 1,
                py: g.ranks(),
                c: 1,
            };
            assert!(leading_words(n, g) < leading_words(n, flat), "P={p}: {g}");
        }
    }
}
