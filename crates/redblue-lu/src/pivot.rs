//! Choosing a step's `w` pivot rows among the `Px` ranks that hold the reduced panel:
//! [`tournament`] (COnfLUX: local partial pivoting picks candidates, a butterfly of playoffs
//! picks the winners) or [`partial`] (the 2D baseline: one pivot search per column, as
//! ScaLAPACK's PDGETF2). Both leave the winners, in pivot order, and `A00 = L00\U00` on the
//! participant at grid row 0 (the butterfly on every participant below the largest power of
//! two); both count their messages by pure functions of the active-row counts (and, for
//! partial pivoting, of who won), which the cost model reuses.

#[cfg(test)]
use redblue_comm::volume::{point_to_point, Transfers};
use redblue_comm::{wait_all, CommError, Communicator};
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::RealScalar;
use redblue_kernels::{getrf, KernelScalar, MatMut, Par};
use redblue_pipeline::Geometry;

const TAG_VALUES: u32 = 0x00C0_1A00;
const TAG_ROWS: u32 = 0x00C0_1A01;
const TAG_MAX: u32 = 0x00C0_1A02;
const TAG_PIVOT_ROW: u32 = 0x00C0_1A03;

/// Pivots chosen for one step.
pub(crate) struct Chosen<T> {
    /// Global rows, in pivot order.
    pub rows: Vec<usize>,
    /// `L00\U00`, `w × w` column-major.
    pub a00: Vec<T>,
    /// First column (within the panel) whose pivot was exactly zero.
    pub first_zero: Option<usize>,
    /// `L10` as the panel's `getrf` left it, when one participant held the whole panel and
    /// no pivot was zero.
    pub below: Option<Below<T>>,
}

/// The rows of a factored panel below its block: row `from + i` of `l` (`rows.len() + from`
/// rows, `w` columns, column-major with leading dimension `ld`) is `L10` on global row
/// `rows[i]`.
pub(crate) struct Below<T> {
    pub rows: Vec<usize>,
    pub l: Vec<T>,
    pub ld: usize,
    pub from: usize,
}

/// The `m × w` block at the start of `vals` (column-major, leading dimension `ld ≥ m`) copied
/// into `out` with leading dimension `m`.
fn copy_block<T: Copy>(vals: &[T], m: usize, ld: usize, out: &mut [T]) {
    for (dst, col) in out.chunks_exact_mut(m.max(1)).zip(vals.chunks(ld.max(1))) {
        dst.copy_from_slice(&col[..m]);
    }
}

