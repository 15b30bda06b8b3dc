//! [`transform`]: `B = beta·B + alpha·op(A)` between any two layouts in one all-to-all round
//! (COSTA's model), with a pure, reusable [`TransformPlan`].

use crate::layout::{overlapping, Layout};
use crate::matrix::{check_layout_fits, DistMatrix, DistMatrixMut};
use crate::DistError;
use redblue_comm::Communicator;
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::{Op, Scalar, Uplo};
use std::ops::Range;

/// One rectangle that moves from A's owner to B's owner, in B's coordinates, with where it lives
/// on both sides (A's place already accounts for `op`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Piece {
    rows: Range<usize>,
    cols: Range<usize>,
    /// Position of the element of A that lands on B's `(rows.start, cols.start)`, and A's ld.
    a_pos: usize,
    a_ld: usize,
    /// Position of B's `(rows.start, cols.start)`, and B's ld.
    b_pos: usize,
    b_ld: usize,
}

impl Piece {
    fn len(&self) -> usize {
        self.rows.len() * self.cols.len()
    }
    /// Canonical order of the pieces of one (source, destination) pair: both sides sort alike.
    fn key(&self) -> (usize, usize) {
        (self.cols.start, self.rows.start)
    }
}

/// The pure plan of one rank's part of a transform: which rectangles it sends to and receives
/// from every rank. It depends only on the two layouts, `op` and the rank, so it can be built
/// once and reused for every matrix pair with those layouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransformPlan {
    rank: usize,
    op: Op,
    shape: (usize, usize),
    sends: Vec<Vec<Piece>>,
    recvs: Vec<Vec<Piece>>,
    /// Local buffer lengths of A and B on this rank.
    a_len: usize,
    b_len: usize,
}

/// Maps a rectangle of `op(A)` (B's coordinates) to A's coordinates.
fn to_a(op: Op, rows: &Range<usize>, cols: &Range<usize>) -> (Range<usize>, Range<usize>) {
    if op.is_transposed() {
        (cols.clone(), rows.clone())
    } else {
        (rows.clone(), cols.clone())
    }
}

fn intersect(a: &Range<usize>, b: &Range<usize>) -> Range<usize> {
    a.start.max(b.start)..a.end.min(b.end)
}

