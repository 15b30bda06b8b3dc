//! [`OnRank`]: the whole matrix on one rank.

use super::Layout;
use crate::DistError;

/// The whole `m x n` matrix on rank `root` of `nranks` ranks, column-major with leading
/// dimension `max(1, m)`; every other rank owns nothing.
///
/// The matrix is one block, or no block at all when `m` or `n` is 0.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OnRank {
    m: usize,
    n: usize,
    root: usize,
    nranks: usize,
    row_splits: Vec<usize>,
    col_splits: Vec<usize>,
}

impl OnRank {
    /// An `m x n` matrix held entirely by rank `root` of `nranks` ranks.
    ///
    /// # Errors
    /// [`DistError::InvalidLayout`] if `nranks` is 0, [`DistError::RankOutOfRange`] if
    /// `root >= nranks`.
    pub fn new(m: usize, n: usize, root: usize, nranks: usize) -> Result<Self, DistError> {
        if nranks == 0 {
            return Err(DistError::InvalidLayout(
                "a layout needs at least one rank, but nranks = 0".into(),
            ));
        }
        if root >= nranks {
            return Err(DistError::RankOutOfRange {
                what: "root",
                rank: root,
                bound: nranks,
            });
        }
        let splits = |len: usize| if len == 0 { vec![0] } else { vec![0, len] };
        Ok(OnRank {
            m,
            n,
            root,
            nranks,
            row_splits: splits(m),
            col_splits: splits(n),
        })
    }

    /// The rank holding the matrix.
    pub fn root(&self) -> usize {
        self.root
    }

    /// Leading dimension of the root's buffer: `max(1, m)`.
    pub fn ld(&self) -> usize {
        self.m.max(1)
    }
}

impl Layout for OnRank {
    fn shape(&self) -> (usize, usize) {
        (self.m, self.n)
    }

    fn nranks(&self) -> usize {
        self.nranks
    }

    fn row_splits(&self) -> &[usize] {
        &self.row_splits
    }

    fn col_splits(&self) -> &[usize] {
        &self.col_splits
    }

    fn block_owner(&self, _bi: usize, _bj: usize) -> usize {
        self.root
    }

    fn block_location(&self, _bi: usize, _bj: usize) -> (usize, usize) {
        (0, self.ld())
    }

    fn local_len(&self, rank: usize) -> usize {
        if rank == self.root {
            self.m * self.n
        } else {
            0
        }
    }

    fn block_of(&self, _i: usize, _j: usize) -> (usize, usize) {
        (0, 0)
    }

    fn owner(&self, _i: usize, _j: usize) -> usize {
        self.root
    }

    fn to_local(&self, i: usize, j: usize) -> (usize, usize) {
        (self.root, i + j * self.ld())
    }

    fn to_global(&self, rank: usize, pos: usize) -> Option<(usize, usize)> {
        (rank == self.root && pos < self.m * self.n).then(|| (pos % self.m, pos / self.m))
    }
}
