//! `cargo xtask test-scalapack`: ScaLAPACK's own testers (Debian's `scalapack-mpi-test`), built
//! against the real ScaLAPACK, run with redblue's ScaLAPACK library preloaded, on the inputs they
//! ship and on harder ones; every tester must report no failure, and the library's report must
//! show the routines under test served by redblue.

use crate::{run, MPI_ENV};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where Debian's testers (built for Open MPI) live.
const TESTERS: &str = "/usr/lib/x86_64-linux-gnu/scalapack/openmpi-tests";

/// The Debian packages the testers come in.
const PACKAGES: [&str; 3] = [
    "libscalapack-openmpi-dev",
    "scalapack-mpi-test",
    "scalapack-test-common",
];

/// The library, once built.
const LIBRARY: &str = "target/release/libredblue_scalapack.so";

/// The harder LU input: larger orders, block sizes that do not divide them, grids `1×6`, `6×1`,
/// `2×3`, `3×2`, several right-hand sides; and a tall and a wide matrix (their LU served by
/// redblue's rectangular LU, checked by the tester's residual). Condition estimates and
/// iterative refinement (transposed solves) are left to the complex testers' shipped inputs
/// ([`runs`]): on a Zen 5 machine
/// Debian's real-valued testers (`xslu`, `xdlu`, `xsllt`) hang in them on these sizes and grids
/// with no library preloaded (one process reports an illegal `TRANS` to `p?getrs`, the others
/// wait), whatever `OPENBLAS_CORETYPE` says; the complex ones pass.
const HARD_LU: &str = "'SCALAPACK, LU factorization input file'
'MPI Machine'
'LU.out'\t\toutput file name (if any)
6\t\t\tdevice out
5\t\t\tnumber of problems sizes
96 131 200 150 61\t\tvalues of M
96 131 200 97 143\t\tvalues of N
2\t\t\tnumber of NB's
7 16\t\t\tvalues of NB
2\t\t\tnumber of NRHS's
1 5\t\t\tvalues of NRHS
1\t\t\tNumber of NBRHS's
3\t\t\tvalues of NBRHS
4\t\t\tnumber of process grids (ordered pairs of P & Q)
1 6 2 3\t\tvalues of P
6 1 3 2\t\tvalues of Q
1.0\t\t\tthreshold
F\t\t\t(T or F) Test Cond. Est. and Iter. Ref. Routines
";

/// The harder Cholesky input: the lower triangle (the shipped file tests the upper), and the
/// sizes and grids of [`HARD_LU`] (without condition estimates, as there).
const HARD_LLT: &str = "'ScaLAPACK, LLt factorization input file'
'MPI machine'
'LLT.out'\t\toutput file name (if any)
6\t\t\tdevice out
'L'\t\t\tdefine Lower or Upper
3\t\t\tnumber of problems sizes
96 131 200\t\tvalues of N
2\t\t\tnumber of NB's
7 16\t\t\tvalues of NB
2\t\t\tnumber of NRHS's
1 5\t\t\tvalues of NRHS
1\t\t\tnumber of NBRHS's
3\t\t\tvalues of NBRHS
4\t\t\tnumber of process grids (ordered pairs P & Q)
1 6 2 3\t\tvalues of P
6 1 3 2\t\tvalues of Q
3.0\t\t\tthreshold
F\t\t\t(T or F) Test Cond. Est. and Iter. Ref. Routines
";

