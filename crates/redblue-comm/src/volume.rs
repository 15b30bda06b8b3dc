//! The accounting rules: what each call moves, per rank, as a pure function of its arguments.
//!
//! Every backend counts by these rules. [`ThreadComm`](crate::ThreadComm) runs exactly these
//! transfers and counts them as they happen; `MpiComm` lets the MPI library choose its own
//! algorithm and counts these per-call quantities, so a program reports the same counters on
//! both. The rules are those of the direct algorithms (each piece of data goes straight from the
//! rank that has it to the rank that needs it), except `all_reduce`, which is a reduce-scatter
//! followed by an all-gather (the bandwidth-optimal schedule for large vectors):
//!
//! | call | words sent by rank `r` | words received by rank `r` |
//! |---|---|---|
//! | `broadcast(n)` | `n·(P−1)` on the root | `n` off the root |
//! | `reduce(n)` | `n` off the root | `n·(P−1)` on the root |
//! | `all_reduce(n)`, pieces `b = split(n, P)` | `n − b_r + b_r·(P−1)` | the same |
//! | `gather_v(c)` | `c_r` off the root | `Σ_{i≠root} c_i` on the root |
//! | `scatter_v(c)` | `Σ_{i≠root} c_i` on the root | `c_r` off the root |
//! | `all_gather_v(c)` | `c_r·(P−1)` | `Σ_{i≠r} c_i` |
//! | `reduce_scatter(c)` | `Σ_{i≠r} c_i` | `c_r·(P−1)` |
//! | `all_to_all_v(s, t)` | `Σ_{j≠r} s_j` | `Σ_{i≠r} t_i` |
//!
//! A message is one non-empty transfer between two different ranks; point-to-point `send` and
//! `recv` between two different ranks always count one message, even when empty ([`point_to_point`]). `barrier` and `split` count nothing.

use crate::CommStats;

/// A list of transfers `(peer, words)` from one rank's point of view.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Transfers {
    /// `(destination, words)` of each send.
    pub sends: Vec<(usize, usize)>,
    /// `(source, words)` of each receive.
    pub recvs: Vec<(usize, usize)>,
    /// Whether these are point-to-point transfers, which count a message even when empty.
    pub point_to_point: bool,
}

impl Transfers {
    /// The counters these transfers add on `rank` for elements of `bytes_per_word` bytes:
    /// self-transfers and empty transfers are not counted.
    pub fn stats(&self, rank: usize, bytes_per_word: usize) -> CommStats {
        let sent = self
            .sends
            .iter()
            .filter(|&&(peer, w)| peer != rank && (w > 0 || self.point_to_point))
            .map(|&(_, w)| CommStats::sent(w, bytes_per_word));
        let received = self
            .recvs
            .iter()
            .filter(|&&(peer, w)| peer != rank && (w > 0 || self.point_to_point))
            .map(|&(_, w)| CommStats::received(w, bytes_per_word));
        sent.chain(received).sum()
    }
}

/// Transfers of a point-to-point `send` of `n` elements to `dest` and `recv` of `m` elements
/// from `src` (either may be absent).
pub fn point_to_point(send: Option<(usize, usize)>, recv: Option<(usize, usize)>) -> Transfers {
    Transfers {
        sends: send.into_iter().collect(),
        recvs: recv.into_iter().collect(),
        point_to_point: true,
    }
}

/// Splits `n` elements into `p` near-equal pieces (the first `n % p` one longer): the pieces of
/// `all_reduce`.
pub fn even_split(n: usize, p: usize) -> Vec<usize> {
    (0..p).map(|r| n / p + usize::from(r < n % p)).collect()
}

fn to_all(rank: usize, p: usize, words: usize) -> Vec<(usize, usize)> {
    (0..p).filter(|&j| j != rank).map(|j| (j, words)).collect()
}

/// Transfers of `broadcast` of `n` elements from `root`.
pub fn broadcast(rank: usize, p: usize, n: usize, root: usize) -> Transfers {
    if rank == root {
        Transfers {
            sends: to_all(rank, p, n),
            ..Default::default()
        }
    } else {
        Transfers {
            recvs: vec![(root, n)],
            ..Default::default()
        }
    }
}

