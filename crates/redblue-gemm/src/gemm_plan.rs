//! The plan convention for the multiplication: [`GemmParams`] (what the planner may use),
//! [`GemmPlan`] (the schedule, the native layouts, every rank's exact words and messages and
//! the memory it needs, known before anything is allocated) and [`gemm_with`] (runs a plan).

use crate::algorithm::{multiply, Algorithm, Schedule};
use crate::fit::{
    check_strategy, divisors, sequential_parts_for, with_sequential_k, PlanError, PlanOptions,
};
use crate::model::CostSummary;
use crate::placed::{owner_ordered, placed_rank_costs, OwnerOrdered};
use crate::plan::GemmShape;
use crate::{GemmError, Strategy};
use redblue_comm::{CommStats, Communicator};
use redblue_core::Op;
use redblue_dist::{
    BorrowedDistMatrix, BorrowedDistMatrixMut, DistError, DistMatrix, DistMatrixMut, GridLayout,
    Layout, Relabeled,
};
use redblue_kernels::{KernelScalar, Par};
use std::fmt;

/// What the planner of a multiplication may use ([`GemmPlan::new`]): the algorithm, the words
/// each rank may hold, the fraction of ranks it may leave idle for a better grid, or a
/// strategy of one's own. The names and units are those of every algorithm crate of redblue.
///
/// # Examples
/// ```
/// use redblue_core::Op;
/// use redblue_gemm::{Algorithm, GemmParams, GemmPlan, GemmShape};
///
/// let shape = GemmShape::new(2000, 2000, 2000);
/// let ops = (Op::NoTrans, Op::NoTrans);
/// // COSMA by default; within 4 million words per rank (4.5 million without) it adds
/// // sequential k steps.
/// let params = GemmParams::default().with_memory_words(4_000_000);
/// let plan = GemmPlan::new(shape, ops, 8, &params).unwrap();
/// assert!(plan.memory_bytes(8) <= 32_000_000);
/// assert!(plan.schedule().to_string().starts_with("sk"));
/// // A baseline, or a strategy of one's own (which overrides the algorithm).
/// let summa = GemmPlan::new(shape, ops, 8, &GemmParams::default().with_algorithm(Algorithm::Summa));
/// assert_eq!(summa.unwrap().schedule().grid(), [2, 4, 1]);
/// let mine = GemmParams::default().with_strategy("pm2,pn2,pk2".parse().unwrap());
/// assert_eq!(GemmPlan::new(shape, ops, 8, &mine).unwrap().algorithm(), None);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct GemmParams {
    /// The schedule planned when no strategy is given (default [`Algorithm::Cosma`]).
    pub algorithm: Algorithm,
    /// Words (matrix elements) each rank may hold; `None` (the default) = unlimited.
    pub memory_words: Option<u64>,
    /// The largest fraction of the ranks that may be left idle for a better grid, in `[0, 1)`
    /// (COSMA's δ; default 0.03, as in the paper).
    pub max_idle_fraction: f64,
    /// A strategy of one's own: run instead of the algorithm's, checked against the ranks,
    /// the shape and the memory.
    pub strategy: Option<Strategy>,
}

impl Default for GemmParams {
    fn default() -> Self {
        GemmParams {
            algorithm: Algorithm::Cosma,
            memory_words: None,
            max_idle_fraction: 0.03,
            strategy: None,
        }
    }
}

