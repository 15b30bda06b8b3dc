//! `redblue lu` and `redblue plan lu`: `A = P·L·U` with COnfLUX or the 2D baseline, a solve
//! with the factors, both reported against the exact cost model, the 2D model and the lower
//! bound.
//!
//! `--check` computes the factorisation residual `‖P·A − L·U‖₁ / (‖A‖₁·N·ε)` and the solve
//! residual `‖B − A·X‖_∞ / (‖A‖_∞·‖X‖_∞·N·ε)` ([`redblue::check`]: the products by COSMA, the
//! norms distributed) and fails if either exceeds [`CHECK_THRESHOLD`]. `A` and the right-hand
//! sides `B` are independent random matrices.

use crate::factor_args::FactorArgs;
use crate::{square_grid, Backend, Job, LayoutKind, ScalarType, SEED_A, SEED_B};
use clap::Args;
use redblue::check::{lu_residual, solve_residual, LU_THRESHOLD};
use redblue::comm::{CommStats, Communicator, CommunicatorExt, ReduceOp};
use redblue::core::{c32, c64};
use redblue::dist::{AnyLayout, BlockCyclic, GridOrder, Layout, OwnedDistMatrix};
use redblue::kernels::{KernelScalar, Par};
use redblue::lu::{
    lu_in_place_with, lu_lower_bound, lu_with, two_d_words, two_five_d_messages, two_five_d_words,
    LuAlgorithm, LuParams, LuPlan, TileGrid,
};
use redblue::Error;
use serde_json::json;
use std::time::Instant;

/// `--check` fails above this normalised residual: ScaLAPACK's LU tester's threshold
/// (`THRESH = 16` in its `LU.dat`). Honest factorisations of the miniapp's random matrices
/// stay well below 1.
pub const CHECK_THRESHOLD: f64 = LU_THRESHOLD;

