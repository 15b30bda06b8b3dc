//! `redblue cholesky` and `redblue plan cholesky`: `A = L·Lᴴ` with COnfCHOX or the 2D baseline,
//! a solve with the factor, both reported against the exact cost model and the lower bound.
//!
//! `A` is a random Hermitian positive definite matrix (uniform entries in `[−1, 1)` off the
//! diagonal, `2N` on it: diagonally dominant, the same on any rank count and layout); only its
//! `--uplo` triangle is read. `--check` computes the factor residual
//! `‖A − L·Lᴴ‖₁ / (‖A‖₁·N·ε)` (threshold [`CHOLESKY_THRESHOLD`], ScaLAPACK's `LLT.dat`) and the
//! solve residual `‖B − A·X‖_∞ / (‖A‖_∞·‖X‖_∞·N·ε)` (the same threshold: `LLT.dat` has one for
//! both).

use crate::factor_args::FactorArgs;
use crate::{square_grid, Backend, Job, LayoutKind, ScalarType, SEED_A, SEED_B};
use clap::{Args, ValueEnum};
use redblue::check::{cholesky_residual, solve_residual, CHOLESKY_THRESHOLD};
use redblue::cholesky::{
    cholesky_in_place_with, cholesky_lower_bound, cholesky_with, CholeskyAlgorithm, CholeskyParams,
    CholeskyPlan,
};
use redblue::comm::{CommStats, Communicator, CommunicatorExt, ReduceOp};
use redblue::core::{c32, c64, random, RealScalar, Scalar, Uplo};
use redblue::dist::{AnyLayout, BlockCyclic, GridOrder, Layout, OwnedDistMatrix};
use redblue::kernels::{KernelScalar, Par};
use redblue::Error;
use serde_json::json;
use std::time::Instant;

/// The triangle of `A` that holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Triangle {
    /// `A = L·Lᴴ` from the lower triangle.
    Lower,
    /// `A = Uᴴ·U` from the upper triangle.
    Upper,
}

impl Triangle {
    fn uplo(self) -> Uplo {
        match self {
            Triangle::Lower => Uplo::Lower,
            Triangle::Upper => Uplo::Upper,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Triangle::Lower => "lower",
            Triangle::Upper => "upper",
        }
    }
}

#[derive(Args, Clone, Debug)]
pub struct CholeskyArgs {
    #[command(flatten)]
    common: FactorArgs,
    /// confchox (2.5D) or 2d (ScaLAPACK's PxPOTRF).
    #[arg(long, default_value = "confchox")]
    algorithm: CholeskyAlgorithm,
    /// The triangle of A that is read.
    #[arg(long, value_enum, default_value_t = Triangle::Lower)]
    uplo: Triangle,
}
impl CholeskyArgs {
    fn params(&self) -> CholeskyParams {
        let mut params = CholeskyParams::default()
            .with_algorithm(self.algorithm)
            .with_max_idle_fraction(self.common.idle)
            .with_look_ahead(self.common.look_ahead);
        params.grid = self.common.grid;
        params.layers = self.common.layers;
        params.block = self.common.block;
        params.memory_words = self.common.memory;
        params
    }
}

/// What `plan cholesky` prints and `cholesky` reports besides measurements.
struct Planned {
    plan: CholeskyPlan,
    /// Largest words sent / received by a rank by the exact model (or the average over the
    /// ranks when the replay would take too long: `exact` false).
    model_sent_max: u64,
    model_received_max: u64,
    exact: bool,
    /// The same for the 2D baseline on the same ranks (exact or average as above).
    two_d_sent_max: u64,
    lower_bound_words: f64,
    /// The largest local array of a layer.
    memory_words_max: u64,
}

/// Largest words sent and received by a rank in `plan`, exactly when cheap.
fn model_maxima(plan: &CholeskyPlan, p: usize) -> (u64, u64, bool) {
    if plan.replay_is_cheap(p) {
        let costs = plan.rank_costs(p, 8);
        let sent = costs.iter().map(|s| s.words_sent).max().unwrap_or(0);
        let received = costs.iter().map(|s| s.words_received).max().unwrap_or(0);
        (sent, received, true)
    } else {
        let average = plan.average_words().round() as u64;
        (average, average, false)
    }
}

