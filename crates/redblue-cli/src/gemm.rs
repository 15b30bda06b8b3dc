//! `redblue gemm` and `redblue plan gemm`: `C = alpha·op(A)·op(B) + beta·C` with COSMA or a
//! baseline, reported against the cost model and the lower bound.
//!
//! `--check` computes `‖C·x − (alpha·op(A)·(op(B)·x) + beta·C₀·x)‖ / ((|alpha|·‖A‖·‖B‖ +
//! |beta|·‖C₀‖)·‖x‖·max(k, 1)·ε)` (Frobenius norms, `x` a random vector; SLATE's tester's idea)
//! with [`redblue::check::gemm_residual`] and fails above [`GEMM_THRESHOLD`].

use crate::{square_grid, Backend, Job, LayoutKind, ScalarType, SEED_A, SEED_B, SEED_C};
use clap::Args;
use redblue::check::{gemm_residual, GEMM_THRESHOLD};
use redblue::comm::{Communicator, CommunicatorExt, ReduceOp};
use redblue::core::{c32, c64, random, Op};
use redblue::dist::{AnyLayout, BlockCyclic, DistMatrix, OwnedDistMatrix};
use redblue::gemm::{
    gemm_with, parallel_lower_bound, Algorithm, GemmError, GemmParams, GemmPlan, GemmShape,
    Strategy,
};
use redblue::kernels::{KernelScalar, Par};
use redblue::Error;
use serde_json::json;
use std::time::Instant;

#[derive(Args, Clone, Debug)]
pub struct GemmArgs {
    /// Rows of op(A) and C.
    #[arg(long, default_value_t = 1024)]
    m: usize,
    /// Columns of op(B) and C.
    #[arg(long, default_value_t = 1024)]
    n: usize,
    /// Columns of op(A), rows of op(B).
    #[arg(long, default_value_t = 1024)]
    k: usize,
    /// Ranks (threads backend; under MPI the ranks are mpirun's).
    #[arg(long, default_value_t = 2)]
    ranks: usize,
    /// Element type.
    #[arg(long = "type", value_enum, default_value_t = ScalarType::F64)]
    ty: ScalarType,
    /// cosma, summa, 2.5d, cannon or carma.
    #[arg(long, default_value = "cosma")]
    algorithm: Algorithm,
    /// With `plan gemm`: every algorithm's plan for the same problem side by side (and the
    /// user's strategy, if one is given), next to the lower bound.
    #[arg(long)]
    compare: bool,
    /// Your own strategy, e.g. pm2,sk2,pn2 (overrides --algorithm's).
    #[arg(long)]
    strategy: Option<Strategy>,
    /// Words (matrix elements) each rank may hold.
    #[arg(long)]
    memory: Option<u64>,
    /// Largest fraction of idle ranks COSMA's grid fitting may leave.
    #[arg(long, default_value_t = 0.03)]
    idle: f64,
    /// Repetitions; the time reported is their median.
    #[arg(long, default_value_t = 3, value_parser = crate::parse_reps)]
    reps: usize,
    /// Check the result (normalised residual; exit status 1 if above the threshold).
    #[arg(long)]
    check: bool,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Threads per rank for the local multiplications.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// threads or mpi.
    #[arg(long, value_enum, default_value_t = Backend::Threads)]
    backend: Backend,
    /// Layout of A, B and C: native or block-cyclic.
    #[arg(long, value_enum, default_value_t = LayoutKind::Native)]
    layout: LayoutKind,
    /// op(A): N, T or C.
    #[arg(long = "op-a", default_value = "N")]
    op_a: Op,
    /// op(B): N, T or C.
    #[arg(long = "op-b", default_value = "N")]
    op_b: Op,
    /// alpha (real part; the imaginary part is 0).
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    alpha: f64,
    /// beta (real part).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    beta: f64,
}

impl GemmArgs {
    /// Bytes of one element.
    fn elem_bytes(&self) -> f64 {
        self.ty.bytes() as f64
    }

