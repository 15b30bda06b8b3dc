//! The [`DistMatrix`] traits and [`OwnedDistMatrix`], a matrix whose local part this rank owns.

use crate::layout::{Layout, LocalBlock, OnRank, RowPermuted};
use crate::memory::Refusals;
use crate::transform::transform;
use crate::DistError;
use redblue_comm::{CommError, Communicator, CommunicatorExt, ReduceOp};
use redblue_core::{random, Op, RealScalar, Scalar};

/// One rank's view of a distributed matrix: the layout shared by all ranks, and this rank's
/// local buffer laid out as the layout says.
///
/// Implementors must keep `local().len() == layout().local_len(rank())`.
pub trait DistMatrix<T: Scalar> {
    /// The layout type.
    type Layout: Layout;
    /// The layout, identical on every rank.
    fn layout(&self) -> &Self::Layout;
    /// The rank whose part this is.
    fn rank(&self) -> usize;
    /// This rank's local buffer.
    fn local(&self) -> &[T];
    /// Global shape.
    fn shape(&self) -> (usize, usize) {
        self.layout().shape()
    }
}

/// A [`DistMatrix`] whose local buffer can be written.
pub trait DistMatrixMut<T: Scalar>: DistMatrix<T> {
    /// This rank's local buffer, writable.
    fn local_mut(&mut self) -> &mut [T];
}

/// Checks that `comm` has at least as many ranks as `layout` spreads over.
pub(crate) fn check_layout_fits<C: Communicator>(
    comm: &C,
    layout: &impl Layout,
) -> Result<(), DistError> {
    if layout.nranks() > comm.size() {
        return Err(DistError::LayoutLargerThanComm {
            layout_ranks: layout.nranks(),
            comm_size: comm.size(),
        });
    }
    Ok(())
}

/// A distributed matrix that owns this rank's local buffer.
///
/// # Examples
/// ```
/// use redblue_comm::{run_ranks, Communicator};
/// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
///
/// let norms = run_ranks(4, |comm| {
///     let layout = BlockCyclic::new(5, 3, 2, 2, 2, 2).unwrap();
///     let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| (i + 10 * j) as f64).unwrap();
///     a.norm_max(&comm).unwrap()
/// });
/// assert_eq!(norms, vec![24.0; 4]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct OwnedDistMatrix<T, L> {
    layout: L,
    rank: usize,
    local: Vec<T>,
}

impl<T: Scalar, L: Layout> OwnedDistMatrix<T, L> {
    /// A matrix of zeros. No communication.
    ///
    /// # Errors
    /// [`DistError::LayoutLargerThanComm`] if the layout spreads over more ranks than `comm` has
    /// (the same on every rank); [`DistError::OutOfMemory`] if this rank's buffer cannot be
    /// allocated (on this rank: callers of collectives agree on it before going on).
    pub fn zeros<C: Communicator>(comm: &C, layout: L) -> Result<Self, DistError> {
        check_layout_fits(comm, &layout)?;
        let rank = comm.rank();
        let local = try_zeros(layout.local_len(rank), "a local buffer")?;
        Ok(OwnedDistMatrix {
            layout,
            rank,
            local,
        })
    }

    /// The matrix with elements `f(i, j)`; each rank evaluates `f` on its own elements only.
    /// No communication.
    ///
    /// # Errors
    /// As [`OwnedDistMatrix::zeros`].
    pub fn from_fn<C: Communicator>(
        comm: &C,
        layout: L,
        mut f: impl FnMut(usize, usize) -> T,
    ) -> Result<Self, DistError> {
        let mut a = Self::zeros(comm, layout)?;
        a.fill_with(&mut f);
        Ok(a)
    }

