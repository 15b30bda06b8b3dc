//! [`getrf`]: LU factorisation with partial pivoting, `P·A = L·U`, on any `m × n` matrix, with
//! LAPACK-style row interchanges ([`LuPivots`]) and [`laswp`] to apply or undo them.
//!
//! The factorisation is LAPACK's recursive `getrf2`: factor the left half of the columns
//! (recursively), apply its interchanges to the right half, `A12 ← L11⁻¹·A12` (the crate's
//! triangular solve), `A22 ← A22 − A21·A12` (the crate's matmul), factor `A22` (recursively)
//! and apply its interchanges to `A21`. Panels at most [`LEAF`] columns wide are factored column by
//! column. All the flops outside the narrow leaves go through the crate's matmul and triangular
//! solve. Measurements against OpenBLAS: the book's kernels page.
//!
//! Why not faer's `lu::partial_pivoting::factor::lu_in_place`: on an exactly singular matrix
//! it divides by the zero pivot, which fills the rest of the factors with NaNs (checked by a
//! test below). LAPACK instead skips the division, reports the column (`info > 0`) and leaves
//! usable factors; a tournament-pivoting panel factorisation meets singular candidate blocks
//! in normal operation and needs that behaviour. The recursion here also produces the
//! sequential interchanges (`ipiv`) directly, where faer returns a permutation.

use crate::simd::widest;
use crate::system::matmul;
use crate::trsm::Solver;
use crate::view::{faer_col as col, faer_col_mut as col_mut};
use crate::{KernelError, KernelScalar, MatMut, Par};
use faer::prelude::{Reborrow, ReborrowMut};
use faer::{Accum, Conj};
use redblue_core::{Diag, Scalar};

/// Panels at most this many columns wide are factored column by column. With the leaf on the
/// CPU's widest vectors, narrower was faster (one Zen 5 core, f64, best of 15): a `4096 × 128`
/// panel at 48, 61, 73 and 79 GFLOP/s with leaves of 32, 16, 8 and 4 columns (78 with 2),
/// `2048 × 192` at 62, 71, 75 and 78; OpenBLAS's `dgetrf` 68 and 73.
const LEAF: usize = 4;

/// The row interchanges of an LU factorisation with partial pivoting, in two forms.
///
/// * `ipiv` (LAPACK's, 0-based): for `i = 0, 1, …, k − 1` in this order, row `i` was
///   interchanged with row `ipiv[i]` (`ipiv[i] ≥ i`; equal means no interchange). `k` is
///   `min(m, n)` for an `m × n` factorisation.
/// * `perm`: the same permutation as a vector of `m` row indices: row `i` of `P·A` is row
///   `perm[i]` of `A`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LuPivots {
    ipiv: Vec<usize>,
    perm: Vec<usize>,
}

impl LuPivots {
    /// The pivots of a sequence of interchanges on a matrix of `nrows` rows: row `i` is
    /// interchanged with row `ipiv[i]`, for `i = 0, 1, …` in order.
    ///
    /// # Errors
    /// [`KernelError::InvalidPivot`] if `ipiv` has more than `nrows` entries or an entry is
    /// not a row index (`≥ nrows`).
    pub fn from_ipiv(ipiv: Vec<usize>, nrows: usize) -> Result<Self, KernelError> {
        check_ipiv(&ipiv, nrows)?;
        let mut perm: Vec<usize> = (0..nrows).collect();
        for (i, &p) in ipiv.iter().enumerate() {
            perm.swap(i, p);
        }
        Ok(LuPivots { ipiv, perm })
    }

    /// The interchanges in LAPACK order (0-based): row `i` with row `ipiv()[i]`.
    pub fn ipiv(&self) -> &[usize] {
        &self.ipiv
    }

    /// The permutation: row `i` of `P·A` is row `perm()[i]` of `A`.
    pub fn perm(&self) -> &[usize] {
        &self.perm
    }

