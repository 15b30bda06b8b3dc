//! [`Relabeled`]: a layout seen with its rows and columns in other orders, stored where they
//! already are; [`owner_row_order`] and [`owner_col_order`] give the orders in which a
//! block-cyclic layout is a grid of one block per process.

use super::{is_permutation, split_index, Layout};
use crate::DistError;

/// The matrix `P·A·Qᵀ` seen in the storage of `A`: row `i` is row `rows[i]` of `A`, column `j`
/// is column `cols[j]`, each element stored where `inner` keeps it. Nothing moves.
///
/// Consecutive rows form one block row when, in every block column of `inner`, they have the
/// same owner and lie next to each other in its buffer (with the same leading dimension);
/// columns likewise, `ld` apart. So a block-cyclic layout seen in its owners' buffer order
/// ([`owner_row_order`], [`owner_col_order`]) has one block per process: a product of such
/// matrices can be planned as on a grid layout. Since `P·A·Qᵀ` relabels without changing
/// values, `C = A·B` is `P·C·Rᵀ = (P·A·Qᵀ)·(Q·B·Rᵀ)` for any permutations `P`, `Q`, `R`.
///
/// # Examples
/// ```
/// use redblue_dist::{owner_col_order, owner_row_order, BlockCyclic, Layout, Relabeled};
///
/// // 8 × 8 in 2 × 2 blocks on a 1 × 2 grid: columns 0, 1, 4, 5 on rank 0, the rest on rank 1.
/// let bc = BlockCyclic::new(8, 8, 2, 2, 1, 2).unwrap();
/// assert_eq!(bc.num_blocks(), (4, 4));
/// let (rows, cols) = (owner_row_order(&bc), owner_col_order(&bc));
/// assert_eq!(cols, vec![0, 1, 4, 5, 2, 3, 6, 7]);
/// let grid = Relabeled::new(bc.clone(), rows, cols).unwrap();
/// assert_eq!((grid.row_splits(), grid.col_splits()), (&[0, 8][..], &[0, 4, 8][..]));
/// assert_eq!((grid.block_owner(0, 0), grid.block_owner(0, 1)), (0, 1));
/// // Column 2 of the relabeled matrix is column 4 of the block-cyclic one, in the same place.
/// assert_eq!(grid.to_local(3, 2), bc.to_local(3, 4));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Relabeled<L> {
    inner: L,
    rows: Vec<usize>,
    cols: Vec<usize>,
    row_splits: Vec<usize>,
    col_splits: Vec<usize>,
}

impl<L: Layout> Relabeled<L> {
    /// `inner` with its rows taken in the order `rows` and its columns in the order `cols`.
    ///
    /// # Errors
    /// [`DistError::InvalidLayout`] if `rows` or `cols` is not a permutation of the rows or
    /// columns of `inner`.
    pub fn new(inner: L, rows: Vec<usize>, cols: Vec<usize>) -> Result<Self, DistError> {
        let (m, n) = inner.shape();
        if !is_permutation(&rows, m) || !is_permutation(&cols, n) {
            return Err(DistError::InvalidLayout(format!(
                "relabelling a {m} × {n} layout needs a permutation of 0..{m} and one of 0..{n}"
            )));
        }
        let (rs, cs) = (inner.row_splits(), inner.col_splits());
        let (block_rows, block_cols) = (rs.len() - 1, cs.len() - 1);
        // Where (inner block row, inner block column, row and column inside it) is stored.
        let place = |bi: usize, bj: usize, di: usize, dj: usize| {
            let (offset, ld) = inner.block_location(bi, bj);
            (inner.block_owner(bi, bj), offset + di + dj * ld, ld)
        };
        let row_block: Vec<usize> = rows.iter().map(|&r| split_index(rs, r)).collect();
        let col_block: Vec<usize> = cols.iter().map(|&c| split_index(cs, c)).collect();
        // Rows i − 1 and i go on in one block row: next to each other in every block column.
        let rows_go_on = |i: usize| {
            let (b0, b1) = (row_block[i - 1], row_block[i]);
            if b0 == b1 {
                return rows[i] == rows[i - 1] + 1;
            }
            (0..block_cols).all(|bj| {
                let (o0, p0, ld0) = place(b0, bj, rows[i - 1] - rs[b0], 0);
                let (o1, p1, ld1) = place(b1, bj, rows[i] - rs[b1], 0);
                o0 == o1 && ld0 == ld1 && p1 == p0 + 1
            })
        };
        let cols_go_on = |j: usize| {
            let (b0, b1) = (col_block[j - 1], col_block[j]);
            if b0 == b1 {
                return cols[j] == cols[j - 1] + 1;
            }
            (0..block_rows).all(|bi| {
                let (o0, p0, ld0) = place(bi, b0, 0, cols[j - 1] - cs[b0]);
                let (o1, p1, ld1) = place(bi, b1, 0, cols[j] - cs[b1]);
                o0 == o1 && ld0 == ld1 && p1 == p0 + ld0
            })
        };
        let splits = |len: usize, go_on: &dyn Fn(usize) -> bool| -> Vec<usize> {
            let mut s = vec![0];
            s.extend((1..len).filter(|&i| !go_on(i)));
            if len > 0 {
                s.push(len);
            }
            s
        };
        let row_splits = splits(m, &rows_go_on);
        let col_splits = splits(n, &cols_go_on);
        Ok(Relabeled {
            inner,
            rows,
            cols,
            row_splits,
            col_splits,
        })
    }

    /// The layout the elements are stored in.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// Row `i` of this matrix is row `rows()[i]` of the inner one.
    pub fn rows(&self) -> &[usize] {
        &self.rows
    }

    /// Column `j` of this matrix is column `cols()[j]` of the inner one.
    pub fn cols(&self) -> &[usize] {
        &self.cols
    }
}

impl<L: Layout> Layout for Relabeled<L> {
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
        &self.col_splits
    }

    fn block_owner(&self, bi: usize, bj: usize) -> usize {
        let (i, j) = (
            self.rows[self.row_splits[bi]],
            self.cols[self.col_splits[bj]],
        );
        self.inner.owner(i, j)
    }

    fn block_location(&self, bi: usize, bj: usize) -> (usize, usize) {
        let (i, j) = (
            self.rows[self.row_splits[bi]],
            self.cols[self.col_splits[bj]],
        );
        let (ib, jb) = self.inner.block_of(i, j);
        let block = self.inner.block(ib, jb);
        (block.local_index(i, j), block.ld)
    }

    fn local_len(&self, rank: usize) -> usize {
        self.inner.local_len(rank)
    }
}

/// The rows of `layout` in the order of its owners' buffers: by the owner of their element in
/// column 0, then by its place there (the identity when `layout` has no columns). For a
/// block-cyclic layout: process row by process row, each in its local order.
pub fn owner_row_order(layout: &impl Layout) -> Vec<usize> {
    let (m, n) = layout.shape();
    let mut rows: Vec<usize> = (0..m).collect();
    if n > 0 {
        rows.sort_by_cached_key(|&i| layout.to_local(i, 0));
    }
    rows
}

/// The columns of `layout` in the order of its owners' buffers: by the owner of their element
/// in row 0, then by its place there (the identity when `layout` has no rows).
pub fn owner_col_order(layout: &impl Layout) -> Vec<usize> {
    let (m, n) = layout.shape();
    let mut cols: Vec<usize> = (0..n).collect();
    if m > 0 {
        cols.sort_by_cached_key(|&j| layout.to_local(0, j));
    }
    cols
}
