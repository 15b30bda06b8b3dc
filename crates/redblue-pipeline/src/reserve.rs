//! The large buffers of a factorisation, allocated before anything runs and agreed on by every
//! rank ([`reserve`]): the working copy of the input, the other layers' zero tiles, and a check
//! that the steps' working memory can be had. A buffer the machine cannot give is then an
//! error on every rank, before any data moves — not an abort, and not one rank leaving the
//! others waiting in the next collective.

use crate::geometry::Geometry;
use crate::storage::Storage;
use redblue_comm::Communicator;
use redblue_core::pool::{try_take_buffer, try_take_zeroed};
use redblue_core::Scalar;
use redblue_dist::memory::Refusals;
use redblue_dist::DistError;

/// What [`reserve`] allocated on one rank.
#[derive(Debug)]
pub struct Reserved<T> {
    copy: Vec<T>,
    layer: Vec<T>,
}

impl<T: Scalar> Reserved<T> {
    /// The buffer for the working copy of the input (of the length asked for; its contents
    /// are to be overwritten).
    pub fn take_copy(&mut self) -> Vec<T> {
        std::mem::take(&mut self.copy)
    }

    /// What [`crate::run()`] factors on this rank: `local` (its local array of the native layout,
    /// empty off layer 0: a buffer, or the caller's array to factor in place) on layer 0 and
    /// off the grid, the layer's zero tiles on the other layers.
    pub fn input<'a>(self, local: impl Into<Storage<'a, T>>) -> Storage<'a, T> {
        if self.layer.is_empty() {
            local.into()
        } else {
            Storage::Owned(self.layer)
        }
    }
}

/// Allocates this rank's large buffers of a factorisation on geometry `g`: a working copy of
/// `copy_len` elements (0: the input is factored in place), the zero tiles of its layer if it
/// is on layer 1 or above, and a trial reservation of `working_bytes` (the steps' buffers,
/// reserved and given back, so that a request the machine refuses is seen now); then every
/// rank agrees on the outcome (one all-reduce of one word).
///
/// # Collective
/// # Errors
/// [`DistError::OutOfMemory`] on every rank, naming the largest request some rank could not
/// have; a communication failure.
pub fn reserve<T: Scalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    copy_len: usize,
    working_bytes: u64,
) -> Result<Reserved<T>, DistError> {
    let elem = std::mem::size_of::<T>() as f64;
    let mut refusals = Refusals::new();
    let mut refused = |len: usize| {
        refusals.refused(len as f64 * elem);
        Vec::new()
    };
    // The copy's contents are overwritten (a new buffer is not written here); the layer's
    // tiles are zeros.
    let copy = try_take_buffer(copy_len, T::zero()).unwrap_or_else(|_| refused(copy_len));
    let layer = match g.coords(comm.rank()) {
        Some((x, y, z)) if z > 0 => {
            let len = g.owned_rows(x).len() * g.owned_cols(y).len();
            try_take_zeroed(len).unwrap_or_else(|_| refused(len))
        }
        _ => Vec::new(),
    };
    refusals.trial(working_bytes);
    refusals.agree(comm, "a factorisation's working buffers")?;
    Ok(Reserved { copy, layer })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TileGrid;
    use redblue_comm::run_ranks;

    #[test]
    fn a_refused_buffer_on_one_rank_is_the_same_error_on_every_rank() {
        let g = Geometry::new(40, 4, TileGrid { px: 2, py: 1, c: 2 });
        let out = run_ranks(4, |comm| {
            // Rank 2 asks for more than any machine has.
            let copy = if comm.rank() == 2 {
                usize::MAX / 64
            } else {
                10
            };
            reserve::<f64, _>(&comm, &g, copy, 1000).map(|r| r.input(vec![1.0; 3]).len())
        });
        for r in &out {
            let e = r.as_ref().unwrap_err();
            assert!(matches!(e, DistError::OutOfMemory { bytes, .. } if *bytes > 1 << 50));
        }
        // Without the refusal: layer 1's ranks get their zero tiles, layer 0's their input.
        let out = run_ranks(4, |comm| {
            let r = reserve::<f64, _>(&comm, &g, 10, 1000).unwrap();
            r.input(vec![1.0; 3]).into_vec()
        });
        assert_eq!(out[0], vec![1.0; 3]);
        assert_eq!(out[2].len(), 20 * 40);
        assert!(out[2].iter().all(|&x| x == 0.0));
    }
}