/// Gaussian elimination with partial pivoting on the `m × w` block `vals` (column-major with
/// leading dimension `ld ≥ m`), which it leaves untouched: the `k = min(m, w)` rows it picks (indices into `vals`, in pivot
/// order), the factored `k × w` block `L\U` of those rows, and the first zero pivot. A column
/// whose candidates are all zero still picks a row (the selection goes on, so a rank-deficient
/// subset of rows still hands on rows that span it). With `keep` and no zero pivot, also the
/// other rows (indices into `vals`, in the order `getrf` left them) and the whole factored
/// `m × w` copy, whose rows from `k` on are `L10` on them.
#[allow(clippy::type_complexity)]
fn gepp<T: KernelScalar>(
    vals: &[T],
    m: usize,
    w: usize,
    ld: usize,
    par: Par,
    keep: bool,
) -> (
    Vec<usize>,
    Vec<T>,
    Option<usize>,
    Option<(Vec<usize>, Vec<T>)>,
) {
    let k = m.min(w);
    // The working copy from the pool: a tall panel is megabytes, every step.
    let mut a = take_buffer(m * w, T::zero());
    copy_block(vals, m, ld, &mut a);
    let fast = MatMut::from_slice(&mut a, m, w, m.max(1))
        .ok()
        .and_then(|view| getrf(view, par).ok());
    if let Some(info) = fast.filter(|info| info.first_zero_pivot.is_none()) {
        let perm = info.pivots.perm();
        let order = perm[..k].to_vec();
        let fact = (0..w).flat_map(|j| a[j * m..j * m + k].to_vec()).collect();
        if keep {
            return (order, fact, None, Some((perm[k..].to_vec(), a)));
        }
        recycle(a);
        return (order, fact, None, None);
    }
    // A zero pivot: unblocked elimination that skips the column instead of dividing by zero.
    copy_block(vals, m, ld, &mut a);
    let mut p: Vec<usize> = (0..m).collect();
    let mut first_zero = None;
    for j in 0..k {
        let best = (j..m)
            .max_by(|&x, &y| {
                a[p[x] + j * m]
                    .abs()
                    .partial_cmp(&a[p[y] + j * m].abs())
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then(y.cmp(&x))
            })
            .expect("j < m");
        p.swap(j, best);
        let pivot = a[p[j] + j * m];
        if pivot == T::zero() {
            first_zero.get_or_insert(j);
            continue;
        }
        for &i in &p[j + 1..] {
            let l = a[i + j * m] / pivot;
            a[i + j * m] = l;
            for jj in j + 1..w {
                let u = a[p[j] + jj * m];
                a[i + jj * m] -= l * u;
            }
        }
    }
    let order = p[..k].to_vec();
    let fact = pick_rows(&a, m, w, &order);
    recycle(a);
    (order, fact, first_zero, None)
}

/// [`gepp`] without the rows below.
pub(crate) fn gepp_select<T: KernelScalar>(
    vals: &[T],
    m: usize,
    w: usize,
    ld: usize,
    par: Par,
) -> (Vec<usize>, Vec<T>, Option<usize>) {
    let (order, fact, first_zero, _) = gepp(vals, m, w, ld, par, false);
    (order, fact, first_zero)
}

/// [`gepp`] of a whole panel held by one participant (`rows` its global rows): the choice, with
/// the rows below kept for the panel's solve.
fn gepp_whole<T: KernelScalar>(
    rows: &[usize],
    vals: &[T],
    w: usize,
    ld: usize,
    par: Par,
) -> Chosen<T> {
    let m = rows.len();
    let (order, a00, first_zero, kept) = gepp(vals, m, w, ld, par, true);
    Chosen {
        rows: order.iter().map(|&i| rows[i]).collect(),
        a00,
        first_zero,
        below: kept.map(|(rest, l)| Below {
            rows: rest.iter().map(|&i| rows[i]).collect(),
            l,
            ld: m,
            from: m.min(w),
        }),
    }
}

/// The participants of the butterfly proper: the largest power of two at most `px`. The
/// others (`x ≥ p2`) first hand their candidates to `x − p2`.
pub(crate) fn butterfly_size(px: usize) -> usize {
    if px <= 1 {
        1
    } else {
        1 << (usize::BITS - 1 - px.leading_zeros())
    }
}

/// Candidates participant `x < p2` holds when it enters the butterfly round at distance `d`
/// (1, 2, 4, ...): its own `min(avail[x], w)`, merged with those of `x + p2` if there is one,
/// and after each round the winners of its group of `d` participants (at most `w`).
#[cfg(test)]
pub(crate) fn held(avail: &[usize], w: usize, x: usize, d: usize) -> usize {
    if d == 1 {
        let p2 = butterfly_size(avail.len());
        let mine = avail[x].min(w);
        return match avail.get(x + p2) {
            Some(&theirs) => (mine + theirs.min(w)).min(w),
            None => mine,
        };
    }
    let h = d / 2;
    (held(avail, w, x, h) + held(avail, w, x ^ h, h)).min(w)
}

