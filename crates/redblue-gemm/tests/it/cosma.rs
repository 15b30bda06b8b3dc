//! COSMA on threads-as-ranks: results against the local kernel for all scalars, ops, shapes
//! (zero, primes) and rank counts (primes included), in block-cyclic, grid and native layouts;
//! measured words per rank against the cost model; bad input.

use redblue_comm::{run_ranks, Communicator};
use redblue_core::{c32, c64, Op, RealScalar, Scalar};
use redblue_dist::{AnyLayout, BlockCyclic, GridLayout, OwnedDistMatrix};
use redblue_gemm::{
    cosma, cosma_rank_cost, multiply, native_layouts, plan_strategy, GemmError, GemmShape,
    PlanOptions, Strategy,
};
use redblue_kernels::{reference, KernelScalar, Mat, Par};

/// Element `(i, j)` of the random matrix `seed`: uniform in `[−1, 1)`, both parts.
fn value<T: Scalar>(i: usize, j: usize, seed: u64) -> T {
    redblue_core::random::uniform(i, j, seed)
}

/// A layout of an `m × n` matrix on `p` ranks, picked by `kind`: block-cyclic with odd blocks
/// and a shifted source, column-major grid order, an even grid, or everything on the last rank.
fn layout(kind: usize, (m, n): (usize, usize), p: usize) -> AnyLayout {
    let (pr, pc) = match p {
        1 => (1, 1),
        2 | 3 => (1, p),
        _ => (2, p / 2),
    };
    match kind % 4 {
        0 => BlockCyclic::new(m, n, 3, 2, pr, pc)
            .unwrap()
            .with_source(pr - 1, pc / 2)
            .unwrap()
            .into(),
        1 => BlockCyclic::new(m, n, 5, 7, pc, pr)
            .unwrap()
            .with_order(redblue_dist::GridOrder::ColMajor)
            .into(),
        2 => GridLayout::even(m, n, pr, pc).unwrap().into(),
        _ => redblue_dist::OnRank::new(m, n, p - 1, p).unwrap().into(),
    }
}

/// Runs `C = alpha·op(A)·op(B) + beta·C` on `p` ranks with the given layouts of `A`, `B`, `C`
/// (as stored, i.e. before `op`) and checks every rank's part of `C` against the naive product.
#[allow(clippy::too_many_arguments)]
fn check<T: KernelScalar>(
    p: usize,
    shape: GemmShape,
    (op_a, op_b): (Op, Op),
    layouts: impl Fn(usize) -> [AnyLayout; 3] + Sync,
    strategy: Option<Strategy>,
    (alpha, beta): (T, T),
    what: &str,
) {
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let a_shape = if op_a == Op::NoTrans { (m, k) } else { (k, m) };
    let b_shape = if op_b == Op::NoTrans { (k, n) } else { (n, k) };
    // The reference on every rank: the full matrices are functions of the indices.
    let full_a = Mat::from_fn(a_shape.0, a_shape.1, |i, j| value::<T>(i, j, 1));
    let full_b = Mat::from_fn(b_shape.0, b_shape.1, |i, j| value::<T>(i, j, 2));
    let mut expected = Mat::from_fn(m, n, |i, j| value::<T>(i, j, 3));
    reference::gemm(
        alpha,
        full_a.as_ref(),
        op_a,
        full_b.as_ref(),
        op_b,
        beta,
        expected.as_mut(),
    )
    .unwrap();
    let eps = <T as Scalar>::Real::epsilon().to_f64();
    let tol =
        8.0 * (k as f64 + 2.0) * eps * (alpha.abs().to_f64() * k as f64 + beta.abs().to_f64());
    run_ranks(p, |comm| {
        let [la, lb, lc] = layouts(p);
        let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| value::<T>(i, j, 1)).unwrap();
        let b = OwnedDistMatrix::from_fn(&comm, lb, |i, j| value::<T>(i, j, 2)).unwrap();
        let mut c = OwnedDistMatrix::from_fn(&comm, lc, |i, j| {
            if beta == T::zero() {
                T::from_f64_parts(f64::NAN, f64::NAN)
            } else {
                value::<T>(i, j, 3)
            }
        })
        .unwrap();
        let s = strategy
            .clone()
            .unwrap_or_else(|| plan_strategy(shape, p, &PlanOptions::default()).unwrap());
        cosma(&comm, alpha, &a, op_a, &b, op_b, beta, &mut c, &s, Par::Seq).unwrap();
        c.for_each_local(|i, j, x| {
            let err = (x - expected[(i, j)]).abs().to_f64();
            assert!(
                err <= tol,
                "{what} P={p} {s}: C[{i},{j}] = {x:?}, expected {:?}",
                expected[(i, j)]
            );
        });
    });
}

