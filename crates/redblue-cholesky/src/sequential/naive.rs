//! The naive column-by-column algorithms (seed 002 §3.1.5–3.1.6, Algorithms 4 and 5): they
//! need two column segments resident at once (`2n − 1` or `2n − 2` words) and move `Θ(n³)`
//! words in `Θ(n²)` messages on column-major storage.

use super::memory::{SlowArrayId, TwoLevelMemory};
use super::storage::{Rect, Span};
use super::SimError;

/// Fast-memory words the left-looking algorithm needs: column `j` below the diagonal and one
/// earlier column's matching rows, i.e. `2(n − 1)` from `j = 1` on (`n` for `j = 0`).
pub fn left_looking_fast_words(n: usize) -> usize {
    n.max(2 * n.saturating_sub(1))
}

/// Fast-memory words the right-looking algorithm needs: column `j` below the diagonal and a
/// later column below its diagonal, `2n − 1` (for `n ≥ 1`).
pub fn right_looking_fast_words(n: usize) -> usize {
    (2 * n).saturating_sub(1)
}

/// Algorithm 4, left-looking: for each column `j`, load rows `j..n` of it; for each `k < j`
/// load rows `j..n` of column `k`, update, drop it; take the square root and scale; store
/// column `j`. Words `Σ_{j=1}^{n} (n−j+1)(j+1) = n(n+1)(n+5)/6`; one message per column
/// segment on column-major storage, `n(n+3)/2` in all.
pub(crate) fn left_looking(mem: &mut TwoLevelMemory, a: SlowArrayId) -> Result<(), SimError> {
    let n = mem.order();
    for j in 0..n {
        let below = Span::new(j, n);
        let col_j = Rect::column(below, j);
        mem.load(a, col_j)?;
        for k in 0..j {
            let col_k = Rect::column(below, k);
            mem.load(a, col_k)?;
            mem.update_lower(below, Span::one(j), Span::one(k))?;
            mem.evict(col_k)?;
        }
        mem.factor_panel(col_j)?;
        mem.store_and_evict(a, col_j)?;
    }
    Ok(())
}

/// Algorithm 5, right-looking: for each column `j`, load rows `j..n`, take the square root and
/// scale, store it and keep it; for each `k > j` load rows `k..n` of column `k`, update, store
/// and drop it. Words `Σ_j 2(n−j) + Σ_{k>j} 2(n−k) = n(n+1)(n+2)/3`, messages `n(n+1)` on
/// column-major storage.
pub(crate) fn right_looking(mem: &mut TwoLevelMemory, a: SlowArrayId) -> Result<(), SimError> {
    let n = mem.order();
    for j in 0..n {
        let col_j = Rect::column(Span::new(j, n), j);
        mem.load(a, col_j)?;
        mem.factor_panel(col_j)?;
        mem.store(a, col_j)?;
        for k in j + 1..n {
            let below = Span::new(k, n);
            let col_k = Rect::column(below, k);
            mem.load(a, col_k)?;
            mem.update_lower(below, Span::one(k), Span::one(j))?;
            mem.store_and_evict(a, col_k)?;
        }
        mem.evict(col_j)?;
    }
    Ok(())
}
