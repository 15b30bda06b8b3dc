//! What each rank computes under a [`Strategy`]: its sub-products ([`Domain`]s) in execution
//! order and its coordinates in the process grid. Pure functions of the strategy and the shape.

use crate::{Dim, Step, StepKind, Strategy};
use std::ops::Range;

/// The shape of `C (m × n) = op(A) (m × k) · op(B) (k × n)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GemmShape {
    /// Rows of `op(A)` and `C`.
    pub m: usize,
    /// Columns of `op(B)` and `C`.
    pub n: usize,
    /// Columns of `op(A)`, rows of `op(B)`.
    pub k: usize,
}

impl GemmShape {
    /// `m × n × k`.
    pub fn new(m: usize, n: usize, k: usize) -> Self {
        GemmShape { m, n, k }
    }

    /// `[m, n, k]`.
    pub fn dims(self) -> [usize; 3] {
        [self.m, self.n, self.k]
    }

    /// Multiply-adds of the product, `m·n·k`, as a float (no overflow).
    pub fn volume(self) -> f64 {
        self.m as f64 * self.n as f64 * self.k as f64
    }
}

/// Part `g` of `d` near-equal parts of `range` (sizes differ by at most one; the larger parts
/// come last).
pub fn part(range: Range<usize>, d: usize, g: usize) -> Range<usize> {
    let len = range.end - range.start;
    let at = |i: usize| range.start + (len as u128 * i as u128 / d as u128) as usize;
    at(g)..at(g + 1)
}

/// One local multiplication: `C[rows, cols] += op(A)[rows, inner] · op(B)[inner, cols]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Domain {
    /// Rows of `C` and `op(A)`.
    pub rows: Range<usize>,
    /// Columns of `C` and `op(B)`.
    pub cols: Range<usize>,
    /// The reduction range: columns of `op(A)`, rows of `op(B)`.
    pub inner: Range<usize>,
}

impl Domain {
    fn whole(shape: GemmShape) -> Self {
        Domain {
            rows: 0..shape.m,
            cols: 0..shape.n,
            inner: 0..shape.k,
        }
    }

    fn range_mut(&mut self, dim: Dim) -> &mut Range<usize> {
        match dim {
            Dim::M => &mut self.rows,
            Dim::N => &mut self.cols,
            Dim::K => &mut self.inner,
        }
    }

    /// `|rows|·|inner|`: elements of `op(A)` the multiplication reads.
    pub fn a_len(&self) -> usize {
        self.rows.len() * self.inner.len()
    }

    /// `|inner|·|cols|`: elements of `op(B)` the multiplication reads.
    pub fn b_len(&self) -> usize {
        self.inner.len() * self.cols.len()
    }

    /// `|rows|·|cols|`: elements of `C` the multiplication updates.
    pub fn c_len(&self) -> usize {
        self.rows.len() * self.cols.len()
    }
}

/// The group index of `rank` at each parallel step (in step order), and its coordinates
/// `[i_m, i_n, i_k]` in the process grid `strategy.grid()`: the mixed-radix number of its group
/// indices over the parallel steps of each dimension, outermost step most significant.
///
/// Ranks are split into contiguous groups: at a parallel step with divisor `d` over `P′`
/// ranks, group `g` is the ranks `g·P′/d .. (g+1)·P′/d` of the current group.
///
/// # Panics
/// If `rank ≥ strategy.ranks()`.
pub fn grid_coords(strategy: &Strategy, rank: usize) -> (Vec<usize>, [usize; 3]) {
    let mut remaining = strategy.ranks();
    assert!(
        rank < remaining,
        "rank {rank} of a {remaining}-rank strategy"
    );
    let mut local = rank;
    let mut groups = Vec::new();
    let mut coords = [0; 3];
    for step in strategy
        .steps()
        .iter()
        .filter(|s| s.kind == StepKind::Parallel)
    {
        remaining /= step.divisor;
        let g = local / remaining;
        local %= remaining;
        groups.push(g);
        let c = &mut coords[step.dim.index()];
        *c = *c * step.divisor + g;
    }
    (groups, coords)
}

/// The local multiplications of `rank` under `strategy`, in execution order: the sequential
/// steps enumerate their parts in order (outermost step slowest), the parallel steps pick the
/// rank's group. Domains may be empty (a dimension smaller than its divisor).
///
/// # Panics
/// If `rank ≥ strategy.ranks()`.
pub fn rank_domains(strategy: &Strategy, shape: GemmShape, rank: usize) -> Vec<Domain> {
    let (groups, _) = grid_coords(strategy, rank);
    let mut out = Vec::new();
    walk(strategy.steps(), &groups, Domain::whole(shape), &mut out);
    out
}

