//! Normalised residuals of redblue's results, computed distributed (every rank works on its own
//! elements; only vectors and norms cross ranks), in the forms ScaLAPACK's and SLATE's testers
//! use. A result passes when its residual is at most the threshold; honest results of
//! well-conditioned problems stay near or below 1.
//!
//! | check | residual | threshold |
//! |---|---|---|
//! | [`lu_residual`], [`factor_residual`] | `‖P·A − L·U‖₁ / (‖A‖₁·N·ε)` | [`LU_THRESHOLD`] |
//! | [`solve_residual`] | `‖B − A·X‖_∞ / (‖A‖_∞·‖X‖_∞·N·ε)` | [`LU_THRESHOLD`] after LU, [`CHOLESKY_THRESHOLD`] after Cholesky |
//! | [`cholesky_residual`] | `‖A − L·Lᴴ‖₁ / (‖A‖₁·N·ε)` (the Hermitian norms of one triangle) | [`CHOLESKY_THRESHOLD`] |
//! | [`gemm_residual`] | `‖C·x − α·op(A)·(op(B)·x) − β·C₀·x‖₂ / ((‖α‖‖A‖_F‖B‖_F + ‖β‖‖C₀‖_F)·‖x‖₂·k·ε)` | [`GEMM_THRESHOLD`] |
//!
//! `ε` is the machine epsilon of the element type; `x` is a fixed random vector.

use crate::Error;
use redblue_cholesky::CholeskyFactor;
use redblue_comm::{CommError, Communicator, CommunicatorExt, ReduceOp};
use redblue_core::{random, Op, RealScalar, Scalar, Uplo};
use redblue_dist::{
    transform, BlockCyclic, BlockCyclicSubmatrix, BorrowedDistMatrixMut, DistMatrix, DistMatrixMut,
    Layout, OwnedDistMatrix,
};
use redblue_gemm::{multiply, Algorithm, GemmShape, PlanOptions};
use redblue_kernels::{KernelScalar, Par};
use redblue_lu::LuFactors;

/// Threshold of the LU factor and solve residuals: `THRESH = 16` of ScaLAPACK's `LU.dat`.
pub const LU_THRESHOLD: f64 = 16.0;

/// Threshold of [`cholesky_residual`]: `THRESH = 3.0` of ScaLAPACK's `LLT.dat`.
pub const CHOLESKY_THRESHOLD: f64 = 3.0;

/// Threshold of [`gemm_residual`]: the rounding error of both products is at most about
/// `k·ε` relative, so an honest result stays below 2–3.
pub const GEMM_THRESHOLD: f64 = 10.0;

/// The seed of the probe vector of [`gemm_residual`]: `x[j] =`
/// [`random::uniform`]`(j, 0, PROBE_SEED)`.
pub const PROBE_SEED: u64 = 0x5EED_C4EC;

/// `‖P·A − L·U‖₁ / (‖A‖₁·N·ε)` for the factors of `a`, square or rectangular (`M × N`: `L`'s
/// first `min(M, N)` columns times `U`'s first `min(M, N)` rows, `N` the rows of `a`).
///
/// # Collective
/// # Errors
/// As [`LuFactors::lower`] and [`factor_residual`].
pub fn lu_residual<T, C, L>(
    comm: &C,
    a: &OwnedDistMatrix<T, L>,
    factors: &LuFactors<T, L>,
) -> Result<f64, Error>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout,
{
    let l = factors.lower(comm)?;
    let u = factors.upper(comm)?;
    let (m, n) = a.shape();
    // `lower()` and `upper()` are `M × N` each: the tall `L` gets zero columns up to `M`, the
    // wide `U` zero rows up to `N`, and the product is `L·U` of their trapezoids.
    if m > n {
        let l = padded(comm, &l, (m, m))?;
        factor_residual(comm, a, factors.perm(), &l, &u)
    } else if m < n {
        let u = padded(comm, &u, (n, n))?;
        factor_residual(comm, a, factors.perm(), &l, &u)
    } else {
        factor_residual(comm, a, factors.perm(), &l, &u)
    }
}

/// `x` in the top left corner of a `rows × cols` matrix of zeros (block-cyclic, `1 × P`).
fn padded<T, C, L>(
    comm: &C,
    x: &OwnedDistMatrix<T, L>,
    (rows, cols): (usize, usize),
) -> Result<OwnedDistMatrix<T, BlockCyclic>, Error>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout,
{
    let p = comm.size();
    let parent = BlockCyclic::new(rows, cols, 64, 64, 1, p)?;
    let mut out = OwnedDistMatrix::zeros(comm, parent.clone())?;
    let (r, c) = x.shape();
    // On a `1 × P` grid every rank holds every row: its local array's leading dimension.
    let corner = BlockCyclicSubmatrix::new(parent, 0..r, 0..c, vec![rows.max(1); p])?;
    let len = corner.local_len(comm.rank()).min(out.local().len());
    let mut view = BorrowedDistMatrixMut::new(comm, corner, &mut out.local_mut()[..len])?;
    transform(comm, T::one(), x, Op::NoTrans, T::zero(), &mut view)?;
    Ok(out)
}

