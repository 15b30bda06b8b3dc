//! Left-looking out-of-core LU with partial pivoting, the disk copy kept pivoted (seed 003,
//! digest §4.3(b) and §4.4): two panels in memory, the active one and one to its left.
//!
//! Step `k` (panel `k`, rows from `r = k·w`):
//! 1. read the active panel whole (`M × w`), apply the interchanges of steps `0..k` to it;
//! 2. for each panel `i < k`: read its rows `i·w..M`; if `i < k − 1`, apply step `k − 1`'s
//!    interchanges to it and write its rows `(k−1)·w..M` back (the rectangle they changed);
//!    then `C₀ ← T₀⁻¹·C₀` and `[C₁; E] −= [T₁; D]·C₀`;
//! 3. factor `E` (rows `r..M`) with partial pivoting; write the active panel whole.
//!
//! After the last step, its interchanges are applied to the panels to its left (their rows
//! `(K−1)·w..M` read and written), so the file ends as LAPACK's `getrf` leaves a matrix: `L\U`
//! in the rows of `P·A`. The counts of [`left_pivoted_io`] are exact; for `M` a multiple of
//! `w` the writes are seed 003's formula and the reads exceed it by that last application's
//! `(K−1)·w·(M−(K−1)·w)`, which the seed leaves out.

use crate::{DiskMatrix, IoCounts, OocError};
use redblue_core::{Diag, Op, Scalar, Side, Uplo};
use redblue_kernels::{gemm, getrf, laswp, trsm, Direction, KernelScalar, MatMut, MatRef, Par};

/// What the factorisation found.
#[derive(Clone, Debug, PartialEq)]
pub struct OocLu {
    /// LAPACK's interchanges (0-based): row `i` was interchanged with row `ipiv[i] ≥ i`.
    pub ipiv: Vec<usize>,
    /// The first column whose pivot is exactly zero (the factorisation went on, as LAPACK's).
    pub first_zero_pivot: Option<usize>,
    /// The elements it read and wrote.
    pub io: IoCounts,
    /// The floating-point operations of each phase.
    pub flops: PhaseFlops,
}

/// Floating-point operations of an LU's phases (a complex operation counts as one; `2·m·n·k`
/// for a product, `m²·n` for a triangular solve with `n` right-hand sides, `h·w² − w³/3` for the
/// factorisation of an `h × w` panel).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PhaseFlops {
    /// The triangular solves `U₁₂ = L₁₁⁻¹·A₁₂`.
    pub trsm: f64,
    /// The updates `A₂₂ −= L₂₁·U₁₂`.
    pub gemm: f64,
    /// The panel factorisations.
    pub getrf: f64,
}

impl std::ops::AddAssign for PhaseFlops {
    fn add_assign(&mut self, o: PhaseFlops) {
        self.trsm += o.trsm;
        self.gemm += o.gemm;
        self.getrf += o.getrf;
    }
}

/// The flops of factoring an `h × w` panel (`h ≥ w`).
fn getrf_flops(h: usize, w: usize) -> PhaseFlops {
    let (h, w) = (h as f64, w as f64);
    PhaseFlops {
        getrf: h * w * w - w * w * w / 3.0,
        ..PhaseFlops::default()
    }
}

/// The flops every variant performs on an `m × m` matrix in panels of `w` (they differ in
/// what they read and write, not in what they compute): for `m = K·w` seed 003's
/// `½M²w − ½Mw²` (TRSM), `⅔M³ − M²w + ⅓Mw²` (GEMM) and `½M²w + ⅙Mw²` (GETRF).
pub fn lu_flops(m: usize, w: usize) -> PhaseFlops {
    let w = w.max(1);
    let mut f = PhaseFlops::default();
    for k in 0..m.div_ceil(w) {
        let (r, wk) = (k * w, w.min(m - k * w));
        for i in 0..k {
            let (ri, wi) = (i * w, w.min(m - i * w));
            f += update_flops(m - ri, wi, wk);
        }
        f += getrf_flops(m - r, wk);
    }
    f
}

