//! Column-major matrix views with a leading dimension ([`MatRef`], [`MatMut`]) and the owned
//! [`Mat`].
//!
//! A view is a slice, a shape and a leading dimension `ld`: element `(i, j)` lives at
//! `data[i + j·ld]`. That is exactly what BLAS and LAPACK take, so any view can be handed to a
//! system BLAS, and it is what a block of a distributed matrix looks like in its rank's local
//! buffer. Views are checked once when built; the accessors only bound-check indices.
//!
//! Views own a slice rather than a raw pointer, so they are safe to build and to split by
//! columns. Splitting by rows (two disjoint views that interleave in memory) is not possible
//! with slices; kernels that need it convert to faer views first ([`MatMut::into_faer`]).

use crate::KernelError;
use redblue_core::Scalar;
use std::fmt;
use std::ops::{Index, IndexMut};

/// The number of elements a `nrows × ncols` view with leading dimension `ld` spans, after
/// checking `ld ≥ max(1, nrows)`. A view without elements spans nothing.
fn span(nrows: usize, ncols: usize, ld: usize) -> Result<usize, KernelError> {
    if ld < nrows.max(1) {
        return Err(KernelError::InvalidLeadingDimension { nrows, ld });
    }
    if nrows == 0 || ncols == 0 {
        return Ok(0);
    }
    ld.checked_mul(ncols - 1)
        .and_then(|x| x.checked_add(nrows))
        .ok_or(KernelError::BufferTooShort {
            needed: usize::MAX,
            len: 0,
        })
}

/// Checks `len` against the span of the view and returns the span.
fn checked_span(nrows: usize, ncols: usize, ld: usize, len: usize) -> Result<usize, KernelError> {
    let needed = span(nrows, ncols, ld).map_err(|e| match e {
        KernelError::BufferTooShort { needed, .. } => KernelError::BufferTooShort { needed, len },
        e => e,
    })?;
    if len < needed {
        return Err(KernelError::BufferTooShort { needed, len });
    }
    Ok(needed)
}

/// The range of `data` holding the `m × n` block at `(i0, j0)` of a view with leading
/// dimension `ld` (empty when the block has no element).
///
/// # Panics
/// If the block does not fit in the `nrows × ncols` view.
#[track_caller]
fn block_range(
    (nrows, ncols, ld): (usize, usize, usize),
    (i0, j0, m, n): (usize, usize, usize, usize),
) -> std::ops::Range<usize> {
    assert!(
        i0.checked_add(m).is_some_and(|e| e <= nrows)
            && j0.checked_add(n).is_some_and(|e| e <= ncols),
        "block ({i0}, {j0}) of shape {m}×{n} does not fit in a {nrows}×{ncols} view"
    );
    if m == 0 || n == 0 {
        return 0..0;
    }
    let start = i0 + j0 * ld;
    start..start + ld * (n - 1) + m
}

#[track_caller]
fn check_index(i: usize, j: usize, nrows: usize, ncols: usize) {
    assert!(
        i < nrows && j < ncols,
        "index ({i}, {j}) out of bounds for a {nrows}×{ncols} view"
    );
}

/// A read-only column-major view: `nrows × ncols` elements, column `j` starting at `j·ld`.
///
/// Cheap to copy. Invariants (checked by [`MatRef::from_slice`]): `ld ≥ max(1, nrows)`, and the
/// slice holds every element of the view.
pub struct MatRef<'a, T> {
    data: &'a [T],
    nrows: usize,
    ncols: usize,
    ld: usize,
}

impl<T> Clone for MatRef<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for MatRef<'_, T> {}

impl<T> fmt::Debug for MatRef<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatRef")
            .field("nrows", &self.nrows)
            .field("ncols", &self.ncols)
            .field("ld", &self.ld)
            .finish_non_exhaustive()
    }
}

