//! `p?potrf`, `p?potrs` and `p?posv` on redblue's Cholesky: only the named triangle read and
//! written, solves from a factor found in the caller's array.

use crate::args::{first, solve_operands, BlacsGrid, Descriptor, Operand, Position};
use crate::common::{
    agree, column_major_if, solve_in_place, submatrix, uplo_of, Array, OrServe, Outcome, ServeError,
};
use crate::lu::{aligned_square, rhs_fits, NO_MEMORY};
use redblue_cholesky::{
    cholesky_overwrite, cholesky_with, CholeskyError, CholeskyFactor, CholeskyParams, CholeskyPlan,
};
use redblue_comm::Communicator;
use redblue_core::Uplo;
use redblue_dist::{
    same_local_arrays, BlockCyclicSubmatrix, BorrowedDistMatrix, BorrowedDistMatrixMut, DistError,
    Layout,
};
use redblue_kernels::{KernelScalar, Par};

/// `p?potrf`'s operand: `N × N` at `IA`, `JA`.
pub fn potrf_operand(n: i32, ia: i32, ja: i32, desc: Descriptor) -> Operand {
    Operand {
        m: n,
        n,
        ia,
        ja,
        desc,
        pos: (2, 2, 6),
    }
}

/// `p?potrs`'s and `p?posv`'s operands: `A` (`N × N`) and `B` (`N × NRHS`).
pub fn potrs_operands(
    n: i32,
    nrhs: i32,
    a: (i32, i32, Descriptor),
    b: (i32, i32, Descriptor),
) -> [Operand; 2] {
    solve_operands(n, nrhs, a, b, (2, 3, 7, 11))
}

/// The values `PCHK1MAT` compares with process `(0, 0)`'s: `UPLO` (argument 1) and the
/// operands'.
fn values(uplo: u8, ops: &[&Operand]) -> Vec<(i32, Position)> {
    let mut v = vec![(i32::from(uplo.to_ascii_uppercase()), Position::arg(1))];
    for op in ops {
        v.extend(op.global_values());
    }
    v
}

/// The factorisation's parameters: as ScaLAPACK's, no scan of the input first — NaN or
/// infinity stops it at a column as a pivot that is not positive, `info > 0`
/// ([`CholeskyParams::check_finite`]).
fn lapack_params() -> CholeskyParams {
    CholeskyParams::default().with_finite_check(false)
}

/// Factors `sub(A)`'s `uplo` triangle and writes the factor over that triangle only: where
/// the caller's array is the factorisation's own local array (the plan on the caller's grid
/// and blocks, the leading dimension the local rows, `uplo = L`), factored in it with no copy.
/// `Stopped(k)` for a matrix not positive definite at column `k` (NaN or infinity included; the
/// array then part-way, as ScaLAPACK leaves it); `PassOn` (nothing written) for memory short.
fn factor_into<T: KernelScalar, C: Communicator>(
    comm: &C,
    uplo: Uplo,
    layout: &BlockCyclicSubmatrix,
    a: &mut Array<'_, T>,
) -> Result<Outcome, ServeError> {
    let rank = comm.rank();
    let n = layout.shape().0;
    // On the caller's grid and blocks when they can be the factorisation's own: the matrix
    // then stays where it is, or moves only within each rank.
    let plan =
        CholeskyPlan::for_layout(n, comm.size(), &lapack_params(), layout, uplo).or_serve()?;
    let mut view =
        BorrowedDistMatrixMut::new(comm, layout.clone(), a.write(layout.local_len(rank))?)
            .or_serve()?;
    match cholesky_overwrite(comm, &plan, &mut view, uplo, Par::Seq) {
        Ok(()) => Ok(Outcome::Served),
        Err(e) => not_served(e),
    }
}

/// `p?posv`'s factorisation when `sub(A)` is not the factorisation's own array: in a copy, the
/// factor kept for the solve and written over `sub(A)`'s `uplo` triangle (placing the factor
/// for the solve after the array was overwritten could be refused, and the call could then not
/// be passed on to ScaLAPACK's `p?posv`). The outcome when it stops, nothing written.
fn factor_for_solve<T: KernelScalar, C: Communicator>(
    comm: &C,
    uplo: Uplo,
    layout: &BlockCyclicSubmatrix,
    a: &mut Array<'_, T>,
) -> Result<Result<CholeskyFactor<'static, T, BlockCyclicSubmatrix>, Outcome>, ServeError> {
    let rank = comm.rank();
    let n = layout.shape().0;
    let plan =
        CholeskyPlan::for_layout(n, comm.size(), &lapack_params(), layout, uplo).or_serve()?;
    let view = BorrowedDistMatrix::new(comm, layout.clone(), a.read(layout.local_len(rank))?)
        .or_serve()?;
    let fac = match cholesky_with(comm, &plan, &view, uplo, Par::Seq) {
        Ok(fac) => fac,
        Err(e) => return not_served(e).map(Err),
    };
    let mut out =
        BorrowedDistMatrixMut::new(comm, layout.clone(), a.write(layout.local_len(rank))?)
            .or_serve()?;
    fac.write_factor(comm, &mut out).or_serve()?;
    Ok(Ok(fac))
}