impl TransformPlan {
    /// Plans `rank`'s part of `B = beta·B + alpha·op(A)` for A laid out by `a` and B by `b`,
    /// on a communicator of `comm_size` ranks.
    ///
    /// # Errors
    /// [`DistError::ShapeMismatch`] if `op(A)` and B differ in shape;
    /// [`DistError::LayoutLargerThanComm`] if a layout needs more ranks than `comm_size`.
    pub fn new(
        a: &impl Layout,
        op: Op,
        b: &impl Layout,
        rank: usize,
        comm_size: usize,
    ) -> Result<Self, DistError> {
        let shape = b.shape();
        let op_a = op.apply_shape(a.shape());
        if op_a != shape {
            return Err(DistError::ShapeMismatch {
                what: "transform: op(A) against B",
                expected: shape,
                found: op_a,
            });
        }
        if rank >= comm_size {
            return Err(DistError::RankOutOfRange {
                what: "rank",
                rank,
                bound: comm_size,
            });
        }
        for nranks in [a.nranks(), b.nranks()] {
            if nranks > comm_size {
                return Err(DistError::LayoutLargerThanComm {
                    layout_ranks: nranks,
                    comm_size,
                });
            }
        }
        let mut sends = vec![Vec::new(); comm_size];
        let mut recvs = vec![Vec::new(); comm_size];
        let piece =
            |rows: Range<usize>, cols: Range<usize>, ab: (usize, usize), bb: (usize, usize)| {
                let (ablock, bblock) = (a.block(ab.0, ab.1), b.block(bb.0, bb.1));
                let (ar, ac) = to_a(op, &rows, &cols);
                Piece {
                    a_pos: ablock.local_index(ar.start, ac.start),
                    a_ld: ablock.ld,
                    b_pos: bblock.local_index(rows.start, cols.start),
                    b_ld: bblock.ld,
                    rows,
                    cols,
                }
            };
        // What this rank sends: each of its A blocks, cut by B's blocks.
        let (bi_of, bj_of) = (b.row_splits(), b.col_splits());
        let (nabr, nabc) = a.num_blocks();
        for abj in 0..nabc {
            for abi in 0..nabr {
                if a.block_owner(abi, abj) != rank {
                    continue;
                }
                let ablk = a.block(abi, abj);
                let (rows, cols) = to_a(op, &ablk.rows, &ablk.cols); // B's coordinates
                for bj in overlapping(bj_of, &cols) {
                    for bi in overlapping(bi_of, &rows) {
                        let bblk = b.block(bi, bj);
                        let (r, c) = (intersect(&rows, &bblk.rows), intersect(&cols, &bblk.cols));
                        if !r.is_empty() && !c.is_empty() {
                            sends[b.block_owner(bi, bj)].push(piece(r, c, (abi, abj), (bi, bj)));
                        }
                    }
                }
            }
        }
        // What this rank receives: each of its B blocks, cut by A's blocks.
        let (nbbr, nbbc) = b.num_blocks();
        for bj in 0..nbbc {
            for bi in 0..nbbr {
                if b.block_owner(bi, bj) != rank {
                    continue;
                }
                let bblk = b.block(bi, bj);
                let (ar, ac) = to_a(op, &bblk.rows, &bblk.cols);
                for abj in overlapping(a.col_splits(), &ac) {
                    for abi in overlapping(a.row_splits(), &ar) {
                        let ablk = a.block(abi, abj);
                        let (rows, cols) = to_a(op, &ablk.rows, &ablk.cols);
                        let (r, c) = (intersect(&rows, &bblk.rows), intersect(&cols, &bblk.cols));
                        if !r.is_empty() && !c.is_empty() {
                            recvs[a.block_owner(abi, abj)].push(piece(r, c, (abi, abj), (bi, bj)));
                        }
                    }
                }
            }
        }
        for list in sends.iter_mut().chain(recvs.iter_mut()) {
            list.sort_unstable_by_key(Piece::key);
        }
        Ok(TransformPlan {
            rank,
            op,
            shape,
            sends,
            recvs,
            a_len: a.local_len(rank),
            b_len: b.local_len(rank),
        })
    }

    /// Elements this rank sends to each rank (its own entry is a local copy).
    pub fn send_counts(&self) -> Vec<usize> {
        self.sends
            .iter()
            .map(|l| l.iter().map(Piece::len).sum())
            .collect()
    }

    /// Elements this rank receives from each rank.
    pub fn recv_counts(&self) -> Vec<usize> {
        self.recvs
            .iter()
            .map(|l| l.iter().map(Piece::len).sum())
            .collect()
    }

    /// Words this rank sends to other ranks: what the transform adds to its `words_sent`.
    pub fn words_sent(&self) -> usize {
        let c = self.send_counts();
        c.iter().sum::<usize>() - c[self.rank]
    }

    /// Words this rank receives from other ranks.
    pub fn words_received(&self) -> usize {
        let c = self.recv_counts();
        c.iter().sum::<usize>() - c[self.rank]
    }

    /// Column `jj` of piece `p` of `op(A)`, from A's local buffer, into `out`.
    fn piece_column<T: Scalar>(&self, a: &[T], p: &Piece, jj: usize, out: &mut Vec<T>) {
        if self.op.is_transposed() {
            // op(A)(i, j) = A(j, i): walk a row of A.
            let start = p.a_pos + jj;
            let conj = self.op == Op::ConjTrans;
            out.extend((0..p.rows.len()).map(|ii| {
                let x = a[start + ii * p.a_ld];
                if conj {
                    x.conj()
                } else {
                    x
                }
            }));
        } else {
            let start = p.a_pos + jj * p.a_ld;
            out.extend_from_slice(&a[start..start + p.rows.len()]);
        }
    }

    /// Packs this rank's A data for every other rank, in plan order, applying `op`.
    fn pack<T: Scalar>(&self, a: &[T]) -> Vec<T> {
        let total = self.send_counts().iter().sum::<usize>() - self.sends_to_self();
        let mut out = take_buffer(total, T::zero());
        out.clear();
        for (dest, list) in self.sends.iter().enumerate() {
            if dest == self.rank {
                continue;
            }
            for p in list {
                for jj in 0..p.cols.len() {
                    self.piece_column(a, p, jj, &mut out);
                }
            }
        }
        out
    }

