//! [`Algorithm`]: COSMA and the classical schedules it is compared with. COSMA, SUMMA and 2.5D
//! are strategies the same executor runs and the same cost model prices; Cannon's shifts have
//! their own executor and model. [`Schedule`] is what runs, [`multiply`] runs it.

use crate::cannon::{cannon, cannon_grid, cannon_layouts, cannon_rank_cost};
use crate::fit::{check_strategy, parallel_steps, plan_strategy, PlanError, PlanOptions};
use crate::model::{cosma_rank_cost, CostSummary, RankCost};
use crate::plan::GemmShape;
use crate::{cosma, native_layouts, Dim, GemmError, Step, Strategy};
use redblue_comm::Communicator;
use redblue_core::Op;
use redblue_dist::{DistError, DistMatrix, DistMatrixMut, GridLayout};
use redblue_kernels::{KernelScalar, Par};
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
    /// Cannon: the largest `q × q` grid, skewed blocks shifted `q − 1` times.
    Cannon,
}

/// Panel width of [`Algorithm::Summa`] (ScaLAPACK's usual block sizes are 64–256).
pub const SUMMA_PANEL: usize = 256;

impl Algorithm {
    /// Every algorithm, in the order the miniapp lists them.
    pub const ALL: [Algorithm; 4] = [
        Algorithm::Cosma,
        Algorithm::Summa,
        Algorithm::TwoAndHalfD,
        Algorithm::Cannon,
    ];

    /// What this algorithm runs for `shape` on at most `p` ranks.
    ///
    /// # Errors
    /// As [`plan_strategy`] for COSMA; for the baselines, [`PlanError::InvalidOptions`] for
    /// `p = 0` and [`PlanError::NotEnoughMemory`] if their fixed schedule exceeds the limit.
    pub fn schedule(
        self,
        shape: GemmShape,
        p: usize,
        options: &PlanOptions,
    ) -> Result<Schedule, PlanError> {
        if p == 0 {
            return Err(PlanError::InvalidOptions(
                "there must be at least one rank".into(),
            ));
        }
        let strategy = match self {
            Algorithm::Cosma => return plan_strategy(shape, p, options).map(Schedule::Strategy),
            Algorithm::Cannon => {
                let q = cannon_grid(p);
                if let Some(limit) = options.memory_words {
                    let needed = cannon_rank_cost(shape, p, q * q - 1).memory_words;
                    if needed > limit {
                        return Err(PlanError::NotEnoughMemory {
                            needed,
                            available: limit,
                        });
                    }
                }
                return Ok(Schedule::Cannon { q });
            }
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
        Ok(Schedule::Strategy(strategy))
    }
}

/// What runs: a strategy on the COSMA executor, or Cannon's shifts on a `q × q` grid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// A splitting strategy (COSMA, SUMMA, 2.5D, or the user's).
    Strategy(Strategy),
    /// Cannon's algorithm on a `q × q` grid.
    Cannon {
        /// The grid side.
        q: usize,
    },
}

impl Schedule {
    /// The ranks that compute.
    pub fn ranks(&self) -> usize {
        match self {
            Schedule::Strategy(s) => s.ranks(),
            Schedule::Cannon { q } => q * q,
        }
    }

    /// The process grid `[p_m, p_n, p_k]`.
    pub fn grid(&self) -> [usize; 3] {
        match self {
            Schedule::Strategy(s) => s.grid(),
            Schedule::Cannon { q } => [*q, *q, 1],
        }
    }

    /// What `rank` of a `p`-rank run moves and holds, in the native layouts.
    pub fn rank_cost(&self, shape: GemmShape, p: usize, rank: usize) -> RankCost {
        match self {
            Schedule::Strategy(s) if rank < s.ranks() => cosma_rank_cost(s, shape, rank),
            Schedule::Strategy(_) => RankCost::default(),
            Schedule::Cannon { .. } => cannon_rank_cost(shape, p, rank),
        }
    }

    /// [`Schedule::rank_cost`] summarised over the computing ranks.
    pub fn cost(&self, shape: GemmShape, p: usize) -> CostSummary {
        CostSummary::over(self.ranks(), |r| self.rank_cost(shape, p, r))
    }