/// `‖P·A − L·U‖₁ / (‖A‖₁·N·ε)`, row `i` of `P·A` being row `perm[i]` of `a`; `l` and `u` in
/// any layouts.
///
/// # Collective
/// # Errors
/// A `perm` that is not a permutation, shapes that do not agree, communication failures; the
/// same on every rank.
pub fn factor_residual<T, C, L, LL, LU>(
    comm: &C,
    a: &OwnedDistMatrix<T, L>,
    perm: &[usize],
    l: &OwnedDistMatrix<T, LL>,
    u: &OwnedDistMatrix<T, LU>,
) -> Result<f64, Error>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout,
    LL: Layout,
    LU: Layout,
{
    let mut r = a.permute_rows(comm, perm)?;
    subtract_product(comm, l, u, &mut r)?;
    let n = a.shape().0;
    let scale = a.norm_one(comm)?.to_f64() * n as f64 * epsilon::<T>();
    Ok(ratio(r.norm_one(comm)?.to_f64(), scale))
}

/// `‖A − L·Lᴴ‖₁ / (‖A‖₁·N·ε)` (`Uplo::Lower`) or `‖A − Uᴴ·U‖₁ / (‖A‖₁·N·ε)` (`Upper`) for the
/// factor of `a`, of which only the `uplo` triangle is read: both norms are those of the
/// Hermitian matrices that triangle stands for.
///
/// # Collective
/// # Errors
/// As [`CholeskyFactor::factor`], communication failures; the same on every rank.
pub fn cholesky_residual<T, C, L>(
    comm: &C,
    a: &OwnedDistMatrix<T, L>,
    uplo: Uplo,
    factor: &CholeskyFactor<T, L>,
) -> Result<f64, Error>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout,
{
    let f = factor.factor(comm)?;
    let mut r = a.clone();
    let (op_a, op_b) = match uplo {
        Uplo::Lower => (Op::NoTrans, Op::ConjTrans),
        Uplo::Upper => (Op::ConjTrans, Op::NoTrans),
    };
    let n = a.shape().0;
    if n > 0 {
        let schedule = Algorithm::Cosma
            .schedule(
                GemmShape::new(n, n, n),
                comm.size(),
                &PlanOptions::default(),
            )
            .map_err(redblue_gemm::GemmError::from)?;
        let minus_one = T::zero() - T::one();
        multiply(
            comm,
            minus_one,
            &f,
            op_a,
            &f,
            op_b,
            T::one(),
            &mut r,
            &schedule,
            Par::Seq,
        )?;
    }
    let scale = hermitian_norm_one(comm, a, uplo)? * n as f64 * epsilon::<T>();
    Ok(ratio(hermitian_norm_one(comm, &r, uplo)?, scale))
}

/// `‖H‖₁` of the Hermitian matrix whose `uplo` triangle `m` holds (the other is not read):
/// `max_j (Σ_i |h_ij|)`, each entry of the strict triangle counted in its column and in its
/// row; NaN if the triangle holds one.
fn hermitian_norm_one<T, C, L>(
    comm: &C,
    m: &OwnedDistMatrix<T, L>,
    uplo: Uplo,
) -> Result<f64, Error>
where
    T: KernelScalar,
    C: Communicator,
    L: Layout,
{
    let n = m.shape().1;
    let mut sums = vec![0.0f64; n];
    m.for_each_local(|i, j, v| {
        let inside = match uplo {
            Uplo::Lower => i >= j,
            Uplo::Upper => i <= j,
        };
        if inside {
            let x = v.abs().to_f64();
            sums[j] += x;
            if i != j {
                sums[i] += x;
            }
        }
    });
    comm.all_reduce_in_place(&mut sums, ReduceOp::Sum)?;
    Ok(sums
        .into_iter()
        .fold(0.0, |acc, x| if x > acc || x.is_nan() { x } else { acc }))
}

/// `‖B − A·X‖_∞ / (‖A‖_∞·‖X‖_∞·N·ε)` for a solution `x` of `A·X = B`, all in any layouts.
///
/// # Collective
/// # Errors
/// Shapes that do not agree, communication failures; the same on every rank.
pub fn solve_residual<T, C, LA, LX, LB>(
    comm: &C,
    a: &OwnedDistMatrix<T, LA>,
    x: &OwnedDistMatrix<T, LX>,
    b: &OwnedDistMatrix<T, LB>,
) -> Result<f64, Error>
where
    T: KernelScalar,
    C: Communicator,
    LA: Layout,
    LX: Layout,
    LB: Layout,
{
    let mut r = b.clone();
    subtract_product(comm, a, x, &mut r)?;
    let n = a.shape().0;
    let scale = a.norm_inf(comm)?.to_f64() * x.norm_inf(comm)?.to_f64() * n as f64;
    Ok(ratio(r.norm_inf(comm)?.to_f64(), scale * epsilon::<T>()))
}

