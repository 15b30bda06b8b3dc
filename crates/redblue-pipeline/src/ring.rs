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
//! 2. step `t` (either sweep, in its order): the ranks that made products for rows `piv` (the
//!    owners of the sweep's earlier steps) send their partial sums of those rows to
//!    `owner(t)` (`sum_moves`), which subtracts them and solves with its diagonal block; the
//!    solved rows stay there;
//! 3. a sweep reading the factor's column panels (`L` of either factorisation going forward,
//!    LU's `U` going back): `owner(t)` multiplies its panel by the solved rows into its
//!    partial sums; a sweep reading row blocks transposed (Cholesky's `Lᴴ` going back, the
//!    transposed LU solves, `Uᴴ` going forward): the solved rows go to every rank holding
//!    columns of the rows still to update (`x_moves`), each of which multiplies its columns of
//!    the row block into its own partial sums (rows of its own later steps, so no partial sum
//!    ever travels);
//! 4. the rows the next step solves are multiplied first and their sums sent at once, the rest
//!    once the next step's sends are on their way;
//! 5. at the end every solved row goes back to the ranks holding `B` (`gather_moves`), and
//!    LU's row interchanges are undone as in the general scheme.
//!
//! Per step one message to the solving rank from each earlier maker (one, on `1 × 2`) or one
//! message from it to each maker, against two on the general scheme's path; the solves and the
//! bookkeeping shared by all ranks; no diagonal block moves. [`ring_costs`] replays the same
//! move lists.