fn as_stored(op: Op, (r, c): (usize, usize)) -> (usize, usize) {
    if op == Op::NoTrans {
        (r, c)
    } else {
        (c, r)
    }
}

fn every_op_and_layout<T: KernelScalar>() {
    let shape = GemmShape::new(13, 11, 17);
    let (alpha, beta) = (
        T::from_f64_parts(0.75, -0.5),
        T::from_f64_parts(-1.25, 0.25),
    );
    for (case, (op_a, op_b)) in Op::ALL
        .into_iter()
        .flat_map(|a| Op::ALL.into_iter().map(move |b| (a, b)))
        .enumerate()
    {
        for p in [1, 3, 4] {
            let layouts = |p: usize| {
                [
                    layout(case, as_stored(op_a, (13, 17)), p),
                    layout(case + 1, as_stored(op_b, (17, 11)), p),
                    layout(case + 2, (13, 11), p),
                ]
            };
            let what = format!("{} {op_a}{op_b}", T::NAME);
            check::<T>(p, shape, (op_a, op_b), layouts, None, (alpha, beta), &what);
        }
    }
}

#[test]
fn all_scalars_ops_and_layouts() {
    every_op_and_layout::<f32>();
    every_op_and_layout::<f64>();
    every_op_and_layout::<c32>();
    every_op_and_layout::<c64>();
}

/// Products from operands gathered as slabs: in the native layouts every rank's pieces of
/// `op(A)` and `op(B)` are whole-depth slabs (cut by rows, by columns), multiplied where they
/// are, a rank's own first while the rest arrive; from a layout that cuts `op(A)` along `k`
/// into deep slabs, the products add up slab by slab. The same `C` for every op (a
/// transposed own slab is copied, not read in place), sequential `k` steps, partial sums and
/// `beta`, and in the native layouts the words of the model.
#[test]
fn products_from_slabs() {
    let shape = GemmShape::new(96, 80, 512);
    let (alpha, beta) = (c64::new(0.5, -0.25), c64::new(-1.5, 0.5));
    let ops_list = [
        (Op::NoTrans, Op::NoTrans),
        (Op::Trans, Op::NoTrans),
        (Op::NoTrans, Op::ConjTrans),
    ];
    for text in ["pn2", "pm2,pn2", "pm2,pk2", "pn2,sk2", "pm2,pn2,sk2", "pn3"] {
        let s: Strategy = text.parse().unwrap();
        for ops in ops_list {
            let layouts = |p: usize| native_layouts(&s, shape, ops, p).unwrap().map(Into::into);
            let what = format!("slabs {}{}", ops.0, ops.1);
            check::<c64>(
                s.ranks(),
                shape,
                ops,
                layouts,
                Some(s.clone()),
                (alpha, beta),
                &what,
            );
        }
        measured_equals_model_of(s.ranks(), shape, s);
    }
    // op(A) cut along k over two ranks (columns of A, rows of Aᵀ), 256 deep.
    let s: Strategy = "pn2".parse().unwrap();
    for ops in ops_list {
        let layouts = |p: usize| {
            let [_, b, c] = native_layouts(&s, shape, ops, p)
                .unwrap()
                .map(AnyLayout::from);
            let a = match ops.0 {
                Op::NoTrans => GridLayout::even(96, 512, 1, 2),
                _ => GridLayout::even(512, 96, 2, 1),
            };
            [a.unwrap().into(), b, c]
        };
        let what = format!("k-cut {}{}", ops.0, ops.1);
        check::<c64>(
            2,
            shape,
            ops,
            layouts,
            Some(s.clone()),
            (alpha, beta),
            &what,
        );
    }
}

