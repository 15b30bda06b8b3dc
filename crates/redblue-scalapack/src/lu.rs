//! `p?getrf`, `p?getrs` and `p?gesv` on redblue's LU: the factors left in the caller's array in
//! LAPACK's row order with ScaLAPACK's distributed `IPIV`, and solves from factors found there.

use crate::args::{first, solve_operands, BlacsGrid, Descriptor, Operand, Position};
use crate::common::{
    agree, column_major_if, op_of, solve_in_place, submatrix, Array, OrServe, Outcome, ServeError,
};
use redblue_comm::Communicator;
use redblue_core::Op;
use redblue_dist::{
    same_local_arrays, BlockCyclicSubmatrix, BorrowedDistMatrix, BorrowedDistMatrixMut, DistError,
    Layout,
};
use redblue_kernels::{KernelScalar, Par};
use redblue_lu::{lu_with, LuError, LuFactors, LuParams, LuPlan};

/// Why a factorisation is passed on when redblue's working copies do not fit (agreed by every
/// rank before any data moves).
pub(crate) const NO_MEMORY: &str = "not enough memory for redblue's working copies";

/// A square operand's checks shared by the LU and Cholesky routines after `CHK1MAT`: `ia` and
/// `ja` start blocks (`ia_pos`, `ja_pos`), and blocks are square.
pub(crate) fn aligned_square(a: &Operand, ia_pos: i32, ja_pos: i32) -> Option<Position> {
    let (rows, cols) = a.aligned();
    if !rows {
        Some(Position::arg(ia_pos))
    } else if !cols {
        Some(Position::arg(ja_pos))
    } else if a.desc.mb != a.desc.nb {
        Some(Position::entry(a.pos.2, 6))
    } else {
        None
    }
}

/// The right-hand sides' checks of `p?getrs`, `p?potrs` and `p?gesv`: `B` starts a block row on
/// `A`'s process row (`row_pos`) and its blocks are `A`'s height (`mb_pos`).
pub(crate) fn rhs_fits(
    a: &Operand,
    b: &Operand,
    g: &BlacsGrid,
    row_pos: i32,
    mb_pos: Position,
) -> Option<Position> {
    if !b.aligned().0 || b.first_prow(g) != a.first_prow(g) {
        Some(Position::arg(row_pos))
    } else if b.desc.mb != a.desc.nb {
        Some(mb_pos)
    } else {
        None
    }
}

/// `p?getrf`'s arguments: `M`, `N`, `IA`, `JA`, `DESCA`.
pub fn getrf_operand(m: i32, n: i32, ia: i32, ja: i32, desc: Descriptor) -> Operand {
    Operand {
        m,
        n,
        ia,
        ja,
        desc,
        pos: (1, 2, 6),
    }
}

/// Writes `ipiv` (0-based interchanges of the submatrix's rows, LAPACK's) into the caller's
/// `IPIV` as ScaLAPACK does: the 1-based row of `A` each row `ia + k` was interchanged with,
/// on the process row holding that row, in every process column.
fn write_ipiv(g: &BlacsGrid, a: &Operand, ipiv_rel: &[usize], ipiv: &mut [i32]) {
    let d = &a.desc;
    let (mb, nprow) = (d.mb as usize, g.nprow);
    for (k, &p) in ipiv_rel.iter().enumerate() {
        let row = a.ia as usize - 1 + k;
        let prow = (row / mb + d.rsrc as usize) % nprow;
        if prow == g.myrow {
            let li = (row / mb / nprow) * mb + row % mb;
            ipiv[li] = a.ia + p as i32;
        }
    }
}