    /// The matrix with entries uniform in `[−1, 1)` (both parts for complex types), element
    /// `(i, j)` being [`redblue_core::random::uniform`]`(i, j, seed)`: the same matrix on any
    /// number of ranks and in any layout. No communication.
    ///
    /// # Errors
    /// As [`OwnedDistMatrix::zeros`].
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::{run_ranks, SelfComm};
    /// use redblue_dist::{BlockCyclic, GridLayout, OwnedDistMatrix};
    ///
    /// let one = OwnedDistMatrix::<f64, _>::random(&SelfComm::new(), GridLayout::even(9, 7, 1, 1).unwrap(), 42)
    ///     .unwrap()
    ///     .gather(&SelfComm::new(), 0)
    ///     .unwrap();
    /// let four = run_ranks(4, |comm| {
    ///     let layout = BlockCyclic::new(9, 7, 2, 3, 2, 2).unwrap();
    ///     OwnedDistMatrix::<f64, _>::random(&comm, layout, 42).unwrap().gather(&comm, 0).unwrap()
    /// });
    /// assert_eq!(four[0], one);
    /// ```
    pub fn random<C: Communicator>(comm: &C, layout: L, seed: u64) -> Result<Self, DistError> {
        Self::from_fn(comm, layout, |i, j| random::uniform(i, j, seed))
    }

    /// The matrix with standard normal entries, element `(i, j)` being
    /// [`redblue_core::random::normal`]`(i, j, seed)` (complex: `E|z|² = 1`). No communication.
    ///
    /// # Errors
    /// As [`OwnedDistMatrix::zeros`].
    pub fn random_normal<C: Communicator>(
        comm: &C,
        layout: L,
        seed: u64,
    ) -> Result<Self, DistError> {
        Self::from_fn(comm, layout, |i, j| random::normal(i, j, seed))
    }

    /// Wraps an existing local buffer (for example a ScaLAPACK local array).
    ///
    /// # Errors
    /// [`DistError::BufferLength`] if `local` does not have the layout's local length on this
    /// rank; [`DistError::LayoutLargerThanComm`] as in [`OwnedDistMatrix::zeros`].
    pub fn from_local<C: Communicator>(
        comm: &C,
        layout: L,
        local: Vec<T>,
    ) -> Result<Self, DistError> {
        let rank = check_local(comm, &layout, local.len())?;
        Ok(OwnedDistMatrix {
            layout,
            rank,
            local,
        })
    }

    /// Scatters the column-major `m × n` matrix `global` held by `root` (pass `None` on other
    /// ranks) into `layout`.
    ///
    /// # Collective
    /// # Errors
    /// `root` out of range, or a `global` of the wrong length on `root`, are reported on every
    /// rank alike.
    pub fn scatter_from<C: Communicator>(
        comm: &C,
        layout: L,
        root: usize,
        global: Option<&[T]>,
    ) -> Result<Self, DistError> {
        let (m, n) = layout.shape();
        let on_root = OnRank::new(m, n, root, comm.size())?;
        let mut src = OwnedDistMatrix::<T, OnRank>::zeros(comm, on_root)?;
        // Only the root can see its buffer: everybody learns its length before data moves.
        let root_len = comm.broadcast_one(global.map_or(0, <[T]>::len), root)?;
        if root_len != m * n {
            return Err(DistError::BufferLength {
                what: "global matrix on the scatter root",
                expected: m * n,
                found: root_len,
            });
        }
        if let Some(g) = global.filter(|_| comm.rank() == root) {
            src.local.copy_from_slice(g);
        }
        let mut out = Self::zeros(comm, layout)?;
        transform(comm, T::one(), &src, Op::NoTrans, T::zero(), &mut out)?;
        Ok(out)
    }

    /// Gathers the whole matrix, column-major `m × n`, on `root` (`None` on other ranks).
    ///
    /// # Collective
    /// # Errors
    /// `root` out of range (on every rank alike), or a communication failure.
    pub fn gather<C: Communicator>(
        &self,
        comm: &C,
        root: usize,
    ) -> Result<Option<Vec<T>>, DistError> {
        let (m, n) = self.shape();
        let on_root = OnRank::new(m, n, root, comm.size())?;
        let mut dst = OwnedDistMatrix::<T, OnRank>::zeros(comm, on_root)?;
        transform(comm, T::one(), self, Op::NoTrans, T::zero(), &mut dst)?;
        Ok((comm.rank() == root).then_some(dst.local))
    }