/// Transfers of `reduce` of `n` elements to `root`.
pub fn reduce(rank: usize, p: usize, n: usize, root: usize) -> Transfers {
    let b = broadcast(rank, p, n, root);
    Transfers {
        sends: b.recvs,
        recvs: b.sends,
        ..Default::default()
    }
}

/// Transfers of `all_reduce` of `n` elements: a reduce-scatter over the pieces
/// [`even_split`]`(n, p)`, then an all-gather of the reduced pieces.
pub fn all_reduce(rank: usize, p: usize, n: usize) -> Transfers {
    let pieces = even_split(n, p);
    let rs = reduce_scatter(rank, &pieces);
    let ag = all_gather_v(rank, &pieces);
    Transfers {
        sends: rs.sends.into_iter().chain(ag.sends).collect(),
        recvs: rs.recvs.into_iter().chain(ag.recvs).collect(),
        ..Default::default()
    }
}

/// Transfers of `gather_v` with `counts` to `root`.
pub fn gather_v(rank: usize, counts: &[usize], root: usize) -> Transfers {
    if rank == root {
        Transfers {
            recvs: counts
                .iter()
                .copied()
                .enumerate()
                .filter(|&(i, _)| i != root)
                .collect(),
            ..Default::default()
        }
    } else {
        Transfers {
            sends: vec![(root, counts[rank])],
            ..Default::default()
        }
    }
}

/// Transfers of `scatter_v` with `counts` from `root`.
pub fn scatter_v(rank: usize, counts: &[usize], root: usize) -> Transfers {
    let g = gather_v(rank, counts, root);
    Transfers {
        sends: g.recvs,
        recvs: g.sends,
        ..Default::default()
    }
}

/// Transfers of `all_gather_v` with `counts`.
pub fn all_gather_v(rank: usize, counts: &[usize]) -> Transfers {
    Transfers {
        sends: to_all(rank, counts.len(), counts[rank]),
        recvs: counts
            .iter()
            .copied()
            .enumerate()
            .filter(|&(i, _)| i != rank)
            .collect(),
        ..Default::default()
    }
}

/// Transfers of `reduce_scatter` with `counts`.
pub fn reduce_scatter(rank: usize, counts: &[usize]) -> Transfers {
    let g = all_gather_v(rank, counts);
    Transfers {
        sends: g.recvs,
        recvs: g.sends,
        ..Default::default()
    }
}

/// How many copies position `q` of a binomial tree of `len` members sends
/// ([`crate::CommunicatorExt::tree_broadcast`]): one to `q + d` for every power of two
/// `d > q` with `q + d < len`. Every position but the root (0) receives one.
pub fn tree_sends(q: usize, len: usize) -> usize {
    let mut sends = 0;
    let mut d = 1;
    while d < len {
        if q < d && q + d < len {
            sends += 1;
        }
        d *= 2;
    }
    sends
}

/// Transfers of a [`crate::CommunicatorExt::tree_broadcast`] of `n` elements over `members`,
/// on `rank` (point-to-point: a message even when empty).
pub fn tree_broadcast(rank: usize, members: &[usize], n: usize) -> Vec<Transfers> {
    let Some(q) = members.iter().position(|&r| r == rank) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut d = 1;
    while d < members.len() {
        if q < d && q + d < members.len() {
            out.push(point_to_point(Some((members[q + d], n)), None));
        } else if (d..2 * d).contains(&q) {
            out.push(point_to_point(None, Some((members[q - d], n))));
        }
        d *= 2;
    }
    out
}

/// Every rank's counters added up group by group, for exchanges whose moves form outer
/// products: in a group, every sender `(s, a)` sends every receiver `(d, b)` other than itself
/// a block of `a·b` elements (its rows × their columns, or the reverse) — one message per
/// non-empty block, as [`all_to_all_v`] counts it. A rank's words and messages in a group follow
/// from the sums and the counts of the sizes, so a group costs `O(|senders| + |receivers|)`
/// where listing its moves costs their product. Ranks in one group's list must be distinct,
/// and two groups of one exchange must not share a (sender, receiver) pair.
#[derive(Clone, Debug)]
pub struct Tally {
    /// Every rank's counters so far.
    pub stats: Vec<CommStats>,
    /// Scratch, indexed by rank: a size while a group is counted.
    size_at: Vec<usize>,
}

