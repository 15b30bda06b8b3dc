//! The working memory of a multiplication, asked for before anything moves and agreed on by
//! every rank, so that buffers the machine cannot give are
//! [`DistError::OutOfMemory`](redblue_dist::DistError::OutOfMemory) on every
//! rank instead of an abort on one (and the others waiting for it in the next exchange).
//!
//! Only runs whose busiest rank needs at least [`AGREE_FROM_WORDS`] working words do it: the
//! agreement is one all-reduce of one word, a latency every call would pay, while buffers of a
//! few tens of megabytes beyond inputs the rank already holds are not what a machine refuses.
//! Every rank decides alike from the schedule, and the cost model counts the all-reduce
//! exactly when it runs ([`Schedule::rank_cost`](crate::Schedule::rank_cost)).

use crate::model::RankCost;
use crate::GemmError;
use redblue_comm::volume;
use redblue_comm::Communicator;
use redblue_dist::memory::Refusals;

/// Working words (of the busiest rank) from which a run agrees on its memory first: 2²³
/// elements, 64 MiB of `f64`.
pub const AGREE_FROM_WORDS: u64 = 1 << 23;

/// Whether a run whose busiest rank needs `busiest_words` working words agrees on its memory
/// before anything moves.
pub fn agrees_on_memory(busiest_words: u64) -> bool {
    busiest_words >= AGREE_FROM_WORDS
}

/// Asks for this rank's `my_words` working elements of `T` (a trial reservation, given back)
/// and agrees with every rank, when [`agrees_on_memory`]`(busiest_words)`.
///
/// # Collective
/// # Errors
/// [`GemmError::Dist`]`(DistError::OutOfMemory)` on every rank if any rank was refused;
/// a communication failure.
pub(crate) fn agree_on_working_memory<T, C: Communicator>(
    comm: &C,
    busiest_words: u64,
    my_words: u64,
) -> Result<(), GemmError> {
    if !agrees_on_memory(busiest_words) {
        return Ok(());
    }
    let mut refusals = Refusals::new();
    refusals.trial(my_words.saturating_mul(size_of::<T>() as u64));
    refusals
        .agree(comm, "a multiplication's working buffers")
        .map_err(GemmError::Dist)
}

/// `cost` of `rank` in a `p`-rank run plus the agreement, when the run makes one.
pub(crate) fn with_agreement(
    mut cost: RankCost,
    busiest_words: u64,
    rank: usize,
    p: usize,
) -> RankCost {
    if agrees_on_memory(busiest_words) && rank < p {
        let s = volume::all_reduce(rank, p, 1).stats(rank, 8);
        cost.words_sent += s.words_sent;
        cost.words_received += s.words_received;
        cost.messages_sent += s.messages_sent;
        cost.messages_received += s.messages_received;
    }
    cost
}

#[cfg(test)]
mod tests {
    use super::*;
    use redblue_comm::run_ranks;
    use redblue_dist::DistError;

    #[test]
    fn a_refusal_on_one_rank_is_the_same_error_on_every_rank() {
        let out = run_ranks(3, |comm| {
            let mine = if comm.rank() == 2 {
                u64::MAX / 16
            } else {
                1000
            };
            agree_on_working_memory::<f64, _>(&comm, AGREE_FROM_WORDS, mine)
        });
        for r in &out {
            assert!(
                matches!(r, Err(GemmError::Dist(DistError::OutOfMemory { .. }))),
                "{r:?}"
            );
        }
        assert!(out.iter().all(|r| r == &out[0]));
        // Below the threshold nothing is asked and nothing moves.
        let quiet = run_ranks(3, |comm| {
            agree_on_working_memory::<f64, _>(&comm, AGREE_FROM_WORDS - 1, u64::MAX / 16)?;
            Ok::<_, GemmError>(comm.stats().words_sent)
        });
        assert!(quiet.iter().all(|r| r == &Ok(0)));
    }
}