#[test]
fn shapes_with_zeros_primes_and_every_rank_count() {
    let shapes = [
        (0, 5, 7),
        (5, 0, 7),
        (5, 7, 0),
        (1, 1, 1),
        (2, 3, 97),
        (31, 29, 3),
        (7, 53, 11),
        (40, 40, 40),
    ];
    for p in 1..=16 {
        for (s, &(m, n, k)) in shapes.iter().enumerate() {
            let shape = GemmShape::new(m, n, k);
            let layouts = |p: usize| {
                [
                    layout(s + p, (m, k), p),
                    layout(s + p + 1, (k, n), p),
                    layout(s + p + 2, (m, n), p),
                ]
            };
            // beta = 0 with NaN in C: C must not be read.
            check::<f64>(
                p,
                shape,
                (Op::NoTrans, Op::NoTrans),
                layouts,
                None,
                (1.0, 0.0),
                "nan-C",
            );
            check::<f64>(
                p,
                shape,
                (Op::NoTrans, Op::Trans),
                |p| {
                    let [a, _, c] = layouts(p);
                    [a, layout(s, (n, k), p), c]
                },
                None,
                (0.5, 2.0),
                "shapes",
            );
        }
    }
}

#[test]
fn user_and_memory_limited_strategies() {
    let shape = GemmShape::new(24, 20, 36);
    let even = |p: usize| {
        [
            GridLayout::even(24, 36, 1, p).unwrap().into(),
            GridLayout::even(36, 20, p, 1).unwrap().into(),
            GridLayout::even(24, 20, 1, p).unwrap().into(),
        ]
    };
    for text in [
        "pm2,sk3,pn2",
        "sk2,sm2,pk2",
        "sn3,pk2,pm2",
        "pk4",
        "sm2,sn2,sk2",
        "",
    ] {
        let s: Strategy = text.parse().unwrap();
        for p in [s.ranks(), s.ranks() + 1] {
            check::<f64>(
                p,
                shape,
                (Op::NoTrans, Op::NoTrans),
                even,
                Some(s.clone()),
                (1.0, 1.0),
                text,
            );
        }
    }
    // A memory limit forces sequential k steps.
    let free = plan_strategy(shape, 4, &PlanOptions::default()).unwrap();
    let need = redblue_gemm::cosma_cost(&free, shape).memory_words_max;
    let tight = PlanOptions::default().with_memory_words(need * 4 / 5);
    let s = plan_strategy(shape, 4, &tight).unwrap();
    assert!(s.sequential_parts()[2] > 1, "{s}");
    check::<c64>(
        4,
        shape,
        (Op::ConjTrans, Op::NoTrans),
        |p| {
            [
                layout(0, (36, 24), p),
                layout(1, (36, 20), p),
                layout(2, (24, 20), p),
            ]
        },
        Some(s),
        (c64::new(1.0, 1.0), c64::new(0.0, 0.0)),
        "memory-limited",
    );
}

/// Measured words and messages on every rank equal the model's, in the native layouts.
fn measured_equals_model(p: usize, shape: GemmShape) {
    let s = plan_strategy(shape, p, &PlanOptions::default()).unwrap();
    measured_equals_model_of(p, shape, s);
}

/// The same for a given strategy (sequential steps run the rounds with background transfers).
fn measured_equals_model_of(p: usize, shape: GemmShape, s: Strategy) {
    schedule_measured_equals_model(p, shape, &redblue_gemm::Schedule::Strategy(s));
}