    /// Elements this rank keeps (copied from its A to its B without a message).
    fn sends_to_self(&self) -> usize {
        self.sends[self.rank].iter().map(Piece::len).sum()
    }

    /// `B = beta·B + alpha·x` for the data received from other ranks, in plan order (only
    /// B's `keep` triangle when given).
    fn unpack<T: Scalar>(&self, x: &[T], alpha: T, beta: T, b: &mut [T], keep: Option<Uplo>) {
        let mut k = 0;
        for (src, list) in self.recvs.iter().enumerate() {
            if src == self.rank {
                continue;
            }
            for p in list {
                for jj in 0..p.cols.len() {
                    let col = &mut b[p.b_pos + jj * p.b_ld..][..p.rows.len()];
                    let run = kept(&p.rows, p.cols.start + jj, keep);
                    combine(
                        &mut col[run.clone()],
                        &x[k..k + p.rows.len()][run],
                        alpha,
                        beta,
                    );
                    k += p.rows.len();
                }
            }
        }
    }

    /// `B = beta·B + alpha·op(A)` for the pieces this rank both holds and receives, straight
    /// from A's buffer (the pieces to oneself are the same rectangles in both lists).
    fn copy_local<T: Scalar>(&self, a: &[T], alpha: T, beta: T, b: &mut [T], keep: Option<Uplo>) {
        for p in &self.sends[self.rank] {
            if self.op.is_transposed() {
                self.copy_transposed(a, p, (alpha, beta), b, keep);
                continue;
            }
            for jj in 0..p.cols.len() {
                let col = &mut b[p.b_pos + jj * p.b_ld..][..p.rows.len()];
                let run = kept(&p.rows, p.cols.start + jj, keep);
                let start = p.a_pos + jj * p.a_ld;
                let x = &a[start..start + p.rows.len()];
                combine(&mut col[run.clone()], &x[run], alpha, beta);
            }
        }
    }

    /// [`copy_local`](Self::copy_local) of a piece of a transposed transform: B's columns
    /// from A's rows, a tile of [`TRANSPOSE_TILE`]² elements at a time, whose rows of A and
    /// columns of B stay in the cache while it is written, instead of one row of A per column
    /// of B, each element on another cache line. (The upper triangle of a `2 × 2` grid's `4096²`
    /// array, transposed into and out of a preloaded `pdpotrf_`, took 10.5 % of each process's
    /// samples by rows, 6.4–6.7 % in tiles of 8; the rest is the two copies' memory traffic.)
    fn copy_transposed<T: Scalar>(
        &self,
        a: &[T],
        p: &Piece,
        (alpha, beta): (T, T),
        b: &mut [T],
        keep: Option<Uplo>,
    ) {
        let conj = self.op == Op::ConjTrans;
        let (m, n) = (p.rows.len(), p.cols.len());
        let tiles = (0..m).step_by(TRANSPOSE_TILE);
        let tiles = tiles.flat_map(|i0| (0..n).step_by(TRANSPOSE_TILE).map(move |j0| (i0, j0)));
        for (i0, j0) in tiles {
            let i1 = (i0 + TRANSPOSE_TILE).min(m);
            for jj in j0..(j0 + TRANSPOSE_TILE).min(n) {
                let run = kept(&p.rows, p.cols.start + jj, keep);
                let (lo, hi) = (run.start.max(i0), run.end.min(i1));
                if lo >= hi {
                    continue;
                }
                let col = &mut b[p.b_pos + jj * p.b_ld..][lo..hi];
                let row = p.a_pos + jj;
                for (y, ii) in col.iter_mut().zip(lo..hi) {
                    let x = a[row + ii * p.a_ld];
                    let x = if conj { x.conj() } else { x };
                    *y = if beta == T::zero() {
                        alpha * x
                    } else {
                        beta * *y + alpha * x
                    };
                }
            }
        }
    }

    /// `B = beta·B` on B's elements on this rank (its `keep` triangle when given), never its
    /// buffer's other positions (a borrowed array's padding).
    fn scale_b<T: Scalar>(&self, beta: T, b: &mut [T], keep: Option<Uplo>) {
        for p in self.recvs.iter().flatten() {
            for jj in 0..p.cols.len() {
                let col = &mut b[p.b_pos + jj * p.b_ld..][..p.rows.len()];
                scale(&mut col[kept(&p.rows, p.cols.start + jj, keep)], beta);
            }
        }
    }

