//! [`lu`]: factor a distributed matrix in any layout, with COnfLUX or the 2D baseline, into
//! [`LuFactors`].

use crate::factor::factor;
use crate::plan::{pivoting_of, LuPlan};
use crate::LuError;
use redblue_comm::{CommStats, Communicator};
use redblue_core::{Op, Scalar};
use redblue_dist::{transform, BlockCyclic, DistMatrix, DistMatrixMut, Layout, OwnedDistMatrix};
use redblue_kernels::{KernelScalar, Par};
use redblue_pipeline::solve::Triangles;
use redblue_pipeline::{reserve, LookAhead, RunOptions, Storage, TileFactors, TileGrid};
use std::fmt;

/// Which factorisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LuAlgorithm {
    /// COnfLUX: 2.5D, tournament pivoting.
    #[default]
    Conflux,
    /// Right-looking 2D block-cyclic LU with partial pivoting (ScaLAPACK's PDGETRF).
    TwoD,
    /// Solomonik and Demmel's 2.5D LU without pivoting (seed 001, Algorithm 3): layers of
    /// `√(P/c) × √(P/c)` ranks, the trailing matrix's updates accumulated per layer and reduced
    /// when a panel needs them, on the shared pipeline. For matrices that need no pivoting
    /// (diagonally dominant, say); a zero pivot is [`crate::LuError::Singular`] at its column.
    NoPivot25d,
    /// Solomonik and Demmel's 2.5D LU with CA-pivoting (seed 001, Algorithms 4–5): the same
    /// square layers, tournament pivoting.
    CaPivot25d,
}

impl LuAlgorithm {
    /// Every algorithm, in the order the miniapp lists them.
    pub const ALL: [LuAlgorithm; 4] = [
        LuAlgorithm::Conflux,
        LuAlgorithm::TwoD,
        LuAlgorithm::NoPivot25d,
        LuAlgorithm::CaPivot25d,
    ];

    /// Whether the algorithm's layers are square (seed 001's 2.5D LU).
    pub fn square_layers(self) -> bool {
        matches!(self, LuAlgorithm::NoPivot25d | LuAlgorithm::CaPivot25d)
    }
}

impl fmt::Display for LuAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LuAlgorithm::Conflux => "conflux",
            LuAlgorithm::TwoD => "2d",
            LuAlgorithm::NoPivot25d => "2.5d-nopiv",
            LuAlgorithm::CaPivot25d => "2.5d-ca",
        })
    }
}

impl std::str::FromStr for LuAlgorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "conflux" => Ok(LuAlgorithm::Conflux),
            "2d" => Ok(LuAlgorithm::TwoD),
            "2.5d-nopiv" => Ok(LuAlgorithm::NoPivot25d),
            "2.5d-ca" => Ok(LuAlgorithm::CaPivot25d),
            _ => Err(format!(
                "unknown LU algorithm '{s}' (conflux, 2d, 2.5d-nopiv or 2.5d-ca)"
            )),
        }
    }
}

/// The preferred tile width `v`: [`lu_plan`](crate::lu_plan) takes it (as a multiple of `c`) unless it moves
/// noticeably more words than a narrower one.
pub const DEFAULT_BLOCK: usize = redblue_pipeline::PREFERRED_WIDTH;

/// How to factor: the algorithm, and optionally the grid, the number of layers, the tile width,
/// the memory per rank and the idle fraction allowed when choosing the grid — the same option
/// names and units as every redblue algorithm crate (`memory_words`, `max_idle_fraction`).
///
/// # Examples
/// ```
/// use redblue_lu::{LookAhead, LuAlgorithm, LuParams, TileGrid};
///
/// let params = LuParams::default()
///     .with_algorithm(LuAlgorithm::Conflux)
///     .with_grid(TileGrid { px: 2, py: 2, c: 2 })
///     .with_block(64);
/// assert_eq!(params.block, Some(64));
/// assert_eq!(params.look_ahead, LookAhead::Auto); // on unless ranks outnumber cores
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct LuParams {
    /// COnfLUX or 2D.
    pub algorithm: LuAlgorithm,
    /// The grid; chosen from `N`, `P` and the memory when `None` (2D: `c = 1`).
    pub grid: Option<TileGrid>,
    /// The number of layers `c` when the grid is chosen (the layer grid is then the best 2D
    /// grid on `⌊P/c⌋` ranks); chosen with the grid when `None`.
    pub layers: Option<usize>,
    /// Tile width `v` (at least the number of layers); chosen with the grid when `None` (see
    /// [`lu_plan`](crate::lu_plan)).
    pub block: Option<usize>,
    /// Words (matrix elements) each rank may hold, for the choice of the grid.
    pub memory_words: Option<u64>,
    /// Largest fraction of ranks that may stay idle for a better grid.
    pub max_idle_fraction: f64,
    /// Whether step `t + 1`'s panel sums and pivots are started before the rest of step `t`'s
    /// update ([`LookAhead`]; the same words, messages and factors either way).
    pub look_ahead: LookAhead,
}

