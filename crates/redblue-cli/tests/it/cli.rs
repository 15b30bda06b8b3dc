//! The `redblue` binary end to end: JSON fields, the check, the plan's worked number, and
//! errors with exit status 2.

use serde_json::Value;
use std::process::{Command, Output};

fn redblue(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redblue"))
        .args(args)
        .output()
        .expect("the redblue binary runs")
}

fn json_line(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    let line = text.lines().next().expect("one JSON line");
    serde_json::from_str(line).expect("valid JSON")
}

#[test]
fn gemm_json_has_every_field_and_measured_equals_model_in_native_layout() {
    for (algorithm, ranks, ty) in [
        ("cosma", "4", "f64"),
        ("summa", "6", "c32"),
        ("2.5d", "8", "f32"),
    ] {
        let out = redblue(&[
            "gemm",
            "--m",
            "90",
            "--n",
            "70",
            "--k",
            "110",
            "--ranks",
            ranks,
            "--type",
            ty,
            "--algorithm",
            algorithm,
            "--reps",
            "1",
            "--check",
            "--json",
        ]);
        let v = json_line(&out);
        for field in [
            "op",
            "m",
            "n",
            "k",
            "ranks",
            "type",
            "algorithm",
            "strategy",
            "time_s",
            "gflops",
            "words_sent_max",
            "words_sent_avg",
            "messages_max",
            "model_words",
            "lower_bound_words",
            "memory_words_max",
            "residual",
        ] {
            assert!(
                v.get(field).is_some(),
                "{algorithm}: missing {field} in {v}"
            );
        }
        assert_eq!(v["words_sent_max"], v["model_words"], "{v}");
        assert_eq!(v["type"], ty);
        assert!(v["residual"].as_f64().unwrap() < 10.0, "{v}");
    }
}

#[test]
fn check_passes_with_transposes_block_cyclic_layout_and_beta() {
    let out = redblue(&[
        "gemm",
        "--m",
        "50",
        "--n",
        "61",
        "--k",
        "47",
        "--ranks",
        "5",
        "--type",
        "c64",
        "--op-a",
        "C",
        "--op-b",
        "T",
        "--beta",
        "0.5",
        "--alpha",
        "-2",
        "--layout",
        "block-cyclic",
        "--reps",
        "1",
        "--check",
        "--json",
    ]);
    let v = json_line(&out);
    assert!(v["residual"].as_f64().unwrap() < 10.0, "{v}");
    assert_eq!(v["layout"], "block-cyclic");
    // Planned where the operands are: the model is the words from the block-cyclic layouts.
    assert_eq!(v["model_words"], v["words_sent_max"], "{v}");
}

#[test]
fn block_cyclic_products_are_planned_where_they_are() {
    // 512³ in 64-wide blocks on 1 × 2: each rank receives only the half of A it lacks.
    let run = |layout: &str| {
        let out = redblue(&[
            "gemm", "--m", "512", "--n", "512", "--k", "512", "--ranks", "2", "--layout", layout,
            "--reps", "1", "--check", "--json",
        ]);
        json_line(&out)
    };
    let (native, cyclic) = (run("native"), run("block-cyclic"));
    assert_eq!(cyclic["words_sent_max"], 512 * 256, "{cyclic}");
    assert_eq!(
        cyclic["words_sent_max"], native["words_sent_max"],
        "{native}"
    );
    assert_eq!(cyclic["model_words"], cyclic["words_sent_max"], "{cyclic}");
    assert!(cyclic["residual"].as_f64().unwrap() < 10.0, "{cyclic}");
}

#[test]
fn plan_gives_the_papers_worked_number() {
    let out = redblue(&[
        "plan", "gemm", "--m", "16384", "--n", "16384", "--k", "16384", "--ranks", "4096", "--json",
    ]);
    let v = json_line(&out);
    // The paper's 3·(mnk/p)^(2/3) = 3,145,728 words touched, minus the 3·16384²/4096 = 196,608
    // a rank starts with: what it receives. COSMA reaches the bound here.
    assert_eq!(v["model_words"], 2_949_120);
    assert_eq!(v["lower_bound_words"], 2_949_120.0);
    assert_eq!(v["strategy"].as_str().unwrap().split(',').count(), 12);
    assert!(v.get("time_s").is_none(), "plan runs nothing");
}

