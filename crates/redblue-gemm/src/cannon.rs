//! Cannon's algorithm (the 2D baseline on square grids): on a `q × q` grid, rank `(i, j)`
//! starts with the skewed blocks `op(A)[i, (i+j) mod q]` and `op(B)[(i+j) mod q, j]`, then `q`
//! times multiplies them into its `C` block and shifts `A` one rank left and `B` one rank up.
//!
//! Blocks are the near-equal parts of [`part`]: rows `i` of `m`, inner `l` of `k`, columns `j`
//! of `n`. The initial skew is read from any layout (one gather each for `A` and `B`, which
//! moves nothing for blocks already in place); in the native layouts ([`cannon_layouts`]:
//! block `(i, l)` of `op(A)` on rank `(i, l)`, and likewise for `B` and `C`) the words moved
//! are exactly [`cannon_rank_cost`]'s.

use crate::cosma::{c_in_place, check_inputs, gathered_view, layout_from_pieces, Piece};
use crate::exchange::{gather_blocks, reduce_blocks, Rect, TAG_A, TAG_B};
use crate::memory::agree_on_working_memory;
use crate::model::RankCost;
use crate::plan::{part, GemmShape};
use crate::GemmError;
use redblue_comm::Communicator;
use redblue_core::Op;
use redblue_dist::{DistError, DistMatrix, DistMatrixMut, GridLayout};
use redblue_kernels::{gemm as local_gemm, KernelScalar, MatMut, MatRef, Par};
use std::ops::Range;

/// The side `q` of Cannon's grid on `p` ranks: the largest `q` with `q² ≤ p`.
pub fn cannon_grid(p: usize) -> usize {
    p.isqrt().max(1)
}

/// Block `t` of `len` cut into `q` parts.
fn blk(len: usize, q: usize, t: usize) -> Range<usize> {
    part(0..len, q, t)
}

/// Cannon's native layouts of `A`, `B` and `C` as stored (transposed for a transposing op) on
/// `nranks ≥ q²` ranks, `q` = [`cannon_grid`]`(nranks)`.
///
/// # Errors
/// [`DistError::InvalidLayout`] for `nranks = 0`.
pub fn cannon_layouts(
    shape: GemmShape,
    ops: (Op, Op),
    nranks: usize,
) -> Result<[GridLayout; 3], DistError> {
    if nranks == 0 {
        return Err(DistError::InvalidLayout("no ranks".into()));
    }
    cannon_layouts_on(shape, ops, cannon_grid(nranks), nranks)
}

/// [`cannon_layouts`] for a `q × q` grid on `nranks ≥ q²` ranks.
pub(crate) fn cannon_layouts_on(
    shape: GemmShape,
    (op_a, op_b): (Op, Op),
    q: usize,
    nranks: usize,
) -> Result<[GridLayout; 3], DistError> {
    if q == 0 || q.saturating_mul(q) > nranks {
        return Err(DistError::InvalidLayout(format!(
            "a {q}×{q} Cannon grid on {nranks} ranks"
        )));
    }
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let mut pa: Vec<Piece> = Vec::new();
    let mut pb: Vec<Piece> = Vec::new();
    let mut pc: Vec<Piece> = Vec::new();
    for i in 0..q {
        for j in 0..q {
            let r = i * q + j;
            let (a, b) = ((blk(m, q, i), blk(k, q, j)), (blk(k, q, i), blk(n, q, j)));
            pa.push(if op_a == Op::NoTrans {
                (a.0, a.1, r)
            } else {
                (a.1, a.0, r)
            });
            pb.push(if op_b == Op::NoTrans {
                (b.0, b.1, r)
            } else {
                (b.1, b.0, r)
            });
            pc.push((blk(m, q, i), blk(n, q, j), r));
        }
    }
    Ok([
        layout_from_pieces(op_a.apply_shape((m, k)), &pa, nranks)?,
        layout_from_pieces(op_b.apply_shape((k, n)), &pb, nranks)?,
        layout_from_pieces((m, n), &pc, nranks)?,
    ])
}

/// What `rank` moves and holds running Cannon on `p` ranks in the native layouts: the shifts'
/// own moves (runs past [`AGREE_FROM_WORDS`](crate::memory::AGREE_FROM_WORDS) add the memory
/// agreement, which [`Schedule::rank_cost`](crate::Schedule::rank_cost) counts).
pub fn cannon_rank_cost(shape: GemmShape, p: usize, rank: usize) -> RankCost {
    cannon_rank_cost_on(shape, cannon_grid(p), rank)
}