impl<'a, T> MatRef<'a, T> {
    /// Views `data` as an `nrows × ncols` column-major matrix with leading dimension `ld`.
    ///
    /// # Errors
    /// [`KernelError::InvalidLeadingDimension`] if `ld < max(1, nrows)`;
    /// [`KernelError::BufferTooShort`] if the view has elements and
    /// `data.len() < ld·(ncols − 1) + nrows`. A view without elements needs no data.
    pub fn from_slice(
        data: &'a [T],
        nrows: usize,
        ncols: usize,
        ld: usize,
    ) -> Result<Self, KernelError> {
        let needed = checked_span(nrows, ncols, ld, data.len())?;
        Ok(MatRef {
            data: &data[..needed],
            nrows,
            ncols,
            ld,
        })
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// `(nrows, ncols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    /// The leading dimension: the distance in elements between two columns.
    pub fn ld(&self) -> usize {
        self.ld
    }

    /// The underlying slice, from element `(0, 0)` to element `(nrows − 1, ncols − 1)`
    /// (padding between columns included; empty if the view has no element).
    pub fn as_slice(&self) -> &'a [T] {
        self.data
    }

    /// Element `(i, j)`.
    ///
    /// # Panics
    /// If `i ≥ nrows` or `j ≥ ncols`.
    #[track_caller]
    pub fn get(&self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        check_index(i, j, self.nrows, self.ncols);
        self.data[i + j * self.ld]
    }

    /// Column `j` as a slice of `nrows` elements.
    ///
    /// # Panics
    /// If `j ≥ ncols`.
    #[track_caller]
    pub fn col(&self, j: usize) -> &'a [T] {
        let r = block_range((self.nrows, self.ncols, self.ld), (0, j, self.nrows, 1));
        &self.data[r]
    }

    /// The `m × n` block whose top-left element is `(i0, j0)`, with the same leading dimension.
    ///
    /// # Panics
    /// If the block does not fit: `i0 + m > nrows` or `j0 + n > ncols`.
    #[track_caller]
    pub fn submatrix(&self, i0: usize, j0: usize, m: usize, n: usize) -> MatRef<'a, T> {
        let r = block_range((self.nrows, self.ncols, self.ld), (i0, j0, m, n));
        MatRef {
            data: &self.data[r],
            nrows: m,
            ncols: n,
            ld: self.ld,
        }
    }

    /// A copy of the view (for symmetry with [`MatMut::rb`]; `MatRef` is `Copy`).
    pub fn rb(&self) -> MatRef<'_, T> {
        *self
    }

    /// The same view as a faer view (row stride 1, column stride `ld`), for calling faer.
    pub fn to_faer(self) -> faer::MatRef<'a, T> {
        faer::MatRef::from_column_major_slice_with_stride(
            self.data, self.nrows, self.ncols, self.ld,
        )
    }

    /// Copies the elements into an owned, contiguous matrix.
    pub fn to_owned(&self) -> Mat<T>
    where
        T: Copy,
    {
        Mat::from_fn(self.nrows, self.ncols, |i, j| self.get(i, j))
    }
}

/// A mutable column-major view: `nrows × ncols` elements, column `j` starting at `j·ld`.
///
/// Pass it by value to kernels; [`rb_mut`](Self::rb_mut) reborrows it for a shorter call and
/// [`rb`](Self::rb) gives a read-only [`MatRef`]. Elements between columns (rows `nrows..ld`)
/// belong to the view's slice but are never written by this crate.
pub struct MatMut<'a, T> {
    data: &'a mut [T],
    nrows: usize,
    ncols: usize,
    ld: usize,
}

impl<T> fmt::Debug for MatMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MatMut")
            .field("nrows", &self.nrows)
            .field("ncols", &self.ncols)
            .field("ld", &self.ld)
            .finish_non_exhaustive()
    }
}

