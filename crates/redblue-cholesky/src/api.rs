//! [`cholesky`]: factor a Hermitian positive definite distributed matrix in any layout, with
//! COnfCHOX or the 2D baseline, into a [`CholeskyFactor`].

use crate::factor::Chox;
use crate::plan::CholeskyPlan;
use crate::{CholeskyError, CholeskyParams};
use redblue_comm::{CommStats, Communicator};
use redblue_core::{Op, Scalar, Uplo};
use redblue_dist::{
    same_local_arrays, transform, BlockCyclic, DistMatrix, DistMatrixMut, Layout, OwnedDistMatrix,
};
use redblue_kernels::{KernelScalar, Par};
use redblue_pipeline::solve::Triangles;
use redblue_pipeline::{reserve, run, Run, RunOptions, Stopped, Storage, TileFactors, TileGrid};

/// `A = L·Lᴴ` (`uplo = Lower`) or `A = Uᴴ·U` (`Upper`) of a Hermitian positive definite
/// matrix in any layout, on every rank of `comm`, of which only the `uplo` triangle is read
/// (the other may hold anything, NaN included): [`CholeskyPlan::new`] for this communicator,
/// then [`cholesky_with`] on one thread per rank. `A` is not written.
///
/// # Collective
/// # Errors
/// The same on every rank: [`CholeskyError::NotSquare`], [`CholeskyError::NotFinite`] (in the
/// triangle read), [`CholeskyError::NotPositiveDefinite`] naming the first failing column,
/// bad parameters (see [`crate::cholesky_plan`]); communication failures.
///
/// # Examples
/// ```
/// use redblue_cholesky::{cholesky, CholeskyParams};
/// use redblue_comm::run_ranks;
/// use redblue_core::Uplo;
/// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
///
/// let n = 120;
/// let residuals = run_ranks(4, |comm| {
///     let layout = BlockCyclic::new(n, n, 16, 16, 2, 2).unwrap();
///     // Symmetric and diagonally dominant; the upper triangle is never read.
///     let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| match i.cmp(&j) {
///         std::cmp::Ordering::Less => f64::NAN,
///         std::cmp::Ordering::Equal => n as f64,
///         std::cmp::Ordering::Greater => 1.0 / (1 + i - j) as f64,
///     })
///     .unwrap();
///     let factor = cholesky(&comm, &a, Uplo::Lower, &CholeskyParams::default()).unwrap();
///     let l = factor.lower(&comm).unwrap().gather(&comm, 0).unwrap();
///     l.map(|l| l[0] * l[0] - n as f64) // L[0,0]² = A[0,0]
/// });
/// assert!(residuals[0].unwrap().abs() < 1e-12);
/// ```
pub fn cholesky<T, C, A>(
    comm: &C,
    a: &A,
    uplo: Uplo,
    params: &CholeskyParams,
) -> Result<CholeskyFactor<'static, T, A::Layout>, CholeskyError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
{
    let plan = plan_for(comm, a.shape(), params)?;
    cholesky_with(comm, &plan, a, uplo, Par::Seq)
}

