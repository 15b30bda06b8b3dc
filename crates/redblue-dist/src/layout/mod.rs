//! The [`Layout`] trait: pure index maths of a distributed matrix (who owns what, where it lives
//! in the owner's local buffer). No communicator, no storage.
//!
//! Every layout is described in COSTA's grid model: the global rows are cut by `row_splits`, the
//! columns by `col_splits`, and each resulting block has one owner rank and one place in that
//! rank's local buffer (an offset and a leading dimension, column-major). The derived maps
//! (`owner`, `to_local`, `to_global`, `blocks`, `local_len`) are default methods, so a new layout
//! only says where its blocks are.

mod any;
mod block_cyclic;
mod grid;
mod on_rank;
mod permuted;
mod relabeled;
mod submatrix;
#[cfg(test)]
mod tests;

pub use any::AnyLayout;
pub use block_cyclic::{numroc, BlockCyclic, GridOrder};
pub use grid::GridLayout;
pub use on_rank::OnRank;
pub use permuted::RowPermuted;
pub use relabeled::{owner_col_order, owner_row_order, Relabeled};
pub use submatrix::BlockCyclicSubmatrix;

use std::fmt::Debug;
use std::ops::Range;

/// One rectangular block of a matrix as stored on its owner: global rows and columns, and the
/// column-major place in the owner's local buffer (`offset` of the block's first element and the
/// leading dimension `ld`, so element `(i, j)` of the block is at `offset + i + j * ld`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LocalBlock {
    /// Global rows of the block.
    pub rows: Range<usize>,
    /// Global columns of the block.
    pub cols: Range<usize>,
    /// Position of the block's element `(rows.start, cols.start)` in the owner's buffer.
    pub offset: usize,
    /// Leading dimension: distance in the buffer between consecutive columns of the block.
    pub ld: usize,
}

impl LocalBlock {
    /// Number of elements of the block.
    pub fn len(&self) -> usize {
        self.rows.len() * self.cols.len()
    }
    /// Whether the block has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Buffer position of global element `(i, j)`, which must lie in the block.
    pub fn local_index(&self, i: usize, j: usize) -> usize {
        debug_assert!(self.rows.contains(&i) && self.cols.contains(&j));
        self.offset + (i - self.rows.start) + (j - self.cols.start) * self.ld
    }
}

/// Where a matrix's elements live: pure index maths, shared by every rank.
///
/// # Contract
/// - `row_splits()` starts at 0, ends at `shape().0` and is strictly increasing (so it is `[0]`
///   for zero rows); likewise `col_splits()`.
/// - Every block `(bi, bj)` has one owner `< nranks()`; no two blocks overlap in their owner's
///   buffer, and every block lies inside `0..local_len(owner)`.
/// - Ranks of a layout are ranks of the communicator its matrix lives on; ranks `>= nranks()` of
///   a larger communicator own nothing.
pub trait Layout: Clone + Debug + PartialEq + Send + Sync {
    /// Global shape `(rows, columns)`.
    fn shape(&self) -> (usize, usize);
    /// Number of ranks the layout spreads over.
    fn nranks(&self) -> usize;
    /// Row boundaries of the blocks: `0 = r_0 < r_1 < ... < r_k = rows`.
    fn row_splits(&self) -> &[usize];
    /// Column boundaries of the blocks: `0 = c_0 < c_1 < ... < c_l = columns`.
    fn col_splits(&self) -> &[usize];
    /// Owner of block `(bi, bj)` (block row `bi` spans `row_splits[bi]..row_splits[bi + 1]`).
    fn block_owner(&self, bi: usize, bj: usize) -> usize;
    /// Buffer offset and leading dimension of block `(bi, bj)` in its owner's buffer.
    fn block_location(&self, bi: usize, bj: usize) -> (usize, usize);
    /// Length of `rank`'s local buffer (0 for a rank that owns nothing).
    fn local_len(&self, rank: usize) -> usize;

    /// Number of block rows and block columns.
    fn num_blocks(&self) -> (usize, usize) {
        (self.row_splits().len() - 1, self.col_splits().len() - 1)
    }

    /// The block `(bi, bj)` with its global ranges and local place.
    fn block(&self, bi: usize, bj: usize) -> LocalBlock {
        let (rs, cs) = (self.row_splits(), self.col_splits());
        let (offset, ld) = self.block_location(bi, bj);
        LocalBlock {
            rows: rs[bi]..rs[bi + 1],
            cols: cs[bj]..cs[bj + 1],
            offset,
            ld,
        }
    }

    /// The block row and block column holding global element `(i, j)`.
    fn block_of(&self, i: usize, j: usize) -> (usize, usize) {
        (
            split_index(self.row_splits(), i),
            split_index(self.col_splits(), j),
        )
    }

    /// Owner of global element `(i, j)`.
    fn owner(&self, i: usize, j: usize) -> usize {
        let (bi, bj) = self.block_of(i, j);
        self.block_owner(bi, bj)
    }

    /// `(owner, position in the owner's buffer)` of global element `(i, j)`.
    fn to_local(&self, i: usize, j: usize) -> (usize, usize) {
        let (bi, bj) = self.block_of(i, j);
        (
            self.block_owner(bi, bj),
            self.block(bi, bj).local_index(i, j),
        )
    }

