//! Resumable out-of-core LUs: a run stopped by a failed read, write (cut short half-way) or
//! sync at every point it has, then resumed from its record and journal, leaves factors and
//! pivots identical to an uninterrupted run; records of another run or a changed input are
//! refused with an error naming the file.

use redblue_core::{c32, random, Scalar};
use redblue_kernels::{KernelScalar, Par};
use redblue_ooc::fault::{inject, Fault};
use redblue_ooc::{
    left_pivoted, left_pivoted_io, left_unpivoted, left_unpivoted_io, lu_left_pivoted, run_kind,
    DiskMatrix, LuFiles, LuVariant, OocError, OocLu, Progress,
};
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("redblue-ooc-resume-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn value<T: Scalar>(i: usize, j: usize) -> T {
    T::from_f64_parts(random::uniform(i, j, 21), random::uniform(i, j, 22))
}

/// The input `a.rbm`, an empty `lu.rbm` and a new record in `d`.
fn start<T: KernelScalar>(d: &Path, m: usize, w: usize, variant: LuVariant) {
    let a = DiskMatrix::<T>::create_from_fn(d.join("a.rbm"), m, m, w, value::<T>).unwrap();
    DiskMatrix::<T>::create(d.join("lu.rbm"), m, m, w).unwrap();
    let kind = run_kind::<T>(variant.code(), m, w, a.fingerprint().unwrap());
    Progress::create(d, kind).unwrap();
}

/// Runs (or resumes) the factorisation recorded in `d`.
fn run<T: KernelScalar>(d: &Path, variant: LuVariant) -> Result<OocLu, OocError> {
    let mut a = DiskMatrix::<T>::open(d.join("a.rbm"))?;
    let mut f = DiskMatrix::<T>::open(d.join("lu.rbm"))?;
    let mut p = Progress::open(d)?;
    let files = LuFiles {
        input: Some(&mut a),
        factors: &mut f,
        progress: Some(&mut p),
        read_ahead: true,
        on_step: None,
    };
    let info = match variant {
        LuVariant::LeftPivoted => left_pivoted(files, Par::Seq),
        _ => left_unpivoted(files, Par::Seq),
    }?;
    f.sync()?;
    f.verify()?;
    Ok(info)
}

fn contents<T: KernelScalar>(path: &Path) -> Vec<T> {
    let mut f = DiskMatrix::<T>::open(path).unwrap();
    let (m, n) = f.shape();
    let mut v = vec![T::zero(); m * n];
    f.read(0..m, 0..n, &mut v).unwrap();
    v
}

/// Every injected failure of one kind, at every point, then a resume: the same factors.
fn sweep<T: KernelScalar>(m: usize, w: usize, variant: LuVariant, kind: fn(u64) -> Fault) {
    let name = format!("{variant:?}-{m}-{w}-{:?}", kind(0));
    let reference = dir(&format!("{name}-ref"));
    start::<T>(&reference, m, w, variant);
    let whole = run::<T>(&reference, variant).unwrap();
    let want = contents::<T>(&reference.join("lu.rbm"));
    let mut stopped = 0;
    for n in 1.. {
        let d = dir(&name);
        start::<T>(&d, m, w, variant);
        inject(Some(kind(n)));
        let first = run::<T>(&d, variant);
        inject(None);
        match first {
            Ok(info) => {
                // The n-th operation never came: the whole run, uninterrupted.
                assert_eq!(info.ipiv, whole.ipiv);
                break;
            }
            Err(e) => assert!(e.to_string().contains("injected"), "{name} at {n}: {e}"),
        }
        stopped += 1;
        let resumed = run::<T>(&d, variant).unwrap_or_else(|e| panic!("{name}, {n}: {e}"));
        assert_eq!(resumed.ipiv, whole.ipiv, "{name}: stopped at {n}");
        assert!(
            contents::<T>(&d.join("lu.rbm")) == want,
            "{name}: stopped at {n}, the factors differ"
        );
        let _ = std::fs::remove_dir_all(&d);
    }
    assert!(stopped >= 10, "{name}: only {stopped} points");
    let _ = std::fs::remove_dir_all(&reference);
}

