//! What every routine shares: the caller's local arrays ([`Array`]), the outcome of a call
//! ([`Outcome`]), the global agreement on the arguments (ScaLAPACK's `PCHK1MAT`), and the
//! operand's layout and views.

use crate::args::{first, BlacsGrid, Operand, Position};
use redblue_comm::Communicator;
use redblue_core::{Op, Scalar};
use redblue_dist::{
    transform, BlockCyclic, BlockCyclicSubmatrix, BorrowedDistMatrix, BorrowedDistMatrixMut,
    GridOrder, Layout, OwnedDistMatrix, RowPermuted,
};
use std::fmt;
use std::marker::PhantomData;

/// What a call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Served by redblue (`info = 0`).
    Served,
    /// An illegal argument, the same on every rank: nothing was read or written. The caller
    /// reports it as ScaLAPACK does (`pxerbla` or `PB_Cabort`) with `info = pos.info()`.
    Illegal(Position),
    /// Not served here, for the reason given, the same on every rank; nothing was written.
    /// The caller passes the call on to ScaLAPACK.
    PassOn(&'static str),
    /// Served, and the factorisation stopped at a column, the same on every rank: the caller
    /// sets `info` to this (`> 0`, the column within `sub(A)`, 1-based, as ScaLAPACK numbers
    /// it); the array is left part-way, as ScaLAPACK's is.
    Stopped(i32),
}

/// A failure inside a served call (communication, or an internal inconsistency): the job
/// cannot go on.
#[derive(Debug)]
pub struct ServeError(pub String);

impl fmt::Display for ServeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ServeError {}

/// `Result<_, E>` to `Result<_, ServeError>`.
pub trait OrServe<V> {
    /// The error's message as a [`ServeError`].
    fn or_serve(self) -> Result<V, ServeError>;
}

impl<V, E: fmt::Display> OrServe<V> for Result<V, E> {
    fn or_serve(self) -> Result<V, ServeError> {
        self.map_err(|e| ServeError(e.to_string()))
    }
}

/// One of the caller's local arrays, made a slice once the call knows how much of it is used
/// (never more than ScaLAPACK documents: `LLD × LOCc(JA+N−1)` for a matrix).
pub struct Array<'a, T> {
    ptr: *mut T,
    /// Known length (tests); `None` for a raw pointer, trusted as ScaLAPACK's callers are.
    len: Option<usize>,
    writable: bool,
    _life: PhantomData<&'a mut [T]>,
}

impl<'a, T> Array<'a, T> {
    /// A local array the call may write.
    pub fn new(s: &'a mut [T]) -> Self {
        Array {
            ptr: s.as_mut_ptr(),
            len: Some(s.len()),
            writable: true,
            _life: PhantomData,
        }
    }

    /// A local array the call only reads.
    pub fn read_only(s: &'a [T]) -> Self {
        Array {
            ptr: s.as_ptr().cast_mut(),
            len: Some(s.len()),
            writable: false,
            _life: PhantomData,
        }
    }

    /// The caller's array at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point at the local array ScaLAPACK's documentation asks for (or be
    /// unused: a process holding no element of the operand), valid for reads, and for writes
    /// if the routine writes the operand, for `'a`; operands that are written must not overlap
    /// any other operand.
    pub unsafe fn from_raw(ptr: *mut T, writable: bool) -> Self {
        Array {
            ptr,
            len: None,
            writable,
            _life: PhantomData,
        }
    }

