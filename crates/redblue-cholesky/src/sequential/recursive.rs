//! The cache-oblivious recursive algorithms (seed 002 §3.1.3–3.1.4, §3.1.8–3.1.9): Frigo et
//! al.'s GEMM (Algorithm 2), its lower-triangle SYRK variant, the recursive TRSM (Algorithm 3),
//! Toledo's rectangular recursive Cholesky (Algorithm 7) and the square recursive Cholesky
//! (Algorithm 8).
//!
//! None of them knows `M` except to stop: a subproblem whose operands fit in fast memory is
//! loaded, computed and stored. Every split is at a power of two
//! ([`Span::split_recursive`]), so starting from the whole matrix every block is an aligned
//! block of the Morton layout (one message) and every rectangle has aspect ratio at most 2
//! (two messages).

use super::memory::{SlowArrayId, TwoLevelMemory};
use super::storage::{Rect, Span};
use super::SimError;

/// Fast-memory words every recursive algorithm needs: the three `1 × 1` operands of a GEMM
/// leaf.
pub const RECURSIVE_MIN_FAST_WORDS: usize = 3;

/// Algorithm 2 on the matrix's own blocks: `A[rows, cols] −= A[rows, inner]·A[cols, inner]ᵀ`
/// (`rows` below `cols`, `inner` left of both). Splits the largest of the three dimensions
/// until `mr + mk + rk ≤ M`.
pub(crate) fn gemm(
    mem: &mut TwoLevelMemory,
    a: SlowArrayId,
    rows: Span,
    cols: Span,
    inner: Span,
) -> Result<(), SimError> {
    let (m, r, k) = (rows.len(), cols.len(), inner.len());
    if m == 0 || r == 0 || k == 0 {
        return Ok(());
    }
    if m * r + m * k + r * k <= mem.fast_capacity() {
        let (c, left, right) = (
            Rect::new(rows, cols),
            Rect::new(rows, inner),
            Rect::new(cols, inner),
        );
        mem.load(a, c)?;
        mem.load(a, left)?;
        mem.load(a, right)?;
        mem.update_lower(rows, cols, inner)?;
        mem.evict(left)?;
        mem.evict(right)?;
        return mem.store_and_evict(a, c);
    }
    if m >= r && m >= k {
        let (top, bottom) = rows.split_recursive();
        gemm(mem, a, top, cols, inner)?;
        gemm(mem, a, bottom, cols, inner)
    } else if r >= k {
        let (first, second) = cols.split_recursive();
        gemm(mem, a, rows, first, inner)?;
        gemm(mem, a, rows, second, inner)
    } else {
        let (first, second) = inner.split_recursive();
        gemm(mem, a, rows, cols, first)?;
        gemm(mem, a, rows, cols, second)
    }
}

/// The lower triangle of `A[diag, diag] −= A[diag, inner]·A[diag, inner]ᵀ` (`inner` left of
/// `diag`), in Algorithm 2's manner: when the diagonal block and the panel fit (`s² + sk ≤ M`)
/// load and compute; else split the inner dimension if it is the largest, otherwise split the
/// block into two SYRKs and one GEMM.
pub(crate) fn syrk(
    mem: &mut TwoLevelMemory,
    a: SlowArrayId,
    diag: Span,
    inner: Span,
) -> Result<(), SimError> {
    let (s, k) = (diag.len(), inner.len());
    if s == 0 || k == 0 {
        return Ok(());
    }
    if s * s + s * k <= mem.fast_capacity() {
        let (c, panel) = (Rect::diagonal(diag), Rect::new(diag, inner));
        mem.load(a, c)?;
        mem.load(a, panel)?;
        mem.update_lower(diag, diag, inner)?;
        mem.evict(panel)?;
        return mem.store_and_evict(a, c);
    }
    if k > s {
        let (first, second) = inner.split_recursive();
        syrk(mem, a, diag, first)?;
        syrk(mem, a, diag, second)
    } else {
        let (top, bottom) = diag.split_recursive();
        syrk(mem, a, top, inner)?;
        gemm(mem, a, bottom, top, inner)?;
        syrk(mem, a, bottom, inner)
    }
}

