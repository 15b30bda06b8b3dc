//! The solves on one grid row with few right-hand sides, step by step around the grid columns
//! (ScaLAPACK's `PB_Cptrsm` ring): the rank holding a step's panel solves it.
//!
//! On a `1 × Py` grid every rank holds whole column panels of the factors, and the rank that
//! holds step `t`'s panel (`owner(t)`, grid column `t mod Py`) holds its diagonal block too.
//! [`solve_native`](crate::solve::solve_native)'s general scheme solves every step on the
//! grid column holding the right-hand sides and sends the solved rows to the panel's owner and
//! its products back: a round trip on every step owned elsewhere, every diagonal block copied
//! to the solving column, and one rank doing every solve. Here instead:
//!
//! 1. the rows of `B` go once to the owners of their steps (`scatter_moves`);
//! 2. step `t` (either sweep, in its order): `owner(t)` solves rows `piv` with its diagonal
//!    block, after subtracting the partial sums of those rows — in a sweep reading column
//!    panels the earlier makers (the owners of the sweep's earlier steps) send it theirs
//!    (`sum_moves`); the solved rows stay there;
//! 3. a sweep reading the factor's column panels (`L` of either factorisation going forward,
//!    LU's `U` going back): `owner(t)` multiplies its panel by the solved rows into its
//!    partial sums; a sweep reading row blocks transposed (Cholesky's `Lᴴ` going back, the
//!    transposed LU solves, `Uᴴ` going forward): the solved rows go to every rank holding
//!    columns of the rows still to update (`x_moves`), each of which multiplies its columns of
//!    the row block into its own partial sums (rows of its own later steps, so no partial sum
//!    ever travels);
//! 4. a maker multiplies some rows at once and the rest later: reading column panels, the
//!    next step's rows (whose sums its owner asks for next), the rest at the end of the next
//!    step; transposed, the rows of the steps up to its own next one, the rest at the end of
//!    that step (so that no rest stands between the solved rows it receives and its solve);
//! 5. at the end every solved row goes back to the ranks holding `B` (`scatter_moves` the
//!    other way), and LU's row interchanges are undone as in the general scheme.
//!
//! Per step one message to the solving rank from each earlier maker (one, on `1 × 2`) or one
//! message from it to each maker, against two on the general scheme's path; the solves and the
//! bookkeeping shared by all ranks; no diagonal block moves. [`ring_costs`] replays the same
//! move lists.

use crate::geometry::{Geometry, RowsByGridRow, Tiles};
use crate::solve::{
    diagonal_solve, rhs_cols, undo_interchanges, Deferred, Makers, Schedule, SolveError, Sums,
    Sweep, SweepStep, Triangles,
};
use redblue_comm::{CommStats, Communicator};
use redblue_core::pool::{recycle, try_take_buffer};
use redblue_dist::exchange::{exchange_cols_into, exchange_cols_unwaited, Move, Outbox};
use redblue_kernels::{KernelScalar, MatMut, MatRef, Par};

/// Whether `nrhs` right-hand sides are solved by the ring: one grid row of several columns,
/// the right-hand sides all on one grid column (at most a tile's width of them).
pub(crate) fn applies(g: &Geometry, nrhs: usize) -> bool {
    g.px == 1 && g.py > 1 && (1..=g.v).contains(&nrhs)
}

/// The rank solving step `t`: the holder of its panel on layer 0.
fn owner(g: &Geometry, t: usize) -> usize {
    g.rank(0, t % g.py, 0)
}

/// The rank holding `B` (every right-hand side: [`applies`]).
fn holder(g: &Geometry, nrhs: usize) -> usize {
    let y = (0..g.py)
        .find(|&y| !rhs_cols(g, nrhs, y).is_empty())
        .unwrap_or(0);
    g.rank(0, y, 0)
}

