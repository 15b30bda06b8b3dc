//! The parallel left-looking out-of-core LU (seed 003's hybrid, digest §4.7, on a `P × 1`
//! grid): the rows of every panel dealt to the ranks in blocks of `b`, cyclically
//! ([`RowCyclic`]); left-looking across panels with the disk copy kept pivoted, each rank
//! reading and writing only its own rows — of one shared file, or of a file of its own
//! ([`RankFile`], the seed's shared and distributed files); inside a panel (the seed's
//! superblock), redblue's distributed LU of the tall panel ([`redblue_lu::lu_with`], on the grid
//! its planner chooses), or for an exactly singular panel a right-looking blocked LU with
//! partial pivoting over the ranks ([`getrf_rows`], ScaLAPACK's `P_GETRF` on a `P × 1` grid).
//!
//! Each rank reads and writes exactly its rows of what the sequential [`crate::lu_left_pivoted`]
//! reads and writes, so the ranks' counts add up to [`crate::left_pivoted_io`]. The words the
//! ranks exchange: each step, the interchanges (rows sent to their new owners), the diagonal
//! blocks `T₀` and rows `C₀` of the updates (gathered by every rank, which solves `T₀⁻¹·C₀`
//! itself: seed 003 found the TRSM parallelises poorly), and inside the panel, the words of
//! redblue's LU of it (its exact model, `redblue_lu::LuPlan::rank_costs_with`, plus the moves to
//! and from its layout).
//!
//! A rank's failed read or write is agreed before the next exchange ([`agree`]): every rank
//! stops with that rank's error, none waits for it.

use crate::lu::{lu_flops, OocLu};
use crate::{DiskMatrix, OocError};
use redblue_comm::{CommError, Communicator};
use redblue_core::{Diag, Op, RealScalar, Scalar, Side, Uplo};
use redblue_kernels::{gemm, trsm, KernelScalar, MatMut, MatRef, Par};
use std::ops::Range;

mod progress;
use progress::inputs_fingerprint;
pub use progress::{agree, RanksProgress};

/// The code of the LU over ranks in a progress record.
pub const RANKS_VARIANT: u32 = 4;

/// The rows' block whose elements fill a page (4096 bytes) of a column: with it, and a shared
/// file's columns a whole number of pages long, no two ranks write the same page, and each
/// write is a page or more. (Measured on two ranks and a shared file of order 8192: with blocks
/// of 64 `f64` rows, 512 bytes, each rank spent 18 s in its writes of a 41 s run; with blocks of
/// 512 rows, 2.8 s of a 23 s run, as with a file per rank.)
pub fn page_block<T>() -> usize {
    (4096 / std::mem::size_of::<T>().max(1)).max(1)
}

/// Rows `0..m` dealt to `p` ranks in blocks of `b` rows, cyclically: block `β` to rank
/// `β mod p` (a `P × 1` block-cyclic grid). A rank keeps its rows in global order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowCyclic {
    /// The rows.
    pub m: usize,
    /// The block size.
    pub b: usize,
    /// The ranks.
    pub p: usize,
}

impl RowCyclic {
    /// The rank holding global row `i`.
    pub fn owner(&self, i: usize) -> usize {
        (i / self.b) % self.p
    }

    /// Row `i`'s index among its owner's rows.
    pub fn local(&self, i: usize) -> usize {
        (i / (self.b * self.p)) * self.b + i % self.b
    }

    /// The global index of rank `rank`'s `l`-th row.
    pub fn global(&self, rank: usize, l: usize) -> usize {
        (l / self.b) * self.b * self.p + rank * self.b + l % self.b
    }

    /// How many of the rows `0..g` rank `rank` holds (its rows from global `g` on start at
    /// this local index).
    pub fn rows_below(&self, rank: usize, g: usize) -> usize {
        let (full, rest) = (g / (self.b * self.p), g % (self.b * self.p));
        full * self.b + rest.saturating_sub(rank * self.b).min(self.b)
    }

    /// How many rows rank `rank` holds.
    pub fn local_rows(&self, rank: usize) -> usize {
        self.rows_below(rank, self.m)
    }
}

fn comm_error(e: CommError) -> OocError {
    OocError::Invalid(format!("out-of-core LU over ranks: {e}"))
}

fn kernel_error(e: redblue_kernels::KernelError) -> OocError {
    OocError::Invalid(e.to_string())
}

/// A rank's rows `from..` of a panel of `w` columns: `lay`'s rows of it, column-major.
struct Rows<'a, T> {
    lay: RowCyclic,
    rank: usize,
    /// The first global row.
    from: usize,
    w: usize,
    data: &'a mut [T],
}