/// For each sequential iteration (in execution order), which `C` block it updates, numbered by
/// the choices of the sequential `m` and `n` steps: iterations that differ only in sequential
/// `k` parts update the same block. The same for every rank, so ranks agree on when a block is
/// complete without asking.
pub fn c_block_ids(strategy: &Strategy) -> Vec<usize> {
    let seq: Vec<&Step> = strategy
        .steps()
        .iter()
        .filter(|s| s.kind == StepKind::Sequential)
        .collect();
    let iterations: usize = seq.iter().map(|s| s.divisor).product();
    (0..iterations)
        .map(|it| {
            // Digits of `it`, outermost step most significant.
            let mut rest = it;
            let mut digits = vec![0; seq.len()];
            for (d, s) in digits.iter_mut().zip(&seq).rev() {
                *d = rest % s.divisor;
                rest /= s.divisor;
            }
            seq.iter()
                .zip(digits)
                .filter(|(s, _)| s.dim != Dim::K)
                .fold(0, |id, (s, d)| id * s.divisor + d)
        })
        .collect()
}

/// For each iteration, whether it is the last one to update its `C` block (see
/// [`c_block_ids`]).
pub fn last_updates(ids: &[usize]) -> Vec<bool> {
    (0..ids.len())
        .map(|it| !ids[it + 1..].contains(&ids[it]))
        .collect()
}

fn walk(steps: &[Step], groups: &[usize], domain: Domain, out: &mut Vec<Domain>) {
    let Some((step, rest)) = steps.split_first() else {
        out.push(domain);
        return;
    };
    let split = |g: usize| {
        let mut d = domain.clone();
        let r = d.range_mut(step.dim);
        *r = part(r.clone(), step.divisor, g);
        d
    };
    match step.kind {
        StepKind::Parallel => walk(rest, &groups[1..], split(groups[0]), out),
        StepKind::Sequential => {
            for g in 0..step.divisor {
                walk(rest, groups, split(g), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_tile_the_range_and_differ_by_at_most_one() {
        for len in [0usize, 1, 5, 16, 17] {
            for d in 1..7 {
                let parts: Vec<_> = (0..d).map(|g| part(3..3 + len, d, g)).collect();
                assert_eq!(parts[0].start, 3);
                assert_eq!(parts[d - 1].end, 3 + len);
                assert!(parts.windows(2).all(|w| w[0].end == w[1].start));
                let (lo, hi) = (len / d, len.div_ceil(d));
                assert!(parts.iter().all(|p| p.len() == lo || p.len() == hi));
            }
        }
    }

    #[test]
    fn domains_of_all_ranks_cover_the_iteration_space_once() {
        let shape = GemmShape::new(7, 5, 11);
        for text in [
            "",
            "pm2",
            "pm2,pn3,pk2",
            "pk3,sm2,pn2",
            "sk2,pm3,sn2,pk2",
            "pn7,pm2",
        ] {
            let s: Strategy = text.parse().unwrap();
            let mut count = vec![0u32; 7 * 5 * 11];
            for r in 0..s.ranks() {
                for d in rank_domains(&s, shape, r) {
                    for i in d.rows.clone() {
                        for j in d.cols.clone() {
                            for l in d.inner.clone() {
                                count[(i * 5 + j) * 11 + l] += 1;
                            }
                        }
                    }
                }
            }
            assert!(count.iter().all(|&c| c == 1), "{text}");
        }
    }

    #[test]
    fn c_blocks_follow_the_sequential_m_and_n_steps() {
        let s: Strategy = "sk2,pm2,sm3".parse().unwrap();
        assert_eq!(c_block_ids(&s), vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(
            last_updates(&c_block_ids(&s)),
            [false, false, false, true, true, true]
        );
        let s: Strategy = "sm2,sk3".parse().unwrap();
        assert_eq!(c_block_ids(&s), vec![0, 0, 0, 1, 1, 1]);
        assert_eq!(c_block_ids(&Strategy::default()), vec![0]);
        // The ids match the blocks of the domains.
        let shape = GemmShape::new(9, 8, 7);
        let s: Strategy = "sn2,pk2,sk2,sm2".parse().unwrap();
        let ids = c_block_ids(&s);
        for r in 0..s.ranks() {
            let doms = rank_domains(&s, shape, r);
            for (a, b) in (0..doms.len()).flat_map(|a| (0..doms.len()).map(move |b| (a, b))) {
                let same = doms[a].rows == doms[b].rows && doms[a].cols == doms[b].cols;
                assert_eq!(same, ids[a] == ids[b]);
            }
        }
    }

    #[test]
    fn coordinates_are_mixed_radix_over_each_dimension() {
        let s: Strategy = "pm2,pk3,pm2".parse().unwrap();
        assert_eq!(s.grid(), [4, 1, 3]);
        // rank = g0·6 + g1·2 + g2; m coordinate = g0·2 + g2, k coordinate = g1.
        assert_eq!(grid_coords(&s, 0).1, [0, 0, 0]);
        assert_eq!(grid_coords(&s, 1).1, [1, 0, 0]);
        assert_eq!(grid_coords(&s, 2).1, [0, 0, 1]);
        assert_eq!(grid_coords(&s, 7), (vec![1, 0, 1], [3, 0, 0]));
        assert_eq!(grid_coords(&s, 11), (vec![1, 2, 1], [3, 0, 2]));
    }
}