use crate::geometry::{Geometry, Tiles};
use crate::solve::{
    diagonal_solve, rhs_cols, undo_interchanges, Deferred, Schedule, SolveError, SweepStep,
    Triangles,
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

/// The move lists of the ring solve in the order it runs them: `B` to the owners, each step's
/// sums or solved rows, the solution back.
fn ring_moves(
    g: &Geometry,
    triangles: Triangles,
    pivots: &[Vec<usize>],
    nrhs: usize,
) -> Vec<Vec<Move>> {
    let mut lists = vec![scatter_moves(g, pivots, nrhs, false)];
    let mut schedule = Schedule::new(pivots, g.n);
    let (mut made, mut current) = (vec![false; g.ranks()], None);
    for (k, (sweep, t)) in schedule.order.clone().into_iter().enumerate() {
        let others = schedule.others(k).to_vec();
        if current != Some(sweep) {
            (made, current) = (vec![false; g.ranks()], Some(sweep));
        }
        let step = SweepStep {
            g,
            triangles,
            sweep,
            t,
            nrhs,
        };
        let piv = &pivots[t];
        if step.transposed() {
            let makers: Vec<usize> = step.product_makers(&others).iter().map(|m| m.0).collect();
            lists.push(x_moves(g, t, piv, nrhs, &makers));
        } else {
            lists.push(sum_moves(g, t, piv, nrhs, &made));
            made[owner(g, t)] |= !others.is_empty();
        }
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
    let mut lists = ring_moves(g, triangles, pivots, nrhs);
    if triangles == Triangles::Lu {
        let perm: Vec<usize> = pivots.iter().flatten().copied().collect();
        lists.push(crate::solve::permute_moves(g, &perm, |y| {
            rhs_cols(g, nrhs, y)
        }));
    }
    let mut stats = vec![CommStats::default(); p];
    for list in &lists {
        for (r, tr) in Move::transfers(list, p).iter().enumerate() {
            stats[r] = stats[r] + tr.stats(r, bytes);
        }
    }
    stats
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
    // This rank's rows of `B` (its steps' rows: those it solves), `N × nrhs` by rows' indices.
    let mut bx = vec![T::zero(); if on_layer_0 { n * nrhs } else { 0 }];
    let lists = ring_moves(g, triangles, pivots, nrhs);
    let (first, last) = (&lists[0], &lists[lists.len() - 1]);
    exchange_cols_into(
        comm,
        first,
        |j, rows, out| b.gather_rows(j, rows, out),
        |j, rows, vals| put_rows(&mut bx[j * n..], rows, vals),
    )?;
    let mut room = try_take_buffer(2 * n * nrhs * g.py, T::zero()).unwrap_or_default();
    let mut outbox = Outbox::new(&mut room);
    let mut partial = Vec::new();
    let mut schedule = Schedule::new(pivots, n);
    let steps = schedule.order.clone();
    let mut deferred: Option<(SweepStep<'_>, Deferred<T>)> = None;
    let mut piv_pos = vec![usize::MAX; n];
    for (k, &(sweep, t)) in steps.iter().enumerate() {
        let others = schedule.others(k);
        let piv = &pivots[t];
        let w = piv.len();
        if k == 0 || steps[k - 1].0 != sweep {
            partial = vec![T::zero(); if on_layer_0 { n * nrhs } else { 0 }];
        }
        let step = SweepStep {
            g,
            triangles,
            sweep,
            t,
            nrhs,
        };
        let moves = &lists[k + 1];
        let mine = me == owner(g, t) && on_layer_0;
        for (i, &r) in piv.iter().enumerate() {
            piv_pos[r] = i;
        }
        // 2. The partial sums of rows `piv` to their solver (column panels), subtracted with
        // its own from its rows of `B`, and the solve.
        let mut xs = vec![T::zero(); if mine { w * nrhs } else { 0 }];
        if mine {
            for j in 0..nrhs {
                for (i, &r) in piv.iter().enumerate() {
                    xs[i + j * w] = bx[r + j * n] - partial[r + j * n];
                }
            }
        }
        if !step.transposed() {
            let read = |j: usize, rows: &[usize], out: &mut [T]| {
                for (o, &r) in out.iter_mut().zip(rows) {
                    *o = partial[r + j * n];
                }
            };
            exchange_cols_unwaited(comm, moves, read, &mut outbox)?.apply(|r, j, v: T| {
                xs[piv_pos[r] + j * w] -= v;
            });
        }
        if mine && w > 0 {
            let block = diagonal_block(factors, piv, &g.panel(t).collect::<Vec<_>>())?;
            let view = MatMut::from_slice(&mut xs, w, nrhs, w)?;
            diagonal_solve(triangles, sweep, block.view()?, view, par)?;
            for j in 0..nrhs {
                for (i, &r) in piv.iter().enumerate() {
                    bx[r + j * n] = xs[i + j * w];
                }
            }
        }
        // 3. The solved rows to the makers of transposed products.
        let makers = step.product_makers(others);
        let maker = makers.iter().find(|m| m.0 == me && on_layer_0);
        let x = if step.transposed() {
            let mut x_all = vec![T::zero(); if maker.is_some() || mine { w * nrhs } else { 0 }];
            if mine {
                x_all.copy_from_slice(&xs);
            }
            let read = |j: usize, rows: &[usize], out: &mut [T]| {
                for (o, &r) in out.iter_mut().zip(rows) {
                    *o = xs[piv_pos[r] + j * w];
                }
            };
            exchange_cols_unwaited(comm, moves, read, &mut outbox)?
                .apply(|r, j, v| x_all[piv_pos[r] + j * w] = v);
            x_all
        } else {
            xs
        };
        // 4. This step's products: the next step's rows now, the rest after the previous
        // step's rest.
        let next: &[usize] = match steps.get(k + 1) {
            Some(&(s, u)) if s == sweep => &pivots[u],
            _ => &[],
        };
        let mut later = None;
        if let Some((_, rows)) = maker {
            let mut wanted = vec![next.is_empty(); n];
            for &i in next {
                wanted[i] = true;
            }
            let (now, rest): (Vec<usize>, Vec<usize>) = rows.iter().partition(|&&i| wanted[i]);
            step.products_into(factors, &mut partial, &now, &x, par)?;
            later = (!rest.is_empty()).then_some(Deferred { rows: rest, x });
        }
        if let Some((s, d)) = deferred.take() {
            s.products_into(factors, &mut partial, &d.rows, &d.x, par)?;
        }
        deferred = later.map(|d| (step, d));
    }
    if let Some((s, d)) = deferred.take() {
        s.products_into(factors, &mut partial, &d.rows, &d.x, par)?;
    }
    outbox.finish()?;
    recycle(room);
    // 5. The solution back to the holder of `B`.
    exchange_cols_into(
        comm,
        last,
        |j, rows, out| {
            for (o, &r) in out.iter_mut().zip(rows) {
                *o = bx[r + j * n];
            }
        },
        |j, rows, vals| b.set_held_rows(j, rows, vals),
    )?;
    match triangles {
        Triangles::Lu => Ok(undo_interchanges(comm, g, &schedule.flat, b, nrhs)?),
        _ => Ok(b),
    }
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