/// Rows `piv` of every step from the holder of `B` to the step's owner (or back, `back`).
fn scatter_moves(g: &Geometry, pivots: &[Vec<usize>], nrhs: usize, back: bool) -> Vec<Move> {
    let (h, cols): (usize, Vec<usize>) = (holder(g, nrhs), (0..nrhs).collect());
    pivots
        .iter()
        .enumerate()
        .filter(|(_, piv)| !piv.is_empty())
        .map(|(t, piv)| {
            let (from, to) = if back {
                (owner(g, t), h)
            } else {
                (h, owner(g, t))
            };
            Move {
                from,
                to,
                rows: piv.clone(),
                cols: cols.clone(),
            }
        })
        .collect()
}

/// Step `t`'s partial sums of its rows `piv` to its owner from the makers of this sweep so far
/// (`made[r]`: rank `r` made products), in rank order.
fn sum_moves(g: &Geometry, t: usize, piv: &[usize], nrhs: usize, made: &[bool]) -> Vec<Move> {
    let o = owner(g, t);
    made.iter()
        .enumerate()
        .filter(|&(r, &m)| m && r != o && !piv.is_empty())
        .map(|(r, _)| Move {
            from: r,
            to: o,
            rows: piv.to_vec(),
            cols: (0..nrhs).collect(),
        })
        .collect()
}

/// Step `t`'s solved rows `piv` from its owner to the `makers` of its transposed products.
fn x_moves(g: &Geometry, t: usize, piv: &[usize], nrhs: usize, makers: &[usize]) -> Vec<Move> {
    let o = owner(g, t);
    makers
        .iter()
        .filter(|&&r| r != o && !piv.is_empty())
        .map(|&r| Move {
            from: o,
            to: r,
            rows: piv.to_vec(),
            cols: (0..nrhs).collect(),
        })
        .collect()
}

