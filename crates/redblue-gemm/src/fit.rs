//! Choosing a strategy: COSMA's grid fitting (a few idle ranks rather than a bad factorisation
//! of `p`), the order of the parallel steps, and sequential steps when memory is short.

use crate::model::{cosma_cost, cosma_rank_cost};
use crate::plan::GemmShape;
use crate::{Dim, Step, Strategy};
use redblue_comm::MAX_RANKS;
use std::fmt;

/// What [`plan_strategy`] may use: the memory and idle-fraction fields of
/// [`GemmParams`](crate::GemmParams), whose names and units are the same (the options of the
/// plan convention, [`GemmPlan`](crate::GemmPlan), are those).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct PlanOptions {
    /// Words (matrix elements) each rank may hold; `None` = unlimited.
    pub memory_words: Option<u64>,
    /// The largest fraction of the ranks that may be left idle for a better grid (COSMA's δ;
    /// the paper uses 3 %).
    pub max_idle_fraction: f64,
}

impl Default for PlanOptions {
    fn default() -> Self {
        PlanOptions {
            memory_words: None,
            max_idle_fraction: 0.03,
        }
    }
}

impl PlanOptions {
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
}

/// Why no strategy could be chosen or a given one cannot run.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanError {
    /// No strategy fits the memory limit: the least any grid needs, per rank.
    NotEnoughMemory {
        /// Words per rank the best feasible plan needs.
        needed: u64,
        /// The limit given.
        available: u64,
    },
    /// A strategy uses more ranks than there are.
    TooManyRanks {
        /// Ranks the strategy uses.
        strategy: usize,
        /// Ranks available.
        available: usize,
    },
    /// A strategy cuts a dimension into more parts than the planner ever does for this shape:
    /// more parallel parts than the dimension has elements, or more sequential parts than a
    /// rank's share of it has (a strategy planned for another shape, say).
    TooManyParts {
        /// The dimension.
        dim: Dim,
        /// Its parallel parts (the process grid's extent along it).
        parallel: usize,
        /// Its sequential parts.
        sequential: usize,
        /// Its length in the shape given.
        len: usize,
    },
    /// Zero ranks, or an idle fraction outside `[0, 1)`.
    InvalidOptions(String),
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::NotEnoughMemory { needed, available } => write!(
                f,
                "not enough memory: the multiplication needs at least {needed} words per rank, \
                 but the limit is {available}"
            ),
            PlanError::TooManyRanks {
                strategy,
                available,
            } => write!(
                f,
                "the strategy uses {strategy} ranks, but only {available} are available"
            ),
            PlanError::TooManyParts {
                dim,
                parallel,
                sequential,
                len,
            } => {
                write!(f, "the strategy cuts {dim} into {parallel} parallel part")?;
                if *parallel != 1 {
                    f.write_str("s")?;
                }
                if *sequential > 1 {
                    write!(f, " of {sequential} sequential parts each")?;
                }
                write!(f, ", but {dim} = {len}: was it planned for another shape?")
            }
            PlanError::InvalidOptions(why) => write!(f, "invalid plan options: {why}"),
        }
    }
}

impl std::error::Error for PlanError {}

/// Words a rank receives with grid `[pm, pn, pk]` and even division, ignoring memory: the data
/// it touches minus the data it starts with (see `model`).
fn grid_score(shape: GemmShape, [pm, pn, pk]: [usize; 3]) -> f64 {
    let [m, n, k] = shape.dims().map(|x| x as f64);
    let (lm, ln, lk) = (m / pm as f64, n / pn as f64, k / pk as f64);
    let p = (pm * pn * pk) as f64;
    lm * lk + lk * ln + lm * ln - (m * k + k * n + m * n) / p
}

