//! Checks of distributed matrices and `transform` on any communicator: round trips for all four
//! scalars and ops N / T / C between block-cyclic (with non-zero sources and both grid orders),
//! grid and on-one-rank layouts, empty matrices, more ranks than blocks, exact counters, and bad
//! input.

use redblue_comm::Communicator;
use redblue_core::{c32, c64, Op, Scalar};
use redblue_dist::{
    transform, transform_volume, AnyLayout, BlockCyclic, DistError, DistMatrix, GridLayout,
    GridOrder, OnRank, OwnedDistMatrix, TransformPlan,
};

/// The test matrix `A(i, j)`: distinct values with both parts exact in f32.
pub fn f_a<T: Scalar>(i: usize, j: usize) -> T {
    T::from_f64_parts((i + 1000 * j) as f64 + 0.5, i as f64 - 2.0 * j as f64)
}

fn f_b<T: Scalar>(i: usize, j: usize) -> T {
    T::from_f64_parts(3.0 * i as f64 - j as f64, (i * j) as f64 + 0.25)
}

/// `op(A)(i, j)` for the test matrix.
pub fn op_f_a<T: Scalar>(op: Op, i: usize, j: usize) -> T {
    match op {
        Op::NoTrans => f_a(i, j),
        Op::Trans => f_a(j, i),
        Op::ConjTrans => f_a::<T>(j, i).conj(),
    }
}

/// Process grids `(rows, cols)` whose product is `p`.
pub fn grids(p: usize) -> Vec<(usize, usize)> {
    (1..=p)
        .filter(|r| p.is_multiple_of(*r))
        .map(|r| (r, p / r))
        .collect()
}

/// A spread of layouts of an `m × n` matrix on `p` ranks: block-cyclic with several block sizes,
/// sources and orders (including grids smaller than `p`, so some ranks own nothing), even and
/// scrambled grid layouts, and everything on the last rank.
pub fn layouts(m: usize, n: usize, p: usize) -> Vec<AnyLayout> {
    let mut out: Vec<AnyLayout> = Vec::new();
    let gs = grids(p);
    let (pr, pc) = gs[gs.len() / 2];
    out.push(BlockCyclic::new(m, n, 2, 3, pr, pc).unwrap().into());
    out.push(
        BlockCyclic::new(m, n, 1, 1, pc, pr)
            .unwrap()
            .with_source(pc - 1, pr / 2)
            .unwrap()
            .with_order(GridOrder::ColMajor)
            .into(),
    );
    // Bigger blocks than the matrix: more ranks than blocks.
    out.push(
        BlockCyclic::new(m, n, m + 4, 5, 1, p)
            .unwrap()
            .with_source(0, p / 2)
            .unwrap()
            .into(),
    );
    if p > 1 {
        // A grid over fewer ranks than the communicator has.
        out.push(BlockCyclic::new(m, n, 3, 2, p - 1, 1).unwrap().into());
    }
    out.push(GridLayout::even(m, n, pr, pc).unwrap().into());
    // A grid layout whose owners are not a product set: block (bi, bj) on rank (bi + 2bj) % p.
    let rs: Vec<usize> = (0..=m).filter(|x| x % 3 == 0 || *x == m).collect();
    let cs: Vec<usize> = (0..=n).filter(|x| x % 2 == 0 || *x == n).collect();
    let (nbr, nbc) = (rs.len() - 1, cs.len() - 1);
    let owners = (0..nbr * nbc)
        .map(|k| (k / nbc + 2 * (k % nbc)) % p)
        .collect();
    out.push(GridLayout::new(rs, cs, owners, p).unwrap().into());
    out.push(OnRank::new(m, n, p - 1, p).unwrap().into());
    out
}

/// Shapes: empty, a single element, and small odd ones.
pub const SHAPES: [(usize, usize); 5] = [(0, 0), (0, 3), (1, 1), (7, 5), (4, 9)];

