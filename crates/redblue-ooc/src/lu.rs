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

use crate::format::scalar_code;
use crate::{DiskMatrix, IoCounts, OocError, PendingRead, Progress};
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
    /// Seconds the computation waited for reads (less than the reads took when they were
    /// started ahead).
    pub read_wait_s: f64,
    /// Whether the whole matrix was factored in memory at once: one panel (over ranks, by
    /// redblue's distributed LU).
    pub in_core: bool,
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
    let mut f = PhaseFlops::default();
    for k in 0..m.div_ceil(w.max(1)) {
        f += step_flops(m, w, k);
    }
    f
}

/// The flops of a left-looking step `k` (its panel updated by every panel to its left, then
/// factored).
pub fn step_flops(m: usize, w: usize, k: usize) -> PhaseFlops {
    let w = w.max(1);
    let (r, wk) = (k * w, w.min(m - k * w));
    let mut f = PhaseFlops::default();
    for i in 0..k {
        let (ri, wi) = (i * w, w.min(m - i * w));
        f += update_flops(m - ri, wi, wk);
    }
    f += getrf_flops(m - r, wk);
    f
}

impl PhaseFlops {
    /// All phases together.
    pub fn total(&self) -> f64 {
        self.trsm + self.gemm + self.getrf
    }
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
    (tmp, h, ld): (&[T], usize, usize),
    ri: usize,
    wi: usize,
    par: Par,
) -> Result<PhaseFlops, OocError> {
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    let t0 = MatRef::from_slice(tmp, wi, wi, ld).map_err(kernel)?;
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
        let below = MatRef::from_slice(&tmp[wi..], h - wi, wi, ld).map_err(kernel)?;
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
    left_pivoted(LuFiles::in_place(a), par)
}