/// The flops of [`update_from`] with a left panel of `h` rows and `wi` columns on `wk` columns.
fn update_flops(h: usize, wi: usize, wk: usize) -> PhaseFlops {
    let (h, wi, wk) = (h as f64, wi as f64, wk as f64);
    PhaseFlops {
        trsm: wi * wi * wk,
        gemm: 2.0 * (h - wi) * wi * wk,
        getrf: 0.0,
    }
}

/// Elements read and written by [`lu_left_pivoted`] on an `m × m` matrix in panels of `w`
/// columns (any `m`, the last panel possibly narrower): the replay of its steps' sizes.
pub fn left_pivoted_io(m: u64, w: u64) -> (u64, u64) {
    let k_steps = m.div_ceil(w.max(1));
    let width = |i: u64| w.min(m - i * w);
    let (mut reads, mut writes) = (0, 0);
    for k in 0..k_steps {
        reads += m * width(k);
        for i in 0..k {
            reads += (m - i * w) * width(i);
            if i + 1 < k {
                writes += (m - (k - 1) * w) * width(i);
            }
        }
        writes += m * width(k);
    }
    if k_steps >= 2 {
        let last = (k_steps - 1) * w;
        for i in 0..k_steps - 1 {
            reads += (m - last) * width(i);
            writes += (m - last) * width(i);
        }
    }
    (reads, writes)
}

/// The active panel `act` (`m × wk`, column-major) updated with a panel to its left whose rows
/// `ri..m` are `tmp` (`h = m − ri` rows, `wi` columns): `C₀ ← T₀⁻¹·C₀` (rows `ri..ri+wi`), then
/// `[C₁; E] −= [T₁; D]·C₀` in one product (`C₀` copied out: it and its target interleave in the
/// panel's columns).
#[allow(clippy::too_many_arguments)]
fn update_from<T: KernelScalar>(
    act: &mut [T],
    m: usize,
    wk: usize,
    tmp: &[T],
    h: usize,
    ri: usize,
    wi: usize,
    par: Par,
) -> Result<PhaseFlops, OocError> {
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    let t0 = MatRef::from_slice(tmp, wi, wi, h).map_err(kernel)?;
    let c0 = rows_mut(act, m, wk, ri..ri + wi)?;
    trsm(
        Side::Left,
        Uplo::Lower,
        Op::NoTrans,
        Diag::Unit,
        T::one(),
        t0,
        c0,
        par,
    )
    .map_err(kernel)?;
    if h > wi {
        let c0: Vec<T> = (0..wk)
            .flat_map(|j| act[j * m + ri..j * m + ri + wi].to_vec())
            .collect();
        let c0 = MatRef::from_slice(&c0, wi, wk, wi).map_err(kernel)?;
        let below = MatRef::from_slice(&tmp[wi..], h - wi, wi, h).map_err(kernel)?;
        let dst = rows_mut(act, m, wk, ri + wi..m)?;
        gemm(
            T::zero() - T::one(),
            below,
            Op::NoTrans,
            c0,
            Op::NoTrans,
            T::one(),
            dst,
            par,
        )
        .map_err(kernel)?;
    }
    Ok(update_flops(h, wi, wk))
}

/// The order of `a`, or [`OocError::Invalid`] naming the file if it is not square.
fn square_order<T: Scalar>(a: &DiskMatrix<T>) -> Result<usize, OocError> {
    let (m, n) = a.shape();
    if m != n {
        return Err(OocError::Invalid(format!(
            "{}: LU of a {m} x {n} matrix: not square",
            a.path().display()
        )));
    }
    Ok(m)
}