    /// Runs the plan: one `all_to_all_v` (none when `alpha = 0`, which does not read A).
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    ///
    /// # Panics
    /// If `a` or `b` does not have the length its layout gives this rank.
    pub fn execute<T: Scalar, C: Communicator>(
        &self,
        comm: &C,
        alpha: T,
        a: &[T],
        beta: T,
        b: &mut [T],
    ) -> Result<(), DistError> {
        self.execute_kept(comm, alpha, a, beta, b, None)
    }

    /// [`TransformPlan::execute`] writing only B's `keep` triangle (diagonal included) when
    /// given; the rest of B is neither read nor written (the whole of A still moves).
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    ///
    /// # Panics
    /// As [`TransformPlan::execute`].
    pub fn execute_kept<T: Scalar, C: Communicator>(
        &self,
        comm: &C,
        alpha: T,
        a: &[T],
        beta: T,
        b: &mut [T],
        keep: Option<Uplo>,
    ) -> Result<(), DistError> {
        // Lengths are a property of the layouts (an `OwnedDistMatrix` cannot break them): a
        // mismatch is a bug in the caller on this rank alone, which no error can report alike
        // on every rank.
        assert_eq!(
            a.len(),
            self.a_len,
            "transform: local buffer of A disagrees with its layout"
        );
        assert_eq!(
            b.len(),
            self.b_len,
            "transform: local buffer of B disagrees with its layout"
        );
        if alpha == T::zero() {
            // BLAS semantics: A is not referenced, nothing moves.
            self.scale_b(beta, b, keep);
            return Ok(());
        }
        // The pieces a rank keeps go straight from A to B; the others in one all_to_all_v
        // (which counts no self-transfer either way).
        let send = self.pack(a);
        let mut send_counts = self.send_counts();
        let mut recv_counts = self.recv_counts();
        send_counts[self.rank] = 0;
        recv_counts[self.rank] = 0;
        let mut recv = take_buffer(recv_counts.iter().sum(), T::zero());
        comm.all_to_all_v(&send, &send_counts, &mut recv, &recv_counts)?;
        recycle(send);
        self.unpack(&recv, alpha, beta, b, keep);
        recycle(recv);
        self.copy_local(a, alpha, beta, b, keep);
        Ok(())
    }

    /// The global shape of B.
    pub fn shape(&self) -> (usize, usize) {
        self.shape
    }
}

/// The side of the square tiles a transposed local copy writes ([`TransformPlan::copy_local`]).
/// One rank transposing a `2048²` f64 array (leading dimension 2048, best of 15): element by
/// element along A's rows 8.0–8.1 ms; in tiles of 4 7.7–7.8, 8 5.5–6.3, 16 5.3–5.4, 32 6.1–6.3
/// (a power-of-two leading dimension puts all the tile's rows of A in one set of the cache).
const TRANSPOSE_TILE: usize = 16;

/// The positions of a column run of B (global rows `rows`, column `j`) in B's `keep`
/// triangle: all of them without a triangle.
fn kept(rows: &Range<usize>, j: usize, keep: Option<Uplo>) -> Range<usize> {
    let n = rows.len();
    match keep {
        None => 0..n,
        Some(Uplo::Lower) => j.saturating_sub(rows.start).min(n)..n,
        Some(Uplo::Upper) => 0..(j + 1).saturating_sub(rows.start).min(n),
    }
}

/// `y = beta·y + alpha·x`, never reading `y` when `beta = 0`.
fn combine<T: Scalar>(y: &mut [T], x: &[T], alpha: T, beta: T) {
    if beta == T::zero() {
        if alpha == T::one() {
            y.copy_from_slice(x);
        } else {
            y.iter_mut().zip(x).for_each(|(y, &s)| *y = alpha * s);
        }
    } else {
        y.iter_mut()
            .zip(x)
            .for_each(|(y, &s)| *y = beta * *y + alpha * s);
    }
}

/// `b = beta·b`, never reading `b` when `beta = 0`.
fn scale<T: Scalar>(b: &mut [T], beta: T) {
    if beta == T::zero() {
        b.fill(T::zero());
    } else if beta != T::one() {
        b.iter_mut().for_each(|y| *y = beta * *y);
    }
}

