//! `redblue ooc-lu`: seed 003's left-looking out-of-core LU on one process, the matrix in a file
//! (generated, or read from a `.npy`), a few panels of it in memory; reports the time, the flop
//! rate, the elements read and written against the exact model and the seconds they took, and
//! with `--check` the solve's residual, the solve streaming the factors from disk.

use crate::{Backend, ScalarType, SEED_A, SEED_B};
use clap::{Args, ValueEnum};
use redblue::core::{c32, c64, random, RealScalar, Scalar};
use redblue::kernels::{getrf, KernelScalar, MatMut, Par};
use redblue::ooc::fault::{self, Fault};
use redblue::ooc::{
    factor_residual, left_pivoted, left_pivoted_io, left_unpivoted, left_unpivoted_io, lu_right,
    npy, right_io, run_kind, solve_from_file, solve_io, step_flops, DiskMatrix, LuFiles, LuVariant,
    OocError, OocLu, Progress, StepDone,
};
use serde_json::json;

mod ranks;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How the disk copy is kept during the factorisation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Variant {
    /// Pivoted: only the needed trapezoid of each left panel is read.
    LeftPivoted,
    /// Unpivoted: every panel stays in A's row order and is read whole.
    LeftUnpivoted,
    /// Right-looking (the baseline): the trailing matrix read and written every step.
    Right,
}

#[derive(Args, Clone, Debug)]
pub struct OocLuArgs {
    /// Order of A (ignored with --input).
    #[arg(long, default_value_t = 2048)]
    n: usize,
    /// Bytes of memory for the panels: the whole matrix, factored in core, when it fits;
    /// otherwise three panels for the left-looking variants (the active one, the one in use,
    /// the next one being read), two for the right-looking one, the widest that fit.
    ///
    /// A resumed run keeps its panel width.
    #[arg(long)]
    memory: Option<u64>,
    /// The panel width in columns (instead of --memory).
    #[arg(long, conflicts_with = "memory")]
    panel: Option<usize>,
    /// Where the matrix (a.rbm) and its factors (lu.rbm) are written and kept (by default a
    /// temporary folder, removed at the end).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Factor the matrix of this `.npy` file (two-dimensional, square, of --type).
    #[arg(long)]
    input: Option<PathBuf>,
    /// How the disk copy is kept.
    #[arg(long, value_enum, default_value_t = Variant::LeftPivoted)]
    variant: Variant,
    /// Element type.
    #[arg(long = "type", value_enum, default_value_t = ScalarType::F64)]
    ty: ScalarType,
    /// Solve with the factors from disk and check the residual against ScaLAPACK's threshold.
    #[arg(long)]
    check: bool,
    /// One JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Also time the in-core LU of the same matrix (read whole into memory) with the same
    /// threads, right after, and report both.
    #[arg(long)]
    compare_in_core: bool,
    /// Ranks (threads backend; under MPI the ranks are mpirun's): above 1, the left-looking
    /// pivoted LU over the ranks (seed 003's hybrid on a P x 1 grid), each rank reading and
    /// writing its own rows.
    #[arg(long, default_value_t = 1)]
    ranks: usize,
    /// threads or mpi (under mpirun, the folder must be one every rank sees).
    #[arg(long, value_enum, default_value_t = Backend::Threads)]
    backend: Backend,
    /// With --ranks: one file all ranks share, or a file per rank holding its rows.
    #[arg(long, value_enum, default_value_t = FileMode::Shared)]
    files: FileMode,
    /// With --ranks: rows are dealt to the ranks in blocks of this many, cyclically (by
    /// default a page's worth, 4096 bytes: in a shared file no two ranks then write the same
    /// page, and the writes are few; smaller blocks made them several times slower).
    #[arg(long)]
    row_block: Option<usize>,
    /// Threads for the kernels (the products and panel factorisations).
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Go on with the run recorded in --dir (stopped by a crash, a kill or an error) from its
    /// last completed step; the matrix and the panel width are the run's.
    #[arg(long, requires = "dir")]
    resume: bool,
    /// Make the n-th read, write or sync fail, or abort the process in the middle of the n-th
    /// write (read:N, write:N, sync:N, abort:N; with --ranks, rank 0's): for the crash tests.
    #[arg(long, hide = true)]
    inject_fault: Option<Fault>,
}