/// The moves of `step` (its rows `piv`, the `makers` of its products, `others` the rows they
/// make): the partial sums of the sweep's makers so far to the owner (`made`, updated), or the
/// solved rows from the owner to the makers when it is transposed.
fn step_moves(
    step: &SweepStep<'_>,
    piv: &[usize],
    (makers, others): (&Makers<'_>, &[usize]),
    made: &mut [bool],
) -> Vec<Move> {
    let (g, t, nrhs) = (step.g, step.t, step.nrhs);
    if step.transposed() {
        let ranks: Vec<usize> = makers.iter().map(|m| m.0).collect();
        x_moves(g, t, piv, nrhs, &ranks)
    } else {
        let moves = sum_moves(g, t, piv, nrhs, made);
        made[owner(g, t)] |= !others.is_empty();
        moves
    }
}

/// The move lists of the ring solve in the order it runs them: `B` to the owners, each step's
/// sums or solved rows ([`step_moves`], as [`ring_solve`] makes them step by step), the
/// solution back.
fn ring_moves(
    g: &Geometry,
    triangles: Triangles,
    pivots: &[Vec<usize>],
    nrhs: usize,
) -> Vec<Vec<Move>> {
    let mut lists = vec![scatter_moves(g, pivots, nrhs, false)];
    let mut schedule = Schedule::new(pivots, g.n);
    let steps = schedule.order.clone();
    let mut made = Vec::new();
    for (k, &(sweep, t)) in steps.iter().enumerate() {
        if k == 0 || steps[k - 1].0 != sweep {
            made = vec![false; g.ranks()];
        }
        let others = schedule.others(k);
        let step = SweepStep {
            g,
            triangles,
            sweep,
            t,
            nrhs,
        };
        let split = RowsByGridRow::new(g, others);
        let makers = step.product_makers(&split);
        lists.push(step_moves(&step, &pivots[t], (&makers, others), &mut made));
    }
    lists.push(scatter_moves(g, pivots, nrhs, true));
    lists
}

/// Every rank's counters for [`ring_solve`] (of `p` ranks, elements of `bytes` bytes): the
/// move lists it runs and, for LU, the final permutation.
pub(crate) fn ring_costs(
    g: &Geometry,
    triangles: Triangles,
    p: usize,
    pivots: &[Vec<usize>],
    nrhs: usize,
    bytes: usize,
) -> Vec<CommStats> {
    let lists = ring_moves(g, triangles, pivots, nrhs);
    crate::solve::lists_costs(g, triangles, p, pivots, nrhs, (lists, bytes))
}

/// The ring solve ([`applies`]): `X` for `B` given as this rank's local array `b` of
/// [`rhs_layout`](crate::solve::rhs_layout), returned in the same layout.
///
/// # Collective
/// # Errors
/// A communication or kernel failure.
#[allow(clippy::too_many_arguments)]
pub(crate) fn ring_solve<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &Geometry,
    triangles: Triangles,
    pivots: &[Vec<usize>],
    factors: &Tiles<'_, T>,
    mut b: Tiles<'static, T>,
    nrhs: usize,
    par: Par,
) -> Result<Tiles<'static, T>, SolveError> {
    let (n, me) = (g.n, comm.rank());
    let on_layer_0 = g.coords(me).is_some_and(|(_, _, z)| z == 0);
    let mut ring = Ring {
        n,
        nrhs,
        me: on_layer_0.then_some(me),
        bx: vec![T::zero(); if on_layer_0 { n * nrhs } else { 0 }],
        partial: Vec::new(),
        sums: Sums::ByColumns,
        piv_pos: vec![usize::MAX; n],
    };
    // 1. The rows of `B` to their steps' owners.
    exchange_cols_into(
        comm,
        &scatter_moves(g, pivots, nrhs, false),
        |j, rows, out| b.gather_rows(j, rows, out),
        |j, rows, vals| put_rows(&mut ring.bx[j * n..], rows, vals),
    )?;
    let mut room = try_take_buffer(2 * n * nrhs * g.py, T::zero()).unwrap_or_default();
    let mut outbox = Outbox::new(&mut room);
    let mut schedule = Schedule::new(pivots, n);
    let steps = schedule.order.clone();
    // Products made later, with the step at whose end they are made: the rest of a step that
    // reads column panels after the next step (whose owner needs this rank's sums of its rows
    // first), of a transposed one after this rank's own next step (the rows it needs before
    // are made at once, and the others' sums do not wait for it).
    let mut pending: Vec<(usize, SweepStep<'_>, Deferred<T>)> = Vec::new();
    let mut made = Vec::new();
    for (k, &(sweep, t)) in steps.iter().enumerate() {
        let others = schedule.others(k);
        let step = SweepStep {
            g,
            triangles,
            sweep,
            t,
            nrhs,
        };
        if k == 0 || steps[k - 1].0 != sweep {
            made = vec![false; g.ranks()];
            // (A transposed sweep's sums, by rows, stay on their maker.)
            (ring.partial, ring.sums) = (vec![T::zero(); ring.bx.len()], Sums::of(&step));
        }
        let piv = &pivots[t];
        let split = RowsByGridRow::new(g, others);
        let makers = step.product_makers(&split);
        let moves = &step_moves(&step, piv, (&makers, others), &mut made);
        // 2. and 3.
        let xs = ring.solve_step(comm, &step, (factors, piv), moves, &mut outbox, par)?;
        let rows = makers
            .iter()
            .find(|m| Some(m.0) == ring.me)
            .map(|m| &m.1[..]);
        let x = match step.transposed() {
            true => ring.share_solved(comm, piv, rows.is_some(), xs, moves, &mut outbox)?,
            false => xs,
        };
        // 4. This step's products: the rows wanted soon now, the rest at the end of a later
        // step.
        let until = |u: usize| Some(owner(g, u)) == ring.me || !step.transposed();
        let soon = soon_rows(g.n, pivots, &steps[k + 1..], sweep, until);
        let later = match rows {
            Some(rows) => ring.products(&step, factors, (rows, soon.as_ref()), x, par)?,
            None => None,
        };
        for (_, s, d) in pending.extract_if(.., |(due, ..)| *due == k) {
            s.products_into(factors, (&mut ring.partial, ring.sums), &d.rows, &d.x, par)?;
        }
        if let (Some(d), Some((_, upto))) = (later, soon) {
            pending.push((k + 1 + upto, step, d));
        }
    }
    debug_assert!(pending.is_empty(), "every rest is due within its sweep");
    outbox.finish()?;
    recycle(room);
    // 5. The solution back to the holder of `B`.
    exchange_cols_into(
        comm,
        &scatter_moves(g, pivots, nrhs, true),
        |j, rows, out| {
            for (o, &r) in out.iter_mut().zip(rows) {
                *o = ring.bx[r + j * n];
            }
        },
        |j, rows, vals| b.set_held_rows(j, rows, vals),
    )?;
    match triangles {
        Triangles::Lu => Ok(undo_interchanges(comm, g, &schedule.flat, b, nrhs)?),
        _ => Ok(b),
    }
}