    fn check(&self, len: usize) -> Result<(), ServeError> {
        match self.len {
            Some(have) if have < len => Err(ServeError(format!(
                "a local array of {have} elements where {len} are needed"
            ))),
            _ if len > 0 && self.ptr.is_null() => Err(ServeError(
                "a null local array where elements are needed".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The first `len` elements, to read.
    pub fn read(&self, len: usize) -> Result<&'a [T], ServeError> {
        self.check(len)?;
        if len == 0 {
            return Ok(&[]);
        }
        // SAFETY: `ptr` is valid for `len` reads (checked against the slice's length, or the
        // raw constructor's contract).
        Ok(unsafe { std::slice::from_raw_parts(self.ptr, len) })
    }

    /// The first `len` elements, to write. The slices of earlier [`Array::read`] calls must
    /// no longer be in use.
    pub fn write(&mut self, len: usize) -> Result<&'a mut [T], ServeError> {
        if !self.writable {
            return Err(ServeError("a read-only local array written".into()));
        }
        self.check(len)?;
        if len == 0 {
            return Ok(&mut []);
        }
        // SAFETY: `ptr` is valid for `len` writes (checked, or the raw constructor's contract),
        // and `&mut self` keeps two writable slices from living at once.
        Ok(unsafe { std::slice::from_raw_parts_mut(self.ptr, len) })
    }
}

/// The operands' local facts every rank needs: whether the arguments are legal (ScaLAPACK's
/// `PCHK1MAT`: this rank's own verdict, and its global values compared with rank 0's — grid
/// position `(0, 0)`), and every rank's leading dimensions.
pub struct Agreed {
    /// The first illegal argument on any rank.
    pub illegal: Option<Position>,
    /// `llds[k][r]`: rank `r`'s leading dimension of operand `k`.
    pub llds: Vec<Vec<usize>>,
}

/// One all-gather: this rank's verdict `local`, its values to compare (`values`), and its
/// leading dimensions of `operands`.
///
/// # Collective
/// # Errors
/// A communication failure.
pub fn agree<C: Communicator>(
    comm: &C,
    local: Option<Position>,
    values: &[(i32, Position)],
    operands: &[&Operand],
) -> Result<Agreed, ServeError> {
    let none = i64::MAX;
    let mut mine = vec![local.map_or(none, |p| i64::from(p.0))];
    mine.extend(values.iter().map(|&(v, _)| i64::from(v)));
    mine.extend(operands.iter().map(|o| i64::from(o.desc.lld)));
    let width = mine.len();
    let mut all = vec![0i64; width * comm.size()];
    comm.all_gather(&mine, &mut all).or_serve()?;
    let rows: Vec<&[i64]> = all.chunks(width).collect();
    let mut illegal: Option<Position> = None;
    for row in &rows {
        let own = (row[0] != none).then(|| Position(row[0] as i32));
        let differs = values
            .iter()
            .enumerate()
            .filter(|&(k, _)| row[1 + k] != rows[0][1 + k])
            .map(|(_, &(_, pos))| Some(pos));
        illegal = first([illegal, own, first(differs)]);
    }
    let llds = (0..operands.len())
        .map(|k| {
            rows.iter()
                .map(|row| usize::try_from(row[1 + values.len() + k]).unwrap_or(0))
                .collect()
        })
        .collect();
    Ok(Agreed { illegal, llds })
}

/// The submatrix an operand names, in its caller's local arrays (leading dimensions `llds`,
/// one per rank of the grid, row-major as BLACS numbers its grid communicator).
///
/// # Errors
/// A descriptor the checks should have refused.
pub fn submatrix(
    g: &BlacsGrid,
    op: &Operand,
    llds: &[usize],
) -> Result<BlockCyclicSubmatrix, ServeError> {
    let d = &op.desc;
    let us = |v: i32| usize::try_from(v).map_err(|_| ServeError(format!("a negative {v}")));
    let parent = BlockCyclic::new(us(d.m)?, us(d.n)?, us(d.mb)?, us(d.nb)?, g.nprow, g.npcol)
        .and_then(|l| l.with_source(us(d.rsrc).unwrap_or(0), us(d.csrc).unwrap_or(0)))
        .or_serve()?;
    let (i, j) = (us(op.ia - 1)?, us(op.ja - 1)?);
    BlockCyclicSubmatrix::new(parent, i..i + us(op.m)?, j..j + us(op.n)?, llds.to_vec()).or_serve()
}

/// A factorisation's communicator and arrays on grid `g`: on a 2D grid (when `wanted`), its
/// processes renumbered column-major — BLACS numbers them row-major while the pipeline deals
/// its tiles column-major, and in that order the caller's arrays can be the factorisation's own
/// layout (nothing moves between processes; Cholesky works in the array itself) — as a split
/// of `comm` (no data moves), returned with `layouts` described in that order ([`column_major`]);
/// otherwise no communicator of its own and `layouts` as they are. Use it as
/// `let comm = renumbered.as_ref().unwrap_or(comm)`.
///
/// # Collective
/// # Errors
/// A communication failure.
pub fn column_major_if<C: Communicator, const N: usize>(
    comm: &C,
    g: &BlacsGrid,
    wanted: bool,
    layouts: [BlockCyclicSubmatrix; N],
) -> Result<(Option<C>, [BlockCyclicSubmatrix; N]), ServeError> {
    if !wanted || g.nprow == 1 || g.npcol == 1 {
        return Ok((None, layouts));
    }
    let renumbered = comm.split(0, g.mycol * g.nprow + g.myrow).or_serve()?;
    let described: Vec<BlockCyclicSubmatrix> = layouts
        .iter()
        .map(|l| column_major(g, l))
        .collect::<Result<_, _>>()?;
    let described = described
        .try_into()
        .map_err(|_| ServeError("layouts lost on the way".into()))?;
    Ok((Some(renumbered), described))
}

/// `layout`, an array on grid `g` with its processes numbered row-major (BLACS's order), with
/// them numbered column-major, as on [`column_major_if`]'s communicator: the same elements in the same
/// local arrays, each process's leading dimension going with it.
///
/// # Errors
/// None for a layout of `g`.
pub fn column_major(
    g: &BlacsGrid,
    layout: &BlockCyclicSubmatrix,
) -> Result<BlockCyclicSubmatrix, ServeError> {
    let parent = layout.parent().clone().with_order(GridOrder::ColMajor);
    let llds = (0..g.nprow * g.npcol)
        .map(|k| layout.lld((k % g.nprow) * g.npcol + k / g.nprow))
        .collect();
    let (rows, cols) = layout.ranges();
    BlockCyclicSubmatrix::new(parent, rows, cols, llds).or_serve()
}

/// This rank's elements of `layout` (global indices and local positions), in its blocks'
/// order.
pub fn local_elements(
    layout: &impl Layout,
    rank: usize,
) -> impl Iterator<Item = (usize, usize, usize)> {
    layout.blocks(rank).into_iter().flat_map(|b| {
        let (rows, cols, offset, ld) = (b.rows, b.cols, b.offset, b.ld);
        cols.clone().enumerate().flat_map(move |(jj, j)| {
            rows.clone()
                .enumerate()
                .map(move |(ii, i)| (i, j, offset + ii + jj * ld))
        })
    })
}

/// ScaLAPACK's transpose letter as an [`Op`] (`'C'` is the transpose for real scalars, as in
/// BLAS), or `None` for an illegal one.
pub fn op_of(c: u8) -> Option<Op> {
    match c.to_ascii_uppercase() {
        b'N' => Some(Op::NoTrans),
        b'T' => Some(Op::Trans),
        b'C' => Some(Op::ConjTrans),
        _ => None,
    }
}

/// ScaLAPACK's triangle letter, or `None` for an illegal one.
pub fn uplo_of(c: u8) -> Option<redblue_core::Uplo> {
    match c.to_ascii_uppercase() {
        b'L' => Some(redblue_core::Uplo::Lower),
        b'U' => Some(redblue_core::Uplo::Upper),
        _ => None,
    }
}

/// Solves in the caller's `B` (layout `lb`): `solve` gives `X` from `B`, and `X` is written
/// back over `B` — row `i` of `X` to row `unpermute[i]` when given.
///
/// # Collective
/// # Errors
/// What `solve` returns; a communication failure.
pub fn solve_in_place<T: Scalar, C: Communicator>(
    comm: &C,
    lb: &BlockCyclicSubmatrix,
    b: &mut Array<'_, T>,
    unpermute: Option<Vec<usize>>,
    solve: impl FnOnce(
        &BorrowedDistMatrix<'_, T, BlockCyclicSubmatrix>,
    ) -> Result<OwnedDistMatrix<T, BlockCyclicSubmatrix>, ServeError>,
) -> Result<(), ServeError> {
    let rank = comm.rank();
    let x =
        solve(&BorrowedDistMatrix::new(comm, lb.clone(), b.read(lb.local_len(rank))?).or_serve()?)?;
    let local = b.write(lb.local_len(rank))?;
    match unpermute {
        None => {
            let mut out = BorrowedDistMatrixMut::new(comm, lb.clone(), local).or_serve()?;
            transform(comm, T::one(), &x, Op::NoTrans, T::zero(), &mut out).or_serve()
        }
        Some(perm) => {
            let rows = RowPermuted::new(lb.clone(), perm).or_serve()?;
            let mut out = BorrowedDistMatrixMut::new(comm, rows, local).or_serve()?;
            transform(comm, T::one(), &x, Op::NoTrans, T::zero(), &mut out).or_serve()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_column_major_renumbering_keeps_every_element_on_its_process_and_place() {
        let (nprow, npcol) = (2, 3);
        let parent = BlockCyclic::new(23, 19, 3, 2, nprow, npcol)
            .unwrap()
            .with_source(1, 2)
            .unwrap();
        let llds: Vec<usize> = (0..6).map(|r| parent.local_shape(r).0 + r).collect();
        let layout = BlockCyclicSubmatrix::new(parent, 2..21, 1..18, llds).unwrap();
        for r in 0..nprow * npcol {
            let g = BlacsGrid {
                nprow,
                npcol,
                myrow: r / npcol,
                mycol: r % npcol,
            };
            let col = column_major(&g, &layout).unwrap();
            // BLACS's rank `r` is rank `c·nprow + r` of the renumbered communicator.
            let renumbered = g.mycol * nprow + g.myrow;
            assert_eq!(col.local_len(renumbered), layout.local_len(r));
            for (i, j, pos) in local_elements(&layout, r) {
                assert_eq!(col.to_local(i, j), (renumbered, pos), "({i}, {j})");
            }
        }
    }
}