/// What a factorisation's error makes of the call: `Stopped` at the first column that is not
/// positive definite (ScaLAPACK's `info`, 1-based), passed on for memory short (or NaN and
/// infinity, had they been looked for), a failure otherwise.
fn not_served(e: CholeskyError) -> Result<Outcome, ServeError> {
    match e {
        CholeskyError::NotPositiveDefinite { column } => {
            Ok(Outcome::Stopped(i32::try_from(column + 1).or_serve()?))
        }
        CholeskyError::NotFinite => Ok(Outcome::PassOn("a matrix with NaN or infinity")),
        CholeskyError::Dist(DistError::OutOfMemory { .. }) => Ok(Outcome::PassOn(NO_MEMORY)),
        e => Err(ServeError(e.to_string())),
    }
}

/// `p?potrf` on `comm`, the grid's communicator, this process at `g`.
///
/// # Collective
/// # Errors
/// A communication failure.
pub fn ppotrf<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    uplo: u8,
    op: &Operand,
    a: &mut Array<'_, T>,
) -> Result<Outcome, ServeError> {
    let local = op.chk1mat(g).or_else(|| {
        if uplo_of(uplo).is_none() {
            Some(Position::arg(1))
        } else {
            aligned_square(op, 4, 5)
        }
    });
    let agreed = agree(comm, local, &values(uplo, &[op]), &[op])?;
    if let Some(pos) = agreed.illegal {
        return Ok(Outcome::Illegal(pos));
    }
    if op.n == 0 {
        return Ok(Outcome::Served);
    }
    let layout = submatrix(g, op, &agreed.llds[0])?;
    let uplo = uplo_of(uplo).unwrap_or(Uplo::Lower);
    // A 2D grid's processes in the pipeline's order (column-major) for the lower triangle: its
    // arrays can then be the plan's own layout. (The upper triangle is factored as the lower
    // of the transpose, on the transposed grid, which BLACS's order already numbers so.)
    let (renumbered, [layout]) = column_major_if(comm, g, uplo == Uplo::Lower, [layout])?;
    factor_into(renumbered.as_ref().unwrap_or(comm), uplo, &layout, a)
}

/// The checks `p?potrs` and `p?posv` share after `CHK1MAT`; `mb_pos` numbers a block height of
/// `B` that is not `A`'s block width.
fn potrs_checks(
    uplo: u8,
    oa: &Operand,
    ob: &Operand,
    g: &BlacsGrid,
    mb_pos: Position,
) -> Option<Position> {
    if uplo_of(uplo).is_none() {
        Some(Position::arg(1))
    } else {
        aligned_square(oa, 5, 6).or_else(|| rhs_fits(oa, ob, g, 9, mb_pos))
    }
}

/// `p?potrs` on `comm`, the grid's communicator, this process at `g`.
///
/// # Collective
/// # Errors
/// A communication failure.
pub fn ppotrs<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    uplo: u8,
    ops: &[Operand; 2],
    a: &Array<'_, T>,
    b: &mut Array<'_, T>,
) -> Result<Outcome, ServeError> {
    let [oa, ob] = ops;
    let local = first([oa.chk1mat(g), ob.chk1mat(g)])
        .or_else(|| potrs_checks(uplo, oa, ob, g, Position::entry(11, 6)));
    let agreed = agree(comm, local, &values(uplo, &[oa, ob]), &[oa, ob])?;
    if let Some(pos) = agreed.illegal {
        return Ok(Outcome::Illegal(pos));
    }
    if oa.n == 0 || ob.n == 0 {
        return Ok(Outcome::Served);
    }
    if oa.desc.ctxt != ob.desc.ctxt {
        return Ok(Outcome::PassOn("right-hand sides on another context"));
    }
    let (la, lb) = (
        submatrix(g, oa, &agreed.llds[0])?,
        submatrix(g, ob, &agreed.llds[1])?,
    );
    let uplo = uplo_of(uplo).unwrap_or(Uplo::Lower);
    // The solve plans on the caller's grid itself for either triangle (not on the transposed
    // one, as `p?potrf` factors the upper), so its processes are numbered column-major for both:
    // otherwise an upper factor on a 2D grid was moved whole on every call.
    let (renumbered, [la, lb]) = column_major_if(comm, g, true, [la, lb])?;
    let comm = renumbered.as_ref().unwrap_or(comm);
    solve_with_factor(comm, uplo, (&la, a), (&lb, b))
}