impl<T: KernelScalar> Rows<'_, T> {
    /// Local rows held (the leading dimension).
    fn h(&self) -> usize {
        self.lay.local_rows(self.rank) - self.lay.rows_below(self.rank, self.from)
    }

    /// The local index (in `data`) of this rank's first row at or after global `g`.
    fn at(&self, g: usize) -> usize {
        self.lay.rows_below(self.rank, g.max(self.from)) - self.lay.rows_below(self.rank, self.from)
    }

    /// The global row of local index `l`.
    fn global(&self, l: usize) -> usize {
        self.lay
            .global(self.rank, l + self.lay.rows_below(self.rank, self.from))
    }

    /// Every rank gets the rows `rows` (columns `cols`) of the panel, `rows.len() × cols.len()`
    /// column-major.
    fn gather<C: Communicator>(
        &self,
        comm: &C,
        rows: Range<usize>,
        cols: Range<usize>,
    ) -> Result<Vec<T>, OocError> {
        let (h, nc) = (self.h(), cols.len());
        let mine: Vec<T> = (self.at(rows.start)..self.at(rows.end))
            .flat_map(|l| cols.clone().map(move |c| self.data[c * h + l]))
            .collect();
        let counts: Vec<usize> = (0..self.lay.p)
            .map(|r| {
                let below = |g: usize| self.lay.rows_below(r, g);
                (below(rows.end) - below(rows.start)) * nc
            })
            .collect();
        let mut all = vec![T::zero(); rows.len() * nc];
        comm.all_gather_v(&mine, &mut all, &counts)
            .map_err(comm_error)?;
        // Rank r's rows in global order, each row's columns together.
        let mut out = vec![T::zero(); rows.len() * nc];
        let mut at = 0;
        for r in 0..self.lay.p {
            let first = self.lay.rows_below(r, rows.start);
            for l in first..self.lay.rows_below(r, rows.end) {
                let g = self.lay.global(r, l) - rows.start;
                for c in 0..nc {
                    out[c * rows.len() + g] = all[at + c];
                }
                at += nc;
            }
        }
        Ok(out)
    }

    /// Sets this rank's rows among `rows` (columns `cols`) from `values` (as [`Rows::gather`]
    /// returns them).
    fn scatter(&mut self, rows: Range<usize>, cols: Range<usize>, values: &[T]) {
        let h = self.h();
        for l in self.at(rows.start)..self.at(rows.end) {
            let g = self.global(l) - rows.start;
            for (jj, c) in cols.clone().enumerate() {
                self.data[c * h + l] = values[jj * rows.len() + g];
            }
        }
    }

    /// Rows `from..` permuted: new row `from + t` is old row `from + perm[t]`, rows sent to
    /// their new owners in one exchange (each rank knows what it will receive and in which
    /// order, so only values travel).
    fn permute<C: Communicator>(
        &mut self,
        comm: &C,
        from: usize,
        perm: &[usize],
    ) -> Result<(), OocError> {
        let (lay, me, w, h) = (self.lay, self.rank, self.w, self.h());
        let (moved, sources) = moved_rows_of(perm);
        // Every moved row: (its source global row, its destination global row).
        let moves: Vec<(usize, usize)> = sources
            .iter()
            .zip(&moved)
            .map(|(&s, &t)| (from + s, from + t))
            .collect();
        let mut order = moves.clone();
        order.sort_unstable();
        let mut send = Vec::new();
        let mut send_counts = vec![0; lay.p];
        let mut recv_counts = vec![0; lay.p];
        for d in 0..lay.p {
            for &(s, _) in order
                .iter()
                .filter(|&&(s, t)| lay.owner(t) == d && lay.owner(s) == me)
            {
                let l = self.at(s);
                debug_assert_eq!(self.global(l), s);
                send.extend((0..w).map(|c| self.data[c * h + l]));
                send_counts[d] += w;
            }
        }
        for (s, t) in &order {
            if lay.owner(*t) == me {
                recv_counts[lay.owner(*s)] += w;
            }
        }
        let mut recv = vec![T::zero(); recv_counts.iter().sum()];
        comm.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)
            .map_err(comm_error)?;
        let mut at: Vec<usize> = recv_counts
            .iter()
            .scan(0, |acc, &c| {
                let start = *acc;
                *acc += c;
                Some(start)
            })
            .collect();
        for &(s, t) in &order {
            if lay.owner(t) == me {
                let src = lay.owner(s);
                let l = self.at(t);
                for c in 0..w {
                    self.data[c * h + l] = recv[at[src] + c];
                }
                at[src] += w;
            }
        }
        Ok(())
    }
}

/// The rows a permutation moves (`perm[t] ≠ t`) and their sources.
fn moved_rows_of(perm: &[usize]) -> (Vec<usize>, Vec<usize>) {
    (0..perm.len())
        .filter(|&t| perm[t] != t)
        .map(|t| (t, perm[t]))
        .unzip()
}

/// The permutation of rows `0..h` that the interchanges `rel` make (LAPACK's order): new row
/// `t` is old row `perm[t]`.
fn permutation(h: usize, rel: &[usize]) -> Vec<usize> {
    let mut perm: Vec<usize> = (0..h).collect();
    for (i, &p) in rel.iter().enumerate() {
        perm.swap(i, p);
    }
    perm
}

/// `|re| + |im|`, LAPACK's pivot measure.
fn abs1<T: Scalar>(x: T) -> f64 {
    x.re().abs().to_f64() + x.im().abs().to_f64()
}