/// The permutation (row `i` of `P·A` is row `perm[i]` of `A`) of the caller's `IPIV` for the
/// `n` rows of `a`: each rank reads the entries of its rows (process column 0's copy), and an
/// all-gather gives all; `None` if they are not a sequence of interchanges within the rows.
fn read_ipiv<C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    a: &Operand,
    ipiv: &[i32],
) -> Result<Option<Vec<usize>>, ServeError> {
    let d = &a.desc;
    let n = a.n as usize;
    let (mb, nprow) = (d.mb as usize, g.nprow);
    let mut mine = Vec::new();
    if g.mycol == 0 {
        for k in 0..n {
            let row = a.ia as usize - 1 + k;
            if (row / mb + d.rsrc as usize) % nprow == g.myrow {
                let li = (row / mb / nprow) * mb + row % mb;
                mine.extend([k as i64, i64::from(ipiv[li])]);
            }
        }
    }
    let mut counts = vec![0usize; comm.size()];
    comm.all_gather(&[mine.len()], &mut counts).or_serve()?;
    let mut all = vec![0i64; counts.iter().sum()];
    comm.all_gather_v(&mine, &mut all, &counts).or_serve()?;
    let mut rel = vec![usize::MAX; n];
    for pair in all.chunks(2) {
        rel[pair[0] as usize] = usize::try_from(pair[1] - i64::from(a.ia)).unwrap_or(usize::MAX);
    }
    let mut perm: Vec<usize> = (0..n).collect();
    for (k, &p) in rel.iter().enumerate() {
        if p < k || p >= n {
            return Ok(None);
        }
        perm.swap(k, p);
    }
    Ok(Some(perm))
}

/// Factors `sub(A)` with redblue's LU and leaves `L\U` in its rows of `P·A` in the caller's
/// array, and the interchanges in `IPIV`; `PassOn` for a singular or non-finite matrix
/// (ScaLAPACK then defines what is left), nothing written.
fn factor_into<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    op: &Operand,
    layout: &BlockCyclicSubmatrix,
    a: &mut Array<'_, T>,
    ipiv: &mut [i32],
) -> Result<Result<LuFactors<'static, T, BlockCyclicSubmatrix>, Outcome>, ServeError> {
    let rank = comm.rank();
    let fac = {
        let view = BorrowedDistMatrix::new(comm, layout.clone(), a.read(layout.local_len(rank))?)
            .or_serve()?;
        // On the caller's grid and blocks when they can be the factorisation's own: the
        // matrix then moves only within each rank.
        let (m, n) = layout.shape();
        let planned = LuPlan::for_layout(m, n, comm.size(), &LuParams::default(), layout);
        let done = planned.and_then(|plan| lu_with(comm, &plan, &view, Par::Seq));
        match done {
            Ok(fac) => fac,
            Err(LuError::Singular { .. }) => return Ok(Err(Outcome::PassOn("a singular matrix"))),
            Err(LuError::NotFinite) => {
                return Ok(Err(Outcome::PassOn("a matrix with NaN or infinity")))
            }
            Err(LuError::Dist(DistError::OutOfMemory { .. })) => {
                return Ok(Err(Outcome::PassOn(NO_MEMORY)))
            }
            Err(e) => return Err(ServeError(e.to_string())),
        }
    };
    let mut out =
        BorrowedDistMatrixMut::new(comm, layout.clone(), a.write(layout.local_len(rank))?)
            .or_serve()?;
    fac.write_factors(comm, &mut out).or_serve()?;
    write_ipiv(g, op, &fac.ipiv(), ipiv);
    Ok(Ok(fac))
}

/// `p?getrf` on `comm`, the grid's communicator, this process at `g`; `ipiv` is this process's
/// `IPIV` (at least `LOCr(M_A) + MB_A` entries).
///
/// # Collective
/// # Errors
/// A communication failure.
pub fn pgetrf<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    op: &Operand,
    a: &mut Array<'_, T>,
    ipiv: &mut [i32],
) -> Result<Outcome, ServeError> {
    let local = op.chk1mat(g).or_else(|| aligned_square(op, 4, 5));
    let agreed = agree(comm, local, &op.global_values(), &[op])?;
    if let Some(pos) = agreed.illegal {
        return Ok(Outcome::Illegal(pos));
    }
    if op.desc.m == 1 {
        if let Some(first) = ipiv.first_mut() {
            *first = 1;
        }
        return Ok(Outcome::Served);
    }
    if op.m == 0 || op.n == 0 {
        return Ok(Outcome::Served);
    }
    let layout = submatrix(g, op, &agreed.llds[0])?;
    // A 2D grid's processes in the pipeline's order (column-major): its arrays can then be the
    // plan's own layout.
    let (renumbered, [layout]) = column_major_if(comm, g, true, [layout])?;
    let comm = renumbered.as_ref().unwrap_or(comm);
    Ok(match factor_into(comm, g, op, &layout, a, ipiv)? {
        Ok(_) => Outcome::Served,
        Err(pass) => pass,
    })
}