/// What each participant `x < p2` holds when it enters each round (the recursion of the
/// tests' `held`, bottom-up): row `k` is the round at distance `d = 2^k`; `O(p2·log p2)`.
pub(crate) fn held_table(avail: &[usize], w: usize) -> Vec<Vec<usize>> {
    let p2 = butterfly_size(avail.len());
    let first: Vec<usize> = (0..p2)
        .map(|x| {
            let mine = avail[x].min(w);
            avail
                .get(x + p2)
                .map_or(mine, |&t| (mine + t.min(w)).min(w))
        })
        .collect();
    let mut rows = vec![first];
    let mut d = 1;
    while 2 * d < p2 {
        let prev = rows.last().expect("a first row");
        let next = (0..p2).map(|x| (prev[x] + prev[x ^ d]).min(w)).collect();
        rows.push(next);
        d *= 2;
    }
    rows
}

/// The tournament's transfers on participant `x` (of `avail.len()`): `x ≥ p2` sends its
/// candidates (values and row indices, two messages) to `x − p2`; then in the round at distance
/// `d` every `x < p2` exchanges its candidates with `x XOR d`.
#[cfg(test)]
pub(crate) fn tournament_transfers(avail: &[usize], w: usize, x: usize) -> Vec<Transfers> {
    let p2 = butterfly_size(avail.len());
    if x >= p2 {
        let k = avail[x].min(w);
        return vec![
            point_to_point(Some((x - p2, k * w)), None),
            point_to_point(Some((x - p2, k)), None),
        ];
    }
    let mut out = Vec::new();
    if let Some(&theirs) = avail.get(x + p2) {
        let k = theirs.min(w);
        out.push(point_to_point(None, Some((x + p2, k * w))));
        out.push(point_to_point(None, Some((x + p2, k))));
    }
    let table = held_table(avail, w);
    for (k, held_now) in table.iter().enumerate().take(p2.trailing_zeros() as usize) {
        let y = x ^ (1 << k);
        let (mine, theirs) = (held_now[x], held_now[y]);
        out.push(point_to_point(Some((y, mine * w)), Some((y, theirs * w))));
        out.push(point_to_point(Some((y, mine)), Some((y, theirs))));
    }
    out
}

/// The candidates of one participant: global rows and their values (`rows × w`).
struct Candidates<T> {
    rows: Vec<usize>,
    vals: Vec<T>,
}

/// A playoff: `upper` stacked over `lower`, eliminated; the `w` winners, `L00\U00` of them
/// and the first zero pivot. Both partners of a butterfly round stack the lower participant's
/// candidates first, so they compute the same winners.
fn playoff<T: KernelScalar>(
    upper: &Candidates<T>,
    lower: &Candidates<T>,
    w: usize,
    par: Par,
) -> (Candidates<T>, Vec<T>, Option<usize>) {
    let (a, b) = (upper.rows.len(), lower.rows.len());
    let mut stacked = Vec::with_capacity((a + b) * w);
    for j in 0..w {
        stacked.extend_from_slice(&upper.vals[j * a..(j + 1) * a]);
        stacked.extend_from_slice(&lower.vals[j * b..(j + 1) * b]);
    }
    let all: Vec<usize> = upper.rows.iter().chain(&lower.rows).copied().collect();
    let (order, fact, zero) = gepp_select(&stacked, a + b, w, a + b, par);
    let winners = Candidates {
        rows: order.iter().map(|&i| all[i]).collect(),
        vals: pick_rows(&stacked, a + b, w, &order),
    };
    (winners, fact, zero)
}