impl<'a, T> MatMut<'a, T> {
    /// Views `data` as a mutable `nrows × ncols` column-major matrix with leading dimension `ld`.
    ///
    /// # Errors
    /// As [`MatRef::from_slice`].
    pub fn from_slice(
        data: &'a mut [T],
        nrows: usize,
        ncols: usize,
        ld: usize,
    ) -> Result<Self, KernelError> {
        let needed = checked_span(nrows, ncols, ld, data.len())?;
        Ok(MatMut {
            data: &mut data[..needed],
            nrows,
            ncols,
            ld,
        })
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// `(nrows, ncols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    /// The leading dimension: the distance in elements between two columns.
    pub fn ld(&self) -> usize {
        self.ld
    }

    /// A read-only view of the same elements, borrowing `self`.
    pub fn rb(&self) -> MatRef<'_, T> {
        MatRef {
            data: self.data,
            nrows: self.nrows,
            ncols: self.ncols,
            ld: self.ld,
        }
    }

    /// A mutable view of the same elements for a shorter lifetime, so `self` can be used again
    /// after the reborrow ends.
    pub fn rb_mut(&mut self) -> MatMut<'_, T> {
        MatMut {
            data: self.data,
            nrows: self.nrows,
            ncols: self.ncols,
            ld: self.ld,
        }
    }

    /// Turns the view into a read-only one for its whole lifetime.
    pub fn into_ref(self) -> MatRef<'a, T> {
        MatRef {
            data: self.data,
            nrows: self.nrows,
            ncols: self.ncols,
            ld: self.ld,
        }
    }

    /// Element `(i, j)`.
    ///
    /// # Panics
    /// If `i ≥ nrows` or `j ≥ ncols`.
    #[track_caller]
    pub fn get(&self, i: usize, j: usize) -> T
    where
        T: Copy,
    {
        check_index(i, j, self.nrows, self.ncols);
        self.data[i + j * self.ld]
    }

    /// A mutable reference to element `(i, j)`.
    ///
    /// # Panics
    /// If `i ≥ nrows` or `j ≥ ncols`.
    #[track_caller]
    pub fn get_mut(&mut self, i: usize, j: usize) -> &mut T {
        check_index(i, j, self.nrows, self.ncols);
        &mut self.data[i + j * self.ld]
    }

    /// Column `j` as a slice of `nrows` elements.
    ///
    /// # Panics
    /// If `j ≥ ncols`.
    #[track_caller]
    pub fn col(&self, j: usize) -> &[T] {
        self.rb().col(j)
    }

    /// Column `j` as a mutable slice of `nrows` elements.
    ///
    /// # Panics
    /// If `j ≥ ncols`.
    #[track_caller]
    pub fn col_mut(&mut self, j: usize) -> &mut [T] {
        let r = block_range((self.nrows, self.ncols, self.ld), (0, j, self.nrows, 1));
        &mut self.data[r]
    }

    /// The `m × n` block whose top-left element is `(i0, j0)`, consuming the view (reborrow
    /// first with [`rb_mut`](Self::rb_mut) to keep it).
    ///
    /// # Panics
    /// If the block does not fit: `i0 + m > nrows` or `j0 + n > ncols`.
    #[track_caller]
    pub fn submatrix_mut(self, i0: usize, j0: usize, m: usize, n: usize) -> MatMut<'a, T> {
        let r = block_range((self.nrows, self.ncols, self.ld), (i0, j0, m, n));
        MatMut {
            data: &mut self.data[r],
            nrows: m,
            ncols: n,
            ld: self.ld,
        }
    }

    /// Splits the view into columns `0..j` and `j..ncols`.
    ///
    /// # Panics
    /// If `j > ncols`.
    #[track_caller]
    pub fn split_at_col_mut(self, j: usize) -> (MatMut<'a, T>, MatMut<'a, T>) {
        assert!(
            j <= self.ncols,
            "split column {j} is past the {} columns of the view",
            self.ncols
        );
        let (nrows, ncols, ld) = (self.nrows, self.ncols, self.ld);
        // Column j starts at j·ld; the last column of the left part may end before that (no
        // padding after it), and the slice may be shorter than j·ld when j == ncols.
        let at = (j * ld).min(self.data.len());
        let (left, right) = self.data.split_at_mut(at);
        let left_len = if nrows == 0 || j == 0 {
            0
        } else {
            ld * (j - 1) + nrows
        };
        (
            MatMut {
                data: &mut left[..left_len],
                nrows,
                ncols: j,
                ld,
            },
            MatMut {
                data: right,
                nrows,
                ncols: ncols - j,
                ld,
            },
        )
    }

    /// Sets every element of the view (not the padding between columns) to `value`.
    pub fn fill(&mut self, value: T)
    where
        T: Copy,
    {
        for j in 0..self.ncols {
            self.col_mut(j).fill(value);
        }
    }

    /// Copies `src` into the view.
    ///
    /// # Errors
    /// [`KernelError::ShapeMismatch`] if the shapes differ; nothing is written then.
    pub fn copy_from(&mut self, src: MatRef<'_, T>) -> Result<(), KernelError>
    where
        T: Copy,
    {
        if src.shape() != self.shape() {
            return Err(KernelError::ShapeMismatch {
                kernel: "copy_from",
                operand: "source",
                expected: self.shape(),
                found: src.shape(),
            });
        }
        for j in 0..self.ncols {
            self.col_mut(j).copy_from_slice(src.col(j));
        }
        Ok(())
    }

    /// A faer view of the same elements (row stride 1, column stride `ld`), borrowing `self`.
    pub fn to_faer(&mut self) -> faer::MatMut<'_, T> {
        self.rb_mut().into_faer()
    }

    /// Turns the view into a faer view for its whole lifetime.
    pub fn into_faer(self) -> faer::MatMut<'a, T> {
        faer::MatMut::from_column_major_slice_with_stride_mut(
            self.data, self.nrows, self.ncols, self.ld,
        )
    }
}