/// What [`getrf_rows`] found: the interchanges (global rows, LAPACK's convention) and the
/// first zero pivot's column (relative to the panel).
#[derive(Clone, Debug, PartialEq)]
pub struct PanelLu {
    /// Row `r + j` was interchanged with row `ipiv[j]` (global).
    pub ipiv: Vec<usize>,
    /// The first column whose pivot is exactly zero.
    pub first_zero_pivot: Option<usize>,
}

/// Inner block of [`getrf_rows`].
const NB: usize = 32;

/// Factors the panel of rows `r..m` and `w` columns held by the ranks as `lay` deals its rows
/// (this rank's in `e`, column-major): `P·E = L·U` with partial pivoting, right-looking in
/// blocks of 32 columns — per column the ranks' best candidates gathered, the pivot row swapped
/// into place (whole width) and broadcast; per block the block's rows gathered, `U₁₂` solved by
/// every rank, and each rank's `A₂₂ −= L₂₁·U₁₂` on its own rows.
///
/// # Errors
/// A failed peer; a buffer of another size.
pub fn getrf_rows<T: KernelScalar, C: Communicator>(
    comm: &C,
    lay: RowCyclic,
    r: usize,
    w: usize,
    e: &mut [T],
    par: Par,
) -> Result<PanelLu, OocError> {
    let me = comm.rank();
    let mut rows = Rows {
        lay,
        rank: me,
        from: r,
        w,
        data: e,
    };
    let h = rows.h();
    if rows.data.len() != h * w || r + w > lay.m {
        return Err(OocError::Invalid(format!(
            "a panel of rows {r}..{} and {w} columns in {} local elements",
            lay.m,
            rows.data.len()
        )));
    }
    let mut ipiv = Vec::with_capacity(w);
    let mut first_zero_pivot = None;
    for j0 in (0..w).step_by(NB) {
        let jb = NB.min(w - j0);
        for j in j0..j0 + jb {
            let g0 = r + j;
            let piv = pivot_row(comm, &rows, g0, j)?;
            ipiv.push(piv);
            swap_rows(comm, &mut rows, g0, piv)?;
            let mut prow: Vec<T> = vec![T::zero(); j0 + jb - j];
            if lay.owner(g0) == me {
                let l = rows.at(g0);
                for (c, v) in prow.iter_mut().enumerate() {
                    *v = rows.data[(j + c) * h + l];
                }
            }
            comm.broadcast(&mut prow, lay.owner(g0))
                .map_err(comm_error)?;
            let pivot = prow[0];
            if pivot == T::zero() {
                first_zero_pivot = first_zero_pivot.or(Some(j));
                continue;
            }
            for l in rows.at(g0 + 1)..h {
                let x = rows.data[j * h + l] / pivot;
                rows.data[j * h + l] = x;
                for c in 1..prow.len() {
                    let y = rows.data[(j + c) * h + l] - x * prow[c];
                    rows.data[(j + c) * h + l] = y;
                }
            }
        }
        if j0 + jb < w {
            block_update(comm, &mut rows, r + j0, j0, jb, par)?;
        }
    }
    Ok(PanelLu {
        ipiv,
        first_zero_pivot,
    })
}

/// The pivot of column `j` from row `g0` down: the largest `|re| + |im|`, the first such row.
fn pivot_row<T: KernelScalar, C: Communicator>(
    comm: &C,
    rows: &Rows<'_, T>,
    g0: usize,
    j: usize,
) -> Result<usize, OocError> {
    let h = rows.h();
    let mut best = (-1.0f64, f64::MAX);
    for l in rows.at(g0)..h {
        let a = abs1(rows.data[j * h + l]);
        if a > best.0 {
            best = (a, rows.global(l) as f64);
        }
    }
    let mut all = vec![0.0f64; 2 * rows.lay.p];
    comm.all_gather(&[best.0, best.1], &mut all)
        .map_err(comm_error)?;
    let (mut abs, mut row) = (-1.0f64, f64::MAX);
    for c in all.chunks(2) {
        if c[0] > abs || (c[0] == abs && c[1] < row) {
            (abs, row) = (c[0], c[1]);
        }
    }
    // All zero (or no rows): the diagonal row itself, as LAPACK's first index of the maximum.
    Ok(if abs <= 0.0 { g0 } else { row as usize })
}

/// Interchanges global rows `a` and `b` of the panel (its whole width).
fn swap_rows<T: KernelScalar, C: Communicator>(
    comm: &C,
    rows: &mut Rows<'_, T>,
    a: usize,
    b: usize,
) -> Result<(), OocError> {
    if a == b {
        return Ok(());
    }
    let (lay, me, h, w) = (rows.lay, rows.rank, rows.h(), rows.w);
    let (oa, ob) = (lay.owner(a), lay.owner(b));
    if oa == me && ob == me {
        let (la, lb) = (rows.at(a), rows.at(b));
        for c in 0..w {
            rows.data.swap(c * h + la, c * h + lb);
        }
    } else if oa == me || ob == me {
        let (mine, other) = if oa == me { (a, ob) } else { (b, oa) };
        let l = rows.at(mine);
        let send: Vec<T> = (0..w).map(|c| rows.data[c * h + l]).collect();
        let mut recv = vec![T::zero(); w];
        comm.sendrecv(&send, other, &mut recv, other, 71)
            .map_err(comm_error)?;
        for (c, v) in recv.into_iter().enumerate() {
            rows.data[c * h + l] = v;
        }
    }
    Ok(())
}