impl GemmParams {
    /// With this algorithm.
    pub fn with_algorithm(mut self, algorithm: Algorithm) -> Self {
        self.algorithm = algorithm;
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

    /// Running this strategy instead of the algorithm's.
    pub fn with_strategy(mut self, strategy: Strategy) -> Self {
        self.strategy = Some(strategy);
        self
    }

    /// The memory and idle fraction as [`PlanOptions`] (for [`crate::plan_strategy`] and
    /// [`Algorithm::schedule`]).
    pub fn plan_options(&self) -> PlanOptions {
        let options = PlanOptions::default().with_max_idle_fraction(self.max_idle_fraction);
        match self.memory_words {
            Some(words) => options.with_memory_words(words),
            None => options,
        }
    }
}

/// A multiplication `C = alpha·op(A)·op(B) + beta·C` planned before anything is allocated —
/// the plan convention of redblue's algorithm crates: a pure planner ([`GemmPlan::new`]) turns
/// the shape, the ops, the ranks and the options ([`GemmParams`]) into a value that tells the
/// schedule ([`GemmPlan::schedule`]), the native layouts ([`GemmPlan::native_layouts`]), every
/// rank's exact words and messages ([`GemmPlan::rank_costs`]) and the memory the busiest rank
/// needs ([`GemmPlan::memory_bytes`]); [`gemm_with`] runs it, checking first that the operands
/// are the ones it was made for.
///
/// The fields are private: a plan is only made by [`GemmPlan::new`], so its schedule always
/// belongs to its shape, ops and ranks.
///
/// # Examples
/// ```
/// use redblue_comm::{run_ranks, Communicator};
/// use redblue_core::Op;
/// use redblue_dist::OwnedDistMatrix;
/// use redblue_gemm::{gemm_with, GemmParams, GemmPlan, GemmShape};
/// use redblue_kernels::Par;
///
/// let ops = (Op::NoTrans, Op::Trans);
/// let plan = GemmPlan::new(GemmShape::new(60, 50, 70), ops, 4, &GemmParams::default()).unwrap();
/// println!("{plan}: {} bytes per rank at most", plan.memory_bytes(8)); // nothing allocated yet
/// let measured = run_ranks(4, |comm| {
///     let [la, lb, lc] = plan.native_layouts().unwrap();
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, la, 1).unwrap();
///     let b = OwnedDistMatrix::<f64, _>::random(&comm, lb, 2).unwrap(); // 50 × 70: op(B) = Bᵀ
///     let mut c = OwnedDistMatrix::zeros(&comm, lc).unwrap();
///     comm.reset_stats();
///     gemm_with(&comm, &plan, 1.0, &a, &b, 0.0, &mut c, Par::Seq).unwrap();
///     comm.stats()
/// });
/// // In the native layouts every rank moves exactly what the plan says.
/// assert_eq!(measured, plan.rank_costs(8));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct GemmPlan {
    shape: GemmShape,
    ops: (Op, Op),
    algorithm: Option<Algorithm>,
    schedule: Schedule,
    nranks: usize,
    /// Every rank's words and messages (bytes = words) from the layouts the plan was made for
    /// ([`GemmPlan::for_layouts`]); `None`: the native layouts.
    placed: Option<Vec<CommStats>>,
    /// The orders of rows and columns of `A`, `B` and `C` the plan sees them in, when
    /// [`GemmPlan::for_layouts`] found their owners' order ([`owner_ordered`]) moves less.
    relabel: Option<Box<Relabel>>,
}

/// How a run from given layouts is judged: the words of its busiest rank (sent or received),
/// then the words sent in all.
fn placed_score(costs: &[CommStats]) -> (u64, u64) {
    let most = costs
        .iter()
        .map(|s| s.words_sent.max(s.words_received))
        .max()
        .unwrap_or(0);
    (most, costs.iter().map(|s| s.words_sent).sum())
}

/// The strategy that moves the least from the layouts `(a, b, c)` and its counters: `own`
/// (the options' strategy, or the algorithm's), or with no strategy in the options the best
/// of COSMA's on every grid ([`placed_score`]; `own` wins a tie).
fn best_placed(
    own: &Strategy,
    shape: GemmShape,
    ops: (Op, Op),
    p: usize,
    options: &GemmParams,
    (a, b, c): (&impl Layout, &impl Layout, &impl Layout),
) -> (Strategy, Vec<CommStats>) {
    let placed = |s: &Strategy| placed_rank_costs(s, shape, ops, a, b, c, p, 1);
    let mut best = (own.clone(), placed(own));
    if options.strategy.is_none() {
        for s in candidates(shape, [own.ranks(), p], options.memory_words) {
            let costs = placed(&s);
            if placed_score(&costs) < placed_score(&best.1) {
                best = (s, costs);
            }
        }
    }
    best
}