/// `B = beta·B + alpha·op(A)` from layout `la` to `lb`, checked element by element on every
/// rank without gathering, with exact counters; then the inverse transform must give A back.
pub fn check_transform_pair<C: Communicator, T: Scalar>(
    comm: &C,
    la: &AnyLayout,
    lb: &AnyLayout,
    op: Op,
    alpha: T,
    beta: T,
) {
    let a = OwnedDistMatrix::from_fn(comm, la.clone(), f_a::<T>).unwrap();
    let nan = T::from_f64_parts(f64::NAN, f64::NAN);
    let mut b = OwnedDistMatrix::from_fn(comm, lb.clone(), |i, j| {
        if beta == T::zero() {
            nan // beta = 0 must never read B
        } else {
            f_b(i, j)
        }
    })
    .unwrap();
    let plan = TransformPlan::new(la, op, lb, comm.rank(), comm.size()).unwrap();
    let before = comm.stats();
    transform(comm, alpha, &a, op, beta, &mut b).unwrap();
    let moved = comm.stats() - before;
    assert_eq!(
        moved.words_sent,
        plan.words_sent() as u64,
        "transform words sent"
    );
    assert_eq!(
        moved.words_received,
        plan.words_received() as u64,
        "words received"
    );
    let predicted = transform_volume(la, op, lb, comm.size()).unwrap();
    assert_eq!(predicted[comm.rank()], plan.words_sent());
    b.for_each_local(|i, j, x| {
        let want = if beta == T::zero() {
            alpha * op_f_a::<T>(op, i, j)
        } else {
            beta * f_b::<T>(i, j) + alpha * op_f_a::<T>(op, i, j)
        };
        assert_eq!(x, want, "B({i}, {j}) after {op} transform {la:?} -> {lb:?}");
    });
    if alpha == T::one() && beta == T::zero() {
        // Round trip: op(op(A)) = A for N, T and C.
        let mut back = OwnedDistMatrix::zeros(comm, la.clone()).unwrap();
        transform(comm, T::one(), &b, op, T::zero(), &mut back).unwrap();
        assert_eq!(back.local(), a.local(), "round trip {op} {la:?} -> {lb:?}");
    }
}

/// `alpha = 0` reads neither A nor (with `beta = 0`) B, and moves nothing: NaNs do not leak.
pub fn check_alpha_zero<C: Communicator, T: Scalar>(comm: &C) {
    let nan = T::from_f64_parts(f64::NAN, 0.0);
    let la = layouts(7, 5, comm.size()).remove(0);
    let lb = layouts(7, 5, comm.size()).remove(1);
    let a = OwnedDistMatrix::from_fn(comm, la, |_, _| nan).unwrap();
    let mut b = OwnedDistMatrix::from_fn(comm, lb.clone(), f_b::<T>).unwrap();
    let before = comm.stats();
    let half = T::from_f64_parts(0.5, 0.0);
    transform(comm, T::zero(), &a, Op::NoTrans, half, &mut b).unwrap();
    assert_eq!(comm.stats(), before, "alpha = 0 moves nothing");
    b.for_each_local(|i, j, x| assert_eq!(x, half * f_b::<T>(i, j)));
    let mut c = OwnedDistMatrix::from_fn(comm, lb, |_, _| nan).unwrap();
    transform(comm, T::zero(), &a, Op::NoTrans, T::zero(), &mut c).unwrap();
    c.for_each_local(|_, _, x| assert_eq!(x, T::zero()));
}

/// Round trips between every pair of layouts, every op and every shape, for one scalar type.
pub fn check_transforms_for<C: Communicator, T: Scalar>(comm: &C, shapes: &[(usize, usize)]) {
    let p = comm.size();
    let alpha = T::from_f64_parts(2.0, -1.0);
    let beta = T::from_f64_parts(-0.5, 0.25);
    for &(m, n) in shapes {
        for op in Op::ALL {
            let (bm, bn) = op.apply_shape((m, n));
            for la in layouts(m, n, p) {
                for lb in layouts(bm, bn, p) {
                    check_transform_pair(comm, &la, &lb, op, T::one(), T::zero());
                }
                let lb = &layouts(bm, bn, p)[0];
                check_transform_pair(comm, &la, lb, op, alpha, beta);
                check_transform_pair(comm, &la, lb, op, alpha, T::zero());
            }
        }
    }
}

