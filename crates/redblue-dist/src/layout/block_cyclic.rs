//! [`BlockCyclic`]: the ScaLAPACK 2D block-cyclic distribution over a process grid.

use super::{Layout, LocalBlock};
use crate::DistError;
pub use redblue_comm::GridOrder;
use redblue_comm::GridShape2d;

/// Number of rows (or columns) of an `n`-long dimension cut into blocks of `nb`, distributed
/// block-cyclically over `nprocs` processes starting at process `isrc`, that process `iproc`
/// owns (ScaLAPACK's `NUMROC`).
///
/// `iproc` and `isrc` are taken modulo `nprocs`.
///
/// # Panics
/// If `nb` or `nprocs` is zero.
pub fn numroc(n: usize, nb: usize, iproc: usize, isrc: usize, nprocs: usize) -> usize {
    assert!(nb > 0, "numroc: block size must be at least 1");
    assert!(nprocs > 0, "numroc: number of processes must be at least 1");
    let mydist = (iproc % nprocs + nprocs - isrc % nprocs) % nprocs;
    let nblocks = n / nb;
    let extra = nblocks % nprocs;
    let mut count = (nblocks / nprocs) * nb;
    if mydist < extra {
        count += nb;
    } else if mydist == extra {
        count += n % nb;
    }
    count
}

/// Block boundaries `0, b, 2b, ..., len` of a dimension of length `len` cut into blocks of `b`
/// (`[0]` when `len == 0`).
fn aligned_splits(len: usize, b: usize) -> Vec<usize> {
    let mut splits: Vec<usize> = (0..len).step_by(b).collect();
    splits.push(len);
    splits
}

/// The ScaLAPACK 2D block-cyclic distribution of a global `m x n` matrix.
///
/// The matrix is cut into `mb x nb` blocks aligned at global index 0 (the last block row and
/// column may be short). Block `(bi, bj)` lives on grid position
/// `((rsrc + bi) % nprow, (csrc + bj) % npcol)`, whose rank is given by the [`GridOrder`]. Each
/// rank stores the ScaLAPACK local array: column-major, [`numroc`] rows by [`numroc`] columns,
/// with leading dimension `lld = max(1, local rows)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockCyclic {
    m: usize,
    n: usize,
    mb: usize,
    nb: usize,
    nprow: usize,
    npcol: usize,
    rsrc: usize,
    csrc: usize,
    order: GridOrder,
    row_splits: Vec<usize>,
    col_splits: Vec<usize>,
}

impl BlockCyclic {
    /// An `m x n` matrix in `mb x nb` blocks over an `nprow x npcol` grid, first block on grid
    /// position `(0, 0)`, ranks numbered [`GridOrder::RowMajor`].
    ///
    /// # Errors
    /// [`DistError::ZeroBlockSize`] if `mb` or `nb` is 0, [`DistError::EmptyGrid`] if `nprow`
    /// or `npcol` is 0.
    pub fn new(
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        nprow: usize,
        npcol: usize,
    ) -> Result<Self, DistError> {
        if mb == 0 {
            return Err(DistError::ZeroBlockSize { what: "mb" });
        }
        if nb == 0 {
            return Err(DistError::ZeroBlockSize { what: "nb" });
        }
        if nprow == 0 || npcol == 0 {
            return Err(DistError::EmptyGrid {
                rows: nprow,
                cols: npcol,
            });
        }
        Ok(BlockCyclic {
            m,
            n,
            mb,
            nb,
            nprow,
            npcol,
            rsrc: 0,
            csrc: 0,
            order: GridOrder::RowMajor,
            row_splits: aligned_splits(m, mb),
            col_splits: aligned_splits(n, nb),
        })
    }