    /// The whole matrix, column-major `m × n`, on every rank: one all-gather of the local
    /// buffers (each rank receives the elements it does not hold), unpacked by the layout.
    ///
    /// # Collective
    /// # Errors
    /// [`DistError::LayoutLargerThanComm`]; [`DistError::OutOfMemory`] on every rank if some
    /// rank cannot hold the matrix (agreed before anything moves); a communication failure.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::run_ranks;
    /// use redblue_dist::{BlockCyclic, OwnedDistMatrix};
    ///
    /// let copies = run_ranks(3, |comm| {
    ///     let layout = BlockCyclic::near_square(5, 4, 2, 2, 3).unwrap();
    ///     let a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| (10 * i + j) as f64).unwrap();
    ///     a.all_gather(&comm).unwrap()
    /// });
    /// let expected: Vec<f64> = (0..4).flat_map(|j| (0..5).map(move |i| (10 * i + j) as f64)).collect();
    /// assert!(copies.iter().all(|c| *c == expected));
    /// ```
    pub fn all_gather<C: Communicator>(&self, comm: &C) -> Result<Vec<T>, DistError> {
        check_layout_fits(comm, &self.layout)?;
        let (m, n) = self.shape();
        let counts: Vec<usize> = (0..comm.size())
            .map(|r| {
                if r < self.layout.nranks() {
                    self.layout.local_len(r)
                } else {
                    0
                }
            })
            .collect();
        let mut refusals = Refusals::new();
        let mut take = |len: usize| {
            try_zeros::<T>(len, "a whole matrix on every rank").unwrap_or_else(|_| {
                refusals.refused(len as f64 * std::mem::size_of::<T>() as f64);
                Vec::new()
            })
        };
        let mut received = take(counts.iter().sum());
        let mut whole = take(m.saturating_mul(n));
        refusals.agree(comm, "a whole matrix on every rank")?;
        comm.all_gather_v(&self.local, &mut received, &counts)?;
        let mut at = 0;
        for (r, count) in counts.iter().enumerate().take(self.layout.nranks()) {
            let theirs = &received[at..at + count];
            for b in self.layout.blocks(r) {
                for j in b.cols.clone() {
                    for i in b.rows.clone() {
                        whole[i + j * m] = theirs[b.local_index(i, j)];
                    }
                }
            }
            at += count;
        }
        Ok(whole)
    }

    /// `A = alpha·A` on the local elements (`alpha = 0` writes zeros without reading, so NaN
    /// does not survive it, as BLAS's `beta = 0`). No communication.
    pub fn scale(&mut self, alpha: T) {
        if alpha == T::zero() {
            self.local.fill(T::zero());
        } else if alpha != T::one() {
            self.local.iter_mut().for_each(|x| *x = alpha * *x);
        }
    }

    /// `A = A + alpha·X` for `X` of the same shape in any layout: [`transform`] with
    /// `beta = 1`, which moves nothing when `X` is laid out as `A` (the counters say so).
    ///
    /// # Collective
    /// # Errors
    /// As [`transform`] (a shape mismatch, the same on every rank).
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::{run_ranks, Communicator};
    /// use redblue_dist::{BlockCyclic, GridLayout, OwnedDistMatrix};
    ///
    /// let out = run_ranks(2, |comm| {
    ///     let bc = BlockCyclic::near_square(6, 6, 2, 2, 2).unwrap();
    ///     let mut y = OwnedDistMatrix::<f64, _>::random(&comm, bc.clone(), 1).unwrap();
    ///     let x = OwnedDistMatrix::<f64, _>::random(&comm, bc, 1).unwrap();
    ///     comm.reset_stats();
    ///     y.axpy(&comm, -1.0, &x).unwrap(); // the same layout: local, y = 0
    ///     let moved = comm.stats().words_sent;
    ///     let elsewhere = OwnedDistMatrix::<f64, _>::random(&comm, GridLayout::even(6, 6, 1, 2).unwrap(), 2).unwrap();
    ///     y.axpy(&comm, 2.0, &elsewhere).unwrap(); // another layout: one transform
    ///     (moved, y.norm_max(&comm).unwrap(), elsewhere.norm_max(&comm).unwrap())
    /// });
    /// assert!(out.iter().all(|&(moved, y, x)| moved == 0 && y == 2.0 * x));
    /// ```
    pub fn axpy<C, X>(&mut self, comm: &C, alpha: T, x: &X) -> Result<(), DistError>
    where
        C: Communicator,
        X: DistMatrix<T> + ?Sized,
    {
        transform(comm, alpha, x, Op::NoTrans, T::one(), self)
    }

