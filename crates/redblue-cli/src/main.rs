//! `redblue`, the miniapp: `redblue gemm …` runs `C = alpha·op(A)·op(B) + beta·C`, `redblue
//! lu …` factors `A = P·L·U` and `redblue cholesky …` factors `A = L·Lᴴ` (and both solve with
//! the factors) on threads-as-ranks (default) or under `mpirun` (`--backend mpi`, feature
//! `mpi`), and all report the time, the flop rate and the words moved against the cost model
//! and the lower bound; `redblue plan gemm|lu|cholesky …` prints the plan without running
//! anything; `redblue io-sim cholesky …` runs seed 002's sequential algorithms on the simulated
//! two-level memory; `redblue ooc-lu …` factors a matrix held in a file (seed 003).
//!
//! ```text
//! redblue gemm --m 2000 --n 2000 --k 2000 --ranks 4 --check
//! redblue gemm --m 512 --n 512 --k 65536 --ranks 8 --algorithm summa --json
//! redblue plan gemm --m 16384 --n 16384 --k 16384 --ranks 4096 --json
//! redblue lu --n 4096 --ranks 8 --check
//! redblue lu --n 2000 --ranks 4 --algorithm 2d --type c64 --json
//! redblue plan lu --n 65536 --ranks 512 --json
//! redblue cholesky --n 4096 --ranks 2 --check
//! redblue plan cholesky --n 16384 --ranks 512
//! redblue io-sim cholesky --n 512 --memory 768 --algorithm square --layout morton
//! redblue ooc-lu --n 4096 --memory 16000000 --check
//! ```

mod cholesky;
mod factor_args;
mod gemm;
mod io_sim;
mod lu;
mod memory;
mod ooc;

use clap::{Parser, Subcommand, ValueEnum};
use redblue::comm::{run_ranks, Communicator};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "redblue",
    version,
    about = "Communication-optimal distributed dense linear algebra: the miniapp"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a distributed multiplication C = alpha·op(A)·op(B) + beta·C and report it.
    Gemm(gemm::GemmArgs),
    /// Run a distributed LU factorisation A = P·L·U (and a solve) and report it.
    Lu(lu::LuArgs),
    /// Run a distributed Cholesky factorisation A = L·Lᴴ (and a solve) and report it.
    Cholesky(cholesky::CholeskyArgs),
    /// Factor a matrix held in a file, two panels in memory (seed 003's out-of-core LU).
    OocLu(ooc::OocLuArgs),
    /// Run a sequential algorithm on the simulated two-level memory and count what it moves.
    IoSim {
        #[command(subcommand)]
        what: IoSimWhat,
    },
    /// Print the plan of a run (grid, model, lower bound, memory) without running it.
    Plan {
        #[command(subcommand)]
        what: PlanWhat,
    },
}

#[derive(Subcommand)]
enum PlanWhat {
    /// The plan of `redblue gemm` with the same arguments.
    Gemm(gemm::GemmArgs),
    /// The plan of `redblue lu` with the same arguments.
    Lu(lu::LuArgs),
    /// The plan of `redblue cholesky` with the same arguments.
    Cholesky(cholesky::CholeskyArgs),
}

#[derive(Subcommand)]
enum IoSimWhat {
    /// Seed 002's sequential Cholesky algorithms: words and messages against the lower bounds.
    Cholesky(io_sim::IoSimArgs),
}

/// The element type of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScalarType {
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `Complex<f32>`.
    C32,
    /// `Complex<f64>`.
    C64,
}

impl ScalarType {
    /// Bytes of one element.
    pub fn bytes(self) -> usize {
        match self {
            ScalarType::F32 => 4,
            ScalarType::F64 | ScalarType::C32 => 8,
            ScalarType::C64 => 16,
        }
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::F32 => "f32",
            ScalarType::F64 => "f64",
            ScalarType::C32 => "c32",
            ScalarType::C64 => "c64",
        }
    }

    /// Real flops per multiply-add: 2, or 8 for complex types.
    pub fn flops_per_fma(self) -> f64 {
        match self {
            ScalarType::F32 | ScalarType::F64 => 2.0,
            ScalarType::C32 | ScalarType::C64 => 8.0,
        }
    }
}

/// Where the ranks come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// Threads as ranks in this process (`--ranks` of them).
    Threads,
    /// MPI: run under mpirun; the ranks are mpirun's (needs the `mpi` feature).
    Mpi,
}

/// The layout the matrices are given in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LayoutKind {
    /// The algorithm's native layouts (no transform traffic).
    Native,
    /// ScaLAPACK block-cyclic, 64 × 64 blocks on a near-square grid (read in place; COSMA is
    /// planned for these layouts).
    BlockCyclic,
}

impl LayoutKind {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            LayoutKind::Native => "native",
            LayoutKind::BlockCyclic => "block-cyclic",
        }
    }
}

/// The near-square ScaLAPACK grid `pr × pc` on `p` ranks (`pr ≤ pc`, `pr·pc = p`).
pub fn square_grid(p: usize) -> (usize, usize) {
    let grid = redblue::comm::GridShape2d::near_square(p);
    (grid.rows, grid.cols)
}