    /// Global element stored at `pos` of `rank`'s buffer, or `None` if that position holds no
    /// element (padding, or past the end).
    fn to_global(&self, rank: usize, pos: usize) -> Option<(usize, usize)> {
        self.blocks(rank).into_iter().find_map(|b| {
            let rel = pos.checked_sub(b.offset)?;
            let (i, j) = (rel % b.ld.max(1), rel / b.ld.max(1));
            (i < b.rows.len() && j < b.cols.len()).then(|| (b.rows.start + i, b.cols.start + j))
        })
    }

    /// The blocks `rank` owns, in column-major block order.
    fn blocks(&self, rank: usize) -> Vec<LocalBlock> {
        let (nbr, nbc) = self.num_blocks();
        let mut out = Vec::new();
        for bj in 0..nbc {
            for bi in 0..nbr {
                if self.block_owner(bi, bj) == rank {
                    out.push(self.block(bi, bj));
                }
            }
        }
        out
    }
}

/// Whether every element of a matrix has the same owner in `a` and `b` (layouts of one shape;
/// `false` for shapes that differ): a transform between them moves nothing between ranks, only
/// within each. Pure, so every rank finds the same answer; one check per cell of the two
/// layouts' combined block grid.
///
/// # Examples
/// ```
/// use redblue_dist::{same_owners, BlockCyclic};
///
/// // 64- and 128-wide column blocks on one process row: 128-wide blocks cover two 64-wide
/// // ones, which the 1 × 2 grid deals to different ranks.
/// let narrow = BlockCyclic::new(512, 512, 64, 64, 1, 2).unwrap();
/// let wide = BlockCyclic::new(512, 512, 128, 128, 1, 2).unwrap();
/// assert!(!same_owners(&narrow, &wide));
/// // Row blocks do not matter on one process row.
/// let tall = BlockCyclic::new(512, 512, 512, 64, 1, 2).unwrap();
/// assert!(same_owners(&narrow, &tall));
/// ```
pub fn same_owners(a: &impl Layout, b: &impl Layout) -> bool {
    let merged = |x: &[usize], y: &[usize]| {
        let mut s: Vec<usize> = x.iter().chain(y).copied().collect();
        s.sort_unstable();
        s.dedup();
        s.pop();
        s
    };
    let rows = merged(a.row_splits(), b.row_splits());
    let cols = merged(a.col_splits(), b.col_splits());
    a.shape() == b.shape()
        && cols
            .iter()
            .all(|&j| rows.iter().all(|&i| a.owner(i, j) == b.owner(i, j)))
}

/// Whether `a` and `b` cut a matrix into the same blocks and put each block on the same rank
/// at the same place of its local array (offset and leading dimension): one rank's local array
/// of `a` *is* its local array of `b`, so a routine written for `b` can work in an `a`-matrix's
/// buffer as it is. Conservative: layouts cutting the matrix into different blocks are
/// reported different even where they place every element alike. Pure, one check per block.
///
/// # Examples
/// ```
/// use redblue_dist::{same_local_arrays, BlockCyclic, BlockCyclicSubmatrix};
///
/// let tiles = BlockCyclic::new(256, 256, 64, 64, 1, 2).unwrap();
/// // A ScaLAPACK array of exactly that matrix, leading dimension its local rows.
/// let array = BlockCyclicSubmatrix::new(tiles.clone(), 0..256, 0..256, vec![256; 2]).unwrap();
/// assert!(same_local_arrays(&array, &tiles));
/// // The same elements on the same ranks, with room between columns: not the same array.
/// let padded = BlockCyclicSubmatrix::new(tiles.clone(), 0..256, 0..256, vec![300; 2]).unwrap();
/// assert!(!same_local_arrays(&padded, &tiles));
/// ```
pub fn same_local_arrays(a: &impl Layout, b: &impl Layout) -> bool {
    let (nbr, nbc) = a.num_blocks();
    a.shape() == b.shape()
        && a.row_splits() == b.row_splits()
        && a.col_splits() == b.col_splits()
        && (0..nbc).all(|bj| {
            (0..nbr).all(|bi| {
                a.block_owner(bi, bj) == b.block_owner(bi, bj)
                    && a.block_location(bi, bj) == b.block_location(bi, bj)
            })
        })
}

/// Whether `p` holds each of `0..len` once.
pub(crate) fn is_permutation(p: &[usize], len: usize) -> bool {
    let mut seen = vec![false; len];
    p.len() == len
        && p.iter()
            .all(|&x| x < len && !std::mem::replace(&mut seen[x], true))
}

/// Index `b` of the split interval `splits[b]..splits[b + 1]` holding `x` (`x < *splits.last()`).
pub fn split_index(splits: &[usize], x: usize) -> usize {
    debug_assert!(x < *splits.last().unwrap_or(&0));
    splits.partition_point(|&s| s <= x) - 1
}

/// The split intervals of `splits` that overlap `range`, as a range of interval indices.
pub fn overlapping(splits: &[usize], range: &Range<usize>) -> Range<usize> {
    if range.is_empty() {
        return 0..0;
    }
    split_index(splits, range.start)..split_index(splits, range.end - 1) + 1
}
