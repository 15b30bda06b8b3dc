//! The plan convention on threads-as-ranks: for a table of shapes × ops × ranks × schedules,
//! `gemm_with` gives the naive product of the gathered matrices in the native and in
//! block-cyclic layouts, every rank's measured counters equal `GemmPlan::rank_costs` exactly in
//! the native layouts, and `memory_bytes` covers every rank's parts; a plan for another shape,
//! other ops or more ranks is the same error on every rank, before anything moves.

use redblue_comm::{run_ranks, CommStats, Communicator};
use redblue_core::{c32, c64, Op, RealScalar, Scalar};
use redblue_dist::{AnyLayout, BlockCyclic, DistMatrix, OwnedDistMatrix};
use redblue_gemm::{
    gemm_with, multiply, Algorithm, Dim, GemmError, GemmParams, GemmPlan, GemmShape, PlanError,
};
use redblue_kernels::{KernelScalar, Par};

/// Element `(i, j)` of the random matrix `seed`: uniform in `[−1, 1)`, both parts.
fn value<T: Scalar>(i: usize, j: usize, seed: u64) -> T {
    redblue_core::random::uniform(i, j, seed)
}

/// Where the operands live in a run.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layouts {
    /// The plan's native layouts.
    Native,
    /// Block-cyclic, 3 × 2 blocks on the most square grid of the ranks.
    BlockCyclic,
}

/// The most square `pr × pc = p` grid, `pr ≤ pc`.
fn square_grid(p: usize) -> (usize, usize) {
    let pr = (1..=p)
        .filter(|r| p.is_multiple_of(*r) && r * r <= p)
        .max()
        .unwrap_or(1);
    (pr, p / pr)
}

/// `op(X)[i, l]` of the column-major `x` stored with `rows` rows.
fn op_at<T: Scalar>(op: Op, x: &[T], rows: usize, i: usize, l: usize) -> T {
    match op {
        Op::NoTrans => x[i + l * rows],
        Op::Trans => x[l + i * rows],
        Op::ConjTrans => x[l + i * rows].conj(),
    }
}

/// What one rank reports: its counters for the call, its elements of A, B and C, and on rank
/// 0 the gathered A, B, C before and C after.
type RankRun<T> = (CommStats, usize, Option<[Vec<T>; 4]>);

/// Runs `plan` with `gemm_with` on `plan.nranks()` ranks in `layouts` and checks C against the
/// naive product of the gathered inputs; in the native layouts, every rank's measured counters
/// against `plan.rank_costs` and its elements against `plan.memory_bytes`.
fn check<T: KernelScalar>(plan: &GemmPlan, layouts: Layouts) {
    check_on::<T>(plan, layouts, plan.nranks());
}

