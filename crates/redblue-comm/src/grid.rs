//! Process grids: the pure coordinate maths ([`GridShape2d`], [`GridShape3d`]) and grids laid
//! over a communicator with their row / column / fiber / plane sub-communicators ([`Grid2d`],
//! [`Grid3d`]).

use crate::{CommError, Communicator};

/// How grid coordinates map to ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GridOrder {
    /// The last coordinate varies fastest (`rank = row·cols + col` in 2D).
    #[default]
    RowMajor,
    /// The first coordinate varies fastest (`rank = row + col·rows` in 2D).
    ColMajor,
}

/// A `rows × cols` process grid: pure coordinate maths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GridShape2d {
    /// Process rows.
    pub rows: usize,
    /// Process columns.
    pub cols: usize,
    /// Rank order.
    pub order: GridOrder,
}

impl GridShape2d {
    /// A grid of `rows × cols` ranks in `order`.
    pub fn new(rows: usize, cols: usize, order: GridOrder) -> Self {
        GridShape2d { rows, cols, order }
    }

    /// The most square grid of exactly `p` ranks (`rows ≤ cols`, `rows` the largest divisor of
    /// `p` not above `√p`), row-major: ScaLAPACK users' usual choice. `p = 0` gives `0 × 0`.
    ///
    /// # Examples
    /// ```
    /// use redblue_comm::GridShape2d;
    ///
    /// let shape = |p| { let g = GridShape2d::near_square(p); (g.rows, g.cols) };
    /// assert_eq!([shape(1), shape(6), shape(16), shape(7)], [(1, 1), (2, 3), (4, 4), (1, 7)]);
    /// ```
    pub fn near_square(p: usize) -> Self {
        let rows = (1..=p.isqrt())
            .rev()
            .find(|r| p.is_multiple_of(*r))
            .unwrap_or(0);
        GridShape2d::new(rows, p.checked_div(rows).unwrap_or(0), GridOrder::RowMajor)
    }
    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.rows * self.cols
    }
    /// Rank at grid position `(row, col)`.
    pub fn rank(&self, row: usize, col: usize) -> usize {
        debug_assert!(row < self.rows && col < self.cols);
        match self.order {
            GridOrder::RowMajor => row * self.cols + col,
            GridOrder::ColMajor => row + col * self.rows,
        }
    }
    /// Grid position `(row, col)` of `rank`.
    pub fn coords(&self, rank: usize) -> (usize, usize) {
        debug_assert!(rank < self.size());
        match self.order {
            GridOrder::RowMajor => (rank / self.cols, rank % self.cols),
            GridOrder::ColMajor => (rank % self.rows, rank / self.rows),
        }
    }
}

/// A `d0 × d1 × d2` process grid: pure coordinate maths.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GridShape3d {
    /// Extent along each axis.
    pub dims: [usize; 3],
    /// Rank order.
    pub order: GridOrder,
}

impl GridShape3d {
    /// A grid of `dims[0] × dims[1] × dims[2]` ranks in `order`.
    pub fn new(dims: [usize; 3], order: GridOrder) -> Self {
        GridShape3d { dims, order }
    }
    /// Number of ranks.
    pub fn size(&self) -> usize {
        self.dims.iter().product()
    }
    /// Rank at grid position `c`.
    pub fn rank(&self, c: [usize; 3]) -> usize {
        let [d0, d1, d2] = self.dims;
        debug_assert!(c[0] < d0 && c[1] < d1 && c[2] < d2);
        match self.order {
            GridOrder::RowMajor => (c[0] * d1 + c[1]) * d2 + c[2],
            GridOrder::ColMajor => c[0] + d0 * (c[1] + d1 * c[2]),
        }
    }
    /// Grid position of `rank`.
    pub fn coords(&self, rank: usize) -> [usize; 3] {
        let [d0, d1, d2] = self.dims;
        debug_assert!(rank < self.size());
        match self.order {
            GridOrder::RowMajor => [rank / (d1 * d2), (rank / d2) % d1, rank % d2],
            GridOrder::ColMajor => [rank % d0, (rank / d0) % d1, rank / (d0 * d1)],
        }
    }
}

fn check_size(dims: &[usize], size: usize) -> Result<(), CommError> {
    if dims.iter().product::<usize>() == size && size > 0 {
        Ok(())
    } else {
        Err(CommError::GridSizeMismatch {
            dims: dims.to_vec(),
            size,
        })
    }
}

/// A 2D process grid over a communicator, with its row and column sub-communicators.
#[derive(Debug)]
pub struct Grid2d<C> {
    shape: GridShape2d,
    coords: (usize, usize),
    all: C,
    row: C,
    col: C,
}