/// Sends (`partner` given) and receives `k` candidates to and from participant ranks.
fn swap_candidates<T: KernelScalar, C: Communicator>(
    comm: &C,
    mine: Option<(&Candidates<T>, usize)>,
    theirs: Option<(usize, usize)>,
    w: usize,
) -> Result<Option<Candidates<T>>, CommError> {
    let idx: Vec<u64> = mine.map_or(Vec::new(), |(c, _)| {
        c.rows.iter().map(|&r| r as u64).collect()
    });
    match (mine, theirs) {
        (Some((c, to)), None) => {
            comm.send(&c.vals, to, TAG_VALUES)?;
            comm.send(&idx, to, TAG_ROWS)?;
            Ok(None)
        }
        (None, Some((from, k))) => {
            let mut vals = vec![T::zero(); k * w];
            comm.recv(&mut vals, from, TAG_VALUES)?;
            let mut rows = vec![0u64; k];
            comm.recv(&mut rows, from, TAG_ROWS)?;
            Ok(Some(Candidates {
                rows: rows.into_iter().map(|r| r as usize).collect(),
                vals,
            }))
        }
        (Some((c, to)), Some((from, k))) => {
            let mut vals = vec![T::zero(); k * w];
            comm.sendrecv(&c.vals, to, &mut vals, from, TAG_VALUES)?;
            let mut rows = vec![0u64; k];
            comm.sendrecv(&idx, to, &mut rows, from, TAG_ROWS)?;
            Ok(Some(Candidates {
                rows: rows.into_iter().map(|r| r as usize).collect(),
                vals,
            }))
        }
        (None, None) => Ok(None),
    }
}

/// Tournament pivoting on participant `x` of `px`, whose active panel rows are `rows` with
/// values `vals` (`rows.len() × w`, column-major with leading dimension `ld`); `avail[x']` is every participant's active
/// row count and `rank_of(x')` its rank. Local elimination picks `w` candidates; participants
/// `x ≥ p2` ([`butterfly_size`]) fold theirs into `x − p2`; then a butterfly of `log₂ p2`
/// rounds of playoffs leaves the winners and `A00` on every participant `x < p2`, which
/// returns them (the others return `None`).
///
/// # Errors
/// A communication failure.
#[allow(clippy::too_many_arguments)]
pub(crate) fn tournament<T: KernelScalar, C: Communicator>(
    comm: &C,
    x: usize,
    avail: &[usize],
    rank_of: impl Fn(usize) -> usize,
    rows: &[usize],
    vals: &[T],
    w: usize,
    ld: usize,
    par: Par,
) -> Result<Option<Chosen<T>>, CommError> {
    let px = avail.len();
    if px == 1 {
        return Ok(Some(gepp_whole(rows, vals, w, ld, par)));
    }
    let p2 = butterfly_size(px);
    let m = rows.len();
    let (order, mut fact, mut first_zero) = gepp_select(vals, m, w, ld, par);
    let mut mine = Candidates {
        rows: order.iter().map(|&i| rows[i]).collect(),
        vals: pick_rows(vals, ld, w, &order),
    };
    if x >= p2 {
        swap_candidates(comm, Some((&mine, rank_of(x - p2))), None, w)?;
        return Ok(None);
    }
    if let Some(&k) = avail.get(x + p2) {
        let from = Some((rank_of(x + p2), k.min(w)));
        if let Some(theirs) = swap_candidates(comm, None, from, w)? {
            (mine, fact, first_zero) = playoff(&mine, &theirs, w, par);
        }
    }
    let table = held_table(avail, w);
    for (round, held_now) in table.iter().enumerate().take(p2.trailing_zeros() as usize) {
        let y = x ^ (1 << round);
        let partner = rank_of(y);
        let k = held_now[y];
        let theirs = swap_candidates(comm, Some((&mine, partner)), Some((partner, k)), w)?
            .expect("a butterfly round receives");
        (mine, fact, first_zero) = if x < y {
            playoff(&mine, &theirs, w, par)
        } else {
            playoff(&theirs, &mine, w, par)
        };
    }
    Ok(Some(Chosen {
        rows: mine.rows,
        a00: fact,
        first_zero,
        below: None,
    }))
}

/// Rows `order` of the `w` columns of the column-major block `vals` (leading dimension `ld`),
/// as a block of their own.
fn pick_rows<T: Copy>(vals: &[T], ld: usize, w: usize, order: &[usize]) -> Vec<T> {
    (0..w)
        .flat_map(|j| order.iter().map(move |&i| vals[i + j * ld]))
        .collect()
}