/// Runs `schedule` in its native layouts on `p` ranks, checks every value of C, and checks the
/// words sent and received and the messages of every rank against the schedule's model.
fn schedule_measured_equals_model(p: usize, shape: GemmShape, schedule: &redblue_gemm::Schedule) {
    let ops = (Op::NoTrans, Op::NoTrans);
    let stats = run_ranks(p, |comm| {
        let [la, lb, lc] = schedule.native_layouts(shape, ops, p).unwrap();
        let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| value::<f64>(i, j, 1)).unwrap();
        let b = OwnedDistMatrix::from_fn(&comm, lb, |i, j| value::<f64>(i, j, 2)).unwrap();
        let mut c = OwnedDistMatrix::zeros(&comm, lc).unwrap();
        comm.reset_stats();
        multiply(
            &comm,
            1.0,
            &a,
            ops.0,
            &b,
            ops.1,
            0.0,
            &mut c,
            schedule,
            Par::Seq,
        )
        .unwrap();
        let stats = comm.stats();
        // The values too: native layouts take the in-place paths (A, B read where they are, C
        // written where it is when no other rank adds to it).
        c.for_each_local(|i, j, x| {
            let expected: f64 = (0..shape.k)
                .map(|l| value::<f64>(i, l, 1) * value::<f64>(l, j, 2))
                .sum();
            let at = format!("P={p} {schedule}: C[{i},{j}]");
            assert!((x - expected).abs() <= 1e-12 * shape.k as f64, "{at}");
        });
        stats
    });
    for (r, st) in stats.iter().enumerate() {
        let model = schedule.rank_cost(shape, p, r);
        let at = format!("P={p} {schedule} {shape:?} rank {r}");
        assert_eq!(st.words_sent, model.words_sent, "{at}: words sent");
        assert_eq!(
            st.words_received, model.words_received,
            "{at}: words received"
        );
        assert_eq!(st.messages_sent, model.messages_sent, "{at}: messages");
        assert_eq!(
            st.messages_received, model.messages_received,
            "{at}: messages received"
        );
    }
}

#[test]
fn measured_volume_equals_the_model() {
    for p in [1, 2, 3, 4, 7, 8, 12, 16, 27, 64] {
        measured_equals_model(p, GemmShape::new(64, 48, 80));
        measured_equals_model(p, GemmShape::new(37, 29, 101));
    }
    measured_equals_model(8, GemmShape::new(16, 16, 512));
    measured_equals_model(8, GemmShape::new(256, 256, 8));
    for text in [
        "sk3,pm2,pn2",
        "pm2,sm2,pk2",
        "sn2,pk2,sk2",
        "pk3,sk4",
        "sm2,sn2,sk2",
    ] {
        let s: Strategy = text.parse().unwrap();
        for p in [s.ranks(), s.ranks() + 1] {
            measured_equals_model_of(p, GemmShape::new(37, 29, 101), s.clone());
        }
    }
}

/// Runs whose busiest rank needs [`AGREE_FROM_WORDS`](redblue_gemm::memory::AGREE_FROM_WORDS)
/// working words or more ask for them and agree first (one all-reduce of one word over every
/// rank, idle ones too); the model counts it, so measured still equals the model. Long `A`
/// and one column of `B`: 16.8 million elements, few flops.
#[test]
fn large_runs_agree_on_memory_and_the_model_counts_it() {
    use redblue_gemm::memory::agrees_on_memory;
    use redblue_gemm::{Algorithm, Schedule};
    let shape = GemmShape::new(4096, 1, 4096);
    // Two computing ranks (each 4096 × 2048 of A: exactly the threshold) and an idle one.
    let cosma = Algorithm::Cosma
        .schedule(shape, 2, &PlanOptions::default())
        .unwrap();
    for (p, schedule) in [(3, cosma), (2, Schedule::Cannon { q: 1 })] {
        assert!(agrees_on_memory(schedule.busiest_working_words(shape)));
        schedule_measured_equals_model(p, shape, &schedule);
    }
    // A small run makes no agreement: nothing moves on one rank's own multiplication.
    let small = GemmShape::new(64, 1, 64);
    assert!(!agrees_on_memory(
        Schedule::Cannon { q: 1 }.busiest_working_words(small)
    ));
    assert_eq!(
        Schedule::Cannon { q: 1 }.rank_cost(small, 2, 1).words_sent,
        0
    );
}