/// How the ranks of `--ranks` keep the matrix on disk (seed 003's shared and distributed
/// files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FileMode {
    /// One file; each rank reads and writes its rows of it.
    Shared,
    /// A file per rank holding only its rows (`a.R.rbm`, `lu.R.rbm`); `lu.rbm` assembled after.
    Distributed,
}

impl Variant {
    fn of_library(self) -> LuVariant {
        match self {
            Variant::LeftPivoted => LuVariant::LeftPivoted,
            Variant::LeftUnpivoted => LuVariant::LeftUnpivoted,
            Variant::Right => LuVariant::Right,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Variant::LeftPivoted => "left-pivoted",
            Variant::LeftUnpivoted => "left-unpivoted",
            Variant::Right => "right",
        }
    }
}

/// ScaLAPACK's LU tester threshold for `‖A·x − b‖ / (‖A‖·‖x‖·n·ε)`.
const THRESHOLD: f64 = 1.0;

/// `redblue ooc-lu`.
pub fn run(args: &OocLuArgs) -> Result<bool, String> {
    match args.ty {
        ScalarType::F32 => run_typed::<f32>(args),
        ScalarType::F64 => run_typed::<f64>(args),
        ScalarType::C32 => run_typed::<c32>(args),
        ScalarType::C64 => run_typed::<c64>(args),
    }
    .map_err(|e| e.to_string())
}

/// An entry of the generated matrix.
fn entry<T: Scalar>(i: usize, j: usize, seed: u64) -> T {
    T::from_f64_parts(random::uniform(i, j, seed), random::uniform(i, j, seed + 7))
}

/// The run's folder: `--dir`, or a temporary one named after the process `id` (rank 0's under
/// MPI), removed at the end.
fn run_dir(args: &OocLuArgs, id: u32) -> PathBuf {
    match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("redblue-ooc-lu-{id}")),
    }
}

fn run_typed<T: KernelScalar>(args: &OocLuArgs) -> Result<bool, OocError> {
    if args.backend == Backend::Mpi {
        return under_mpi::<T>(args);
    }
    if args.ranks == 0 {
        return Err(OocError::Invalid("--ranks must be at least 1".into()));
    }
    let dir = run_dir(args, std::process::id());
    let result = if args.ranks > 1 {
        ranks::over_threads::<T>(args, &dir)
    } else {
        factor_in::<T>(args, &dir, 1)
    };
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir); // a folder of our own: nothing kept
    }
    result
}

/// Under `mpirun`: one process factors alone; more, over the ranks. Every rank returns the same
/// outcome; rank 0 reports.
#[cfg(feature = "mpi")]
fn under_mpi<T: KernelScalar>(args: &OocLuArgs) -> Result<bool, OocError> {
    use redblue::comm::{Communicator, CommunicatorExt};
    let universe =
        redblue::comm::MpiUniverse::init().map_err(|e| OocError::Invalid(e.to_string()))?;
    let world = universe.world();
    let id = world
        .broadcast_one(std::process::id(), 0)
        .map_err(|e| OocError::Invalid(e.to_string()))?;
    let dir = run_dir(args, id);
    let result = if world.size() > 1 {
        ranks::on_ranks::<T, _>(&world, args, &dir)
    } else {
        factor_in::<T>(args, &dir, 1)
    };
    if args.dir.is_none() {
        let _ = world.barrier();
        if world.rank() == 0 {
            let _ = std::fs::remove_dir_all(&dir); // a folder of our own: nothing kept
        }
    }
    result
}

#[cfg(not(feature = "mpi"))]
#[allow(clippy::extra_unused_type_parameters)] // the signature of the MPI build's
fn under_mpi<T: KernelScalar>(_: &OocLuArgs) -> Result<bool, OocError> {
    Err(OocError::Invalid(
        "--backend mpi needs a redblue built with `--features mpi`".into(),
    ))
}