impl Tally {
    /// Zero counters for `p` ranks.
    pub fn new(p: usize) -> Self {
        Tally {
            stats: vec![CommStats::default(); p],
            size_at: vec![0; p],
        }
    }

    /// `rank` sends `words` elements of `bytes` bytes in `messages` messages.
    pub fn send(&mut self, rank: usize, words: usize, messages: usize, bytes: usize) {
        let s = &mut self.stats[rank];
        s.words_sent += words as u64;
        s.bytes_sent += (words * bytes) as u64;
        s.messages_sent += messages as u64;
    }

    /// `rank` receives `words` elements of `bytes` bytes in `messages` messages.
    pub fn receive(&mut self, rank: usize, words: usize, messages: usize, bytes: usize) {
        let s = &mut self.stats[rank];
        s.words_received += words as u64;
        s.bytes_received += (words * bytes) as u64;
        s.messages_received += messages as u64;
    }

    /// One group: every `(s, a)` of `senders` sends `a·b` elements of `bytes` bytes to every
    /// `(d, b)` of `receivers` other than itself.
    pub fn product(
        &mut self,
        senders: &[(usize, usize)],
        receivers: &[(usize, usize)],
        bytes: usize,
    ) {
        let total = |list: &[(usize, usize)]| list.iter().map(|&(_, n)| n).sum::<usize>();
        let nonzero = |list: &[(usize, usize)]| list.iter().filter(|&&(_, n)| n > 0).count();
        let (sum_b, count_b) = (total(receivers), nonzero(receivers));
        let (sum_a, count_a) = (total(senders), nonzero(senders));
        for &(d, b) in receivers {
            self.size_at[d] = b;
        }
        for &(s, a) in senders {
            let own = self.size_at[s];
            if a > 0 {
                self.send(s, a * (sum_b - own), count_b - usize::from(own > 0), bytes);
            }
        }
        for &(d, _) in receivers {
            self.size_at[d] = 0;
        }
        for &(s, a) in senders {
            self.size_at[s] = a;
        }
        for &(d, b) in receivers {
            let own = self.size_at[d];
            if b > 0 {
                self.receive(d, b * (sum_a - own), count_a - usize::from(own > 0), bytes);
            }
        }
        for &(s, _) in senders {
            self.size_at[s] = 0;
        }
    }

    /// [`all_reduce`] of `n` elements of `bytes` bytes over all ranks, in closed form.
    pub fn all_reduce(&mut self, n: usize, bytes: usize) {
        let p = self.stats.len();
        let piece = |r: usize| n / p + usize::from(r < n % p);
        let pieces = if n >= p { p } else { n };
        for r in 0..p {
            let mine = piece(r);
            let words = n - mine + mine * (p - 1);
            let messages = pieces - usize::from(mine > 0) + if mine > 0 { p - 1 } else { 0 };
            self.send(r, words, messages, bytes);
            self.receive(r, words, messages, bytes);
        }
    }

    /// A [`crate::CommunicatorExt::tree_broadcast`] of `n` elements of `bytes` bytes over
    /// `members` in tree order: `O(members)`, where [`Tally::tree`] visits every rank.
    pub fn tree_of(&mut self, members: &[usize], n: usize, bytes: usize) {
        for (q, &r) in members.iter().enumerate() {
            let sends = tree_sends(q, members.len());
            self.send(r, sends * n, sends, bytes);
            if q > 0 {
                self.receive(r, n, 1, bytes);
            }
        }
    }