/// [`cannon_rank_cost`] on a `q × q` grid (`q ≥ 1`).
pub(crate) fn cannon_rank_cost_on(shape: GemmShape, q: usize, rank: usize) -> RankCost {
    let mut cost = RankCost::default();
    if rank >= q * q {
        return cost;
    }
    let (i, j) = (rank / q, rank % q);
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let (rows, cols) = (blk(m, q, i).len() as u64, blk(n, q, j).len() as u64);
    let inner = |l: usize| blk(k, q, l % q).len() as u64;
    let own = rows * inner(j) + inner(i) * cols + rows * cols;
    if m == 0 || n == 0 || k == 0 {
        // C = beta·C on each owner (or nothing): nothing moves, no buffers.
        cost.memory_words = own;
        return cost;
    }
    // The skew: A block (i, (i+j) mod q) comes from rank (i, (i+j) mod q) unless i = 0; my own
    // block (i, j) goes to rank (i, (j − i) mod q). Likewise B with the roles of i and j. Only
    // non-empty pieces are sent.
    if i != 0 {
        let (get, give) = (rows * inner(i + j), rows * inner(j));
        cost.words_received += get;
        cost.words_sent += give;
        cost.messages_received += u64::from(get > 0);
        cost.messages_sent += u64::from(give > 0);
    }
    if j != 0 {
        let (get, give) = (inner(i + j) * cols, inner(i) * cols);
        cost.words_received += get;
        cost.words_sent += give;
        cost.messages_received += u64::from(get > 0);
        cost.messages_sent += u64::from(give > 0);
    }
    // q − 1 shifts: send the current block, receive the next; one message each way per shift
    // and matrix, even when empty (point-to-point).
    for t in 0..q - 1 {
        cost.words_sent += rows * inner(i + j + t) + inner(i + j + t) * cols;
        cost.words_received += rows * inner(i + j + t + 1) + inner(i + j + t + 1) * cols;
        cost.messages_sent += 2;
        cost.messages_received += 2;
    }
    cost.working_words = cannon_working_words(shape, q, rows, cols);
    cost.memory_words = own + cost.working_words;
    cost
}

/// The shifted blocks a rank with `rows × cols` of `C` holds at once: the current and the next
/// block of `A` and of `B`, the widest inner part.
fn cannon_working_words(shape: GemmShape, q: usize, rows: u64, cols: u64) -> u64 {
    let max_inner = (0..q).map(|l| blk(shape.k, q, l).len()).max().unwrap_or(0) as u64;
    2 * (rows + cols) * max_inner
}

/// The largest [`RankCost::working_words`] of any rank of a `q × q` Cannon run.
pub(crate) fn cannon_busiest_working_words(shape: GemmShape, q: usize) -> u64 {
    if shape.m == 0 || shape.n == 0 || shape.k == 0 {
        return 0;
    }
    let widest = |len: usize| (0..q).map(|t| blk(len, q, t).len()).max().unwrap_or(0) as u64;
    cannon_working_words(shape, q, widest(shape.m), widest(shape.n))
}

/// `C = alpha·op(A)·op(B) + beta·C` by Cannon's algorithm on the largest `q × q` grid that
/// fits in `comm` (other ranks take part in the initial gathers and the final reduction only).
///
/// # Collective
/// # Errors
/// As [`cosma`](crate::cosma): inner dimensions, `C`'s shape, a layout larger than `comm`,
/// buffers some rank cannot have, communication failures.
///
/// # Examples
/// ```
/// use redblue_comm::{run_ranks, Communicator};
/// use redblue_core::Op;
/// use redblue_dist::OwnedDistMatrix;
/// use redblue_gemm::{cannon, cannon_layouts, cannon_rank_cost, GemmShape};
/// use redblue_kernels::Par;
///
/// // 5 ranks: a 2 × 2 grid shifts, the fifth rank idles. In the native layouts every rank
/// // moves what the model says.
/// let shape = GemmShape::new(24, 18, 30);
/// let stats = run_ranks(5, |comm| {
///     let [la, lb, lc] = cannon_layouts(shape, (Op::NoTrans, Op::NoTrans), 5).unwrap();
///     let a = OwnedDistMatrix::<f64, _>::random(&comm, la, 1).unwrap();
///     let b = OwnedDistMatrix::<f64, _>::random(&comm, lb, 2).unwrap();
///     let mut c = OwnedDistMatrix::zeros(&comm, lc).unwrap();
///     comm.reset_stats();
///     cannon(&comm, 1.0, &a, Op::NoTrans, &b, Op::NoTrans, 0.0, &mut c, Par::Seq).unwrap();
///     comm.stats().words_sent
/// });
/// for (r, words) in stats.iter().enumerate() {
///     assert_eq!(*words, cannon_rank_cost(shape, 5, r).words_sent);
/// }
/// ```
#[allow(clippy::too_many_arguments)]
pub fn cannon<T, C, A, B, M>(
    comm: &C,
    alpha: T,
    a: &A,
    op_a: Op,
    b: &B,
    op_b: Op,
    beta: T,
    c: &mut M,
    par: Par,
) -> Result<(), GemmError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrix<T> + ?Sized,
    M: DistMatrixMut<T> + ?Sized,
{
    cannon_on(
        comm,
        cannon_grid(comm.size()),
        alpha,
        a,
        op_a,
        b,
        op_b,
        beta,
        c,
        par,
    )
}