/// The residual of `C = α·op(A)·op(B) + β·C₀` (`c0` the input `C`, `c` the result), probed
/// with a random vector `x` (Freivalds' test, as SLATE's tester):
/// `‖C·x − α·op(A)·(op(B)·x) − β·C₀·x‖₂ / ((|α|‖A‖_F‖B‖_F + |β|‖C₀‖_F)·‖x‖₂·max(k, 1)·ε)`.
/// Work and memory are those of three distributed matrix–vector products.
///
/// # Collective
/// # Errors
/// Shapes that do not agree, communication failures; the same on every rank.
#[allow(clippy::too_many_arguments)]
pub fn gemm_residual<T, C, LA, LB, L0, LC>(
    comm: &C,
    alpha: T,
    a: &OwnedDistMatrix<T, LA>,
    op_a: Op,
    b: &OwnedDistMatrix<T, LB>,
    op_b: Op,
    beta: T,
    c0: &OwnedDistMatrix<T, L0>,
    c: &OwnedDistMatrix<T, LC>,
) -> Result<f64, Error>
where
    T: KernelScalar,
    C: Communicator,
    LA: Layout,
    LB: Layout,
    L0: Layout,
    LC: Layout,
{
    let (m, k) = op_a.apply_shape(a.shape());
    let (kb, n) = op_b.apply_shape(b.shape());
    if kb != k {
        return Err(redblue_gemm::GemmError::InnerDimensions {
            op_a: (m, k),
            op_b: (kb, n),
        }
        .into());
    }
    for (what, found) in [("C₀", c0.shape()), ("C", c.shape())] {
        if found != (m, n) {
            return Err(redblue_dist::DistError::ShapeMismatch {
                what: if what == "C" {
                    "gemm_residual: C"
                } else {
                    "gemm_residual: C₀"
                },
                expected: (m, n),
                found,
            }
            .into());
        }
    }
    let x: Vec<T> = (0..n).map(|j| random::uniform(j, 0, PROBE_SEED)).collect();
    let bx = op_times(comm, b, op_b, &x)?;
    let abx = op_times(comm, a, op_a, &bx)?;
    let c0x = op_times(comm, c0, Op::NoTrans, &x)?;
    let cx = op_times(comm, c, Op::NoTrans, &x)?;
    let r: f64 = (0..m)
        .map(|i| (cx[i] - alpha * abx[i] - beta * c0x[i]).abs_sqr().to_f64())
        .sum::<f64>()
        .sqrt();
    let (a_fro, b_fro) = (a.norm_fro(comm)?.to_f64(), b.norm_fro(comm)?.to_f64());
    let c0_fro = c0.norm_fro(comm)?.to_f64();
    let scale = alpha.abs().to_f64() * a_fro * b_fro + beta.abs().to_f64() * c0_fro;
    let x_norm = x.iter().map(|v| v.abs_sqr().to_f64()).sum::<f64>().sqrt();
    Ok(ratio(r, scale * x_norm * k.max(1) as f64 * epsilon::<T>()))
}

/// `op(M)·x` on every rank: each rank multiplies its own elements, then one all-reduce of the
/// result vector.
fn op_times<T: Scalar, C: Communicator, L: Layout>(
    comm: &C,
    m: &OwnedDistMatrix<T, L>,
    op: Op,
    x: &[T],
) -> Result<Vec<T>, CommError> {
    let rows = op.apply_shape(m.shape()).0;
    let mut y = vec![T::zero(); rows];
    m.for_each_local(|i, j, v| match op {
        Op::NoTrans => y[i] += v * x[j],
        Op::Trans => y[j] += v * x[i],
        Op::ConjTrans => y[j] += v.conj() * x[i],
    });
    comm.all_reduce_in_place(&mut y, ReduceOp::Sum)?;
    Ok(y)
}

/// `r −= a·b` by COSMA on every rank of `comm`.
fn subtract_product<T, C, LA, LB, LR>(
    comm: &C,
    a: &OwnedDistMatrix<T, LA>,
    b: &OwnedDistMatrix<T, LB>,
    r: &mut OwnedDistMatrix<T, LR>,
) -> Result<(), Error>
where
    T: KernelScalar,
    C: Communicator,
    LA: Layout,
    LB: Layout,
    LR: Layout,
{
    let ((m, k), n) = (a.shape(), b.shape().1);
    if m == 0 || n == 0 {
        return Ok(());
    }
    let schedule = Algorithm::Cosma
        .schedule(
            GemmShape::new(m, n, k),
            comm.size(),
            &PlanOptions::default(),
        )
        .map_err(redblue_gemm::GemmError::from)?;
    let minus_one = T::zero() - T::one();
    multiply(
        comm,
        minus_one,
        a,
        Op::NoTrans,
        b,
        Op::NoTrans,
        T::one(),
        r,
        &schedule,
        Par::Seq,
    )?;
    Ok(())
}

fn epsilon<T: Scalar>() -> f64 {
    T::epsilon().to_f64()
}

/// `residual / scale`, or the residual itself when the scale is zero (a zero problem).
fn ratio(residual: f64, scale: f64) -> f64 {
    if scale > 0.0 {
        residual / scale
    } else {
        residual
    }
}