/// [`cholesky`] with a plan made before ([`CholeskyPlan::new`], for `comm`'s size or fewer
/// ranks), the local products on `par` threads per rank.
///
/// # Collective
/// # Errors
/// As [`cholesky`], and [`CholeskyError::InvalidParams`] (on every rank) for a plan of another
/// order or of more ranks than `comm` has.
///
/// # Examples
/// ```
/// use redblue_cholesky::{cholesky_with, CholeskyParams, CholeskyPlan};
/// use redblue_comm::run_ranks;
/// use redblue_core::Uplo;
/// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
/// use redblue_kernels::Par;
///
/// let n = 90;
/// let plan = CholeskyPlan::new(n, 3, &CholeskyParams::default()).unwrap();
/// let orders = run_ranks(3, |comm| {
///     let layout = BlockCyclic::new(n, n, 10, 10, 3, 1).unwrap();
///     // Only the upper triangle is read.
///     let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| {
///         if i == j { 2.0 * n as f64 } else if i < j { 0.5 } else { f64::NAN }
///     })
///     .unwrap();
///     cholesky_with(&comm, &plan, &a, Uplo::Upper, Par::Seq).unwrap().order()
/// });
/// assert_eq!(orders, vec![n; 3]);
/// ```
pub fn cholesky_with<T, C, A>(
    comm: &C,
    plan: &CholeskyPlan,
    a: &A,
    uplo: Uplo,
    par: Par,
) -> Result<CholeskyFactor<'static, T, A::Layout>, CholeskyError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
{
    check_plan(comm, plan, a.shape(), a.layout().nranks())?;
    let native_layout = plan.native_layout()?;
    // The working copy in a pooled buffer, with the other large buffers, agreed on by every
    // rank; the transform with beta = 0 writes every element. The upper triangle is factored
    // as the lower triangle of `Aᴴ`.
    let copy_len = native_layout.local_len(comm.rank());
    let working = plan.working_bytes(size_of::<T>());
    let mut reserved = reserve(comm, &plan.geometry(), copy_len, working)?;
    let mut native = OwnedDistMatrix::from_local(comm, native_layout, reserved.take_copy())?;
    transform(comm, T::one(), a, op_of(uplo), T::zero(), &mut native)?;
    let local = reserved.input(native.into_local());
    factor_native(comm, plan, par, uplo, a.layout().clone(), local)
}

/// [`cholesky`] of a matrix given by value: in place, without a copy, when it is already in the
/// factorisation's layout ([`CholeskyPlan::native_layout`]) and `uplo` is `Lower` — as
/// ScaLAPACK's `pdpotrf` overwrites its input; otherwise it is copied as [`cholesky`] does. On
/// an error the matrix is dropped: a factorisation that stops at a column leaves nothing to
/// return (LAPACK's `info > 0` leaves a partial factor; here the error names the column).
///
/// # Collective
/// # Errors
/// As [`cholesky`].
///
/// # Examples
/// ```
/// use redblue_cholesky::{cholesky_in_place, CholeskyParams, CholeskyPlan};
/// use redblue_comm::SelfComm;
/// use redblue_core::Uplo;
/// use redblue_dist::OwnedDistMatrix;
///
/// let comm = SelfComm::new();
/// let params = CholeskyParams::default();
/// let layout = CholeskyPlan::new(3, 1, &params).unwrap().native_layout().unwrap();
/// // A = [4 2 2; 2 5 3; 2 3 6] = L·Lᵀ with L = [2 0 0; 1 2 0; 1 1 2].
/// let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| {
///     [[4.0, 2.0, 2.0], [2.0, 5.0, 3.0], [2.0, 3.0, 6.0]][i][j]
/// })
/// .unwrap();
/// let l = cholesky_in_place(&comm, a, Uplo::Lower, &params).unwrap().lower(&comm).unwrap();
/// assert_eq!(l.into_local(), [2.0, 1.0, 1.0, 0.0, 2.0, 1.0, 0.0, 0.0, 2.0]);
/// ```
pub fn cholesky_in_place<T, C, L>(
    comm: &C,
    a: OwnedDistMatrix<T, L>,
    uplo: Uplo,
    params: &CholeskyParams,
) -> Result<CholeskyFactor<'static, T, L>, CholeskyError>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout + PartialEq + From<BlockCyclic>,
{
    let plan = plan_for(comm, a.shape(), params)?;
    cholesky_in_place_with(comm, &plan, a, uplo, Par::Seq)
}