/// Rows and columns of `A`, `B` and `C` (as stored), each in the order a plan sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Relabel {
    a: (Vec<usize>, Vec<usize>),
    b: (Vec<usize>, Vec<usize>),
    c: (Vec<usize>, Vec<usize>),
}

impl Relabel {
    fn of<LA: Layout, LB: Layout, LC: Layout>((a, b, c): &OwnerOrdered<LA, LB, LC>) -> Self {
        Relabel {
            a: orders(a),
            b: orders(b),
            c: orders(c),
        }
    }
}

/// The row and column orders of a relabelled layout.
fn orders<L: Layout>(l: &Relabeled<L>) -> (Vec<usize>, Vec<usize>) {
    (l.rows().to_vec(), l.cols().to_vec())
}

impl GemmPlan {
    /// The plan of `C (m × n) = alpha·op(A)·op(B) + beta·C` for `shape` and `ops` on `p` ranks:
    /// the options' strategy (checked with [`check_strategy`]) or the schedule of the options'
    /// algorithm ([`Algorithm::schedule`]). Pure and the same on every rank.
    ///
    /// # Errors
    /// [`PlanError::InvalidOptions`] for `p = 0` or an idle fraction outside `[0, 1)`; as
    /// [`check_strategy`] for a given strategy (too many ranks, too many parts, not enough
    /// memory); as [`Algorithm::schedule`] otherwise.
    ///
    /// # Examples
    /// ```
    /// use redblue_core::Op;
    /// use redblue_gemm::{GemmParams, GemmPlan, GemmShape};
    ///
    /// let ops = (Op::NoTrans, Op::NoTrans);
    /// let plan = GemmPlan::new(GemmShape::new(4096, 4096, 4096), ops, 65, &GemmParams::default())?;
    /// // COSMA leaves one of 65 ranks idle for a 4 × 4 × 4 grid.
    /// assert_eq!((plan.ranks(), plan.nranks(), plan.schedule().grid()), (64, 65, [4, 4, 4]));
    /// let costs = plan.rank_costs(8);
    /// assert_eq!(costs.len(), 65);
    /// assert_eq!(costs[64].words_sent, 0); // the idle rank
    /// # Ok::<(), redblue_gemm::PlanError>(())
    /// ```
    pub fn new(
        shape: GemmShape,
        ops: (Op, Op),
        p: usize,
        options: &GemmParams,
    ) -> Result<Self, PlanError> {
        if p == 0 {
            return Err(PlanError::InvalidOptions(
                "there must be at least one rank".into(),
            ));
        }
        let delta = options.max_idle_fraction;
        if !(0.0..1.0).contains(&delta) {
            return Err(PlanError::InvalidOptions(format!(
                "the idle fraction must be in [0, 1), not {delta}"
            )));
        }
        let plan_options = options.plan_options();
        let (algorithm, schedule) = match &options.strategy {
            Some(s) => {
                check_strategy(s, shape, p, &plan_options)?;
                (None, Schedule::Strategy(s.clone()))
            }
            None => (
                Some(options.algorithm),
                options.algorithm.schedule(shape, p, &plan_options)?,
            ),
        };
        Ok(GemmPlan {
            shape,
            ops,
            algorithm,
            schedule,
            nranks: p,
            placed: None,
            relabel: None,
        })
    }

