//! Issue 19's comparisons in one run, each interleaved pair by pair (this machine's speed drifts
//! between stretches of a run): the distributed factorisations and products on threads as ranks
//! against the kernel crate's two-thread single-process kernels on the same matrices, and the
//! product on 4 ranks and from a block-cyclic layout against 2 ranks in the native layout. For
//! each: the reference's median GFLOP/s, the median ratio `reference time / our time` and its
//! range, the target. The CPU model and its vector features head the output.
//!
//! ```text
//! cargo bench -p redblue-benches --bench perf            # N = 4096, 5 pairs, all four scalars
//! PERF_N=2048 PERF_PAIRS=3 PERF_ONLY=gemm cargo bench -p redblue-benches --bench perf
//! cargo bench -p redblue-benches --bench perf --features openblas   # the kernels on OpenBLAS
//! ```
//!
//! With `--features openblas` the factorisations' comparisons run four arms in each round —
//! the kernel crate's two-thread factorisation on OpenBLAS and on redblue's own kernels, ours
//! on each — and print three lines: ours against the reference on the same kernels, and ours
//! on redblue's own kernels (the default build) against OpenBLAS.
//!
//! With `OPENBLAS_CORETYPE` set, the program re-runs itself without it (OpenBLAS would otherwise
//! use the forced core's kernels, half the speed on an AVX-512 core) and says so.
//!
//! A kernel arm runs on rank 0 with two threads while the other ranks wait in a barrier (using
//! no core); a distributed arm runs on every rank, one thread each, its input in the native
//! layout (or the block-cyclic one), factored in place on a copy made outside the timed region.
//! Every rank sleeps 250 ms after each arm (`PERF_SETTLE_MS` sets it), so that no thread of
//! one arm (OpenBLAS's spin after a threaded call) still runs in the next, then keeps its core
//! busy for 20 ms (`PERF_WAKE_MS`), so that the next arm starts on awake cores.

use redblue::cholesky::{cholesky_in_place, CholeskyParams, CholeskyPlan};
use redblue::comm::{run_ranks, Communicator, ThreadComm};
use redblue::core::{c32, c64, random, Op, Scalar, Uplo};
use redblue::dist::{BlockCyclic, GridOrder, OwnedDistMatrix};
use redblue::gemm::{gemm_with, GemmParams, GemmPlan, GemmShape};
use redblue::kernels::{gemm, getrf, potrf, set_system_blas, KernelScalar, Mat, Par, SYSTEM_BLAS};
use redblue::lu::{lu_in_place, lu_plan, LuParams};
use redblue_benches::median;
use std::sync::Arc;
use std::time::Instant;

/// One arm, made on each rank: called once per pair, it returns the seconds it took (between
/// two barriers).
type Arm = Box<dyn FnMut(&ThreadComm) -> f64>;

/// Makes a comparison's arms on a rank, the reference first.
type Arms = dyn Fn(&ThreadComm) -> Vec<Arm> + Sync;

fn entry<T: Scalar>(i: usize, j: usize, seed: u64) -> T {
    T::from_f64_parts(random::uniform(i, j, seed), random::uniform(i, j, seed + 7))
}

/// Hermitian positive definite: off the diagonal uniform, `2n` on it.
fn hpd<T: Scalar>(n: usize) -> impl Fn(usize, usize) -> T + Copy + Send + Sync {
    move |i, j| match i.cmp(&j) {
        std::cmp::Ordering::Equal => T::from_f64_parts(2.0 * n as f64, 0.0),
        std::cmp::Ordering::Greater => entry(i, j, 1),
        std::cmp::Ordering::Less => entry::<T>(j, i, 1).conj(),
    }
}

/// Times `f` between two barriers.
fn timed(comm: &ThreadComm, f: impl FnOnce()) -> f64 {
    comm.barrier().unwrap();
    let start = Instant::now();
    f();
    comm.barrier().unwrap();
    start.elapsed().as_secs_f64()
}

