//! [`BlockCyclicSubmatrix`]: a rectangle of a block-cyclic matrix stored in local arrays of any
//! leading dimension, as ScaLAPACK routines see their operands (`A(ia:ia+m-1, ja:ja+n-1)` with
//! a descriptor's `lld`).

use super::{BlockCyclic, Layout};
use crate::DistError;
use std::ops::Range;

/// Rows `rows` and columns `cols` of a matrix distributed as `parent`, whose rank `r` stores
/// its local array column-major with leading dimension `llds[r]` (at least the parent's local
/// rows; ScaLAPACK's `LLD`, which each process passes for itself).
///
/// Element `(i, j)` of the submatrix is element `(rows.start + i, cols.start + j)` of the parent,
/// where the parent stores it. The blocks are the parent's blocks cut to the rectangle, so the
/// first block row and column may be short (ScaLAPACK's unaligned `ia`, `ja`).
///
/// # Examples
/// ```
/// use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix, Layout};
///
/// // A(3:8, 2:5) of a 10 x 6 matrix in 4 x 2 blocks on a 2 x 2 grid, local arrays of
/// // leading dimension 7 on every rank.
/// let parent = BlockCyclic::new(10, 6, 4, 2, 2, 2).unwrap();
/// let sub = BlockCyclicSubmatrix::new(parent.clone(), 3..9, 2..6, vec![7; 4]).unwrap();
/// assert_eq!(sub.shape(), (6, 4));
/// assert_eq!(sub.row_splits(), &[0, 1, 5, 6]); // parent rows 3 | 4..8 | 8
/// let (rank, li, lj) = parent.global_to_local(3 + 2, 2 + 1);
/// assert_eq!(sub.to_local(2, 1), (rank, li + lj * 7));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockCyclicSubmatrix {
    parent: BlockCyclic,
    rows: Range<usize>,
    cols: Range<usize>,
    llds: Vec<usize>,
    row_splits: Vec<usize>,
    col_splits: Vec<usize>,
    /// The parent's block row (column) of the submatrix's first block row (column).
    first_block: (usize, usize),
}

/// Splits of `range` at the multiples of `b`, relative to `range.start`.
fn cut(range: &Range<usize>, b: usize) -> Vec<usize> {
    let mut splits = vec![0];
    let mut at = range.start;
    while at < range.end {
        at = ((at / b + 1) * b).min(range.end);
        splits.push(at - range.start);
    }
    splits
}

impl BlockCyclicSubmatrix {
    /// The rectangle `rows × cols` of `parent`, local arrays of leading dimensions `llds` (one
    /// per rank of the parent's grid).
    ///
    /// # Errors
    /// [`DistError::InvalidLayout`] if the rectangle leaves the parent, `llds` does not have one
    /// entry per rank, or a leading dimension is below that rank's local rows (or 0).
    pub fn new(
        parent: BlockCyclic,
        rows: Range<usize>,
        cols: Range<usize>,
        llds: Vec<usize>,
    ) -> Result<Self, DistError> {
        let (m, n) = parent.shape();
        if rows.start > rows.end || rows.end > m || cols.start > cols.end || cols.end > n {
            return Err(DistError::InvalidLayout(format!(
                "rows {rows:?} and columns {cols:?} are not inside a {m} x {n} matrix"
            )));
        }
        if llds.len() != parent.nranks() {
            return Err(DistError::InvalidLayout(format!(
                "{} leading dimensions for {} ranks",
                llds.len(),
                parent.nranks()
            )));
        }
        for (rank, &lld) in llds.iter().enumerate() {
            let local_rows = parent.local_shape(rank).0;
            if lld < local_rows.max(1) {
                return Err(DistError::InvalidLayout(format!(
                    "rank {rank}'s leading dimension {lld} is below its {local_rows} local rows"
                )));
            }
        }
        let (mb, nb) = parent.block_size();
        Ok(BlockCyclicSubmatrix {
            row_splits: cut(&rows, mb),
            col_splits: cut(&cols, nb),
            first_block: (rows.start / mb, cols.start / nb),
            parent,
            rows,
            cols,
            llds,
        })
    }

    /// The whole of `parent`, local arrays of leading dimensions `llds`.
    ///
    /// # Errors
    /// As [`BlockCyclicSubmatrix::new`].
    pub fn whole(parent: BlockCyclic, llds: Vec<usize>) -> Result<Self, DistError> {
        let (m, n) = parent.shape();
        Self::new(parent, 0..m, 0..n, llds)
    }

    /// The matrix the rectangle is cut from.
    pub fn parent(&self) -> &BlockCyclic {
        &self.parent
    }

    /// The parent's rows and columns the submatrix covers.
    pub fn ranges(&self) -> (Range<usize>, Range<usize>) {
        (self.rows.clone(), self.cols.clone())
    }

    /// Leading dimension of `rank`'s local array.
    pub fn lld(&self, rank: usize) -> usize {
        self.llds[rank]
    }
}