    /// A [`crate::CommunicatorExt::tree_broadcast`] of `n` elements of `bytes` bytes over a tree
    /// of `len` members, `position(rank)` giving each member's position (`None` off the tree):
    /// for trees whose positions follow from a rank in `O(1)`.
    pub fn tree(
        &mut self,
        len: usize,
        position: impl Fn(usize) -> Option<usize>,
        n: usize,
        bytes: usize,
    ) {
        for r in 0..self.stats.len() {
            let Some(q) = position(r) else { continue };
            let sends = tree_sends(q, len);
            self.send(r, sends * n, sends, bytes);
            if q > 0 {
                self.receive(r, n, 1, bytes);
            }
        }
    }
}

/// Transfers of `all_to_all_v`.
pub fn all_to_all_v(send_counts: &[usize], recv_counts: &[usize]) -> Transfers {
    Transfers {
        sends: send_counts.iter().copied().enumerate().collect(),
        recvs: recv_counts.iter().copied().enumerate().collect(),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn even_split_adds_up() {
        for n in 0..20 {
            for p in 1..8 {
                let s = even_split(n, p);
                assert_eq!(s.iter().sum::<usize>(), n);
                assert!(s.iter().max().unwrap() - s.iter().min().unwrap() <= 1);
            }
        }
    }

    #[test]
    fn all_reduce_is_bandwidth_optimal() {
        // 2 n (P-1)/P words per rank when P divides n.
        let (n, p) = (12, 4);
        for r in 0..p {
            let s = all_reduce(r, p, n).stats(r, 8);
            assert_eq!(s.words_sent, 2 * 12 * 3 / 4);
            assert_eq!(s.words_received, s.words_sent);
            assert_eq!(s.messages_sent, 6);
        }
    }

    #[test]
    fn the_tally_counts_what_the_transfers_count() {
        // A product group with a rank on both sides, a zero size, and a tree and an all-reduce.
        let p = 6;
        let senders = [(0, 3), (2, 0), (4, 5)];
        let receivers = [(4, 2), (1, 7), (5, 0), (0, 1)];
        let mut tally = Tally::new(p);
        tally.product(&senders, &receivers, 8);
        let members = [3, 1, 5, 0, 2];
        tally.tree(
            members.len(),
            |r| members.iter().position(|&m| m == r),
            4,
            16,
        );
        // The same tree again from its member list: counted twice.
        tally.tree_of(&members, 4, 16);
        tally.all_reduce(3, 8);
        for r in 0..p {
            let sends: Vec<(usize, usize)> = senders
                .iter()
                .filter(|&&(s, _)| s == r)
                .flat_map(|&(_, a)| receivers.iter().map(move |&(d, b)| (d, a * b)))
                .collect();
            let recvs: Vec<(usize, usize)> = receivers
                .iter()
                .filter(|&&(d, _)| d == r)
                .flat_map(|&(_, b)| senders.iter().map(move |&(s, a)| (s, a * b)))
                .collect();
            let mut expected = all_to_all_v(&[], &[]).stats(r, 8);
            expected = expected
                + Transfers {
                    sends,
                    recvs,
                    point_to_point: false,
                }
                .stats(r, 8);
            for tr in tree_broadcast(r, &members, 4) {
                expected = expected + tr.stats(r, 16) + tr.stats(r, 16);
            }
            expected = expected + all_reduce(r, p, 3).stats(r, 8);
            assert_eq!(tally.stats[r], expected, "rank {r}");
        }
    }

    #[test]
    fn every_word_sent_is_received() {
        let p = 5;
        let counts = [3, 0, 2, 7, 1];
        let total = |f: &dyn Fn(usize) -> Transfers| -> (u64, u64) {
            let s: CommStats = (0..p).map(|r| f(r).stats(r, 4)).sum();
            (s.words_sent, s.words_received)
        };
        for f in [
            &|r| broadcast(r, p, 6, 2) as Transfers,
            &|r| reduce(r, p, 6, 4),
            &|r| all_reduce(r, p, 13),
            &|r| gather_v(r, &counts, 1),
            &|r| scatter_v(r, &counts, 3),
            &|r| all_gather_v(r, &counts),
            &|r| reduce_scatter(r, &counts),
        ] as [&dyn Fn(usize) -> Transfers; 7]
        {
            let (s, r) = total(f);
            assert_eq!(s, r);
            assert!(s > 0);
        }
    }
}