    /// The plan for operands that already are somewhere: `A`, `B` and `C` (as stored) laid
    /// out as `a`, `b` and `c`. The options' own strategy if they give one; otherwise, among
    /// the algorithm's schedule and COSMA's strategies on every grid of as many ranks (and of
    /// all `p`, within the memory limit), the one whose busiest rank sends or receives the
    /// fewest words *from these layouts*, counted exactly ([`placed_rank_costs`]; fewer words
    /// in total break ties; the algorithm's own wins a tie). The same choice is made for the
    /// layouts seen in their owners' buffer order ([`owner_ordered`]: a block-cyclic layout
    /// becomes a grid of one block per process), and if that moves less the plan sees the
    /// operands so ([`gemm_with`] relabels their rows and columns; nothing moves for it).
    /// [`GemmPlan::rank_costs`] then says what the run moves from these layouts, before it
    /// runs. A Cannon schedule keeps its grid, and its counters stay those of its native
    /// layouts.
    ///
    /// # Errors
    /// As [`GemmPlan::new`]; [`PlanError::InvalidOptions`] if a layout's shape is not its
    /// operand's or it spreads over more than `p` ranks.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::{run_ranks, Communicator};
    /// use redblue_core::Op;
    /// use redblue_dist::{GridLayout, OwnedDistMatrix};
    /// use redblue_gemm::{gemm_with, GemmParams, GemmPlan, GemmShape};
    /// use redblue_kernels::Par;
    ///
    /// // A (400 × 400) already split by columns over 4 ranks, X (400 × 8) by rows alike.
    /// let (a, x, r) = (
    ///     GridLayout::even(400, 400, 1, 4).unwrap(),
    ///     GridLayout::even(400, 8, 4, 1).unwrap(),
    ///     GridLayout::even(400, 8, 4, 1).unwrap(),
    /// );
    /// let (shape, ops, params) = (GemmShape::new(400, 8, 400), (Op::NoTrans, Op::NoTrans), GemmParams::default());
    /// let blind = GemmPlan::new(shape, ops, 4, &params).unwrap();
    /// let aware = GemmPlan::for_layouts(shape, ops, 4, &params, &a, &x, &r).unwrap();
    /// let most = |plan: &GemmPlan| plan.rank_costs(8).iter().map(|c| c.words_received).max().unwrap();
    /// assert_ne!(blind.schedule().grid(), [1, 1, 4]);
    /// let measured = run_ranks(4, |comm| {
    ///     let am = OwnedDistMatrix::<f64, _>::random(&comm, a.clone(), 1).unwrap();
    ///     let xm = OwnedDistMatrix::<f64, _>::random(&comm, x.clone(), 2).unwrap();
    ///     let mut rm = OwnedDistMatrix::<f64, _>::random(&comm, r.clone(), 3).unwrap();
    ///     comm.reset_stats();
    ///     gemm_with(&comm, &aware, -1.0, &am, &xm, 1.0, &mut rm, Par::Seq).unwrap();
    ///     comm.stats()
    /// });
    /// // What the plan said, exactly; A stays where it is: only the partial sums move.
    /// assert_eq!(measured, aware.rank_costs(8));
    /// assert_eq!(aware.schedule().grid(), [1, 1, 4]); // k cut in four, as A is
    /// // Each rank sends and receives 3/4 of its 400 × 8 partial R; nothing of A or X.
    /// assert_eq!(most(&aware), 2400);
    /// // The blind plan's strategy cuts m and k; run from these layouts it gathers parts of A.
    /// let [la, lb, lc] = [&a, &x, &r];
    /// let redblue_gemm::Schedule::Strategy(s) = blind.schedule() else { unreachable!() };
    /// let blind_here = redblue_gemm::placed_rank_costs(s, shape, ops, la, lb, lc, 4, 8);
    /// assert!(blind_here.iter().any(|c| c.words_received > 2400));
    /// ```
    #[allow(clippy::too_many_arguments)]
    pub fn for_layouts(
        shape: GemmShape,
        ops: (Op, Op),
        p: usize,
        options: &GemmParams,
        a: &impl Layout,
        b: &impl Layout,
        c: &impl Layout,
    ) -> Result<Self, PlanError> {
        let mut plan = GemmPlan::new(shape, ops, p, options)?;
        let [sa, sb, sc] = plan.stored_shapes();
        for (what, layout_shape, nranks, wanted) in [
            ("A", a.shape(), a.nranks(), sa),
            ("B", b.shape(), b.nranks(), sb),
            ("C", c.shape(), c.nranks(), sc),
        ] {
            if layout_shape != wanted || nranks > p {
                return Err(PlanError::InvalidOptions(format!(
                    "the layout of {what} is {}x{} over {nranks} ranks; the product needs                      {}x{} over at most {p}",
                    layout_shape.0, layout_shape.1, wanted.0, wanted.1
                )));
            }
        }
        let Schedule::Strategy(own) = plan.schedule.clone() else {
            return Ok(plan);
        };
        let mut best = best_placed(&own, shape, ops, p, options, (a, b, c));
        // The same operands seen in their owners' order, if that moves less.
        if let Ok(r) = owner_ordered(a, ops.0, b, ops.1, c) {
            let relabelled = best_placed(&own, shape, ops, p, options, (&r.0, &r.1, &r.2));
            if placed_score(&relabelled.1) < placed_score(&best.1) {
                best = relabelled;
                plan.relabel = Some(Box::new(Relabel::of(&r)));
            }
        }
        if best.0 != own {
            plan.algorithm = None;
            plan.schedule = Schedule::Strategy(best.0);
        }
        plan.placed = Some(best.1);
        Ok(plan)
    }