/// What one run measured, for the report.
struct Measured {
    n: usize,
    w: usize,
    /// The ranks that factored.
    ranks: usize,
    /// Over ranks, the rows' block (0 for one rank).
    row_block: usize,
    seconds: f64,
    info: OocLu,
    model: (u64, u64),
    /// Seconds reading, writing, and making the writes durable (`fsync`).
    io_seconds: (f64, f64, f64),
    /// With `--check`: the factors' residual and the solve's.
    residuals: Option<(f64, f64)>,
    /// With `--compare-in-core`: the seconds of the in-core LU of the same matrix.
    in_core_s: Option<f64>,
    /// The steps a resumed run found done.
    resumed_from: Option<u64>,
    journal_elems: u64,
}

/// A run's files: the input `a.rbm`, the factors (`lu.rbm.partial` until they are finished,
/// then `lu.rbm`), and the record of a resumable run.
struct Files<T> {
    a: DiskMatrix<T>,
    f: DiskMatrix<T>,
    progress: Option<Progress>,
}

fn io_error(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> OocError {
    let path = path.to_path_buf();
    move |source| OocError::Io { path, what, source }
}

/// A new run's input in `dir`: earlier runs' files removed, the matrix written to `a.rbm`
/// (generated, or from the `.npy`) in panels of the width `--panel` or `--memory` gives;
/// returns it, its order and the panel width.
fn input_matrix<T: KernelScalar>(
    args: &OocLuArgs,
    dir: &Path,
) -> Result<(DiskMatrix<T>, usize, usize), OocError> {
    for old in [
        "lu.rbm",
        "lu.rbm.partial",
        "ipiv.npy",
        "progress.rec",
        "progress.journal.0",
        "progress.journal.1",
    ] {
        let _ = std::fs::remove_file(dir.join(old)); // an earlier run's, if any
    }
    let n = match &args.input {
        Some(input) => npy::shape(input)?.0,
        None => args.n,
    };
    let size = std::mem::size_of::<T>() as u64;
    let w = match (args.panel, args.memory) {
        (Some(w), _) => w,
        // The whole matrix when it fits: one panel, read once, factored in core, written once.
        (None, Some(bytes)) if bytes >= size * (n * n) as u64 => n,
        (None, Some(bytes)) => {
            let panels = if args.variant == Variant::Right { 2 } else { 3 };
            (bytes / (panels * size * n.max(1) as u64)) as usize
        }
        (None, None) => 256,
    }
    .clamp(1, n.max(1));
    let source = dir.join("a.rbm");
    let a = match &args.input {
        Some(input) => DiskMatrix::<T>::from_npy(input, &source, w)?,
        None => DiskMatrix::<T>::create_from_fn(&source, n, n, w, |i, j| entry::<T>(i, j, SEED_A))?,
    };
    if a.shape() != (n, n) {
        return Err(OocError::Invalid(format!(
            "{}: not square",
            source.display()
        )));
    }
    Ok((a, n, w))
}

/// A new run in `dir`: the matrix written to `a.rbm` (generated or from the `.npy`), the
/// factors' file, and for the left-looking variants a new record. The right-looking variant
/// factors a copy of the input in place and keeps no record.
fn start<T: KernelScalar>(args: &OocLuArgs, dir: &Path) -> Result<Files<T>, OocError> {
    let (a, n, w) = input_matrix::<T>(args, dir)?;
    let source = dir.join("a.rbm");
    let partial = dir.join("lu.rbm.partial");
    if args.variant == Variant::Right {
        std::fs::copy(&source, &partial).map_err(io_error(&partial, "copying the matrix to"))?;
        let f = DiskMatrix::<T>::open(&partial)?;
        return Ok(Files {
            a,
            f,
            progress: None,
        });
    }
    let f = DiskMatrix::<T>::create(&partial, n, n, w)?;
    let kind = run_kind::<T>(args.variant.of_library().code(), n, w, a.fingerprint()?);
    let progress = Some(Progress::create(dir, kind)?);
    Ok(Files { a, f, progress })
}

/// The run recorded in `dir`, to go on with.
fn resume<T: KernelScalar>(args: &OocLuArgs, dir: &Path) -> Result<Files<T>, OocError> {
    if args.variant == Variant::Right {
        return Err(OocError::Invalid(
            "--resume: the right-looking variant updates its trailing matrix in place and \
             keeps no record; run it again without --resume"
                .into(),
        ));
    }
    let progress = Progress::open(dir)?;
    let recorded = progress.record().kind.variant;
    if recorded != args.variant.of_library().code() {
        let name = [Variant::LeftPivoted, Variant::LeftUnpivoted]
            .into_iter()
            .find(|v| v.of_library().code() == recorded)
            .map_or("another", Variant::name);
        return Err(OocError::Invalid(format!(
            "--resume: the run in {} is {name}; pass --variant {name}",
            dir.display()
        )));
    }
    let a = DiskMatrix::<T>::open(dir.join("a.rbm"))?;
    let partial = dir.join("lu.rbm.partial");
    let f = if partial.exists() {
        DiskMatrix::<T>::open(&partial)?
    } else {
        DiskMatrix::<T>::open(dir.join("lu.rbm"))?
    };
    Ok(Files {
        a,
        f,
        progress: Some(progress),
    })
}

fn factor_in<T: KernelScalar>(
    args: &OocLuArgs,
    dir: &Path,
    ranks: usize,
) -> Result<bool, OocError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir, "creating"))?;
    let Files {
        mut a,
        mut f,
        mut progress,
    } = if args.resume {
        resume::<T>(args, dir)?
    } else {
        start::<T>(args, dir)?
    };
    let (n, w) = (a.shape().0, f.panel());
    let resumed_from = progress
        .as_ref()
        .filter(|_| args.resume)
        .map(|p| p.record().steps_done);
    fault::inject(args.inject_fault);
    let started = Instant::now();
    let par = match args.threads {
        0 | 1 => Par::Seq,
        t => Par::Threads(t),
    };
    // Only the right-looking variant has no record.
    let info = match progress.as_mut() {
        None => lu_right(&mut f, par)?,
        Some(p) => {
            let mut bar = progress_bar::<T>(n, w, started);
            let files = LuFiles {
                input: Some(&mut a),
                factors: &mut f,
                progress: Some(p),
                read_ahead: true,
                on_step: bar.as_mut().map(|b| b as &mut dyn FnMut(&StepDone)),
            };
            match args.variant {
                Variant::LeftPivoted => left_pivoted(files, par)?,
                _ => left_unpivoted(files, par)?,
            }
        }
    };
    // Finished: the checksums durable, the pivots beside, then the factors under their name.
    f.sync()?;
    npy::write_indices(dir.join("ipiv.npy"), &info.ipiv)?;
    if f.path() != dir.join("lu.rbm") {
        f.rename(dir.join("lu.rbm"))?;
    }
    let seconds = started.elapsed().as_secs_f64();
    fault::inject(None);
    let io_seconds = (
        a.io_seconds().0 + f.io_seconds().0,
        a.io_seconds().1 + f.io_seconds().1,
        f.sync_seconds() + progress.as_ref().map_or(0.0, Progress::sync_seconds),
    );
    let (residuals, in_core_s) = afterwards(args, &mut a, &mut f, &info.ipiv, par)?;
    let (nn, ww) = (n as u64, w as u64);
    let model = match args.variant {
        Variant::LeftPivoted => left_pivoted_io(nn, ww),
        Variant::LeftUnpivoted => left_unpivoted_io(nn, ww),
        Variant::Right => right_io(nn, ww),
    };
    let run = Measured {
        n,
        w,
        ranks,
        row_block: 0,
        seconds,
        info,
        model,
        io_seconds,
        residuals,
        resumed_from,
        journal_elems: progress.as_ref().map_or(0, Progress::journal_elems),
        in_core_s,
    };
    report(args, &run);
    Ok(run.passed())
}