/// An owned, contiguous column-major matrix (leading dimension `max(1, nrows)`).
#[derive(Clone, Debug, PartialEq)]
pub struct Mat<T> {
    data: Vec<T>,
    nrows: usize,
    ncols: usize,
}

impl<T> Mat<T> {
    /// An `nrows × ncols` matrix of zeros.
    ///
    /// # Panics
    /// If `nrows · ncols` overflows `usize`.
    pub fn zeros(nrows: usize, ncols: usize) -> Self
    where
        T: Scalar,
    {
        Self::from_fn(nrows, ncols, |_, _| T::zero())
    }

    /// The `nrows × ncols` matrix with elements `f(i, j)`, evaluated column by column.
    ///
    /// # Panics
    /// If `nrows · ncols` overflows `usize`.
    pub fn from_fn(nrows: usize, ncols: usize, mut f: impl FnMut(usize, usize) -> T) -> Self {
        let len = nrows
            .checked_mul(ncols)
            .expect("matrix size overflows usize");
        let mut data = Vec::with_capacity(len);
        for j in 0..ncols {
            for i in 0..nrows {
                data.push(f(i, j));
            }
        }
        Mat { data, nrows, ncols }
    }

    /// Number of rows.
    pub fn nrows(&self) -> usize {
        self.nrows
    }

    /// Number of columns.
    pub fn ncols(&self) -> usize {
        self.ncols
    }

    /// `(nrows, ncols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }

    /// The leading dimension, `max(1, nrows)`.
    pub fn ld(&self) -> usize {
        self.nrows.max(1)
    }

    /// The elements, column after column.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// A read-only view of the whole matrix.
    pub fn as_ref(&self) -> MatRef<'_, T> {
        MatRef {
            data: &self.data,
            nrows: self.nrows,
            ncols: self.ncols,
            ld: self.ld(),
        }
    }

    /// A mutable view of the whole matrix.
    pub fn as_mut(&mut self) -> MatMut<'_, T> {
        let ld = self.ld();
        MatMut {
            data: &mut self.data,
            nrows: self.nrows,
            ncols: self.ncols,
            ld,
        }
    }
}

impl<T> Index<(usize, usize)> for Mat<T> {
    type Output = T;

    #[track_caller]
    fn index(&self, (i, j): (usize, usize)) -> &T {
        check_index(i, j, self.nrows, self.ncols);
        &self.data[i + j * self.nrows]
    }
}