/// After the columns `j0..j0 + jb` (rows from `g` = `r + j0`) are factored: their block's rows
/// gathered, `U₁₂ = L₁₁⁻¹·A₁₂` on every rank, its rows stored by their owners, and each rank's
/// rows below `A₂₂ −= L₂₁·U₁₂`.
fn block_update<T: KernelScalar, C: Communicator>(
    comm: &C,
    rows: &mut Rows<'_, T>,
    g: usize,
    j0: usize,
    jb: usize,
    par: Par,
) -> Result<(), OocError> {
    let (h, w) = (rows.h(), rows.w);
    let rest = w - j0 - jb;
    let mut blk = rows.gather(comm, g..g + jb, j0..w)?;
    {
        let (l11, a12) = blk.split_at_mut(jb * jb);
        let l11 = MatRef::from_slice(l11, jb, jb, jb).map_err(kernel_error)?;
        let a12 = MatMut::from_slice(a12, jb, rest, jb).map_err(kernel_error)?;
        trsm(
            Side::Left,
            Uplo::Lower,
            Op::NoTrans,
            Diag::Unit,
            T::one(),
            l11,
            a12,
            par,
        )
        .map_err(kernel_error)?;
    }
    let u12 = &blk[jb * jb..];
    rows.scatter(g..g + jb, j0 + jb..w, u12);
    let below = rows.at(g + jb);
    if below < h {
        let (left, right) = rows.data.split_at_mut((j0 + jb) * h);
        let l21 =
            MatRef::from_slice(&left[j0 * h + below..], h - below, jb, h).map_err(kernel_error)?;
        let u = MatRef::from_slice(u12, jb, rest, jb).map_err(kernel_error)?;
        let a22 =
            MatMut::from_slice(&mut right[below..], h - below, rest, h).map_err(kernel_error)?;
        gemm(
            T::zero() - T::one(),
            l21,
            Op::NoTrans,
            u,
            Op::NoTrans,
            T::one(),
            a22,
            par,
        )
        .map_err(kernel_error)?;
    }
    Ok(())
}

/// A rank's view of a matrix file: its rows of one file all ranks share (the seed's shared
/// file), or a file of its own holding only its rows, in order (a distributed file).
#[derive(Debug)]
pub struct RankFile<T> {
    /// The file.
    pub file: DiskMatrix<T>,
    /// Whether the file holds every row (shared) or only this rank's.
    pub shared: bool,
}

impl<T: Scalar> RankFile<T> {
    /// This rank's rows from global `from` on, columns `cols`, into `buf` (column-major, those
    /// rows in order).
    fn read(
        &mut self,
        lay: RowCyclic,
        rank: usize,
        from: usize,
        cols: Range<usize>,
        buf: &mut [T],
    ) -> Result<(), OocError> {
        let (l0, l1) = (lay.rows_below(rank, from), lay.local_rows(rank));
        if !self.shared {
            return self.file.read(l0..l1, cols, buf);
        }
        for (s, len) in runs(lay, l0, l1) {
            let g = lay.global(rank, s);
            let into = &mut buf[s - l0..];
            self.file
                .read_strided(g..g + len, cols.clone(), into, l1 - l0)?;
        }
        Ok(())
    }

    /// This rank's rows from global `from` on, columns `cols`, from `buf`.
    fn write(
        &mut self,
        lay: RowCyclic,
        rank: usize,
        from: usize,
        cols: Range<usize>,
        buf: &[T],
    ) -> Result<(), OocError> {
        let (l0, l1) = (lay.rows_below(rank, from), lay.local_rows(rank));
        if !self.shared {
            return self.file.write(l0..l1, cols, buf);
        }
        for (s, len) in runs(lay, l0, l1) {
            let g = lay.global(rank, s);
            self.file
                .write_strided(g..g + len, cols.clone(), &buf[s - l0..], l1 - l0)?;
        }
        Ok(())
    }
}

impl<T: Scalar> RankFile<T> {
    /// Sets rows `rows` (global, this rank's) of columns `cols` to `values` (column by column,
    /// in `rows`' order).
    fn write_rows(
        &mut self,
        lay: RowCyclic,
        rank: usize,
        cols: Range<usize>,
        rows: &[usize],
        values: &[T],
    ) -> Result<(), OocError> {
        debug_assert!(rows.iter().all(|&r| lay.owner(r) == rank));
        let at: Vec<usize> = if self.shared {
            rows.to_vec()
        } else {
            rows.iter().map(|&r| lay.local(r)).collect()
        };
        crate::progress::write_rows(&mut self.file, cols, &at, values)
    }
}

/// A rank's local rows `l0..l1` as runs of consecutive global rows: `(first local, length)`.
fn runs(lay: RowCyclic, l0: usize, l1: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut s = l0;
    while s < l1 {
        let len = (lay.b - s % lay.b).min(l1 - s);
        out.push((s, len));
        s += len;
    }
    out
}