impl Default for LuParams {
    fn default() -> Self {
        LuParams {
            algorithm: LuAlgorithm::Conflux,
            grid: None,
            layers: None,
            block: None,
            memory_words: None,
            max_idle_fraction: 0.03,
            look_ahead: LookAhead::Auto,
        }
    }
}

impl LuParams {
    /// With this algorithm.
    pub fn with_algorithm(mut self, algorithm: LuAlgorithm) -> Self {
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
}

/// `A = P·L·U` of a matrix in any layout, on every rank of `comm`: [`LuPlan::new`] (or
/// [`LuPlan::rect`], for an `M × N` matrix: `L` is `M × min(M, N)`, `U` is `min(M, N) × N`, as
/// ScaLAPACK's `pdgetrf` of a rectangular matrix) for this communicator, then [`lu_with`] on
/// one thread per rank.
///
/// # Collective
/// # Errors
/// The same on every rank: [`LuError::NotFinite`],
/// [`LuError::Singular`] naming the column, bad parameters (see [`lu_plan`](crate::lu_plan)); communication
/// failures.
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
/// use redblue_lu::{lu, LuParams};
///
/// let growth = run_ranks(4, |comm| {
///     let layout = BlockCyclic::new(200, 200, 16, 16, 2, 2).unwrap();
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, layout, 7).unwrap();
///     let fac = lu(&comm, &a, &LuParams::default()).unwrap();
///     fac.growth()
/// });
/// assert!(growth.iter().all(|&g| g >= 1.0 && g == growth[0]));
/// ```
pub fn lu<T, C, A>(
    comm: &C,
    a: &A,
    params: &LuParams,
) -> Result<LuFactors<'static, T, A::Layout>, LuError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
{
    let plan = plan_for(comm, a.shape(), params)?;
    lu_with(comm, &plan, a, Par::Seq)
}

/// `A = P·L·U` of a matrix in any layout with a plan made before ([`LuPlan::new`], for
/// `comm`'s size or fewer ranks), the local products on `par` threads per rank.
///
/// # Collective
/// # Errors
/// As [`lu`], and [`LuError::InvalidParams`] (on every rank) for a plan of another shape or
/// of more ranks than `comm` has.
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
/// use redblue_kernels::Par;
/// use redblue_lu::{lu_with, LuParams, LuPlan};
///
/// let plan = LuPlan::new(150, 3, &LuParams::default()).unwrap();
/// let growth = run_ranks(3, |comm| {
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, BlockCyclic::new(150, 150, 8, 8, 1, 3).unwrap(), 2)
///         .unwrap();
///     lu_with(&comm, &plan, &a, Par::Seq).unwrap().growth()
/// });
/// assert!(growth[0] >= 1.0);
/// ```
pub fn lu_with<T, C, A>(
    comm: &C,
    plan: &LuPlan,
    a: &A,
    par: Par,
) -> Result<LuFactors<'static, T, A::Layout>, LuError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
{
    check_plan(comm, plan, a.shape(), a.layout().nranks())?;
    let native_layout = plan.native_layout()?;
    // The working copy in a pooled buffer (a repeated factorisation maps no new pages), with
    // the other large buffers, agreed on by every rank; the transform with beta = 0 writes
    // every element.
    let copy_len = native_layout.local_len(comm.rank());
    let mut reserved = reserve(
        comm,
        &plan.geometry(),
        copy_len,
        plan.working_bytes(size_of::<T>()),
    )?;
    let mut native = OwnedDistMatrix::from_local(comm, native_layout, reserved.take_copy())?;
    transform(comm, T::one(), a, Op::NoTrans, T::zero(), &mut native)?;
    let local = reserved.input(native.into_local());
    factor_native(comm, plan, par, a.layout().clone(), local)
}