/// The most repetitions a run may ask for: more is a typing slip, not a measurement.
pub const MAX_REPS: usize = 10_000;

/// Parses `--reps`: a count in `1..=MAX_REPS`.
pub fn parse_reps(text: &str) -> Result<usize, String> {
    let reps: usize = text
        .parse()
        .map_err(|e| format!("not a repetition count: {e}"))?;
    if (1..=MAX_REPS).contains(&reps) {
        Ok(reps)
    } else {
        Err(format!("must be from 1 to {MAX_REPS}, not {reps}"))
    }
}

/// The seeds of the miniapp's matrices, all uniform in `[−1, 1)`
/// ([`redblue::core::random::uniform`]): the same matrices on any rank count and layout.
pub const SEED_A: u64 = 1;
/// The seed of `B` (of the product; of the right-hand sides of the solve).
pub const SEED_B: u64 = 2;
/// The seed of the input `C` of the product.
pub const SEED_C: u64 = 3;

/// A run on every rank of a communicator: `Ok(false)` when its check failed, `Err` (the same
/// on every rank) when it could not run.
pub trait Job: Sync {
    /// `--ranks`.
    fn ranks(&self) -> usize;
    /// `--backend`.
    fn backend(&self) -> Backend;
    /// Bytes of the inputs alone, over all ranks (known without planning): a first, instant
    /// check that the run can fit.
    fn input_bytes(&self) -> f64;
    /// Checks the request on `p` ranks before starting them, so that it is reported once, and
    /// returns what the run needs: bytes over all ranks, and of what.
    fn check(&self, p: usize) -> Result<(f64, String), String>;
    /// The run on one rank.
    fn run<C: Communicator>(&self, comm: &C) -> Result<bool, redblue::Error>;
}

/// Runs `job` on threads-as-ranks or under MPI; rank 0's outcome. Nothing is allocated for a
/// run that cannot fit in the memory available.
fn launch(job: &impl Job) -> Result<bool, String> {
    match job.backend() {
        Backend::Threads => {
            let p = job.ranks();
            if p == 0 {
                return Err("--ranks must be at least 1".into());
            }
            memory::check_thread_ranks(p)?;
            memory::check_fits(job.input_bytes(), "the input matrices")?;
            let (needed, what) = job.check(p)?;
            memory::check_fits(needed, &what)?;
            let results = run_ranks(p, |comm| job.run(&comm));
            let first = results.into_iter().next().expect("at least one rank");
            first.map_err(|e| e.to_string())
        }
        Backend::Mpi => launch_mpi(job),
    }
}

#[cfg(feature = "mpi")]
fn launch_mpi(job: &impl Job) -> Result<bool, String> {
    let universe = redblue::comm::MpiUniverse::init().map_err(|e| e.to_string())?;
    let world = universe.world();
    let p = world.size() as f64;
    let inputs = job.input_bytes() / p;
    memory::check_fits_on_every_rank(&world, inputs, "this rank's part of the inputs")?;
    let (needed, what) = job.check(world.size())?;
    memory::check_fits_on_every_rank(&world, needed / p, &format!("this rank's part: {what}"))?;
    match job.run(&world) {
        Ok(passed) => Ok(passed),
        // Errors are agreed before they are returned: every rank has this one and ends alike.
        Err(e) if e.comm_failure().is_none() => Err(e.to_string()),
        // A communication failure may leave other ranks waiting for this one: end the job.
        Err(e) => {
            eprintln!("redblue: rank {}: {e}; aborting the MPI job", world.rank());
            world.abort(2)
        }
    }
}

#[cfg(not(feature = "mpi"))]
fn launch_mpi(_: &impl Job) -> Result<bool, String> {
    Err("--backend mpi needs a redblue built with `--features mpi`".into())
}

/// A reader that stops early (`redblue plan lu … | head -3`) ends the process quietly, as it
/// ends any Unix tool, rather than a panic in the next `println!`: Rust starts programs with
/// `SIGPIPE` ignored, so a write to a closed pipe returns an error that `println!` panics on.
#[cfg(unix)]
fn end_quietly_on_a_closed_pipe() {
    // SAFETY: restoring a signal's default disposition at the start of `main`, before any
    // thread is started; no handler of ours is involved.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    #[cfg(unix)]
    end_quietly_on_a_closed_pipe();
    let cli = Cli::parse();
    let outcome = match &cli.command {
        Command::Gemm(args) => launch(args),
        Command::Lu(args) => launch(args),
        Command::Cholesky(args) => launch(args),
        Command::OocLu(args) => ooc::run(args),
        Command::IoSim {
            what: IoSimWhat::Cholesky(args),
        } => io_sim::run(args),
        Command::Plan {
            what: PlanWhat::Gemm(args),
        } => gemm::plan_command(args),
        Command::Plan {
            what: PlanWhat::Lu(args),
        } => lu::plan_command(args),
        Command::Plan {
            what: PlanWhat::Cholesky(args),
        } => cholesky::plan_command(args),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("redblue: the residual check failed");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("redblue: {e}");
            ExitCode::from(2)
        }
    }
}