/// [`cholesky_in_place`] with a plan made before, the local products on `par` threads per rank.
///
/// # Collective
/// # Errors
/// As [`cholesky_with`].
///
/// # Examples
/// ```
/// use redblue_cholesky::{cholesky_in_place_with, CholeskyParams, CholeskyPlan};
/// use redblue_comm::run_ranks;
/// use redblue_core::Uplo;
/// use redblue_dist::OwnedDistMatrix;
/// use redblue_kernels::Par;
///
/// let n = 60;
/// let plan = CholeskyPlan::new(n, 2, &CholeskyParams::default().with_block(8)).unwrap();
/// let diagonals = run_ranks(2, |comm| {
///     // Already in the native layout: factored where it is, no copy.
///     let a = OwnedDistMatrix::from_fn(&comm, plan.native_layout().unwrap(), |i, j| {
///         if i == j { 4.0 } else { 1.0 / (1.0 + (i + j) as f64) }
///     })
///     .unwrap();
///     let factor = cholesky_in_place_with(&comm, &plan, a, Uplo::Lower, Par::Seq).unwrap();
///     let l = factor.lower(&comm).unwrap().gather(&comm, 0).unwrap();
///     l.map(|l| (0..n).all(|i| l[i + n * i] > 0.0))
/// });
/// assert_eq!(diagonals[0], Some(true));
/// ```
pub fn cholesky_in_place_with<T, C, L>(
    comm: &C,
    plan: &CholeskyPlan,
    a: OwnedDistMatrix<T, L>,
    uplo: Uplo,
    par: Par,
) -> Result<CholeskyFactor<'static, T, L>, CholeskyError>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout + PartialEq + From<BlockCyclic>,
{
    check_plan(comm, plan, a.shape(), a.layout().nranks())?;
    if uplo != Uplo::Lower || *a.layout() != L::from(plan.native_layout()?) {
        return cholesky_with(comm, plan, &a, uplo, par);
    }
    let layout = a.layout().clone();
    let working = plan.working_bytes(size_of::<T>());
    let reserved = reserve::<T, _>(comm, &plan.geometry(), 0, working)?;
    factor_native(
        comm,
        plan,
        par,
        uplo,
        layout,
        reserved.input(a.into_local()),
    )
}

/// [`cholesky_with`], the factor written over the `uplo` triangle of `a` itself, as
/// ScaLAPACK's `p?potrf` leaves it: `L` in the lower triangle for `Uplo::Lower`, `U = Lᴴ` in
/// the upper for `Uplo::Upper`, diagonal included; the other triangle is neither read nor
/// written. Factored where it is, with no copy in or out, when `uplo` is `Lower`, the plan has
/// one layer and `a`'s local arrays are the plan's native ones
/// ([`same_local_arrays`] with [`CholeskyPlan::native_layout`]: what
/// [`CholeskyPlan::for_layout`] plans for a ScaLAPACK array whose leading dimension is its
/// local rows); otherwise copied in, factored and written back
/// ([`CholeskyFactor::write_factor`]).
///
/// # Collective
/// # Errors
/// As [`cholesky_with`]. Every error leaves `a` as it was, but
/// [`CholeskyError::NotPositiveDefinite`] in place: the triangle is then left part-way, as
/// ScaLAPACK's `p?potrf` leaves it with `info > 0`.
///
/// # Examples
/// ```
/// use redblue_cholesky::{cholesky_overwrite, CholeskyParams, CholeskyPlan};
/// use redblue_comm::run_ranks;
/// use redblue_core::Uplo;
/// use redblue_dist::{DistMatrix, OwnedDistMatrix};
/// use redblue_kernels::Par;
///
/// let n = 48;
/// let plan = CholeskyPlan::new(n, 2, &CholeskyParams::default().with_block(8)).unwrap();
/// let kept = run_ranks(2, |comm| {
///     // The upper triangle holds NaN: neither read nor written.
///     let mut a = OwnedDistMatrix::from_fn(&comm, plan.native_layout().unwrap(), |i, j| {
///         if i == j { 4.0 } else if i > j { 1.0 / (1.0 + (i + j) as f64) } else { f64::NAN }
///     })
///     .unwrap();
///     cholesky_overwrite(&comm, &plan, &mut a, Uplo::Lower, Par::Seq).unwrap();
///     let mut kept = true;
///     a.for_each_local(|i, j, x| kept &= if i < j { x.is_nan() } else { x.is_finite() });
///     kept
/// });
/// assert_eq!(kept, vec![true; 2]);
/// ```
pub fn cholesky_overwrite<T, C, A>(
    comm: &C,
    plan: &CholeskyPlan,
    a: &mut A,
    uplo: Uplo,
    par: Par,
) -> Result<(), CholeskyError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrixMut<T> + ?Sized,
{
    check_plan(comm, plan, a.shape(), a.layout().nranks())?;
    let native = plan.native_layout()?;
    if uplo != Uplo::Lower || plan.grid.c != 1 || !same_local_arrays(a.layout(), &native) {
        let factor = cholesky_with(comm, plan, &*a, uplo, par)?;
        return factor.write_factor(comm, a);
    }
    let geom = plan.geometry();
    let working = plan.working_bytes(size_of::<T>());
    let reserved = reserve::<T, _>(comm, &geom, 0, working)?;
    // The same local arrays: this rank's first `len` elements are its tiles.
    let len = native.local_len(comm.rank());
    let local = reserved.input(&mut a.local_mut()[..len]);
    let mut done = run_plan(comm, plan, par, local)?;
    // Without pivoting the rows stay in order; should a step have moved them, put them back.
    if !done.tiles.rows_sorted() {
        done.tiles.sort_rows();
    }
    Ok(())
}