/// [`lu`] of a matrix given by value: in place, without a copy, when it is already in the
/// factorisation's layout — `BlockCyclic::new(n, n, v, v, Px, Py)` in column-major rank
/// order, with the grid and `v` that [`lu_plan`](crate::lu_plan) gives ([`LuPlan::native_layout`]) — as
/// ScaLAPACK's `pdgetrf` overwrites its input; any other layout is copied as [`lu`] does. `L`
/// is `BlockCyclic` or a layout that can hold one (`AnyLayout`).
///
/// # Collective
/// # Errors
/// As [`lu`].
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_dist::OwnedDistMatrix;
/// use redblue_lu::{lu_in_place, LuParams, LuPlan};
///
/// let params = LuParams::default();
/// let layout = LuPlan::new(100, 4, &params).unwrap().native_layout().unwrap();
/// let words = run_ranks(4, |comm| {
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, layout.clone(), 3).unwrap();
///     let factors = lu_in_place(&comm, a, &params).unwrap(); // no copy: the native layout
///     factors.order()
/// });
/// assert_eq!(words, vec![100; 4]);
/// ```
pub fn lu_in_place<T, C, L>(
    comm: &C,
    a: OwnedDistMatrix<T, L>,
    params: &LuParams,
) -> Result<LuFactors<'static, T, L>, LuError>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout + PartialEq + From<BlockCyclic>,
{
    let plan = plan_for(comm, a.shape(), params)?;
    lu_in_place_with(comm, &plan, a, Par::Seq)
}

/// [`lu_in_place`] with a plan made before, the local products on `par` threads per rank.
///
/// # Collective
/// # Errors
/// As [`lu_with`].
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_dist::OwnedDistMatrix;
/// use redblue_kernels::Par;
/// use redblue_lu::{lu_in_place_with, LuParams, LuPlan};
///
/// let plan = LuPlan::new(120, 2, &LuParams::default()).unwrap();
/// let perms = run_ranks(2, |comm| {
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, plan.native_layout().unwrap(), 4).unwrap();
///     lu_in_place_with(&comm, &plan, a, Par::Threads(1)).unwrap().perm().to_vec()
/// });
/// assert_eq!(perms[0], perms[1]); // every rank knows the permutation
/// ```
pub fn lu_in_place_with<T, C, L>(
    comm: &C,
    plan: &LuPlan,
    a: OwnedDistMatrix<T, L>,
    par: Par,
) -> Result<LuFactors<'static, T, L>, LuError>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout + PartialEq + From<BlockCyclic>,
{
    check_plan(comm, plan, a.shape(), a.layout().nranks())?;
    if *a.layout() != L::from(plan.native_layout()?) {
        return lu_with(comm, plan, &a, par);
    }
    let layout = a.layout().clone();
    let working = plan.working_bytes(size_of::<T>());
    let reserved = reserve::<T, _>(comm, &plan.geometry(), 0, working)?;
    factor_native(comm, plan, par, layout, reserved.input(a.into_local()))
}

/// The plan for a matrix of `shape` on `comm`.
fn plan_for<C: Communicator>(
    comm: &C,
    (m, n): (usize, usize),
    params: &LuParams,
) -> Result<LuPlan, LuError> {
    LuPlan::rect(m, n, comm.size(), params)
}

/// A plan fits the matrix (of `shape`, spread over `layout_ranks` ranks) and the communicator.
fn check_plan<C: Communicator>(
    comm: &C,
    plan: &LuPlan,
    (m, n): (usize, usize),
    layout_ranks: usize,
) -> Result<(), LuError> {
    if (plan.m, plan.n) != (m, n) {
        return Err(LuError::InvalidParams(format!(
            "a plan for a {}x{} matrix cannot factor a {m}x{n} one",
            plan.m, plan.n
        )));
    }
    let need = plan.ranks().max(layout_ranks);
    if need > comm.size() {
        return Err(LuError::InvalidParams(format!(
            "the plan and the matrix need {need} ranks, the communicator has {}",
            comm.size()
        )));
    }
    Ok(())
}

