//! [`Algorithm`]: COSMA and the classical schedules it is compared with, each as a strategy the
//! same executor runs and the same cost model prices.

use crate::fit::{check_strategy, parallel_steps, plan_strategy, PlanError, PlanOptions};
use crate::plan::GemmShape;
use crate::{Dim, Step, Strategy};
use std::fmt;
use std::str::FromStr;

/// A multiplication schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Algorithm {
    /// COSMA: the grid and steps of [`plan_strategy`].
    Cosma,
    /// SUMMA (2D): the most square `p_r × p_c` grid with `p_r·p_c = p`, `k` processed in panels
    /// of about [`SUMMA_PANEL`] columns, each broadcast along grid rows (`A`) and columns (`B`).
    Summa,
    /// 2.5D (Solomonik–Demmel): a `q × q × c` grid with `c ≤ p^(1/3)` replicated layers, each
    /// layer doing a `k/c` slice in `q/c` panel steps, partial `C` summed over the layers.
    TwoAndHalfD,
}

/// Panel width of [`Algorithm::Summa`] (ScaLAPACK's usual block sizes are 64–256).
pub const SUMMA_PANEL: usize = 256;

impl Algorithm {
    /// Every algorithm, in the order the miniapp lists them.
    pub const ALL: [Algorithm; 3] = [Algorithm::Cosma, Algorithm::Summa, Algorithm::TwoAndHalfD];

    /// The strategy this algorithm runs for `shape` on at most `p` ranks.
    ///
    /// # Errors
    /// As [`plan_strategy`] for COSMA; for the baselines, [`PlanError::InvalidOptions`] for
    /// `p = 0` and [`PlanError::NotEnoughMemory`] if their fixed schedule exceeds the limit.
    pub fn strategy(
        self,
        shape: GemmShape,
        p: usize,
        options: &PlanOptions,
    ) -> Result<Strategy, PlanError> {
        if p == 0 {
            return Err(PlanError::InvalidOptions(
                "there must be at least one rank".into(),
            ));
        }
        let strategy = match self {
            Algorithm::Cosma => return plan_strategy(shape, p, options),
            Algorithm::Summa => {
                let pr = (1..=p)
                    .rev()
                    .find(|&d| p.is_multiple_of(d) && d * d <= p)
                    .unwrap_or(1);
                let panels = shape.k.div_ceil(SUMMA_PANEL).max(1);
                with_panels(shape, [pr, p / pr, 1], panels)
            }
            Algorithm::TwoAndHalfD => {
                let (q, c) = two_and_half_d_grid(p);
                with_panels(shape, [q, q, c], (q / c).max(1))
            }
        };
        check_strategy(&strategy, shape, p, options)?;
        Ok(strategy)
    }
}

/// The `q × q × c` grid of 2.5D on at most `p` ranks: the most ranks `q²·c` with
/// `c ≤ p^(1/3)`, ties to more layers.
pub fn two_and_half_d_grid(p: usize) -> (usize, usize) {
    let mut best = (1, 1);
    let mut c = 1;
    while c * c * c <= p {
        let q = (p / c).isqrt();
        if q * q * c >= best.0 * best.0 * best.1 {
            best = (q, c);
        }
        c += 1;
    }
    best
}

/// The parallel steps of `grid` followed by `panels` sequential parts of `k` (each rank's
/// `k` range cut into panels done one after the other).
fn with_panels(shape: GemmShape, grid: [usize; 3], panels: usize) -> Strategy {
    let mut steps = parallel_steps(shape, grid);
    if panels > 1 {
        steps.push(Step::sequential(Dim::K, panels));
    }
    Strategy::new(steps).expect("divisors are ≥ 2")
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Algorithm::Cosma => "cosma",
            Algorithm::Summa => "summa",
            Algorithm::TwoAndHalfD => "2.5d",
        })
    }
}

impl FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.to_string() == s.to_ascii_lowercase())
            .ok_or_else(|| format!("unknown algorithm `{s}`: expected cosma, summa or 2.5d"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cosma_cost;

    #[test]
    fn grids_of_the_baselines() {
        let shape = GemmShape::new(1024, 1024, 1024);
        let o = PlanOptions::default();
        let s = Algorithm::Summa.strategy(shape, 12, &o).unwrap();
        assert_eq!((s.grid(), s.sequential_parts()), ([3, 4, 1], [1, 1, 4]));
        let s = Algorithm::Summa.strategy(shape, 7, &o).unwrap();
        assert_eq!(s.grid(), [1, 7, 1]);
        assert_eq!(two_and_half_d_grid(64), (4, 4));
        assert_eq!(two_and_half_d_grid(32), (4, 2));
        assert_eq!(two_and_half_d_grid(8), (2, 2));
        let s = Algorithm::TwoAndHalfD.strategy(shape, 32, &o).unwrap();
        assert_eq!((s.grid(), s.sequential_parts()), ([4, 4, 2], [1, 1, 2]));
        for a in Algorithm::ALL {
            assert_eq!(a.to_string().parse::<Algorithm>(), Ok(a));
        }
        assert!("cannon".parse::<Algorithm>().unwrap_err().contains("cosma"));
    }

    #[test]
    fn cosma_moves_no_more_than_the_baselines() {
        for (shape, p) in [
            (GemmShape::new(2048, 2048, 2048), 64),
            (GemmShape::new(512, 512, 65536), 16),
            (GemmShape::new(4096, 4096, 256), 16),
            (GemmShape::new(1000, 1000, 1000), 27),
        ] {
            let o = PlanOptions::default();
            let cost = |a: Algorithm| cosma_cost(&a.strategy(shape, p, &o).unwrap(), shape);
            let cosma = cost(Algorithm::Cosma).words_received_max;
            for a in [Algorithm::Summa, Algorithm::TwoAndHalfD] {
                assert!(cosma <= cost(a).words_received_max, "{a} {shape:?} p={p}");
            }
        }
    }
}
