//! [`lu`]: factor a distributed matrix in any layout, with COnfLUX or the 2D baseline, into
//! [`LuFactors`].

use crate::factor::{factor, model_costs, Pivoting};
use crate::geometry::Geometry;
use crate::{choose_grid, ConfluxGrid, LuError};
use redblue_comm::{CommStats, Communicator};
use redblue_core::{Op, Scalar};
use redblue_dist::{transform, BlockCyclic, DistMatrix, Layout, OwnedDistMatrix};
use redblue_kernels::KernelScalar;
use std::fmt;

/// Which factorisation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LuAlgorithm {
    /// COnfLUX: 2.5D, tournament pivoting.
    #[default]
    Conflux,
    /// Right-looking 2D block-cyclic LU with partial pivoting (ScaLAPACK's PDGETRF).
    TwoD,
}

impl fmt::Display for LuAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            LuAlgorithm::Conflux => "conflux",
            LuAlgorithm::TwoD => "2d",
        })
    }
}

impl std::str::FromStr for LuAlgorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "conflux" => Ok(LuAlgorithm::Conflux),
            "2d" => Ok(LuAlgorithm::TwoD),
            _ => Err(format!("unknown LU algorithm '{s}' (conflux or 2d)")),
        }
    }
}

/// Default tile width `v`.
pub const DEFAULT_BLOCK: usize = 128;

/// How to factor: the algorithm, and optionally the grid, the tile width, the memory per rank
/// and the idle fraction allowed when choosing the grid.
#[derive(Clone, Debug, PartialEq)]
pub struct LuParams {
    /// COnfLUX or 2D.
    pub algorithm: LuAlgorithm,
    /// The grid; chosen from `N`, `P` and the memory when `None` (2D: `c = 1`).
    pub grid: Option<ConfluxGrid>,
    /// Tile width `v` (at least the number of layers); [`DEFAULT_BLOCK`] when `None`.
    pub block: Option<usize>,
    /// Words of memory per rank, for the choice of the grid.
    pub memory: Option<f64>,
    /// Largest fraction of ranks that may stay idle for a better grid.
    pub idle: f64,
}

impl Default for LuParams {
    fn default() -> Self {
        LuParams {
            algorithm: LuAlgorithm::Conflux,
            grid: None,
            block: None,
            memory: None,
            idle: 0.03,
        }
    }
}

/// The grid and tile width [`lu`] uses for an `n × n` matrix on `p` ranks.
///
/// # Errors
/// [`LuError::InvalidParams`] for a zero tile width, a given grid larger than `p` or with more
/// layers than the tile width (or any layers, for 2D); [`LuError::Grid`] when no grid fits.
pub fn lu_plan(n: usize, p: usize, params: &LuParams) -> Result<(ConfluxGrid, usize), LuError> {
    let v = params.block.unwrap_or(DEFAULT_BLOCK);
    if v == 0 {
        return Err(LuError::InvalidParams(
            "the tile width must be positive".into(),
        ));
    }
    let grid = match (params.grid, params.algorithm) {
        (Some(g), _) => g,
        (None, LuAlgorithm::Conflux) => choose_grid(n, p, params.memory, v, params.idle)?,
        (None, LuAlgorithm::TwoD) => {
            let g = choose_grid(n, p, params.memory, 1, params.idle)?;
            ConfluxGrid { c: 1, ..g }
        }
    };
    if grid.px == 0 || grid.py == 0 || grid.c == 0 || grid.ranks() > p {
        return Err(LuError::InvalidParams(format!(
            "grid {grid} does not fit on {p} ranks"
        )));
    }
    if grid.c > v {
        return Err(LuError::InvalidParams(format!(
            "{} layers need a tile width of at least {}, not {v}",
            grid.c, grid.c
        )));
    }
    if params.algorithm == LuAlgorithm::TwoD && grid.c != 1 {
        return Err(LuError::InvalidParams("2D LU has one layer".into()));
    }
    Ok((grid, v))
}