/// Rows `from..` of the columns `cols` read into `buf`, interchanged by `rel` (relative to
/// `from`), written back: later steps' interchanges brought to a panel on disk.
fn interchange_rows<T: KernelScalar>(
    a: &mut DiskMatrix<T>,
    from: usize,
    cols: std::ops::Range<usize>,
    rel: &[usize],
    buf: &mut [T],
) -> Result<(), OocError> {
    let (m, w) = (a.shape().0, cols.len());
    a.read(from..m, cols.clone(), buf)?;
    laswp(
        rows_mut(buf, m - from, w, 0..m - from)?,
        rel,
        Direction::Forward,
    )
    .map_err(|e| OocError::Invalid(e.to_string()))?;
    a.write(from..m, cols, buf)
}

/// Rows `rows` of a column-major buffer of `ld` rows and `cols` columns, as a writable view.
fn rows_mut<T: KernelScalar>(
    buf: &mut [T],
    ld: usize,
    cols: usize,
    rows: std::ops::Range<usize>,
) -> Result<MatMut<'_, T>, OocError> {
    let n = rows.len();
    MatMut::from_slice(&mut buf[rows.start..], n, cols, ld)
        .map_err(|e| OocError::Invalid(e.to_string()))
}

/// Factors the square matrix in `a` in place: `P·A = L·U`, left-looking, the file kept
/// pivoted, two panels of `a`'s width in memory.
///
/// # Errors
/// [`OocError::Invalid`] for a matrix that is not square; the disk's errors.
pub fn lu_left_pivoted<T: KernelScalar>(
    a: &mut DiskMatrix<T>,
    par: Par,
) -> Result<OocLu, OocError> {
    let m = square_order(a)?;
    let w = a.panel();
    let steps = a.panels();
    let start = a.io();
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    let mut ipiv: Vec<usize> = Vec::with_capacity(m);
    let mut first_zero_pivot = None;
    let mut flops = PhaseFlops::default();
    let mut active = vec![T::zero(); m * w];
    let mut temp = vec![T::zero(); m * w];
    for k in 0..steps {
        let c = a.panel_cols(k);
        let (r, wk) = (c.start, c.len());
        let act = &mut active[..m * wk];
        a.read(0..m, c.clone(), act)?;
        laswp(rows_mut(act, m, wk, 0..m)?, &ipiv, Direction::Forward).map_err(kernel)?;
        for i in 0..k {
            let ci = a.panel_cols(i);
            let (ri, wi) = (ci.start, ci.len());
            let h = m - ri;
            let tmp = &mut temp[..h * wi];
            a.read(ri..m, ci.clone(), tmp)?;
            if i + 1 < k {
                // Step k − 1's interchanges, rows (k−1)·w.., then those rows back to disk.
                let from = (k - 1) * w;
                let rel: Vec<usize> = ipiv[from..r].iter().map(|&p| p - from).collect();
                laswp(
                    rows_mut(tmp, h, wi, from - ri..h)?,
                    &rel,
                    Direction::Forward,
                )
                .map_err(kernel)?;
                let back: Vec<T> = (0..wi)
                    .flat_map(|j| tmp[j * h + from - ri..(j + 1) * h].to_vec())
                    .collect();
                a.write(from..m, ci.clone(), &back)?;
            }
            flops += update_from(act, m, wk, tmp, h, ri, wi, par)?;
        }
        let e = rows_mut(act, m, wk, r..m)?;
        let info = getrf(e, par).map_err(kernel)?;
        flops += getrf_flops(m - r, wk);
        if first_zero_pivot.is_none() {
            first_zero_pivot = info.first_zero_pivot.map(|j| r + j);
        }
        ipiv.extend(info.pivots.ipiv().iter().map(|&p| r + p));
        a.write(0..m, c, act)?;
    }
    if steps >= 2 {
        // The last step's interchanges to the panels on its left.
        let from = (steps - 1) * w;
        let rel: Vec<usize> = ipiv[from..].iter().map(|&p| p - from).collect();
        for i in 0..steps - 1 {
            let ci = a.panel_cols(i);
            let (h, wi) = (m - from, ci.len());
            interchange_rows(a, from, ci, &rel, &mut temp[..h * wi])?;
        }
    }
    Ok(OocLu {
        ipiv,
        first_zero_pivot,
        io: a.io().since(start),
        flops,
    })
}