    fn shape(&self) -> GemmShape {
        GemmShape::new(self.m, self.n, self.k)
    }

    /// The flags as the planner's options: the user's strategy, if any, overrides the
    /// algorithm.
    fn options(&self) -> GemmParams {
        let mut options = GemmParams::default()
            .with_algorithm(self.algorithm)
            .with_max_idle_fraction(self.idle);
        if let Some(words) = self.memory {
            options = options.with_memory_words(words);
        }
        if let Some(s) = &self.strategy {
            options = options.with_strategy(s.clone());
        }
        options
    }
}

/// What `plan` prints and `gemm` reports besides measurements: the plan and its model.
struct Planned {
    plan: GemmPlan,
    model_words: u64,
    model_received_max: u64,
    messages_max: u64,
    lower_bound_words: f64,
    memory_words_max: u64,
}

impl Planned {
    /// `custom` for the user's strategy, else the algorithm.
    fn algorithm_name(&self) -> String {
        self.plan
            .algorithm()
            .map_or_else(|| "custom".into(), |a| a.to_string())
    }
}

fn plan(args: &GemmArgs, p: usize) -> Result<Planned, GemmError> {
    let shape = args.shape();
    let mut plan = GemmPlan::new(shape, (args.op_a, args.op_b), p, &args.options())?;
    let cost = plan.cost_summary();
    let (mut model_words, mut model_received_max, mut messages_max) = (
        cost.words_sent_max,
        cost.words_received_max,
        cost.messages_max,
    );
    // COSMA from block-cyclic operands: planned where they are (`for_layouts`), the model
    // then the words from those layouts.
    let cosma = args.algorithm == Algorithm::Cosma && args.strategy.is_none();
    if args.layout == LayoutKind::BlockCyclic && cosma {
        let [la, lb, lc] = layouts(args, &plan)?;
        let ops = (args.op_a, args.op_b);
        plan = GemmPlan::for_layouts(shape, ops, p, &args.options(), &la, &lb, &lc)?;
        let costs = plan.rank_costs(1);
        let most = |f: fn(&redblue::comm::CommStats) -> u64| costs.iter().map(f).max();
        model_words = most(|s| s.words_sent).unwrap_or(0);
        model_received_max = most(|s| s.words_received).unwrap_or(0);
        messages_max = most(|s| s.messages_sent).unwrap_or(0);
    }
    let lower_bound_words =
        parallel_lower_bound(shape, plan.ranks(), args.memory.map(|m| m as f64));
    Ok(Planned {
        model_words,
        model_received_max,
        messages_max,
        lower_bound_words,
        memory_words_max: cost.memory_words_max,
        plan,
    })
}

/// What one rank reports after the run.
struct RankReport {
    seconds: f64,
    words_sent: u64,
    messages_sent: u64,
    residual: Option<f64>,
}

fn layouts(args: &GemmArgs, plan: &GemmPlan) -> Result<[AnyLayout; 3], GemmError> {
    let [a_shape, b_shape, c_shape] = plan.stored_shapes();
    Ok(match args.layout {
        LayoutKind::Native => plan.native_layouts()?.map(AnyLayout::from),
        LayoutKind::BlockCyclic => {
            let (pr, pc) = square_grid(plan.nranks());
            let bc = |(r, c): (usize, usize)| BlockCyclic::new(r, c, 64, 64, pr, pc);
            [
                bc(a_shape)?.into(),
                bc(b_shape)?.into(),
                bc(c_shape)?.into(),
            ]
        }
    })
}