#[test]
fn pivoted_resumes_after_a_failure_at_every_point() {
    for kind in [Fault::Write, Fault::Read, Fault::Sync] {
        sweep::<f64>(23, 5, LuVariant::LeftPivoted, kind);
    }
}

#[test]
fn unpivoted_resumes_after_a_failure_at_every_point() {
    for kind in [Fault::Write, Fault::Read, Fault::Sync] {
        sweep::<f64>(23, 5, LuVariant::LeftUnpivoted, kind);
    }
}

#[test]
fn complex_single_resumes_after_a_cut_write() {
    sweep::<c32>(17, 4, LuVariant::LeftPivoted, Fault::Write);
}

#[test]
fn a_resumable_run_equals_the_in_place_run_and_its_model() {
    for (m, w) in [(23, 5), (24, 6), (9, 9)] {
        let d = dir(&format!("model-{m}-{w}"));
        for variant in [LuVariant::LeftPivoted, LuVariant::LeftUnpivoted] {
            start::<f64>(&d, m, w, variant);
            let info = run::<f64>(&d, variant).unwrap();
            let model = match variant {
                LuVariant::LeftPivoted => left_pivoted_io(m as u64, w as u64),
                _ => left_unpivoted_io(m as u64, w as u64),
            };
            assert_eq!((info.io.read_elems, info.io.write_elems), model);
            if variant == LuVariant::LeftPivoted {
                let mut a = DiskMatrix::<f64>::open(d.join("a.rbm")).unwrap();
                let copy = d.join("copy.rbm");
                std::fs::copy(a.path(), &copy).unwrap();
                drop(a);
                a = DiskMatrix::<f64>::open(&copy).unwrap();
                let in_place = lu_left_pivoted(&mut a, Par::Seq).unwrap();
                assert_eq!(in_place.ipiv, info.ipiv);
                assert!(contents::<f64>(&copy) == contents::<f64>(&d.join("lu.rbm")));
            }
            // Resuming a finished run does nothing and says the same.
            let again = run::<f64>(&d, variant).unwrap();
            assert_eq!(again.ipiv, info.ipiv);
            assert_eq!((again.io.read_elems, again.io.write_elems), (0, 0));
        }
        let _ = std::fs::remove_dir_all(&d);
    }
}

#[test]
fn a_record_of_another_run_or_a_changed_input_is_refused() {
    let d = dir("refused");
    start::<f64>(&d, 12, 4, LuVariant::LeftPivoted);
    let e = run::<f64>(&d, LuVariant::LeftUnpivoted).unwrap_err();
    assert!(e.to_string().contains("another run"), "{e}");
    // The input rewritten with other values (same shape): its fingerprint changed.
    DiskMatrix::<f64>::create_from_fn(d.join("a.rbm"), 12, 12, 4, |i, j| (i + 2 * j) as f64)
        .unwrap();
    let e = run::<f64>(&d, LuVariant::LeftPivoted).unwrap_err();
    assert!(
        e.to_string().contains("a.rbm") && e.to_string().contains("changed"),
        "{e}"
    );
    // A damaged record.
    let rec = Progress::record_path(&d);
    let mut b = std::fs::read(&rec).unwrap();
    b[30] ^= 1;
    std::fs::write(&rec, b).unwrap();
    let e = Progress::open(&d).unwrap_err();
    assert!(
        e.to_string().contains("progress.rec") && e.to_string().contains("checksum"),
        "{e}"
    );
    std::fs::remove_file(&rec).unwrap();
    let e = Progress::open(&d).unwrap_err();
    assert!(e.to_string().contains("no progress record"), "{e}");
    // A resumable run needs the input apart from the factors.
    start::<f64>(&d, 12, 4, LuVariant::LeftPivoted);
    let mut f = DiskMatrix::<f64>::open(d.join("lu.rbm")).unwrap();
    let mut p = Progress::open(&d).unwrap();
    let files = LuFiles {
        input: None,
        factors: &mut f,
        progress: Some(&mut p),
        read_ahead: false,
        on_step: None,
    };
    let e = left_pivoted(files, Par::Seq).unwrap_err();
    assert!(e.to_string().contains("needs its input"), "{e}");
    let _ = std::fs::remove_dir_all(&d);
}