/// Algorithm 3: `A[rows, cols] ← A[rows, cols]·L⁻ᵀ` with `L` the lower triangle of the diagonal
/// block `cols × cols` (`rows` below it). When `L` (as its square) and the right-hand sides fit
/// (`ms + s² ≤ M`) load and solve; else split both dimensions in half (one if the other is 1):
/// for each row half, solve with `L11`, GEMM-update with `L21`, solve with `L22`.
pub(crate) fn trsm(
    mem: &mut TwoLevelMemory,
    a: SlowArrayId,
    rows: Span,
    cols: Span,
) -> Result<(), SimError> {
    let (m, s) = (rows.len(), cols.len());
    if m == 0 || s == 0 {
        return Ok(());
    }
    if m * s + s * s <= mem.fast_capacity() {
        let (l, x) = (Rect::diagonal(cols), Rect::new(rows, cols));
        mem.load(a, l)?;
        mem.load(a, x)?;
        mem.solve_right_lower_transposed(rows, cols)?;
        mem.store_and_evict(a, x)?;
        return mem.evict(l);
    }
    let row_halves = if m >= 2 {
        let (top, bottom) = rows.split_recursive();
        [top, bottom]
    } else {
        [rows, Span::new(rows.end, rows.end)]
    };
    for half in row_halves {
        if s == 1 {
            trsm(mem, a, half, cols)?;
            continue;
        }
        let (first, second) = cols.split_recursive();
        trsm(mem, a, half, first)?;
        gemm(mem, a, half, second, first)?;
        trsm(mem, a, half, second)?;
    }
    Ok(())
}

/// Algorithm 7 (Toledo, without pivoting) on the panel `A[cols.start.., cols]`: when it fits
/// (`mw ≤ M`) load, factor, store; a single column that does not fit is streamed beside its
/// diagonal element; otherwise factor the left half recursively, update the right half (a SYRK
/// on its diagonal block and a GEMM below), factor the right half recursively.
pub(crate) fn rectangular(
    mem: &mut TwoLevelMemory,
    a: SlowArrayId,
    cols: Span,
) -> Result<(), SimError> {
    let n = mem.order();
    let rows = Span::new(cols.start, n);
    let (m, w) = (rows.len(), cols.len());
    if w == 0 {
        return Ok(());
    }
    let panel = Rect::new(rows, cols);
    if m * w <= mem.fast_capacity() {
        mem.load(a, panel)?;
        mem.factor_panel(panel)?;
        return mem.store_and_evict(a, panel);
    }
    if w == 1 {
        return streamed_column(mem, a, cols.start);
    }
    let (left, right) = cols.split_recursive();
    rectangular(mem, a, left)?;
    syrk(mem, a, right, left)?;
    gemm(mem, a, Span::new(right.end, n), right, left)?;
    rectangular(mem, a, right)
}

/// The base case of Algorithm 7 when one column does not fit: load its diagonal element,
/// take the square root, then scale the rows below in segments of `M − 1` (`2m` words).
fn streamed_column(mem: &mut TwoLevelMemory, a: SlowArrayId, j: usize) -> Result<(), SimError> {
    let n = mem.order();
    let pivot = Rect::diagonal(Span::one(j));
    mem.load(a, pivot)?;
    mem.factor_panel(pivot)?;
    let segment = mem.fast_capacity() - 1;
    let mut start = j + 1;
    while start < n {
        let rows = Span::new(start, (start + segment).min(n));
        let piece = Rect::column(rows, j);
        mem.load(a, piece)?;
        mem.solve_right_lower_transposed(rows, Span::one(j))?;
        mem.store_and_evict(a, piece)?;
        start = rows.end;
    }
    mem.store_and_evict(a, pivot)
}

/// Algorithm 8 on the diagonal block `diag × diag`: when it fits (`s² ≤ M`) load, factor,
/// store; else factor `A11`, solve `L21 = A21·L11⁻ᵀ` (Algorithm 3), update
/// `A22 −= L21·L21ᵀ` (the SYRK form of Algorithm 2), factor `A22`.
pub(crate) fn square(mem: &mut TwoLevelMemory, a: SlowArrayId, diag: Span) -> Result<(), SimError> {
    let s = diag.len();
    if s == 0 {
        return Ok(());
    }
    if s * s <= mem.fast_capacity() {
        let block = Rect::diagonal(diag);
        mem.load(a, block)?;
        mem.factor_panel(block)?;
        return mem.store_and_evict(a, block);
    }
    let (first, second) = diag.split_recursive();
    square(mem, a, first)?;
    trsm(mem, a, second, first)?;
    syrk(mem, a, second, first)?;
    square(mem, a, second)
}