    /// The shape `m × n × k` of the product.
    pub fn shape(&self) -> GemmShape {
        self.shape
    }

    /// `op(A)` and `op(B)`.
    pub fn ops(&self) -> (Op, Op) {
        self.ops
    }

    /// The algorithm whose schedule this is; `None` for the options' own strategy.
    pub fn algorithm(&self) -> Option<Algorithm> {
        self.algorithm
    }

    /// What runs.
    pub fn schedule(&self) -> &Schedule {
        &self.schedule
    }

    /// The ranks the plan is for (`p` of [`GemmPlan::new`]): the ranks of its native layouts
    /// and of [`GemmPlan::rank_costs`]; it runs on a communicator of at least as many.
    pub fn nranks(&self) -> usize {
        self.nranks
    }

    /// The ranks that compute ([`Schedule::ranks`]); ranks beyond are idle.
    pub fn ranks(&self) -> usize {
        self.schedule.ranks()
    }

    /// The shapes of `A`, `B` and `C` as stored: `A` is `m × k`, or `k × m` when `op(A)`
    /// transposes; likewise `B`; `C` is `m × n`.
    pub fn stored_shapes(&self) -> [(usize, usize); 3] {
        let GemmShape { m, n, k } = self.shape;
        [
            self.ops.0.apply_shape((m, k)),
            self.ops.1.apply_shape((k, n)),
            (m, n),
        ]
    }

    /// The layouts of `A`, `B` and `C` as stored, over [`GemmPlan::nranks`] ranks, in which the
    /// run moves exactly [`GemmPlan::rank_costs`] ([`Schedule::native_layouts`]).
    ///
    /// # Errors
    /// None for a plan from [`GemmPlan::new`].
    pub fn native_layouts(&self) -> Result<[GridLayout; 3], DistError> {
        self.schedule
            .native_layouts(self.shape, self.ops, self.nranks)
    }

    /// Every rank's counters for a run in the native layouts with `alpha ≠ 0`, elements of
    /// `bytes` bytes: words, bytes and messages sent and received, exactly as a communicator
    /// counts them (`CommStats`). One entry per rank of [`GemmPlan::nranks`]; ranks beyond
    /// [`GemmPlan::ranks`] move nothing.
    ///
    /// Exact for every schedule and shape (empty products, where nothing moves, included):
    /// COSMA's gathers send one message per non-empty piece and its reduction one per
    /// non-empty partial block piece; Cannon's skew sends non-empty blocks only and each of its
    /// `q − 1` shifts one message each way per operand even when empty. With `alpha = 0`
    /// nothing moves; in other layouts the run moves what those layouts need (at most the
    /// transforms into the native layouts more; see [`cosma`](crate::cosma)).
    ///
    /// # Examples
    /// See [`GemmPlan`]: measured counters equal to these on every rank.
    pub fn rank_costs(&self, bytes: usize) -> Vec<CommStats> {
        if let Some(placed) = &self.placed {
            let bytes = bytes as u64;
            return placed
                .iter()
                .map(|s| CommStats {
                    bytes_sent: s.words_sent * bytes,
                    bytes_received: s.words_received * bytes,
                    ..*s
                })
                .collect();
        }
        (0..self.nranks)
            .map(|r| {
                self.schedule
                    .rank_cost(self.shape, self.nranks, r)
                    .stats(bytes)
            })
            .collect()
    }