    /// The number of rows the pivots apply to (the length of [`perm`](Self::perm)).
    pub fn nrows(&self) -> usize {
        self.perm.len()
    }

    /// Whether `P` is an odd permutation (the sign of `det P` is `-1`): the number of actual
    /// interchanges (`ipiv[i] ≠ i`) is odd.
    pub fn is_odd(&self) -> bool {
        self.ipiv
            .iter()
            .enumerate()
            .filter(|&(i, &p)| p != i)
            .count()
            % 2
            == 1
    }

    /// The two forms, `(ipiv, perm)`.
    pub fn into_parts(self) -> (Vec<usize>, Vec<usize>) {
        (self.ipiv, self.perm)
    }
}

/// The result of [`getrf`]: the row interchanges, and the first exactly zero pivot if any.
///
/// A zero pivot does not stop the factorisation (as with LAPACK's `info > 0`): `L` and `U` are
/// complete and `P·A = L·U` holds, but `U` is singular, so solving with it would divide by
/// zero. Code for which a singular matrix is an error writes
/// `getrf(a, par)?.nonsingular()?`; code for which it is normal (a panel factorisation that
/// only wants the pivots) reads [`pivots`](Self::pivots) and may ignore the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use = "the pivots are needed to use the factors, and a zero pivot may need handling"]
pub struct LuInfo {
    /// The row interchanges, `P`.
    pub pivots: LuPivots,
    /// The first column (0-based) whose pivot is exactly zero: every candidate in it was zero.
    pub first_zero_pivot: Option<usize>,
}

impl LuInfo {
    /// The pivots when every pivot is nonzero.
    ///
    /// # Errors
    /// [`KernelError::SingularPivot`] with the first zero-pivot column otherwise (the factors
    /// in the matrix are still the complete `L` and `U`).
    pub fn nonsingular(self) -> Result<LuPivots, KernelError> {
        match self.first_zero_pivot {
            None => Ok(self.pivots),
            Some(column) => Err(KernelError::SingularPivot { column }),
        }
    }
}

/// Which way [`laswp`] applies a sequence of interchanges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// `A ← P·A`: interchange row `i` with `ipiv[i]` for `i = 0, 1, …` (LAPACK `incx = 1`).
    Forward,
    /// `A ← Pᵀ·A`: the same interchanges in reverse order, undoing `Forward`
    /// (LAPACK `incx = −1`).
    Backward,
}

/// Checks that `ipiv` describes interchanges of rows of an `nrows`-row matrix.
fn check_ipiv(ipiv: &[usize], nrows: usize) -> Result<(), KernelError> {
    if ipiv.len() > nrows {
        return Err(KernelError::InvalidPivot {
            index: nrows,
            pivot: ipiv[nrows],
            nrows,
        });
    }
    match ipiv.iter().position(|&p| p >= nrows) {
        Some(index) => Err(KernelError::InvalidPivot {
            index,
            pivot: ipiv[index],
            nrows,
        }),
        None => Ok(()),
    }
}

/// Applies row interchanges to `A`: for `i` in `0..ipiv.len()`, row `i` is interchanged with
/// row `ipiv[i]`, in increasing order of `i` ([`Direction::Forward`], `A ← P·A`) or decreasing
/// ([`Direction::Backward`], `A ← Pᵀ·A`, which undoes `Forward`).
///
/// This is LAPACK's `laswp` with `k1 = 0`, `k2 = ipiv.len()`: to apply the interchanges of a
/// factorisation that started at row `r` of a larger matrix, pass the view of rows `r..`.
/// The interchanges from [`getrf`] on the first columns of a matrix, applied to its other
/// columns, are `laswp(rest, info.pivots.ipiv(), Direction::Forward)`.
///
/// # Errors
/// [`KernelError::InvalidPivot`] if `ipiv` is longer than the number of rows of `A` or names
/// a row past its end; `A` is not touched then.
pub fn laswp<T: Scalar>(
    mut a: MatMut<'_, T>,
    ipiv: &[usize],
    direction: Direction,
) -> Result<(), KernelError> {
    check_ipiv(ipiv, a.nrows())?;
    for j in 0..a.ncols() {
        swap_in_column(a.col_mut(j), ipiv, direction);
    }
    Ok(())
}