/// The harder PBLAS grids (`2×3`, `3×2`, `2×2`: every source process below is on each) and
/// problems: every pair of `N`, `T`, `C`, blocks not square, first blocks on other processes,
/// offsets inside blocks (lines 11–13 and 16–53 of the shipped file).
const HARD_PBLAS_GRIDS: [&str; 3] = [
    "3\t\tnumber of process grids (ordered pairs of P & Q)",
    "2 3 2\t\tvalues of P",
    "3 2 2\t\tvalues of Q",
];
const HARD_PBLAS_PROBLEMS: &str = "8\t\tnumber of tests problems
'N' 'N' 'N' 'N' 'N' 'N' 'N' 'N'\t\tvalues of DIAG
'L' 'L' 'L' 'L' 'L' 'L' 'L' 'L'\t\tvalues of SIDE
'N' 'N' 'T' 'T' 'C' 'C' 'N' 'T'\t\tvalues of TRANSA
'N' 'T' 'N' 'T' 'C' 'N' 'C' 'C'\t\tvalues of TRANSB
'U' 'L' 'U' 'L' 'U' 'L' 'U' 'L'\t\tvalues of UPLO
40 17 33 25  9 48 21 30\t\tvalues of M
37 29 41 19 13 44 27 31\t\tvalues of N
45 23 38 31 11 50 26 18\t\tvalues of K
60 60 60 60 60 60 60 60\t\tvalues of M_A
60 60 60 60 60 60 60 60\t\tvalues of N_A
 5  7  4  8  3  6 16  9\t\tvalues of IMB_A
 6  5  4  7  3  8  9 16\t\tvalues of INB_A
 5  7  4  8  3  6 16  9\t\tvalues of MB_A
 6  5  4  7  3  8  9 16\t\tvalues of NB_A
 0  1  0  1  0  1  0  1\t\tvalues of RSRC_A
 0  0  1  1  0  1  1  0\t\tvalues of CSRC_A
 3  1  7  2  5  4  1  6\t\tvalues of IA
 3  1  7  2  5  4  1  6\t\tvalues of JA
60 60 60 60 60 60 60 60\t\tvalues of M_B
60 60 60 60 60 60 60 60\t\tvalues of N_B
 6  4  9  5  7  3  8 16\t\tvalues of IMB_B
 6  4  9  5  7  3  8 16\t\tvalues of INB_B
 6  4  9  5  7  3  8 16\t\tvalues of MB_B
 6  4  9  5  7  3  8 16\t\tvalues of NB_B
 1  0  1  0  1  0  1  0\t\tvalues of RSRC_B
 1  1  0  0  1  0  0  1\t\tvalues of CSRC_B
 2  5  1  7  3  1  4  2\t\tvalues of IB
 2  5  1  7  3  1  4  2\t\tvalues of JB
60 60 60 60 60 60 60 60\t\tvalues of M_C
60 60 60 60 60 60 60 60\t\tvalues of N_C
 7  5  3  9  4  8  6 10\t\tvalues of IMB_C
 7  5  3  9  4  8  6 10\t\tvalues of INB_C
 7  5  3  9  4  8  6 10\t\tvalues of MB_C
 7  5  3  9  4  8  6 10\t\tvalues of NB_C
 0  1  1  0  0  1  1  0\t\tvalues of RSRC_C
 1  0  1  0  1  0  0  1\t\tvalues of CSRC_C
 4  2  6  1  1  3  5  7\t\tvalues of IC
 4  2  6  1  1  3  5  7\t\tvalues of JC";

/// One tester run: the program, its input file's name and text, the ranks, and the routines
/// that must be served (by their names in the report).
struct Run {
    program: String,
    input: String,
    text: String,
    ranks: usize,
    served: Vec<String>,
    what: String,
}

/// The shipped PBLAS input with the harder grids and problems.
fn hard_pblas(shipped: &str) -> Result<String, String> {
    let lines: Vec<&str> = shipped.lines().collect();
    if lines.len() < 55 {
        return Err("the shipped PBLAS input is shorter than expected".into());
    }
    let mut out: Vec<&str> = lines[..10].to_vec();
    out.extend(HARD_PBLAS_GRIDS);
    out.extend(&lines[13..15]);
    out.extend(HARD_PBLAS_PROBLEMS.lines());
    out.extend(&lines[54..]);
    Ok(out.join("\n") + "\n")
}