impl Measured {
    /// Whether the run passed: no zero pivot, and the residuals (with `--check`) within the
    /// threshold.
    fn passed(&self) -> bool {
        let within = self
            .residuals
            .is_none_or(|(r, s)| r <= THRESHOLD && s <= THRESHOLD);
        within && self.info.first_zero_pivot.is_none()
    }
}

/// On a terminal, a line on standard error redrawn after each step: the steps done, the bytes
/// read and written, and the time left (from the flops still to do at the rate so far).
fn progress_bar<T: Scalar>(n: usize, w: usize, started: Instant) -> Option<impl FnMut(&StepDone)> {
    use std::io::{IsTerminal, Write};
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let size = std::mem::size_of::<T>() as f64;
    Some(move |s: &StepDone| {
        let left: f64 = (s.steps_done.min(s.steps)..s.steps)
            .map(|k| step_flops(n, w, k).total())
            .sum();
        let done = s.flops.total();
        let secs = started.elapsed().as_secs_f64();
        // (`+ 0.0`: an empty sum is −0.)
        let eta = if done > 0.0 {
            secs * left / done + 0.0
        } else {
            f64::NAN
        };
        let bytes = |e: u64| match e as f64 * size {
            b if b >= 1e9 => format!("{:.2} GB", b / 1e9),
            b => format!("{:.1} MB", b / 1e6),
        };
        let filled = 30 * s.steps_done.min(s.steps) / s.steps.max(1);
        let bar = format!("{}{}", "#".repeat(filled), ".".repeat(30 - filled));
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\r  [{bar}] step {}/{}, read {}, wrote {}, {eta:.0} s left   ",
            s.steps_done.min(s.steps),
            s.steps,
            bytes(s.io.read_elems),
            bytes(s.io.write_elems)
        );
        if s.steps_done > s.steps {
            let _ = writeln!(err);
        }
        let _ = err.flush();
    })
}