/// [`lu_left_pivoted`] on [`LuFiles`]: `A` read from the input, the factors written beside
/// it, and with a [`Progress`] resumable — it starts from the record's step, and every write
/// over a factored panel (step `k − 1`'s interchanges brought to it) is journaled first.
///
/// # Errors
/// As [`lu_left_pivoted`]; [`OocError::Format`] for a record of another run.
pub fn left_pivoted<T: KernelScalar>(mut f: LuFiles<'_, T>, par: Par) -> Result<OocLu, OocError> {
    let m = f.order(LuVariant::LeftPivoted)?;
    let (w, steps) = (f.factors.panel(), f.factors.panels());
    let start = f.io();
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    let Resumed {
        step: first,
        mut ipiv,
        mut first_zero_pivot,
        done,
    } = f.resume()?;
    // Whether step `k`'s write over the panel at column `c` is already on disk (replayed).
    let written = |k: usize, c: usize| k == first && done.contains(&c);
    let mut flops = PhaseFlops::default();
    let plan = plan_reads(f.factors, LuVariant::LeftPivoted, first, &done);
    let mut reader = Reader::new(plan, f.read_ahead);
    let (mut active, mut temp) = (Vec::new(), Vec::new());
    for k in first..steps {
        let c = f.factors.panel_cols(k);
        let (r, wk) = (c.start, c.len());
        reader.next(&mut f, &mut active)?;
        let act = &mut active[..];
        laswp(rows_mut(act, m, wk, 0..m)?, &ipiv, Direction::Forward).map_err(kernel)?;
        for i in 0..k {
            let ci = f.factors.panel_cols(i);
            let (ri, wi) = (ci.start, ci.len());
            let h = m - ri;
            reader.next(&mut f, &mut temp)?;
            let tmp = &mut temp[..];
            // Step k − 1's interchanges, rows (k−1)·w.., journaled; those rows are written
            // back after the update, the journal's fsync running meanwhile.
            let from = (k - 1) * w;
            let back = i + 1 < k && !written(k, ri);
            if back {
                let rel: Vec<usize> = ipiv[from..r].iter().map(|&p| p - from).collect();
                laswp(
                    rows_mut(tmp, h, wi, from - ri..h)?,
                    &rel,
                    Direction::Forward,
                )
                .map_err(kernel)?;
                let data = (&tmp[from - ri..], h);
                f.journal_overwrite(k, from, ci.clone(), data, &moved_rows(m - from, &rel))?;
            }
            flops += update_from(act, m, wk, (tmp, h, h), ri, wi, par)?;
            if back {
                f.write_overwrite(from, ci.clone(), (&tmp[from - ri..], h))?;
            }
        }
        let e = rows_mut(act, m, wk, r..m)?;
        let info = getrf(e, par).map_err(kernel)?;
        flops += getrf_flops(m - r, wk);
        if first_zero_pivot.is_none() {
            first_zero_pivot = info.first_zero_pivot.map(|j| r + j);
        }
        ipiv.extend(info.pivots.ipiv().iter().map(|&p| r + p));
        f.factors.write(0..m, c, act)?;
        f.commit(k + 1, &ipiv, first_zero_pivot)?;
        f.step_done(k + 1, start, flops);
    }
    if first <= steps {
        // The last step's interchanges to the panels on its left (a step of its own).
        let from = steps.saturating_sub(1) * w;
        let rel: Vec<usize> = ipiv[from..].iter().map(|&p| p - from).collect();
        for i in 0..steps.saturating_sub(1) {
            let ci = f.factors.panel_cols(i);
            if !written(steps, ci.start) {
                let (h, wi) = (m - from, ci.len());
                reader.next(&mut f, &mut temp)?;
                let buf = &mut temp[..];
                laswp(rows_mut(buf, h, wi, 0..h)?, &rel, Direction::Forward).map_err(kernel)?;
                f.overwrite(steps, from, ci, (buf, h), &moved_rows(h, &rel))?;
            }
        }
        f.commit(steps + 1, &ipiv, first_zero_pivot)?;
        f.step_done(steps + 1, start, flops);
    }
    Ok(OocLu {
        ipiv,
        first_zero_pivot,
        io: f.io().since(start),
        flops,
        read_wait_s: reader.waited,
        in_core: steps == 1,
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
    left_unpivoted(LuFiles::in_place(a), par)
}

/// [`lu_left_unpivoted`] on [`LuFiles`], as [`left_pivoted`]: its steps write only the
/// active panel, and its final pass (a step of its own) journals each panel it pivots.
///
/// # Errors
/// As [`left_pivoted`].
pub fn left_unpivoted<T: KernelScalar>(mut f: LuFiles<'_, T>, par: Par) -> Result<OocLu, OocError> {
    let m = f.order(LuVariant::LeftUnpivoted)?;
    let (steps, start) = (f.factors.panels(), f.io());
    let kernel = |e: redblue_kernels::KernelError| OocError::Invalid(e.to_string());
    let Resumed {
        step: first,
        mut ipiv,
        mut first_zero_pivot,
        done,
    } = f.resume()?;
    let mut flops = PhaseFlops::default();
    let plan = plan_reads(f.factors, LuVariant::LeftUnpivoted, first, &done);
    let mut reader = Reader::new(plan, f.read_ahead);
    let (mut active, mut temp) = (Vec::new(), Vec::new());
    for k in first..steps {
        let c = f.factors.panel_cols(k);
        let (r, wk) = (c.start, c.len());
        reader.next(&mut f, &mut active)?;
        let act = &mut active[..];
        laswp(rows_mut(act, m, wk, 0..m)?, &ipiv, Direction::Forward).map_err(kernel)?;
        for i in 0..k {
            let ci = f.factors.panel_cols(i);
            let (ri, wi) = (ci.start, ci.len());
            reader.next(&mut f, &mut temp)?;
            let full = &mut temp[..];
            laswp(rows_mut(full, m, wi, 0..m)?, &ipiv, Direction::Forward).map_err(kernel)?;
            // Rows ri.. of the panel, where they lie (columns m apart).
            flops += update_from(act, m, wk, (&full[ri..], m - ri, m), ri, wi, par)?;
        }
        let info = getrf(rows_mut(act, m, wk, r..m)?, par).map_err(kernel)?;
        flops += getrf_flops(m - r, wk);
        if first_zero_pivot.is_none() {
            first_zero_pivot = info.first_zero_pivot.map(|j| r + j);
        }
        ipiv.extend(info.pivots.ipiv().iter().map(|&p| r + p));
        laswp(rows_mut(act, m, wk, 0..m)?, &ipiv, Direction::Backward).map_err(kernel)?;
        f.factors.write(0..m, c, act)?;
        f.commit(k + 1, &ipiv, first_zero_pivot)?;
        f.step_done(k + 1, start, flops);
    }
    if first <= steps {
        let moved = moved_rows(m, &ipiv);
        for p in 0..steps {
            let c = f.factors.panel_cols(p);
            if first == steps && done.contains(&c.start) {
                continue;
            }
            reader.next(&mut f, &mut temp)?;
            let full = &mut temp[..];
            laswp(rows_mut(full, m, c.len(), 0..m)?, &ipiv, Direction::Forward).map_err(kernel)?;
            f.overwrite(steps, 0, c, (full, m), &moved)?;
        }
        f.commit(steps + 1, &ipiv, first_zero_pivot)?;
        f.step_done(steps + 1, start, flops);
    }
    Ok(OocLu {
        ipiv,
        first_zero_pivot,
        io: f.io().since(start),
        flops,
        read_wait_s: reader.waited,
        in_core: steps == 1,
    })
}

/// The rows (of `0..h`) that the interchanges `rel` change, in order, and for each the row
/// its new value comes from.
fn moved_rows(h: usize, rel: &[usize]) -> Moved {
    let mut perm: Vec<usize> = (0..h).collect();
    for (i, &p) in rel.iter().enumerate() {
        perm.swap(i, p);
    }
    (0..h)
        .filter(|&r| perm[r] != r)
        .map(|r| (r, perm[r]))
        .unzip()
}

/// Rows a write changes and the rows their new values come from.
type Moved = (Vec<usize>, Vec<usize>);

/// Which file a planned read is from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// `A`: the input, or the factors' file when in place.
    A,
    /// The factors.
    Factors,
}

/// One read of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Planned {
    from: Source,
    rows: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
}