    /// `P·A` in this matrix's layout: row `i` of the result is row `perm[i]` of `self`. One
    /// all-to-all round ([`transform`] from the rows where they are, seen in a
    /// [`RowPermuted`] layout).
    ///
    /// # Collective
    /// # Errors
    /// [`DistError::InvalidLayout`] if `perm` is not a permutation of the rows (the same on
    /// every rank, as every rank passes the same `perm`); communication failures.
    pub fn permute_rows<C: Communicator>(
        &self,
        comm: &C,
        perm: &[usize],
    ) -> Result<Self, DistError> {
        let view = View {
            layout: RowPermuted::new(self.layout.clone(), perm.to_vec())?,
            rank: self.rank,
            local: &self.local,
        };
        let mut out = Self::zeros(comm, self.layout.clone())?;
        transform(comm, T::one(), &view, Op::NoTrans, T::zero(), &mut out)?;
        Ok(out)
    }

    /// Sets every local element to `f(i, j)`. No communication.
    pub fn fill_with(&mut self, mut f: impl FnMut(usize, usize) -> T) {
        for b in self.layout.blocks(self.rank) {
            for j in b.cols.clone() {
                for i in b.rows.clone() {
                    self.local[b.local_index(i, j)] = f(i, j);
                }
            }
        }
    }

    /// Calls `f(i, j, value)` for every local element. No communication.
    pub fn for_each_local(&self, mut f: impl FnMut(usize, usize, T)) {
        for b in self.layout.blocks(self.rank) {
            for j in b.cols.clone() {
                for i in b.rows.clone() {
                    f(i, j, self.local[b.local_index(i, j)]);
                }
            }
        }
    }

    /// The blocks this rank owns (global ranges and their place in [`DistMatrix::local`]).
    pub fn local_blocks(&self) -> Vec<LocalBlock> {
        self.layout.blocks(self.rank)
    }

    /// Element `(i, j)` if this rank owns it.
    pub fn get(&self, i: usize, j: usize) -> Option<T> {
        let (m, n) = self.shape();
        if i >= m || j >= n {
            return None;
        }
        let (owner, pos) = self.layout.to_local(i, j);
        (owner == self.rank).then(|| self.local[pos])
    }

    /// The local buffer, consuming the matrix.
    pub fn into_local(self) -> Vec<T> {
        self.local
    }

    /// Frobenius norm `sqrt(Σ |a_ij|²)`, on every rank.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub fn norm_fro<C: Communicator>(&self, comm: &C) -> Result<T::Real, CommError> {
        let mut local = 0.0f64;
        self.for_each_local(|_, _, x| local += x.abs_sqr().to_f64());
        let total = comm.all_reduce_one(local, ReduceOp::Sum)?;
        Ok(<T::Real as RealScalar>::from_f64(total.sqrt()))
    }

    /// One-norm `max_j Σ_i |a_ij|` (the largest column sum), on every rank.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub fn norm_one<C: Communicator>(&self, comm: &C) -> Result<T::Real, CommError> {
        let sums = self.abs_sums(comm, |_, j| j, self.shape().1)?;
        Ok(<T::Real as RealScalar>::from_f64(max_of(&sums)))
    }

    /// Infinity-norm `max_i Σ_j |a_ij|` (the largest row sum), on every rank.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub fn norm_inf<C: Communicator>(&self, comm: &C) -> Result<T::Real, CommError> {
        let sums = self.abs_sums(comm, |i, _| i, self.shape().0)?;
        Ok(<T::Real as RealScalar>::from_f64(max_of(&sums)))
    }

    /// `len` sums of `|a_ij|` over the elements with `key(i, j)` equal to the sum's index,
    /// all-reduced.
    fn abs_sums<C: Communicator>(
        &self,
        comm: &C,
        key: impl Fn(usize, usize) -> usize,
        len: usize,
    ) -> Result<Vec<f64>, CommError> {
        let mut sums = vec![0.0f64; len];
        self.for_each_local(|i, j, x| sums[key(i, j)] += x.abs().to_f64());
        comm.all_reduce_in_place(&mut sums, ReduceOp::Sum)?;
        Ok(sums)
    }

    /// Max norm `max |a_ij|` (NaN if any element is NaN), on every rank.
    ///
    /// # Collective
    /// # Errors
    /// A communication failure.
    pub fn norm_max<C: Communicator>(&self, comm: &C) -> Result<T::Real, CommError> {
        let (mut local, mut nan) = (0.0f64, false);
        self.for_each_local(|_, _, x| {
            let a = x.abs().to_f64();
            nan |= a.is_nan();
            local = local.max(a);
        });
        let max = comm.all_reduce_one(local, ReduceOp::Max)?;
        let nan = comm.any(nan)?;
        Ok(<T::Real as RealScalar>::from_f64(if nan {
            f64::NAN
        } else {
            max
        }))
    }
}

