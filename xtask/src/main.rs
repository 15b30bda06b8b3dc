//! Project chores in one place: `cargo xtask ci` runs every check CI runs; `cargo xtask test-mpi`
//! runs the MPI check suites under `mpirun`; `cargo xtask plot` regenerates the book's plots.

mod ooc;
mod scalapack;
mod svg;

use std::env;
use std::path::{Path, PathBuf};
use std::process::{exit, Command};
use std::time::Instant;

const USAGE: &str = "\
usage: cargo xtask <task>

tasks:
  ci          fmt check, clippy -D warnings, tests, docs with -D warnings, book build (and the
              kernels on the system BLAS when OpenBLAS is installed)
  test-blas   the kernels' tests on the system BLAS / LAPACK (needs OpenBLAS)
  test-mpi    build with the `mpi` feature and run the MPI suites under mpirun at 1, 2, 3, 4 ranks
  test-scalapack
              ScaLAPACK's own testers (Debian's scalapack-mpi-test, installed if missing) with
              redblue's ScaLAPACK library preloaded, on their inputs and on harder ones, and
              pdgesv_ / pdposv_ from a C program
  bench-scalapack [N [NB [PAIRS]]]
              a C ScaLAPACK program's pdgemm_, pdgetrf_, pdpotrf_ on 2 ranks, Debian's
              ScaLAPACK against redblue's library preloaded, interleaved (default 4096 64 5)
  bench-ooc [N [MEMORY_MIB [PAIRS]]]
              redblue ooc-lu against the in-core LU of the same matrix in the same run, and the
              device's throughput (dd) next to the run's (default 16384 512 3)
  book        build the book (book/book)
  plot        regenerate the book's plots from the cost models (book/src/img/*.svg)
";

/// Rank counts the MPI suites run at.
const MPI_RANKS: [usize; 4] = [1, 2, 3, 4];

/// Seconds one mpirun may take before it is declared hung.
const MPI_TIMEOUT_S: u32 = 900;