/// What `--check` and `--compare-in-core` ask for after the factorisation: the factors'
/// residual and the solve's, and the seconds of the in-core LU of the same matrix.
#[allow(clippy::type_complexity)]
fn afterwards<T: KernelScalar>(
    args: &OocLuArgs,
    a: &mut DiskMatrix<T>,
    f: &mut DiskMatrix<T>,
    ipiv: &[usize],
    par: Par,
) -> Result<(Option<(f64, f64)>, Option<f64>), OocError> {
    let residuals = if args.check {
        let r = factor_residual(a, f, ipiv, par)?;
        Some((r, check(a, f, ipiv)?))
    } else {
        None
    };
    let in_core = if args.compare_in_core {
        let n = a.shape().0;
        let mut all = vec![T::zero(); n * n];
        a.read(0..n, 0..n, &mut all)?;
        let started = Instant::now();
        let view =
            MatMut::from_slice(&mut all, n, n, n).map_err(|e| OocError::Invalid(e.to_string()))?;
        let lu = getrf(view, par).map_err(|e| OocError::Invalid(e.to_string()))?;
        let seconds = started.elapsed().as_secs_f64();
        drop(lu); // only the time is wanted
        Some(seconds)
    } else {
        None
    };
    Ok((residuals, in_core))
}