/// `A = P·L·U` of a square matrix in any layout, on every rank of `comm`.
///
/// # Collective
/// # Errors
/// The same on every rank: [`LuError::NotSquare`], [`LuError::NotFinite`],
/// [`LuError::Singular`] naming the column, bad parameters (see [`lu_plan`]); communication
/// failures.
pub fn lu<T, C, A>(comm: &C, a: &A, params: &LuParams) -> Result<LuFactors<T, A::Layout>, LuError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
{
    let (m, n) = a.shape();
    if m != n {
        return Err(LuError::NotSquare { shape: (m, n) });
    }
    if a.layout().nranks() > comm.size() {
        return Err(LuError::InvalidParams(format!(
            "the matrix spreads over {} ranks, the communicator has {}",
            a.layout().nranks(),
            comm.size()
        )));
    }
    let (grid, v) = lu_plan(n, comm.size(), params)?;
    let geom = Geometry::new(n, v, grid);
    let native_layout = geom.layer_layout()?;
    let mut native = OwnedDistMatrix::zeros(comm, native_layout.clone())?;
    transform(comm, T::one(), a, Op::NoTrans, T::zero(), &mut native)?;
    let pivoting = match params.algorithm {
        LuAlgorithm::Conflux => Pivoting::Tournament,
        LuAlgorithm::TwoD => Pivoting::Partial,
    };
    let f = factor(comm, &geom, pivoting, native.into_local())?;
    let native = OwnedDistMatrix::from_local(comm, native_layout, f.local)?;
    let mut packed = OwnedDistMatrix::zeros(comm, a.layout().clone())?;
    transform(comm, T::one(), &native, Op::NoTrans, T::zero(), &mut packed)?;
    let perm: Vec<usize> = f.pivots.iter().flatten().copied().collect();
    let growth = if f.max_a == 0.0 {
        0.0
    } else {
        f.max_u / f.max_a
    };
    Ok(LuFactors {
        packed,
        native,
        grid,
        block: v,
        pivots: f.pivots,
        perm,
        growth,
    })
}

/// The factors of [`lu`]: `L` and `U` packed in the input's layout in *unpermuted* rows (row
/// `perm[i]` of the packed matrix holds row `i` of `L` left of column `i`, unit diagonal
/// implied, and row `i` of `U` from column `i` on), and the permutation.
pub struct LuFactors<T: Scalar, L> {
    packed: OwnedDistMatrix<T, L>,
    native: OwnedDistMatrix<T, BlockCyclic>,
    grid: ConfluxGrid,
    block: usize,
    pivots: Vec<Vec<usize>>,
    perm: Vec<usize>,
    growth: f64,
}

impl<T: KernelScalar, L: Layout> LuFactors<T, L> {
    /// `L` and `U` packed in unpermuted rows, in the input's layout.
    pub fn packed(&self) -> &OwnedDistMatrix<T, L> {
        &self.packed
    }

    /// Row `i` of `P·A` is row `perm()[i]` of `A`.
    pub fn perm(&self) -> &[usize] {
        &self.perm
    }

    /// The permutation as LAPACK's (0-based) `ipiv`: for `i = 0, 1, ...` in order, row `i` was
    /// interchanged with row `ipiv[i] ≥ i`.
    pub fn ipiv(&self) -> Vec<usize> {
        let n = self.perm.len();
        let mut at: Vec<usize> = (0..n).collect(); // row now at each position
        let mut where_is: Vec<usize> = (0..n).collect(); // position of each row
        let mut ipiv = Vec::with_capacity(n);
        for (i, &row) in self.perm.iter().enumerate() {
            let j = where_is[row];
            ipiv.push(j);
            let other = at[i];
            at.swap(i, j);
            where_is[row] = i;
            where_is[other] = j;
        }
        ipiv
    }

    /// The growth factor `max |U| / max |A|`.
    pub fn growth(&self) -> f64 {
        self.growth
    }

    /// The grid used.
    pub fn grid(&self) -> ConfluxGrid {
        self.grid
    }

    /// The tile width used.
    pub fn block(&self) -> usize {
        self.block
    }

    /// The factors in the factorisation's own layout (layer 0's block-cyclic tiles).
    pub fn native(&self) -> &OwnedDistMatrix<T, BlockCyclic> {
        &self.native
    }

    /// Every step's pivot rows.
    pub fn step_pivots(&self) -> &[Vec<usize>] {
        &self.pivots
    }
}

/// Every rank's predicted counters for [`lu`] of an `n × n` matrix given in the native layout
/// (so the transforms move nothing) on `p` ranks, when the steps pivot on `pivots` (one list
/// per step, as [`LuFactors::step_pivots`]); `bytes` is the element size. Before a run, pass
/// [`diagonal_pivots`]: the pivots of a matrix that needs no interchanges.
///
/// # Errors
/// As [`lu_plan`].
pub fn lu_rank_costs(
    n: usize,
    p: usize,
    params: &LuParams,
    pivots: &[Vec<usize>],
    bytes: usize,
) -> Result<Vec<CommStats>, LuError> {
    let (grid, v) = lu_plan(n, p, params)?;
    let pivoting = match params.algorithm {
        LuAlgorithm::Conflux => Pivoting::Tournament,
        LuAlgorithm::TwoD => Pivoting::Partial,
    };
    Ok(model_costs(
        &Geometry::new(n, v, grid),
        p,
        pivoting,
        pivots,
        bytes,
    ))
}

/// The pivots of a matrix that needs no row interchanges, step by step, for tile width `v`.
pub fn diagonal_pivots(n: usize, v: usize) -> Vec<Vec<usize>> {
    (0..n.div_ceil(v.max(1)))
        .map(|t| (t * v..((t + 1) * v).min(n)).collect())
        .collect()
}