/// The left-looking LU with the disk copy kept pivoted ([`crate::lu_left_pivoted`]) over the
/// ranks of `comm`, rows dealt in blocks of `b`: `input` (`A`, only read) and `factors` are
/// this rank's views (shared or distributed files, both of `A`'s shape or of this rank's rows);
/// the panel width is `factors`' width. Every rank returns the same pivots and zero pivot, and
/// its own counts (they add up to [`crate::left_pivoted_io`]); the flops are the model's.
///
/// When one panel holds the whole matrix (it fits the memory), it is factored in core by
/// redblue's distributed LU ([`redblue_lu::lu`], COnfLUX: tournament pivoting, so other pivots
/// than partial pivoting's): each rank reads its rows once, the factors are written back in the
/// rows of `P·A` as LAPACK leaves them, each rank writing its rows once. An exactly singular
/// matrix goes to the panel LU instead, which reports the zero pivot and goes on.
///
/// # Errors
/// Files whose shapes disagree with the layout; the disk's errors; a failed peer.
pub fn left_pivoted_ranks<T: KernelScalar, C: Communicator>(
    comm: &C,
    b: usize,
    input: &mut RankFile<T>,
    factors: &mut RankFile<T>,
    par: Par,
) -> Result<OocLu, OocError> {
    left_pivoted_ranks_with(comm, b, input, factors, None, par)
}

/// [`left_pivoted_ranks`], resumable with a [`RanksProgress`]: each step committed by every
/// rank, every write over factored rows journaled first by the rank making it; a run that
/// stopped (a rank's failure, a kill) goes on from the last committed step with the same
/// factors. Reads and writes are counted for what this call did.
///
/// # Collective
/// # Errors
/// As [`left_pivoted_ranks`]; [`OocError::Format`] for a record of another run or an input
/// that changed since it began.
pub fn left_pivoted_ranks_with<T: KernelScalar, C: Communicator>(
    comm: &C,
    b: usize,
    input: &mut RankFile<T>,
    factors: &mut RankFile<T>,
    progress: Option<&mut RanksProgress>,
    par: Par,
) -> Result<OocLu, OocError> {
    let (me, p) = (comm.rank(), comm.size());
    let m = factors.file.shape().1;
    let w = factors.file.panel();
    let lay = RowCyclic { m, b: b.max(1), p };
    check_files(comm, lay, [&*input, &*factors])?;
    let start = (input.file.io(), factors.file.io());
    let all_rows = lay.local_rows(me);
    let mut run = RankRun {
        comm,
        lay,
        w,
        input,
        factors,
        progress,
        par,
        ipiv: Vec::with_capacity(m),
        first_zero_pivot: None,
        active: vec![T::zero(); all_rows * w],
        temp: vec![T::zero(); all_rows * w],
    };
    let first = run.resume()?;
    let steps = m.div_ceil(w.max(1));
    let mut in_core_done = false;
    if w >= m && m > 0 && first == 0 {
        if let Some(info) = in_core(comm, lay, run.input, run.factors)? {
            (run.ipiv, in_core_done) = (info.ipiv, true);
            run.commit(steps + 1)?;
        }
    }
    if !in_core_done {
        for k in first..steps {
            run.step(k)?;
            run.commit(k + 1)?;
        }
        if first <= steps {
            run.final_pass(steps)?;
            run.commit(steps + 1)?;
        }
    }
    let io = run.input.file.io().since(start.0) + run.factors.file.io().since(start.1);
    Ok(OocLu {
        ipiv: run.ipiv,
        first_zero_pivot: run.first_zero_pivot,
        io,
        flops: lu_flops(m, w),
        read_wait_s: 0.0,
        in_core: in_core_done,
    })
}

/// What a resumable run over ranks records of itself: [`RANKS_VARIANT`], `T`, the order, the
/// panel width, the ranks, the rows' block, and the fingerprint of every rank's input.
///
/// # Collective
/// # Errors
/// A failed read of the input's header; a failed peer.
pub fn ranks_run_kind<T: Scalar, C: Communicator>(
    comm: &C,
    b: usize,
    input: &RankFile<T>,
    panel: usize,
) -> Result<crate::RunKind, OocError> {
    let n = input.file.shape().1;
    let mut kind = crate::run_kind::<T>(RANKS_VARIANT, n, panel, 0);
    kind.input = inputs_fingerprint(comm, input.file.fingerprint()?)?;
    kind.ranks = comm.size() as u64;
    kind.row_block = b.max(1) as u64;
    Ok(kind)
}

/// One rank's part of a run over ranks.
struct RankRun<'a, T, C> {
    comm: &'a C,
    lay: RowCyclic,
    w: usize,
    input: &'a mut RankFile<T>,
    factors: &'a mut RankFile<T>,
    progress: Option<&'a mut RanksProgress>,
    par: Par,
    ipiv: Vec<usize>,
    first_zero_pivot: Option<usize>,
    active: Vec<T>,
    temp: Vec<T>,
}