/// Every run: for each scalar, LU, Cholesky and PBLAS level 3, on the shipped inputs (4 ranks)
/// and on the harder ones (6 ranks).
fn runs() -> Result<Vec<Run>, String> {
    let read = |name: &str| {
        std::fs::read_to_string(Path::new(TESTERS).join(name))
            .map_err(|e| format!("{TESTERS}/{name}: {e}"))
    };
    let mut runs = Vec::new();
    for p in ["s", "d", "c", "z"] {
        let pblas = format!("P{}BLAS3TST.dat", p.to_uppercase());
        let shipped_pblas = read(&format!("PBLAS/{pblas}"))?;
        for (input, shipped, hard, served) in [
            (
                "LU.dat",
                read("LU.dat")?,
                HARD_LU.to_string(),
                vec!["getrf", "getrs", "gemm"],
            ),
            (
                "LLT.dat",
                read("LLT.dat")?,
                HARD_LLT.to_string(),
                vec!["potrf", "potrs"],
            ),
        ] {
            let program = format!("x{p}{}", if input == "LU.dat" { "lu" } else { "llt" });
            for (text, ranks, which) in [(shipped, 4, "shipped"), (hard, 6, "harder")] {
                // Debian's real-valued testers hang in their condition estimates now and then
                // with no library preloaded (a Zen 5: one process reports an illegal `TRANS`
                // to `p?getrs`, the others wait): those run without them; the complex ones
                // keep them (the same generic code serves all four scalars).
                let text = match p {
                    "s" | "d" => without_condition_estimates(&text).unwrap_or(text),
                    _ => text,
                };
                runs.push(Run {
                    program: program.clone(),
                    input: input.to_string(),
                    text,
                    ranks,
                    served: served.iter().map(|r| format!("p{p}{r}")).collect(),
                    what: format!("{program} on the {which} input"),
                });
            }
        }
        let program = format!("PBLAS/{p}pb3tst");
        for (text, ranks, which) in [
            (shipped_pblas.clone(), 4, "shipped"),
            (hard_pblas(&shipped_pblas)?, 6, "harder"),
        ] {
            runs.push(Run {
                program: program.clone(),
                input: pblas.clone(),
                text,
                ranks,
                served: vec![format!("p{p}gemm")],
                what: format!("{program} on the {which} input"),
            });
        }
    }
    Ok(runs)
}

/// Installs the testers' packages when missing (as root, or with sudo).
fn ensure_packages() -> Result<(), String> {
    let missing = !Command::new("dpkg")
        .arg("-s")
        .args(PACKAGES)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if !missing {
        return Ok(());
    }
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let (program, prefix): (&str, Vec<&str>) = if root {
        ("apt-get", vec![])
    } else {
        ("sudo", vec!["apt-get"])
    };
    run(program, &[&prefix[..], &["update", "-qq"]].concat(), &[])?;
    let install = [&prefix[..], &["install", "-y", "-qq"], &PACKAGES[..]].concat();
    run(program, &install, &[("DEBIAN_FRONTEND", "noninteractive")])
}

/// What the tester's output says, or why it failed.
fn judge_output(program: &str, out: &str) -> Result<String, String> {
    for bad in [
        "Memory overwrite",
        "memory overwrite",
        "INFO=",
        "On entry to",
        "*** ERROR ***",
    ] {
        if let Some(line) = out.lines().find(|l| l.contains(bad)) {
            return Err(format!("`{}`", line.trim()));
        }
    }
    if program.contains("pb3tst") {
        let name = format!(
            "P{}GEMM",
            program.chars().nth(6).unwrap_or('D').to_ascii_uppercase()
        );
        let row = out
            .lines()
            .find(|l| l.trim_start().starts_with('|') && l.contains(&name))
            .ok_or(format!("no summary row for {name}"))?;
        let n: Vec<u64> = row
            .split_whitespace()
            .filter_map(|w| w.parse().ok())
            .collect();
        return match n[..] {
            [total, passed, 0, 0] if total > 0 && passed == total => {
                Ok(format!("{name} {passed}/{total}"))
            }
            _ => Err(format!("`{}`", row.trim())),
        };
    }
    let count = |what: &str| {
        out.lines()
            .find(|l| l.contains(what))
            .and_then(|l| l.split_whitespace().next()?.parse::<u64>().ok())
    };
    let passed = count("tests completed and passed residual checks");
    let failed = count("tests completed and failed residual checks");
    let skipped = count("tests skipped because of illegal input values");
    match (passed, failed, skipped, out.contains("END OF TESTS.")) {
        (Some(p), Some(0), Some(0), true) if p > 0 => Ok(format!("{p} passed")),
        _ => Err(format!(
            "passed {passed:?}, failed {failed:?}, skipped {skipped:?}"
        )),
    }
}

/// What the library's report says, or why it is not enough: every routine under test served
/// (the most any process served), and nothing passed on.
fn judge_report(err: &str, served: &[String]) -> Result<String, String> {
    let mut summary = Vec::new();
    for routine in served {
        let count = err
            .lines()
            .filter_map(|l| l.split(&format!(" {routine}: served ")).nth(1))
            .filter_map(|rest| rest.split(',').next()?.trim().parse::<u64>().ok())
            .max()
            .ok_or(format!("the report shows no {routine} call"))?;
        if count == 0 {
            return Err(format!("{routine} was never served"));
        }
        summary.push(format!("{routine} {count}"));
    }
    if let Some(line) = err.lines().find(|l| l.contains("passed on:")) {
        return Err(format!("a call was passed on: `{line}`"));
    }
    Ok(format!("served: {}", summary.join(", ")))
}