    /// An `m x n` matrix in `mb x nb` blocks over the most square grid of exactly `p` ranks
    /// ([`GridShape2d::near_square`]), as [`BlockCyclic::new`].
    ///
    /// # Errors
    /// As [`BlockCyclic::new`] (`p = 0` is an empty grid).
    ///
    /// # Examples
    /// ```
    /// use redblue_dist::BlockCyclic;
    ///
    /// let layout = BlockCyclic::near_square(1000, 1000, 64, 64, 6).unwrap();
    /// assert_eq!(layout.grid_shape(), (2, 3));
    /// ```
    pub fn near_square(
        m: usize,
        n: usize,
        mb: usize,
        nb: usize,
        p: usize,
    ) -> Result<Self, DistError> {
        let grid = GridShape2d::near_square(p);
        BlockCyclic::new(m, n, mb, nb, grid.rows, grid.cols)
    }

    /// The same layout with the first block on grid position `(rsrc, csrc)`.
    ///
    /// # Errors
    /// [`DistError::RankOutOfRange`] if `rsrc >= nprow` or `csrc >= npcol`.
    pub fn with_source(self, rsrc: usize, csrc: usize) -> Result<Self, DistError> {
        if rsrc >= self.nprow {
            return Err(DistError::RankOutOfRange {
                what: "rsrc",
                rank: rsrc,
                bound: self.nprow,
            });
        }
        if csrc >= self.npcol {
            return Err(DistError::RankOutOfRange {
                what: "csrc",
                rank: csrc,
                bound: self.npcol,
            });
        }
        Ok(BlockCyclic { rsrc, csrc, ..self })
    }

    /// The same layout with ranks numbered in `order` on the grid.
    pub fn with_order(self, order: GridOrder) -> Self {
        BlockCyclic { order, ..self }
    }

    /// Process grid shape `(nprow, npcol)`.
    pub fn grid_shape(&self) -> (usize, usize) {
        (self.nprow, self.npcol)
    }

    /// Block size `(mb, nb)`.
    pub fn block_size(&self) -> (usize, usize) {
        (self.mb, self.nb)
    }

    /// Grid position `(rsrc, csrc)` owning the first block.
    pub fn source(&self) -> (usize, usize) {
        (self.rsrc, self.csrc)
    }

    /// How ranks are numbered on the grid.
    pub fn order(&self) -> GridOrder {
        self.order
    }

    /// Grid position `(prow, pcol)` of `rank`, which must be `< nprow * npcol`.
    pub fn grid_coords(&self, rank: usize) -> (usize, usize) {
        self.grid().coords(rank)
    }

    /// The process grid as pure coordinate maths.
    pub fn grid(&self) -> GridShape2d {
        GridShape2d::new(self.nprow, self.npcol, self.order)
    }

    /// Rank at grid position `(prow, pcol)` (`prow < nprow`, `pcol < npcol`).
    pub fn grid_rank(&self, prow: usize, pcol: usize) -> usize {
        self.grid().rank(prow, pcol)
    }

    /// Shape `(local rows, local columns)` of `rank`'s local array; `(0, 0)` for ranks outside
    /// the grid.
    pub fn local_shape(&self, rank: usize) -> (usize, usize) {
        if rank >= self.nprow * self.npcol {
            return (0, 0);
        }
        let (prow, pcol) = self.grid_coords(rank);
        (
            numroc(self.m, self.mb, prow, self.rsrc, self.nprow),
            numroc(self.n, self.nb, pcol, self.csrc, self.npcol),
        )
    }

    /// Leading dimension of `rank`'s local array: `max(1, local rows)`.
    pub fn lld(&self, rank: usize) -> usize {
        self.local_shape(rank).0.max(1)
    }

    /// `(rank, local row, local column)` of global element `(i, j)` in the ScaLAPACK local
    /// array (`i < m`, `j < n`).
    pub fn global_to_local(&self, i: usize, j: usize) -> (usize, usize, usize) {
        let (bi, bj) = (i / self.mb, j / self.nb);
        let prow = (self.rsrc + bi) % self.nprow;
        let pcol = (self.csrc + bj) % self.npcol;
        let li = (bi / self.nprow) * self.mb + i % self.mb;
        let lj = (bj / self.npcol) * self.nb + j % self.nb;
        (self.grid_rank(prow, pcol), li, lj)
    }