#[test]
fn bad_input_is_the_same_error_on_every_rank() {
    let results = run_ranks(3, |comm| {
        let a =
            OwnedDistMatrix::<f64, _>::zeros(&comm, GridLayout::even(4, 5, 1, 3).unwrap()).unwrap();
        let b =
            OwnedDistMatrix::<f64, _>::zeros(&comm, GridLayout::even(6, 2, 1, 3).unwrap()).unwrap();
        let mut c =
            OwnedDistMatrix::<f64, _>::zeros(&comm, GridLayout::even(4, 2, 1, 3).unwrap()).unwrap();
        let s = Strategy::default();
        let inner = cosma(
            &comm,
            1.0,
            &a,
            Op::NoTrans,
            &b,
            Op::NoTrans,
            0.0,
            &mut c,
            &s,
            Par::Seq,
        );
        let mut c_bad =
            OwnedDistMatrix::<f64, _>::zeros(&comm, GridLayout::even(4, 3, 1, 3).unwrap()).unwrap();
        let wrong_c = cosma(
            &comm,
            1.0,
            &a,
            Op::NoTrans,
            &a,
            Op::Trans,
            0.0,
            &mut c_bad,
            &s,
            Par::Seq,
        );
        let big: Strategy = "pm2,pn2".parse().unwrap();
        let mut c44 =
            OwnedDistMatrix::<f64, _>::zeros(&comm, GridLayout::even(4, 4, 1, 3).unwrap()).unwrap();
        let too_many = cosma(
            &comm,
            1.0,
            &a,
            Op::NoTrans,
            &a,
            Op::Trans,
            0.0,
            &mut c44,
            &big,
            Par::Seq,
        );
        (inner, wrong_c, too_many, comm.rank())
    });
    for (inner, wrong_c, too_many, _) in &results {
        assert_eq!(inner, &results[0].0);
        assert!(matches!(
            inner,
            Err(GemmError::InnerDimensions {
                op_a: (4, 5),
                op_b: (6, 2)
            })
        ));
        assert!(matches!(wrong_c, Err(GemmError::Dist(_))), "{wrong_c:?}");
        let message = too_many.as_ref().unwrap_err().to_string();
        assert!(
            message.contains("4 ranks") && message.contains('3'),
            "{message}"
        );
    }
}

#[test]
fn baselines_give_the_same_results() {
    use redblue_gemm::Algorithm;
    let shape = GemmShape::new(30, 26, 600);
    for p in [1, 4, 5, 8, 12] {
        for algorithm in [Algorithm::Summa, Algorithm::TwoAndHalfD, Algorithm::Cannon] {
            let schedule = algorithm
                .schedule(shape, p, &PlanOptions::default())
                .unwrap();
            for (case, ops) in [
                (0, (Op::NoTrans, Op::NoTrans)),
                (1, (Op::ConjTrans, Op::Trans)),
            ] {
                let layouts = |p: usize| {
                    [
                        layout(case, as_stored(ops.0, (30, 600)), p),
                        layout(case + 1, as_stored(ops.1, (600, 26)), p),
                        layout(case + 2, (30, 26), p),
                    ]
                };
                let what = format!("{algorithm}");
                check_schedule::<c64>(p, shape, ops, layouts, &schedule, &what);
            }
        }
    }
}