/// A kernel arm: `run` on a fresh copy of `input`, on rank 0 only.
fn kernel_arm<T: KernelScalar>(input: Arc<Mat<T>>, run: fn(&mut Mat<T>)) -> Arm {
    Box::new(move |comm| {
        let mut copy = (comm.rank() == 0).then(|| (*input).clone());
        timed(comm, || {
            if let Some(m) = copy.as_mut() {
                run(m)
            }
        })
    })
}

/// How long every rank sleeps after each arm (`PERF_SETTLE_MS` overrides it): OpenBLAS's
/// worker threads keep spinning for about 2²⁸ cycles after a threaded call and would otherwise
/// take a core from the arm after a two-thread kernel arm. Measured with `--features openblas`,
/// `PERF_ONLY=cholesky`, 0 and 250 ms alternately, twice: 2 ranks 0.79 and 0.76 without the
/// pause, 0.92 and 0.84 with it (the references alike).
const SETTLE: std::time::Duration = std::time::Duration::from_millis(250);

/// How long every rank keeps its core busy after the pause (`PERF_WAKE_MS` overrides it): on
/// this virtual machine a core idle for the pause runs the next few milliseconds slowly, and a
/// short arm feels it. Measured on the flat product (`4096 × 4096 × 256`, 34 ms back to back):
/// its ranks took 44–48 ms right after the pause, 34–37 ms after the pause and this busy time;
/// ratio to the two-thread `gemm` 0.77 and 0.82 without it, 0.96 and 0.98 with it, 0.92 and
/// 0.93 with neither pause nor busy time.
const WAKE: std::time::Duration = std::time::Duration::from_millis(20);

/// `default`, or the milliseconds in the environment variable `var`.
fn millis_from_env(var: &str, default: std::time::Duration) -> std::time::Duration {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(default, std::time::Duration::from_millis)
}

/// Sleeps [`SETTLE`] (or `PERF_SETTLE_MS`), then spins [`WAKE`] (or `PERF_WAKE_MS`).
fn settle() {
    std::thread::sleep(millis_from_env("PERF_SETTLE_MS", SETTLE));
    let wake = millis_from_env("PERF_WAKE_MS", WAKE);
    let start = Instant::now();
    while start.elapsed() < wake {
        std::hint::spin_loop();
    }
}

/// `pairs` interleaved rounds, each running every arm once in turn (after one round dropped to
/// warm up), on `p` ranks: rank 0's seconds, per round and arm. Every other round runs the arms
/// in reverse order (A B, B A, A B, ...), so that neither arm is always the one right after
/// the other. Each arm starts on a machine where no thread of the previous one runs
/// ([`settle`]).
fn interleave(p: usize, pairs: usize, arms: &Arms) -> Vec<Vec<f64>> {
    let mut times = run_ranks(p, |comm| {
        let mut arms = arms(&comm);
        let count = arms.len();
        (0..=pairs)
            .map(|round| {
                let mut times = vec![0.0; count];
                for step in 0..count {
                    let a = if round % 2 == 0 {
                        step
                    } else {
                        count - 1 - step
                    };
                    times[a] = arms[a](&comm);
                    settle();
                }
                times
            })
            .skip(1)
            .collect::<Vec<_>>()
    });
    times.swap_remove(0)
}