/// The reads a left-looking run makes from step `first` on, in order (the panels of the final
/// pass that `done` lists are not read again): each step's active panel, then the panels to
/// its left (pivoted: rows from their diagonal block down; unpivoted: whole), then the final
/// pass's panels.
fn plan_reads<T: Scalar>(
    f: &DiskMatrix<T>,
    variant: LuVariant,
    first: usize,
    done: &[usize],
) -> Vec<Planned> {
    let (m, steps) = (f.shape().0, f.panels());
    let pivoted = variant == LuVariant::LeftPivoted;
    let read = |from, rows, cols| Planned { from, rows, cols };
    let mut plan = Vec::new();
    for k in first..steps {
        plan.push(read(Source::A, 0..m, f.panel_cols(k)));
        for i in 0..k {
            let c = f.panel_cols(i);
            let rows = if pivoted { c.start..m } else { 0..m };
            plan.push(read(Source::Factors, rows, c));
        }
    }
    if first <= steps {
        let (last, from) = if pivoted {
            (steps.saturating_sub(1), steps.saturating_sub(1) * f.panel())
        } else {
            (steps, 0)
        };
        for i in 0..last {
            let c = f.panel_cols(i);
            if !(first == steps && done.contains(&c.start)) {
                plan.push(read(Source::Factors, from..m, c));
            }
        }
    }
    plan
}

/// A run's planned reads, made in order, each started (with [`LuFiles::read_ahead`]) while
/// the one before it is in use.
struct Reader<T> {
    plan: std::collections::VecDeque<Planned>,
    pending: Option<(Source, PendingRead<T>)>,
    spare: Vec<T>,
    ahead: bool,
    /// Seconds the computation waited for reads (all of a read made on the spot).
    waited: f64,
}