impl<T: KernelScalar, C: Communicator> RankRun<'_, T, C> {
    /// The step to start from: with a record, it checked against the run, this rank's
    /// journaled writes undone (agreed), the pivots so far taken from it.
    fn resume(&mut self) -> Result<usize, OocError> {
        let Some(p) = self.progress.as_deref_mut() else {
            return Ok(0);
        };
        let lay = self.lay;
        let k = p.record().kind;
        let input = inputs_fingerprint(self.comm, self.input.file.fingerprint()?)?;
        let want = (
            RANKS_VARIANT,
            crate::format::scalar_code::<T>(),
            lay.m as u64,
        );
        let shape = (self.w as u64, lay.p as u64, lay.b as u64);
        if (k.variant, k.scalar, k.n) != want || (k.panel, k.ranks, k.row_block) != shape {
            return Err(OocError::Format {
                path: self.factors.file.path().to_path_buf(),
                why: "its progress record is of another run (type, order, panel, ranks or rows' block)"
                    .into(),
            });
        }
        if k.input != input {
            return Err(OocError::Format {
                path: self.input.file.path().to_path_buf(),
                why: "an input changed since the run it is the input of began".into(),
            });
        }
        let r = p.record().clone();
        self.factors.file.forget_checksums();
        let undone = p.undo(lay, self.comm.rank(), self.factors);
        agree(self.comm, undone)?;
        self.ipiv = r.ipiv.iter().map(|&q| q as usize).collect();
        self.first_zero_pivot = r.first_zero_pivot.map(|z| z as usize);
        Ok(r.steps_done as usize)
    }

    /// Commits `steps_done` steps (nothing without a record).
    fn commit(&mut self, steps_done: usize) -> Result<(), OocError> {
        match self.progress.as_deref_mut() {
            Some(p) => p.commit(
                self.comm,
                self.factors,
                steps_done,
                &self.ipiv,
                self.first_zero_pivot,
            ),
            None => Ok(()),
        }
    }

    /// Step `k`: the active panel read and interchanged, updated by each panel to its left
    /// (the previous step's interchanges brought to them), factored, written.
    fn step(&mut self, k: usize) -> Result<(), OocError> {
        let RankRun {
            comm,
            lay,
            w,
            input,
            factors,
            progress,
            par,
            ipiv,
            ..
        } = self;
        let (comm, lay, w, par) = (*comm, *lay, *w, *par);
        let (me, m) = (comm.rank(), lay.m);
        let all_rows = lay.local_rows(me);
        let c = factors.file.panel_cols(k);
        let (r, wk) = (c.start, c.len());
        let act = &mut self.active[..all_rows * wk];
        agree(comm, input.read(lay, me, 0, c.clone(), act))?;
        let mut act_rows = Rows {
            lay,
            rank: me,
            from: 0,
            w: wk,
            data: act,
        };
        act_rows.permute(comm, 0, &permutation(m, ipiv))?;
        for i in 0..k {
            let ci = factors.file.panel_cols(i);
            let (ri, wi) = (ci.start, ci.len());
            let hi = all_rows - lay.rows_below(me, ri);
            let tmp = &mut self.temp[..hi * wi];
            agree(comm, factors.read(lay, me, ri, ci.clone(), tmp))?;
            let mut tmp_rows = Rows {
                lay,
                rank: me,
                from: ri,
                w: wi,
                data: tmp,
            };
            if i + 1 < k {
                // Step k − 1's interchanges, rows (k−1)·w.., then those rows back to disk.
                let from = (k - 1) * w;
                let rel: Vec<usize> = ipiv[from..r].iter().map(|&q| q - from).collect();
                let journal = progress.as_deref_mut().map(|p| (p, k));
                interchange_and_write(
                    comm,
                    factors,
                    &mut tmp_rows,
                    ci.clone(),
                    from,
                    &rel,
                    journal,
                )?;
            }
            update_from_ranks(comm, &mut act_rows, &tmp_rows, ri, wi, par)?;
        }
        let info = factor_rows_from(comm, &mut act_rows, r, par)?;
        if self.first_zero_pivot.is_none() {
            self.first_zero_pivot = info.first_zero_pivot.map(|j| r + j);
        }
        ipiv.extend(info.ipiv);
        agree(comm, factors.write(lay, me, 0, c, act_rows.data))
    }

    /// The last step's interchanges to the panels on its left (step `steps`, journaled).
    fn final_pass(&mut self, steps: usize) -> Result<(), OocError> {
        if steps < 2 {
            return Ok(());
        }
        let (lay, me) = (self.lay, self.comm.rank());
        let from = (steps - 1) * self.w;
        let rel: Vec<usize> = self.ipiv[from..].iter().map(|&q| q - from).collect();
        let h = lay.local_rows(me) - lay.rows_below(me, from);
        for i in 0..steps - 1 {
            let ci = self.factors.file.panel_cols(i);
            let wi = ci.len();
            let buf = &mut self.temp[..h * wi];
            agree(self.comm, self.factors.read(lay, me, from, ci.clone(), buf))?;
            let mut rows = Rows {
                lay,
                rank: me,
                from,
                w: wi,
                data: buf,
            };
            let journal = self.progress.as_deref_mut().map(|p| (p, steps));
            interchange_and_write(self.comm, self.factors, &mut rows, ci, from, &rel, journal)?;
        }
        Ok(())
    }
}