/// Elements read and written by [`lu_left_unpivoted`] on an `m × m` matrix in panels of `w`
/// columns: every step reads its panel and every panel to its left whole and writes its panel;
/// the final pass reads and writes the whole matrix once.
pub fn left_unpivoted_io(m: u64, w: u64) -> (u64, u64) {
    let k_steps = m.div_ceil(w.max(1));
    let width = |i: u64| w.min(m - i * w);
    let mut reads = 0;
    for k in 0..k_steps {
        reads += (0..=k).map(|i| m * width(i)).sum::<u64>();
    }
    (reads + m * m, 2 * m * m)
}

/// [`lu_left_pivoted`]'s factorisation with the disk copy kept unpivoted (seed 003, digest
/// §4.3(a), Fig. 4): every panel on disk stays in `A`'s row order; each read applies the
/// interchanges found so far, each factored panel is put back in `A`'s order before it is
/// written, and a final pass writes the matrix pivoted — `L\U` in the rows of `P·A`, as LAPACK
/// leaves it. Its counts are [`left_unpivoted_io`]: seed 003's `M²·(K+1)/2` reads and `2M²`
/// writes for `M = K·w`, plus the final pass's `M²` reads, which the seed leaves out.
///
/// # Errors
/// As [`lu_left_pivoted`].
pub fn lu_left_unpivoted<T: KernelScalar>(
    a: &mut DiskMatrix<T>,
    par: Par,
) -> Result<OocLu, OocError> {
    let m = square_order(a)?;
    let (w, steps, start) = (a.panel(), a.panels(), a.io());
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    let mut ipiv: Vec<usize> = Vec::with_capacity(m);
    let mut first_zero_pivot = None;
    let mut flops = PhaseFlops::default();
    let mut active = vec![T::zero(); m * w];
    let mut temp = vec![T::zero(); m * w];
    for k in 0..steps {
        let c = a.panel_cols(k);
        let (r, wk) = (c.start, c.len());
        let act = &mut active[..m * wk];
        a.read(0..m, c.clone(), act)?;
        laswp(rows_mut(act, m, wk, 0..m)?, &ipiv, Direction::Forward).map_err(kernel)?;
        for i in 0..k {
            let ci = a.panel_cols(i);
            let (ri, wi) = (ci.start, ci.len());
            let full = &mut temp[..m * wi];
            a.read(0..m, ci, full)?;
            laswp(rows_mut(full, m, wi, 0..m)?, &ipiv, Direction::Forward).map_err(kernel)?;
            // Rows ri.. of the panel, as the update wants them.
            let tmp: Vec<T> = (0..wi)
                .flat_map(|j| full[j * m + ri..(j + 1) * m].to_vec())
                .collect();
            flops += update_from(act, m, wk, &tmp, m - ri, ri, wi, par)?;
        }
        let info = getrf(rows_mut(act, m, wk, r..m)?, par).map_err(kernel)?;
        flops += getrf_flops(m - r, wk);
        if first_zero_pivot.is_none() {
            first_zero_pivot = info.first_zero_pivot.map(|j| r + j);
        }
        ipiv.extend(info.pivots.ipiv().iter().map(|&p| r + p));
        laswp(rows_mut(act, m, wk, 0..m)?, &ipiv, Direction::Backward).map_err(kernel)?;
        a.write(0..m, c, act)?;
    }
    for p in 0..steps {
        let c = a.panel_cols(p);
        let full = &mut temp[..m * c.len()];
        a.read(0..m, c.clone(), full)?;
        laswp(rows_mut(full, m, c.len(), 0..m)?, &ipiv, Direction::Forward).map_err(kernel)?;
        a.write(0..m, c, full)?;
    }
    Ok(OocLu {
        ipiv,
        first_zero_pivot,
        io: a.io().since(start),
        flops,
    })
}