/// The library's features in the tests: the shared library on redblue's own kernels, which
/// shares its dependencies' builds with `test-mpi` (the kernels on OpenBLAS are tested by
/// `test-blas`; what the testers check does not depend on which kernels compute).
const TEST_FEATURES: &str = "mpi";

/// The library's builds in the benchmark: on redblue's own kernels (the default build, what a
/// user gets), and, when the machine has OpenBLAS, on OpenBLAS's (as ScaLAPACK's kernels are:
/// the distributed algorithms compared alone). Each with its label.
fn bench_builds() -> Vec<(&'static str, &'static str)> {
    let mut builds = vec![("redblue", "mpi")];
    if crate::have_openblas() {
        builds.push(("redblue on OpenBLAS", "mpi,openblas"));
    }
    builds
}

/// Builds the library (release) with `features`; with [`TEST_FEATURES`], as part of
/// `test-mpi`'s one build of the MPI programs (its clippy included).
fn build_library(features: &str) -> Result<PathBuf, String> {
    if features == TEST_FEATURES {
        crate::build_mpi_programs()?;
    } else {
        build_library_alone(features)?;
    }
    std::fs::canonicalize(LIBRARY).map_err(|e| format!("{LIBRARY}: {e}"))
}

/// `cargo build --release -p redblue-scalapack --features FEATURES`: the library alone.
fn build_library_alone(features: &str) -> Result<(), String> {
    let build = [
        "build",
        "--release",
        "-p",
        "redblue-scalapack",
        "--features",
        features,
    ];
    run("cargo", &build, &[])
}