    /// Global element `(i, j)` at local row `li` and local column `lj` of `rank`'s local array
    /// (`rank < nprow * npcol`; the result is only a matrix element if `(li, lj)` lies inside
    /// [`local_shape`](Self::local_shape)).
    pub fn local_to_global(&self, rank: usize, li: usize, lj: usize) -> (usize, usize) {
        let (prow, pcol) = self.grid_coords(rank);
        let rdist = (prow + self.nprow - self.rsrc) % self.nprow;
        let cdist = (pcol + self.npcol - self.csrc) % self.npcol;
        let bi = (li / self.mb) * self.nprow + rdist;
        let bj = (lj / self.nb) * self.npcol + cdist;
        (bi * self.mb + li % self.mb, bj * self.nb + lj % self.nb)
    }

    /// Block indices `first, first + step, ...` below `count`.
    fn my_blocks(count: usize, first: usize, step: usize) -> impl Iterator<Item = usize> {
        (first..count).step_by(step)
    }
}

impl Layout for BlockCyclic {
    fn shape(&self) -> (usize, usize) {
        (self.m, self.n)
    }

    fn nranks(&self) -> usize {
        self.nprow * self.npcol
    }

    fn row_splits(&self) -> &[usize] {
        &self.row_splits
    }

    fn col_splits(&self) -> &[usize] {
        &self.col_splits
    }

    fn block_owner(&self, bi: usize, bj: usize) -> usize {
        self.grid_rank((self.rsrc + bi) % self.nprow, (self.csrc + bj) % self.npcol)
    }

    fn block_location(&self, bi: usize, bj: usize) -> (usize, usize) {
        // `lld` of the owner, from its grid row (no rank to coordinates and back).
        let prow = (self.rsrc + bi) % self.nprow;
        let lld = numroc(self.m, self.mb, prow, self.rsrc, self.nprow).max(1);
        let li = (bi / self.nprow) * self.mb;
        let lj = (bj / self.npcol) * self.nb;
        (li + lj * lld, lld)
    }

    fn local_len(&self, rank: usize) -> usize {
        let (r, c) = self.local_shape(rank);
        r * c
    }

    fn block_of(&self, i: usize, j: usize) -> (usize, usize) {
        (i / self.mb, j / self.nb)
    }

    fn owner(&self, i: usize, j: usize) -> usize {
        self.block_owner(i / self.mb, j / self.nb)
    }

    fn to_local(&self, i: usize, j: usize) -> (usize, usize) {
        let (rank, li, lj) = self.global_to_local(i, j);
        (rank, li + lj * self.lld(rank))
    }

    fn to_global(&self, rank: usize, pos: usize) -> Option<(usize, usize)> {
        let (rows, cols) = self.local_shape(rank);
        if pos >= rows * cols {
            return None;
        }
        let lld = rows.max(1);
        let (li, lj) = (pos % lld, pos / lld);
        (li < rows && lj < cols).then(|| self.local_to_global(rank, li, lj))
    }

    fn blocks(&self, rank: usize) -> Vec<LocalBlock> {
        if rank >= self.nprow * self.npcol {
            return Vec::new();
        }
        let (prow, pcol) = self.grid_coords(rank);
        let first_bi = (prow + self.nprow - self.rsrc) % self.nprow;
        let first_bj = (pcol + self.npcol - self.csrc) % self.npcol;
        let (nbr, nbc) = self.num_blocks();
        let lld = self.lld(rank);
        let mut out = Vec::new();
        for bj in Self::my_blocks(nbc, first_bj, self.npcol) {
            let lj = (bj / self.npcol) * self.nb;
            for bi in Self::my_blocks(nbr, first_bi, self.nprow) {
                let li = (bi / self.nprow) * self.mb;
                out.push(LocalBlock {
                    rows: self.row_splits[bi]..self.row_splits[bi + 1],
                    cols: self.col_splits[bj]..self.col_splits[bj + 1],
                    offset: li + lj * lld,
                    ld: lld,
                });
            }
        }
        out
    }
}
