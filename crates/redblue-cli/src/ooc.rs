//! `redblue ooc-lu`: seed 003's left-looking out-of-core LU on one process, the matrix in a file
//! (generated, or read from a `.npy`), two panels of it in memory; reports the time, the flop
//! rate, the elements read and written against the exact model and the seconds they took, and
//! with `--check` the solve's residual, the solve streaming the factors from disk.

use crate::{ScalarType, SEED_A, SEED_B};
use clap::{Args, ValueEnum};
use redblue::core::{c32, c64, random, RealScalar, Scalar};
use redblue::kernels::{KernelScalar, Par};
use redblue::ooc::{
    left_pivoted_io, left_unpivoted_io, lu_left_pivoted, lu_left_unpivoted, lu_right, right_io,
    solve_from_file, solve_io, DiskMatrix, OocError, OocLu,
};
use serde_json::json;
use std::path::PathBuf;
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
    /// Bytes of memory for the two panels; the panel width is the widest that fits (the whole
    /// matrix, in core, when it fits twice over).
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

fn run_typed<T: KernelScalar>(args: &OocLuArgs) -> Result<bool, OocError> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("redblue-ooc-lu-{}", std::process::id())),
    };
    let result = factor_in::<T>(args, &dir);
    if args.dir.is_none() {
        let _ = std::fs::remove_dir_all(&dir); // a folder of our own: nothing kept
    }
    result
}

/// What one run measured, for the report.
struct Measured {
    n: usize,
    w: usize,
    seconds: f64,
    info: OocLu,
    model: (u64, u64),
    io_seconds: (f64, f64),
    solve_residual: Option<f64>,
}

fn factor_in<T: KernelScalar>(args: &OocLuArgs, dir: &std::path::Path) -> Result<bool, OocError> {
    std::fs::create_dir_all(dir).map_err(|source| OocError::Io {
        path: dir.to_path_buf(),
        what: "creating",
        source,
    })?;
    let n = match &args.input {
        Some(input) => redblue::ooc::npy::shape(input)?.0,
        None => args.n,
    };
    let size = std::mem::size_of::<T>() as u64;
    let w = match (args.panel, args.memory) {
        (Some(w), _) => w,
        (None, Some(bytes)) => (bytes / (2 * size * n.max(1) as u64)) as usize,
        (None, None) => 256,
    }
    .clamp(1, n.max(1));
    // The matrix, then the copy the factorisation overwrites: the input is never modified.
    let source = dir.join("a.rbm");
    let mut a = match &args.input {
        Some(input) => DiskMatrix::<T>::from_npy(input, &source, w)?,
        None => DiskMatrix::<T>::create_from_fn(&source, n, n, w, |i, j| entry::<T>(i, j, SEED_A))?,
    };
    if a.shape() != (n, n) {
        return Err(OocError::Invalid(format!(
            "{}: not square",
            source.display()
        )));
    }
    let factors = dir.join("lu.rbm");
    std::fs::copy(&source, &factors).map_err(|source| OocError::Io {
        path: factors.clone(),
        what: "copying the matrix to",
        source,
    })?;
    let mut f = DiskMatrix::<T>::open(&factors)?;
    let started = Instant::now();
    let (nn, ww) = (n as u64, w as u64);
    let (info, model) = match args.variant {
        Variant::LeftPivoted => (lu_left_pivoted(&mut f, Par::Seq)?, left_pivoted_io(nn, ww)),
        Variant::LeftUnpivoted => (
            lu_left_unpivoted(&mut f, Par::Seq)?,
            left_unpivoted_io(nn, ww),
        ),
        Variant::Right => (lu_right(&mut f, Par::Seq)?, right_io(nn, ww)),
    };
    f.sync()?;
    let seconds = started.elapsed().as_secs_f64();
    let io_seconds = f.io_seconds();
    let solve_residual = if args.check {
        Some(check(&mut a, &mut f, &info.ipiv)?)
    } else {
        None
    };
    let run = Measured {
        n,
        w,
        seconds,
        info,
        model,
        io_seconds,
        solve_residual,
    };
    report(args, &run);
    Ok(run.solve_residual.is_none_or(|r| r <= THRESHOLD) && run.info.first_zero_pivot.is_none())
}

/// Prints a run as JSON or text.
fn report(args: &OocLuArgs, run: &Measured) {
    let Measured {
        n,
        w,
        seconds,
        info,
        model,
        io_seconds: (read_s, write_s),
        solve_residual,
    } = run;
    let variant = match args.variant {
        Variant::LeftPivoted => "left-pivoted",
        Variant::LeftUnpivoted => "left-unpivoted",
        Variant::Right => "right",
    };
    let gflops = args.ty.flops_per_fma() * (*n as f64).powi(3) / 3.0 / seconds.max(1e-12) / 1e9;
    if args.json {
        println!(
            "{}",
            json!({
                "n": n, "panel": w, "variant": variant, "type": args.ty.name(),
                "time_s": seconds, "gflops": gflops,
                "io_read_elems": info.io.read_elems, "io_write_elems": info.io.write_elems,
                "model_read_elems": model.0, "model_write_elems": model.1,
                "io_read_s": read_s, "io_write_s": write_s,
                "first_zero_pivot": info.first_zero_pivot,
                "flops_trsm": info.flops.trsm, "flops_gemm": info.flops.gemm,
                "flops_getrf": info.flops.getrf,
                "solve_residual": solve_residual, "threshold": THRESHOLD,
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
    println!("  time {seconds:.3} s, {gflops:.2} GFLOP/s");
    println!(
        "  read  {} elements (model {}), {read_s:.3} s\n  wrote {} elements (model {}), {write_s:.3} s",
        info.io.read_elems, model.0, info.io.write_elems, model.1
    );
    if let Some(col) = info.first_zero_pivot {
        println!("  zero pivot in column {col}: the matrix is singular");
    }
    if let Some(r) = solve_residual {
        println!("  solve residual {r:.3e} (threshold {THRESHOLD})");
    }
    if let Some(d) = &args.dir {
        println!("  files in {} (a.rbm, lu.rbm)", d.display());
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