impl<T: KernelScalar> Reader<T> {
    fn new(plan: Vec<Planned>, ahead: bool) -> Self {
        Reader {
            plan: plan.into(),
            pending: None,
            spare: Vec::new(),
            ahead,
            waited: 0.0,
        }
    }

    /// The next planned read into `buf` (its length set to the rectangle's), and the one
    /// after it started.
    fn next(&mut self, f: &mut LuFiles<'_, T>, buf: &mut Vec<T>) -> Result<(), OocError> {
        let r = self.plan.pop_front().ok_or_else(|| {
            OocError::Invalid("an out-of-core LU read more than it planned".into())
        })?;
        match self.pending.take() {
            Some((from, pending)) => {
                let started = std::time::Instant::now();
                let data = f.file(from).finish_read(pending)?;
                self.waited += started.elapsed().as_secs_f64();
                self.spare = std::mem::replace(buf, data);
            }
            None => {
                let started = std::time::Instant::now();
                buf.resize(r.rows.len() * r.cols.len(), T::zero());
                f.file(r.from).read(r.rows, r.cols, buf)?;
                self.waited += started.elapsed().as_secs_f64();
            }
        }
        if let Some(n) = self.plan.front().filter(|_| self.ahead) {
            let mut into = std::mem::take(&mut self.spare);
            into.resize(n.rows.len() * n.cols.len(), T::zero());
            let pending = f
                .file(n.from)
                .read_ahead(n.rows.clone(), n.cols.clone(), into)?;
            self.pending = Some((n.from, pending));
        }
        Ok(())
    }
}

/// The out-of-core LU variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LuVariant {
    /// Left-looking, the disk copy kept pivoted ([`left_pivoted`]).
    LeftPivoted,
    /// Left-looking, the disk copy kept in `A`'s row order ([`left_unpivoted`]).
    LeftUnpivoted,
    /// Right-looking, the baseline ([`lu_right`]): in place only, not resumable.
    Right,
}

impl LuVariant {
    /// The code a progress record holds.
    pub fn code(self) -> u32 {
        match self {
            LuVariant::LeftPivoted => 1,
            LuVariant::LeftUnpivoted => 2,
            LuVariant::Right => 3,
        }
    }
}

/// Where a factorisation reads `A`, where it keeps the factors, and whether it can resume.
pub struct LuFiles<'a, T> {
    /// `A`, read a panel at a time and never written (`None`: `A` is in `factors`, factored
    /// in place).
    pub input: Option<&'a mut DiskMatrix<T>>,
    /// The factors: `L\U` in the rows of `P·A` when the factorisation returns; before, the
    /// state its record describes.
    pub factors: &'a mut DiskMatrix<T>,
    /// The record and journal that make the run resumable (it needs `input`: a step in
    /// progress is done again from the input).
    pub progress: Option<&'a mut Progress>,
    /// Each read started while the one before it is in use (seed 003's non-blocking reads: a
    /// third panel in memory, the one being read).
    pub read_ahead: bool,
    /// Called after each step is committed (a progress bar).
    pub on_step: Option<&'a mut dyn FnMut(&StepDone)>,
}

/// Where a run is, after a step.
#[derive(Clone, Copy, Debug)]
pub struct StepDone {
    /// Steps completed (the final pass is step `steps`).
    pub steps_done: usize,
    /// The steps of the factorisation proper.
    pub steps: usize,
    /// The elements moved so far by this process, both files.
    pub io: IoCounts,
    /// The operations performed so far by this process.
    pub flops: PhaseFlops,
}

/// Where a run starts: the step in progress, the pivots and zero pivot so far, and the first
/// columns of the panels whose write in that step the journal has replayed.
struct Resumed {
    step: usize,
    ipiv: Vec<usize>,
    first_zero_pivot: Option<usize>,
    done: Vec<usize>,
}

impl<'a, T: KernelScalar> LuFiles<'a, T> {
    /// `a` factored in place, not resumable, two panels in memory.
    pub fn in_place(a: &'a mut DiskMatrix<T>) -> Self {
        LuFiles {
            input: None,
            factors: a,
            progress: None,
            read_ahead: false,
            on_step: None,
        }
    }