/// The interchanges of `ipiv` on one column.
fn swap_in_column<T>(col: &mut [T], ipiv: &[usize], direction: Direction) {
    match direction {
        Direction::Forward => {
            for (i, &p) in ipiv.iter().enumerate() {
                col.swap(i, p);
            }
        }
        Direction::Backward => {
            for (i, &p) in ipiv.iter().enumerate().rev() {
                col.swap(i, p);
            }
        }
    }
}

/// LU factorisation with partial pivoting of the `m × n` matrix `A` (any shape): `P·A = L·U`
/// with `L` `m × k` unit lower trapezoidal, `U` `k × n` upper trapezoidal, `k = min(m, n)`.
/// `L` (without its unit diagonal) and `U` overwrite `A`, as in LAPACK `getrf`.
///
/// The pivot of each column is the candidate of largest `|re| + |im|` (the first one on a tie,
/// as LAPACK's `i?amax`). A column whose candidates are all exactly zero gets no interchange
/// and no division: the factorisation continues, and [`LuInfo::first_zero_pivot`] reports the
/// first such column (LAPACK's `info > 0`). Tall panels (`m ≫ n`), such as the stacked blocks
/// of tournament pivoting, are factored the same way.
///
/// Runs LAPACK's recursive algorithm on the crate's matmul and faer's triangular solve with `par`
/// threads (see the module documentation of `lu.rs`); with the `blas` feature, the system's
/// LAPACK `?getrf`.
///
/// # Errors
/// None at present: every shape is valid. The `Result` leaves room for back ends with limits
/// (a system LAPACK with 32-bit dimensions).
///
/// # Examples
/// ```
/// use redblue_kernels::{getrf, Mat, Par};
///
/// // A = [1 2; 3 4]: the pivot of column 0 is 3, in row 1.
/// let mut a = Mat::from_fn(2, 2, |i, j| [[1.0f64, 2.0], [3.0, 4.0]][i][j]);
/// let info = getrf(a.as_mut(), Par::Seq)?;
/// assert_eq!(info.pivots.ipiv(), &[1, 1]);
/// assert_eq!(info.pivots.perm(), &[1, 0]);
/// assert_eq!(info.first_zero_pivot, None);
/// // L = [1 0; 1/3 1], U = [3 4; 0 2/3].
/// assert_eq!((a[(0, 0)], a[(0, 1)], a[(1, 0)]), (3.0, 4.0, 1.0 / 3.0));
/// assert!((a[(1, 1)] - 2.0 / 3.0).abs() < 1e-15);
/// # Ok::<(), redblue_kernels::KernelError>(())
/// ```
pub fn getrf<T: KernelScalar>(a: MatMut<'_, T>, par: Par) -> Result<LuInfo, KernelError> {
    let (m, n) = a.shape();
    let mut ipiv = vec![0; m.min(n)];
    let mut a = a;
    let first_zero_pivot = match T::system_getrf(a.rb_mut(), &mut ipiv, par) {
        Some(first_zero_pivot) => first_zero_pivot,
        None => factor(a.into_faer(), &mut ipiv, par),
    };
    let pivots = LuPivots::from_ipiv(ipiv, m)?;
    Ok(LuInfo {
        pivots,
        first_zero_pivot,
    })
}

/// `laswp(Forward)` on a faer view.
fn swap_rows<T>(mut a: faer::MatMut<'_, T>, ipiv: &[usize]) {
    for j in 0..a.ncols() {
        swap_in_column(col_mut(a.rb_mut(), j), ipiv, Direction::Forward);
    }
}

/// `|re| + |im|`, LAPACK's pivot measure (`|x|` for reals).
#[inline(always)]
fn abs1<T: Scalar>(x: T) -> T::Real {
    x.re().abs() + x.im().abs()
}

