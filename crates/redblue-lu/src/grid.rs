//! [`ConfluxGrid`] and [`choose_grid`]: the `[Px, Py, c]` process grid of COnfLUX, chosen from
//! `N`, `P` and the memory limit, with a few idle ranks allowed for a better grid (as COSMA's
//! grid fitting).

use crate::model::conflux_words;
use std::fmt;

/// COnfLUX's process grid: `Px × Py` ranks per layer, `c` layers (replicas of the trailing
/// matrix, `c = 1` is 2D).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConfluxGrid {
    /// Ranks along the rows of a layer.
    pub px: usize,
    /// Ranks along the columns of a layer.
    pub py: usize,
    /// Layers.
    pub c: usize,
}

impl ConfluxGrid {
    /// Ranks the grid uses.
    pub fn ranks(self) -> usize {
        self.px * self.py * self.c
    }

    /// Words each rank holds for its layer's copy of the trailing matrix: `c·N²/P′`.
    pub fn replica_words(self, n: usize) -> f64 {
        self.c as f64 * (n as f64) * (n as f64) / self.ranks() as f64
    }
}

impl fmt::Display for ConfluxGrid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}x{}", self.px, self.py, self.c)
    }
}

impl std::str::FromStr for ConfluxGrid {
    type Err = String;

    /// `"PXxPYxC"`, e.g. `"4x4x2"` (`"PXxPY"` for one layer).
    fn from_str(s: &str) -> Result<Self, String> {
        let parts: Vec<&str> = s.split('x').collect();
        let nums: Result<Vec<usize>, _> = parts.iter().map(|p| p.trim().parse()).collect();
        match nums.as_deref() {
            Ok(&[px, py, c]) => Ok(ConfluxGrid { px, py, c }),
            Ok(&[px, py]) => Ok(ConfluxGrid { px, py, c: 1 }),
            _ => Err(format!("a grid is PXxPYxC, e.g. 4x4x2, not '{s}'")),
        }
    }
}

/// Why no grid could be chosen.
#[derive(Clone, Debug, PartialEq)]
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

/// The grid with the fewest words per rank by [`conflux_words`] among all `[Px, Py, c]` with
/// `⌈(1 − δ)·P⌉ ≤ Px·Py·c ≤ P`, `c ≤ v` (each layer needs at least one of a step's `v`
/// columns), `c ≤ Px, Py` (no more replicas than a layer has rows of ranks: the model's optimum
/// is `c = P^(1/3)`), and the replicas fitting the memory (`c·N²/P′ ≤ M`). Ties go to more
/// ranks, then to fewer layers, then to the squarer layer, then to more grid rows (on `P×1×1`
/// each rank solves its rows of `L10` in place, where `1×P×1` moves them).
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
) -> Result<ConfluxGrid, GridError> {
    if p == 0 {
        return Err(GridError::InvalidOptions(
            "there must be at least one rank".into(),
        ));
    }
    if !(0.0..1.0).contains(&max_idle_fraction) {
        return Err(GridError::InvalidOptions(format!(
            "the idle fraction must be in [0, 1), not {max_idle_fraction}"
        )));
    }
    let lowest = ((p as f64) * (1.0 - max_idle_fraction)).ceil().max(1.0) as usize;
    let fits = |g: ConfluxGrid| memory_words.is_none_or(|m| g.replica_words(n) <= m);
    let mut best: Option<(ConfluxGrid, f64)> = None;
    for used in (lowest..=p).rev() {
        for c in (1..=used).filter(|c| used.is_multiple_of(*c) && *c <= v.max(1)) {
            let layer = used / c;
            for px in (1..=layer).filter(|x| layer.is_multiple_of(*x)) {
                let g = ConfluxGrid {
                    px,
                    py: layer / px,
                    c,
                };
                if c > g.px.min(g.py) && c > 1 || !fits(g) {
                    continue;
                }
                let words = conflux_words(n as f64, g);
                let key = |g: ConfluxGrid| (g.c, g.px.abs_diff(g.py), usize::MAX - g.px);
                let better = best.is_none_or(|(b, w)| {
                    words < w * (1.0 - 1e-12)
                        || (words <= w * (1.0 + 1e-12) && b.ranks() == used && key(g) < key(b))
                });
                if better {
                    best = Some((g, words));
                }
            }
        }
    }
    best.map(|(g, _)| g)
        .ok_or_else(|| GridError::NotEnoughMemory {
            needed: (n as f64) * (n as f64) / p as f64,
            available: memory_words.unwrap_or(f64::INFINITY),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grids_parse_and_print_alike() {
        let g: ConfluxGrid = "4x2x3".parse().unwrap();
        assert_eq!(g, ConfluxGrid { px: 4, py: 2, c: 3 });
        assert_eq!(g.to_string().parse::<ConfluxGrid>(), Ok(g));
        assert_eq!("3x5".parse::<ConfluxGrid>().map(|g| g.c), Ok(1));
        assert!("4x".parse::<ConfluxGrid>().is_err());
        assert!("2x2x2x2".parse::<ConfluxGrid>().is_err());
    }

    fn grid(n: usize, p: usize) -> ConfluxGrid {
        choose_grid(n, p, None, 256, 0.03).unwrap()
    }

    #[test]
    fn depth_about_the_cube_root_of_a_quarter_of_the_ranks_when_memory_allows() {
        assert_eq!(grid(16384, 32), ConfluxGrid { px: 4, py: 4, c: 2 });
        assert_eq!(grid(16384, 256), ConfluxGrid { px: 8, py: 8, c: 4 });
        assert_eq!(
            grid(16384, 500),
            ConfluxGrid {
                px: 10,
                py: 10,
                c: 5
            }
        );
        assert_eq!(grid(16384, 1), ConfluxGrid { px: 1, py: 1, c: 1 });
        assert_eq!(grid(16384, 4).c, 1, "c ≤ min(Px, Py)");
        // At P = 8 and 64 two depths tie in the model: the shallower one is kept.
        assert_eq!(grid(16384, 8), ConfluxGrid { px: 4, py: 2, c: 1 });
        assert_eq!(grid(16384, 64), ConfluxGrid { px: 8, py: 4, c: 2 });
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
            let flat = ConfluxGrid {
                px: 1,
                py: g.ranks(),
                c: 1,
            };
            assert!(conflux_words(n, g) < conflux_words(n, flat), "P={p}: {g}");
        }
    }
}