fn plan(args: &CholeskyArgs, p: usize) -> Result<Planned, Error> {
    let n = args.common.n;
    let plan = CholeskyPlan::new(n, p, &args.params())?;
    let (model_sent_max, model_received_max, exact) = model_maxima(&plan, p);
    let two_d = CholeskyParams::default()
        .with_algorithm(CholeskyAlgorithm::TwoD)
        .with_max_idle_fraction(args.common.idle);
    let two_d_plan = CholeskyPlan::new(n, p, &two_d)?;
    let (two_d_sent_max, _, _) = model_maxima(&two_d_plan, p);
    let grid = plan.grid;
    let tiles = plan.native_layout()?.local_len(0) as u64;
    let memory = args
        .common
        .memory
        .map_or(grid.replica_words(n), |m| m as f64);
    Ok(Planned {
        plan,
        model_sent_max,
        model_received_max,
        exact,
        two_d_sent_max,
        lower_bound_words: cholesky_lower_bound(n as f64, grid.ranks() as f64, memory.max(1.0)),
        memory_words_max: tiles,
    })
}

/// Element `(i, j)` of the miniapp's Hermitian positive definite matrix (both triangles).
fn hpd_entry<T: Scalar>(n: usize, i: usize, j: usize) -> T {
    match i.cmp(&j) {
        std::cmp::Ordering::Equal => T::from_real(T::Real::from_f64(2.0 * n as f64)),
        std::cmp::Ordering::Greater => random::uniform(i, j, SEED_A),
        std::cmp::Ordering::Less => random::uniform::<T>(j, i, SEED_A).conj(),
    }
}

/// What one rank reports after the run.
struct RankReport {
    seconds: f64,
    solve_seconds: f64,
    stats: CommStats,
    residual: Option<f64>,
    solve_residual: Option<f64>,
}

/// The run on one rank.
fn run_rank<T: KernelScalar, C: Communicator>(
    comm: &C,
    args: &CholeskyArgs,
    planned: &Planned,
) -> Result<RankReport, Error> {
    let (n, p, k) = (args.common.n, comm.size(), args.common.nrhs);
    let par = if args.common.threads > 1 {
        Par::Threads(args.common.threads)
    } else {
        Par::Seq
    };
    let plan = &planned.plan;
    let (layout_a, layout_b): (AnyLayout, AnyLayout) = match args.common.layout {
        LayoutKind::Native => {
            let (g, v) = (plan.grid, plan.block);
            let b = BlockCyclic::new(n, k, v, v, g.px, g.py)?;
            (
                plan.native_layout()?.into(),
                b.with_order(GridOrder::ColMajor).into(),
            )
        }
        LayoutKind::BlockCyclic => {
            let (pr, pc) = square_grid(p);
            let bc = |cols| BlockCyclic::new(n, cols, 64, 64, pr, pc);
            (bc(n)?.into(), bc(k)?.into())
        }
    };
    let a = OwnedDistMatrix::from_fn(comm, layout_a, |i, j| hpd_entry::<T>(n, i, j))?;
    let uplo = args.uplo.uplo();
    // The native layout's lower triangle is factored in place on a copy made before the clock
    // starts (as ScaLAPACK's pdpotrf overwrites its input); otherwise `cholesky_with` copies.
    let in_place = args.common.layout == LayoutKind::Native && uplo == Uplo::Lower;
    let mut times = Vec::new();
    let mut stats = CommStats::default();
    let mut fac = None;
    for _ in 0..args.common.reps {
        drop(fac.take()); // the previous factor's memory back before the next run
        let copy = in_place.then(|| a.clone());
        comm.barrier()?;
        comm.reset_stats();
        let start = Instant::now();
        fac = Some(match copy {
            Some(copy) => cholesky_in_place_with(comm, plan, copy, uplo, par),
            None => cholesky_with(comm, plan, &a, uplo, par),
        }?);
        stats = comm.stats();
        // Timed settled, as ScaLAPACK leaves finished factors; the counters, which the model
        // predicts, stop before (settling gathers the layers' shares, none on one layer).
        if let Some(f) = &fac {
            f.settle(comm)?;
        }
        comm.barrier()?;
        let t = start.elapsed().as_secs_f64();
        times.push(comm.all_reduce_one(t, ReduceOp::Max)?);
    }
    let fac = fac.expect("at least one repetition");
    times.sort_by(f64::total_cmp);
    let b = OwnedDistMatrix::<T, _>::random(comm, layout_b, SEED_B)?;
    comm.barrier()?;
    let start = Instant::now();
    let x = fac.solve(comm, &b)?;
    let solve_seconds = comm.all_reduce_one(start.elapsed().as_secs_f64(), ReduceOp::Max)?;
    let (residual, solve_res) = if args.common.check {
        (
            Some(cholesky_residual(comm, &a, uplo, &fac)?),
            Some(solve_residual(comm, &a, &x, &b)?),
        )
    } else {
        (None, None)
    };
    Ok(RankReport {
        seconds: times[times.len() / 2],
        solve_seconds,
        stats,
        residual,
        solve_residual: solve_res,
    })
}