/// [`cannon`] on a `q × q` grid, `1 ≤ q` and `q² ≤ comm.size()` (the caller checks).
#[allow(clippy::too_many_arguments)]
pub(crate) fn cannon_on<T, C, A, B, M>(
    comm: &C,
    q: usize,
    alpha: T,
    a: &A,
    op_a: Op,
    b: &B,
    op_b: Op,
    beta: T,
    c: &mut M,
    par: Par,
) -> Result<(), GemmError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrix<T> + ?Sized,
    M: DistMatrixMut<T> + ?Sized,
{
    let shape = check_inputs(comm.size(), a, op_a, b, op_b, &*c)?;
    if shape.m == 0 || shape.n == 0 {
        return Ok(());
    }
    let (m, n) = (shape.m, shape.n);
    if shape.k == 0 || alpha == T::zero() {
        crate::cosma::scale(c.local_mut(), beta);
        return Ok(());
    }
    let (me, p) = (comm.rank(), comm.size());
    let coords = |r: usize| (r < q * q).then(|| (r / q, r % q));
    let mine = coords(me).map_or(0, |(i, j)| {
        let (rows, cols) = (blk(m, q, i).len() as u64, blk(n, q, j).len() as u64);
        cannon_working_words(shape, q, rows, cols)
    });
    agree_on_working_memory::<T, C>(comm, cannon_busiest_working_words(shape, q), mine)?;
    let skewed = skew(comm, q, shape, (a, op_a), (b, op_b))?;
    let empty = || (0..0, 0..0);
    let rects: Vec<Rect> = (0..p)
        .map(|r| coords(r).map_or_else(empty, |(i, j)| (blk(m, q, i), blk(n, q, j))))
        .collect();
    let layout = c.layout().clone();
    let in_place = c_in_place(&layout, &rects, me);
    let mut partial = Vec::new();
    if let Some(blocks) = skewed {
        let target = match in_place {
            Some((offset, ld)) => Target::InPlace {
                c: &mut c.local_mut()[offset..],
                ld,
                alpha,
                beta,
            },
            None => {
                partial = vec![T::zero(); blocks.rows * blocks.cols];
                Target::Partial(&mut partial)
            }
        };
        blocks.multiply_and_shift(comm, target, par)?;
    }
    let reduced: Vec<Rect> = (0..p)
        .map(|r| match c_in_place(&layout, &rects, r) {
            Some(_) => empty(),
            None => rects[r].clone(),
        })
        .collect();
    reduce_blocks(
        comm,
        &layout,
        c.local_mut(),
        &reduced,
        &partial,
        alpha,
        beta,
    )?;
    Ok(())
}