/// The steps of `plan` on this rank's tiles `local` (its own buffer, given back on an error, or
/// the caller's array); a run the input stopped is its error, the same on every rank.
fn run_plan<'a, T: KernelScalar, C: Communicator>(
    comm: &C,
    plan: &CholeskyPlan,
    par: Par,
    local: Storage<'a, T>,
) -> Result<Run<'a, T>, CholeskyError> {
    let options = RunOptions {
        par,
        look_ahead: plan.look_ahead,
    };
    let mut hooks = Chox::new(plan.model(), plan.check_finite);
    let done = run(comm, &plan.geometry(), local, &mut hooks, options)?;
    match done.stopped {
        None => Ok(done),
        Some(why) => {
            done.tiles.data.recycle();
            Err(match why {
                Stopped::NotFinite => CholeskyError::NotFinite,
                Stopped::Column(column) => CholeskyError::NotPositiveDefinite { column },
            })
        }
    }
}

/// How the native copy is formed from a matrix whose `uplo` triangle holds `A`.
fn op_of(uplo: Uplo) -> Op {
    match uplo {
        Uplo::Lower => Op::NoTrans,
        Uplo::Upper => Op::ConjTrans,
    }
}

/// The plan for a matrix of `shape` on `comm`.
fn plan_for<C: Communicator>(
    comm: &C,
    (m, n): (usize, usize),
    params: &CholeskyParams,
) -> Result<CholeskyPlan, CholeskyError> {
    if m != n {
        return Err(CholeskyError::NotSquare { shape: (m, n) });
    }
    CholeskyPlan::new(n, comm.size(), params)
}

/// A plan fits the matrix (of `shape`, spread over `layout_ranks` ranks) and the communicator.
fn check_plan<C: Communicator>(
    comm: &C,
    plan: &CholeskyPlan,
    (m, n): (usize, usize),
    layout_ranks: usize,
) -> Result<(), CholeskyError> {
    if m != n {
        return Err(CholeskyError::NotSquare { shape: (m, n) });
    }
    if plan.n != n {
        return Err(CholeskyError::InvalidParams(format!(
            "a plan for order {} cannot factor a matrix of order {n}",
            plan.n
        )));
    }
    let need = plan.ranks().max(layout_ranks);
    if need > comm.size() {
        return Err(CholeskyError::InvalidParams(format!(
            "the plan and the matrix need {need} ranks, the communicator has {}",
            comm.size()
        )));
    }
    Ok(())
}

/// Factors this rank's local array `local` of the plan's native layout (lower triangle; empty
/// off layer 0); `layout` is the caller's layout, for the factor given back.
fn factor_native<T: KernelScalar, C: Communicator, L: Layout>(
    comm: &C,
    plan: &CholeskyPlan,
    par: Par,
    uplo: Uplo,
    layout: L,
    local: Storage<'static, T>,
) -> Result<CholeskyFactor<'static, T, L>, CholeskyError> {
    let done = run_plan(comm, plan, par, local)?;
    Ok(CholeskyFactor {
        layout,
        uplo,
        stored: Uplo::Lower,
        factors: TileFactors::new(plan.geometry(), Triangles::Cholesky, comm.rank(), done, par),
    })
}