/// The run on one rank.
fn run_rank<T: KernelScalar, C: Communicator>(
    comm: &C,
    args: &GemmArgs,
    plan: &GemmPlan,
) -> Result<RankReport, Error> {
    let [la, lb, lc] = layouts(args, plan)?;
    let a = OwnedDistMatrix::random(comm, la, SEED_A)?;
    let b = OwnedDistMatrix::random(comm, lb, SEED_B)?;
    let c0 = |i, j| random::uniform::<T>(i, j, SEED_C);
    let mut c = OwnedDistMatrix::from_fn(comm, lc.clone(), c0)?;
    let (alpha, beta) = (
        T::from_f64_parts(args.alpha, 0.0),
        T::from_f64_parts(args.beta, 0.0),
    );
    let par = if args.threads > 1 {
        Par::Threads(args.threads)
    } else {
        Par::Seq
    };
    let mut times = Vec::new();
    let mut stats = redblue::comm::CommStats::default();
    for _ in 0..args.reps {
        c.fill_with(c0);
        comm.barrier()?;
        comm.reset_stats();
        let start = Instant::now();
        gemm_with(comm, plan, alpha, &a, &b, beta, &mut c, par)?;
        // The multiplication's own traffic only (not the timing reduction below).
        stats = comm.stats();
        comm.barrier()?;
        times.push(comm.all_reduce_one(start.elapsed().as_secs_f64(), ReduceOp::Max)?);
    }
    times.sort_by(f64::total_cmp);
    let residual = if args.check {
        Some(residual(comm, args, &a, &b, &c)?)
    } else {
        None
    };
    Ok(RankReport {
        seconds: times[times.len() / 2],
        words_sent: stats.words_sent,
        messages_sent: stats.messages_sent,
        residual,
    })
}

/// The normalised residual of the product ([`gemm_residual`], distributed), on every rank.
fn residual<T: KernelScalar, C: Communicator>(
    comm: &C,
    args: &GemmArgs,
    a: &OwnedDistMatrix<T, AnyLayout>,
    b: &OwnedDistMatrix<T, AnyLayout>,
    c: &OwnedDistMatrix<T, AnyLayout>,
) -> Result<f64, Error> {
    let c0 = OwnedDistMatrix::random(comm, c.layout().clone(), SEED_C)?;
    let (alpha, beta) = (
        T::from_f64_parts(args.alpha, 0.0),
        T::from_f64_parts(args.beta, 0.0),
    );
    gemm_residual(comm, alpha, a, args.op_a, b, args.op_b, beta, &c0, c)
}

/// Prints the plan fields (`plan gemm`).
fn print_plan(args: &GemmArgs, p: usize, planned: &Planned) {
    let s = planned.plan.schedule();
    if args.json {
        let line = json!({
            "op": "gemm", "m": args.m, "n": args.n, "k": args.k, "ranks": p,
            "ranks_used": s.ranks(), "type": args.ty.name(),
            "algorithm": planned.algorithm_name(), "strategy": s.to_string(),
            "grid": s.grid(), "model_words": planned.model_words,
            "model_received_max": planned.model_received_max,
            "lower_bound_words": planned.lower_bound_words,
            "memory_words_max": planned.memory_words_max,
        });
        println!("{line}");
    } else {
        println!(
            "plan gemm {}×{}×{} on {p} ranks ({})",
            args.m,
            args.n,
            args.k,
            planned.algorithm_name()
        );
        println!(
            "  strategy          {s}  (grid {:?}, {} ranks used)",
            s.grid(),
            s.ranks()
        );
        println!(
            "  model words/rank  {} sent (max), {} received (max)",
            planned.model_words, planned.model_received_max
        );
        println!(
            "  lower bound       {:.0} words received per rank",
            planned.lower_bound_words
        );
        println!("  memory/rank       {} words", planned.memory_words_max);
    }
}