/// `p?getrs`'s operands: `A` (`N × N` at `IA`, `JA`) and `B` (`N × NRHS` at `IB`, `JB`).
pub fn getrs_operands(
    n: i32,
    nrhs: i32,
    a: (i32, i32, Descriptor),
    b: (i32, i32, Descriptor),
) -> [Operand; 2] {
    solve_operands(n, nrhs, a, b, (2, 3, 7, 12))
}

/// `p?getrs` on `comm`, the grid's communicator, this process at `g`.
///
/// # Collective
/// # Errors
/// A communication failure.
#[allow(clippy::too_many_arguments)]
pub fn pgetrs<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    trans: u8,
    ops: &[Operand; 2],
    a: &Array<'_, T>,
    ipiv: &[i32],
    b: &mut Array<'_, T>,
) -> Result<Outcome, ServeError> {
    let [oa, ob] = ops;
    let local = first([oa.chk1mat(g), ob.chk1mat(g)]).or_else(|| {
        if op_of(trans).is_none() {
            Some(Position::arg(1))
        } else {
            aligned_square(oa, 5, 6)
                .or_else(|| rhs_fits(oa, ob, g, 10, Position::entry(12, 6)))
                .or_else(|| (ob.desc.ctxt != oa.desc.ctxt).then(|| Position::entry(12, 2)))
        }
    });
    let mut values = vec![(i32::from(trans.to_ascii_uppercase()), Position::arg(1))];
    values.extend(oa.global_values());
    values.extend(ob.global_values());
    let agreed = agree(comm, local, &values, &[oa, ob])?;
    if let Some(pos) = agreed.illegal {
        return Ok(Outcome::Illegal(pos));
    }
    if oa.n == 0 || ob.n == 0 {
        return Ok(Outcome::Served);
    }
    let Some(perm) = read_ipiv(comm, g, oa, ipiv)? else {
        return Ok(Outcome::PassOn(
            "IPIV that is not a sequence of interchanges",
        ));
    };
    let (la, lb) = (
        submatrix(g, oa, &agreed.llds[0])?,
        submatrix(g, ob, &agreed.llds[1])?,
    );
    let (renumbered, [la, lb]) = column_major_if(comm, g, true, [la, lb])?;
    let comm = renumbered.as_ref().unwrap_or(comm);
    let n = oa.n as usize;
    let params = LuParams::default();
    // The factors on the caller's grid and blocks whenever they can be a plan's own (read where
    // they are, or moved only within each process), for either `TRANS`: a transposed solve
    // reads them where they are too.
    let plan = LuPlan::on_layout(n, n, comm.size(), &params, &la).or_serve()?;
    let av =
        BorrowedDistMatrix::new(comm, la.clone(), a.read(la.local_len(comm.rank()))?).or_serve()?;
    let op = op_of(trans).unwrap_or(Op::NoTrans);
    Ok(
        match solve_with_packed(comm, &plan, &av, (&lb, b), op, perm)? {
            Ok(()) => Outcome::Served,
            Err(pass) => pass,
        },
    )
}