/// One rank's state in a ring solve.
struct Ring<T> {
    n: usize,
    nrhs: usize,
    /// This rank, if it is on layer 0 (the others only take part in the exchanges).
    me: Option<usize>,
    /// The rows of `B` of the steps this rank solves, then their solutions (`N × nrhs`,
    /// column-major, by rows' indices).
    bx: Vec<T>,
    /// This rank's partial sums of the sweep (`N × nrhs`, stored as `sums` says).
    partial: Vec<T>,
    sums: Sums,
    /// Where each row of the current step's `piv` is in it.
    piv_pos: Vec<usize>,
}

impl<T: KernelScalar> Ring<T> {
    /// Steps 2 and 3 of `step` (rows `piv`): the makers' partial sums of `piv` to its owner
    /// (`moves`, a sweep reading column panels), subtracted there with the owner's own from its
    /// rows of `B`, and the owner's solve with its diagonal block. The solved rows on the
    /// owner (`piv.len() × nrhs`), nothing elsewhere.
    ///
    /// # Collective
    fn solve_step<'a, C: Communicator>(
        &mut self,
        comm: &'a C,
        step: &SweepStep<'_>,
        (factors, piv): (&Tiles<'_, T>, &[usize]),
        moves: &[Move],
        outbox: &mut Outbox<'a, T, C>,
        par: Par,
    ) -> Result<Vec<T>, SolveError> {
        let (n, nrhs, w) = (self.n, self.nrhs, piv.len());
        let mine = self.me == Some(owner(step.g, step.t));
        for (i, &r) in piv.iter().enumerate() {
            self.piv_pos[r] = i;
        }
        let mut xs = vec![T::zero(); if mine { w * nrhs } else { 0 }];
        if mine {
            for j in 0..nrhs {
                for (i, &r) in piv.iter().enumerate() {
                    xs[i + j * w] = self.bx[r + j * n] - self.partial[self.sums.at(r, j, n, nrhs)];
                }
            }
        }
        if !step.transposed() {
            // (Stored by columns: `Sums::ByColumns`.)
            let partial = &self.partial;
            let read = |j: usize, rows: &[usize], out: &mut [T]| {
                for (o, &r) in out.iter_mut().zip(rows) {
                    *o = partial[r + j * n];
                }
            };
            let at = &self.piv_pos;
            exchange_cols_unwaited(comm, moves, read, outbox)?
                .apply(|r, j, v: T| xs[at[r] + j * w] -= v);
        }
        if mine && w > 0 {
            let cols: Vec<usize> = step.g.panel(step.t).collect();
            let block = diagonal_block(factors, piv, &cols)?;
            let view = MatMut::from_slice(&mut xs, w, nrhs, w)?;
            diagonal_solve(step.triangles, step.sweep, block.view()?, view, par)?;
            for j in 0..nrhs {
                for (i, &r) in piv.iter().enumerate() {
                    self.bx[r + j * n] = xs[i + j * w];
                }
            }
        }
        Ok(xs)
    }