/// Gather and scatter through every root, and the norms, against the formula.
pub fn check_gather_scatter_norms<C: Communicator, T: Scalar>(comm: &C) {
    let p = comm.size();
    for (m, n) in SHAPES {
        let global: Vec<T> = (0..m * n)
            .map(|k| f_a(k % m.max(1), k / m.max(1)))
            .collect();
        for layout in layouts(m, n, p) {
            let a = OwnedDistMatrix::from_fn(comm, layout.clone(), f_a::<T>).unwrap();
            for root in 0..p {
                let g = a.gather(comm, root).unwrap();
                assert_eq!(g.is_some(), comm.rank() == root);
                if let Some(g) = g {
                    assert_eq!(g, global, "gather to {root} from {layout:?}");
                }
                let mine = (comm.rank() == root).then_some(global.as_slice());
                let s = OwnedDistMatrix::scatter_from(comm, layout.clone(), root, mine).unwrap();
                assert_eq!(s.local(), a.local(), "scatter from {root} to {layout:?}");
            }
            let fro: f64 = global
                .iter()
                .map(|x| x.abs_sqr().to_f64())
                .sum::<f64>()
                .sqrt();
            let max = global.iter().map(|x| x.abs().to_f64()).fold(0.0, f64::max);
            let tol = 1e-5 * fro.max(1.0);
            assert!((a.norm_fro(comm).unwrap().to_f64() - fro).abs() <= tol);
            assert!((a.norm_max(comm).unwrap().to_f64() - max).abs() <= tol);
            let sums = |key: &dyn Fn(usize) -> usize, len: usize| {
                let mut s = vec![0.0f64; len];
                for (k, x) in global.iter().enumerate() {
                    s[key(k)] += x.abs().to_f64();
                }
                s.into_iter().fold(0.0, f64::max)
            };
            let one = sums(&|k| k / m.max(1), n);
            let inf = sums(&|k| k % m.max(1), m);
            assert!((a.norm_one(comm).unwrap().to_f64() - one).abs() <= tol);
            assert!((a.norm_inf(comm).unwrap().to_f64() - inf).abs() <= tol);
        }
    }
}

/// `permute_rows` gives `P·A` in the same layout for reversed, rotated and scrambled orders.
pub fn check_permute_rows<C: Communicator, T: Scalar>(comm: &C) {
    for (m, n) in SHAPES {
        let perms: Vec<Vec<usize>> = vec![
            (0..m).rev().collect(),
            (0..m).map(|i| (i + 3) % m.max(1)).collect(),
            (0..m).map(|i| (i * 5 + 1) % m.max(1)).collect(),
        ];
        for layout in layouts(m, n, comm.size()) {
            let a = OwnedDistMatrix::from_fn(comm, layout.clone(), f_a::<T>).unwrap();
            for perm in perms.iter().filter(|p| {
                let mut s = p.to_vec();
                s.sort();
                s == (0..m).collect::<Vec<_>>()
            }) {
                let pa = a.permute_rows(comm, perm).unwrap();
                assert_eq!(pa.layout(), &layout);
                pa.for_each_local(|i, j, x| assert_eq!(x, f_a::<T>(perm[i], j), "{layout:?}"));
            }
            let bad = vec![0; m + 1];
            assert!(matches!(
                a.permute_rows(comm, &bad),
                Err(DistError::InvalidLayout(_))
            ));
        }
    }
}