#[derive(Args, Clone, Debug)]
pub struct LuArgs {
    #[command(flatten)]
    common: FactorArgs,
    /// conflux (2.5D, tournament pivoting), 2d (partial pivoting), 2.5d-nopiv (seed 001's 2.5D
    /// LU without pivoting: the matrix gets N added to its diagonal) or 2.5d-ca (seed 001's,
    /// with CA-pivoting).
    #[arg(long, default_value = "conflux")]
    algorithm: LuAlgorithm,
    /// With `plan lu`: every algorithm's plan for the same problem side by side, next to the
    /// lower bound.
    #[arg(long)]
    compare: bool,
}
impl LuArgs {
    fn params(&self) -> LuParams {
        let mut params = LuParams::default()
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

/// What `plan lu` prints and `lu` reports besides measurements.
struct Planned {
    plan: LuPlan,
    grid: TileGrid,
    block: usize,
    /// Largest words sent / received by a rank, by the exact model with no interchanges (or
    /// the average over the ranks when the replay would take too long: `exact` false).
    model_words: u64,
    model_received_max: u64,
    exact: bool,
    lower_bound_words: f64,
    two_d_words: f64,
    /// The largest local array of a layer (each rank's copy of its tiles).
    memory_words_max: u64,
}

fn plan(args: &LuArgs, p: usize) -> Result<Planned, Error> {
    let n = args.common.n;
    let plan = LuPlan::new(n, p, &args.params())?;
    let (grid, v) = (plan.grid, plan.block);
    let exact = plan.replay_is_cheap(p);
    let (model_words, model_received_max) = if exact {
        let costs = plan.rank_costs(p, args.common.bytes());
        (
            costs.iter().map(|s| s.words_sent).max().unwrap_or(0),
            costs.iter().map(|s| s.words_received).max().unwrap_or(0),
        )
    } else {
        let average = plan.average_words().round() as u64;
        (average, average)
    };
    let tiles = native_layout(n, v, grid)?.local_len(0) as u64;
    let memory = args
        .common
        .memory
        .map_or(grid.replica_words(n), |m| m as f64);
    Ok(Planned {
        plan,
        grid,
        block: v,
        model_words,
        model_received_max,
        exact,
        lower_bound_words: lu_lower_bound(n as f64, grid.ranks() as f64, memory.max(1.0)),
        two_d_words: two_d_words(n as f64, grid.ranks() as f64),
        memory_words_max: tiles,
    })
}

/// The factorisation's own layout: layer 0's `v × v` tiles.
fn native_layout(n: usize, v: usize, grid: TileGrid) -> Result<BlockCyclic, Error> {
    Ok(BlockCyclic::new(n, n, v, v, grid.px, grid.py)?.with_order(GridOrder::ColMajor))
}

/// What one rank reports after the run.
struct RankReport {
    seconds: f64,
    solve_seconds: f64,
    stats: CommStats,
    /// The exact model of this run (its pivots), largest words sent by a rank.
    model_words: u64,
    growth: f64,
    residual: Option<f64>,
    solve_residual: Option<f64>,
}

/// The run on one rank.
fn run_rank<T: KernelScalar, C: Communicator>(
    comm: &C,
    args: &LuArgs,
    planned: &Planned,
) -> Result<RankReport, Error> {
    let (n, p, k) = (args.common.n, comm.size(), args.common.nrhs);
    let par = if args.common.threads > 1 {
        Par::Threads(args.common.threads)
    } else {
        Par::Seq
    };
    let (layout_a, layout_b): (AnyLayout, AnyLayout) = match args.common.layout {
        LayoutKind::Native => {
            let (g, v) = (planned.grid, planned.block);
            let b = BlockCyclic::new(n, k, v, v, g.px, g.py)?;
            (
                native_layout(n, v, g)?.into(),
                b.with_order(GridOrder::ColMajor).into(),
            )
        }
        LayoutKind::BlockCyclic => {
            let (pr, pc) = square_grid(p);
            let bc = |cols| BlockCyclic::new(n, cols, 64, 64, pr, pc);
            (bc(n)?.into(), bc(k)?.into())
        }
    };
    // Without pivoting, the random matrix with `N` added to its diagonal (diagonally dominant:
    // it needs no interchanges); the others factor the random matrix itself.
    let shift = if args.algorithm == LuAlgorithm::NoPivot25d {
        n as f64
    } else {
        0.0
    };
    let a = OwnedDistMatrix::<T, _>::from_fn(comm, layout_a, |i, j| {
        let x: T = redblue::core::random::uniform(i, j, SEED_A);
        if i == j {
            x + T::from_f64_parts(shift, 0.0)
        } else {
            x
        }
    })?;
    let native = args.common.layout == LayoutKind::Native;
    let mut times = Vec::new();
    let mut stats = CommStats::default();
    let mut fac = None;
    for _ in 0..args.common.reps {
        drop(fac.take()); // the previous factors' memory back before the next run
                          // The native layout is factored in place on a copy made before the clock starts (as
                          // ScaLAPACK's pdgetrf overwrites its input); another layout is copied in by `lu`.
        let copy = native.then(|| a.clone());
        comm.barrier()?;
        comm.reset_stats();
        let start = Instant::now();
        fac = Some(match copy {
            Some(copy) => lu_in_place_with(comm, &planned.plan, copy, par),
            None => lu_with(comm, &planned.plan, &a, par),
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
    let model = planned
        .plan
        .rank_costs_with(p, fac.step_pivots(), args.common.bytes());
    // Independent of A: a right-hand side made of A's own columns would be solved exactly.
    let b = OwnedDistMatrix::<T, _>::random(comm, layout_b, SEED_B)?;
    comm.barrier()?;
    let start = Instant::now();
    let x = fac.solve(comm, &b)?;
    let solve_seconds = comm.all_reduce_one(start.elapsed().as_secs_f64(), ReduceOp::Max)?;
    let (residual, solve_res) = if args.common.check {
        (
            Some(lu_residual(comm, &a, &fac)?),
            Some(solve_residual(comm, &a, &x, &b)?),
        )
    } else {
        (None, None)
    };
    Ok(RankReport {
        seconds: times[times.len() / 2],
        solve_seconds,
        stats,
        model_words: model.iter().map(|s| s.words_sent).max().unwrap_or(0),
        growth: fac.growth(),
        residual,
        solve_residual: solve_res,
    })
}

/// Seed 001's cost formulas of its 2.5D LU at a plan's layers and ranks — `N²/√(cP)` words
/// and `√(cP)·log₂ P` messages per rank — for its two algorithms; `None` for the others.
fn paper_cost(n: usize, algorithm: LuAlgorithm, grid: TileGrid) -> Option<(f64, f64)> {
    algorithm.square_layers().then(|| {
        let (p, c) = (grid.ranks() as f64, grid.c as f64);
        (two_five_d_words(n as f64, p, c), two_five_d_messages(p, c))
    })
}

/// Prints the plan fields (`plan lu`).
fn print_plan(args: &LuArgs, p: usize, planned: &Planned) {
    let paper = paper_cost(args.common.n, args.algorithm, planned.grid);
    if args.common.json {
        let line = json!({
            "op": "lu", "n": args.common.n, "ranks": p, "ranks_used": planned.grid.ranks(),
            "type": args.common.ty.name(), "algorithm": args.algorithm.to_string(),
            "grid": planned.grid.to_string(), "block": planned.block,
            "model_words": planned.model_words,
            "model_received_max": planned.model_received_max,
            "model": if planned.exact { "exact" } else { "average" },
            "two_d_words": planned.two_d_words,
            "lower_bound_words": planned.lower_bound_words,
            "memory_words_max": planned.memory_words_max,
            "paper_words": paper.map(|x| x.0), "paper_messages": paper.map(|x| x.1),
        });
        println!("{line}");
    } else {
        println!(
            "plan lu {0}×{0} on {p} ranks ({1})",
            args.common.n, args.algorithm
        );
        println!(
            "  grid              {} ({} ranks used), tile width {}",
            planned.grid,
            planned.grid.ranks(),
            planned.block
        );
        if planned.exact {
            println!(
                "  model words/rank  {} sent (max), {} received (max), no interchanges",
                planned.model_words, planned.model_received_max
            );
        } else {
            println!(
                "  model words/rank  {} on average (the rank-by-rank replay would take too long), \
                 no interchanges",
                planned.model_words
            );
        }
        println!(
            "  2D model          {:.0} words per rank",
            planned.two_d_words
        );
        println!(
            "  lower bound       {:.0} words per rank",
            planned.lower_bound_words
        );
        if let Some((words, messages)) = paper {
            println!(
                "  seed 001          N²/√(cP) = {words:.0} words, √(cP)·log₂ P = {messages:.0} \
                 messages per rank (the O(·) taken as 1)"
            );
        }
        println!("  memory/rank       {} words", planned.memory_words_max);
    }
}

/// Prints the run (`lu`), on rank 0; `all` holds every rank's (words sent, messages sent).
fn print_run(args: &LuArgs, p: usize, planned: &Planned, all: &[(u64, u64)], me: &RankReport) {
    let max_sent = all.iter().map(|r| r.0).max().unwrap_or(0);
    let avg_sent = all.iter().map(|r| r.0 as f64).sum::<f64>() / all.len().max(1) as f64;
    let max_messages = all.iter().map(|r| r.1).max().unwrap_or(0);
    let n = args.common.n as f64;
    let gflops = args.common.ty.flops_per_fma() * n * n * n / 3.0 / me.seconds.max(1e-12) / 1e9;
    if args.common.json {
        let line = json!({
            "op": "lu", "n": args.common.n, "ranks": p, "ranks_used": planned.grid.ranks(),
            "type": args.common.ty.name(), "algorithm": args.algorithm.to_string(),
            "grid": planned.grid.to_string(), "block": planned.block,
            "backend": format!("{:?}", args.common.backend).to_lowercase(),
            "layout": args.common.layout.name(), "nrhs": args.common.nrhs, "reps": args.common.reps,
            "time_s": me.seconds, "gflops": gflops, "solve_time_s": me.solve_seconds,
            "words_sent_max": max_sent, "words_sent_avg": avg_sent,
            "messages_max": max_messages, "model_words": me.model_words,
            "two_d_words": planned.two_d_words,
            "lower_bound_words": planned.lower_bound_words,
            "memory_words_max": planned.memory_words_max, "growth_factor": me.growth,
            "residual": me.residual, "solve_residual": me.solve_residual,
            "threshold": CHECK_THRESHOLD,
        });
        println!("{line}");
        return;
    }
    println!(
        "lu {0}×{0} {1} on {p} ranks ({2:?}, {3} layout), {4}",
        args.common.n,
        args.common.ty.name(),
        args.common.backend,
        args.common.layout.name(),
        args.algorithm
    );
    println!(
        "  grid              {} ({} ranks used), tile width {}",
        planned.grid,
        planned.grid.ranks(),
        planned.block
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
        "  words sent/rank   max {max_sent}, avg {avg_sent:.0}; model {} (this run's pivots)",
        me.model_words
    );
    println!(
        "  2D model          {:.0}; lower bound {:.0} words per rank",
        planned.two_d_words, planned.lower_bound_words
    );
    println!("  messages/rank     max {max_messages}");
    println!("  growth factor     {:.3}", me.growth);
    for (name, value) in [
        ("residual", me.residual),
        ("solve residual", me.solve_residual),
    ] {
        if let Some(r) = value {
            let verdict = if r <= CHECK_THRESHOLD { "ok" } else { "FAILED" };
            println!("  {name:<17} {r:.3} (threshold {CHECK_THRESHOLD}): {verdict}");
        }
    }
}

fn lu_on<C: Communicator>(comm: &C, args: &LuArgs) -> Result<bool, Error> {
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
    let ok = [report.residual, report.solve_residual]
        .iter()
        .all(|r| r.is_none_or(|r| r <= CHECK_THRESHOLD));
    Ok(comm.all_reduce_one(u32::from(ok), ReduceOp::Min)? == 1)
}

impl Job for LuArgs {
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
        let ranks = planned.grid.ranks() as f64;
        let factor = planned.plan.memory_bytes(self.common.bytes()) as f64 * ranks;
        // The check's L, U, P·A and the product's buffers.
        Ok(self
            .common
            .bytes_needed(factor, planned.grid.c, "L, U and products"))
    }

    fn run<C: Communicator>(&self, comm: &C) -> Result<bool, Error> {
        lu_on(comm, self)
    }
}

/// `redblue plan lu`.
pub fn plan_command(args: &LuArgs) -> Result<bool, String> {
    if args.compare {
        compare_plans(args);
        return Ok(true);
    }
    let planned = plan(args, args.common.ranks).map_err(|e| e.to_string())?;
    print_plan(args, args.common.ranks, &planned);
    Ok(true)
}

/// `plan lu --compare`: every algorithm planned for the same order and ranks (the same grid,
/// layers and tile width when given), one row each, an algorithm that cannot plan it with its
/// reason.
fn compare_plans(args: &LuArgs) {
    let p = args.common.ranks;
    let rows: Vec<(LuAlgorithm, Result<Planned, Error>)> = LuAlgorithm::ALL
        .into_iter()
        .map(|a| {
            let one = LuArgs {
                algorithm: a,
                ..args.clone()
            };
            (a, plan(&one, p))
        })
        .collect();
    let how = |x: &Planned| if x.exact { "exact" } else { "average" };
    if args.common.json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(a, r)| match r {
                Ok(x) => json!({
                    "algorithm": a.to_string(), "grid": x.grid.to_string(), "block": x.block,
                    "ranks_used": x.grid.ranks(), "model_words": x.model_words,
                    "model_received_max": x.model_received_max, "model": how(x),
                    "lower_bound_words": x.lower_bound_words,
                    "memory_words_max": x.memory_words_max,
                    "paper_words": paper_cost(args.common.n, *a, x.grid).map(|c| c.0),
                }),
                Err(e) => json!({ "algorithm": a.to_string(), "error": e.to_string() }),
            })
            .collect();
        let two_d = two_d_words(args.common.n as f64, p as f64);
        let line = json!({
            "op": "lu", "n": args.common.n, "ranks": p, "two_d_words": two_d, "algorithms": rows,
        });
        println!("{line}");
        return;
    }
    println!(
        "plan lu {0}×{0} on {p} ranks: every algorithm (words per rank, no interchanges)",
        args.common.n
    );
    println!(
        "  {:<10} {:>9} {:>5} {:>6} {:>14} {:>14} {:>14} {:>12}",
        "", "grid", "tile", "ranks", "sent (max)", "received (max)", "lower bound", "memory"
    );
    for (a, r) in &rows {
        match r {
            Ok(x) => println!(
                "  {:<10} {:>9} {:>5} {:>6} {:>14} {:>14} {:>14.0} {:>12}{}",
                a.to_string(),
                x.grid.to_string(),
                x.block,
                x.grid.ranks(),
                x.model_words,
                x.model_received_max,
                x.lower_bound_words,
                x.memory_words_max,
                if x.exact { "" } else { "  (averages)" }
            ),
            Err(e) => println!("  {:<10} cannot: {e}", a.to_string()),
        }
    }
}
