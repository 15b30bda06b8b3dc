//! Conversion of layout on the fly (seed 002 §3.1.1, "Conversion on the fly"): copy the lower
//! triangle tile by tile between a column-major array and a block-contiguous one, each tile
//! read in one message per column segment and written in one message.
//!
//! The paper reads `M` consecutive column-major elements (one message) and scatters them to
//! `√M` blocks of a blocked layout, one message each; that relies on a block's column being
//! contiguous, which holds for the blocked layout but not for Morton. Here a tile is an
//! aligned `t × t` block of the block-contiguous side (`t` the largest power of two with
//! `t² ≤ M` for Morton, `b` for a blocked layout with `b² ≤ M`): `t` messages on the
//! column-major side (one when the tile is whole columns) and one on the other. Either way a
//! conversion costs `n² + n·t` words each way and `O(n²/t + n²/t²) = O(n²/√M)` messages, which
//! `n³/M^{3/2}` dominates when `n ≥ M`.

use super::memory::{SlowArrayId, TwoLevelMemory};
use super::storage::{Rect, Span, Storage};
use super::SimError;

/// The tile side used to convert between column-major and `block_contiguous` with a fast
/// memory of `m` words (see the module documentation); `None` if no tile fits (`m = 0`) or a
/// blocked layout's block does not fit (`b² > m`).
pub fn conversion_tile(block_contiguous: Storage, m: usize) -> Option<usize> {
    match block_contiguous {
        Storage::Blocked { b } => (b > 0 && b * b <= m).then_some(b),
        _ => {
            let mut t = 1usize;
            if m == 0 {
                return None;
            }
            while (2 * t) * (2 * t) <= m {
                t *= 2;
            }
            Some(t)
        }
    }
}

/// Copies the lower triangle (the diagonal tiles whole) of `from` into `to`, tile column by
/// tile column, one `tile × tile` tile at a time.
pub(crate) fn copy_lower(
    mem: &mut TwoLevelMemory,
    from: SlowArrayId,
    to: SlowArrayId,
    tile: usize,
) -> Result<(), SimError> {
    let n = mem.order();
    let spans: Vec<Span> = (0..n.div_ceil(tile))
        .map(|t| Span::new(t * tile, ((t + 1) * tile).min(n)))
        .collect();
    for (tj, &cols) in spans.iter().enumerate() {
        for &rows in &spans[tj..] {
            let piece = Rect::new(rows, cols);
            mem.load(from, piece)?;
            mem.store_and_evict(to, piece)?;
        }
    }
    Ok(())
}