/// The divisors of `x`, ascending.
pub(crate) fn divisors(x: usize) -> Vec<usize> {
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1;
    while d * d <= x {
        if x.is_multiple_of(d) {
            small.push(d);
            if d * d != x {
                large.push(x / d);
            }
        }
        d += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// COSMA's FitRanks: the grid `[p_m, p_n, p_k]` with the least words received per rank (even
/// division), over all factorisations of every `p′` from `p` down to `⌈(1 − δ)·p⌉`, with no
/// dimension cut into more parts than it has elements. Ties go to more ranks. `p = 65` gives a
/// `4 × 4 × 4` grid on 64 ranks rather than `5 × 13 × 1` on 65. (`p` is first lowered to
/// `m·n·k` if larger; if small dimensions leave no grid in that range, the search goes on to
/// fewer ranks.)
///
/// Grids for which `feasible` is false are skipped; `None` if no grid is feasible.
pub fn fit_grid(
    shape: GemmShape,
    p: usize,
    max_idle_fraction: f64,
    feasible: impl Fn([usize; 3]) -> bool,
) -> Option<[usize; 3]> {
    let cap = shape.dims().map(|x| x.max(1));
    // More ranks than m·n·k would only idle.
    let start = p.min(cap.iter().fold(1usize, |acc, &c| acc.saturating_mul(c)));
    let lowest = ((start as f64) * (1.0 - max_idle_fraction)).ceil().max(1.0) as usize;
    let mut best: Option<([usize; 3], f64)> = None;
    let mut rejected_by_feasible = false;
    for used in (1..=start).rev() {
        // Below the idle limit only while no grid was found because of the caps (a small
        // dimension); fewer ranks would not help a grid that failed `feasible` (memory).
        if used < lowest && (best.is_some() || rejected_by_feasible) {
            break;
        }
        for pm in divisors(used).into_iter().filter(|&d| d <= cap[0]) {
            for pn in divisors(used / pm).into_iter().filter(|&d| d <= cap[1]) {
                let pk = used / pm / pn;
                if pk > cap[2] {
                    continue;
                }
                if !feasible([pm, pn, pk]) {
                    rejected_by_feasible = true;
                    continue;
                }
                let score = grid_score(shape, [pm, pn, pk]);
                // Strictly better by more than rounding wins. Ties keep the grid with more ranks;
                // among as many ranks, the one that cuts k less: a k cut adds a partial C per
                // rank and a reduction pass over it for the same words (measured on 2 ranks,
                // 4096³: pn2 against pk2).
                let better = best.is_none_or(|([bm, bn, bk], b)| {
                    score < b * (1.0 - 1e-12)
                        || (score <= b * (1.0 + 1e-12) && bm * bn * bk == used && pk < bk)
                });
                if better {
                    best = Some(([pm, pn, pk], score));
                }
            }
        }
    }
    best.map(|(g, _)| g)
}

/// The prime factors of `x`, largest first.
fn prime_factors(mut x: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut d = 2;
    while d * d <= x {
        while x.is_multiple_of(d) {
            out.push(d);
            x /= d;
        }
        d += 1;
    }
    if x > 1 {
        out.push(x);
    }
    out.sort_unstable_by(|a, b| b.cmp(a));
    out
}

/// The parallel steps that build `grid`: one step per prime factor, each time splitting the
/// dimension whose current local extent is largest (ties: m, n, k) by its largest remaining
/// factor, so that the groups that communicate first are the ones that share the most data.
pub fn parallel_steps(shape: GemmShape, grid: [usize; 3]) -> Vec<Step> {
    let mut factors = grid.map(prime_factors);
    let mut local = shape.dims().map(|x| x as f64);
    let mut steps = Vec::new();
    while let Some(d) = (0..3)
        .filter(|&d| !factors[d].is_empty())
        .max_by(|&a, &b| local[a].total_cmp(&local[b]).then(b.cmp(&a)))
    {
        let f = factors[d].remove(0);
        local[d] /= f as f64;
        steps.push(Step::parallel(Dim::ALL[d], f));
    }
    steps
}

/// The strategy with grid `grid` and `s` sequential parts of `k` in front (`s = 1`: none).
pub(crate) fn with_sequential_k(shape: GemmShape, grid: [usize; 3], s: usize) -> Strategy {
    let mut steps = Vec::new();
    if s > 1 {
        steps.push(Step::sequential(Dim::K, s));
    }
    steps.extend(parallel_steps(shape, grid));
    Strategy::new(steps).expect("divisors are ≥ 2")
}

/// The smallest number of sequential `k` parts with which `grid` fits in `memory` words per
/// rank; `Err(the memory needed with one k element per part)` if even that does not fit (the
/// `C` block and the rank's parts of `A`, `B`, `C` alone exceed the limit).
///
/// The memory is that of the last rank, which holds the most: at every split it gets the last
/// part, and [`part`](crate::part) makes the last parts the largest (checked against all ranks by
/// a test). So planning costs the same for a million ranks as for two.
pub(crate) fn sequential_parts_for(
    shape: GemmShape,
    grid: [usize; 3],
    memory: Option<u64>,
) -> Result<usize, u64> {
    let need = |s: usize| {
        let strategy = with_sequential_k(shape, grid, s);
        cosma_rank_cost(&strategy, shape, strategy.ranks() - 1).memory_words
    };
    let Some(limit) = memory else {
        return Ok(1);
    };
    let most = shape.k.div_ceil(grid[2]).max(1);
    if need(1) <= limit {
        return Ok(1);
    }
    if need(most) > limit {
        return Err(need(most));
    }
    // The memory falls as s grows: bisect for the smallest s that fits.
    let (mut lo, mut hi) = (1, most);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if need(mid) <= limit {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Ok(hi)
}

/// At least one rank and at most [`MAX_RANKS`].
///
/// # Errors
/// [`PlanError::InvalidOptions`] otherwise.
pub(crate) fn check_rank_count(p: usize) -> Result<(), PlanError> {
    if p == 0 {
        return Err(PlanError::InvalidOptions(
            "there must be at least one rank".into(),
        ));
    }
    if p > MAX_RANKS {
        return Err(PlanError::InvalidOptions(format!(
            "{p} ranks: at most {MAX_RANKS} (MPI numbers ranks with a C int)"
        )));
    }
    Ok(())
}

/// COSMA's strategy for `shape` on at most `p` ranks: the grid from [`fit_grid`] (among the
/// grids that fit the memory limit with enough sequential `k` steps), its parallel steps from
/// [`parallel_steps`], and the fewest sequential `k` parts that fit the limit, in front.
///
/// # Errors
/// [`PlanError::InvalidOptions`] for `p = 0` or an idle fraction outside `[0, 1)`;
/// [`PlanError::NotEnoughMemory`] (with the least memory any grid needs) if no grid fits.
///
/// # Examples
/// ```
/// use redblue_gemm::{plan_strategy, GemmShape, PlanOptions};
/// let s = plan_strategy(GemmShape::new(4096, 4096, 4096), 65, &PlanOptions::default())?;
/// assert_eq!((s.ranks(), s.grid()), (64, [4, 4, 4]));
/// # Ok::<(), redblue_gemm::PlanError>(())
/// ```
pub fn plan_strategy(
    shape: GemmShape,
    p: usize,
    options: &PlanOptions,
) -> Result<Strategy, PlanError> {
    check_rank_count(p)?;
    let delta = options.max_idle_fraction;
    if !(0.0..1.0).contains(&delta) {
        return Err(PlanError::InvalidOptions(format!(
            "the idle fraction must be in [0, 1), not {delta}"
        )));
    }
    let memory = options.memory_words;
    let least_needed = std::cell::Cell::new(u64::MAX);
    let feasible = |grid: [usize; 3]| match sequential_parts_for(shape, grid, memory) {
        Ok(_) => true,
        Err(needed) => {
            least_needed.set(least_needed.get().min(needed));
            false
        }
    };
    let grid = match memory {
        None => fit_grid(shape, p, delta, |_| true),
        Some(_) => fit_grid(shape, p, delta, feasible),
    }
    .ok_or(PlanError::NotEnoughMemory {
        needed: least_needed.get(),
        available: memory.unwrap_or(u64::MAX),
    })?;
    let s = sequential_parts_for(shape, grid, memory).expect("the grid was feasible");
    Ok(with_sequential_k(shape, grid, s))
}

/// Checks a user's strategy against the ranks, the shape ([`check_parts`]) and the memory
/// limit.
///
/// # Errors
/// [`PlanError::TooManyRanks`] if it needs more than `p` ranks; [`PlanError::TooManyParts`] as
/// [`check_parts`]; [`PlanError::NotEnoughMemory`] if some rank would hold more than the limit.
pub fn check_strategy(
    strategy: &Strategy,
    shape: GemmShape,
    p: usize,
    options: &PlanOptions,
) -> Result<(), PlanError> {
    if strategy.ranks() > p {
        return Err(PlanError::TooManyRanks {
            strategy: strategy.ranks(),
            available: p,
        });
    }
    check_parts(strategy, shape)?;
    if let Some(limit) = options.memory_words {
        let needed = cosma_cost(strategy, shape).memory_words_max;
        if needed > limit {
            return Err(PlanError::NotEnoughMemory {
                needed,
                available: limit,
            });
        }
    }
    Ok(())
}

/// Checks that `strategy` cuts no dimension of `shape` into more parts than the planners
/// ([`plan_strategy`], [`Algorithm::schedule`](crate::Algorithm::schedule)) ever do: along each
/// dimension of length `len` (taken as 1 when 0), at most `len` parallel parts, and at most
/// `⌈len / parallel⌉` sequential parts (a rank's largest share). Such a strategy would still
/// compute the right product (its extra parts are empty), but it cannot have been planned for
/// this shape: typically a strategy planned for another one (`m` and `k` swapped).
///
/// # Errors
/// [`PlanError::TooManyParts`] naming the first such dimension (`m`, `n`, `k` in order).
pub fn check_parts(strategy: &Strategy, shape: GemmShape) -> Result<(), PlanError> {
    let (grid, sequential) = (strategy.grid(), strategy.sequential_parts());
    for dim in Dim::ALL {
        let d = dim.index();
        let len = shape.dims()[d];
        let most = len.max(1);
        if grid[d] > most || sequential[d] > len.div_ceil(grid[d]).max(1) {
            return Err(PlanError::TooManyParts {
                dim,
                parallel: grid[d],
                sequential: sequential[d],
                len,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(m: usize, n: usize, k: usize, p: usize) -> Strategy {
        plan_strategy(GemmShape::new(m, n, k), p, &PlanOptions::default()).unwrap()
    }

    #[test]
    fn sixty_five_ranks_use_sixty_four() {
        let s = plan(2000, 2000, 2000, 65);
        assert_eq!((s.ranks(), s.grid()), (64, [4, 4, 4]));
        assert_eq!(s.to_string(), "pm2,pn2,pk2,pm2,pn2,pk2");
    }

    #[test]
    fn nine_thousand_two_hundred_seventeen_behaves_like_nine_thousand_two_hundred_sixteen() {
        let shape = GemmShape::new(16384, 16384, 16384);
        let a = plan_strategy(shape, 9217, &PlanOptions::default()).unwrap();
        let b = plan_strategy(shape, 9216, &PlanOptions::default()).unwrap();
        assert_eq!(a, b);
        // 9217 = 13·709 is not used: the best grid within 3 % is 9200 = 20·23·20, which
        // receives 1.5 % fewer words per rank than 9216's 24·24·16.
        assert_eq!((a.ranks(), a.grid()), (9200, [20, 23, 20]));
    }

    #[test]
    fn no_idle_ranks_allowed_means_all_are_used() {
        let options = PlanOptions {
            max_idle_fraction: 0.0,
            ..Default::default()
        };
        for p in [1, 2, 3, 7, 13, 65] {
            let s = plan_strategy(GemmShape::new(300, 300, 300), p, &options).unwrap();
            assert_eq!(s.ranks(), p);
        }
    }

    #[test]
    fn shapes_get_grids_that_follow_them() {
        // Tall-skinny k ≫ m, n: split k. Flat m, n ≫ k: no split of k.
        assert_eq!(plan(512, 512, 65536, 8).grid(), [1, 1, 8]);
        assert_eq!(plan(4096, 4096, 64, 16).grid(), [4, 4, 1]);
        // A dimension of 1 is never split.
        assert_eq!(plan(1, 1000, 1000, 4).grid()[0], 1);
    }

    #[test]
    fn memory_limit_adds_sequential_k_steps_or_fails_with_the_need() {
        let shape = GemmShape::new(256, 256, 4096);
        let free = plan_strategy(shape, 4, &PlanOptions::default()).unwrap();
        let free_need = cosma_cost(&free, shape).memory_words_max;
        let too_little = PlanOptions {
            memory_words: Some(100),
            ..Default::default()
        };
        let least = match plan_strategy(shape, 4, &too_little) {
            Err(PlanError::NotEnoughMemory { needed, available }) => {
                assert_eq!(available, 100);
                assert!(needed > 100 && needed < free_need, "{needed}");
                needed
            }
            other => panic!("{other:?}"),
        };
        let limit = (least + free_need) / 2;
        let options = PlanOptions {
            memory_words: Some(limit),
            ..Default::default()
        };
        let tight = plan_strategy(shape, 4, &options).unwrap();
        assert!(tight.sequential_parts()[2] > 1, "{tight}");
        assert!(cosma_cost(&tight, shape).memory_words_max <= limit);
        // Exactly the least memory still plans.
        let exact = PlanOptions {
            memory_words: Some(least),
            ..Default::default()
        };
        assert!(plan_strategy(shape, 4, &exact).is_ok());
    }

    #[test]
    fn user_strategies_are_checked() {
        let s: Strategy = "pm2,pn2".parse().unwrap();
        let shape = GemmShape::new(10, 10, 10);
        assert_eq!(
            check_strategy(&s, shape, 3, &PlanOptions::default()),
            Err(PlanError::TooManyRanks {
                strategy: 4,
                available: 3
            })
        );
        assert!(check_strategy(&s, shape, 5, &PlanOptions::default()).is_ok());
        let small = PlanOptions {
            memory_words: Some(10),
            ..Default::default()
        };
        assert!(matches!(
            check_strategy(&s, shape, 4, &small),
            Err(PlanError::NotEnoughMemory { available: 10, .. })
        ));
        assert!(plan_strategy(shape, 0, &PlanOptions::default()).is_err());
    }

    #[test]
    fn planned_strategies_fit_their_shape_and_swapped_ones_may_not() {
        for (m, n, k) in [(1, 1, 1), (2, 8, 64), (3, 700, 2), (0, 5, 9), (40, 40, 40)] {
            let shape = GemmShape::new(m, n, k);
            for p in 1..=30 {
                check_parts(&plan(m, n, k, p), shape).unwrap();
            }
            // Under a memory limit too (sequential k parts at most a rank's share of k).
            let free = cosma_cost(&plan(m, n, k, 6), shape).memory_words_max;
            let tight = PlanOptions {
                memory_words: Some(free * 3 / 4),
                ..Default::default()
            };
            if let Ok(s) = plan_strategy(shape, 6, &tight) {
                check_parts(&s, shape).unwrap();
            }
        }
        // Planned for 2 × 8 × 64 (k cut in 8), used for m and k swapped.
        let s = plan(2, 8, 64, 8);
        assert_eq!(
            check_parts(&s, GemmShape::new(64, 8, 2)),
            Err(PlanError::TooManyParts {
                dim: Dim::K,
                parallel: 8,
                sequential: 1,
                len: 2
            })
        );
        let s: Strategy = "pk2,sk3".parse().unwrap();
        assert!(check_parts(&s, GemmShape::new(9, 9, 5)).is_ok());
        assert!(matches!(
            check_parts(&s, GemmShape::new(9, 9, 4)),
            Err(PlanError::TooManyParts { sequential: 3, .. })
        ));
        assert!(check_strategy(&s, GemmShape::new(9, 9, 4), 2, &PlanOptions::default()).is_err());
    }

    #[test]
    fn the_last_rank_holds_the_most() {
        for (m, n, k) in [(7, 5, 11), (100, 3, 57), (33, 65, 17)] {
            let shape = GemmShape::new(m, n, k);
            for text in ["pm2,pn3,pk2", "sk3,pm3,pk2", "pk3,sm2,pn2", "pn5,pm2,sk2"] {
                let s: Strategy = text.parse().unwrap();
                let last = cosma_rank_cost(&s, shape, s.ranks() - 1).memory_words;
                assert_eq!(
                    last,
                    cosma_cost(&s, shape).memory_words_max,
                    "{text} {m}×{n}×{k}"
                );
            }
        }
    }

    #[test]
    fn a_million_ranks_plan_quickly() {
        let s = plan(1 << 17, 1 << 17, 1 << 17, 1_000_000);
        assert!(s.ranks() >= 970_000, "{}", s.ranks());
    }
}
