//! `redblue ooc-lu --resume`: a run killed at every write it makes (aborted half-way through
//! it, as a killed process leaves its files) or by SIGKILL at random moments resumes to factors
//! and pivots identical to an uninterrupted run; a run that cannot resume says so and leaves no
//! file that looks finished.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

fn redblue(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_redblue"))
        .args(args)
        .output()
        .expect("the redblue binary runs")
}

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("redblue-cli-resume-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

/// `ooc-lu` on the generated matrix of order `n`, panels of `w`, in `d`, with `extra`.
fn ooc(d: &Path, n: usize, w: usize, variant: &str, extra: &[&str]) -> Output {
    let (n, w) = (n.to_string(), w.to_string());
    let mut args = vec![
        "ooc-lu",
        "--n",
        &n,
        "--panel",
        &w,
        "--variant",
        variant,
        "--dir",
    ];
    args.push(d.to_str().unwrap());
    args.extend_from_slice(extra);
    redblue(&args)
}

/// The finished files of a run: the factors and the pivots.
fn finished(d: &Path) -> (Vec<u8>, Vec<u8>) {
    (
        std::fs::read(d.join("lu.rbm")).expect("lu.rbm"),
        std::fs::read(d.join("ipiv.npy")).expect("ipiv.npy"),
    )
}

fn success(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_run_aborted_in_any_write_resumes_to_identical_factors() {
    for variant in ["left-pivoted", "left-unpivoted"] {
        let (n, w) = (40, 8);
        let reference = dir(&format!("{variant}-ref"));
        success(&ooc(&reference, n, w, variant, &[]), "reference");
        let want = finished(&reference);
        let mut aborted = 0;
        for k in 1.. {
            let d = dir(&format!("{variant}-{k}"));
            let fault = format!("abort:{k}");
            let out = ooc(&d, n, w, variant, &["--inject-fault", &fault]);
            if out.status.success() {
                break; // no k-th write: the run finished
            }
            aborted += 1;
            assert_eq!(
                out.status.code(),
                None,
                "{variant} {fault}: killed by a signal"
            );
            assert!(
                !d.join("lu.rbm").exists(),
                "{variant} {fault}: looks finished"
            );
            let out = ooc(&d, n, w, variant, &["--resume", "--check", "--json"]);
            success(&out, &format!("{variant}, resumed after {fault}"));
            assert!(finished(&d) == want, "{variant} {fault}: other factors");
            let _ = std::fs::remove_dir_all(&d);
        }
        assert!(aborted > 20, "{variant}: {aborted} writes");
        let _ = std::fs::remove_dir_all(&reference);
    }
}

#[test]
fn a_run_killed_at_random_moments_resumes_to_identical_factors() {
    let (n, w) = (700, 24);
    let reference = dir("kill-ref");
    let started = std::time::Instant::now();
    success(&ooc(&reference, n, w, "left-pivoted", &[]), "reference");
    let whole = started.elapsed();
    let want = finished(&reference);
    let mut resumed = 0;
    for (i, fraction) in [0.15, 0.4, 0.65, 0.9].into_iter().enumerate() {
        let d = dir(&format!("kill-{i}"));
        let mut child = Command::new(env!("CARGO_BIN_EXE_redblue"))
            .args(["ooc-lu", "--n", "700", "--panel", "24", "--dir"])
            .arg(&d)
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Once the run has begun (its record exists), a while into it.
        while !d.join("progress.rec").exists() && child.try_wait().unwrap().is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(Duration::from_secs_f64(
            whole.as_secs_f64() * fraction * 0.8,
        ));
        let _ = child.kill(); // SIGKILL, wherever it is (it may have finished)
        let _ = child.wait();
        let out = ooc(&d, n, w, "left-pivoted", &["--resume", "--json"]);
        success(
            &out,
            &format!("resumed after a kill at {fraction} of the run"),
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        if v["resumed_from_step"].as_u64().is_some_and(|k| k > 0) {
            resumed += 1;
        }
        assert!(finished(&d) == want, "killed at {fraction}: other factors");
        let _ = std::fs::remove_dir_all(&d);
    }
    assert!(resumed >= 1, "no kill landed in the factorisation");
    let _ = std::fs::remove_dir_all(&reference);
}

#[test]
fn a_run_that_cannot_resume_says_so() {
    // The right-looking baseline keeps no record: after a kill, only a partial file.
    let d = dir("right");
    let out = ooc(&d, 40, 8, "right", &["--inject-fault", "abort:9"]);
    assert_eq!(out.status.code(), None);
    assert!(!d.join("lu.rbm").exists() && d.join("lu.rbm.partial").exists());
    let out = ooc(&d, 40, 8, "right", &["--resume"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("keeps no record"));
    // No record at all, another variant's record, an injected failure's clear error.
    let out = ooc(&d, 40, 8, "left-pivoted", &["--resume"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no progress record"));
    let out = ooc(&d, 40, 8, "left-pivoted", &["--inject-fault", "sync:3"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("injected failure of a sync"), "{err}");
    let out = ooc(&d, 40, 8, "left-unpivoted", &["--resume"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass --variant left-pivoted"));
    success(
        &ooc(&d, 40, 8, "left-pivoted", &["--resume", "--check"]),
        "resume",
    );
    // A sequential run's record is not a run over ranks'.
    let out = ooc(&d, 40, 8, "left-pivoted", &["--resume", "--ranks", "2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("another run"));
    // --resume needs --dir.
    let out = redblue(&["ooc-lu", "--resume"]);
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_run_over_ranks_aborted_in_its_writes_resumes_to_identical_factors() {
    let (n, w) = (60, 8);
    let over = ["--ranks", "3", "--row-block", "4"];
    let reference = dir("ranks-ref");
    success(&ooc(&reference, n, w, "left-pivoted", &over), "reference");
    let want = finished(&reference);
    for files in ["shared", "distributed"] {
        let mut aborted = 0;
        for k in (1..).step_by(4) {
            let d = dir(&format!("ranks-{files}-{k}"));
            let fault = format!("abort:{k}");
            let mut args = over.to_vec();
            args.extend(["--files", files, "--inject-fault", &fault]);
            if ooc(&d, n, w, "left-pivoted", &args).status.success() {
                break;
            }
            aborted += 1;
            assert!(
                !d.join("lu.rbm").exists(),
                "{files} {fault}: looks finished"
            );
            let mut args = over.to_vec();
            args.extend(["--files", files, "--resume", "--check"]);
            success(
                &ooc(&d, n, w, "left-pivoted", &args),
                &format!("{files} after {fault}"),
            );
            assert!(finished(&d) == want, "{files} {fault}: other factors");
            let _ = std::fs::remove_dir_all(&d);
        }
        assert!(aborted > 5, "{files}: {aborted} aborts");
    }
    let _ = std::fs::remove_dir_all(&reference);
}