/// The factor of [`cholesky`], kept where the factorisation left it — `L` in the lower triangle
/// of the native tiles, spread over the layers. The first call that needs it whole
/// ([`CholeskyFactor::lower`], [`CholeskyFactor::upper`], [`CholeskyFactor::solve`]) brings the
/// layers' shares to layer 0 in one exchange ([`CholeskyFactor::gather_costs`]).
pub struct CholeskyFactor<'a, T: Scalar, L> {
    /// The input's layout.
    layout: L,
    /// The triangle the input held.
    uplo: Uplo,
    /// The triangle the tiles hold: `L` (`Lower`), or `U` of a factor given as `U`.
    stored: Uplo,
    factors: TileFactors<'a, T>,
}

impl<'a, T: KernelScalar, L: Layout> CholeskyFactor<'a, T, L> {
    /// A factor computed elsewhere — ScaLAPACK's `p?potrf` left it in a caller's array —
    /// made ready for [`CholeskyFactor::solve`]: the `uplo` triangle of `factor` (any layout)
    /// holds `L` of `A = L·Lᴴ` (`Uplo::Lower`) or `U` of `A = Uᴴ·U` (`Uplo::Upper`); the
    /// other triangle is not read. Either triangle is solved with as it is (`U`'s row blocks
    /// read transposed in the forward substitution, not transposed first). When `factor`'s
    /// local arrays are the tiles of one layer of the plan's grid (a plan
    /// [`CholeskyPlan::for_layout`] made on its layout with `Uplo::Lower`, which keeps the
    /// layout's grid) it is read where it is, for as long as the factor lives
    /// ([`CholeskyFactor::in_caller_array`]); otherwise it is copied to one layer of the plan's
    /// grid (its `Px × Py`, whatever its layers).
    ///
    /// # Collective
    /// # Errors
    /// [`CholeskyError::NotSquare`] or [`CholeskyError::InvalidParams`] for a plan of another
    /// order or of more ranks than `comm` has; communication failures.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::run_ranks;
    /// use redblue_core::Uplo;
    /// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
    /// use redblue_kernels::Par;
    /// use redblue_cholesky::{cholesky, CholeskyFactor, CholeskyParams, CholeskyPlan};
    ///
    /// let ok = run_ranks(2, |comm| {
    ///     let layout = BlockCyclic::new(30, 30, 4, 4, 2, 1).unwrap();
    ///     let a = OwnedDistMatrix::<f64, _>::from_fn(&comm, layout, |i, j| if i == j { 40.0 } else { 1.0 / (1 + i + j) as f64 }).unwrap();
    ///     let b = OwnedDistMatrix::<f64, _>::random(&comm, BlockCyclic::new(30, 3, 4, 4, 2, 1).unwrap(), 2).unwrap();
    ///     let fac = cholesky(&comm, &a, Uplo::Upper, &CholeskyParams::default()).unwrap();
    ///     let u = fac.upper(&comm).unwrap();
    ///     let plan = CholeskyPlan::new(30, 2, &CholeskyParams::default()).unwrap();
    ///     let again = CholeskyFactor::from_factor(&comm, &plan, &u, Uplo::Upper, Par::Seq).unwrap();
    ///     let (x, y) = (fac.solve(&comm, &b).unwrap(), again.solve(&comm, &b).unwrap());
    ///     let mut diff = x.clone();
    ///     diff.axpy(&comm, -1.0, &y).unwrap();
    ///     diff.norm_max(&comm).unwrap() <= 1e-12 * x.norm_max(&comm).unwrap()
    /// });
    /// assert!(ok.iter().all(|&ok| ok));
    /// ```
    pub fn from_factor<C, A>(
        comm: &C,
        plan: &CholeskyPlan,
        factor: &'a A,
        uplo: Uplo,
        par: Par,
    ) -> Result<CholeskyFactor<'a, T, A::Layout>, CholeskyError>
    where
        C: Communicator,
        A: DistMatrix<T, Layout = L> + ?Sized,
    {
        check_plan(comm, plan, factor.shape(), factor.layout().nranks())?;
        let grid = TileGrid { c: 1, ..plan.grid };
        let geom = redblue_pipeline::Geometry::new(plan.n, plan.block, grid);
        // Kept in the triangle it is given in (`U` is solved with as it is: no transposition).
        let triangles = match uplo {
            Uplo::Lower => Triangles::Cholesky,
            Uplo::Upper => Triangles::CholeskyUpper,
        };
        let factors =
            TileFactors::from_factored(comm, geom, triangles, factor, Op::NoTrans, None, par)?;
        Ok(CholeskyFactor {
            layout: factor.layout().clone(),
            uplo,
            stored: uplo,
            factors,
        })
    }