/// Factors this rank's local array `local` of the plan's native layout (empty off layer 0);
/// `layout` is the caller's layout, for the factors given back.
fn factor_native<T: KernelScalar, C: Communicator, L: Layout>(
    comm: &C,
    plan: &LuPlan,
    par: Par,
    layout: L,
    local: Storage<'static, T>,
) -> Result<LuFactors<'static, T, L>, LuError> {
    let geom = plan.geometry();
    let options = RunOptions {
        par,
        look_ahead: plan.look_ahead,
    };
    let run = factor(comm, &geom, pivoting_of(plan.algorithm), local, options)?;
    let perm = interchanged(geom.m, run.pivots.iter().flatten().copied()).0;
    let growth = if run.max_input == 0.0 {
        0.0
    } else {
        run.max_factor / run.max_input
    };
    Ok(LuFactors {
        layout,
        factors: TileFactors::new(geom, Triangles::Lu, comm.rank(), run, par),
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
pub struct LuFactors<'a, T: Scalar, L> {
    /// The input's layout.
    layout: L,
    factors: TileFactors<'a, T>,
    perm: Vec<usize>,
    growth: f64,
}

impl<'a, T: KernelScalar, L: Layout> LuFactors<'a, T, L> {
    /// Factors computed elsewhere — ScaLAPACK's `p?getrf` left them in a caller's arrays —
    /// made ready for [`LuFactors::solve`]: `packed` (any layout) holds `L` (unit diagonal
    /// implied) and `U` of `P·A = L·U` in the rows of `P·A`, as LAPACK leaves them, and row `i`
    /// of `P·A` is row `perm[i]` of `A`. When `perm` is the identity and `packed`'s local
    /// arrays are the tiles of one layer of the plan's grid (a plan [`LuPlan::for_layout`] made
    /// on its layout) they are read where they are, for as long as the factors live
    /// ([`LuFactors::in_caller_array`]; ScaLAPACK's `p?getrs` solves `P·B` so); otherwise they
    /// are copied to one layer of the plan's grid (its `Px × Py`, whatever its layers).
    /// [`LuFactors::growth`] is NaN, as `A` is not known.
    ///
    /// # Collective
    /// # Errors
    /// [`LuError::NotSquare`] or [`LuError::InvalidParams`] for a plan of another order or
    /// of more ranks than `comm` has, or a `perm` that is not a permutation of the rows;
    /// communication failures.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::run_ranks;
    /// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
    /// use redblue_kernels::Par;
    /// use redblue_lu::{lu, LuFactors, LuParams, LuPlan};
    ///
    /// let ok = run_ranks(3, |comm| {
    ///     let layout = BlockCyclic::new(40, 40, 4, 4, 1, 3).unwrap();
    ///     let a = OwnedDistMatrix::<f64, _>::random(&comm, layout.clone(), 1).unwrap();
    ///     let b = OwnedDistMatrix::<f64, _>::random(&comm, BlockCyclic::new(40, 2, 4, 4, 1, 3).unwrap(), 2).unwrap();
    ///     let fac = lu(&comm, &a, &LuParams::default()).unwrap();
    ///     // L\U in the rows of P·A, as ScaLAPACK's pdgetrf leaves it.
    ///     let stored = fac.packed(&comm).unwrap().permute_rows(&comm, fac.perm()).unwrap();
    ///     let plan = LuPlan::new(40, 3, &LuParams::default()).unwrap();
    ///     let again = LuFactors::from_packed(&comm, &plan, &stored, fac.perm(), Par::Seq).unwrap();
    ///     let (x, y) = (fac.solve(&comm, &b).unwrap(), again.solve(&comm, &b).unwrap());
    ///     let mut diff = x.clone();
    ///     diff.axpy(&comm, -1.0, &y).unwrap();
    ///     diff.norm_max(&comm).unwrap() <= 1e-12 * x.norm_max(&comm).unwrap()
    /// });
    /// assert!(ok.iter().all(|&ok| ok));
    /// ```
    pub fn from_packed<C, A>(
        comm: &C,
        plan: &LuPlan,
        packed: &'a A,
        perm: &[usize],
        par: Par,
    ) -> Result<LuFactors<'a, T, A::Layout>, LuError>
    where
        C: Communicator,
        A: DistMatrix<T, Layout = L> + ?Sized,
    {
        check_plan(comm, plan, packed.shape(), packed.layout().nranks())?;
        if plan.m != plan.n {
            return Err(LuError::NotSquare {
                shape: (plan.m, plan.n),
            });
        }
        let mut seen = vec![false; plan.n];
        if perm.len() != plan.n
            || !perm
                .iter()
                .all(|&r| r < plan.n && !std::mem::replace(&mut seen[r], true))
        {
            return Err(LuError::InvalidParams(format!(
                "a row permutation of order {} must hold each row once",
                plan.n
            )));
        }
        let grid = TileGrid { c: 1, ..plan.grid };
        let geom = redblue_pipeline::Geometry::new(plan.n, plan.block, grid);
        let factors = TileFactors::from_factored(
            comm,
            geom,
            Triangles::Lu,
            packed,
            Op::NoTrans,
            Some(perm),
            par,
        )?;
        Ok(LuFactors {
            layout: packed.layout().clone(),
            factors,
            perm: perm.to_vec(),
            growth: f64::NAN,
        })
    }

    /// Whether this rank's factors are read where the caller's array holds them
    /// ([`LuFactors::from_packed`] without a copy).
    pub fn in_caller_array(&self) -> bool {
        self.factors.in_caller_array()
    }

    /// `L` and `U` packed in unpermuted rows (as LAPACK's getrf leaves them before its row
    /// interchanges), in the input's layout.
    ///
    /// # Collective
    /// # Errors
    /// As [`LuFactors::lower`].
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::run_ranks;
    /// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
    /// use redblue_lu::{lu, LuParams};
    ///
    /// let ok = run_ranks(3, |comm| {
    ///     let layout = BlockCyclic::new(30, 30, 4, 4, 1, 3).unwrap();
    ///     let a = OwnedDistMatrix::<f64, _>::random(&comm, layout, 1).unwrap();
    ///     let fac = lu(&comm, &a, &LuParams::default().with_block(4)).unwrap();
    ///     let (l, u) = (fac.lower(&comm).unwrap(), fac.upper(&comm).unwrap());
    ///     let packed = fac.packed(&comm).unwrap();
    ///     // Row i of the packed factors is row perm()[i] of P·(L\U).
    ///     let (l, u, packed) = (l.gather(&comm, 0).unwrap(), u.gather(&comm, 0).unwrap(), packed.gather(&comm, 0).unwrap());
    ///     let perm = fac.perm().to_vec();
    ///     l.zip(u).zip(packed).map(|((l, u), packed)| {
    ///         (0..30).all(|i| (0..30).all(|j| {
    ///             let lu = if j < i { l[i + 30 * j] } else { u[i + 30 * j] };
    ///             lu == packed[perm[i] + 30 * j]
    ///         }))
    ///     })
    /// });
    /// assert_eq!(ok[0], Some(true));
    /// ```
    pub fn packed<C: Communicator>(&self, comm: &C) -> Result<OwnedDistMatrix<T, L>, LuError> {
        self.check_comm(comm, self.layout.nranks())?;
        let keep = |_, _, v| v;
        let layout = self.layout.clone();
        Ok(self
            .factors
            .to_layout(comm, None, keep, Op::NoTrans, layout)?)
    }

    /// Writes `L` and `U` into `dst` (any layout) in the rows of `P·A` — row `i` of `dst`
    /// holds row `i` of `L` left of the diagonal and of `U` from it on, what LAPACK's `getrf`
    /// and ScaLAPACK's `p?getrf` leave — in one transform from the factors' tiles.
    ///
    /// # Collective
    /// # Errors
    /// [`LuError::InvalidParams`] for a `dst` of another order or a communicator too small for
    /// the factors; communication failures.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::run_ranks;
    /// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
    /// use redblue_lu::{lu, LuParams};
    ///
    /// run_ranks(2, |comm| {
    ///     let layout = BlockCyclic::new(20, 20, 4, 4, 1, 2).unwrap();
    ///     let a = OwnedDistMatrix::<f64, _>::random(&comm, layout.clone(), 3).unwrap();
    ///     let fac = lu(&comm, &a, &LuParams::default()).unwrap();
    ///     let mut out = OwnedDistMatrix::zeros(&comm, layout).unwrap();
    ///     fac.write_factors(&comm, &mut out).unwrap();
    ///     let same = fac.packed(&comm).unwrap().permute_rows(&comm, fac.perm()).unwrap();
    ///     assert_eq!(out, same);
    /// });
    /// ```
    pub fn write_factors<C, B>(&self, comm: &C, dst: &mut B) -> Result<(), LuError>
    where
        C: Communicator,
        B: DistMatrixMut<T> + ?Sized,
    {
        let (m, n) = self.shape();
        if dst.shape() != (m, n) {
            return Err(LuError::InvalidParams(format!(
                "factors of a {m}x{n} matrix written into a {}x{} one",
                dst.shape().0,
                dst.shape().1
            )));
        }
        self.check_comm(comm, dst.layout().nranks())?;
        self.factors
            .write_to(comm, Some(&self.perm), Op::NoTrans, dst, None)?;
        Ok(())
    }

    /// Brings the factors into the form their uses read now rather than at the first use,
    /// which does it otherwise: each tile column's rows in the layout's order (the steps leave
    /// them in the order of their last interchanges) and the layers' shares on layer 0. A
    /// timing of the factorisation alone, set against a single-process `getrf` that leaves
    /// finished factors, includes it; [`LuFactors::write_factors`] into a layout whose every
    /// element the tiles' rank holds, on one process row, reads the rows where they are and
    /// needs none of it.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub fn settle<C: Communicator>(&self, comm: &C) -> Result<(), LuError> {
        Ok(self.factors.settle(comm)?)
    }

    /// Every rank's counters (of `p`, elements of `bytes` bytes) for bringing the layers'
    /// shares of the factors to layer 0, which the first of [`LuFactors::packed`],
    /// [`LuFactors::lower`], [`LuFactors::upper`] or [`LuFactors::solve`] does: zero once done,
    /// and with one layer.
    pub fn gather_costs(&self, p: usize, bytes: usize) -> Vec<CommStats> {
        self.factors.gather_costs(p, bytes)
    }

    /// Row `i` of `P·A` is row `perm()[i]` of `A`.
    pub fn perm(&self) -> &[usize] {
        &self.perm
    }

    /// The permutation as LAPACK's (0-based) `ipiv`: for `i = 0, 1, ...` in order, row `i` was
    /// interchanged with row `ipiv[i] ≥ i`.
    /// `min(M, N)` entries, as LAPACK's.
    pub fn ipiv(&self) -> Vec<usize> {
        let (m, n) = self.shape();
        interchanged(m, self.perm[..m.min(n)].iter().copied()).1
    }

    /// The growth factor `max |U| / max |A|`.
    pub fn growth(&self) -> f64 {
        self.growth
    }

    /// The grid used.
    pub fn grid(&self) -> TileGrid {
        let g = self.factors.geometry();
        TileGrid {
            px: g.px,
            py: g.py,
            c: g.c,
        }
    }

    /// The tile width used.
    pub fn block(&self) -> usize {
        self.factors.geometry().v
    }

    /// The columns `N`: the order of a square matrix.
    pub fn order(&self) -> usize {
        self.factors.geometry().n
    }

    /// The shape `M × N` of the factored matrix.
    pub fn shape(&self) -> (usize, usize) {
        let g = self.factors.geometry();
        (g.m, g.n)
    }

    /// A rectangular matrix's factors cannot solve.
    fn square(&self) -> Result<(), LuError> {
        match self.shape() {
            (m, n) if m != n => Err(LuError::NotSquare { shape: (m, n) }),
            _ => Ok(()),
        }
    }

    /// The layout in which [`LuFactors::solve`] takes and returns `nrhs` right-hand sides
    /// without transforming them: `N × nrhs` in `v × v` tiles over layer 0's `Px × Py` grid
    /// (ranks `0..Px·Py`, column-major), rows placed like the factors' rows.
    ///
    /// # Errors
    /// None for a factorisation that succeeded (the layout is valid for any `nrhs`).
    pub fn rhs_layout(&self, nrhs: usize) -> Result<BlockCyclic, LuError> {
        self.square()?;
        Ok(self.factors.rhs_layout(nrhs)?)
    }

    /// `X` with `A·X = B` for the `N × K` right-hand sides `b` in any layout, returned in
    /// `b`'s layout: the permutation, then forward and back substitution on the factors'
    /// grid (distributed triangular solves, see the book's LU page), the local work on the
    /// factorisation's `Par`. `comm` must be the communicator of the factorisation (or one of
    /// the same size).
    ///
    /// # Collective
    /// # Errors
    /// The same on every rank: [`LuError::RhsHeight`] if `b` does not have `N` rows,
    /// [`LuError::InvalidParams`] if `comm` is smaller than the factorisation's grid or `b`'s
    /// layout; communication failures.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::SelfComm;
    /// use redblue_dist::{GridLayout, OwnedDistMatrix};
    /// use redblue_lu::{lu, LuParams};
    ///
    /// let comm = SelfComm::new();
    /// // A = [2 1; 1 3], B = A·[1; 1] = [3; 4].
    /// let a = OwnedDistMatrix::from_fn(&comm, GridLayout::even(2, 2, 1, 1).unwrap(), |i, j| {
    ///     [[2.0, 1.0], [1.0, 3.0]][i][j]
    /// })
    /// .unwrap();
    /// let b = OwnedDistMatrix::from_fn(&comm, GridLayout::even(2, 1, 1, 1).unwrap(), |i, _| {
    ///     [3.0, 4.0][i]
    /// })
    /// .unwrap();
    /// let x = lu(&comm, &a, &LuParams::default()).unwrap().solve(&comm, &b).unwrap();
    /// assert!(x.into_local().iter().all(|&v| (v - 1.0f64).abs() < 1e-14));
    /// ```
    pub fn solve<C, B>(&self, comm: &C, b: &B) -> Result<OwnedDistMatrix<T, B::Layout>, LuError>
    where
        C: Communicator,
        B: DistMatrix<T> + ?Sized,
    {
        self.solve_to(comm, b, Op::NoTrans, None, b.layout().clone())
    }

    /// `X` with `op(A)·X = B` for `A = Pᵀ·(the factors' product)`, returned in `layout` (of
    /// `b`'s shape) instead of `b`'s: the factors are those of `P·A`, row `i` of `P·A` being
    /// row `perm[i]` of `A` (`P = I` without `perm`) — the factors of a ScaLAPACK `p?getrf`
    /// ([`LuFactors::from_packed`] with no permutation of its own) and its `IPIV` as a list.
    /// The rows are permuted on the factors' grid (`P·B` before the sweeps; `Pᵀ` applied to
    /// their result for a transposed solve), so that no row-permuted layout, whose transform
    /// is planned row by row, is needed. A transposed solve (`Op::Trans`, `Op::ConjTrans`)
    /// reads the factors' row blocks transposed in both sweeps, where they are for factors
    /// without row interchanges of their own (those of `from_packed` with no permutation); the
    /// factors of [`lu`](crate::lu), whose tiles keep their interchanges, are copied first into
    /// the rows of `P·A` (one transform of `L\U` per call).
    ///
    /// # Collective
    /// # Errors
    /// As [`LuFactors::solve`]; [`LuError::InvalidParams`] if `perm` is not a permutation of
    /// `0..N`; a [`LuError::Dist`] if `layout` is not of `b`'s shape.
    pub fn solve_to<C, B, X>(
        &self,
        comm: &C,
        b: &B,
        op: Op,
        perm: Option<&[usize]>,
        layout: X,
    ) -> Result<OwnedDistMatrix<T, X>, LuError>
    where
        C: Communicator,
        B: DistMatrix<T> + ?Sized,
        X: Layout + Clone,
    {
        self.square()?;
        let rows = b.shape().0;
        if rows != self.order() {
            return Err(LuError::RhsHeight {
                expected: self.order(),
                found: rows,
            });
        }
        check_permutation(perm, rows)?;
        self.check_comm(comm, b.layout().nranks().max(layout.nranks()))?;
        if op != Op::NoTrans && !self.factors.unpivoted() {
            return self.solve_transposed_on_copy(comm, b, op, perm, layout);
        }
        Ok(self.factors.solve_to(comm, b, op, perm, layout)?)
    }

    /// [`LuFactors::solve_to`] transposed for factors whose tiles keep their row interchanges
    /// (a transposed solve reads rows as columns, so it needs factors without them): on a copy
    /// of `L\U` in the rows of `P·A`, as ScaLAPACK's `p?getrf` leaves them, on the factors'
    /// grid, with the interchanges joined to `perm`.
    ///
    /// # Collective
    fn solve_transposed_on_copy<C, B, X>(
        &self,
        comm: &C,
        b: &B,
        op: Op,
        perm: Option<&[usize]>,
        layout: X,
    ) -> Result<OwnedDistMatrix<T, X>, LuError>
    where
        C: Communicator,
        B: DistMatrix<T> + ?Sized,
        X: Layout + Clone,
    {
        let n = self.order();
        let grid = TileGrid {
            c: 1,
            ..self.grid()
        };
        let params = LuParams::default().with_grid(grid).with_block(self.block());
        let plan = LuPlan::new(n, grid.ranks(), &params)?;
        let mut copy = OwnedDistMatrix::zeros(comm, plan.native_layout()?)?;
        self.write_factors(comm, &mut copy)?;
        let identity: Vec<usize> = (0..n).collect();
        let unpivoted = LuFactors::from_packed(comm, &plan, &copy, &identity, self.factors.par())?;
        // Row `i` of the factored matrix's `P·A'` is row `self.perm[i]` of `A' = P·A`.
        let rows: Vec<usize> = match perm {
            Some(perm) => self.perm.iter().map(|&r| perm[r]).collect(),
            None => self.perm.clone(),
        };
        unpivoted.solve_to(comm, b, op, Some(&rows), layout)
    }

    /// Every rank's predicted counters for [`LuFactors::solve_to`] with `op` and `perm`, the
    /// right-hand sides given in and the solution asked for in [`LuFactors::rhs_layout`] (no
    /// transform traffic), on `p` ranks, for elements of `bytes` bytes: `perm`'s row moves,
    /// the sweeps reading `op`'s triangles, and the gathering of the factors if no call has
    /// done it yet.
    ///
    /// # Errors
    /// [`LuError::InvalidParams`] if `perm` is not a permutation of `0..N`, or for a
    /// transposed solve with the factors of [`lu`](crate::lu) (solved on a copy of `L\U`
    /// made by a transform, whose words have no model here).
    pub fn solve_to_costs(
        &self,
        p: usize,
        (nrhs, op, perm): (usize, Op, Option<&[usize]>),
        bytes: usize,
    ) -> Result<Vec<CommStats>, LuError> {
        check_permutation(perm, self.order())?;
        if op != Op::NoTrans && !self.factors.unpivoted() {
            return Err(LuError::InvalidParams(
                "a transposed solve with lu()'s factors is made on a copy whose transform has no \
                 cost model; factors from from_packed have one"
                    .into(),
            ));
        }
        Ok(self.factors.solve_to_costs(p, (nrhs, op, perm), bytes)?)
    }

    /// Every rank's predicted counters for [`LuFactors::solve`] of `nrhs` right-hand sides
    /// given in [`LuFactors::rhs_layout`] (no transform traffic), on `p` ranks, for elements
    /// of `bytes` bytes: the solve, and the gathering of the factors if no call has done it
    /// yet ([`LuFactors::gather_costs`]).
    pub fn solve_costs(&self, p: usize, nrhs: usize, bytes: usize) -> Vec<CommStats> {
        self.factors.solve_costs(p, nrhs, bytes)
    }

    /// The unit lower triangular `L` of `P·A = L·U`, in the input's layout. Of an `M × N`
    /// matrix with `M < N`, `L` is its first `M` columns (the others zero); with `M > N`, all
    /// `N` columns, trapezoidal.
    ///
    /// # Collective
    /// # Errors
    /// As [`LuFactors::solve`] for the communicator; communication failures.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::SelfComm;
    /// use redblue_dist::{GridLayout, OwnedDistMatrix};
    /// use redblue_lu::{lu, LuParams};
    ///
    /// let comm = SelfComm::new();
    /// let a = OwnedDistMatrix::<f64, _>::random(&comm, GridLayout::even(20, 20, 1, 1).unwrap(), 3).unwrap();
    /// let fac = lu(&comm, &a, &LuParams::default()).unwrap();
    /// let l = fac.lower(&comm).unwrap().gather(&comm, 0).unwrap().unwrap();
    /// let u = fac.upper(&comm).unwrap().gather(&comm, 0).unwrap().unwrap();
    /// // (L·U)[i, j] = (P·A)[i, j] = A[perm[i], j].
    /// let a = a.gather(&comm, 0).unwrap().unwrap();
    /// for i in 0..20 {
    ///     for j in 0..20 {
    ///         let lu: f64 = (0..20).map(|k| l[i + 20 * k] * u[k + 20 * j]).sum();
    ///         assert!((lu - a[fac.perm()[i] + 20 * j]).abs() < 1e-12);
    ///     }
    /// }
    /// ```
    pub fn lower<C: Communicator>(&self, comm: &C) -> Result<OwnedDistMatrix<T, L>, LuError> {
        self.triangle(comm, |i, j, v| match j.cmp(&i) {
            std::cmp::Ordering::Less => v,
            std::cmp::Ordering::Equal => T::one(),
            std::cmp::Ordering::Greater => T::zero(),
        })
    }

    /// The upper triangular `U` of `P·A = L·U`, in the input's layout. Of an `M × N` matrix
    /// with `M > N`, `U` is its first `N` rows (the others zero); with `M < N`, all `M` rows,
    /// trapezoidal.
    ///
    /// # Collective
    /// # Errors
    /// As [`LuFactors::lower`].
    ///
    /// # Examples
    /// See [`LuFactors::lower`].
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
        let layout = self.layout.clone();
        let perm = Some(self.perm.as_slice());
        Ok(self
            .factors
            .to_layout(comm, perm, keep, Op::NoTrans, layout)?)
    }

    /// `comm` must hold the factorisation's grid and a layout over `layout_ranks` ranks.
    fn check_comm<C: Communicator>(&self, comm: &C, layout_ranks: usize) -> Result<(), LuError> {
        let need = self.factors.geometry().ranks().max(layout_ranks);
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
        self.factors.pivots()
    }
}