/// Prints a run as JSON or text.
fn report(args: &OocLuArgs, run: &Measured) {
    let Measured {
        n,
        w,
        ranks,
        row_block,
        seconds,
        info,
        model,
        io_seconds: (read_s, write_s, sync_s),
        residuals,
        resumed_from,
        journal_elems,
        in_core_s,
    } = run;
    let (residual, solve_residual) = (residuals.map(|r| r.0), residuals.map(|r| r.1));
    let variant = args.variant.name();
    // The operations this run performed (a resumed run: only the steps it did).
    let ops = info.flops.trsm + info.flops.gemm + info.flops.getrf;
    let gflops = args.ty.flops_per_fma() / 2.0 * ops / seconds.max(1e-12) / 1e9;
    if args.json {
        println!(
            "{}",
            json!({
                "n": n, "panel": w, "variant": variant, "type": args.ty.name(),
                "ranks": ranks, "row_block": row_block, "backend": format!("{:?}", args.backend).to_lowercase(),
                "files": format!("{:?}", args.files).to_lowercase(),
                "time_s": seconds, "gflops": gflops,
                "io_read_elems": info.io.read_elems, "io_write_elems": info.io.write_elems,
                "model_read_elems": model.0, "model_write_elems": model.1,
                "io_read_s": read_s, "io_write_s": write_s, "io_wait_s": info.read_wait_s,
                "in_core": info.in_core,
                "io_sync_s": sync_s,
                "first_zero_pivot": info.first_zero_pivot,
                "flops_trsm": info.flops.trsm, "flops_gemm": info.flops.gemm,
                "flops_getrf": info.flops.getrf,
                "residual": residual, "solve_residual": solve_residual, "threshold": THRESHOLD,
                "in_core_time_s": in_core_s, "ratio_to_in_core": in_core_s.map(|s| seconds / s),
                "resumed_from_step": resumed_from, "journal_write_elems": journal_elems,
                "dir": args.dir.as_ref().map(|d| d.display().to_string()),
            })
        );
        return;
    }
    println!(
        "ooc-lu {variant}: n = {n}, panel {w} columns ({} panels), {}",
        n.div_ceil(*w),
        args.ty.name()
    );
    if *ranks > 1 {
        println!(
            "  over {ranks} ranks, rows dealt in blocks of {row_block}, {} files",
            format!("{:?}", args.files).to_lowercase()
        );
    }
    println!("  time {seconds:.3} s, {gflops:.2} GFLOP/s");
    println!(
        "  read  {} elements (model {}), {read_s:.3} s ({:.3} s waited for)\n  wrote {} elements (model {}), {write_s:.3} s; fsync {sync_s:.3} s",
        info.io.read_elems, model.0, info.read_wait_s, info.io.write_elems, model.1
    );
    if let Some(k) = resumed_from {
        println!("  resumed after {k} completed steps (the counts are this run's)");
    }
    if let Some(col) = info.first_zero_pivot {
        println!("  zero pivot in column {col}: the matrix is singular");
    }
    if let Some((r, s)) = residuals {
        println!("  residual {r:.3e}, solve residual {s:.3e} (threshold {THRESHOLD})");
    }
    if let Some(s) = in_core_s {
        println!(
            "  in-core LU of the same matrix {s:.3} s: out of core takes {:.2}x",
            seconds / s
        );
    }
    if let Some(d) = &args.dir {
        println!("  files in {} (a.rbm, lu.rbm, ipiv.npy)", d.display());
    }
}

/// `‖A·x − b‖∞ / (‖A‖∞·‖x‖∞·n·ε)` for `b` of seed `SEED_B`, `x` solved from the factors in `f`,
/// `A` streamed from `a` a panel at a time.
fn check<T: KernelScalar>(
    a: &mut DiskMatrix<T>,
    f: &mut DiskMatrix<T>,
    ipiv: &[usize],
) -> Result<f64, OocError> {
    let (n, _) = a.shape();
    let b: Vec<T> = (0..n).map(|i| entry::<T>(i, 0, SEED_B)).collect();
    let mut x = b.clone();
    f.reset_io();
    solve_from_file(f, ipiv, &mut x, 1, Par::Seq)?;
    debug_assert_eq!(f.io().read_elems, solve_io(n as u64, f.panel() as u64));
    let mut r: Vec<T> = b.iter().map(|&v| T::zero() - v).collect();
    let mut row_sums = vec![0.0f64; n];
    let mut panel = vec![T::zero(); n * a.panel()];
    for p in 0..a.panels() {
        let c = a.panel_cols(p);
        let buf = &mut panel[..n * c.len()];
        a.read(0..n, c.clone(), buf)?;
        for (jj, j) in c.enumerate() {
            for i in 0..n {
                r[i] += buf[i + jj * n] * x[j];
                row_sums[i] += buf[i + jj * n].abs().to_f64();
            }
        }
    }
    let norm = |v: &[T]| v.iter().map(|e| e.abs().to_f64()).fold(0.0, f64::max);
    let a_norm = row_sums.iter().cloned().fold(0.0, f64::max);
    let denom = a_norm * norm(&x) * n as f64 * T::epsilon().to_f64();
    Ok(if denom > 0.0 { norm(&r) / denom } else { 0.0 })
}