    /// Whether this rank's factor is read where the caller's array holds it
    /// ([`CholeskyFactor::from_factor`] without a copy).
    pub fn in_caller_array(&self) -> bool {
        self.factors.in_caller_array()
    }

    /// Writes the factor over the triangle the input held of `dst` (any layout; the caller's
    /// array a ScaLAPACK `p?potrf` leaves it in): `L` into the lower triangle for
    /// `Uplo::Lower`, `U = Lᴴ` into the upper for `Uplo::Upper`, diagonal included; the other
    /// triangle of `dst` neither read nor written. One transform from the factor's tiles.
    ///
    /// # Collective
    /// # Errors
    /// [`CholeskyError::InvalidParams`] for a `dst` of another order or a communicator too small
    /// for the factor; communication failures.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::run_ranks;
    /// use redblue_core::Uplo;
    /// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
    /// use redblue_cholesky::{cholesky, CholeskyParams};
    ///
    /// run_ranks(2, |comm| {
    ///     let layout = BlockCyclic::new(6, 6, 2, 2, 1, 2).unwrap();
    ///     let a = OwnedDistMatrix::from_fn(&comm, layout.clone(), |i, j| if i == j { 4.0 } else { 0.0 }).unwrap();
    ///     let mut out = OwnedDistMatrix::from_fn(&comm, layout, |_, _| 9.0).unwrap();
    ///     let factor = cholesky(&comm, &a, Uplo::Upper, &CholeskyParams::default()).unwrap();
    ///     factor.write_factor(&comm, &mut out).unwrap();
    ///     out.for_each_local(|i, j, x| assert_eq!(x, if i == j { 2.0 } else if i < j { 0.0 } else { 9.0 }));
    /// });
    /// ```
    pub fn write_factor<C, B>(&self, comm: &C, dst: &mut B) -> Result<(), CholeskyError>
    where
        C: Communicator,
        B: DistMatrixMut<T> + ?Sized,
    {
        let n = self.factors.geometry().n;
        if dst.shape() != (n, n) {
            return Err(CholeskyError::InvalidParams(format!(
                "a factor of order {n} written into a {}x{} matrix",
                dst.shape().0,
                dst.shape().1
            )));
        }
        self.check_comm(comm, dst.layout().nranks())?;
        self.factors
            .write_to(comm, None, self.op_for(self.uplo), dst, Some(self.uplo))?;
        Ok(())
    }

    /// The factor of the triangle the input held, in the input's layout: `L` (zeros above the
    /// diagonal) for `Uplo::Lower`, `U = Lᴴ` (zeros below) for `Uplo::Upper`.
    ///
    /// # Collective
    /// # Errors
    /// As [`CholeskyFactor::lower`].
    pub fn factor<C: Communicator>(
        &self,
        comm: &C,
    ) -> Result<OwnedDistMatrix<T, L>, CholeskyError> {
        match self.uplo {
            Uplo::Lower => self.lower(comm),
            Uplo::Upper => self.upper(comm),
        }
    }