/// The seeded random matrices hold the same values on every rank count and in every layout:
/// element `(i, j)` is the generator's function of `(i, j, seed)`, bit for bit.
pub fn check_random_is_layout_free<C: Communicator, T: Scalar>(comm: &C) {
    let (m, n) = (13, 11);
    for seed in [0, 7, u64::MAX] {
        for layout in layouts(m, n, comm.size()) {
            let u = OwnedDistMatrix::<T, _>::random(comm, layout.clone(), seed).unwrap();
            let g = OwnedDistMatrix::<T, _>::random_normal(comm, layout.clone(), seed).unwrap();
            u.for_each_local(|i, j, x| {
                assert_eq!(
                    x,
                    redblue_core::random::uniform::<T>(i, j, seed),
                    "{layout:?}"
                );
            });
            g.for_each_local(|i, j, x| {
                assert_eq!(
                    x,
                    redblue_core::random::normal::<T>(i, j, seed),
                    "{layout:?}"
                );
            });
            let expected: Vec<T> = (0..m * n)
                .map(|k| redblue_core::random::uniform(k % m, k / m, seed))
                .collect();
            if let Some(all) = u.gather(comm, 0).unwrap() {
                assert_eq!(all, expected, "{layout:?}");
            }
        }
    }
}

use redblue_core::RealScalar;

/// Bad input: the same clear error on every rank, and no hang.
pub fn check_dist_bad_input<C: Communicator>(comm: &C) {
    let p = comm.size();
    // A layout larger than the communicator.
    let big = BlockCyclic::new(4, 4, 1, 1, p + 1, 1).unwrap();
    assert_eq!(
        OwnedDistMatrix::<f64, _>::zeros(comm, big).unwrap_err(),
        DistError::LayoutLargerThanComm {
            layout_ranks: p + 1,
            comm_size: p
        }
    );
    // Shapes that do not match.
    let a = OwnedDistMatrix::from_fn(
        comm,
        BlockCyclic::new(3, 4, 2, 2, 1, p).unwrap(),
        f_a::<f64>,
    )
    .unwrap();
    let mut b =
        OwnedDistMatrix::<f64, _>::zeros(comm, GridLayout::even(3, 4, 1, 1).unwrap()).unwrap();
    let e = transform(comm, 1.0, &a, Op::Trans, 0.0, &mut b).unwrap_err();
    assert_eq!(
        e,
        DistError::ShapeMismatch {
            what: "transform: op(A) against B",
            expected: (3, 4),
            found: (4, 3)
        }
    );
    // Out-of-range roots.
    assert!(matches!(
        a.gather(comm, p),
        Err(DistError::RankOutOfRange { .. })
    ));
    // A scatter root whose buffer is too short: every rank learns it.
    let short = [1.0; 5];
    let mine = (comm.rank() == 0).then_some(&short[..]);
    let e = OwnedDistMatrix::scatter_from(comm, a.layout().clone(), 0, mine).unwrap_err();
    assert_eq!(
        e,
        DistError::BufferLength {
            what: "global matrix on the scatter root",
            expected: 12,
            found: 5
        }
    );
    // A local buffer of the wrong length.
    let e = OwnedDistMatrix::from_local(comm, OnRank::new(2, 2, 0, p).unwrap(), vec![0.0f64; 9]);
    if comm.rank() == 0 {
        assert!(matches!(e, Err(DistError::BufferLength { .. })));
    }
    // The communicator still works.
    let still = a.norm_max(comm).unwrap();
    assert!(still > 0.0);
}

/// All distributed-matrix checks, for all four scalars.
pub fn check_all<C: Communicator>(comm: &C) {
    check_transforms_for::<C, f64>(comm, &SHAPES);
    check_transforms_for::<C, f32>(comm, &SHAPES[2..4]);
    check_transforms_for::<C, c64>(comm, &SHAPES[3..4]);
    check_transforms_for::<C, c32>(comm, &SHAPES[1..4]);
    check_alpha_zero::<C, f64>(comm);
    check_alpha_zero::<C, c32>(comm);
    check_gather_scatter_norms::<C, f64>(comm);
    check_gather_scatter_norms::<C, c32>(comm);
    check_permute_rows::<C, f64>(comm);
    check_permute_rows::<C, c64>(comm);
    check_random_is_layout_free::<C, f64>(comm);
    check_random_is_layout_free::<C, c32>(comm);
    check_dist_bad_input(comm);
}