/// Solves `sub(A)·X = sub(B)` in place of `sub(B)` with the Cholesky factor in the `uplo`
/// triangle of `sub(A)`.
fn solve_with_factor<T: KernelScalar, C: Communicator>(
    comm: &C,
    uplo: Uplo,
    (la, a): (&BlockCyclicSubmatrix, &Array<'_, T>),
    (lb, b): (&BlockCyclicSubmatrix, &mut Array<'_, T>),
) -> Result<Outcome, ServeError> {
    let n = la.shape().0;
    // The factor on the caller's grid and blocks whenever they can be a plan's own (read where
    // it is, or moved only within each process). Either triangle is solved with as it is, so the
    // grid is the caller's for both (`Uplo::Lower`: a plan for factoring the upper triangle
    // would take the transposed grid).
    let plan = CholeskyPlan::on_layout(n, comm.size(), &CholeskyParams::default(), la, Uplo::Lower)
        .or_serve()?;
    // Read where it is when its local arrays are the plan's tiles.
    let av =
        BorrowedDistMatrix::new(comm, la.clone(), a.read(la.local_len(comm.rank()))?).or_serve()?;
    let factor = match CholeskyFactor::from_factor(comm, &plan, &av, uplo, Par::Seq) {
        Ok(f) => f,
        Err(e) => return not_served(e),
    };
    solve_in_place(comm, lb, b, None, |bv| factor.solve(comm, bv).or_serve())?;
    Ok(Outcome::Served)
}

/// `p?posv` on `comm`: `p?potrf`, then `p?potrs` with the factor just made (in the caller's
/// array, with no copy, when it is the factorisation's own: a matrix that is not positive
/// definite then leaves it part-way, `info > 0`, as ScaLAPACK's does). As ScaLAPACK's, its own
/// checks leave `B`'s descriptor to the solve (a bad one is passed on, for ScaLAPACK to report
/// as `p?potrs`'s) and number a block height of `B` unlike `A`'s as `-1006`.
///
/// # Collective
/// # Errors
/// A communication failure.
pub fn pposv<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    uplo: u8,
    ops: &[Operand; 2],
    a: &mut Array<'_, T>,
    b: &mut Array<'_, T>,
) -> Result<Outcome, ServeError> {
    let [oa, ob] = ops;
    let local = oa
        .chk1mat(g)
        .or_else(|| potrs_checks(uplo, oa, ob, g, Position::entry(10, 6)));
    let agreed = agree(comm, local, &values(uplo, &[oa, ob]), &[oa, ob])?;
    if let Some(pos) = agreed.illegal {
        return Ok(Outcome::Illegal(pos));
    }
    let b_legal = agree(comm, ob.chk1mat(g), &[], &[])?.illegal.is_none();
    if !b_legal || oa.desc.ctxt != ob.desc.ctxt {
        return Ok(Outcome::PassOn("right-hand sides the solve would refuse"));
    }
    if oa.n == 0 {
        return Ok(Outcome::Served);
    }
    let (la, lb) = (
        submatrix(g, oa, &agreed.llds[0])?,
        submatrix(g, ob, &agreed.llds[1])?,
    );
    let uplo = uplo_of(uplo).unwrap_or(Uplo::Lower);
    let (renumbered, [la, lb]) = column_major_if(comm, g, uplo == Uplo::Lower, [la, lb])?;
    let comm = renumbered.as_ref().unwrap_or(comm);
    let n = la.shape().0;
    let plan = CholeskyPlan::for_layout(n, comm.size(), &lapack_params(), &la, uplo).or_serve()?;
    if uplo == Uplo::Lower
        && plan.grid.c == 1
        && same_local_arrays(&la, &plan.native_layout().or_serve()?)
    {
        // The caller's array is the factorisation's own: factored in it, then solved reading
        // the factor there. Nothing the solve needs can be refused once the array is
        // overwritten (no copy of the factor is made).
        return match factor_into(comm, uplo, &la, a)? {
            Outcome::Served if ob.n > 0 => solve_with_factor(comm, uplo, (&la, a), (&lb, b)),
            outcome => Ok(outcome),
        };
    }
    let factor = match factor_for_solve(comm, uplo, &la, a)? {
        Ok(f) => f,
        Err(outcome) => return Ok(outcome),
    };
    if ob.n > 0 {
        solve_in_place(comm, &lb, b, None, |bv| factor.solve(comm, bv).or_serve())?;
    }
    Ok(Outcome::Served)
}