    /// The order, once the files and the record agree.
    fn order(&self, variant: LuVariant) -> Result<usize, OocError> {
        let m = square_order(self.factors)?;
        let f = &*self.factors;
        if let Some(a) = &self.input {
            if a.shape() != f.shape() {
                return Err(OocError::Invalid(format!(
                    "{}: a {} x {} input for {} of another shape",
                    a.path().display(),
                    a.shape().0,
                    a.shape().1,
                    f.path().display()
                )));
            }
        }
        let Some(p) = &self.progress else {
            return Ok(m);
        };
        let Some(a) = &self.input else {
            return Err(OocError::Invalid(format!(
                "{}: a resumable run needs its input in another file",
                f.path().display()
            )));
        };
        let k = &p.record().kind;
        let want = (
            variant.code(),
            scalar_code::<T>(),
            m as u64,
            f.panel() as u64,
        );
        if (k.variant, k.scalar, k.n, k.panel) != want {
            return Err(OocError::Format {
                path: f.path().to_path_buf(),
                why: "its progress record is of another run (variant, type, order or panel)".into(),
            });
        }
        if k.input != a.fingerprint()? {
            return Err(OocError::Format {
                path: a.path().to_path_buf(),
                why: "changed since the run it is the input of began".into(),
            });
        }
        Ok(m)
    }

    /// The recorded state, the journal replayed (a fresh state without a record).
    fn resume(&mut self) -> Result<Resumed, OocError> {
        let Some(p) = self.progress.as_deref_mut() else {
            return Ok(Resumed {
                step: 0,
                ipiv: Vec::new(),
                first_zero_pivot: None,
                done: Vec::new(),
            });
        };
        let r = p.record().clone();
        let (m, steps) = (self.factors.shape().0, self.factors.panels());
        let step = r.steps_done as usize;
        let pivots = if step >= steps {
            m
        } else {
            step * self.factors.panel()
        };
        if step > steps + 1 || r.ipiv.len() != pivots || r.ipiv.iter().any(|&q| q >= m as u64) {
            return Err(OocError::Format {
                path: Progress::record_path(self.factors.path().parent().unwrap_or(".".as_ref())),
                why: format!("{step} steps with {} pivots: inconsistent", r.ipiv.len()),
            });
        }
        self.factors.forget_checksums();
        let done = p.replay(self.factors)?;
        Ok(Resumed {
            step,
            ipiv: r.ipiv.iter().map(|&q| q as usize).collect(),
            first_zero_pivot: r.first_zero_pivot.map(|z| z as usize),
            done,
        })
    }

    /// The file reads `from` are made from.
    fn file(&mut self, from: Source) -> &mut DiskMatrix<T> {
        match (from, self.input.as_deref_mut()) {
            (Source::A, Some(a)) => a,
            _ => self.factors,
        }
    }

    /// Writes `data` (rows `from..`, columns `ld` apart) over the factored columns `cols`, the
    /// rows `moved` changes (relative to `from`, with their sources) journaled first.
    fn overwrite(
        &mut self,
        step: usize,
        from: usize,
        cols: std::ops::Range<usize>,
        data: (&[T], usize),
        moved: &Moved,
    ) -> Result<(), OocError> {
        self.journal_overwrite(step, from, cols.clone(), data, moved)?;
        self.write_overwrite(from, cols, data)
    }

    /// The first half of [`LuFiles::overwrite`]: the journal entry appended, its `fsync`
    /// started; the caller may compute before [`LuFiles::write_overwrite`].
    fn journal_overwrite(
        &mut self,
        step: usize,
        from: usize,
        cols: std::ops::Range<usize>,
        (data, ld): (&[T], usize),
        moved: &Moved,
    ) -> Result<(), OocError> {
        if let Some(p) = self.progress.as_deref_mut() {
            let values: Vec<T> = (0..cols.len())
                .flat_map(|j| moved.0.iter().map(move |&r| data[j * ld + r]))
                .collect();
            let absolute = |rows: &[usize]| rows.iter().map(|&r| from + r).collect::<Vec<_>>();
            let (rows, sources) = (absolute(&moved.0), absolute(&moved.1));
            p.journal_begin(step, cols, &rows, &sources, &values)?;
        }
        Ok(())
    }