impl<T: Scalar, L: Layout> DistMatrix<T> for OwnedDistMatrix<T, L> {
    type Layout = L;
    fn layout(&self) -> &L {
        &self.layout
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn local(&self) -> &[T] {
        &self.local
    }
}

impl<T: Scalar, L: Layout> DistMatrixMut<T> for OwnedDistMatrix<T, L> {
    fn local_mut(&mut self) -> &mut [T] {
        &mut self.local
    }
}

/// A distributed matrix whose local buffer belongs to someone else, read only: a ScaLAPACK
/// local array, a slice of a larger allocation. [`BorrowedDistMatrixMut`] is the writable one.
///
/// # Examples
/// ```
/// use redblue_comm::{run_ranks, Communicator};
/// use redblue_dist::{BlockCyclic, BorrowedDistMatrix, DistMatrix, Layout};
///
/// let sums = run_ranks(2, |comm| {
///     let layout = BlockCyclic::new(4, 4, 2, 2, 1, 2).unwrap();
///     let mine = vec![1.0f64; layout.local_len(comm.rank())];
///     let a = BorrowedDistMatrix::new(&comm, layout, &mine).unwrap();
///     a.local().iter().sum::<f64>()
/// });
/// assert_eq!(sums, vec![8.0, 8.0]);
/// ```
#[derive(Debug)]
pub struct BorrowedDistMatrix<'a, T, L> {
    layout: L,
    rank: usize,
    local: &'a [T],
}

/// A distributed matrix whose local buffer belongs to someone else, written in place by the
/// algorithms as an [`OwnedDistMatrix`] would be.
#[derive(Debug)]
pub struct BorrowedDistMatrixMut<'a, T, L> {
    layout: L,
    rank: usize,
    local: &'a mut [T],
}

/// Checks that `local` is `layout`'s local buffer on this rank of `comm`; gives the rank.
fn check_local<C: Communicator>(
    comm: &C,
    layout: &impl Layout,
    len: usize,
) -> Result<usize, DistError> {
    check_layout_fits(comm, layout)?;
    let expected = layout.local_len(comm.rank());
    if len != expected {
        return Err(DistError::BufferLength {
            what: "local buffer",
            expected,
            found: len,
        });
    }
    Ok(comm.rank())
}

impl<'a, T: Scalar, L: Layout> BorrowedDistMatrix<'a, T, L> {
    /// `layout` over `local`, this rank's buffer.
    ///
    /// # Errors
    /// [`DistError::BufferLength`] if `local` does not have the layout's local length on this
    /// rank; [`DistError::LayoutLargerThanComm`] as in [`OwnedDistMatrix::zeros`].
    pub fn new<C: Communicator>(comm: &C, layout: L, local: &'a [T]) -> Result<Self, DistError> {
        let rank = check_local(comm, &layout, local.len())?;
        Ok(BorrowedDistMatrix {
            layout,
            rank,
            local,
        })
    }
}

impl<'a, T: Scalar, L: Layout> BorrowedDistMatrixMut<'a, T, L> {
    /// `layout` over `local`, this rank's buffer.
    ///
    /// # Errors
    /// As [`BorrowedDistMatrix::new`].
    pub fn new<C: Communicator>(
        comm: &C,
        layout: L,
        local: &'a mut [T],
    ) -> Result<Self, DistError> {
        let rank = check_local(comm, &layout, local.len())?;
        Ok(BorrowedDistMatrixMut {
            layout,
            rank,
            local,
        })
    }
}

impl<T: Scalar, L: Layout> DistMatrix<T> for BorrowedDistMatrix<'_, T, L> {
    type Layout = L;
    fn layout(&self) -> &L {
        &self.layout
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn local(&self) -> &[T] {
        self.local
    }
}