/// Prints the plan fields (`plan cholesky`).
fn print_plan(args: &CholeskyArgs, p: usize, planned: &Planned) {
    let plan = &planned.plan;
    if args.common.json {
        let line = json!({
            "op": "cholesky", "n": args.common.n, "ranks": p, "ranks_used": plan.ranks(),
            "type": args.common.ty.name(), "algorithm": args.algorithm.to_string(),
            "uplo": args.uplo.name(),
            "grid": plan.grid.to_string(), "block": plan.block,
            "model_words": planned.model_sent_max,
            "model_received_max": planned.model_received_max,
            "model": if planned.exact { "exact" } else { "average" },
            "two_d_words": planned.two_d_sent_max,
            "lower_bound_words": planned.lower_bound_words,
            "memory_words_max": planned.memory_words_max,
            "memory_bytes_max": plan.memory_bytes(args.common.bytes()),
        });
        println!("{line}");
        return;
    }
    println!(
        "plan cholesky {0}×{0} on {p} ranks ({1})",
        args.common.n, args.algorithm
    );
    println!(
        "  grid              {} ({} ranks used), tile width {}",
        plan.grid,
        plan.ranks(),
        plan.block
    );
    if planned.exact {
        println!(
            "  model words/rank  {} sent (max), {} received (max)",
            planned.model_sent_max, planned.model_received_max
        );
    } else {
        println!(
            "  model words/rank  {} on average (the rank-by-rank replay would take too long)",
            planned.model_sent_max
        );
    }
    println!(
        "  2D plan           {} words sent (max) per rank",
        planned.two_d_sent_max
    );
    println!(
        "  lower bound       {:.0} words per rank",
        planned.lower_bound_words
    );
    println!(
        "  memory/rank       {} words of tiles, {} bytes with the buffers",
        planned.memory_words_max,
        plan.memory_bytes(args.common.bytes())
    );
}