/// [`check`] for any schedule (Cannon included), alpha = 1.5, beta = −0.5.
fn check_schedule<T: KernelScalar>(
    p: usize,
    shape: GemmShape,
    (op_a, op_b): (Op, Op),
    layouts: impl Fn(usize) -> [AnyLayout; 3] + Sync,
    schedule: &redblue_gemm::Schedule,
    what: &str,
) {
    let (m, n, k) = (shape.m, shape.n, shape.k);
    let (alpha, beta) = (T::from_f64_parts(1.5, 0.0), T::from_f64_parts(-0.5, 0.0));
    let full_a = Mat::from_fn(
        as_stored(op_a, (m, k)).0,
        as_stored(op_a, (m, k)).1,
        |i, j| value::<T>(i, j, 1),
    );
    let full_b = Mat::from_fn(
        as_stored(op_b, (k, n)).0,
        as_stored(op_b, (k, n)).1,
        |i, j| value::<T>(i, j, 2),
    );
    let mut expected = Mat::from_fn(m, n, |i, j| value::<T>(i, j, 3));
    reference::gemm(
        alpha,
        full_a.as_ref(),
        op_a,
        full_b.as_ref(),
        op_b,
        beta,
        expected.as_mut(),
    )
    .unwrap();
    let tol =
        8.0 * (k as f64 + 2.0) * <T as Scalar>::Real::epsilon().to_f64() * (1.5 * k as f64 + 0.5);
    run_ranks(p, |comm| {
        let [la, lb, lc] = layouts(p);
        let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| value::<T>(i, j, 1)).unwrap();
        let b = OwnedDistMatrix::from_fn(&comm, lb, |i, j| value::<T>(i, j, 2)).unwrap();
        let mut c = OwnedDistMatrix::from_fn(&comm, lc, |i, j| value::<T>(i, j, 3)).unwrap();
        multiply(
            &comm,
            alpha,
            &a,
            op_a,
            &b,
            op_b,
            beta,
            &mut c,
            schedule,
            Par::Seq,
        )
        .unwrap();
        c.for_each_local(|i, j, x| {
            let err = (x - expected[(i, j)]).abs().to_f64();
            assert!(
                err <= tol,
                "{what} P={p}: C[{i},{j}] = {x:?}, expected {:?}",
                expected[(i, j)]
            );
        });
    });
}

#[test]
fn cannon_measured_volume_equals_its_model() {
    use redblue_gemm::Algorithm;
    for p in [1, 2, 4, 5, 9, 16] {
        for shape in [GemmShape::new(40, 36, 44), GemmShape::new(17, 23, 29)] {
            let schedule = Algorithm::Cannon
                .schedule(shape, p, &PlanOptions::default())
                .unwrap();
            schedule_measured_equals_model(p, shape, &schedule);
        }
    }
}

/// In other layouts COSMA reads each element straight from its owner, which never moves more in
/// total than transforming to the native layouts first (counted by `transform_volume`), running
/// there, and transforming C back.
#[test]
fn foreign_layouts_move_no_more_than_model_plus_transforms() {
    use redblue_dist::transform_volume;
    for p in [2, 3, 4, 6, 8] {
        let shape = GemmShape::new(45, 38, 52);
        let s = plan_strategy(shape, p, &PlanOptions::default()).unwrap();
        let [na, nb, nc] = native_layouts(&s, shape, (Op::NoTrans, Op::Trans), p).unwrap();
        let (ua, ub, uc) = (
            layout(0, (45, 52), p),
            layout(1, (38, 52), p),
            layout(2, (45, 38), p),
        );
        let transforms: usize = [
            transform_volume(&ua, Op::NoTrans, &na, p).unwrap(),
            transform_volume(&ub, Op::NoTrans, &nb, p).unwrap(),
            transform_volume(&nc, Op::NoTrans, &uc, p).unwrap(),
        ]
        .iter()
        .flatten()
        .sum();
        let model: u64 = (0..s.ranks())
            .map(|r| cosma_rank_cost(&s, shape, r).words_sent)
            .sum();
        let measured: u64 = run_ranks(p, |comm| {
            let a =
                OwnedDistMatrix::from_fn(&comm, ua.clone(), |i, j| value::<f64>(i, j, 1)).unwrap();
            let b =
                OwnedDistMatrix::from_fn(&comm, ub.clone(), |i, j| value::<f64>(i, j, 2)).unwrap();
            let mut c = OwnedDistMatrix::zeros(&comm, uc.clone()).unwrap();
            comm.reset_stats();
            cosma(
                &comm,
                1.0,
                &a,
                Op::NoTrans,
                &b,
                Op::Trans,
                0.0,
                &mut c,
                &s,
                Par::Seq,
            )
            .unwrap();
            comm.stats().words_sent
        })
        .into_iter()
        .sum();
        assert!(
            measured <= model + transforms as u64,
            "P={p}: measured {measured} > model {model} + transforms {transforms}"
        );
    }
}