/// [`check`] on a communicator of `p ≥ plan.nranks()` ranks: the ranks beyond the plan's idle
/// (block-cyclic layouts are over all `p`).
fn check_on<T: KernelScalar>(plan: &GemmPlan, layouts: Layouts, p: usize) {
    let [sa, sb, sc] = plan.stored_shapes();
    let GemmShape { m, n, k } = plan.shape();
    let (op_a, op_b) = plan.ops();
    let (alpha, beta) = (T::from_f64_parts(0.75, -0.25), T::from_f64_parts(-0.5, 0.5));
    let what = format!("{plan} ({layouts:?}, {}, on {p} ranks)", T::NAME);
    let runs: Vec<RankRun<T>> = run_ranks(p, |comm| {
        let [la, lb, lc]: [AnyLayout; 3] = match layouts {
            Layouts::Native => plan.native_layouts().unwrap().map(Into::into),
            Layouts::BlockCyclic => {
                let (pr, pc) = square_grid(p);
                let bc = |(r, c): (usize, usize)| BlockCyclic::new(r, c, 3, 2, pr, pc).unwrap();
                [bc(sa).into(), bc(sb).into(), bc(sc).into()]
            }
        };
        let a = OwnedDistMatrix::from_fn(&comm, la, |i, j| value::<T>(i, j, 1)).unwrap();
        let b = OwnedDistMatrix::from_fn(&comm, lb, |i, j| value::<T>(i, j, 2)).unwrap();
        let mut c = OwnedDistMatrix::from_fn(&comm, lc, |i, j| value::<T>(i, j, 3)).unwrap();
        let gathered = [&a, &b, &c].map(|x| x.gather(&comm, 0).unwrap());
        comm.reset_stats();
        gemm_with(&comm, plan, alpha, &a, &b, beta, &mut c, Par::Seq).unwrap();
        let stats = comm.stats();
        let c_after = c.gather(&comm, 0).unwrap();
        let held = a.local().len() + b.local().len() + c.local().len();
        let on_root = match (gathered, c_after) {
            ([Some(a), Some(b), Some(c0)], Some(c)) => Some([a, b, c0, c]),
            _ => None,
        };
        (stats, held, on_root)
    });
    let [a, b, c0, c] = runs[0].2.as_ref().expect("rank 0 gathers");
    let eps = <T as Scalar>::Real::epsilon().to_f64();
    let tol = 16.0 * (k as f64 + 2.0) * eps * (k as f64 + 1.0);
    for j in 0..n {
        for i in 0..m {
            let product = (0..k).fold(T::zero(), |acc, l| {
                acc + op_at(op_a, a, sa.0, i, l) * op_at(op_b, b, sb.0, l, j)
            });
            let expected = alpha * product + beta * c0[i + j * m];
            let got = c[i + j * m];
            assert!(
                (got - expected).abs().to_f64() <= tol,
                "{what}: C[{i},{j}] = {got:?}, expected {expected:?}"
            );
        }
    }
    if layouts == Layouts::Native {
        let bytes = std::mem::size_of::<T>();
        let model = plan.rank_costs(bytes);
        assert_eq!(model.len(), plan.nranks(), "{what}");
        let memory = plan.memory_bytes(bytes);
        for (r, (stats, held, _)) in runs.iter().enumerate() {
            let idle = CommStats::default();
            assert_eq!(stats, model.get(r).unwrap_or(&idle), "{what}: rank {r}");
            assert!(
                (held * bytes) as u64 <= memory,
                "{what}: rank {r} holds {held} elements, more than {memory} bytes"
            );
        }
    }
}

/// The memory of the busiest rank is what `memory_bytes` gives (it asks the last rank only).
fn memory_is_the_busiest_ranks(plan: &GemmPlan) {
    let most = (0..plan.nranks())
        .map(|r| {
            plan.schedule()
                .rank_cost(plan.shape(), plan.nranks(), r)
                .memory_words
        })
        .max()
        .unwrap_or(0);
    assert_eq!(plan.memory_bytes(1), most, "{plan}");
    assert_eq!(plan.memory_bytes(16), 16 * most, "{plan}");
    // Likewise the working words the memory agreement of large runs weighs.
    let schedule = plan.schedule();
    let busiest = (0..plan.nranks())
        .map(|r| {
            schedule
                .rank_cost(plan.shape(), plan.nranks(), r)
                .working_words
        })
        .max()
        .unwrap_or(0);
    assert_eq!(
        schedule.busiest_working_words(plan.shape()),
        busiest,
        "{plan}"
    );
}

const OPS: [(Op, Op); 4] = [
    (Op::NoTrans, Op::NoTrans),
    (Op::NoTrans, Op::Trans),
    (Op::Trans, Op::NoTrans),
    (Op::ConjTrans, Op::ConjTrans),
];

/// Runs the case on both layouts, complex when an operand is conjugated.
fn check_both(plan: &GemmPlan) {
    memory_is_the_busiest_ranks(plan);
    let (op_a, op_b) = plan.ops();
    if op_a == Op::ConjTrans || op_b == Op::ConjTrans {
        check::<c64>(plan, Layouts::Native);
        check::<c64>(plan, Layouts::BlockCyclic);
    } else {
        check::<f64>(plan, Layouts::Native);
        check::<f64>(plan, Layouts::BlockCyclic);
    }
}