/// Partial pivoting's transfers on participant `x` of `px` for a panel of width `w` whose
/// pivots are held, column by column, by participants `winners`: per column every participant
/// sends its best candidate (2 words) to every other, then the winner's holder sends the pivot
/// row (`w` words) to every other.
#[cfg(test)]
pub(crate) fn partial_transfers(
    px: usize,
    w: usize,
    x: usize,
    winners: &[usize],
) -> Vec<Transfers> {
    let mut out = Vec::new();
    for &holder in winners {
        for other in (0..px).filter(|&o| o != x) {
            out.push(point_to_point(Some((other, 2)), Some((other, 2))));
        }
        for other in (0..px).filter(|&o| o != holder) {
            if x == holder {
                out.push(point_to_point(Some((other, w)), None));
            } else if x == other {
                out.push(point_to_point(None, Some((holder, w))));
            }
        }
    }
    out
}

/// Partial pivoting on participant `x` of `px` (active panel rows `rows`, values `vals`,
/// `rows.len() × w` column-major with leading dimension `ld`): column by column, the largest candidate of all
/// participants (ties to the lowest row) is the pivot; its holder sends the pivot row to the
/// others, and every participant eliminates below it. `holder_of(row)` is the participant
/// holding a row. Returns the choice on participant 0.
///
/// One participant holds the whole panel: LAPACK's recursive `getrf` of it ([`gepp_select`]:
/// the largest `|re| + |im|`, ties to the first row in local order), no messages. Several:
/// per column the candidates are exchanged; each keeps its rows still active first in its copy,
/// so that the elimination below the pivot runs down contiguous columns.
///
/// # Errors
/// A communication failure.
#[allow(clippy::too_many_arguments)]
pub(crate) fn partial<T: KernelScalar, C: Communicator>(
    comm: &C,
    x: usize,
    px: usize,
    rank_of: impl Fn(usize) -> usize,
    holder_of: impl Fn(usize) -> usize,
    rows: &[usize],
    vals: &[T],
    w: usize,
    ld: usize,
    par: Par,
) -> Result<Option<Chosen<T>>, CommError> {
    let m = rows.len();
    if px == 1 {
        return Ok(Some(gepp_whole(rows, vals, w, ld, par)));
    }
    let mut a = take_buffer(m * w, T::zero());
    copy_block(vals, m, ld, &mut a);
    // My active rows are local rows `done..m` of `a`, `local[i]` the global row of local row i.
    let mut local: Vec<usize> = rows.to_vec();
    let mut done = 0;
    let mut chosen = Vec::with_capacity(w);
    let mut a00 = vec![T::zero(); w * w];
    let mut first_zero = None;
    for j in 0..w {
        // My best candidate: (|value|, row), (-1, -1) if I have none left.
        let col = &a[j * m..(j + 1) * m];
        let best = (done..m).map(|i| (col[i].abs().to_f64(), local[i])).fold(
            None,
            |acc: Option<(f64, usize)>, c| match acc {
                Some(b) if b.0 > c.0 || (b.0 == c.0 && b.1 < c.1) => Some(b),
                _ => Some(c),
            },
        );
        let mine = best.map_or([-1.0, -1.0], |(v, r)| [v, r as f64]);
        let (value, row) = largest_candidate(comm, x, px, &rank_of, mine)?;
        let row = row as usize;
        if value == 0.0 {
            first_zero.get_or_insert(j);
        }
        let holder = holder_of(row);
        let mut pivot_row = vec![T::zero(); w];
        if holder == x {
            let i = (done..m)
                .find(|&i| local[i] == row)
                .expect("the holder has the row");
            // The pivot row out of the active rows: to local row `done`.
            if i != done {
                local.swap(i, done);
                for c in a.chunks_exact_mut(m) {
                    c.swap(i, done);
                }
            }
            for (jj, p) in pivot_row.iter_mut().enumerate() {
                *p = a[done + jj * m];
            }
            done += 1;
            let mut requests = Vec::new();
            for o in (0..px).filter(|&o| o != x) {
                requests.push(comm.isend(&pivot_row, rank_of(o), TAG_PIVOT_ROW)?);
            }
            wait_all(requests)?;
        } else {
            comm.recv(&mut pivot_row, rank_of(holder), TAG_PIVOT_ROW)?;
        }
        for (jj, &p) in pivot_row.iter().enumerate() {
            a00[j + jj * w] = p;
        }
        chosen.push(row);
        let pivot = pivot_row[j];
        if pivot != T::zero() && done < m {
            let (left, right) = a.split_at_mut((j + 1) * m);
            let lcol = &mut left[j * m + done..];
            for l in lcol.iter_mut() {
                *l /= pivot;
            }
            for (jj, c) in right.chunks_exact_mut(m).enumerate() {
                let u = pivot_row[j + 1 + jj];
                if u != T::zero() {
                    for (d, &l) in c[done..].iter_mut().zip(lcol.iter()) {
                        *d -= l * u;
                    }
                }
            }
        }
    }
    recycle(a);
    Ok((x == 0).then_some(Chosen {
        rows: chosen,
        a00,
        first_zero,
        below: None,
    }))
}

