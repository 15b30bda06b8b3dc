//! The cost model: words and messages each rank sends and receives and the memory it needs,
//! for a strategy with inputs and output in COSMA's native layout; the paper's formula and
//! the lower bounds. Pure and cheap: a few operations per rank and sequential part.
//!
//! # What a rank moves
//!
//! Under a strategy with process grid `[p_m, p_n, p_k]`, every local multiplication
//! ([`Domain`](crate::Domain)) of a rank reads an `op(A)` block `rows × inner`, which the `p_n` ranks that
//! differ only in their `n` coordinate also read, and an `op(B)` block `inner × cols`, shared
//! likewise by `p_m` ranks. In the native layout each such block is cut into `p_n` (for `A`) or
//! `p_m` (for `B`) near-equal parts, one per sharing rank, across the `inner` range: an `op(A)`
//! block by its rows, an `op(B)` block by its columns (whole-depth slabs). Before a
//! multiplication each rank receives the parts it lacks and sends its own part to the others:
//! COSMA's broadcasts along the grid, counted by the direct-transfer rules of
//! `redblue_comm::volume`. After the last multiplication into a `C` block `rows × cols`, the
//! `p_k` ranks that computed partial sums of it reduce them: each keeps one of `p_k` column
//! parts and receives the others' partial sums of it.
//!
//! So, per rank and per multiplication, with `a = |rows|·|inner|` and `own_a` its part:
//! received `a − own_a` and sent `own_a·(p_n − 1)` words of `A` (likewise `B` with `p_m`), and per
//! distinct `C` block with `c = |rows|·|cols|`: sent `c − own_c`, received `own_c·(p_k − 1)`.
//! With even splits the received words sum to COSMA's `(m/p_m)(k/p_k) + (k/p_k)(n/p_n) +
//! (m/p_m)(n/p_n) − (mk + kn + mn)/p` per rank: the data a rank touches minus the data it
//! starts with.

use crate::plan::{c_block_ids, grid_coords, last_updates, part, rank_domains, GemmShape};
use crate::Strategy;
use redblue_comm::CommStats;

/// What one rank moves and holds under a plan (words are matrix elements), in the native
/// layouts, for `alpha ≠ 0` (with `alpha = 0` nothing moves).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RankCost {
    /// Elements sent to other ranks.
    pub words_sent: u64,
    /// Elements received from other ranks.
    pub words_received: u64,
    /// Messages sent: non-empty transfers of the exchanges, and every point-to-point send.
    pub messages_sent: u64,
    /// Messages received, counted as `messages_sent` is.
    pub messages_received: u64,
    /// Elements held at the peak: its parts of `A`, `B`, `C`, plus one multiplication's
    /// `op(A)` and `op(B)` blocks and the partial `C` blocks alive then (a block lives from
    /// its first update to its reduction after the last). An empty product (`m`, `n` or `k`
    /// zero) holds its parts only.
    pub memory_words: u64,
    /// The part of `memory_words` beyond its parts of `A`, `B`, `C`: the buffers the run
    /// allocates (what [`crate::memory`] asks for before anything moves).
    pub working_words: u64,
}

impl RankCost {
    /// The counters a communicator shows for this cost, elements of `bytes` bytes.
    pub fn stats(&self, bytes: usize) -> CommStats {
        let bytes = bytes as u64;
        CommStats {
            words_sent: self.words_sent,
            words_received: self.words_received,
            bytes_sent: self.words_sent * bytes,
            bytes_received: self.words_received * bytes,
            messages_sent: self.messages_sent,
            messages_received: self.messages_received,
        }
    }
}

/// [`RankCost`]s summarised over all ranks of a plan.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CostSummary {
    /// Ranks the plan uses.
    pub ranks: usize,
    /// Largest `words_sent` of any rank.
    pub words_sent_max: u64,
    /// Mean `words_sent`.
    pub words_sent_avg: f64,
    /// Largest `words_received` of any rank.
    pub words_received_max: u64,
    /// Mean `words_received`.
    pub words_received_avg: f64,
    /// Largest `messages_sent` of any rank.
    pub messages_max: u64,
    /// Largest `memory_words` of any rank.
    pub memory_words_max: u64,
}

/// The native-layout part of a block shared by `sharers` ranks that `index` owns: of its
/// `range` (the rows of an `op(A)` block, the columns of an `op(B)` block) cut into `sharers`
/// parts, the length of part `index`.
fn own_part(range: &std::ops::Range<usize>, sharers: usize, index: usize) -> usize {
    part(range.clone(), sharers, index).len()
}

/// How many of the `d` parts of a range of `len` elements other than part `index` are not
/// empty: [`part`] leaves exactly `min(len, d)` of them non-empty.
fn other_nonempty_parts(len: usize, d: usize, index: usize) -> u64 {
    let mine = u64::from(!part(0..len, d, index).is_empty());
    len.min(d) as u64 - mine
}