impl<T> IndexMut<(usize, usize)> for Mat<T> {
    #[track_caller]
    fn index_mut(&mut self, (i, j): (usize, usize)) -> &mut T {
        check_index(i, j, self.nrows, self.ncols);
        &mut self.data[i + j * self.nrows]
    }
}

/// Column `j` of a faer view with row stride 1 (as every view built from [`MatRef`] or
/// [`MatMut`], and its blocks, has) as a slice.
///
/// # Panics
/// If the row stride is not 1 or `j` is out of bounds.
pub(crate) fn faer_col<'a, T>(a: faer::MatRef<'a, T>, j: usize) -> &'a [T] {
    a.col(j)
        .try_as_col_major()
        .expect("views built from MatRef / MatMut have row stride 1")
        .as_slice()
}

/// Column `j` of a faer view with row stride 1 as a mutable slice.
///
/// # Panics
/// If the row stride is not 1 or `j` is out of bounds.
pub(crate) fn faer_col_mut<'a, T>(a: faer::MatMut<'a, T>, j: usize) -> &'a mut [T] {
    a.col_mut(j)
        .try_as_col_major_mut()
        .expect("views built from MatRef / MatMut have row stride 1")
        .as_slice_mut()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iota(len: usize) -> Vec<f64> {
        (0..len).map(|x| x as f64).collect()
    }

    #[test]
    fn from_slice_validates_ld_and_length() {
        let data = iota(20);
        assert!(MatRef::from_slice(&data, 3, 4, 5).is_ok());
        // Exactly ld·(ncols − 1) + nrows elements suffice.
        assert!(MatRef::from_slice(&data[..18], 3, 4, 5).is_ok());
        assert_eq!(
            MatRef::from_slice(&data[..17], 3, 4, 5).unwrap_err(),
            KernelError::BufferTooShort {
                needed: 18,
                len: 17
            }
        );
        assert_eq!(
            MatRef::from_slice(&data, 3, 4, 2).unwrap_err(),
            KernelError::InvalidLeadingDimension { nrows: 3, ld: 2 }
        );
        // ld ≥ max(1, nrows): zero is never a valid leading dimension.
        assert_eq!(
            MatRef::<f64>::from_slice(&[], 0, 4, 0).unwrap_err(),
            KernelError::InvalidLeadingDimension { nrows: 0, ld: 0 }
        );
        // Views without elements need no data.
        assert!(MatRef::<f64>::from_slice(&[], 0, 4, 1).is_ok());
        assert!(MatRef::<f64>::from_slice(&[], 3, 0, 3).is_ok());
        let mut buf = iota(20);
        assert!(MatMut::from_slice(&mut buf, 3, 4, 5).is_ok());
        assert!(MatMut::from_slice(&mut buf[..10], 3, 4, 5).is_err());
        assert!(matches!(
            MatRef::from_slice(&data, 2, usize::MAX, usize::MAX),
            Err(KernelError::BufferTooShort { len: 20, .. })
        ));
    }

    #[test]
    fn indexing_columns_and_blocks_follow_the_leading_dimension() {
        let data = iota(20);
        let a = MatRef::from_slice(&data, 3, 4, 5).unwrap();
        assert_eq!(a.shape(), (3, 4));
        assert_eq!(a.ld(), 5);
        assert_eq!(a.get(2, 3), 17.0);
        assert_eq!(a.col(1), &[5.0, 6.0, 7.0]);
        let b = a.submatrix(1, 2, 2, 2);
        assert_eq!(b.shape(), (2, 2));
        assert_eq!((b.get(0, 0), b.get(1, 1)), (11.0, 17.0));
        assert_eq!(b.col(1), &[16.0, 17.0]);
        assert_eq!(a.submatrix(3, 4, 0, 0).shape(), (0, 0));
        assert_eq!(a.submatrix(0, 1, 3, 0).shape(), (3, 0));
        let owned = b.to_owned();
        assert_eq!(owned.ld(), 2);
        assert_eq!(owned[(1, 0)], 12.0);
        let f = a.to_faer();
        assert_eq!((f.nrows(), f.ncols(), f.col_stride()), (3, 4, 5));
        assert_eq!(f[(2, 3)], 17.0);
    }

    #[test]
    #[should_panic(expected = "does not fit")]
    fn submatrix_out_of_range_panics() {
        let data = iota(20);
        let a = MatRef::from_slice(&data, 3, 4, 5).unwrap();
        let _ = a.submatrix(2, 0, 2, 1);
    }

    #[test]
    #[should_panic(expected = "out of bounds")]
    fn get_out_of_range_panics() {
        let data = iota(20);
        let a = MatRef::from_slice(&data, 3, 4, 5).unwrap();
        let _ = a.get(3, 0);
    }

    #[test]
    fn mutable_views_write_only_their_elements() {
        let mut data = vec![-1.0; 20];
        let mut c = MatMut::from_slice(&mut data, 3, 4, 5).unwrap();
        c.fill(0.0);
        *c.get_mut(2, 3) = 7.0;
        c.col_mut(0)[1] = 4.0;
        {
            let mut block = c.rb_mut().submatrix_mut(1, 1, 2, 2);
            block.fill(9.0);
            assert_eq!(block.get(1, 1), 9.0);
        }
        assert_eq!(c.get(2, 3), 7.0);
        assert_eq!(c.rb().get(1, 0), 4.0);
        let (mut left, mut right) = c.split_at_col_mut(1);
        assert_eq!((left.shape(), right.shape()), ((3, 1), (3, 3)));
        left.fill(1.0);
        right.col_mut(2)[0] = 5.0;
        assert_eq!(right.into_ref().get(1, 0), 9.0);
        // Padding rows 3 and 4 of each column are untouched.
        for j in 0..3 {
            assert_eq!(&data[5 * j + 3..5 * j + 5], &[-1.0, -1.0]);
        }
        assert_eq!(&data[..3], &[1.0, 1.0, 1.0]);
        assert_eq!(data[15], 5.0);
        assert_eq!(data[17], 7.0);
    }

    #[test]
    fn split_at_every_column_including_the_ends() {
        let mut data = iota(18); // 3×4, ld 5, no padding after the last column
        for j in 0..=4 {
            let c = MatMut::from_slice(&mut data, 3, 4, 5).unwrap();
            let (l, r) = c.split_at_col_mut(j);
            assert_eq!((l.ncols(), r.ncols()), (j, 4 - j));
            if j < 4 {
                assert_eq!(r.get(0, 0), (5 * j) as f64);
            }
            if j > 0 {
                assert_eq!(l.get(2, j - 1), (5 * (j - 1) + 2) as f64);
            }
        }
        let mut empty: [f64; 0] = [];
        let c = MatMut::from_slice(&mut empty, 0, 3, 1).unwrap();
        let (l, r) = c.split_at_col_mut(2);
        assert_eq!((l.shape(), r.shape()), ((0, 2), (0, 1)));
    }

    #[test]
    fn owned_matrix_views_and_copies() {
        let mut m = Mat::from_fn(2, 3, |i, j| (10 * i + j) as f64);
        assert_eq!(m[(1, 2)], 12.0);
        m[(0, 1)] = -3.0;
        assert_eq!(m.as_ref().get(0, 1), -3.0);
        assert_eq!(m.as_slice(), &[0.0, 10.0, -3.0, 11.0, 2.0, 12.0]);
        let z = Mat::<f64>::zeros(2, 3);
        m.as_mut().copy_from(z.as_ref()).unwrap();
        assert_eq!(m, z);
        assert!(m
            .as_mut()
            .copy_from(Mat::<f64>::zeros(3, 2).as_ref())
            .is_err());
        let e = Mat::<f64>::zeros(0, 5);
        assert_eq!((e.ld(), e.as_ref().shape()), (1, (0, 5)));
        let mut f = m.as_mut();
        f.to_faer()[(1, 1)] = 8.0;
        assert_eq!(m[(1, 1)], 8.0);
    }
}