/// Every participant's best candidate `[|value|, row]` (`[-1, -1]` for none) sent to every
/// other; the largest of all, ties to the lowest row, as `(|value|, row)`.
///
/// # Errors
/// A communication failure.
fn largest_candidate<C: Communicator>(
    comm: &C,
    x: usize,
    px: usize,
    rank_of: &impl Fn(usize) -> usize,
    mine: [f64; 2],
) -> Result<(f64, f64), CommError> {
    let mut all = vec![[-1.0f64, -1.0]; px];
    all[x] = mine;
    let mut requests = Vec::new();
    for o in (0..px).filter(|&o| o != x) {
        requests.push(comm.isend(&mine, rank_of(o), TAG_MAX)?);
    }
    for (o, slot) in all.iter_mut().enumerate().filter(|(o, _)| *o != x) {
        comm.recv(slot, rank_of(o), TAG_MAX)?;
    }
    wait_all(requests)?;
    Ok(all
        .iter()
        .filter(|c| c[1] >= 0.0)
        .fold((-1.0f64, f64::INFINITY), |(bv, br), c| {
            if c[0] > bv || (c[0] == bv && c[1] < br) {
                (c[0], c[1])
            } else {
                (bv, br)
            }
        }))
}

/// No pivoting, on participant `x` of step `t`'s panel ranks: the one holding the diagonal
/// block (grid row `t mod Px`) factors it without interchanges, `A00 = L00·U00`, stopping at
/// the first zero pivot; the others return `None`. Its rows are the panel's own.
pub(crate) fn none<T: KernelScalar>(
    t: usize,
    g: &Geometry,
    x: usize,
    rows: &[usize],
    vals: &[T],
    w: usize,
    ld: usize,
) -> Option<Chosen<T>> {
    if x != g.solver_row(t) {
        return None;
    }
    let panel = g.panel(t);
    let mut a = vec![T::zero(); w * w];
    for (k, r) in panel.clone().enumerate() {
        let i = rows
            .iter()
            .position(|&q| q == r)
            .expect("the diagonal block's grid row holds its rows");
        for jj in 0..w {
            a[k + jj * w] = vals[i + jj * ld];
        }
    }
    let mut first_zero = None;
    for j in 0..w {
        let pivot = a[j + j * w];
        if pivot == T::zero() {
            first_zero = Some(j);
            break;
        }
        for i in j + 1..w {
            a[i + j * w] /= pivot;
        }
        for jj in j + 1..w {
            let u = a[j + jj * w];
            for i in j + 1..w {
                let l = a[i + j * w];
                a[i + jj * w] -= l * u;
            }
        }
    }
    Some(Chosen {
        rows: panel.collect(),
        a00: a,
        first_zero,
        below: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_matches_partial_pivoting_and_survives_zero_columns() {
        // 4 × 2, column 0 largest in row 2, then row 0 after elimination.
        let vals = [1.0, 0.5, 4.0, 2.0, 3.0, 1.0, 2.0, 1.0];
        let (order, fact, zero) = gepp_select(&vals, 4, 2, 4, Par::Seq);
        assert_eq!(order[0], 2);
        assert_eq!(zero, None);
        assert_eq!(fact[0], 4.0);
        // A zero first column: still two rows picked, the zero reported.
        let vals = [0.0, 0.0, 0.0, 1.0, 5.0, 2.0];
        let (order, _, zero) = gepp_select(&vals, 3, 2, 3, Par::Seq);
        assert_eq!(zero, Some(0));
        assert_eq!(order.len(), 2);
        assert!(
            order.contains(&1),
            "the row with the largest second entry is kept"
        );
    }

    #[test]
    fn selection_reads_a_block_inside_a_taller_array() {
        // The same 4 × 2 blocks as above with two rows of noise (99) under each column: the
        // same selection and factors (the fast path and the zero-column path).
        let embed = |vals: &[f64], m: usize| -> Vec<f64> {
            vals.chunks(m)
                .flat_map(|c| c.iter().copied().chain([99.0, 99.0]))
                .collect()
        };
        for (vals, m) in [
            (vec![1.0, 0.5, 4.0, 2.0, 3.0, 1.0, 2.0, 1.0], 4),
            (vec![0.0, 0.0, 0.0, 1.0, 5.0, 2.0], 3),
        ] {
            let tall = embed(&vals, m);
            assert_eq!(
                gepp_select(&tall, m, 2, m + 2, Par::Seq),
                gepp_select(&vals, m, 2, m, Par::Seq)
            );
            let order = [2, 0];
            assert_eq!(
                pick_rows(&tall, m + 2, 2, &order),
                pick_rows(&vals, m, 2, &order)
            );
        }
    }

    #[test]
    fn held_counts_follow_the_butterfly() {
        // Five participants: 4 folds into 0, then rounds at distances 1 and 2.
        let avail = [1, 0, 0, 1, 1];
        assert_eq!(butterfly_size(5), 4);
        assert_eq!(held(&avail, 3, 0, 1), 2);
        assert_eq!(held(&avail, 3, 1, 1), 0);
        assert_eq!(held(&avail, 3, 3, 1), 1);
        assert_eq!(held(&avail, 3, 1, 2), 2);
        assert_eq!(held(&avail, 3, 2, 2), 1);
        assert_eq!(held(&avail, 3, 3, 4), 3);
        let table = held_table(&avail, 3);
        for (k, row) in table.iter().enumerate() {
            for (x, &h) in row.iter().enumerate() {
                assert_eq!(h, held(&avail, 3, x, 1 << k), "x {x} round {k}");
            }
        }
        assert_eq!(held(&[5, 1, 0, 7, 2], 3, 2, 2), 3);
        // What one participant sends, its partner receives.
        for avail in [vec![5, 1, 0, 7, 2], vec![2; 7], vec![9], vec![0, 4, 4]] {
            let px = avail.len();
            let all: Vec<_> = (0..px)
                .map(|x| tournament_transfers(&avail, 3, x))
                .collect();
            let mut sent = std::collections::BTreeMap::new();
            let mut received = std::collections::BTreeMap::new();
            for (x, list) in all.iter().enumerate() {
                for t in list {
                    for &(to, n) in &t.sends {
                        *sent.entry((x, to)).or_insert(0) += n;
                    }
                    for &(from, n) in &t.recvs {
                        *received.entry((from, x)).or_insert(0) += n;
                    }
                }
            }
            assert_eq!(sent, received, "{avail:?}");
        }
    }
}