/// Prints a line for arm `ours` of `times` against arm `reference`: the reference in GFLOP/s,
/// the median ratio of its time to ours and the range, the target (none when 0); returns the
/// median ratio.
fn report(
    name: &str,
    flops: f64,
    times: &[Vec<f64>],
    reference: usize,
    ours: usize,
    target: f64,
) -> f64 {
    let ratios: Vec<f64> = times.iter().map(|t| t[reference] / t[ours]).collect();
    let (lo, hi) = ratios
        .iter()
        .fold((f64::MAX, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
    let seconds = median(times.iter().map(|t| t[reference]).collect());
    let ratio = median(ratios);
    let verdict = match target {
        t if t <= 0.0 => String::new(),
        t if ratio >= t => format!("; target {t:.2} met"),
        t => format!("; target {t:.2} NOT met"),
    };
    println!(
        "{name:<62} reference {:>6.1} GFLOP/s; ratio {ratio:.2} ({lo:.2}–{hi:.2}){verdict}",
        flops / seconds / 1e9,
    );
    ratio
}

/// Runs a comparison of two arms and prints its line ([`report`]).
fn compare(name: &str, flops: f64, p: usize, pairs: usize, target: f64, arms: &Arms) -> f64 {
    let times = interleave(p, pairs, arms);
    report(name, flops, &times, 0, 1, target)
}

/// `arm` run with the system BLAS on or off (set by rank 0 before the arm's first barrier, so
/// every rank runs with it).
fn on_system_blas(system: bool, mut arm: Arm) -> Arm {
    Box::new(move |comm| {
        if comm.rank() == 0 {
            set_system_blas(system);
        }
        arm(comm)
    })
}

/// A factorisation's comparison: with the system BLAS linked, its four arms — the kernel on
/// OpenBLAS, the kernel on redblue's own, ours on OpenBLAS, ours on redblue's own — interleaved
/// in one run and three lines (ours against the kernel on the same kernels, and ours on its
/// own kernels against OpenBLAS); otherwise the two arms and one line. Returns the ratio on
/// the same kernels (the system's when linked).
fn compare_kernels(
    name: &str,
    reference: &str,
    flops: f64,
    p: usize,
    pairs: usize,
    target: f64,
    arms: impl Fn(&ThreadComm) -> (Arm, Arm, Arm, Arm) + Sync + 'static,
) -> f64 {
    if !SYSTEM_BLAS || target <= 0.0 {
        let two = move |comm: &ThreadComm| -> Vec<Arm> {
            let (kernel, ours, _, _) = arms(comm);
            vec![kernel, ours]
        };
        return compare(
            &format!("{name} / {reference}"),
            flops,
            p,
            pairs,
            target,
            &two,
        );
    }
    let four = move |comm: &ThreadComm| -> Vec<Arm> {
        let (kernel, ours, kernel_own, ours_own) = arms(comm);
        vec![
            on_system_blas(true, kernel),
            on_system_blas(false, kernel_own),
            on_system_blas(true, ours),
            on_system_blas(false, ours_own),
        ]
    };
    let times = interleave(p, pairs, &four);
    set_system_blas(true);
    let same = report(
        &format!("{name} / {reference}"),
        flops,
        &times,
        0,
        2,
        target,
    );
    report(
        &format!("{name} [own kernels] / {reference} [own]"),
        flops,
        &times,
        1,
        3,
        target,
    );
    report(
        &format!("{name} [own kernels] / {reference}"),
        flops,
        &times,
        0,
        3,
        target,
    );
    same
}

/// A distributed arm that factors a copy of `a` in place: the copy made outside the timed
/// region, `run` timed on it.
fn in_place_arm<M: Clone + 'static>(a: &Arc<M>, run: impl Fn(&ThreadComm, M) + 'static) -> Arm {
    let a = a.clone();
    Box::new(move |comm| {
        let copy = (*a).clone();
        timed(comm, || run(comm, copy))
    })
}

/// The LU (COnfLUX, the planner's grid) on `p` ranks against the kernel's `getrf`, 2 threads
/// ([`compare_kernels`]).
fn lu_vs_getrf<T: KernelScalar>(n: usize, p: usize, pairs: usize, target: f64) -> f64 {
    let input = Arc::new(Mat::from_fn(n, n, |i, j| entry::<T>(i, j, 1)));
    let params = LuParams::default();
    let (grid, v) = lu_plan(n, p, &params).unwrap();
    let arms = move |comm: &ThreadComm| {
        let layout = BlockCyclic::new(n, n, v, v, grid.px, grid.py)
            .unwrap()
            .with_order(GridOrder::ColMajor);
        let a = OwnedDistMatrix::from_fn(comm, layout, |i, j| entry::<T>(i, j, 1)).unwrap();
        let a = Arc::new(a);
        // The factors settled, as `getrf` leaves them finished (rows in order, layers
        // gathered).
        let ours = || {
            let params = params.clone();
            in_place_arm(&a, move |comm, copy| {
                lu_in_place(comm, copy, &params)
                    .unwrap()
                    .settle(comm)
                    .unwrap()
            })
        };
        let kernel = || {
            kernel_arm(input.clone(), |m| {
                drop(getrf(m.as_mut(), Par::Threads(2)).unwrap())
            })
        };
        (kernel(), ours(), kernel(), ours())
    };
    let flops = flops_per_fma::<T>() * (n as f64).powi(3) / 3.0;
    let name = format!("lu {} n={n}, {p} ranks", T::NAME);
    compare_kernels(&name, "getrf 2 threads", flops, p, pairs, target, arms)
}

/// The Cholesky (COnfCHOX, the planner's) on `p` ranks against the kernel's `potrf`, 2 threads
/// ([`compare_kernels`]).
fn cholesky_vs_potrf<T: KernelScalar>(n: usize, p: usize, pairs: usize, target: f64) -> f64 {
    let input = Arc::new(Mat::from_fn(n, n, hpd::<T>(n)));
    let params = CholeskyParams::default();
    let arms = move |comm: &ThreadComm| {
        let plan = CholeskyPlan::new(n, comm.size(), &params).unwrap();
        let a = OwnedDistMatrix::from_fn(comm, plan.native_layout().unwrap(), hpd::<T>(n)).unwrap();
        let a = Arc::new(a);
        let ours = || {
            let params = params.clone();
            in_place_arm(&a, move |comm, copy| {
                let factor = cholesky_in_place(comm, copy, Uplo::Lower, &params).unwrap();
                factor.settle(comm).unwrap()
            })
        };
        let kernel = || {
            kernel_arm(input.clone(), |m| {
                potrf(Uplo::Lower, m.as_mut(), Par::Threads(2)).unwrap()
            })
        };
        (kernel(), ours(), kernel(), ours())
    };
    let flops = flops_per_fma::<T>() * (n as f64).powi(3) / 6.0;
    let name = format!("cholesky {} n={n}, {p} ranks", T::NAME);
    compare_kernels(&name, "potrf 2 threads", flops, p, pairs, target, arms)
}

/// Where a distributed product's operands live.
#[derive(Clone, Copy, PartialEq)]
enum Placement {
    /// The plan's native layouts.
    Native,
    /// ScaLAPACK's: block-cyclic, 64 × 64 blocks, a 1 × p grid (planned for them).
    BlockCyclic,
}

/// A distributed product's arm on a rank: `C = A·B` with the plan for `p` ranks, `reps` times
/// back to back.
fn product_arm<T: KernelScalar>(
    comm: &ThreadComm,
    (m, n, k): (usize, usize, usize),
    place: Placement,
    reps: usize,
) -> Arm {
    let shape = GemmShape::new(m, n, k);
    let ops = (Op::NoTrans, Op::NoTrans);
    let plan = GemmPlan::new(shape, ops, comm.size(), &GemmParams::default()).unwrap();
    let fa = |i, j| entry::<T>(i, j, 1);
    let fb = |i, j| entry::<T>(i, j, 2);
    if place == Placement::Native {
        let [la, lb, lc] = plan.native_layouts().unwrap();
        let a = OwnedDistMatrix::from_fn(comm, la, fa).unwrap();
        let b = OwnedDistMatrix::from_fn(comm, lb, fb).unwrap();
        let mut c = OwnedDistMatrix::zeros(comm, lc).unwrap();
        return Box::new(move |comm| {
            timed(comm, || {
                for _ in 0..reps {
                    gemm_with(comm, &plan, T::one(), &a, &b, T::zero(), &mut c, Par::Seq).unwrap()
                }
            })
        });
    }
    // Planned where the operands are, as the ScaLAPACK library plans `p?gemm_`.
    let bc = |r, c| BlockCyclic::new(r, c, 64, 64, 1, comm.size()).unwrap();
    let (p, params) = (comm.size(), GemmParams::default());
    let plan = GemmPlan::for_layouts(shape, ops, p, &params, &bc(m, k), &bc(k, n), &bc(m, n));
    let plan = plan.unwrap();
    let a = OwnedDistMatrix::from_fn(comm, bc(m, k), fa).unwrap();
    let b = OwnedDistMatrix::from_fn(comm, bc(k, n), fb).unwrap();
    let mut c = OwnedDistMatrix::zeros(comm, bc(m, n)).unwrap();
    Box::new(move |comm| {
        timed(comm, || {
            for _ in 0..reps {
                gemm_with(comm, &plan, T::one(), &a, &b, T::zero(), &mut c, Par::Seq).unwrap()
            }
        })
    })
}

/// The product on `p` ranks (native layout) against the kernel's `gemm`, 2 threads; each arm
/// makes it `reps` times, so that a short product's arm is long enough to measure.
fn gemm_vs_kernel<T: KernelScalar>(
    (dims, reps): ((usize, usize, usize), usize),
    p: usize,
    pairs: usize,
    target: f64,
) -> f64 {
    let (m, n, k) = dims;
    let a = Arc::new(Mat::from_fn(m, k, |i, j| entry::<T>(i, j, 1)));
    let b = Arc::new(Mat::from_fn(k, n, |i, j| entry::<T>(i, j, 2)));
    let arms = move |comm: &ThreadComm| -> Vec<Arm> {
        let (a, b) = (a.clone(), b.clone());
        let mut c = (comm.rank() == 0).then(|| Mat::<T>::zeros(m, n));
        let kernel: Arm = Box::new(move |comm| {
            timed(comm, || {
                if let Some(c) = c.as_mut() {
                    for _ in 0..reps {
                        gemm(
                            T::one(),
                            Mat::as_ref(&a),
                            Op::NoTrans,
                            Mat::as_ref(&b),
                            Op::NoTrans,
                            T::zero(),
                            c.as_mut(),
                            Par::Threads(2),
                        )
                        .unwrap()
                    }
                }
            })
        });
        vec![
            kernel,
            product_arm::<T>(comm, dims, Placement::Native, reps),
        ]
    };
    let flops = flops_per_fma::<T>() * (m * n) as f64 * k as f64 * reps as f64;
    let times = if reps > 1 {
        format!(" (x{reps})")
    } else {
        String::new()
    };
    let name = format!(
        "gemm {} {m}x{n}x{k}{times}, {p} ranks / gemm 2 threads",
        T::NAME
    );
    compare(&name, flops, p, pairs, target, &arms)
}

/// The product from ScaLAPACK's block-cyclic layout against the native layout, 2 ranks.
fn gemm_block_cyclic(dims: (usize, usize, usize), pairs: usize, target: f64) -> f64 {
    let arms = move |comm: &ThreadComm| -> Vec<Arm> {
        vec![
            product_arm::<f64>(comm, dims, Placement::Native, 1),
            product_arm::<f64>(comm, dims, Placement::BlockCyclic, 1),
        ]
    };
    let (m, n, k) = dims;
    let flops = 2.0 * (m * n) as f64 * k as f64;
    let name = format!("gemm f64 {m}x{n}x{k}, 2 ranks: block-cyclic / native");
    compare(&name, flops, 2, pairs, target, &arms)
}

/// The product on 4 ranks against 2 ranks (native layouts), each on all of its ranks.
fn gemm_4_vs_2(dims: (usize, usize, usize), pairs: usize, target: f64) -> f64 {
    // Two sessions cannot interleave inside one run_ranks: the 2-rank arm runs on ranks 0 and
    // 1 of a split, ranks 2 and 3 waiting in the barriers.
    let arms = move |comm: &ThreadComm| -> Vec<Arm> {
        let half = comm
            .split(u32::from(comm.rank() >= 2), comm.rank())
            .unwrap();
        let mut two =
            (comm.rank() < 2).then(|| product_arm::<f64>(&half, dims, Placement::Native, 1));
        let first: Arm = Box::new(move |comm| {
            timed(comm, || {
                if let Some(arm) = two.as_mut() {
                    arm(&half);
                }
            })
        });
        vec![first, product_arm::<f64>(comm, dims, Placement::Native, 1)]
    };
    let (m, n, k) = dims;
    let flops = 2.0 * (m * n) as f64 * k as f64;
    let name = format!("gemm f64 {m}x{n}x{k}: 2 ranks / 4 ranks");
    compare(&name, flops, 4, pairs, target, &arms)
}

/// Real flops per multiply-add of `T`.
fn flops_per_fma<T: Scalar>() -> f64 {
    if T::IS_COMPLEX {
        8.0
    } else {
        2.0
    }
}

fn main() {
    redblue_benches::without_forced_coretype("perf");
    let var = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (n, pairs) = (var("PERF_N", 4096), var("PERF_PAIRS", 5));
    let only = std::env::var("PERF_ONLY").unwrap_or_default();
    let want = |what: &str| only.is_empty() || only.split(',').any(|o| o == what);
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpu
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1));
    let features: Vec<&str> = ["avx512f", "avx2", "fma"]
        .into_iter()
        .filter(|f| cpu.split_whitespace().any(|w| w == *f))
        .collect();
    println!(
        "perf: N = {n}, {pairs} interleaved pairs each; CPU {} with {features:?}, {} cores; \
         the kernels are redblue's own (faer){}",
        model.unwrap_or("?").trim(),
        std::thread::available_parallelism().map_or(0, |c| c.get()),
        if cfg!(feature = "openblas") {
            " or the system BLAS"
        } else {
            ""
        }
    );
    if want("lu") {
        lu_vs_getrf::<f64>(n, 2, pairs, 0.9);
        lu_vs_getrf::<f64>(n, 4, pairs, 0.85);
    }
    if want("cholesky") {
        cholesky_vs_potrf::<f64>(n, 2, pairs, 0.95);
        cholesky_vs_potrf::<f64>(n, 4, pairs, 0.85);
    }
    if want("gemm") {
        // The flat product is a sixteenth of the others' work: four of them make one arm.
        let shapes = [
            ((n, n, n), 1),
            ((n / 8, n / 8, 64 * n), 1),
            ((n, n, n / 16), 4),
        ];
        for dims in shapes {
            gemm_vs_kernel::<f64>(dims, 2, pairs, 0.97);
        }
        gemm_4_vs_2((n, n, n), pairs, 0.95);
        gemm_block_cyclic((n, n, n), pairs, 0.9);
    }
    if want("scalars") {
        // At the full order: at N = 2048 faer's two-thread f64 `getrf` and `potrf` hardly use
        // the second thread (getrf: 80 GFLOP/s on one thread, 90 on two, on a Zen 5), which
        // made f64's ratio, the yardstick of the others, 1.6–1.9.
        let h = n;
        for (what, f64_ratio) in [
            ("lu", lu_vs_getrf::<f64>(h, 2, pairs, 0.0)),
            ("cholesky", cholesky_vs_potrf::<f64>(h, 2, pairs, 0.0)),
            ("gemm", gemm_vs_kernel::<f64>(((h, h, h), 1), 2, pairs, 0.0)),
        ] {
            let others = match what {
                "lu" => [
                    lu_vs_getrf::<f32>(h, 2, pairs, 0.0),
                    lu_vs_getrf::<c32>(h, 2, pairs, 0.0),
                    lu_vs_getrf::<c64>(h, 2, pairs, 0.0),
                ],
                "cholesky" => [
                    cholesky_vs_potrf::<f32>(h, 2, pairs, 0.0),
                    cholesky_vs_potrf::<c32>(h, 2, pairs, 0.0),
                    cholesky_vs_potrf::<c64>(h, 2, pairs, 0.0),
                ],
                _ => [
                    gemm_vs_kernel::<f32>(((h, h, h), 1), 2, pairs, 0.0),
                    gemm_vs_kernel::<c32>(((h, h, h), 1), 2, pairs, 0.0),
                    gemm_vs_kernel::<c64>(((h, h, h), 1), 2, pairs, 0.0),
                ],
            };
            // The target: no scalar type's ratio more than 10 % below f64's (a higher one is a
            // slower reference, reported as the spread).
            let rel: Vec<f64> = others.iter().map(|r| r / f64_ratio).collect();
            let low = rel.iter().cloned().fold(f64::MAX, f64::min);
            let high = rel.iter().cloned().fold(0.0, f64::max);
            println!(
                "{what}: f32, c32, c64 ratios {low:.2}–{high:.2} of f64's (target: none below 0.90) {}",
                if low >= 0.9 { "met" } else { "NOT met" }
            );
        }
    }
}