    /// A transposed sweep's solved rows `xs` (rows `piv`, on the owner) to the makers of its
    /// products (`moves`); the solved rows on the owner and on every maker (`maker`: this
    /// rank is one), nothing elsewhere.
    ///
    /// # Collective
    fn share_solved<'a, C: Communicator>(
        &self,
        comm: &'a C,
        piv: &[usize],
        maker: bool,
        xs: Vec<T>,
        moves: &[Move],
        outbox: &mut Outbox<'a, T, C>,
    ) -> Result<Vec<T>, SolveError> {
        let w = piv.len();
        let mut x = if xs.is_empty() && maker {
            vec![T::zero(); w * self.nrhs]
        } else {
            xs.clone()
        };
        let at = &self.piv_pos;
        let read = |j: usize, rows: &[usize], out: &mut [T]| {
            for (o, &r) in out.iter_mut().zip(rows) {
                *o = xs[at[r] + j * w];
            }
        };
        exchange_cols_unwaited(comm, moves, read, outbox)?.apply(|r, j, v| x[at[r] + j * w] = v);
        Ok(x)
    }

    /// Step 4 on a maker of `step`'s products (its `rows`): those `soon` wants (all, with
    /// `None`) into the partial sums now; the others returned, to be made later.
    fn products(
        &mut self,
        step: &SweepStep<'_>,
        factors: &Tiles<'_, T>,
        (rows, soon): (&[usize], Option<&(Vec<bool>, usize)>),
        x: Vec<T>,
        par: Par,
    ) -> Result<Option<Deferred<T>>, SolveError> {
        let (now, rest): (Vec<usize>, Vec<usize>) =
            rows.iter().partition(|&&i| soon.is_none_or(|s| s.0[i]));
        step.products_into(factors, (&mut self.partial, self.sums), &now, &x, par)?;
        Ok((!rest.is_empty()).then_some(Deferred { rows: rest, x }))
    }
}

/// The rows a maker makes at once at a step whose later steps in the sweep are `later` (the
/// schedule's order): those of the steps up to and including the first that `until` accepts,
/// as a mask of the `n` rows, with that step's place in `later`; `None` (every row at once)
/// when it accepts none.
fn soon_rows(
    n: usize,
    pivots: &[Vec<usize>],
    later: &[(Sweep, usize)],
    sweep: Sweep,
    until: impl Fn(usize) -> bool,
) -> Option<(Vec<bool>, usize)> {
    let later = later.iter().take_while(|&&(s, _)| s == sweep);
    let upto = later.clone().position(|&(_, u)| until(u))?;
    let mut soon = vec![false; n];
    for &(_, u) in later.take(upto + 1) {
        for &r in &pivots[u] {
            soon[r] = true;
        }
    }
    Some((soon, upto))
}

/// `vals` into `column` at `rows`.
fn put_rows<T: Copy>(column: &mut [T], rows: &[usize], vals: &[T]) {
    for (&r, &v) in rows.iter().zip(vals) {
        column[r] = v;
    }
}

/// A step's diagonal block (`rows × cols` of the owner's tiles): a view when it lies in one
/// block of them, a copy otherwise.
fn diagonal_block<'t, T: KernelScalar>(
    factors: &'t Tiles<'_, T>,
    rows: &[usize],
    cols: &[usize],
) -> Result<Block<'t, T>, SolveError> {
    if let Some(view) = crate::solve::block_in_tiles(factors, rows, cols)? {
        return Ok(Block::View(view));
    }
    let w = rows.len();
    let mut copy = vec![T::zero(); w * cols.len()];
    for (c, &j) in cols.iter().enumerate() {
        factors.gather_rows(j, rows, &mut copy[c * w..(c + 1) * w]);
    }
    Ok(Block::Copy(copy, w, cols.len()))
}

/// [`diagonal_block`]'s answer.
enum Block<'t, T> {
    View(MatRef<'t, T>),
    Copy(Vec<T>, usize, usize),
}

impl<T: KernelScalar> Block<'_, T> {
    fn view(&self) -> Result<MatRef<'_, T>, redblue_kernels::KernelError> {
        match self {
            Block::View(v) => Ok(*v),
            Block::Copy(data, r, c) => MatRef::from_slice(data, *r, *c, (*r).max(1)),
        }
    }
}