    /// The second half of [`LuFiles::overwrite`]: once the journal entry is durable, the data
    /// written.
    fn write_overwrite(
        &mut self,
        from: usize,
        cols: std::ops::Range<usize>,
        (data, ld): (&[T], usize),
    ) -> Result<(), OocError> {
        if let Some(p) = self.progress.as_deref_mut() {
            p.journal_wait()?;
        }
        let m = self.factors.shape().0;
        self.factors.write_strided(from..m, cols, data, ld)
    }

    /// Commits `steps_done` steps (nothing without a record): in the background while the
    /// next step runs, except the last (the final pass, `steps + 1`), which is waited for.
    fn commit(
        &mut self,
        steps_done: usize,
        ipiv: &[usize],
        first_zero_pivot: Option<usize>,
    ) -> Result<(), OocError> {
        let last = steps_done > self.factors.panels();
        match self.progress.as_deref_mut() {
            Some(p) => p.commit(self.factors, steps_done, ipiv, first_zero_pivot, last),
            None => Ok(()),
        }
    }

    /// Tells `on_step` that `steps_done` steps are done (counts since `start`).
    fn step_done(&mut self, steps_done: usize, start: IoCounts, flops: PhaseFlops) {
        let io = self.io().since(start);
        let steps = self.factors.panels();
        if let Some(report) = self.on_step.as_deref_mut() {
            report(&StepDone {
                steps_done,
                steps,
                io,
                flops,
            });
        }
    }

    /// The elements moved in both files so far.
    fn io(&self) -> IoCounts {
        let input = self.input.as_ref().map(|a| a.io()).unwrap_or_default();
        input + self.factors.io()
    }
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
    let (steps, start, read_s) = (a.panels(), a.io(), a.io_seconds().0);
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
            flops += update_from(t, h, wj, (p, h, h), 0, wk, par)?;
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
        read_wait_s: a.io_seconds().0 - read_s,
        in_core: steps == 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("redblue-ooc-unit-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d.join("m.rbm")
    }

    #[test]
    fn the_planned_reads_are_the_models_reads() {
        for (m, w) in [(23, 5), (24, 6), (7, 7), (1, 3)] {
            let path = temp(&format!("plan-{m}-{w}"));
            let f = DiskMatrix::<f64>::create(&path, m, m, w).unwrap();
            for (variant, model) in [
                (
                    LuVariant::LeftPivoted,
                    left_pivoted_io(m as u64, w as u64).0,
                ),
                (
                    LuVariant::LeftUnpivoted,
                    left_unpivoted_io(m as u64, w as u64).0,
                ),
            ] {
                let planned: usize = plan_reads(&f, variant, 0, &[])
                    .iter()
                    .map(|r| r.rows.len() * r.cols.len())
                    .sum();
                assert_eq!(planned as u64, model, "{variant:?} {m} {w}");
            }
            let _ = std::fs::remove_file(&path);
        }
    }

    #[test]
    fn the_reader_starts_the_next_read_while_one_is_in_use() {
        let path = temp("reader");
        let mut a =
            DiskMatrix::<f64>::create_from_fn(&path, 6, 6, 2, |i, j| (i + 10 * j) as f64).unwrap();
        let plan = plan_reads(&a, LuVariant::LeftPivoted, 0, &[]);
        let n = plan.len();
        let mut reader = Reader::new(plan, true);
        let mut files = LuFiles::in_place(&mut a);
        let mut buf = Vec::new();
        for k in 0..n {
            reader.next(&mut files, &mut buf).unwrap();
            assert_eq!(reader.pending.is_some(), k + 1 < n, "read {k}");
        }
        // Nothing more was planned.
        assert!(reader.next(&mut files, &mut buf).is_err());
        let _ = std::fs::remove_file(&path);
    }
}