/// `cargo xtask test-scalapack`.
pub fn test_scalapack(timeout: &str) -> Result<(), String> {
    ensure_packages()?;
    // Clippy on the library's MPI code comes with the build.
    let library = build_library(TEST_FEATURES)?;
    let dir: PathBuf =
        std::env::temp_dir().join(format!("redblue-scalapack-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut failures = Vec::new();
    for r in runs()? {
        std::fs::write(dir.join(&r.input), &r.text).map_err(|e| format!("{}: {e}", r.input))?;
        let start = std::time::Instant::now();
        let out = tester(&r, &dir, timeout, &library)?;
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        let verdict = if out.status.success() {
            judge_output(&r.program, &stdout)
                .and_then(|o| Ok(format!("{o}; {}", judge_report(&stderr, &r.served)?)))
        } else {
            Err(format!(
                "exited with {}: {}",
                out.status,
                stderr.lines().last().unwrap_or("")
            ))
        };
        let secs = start.elapsed().as_secs_f64();
        match verdict {
            Ok(v) => println!("  ok   {} on {} ranks ({secs:.1} s): {v}", r.what, r.ranks),
            Err(e) => {
                println!("  FAIL {} on {} ranks ({secs:.1} s): {e}", r.what, r.ranks);
                failures.push(r.what);
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if failures.is_empty() {
        println!("\nxtask test-scalapack: every tester passed with the calls served by redblue");
        Ok(())
    } else {
        Err(format!(
            "{} tester runs failed: {}",
            failures.len(),
            failures.join("; ")
        ))
    }
}

/// One run of `r`'s tester in `dir` (its input written there) under `mpirun`, with `library`
/// preloaded and its report asked for.
fn tester(
    r: &Run,
    dir: &Path,
    timeout: &str,
    library: &Path,
) -> Result<std::process::Output, String> {
    let preload = format!("LD_PRELOAD={}", library.display());
    Command::new("timeout")
        .args([
            timeout,
            "mpirun",
            "-n",
            &r.ranks.to_string(),
            "-x",
            &preload,
        ])
        .args(["-x", "REDBLUE_SCALAPACK_REPORT=1"])
        .arg(Path::new(TESTERS).join(&r.program))
        .current_dir(dir)
        .envs(MPI_ENV.iter().copied())
        .env("REDBLUE_SCALAPACK_REPORT", "1")
        .output()
        .map_err(|e| format!("cannot run mpirun: {e}"))
}

/// `text` with its condition estimates and iterative refinement turned off, if it asks for
/// them (the last line of an LU or Cholesky input, `T`).
fn without_condition_estimates(text: &str) -> Option<String> {
    let asks = |l: &str| l.trim_start().starts_with('T') && l.contains("(T or F)");
    text.lines().any(asks).then(|| {
        text.lines()
            .map(|l| {
                if asks(l) {
                    l.replacen('T', "F", 1)
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
            + "\n"
    })
}

/// The C driver's source, a ScaLAPACK program as users write them.
const DRIVER: &str = "crates/redblue-scalapack/driver/driver.c";
/// Where the xtask builds it.
const DRIVER_BIN: &str = "target/release/scalapack-driver";

/// Builds the library (with `features`) and the C driver.
fn build_driver(features: &str) -> Result<PathBuf, String> {
    ensure_packages()?;
    let library = build_library(features)?;
    build_driver_program()?;
    Ok(library)
}

/// The C driver (with `mpicc`, against Debian's ScaLAPACK).
fn build_driver_program() -> Result<(), String> {
    run(
        "mpicc",
        &[
            "-O2",
            "-Wall",
            "-o",
            DRIVER_BIN,
            DRIVER,
            "-lscalapack-openmpi",
            "-lm",
        ],
        &[],
    )
}

/// One run of the driver: `mpirun -n NP driver ARGS…`, with the library preloaded (and its
/// report asked for) or not; its standard output and error.
fn driver(
    np: &str,
    args: &[&str],
    library: Option<&Path>,
    timeout: &str,
) -> Result<(String, String), String> {
    let mut command = Command::new("timeout");
    command.args([timeout, "mpirun", "-n", np, "-x", "OPENBLAS_NUM_THREADS=1"]);
    if let Some(lib) = library {
        command.args(["-x", &format!("LD_PRELOAD={}", lib.display())]);
        command.args(["-x", "REDBLUE_SCALAPACK_REPORT=1"]);
    }
    let out = command
        .arg(DRIVER_BIN)
        .args(args)
        .envs(MPI_ENV.iter().copied())
        .env("OPENBLAS_NUM_THREADS", "1")
        .env_remove("OPENBLAS_CORETYPE")
        .output()
        .map_err(|e| format!("cannot run mpirun: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !out.status.success() {
        return Err(format!(
            "driver {} exited with {}: {stdout}{stderr}",
            args.join(" "),
            out.status
        ));
    }
    Ok((stdout, stderr))
}

/// `pdgesv_` and `pdposv_` from a C program (no ScaLAPACK tester calls them), served by redblue
/// on row- and column-major grids: their residuals.
pub fn check_solvers(timeout: &str) -> Result<(), String> {
    let library = build_driver(TEST_FEATURES)?;
    for (n, nb, p, q, order) in [
        ("150", "16", 2, 2, "R"),
        ("97", "7", 1, 3, "R"),
        ("131", "8", 2, 3, "C"),
    ] {
        let (ps, qs) = (p.to_string(), q.to_string());
        let args = ["check", n, nb, &ps, &qs, order];
        let (out, err) = driver(&(p * q).to_string(), &args, Some(&library), timeout)?;
        print!("{out}");
        let solved = out
            .lines()
            .filter(|l| l.starts_with("check ") && l.ends_with(" ok"));
        if solved.count() != 2 {
            return Err(format!("the driver's solves failed: {out}"));
        }
        let served = ["pdgesv".to_string(), "pdposv".to_string()];
        println!("  {}", judge_report(&err, &served)?);
    }
    Ok(())
}

pub(crate) fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    let m = xs.len() / 2;
    if xs.len() % 2 == 1 {
        xs[m]
    } else {
        (xs[m - 1] + xs[m]) / 2.0
    }
}

/// Calls of a solve per run in the benchmark (their median is its time).
const SOLVE_CALLS: &str = "15";

/// `cargo xtask bench-scalapack [N [NB [PAIRS]]]`: the C driver's `pdgemm_`, `pdgetrf_`,
/// `pdpotrf_` (the targets'), `pdgesv_`, `pdposv_`, `pdgetrs_` and `pdpotrs_` on 2 ranks (a 1 × 2 grid) with Debian's ScaLAPACK and with each of redblue's
/// [builds](bench_builds) preloaded, interleaved round by round (ScaLAPACK, then each build);
/// prints the ratios (ScaLAPACK's time / redblue's) per build.
pub fn bench_scalapack(args: &[String], timeout: &str) -> Result<(), String> {
    let arg = |k: usize, default: &str| args.get(k).cloned().unwrap_or_else(|| default.to_string());
    let (n, nb, pairs) = (
        arg(0, "4096"),
        arg(1, "64"),
        arg(2, "5").parse::<usize>().unwrap_or(5),
    );
    ensure_packages()?;
    // Each build's library copied aside, so that all of them can be preloaded in turn.
    let mut libraries = Vec::new();
    for (label, features) in bench_builds() {
        build_library_alone(features)?;
        let aside = LIBRARY.replace(".so", &format!("-{}.so", features.replace(',', "-")));
        std::fs::copy(LIBRARY, &aside).map_err(|e| format!("{aside}: {e}"))?;
        let aside = std::fs::canonicalize(&aside).map_err(|e| format!("{aside}: {e}"))?;
        libraries.push((label, features, aside));
    }
    // The default build back where `cargo build -p redblue-scalapack --features mpi` leaves it
    // (the last build made is another): what a preload of the usual path then measures.
    if let Some((_, _, default)) = libraries.first() {
        std::fs::copy(default, LIBRARY).map_err(|e| format!("{LIBRARY}: {e}"))?;
    }
    build_driver_program()?;
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpu
        .lines()
        .find(|l| l.starts_with("model name"))
        .unwrap_or("model name: ?");
    let cpu_features: Vec<&str> = ["avx512f", "avx2", "fma"]
        .into_iter()
        .filter(|f| cpu.split_whitespace().any(|w| w == *f))
        .collect();
    let builds: Vec<String> = libraries
        .iter()
        .map(|(label, features, _)| format!("{label} (features {features})"))
        .collect();
    println!(
        "\nbench-scalapack: f64, N = {n}, NB = {nb}, 2 ranks (1 x 2), {pairs} interleaved rounds; \
         {}; CPU features {cpu_features:?}; ScaLAPACK on OpenBLAS, one thread per rank, \
         OPENBLAS_CORETYPE unset; the library's builds: {}",
        model.split(':').nth(1).unwrap_or("?").trim(),
        builds.join(", ")
    );
    // The targets' three, then the solves and their compositions (no targets), the solves also
    // transposed (`getrs-t`: TRANS = T) and with the upper triangle (`potrs-u`: UPLO = U). A
    // solve takes milliseconds: its time is the median of `SOLVE_CALLS` calls in the run.
    let routines = [
        "gemm", "getrf", "potrf", "gesv", "posv", "getrs", "potrs", "getrs-t", "potrs-u",
    ];
    for routine in routines {
        let time_of = |out: &str| -> Result<f64, String> {
            let times: Vec<f64> = out
                .lines()
                .filter_map(|l| l.strip_prefix(&format!("time {routine} ")))
                .filter_map(|t| t.trim().parse().ok())
                .collect();
            if times.is_empty() {
                return Err(format!("no time in `{out}`"));
            }
            Ok(median(times))
        };
        let calls = match routine {
            "getrs" | "potrs" | "getrs-t" | "potrs-u" => SOLVE_CALLS,
            _ => "1",
        };
        let args = ["time", routine, &n, &nb, calls, "1", "2"];
        let mut theirs = Vec::new();
        let mut ours: Vec<(Vec<f64>, Vec<f64>)> = vec![Default::default(); libraries.len()];
        for _ in 0..pairs {
            let t = time_of(&driver("2", &args, None, timeout)?.0)?;
            theirs.push(t);
            for ((times, ratios), (_, _, library)) in ours.iter_mut().zip(&libraries) {
                let r = time_of(&driver("2", &args, Some(library), timeout)?.0)?;
                times.push(r);
                ratios.push(t / r);
            }
        }
        println!("pd{routine}: ScaLAPACK median {:.3} s", median(theirs));
        for ((times, ratios), (label, _, _)) in ours.into_iter().zip(&libraries) {
            let (lo, hi) = ratios
                .iter()
                .fold((f64::MAX, 0.0f64), |(l, h), &x| (l.min(x), h.max(x)));
            println!(
                "  {label}: median {:.3} s; ratio ScaLAPACK / {label} median {:.2} \
                 (range {lo:.2} to {hi:.2})",
                median(times),
                median(ratios)
            );
        }
    }
    Ok(())
}