/// The cost of `rank` under `strategy` on `shape` (see the module documentation).
///
/// Messages: a rank sends its part of a shared block to every other sharer when the part is
/// not empty, and receives one message from every other sharer whose part is not empty; the
/// reduction sends the partial `C` block's piece to every other owner of a non-empty piece
/// and receives one from each of the `p_k − 1` others when its own piece is not empty.
///
/// These are the strategy's own moves; runs past
/// [`AGREE_FROM_WORDS`](crate::memory::AGREE_FROM_WORDS) working words add the memory
/// agreement, which [`Schedule::rank_cost`](crate::Schedule::rank_cost) counts.
///
/// # Panics
/// If `rank ≥ strategy.ranks()`.
pub fn cosma_rank_cost(strategy: &Strategy, shape: GemmShape, rank: usize) -> RankCost {
    let [pm, pn, pk] = strategy.grid();
    let (_, [cm, cn, ck]) = grid_coords(strategy, rank);
    let domains = rank_domains(strategy, shape, rank);
    let mut cost = RankCost::default();
    let mut own = 0u64;
    let mut peak = 0u64;
    let mut c_blocks: Vec<(std::ops::Range<usize>, std::ops::Range<usize>)> = Vec::new();
    let ids = c_block_ids(strategy);
    let last = last_updates(&ids);
    // Partial C blocks alive (first update seen, last not yet done), by id.
    let mut live: Vec<(usize, u64)> = Vec::new();
    for (it, d) in domains.iter().enumerate() {
        if !live.iter().any(|&(id, _)| id == ids[it]) {
            live.push((ids[it], d.c_len() as u64));
        }
        let partials: u64 = live.iter().map(|&(_, len)| len).sum();
        peak = peak.max((d.a_len() + d.b_len()) as u64 + partials);
        if last[it] {
            live.retain(|&(id, _)| id != ids[it]);
        }
        let own_a = (own_part(&d.rows, pn, cn) * d.inner.len()) as u64;
        let own_b = (d.inner.len() * own_part(&d.cols, pm, cm)) as u64;
        cost.words_received += d.a_len() as u64 - own_a + d.b_len() as u64 - own_b;
        cost.words_sent += own_a * (pn as u64 - 1) + own_b * (pm as u64 - 1);
        cost.messages_sent +=
            u64::from(own_a > 0) * (pn as u64 - 1) + u64::from(own_b > 0) * (pm as u64 - 1);
        let deep = u64::from(!d.inner.is_empty());
        cost.messages_received += deep * other_nonempty_parts(d.rows.len(), pn, cn)
            + deep * other_nonempty_parts(d.cols.len(), pm, cm);
        own += own_a + own_b;
        if !c_blocks.contains(&(d.rows.clone(), d.cols.clone())) {
            c_blocks.push((d.rows.clone(), d.cols.clone()));
            let c = (d.rows.len() * d.cols.len()) as u64;
            let own_c = (d.rows.len() * part(d.cols.clone(), pk, ck).len()) as u64;
            cost.words_sent += c - own_c;
            cost.words_received += own_c * (pk as u64 - 1);
            // One message to each other owner with a non-empty part, one from each other
            // sharer of the block when my part is not empty.
            if !d.rows.is_empty() {
                cost.messages_sent += other_nonempty_parts(d.cols.len(), pk, ck);
            }
            cost.messages_received += u64::from(own_c > 0) * (pk as u64 - 1);
            own += own_c;
        }
    }
    if shape.m == 0 || shape.n == 0 || shape.k == 0 {
        // C = beta·C on each owner (or nothing at all): nothing moves, no buffers.
        return RankCost {
            memory_words: own,
            ..RankCost::default()
        };
    }
    cost.memory_words = own + peak;
    cost.working_words = peak;
    cost
}

/// The cost of every rank of `strategy` on `shape`, summarised.
pub fn cosma_cost(strategy: &Strategy, shape: GemmShape) -> CostSummary {
    CostSummary::over(strategy.ranks(), |r| cosma_rank_cost(strategy, shape, r))
}

impl CostSummary {
    /// The costs `cost(r)` of ranks `0..ranks` summarised (maxima and means).
    pub fn over(ranks: usize, cost: impl Fn(usize) -> RankCost) -> Self {
        let mut s = CostSummary {
            ranks,
            ..Default::default()
        };
        let (mut sent, mut received) = (0f64, 0f64);
        for r in 0..ranks {
            let c = cost(r);
            s.words_sent_max = s.words_sent_max.max(c.words_sent);
            s.words_received_max = s.words_received_max.max(c.words_received);
            s.messages_max = s.messages_max.max(c.messages_sent);
            s.memory_words_max = s.memory_words_max.max(c.memory_words);
            sent += c.words_sent as f64;
            received += c.words_received as f64;
        }
        s.words_sent_avg = sent / ranks as f64;
        s.words_received_avg = received / ranks as f64;
        s
    }
}