/// Prints the run (`cholesky`), on rank 0; `all` holds every rank's (words sent, messages
/// sent).
fn print_run(
    args: &CholeskyArgs,
    p: usize,
    planned: &Planned,
    all: &[(u64, u64)],
    me: &RankReport,
) {
    let max_sent = all.iter().map(|r| r.0).max().unwrap_or(0);
    let avg_sent = all.iter().map(|r| r.0 as f64).sum::<f64>() / all.len().max(1) as f64;
    let max_messages = all.iter().map(|r| r.1).max().unwrap_or(0);
    let n = args.common.n as f64;
    let gflops = args.common.ty.flops_per_fma() * n * n * n / 6.0 / me.seconds.max(1e-12) / 1e9;
    let plan = &planned.plan;
    if args.common.json {
        let line = json!({
            "op": "cholesky", "n": args.common.n, "ranks": p, "ranks_used": plan.ranks(),
            "type": args.common.ty.name(), "algorithm": args.algorithm.to_string(),
            "uplo": args.uplo.name(),
            "grid": plan.grid.to_string(), "block": plan.block,
            "backend": format!("{:?}", args.common.backend).to_lowercase(),
            "layout": args.common.layout.name(), "nrhs": args.common.nrhs, "reps": args.common.reps,
            "time_s": me.seconds, "gflops": gflops, "solve_time_s": me.solve_seconds,
            "words_sent_max": max_sent, "words_sent_avg": avg_sent,
            "messages_max": max_messages, "model_words": planned.model_sent_max,
            "two_d_words": planned.two_d_sent_max,
            "lower_bound_words": planned.lower_bound_words,
            "memory_words_max": planned.memory_words_max,
            "residual": me.residual, "solve_residual": me.solve_residual,
            "threshold": CHOLESKY_THRESHOLD, "solve_threshold": CHOLESKY_THRESHOLD,
        });
        println!("{line}");
        return;
    }
    println!(
        "cholesky {0}×{0} {1} on {p} ranks ({2:?}, {3} layout, {4}), {5}",
        args.common.n,
        args.common.ty.name(),
        args.common.backend,
        args.common.layout.name(),
        args.uplo.name(),
        args.algorithm
    );
    println!(
        "  grid              {} ({} ranks used), tile width {}",
        plan.grid,
        plan.ranks(),
        plan.block
    );
    println!(
        "  time              {:.4} s (median of {}), {gflops:.1} GFLOP/s",
        me.seconds, args.common.reps
    );
    println!(
        "  solve             {:.4} s for {} right-hand sides",
        me.solve_seconds, args.common.nrhs
    );
    println!(
        "  words sent/rank   max {max_sent}, avg {avg_sent:.0}; model {}",
        planned.model_sent_max
    );
    println!(
        "  2D plan           {}; lower bound {:.0} words per rank",
        planned.two_d_sent_max, planned.lower_bound_words
    );
    println!("  messages/rank     max {max_messages}");
    for (name, value, threshold) in [
        ("residual", me.residual, CHOLESKY_THRESHOLD),
        ("solve residual", me.solve_residual, CHOLESKY_THRESHOLD),
    ] {
        if let Some(r) = value {
            let verdict = if r <= threshold { "ok" } else { "FAILED" };
            println!("  {name:<17} {r:.3} (threshold {threshold}): {verdict}");
        }
    }
}

fn cholesky_on<C: Communicator>(comm: &C, args: &CholeskyArgs) -> Result<bool, Error> {
    let p = comm.size();
    let planned = plan(args, p)?;
    let report = match args.common.ty {
        ScalarType::F32 => run_rank::<f32, C>(comm, args, &planned)?,
        ScalarType::F64 => run_rank::<f64, C>(comm, args, &planned)?,
        ScalarType::C32 => run_rank::<c32, C>(comm, args, &planned)?,
        ScalarType::C64 => run_rank::<c64, C>(comm, args, &planned)?,
    };
    let mine = [report.stats.words_sent, report.stats.messages_sent];
    let mut flat = vec![0u64; 2 * p];
    comm.all_gather(&mine, &mut flat)?;
    let all: Vec<(u64, u64)> = flat.chunks(2).map(|c| (c[0], c[1])).collect();
    if comm.rank() == 0 {
        print_run(args, p, &planned, &all, &report);
    }
    let ok = report.residual.is_none_or(|r| r <= CHOLESKY_THRESHOLD)
        && report
            .solve_residual
            .is_none_or(|r| r <= CHOLESKY_THRESHOLD);
    Ok(comm.all_reduce_one(u32::from(ok), ReduceOp::Min)? == 1)
}

impl Job for CholeskyArgs {
    fn ranks(&self) -> usize {
        self.common.ranks
    }

    fn backend(&self) -> Backend {
        self.common.backend
    }

    fn input_bytes(&self) -> f64 {
        self.common.input_bytes()
    }

    fn check(&self, p: usize) -> Result<(f64, String), String> {
        let planned = plan(self, p).map_err(|e| e.to_string())?;
        let plan = &planned.plan;
        let factor = plan.memory_bytes(self.common.bytes()) as f64 * plan.ranks() as f64;
        // The check's factor, residual matrix and the product's buffers.
        Ok(self
            .common
            .bytes_needed(factor, plan.grid.c, "factor and products"))
    }

    fn run<C: Communicator>(&self, comm: &C) -> Result<bool, Error> {
        cholesky_on(comm, self)
    }
}

/// `redblue plan cholesky`.
pub fn plan_command(args: &CholeskyArgs) -> Result<bool, String> {
    let planned = plan(args, args.common.ranks).map_err(|e| e.to_string())?;
    print_plan(args, args.common.ranks, &planned);
    Ok(true)
}