impl<T: Scalar, L: Layout> DistMatrix<T> for BorrowedDistMatrixMut<'_, T, L> {
    type Layout = L;
    fn layout(&self) -> &L {
        &self.layout
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn local(&self) -> &[T] {
        self.local
    }
}

impl<T: Scalar, L: Layout> DistMatrixMut<T> for BorrowedDistMatrixMut<'_, T, L> {
    fn local_mut(&mut self) -> &mut [T] {
        self.local
    }
}

/// Another layout's view of a borrowed local buffer.
struct View<'a, T, L> {
    layout: L,
    rank: usize,
    local: &'a [T],
}

impl<T: Scalar, L: Layout> DistMatrix<T> for View<'_, T, L> {
    type Layout = L;
    fn layout(&self) -> &L {
        &self.layout
    }
    fn rank(&self) -> usize {
        self.rank
    }
    fn local(&self) -> &[T] {
        self.local
    }
}

/// `len` zeros, or [`DistError::OutOfMemory`] instead of an abort when they cannot be had.
pub(crate) fn try_zeros<T: Scalar>(len: usize, what: &'static str) -> Result<Vec<T>, DistError> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| DistError::OutOfMemory {
            what,
            bytes: len as u128 * std::mem::size_of::<T>() as u128,
        })?;
    v.resize(len, T::zero());
    Ok(v)
}

/// The largest of `values` (NaN if any is NaN; 0 for none).
fn max_of(values: &[f64]) -> f64 {
    values.iter().fold(0.0f64, |m, &x| {
        if x.is_nan() || m.is_nan() {
            f64::NAN
        } else {
            m.max(x)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use redblue_comm::SelfComm;

    #[test]
    fn a_buffer_too_large_to_allocate_is_an_error_not_an_abort() {
        let huge = OnRank::new(1 << 40, 1 << 22, 0, 1).unwrap();
        let e = OwnedDistMatrix::<f64, _>::zeros(&SelfComm::new(), huge).unwrap_err();
        assert_eq!(
            e,
            DistError::OutOfMemory {
                what: "a local buffer",
                bytes: (1u128 << 62) * 8
            }
        );
        assert!(e.to_string().contains("cannot allocate"));
    }

    #[test]
    fn scale_by_zero_clears_nan_and_scale_by_two_doubles() {
        let comm = SelfComm::new();
        let layout = crate::GridLayout::even(3, 2, 1, 1).unwrap();
        let mut a = OwnedDistMatrix::from_fn(&comm, layout, |i, j| (i + 3 * j) as f64).unwrap();
        a.scale(2.0);
        assert_eq!(a.local, vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
        a.local[1] = f64::NAN;
        a.scale(0.0);
        assert_eq!(a.local, vec![0.0; 6]);
    }

    #[test]
    fn all_gather_gives_every_rank_the_matrix_from_any_layout() {
        use crate::{BlockCyclic, GridLayout};
        use redblue_comm::run_ranks;
        let (m, n) = (7, 5);
        let expected: Vec<f64> = (0..n)
            .flat_map(|j| (0..m).map(move |i| (i * 10 + j) as f64))
            .collect();
        for p in 1..=5 {
            let out = run_ranks(p, |comm| {
                let value = |i: usize, j: usize| (i * 10 + j) as f64;
                let layouts: [crate::AnyLayout; 3] = [
                    BlockCyclic::near_square(m, n, 2, 3, p).unwrap().into(),
                    GridLayout::even(m, n, 1, p).unwrap().into(),
                    // Over fewer ranks than the communicator: the others hold nothing.
                    OnRank::new(m, n, 0, 1).unwrap().into(),
                ];
                let mut copies = Vec::new();
                for layout in layouts {
                    let a = OwnedDistMatrix::from_fn(&comm, layout, value).unwrap();
                    comm.reset_stats();
                    copies.push(a.all_gather(&comm).unwrap());
                }
                (copies, comm.stats().words_received)
            });
            for (copies, _) in &out {
                assert!(copies.iter().all(|c| *c == expected), "P={p}");
            }
            // The last, from one rank: every other rank receives the whole matrix once (and
            // a word or two of the memory agreement).
            let whole = (m * n) as u64;
            assert!(out
                .iter()
                .skip(1)
                .all(|(_, w)| (whole..whole + 2 * p as u64).contains(w)));
        }
    }
}
