//! LAPACK's POTRF (seed 002 §3.1.7, Algorithm 6): blocked left-looking Cholesky with block size
//! `b`, three `b × b` blocks in fast memory, each step an iterative blocked SYRK, POTF2, GEMM or
//! TRSM moving whole blocks.

use super::memory::{SlowArrayId, TwoLevelMemory};
use super::storage::{Rect, Span};
use super::SimError;

/// The block size of Algorithm 6 for a fast memory of `m` words: the largest `b` with
/// `3b² ≤ m` (0 when `m < 3`).
pub fn lapack_block_size(m: usize) -> usize {
    let mut b = ((m / 3) as f64).sqrt() as usize;
    while 3 * (b + 1) * (b + 1) <= m {
        b += 1;
    }
    while b > 0 && 3 * b * b > m {
        b -= 1;
    }
    b
}

/// The block spans of `0..n` with block size `b` (the last one shorter when `b ∤ n`).
fn block_spans(n: usize, b: usize) -> Vec<Span> {
    (0..n.div_ceil(b))
        .map(|t| Span::new(t * b, ((t + 1) * b).min(n)))
        .collect()
}

/// Algorithm 6 with block size `b` (`3b² ≤ M`). For each block column `J`:
/// 1. SYRK: load the diagonal block `A_JJ` (the whole square: one run in a blocked layout);
///    for each `K < J` load `L_JK`, update, drop it.
/// 2. POTF2: factor `A_JJ` in fast memory, store it, drop it.
/// 3. GEMM (when `J > 0`): for each `I > J` load `A_IJ`; for each `K < J` load `L_IK` and
///    `L_JK`, update, drop them; store `A_IJ`.
/// 4. TRSM (when blocks lie below): load `L_JJ`; for each `I > J` load `A_IJ`, solve, store it.
///
/// Per block column that is `J + 2` block transfers, then `(N−1−J)(2J+2)` when `J > 0`, then
/// `2(N−1−J) + 1` when `J < N−1` (`N = ⌈n/b⌉`), each of `b²` words and one message in the
/// blocked layout of block size `b`, `b` messages column-major.
pub(crate) fn potrf(mem: &mut TwoLevelMemory, a: SlowArrayId, b: usize) -> Result<(), SimError> {
    let spans = block_spans(mem.order(), b);
    for (jb, &dj) in spans.iter().enumerate() {
        let (left, right) = (&spans[..jb], &spans[jb + 1..]);
        // 1. + 2. SYRK and POTF2 on the diagonal block.
        let diag = Rect::diagonal(dj);
        mem.load(a, diag)?;
        for &dk in left {
            let ljk = Rect::new(dj, dk);
            mem.load(a, ljk)?;
            mem.update_lower(dj, dj, dk)?;
            mem.evict(ljk)?;
        }
        mem.factor_panel(diag)?;
        mem.store_and_evict(a, diag)?;
        // 3. GEMM: A_{J+1:, J} −= L_{J+1:, :J}·L_{J, :J}ᵀ, one output block at a time.
        if !left.is_empty() {
            for &di in right {
                let aij = Rect::new(di, dj);
                mem.load(a, aij)?;
                for &dk in left {
                    let (lik, ljk) = (Rect::new(di, dk), Rect::new(dj, dk));
                    mem.load(a, lik)?;
                    mem.load(a, ljk)?;
                    mem.update_lower(di, dj, dk)?;
                    mem.evict(lik)?;
                    mem.evict(ljk)?;
                }
                mem.store_and_evict(a, aij)?;
            }
        }
        // 4. TRSM: L_{J+1:, J} = A_{J+1:, J}·L_JJ⁻ᵀ, one block at a time beside L_JJ.
        if !right.is_empty() {
            mem.load(a, diag)?;
            for &di in right {
                let aij = Rect::new(di, dj);
                mem.load(a, aij)?;
                mem.solve_right_lower_transposed(di, dj)?;
                mem.store_and_evict(a, aij)?;
            }
            mem.evict(diag)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_size_is_the_largest_with_three_blocks_fitting() {
        assert_eq!(lapack_block_size(2), 0);
        assert_eq!(lapack_block_size(3), 1);
        assert_eq!(lapack_block_size(11), 1);
        assert_eq!(lapack_block_size(12), 2);
        assert_eq!(lapack_block_size(48), 4);
        assert_eq!(lapack_block_size(768), 16);
        assert_eq!(lapack_block_size(12288), 64);
        for m in 3..5000 {
            let b = lapack_block_size(m);
            assert!(3 * b * b <= m && 3 * (b + 1) * (b + 1) > m, "m={m}");
        }
    }

    #[test]
    fn block_spans_cover_the_matrix() {
        assert_eq!(
            block_spans(7, 3),
            vec![Span::new(0, 3), Span::new(3, 6), Span::new(6, 7)]
        );
        assert!(block_spans(0, 3).is_empty());
    }
}