/// Prints the run (`gemm`), on rank 0.
fn print_run(
    args: &GemmArgs,
    p: usize,
    planned: &Planned,
    reports: &[(u64, u64)],
    first: &RankReport,
) {
    let max_sent = reports.iter().map(|r| r.0).max().unwrap_or(0);
    let avg_sent = reports.iter().map(|r| r.0 as f64).sum::<f64>() / reports.len().max(1) as f64;
    let max_messages = reports.iter().map(|r| r.1).max().unwrap_or(0);
    let per_fma = args.ty.flops_per_fma();
    let gflops = per_fma * args.shape().volume() / first.seconds.max(1e-12) / 1e9;
    if args.json {
        let line = json!({
            "op": "gemm", "m": args.m, "n": args.n, "k": args.k, "ranks": p,
            "ranks_used": planned.plan.ranks(), "type": args.ty.name(),
            "algorithm": planned.algorithm_name(),
            "strategy": planned.plan.schedule().to_string(),
            "backend": format!("{:?}", args.backend).to_lowercase(),
            "layout": args.layout.name(),
            "op_a": args.op_a.to_string(), "op_b": args.op_b.to_string(),
            "threads": args.threads, "reps": args.reps,
            "time_s": first.seconds, "gflops": gflops,
            "words_sent_max": max_sent, "words_sent_avg": avg_sent,
            "messages_max": max_messages, "model_words": planned.model_words,
            "lower_bound_words": planned.lower_bound_words,
            "memory_words_max": planned.memory_words_max, "residual": first.residual,
        });
        println!("{line}");
    } else {
        println!(
            "gemm {}×{}×{} {} op(A)={} op(B)={} on {p} ranks ({:?}, {} layout), {}",
            args.m,
            args.n,
            args.k,
            args.ty.name(),
            args.op_a,
            args.op_b,
            args.backend,
            args.layout.name(),
            planned.algorithm_name()
        );
        println!(
            "  strategy          {}  (grid {:?})",
            planned.plan.schedule(),
            planned.plan.schedule().grid()
        );
        println!(
            "  time              {:.4} s (median of {}), {gflops:.1} GFLOP/s",
            first.seconds, args.reps
        );
        println!(
            "  words sent/rank   max {max_sent}, avg {avg_sent:.0}; model {}",
            planned.model_words
        );
        println!(
            "  lower bound       {:.0} words received per rank",
            planned.lower_bound_words
        );
        println!("  messages/rank     max {max_messages}");
        println!(
            "  memory/rank       {} words (model)",
            planned.memory_words_max
        );
        if let Some(r) = first.residual {
            let verdict = if r <= GEMM_THRESHOLD { "ok" } else { "FAILED" };
            println!("  residual          {r:.3} (threshold {GEMM_THRESHOLD}): {verdict}");
        }
    }
}

/// Runs `gemm` on `comm` for the element type of `args`; on rank 0 returns the report and
/// every rank's (words sent, messages).
fn run_typed<C: Communicator>(
    comm: &C,
    args: &GemmArgs,
    plan: &GemmPlan,
) -> Result<(RankReport, Vec<(u64, u64)>), Error> {
    let report = match args.ty {
        ScalarType::F32 => run_rank::<f32, C>(comm, args, plan)?,
        ScalarType::F64 => run_rank::<f64, C>(comm, args, plan)?,
        ScalarType::C32 => run_rank::<c32, C>(comm, args, plan)?,
        ScalarType::C64 => run_rank::<c64, C>(comm, args, plan)?,
    };
    let mut all = vec![(0u64, 0u64); comm.size()];
    let mine = [report.words_sent, report.messages_sent];
    let mut flat = vec![0u64; 2 * comm.size()];
    comm.all_gather(&mine, &mut flat)?;
    for (r, pair) in all.iter_mut().enumerate() {
        *pair = (flat[2 * r], flat[2 * r + 1]);
    }
    Ok((report, all))
}

impl Job for GemmArgs {
    fn ranks(&self) -> usize {
        self.ranks
    }

    fn backend(&self) -> Backend {
        self.backend
    }

    fn input_bytes(&self) -> f64 {
        let (m, n, k) = (self.m as f64, self.n as f64, self.k as f64);
        (m * k + k * n + m * n) * self.elem_bytes()
    }