    /// `L` of `A = L·Lᴴ` (zeros above the diagonal), in the input's layout.
    ///
    /// # Collective
    /// # Errors
    /// [`CholeskyError::InvalidParams`] if `comm` is smaller than the factorisation's grid or
    /// the input's layout; communication failures.
    ///
    /// # Examples
    /// ```
    /// use redblue_cholesky::{cholesky, CholeskyParams};
    /// use redblue_comm::SelfComm;
    /// use redblue_core::Uplo;
    /// use redblue_dist::{GridLayout, OwnedDistMatrix};
    ///
    /// let (comm, n) = (SelfComm::new(), 12);
    /// let entry = |i: usize, j: usize| if i == j { 3.0 } else { 1.0 / (1.0 + (i + j) as f64) };
    /// // Only the lower triangle is read: the upper may hold anything.
    /// let a = OwnedDistMatrix::from_fn(&comm, GridLayout::even(n, n, 1, 1).unwrap(), |i, j| {
    ///     if i >= j { entry(i, j) } else { f64::NAN }
    /// })
    /// .unwrap();
    /// let factor = cholesky(&comm, &a, Uplo::Lower, &CholeskyParams::default()).unwrap();
    /// let l = factor.lower(&comm).unwrap().gather(&comm, 0).unwrap().unwrap();
    /// let u = factor.upper(&comm).unwrap().gather(&comm, 0).unwrap().unwrap();
    /// for i in 0..n {
    ///     for j in 0..n {
    ///         let llt: f64 = (0..n).map(|k| l[i + n * k] * l[j + n * k]).sum();
    ///         assert!((llt - entry(i, j)).abs() < 1e-13);
    ///         assert_eq!(u[i + n * j], l[j + n * i]); // U = Lᴴ
    ///     }
    /// }
    /// ```
    pub fn lower<C: Communicator>(&self, comm: &C) -> Result<OwnedDistMatrix<T, L>, CholeskyError> {
        self.to_layout(comm, Uplo::Lower)
    }

    /// `U = Lᴴ` of `A = Uᴴ·U` (zeros below the diagonal), in the input's layout.
    ///
    /// # Collective
    /// # Errors
    /// As [`CholeskyFactor::lower`].
    ///
    /// # Examples
    /// See [`CholeskyFactor::lower`].
    pub fn upper<C: Communicator>(&self, comm: &C) -> Result<OwnedDistMatrix<T, L>, CholeskyError> {
        self.to_layout(comm, Uplo::Upper)
    }

    /// How the tiles' triangle becomes the factor of the `want` triangle: as it is, or its
    /// conjugate transpose.
    fn op_for(&self, want: Uplo) -> Op {
        if want == self.stored {
            Op::NoTrans
        } else {
            Op::ConjTrans
        }
    }

    /// The factor of the `want` triangle (`L` or `U`) in the input's layout.
    fn to_layout<C: Communicator>(
        &self,
        comm: &C,
        want: Uplo,
    ) -> Result<OwnedDistMatrix<T, L>, CholeskyError> {
        self.check_comm(comm, self.layout.nranks())?;
        let stored = self.stored;
        let keep = move |i: usize, j: usize, v: T| {
            let in_triangle = if stored == Uplo::Lower {
                i >= j
            } else {
                i <= j
            };
            if in_triangle {
                v
            } else {
                T::zero()
            }
        };
        let layout = self.layout.clone();
        Ok(self
            .factors
            .to_layout(comm, None, keep, self.op_for(want), layout)?)
    }