#[test]
fn every_schedule_is_right_and_measures_its_plan_on_one_to_eight_ranks() {
    let shapes = [
        (13, 11, 17),
        (20, 9, 31),
        (5, 37, 8),
        (2, 3, 40),
        (1, 1, 1),
        (0, 5, 7),
        (6, 4, 0),
    ];
    for p in 1..=8 {
        for (s, &(m, n, k)) in shapes.iter().enumerate() {
            for (o, ops) in OPS.into_iter().enumerate() {
                // Every algorithm in turn, so each meets every rank count, shape and ops.
                let algorithm = Algorithm::ALL[(p + s + o) % Algorithm::ALL.len()];
                let options = GemmParams::default().with_algorithm(algorithm);
                let plan = GemmPlan::new(GemmShape::new(m, n, k), ops, p, &options).unwrap();
                check_both(&plan);
            }
        }
    }
}

#[test]
fn cosma_is_right_and_measures_its_plan_with_every_op_and_rank_count() {
    for p in 1..=8 {
        for ops in OPS {
            let plan =
                GemmPlan::new(GemmShape::new(19, 14, 23), ops, p, &GemmParams::default()).unwrap();
            check_both(&plan);
        }
    }
}

#[test]
fn sixteen_and_twenty_seven_ranks() {
    for p in [16, 27] {
        for (shape, ops, algorithm) in [
            (
                GemmShape::new(24, 18, 30),
                (Op::NoTrans, Op::NoTrans),
                Algorithm::Cosma,
            ),
            (
                GemmShape::new(9, 31, 12),
                (Op::Trans, Op::NoTrans),
                Algorithm::Cosma,
            ),
            (
                GemmShape::new(20, 16, 40),
                (Op::NoTrans, Op::Trans),
                Algorithm::Summa,
            ),
            (
                GemmShape::new(20, 16, 40),
                (Op::NoTrans, Op::NoTrans),
                Algorithm::TwoAndHalfD,
            ),
            (
                GemmShape::new(17, 23, 29),
                (Op::ConjTrans, Op::NoTrans),
                Algorithm::Cannon,
            ),
        ] {
            let options = GemmParams::default().with_algorithm(algorithm);
            check_both(&GemmPlan::new(shape, ops, p, &options).unwrap());
        }
    }
}

/// CARMA on up to 64 ranks (powers of two, and 12 and 24: the largest power of two below
/// computes, the others idle): right, and every rank's measured words equal its model.
#[test]
fn carma_is_right_and_measures_its_plan_on_up_to_64_ranks() {
    let options = GemmParams::default().with_algorithm(Algorithm::Carma);
    for (p, shape, ops) in [
        (2, GemmShape::new(17, 9, 30), (Op::NoTrans, Op::NoTrans)),
        (4, GemmShape::new(24, 20, 36), (Op::Trans, Op::NoTrans)),
        (8, GemmShape::new(24, 20, 36), (Op::NoTrans, Op::Trans)),
        (12, GemmShape::new(30, 12, 20), (Op::NoTrans, Op::NoTrans)),
        (16, GemmShape::new(8, 8, 64), (Op::ConjTrans, Op::NoTrans)),
        (24, GemmShape::new(33, 40, 18), (Op::NoTrans, Op::NoTrans)),
        (32, GemmShape::new(24, 20, 36), (Op::NoTrans, Op::NoTrans)),
        (64, GemmShape::new(32, 32, 32), (Op::NoTrans, Op::NoTrans)),
    ] {
        let plan = GemmPlan::new(shape, ops, p, &options).unwrap();
        assert_eq!(plan.ranks(), 1 << p.ilog2(), "{plan}");
        check_both(&plan);
    }
    // The other two scalars (f64 and c64 above).
    for p in [3, 8, 16] {
        let plan = GemmPlan::new(
            GemmShape::new(20, 18, 33),
            (Op::NoTrans, Op::NoTrans),
            p,
            &options,
        )
        .unwrap();
        check::<f32>(&plan, Layouts::Native);
        check::<c32>(&plan, Layouts::BlockCyclic);
    }
}