    fn check(&self, p: usize) -> Result<(f64, String), String> {
        let planned = plan(self, p).map_err(|e| e.to_string())?;
        // A, B and C as given (and C₀ for the check), and each rank's working memory by the
        // schedule's model.
        let (m, n) = (self.m as f64, self.n as f64);
        let extra = if self.check {
            m * n * self.elem_bytes()
        } else {
            0.0
        };
        let working = planned.memory_words_max as f64 * p as f64 * self.elem_bytes();
        Ok((
            self.input_bytes() + extra + working,
            "A, B and C, and every rank's working memory by the schedule's model".into(),
        ))
    }

    fn run<C: Communicator>(&self, comm: &C) -> Result<bool, Error> {
        gemm_on(comm, self)
    }
}

/// `redblue plan gemm`.
pub fn plan_command(args: &GemmArgs) -> Result<bool, String> {
    if args.compare {
        compare_plans(args);
        return Ok(true);
    }
    let planned = plan(args, args.ranks).map_err(|e| e.to_string())?;
    print_plan(args, args.ranks, &planned);
    Ok(true)
}

/// `plan gemm --compare`: every algorithm planned for the same problem (the user's strategy
/// too), one row each, an algorithm that cannot plan it (a memory limit) with its reason.
fn compare_plans(args: &GemmArgs) {
    let p = args.ranks;
    let mut rows: Vec<(String, Result<Planned, GemmError>)> = Algorithm::ALL
        .into_iter()
        .map(|a| {
            let one = GemmArgs {
                algorithm: a,
                strategy: None,
                ..args.clone()
            };
            (a.to_string(), plan(&one, p))
        })
        .collect();
    if args.strategy.is_some() {
        rows.push(("custom".into(), plan(args, p)));
    }
    let bound = parallel_lower_bound(args.shape(), p, args.memory.map(|m| m as f64));
    if args.json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(name, r)| match r {
                Ok(x) => {
                    let s = x.plan.schedule();
                    json!({
                        "algorithm": name, "strategy": s.to_string(), "grid": s.grid(),
                        "ranks_used": s.ranks(), "model_words": x.model_words,
                        "model_received_max": x.model_received_max,
                        "messages_max": x.messages_max,
                        "memory_words_max": x.memory_words_max,
                    })
                }
                Err(e) => json!({ "algorithm": name, "error": e.to_string() }),
            })
            .collect();
        let line = json!({
            "op": "gemm", "m": args.m, "n": args.n, "k": args.k, "ranks": p,
            "lower_bound_words": bound, "algorithms": rows,
        });
        println!("{line}");
        return;
    }
    println!(
        "plan gemm {}×{}×{} on {p} ranks: every algorithm (words per rank, by the exact model)",
        args.m, args.n, args.k
    );
    println!(
        "  {:<8} {:>6} {:>14} {:>14} {:>9} {:>14}  strategy",
        "", "ranks", "sent (max)", "received (max)", "messages", "memory"
    );
    for (name, r) in &rows {
        match r {
            Ok(x) => {
                let s = x.plan.schedule();
                println!(
                    "  {name:<8} {:>6} {:>14} {:>14} {:>9} {:>14}  {s}",
                    s.ranks(),
                    x.model_words,
                    x.model_received_max,
                    x.messages_max,
                    x.memory_words_max
                );
            }
            Err(e) => println!("  {name:<8} cannot: {e}"),
        }
    }
    println!("  lower bound: {bound:.0} words received per rank");
}

fn gemm_on<C: Communicator>(comm: &C, args: &GemmArgs) -> Result<bool, Error> {
    let p = comm.size();
    let planned = plan(args, p)?;
    let (report, all) = run_typed(comm, args, &planned.plan)?;
    if comm.rank() == 0 {
        print_run(args, p, &planned, &all, &report);
    }
    let ok = report.residual.is_none_or(|r| r <= GEMM_THRESHOLD);
    Ok(comm.all_reduce_one(u32::from(ok), ReduceOp::Min)? == 1)
}