impl<C: Communicator> Grid2d<C> {
    /// Lays a `rows × cols` grid in `order` over `comm`.
    ///
    /// # Collective
    /// # Errors
    /// [`CommError::GridSizeMismatch`] on every rank if `rows · cols != comm.size()`.
    pub fn new(comm: &C, rows: usize, cols: usize, order: GridOrder) -> Result<Self, CommError> {
        check_size(&[rows, cols], comm.size())?;
        let shape = GridShape2d::new(rows, cols, order);
        let (r, c) = shape.coords(comm.rank());
        Ok(Grid2d {
            shape,
            coords: (r, c),
            all: comm.split(0, comm.rank())?,
            row: comm.split(r as u32, c)?,
            col: comm.split(c as u32, r)?,
        })
    }

    /// The grid's shape.
    pub fn shape(&self) -> GridShape2d {
        self.shape
    }
    /// This rank's `(row, col)`.
    pub fn coords(&self) -> (usize, usize) {
        self.coords
    }
    /// The whole grid (a duplicate of the communicator it was made from).
    pub fn comm(&self) -> &C {
        &self.all
    }
    /// The ranks of this rank's grid row; rank in it = grid column.
    pub fn row_comm(&self) -> &C {
        &self.row
    }
    /// The ranks of this rank's grid column; rank in it = grid row.
    pub fn col_comm(&self) -> &C {
        &self.col
    }
}

/// A 3D process grid over a communicator, with fibers (ranks that differ along one axis only)
/// and planes (ranks that share one coordinate), as 2.5D and COSMA algorithms need.
#[derive(Debug)]
pub struct Grid3d<C> {
    shape: GridShape3d,
    coords: [usize; 3],
    all: C,
    fibers: [C; 3],
    planes: [C; 3],
}

impl<C: Communicator> Grid3d<C> {
    /// Lays a `dims[0] × dims[1] × dims[2]` grid in `order` over `comm`.
    ///
    /// # Collective
    /// # Errors
    /// [`CommError::GridSizeMismatch`] on every rank if the grid's size is not `comm.size()`.
    pub fn new(comm: &C, dims: [usize; 3], order: GridOrder) -> Result<Self, CommError> {
        check_size(&dims, comm.size())?;
        let shape = GridShape3d::new(dims, order);
        let c = shape.coords(comm.rank());
        // The fiber along axis a: ranks agreeing on both other coordinates, ordered by c[a].
        let fiber = |a: usize| {
            let (b, d) = ((a + 1) % 3, (a + 2) % 3);
            comm.split((c[b] * dims[d] + c[d]) as u32, c[a])
        };
        // The plane normal to axis a: ranks sharing c[a], ordered by the grid's own order.
        let plane = |a: usize| comm.split(c[a] as u32, comm.rank());
        Ok(Grid3d {
            shape,
            coords: c,
            all: comm.split(0, comm.rank())?,
            fibers: [fiber(0)?, fiber(1)?, fiber(2)?],
            planes: [plane(0)?, plane(1)?, plane(2)?],
        })
    }

    /// The grid's shape.
    pub fn shape(&self) -> GridShape3d {
        self.shape
    }
    /// This rank's coordinates.
    pub fn coords(&self) -> [usize; 3] {
        self.coords
    }
    /// The whole grid (a duplicate of the communicator it was made from).
    pub fn comm(&self) -> &C {
        &self.all
    }
    /// The ranks that differ from this one along `axis` only; rank in it = `coords()[axis]`.
    pub fn fiber(&self, axis: usize) -> &C {
        &self.fibers[axis]
    }
    /// The ranks that share this rank's coordinate on `axis` (for `axis = 2`: this rank's layer
    /// of a 2.5D grid), in grid order.
    pub fn plane(&self, axis: usize) -> &C {
        &self.planes[axis]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coords_and_rank_are_inverse_up_to_1024_ranks() {
        for order in [GridOrder::RowMajor, GridOrder::ColMajor] {
            for (r, c) in [(1, 1), (1, 7), (7, 1), (32, 32), (3, 5)] {
                let g = GridShape2d::new(r, c, order);
                for rank in 0..g.size() {
                    let (i, j) = g.coords(rank);
                    assert!(i < r && j < c);
                    assert_eq!(g.rank(i, j), rank);
                }
            }
            for dims in [[1, 1, 1], [2, 3, 4], [8, 8, 16], [5, 1, 3]] {
                let g = GridShape3d::new(dims, order);
                for rank in 0..g.size() {
                    assert_eq!(g.rank(g.coords(rank)), rank);
                }
            }
        }
        assert_eq!(
            GridShape2d::new(2, 3, GridOrder::ColMajor).coords(3),
            (1, 1)
        );
        assert_eq!(
            GridShape2d::new(2, 3, GridOrder::RowMajor).coords(3),
            (1, 0)
        );
    }
}