/// Solves `A·X = B` in the caller's `B` (layout `lb`) with `L\U` of `P·A` in `packed` taken as
/// it is (no rows of the factors moved; read where they are when the array is the plan's
/// tiles' own): `(L·U)·X = P·B`, row `i` of `P·B` being row `perm[i]` of `B`. A refusal of
/// the factors' memory (the same on every rank) is the outcome to pass the call on with,
/// nothing written.
///
/// # Collective
fn solve_with_packed<T: KernelScalar, C: Communicator>(
    comm: &C,
    plan: &LuPlan,
    packed: &BorrowedDistMatrix<'_, T, BlockCyclicSubmatrix>,
    (lb, b): (&BlockCyclicSubmatrix, &mut Array<'_, T>),
    op: Op,
    perm: Vec<usize>,
) -> Result<Result<(), Outcome>, ServeError> {
    let identity: Vec<usize> = (0..plan.n).collect();
    let factors = match or_pass_on(LuFactors::from_packed(
        comm,
        plan,
        packed,
        &identity,
        Par::Seq,
    ))? {
        Ok(f) => f,
        Err(pass) => return Ok(Err(pass)),
    };
    solve_in_place(comm, lb, b, None, |bv| {
        factors
            .solve_to(comm, bv, op, Some(&perm), lb.clone())
            .or_serve()
    })?;
    Ok(Ok(()))
}

/// A result of building factors: a refusal of their memory (the same on every rank) passes
/// the call on; another error ends it.
fn or_pass_on<V>(r: Result<V, LuError>) -> Result<Result<V, Outcome>, ServeError> {
    match r {
        Ok(v) => Ok(Ok(v)),
        Err(LuError::Dist(DistError::OutOfMemory { .. })) => Ok(Err(Outcome::PassOn(NO_MEMORY))),
        Err(e) => Err(ServeError(e.to_string())),
    }
}

/// `p?gesv`'s operands: `A` (`N × N`) and `B` (`N × NRHS`).
pub fn gesv_operands(
    n: i32,
    nrhs: i32,
    a: (i32, i32, Descriptor),
    b: (i32, i32, Descriptor),
) -> [Operand; 2] {
    solve_operands(n, nrhs, a, b, (1, 2, 6, 11))
}

/// `p?gesv` on `comm`: `p?getrf`, then `p?getrs` with the factors just made.
///
/// # Collective
/// # Errors
/// A communication failure.
pub fn pgesv<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    ops: &[Operand; 2],
    a: &mut Array<'_, T>,
    ipiv: &mut [i32],
    b: &mut Array<'_, T>,
) -> Result<Outcome, ServeError> {
    let [oa, ob] = ops;
    let local = first([oa.chk1mat(g), ob.chk1mat(g)]).or_else(|| {
        aligned_square(oa, 4, 5)
            .or_else(|| rhs_fits(oa, ob, g, 9, Position::entry(11, 6)))
            .or_else(|| (ob.desc.ctxt != oa.desc.ctxt).then(|| Position::entry(11, 2)))
    });
    let mut values = oa.global_values().to_vec();
    values.extend(ob.global_values());
    let agreed = agree(comm, local, &values, &[oa, ob])?;
    if let Some(pos) = agreed.illegal {
        return Ok(Outcome::Illegal(pos));
    }
    if oa.n == 0 {
        return Ok(Outcome::Served);
    }
    if oa.desc.m == 1 {
        return Ok(Outcome::PassOn("a matrix of one row"));
    }
    let (la, lb) = (
        submatrix(g, oa, &agreed.llds[0])?,
        submatrix(g, ob, &agreed.llds[1])?,
    );
    let (renumbered, [la, lb]) = column_major_if(comm, g, true, [la, lb])?;
    let comm = renumbered.as_ref().unwrap_or(comm);
    let factors = match factor_into(comm, g, oa, &la, a, ipiv)? {
        Ok(f) => f,
        Err(pass) => return Ok(pass),
    };
    if ob.n == 0 {
        return Ok(Outcome::Served);
    }
    // `L\U` of `P·A` is now in the caller's array: when that array is the tiles' own, the
    // solve reads it there, as `p?getrs_` does (the factors' own tiles hold their rows in the
    // order of the interchanges, and would have them sorted first).
    let n = oa.n as usize;
    let plan = LuPlan::for_layout(n, n, comm.size(), &LuParams::default(), &la).or_serve()?;
    if same_local_arrays(&la, &plan.native_layout().or_serve()?) {
        let perm = factors.perm().to_vec();
        let rank = comm.rank();
        let av =
            BorrowedDistMatrix::new(comm, la.clone(), a.read(la.local_len(rank))?).or_serve()?;
        if solve_with_packed(comm, &plan, &av, (&lb, b), Op::NoTrans, perm)?.is_ok() {
            return Ok(Outcome::Served);
        }
    }
    solve_in_place(comm, &lb, b, None, |bv| factors.solve(comm, bv).or_serve())?;
    Ok(Outcome::Served)
}
