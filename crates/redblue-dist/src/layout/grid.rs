//! [`GridLayout`]: COSTA's custom layout with explicit splits and an explicit owner table.

use super::Layout;
use crate::DistError;

/// Checks that `splits` starts at 0 and is strictly increasing.
fn check_splits(name: &str, splits: &[usize]) -> Result<(), DistError> {
    match splits.first() {
        None => {
            return Err(DistError::InvalidLayout(format!(
                "{name} is empty; it must start at 0"
            )))
        }
        Some(&s) if s != 0 => {
            return Err(DistError::InvalidLayout(format!(
                "{name} must start at 0, but {name}[0] = {s}"
            )))
        }
        Some(_) => {}
    }
    if let Some(k) = splits.windows(2).position(|w| w[0] >= w[1]) {
        return Err(DistError::InvalidLayout(format!(
            "{name} must be strictly increasing, but {name}[{k}] = {} >= {name}[{}] = {}",
            splits[k],
            k + 1,
            splits[k + 1]
        )));
    }
    Ok(())
}

/// Boundaries of `len` cut into `parts` near-equal parts (the first `len % parts` parts one
/// longer), empty parts dropped.
fn even_splits(len: usize, parts: usize) -> Vec<usize> {
    let mut splits = vec![0];
    let mut at = 0;
    for k in 0..parts {
        let size = len / parts + usize::from(k < len % parts);
        if size > 0 {
            at += size;
            splits.push(at);
        }
    }
    splits
}

/// COSTA's custom layout: the rows are cut by `row_splits`, the columns by `col_splits`, and an
/// explicit table says which rank owns each block.
///
/// Each rank stores its blocks packed one after another in column-major block order (by block
/// column, then block row); each block is column-major with leading dimension
/// `max(1, block rows)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GridLayout {
    row_splits: Vec<usize>,
    col_splits: Vec<usize>,
    /// Row-major owner table: owner of block `(bi, bj)` is `owners[bi * nbc + bj]`.
    owners: Vec<usize>,
    nranks: usize,
    /// Buffer offset of each block, indexed like `owners`.
    offsets: Vec<usize>,
    /// Local buffer length of each rank.
    local_lens: Vec<usize>,
}

impl GridLayout {
    /// A layout with the given splits and row-major owner table over `nranks` ranks.
    ///
    /// `owners[bi * nbc + bj]` owns block `(bi, bj)`, where `nbc = col_splits.len() - 1`.
    ///
    /// # Errors
    /// [`DistError::InvalidLayout`] if a split vector is empty, does not start at 0 or is not
    /// strictly increasing, if `owners` does not have one entry per block, or if `nranks` is 0;
    /// [`DistError::RankOutOfRange`] if an owner is `>= nranks`.
    pub fn new(
        row_splits: Vec<usize>,
        col_splits: Vec<usize>,
        owners: Vec<usize>,
        nranks: usize,
    ) -> Result<Self, DistError> {
        if nranks == 0 {
            return Err(DistError::InvalidLayout(
                "a layout needs at least one rank, but nranks = 0".into(),
            ));
        }
        check_splits("row_splits", &row_splits)?;
        check_splits("col_splits", &col_splits)?;
        let (nbr, nbc) = (row_splits.len() - 1, col_splits.len() - 1);
        if owners.len() != nbr * nbc {
            return Err(DistError::InvalidLayout(format!(
                "owner table has {} entries, but the splits make {nbr} x {nbc} = {} blocks",
                owners.len(),
                nbr * nbc
            )));
        }
        if let Some(&bad) = owners.iter().find(|&&o| o >= nranks) {
            return Err(DistError::RankOutOfRange {
                what: "block owner",
                rank: bad,
                bound: nranks,
            });
        }
        let mut offsets = vec![0; owners.len()];
        let mut local_lens = vec![0; nranks];
        for bj in 0..nbc {
            let cols = col_splits[bj + 1] - col_splits[bj];
            for bi in 0..nbr {
                let rows = row_splits[bi + 1] - row_splits[bi];
                let b = bi * nbc + bj;
                let len = &mut local_lens[owners[b]];
                offsets[b] = *len;
                *len += rows * cols;
            }
        }
        Ok(GridLayout {
            row_splits,
            col_splits,
            owners,
            nranks,
            offsets,
            local_lens,
        })
    }

    /// A layout with the splits and block owners of `layout`, but this type's packed local
    /// storage.
    ///
    /// # Panics
    /// If `layout` breaks the [`Layout`] contract (bad splits, or an owner `>= nranks()`).
    pub fn from_layout<L: Layout>(layout: &L) -> Self {
        let (nbr, nbc) = layout.num_blocks();
        let owners = (0..nbr)
            .flat_map(|bi| (0..nbc).map(move |bj| (bi, bj)))
            .map(|(bi, bj)| layout.block_owner(bi, bj))
            .collect();
        GridLayout::new(
            layout.row_splits().to_vec(),
            layout.col_splits().to_vec(),
            owners,
            layout.nranks(),
        )
        .expect("a layout that keeps the Layout contract is a valid GridLayout")
    }

    /// An `m x n` matrix cut into `prow` near-equal block rows and `pcol` near-equal block
    /// columns (empty parts dropped), block `(bi, bj)` owned by rank `bi * pcol + bj` of
    /// `prow * pcol` ranks.
    ///
    /// # Errors
    /// [`DistError::EmptyGrid`] if `prow` or `pcol` is 0.
    pub fn even(m: usize, n: usize, prow: usize, pcol: usize) -> Result<Self, DistError> {
        if prow == 0 || pcol == 0 {
            return Err(DistError::EmptyGrid {
                rows: prow,
                cols: pcol,
            });
        }
        let row_splits = even_splits(m, prow);
        let col_splits = even_splits(n, pcol);
        let (nbr, nbc) = (row_splits.len() - 1, col_splits.len() - 1);
        let owners = (0..nbr)
            .flat_map(|bi| (0..nbc).map(move |bj| bi * pcol + bj))
            .collect();
        GridLayout::new(row_splits, col_splits, owners, prow * pcol)
    }

    /// The row-major owner table: owner of block `(bi, bj)` is `owners()[bi * nbc + bj]`.
    pub fn owners(&self) -> &[usize] {
        &self.owners
    }
}

impl Layout for GridLayout {
    fn shape(&self) -> (usize, usize) {
        (
            *self.row_splits.last().unwrap_or(&0),
            *self.col_splits.last().unwrap_or(&0),
        )
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

    fn block_owner(&self, bi: usize, bj: usize) -> usize {
        self.owners[bi * (self.col_splits.len() - 1) + bj]
    }

    fn block_location(&self, bi: usize, bj: usize) -> (usize, usize) {
        let offset = self.offsets[bi * (self.col_splits.len() - 1) + bj];
        let rows = self.row_splits[bi + 1] - self.row_splits[bi];
        (offset, rows.max(1))
    }

    fn local_len(&self, rank: usize) -> usize {
        self.local_lens.get(rank).copied().unwrap_or(0)
    }
}
