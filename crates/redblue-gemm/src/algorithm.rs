//! [`Algorithm`]: COSMA and the classical schedules it is compared with. COSMA, SUMMA, 2.5D and
//! CARMA are strategies the same executor runs and the same cost model prices; Cannon's shifts have
//! their own executor and model. [`Schedule`] is what runs, [`multiply`] runs it.

use crate::cannon::{
    cannon_busiest_working_words, cannon_grid, cannon_layouts_on, cannon_on, cannon_rank_cost_on,
};
use crate::fit::{
    check_rank_count, check_strategy, divisors, parallel_steps, plan_strategy, PlanError,
    PlanOptions,
};
use crate::memory::with_agreement;
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
#[non_exhaustive]
pub enum Algorithm {
    /// COSMA: the grid and steps of [`plan_strategy`].
    Cosma,
    /// SUMMA (2D): the most square `p_r × p_c` grid with `p_r·p_c = p`, `k` processed in panels
    /// of about [`SUMMA_PANEL`] columns, each broadcast along grid rows (`A`) and columns (`B`).
    /// (When `m` or `n` is smaller than the grid's side: the most ranks `p_r·p_c ≤ p` with
    /// `p_r ≤ m`, `p_c ≤ n`, then the most square.)
    Summa,
    /// 2.5D (Solomonik–Demmel): a `q × q × c` grid with `c ≤ p^(1/3)` replicated layers, each
    /// layer doing a `k/c` slice in `q/c` panel steps, partial `C` summed over the layers.
    /// (For small dimensions, `q ≤ m, n`, `c ≤ k` and at most `⌈k/c⌉` panels.)
    TwoAndHalfD,
    /// Cannon: the largest `q × q` grid, skewed blocks shifted `q − 1` times.
    Cannon,
    /// CARMA (Demmel et al., seed 004's baseline): recursive halving — on the largest power of
    /// two `2^d ≤ p` ranks, `d` parallel steps each splitting in two the dimension whose part
    /// is then the largest (ties to `m`, then `n`, then `k`), with unlimited memory (its
    /// breadth-first form). A dimension whose part is down to one is not split; when none can
    /// be, fewer ranks are used. Ranks beyond the power of two idle, as in CARMA.
    Carma,
}

/// Panel width of [`Algorithm::Summa`] (ScaLAPACK's usual block sizes are 64–256).
pub const SUMMA_PANEL: usize = 256;

impl Algorithm {
    /// Every algorithm, in the order the miniapp lists them.
    pub const ALL: [Algorithm; 5] = [
        Algorithm::Cosma,
        Algorithm::Summa,
        Algorithm::TwoAndHalfD,
        Algorithm::Cannon,
        Algorithm::Carma,
    ];