/// Elements [`solve_from_file`] reads for an `m × m` matrix in panels of `w`: each panel's rows
/// from its diagonal down (forward, `L`), then its rows down to its diagonal block's end (back,
/// `U`) — `m² + Σ wₖ²` in all.
pub fn solve_io(m: u64, w: u64) -> u64 {
    let k_steps = m.div_ceil(w.max(1));
    (0..k_steps)
        .map(|k| {
            let wk = w.min(m - k * w);
            (m - k * w) * wk + (k * w + wk) * wk
        })
        .sum()
}

/// Solves `A·X = B` with the factors a left-looking LU left in `a` (`L\U` in the rows of
/// `P·A`) and its `ipiv`: `b` (`m × nrhs`, column-major, in memory) is overwritten by `X`. The
/// panels stream from disk twice — forward with `L` from each diagonal down, back with `U` —
/// one in memory at a time.
///
/// # Errors
/// [`OocError::Invalid`] for a `b` or `ipiv` of another height; the disk's errors.
pub fn solve_from_file<T: KernelScalar>(
    a: &mut DiskMatrix<T>,
    ipiv: &[usize],
    b: &mut [T],
    nrhs: usize,
    par: Par,
) -> Result<(), OocError> {
    let (m, _) = a.shape();
    if ipiv.len() != m || b.len() != m * nrhs {
        return Err(OocError::Invalid(format!(
            "{}: a solve with {} interchanges and {} right-hand-side elements for order {m}",
            a.path().display(),
            ipiv.len(),
            b.len()
        )));
    }
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    laswp(rows_mut(b, m, nrhs, 0..m)?, ipiv, Direction::Forward).map_err(kernel)?;
    let mut panel = vec![T::zero(); m * a.panel()];
    let minus = T::zero() - T::one();
    for k in 0..a.panels() {
        // Forward: X_k = L_kk⁻¹·B_k, then B below −= L_below·X_k.
        let c = a.panel_cols(k);
        let (r, wk, h) = (c.start, c.len(), m - c.start);
        let p = &mut panel[..h * wk];
        a.read(r..m, c, p)?;
        let l = MatRef::from_slice(p, wk, wk, h).map_err(kernel)?;
        trsm(
            Side::Left,
            Uplo::Lower,
            Op::NoTrans,
            Diag::Unit,
            T::one(),
            l,
            rows_mut(b, m, nrhs, r..r + wk)?,
            par,
        )
        .map_err(kernel)?;
        if h > wk {
            let x: Vec<T> = (0..nrhs)
                .flat_map(|j| b[j * m + r..j * m + r + wk].to_vec())
                .collect();
            let x = MatRef::from_slice(&x, wk, nrhs, wk).map_err(kernel)?;
            let below = MatRef::from_slice(&p[wk..], h - wk, wk, h).map_err(kernel)?;
            gemm(
                minus,
                below,
                Op::NoTrans,
                x,
                Op::NoTrans,
                T::one(),
                rows_mut(b, m, nrhs, r + wk..m)?,
                par,
            )
            .map_err(kernel)?;
        }
    }
    for k in (0..a.panels()).rev() {
        // Back: X_k = U_kk⁻¹·B_k, then B above −= U_above·X_k.
        let c = a.panel_cols(k);
        let (r, wk) = (c.start, c.len());
        let h = r + wk;
        let p = &mut panel[..h * wk];
        a.read(0..h, c, p)?;
        let u = MatRef::from_slice(&p[r..], wk, wk, h).map_err(kernel)?;
        trsm(
            Side::Left,
            Uplo::Upper,
            Op::NoTrans,
            Diag::NonUnit,
            T::one(),
            u,
            rows_mut(b, m, nrhs, r..h)?,
            par,
        )
        .map_err(kernel)?;
        if r > 0 {
            let x: Vec<T> = (0..nrhs)
                .flat_map(|j| b[j * m + r..j * m + h].to_vec())
                .collect();
            let x = MatRef::from_slice(&x, wk, nrhs, wk).map_err(kernel)?;
            let above = MatRef::from_slice(p, r, wk, h).map_err(kernel)?;
            gemm(
                minus,
                above,
                Op::NoTrans,
                x,
                Op::NoTrans,
                T::one(),
                rows_mut(b, m, nrhs, 0..r)?,
                par,
            )
            .map_err(kernel)?;
        }
    }
    Ok(())
}