    /// The per-rank model ([`Schedule::rank_cost`]) summarised over the computing ranks:
    /// maxima and means of the words, the messages and the memory.
    pub fn cost_summary(&self) -> CostSummary {
        self.schedule.cost(self.shape, self.nranks)
    }

    /// Bytes the busiest rank holds, elements of `bytes` bytes, by the model's memory words
    /// ([`RankCost::memory_words`](crate::RankCost::memory_words)): its parts of `A`, `B`, `C`
    /// in the native layouts, and at the peak one round's gathered `op(A)` and `op(B)` blocks
    /// and the partial `C` blocks alive (for Cannon: the current and next blocks of the
    /// shifts). The last computing rank holds the most (every split gives it the largest part),
    /// so this costs one rank's model whatever the ranks.
    pub fn memory_bytes(&self, bytes: usize) -> u64 {
        let last = self.ranks().min(self.nranks).saturating_sub(1);
        self.schedule
            .rank_cost(self.shape, self.nranks, last)
            .memory_words
            .saturating_mul(bytes as u64)
    }

    /// Checks, from global facts only (so the same on every rank), that operands of stored
    /// shapes `given` (`A`, `B`, `C`) on a communicator of `comm_size` ranks are what the
    /// plan was made for.
    ///
    /// # Errors
    /// [`GemmError::PlanRanks`] if the plan is for more ranks than `comm_size`;
    /// [`GemmError::PlanMismatch`] if the shapes differ from [`GemmPlan::stored_shapes`].
    pub fn check_operands(
        &self,
        given: [(usize, usize); 3],
        comm_size: usize,
    ) -> Result<(), GemmError> {
        if self.nranks > comm_size {
            return Err(GemmError::PlanRanks {
                planned: self.nranks,
                comm_size,
            });
        }
        let planned = self.stored_shapes();
        if given != planned {
            return Err(GemmError::PlanMismatch {
                planned,
                given,
                ops: self.ops,
            });
        }
        Ok(())
    }
}

impl fmt::Display for GemmPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let GemmShape { m, n, k } = self.shape;
        // A strategy is named by its algorithm; Cannon's schedule names itself.
        match (&self.schedule, self.algorithm) {
            (Schedule::Cannon { .. }, _) => {}
            (_, Some(a)) => write!(f, "{a} ")?,
            (_, None) => f.write_str("custom ")?,
        }
        write!(
            f,
            "{} for {m}×{n}×{k} (op(A) = {}, op(B) = {}) on {} of {} ranks",
            self.schedule,
            self.ops.0,
            self.ops.1,
            self.ranks(),
            self.nranks
        )?;
        if self.relabel.is_some() {
            f.write_str(", the operands seen in their owners' order")?;
        }
        Ok(())
    }
}