#[test]
fn own_strategies_and_memory_limits_measure_their_plan() {
    let shape = GemmShape::new(24, 20, 36);
    for (text, p) in [
        ("pm2,sk3,pn2", 4),
        ("sk2,sm2,pk2", 3),
        ("sn3,pk2,pm2", 5),
        ("pk3,sk4", 3),
        ("sm2,sn2,sk2", 2),
    ] {
        let options = GemmParams::default().with_strategy(text.parse().unwrap());
        let plan = GemmPlan::new(shape, (Op::NoTrans, Op::Trans), p, &options).unwrap();
        assert_eq!(plan.algorithm(), None);
        assert!(plan.to_string().starts_with("custom"), "{plan}");
        check_both(&plan);
    }
    // A memory limit between the least any grid needs and what no limit needs.
    let free = GemmPlan::new(shape, (Op::NoTrans, Op::NoTrans), 4, &GemmParams::default())
        .unwrap()
        .memory_bytes(1);
    let options = GemmParams::default().with_memory_words(free * 4 / 5);
    let tight = GemmPlan::new(shape, (Op::NoTrans, Op::NoTrans), 4, &options).unwrap();
    assert!(tight.memory_bytes(1) <= free * 4 / 5, "{tight}");
    check_both(&tight);
}

/// Runs `call` (given the communicator, after the counters are reset) on `p` ranks and checks
/// that every rank returns the same error, having moved nothing.
fn same_error_everywhere(
    p: usize,
    call: impl Fn(&redblue_comm::ThreadComm) -> Result<(), GemmError> + Sync,
) -> GemmError {
    let results = run_ranks(p, |comm| {
        comm.reset_stats();
        let result = call(&comm);
        (result, comm.stats())
    });
    for (result, stats) in &results {
        assert_eq!(result, &results[0].0);
        assert_eq!(stats, &CommStats::default(), "{result:?}: data moved");
    }
    results[0].0.clone().unwrap_err()
}

#[test]
fn a_plan_for_other_operands_or_more_ranks_is_the_same_error_on_every_rank() {
    let (m, n, k) = (30, 12, 8);
    let nn = (Op::NoTrans, Op::NoTrans);
    let options = GemmParams::default();
    let p = 4;
    let run = |plan: GemmPlan| {
        same_error_everywhere(p, move |comm| {
            let bc = |r, c| BlockCyclic::new(r, c, 4, 4, 2, 2).unwrap();
            let a = OwnedDistMatrix::<f64, _>::random(comm, bc(m, k), 1).unwrap();
            let b = OwnedDistMatrix::<f64, _>::random(comm, bc(k, n), 2).unwrap();
            let mut c = OwnedDistMatrix::<f64, _>::zeros(comm, bc(m, n)).unwrap();
            gemm_with(comm, &plan, 1.0, &a, &b, 0.0, &mut c, Par::Seq)
        })
    };
    // m and k swapped.
    let swapped = GemmPlan::new(GemmShape::new(k, n, m), nn, p, &options).unwrap();
    match run(swapped) {
        GemmError::PlanMismatch {
            planned,
            given,
            ops,
        } => {
            assert_eq!(planned, [(k, m), (m, n), (k, n)]);
            assert_eq!(given, [(m, k), (k, n), (m, n)]);
            assert_eq!(ops, nn);
        }
        other => panic!("{other:?}"),
    }
    let message = run(GemmPlan::new(GemmShape::new(k, n, m), nn, p, &options).unwrap()).to_string();
    assert!(
        message.contains("A 8×30") && message.contains("A 30×8"),
        "{message}"
    );
    // Other ops: the plan transposes A, so it wants A stored k × m.
    let transposed = GemmPlan::new(
        GemmShape::new(m, n, k),
        (Op::Trans, Op::NoTrans),
        p,
        &options,
    )
    .unwrap();
    assert!(matches!(
        run(transposed),
        GemmError::PlanMismatch { given, .. } if given[0] == (m, k)
    ));
    // More ranks than the communicator.
    let more = GemmPlan::new(GemmShape::new(m, n, k), nn, p + 1, &options).unwrap();
    assert_eq!(
        run(more),
        GemmError::PlanRanks {
            planned: p + 1,
            comm_size: p
        }
    );
}

#[test]
fn a_plan_for_fewer_ranks_runs_on_a_larger_communicator_the_others_idle() {
    for algorithm in Algorithm::ALL {
        let options = GemmParams::default().with_algorithm(algorithm);
        for (shape, ops, planned, p) in [
            (GemmShape::new(21, 13, 17), (Op::NoTrans, Op::NoTrans), 4, 9),
            (GemmShape::new(8, 30, 11), (Op::Trans, Op::NoTrans), 3, 5),
        ] {
            let plan = GemmPlan::new(shape, ops, planned, &options).unwrap();
            check_on::<f64>(&plan, Layouts::Native, p);
            check_on::<f64>(&plan, Layouts::BlockCyclic, p);
        }
    }
}