    /// The layouts of `A`, `B`, `C` (as stored) in which the run moves exactly
    /// [`Schedule::rank_cost`].
    ///
    /// # Errors
    /// As [`native_layouts`] / [`cannon_layouts`].
    pub fn native_layouts(
        &self,
        shape: GemmShape,
        ops: (Op, Op),
        nranks: usize,
    ) -> Result<[GridLayout; 3], DistError> {
        match self {
            Schedule::Strategy(s) => native_layouts(s, shape, ops, nranks),
            Schedule::Cannon { .. } => cannon_layouts(shape, ops, nranks),
        }
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Schedule::Strategy(s) => write!(f, "{s}"),
            Schedule::Cannon { q } => write!(f, "cannon {q}x{q}"),
        }
    }
}

/// `C = alpha·op(A)·op(B) + beta·C` with `schedule` ([`cosma`] for strategies, Cannon's
/// shifts otherwise), for matrices in any layouts.
///
/// # Collective
/// # Errors
/// As [`cosma`].
#[allow(clippy::too_many_arguments)]
pub fn multiply<T, C, A, B, M>(
    comm: &C,
    alpha: T,
    a: &A,
    op_a: Op,
    b: &B,
    op_b: Op,
    beta: T,
    c: &mut M,
    schedule: &Schedule,
    par: Par,
) -> Result<(), GemmError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrix<T> + ?Sized,
    M: DistMatrixMut<T> + ?Sized,
{
    match schedule {
        Schedule::Strategy(s) => cosma(comm, alpha, a, op_a, b, op_b, beta, c, s, par),
        Schedule::Cannon { q } => {
            if *q != cannon_grid(comm.size()) {
                return Err(GemmError::Plan(PlanError::InvalidOptions(format!(
                    "a cannon {q}x{q} schedule on {} ranks: plan it for this communicator",
                    comm.size()
                ))));
            }
            cannon(comm, alpha, a, op_a, b, op_b, beta, c, par)
        }
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
            Algorithm::Cannon => "cannon",
        })
    }
}

impl FromStr for Algorithm {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        Algorithm::ALL
            .into_iter()
            .find(|a| a.to_string() == s.to_ascii_lowercase())
            .ok_or_else(|| {
                format!("unknown algorithm `{s}`: expected cosma, summa, 2.5d or cannon")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strategy(a: Algorithm, shape: GemmShape, p: usize) -> Strategy {
        match a.schedule(shape, p, &PlanOptions::default()).unwrap() {
            Schedule::Strategy(s) => s,
            other => panic!("{other}"),
        }
    }

    #[test]
    fn grids_of_the_baselines() {
        let shape = GemmShape::new(1024, 1024, 1024);
        let s = strategy(Algorithm::Summa, shape, 12);
        assert_eq!((s.grid(), s.sequential_parts()), ([3, 4, 1], [1, 1, 4]));
        let s = strategy(Algorithm::Summa, shape, 7);
        assert_eq!(s.grid(), [1, 7, 1]);
        assert_eq!(two_and_half_d_grid(64), (4, 4));
        assert_eq!(two_and_half_d_grid(32), (4, 2));
        assert_eq!(two_and_half_d_grid(8), (2, 2));
        let s = strategy(Algorithm::TwoAndHalfD, shape, 32);
        assert_eq!((s.grid(), s.sequential_parts()), ([4, 4, 2], [1, 1, 2]));
        let o = PlanOptions::default();
        assert_eq!(
            Algorithm::Cannon.schedule(shape, 20, &o),
            Ok(Schedule::Cannon { q: 4 })
        );
        for a in Algorithm::ALL {
            assert_eq!(a.to_string().parse::<Algorithm>(), Ok(a));
        }
        assert!("fox".parse::<Algorithm>().unwrap_err().contains("cosma"));
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
            let cost = |a: Algorithm| a.schedule(shape, p, &o).unwrap().cost(shape, p);
            let cosma = cost(Algorithm::Cosma).words_received_max;
            for a in [Algorithm::Summa, Algorithm::TwoAndHalfD, Algorithm::Cannon] {
                assert!(cosma <= cost(a).words_received_max, "{a} {shape:?} p={p}");
            }
        }
    }
}