impl Layout for BlockCyclicSubmatrix {
    fn shape(&self) -> (usize, usize) {
        (self.rows.len(), self.cols.len())
    }

    fn nranks(&self) -> usize {
        self.parent.nranks()
    }

    fn row_splits(&self) -> &[usize] {
        &self.row_splits
    }

    fn col_splits(&self) -> &[usize] {
        &self.col_splits
    }

    fn block_owner(&self, bi: usize, bj: usize) -> usize {
        self.parent
            .block_owner(self.first_block.0 + bi, self.first_block.1 + bj)
    }

    fn block_location(&self, bi: usize, bj: usize) -> (usize, usize) {
        let i = self.rows.start + self.row_splits[bi];
        let j = self.cols.start + self.col_splits[bj];
        let (rank, li, lj) = self.parent.global_to_local(i, j);
        let lld = self.llds[rank];
        (li + lj * lld, lld)
    }

    /// The local array up to the submatrix's last local column (none when the rank holds no
    /// column of it, or no row).
    fn local_len(&self, rank: usize) -> usize {
        if rank >= self.parent.nranks() {
            return 0;
        }
        let grid = self.parent.grid();
        let (prow, pcol) = grid.coords(rank);
        let (mb, nb) = self.parent.block_size();
        let (rsrc, csrc) = self.parent.source();
        let local = |end: usize, b: usize, p: usize, src: usize, np: usize| {
            super::numroc(end, b, p, src, np)
        };
        let rows_before_end = local(self.rows.end, mb, prow, rsrc, grid.rows);
        let rows_before_start = local(self.rows.start, mb, prow, rsrc, grid.rows);
        let cols_before_end = local(self.cols.end, nb, pcol, csrc, grid.cols);
        let cols_before_start = local(self.cols.start, nb, pcol, csrc, grid.cols);
        if rows_before_end == rows_before_start || cols_before_end == cols_before_start {
            return 0;
        }
        self.llds[rank] * (cols_before_end - 1) + rows_before_end
    }
}

impl From<BlockCyclic> for BlockCyclicSubmatrix {
    /// The whole matrix with the tightest leading dimensions (`max(1, local rows)`), which is
    /// `parent` itself.
    fn from(parent: BlockCyclic) -> Self {
        let llds = (0..parent.nranks()).map(|r| parent.lld(r)).collect();
        Self::whole(parent, llds).expect("a block-cyclic layout's own leading dimensions fit")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::GridOrder;

    /// Every element of every submatrix is where the parent keeps it, each local position holds
    /// at most one element, and every position lies inside the rank's local length.
    #[test]
    fn every_element_is_where_the_parent_keeps_it() {
        for order in [GridOrder::RowMajor, GridOrder::ColMajor] {
            let parent = BlockCyclic::new(11, 9, 3, 2, 2, 3)
                .unwrap()
                .with_source(1, 2)
                .unwrap()
                .with_order(order);
            let llds: Vec<usize> = (0..6).map(|r| parent.lld(r) + r % 2 * 3).collect();
            for (rows, cols) in [(0..11, 0..9), (4..10, 3..8), (2..3, 5..9), (5..5, 0..9)] {
                let sub = BlockCyclicSubmatrix::new(
                    parent.clone(),
                    rows.clone(),
                    cols.clone(),
                    llds.clone(),
                )
                .unwrap();
                let mut seen = std::collections::HashSet::new();
                for i in 0..rows.len() {
                    for j in 0..cols.len() {
                        let (rank, pos) = sub.to_local(i, j);
                        let (prank, li, lj) =
                            parent.global_to_local(rows.start + i, cols.start + j);
                        assert_eq!((rank, pos), (prank, li + lj * llds[prank]));
                        assert!(pos < sub.local_len(rank));
                        assert!(seen.insert((rank, pos)));
                        assert_eq!(sub.to_global(rank, pos), Some((i, j)));
                    }
                }
                let blocks: usize = (0..6)
                    .map(|r| sub.blocks(r).iter().map(|b| b.len()).sum::<usize>())
                    .sum();
                assert_eq!(blocks, rows.len() * cols.len());
            }
        }
    }

    #[test]
    fn a_rectangle_outside_or_a_short_leading_dimension_is_refused() {
        let parent = BlockCyclic::new(8, 8, 2, 2, 2, 2).unwrap();
        assert!(BlockCyclicSubmatrix::new(parent.clone(), 0..9, 0..8, vec![4; 4]).is_err());
        assert!(BlockCyclicSubmatrix::new(parent.clone(), 0..8, 0..8, vec![4; 3]).is_err());
        assert!(BlockCyclicSubmatrix::new(parent.clone(), 0..8, 0..8, vec![4, 4, 3, 4]).is_err());
        assert_eq!(
            BlockCyclicSubmatrix::from(parent.clone()).to_local(5, 7),
            parent.to_local(5, 7)
        );
    }
}