/// Words every rank sends in `B = beta·B + alpha·op(A)` with these layouts, indexed by rank
/// (pure; what the transform adds to each rank's `words_sent`).
///
/// # Errors
/// As [`TransformPlan::new`].
pub fn transform_volume(
    a: &impl Layout,
    op: Op,
    b: &impl Layout,
    comm_size: usize,
) -> Result<Vec<usize>, DistError> {
    (0..comm_size)
        .map(|r| TransformPlan::new(a, op, b, r, comm_size).map(|p| p.words_sent()))
        .collect()
}

/// `B = beta·B + alpha·op(A)` with `op ∈ {N, T, C}`, moving data between the layouts of A and B
/// in one all-to-all round. `beta = 0` never reads B and `alpha = 0` never reads A (NaNs do not
/// leak), as in BLAS.
///
/// # Collective
/// Every rank calls it with the same layouts, `op`, `alpha` and `beta`.
///
/// # Errors
/// [`DistError::ShapeMismatch`] if `op(A)` and B differ in shape, or
/// [`DistError::LayoutLargerThanComm`]: both the same on every rank; a communication failure.
///
/// # Panics
/// If a [`DistMatrix`] implementation's local buffer disagrees with its layout (a broken
/// implementation; [`crate::OwnedDistMatrix`] cannot).
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_core::Op;
/// use redblue_dist::{transform, BlockCyclic, GridLayout, OwnedDistMatrix};
///
/// run_ranks(3, |comm| {
///     let a = OwnedDistMatrix::from_fn(&comm, BlockCyclic::new(4, 6, 2, 2, 1, 3).unwrap(), |i, j| {
///         (i * 10 + j) as f64
///     })
///     .unwrap();
///     let mut b = OwnedDistMatrix::zeros(&comm, GridLayout::even(6, 4, 3, 1).unwrap()).unwrap();
///     transform(&comm, 1.0, &a, Op::Trans, 0.0, &mut b).unwrap();
///     b.for_each_local(|i, j, x| assert_eq!(x, (j * 10 + i) as f64));
/// });
/// ```
pub fn transform<T, C, A, B>(
    comm: &C,
    alpha: T,
    a: &A,
    op: Op,
    beta: T,
    b: &mut B,
) -> Result<(), DistError>
where
    T: Scalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrixMut<T> + ?Sized,
{
    check_layout_fits(comm, a.layout())?;
    check_layout_fits(comm, b.layout())?;
    let plan = TransformPlan::new(a.layout(), op, b.layout(), comm.rank(), comm.size())?;
    plan.execute(comm, alpha, a.local(), beta, b.local_mut())
}