/// COSMA's per-rank I/O from the paper (digest §5.5, with the corrected piecewise form):
/// with `V = mnk/p`, `3·V^(2/3)` when the memory `S` (words per rank; `None` = unlimited)
/// holds a cubic domain (`S ≥ V^(2/3)`), otherwise `2V/√S + S`. It counts every element a rank
/// touches (its inputs and its partial `C`), including those it starts with.
///
/// # Examples
/// The paper's worked number: `m = n = k = 16384`, `p = 4096`, unlimited memory.
/// ```
/// use redblue_gemm::{paper_cosma_words, GemmShape};
/// let q = paper_cosma_words(GemmShape::new(16384, 16384, 16384), 4096, None);
/// assert_eq!(q, 3_145_728.0);
/// ```
pub fn paper_cosma_words(shape: GemmShape, p: usize, memory: Option<f64>) -> f64 {
    let v = shape.volume() / p as f64;
    let cube = v.powf(2.0 / 3.0);
    match memory {
        Some(s) if s < cube => 2.0 * v / s.sqrt() + s,
        _ => (3.0 * cube).round_to_ulps(),
    }
}

/// Rounds away the last-bit error of `powf` when the exact value is an integer.
trait RoundToUlps {
    fn round_to_ulps(self) -> f64;
}

impl RoundToUlps for f64 {
    fn round_to_ulps(self) -> f64 {
        let r = self.round();
        if (self - r).abs() <= 4.0 * f64::EPSILON * r.abs() {
            r
        } else {
            self
        }
    }
}

/// The sequential lower bound (COSMA's Theorem 1): any schedule of the classical product with a
/// fast memory of `S` words moves at least `2mnk/√S + mn` words.
pub fn sequential_lower_bound(shape: GemmShape, memory: f64) -> f64 {
    2.0 * shape.volume() / memory.sqrt() + shape.m as f64 * shape.n as f64
}

/// The parallel lower bound on the words a rank *receives*, for inputs and output spread
/// evenly over `p` ranks with `S` words each (`None` = unlimited): some rank performs at least
/// `V = mnk/p` multiply-adds and so touches at least [`paper_cosma_words`] elements (the
/// Loomis–Whitney bound `3·V^(2/3)`, or `2V/√S + S` when memory binds), of which it held at
/// most `(mn + mk + nk)/p` at the start. Never negative.
pub fn parallel_lower_bound(shape: GemmShape, p: usize, memory: Option<f64>) -> f64 {
    let [m, n, k] = shape.dims().map(|x| x as f64);
    if shape.volume() == 0.0 {
        return 0.0;
    }
    let held = (m * n + m * k + n * k) / p as f64;
    (paper_cosma_words(shape, p, memory) - held).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rank_moves_nothing() {
        let c = cosma_cost(&Strategy::default(), GemmShape::new(5, 6, 7));
        assert_eq!(
            (c.words_sent_max, c.words_received_max, c.messages_max),
            (0, 0, 0)
        );
        assert_eq!(c.memory_words_max, 2 * (5 * 7 + 7 * 6 + 5 * 6));
    }

    #[test]
    fn even_grid_matches_the_closed_form() {
        // 12 × 12 × 12 on a 2 × 3 × 2 grid: local 6 × 4 × 6.
        let shape = GemmShape::new(12, 12, 12);
        let s: Strategy = "pm2,pn3,pk2".parse().unwrap();
        let c = cosma_cost(&s, shape);
        let touched = 6 * 6 + 6 * 4 + 6 * 4;
        let held = 3 * 12 * 12 / 12;
        assert_eq!(c.words_received_max, (touched - held) as u64);
        assert_eq!(c.words_received_avg, (touched - held) as f64);
        // Sent: own A part (2 of the 6 × 6 block's rows) to 2 others, own B part (2 of the
        // 6 × 4 block's columns) to 1, C: 24 − 12.
        assert_eq!(c.words_sent_max, 12 * 2 + 12 + 12);
        assert_eq!(c.words_sent_avg, (12 * 2 + 12 + 12) as f64);
    }

    #[test]
    fn sent_and_received_balance_over_all_ranks() {
        let shape = GemmShape::new(13, 7, 29);
        for text in ["pm2,pn3,pk2", "pk5", "sk3,pm2,pn2", "pn2,sm2,pk3", "pm7"] {
            let s: Strategy = text.parse().unwrap();
            let c = cosma_cost(&s, shape);
            let (sent, received) = (c.words_sent_avg, c.words_received_avg);
            assert!(
                (sent - received).abs() < 1e-9,
                "{text}: {sent} != {received}"
            );
        }
    }

    #[test]
    fn worked_number_and_bounds() {
        let shape = GemmShape::new(16384, 16384, 16384);
        assert_eq!(paper_cosma_words(shape, 4096, None), 3_145_728.0);
        // With memory that does not hold the cube: 2V/√S + S.
        let v = 16384f64.powi(3) / 4096.0;
        assert_eq!(
            paper_cosma_words(shape, 4096, Some(1e6)),
            2.0 * v / 1e3 + 1e6
        );
        let lb = parallel_lower_bound(shape, 4096, None);
        assert_eq!(lb, 3_145_728.0 - 3.0 * 16384f64 * 16384.0 / 4096.0);
        assert_eq!(parallel_lower_bound(GemmShape::new(0, 5, 5), 3, None), 0.0);
        assert_eq!(
            sequential_lower_bound(GemmShape::new(4, 4, 4), 16.0),
            2.0 * 64.0 / 4.0 + 16.0
        );
    }
}
