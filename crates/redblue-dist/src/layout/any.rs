//! [`AnyLayout`]: one of the built-in layouts, chosen at run time.

use super::{BlockCyclic, GridLayout, Layout, LocalBlock, OnRank};

/// One of the built-in layouts, for code that picks a layout at run time (a command line, a
/// table of test cases). Every method delegates to the layout inside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AnyLayout {
    /// ScaLAPACK block-cyclic.
    BlockCyclic(BlockCyclic),
    /// COSTA-style grid layout.
    Grid(GridLayout),
    /// Everything on one rank.
    OnRank(OnRank),
}

macro_rules! delegate {
    ($self:ident, $l:ident => $e:expr) => {
        match $self {
            AnyLayout::BlockCyclic($l) => $e,
            AnyLayout::Grid($l) => $e,
            AnyLayout::OnRank($l) => $e,
        }
    };
}

impl Layout for AnyLayout {
    fn shape(&self) -> (usize, usize) {
        delegate!(self, l => l.shape())
    }
    fn nranks(&self) -> usize {
        delegate!(self, l => l.nranks())
    }
    fn row_splits(&self) -> &[usize] {
        delegate!(self, l => l.row_splits())
    }
    fn col_splits(&self) -> &[usize] {
        delegate!(self, l => l.col_splits())
    }
    fn block_owner(&self, bi: usize, bj: usize) -> usize {
        delegate!(self, l => l.block_owner(bi, bj))
    }
    fn block_location(&self, bi: usize, bj: usize) -> (usize, usize) {
        delegate!(self, l => l.block_location(bi, bj))
    }
    fn local_len(&self, rank: usize) -> usize {
        delegate!(self, l => l.local_len(rank))
    }
    fn owner(&self, i: usize, j: usize) -> usize {
        delegate!(self, l => l.owner(i, j))
    }
    fn to_local(&self, i: usize, j: usize) -> (usize, usize) {
        delegate!(self, l => l.to_local(i, j))
    }
    fn to_global(&self, rank: usize, pos: usize) -> Option<(usize, usize)> {
        delegate!(self, l => l.to_global(rank, pos))
    }
    fn blocks(&self, rank: usize) -> Vec<LocalBlock> {
        delegate!(self, l => l.blocks(rank))
    }
}

impl From<BlockCyclic> for AnyLayout {
    fn from(l: BlockCyclic) -> Self {
        AnyLayout::BlockCyclic(l)
    }
}
impl From<GridLayout> for AnyLayout {
    fn from(l: GridLayout) -> Self {
        AnyLayout::Grid(l)
    }
}
impl From<OnRank> for AnyLayout {
    fn from(l: OnRank) -> Self {
        AnyLayout::OnRank(l)
    }
}