#[test]
fn bad_requests_exit_with_status_two_and_say_why() {
    for (args, expected) in [
        (
            vec![
                "gemm",
                "--m",
                "10",
                "--n",
                "10",
                "--k",
                "10",
                "--ranks",
                "3",
                "--strategy",
                "pm2,pn2",
            ],
            "4 ranks",
        ),
        (
            vec![
                "gemm", "--m", "100", "--n", "100", "--k", "100", "--memory", "50",
            ],
            "needs at least",
        ),
        (vec!["plan", "gemm", "--strategy", "pm2,xk2"], "xk2"),
        // A strategy for another shape: k = 2 cannot be cut into 8.
        (
            vec![
                "plan",
                "gemm",
                "--m",
                "64",
                "--n",
                "8",
                "--k",
                "2",
                "--ranks",
                "8",
                "--strategy",
                "pk8",
            ],
            "another shape",
        ),
        (vec!["gemm", "--algorithm", "fox"], "cannon"),
    ] {
        let out = redblue(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn lu_json_has_every_field_passes_its_check_and_measures_the_model() {
    for (algorithm, ranks, ty, layout) in [
        ("conflux", "8", "f64", "native"),
        ("2d", "6", "c32", "block-cyclic"),
        ("conflux", "4", "c64", "block-cyclic"),
        ("conflux", "3", "f32", "native"),
    ] {
        let out = redblue(&[
            "lu",
            "--n",
            "97",
            "--ranks",
            ranks,
            "--type",
            ty,
            "--algorithm",
            algorithm,
            "--block",
            "8",
            "--layout",
            layout,
            "--nrhs",
            "3",
            "--reps",
            "1",
            "--check",
            "--json",
        ]);
        let v = json_line(&out);
        for field in [
            "op",
            "n",
            "ranks",
            "ranks_used",
            "type",
            "algorithm",
            "grid",
            "block",
            "backend",
            "layout",
            "nrhs",
            "reps",
            "time_s",
            "gflops",
            "solve_time_s",
            "words_sent_max",
            "words_sent_avg",
            "messages_max",
            "model_words",
            "two_d_words",
            "lower_bound_words",
            "memory_words_max",
            "growth_factor",
            "residual",
            "solve_residual",
            "threshold",
        ] {
            assert!(v.get(field).is_some(), "{field} missing in {v}");
        }
        assert_eq!(v["op"], "lu");
        assert_eq!(v["algorithm"], algorithm);
        let threshold = v["threshold"].as_f64().unwrap();
        assert!(threshold <= 16.0);
        assert!(v["residual"].as_f64().unwrap() < threshold, "{v}");
        assert!(v["solve_residual"].as_f64().unwrap() < threshold, "{v}");
        assert!(v["growth_factor"].as_f64().unwrap() > 0.0, "{v}");
        if layout == "native" {
            assert_eq!(v["words_sent_max"], v["model_words"], "{v}");
        }
    }
}

/// The right-hand side is independent of `A`: the solve residual is of its expected size, not
/// zero (the old generator gave every seed the same matrix, so from `N ≈ 1100` on `B` was
/// `A`'s first column and the residual was exactly 0 whatever the solve did).
#[test]
fn lu_solve_residual_is_not_vacuous() {
    for algorithm in ["conflux", "2d"] {
        let v = json_line(&redblue(&[
            "lu",
            "--n",
            "1200",
            "--ranks",
            "2",
            "--algorithm",
            algorithm,
            "--reps",
            "1",
            "--check",
            "--json",
        ]));
        let solve = v["solve_residual"].as_f64().unwrap();
        let factor = v["residual"].as_f64().unwrap();
        // About 1/N in this normalisation; far from both 0 and the threshold.
        assert!((1e-4..0.1).contains(&solve), "{algorithm}: {v}");
        assert!((1e-3..1.0).contains(&factor), "{algorithm}: {v}");
    }
}

/// The plan of a large run has exact per-rank counts; a million ranks get the average, and the
/// JSON says which.
#[test]
fn plan_compare_lists_every_algorithm_next_to_the_bound() {
    let v = json_line(&redblue(&[
        "plan",
        "gemm",
        "--m",
        "4096",
        "--n",
        "4096",
        "--k",
        "4096",
        "--ranks",
        "64",
        "--compare",
        "--strategy",
        "pm4,pn4,pk4",
        "--json",
    ]));
    let rows = v["algorithms"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["algorithm"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["cosma", "summa", "2.5d", "cannon", "carma", "custom"],
        "{v}"
    );
    let received = |i: usize| rows[i]["model_received_max"].as_f64().unwrap();
    let bound = v["lower_bound_words"].as_f64().unwrap();
    // On 64 ranks a cube: COSMA, CARMA and the user's 4 × 4 × 4 meet the bound; the others
    // receive more.
    for i in 0..rows.len() {
        assert!(received(i) >= received(0) && received(0) >= bound, "{v}");
    }
    assert_eq!(
        (received(4), received(5)),
        (received(0), received(0)),
        "{v}"
    );
    assert!(
        received(1) > received(0) && received(3) > received(0),
        "{v}"
    );
    let out = redblue(&[
        "plan",
        "gemm",
        "--m",
        "8",
        "--n",
        "8",
        "--k",
        "8",
        "--compare",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("carma") && text.contains("lower bound"),
        "{text}"
    );
}

#[test]
fn plan_lu_compare_lists_every_algorithm_with_seed_001s_formula() {
    // An algorithm that cannot plan the problem says why, in its row.
    let plan_lu = |extra: &[&str]| {
        let common = [
            "plan",
            "lu",
            "--n",
            "2048",
            "--ranks",
            "8",
            "--compare",
            "--json",
        ];
        json_line(&redblue(&[&common[..], extra].concat()))
    };
    let v = plan_lu(&["--layers", "2"]);
    let rows = v["algorithms"].as_array().unwrap();
    assert_eq!(rows[0]["algorithm"], "conflux");
    assert!(rows[0]["model_words"].as_u64().unwrap() > 0, "{v}");
    assert!(
        rows[1]["error"].as_str().unwrap().contains("one layer"),
        "{v}"
    );
    let v = plan_lu(&[]);
    let rows = v["algorithms"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["algorithm"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["conflux", "2d", "2.5d-nopiv", "2.5d-ca"], "{v}");
    let sent = |i: usize| rows[i]["model_words"].as_u64().unwrap();
    assert!((0..4).all(|i| sent(i) > 0), "{v}");
    // Seed 001's algorithms on square layers, with the paper's N²/√(cP) next to the model.
    for row in &rows[2..] {
        let grid: Vec<usize> = row["grid"]
            .as_str()
            .unwrap()
            .split('x')
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(grid[0], grid[1], "{v}");
        let (p, c) = ((grid[0] * grid[1] * grid[2]) as f64, grid[2] as f64);
        let formula = 2048.0 * 2048.0 / (c * p).sqrt();
        assert!(
            (row["paper_words"].as_f64().unwrap() - formula).abs() < 1e-6 * formula,
            "{v}"
        );
    }
    assert!(rows[0]["paper_words"].is_null(), "{v}");
}

#[test]
fn plan_lu_at_scale_says_which_model_it_used() {
    let v = json_line(&redblue(&[
        "plan", "lu", "--n", "65536", "--ranks", "4096", "--json",
    ]));
    assert_eq!(v["model"], "exact", "{v}");
    let words = v["model_words"].as_f64().unwrap();
    assert!(
        words > 0.0 && words < 0.75 * v["two_d_words"].as_f64().unwrap(),
        "{v}"
    );
    let v = json_line(&redblue(&[
        "plan", "lu", "--n", "65536", "--ranks", "1000000", "--json",
    ]));
    assert_eq!(v["model"], "average", "{v}");
    assert!(
        v["model_words"].as_f64().unwrap() < v["two_d_words"].as_f64().unwrap(),
        "{v}"
    );
    let text = redblue(&["plan", "lu", "--n", "65536", "--ranks", "1000000"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("on average"));
}

/// Runs the machine cannot hold are refused before anything is allocated, naming what they
/// need and what there is; more threads-as-ranks than the backend starts, likewise.
#[test]
fn runs_too_large_for_the_machine_are_refused_before_allocating() {
    for (args, expected) in [
        (
            &["gemm", "--m", "100000000", "--n", "100000000", "--k", "10"][..],
            "available",
        ),
        (&["lu", "--n", "100000000"][..], "available"),
        (
            &["lu", "--n", "100000000", "--ranks", "7", "--check"][..],
            "GiB",
        ),
        (
            &[
                "gemm", "--m", "10", "--n", "10", "--k", "10", "--ranks", "100000",
            ][..],
            "at most 1024 ranks",
        ),
    ] {
        let out = redblue(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // Planning such runs allocates nothing and answers.
    let plan = redblue(&["plan", "lu", "--n", "100000000", "--ranks", "4096"]);
    assert!(
        plan.status.success(),
        "{}",
        String::from_utf8_lossy(&plan.stderr)
    );
}

#[test]
fn lu_grid_and_layers_are_honoured_and_plan_matches_the_run() {
    let run = json_line(&redblue(&[
        "lu", "--n", "64", "--ranks", "8", "--layers", "2", "--block", "4", "--reps", "1", "--json",
    ]));
    assert_eq!(run["grid"], "2x2x2");
    let plan = json_line(&redblue(&[
        "plan", "lu", "--n", "64", "--ranks", "9", "--grid", "3x3x1", "--block", "4", "--json",
    ]));
    assert_eq!(plan["grid"], "3x3x1");
    for field in [
        "model_words",
        "model_received_max",
        "two_d_words",
        "lower_bound_words",
        "memory_words_max",
        "ranks_used",
    ] {
        assert!(plan.get(field).is_some(), "{field} missing in {plan}");
    }
    // The plan assumes no interchanges; a diagonally dominant matrix would match it, the
    // miniapp's random one pivots, so only the grid and the bound are compared.
    let run = json_line(&redblue(&[
        "lu", "--n", "64", "--ranks", "9", "--grid", "3x3x1", "--block", "4", "--reps", "1",
        "--json",
    ]));
    assert_eq!(run["lower_bound_words"], plan["lower_bound_words"]);
    assert_eq!(run["two_d_words"], plan["two_d_words"]);
}

#[test]
fn seed_001s_lu_without_pivoting_checks_and_moves_what_its_plan_says() {
    // The miniapp's matrix for 2.5d-nopiv has N on its diagonal: no interchanges, so the run
    // moves exactly what the plan (made for no interchanges) says.
    let args = [
        "--n",
        "300",
        "--ranks",
        "8",
        "--algorithm",
        "2.5d-nopiv",
        "--json",
    ];
    let run = json_line(&redblue(
        &[&["lu", "--check", "--reps", "1"][..], &args[..]].concat(),
    ));
    let plan = json_line(&redblue(&[&["plan", "lu"][..], &args[..]].concat()));
    assert!(run["residual"].as_f64().unwrap() < 16.0, "{run}");
    assert_eq!(run["words_sent_max"], plan["model_words"], "{run} {plan}");
    let grid: Vec<&str> = run["grid"].as_str().unwrap().split('x').collect();
    assert_eq!(grid[0], grid[1], "{run}");
    let run = json_line(&redblue(&[
        "lu",
        "--n",
        "200",
        "--ranks",
        "4",
        "--algorithm",
        "2.5d-ca",
        "--check",
        "--json",
    ]));
    assert!(run["residual"].as_f64().unwrap() < 16.0, "{run}");
}

#[test]
fn bad_lu_requests_exit_with_status_two_and_say_why() {
    for (args, says) in [
        (
            &["lu", "--n", "10", "--ranks", "2", "--block", "0"][..],
            "tile width",
        ),
        (
            &["lu", "--n", "10", "--ranks", "4", "--layers", "5"][..],
            "layers",
        ),
        (
            &["lu", "--n", "10", "--ranks", "4", "--grid", "3x3x1"][..],
            "does not fit",
        ),
        (
            &[
                "lu", "--n", "10", "--ranks", "4", "--grid", "1x1x4", "--block", "2",
            ][..],
            "tile width",
        ),
        (
            &[
                "lu",
                "--n",
                "10",
                "--ranks",
                "4",
                "--algorithm",
                "2d",
                "--layers",
                "2",
            ][..],
            "one layer",
        ),
        (
            &[
                "plan", "lu", "--n", "1000", "--ranks", "4", "--memory", "1000",
            ][..],
            "memory",
        ),
        (
            &["lu", "--n", "10", "--ranks", "2", "--algorithm", "3d"][..],
            "2.5d-nopiv or 2.5d-ca",
        ),
        (
            &["lu", "--n", "10", "--ranks", "2", "--grid", "2x"][..],
            "PXxPYxC",
        ),
    ] {
        let out = redblue(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn cholesky_json_has_every_field_passes_its_check_and_measures_the_model() {
    for (algorithm, ranks, ty, layout, uplo) in [
        ("confchox", "8", "f64", "native", "lower"),
        ("2d", "6", "c32", "block-cyclic", "upper"),
        ("confchox", "4", "c64", "block-cyclic", "upper"),
        ("confchox", "3", "f32", "native", "lower"),
    ] {
        let out = redblue(&[
            "cholesky",
            "--n",
            "97",
            "--ranks",
            ranks,
            "--type",
            ty,
            "--algorithm",
            algorithm,
            "--uplo",
            uplo,
            "--block",
            "8",
            "--layout",
            layout,
            "--nrhs",
            "3",
            "--reps",
            "1",
            "--check",
            "--json",
        ]);
        let v = json_line(&out);
        for field in [
            "op",
            "n",
            "ranks",
            "ranks_used",
            "type",
            "algorithm",
            "uplo",
            "grid",
            "block",
            "backend",
            "layout",
            "nrhs",
            "reps",
            "time_s",
            "gflops",
            "solve_time_s",
            "words_sent_max",
            "words_sent_avg",
            "messages_max",
            "model_words",
            "two_d_words",
            "lower_bound_words",
            "memory_words_max",
            "residual",
            "solve_residual",
            "threshold",
        ] {
            assert!(v.get(field).is_some(), "{field} missing in {v}");
        }
        assert!(v.get("growth_factor").is_none(), "{v}");
        assert_eq!(v["op"], "cholesky");
        assert_eq!(v["algorithm"], algorithm);
        assert_eq!(v["uplo"], uplo);
        // ScaLAPACK's LLT tester threshold.
        assert_eq!(v["threshold"].as_f64(), Some(3.0));
        assert!(v["residual"].as_f64().unwrap() < 3.0, "{v}");
        assert!(v["solve_residual"].as_f64().unwrap() < 16.0, "{v}");
        if layout == "native" && uplo == "lower" {
            assert_eq!(v["words_sent_max"], v["model_words"], "{v}");
        }
    }
}

#[test]
fn plan_cholesky_matches_the_run_and_io_sim_reports_the_bounds() {
    let args = ["--n", "120", "--ranks", "8", "--block", "8"];
    let plan = json_line(&redblue(
        &[&["plan", "cholesky", "--json"][..], &args].concat(),
    ));
    let run = json_line(&redblue(
        &[&["cholesky", "--json", "--reps", "1"][..], &args].concat(),
    ));
    for field in [
        "grid",
        "block",
        "model_words",
        "two_d_words",
        "lower_bound_words",
    ] {
        assert_eq!(run[field], plan[field], "{field}: {run} against {plan}");
    }
    assert_eq!(plan["model"], "exact");
    assert_eq!(run["words_sent_max"], plan["model_words"]);
    // The simulator: the square recursive algorithm on Morton storage within a constant of
    // both bounds, LAPACK on column-major storage a factor √M above in messages.
    let sim = |algorithm: &str, layout: &str| {
        json_line(&redblue(&[
            "io-sim",
            "cholesky",
            "--n",
            "256",
            "--memory",
            "768",
            "--algorithm",
            algorithm,
            "--layout",
            layout,
            "--json",
        ]))
    };
    let square = sim("square", "morton");
    assert_eq!(square["op"], "io-sim cholesky");
    assert!(square["words_ratio"].as_f64().unwrap() < 1.3, "{square}");
    assert!(square["messages_ratio"].as_f64().unwrap() < 4.0, "{square}");
    let lapack = sim("lapack", "col-major");
    assert!(
        lapack["messages_ratio"].as_f64().unwrap() > 20.0,
        "{lapack}"
    );
}

#[test]
fn bad_cholesky_requests_exit_with_status_two_and_say_why() {
    for (args, says) in [
        (
            &["cholesky", "--n", "10", "--ranks", "2", "--block", "0"][..],
            "tile width",
        ),
        (
            &["cholesky", "--n", "10", "--ranks", "2", "--uplo", "middle"][..],
            "middle",
        ),
        (
            &[
                "cholesky",
                "--n",
                "10",
                "--ranks",
                "4",
                "--algorithm",
                "2d",
                "--layers",
                "2",
            ][..],
            "one layer",
        ),
        (
            &["cholesky", "--n", "10", "--ranks", "2", "--algorithm", "lu"][..],
            "lu",
        ),
        (
            &["io-sim", "cholesky", "--n", "64", "--memory", "2"][..],
            "fast memory",
        ),
        (&["ooc-lu", "--n", "10", "--ranks", "0"][..], "at least 1"),
        (
            &["ooc-lu", "--n", "10", "--ranks", "2", "--variant", "right"][..],
            "left-looking pivoted",
        ),
    ] {
        let out = redblue(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn ooc_lu_counts_equal_the_model_and_the_solve_checks_for_every_variant() {
    for (variant, ty) in [
        ("left-pivoted", "f64"),
        ("left-unpivoted", "c32"),
        ("right", "f32"),
    ] {
        let out = redblue(&[
            "ooc-lu",
            "--n",
            "150",
            "--panel",
            "16",
            "--variant",
            variant,
            "--type",
            ty,
            "--check",
            "--json",
        ]);
        let v = json_line(&out);
        assert_eq!(v["io_read_elems"], v["model_read_elems"], "{v}");
        assert_eq!(v["io_write_elems"], v["model_write_elems"], "{v}");
        assert!(v["solve_residual"].as_f64().unwrap() < 1.0, "{v}");
        assert!(v["residual"].as_f64().unwrap() < 1.0, "{v}");
        for field in [
            "time_s",
            "gflops",
            "io_read_s",
            "io_write_s",
            "flops_trsm",
            "flops_gemm",
            "flops_getrf",
        ] {
            assert!(v[field].as_f64().is_some(), "{field} in {v}");
        }
    }
    // Over ranks, from one shared file and from a file per rank: the ranks' counts add up to
    // the model, the factors check.
    for files in ["shared", "distributed"] {
        let v = json_line(&redblue(&[
            "ooc-lu",
            "--n",
            "120",
            "--panel",
            "16",
            "--ranks",
            "3",
            "--row-block",
            "5",
            "--files",
            files,
            "--check",
            "--json",
        ]));
        assert_eq!(v["io_read_elems"], v["model_read_elems"], "{v}");
        assert_eq!(v["io_write_elems"], v["model_write_elems"], "{v}");
        assert!(v["residual"].as_f64().unwrap() < 1.0, "{v}");
        assert!(v["solve_residual"].as_f64().unwrap() < 1.0, "{v}");
        assert_eq!(
            (v["ranks"].as_u64(), v["files"].as_str()),
            (Some(3), Some(files))
        );
    }
    // The rows' block by default: a page (4096 bytes) of a column.
    for (ty, block) in [("f64", 512), ("c64", 256), ("f32", 1024)] {
        let v = json_line(&redblue(&[
            "ooc-lu", "--n", "40", "--panel", "8", "--ranks", "2", "--type", ty, "--json",
        ]));
        assert_eq!(v["row_block"].as_u64(), Some(block), "{v}");
    }
    // A memory budget holding the matrix: in core, one panel, each element read and written
    // once; a byte less, three panels.
    let v = json_line(&redblue(&[
        "ooc-lu",
        "--n",
        "64",
        "--memory",
        "32768",
        "--json",
        "--compare-in-core",
    ]));
    assert!(v["in_core_time_s"].as_f64().is_some() && v["ratio_to_in_core"].as_f64().is_some());
    assert_eq!(
        (v["panel"].as_u64(), v["io_read_elems"].as_u64()),
        (Some(64), Some(64 * 64))
    );
    let v = json_line(&redblue(&[
        "ooc-lu", "--n", "64", "--memory", "32767", "--json",
    ]));
    assert_eq!(v["panel"].as_u64(), Some(32767 / (3 * 8 * 64)));
}

#[test]
fn ooc_lu_reads_a_npy_file_keeps_its_files_and_leaves_the_input_alone() {
    use redblue::ooc::DiskMatrix;
    let dir = std::env::temp_dir().join(format!("redblue-cli-ooc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut m = DiskMatrix::<f64>::create_from_fn(dir.join("m.rbm"), 40, 40, 8, |i, j| {
        if i == j {
            40.0
        } else {
            ((i * 7 + j * 3) % 11) as f64 / 11.0
        }
    })
    .unwrap();
    m.to_npy(dir.join("m.npy")).unwrap();
    let before = std::fs::read(dir.join("m.npy")).unwrap();
    let out = redblue(&[
        "ooc-lu",
        "--input",
        dir.join("m.npy").to_str().unwrap(),
        "--panel",
        "6",
        "--dir",
        dir.join("run").to_str().unwrap(),
        "--check",
        "--json",
    ]);
    let v = json_line(&out);
    assert_eq!(v["n"], 40);
    assert!(v["solve_residual"].as_f64().unwrap() < 1.0);
    assert_eq!(std::fs::read(dir.join("m.npy")).unwrap(), before);
    assert!(dir.join("run/lu.rbm").exists() && dir.join("run/a.rbm").exists());
    // A file that is not .npy: a clear error, status 2.
    std::fs::write(dir.join("bad.npy"), b"nonsense").unwrap();
    let out = redblue(&["ooc-lu", "--input", dir.join("bad.npy").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.npy"));
}

#[cfg(unix)]
#[test]
fn a_reader_that_stops_early_ends_the_run_quietly_not_with_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    // The pipe's reading end closed before the run writes a line: every write fails.
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    for args in [
        &["plan", "lu", "--n", "4096", "--ranks", "4"][..],
        &["plan", "cholesky", "--n", "512", "--ranks", "2"],
        &["gemm", "--m", "40", "--n", "40", "--k", "40", "--reps", "1"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_redblue"))
            .args(args)
            .stdout(Stdio::from(writer.try_clone().unwrap()))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
        // Ended by `SIGPIPE` (13 on Linux and the BSDs), as `cat` or `ls` would be.
        assert_eq!(out.status.signal(), Some(13), "{args:?}");
    }
}