/// Every rank's files of the shape the layout gives it (a shared file `m × m`, a distributed
/// one this rank's rows × `m`), agreed: a wrong file on one rank is an error on all.
fn check_files<T: Scalar, C: Communicator>(
    comm: &C,
    lay: RowCyclic,
    files: [&RankFile<T>; 2],
) -> Result<(), OocError> {
    let (me, m) = (comm.rank(), lay.m);
    let mut wrong = None;
    for f in files {
        let rows = if f.shared { m } else { lay.local_rows(me) };
        if wrong.is_none() && f.file.shape() != (rows, m) {
            wrong = Some(format!(
                "{}: {} x {}, for rank {me} of {} in an LU of order {m} ({} file)",
                f.file.path().display(),
                f.file.shape().0,
                f.file.shape().1,
                lay.p,
                if f.shared { "shared" } else { "distributed" }
            ));
        }
    }
    agree(
        comm,
        wrong.map_or(Ok(()), |why| Err(OocError::Invalid(why))),
    )
}

/// The interchanges `rel` of rows `from..` applied over the ranks to a panel's rows held in
/// `rows` (from `rows.from ≤ from`; columns `cols` of the file), and this rank's rows from
/// `from` on written back.
fn interchange_and_write<T: KernelScalar, C: Communicator>(
    comm: &C,
    factors: &mut RankFile<T>,
    rows: &mut Rows<'_, T>,
    cols: Range<usize>,
    from: usize,
    rel: &[usize],
    journal: Option<(&mut RanksProgress, usize)>,
) -> Result<(), OocError> {
    let (lay, me, start) = (rows.lay, rows.rank, rows.from);
    let perm = permutation(lay.m - from, rel);
    let full: Vec<usize> = (0..from - start)
        .chain(perm.iter().map(|&q| q + from - start))
        .collect();
    if let Some((progress, step)) = journal {
        // This rank's rows the interchanges change, and their values before.
        let h = rows.h();
        let mine: Vec<usize> = (0..perm.len())
            .filter(|&t| perm[t] != t && lay.owner(from + t) == me)
            .map(|t| from + t)
            .collect();
        let old: Vec<T> = (0..cols.len())
            .flat_map(|j| mine.iter().map(move |&g| (j, g)))
            .map(|(j, g)| rows.data[j * h + rows.at(g)])
            .collect();
        agree(comm, progress.journal_old(step, cols.clone(), &mine, &old))?;
    }
    rows.permute(comm, start, &full)?;
    let (skip, h) = (rows.at(from), rows.h());
    let back: Vec<T> = (0..cols.len())
        .flat_map(|j| rows.data[j * h + skip..(j + 1) * h].to_vec())
        .collect();
    agree(comm, factors.write(lay, me, from, cols, &back))
}

/// The active panel's rows from `r` on (all its columns, held as `act`) factored over the
/// ranks, in place: by redblue's distributed LU of the `(m − r) × w` panel
/// ([`redblue_lu::lu`], on the grid its planner chooses for that shape, the panel moved to its
/// layout and the factors back), or, when that finds the panel exactly singular, by
/// [`getrf_rows`], which goes on past a zero pivot as LAPACK does.
fn factor_rows_from<T: KernelScalar, C: Communicator>(
    comm: &C,
    act: &mut Rows<'_, T>,
    r: usize,
    par: Par,
) -> Result<PanelLu, OocError> {
    if let Some(info) = panel_lu(comm, act, r, par)? {
        return Ok(info);
    }
    let (at, h, wk) = (act.at(r), act.h(), act.w);
    let mut e: Vec<T> = (0..wk)
        .flat_map(|j| act.data[j * h + at..(j + 1) * h].to_vec())
        .collect();
    let info = getrf_rows(comm, act.lay, r, wk, &mut e, par)?;
    for j in 0..wk {
        act.data[j * h + at..(j + 1) * h].copy_from_slice(&e[j * (h - at)..(j + 1) * (h - at)]);
    }
    Ok(info)
}

/// [`factor_rows_from`] by redblue's LU; `None` (nothing changed) for an exactly singular
/// panel. The ranks' rows of the panel are a `P × 1` block-cyclic matrix of `b`-row blocks
/// (`lay`), all of each rank's rows in its local array: rows `r..` are its submatrix.
fn panel_lu<T: KernelScalar, C: Communicator>(
    comm: &C,
    act: &mut Rows<'_, T>,
    r: usize,
    par: Par,
) -> Result<Option<PanelLu>, OocError> {
    use redblue_dist::{
        BlockCyclic, BlockCyclicSubmatrix, BorrowedDistMatrix, BorrowedDistMatrixMut, Layout,
    };
    use redblue_lu::{LuError, LuParams, LuPlan};
    let (lay, w, me) = (act.lay, act.w, comm.rank());
    let invalid = |e: String| OocError::Invalid(format!("the panel LU over ranks: {e}"));
    let llds: Vec<usize> = (0..lay.p).map(|q| lay.local_rows(q).max(1)).collect();
    let parent = BlockCyclic::new(lay.m, w, lay.b, w.max(1), lay.p, 1)
        .map_err(|e| invalid(e.to_string()))?;
    let sub = BlockCyclicSubmatrix::new(parent, r..lay.m, 0..w, llds)
        .map_err(|e| invalid(e.to_string()))?;
    let len = sub.local_len(me).min(act.data.len());
    let plan = LuPlan::rect(lay.m - r, w, comm.size(), &LuParams::default())
        .map_err(|e| invalid(e.to_string()))?;
    let fac = {
        let view = BorrowedDistMatrix::new(comm, sub.clone(), &act.data[..len])
            .map_err(|e| invalid(e.to_string()))?;
        match redblue_lu::lu_with(comm, &plan, &view, par) {
            Ok(fac) => fac,
            Err(LuError::Singular { .. }) => return Ok(None),
            Err(e) => return Err(invalid(e.to_string())),
        }
    };
    let mut out = BorrowedDistMatrixMut::new(comm, sub, &mut act.data[..len])
        .map_err(|e| invalid(e.to_string()))?;
    fac.write_factors(comm, &mut out)
        .map_err(|e| invalid(e.to_string()))?;
    Ok(Some(PanelLu {
        ipiv: fac.ipiv().into_iter().map(|q| q + r).collect(),
        first_zero_pivot: None,
    }))
}

