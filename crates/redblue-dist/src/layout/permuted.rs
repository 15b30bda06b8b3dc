//! [`RowPermuted`]: the rows of a matrix in another order, stored where they already are.

use super::{is_permutation, split_index, Layout};
use crate::DistError;

/// The matrix `P·A` seen in the storage of `A`: row `i` of `P·A` is row `perm[i]` of `A`, so
/// element `(i, j)` lives where `inner` keeps `(perm[i], j)`. Every row is a block row of its
/// own; the column blocks are `inner`'s.
///
/// With [`crate::transform`] from a matrix viewed in this layout, a row permutation is one
/// all-to-all round, like any other change of layout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowPermuted<L> {
    inner: L,
    perm: Vec<usize>,
    /// The block row of `inner` that holds row `perm[i]`.
    inner_block_row: Vec<usize>,
    row_splits: Vec<usize>,
}

impl<L: Layout> RowPermuted<L> {
    /// `inner` with its rows taken in the order `perm`.
    ///
    /// # Errors
    /// [`DistError::InvalidLayout`] if `perm` is not a permutation of `0..rows`.
    pub fn new(inner: L, perm: Vec<usize>) -> Result<Self, DistError> {
        let m = inner.shape().0;
        if !is_permutation(&perm, m) {
            return Err(DistError::InvalidLayout(format!(
                "a row permutation of {m} rows must hold each of 0..{m} once"
            )));
        }
        // The block row alone (a matrix of no columns has rows, and no column 0 to ask with).
        let inner_block_row = perm
            .iter()
            .map(|&r| split_index(inner.row_splits(), r))
            .collect();
        Ok(RowPermuted {
            inner,
            perm,
            inner_block_row,
            row_splits: (0..=m).collect(),
        })
    }

    /// The layout the rows are stored in.
    pub fn inner(&self) -> &L {
        &self.inner
    }
}

impl<L: Layout> Layout for RowPermuted<L> {
    fn shape(&self) -> (usize, usize) {
        self.inner.shape()
    }

    fn nranks(&self) -> usize {
        self.inner.nranks()
    }

    fn row_splits(&self) -> &[usize] {
        &self.row_splits
    }

    fn col_splits(&self) -> &[usize] {
        self.inner.col_splits()
    }

    fn block_owner(&self, bi: usize, bj: usize) -> usize {
        self.inner.block_owner(self.inner_block_row[bi], bj)
    }

    fn block_location(&self, bi: usize, bj: usize) -> (usize, usize) {
        let ib = self.inner_block_row[bi];
        let (offset, ld) = self.inner.block_location(ib, bj);
        (offset + self.perm[bi] - self.inner.row_splits()[ib], ld)
    }

    fn local_len(&self, rank: usize) -> usize {
        self.inner.local_len(rank)
    }
}