/// Elements read and written by [`lu_right`] on an `m × m` matrix in panels of `w`: each step
/// reads and writes its trailing submatrix `(m − r)²`, and a final pass brings each panel's
/// rows below it the later steps' interchanges.
pub fn right_io(m: u64, w: u64) -> (u64, u64) {
    let k_steps = m.div_ceil(w.max(1));
    let width = |i: u64| w.min(m - i * w);
    let steps: u64 = (0..k_steps).map(|k| (m - k * w) * (m - k * w)).sum();
    let last: u64 = (0..k_steps.saturating_sub(1))
        .map(|i| (m - (i + 1) * w) * width(i))
        .sum();
    (steps + last, steps + last)
}

/// Right-looking out-of-core LU, the baseline of seed 003 (digest §4.2): step `k` factors its
/// panel's rows `r..M`, then streams every panel to its right (rows `r..M`) through memory —
/// the interchanges, `U₁₂ = L₁₁⁻¹·A₁₂`, `A₂₂ −= L₂₁·U₁₂` — reading and writing the whole trailing
/// submatrix. The interchanges of the columns on the left are applied in a final pass. Counts:
/// [`right_io`], seed 003's `w²·K(K+1)(2K+1)/6` each way for `M = K·w`, plus that final pass.
///
/// # Errors
/// As [`lu_left_pivoted`].
pub fn lu_right<T: KernelScalar>(a: &mut DiskMatrix<T>, par: Par) -> Result<OocLu, OocError> {
    let m = square_order(a)?;
    let (steps, start) = (a.panels(), a.io());
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    let mut ipiv: Vec<usize> = Vec::with_capacity(m);
    let mut first_zero_pivot = None;
    let mut flops = PhaseFlops::default();
    let mut panel = vec![T::zero(); m * a.panel()];
    let mut trailing = vec![T::zero(); m * a.panel()];
    for k in 0..steps {
        let c = a.panel_cols(k);
        let (r, wk, h) = (c.start, c.len(), m - c.start);
        let p = &mut panel[..h * wk];
        a.read(r..m, c.clone(), p)?;
        let info = getrf(rows_mut(p, h, wk, 0..h)?, par).map_err(kernel)?;
        flops += getrf_flops(h, wk);
        if first_zero_pivot.is_none() {
            first_zero_pivot = info.first_zero_pivot.map(|j| r + j);
        }
        let local = info.pivots.ipiv().to_vec();
        ipiv.extend(local.iter().map(|&q| r + q));
        a.write(r..m, c, p)?;
        for j in k + 1..steps {
            let cj = a.panel_cols(j);
            let wj = cj.len();
            let t = &mut trailing[..h * wj];
            a.read(r..m, cj.clone(), t)?;
            laswp(rows_mut(t, h, wj, 0..h)?, &local, Direction::Forward).map_err(kernel)?;
            flops += update_from(t, h, wj, p, h, 0, wk, par)?;
            a.write(r..m, cj, t)?;
        }
    }
    // The left columns' interchanges: each panel's rows below it, the later steps' swaps.
    for i in 0..steps.saturating_sub(1) {
        let ci = a.panel_cols(i);
        let from = ci.end;
        let (h, wi) = (m - from, ci.len());
        let rel: Vec<usize> = ipiv[from..].iter().map(|&q| q - from).collect();
        interchange_rows(a, from, ci, &rel, &mut trailing[..h * wi])?;
    }
    Ok(OocLu {
        ipiv,
        first_zero_pivot,
        io: a.io().since(start),
        flops,
    })
}