    /// `X` with `A·X = B` for the `N × K` right-hand sides `b` in any layout, returned in
    /// `b`'s layout: forward substitution with `L`, back substitution with `Lᴴ`, on the
    /// factor's grid, the local work on the factorisation's `Par`. `comm` must be the
    /// communicator of the factorisation (or one of the same size).
    ///
    /// # Collective
    /// # Errors
    /// The same on every rank: [`CholeskyError::RhsHeight`] if `b` does not have `N` rows,
    /// [`CholeskyError::InvalidParams`] if `comm` is smaller than the factorisation's grid or
    /// `b`'s layout; communication failures.
    ///
    /// # Examples
    /// ```
    /// use redblue_cholesky::{cholesky, CholeskyParams};
    /// use redblue_comm::run_ranks;
    /// use redblue_core::Uplo;
    /// use redblue_dist::{GridLayout, OwnedDistMatrix};
    ///
    /// let n = 50;
    /// let errors = run_ranks(2, |comm| {
    ///     let a = OwnedDistMatrix::from_fn(&comm, GridLayout::even(n, n, 2, 1).unwrap(), |i, j| {
    ///         if i == j { 4.0 } else if i.abs_diff(j) == 1 { -1.0 } else { 0.0 }
    ///     })
    ///     .unwrap();
    ///     // B = A·1: 2 in the first and last rows, 3 elsewhere.
    ///     let b = OwnedDistMatrix::from_fn(&comm, GridLayout::even(n, 1, 1, 2).unwrap(), |i, _| {
    ///         if i == 0 || i == n - 1 { 3.0 } else { 2.0 }
    ///     })
    ///     .unwrap();
    ///     let x = cholesky(&comm, &a, Uplo::Lower, &CholeskyParams::default())
    ///         .unwrap()
    ///         .solve(&comm, &b)
    ///         .unwrap();
    ///     x.into_local().iter().map(|v| (v - 1.0f64).abs()).fold(0.0, f64::max)
    /// });
    /// assert!(errors.iter().all(|&e| e < 1e-12));
    /// ```
    pub fn solve<C, B>(
        &self,
        comm: &C,
        b: &B,
    ) -> Result<OwnedDistMatrix<T, B::Layout>, CholeskyError>
    where
        C: Communicator,
        B: DistMatrix<T> + ?Sized,
    {
        let rows = b.shape().0;
        if rows != self.order() {
            return Err(CholeskyError::RhsHeight {
                expected: self.order(),
                found: rows,
            });
        }
        self.check_comm(comm, b.layout().nranks())?;
        Ok(self.factors.solve(comm, b)?)
    }

    /// Every rank's predicted counters for [`CholeskyFactor::solve`] of `nrhs` right-hand sides
    /// given in [`CholeskyFactor::rhs_layout`] (no transform traffic), on `p` ranks, elements of
    /// `bytes` bytes: the solve, and the gathering of the factor if no call has done it yet.
    pub fn solve_costs(&self, p: usize, nrhs: usize, bytes: usize) -> Vec<CommStats> {
        self.factors.solve_costs(p, nrhs, bytes)
    }

    /// Brings the layers' shares of the factor to layer 0 now rather than at the first call
    /// needing it whole, which does it otherwise (its rows are never interchanged, so they are
    /// in the layout's order already). A timing of the factorisation alone, set against a
    /// single-process `potrf` that leaves a finished factor, includes it.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub fn settle<C: Communicator>(&self, comm: &C) -> Result<(), CholeskyError> {
        Ok(self.factors.settle(comm)?)
    }

    /// Every rank's counters for bringing the layers' shares of the factor to layer 0, which
    /// the first call needing it whole does: zero once done, and with one layer.
    pub fn gather_costs(&self, p: usize, bytes: usize) -> Vec<CommStats> {
        self.factors.gather_costs(p, bytes)
    }

    /// The layout in which [`CholeskyFactor::solve`] takes and returns `nrhs` right-hand sides
    /// without transforming them: `N × nrhs` in `v × v` tiles over layer 0's `Px × Py` grid.
    ///
    /// # Errors
    /// None for a factorisation that succeeded.
    pub fn rhs_layout(&self, nrhs: usize) -> Result<BlockCyclic, CholeskyError> {
        Ok(self.factors.rhs_layout(nrhs)?)
    }

    /// The triangle the input held.
    pub fn uplo(&self) -> Uplo {
        self.uplo
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

    /// The order `N`.
    pub fn order(&self) -> usize {
        self.factors.geometry().n
    }

    /// `comm` must hold the factorisation's grid and a layout over `layout_ranks` ranks.
    fn check_comm<C: Communicator>(
        &self,
        comm: &C,
        layout_ranks: usize,
    ) -> Result<(), CholeskyError> {
        let need = self.factors.geometry().ranks().max(layout_ranks);
        if comm.size() < need {
            return Err(CholeskyError::InvalidParams(format!(
                "the communicator has {} ranks, the factor and the matrix need {need}",
                comm.size()
            )));
        }
        Ok(())
    }
}