fn main() {
    let task = env::args().nth(1).unwrap_or_default();
    let root = workspace_root();
    env::set_current_dir(&root).expect("cannot enter the workspace root");
    let result = match task.as_str() {
        "ci" => ci(),
        "test-blas" => test_blas(),
        "test-mpi" => test_mpi(),
        "test-scalapack" => test_scalapack(),
        "bench-scalapack" => bench_scalapack(),
        "bench-ooc" => ooc::bench_ooc(&env::args().skip(2).collect::<Vec<_>>()),
        "book" => book(),
        "plot" => plot(),
        _ => {
            eprint!("{USAGE}");
            exit(2);
        }
    };
    if let Err(e) = result {
        eprintln!("xtask {task}: FAILED: {e}");
        exit(1);
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

/// Runs a command, echoing it, and fails on a non-zero exit.
fn run(program: &str, args: &[&str], envs: &[(&str, &str)]) -> Result<(), String> {
    println!("\n$ {} {}", program, args.join(" "));
    let start = Instant::now();
    let status = Command::new(program)
        .args(args)
        .envs(envs.iter().copied())
        .status()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    println!("  ({:.1} s)", start.elapsed().as_secs_f64());
    if status.success() {
        Ok(())
    } else {
        Err(format!(
            "`{program} {}` exited with {status}",
            args.join(" ")
        ))
    }
}

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn ci() -> Result<(), String> {
    run("cargo", &["fmt", "--all", "--check"], &[])?;
    run(
        "cargo",
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &[],
    )?;
    // The xtask's own tests in the profile it runs in: a test-profile build would compile the
    // book's renderer a second time.
    run("cargo", &["test", "--workspace", "--exclude", "xtask"], &[])?;
    run("cargo", &["test", "-p", "xtask", "--profile", "dev"], &[])?;
    system_blas()?;
    run(
        "cargo",
        &["doc", "--workspace", "--no-deps"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    book()?;
    println!("\nxtask ci: all checks passed");
    Ok(())
}

/// Whether the dynamic linker knows a `libopenblas` (Debian: libopenblas-dev). With
/// `REDBLUE_ONLY_RUST` set, never: CI's first step runs the README's commands as on a machine
/// with only Rust, whatever the machine has.
fn have_openblas() -> bool {
    if std::env::var_os("REDBLUE_ONLY_RUST").is_some() {
        return false;
    }
    Command::new("ldconfig")
        .arg("-p")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("libopenblas.so "))
        .unwrap_or(false)
        || std::path::Path::new("/usr/lib/x86_64-linux-gnu/libopenblas.so").exists()
}

/// The kernels again with the `openblas-system` feature when OpenBLAS is installed (skipped,
/// and said, when it is not: the README's test command needs nothing beyond Rust).
fn system_blas() -> Result<(), String> {
    if !have_openblas() {
        println!(
            "xtask ci: SKIPPED the system-BLAS kernel tests: no libopenblas \
             (Debian: apt-get install libopenblas-dev liblapack-dev; then `cargo xtask test-blas`)."
        );
        return Ok(());
    }
    test_blas()
}

/// The kernels with the `openblas-system` feature: the same tests on the system BLAS / LAPACK,
/// and the test that proves the calls go there. Fails without OpenBLAS.
fn test_blas() -> Result<(), String> {
    if !have_openblas() {
        return Err(
            "no libopenblas (Debian: apt-get install libopenblas-dev liblapack-dev)".into(),
        );
    }
    let feature = ["-p", "redblue-kernels", "--features", "openblas-system"];
    let clippy = [
        &["clippy"][..],
        &feature,
        &["--all-targets", "--", "-D", "warnings"],
    ]
    .concat();
    run("cargo", &clippy, &[])?;
    run("cargo", &[&["test"][..], &feature].concat(), &[])
}

/// The SVG plots of the book: the crates' `*_words` examples print the series of their cost
/// models (pure: no run, no randomness, so the committed files are reproducible) and
/// [`svg::render`] draws them.
const PLOTS: [(&str, &str, &str); 3] = [
    ("redblue-gemm", "gemm_words", "book/src/img/gemm-words.svg"),
    ("redblue-lu", "lu_words", "book/src/img/lu-words.svg"),
    (
        "redblue-cholesky",
        "cholesky_words",
        "book/src/img/cholesky-words.svg",
    ),
];

fn plot() -> Result<(), String> {
    for (package, example, target) in PLOTS {
        println!("\n$ cargo run --release -p {package} --example {example} | render > {target}");
        let out = Command::new("cargo")
            .args([
                "run",
                "--release",
                "-q",
                "-p",
                package,
                "--example",
                example,
            ])
            .output()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "{example} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let svg = svg::render(&String::from_utf8_lossy(&out.stdout))
            .map_err(|e| format!("{example}: {e}"))?;
        std::fs::create_dir_all(Path::new(target).parent().expect("a directory"))
            .map_err(|e| format!("{target}: {e}"))?;
        std::fs::write(target, svg).map_err(|e| format!("{target}: {e}"))?;
    }
    Ok(())
}

/// Builds the book with mdBook's library (no `mdbook` binary needed): `book/book`.
fn book() -> Result<(), String> {
    println!("\n$ (mdbook-driver) build book");
    let start = Instant::now();
    let book = mdbook_driver::MDBook::load("book").map_err(|e| format!("the book: {e:#}"))?;
    book.build().map_err(|e| format!("the book: {e:#}"))?;
    println!("  ({:.1} s)", start.elapsed().as_secs_f64());
    Ok(())
}

/// Open MPI refuses to run as root or to oversubscribe cores unless told; the same settings are
/// harmless for other users and for MPICH.
const MPI_ENV: [(&str, &str); 5] = [
    ("OMPI_ALLOW_RUN_AS_ROOT", "1"),
    ("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"),
    ("OMPI_MCA_rmaps_base_oversubscribe", "1"),
    ("PRTE_MCA_rmaps_default_mapping_policy", ":oversubscribe"),
    // Keep Open MPI off network interfaces this machine does not have.
    ("OMPI_MCA_btl", "self,vader"),
];

fn test_mpi() -> Result<(), String> {
    if !have("mpirun") {
        println!(
            "xtask test-mpi: SKIPPED: `mpirun` is not on PATH. Install an MPI \
             (Debian: apt-get install libopenmpi-dev openmpi-bin libclang-dev) to run the MPI suites."
        );
        return Ok(());
    }
    build_mpi_programs()?;
    let timeout = MPI_TIMEOUT_S.to_string();
    run_mpi_suites(&timeout)?;
    run_miniapp_under_mpi(&timeout)?;
    ooc_lu_under_mpi(&timeout)?;
    mpi_faults(&timeout)?;
    println!("\nxtask test-mpi: the MPI suites passed at {MPI_RANKS:?} ranks");
    Ok(())
}

/// ScaLAPACK's testers with redblue's library preloaded ([`scalapack::test_scalapack`]); skipped,
/// and said, without `mpirun`.
fn test_scalapack() -> Result<(), String> {
    if !have("mpirun") {
        println!(
            "xtask test-scalapack: SKIPPED: `mpirun` is not on PATH. Install Open MPI \
             (Debian: apt-get install libopenmpi-dev openmpi-bin libclang-dev)."
        );
        return Ok(());
    }
    let timeout = MPI_TIMEOUT_S.to_string();
    scalapack::test_scalapack(&timeout)?;
    scalapack::check_solvers(&timeout)
}

/// The ScaLAPACK comparison ([`scalapack::bench_scalapack`]); needs `mpirun` and `mpicc`.
fn bench_scalapack() -> Result<(), String> {
    if !have("mpirun") {
        return Err(
            "`mpirun` is not on PATH (Debian: apt-get install libopenmpi-dev openmpi-bin)".into(),
        );
    }
    let args: Vec<String> = env::args().skip(2).collect();
    scalapack::bench_scalapack(&args, &MPI_TIMEOUT_S.to_string())
}

/// The packages with MPI code and the feature that turns it on, each as `package/mpi`.
const MPI_FEATURES: &str =
    "redblue-comm/mpi,redblue/mpi,redblue-tests/mpi,redblue-cli/mpi,redblue-scalapack/mpi";

/// Clippy on the MPI-only code, then one release build of every MPI program: the suites, the
/// failure scenarios, the smoke test, the examples, the miniapp and the ScaLAPACK library. One
/// cargo call, so that each crate is compiled once with one set of features (separate calls,
/// selecting different packages, unified their dependencies' features differently and compiled
/// the workspace again, faer included). `test-mpi` and `test-scalapack` both call it: the second
/// call finds everything built.
pub fn build_mpi_programs() -> Result<(), String> {
    let packages = [
        "-p",
        "redblue-comm",
        "-p",
        "redblue",
        "-p",
        "redblue-tests",
        "-p",
        "redblue-cli",
        "-p",
        "redblue-scalapack",
        "--features",
        MPI_FEATURES,
    ];
    let clippy = [
        &["clippy"][..],
        &packages,
        &["--all-targets", "--", "-D", "warnings"],
    ];
    run("cargo", &clippy.concat(), &[])?;
    let targets = [
        "--lib",
        "--bin",
        "mpi-suite",
        "--bin",
        "mpi-faults",
        "--bin",
        "redblue",
        "--example",
        "mpi_smoke",
        "--example",
        "redistribute",
        "--example",
        "refine",
    ];
    run(
        "cargo",
        &[&["build", "--release"][..], &packages, &targets].concat(),
        &[],
    )
}

/// `timeout T mpirun -n NP program args…` with the MPI settings.
fn mpirun(timeout: &str, np: &str, program: &str, args: &[&str]) -> Result<(), String> {
    let command = [&[timeout, "mpirun", "-n", np, program][..], args].concat();
    run("timeout", &command, &MPI_ENV)
}

/// The check suites and the smoke test at every rank count, the redistribution example and
/// the guide's refinement solver (its residuals are checked on every rank).
fn run_mpi_suites(timeout: &str) -> Result<(), String> {
    for p in MPI_RANKS {
        let np = p.to_string();
        for program in [
            "target/release/examples/mpi_smoke",
            "target/release/mpi-suite",
        ] {
            mpirun(timeout, &np, program, &[])?;
        }
    }
    let redistribute = "target/release/examples/redistribute";
    mpirun(
        timeout,
        "3",
        redistribute,
        &["--backend", "mpi", "--n", "500"],
    )?;
    for np in ["1", "2", "4"] {
        let refine = "target/release/examples/refine";
        mpirun(timeout, np, refine, &["--backend", "mpi", "--n", "600"])?;
    }
    Ok(())
}

/// The miniapp under mpirun, with its checks: COSMA on two and three ranks, background rounds
/// of a sequential strategy and Cannon's shifts on four; COnfLUX on a 2×1×2 grid and on three
/// ranks, the 2D baseline on four in a block-cyclic layout; Cholesky alike (the upper
/// triangle, complex, on the 2×1×2 grid).
fn run_miniapp_under_mpi(timeout: &str) -> Result<(), String> {
    let gemm = [
        "gemm",
        "--backend",
        "mpi",
        "--m",
        "300",
        "--n",
        "200",
        "--k",
        "250",
        "--check",
    ];
    // LU and Cholesky take the same arguments.
    let factorisation = |op| {
        [
            op,
            "--backend",
            "mpi",
            "--n",
            "301",
            "--block",
            "16",
            "--check",
        ]
    };
    let (lu, cholesky) = (factorisation("lu"), factorisation("cholesky"));
    let runs: [(&str, &[&str], &[&str]); 10] = [
        ("2", &gemm, &["--type", "c64", "--op-a", "T"]),
        ("3", &gemm, &["--type", "c64", "--op-a", "T"]),
        (
            "4",
            &gemm,
            &["--strategy", "sk3,pm2,pn2", "--type", "c32", "--op-b", "C"],
        ),
        (
            "4",
            &gemm,
            &["--algorithm", "cannon", "--layout", "block-cyclic"],
        ),
        ("4", &lu, &["--grid", "2x1x2", "--type", "c64"]),
        ("3", &lu, &["--type", "f32", "--nrhs", "4"]),
        ("4", &lu, &["--algorithm", "2d", "--layout", "block-cyclic"]),
        (
            "4",
            &cholesky,
            &["--grid", "2x1x2", "--type", "c64", "--uplo", "upper"],
        ),
        ("3", &cholesky, &["--type", "f32", "--nrhs", "4"]),
        (
            "4",
            &cholesky,
            &["--algorithm", "2d", "--layout", "block-cyclic"],
        ),
    ];
    for (np, command, extra) in runs {
        mpirun(
            timeout,
            np,
            "target/release/redblue",
            &[command, extra].concat(),
        )?;
    }
    Ok(())
}

/// `redblue ooc-lu` under MPI on a matrix of order 300 in panels of 40 in `dir`.
fn ooc_lu_args<'a>(files: &'a str, ty: &'a str, dir: &'a str) -> Vec<&'a str> {
    let run = ["ooc-lu", "--backend", "mpi", "--n", "300", "--panel", "40"];
    let more = [
        "--row-block",
        "16",
        "--files",
        files,
        "--type",
        ty,
        "--dir",
        dir,
    ];
    [&run[..], &more[..]].concat()
}

/// The out-of-core LU under mpirun on three ranks, from one shared file and from a file per
/// rank: an uninterrupted run with its checks; a run whose rank 0 aborts in its 20th write (the
/// job ends), resumed, must leave the same factors and pivots, byte for byte.
fn ooc_lu_under_mpi(timeout: &str) -> Result<(), String> {
    let root = env::temp_dir().join(format!("redblue-xtask-ooc-mpi-{}", std::process::id()));
    let result = (|| {
        for (files, ty) in [("shared", "f64"), ("distributed", "c64")] {
            let (whole, cut) = (
                root.join(format!("{files}-whole")),
                root.join(format!("{files}-cut")),
            );
            let (whole, cut) = (whole.to_string_lossy(), cut.to_string_lossy());
            let args = |dir| ooc_lu_args(files, ty, dir);
            let redblue = "target/release/redblue";
            mpirun(
                timeout,
                "3",
                redblue,
                &[&args(&whole)[..], &["--check"]].concat(),
            )?;
            let mut crash = vec![timeout, "mpirun", "-n", "3", redblue];
            crash.extend(args(&cut));
            crash.extend(["--inject-fault", "abort:20"]);
            let (ended_ok, _, _) = run_timed("timeout", &crash)?;
            if ended_ok {
                return Err("ooc-lu with rank 0 aborted: the job succeeded".into());
            }
            let resume = [&args(&cut)[..], &["--resume", "--check"]].concat();
            mpirun(timeout, "3", redblue, &resume)?;
            for file in ["lu.rbm", "ipiv.npy"] {
                let read = |dir: &str| {
                    std::fs::read(Path::new(dir).join(file))
                        .map_err(|e| format!("{dir}/{file}: {e}"))
                };
                if read(&whole)? != read(&cut)? {
                    return Err(format!("ooc-lu under mpirun ({files} files): {file} after the resume differs from the uninterrupted run's"));
                }
            }
            println!(
                "  ooc-lu on 3 ranks, {files} files: resumed after an abort, the same factors"
            );
        }
        Ok(())
    })();
    let _ = std::fs::remove_dir_all(&root);
    result
}

/// Seconds a failing MPI job may take to end (they end in about a second on this project's
/// machine; the bound leaves room for a slow one).
const MPI_FAULT_LIMIT_S: f64 = 60.0;

/// Failure under MPI: one rank's bad input (every rank returns the same error; the miniapp
/// exits non-zero on every rank), one rank's communication error, panic or death in the middle
/// of gemm, LU, Cholesky or a transform (the job ends, non-zero, within
/// [`MPI_FAULT_LIMIT_S`]). Prints the time each takes to end.
fn mpi_faults(timeout: &str) -> Result<(), String> {
    let faults = "target/release/mpi-faults";
    // (ranks, arguments, whether the job succeeds): `nan` succeeds when every rank returned the
    // same error; the others must end the job with a failure.
    // Every operation meets every fault.
    let scenarios: [(&str, &[&str], bool); 14] = [
        ("4", &["lu", "nan", "1"], true),
        ("3", &["cholesky", "nan", "2"], true),
        ("4", &["gemm", "error", "1", "5"], false),
        ("3", &["transform", "error", "0", "1"], false),
        ("4", &["lu", "error", "1", "12"], false),
        ("3", &["cholesky", "error", "2", "8"], false),
        ("4", &["lu", "panic", "2", "20"], false),
        ("4", &["cholesky", "panic", "0", "30"], false),
        ("3", &["gemm", "panic", "2", "3"], false),
        ("2", &["transform", "panic", "1", "1"], false),
        ("4", &["lu", "kill", "3", "15"], false),
        ("3", &["cholesky", "kill", "1", "10"], false),
        ("4", &["gemm", "kill", "0", "4"], false),
        ("3", &["transform", "kill", "2", "1"], false),
    ];
    for (np, args, succeeds) in scenarios {
        let mut command = vec![timeout, "mpirun", "-n", np, faults];
        command.extend(args);
        let (ok, seconds, out) = run_timed("timeout", &command)?;
        if args[1] == "nan" {
            agreed_nan_errors(&out, np)?;
        }
        if ok != succeeds || seconds > MPI_FAULT_LIMIT_S {
            return Err(format!(
                "mpi-faults {}: ended {} after {seconds:.1} s; expected {} within {MPI_FAULT_LIMIT_S} s",
                args.join(" "),
                if ok { "successfully" } else { "with a failure" },
                if succeeds { "success" } else { "a failure" }
            ));
        }
        println!(
            "  mpi-faults {} on {np} ranks: the job ended in {seconds:.1} s",
            args.join(" ")
        );
    }
    // The miniapp with a request every rank refuses: every rank reports it and exits 2.
    for (np, request) in [
        ("3", "lu --n 10 --block 0"),
        ("2", "cholesky --n 100000000"),
        ("3", "gemm --m 10 --n 10 --k 10 --strategy pm7"),
        ("2", "ooc-lu --n 100 --variant right"),
    ] {
        let script = format!("target/release/redblue {request} --backend mpi; echo \"exit=$?\"");
        let (_, seconds, out) = run_timed(
            "timeout",
            &[timeout, "mpirun", "-n", np, "sh", "-c", &script],
        )?;
        let failed = out.matches("exit=2").count();
        if failed != np.parse::<usize>().unwrap_or(0) || seconds > MPI_FAULT_LIMIT_S {
            return Err(format!(
                "redblue {request} under mpirun -n {np}: {failed} ranks exited with 2 (expected \
                 every rank), after {seconds:.1} s"
            ));
        }
        println!("  redblue {request} on {np} ranks: every rank exited with 2 in {seconds:.1} s");
    }
    Ok(())
}

/// Checks that every rank of a `nan` scenario printed the same error
/// (`mpi-faults: rank R: ERROR`).
fn agreed_nan_errors(out: &str, np: &str) -> Result<(), String> {
    let errors: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("mpi-faults: rank "))
        .filter_map(|l| l.split_once(": ").map(|(_, e)| e))
        .collect();
    let first = errors.first().copied().unwrap_or_default();
    if errors.len() != np.parse::<usize>().unwrap_or(0) || errors.iter().any(|e| *e != first) {
        return Err(format!(
            "the ranks' NaN errors differ or are missing: {errors:?}"
        ));
    }
    Ok(())
}

/// Runs a command with the MPI settings, echoing it: whether it succeeded, its seconds and its
/// standard output (standard error goes to ours).
fn run_timed(program: &str, args: &[&str]) -> Result<(bool, f64, String), String> {
    println!("\n$ {} {}", program, args.join(" "));
    let start = Instant::now();
    let out = Command::new(program)
        .args(args)
        .envs(MPI_ENV.iter().copied())
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {program}: {e}"))?;
    let seconds = start.elapsed().as_secs_f64();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    print!("{stdout}");
    Ok((out.status.success(), seconds, stdout))
}