/// Factors `a` in place (LAPACK `getrf2`), writes the `min(m, n)` interchanges (relative to
/// `a`'s first row) to `ipiv` and returns the first zero-pivot column.
fn factor<T: KernelScalar>(
    mut a: faer::MatMut<'_, T>,
    ipiv: &mut [usize],
    par: Par,
) -> Option<usize> {
    let (m, n) = (a.nrows(), a.ncols());
    let k = m.min(n);
    debug_assert_eq!(ipiv.len(), k);
    if k <= LEAF {
        return factor_unblocked(a, ipiv);
    }
    // Split the k pivot columns about in half, on a multiple of 16 (or 8) like faer.
    let half = k / 2;
    let n1 = half.next_multiple_of(half.next_power_of_two().min(16));
    debug_assert!(0 < n1 && n1 < k);
    let (ipiv1, ipiv2) = ipiv.split_at_mut(n1);

    // [A11; A21] = P1·L1·U11.
    let (left, mut right) = a.rb_mut().split_at_col_mut(n1);
    let zero1 = factor(left, ipiv1, par);
    // [A12; A22] ← P1·[A12; A22].
    swap_rows(right.rb_mut(), ipiv1);
    let (a11, a12, a21, a22) = a.rb_mut().split_at_mut(n1, n1);
    let (a11, a21) = (a11.rb(), a21.rb());
    let mut a12 = a12;
    // A12 ← L11⁻¹·A12.
    let solver = Solver {
        lower: true,
        diag: Diag::Unit,
        conj: Conj::No,
        par,
    };
    solver.solve(a11, a12.rb_mut());
    // A22 ← A22 − A21·A12.
    let mut a22 = a22;
    let (a21, a12) = ((a21, Conj::No), (a12.rb(), Conj::No));
    matmul(a22.rb_mut(), Accum::Add, a21, a12, -T::one(), par);
    // A22 = P2·L2·U22, then A21 ← P2·A21.
    let zero2 = factor(a22, ipiv2, par);
    let (_, a_bottom) = a.rb_mut().split_at_row_mut(n1);
    let (a21, _) = a_bottom.split_at_col_mut(n1);
    swap_rows(a21, ipiv2);
    for p in ipiv2.iter_mut() {
        *p += n1;
    }
    zero1.or(zero2.map(|c| c + n1))
}