/// `C = alpha·op(A)·op(B) + beta·C` as `plan` says (the ops are the plan's), for matrices in
/// any layouts; the local products on `par` threads per rank. In the plan's native layouts
/// ([`GemmPlan::native_layouts`]) every rank moves exactly [`GemmPlan::rank_costs`].
///
/// First, identically on every rank and before any data moves, the operands are checked
/// against the plan ([`GemmPlan::check_operands`]): a plan made for another shape, for other
/// ops, or for more ranks than `comm` has is an error. Then the schedule runs as in
/// [`multiply`].
///
/// # Collective
/// Every rank passes the same plan, layouts and scalars.
///
/// # Errors
/// The same on every rank: [`GemmError::PlanRanks`], [`GemmError::PlanMismatch`]; then as
/// [`multiply`] (a layout over more ranks than `comm`; communication failures).
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_core::Op;
/// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
/// use redblue_gemm::{gemm_with, GemmError, GemmParams, GemmPlan, GemmShape};
/// use redblue_kernels::Par;
///
/// let ops = (Op::NoTrans, Op::NoTrans);
/// let plan = GemmPlan::new(GemmShape::new(30, 20, 40), ops, 3, &GemmParams::default()).unwrap();
/// // m and k swapped: the same plan cannot be used.
/// let swapped = GemmPlan::new(GemmShape::new(40, 20, 30), ops, 3, &GemmParams::default()).unwrap();
/// let results = run_ranks(3, |comm| {
///     let bc = |m, n| BlockCyclic::new(m, n, 4, 4, 1, 3).unwrap();
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, bc(30, 40), 1).unwrap();
///     let b = OwnedDistMatrix::<f64, _>::random(&comm, bc(40, 20), 2).unwrap();
///     let mut c = OwnedDistMatrix::zeros(&comm, bc(30, 20)).unwrap();
///     gemm_with(&comm, &plan, 1.0, &a, &b, 0.0, &mut c, Par::Seq).unwrap();
///     gemm_with(&comm, &swapped, 1.0, &a, &b, 0.0, &mut c, Par::Seq)
/// });
/// assert!(results.iter().all(|r| matches!(r, Err(GemmError::PlanMismatch { .. }))));
/// assert!(results.iter().all(|r| r == &results[0]));
/// ```
#[allow(clippy::too_many_arguments)]
pub fn gemm_with<T, C, A, B, M>(
    comm: &C,
    plan: &GemmPlan,
    alpha: T,
    a: &A,
    b: &B,
    beta: T,
    c: &mut M,
    par: Par,
) -> Result<(), GemmError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrix<T> + ?Sized,
    M: DistMatrixMut<T> + ?Sized,
{
    plan.check_operands([a.shape(), b.shape(), c.shape()], comm.size())?;
    let (op_a, op_b) = plan.ops;
    let Some(r) = &plan.relabel else {
        return multiply(comm, alpha, a, op_a, b, op_b, beta, c, &plan.schedule, par);
    };
    // The operands as the plan sees them: the same buffers, rows and columns relabelled.
    fn relabel<L: Layout>(
        l: L,
        (rows, cols): &(Vec<usize>, Vec<usize>),
    ) -> Result<Relabeled<L>, DistError> {
        Relabeled::new(l, rows.clone(), cols.clone())
    }
    let av = BorrowedDistMatrix::new(comm, relabel(a.layout().clone(), &r.a)?, a.local())?;
    let bv = BorrowedDistMatrix::new(comm, relabel(b.layout().clone(), &r.b)?, b.local())?;
    let lc = relabel(c.layout().clone(), &r.c)?;
    let mut cv = BorrowedDistMatrixMut::new(comm, lc, c.local_mut())?;
    multiply(
        comm,
        alpha,
        &av,
        op_a,
        &bv,
        op_b,
        beta,
        &mut cv,
        &plan.schedule,
        par,
    )
}

/// COSMA's strategies on every grid `[p_m, p_n, p_k]` of exactly `used` ranks (each entry of
/// `used`; no dimension cut into more parts than it has elements), with the fewest sequential
/// `k` parts that fit `memory`; grids that cannot fit are left out.
fn candidates(shape: GemmShape, used: [usize; 2], memory: Option<u64>) -> Vec<Strategy> {
    let cap = shape.dims().map(|x| x.max(1));
    let mut out = Vec::new();
    let mut sizes = used.to_vec();
    sizes.dedup();
    for used in sizes {
        for pm in divisors(used).into_iter().filter(|&d| d <= cap[0]) {
            for pn in divisors(used / pm).into_iter().filter(|&d| d <= cap[1]) {
                let grid = [pm, pn, used / pm / pn];
                if grid[2] > cap[2] {
                    continue;
                }
                if let Ok(s) = sequential_parts_for(shape, grid, memory) {
                    out.push(with_sequential_k(shape, grid, s));
                }
            }
        }
    }
    out
}