/// [`transform`] into B's `keep` triangle only (diagonal included): `B = beta·B + alpha·op(A)`
/// there, B's other triangle neither read nor written — a factor written over the triangle it
/// came from, the other left as the caller had it. The whole of A moves, as for [`transform`].
///
/// # Collective
/// # Errors
/// As [`transform`].
///
/// # Examples
/// ```
/// use redblue_comm::run_ranks;
/// use redblue_core::{Op, Uplo};
/// use redblue_dist::{transform_triangle, BlockCyclic, OwnedDistMatrix};
///
/// run_ranks(2, |comm| {
///     let layout = BlockCyclic::new(5, 5, 2, 2, 1, 2).unwrap();
///     let a = OwnedDistMatrix::from_fn(&comm, layout.clone(), |_, _| 1.0).unwrap();
///     let mut b = OwnedDistMatrix::from_fn(&comm, layout, |_, _| 7.0).unwrap();
///     transform_triangle(&comm, 1.0, &a, Op::NoTrans, 0.0, &mut b, Uplo::Lower).unwrap();
///     b.for_each_local(|i, j, x| assert_eq!(x, if i >= j { 1.0 } else { 7.0 }));
/// });
/// ```
pub fn transform_triangle<T, C, A, B>(
    comm: &C,
    alpha: T,
    a: &A,
    op: Op,
    beta: T,
    b: &mut B,
    keep: Uplo,
) -> Result<(), DistError>
where
    T: Scalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrixMut<T> + ?Sized,
{
    check_layout_fits(comm, a.layout())?;
    check_layout_fits(comm, b.layout())?;
    let plan = TransformPlan::new(a.layout(), op, b.layout(), comm.rank(), comm.size())?;
    plan.execute_kept(comm, alpha, a.local(), beta, b.local_mut(), Some(keep))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BlockCyclic, GridLayout, GridOrder, OnRank};

    /// Words each rank must send, by brute force: every element whose owner changes.
    fn brute_force(a: &impl Layout, op: Op, b: &impl Layout, p: usize) -> Vec<usize> {
        let (m, n) = b.shape();
        let mut sent = vec![0; p];
        for j in 0..n {
            for i in 0..m {
                let src = if op.is_transposed() {
                    a.owner(j, i)
                } else {
                    a.owner(i, j)
                };
                if src != b.owner(i, j) {
                    sent[src] += 1;
                }
            }
        }
        sent
    }

    #[test]
    fn plans_at_a_thousand_ranks_without_a_communicator() {
        let p = 1024;
        let a = BlockCyclic::new(150, 130, 3, 2, 32, 32)
            .unwrap()
            .with_source(5, 31)
            .unwrap()
            .with_order(GridOrder::ColMajor);
        for op in Op::ALL {
            let (bm, bn) = op.apply_shape((150, 130));
            let b = GridLayout::even(bm, bn, 16, 64).unwrap();
            let volume = transform_volume(&a, op, &b, p).unwrap();
            assert_eq!(volume, brute_force(&a, op, &b, p), "{op}");
            // What one rank sends is what the others receive from it.
            let received: usize = (0..p)
                .map(|r| {
                    TransformPlan::new(&a, op, &b, r, p)
                        .unwrap()
                        .words_received()
                })
                .sum();
            assert_eq!(received, volume.iter().sum::<usize>());
        }
        let on_root = OnRank::new(150, 130, 1000, p).unwrap();
        let volume = transform_volume(&a, Op::NoTrans, &on_root, p).unwrap();
        assert_eq!(volume, brute_force(&a, Op::NoTrans, &on_root, p));
        assert_eq!(volume[1000], 0);
    }

    /// With `alpha = 0` (B scaled, A not read) and into a triangle, only B's elements are
    /// written: not the padding of a borrowed array, nor the other triangle.
    #[test]
    fn scaling_and_triangles_touch_only_the_elements_they_name() {
        use crate::{BlockCyclicSubmatrix, BorrowedDistMatrixMut, OwnedDistMatrix};
        use redblue_comm::run_ranks;
        run_ranks(2, |comm| {
            let parent = BlockCyclic::new(7, 7, 2, 2, 1, 2).unwrap();
            let sub = BlockCyclicSubmatrix::new(parent.clone(), 1..6, 2..7, vec![9, 9]).unwrap();
            let mut buf = vec![5.0f64; sub.local_len(comm.rank())];
            let a =
                OwnedDistMatrix::from_fn(&comm, GridLayout::even(5, 5, 1, 2).unwrap(), |_, _| 1.0)
                    .unwrap();
            let mut b = BorrowedDistMatrixMut::new(&comm, sub.clone(), &mut buf).unwrap();
            transform(&comm, 0.0, &a, Op::NoTrans, 0.0, &mut b).unwrap();
            transform_triangle(&comm, 1.0, &a, Op::NoTrans, 0.0, &mut b, Uplo::Upper).unwrap();
            let mut expected = vec![5.0; buf.len()];
            for i in 0..5 {
                for j in 0..5 {
                    let (owner, pos) = sub.to_local(i, j);
                    if owner == comm.rank() {
                        expected[pos] = if i <= j { 1.0 } else { 0.0 };
                    }
                }
            }
            assert_eq!(buf, expected);
        });
    }

    #[test]
    fn plan_errors() {
        let a = BlockCyclic::new(4, 3, 2, 2, 2, 2).unwrap();
        assert!(matches!(
            TransformPlan::new(&a, Op::NoTrans, &a, 4, 4),
            Err(DistError::RankOutOfRange { .. })
        ));
        assert!(matches!(
            TransformPlan::new(&a, Op::Trans, &a, 0, 4),
            Err(DistError::ShapeMismatch { .. })
        ));
        assert!(matches!(
            TransformPlan::new(&a, Op::NoTrans, &a, 0, 3),
            Err(DistError::LayoutLargerThanComm { .. })
        ));
    }
}