/// The active panel updated by a left panel (rows from `ri`, `wi` columns): `C₀ ← T₀⁻¹·C₀`
/// (rows `ri..ri+wi`, gathered by every rank, solved there, stored by their owners), then each
/// rank's rows below `−= [T₁; D]·C₀`.
fn update_from_ranks<T: KernelScalar, C: Communicator>(
    comm: &C,
    act: &mut Rows<'_, T>,
    tmp: &Rows<'_, T>,
    ri: usize,
    wi: usize,
    par: Par,
) -> Result<(), OocError> {
    let wk = act.w;
    let t0 = tmp.gather(comm, ri..ri + wi, 0..wi)?;
    let mut c0 = act.gather(comm, ri..ri + wi, 0..wk)?;
    {
        let t = MatRef::from_slice(&t0, wi, wi, wi).map_err(kernel_error)?;
        let c = MatMut::from_slice(&mut c0, wi, wk, wi).map_err(kernel_error)?;
        trsm(
            Side::Left,
            Uplo::Lower,
            Op::NoTrans,
            Diag::Unit,
            T::one(),
            t,
            c,
            par,
        )
        .map_err(kernel_error)?;
    }
    act.scatter(ri..ri + wi, 0..wk, &c0);
    let (ha, ht) = (act.h(), tmp.h());
    let (la, lt) = (act.at(ri + wi), tmp.at(ri + wi));
    if la < ha {
        let below = MatRef::from_slice(&tmp.data[lt..], ht - lt, wi, ht).map_err(kernel_error)?;
        let c = MatRef::from_slice(&c0, wi, wk, wi).map_err(kernel_error)?;
        let dst = MatMut::from_slice(&mut act.data[la..], ha - la, wk, ha).map_err(kernel_error)?;
        gemm(
            T::zero() - T::one(),
            below,
            Op::NoTrans,
            c,
            Op::NoTrans,
            T::one(),
            dst,
            par,
        )
        .map_err(kernel_error)?;
    }
    Ok(())
}

/// The whole matrix factored in core by redblue's distributed LU (`None`: it is exactly
/// singular, for the panel LU to report): this rank's rows read into a `P × 1` block-cyclic
/// layout of blocks `b × m` (its rows in order, as `lay` deals them), factored, the factors
/// written into the same layout and this rank's rows written back.
fn in_core<T: KernelScalar, C: Communicator>(
    comm: &C,
    lay: RowCyclic,
    input: &mut RankFile<T>,
    factors: &mut RankFile<T>,
) -> Result<Option<OocLu>, OocError> {
    let (m, me) = (lay.m, comm.rank());
    let lu_error =
        |e: redblue_lu::LuError| OocError::Invalid(format!("in-core LU over ranks: {e}"));
    let dist_error =
        |e: redblue_dist::DistError| OocError::Invalid(format!("in-core LU over ranks: {e}"));
    let mut local = vec![T::zero(); lay.local_rows(me) * m];
    agree(comm, input.read(lay, me, 0, 0..m, &mut local))?;
    let layout = redblue_dist::BlockCyclic::new(m, m, lay.b, m, lay.p, 1).map_err(dist_error)?;
    let a = redblue_dist::OwnedDistMatrix::from_local(comm, layout.clone(), local)
        .map_err(dist_error)?;
    let fac = match redblue_lu::lu(comm, &a, &redblue_lu::LuParams::default()) {
        Ok(fac) => fac,
        Err(redblue_lu::LuError::Singular { .. }) => return Ok(None),
        Err(e) => return Err(lu_error(e)),
    };
    drop(a);
    let mut out = redblue_dist::OwnedDistMatrix::zeros(comm, layout).map_err(dist_error)?;
    fac.write_factors(comm, &mut out).map_err(lu_error)?;
    agree(comm, factors.write(lay, me, 0, 0..m, &out.into_local()))?;
    Ok(Some(OocLu {
        ipiv: fac.ipiv(),
        first_zero_pivot: None,
        io: crate::IoCounts::default(),
        flops: lu_flops(m, m),
        read_wait_s: 0.0,
        in_core: true,
    }))
}