    /// What this algorithm runs for `shape` on at most `p` ranks. No schedule cuts a dimension
    /// into more parts than it has ([`check_parts`](crate::check_parts)).
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
        check_rank_count(p)?;
        let strategy = match self {
            Algorithm::Cosma => return plan_strategy(shape, p, options).map(Schedule::Strategy),
            Algorithm::Cannon => {
                let q = cannon_grid(p);
                if let Some(limit) = options.memory_words {
                    let needed = cannon_rank_cost_on(shape, q, q * q - 1).memory_words;
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
                let [pr, pc] = summa_grid(shape, p);
                let panels = shape.k.div_ceil(SUMMA_PANEL).max(1);
                with_panels(shape, [pr, pc, 1], panels)
            }
            Algorithm::TwoAndHalfD => {
                let (q, c, panels) = two_and_half_d_fitted(shape, p);
                with_panels(shape, [q, q, c], panels)
            }
            Algorithm::Carma => carma_strategy(shape, p),
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

    /// What `rank` of a `p`-rank run moves and holds, in the native layouts
    /// ([`Schedule::native_layouts`]), for `alpha ≠ 0`: ranks beyond the schedule's hold
    /// nothing and move nothing but their part in the memory agreement of large runs
    /// ([`crate::memory`]: one all-reduce of one word over the `p` ranks when the busiest
    /// rank's working words reach [`AGREE_FROM_WORDS`](crate::memory::AGREE_FROM_WORDS)).
    pub fn rank_cost(&self, shape: GemmShape, p: usize, rank: usize) -> RankCost {
        let own = match self {
            Schedule::Strategy(s) if rank < s.ranks() && rank < p => {
                cosma_rank_cost(s, shape, rank)
            }
            Schedule::Cannon { q } if rank < p => cannon_rank_cost_on(shape, *q, rank),
            _ => RankCost::default(),
        };
        with_agreement(own, self.busiest_working_words(shape), rank, p)
    }

    /// The largest [`RankCost::working_words`] of any computing rank (for a strategy, the last
    /// rank's: every split gives it the largest part).
    pub fn busiest_working_words(&self, shape: GemmShape) -> u64 {
        match self {
            Schedule::Strategy(s) if s.ranks() > 0 => {
                cosma_rank_cost(s, shape, s.ranks() - 1).working_words
            }
            Schedule::Strategy(_) => 0,
            Schedule::Cannon { q } => cannon_busiest_working_words(shape, *q),
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
    /// As [`native_layouts`] / [`cannon_layouts`](crate::cannon_layouts).
    pub fn native_layouts(
        &self,
        shape: GemmShape,
        ops: (Op, Op),
        nranks: usize,
    ) -> Result<[GridLayout; 3], DistError> {
        match self {
            Schedule::Strategy(s) => native_layouts(s, shape, ops, nranks),
            Schedule::Cannon { q } => cannon_layouts_on(shape, ops, *q, nranks),
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
/// shifts otherwise), for matrices in any layouts; the local products on `par` threads per
/// rank.
///
/// A [`Schedule`] does not say which shape it was planned for, so `multiply` checks what it
/// can cheaply: that the schedule's ranks fit the communicator, and that a strategy cuts no
/// dimension into more parts than the planners ever do for these operands
/// ([`check_parts`](crate::check_parts)) — a strategy planned for another shape (say `m` and
/// `k` swapped) is refused when a dimension it splits is now too short for it. Otherwise such a
/// strategy still computes the right product, at the cost of the shape it was planned for. To
/// have the shape, the ops and the ranks checked, plan with [`GemmPlan`](crate::GemmPlan) and
/// run with [`gemm_with`](crate::gemm_with).
///
/// Non-finite numbers propagate as IEEE arithmetic does: an entry of `C` that a NaN enters (in
/// `alpha`, `beta`, its row of `op(A)`, its column of `op(B)`, or itself) is NaN; one that an
/// infinity enters is infinite or NaN, as the order of the additions makes it (`∞ − ∞`, which no
/// BLAS fixes). As in BLAS, `alpha = 0` reads neither `A` nor `B` and `beta = 0` does not read
/// `C`, so what they hold does not matter then.
///
/// # Collective
/// Every rank passes the same layouts, ops, scalars and schedule.
///
/// # Errors
/// The same on every rank: as [`cosma`] (which includes [`PlanError::TooManyParts`]); for
/// `Schedule::Cannon { q }`, [`PlanError::TooManyRanks`] if `q² > comm.size()` and
/// [`PlanError::InvalidOptions`] for `q = 0`.
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_core::Op;
/// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
/// use redblue_gemm::{multiply, Algorithm, GemmShape, PlanOptions};
/// use redblue_kernels::Par;
///
/// let shape = GemmShape::new(40, 30, 50);
/// let schedule = Algorithm::Cosma.schedule(shape, 4, &PlanOptions::default()).unwrap();
/// let traces = run_ranks(4, |comm| {
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, BlockCyclic::new(40, 50, 8, 8, 2, 2).unwrap(), 1).unwrap();
///     let b = OwnedDistMatrix::<f64, _>::random(&comm, BlockCyclic::new(50, 30, 8, 8, 2, 2).unwrap(), 2).unwrap();
///     let mut c = OwnedDistMatrix::zeros(&comm, BlockCyclic::new(40, 30, 8, 8, 2, 2).unwrap()).unwrap();
///     multiply(&comm, 1.0, &a, Op::NoTrans, &b, Op::NoTrans, 0.0, &mut c, &schedule, Par::Seq).unwrap();
///     // A strategy no planner gives for these operands (k = 50 cut into 4 parts of 16
///     // sequential parts each) is refused, on every rank.
///     let wrong = "pk4,sk16".parse().map(redblue_gemm::Schedule::Strategy).unwrap();
///     let refused = multiply(&comm, 1.0, &a, Op::NoTrans, &b, Op::NoTrans, 0.0, &mut c, &wrong, Par::Seq);
///     refused.is_err()
/// });
/// assert_eq!(traces, vec![true; 4]);
/// ```
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
        Schedule::Cannon { q: 0 } => Err(GemmError::Plan(PlanError::InvalidOptions(
            "a Cannon grid of side 0".into(),
        ))),
        Schedule::Cannon { q } if q.saturating_mul(*q) > comm.size() => {
            Err(GemmError::Plan(PlanError::TooManyRanks {
                strategy: q.saturating_mul(*q),
                available: comm.size(),
            }))
        }
        Schedule::Cannon { q } => cannon_on(comm, *q, alpha, a, op_a, b, op_b, beta, c, par),
    }
}

/// SUMMA's `p_r × p_c` grid for `shape` on at most `p` ranks: the most ranks with `p_r ≤ m`
/// and `p_c ≤ n` (each at least 1), then the most square, `p_r ≤ p_c` on ties — the most
/// square `p_r × p_c = p` whenever `m` and `n` allow it.
fn summa_grid(shape: GemmShape, p: usize) -> [usize; 2] {
    let (cap_m, cap_n) = (shape.m.max(1), shape.n.max(1));
    let start = p.min(cap_m.saturating_mul(cap_n));
    (1..=start)
        .rev()
        .find_map(|used| {
            divisors(used)
                .into_iter()
                .filter(|&pr| pr <= cap_m && used / pr <= cap_n)
                .min_by_key(|&pr| pr.abs_diff(used / pr))
                .map(|pr| [pr, used / pr])
        })
        .unwrap_or([1, 1])
}

/// 2.5D's `(q, c, panels)` for `shape` on at most `p` ranks: [`two_and_half_d_grid`] when the
/// dimensions allow it; otherwise, over the same layer counts, `q` capped by `m` and `n`, `c`
/// by `k`, and at most `⌈k/c⌉` panels — the most ranks `q²c`, ties to more layers.
fn two_and_half_d_fitted(shape: GemmShape, p: usize) -> (usize, usize, usize) {
    let (cap_side, cap_k) = (shape.m.min(shape.n).max(1), shape.k.max(1));
    let mut best = (1, 1);
    let mut c = 1;
    while c * c * c <= p && c <= cap_k {
        let q = (p / c).isqrt().min(cap_side);
        if q * q * c >= best.0 * best.0 * best.1 {
            best = (q, c);
        }
        c += 1;
    }
    let (q, c) = best;
    let panels = (q / c).max(1).min(shape.k.div_ceil(c).max(1));
    (q, c, panels)
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

/// CARMA's halvings for `shape` on at most `p` ranks ([`Algorithm::Carma`]).
pub fn carma_strategy(shape: GemmShape, p: usize) -> Strategy {
    let dims = [Dim::M, Dim::N, Dim::K];
    let size = shape.dims();
    let mut parts = [1usize; 3];
    let mut steps = Vec::new();
    let mut ranks = 1usize;
    while ranks.saturating_mul(2) <= p {
        // The dimension whose part `size / parts` is the largest (exactly: cross-multiplied),
        // among those that still have two or more per part.
        let mut pick: Option<usize> = None;
        for d in (0..3).filter(|&d| size[d] >= 2 * parts[d]) {
            let larger =
                |e: usize| size[d] as u128 * parts[e] as u128 > size[e] as u128 * parts[d] as u128;
            if pick.is_none_or(larger) {
                pick = Some(d);
            }
        }
        let Some(d) = pick else { break };
        parts[d] *= 2;
        ranks *= 2;
        steps.push(Step::parallel(dims[d], 2));
    }
    Strategy::new(steps).expect("divisors are 2")
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
            Algorithm::Carma => "carma",
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
                format!("unknown algorithm `{s}`: expected cosma, summa, 2.5d, cannon or carma")
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parallel_lower_bound;

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
    fn no_schedule_cuts_a_dimension_into_more_parts_than_it_has() {
        let o = PlanOptions::default();
        for p in 1..=40 {
            for (m, n, k) in [
                (1, 1, 1),
                (1, 50, 3),
                (2, 3, 700),
                (7, 2, 2),
                (0, 4, 9),
                (5, 5, 0),
            ] {
                let shape = GemmShape::new(m, n, k);
                for a in Algorithm::ALL {
                    let schedule = a.schedule(shape, p, &o).unwrap();
                    assert!(schedule.ranks() <= p, "{a} {shape:?} p={p}: {schedule}");
                    if let Schedule::Strategy(s) = &schedule {
                        crate::check_parts(s, shape).unwrap();
                    }
                }
            }
        }
        // SUMMA with one row of C: all ranks along n.
        let s = strategy(Algorithm::Summa, GemmShape::new(1, 64, 64), 12);
        assert_eq!(s.grid(), [1, 12, 1]);
        // 2.5D with a short k: fewer layers.
        let s = strategy(Algorithm::TwoAndHalfD, GemmShape::new(64, 64, 1), 32);
        assert_eq!((s.grid(), s.sequential_parts()), ([5, 5, 1], [1, 1, 1]));
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
            for a in [
                Algorithm::Summa,
                Algorithm::TwoAndHalfD,
                Algorithm::Cannon,
                Algorithm::Carma,
            ] {
                assert!(cosma <= cost(a).words_received_max, "{a} {shape:?} p={p}");
            }
        }
    }

    #[test]
    fn carma_halves_the_largest_dimension() {
        let s = |m, n, k, p| carma_strategy(GemmShape::new(m, n, k), p).to_string();
        // A cube: m, n, k in turn (ties to m, then n, then k).
        assert_eq!(s(64, 64, 64, 8), "pm2,pn2,pk2");
        assert_eq!(s(64, 64, 64, 16), "pm2,pn2,pk2,pm2");
        // Tall k: k first until it is no longer the largest.
        assert_eq!(s(4, 4, 16, 16), "pk2,pk2,pm2,pn2");
        // Not a power of two: the largest power of two below, the others idle.
        assert_eq!(carma_strategy(GemmShape::new(64, 64, 64), 12).ranks(), 8);
        // A dimension of one part is not split; with none left, fewer ranks.
        assert_eq!(s(1, 1, 3, 8), "pk2");
        assert_eq!(carma_strategy(GemmShape::new(1, 1, 1), 8).ranks(), 1);
        // The domain's longest side is at most twice its shortest once it is (a halving of the
        // longest keeps it so): from the start for these shapes, after three halvings of k
        // for the tall one.
        for (m, n, k, from) in [
            (64, 64, 64, 0),
            (1000, 1300, 700, 0),
            (512, 256, 512, 0),
            (512, 256, 4096, 3),
        ] {
            for d in from..=9 {
                let shape = GemmShape::new(m, n, k);
                let st = carma_strategy(shape, 1 << d);
                let side = |i: usize| shape.dims()[i] as f64 / st.grid()[i] as f64;
                let (lo, hi) = (0..3)
                    .map(side)
                    .fold((f64::MAX, 0.0f64), |(lo, hi), x| (lo.min(x), hi.max(x)));
                assert!(hi <= 2.0 * lo, "{shape:?} 2^{d}: {st}");
            }
        }
    }

    #[test]
    fn carma_words_equal_the_closed_forms() {
        // The paper's unlimited-memory form (a cubic domain: m = n = k, p = 8^l): every element
        // of the domain's faces touched, 3·(mnk/p)^(2/3), of which the rank held its 1/p of
        // each matrix; then CARMA meets the lower bound.
        for (n, p) in [(64, 8), (64, 64), (128, 512)] {
            let shape = GemmShape::new(n, n, n);
            let o = PlanOptions::default();
            let c = Algorithm::Carma
                .schedule(shape, p, &o)
                .unwrap()
                .cost(shape, p);
            let bound = parallel_lower_bound(shape, p, None);
            assert_eq!(c.words_received_max as f64, bound, "n={n} p={p}");
        }
        // Otherwise CARMA moves more than COSMA (seed 004: up to √3 times as much).
        for (m, n, k, p) in [(64, 32, 256, 16), (48, 96, 24, 32), (4, 4, 16, 16)] {
            let shape = GemmShape::new(m, n, k);
            let o = PlanOptions::default();
            let words = |a: Algorithm| a.schedule(shape, p, &o).unwrap().cost(shape, p);
            let (carma, cosma) = (words(Algorithm::Carma), words(Algorithm::Cosma));
            assert!(carma.words_received_max >= cosma.words_received_max);
        }
    }
}