widest! {
    /// The column-by-column factorisation (LAPACK `getf2`) of a panel: for each of the
    /// `min(m, n)` columns, choose the pivot, interchange whole rows of the panel, divide the
    /// column below the pivot by it (unless it is zero) and update the columns to its right.
    /// Compiled for the CPU's widest vectors ([`widest`]).
    fn factor_unblocked<T: KernelScalar>(a: faer::MatMut<'_, T>, ipiv: &mut [usize]) -> Option<usize>
        = factor_unblocked_body
}

#[inline(always)]
fn factor_unblocked_body<T: KernelScalar>(
    mut a: faer::MatMut<'_, T>,
    ipiv: &mut [usize],
) -> Option<usize> {
    let (m, n) = (a.nrows(), a.ncols());
    let mut first_zero = None;
    for j in 0..m.min(n) {
        let cj = col(a.rb(), j);
        let p = pivot_row(cj, j);
        ipiv[j] = p;
        if cj[p] == T::zero() {
            // Every candidate is zero: nothing to divide and nothing to update (the column
            // below the diagonal is zero, so the rank-1 update is too).
            first_zero.get_or_insert(j);
            continue;
        }
        if p != j {
            for c in 0..n {
                col_mut(a.rb_mut(), c).swap(j, p);
            }
        }
        // l = a[j+1.., j] / a[j, j]: multiply by the reciprocal unless it overflows.
        let cj = col_mut(a.rb_mut(), j);
        let pivot = cj[j];
        let inv = T::one() / pivot;
        if inv.is_finite() {
            for x in &mut cj[j + 1..] {
                *x *= inv;
            }
        } else {
            for x in &mut cj[j + 1..] {
                *x /= pivot;
            }
        }
        // a[j+1.., c] −= l·a[j, c] for the columns c > j.
        let (left, mut right) = a.rb_mut().split_at_col_mut(j + 1);
        let l = &col(left.rb(), j)[j + 1..];
        for c in 0..n - j - 1 {
            let cc = col_mut(right.rb_mut(), c);
            let u = cc[j];
            if u != T::zero() {
                for (x, &li) in cc[j + 1..].iter_mut().zip(l) {
                    *x -= li * u;
                }
            }
        }
    }
    first_zero
}

/// Rows the pivot search takes at a time: the block's largest `|re| + |im|` is found lane by
/// lane (vectorised), and only a block holding a new largest is searched for its row.
const PIVOT_BLOCK: usize = 64;

/// The pivot of column `c` at step `j`: the first row `i ≥ j` of largest `|re| + |im|`
/// (LAPACK's `i?amax`), exactly as a scan comparing each row with the largest so far finds it:
/// a NaN is never taken over the row before it, and a NaN at row `j` stays the pivot.
#[inline(always)]
fn pivot_row<T: Scalar>(c: &[T], j: usize) -> usize {
    let (mut p, mut max) = (j, abs1(c[j]));
    let mut start = j + 1;
    for block in c[j + 1..].chunks(PIVOT_BLOCK) {
        let most = block_max(block);
        if most > max {
            // `most` is one of the block's values: its first row of that size is the pivot.
            if let Some(i) = block.iter().position(|&x| abs1(x) == most) {
                (p, max) = (start + i, most);
            }
        }
        start += block.len();
    }
    p
}

/// The largest `|re| + |im|` of `block` that is not a NaN (0 if there is none), over eight
/// lanes that the compiler keeps in vector registers.
#[inline(always)]
fn block_max<T: Scalar>(block: &[T]) -> T::Real {
    const LANES: usize = 8;
    let zero = <T::Real as Scalar>::zero();
    let mut lanes = [zero; LANES];
    let chunks = block.chunks_exact(LANES);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, &x) in lanes.iter_mut().zip(chunk) {
            let v = abs1(x);
            *lane = if v > *lane { v } else { *lane };
        }
    }
    for (lane, &x) in lanes.iter_mut().zip(rest) {
        let v = abs1(x);
        *lane = if v > *lane { v } else { *lane };
    }
    lanes
        .iter()
        .fold(zero, |most, &v| if v > most { v } else { most })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Mat;

    #[test]
    fn pivots_from_ipiv_compose_the_interchanges() {
        // Rows 0↔2, then 1↔2, then 2↔2 on four rows: perm = [2, 0, 1, 3].
        let p = LuPivots::from_ipiv(vec![2, 2, 2], 4).unwrap();
        assert_eq!(p.perm(), &[2, 0, 1, 3]);
        assert_eq!(p.nrows(), 4);
        assert!(!p.is_odd());
        assert!(LuPivots::from_ipiv(vec![1], 2).unwrap().is_odd());
        assert_eq!(
            LuPivots::from_ipiv(vec![0, 3], 3),
            Err(KernelError::InvalidPivot {
                index: 1,
                pivot: 3,
                nrows: 3
            })
        );
        assert!(LuPivots::from_ipiv(vec![0, 1, 2], 2).is_err());
        assert_eq!(p.into_parts(), (vec![2, 2, 2], vec![2, 0, 1, 3]));
    }

    /// The scan `getf2` made before the search went by blocks.
    fn scanned_pivot<T: Scalar>(c: &[T], j: usize) -> usize {
        let (mut p, mut max) = (j, abs1(c[j]));
        for (i, &x) in c.iter().enumerate().skip(j + 1) {
            if abs1(x) > max {
                (p, max) = (i, abs1(x));
            }
        }
        p
    }

    #[test]
    fn the_pivot_search_by_blocks_finds_the_scans_row() {
        use redblue_core::Complex;
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for len in [1, 2, 7, 8, 9, 63, 64, 65, 130, 300] {
            for trial in 0..40 {
                // Few distinct values, so that ties are common; some NaNs and zeros.
                let mut col: Vec<f64> = (0..len)
                    .map(|_| match next() % 10 {
                        0 => f64::NAN,
                        1 => 0.0,
                        r => (r % 4) as f64 * if next() % 2 == 0 { 1.0 } else { -1.0 },
                    })
                    .collect();
                if trial % 5 == 0 {
                    col.iter_mut().for_each(|x| *x = 0.0);
                }
                for j in 0..len {
                    assert_eq!(
                        pivot_row(&col, j),
                        scanned_pivot(&col, j),
                        "{col:?}, j = {j}"
                    );
                }
                let z: Vec<Complex<f32>> = col
                    .iter()
                    .map(|&x| Complex::new(x as f32, (next() % 3) as f32))
                    .collect();
                for j in 0..len {
                    assert_eq!(pivot_row(&z, j), scanned_pivot(&z, j));
                }
            }
        }
    }

    #[test]
    fn the_leaf_for_wide_vectors_computes_the_baselines_numbers() {
        let a0 = Mat::<f64>::from_fn(301, 12, |i, j| ((i * 37 + j * 101) % 97) as f64 / 7.0 - 6.0);
        let (mut wide, mut base) = (a0.clone(), a0.clone());
        let (mut ipiv_wide, mut ipiv_base) = (vec![0; 12], vec![0; 12]);
        let zero_wide = factor_unblocked(wide.as_mut().into_faer(), &mut ipiv_wide);
        let zero_base = factor_unblocked_body(base.as_mut().into_faer(), &mut ipiv_base);
        assert_eq!((zero_wide, &ipiv_wide), (zero_base, &ipiv_base));
        for j in 0..12 {
            for i in 0..301 {
                assert_eq!(wide[(i, j)].to_bits(), base[(i, j)].to_bits(), "({i}, {j})");
            }
        }
    }

    #[test]
    fn leaf_split_is_strictly_inside() {
        for k in LEAF + 1..2000 {
            let half = k / 2;
            let n1 = half.next_multiple_of(half.next_power_of_two().min(16));
            assert!(0 < n1 && n1 < k, "k = {k}: n1 = {n1}");
        }
    }

    /// The reason this module does not call faer's LU: on a matrix with an exactly zero
    /// column, faer 0.24 divides by the zero pivot and the factors fill with NaNs. If this
    /// test starts failing after a faer upgrade, faer may have become usable here.
    #[test]
    fn faer_lu_is_not_usable_on_singular_matrices() {
        use faer::dyn_stack::{MemBuffer, MemStack};
        use faer::linalg::lu::partial_pivoting::factor::{lu_in_place, lu_in_place_scratch};
        let n = 3;
        let mut a = Mat::from_fn(n, n, |i, j| if j == 0 { 0.0 } else { (i + j) as f64 });
        let (mut perm, mut perm_inv) = (vec![0usize; n], vec![0usize; n]);
        let mut buf = MemBuffer::new(lu_in_place_scratch::<usize, f64>(
            n,
            n,
            faer::Par::Seq,
            Default::default(),
        ));
        let _ = lu_in_place(
            a.as_mut().into_faer(),
            &mut perm,
            &mut perm_inv,
            faer::Par::Seq,
            MemStack::new(&mut buf),
            Default::default(),
        );
        assert!(a.as_slice().iter().any(|x| x.is_nan()));
        // Ours: no NaN, and column 0 reported.
        let mut b = Mat::from_fn(n, n, |i, j| if j == 0 { 0.0 } else { (i + j) as f64 });
        let info = getrf(b.as_mut(), Par::Seq).unwrap();
        assert!(b.as_slice().iter().all(|x| x.is_finite()));
        assert_eq!(info.first_zero_pivot, Some(0));
    }
}