/// The initial skew: rank `(i, j)` of the `q × q` grid gathers `op(A)[i, (i+j) mod q]` and
/// `op(B)[(i+j) mod q, j]` from wherever they are (one gather each, in which every rank takes
/// part); `None` off the grid.
///
/// # Collective
fn skew<T, C, A, B>(
    comm: &C,
    q: usize,
    shape: GemmShape,
    (a, op_a): (&A, Op),
    (b, op_b): (&B, Op),
) -> Result<Option<Shifting<T>>, GemmError>
where
    T: KernelScalar,
    C: Communicator,
    A: DistMatrix<T> + ?Sized,
    B: DistMatrix<T> + ?Sized,
{
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let coords = |r: usize| (r < q * q).then(|| (r / q, r % q));
    let empty = || (0..0, 0..0);
    let a_needs: Vec<Rect> = (0..comm.size())
        .map(|r| coords(r).map_or_else(empty, |(i, j)| (blk(m, q, i), blk(k, q, (i + j) % q))))
        .collect();
    let b_needs: Vec<Rect> = (0..comm.size())
        .map(|r| coords(r).map_or_else(empty, |(i, j)| (blk(k, q, (i + j) % q), blk(n, q, j))))
        .collect();
    let (mut a_buf, mut b_buf) = (Vec::new(), Vec::new());
    let (a_local, b_local) = (a.local(), b.local());
    let ga = gather_blocks(comm, a.layout(), a_local, op_a, &a_needs, &mut a_buf, TAG_A)?;
    let gb = gather_blocks(comm, b.layout(), b_local, op_b, &b_needs, &mut b_buf, TAG_B)?;
    let Some((i, j)) = coords(comm.rank()) else {
        return Ok(None);
    };
    let l0 = (i + j) % q;
    let (rows, cols, inner) = (blk(m, q, i).len(), blk(n, q, j).len(), blk(k, q, l0).len());
    // The current blocks, owned (they travel).
    let owned = |g, local: &[T], buf: &[T], r: usize, c: usize| -> Result<Vec<T>, GemmError> {
        let v = gathered_view(g, local, buf, r, c)?;
        Ok((0..c).flat_map(|col| v.col(col).to_vec()).collect())
    };
    Ok(Some(Shifting {
        q,
        at: (i, j),
        k,
        rows,
        cols,
        a: owned(ga, a_local, &a_buf, rows, inner)?,
        b: owned(gb, b_local, &b_buf, inner, cols)?,
    }))
}

/// Where a rank's products go: into its block of `C` in place (alpha and beta applied), or
/// into a partial block summed into `C` afterwards.
enum Target<'c, T> {
    InPlace {
        c: &'c mut [T],
        ld: usize,
        alpha: T,
        beta: T,
    },
    Partial(&'c mut Vec<T>),
}

/// The blocks of `op(A)` and `op(B)` that rank `at = (i, j)` of the `q × q` grid holds after
/// the skew, which it multiplies and passes on `q` times.
struct Shifting<T> {
    q: usize,
    at: (usize, usize),
    k: usize,
    rows: usize,
    cols: usize,
    a: Vec<T>,
    b: Vec<T>,
}

impl<T: KernelScalar> Shifting<T> {
    /// `q` rounds: multiply the current blocks into `target`, then (but after the last) send
    /// `A`'s block left and `B`'s up and receive the next ones from the right and from below.
    ///
    /// # Collective
    /// With the other ranks of the grid.
    fn multiply_and_shift<C: Communicator>(
        mut self,
        comm: &C,
        mut target: Target<'_, T>,
        par: Par,
    ) -> Result<(), GemmError> {
        let (q, (i, j), k, rows, cols) = (self.q, self.at, self.k, self.rows, self.cols);
        let l0 = (i + j) % q;
        let (left, right) = (i * q + (j + q - 1) % q, i * q + (j + 1) % q);
        let (up, down) = (((i + q - 1) % q) * q + j, ((i + 1) % q) * q + j);
        for t in 0..q {
            let inner = blk(k, q, (l0 + t) % q).len();
            let lhs = MatRef::from_slice(&self.a, rows, inner, rows.max(1))?;
            let rhs = MatRef::from_slice(&self.b, inner, cols, inner.max(1))?;
            match &mut target {
                Target::InPlace { c, ld, alpha, beta } => {
                    let beta = if t == 0 { *beta } else { T::one() };
                    let dst = MatMut::from_slice(c, rows, cols, *ld)?;
                    local_gemm(*alpha, lhs, Op::NoTrans, rhs, Op::NoTrans, beta, dst, par)?;
                }
                Target::Partial(partial) => {
                    let dst = MatMut::from_slice(partial, rows, cols, rows.max(1))?;
                    let beta = if t == 0 { T::zero() } else { T::one() };
                    local_gemm(T::one(), lhs, Op::NoTrans, rhs, Op::NoTrans, beta, dst, par)?;
                }
            }
            if t + 1 < q {
                let next = blk(k, q, (l0 + t + 1) % q).len();
                let mut a_next = vec![T::zero(); rows * next];
                comm.sendrecv(&self.a, left, &mut a_next, right, 0)?;
                let mut b_next = vec![T::zero(); next * cols];
                comm.sendrecv(&self.b, up, &mut b_next, down, 1)?;
                (self.a, self.b) = (a_next, b_next);
            }
        }
        Ok(())
    }
}