/// The row order after LAPACK's interchanges that bring `pivots` (rows of an `m`-row matrix,
/// each once) to the top in turn — row `i` with the row then at `ipiv[i] ≥ i` — and those
/// `ipiv`. The first entries of the order are the pivots; the rows below follow the
/// interchanges, as LAPACK's `getrf` leaves them.
fn interchanged(m: usize, pivots: impl Iterator<Item = usize>) -> (Vec<usize>, Vec<usize>) {
    let mut at: Vec<usize> = (0..m).collect(); // row now at each position
    let mut where_is: Vec<usize> = (0..m).collect(); // position of each row
    let mut ipiv = Vec::new();
    for (i, row) in pivots.enumerate() {
        let j = where_is[row];
        ipiv.push(j);
        let other = at[i];
        at.swap(i, j);
        where_is[row] = i;
        where_is[other] = j;
    }
    (at, ipiv)
}

/// `Ok` unless `perm` is given and is not a permutation of `0..rows`.
fn check_permutation(perm: Option<&[usize]>, rows: usize) -> Result<(), LuError> {
    let Some(perm) = perm else {
        return Ok(());
    };
    let mut seen = vec![false; rows];
    let valid = perm.len() == rows
        && perm
            .iter()
            .all(|&r| r < rows && !std::mem::replace(&mut seen[r], true));
    if valid {
        Ok(())
    } else {
        Err(LuError::InvalidParams(format!(
            "the rows to solve for are not a permutation of 0..{rows}"
        )))
    }
}