/// The reported case: a bare schedule planned for `m` and `k` swapped, given to `multiply`. It
/// is refused when it cuts a dimension into more parts than it now has.
#[test]
fn multiply_refuses_a_schedule_that_cannot_be_for_these_operands() {
    let p = 8;
    let (m, n, k) = (64, 8, 2);
    // Planned for 2 × 8 × 64: k is cut into 8.
    let schedule = Algorithm::Cosma
        .schedule(GemmShape::new(k, n, m), p, &Default::default())
        .unwrap();
    assert_eq!(schedule.grid()[2], 8, "{schedule}");
    let error = same_error_everywhere(p, |comm| {
        let bc = |r, c| BlockCyclic::new(r, c, 4, 4, 2, 4).unwrap();
        let a = OwnedDistMatrix::<f64, _>::random(comm, bc(m, k), 1).unwrap();
        let b = OwnedDistMatrix::<f64, _>::random(comm, bc(k, n), 2).unwrap();
        let mut c = OwnedDistMatrix::<f64, _>::zeros(comm, bc(m, n)).unwrap();
        multiply(
            comm,
            1.0,
            &a,
            Op::NoTrans,
            &b,
            Op::NoTrans,
            0.0,
            &mut c,
            &schedule,
            Par::Seq,
        )
    });
    assert_eq!(
        error,
        GemmError::Plan(PlanError::TooManyParts {
            dim: Dim::K,
            parallel: 8,
            sequential: 1,
            len: 2
        })
    );
    assert!(error.to_string().contains("another shape"), "{error}");
}

#[test]
fn bad_options_are_refused_by_the_planner() {
    let shape = GemmShape::new(10, 10, 10);
    let nn = (Op::NoTrans, Op::NoTrans);
    let refused = |p: usize, options: GemmParams| GemmPlan::new(shape, nn, p, &options);
    assert!(matches!(
        refused(0, GemmParams::default()),
        Err(PlanError::InvalidOptions(_))
    ));
    for idle in [-0.1, 1.0, f64::NAN] {
        let options = GemmParams::default().with_max_idle_fraction(idle);
        assert!(matches!(
            refused(4, options),
            Err(PlanError::InvalidOptions(_))
        ));
    }
    let options = GemmParams::default().with_strategy("pm2,pn2".parse().unwrap());
    assert_eq!(
        refused(3, options),
        Err(PlanError::TooManyRanks {
            strategy: 4,
            available: 3
        })
    );
    let options = GemmParams::default().with_strategy("pm16".parse().unwrap());
    assert!(matches!(
        refused(16, options),
        Err(PlanError::TooManyParts { dim: Dim::M, .. })
    ));
    let options = GemmParams::default().with_memory_words(10);
    assert!(matches!(
        refused(4, options),
        Err(PlanError::NotEnoughMemory { available: 10, .. })
    ));
}

#[test]
fn plans_are_pure_and_cheap_at_large_p() {
    let shape = GemmShape::new(16384, 16384, 16384);
    let nn = (Op::NoTrans, Op::NoTrans);
    let plan = GemmPlan::new(shape, nn, 4096, &GemmParams::default()).unwrap();
    assert_eq!(
        plan,
        GemmPlan::new(shape, nn, 4096, &GemmParams::default()).unwrap()
    );
    // The paper's worked number (see the book): every rank receives 2,949,120 words.
    let costs = plan.rank_costs(8);
    assert!(costs.iter().all(|c| c.words_received == 2_949_120));
    assert!(costs.iter().all(|c| c.bytes_received == 8 * 2_949_120));
    let sent: u64 = costs.iter().map(|c| c.messages_sent).sum();
    let received: u64 = costs.iter().map(|c| c.messages_received).sum();
    assert_eq!(sent, received);
    // The busiest rank's memory from one rank's model, for a million ranks.
    let huge = GemmPlan::new(
        GemmShape::new(1 << 17, 1 << 17, 1 << 17),
        nn,
        1_000_000,
        &GemmParams::default(),
    )
    .unwrap();
    assert!(huge.memory_bytes(8) > 0);
}
