//! The out-of-core LU over ranks (threads as ranks): the row-cyclic dealing, the panel LU over
//! ranks against `P·E = L·U`, and the whole factorisation from one shared file and from a file
//! per rank — the factors' residual below ScaLAPACK's threshold, the same factors either way,
//! the ranks' counts adding up to the sequential model, the same pivots on every rank.

use redblue_comm::{run_ranks, Communicator};
use redblue_core::{c64, random, RealScalar, Scalar};
use redblue_kernels::{KernelScalar, Par};
use redblue_ooc::parallel::{getrf_rows, left_pivoted_ranks, RankFile, RowCyclic};
use redblue_ooc::{factor_residual, left_pivoted_io, DiskMatrix, OocLu};
use std::path::{Path, PathBuf};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("redblue-ooc-par-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn value<T: Scalar>(i: usize, j: usize) -> T {
    T::from_f64_parts(random::uniform(i, j, 31), random::uniform(i, j, 32))
}

#[test]
fn rows_are_dealt_in_blocks_cyclically() {
    for (m, b, p) in [(37, 3, 4), (10, 1, 3), (64, 16, 2), (5, 8, 3), (0, 2, 2)] {
        let lay = RowCyclic { m, b, p };
        let mut seen = vec![0; p];
        for i in 0..m {
            let r = lay.owner(i);
            assert_eq!(lay.local(i), seen[r], "{lay:?} row {i}");
            assert_eq!(lay.global(r, lay.local(i)), i);
            seen[r] += 1;
            for q in 0..p {
                let below = (0..i).filter(|&g| lay.owner(g) == q).count();
                assert_eq!(lay.rows_below(q, i), below, "{lay:?} {q} {i}");
            }
        }
        for (q, &count) in seen.iter().enumerate() {
            assert_eq!(lay.local_rows(q), count);
        }
    }
}

/// Factors rows `r..m` (`w` columns) of a random matrix over `p` ranks and checks `P·E = L·U`.
fn panel<T: KernelScalar>(
    p: usize,
    b: usize,
    m: usize,
    r: usize,
    w: usize,
    zero_col: Option<usize>,
) {
    let entry = |i: usize, j: usize| {
        if Some(j) == zero_col {
            T::zero()
        } else {
            value::<T>(i, j)
        }
    };
    let lay = RowCyclic { m, b, p };
    let results = run_ranks(p, |comm| {
        let me = comm.rank();
        let rows: Vec<usize> = (r..m).filter(|&i| lay.owner(i) == me).collect();
        let h = rows.len();
        let mut e: Vec<T> = (0..w)
            .flat_map(|j| rows.iter().map(move |&i| entry(i, j)))
            .collect();
        let info = getrf_rows(&comm, lay, r, w, &mut e, Par::Seq).unwrap();
        (rows, h, e, info)
    });
    let info = &results[0].3;
    assert!(
        results.iter().all(|x| x.3 == *info),
        "the same pivots on every rank"
    );
    assert_eq!(info.first_zero_pivot, zero_col, "p {p} b {b}");
    // The factors, assembled in global rows r..m.
    let hh = m - r;
    let mut f = vec![T::zero(); hh * w];
    for (rows, h, e, _) in &results {
        for (l, &g) in rows.iter().enumerate() {
            for j in 0..w {
                f[j * hh + g - r] = e[j * h + l];
            }
        }
    }
    let mut order: Vec<usize> = (0..hh).collect();
    for (j, &q) in info.ipiv.iter().enumerate() {
        assert!(q >= r + j && q < m);
        order.swap(j, q - r);
    }
    let scale = 100.0 * (hh as f64) * T::epsilon().to_f64();
    for i in 0..hh {
        for j in 0..w {
            let mut lu = T::zero();
            for k in 0..=i.min(j).min(w - 1) {
                let l = if k == i { T::one() } else { f[k * hh + i] };
                lu += l * f[j * hh + k];
            }
            let want = entry(r + order[i], j);
            assert!(
                (lu - want).abs().to_f64() <= scale,
                "p {p} b {b} m {m} r {r} w {w}: ({i}, {j})"
            );
        }
    }
}

#[test]
fn the_panel_lu_over_ranks_is_p_e_equals_l_u() {
    for p in 1..=4 {
        for (b, m, r, w) in [
            (3, 50, 0, 7),
            (1, 45, 5, 40),
            (5, 90, 10, 70),
            (16, 64, 0, 33),
        ] {
            panel::<f64>(p, b, m, r, w, None);
        }
    }
    panel::<c64>(3, 2, 45, 4, 36, None);
    panel::<f32>(2, 4, 30, 0, 9, None);
    panel::<f64>(3, 2, 30, 0, 9, Some(4));
}

/// Runs the LU over `p` ranks with rows dealt in blocks of `b`, from one shared file or from a
/// file per rank (gathered into a shared file afterwards); returns the factors and each rank's
/// result.
fn factor_over_ranks<T: KernelScalar>(
    d: &Path,
    p: usize,
    b: usize,
    m: usize,
    w: usize,
    shared: bool,
) -> (Vec<T>, Vec<OocLu>) {
    let lay = RowCyclic { m, b, p };
    let a_path = d.join("a.rbm");
    DiskMatrix::<T>::create_from_fn(&a_path, m, m, w, value::<T>).unwrap();
    let out = d.join("lu.rbm");
    let mut whole = DiskMatrix::<T>::create(&out, m, m, w).unwrap();
    let results = run_ranks(p, |comm| {
        let me = comm.rank();
        let (mut input, mut factors) = if shared {
            (
                RankFile {
                    file: DiskMatrix::<T>::open(&a_path).unwrap(),
                    shared: true,
                },
                RankFile {
                    file: DiskMatrix::<T>::open(&out).unwrap(),
                    shared: true,
                },
            )
        } else {
            let rows = lay.local_rows(me);
            let mine = |l: usize, j: usize| value::<T>(lay.global(me, l), j);
            let a = DiskMatrix::create_from_fn(d.join(format!("a.{me}.rbm")), rows, m, w, mine);
            let f = DiskMatrix::<T>::create(d.join(format!("lu.{me}.rbm")), rows, m, w);
            (
                RankFile {
                    file: a.unwrap(),
                    shared: false,
                },
                RankFile {
                    file: f.unwrap(),
                    shared: false,
                },
            )
        };
        let info = left_pivoted_ranks(&comm, b, &mut input, &mut factors, Par::Seq).unwrap();
        factors.file.sync().unwrap();
        info
    });
    if !shared {
        // Each rank's rows into the shared file (the seed's P_DTOS).
        for me in 0..p {
            let mut f = DiskMatrix::<T>::open(d.join(format!("lu.{me}.rbm"))).unwrap();
            let rows = lay.local_rows(me);
            let mut buf = vec![T::zero(); rows * m];
            f.read(0..rows, 0..m, &mut buf).unwrap();
            for l in 0..rows {
                let row: Vec<T> = (0..m).map(|j| buf[j * rows + l]).collect();
                let g = lay.global(me, l);
                whole.write(g..g + 1, 0..m, &row).unwrap();
            }
        }
        whole.sync().unwrap();
    }
    let mut f = DiskMatrix::<T>::open(&out).unwrap();
    let mut a = DiskMatrix::<T>::open(&a_path).unwrap();
    let r = factor_residual(&mut a, &mut f, &results[0].ipiv, Par::Seq).unwrap();
    assert!(
        r < 1.0,
        "p {p} b {b} m {m} w {w} shared {shared}: residual {r}"
    );
    let mut all = vec![T::zero(); m * m];
    f.read(0..m, 0..m, &mut all).unwrap();
    (all, results)
}

#[test]
fn the_lu_over_ranks_factors_from_shared_and_per_rank_files_alike() {
    for p in 1..=4 {
        for (b, m, w) in [(3, 37, 8), (8, 40, 16), (2, 23, 23), (5, 50, 7)] {
            let d = dir(&format!("{p}-{b}-{m}-{w}"));
            let (shared, info) = factor_over_ranks::<f64>(&d, p, b, m, w, true);
            assert!(info
                .iter()
                .all(|x| x.ipiv == info[0].ipiv && x.first_zero_pivot.is_none()));
            let reads: u64 = info.iter().map(|x| x.io.read_elems).sum();
            let writes: u64 = info.iter().map(|x| x.io.write_elems).sum();
            assert_eq!(
                (reads, writes),
                left_pivoted_io(m as u64, w as u64),
                "p {p}"
            );
            let d2 = dir(&format!("{p}-{b}-{m}-{w}-dist"));
            let (distributed, info2) = factor_over_ranks::<f64>(&d2, p, b, m, w, false);
            assert_eq!(info2[0].ipiv, info[0].ipiv);
            assert!(
                distributed == shared,
                "p {p} b {b}: the files' factors differ"
            );
            let _ = std::fs::remove_dir_all(&d);
            let _ = std::fs::remove_dir_all(&d2);
        }
    }
    let d = dir("c64");
    factor_over_ranks::<c64>(&d, 3, 4, 30, 6, true);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_superblock_is_factored_by_redblues_lu_over_the_ranks() {
    // The first superblock (columns 0..w, every row) is the first step's panel: its pivots are
    // those of redblue's LU of that m × w matrix (tournament pivoting on the planner's grid),
    // not partial pivoting's.
    let (p, b, m, w) = (4, 4, 256, 32);
    let d = dir("superblock");
    let (_, info) = factor_over_ranks::<f64>(&d, p, b, m, w, true);
    let _ = std::fs::remove_dir_all(&d);
    let theirs = run_ranks(p, |comm| {
        let layout = redblue_dist::BlockCyclic::new(m, w, b, w, p, 1).unwrap();
        let a = redblue_dist::OwnedDistMatrix::from_fn(&comm, layout, value::<f64>).unwrap();
        redblue_lu::lu(&comm, &a, &redblue_lu::LuParams::default())
            .unwrap()
            .ipiv()
    });
    assert_eq!(info[0].ipiv[..w], theirs[0][..], "redblue's LU's pivots");
    let mut a: Vec<f64> = (0..m * w).map(|k| value::<f64>(k % m, k / m)).collect();
    let view = redblue_kernels::MatMut::from_slice(&mut a, m, w, m).unwrap();
    let partial = redblue_kernels::getrf(view, Par::Seq).unwrap();
    assert_ne!(
        info[0].ipiv[..w],
        partial.pivots.ipiv()[..],
        "(this matrix tells tournament from partial pivoting)"
    );
}

#[test]
fn a_matrix_that_fits_is_factored_in_core_and_a_singular_one_reports_its_zero_pivot() {
    for p in 1..=4 {
        let d = dir(&format!("fits-{p}"));
        let (m, w) = (48, 48);
        let (_, info) = factor_over_ranks::<f64>(&d, p, 4, m, w, true);
        let reads: u64 = info.iter().map(|x| x.io.read_elems).sum();
        let writes: u64 = info.iter().map(|x| x.io.write_elems).sum();
        assert_eq!((reads, writes), ((m * m) as u64, (m * m) as u64), "p {p}");
        // redblue's LU's pivots (tournament pivoting), not the panel LU's.
        let theirs = run_ranks(p, |comm| {
            let layout = redblue_dist::BlockCyclic::new(m, m, 4, m, p, 1).unwrap();
            let a = redblue_dist::OwnedDistMatrix::from_fn(&comm, layout, value::<f64>).unwrap();
            redblue_lu::lu(&comm, &a, &redblue_lu::LuParams::default())
                .unwrap()
                .ipiv()
        });
        assert_eq!(info[0].ipiv, theirs[0], "p {p}");
        assert!(info.iter().all(|x| x.in_core), "p {p}");
        let _ = std::fs::remove_dir_all(&d);
    }
    // A zero column: the in-core LU declines, the panel LU reports the column on every rank.
    let d = dir("singular");
    let m = 20;
    let a_path = d.join("a.rbm");
    let zero_col = |i: usize, j: usize| if j == 6 { 0.0 } else { value::<f64>(i, j) };
    DiskMatrix::<f64>::create_from_fn(&a_path, m, m, m, zero_col).unwrap();
    DiskMatrix::<f64>::create(d.join("lu.rbm"), m, m, m).unwrap();
    let results = run_ranks(3, |comm| {
        let mut input = RankFile {
            file: DiskMatrix::<f64>::open(&a_path).unwrap(),
            shared: true,
        };
        let mut factors = RankFile {
            file: DiskMatrix::<f64>::open(d.join("lu.rbm")).unwrap(),
            shared: true,
        };
        left_pivoted_ranks(&comm, 2, &mut input, &mut factors, Par::Seq).unwrap()
    });
    assert!(results
        .iter()
        .all(|r| r.first_zero_pivot == Some(6) && !r.in_core));
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_wrong_file_or_a_failed_read_on_one_rank_is_an_error_on_every_rank() {
    let d = dir("failures");
    let (m, w, p) = (30, 6, 3);
    let lay = RowCyclic { m, b: 2, p };
    for r in 0..p {
        let rows = if r == 1 {
            lay.local_rows(r) + 1
        } else {
            lay.local_rows(r)
        };
        let a = d.join(format!("a.{r}.rbm"));
        DiskMatrix::create_from_fn(a, rows, m, w, value::<f64>).unwrap();
        DiskMatrix::<f64>::create(d.join(format!("lu.{r}.rbm")), lay.local_rows(r), m, w).unwrap();
    }
    let open = |me: usize| {
        (
            RankFile {
                file: DiskMatrix::<f64>::open(d.join(format!("a.{me}.rbm"))).unwrap(),
                shared: false,
            },
            RankFile {
                file: DiskMatrix::<f64>::open(d.join(format!("lu.{me}.rbm"))).unwrap(),
                shared: false,
            },
        )
    };
    let results = run_ranks(p, |comm| {
        let (mut a, mut f) = open(comm.rank());
        left_pivoted_ranks(&comm, 2, &mut a, &mut f, Par::Seq).map(|_| ())
    });
    let errors: Vec<String> = results
        .iter()
        .map(|r| r.as_ref().unwrap_err().to_string())
        .collect();
    // Rank 1 its own error; the others the same message, naming the rank.
    assert!(errors[1].contains("a.1.rbm"), "{errors:?}");
    let passed_on = format!("rank 1: {}", errors[1]);
    assert!(
        errors[0] == passed_on && errors[2] == passed_on,
        "{errors:?}"
    );
    // The input of the right shape; rank 2's fifth read fails: every rank stops with an error.
    let rows = lay.local_rows(1);
    DiskMatrix::create_from_fn(d.join("a.1.rbm"), rows, m, w, value::<f64>).unwrap();
    let results = run_ranks(p, |comm| {
        let (mut a, mut f) = open(comm.rank());
        if comm.rank() == 2 {
            redblue_ooc::fault::inject(Some(redblue_ooc::fault::Fault::Read(5)));
        }
        let r = left_pivoted_ranks(&comm, 2, &mut a, &mut f, Par::Seq).map(|_| ());
        redblue_ooc::fault::inject(None);
        r
    });
    let errors: Vec<String> = results
        .iter()
        .map(|r| r.as_ref().unwrap_err().to_string())
        .collect();
    assert!(errors.iter().all(|e| e.contains("injected")), "{errors:?}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A resumable run over `p` ranks on the files in `d` (shared), `fault` injected on rank
/// `victim`; `fresh` makes a new record, otherwise the recorded run goes on.
fn resumable(
    d: &Path,
    p: usize,
    b: usize,
    fresh: bool,
    fault: Option<(usize, redblue_ooc::fault::Fault)>,
) -> Vec<Result<OocLu, redblue_ooc::OocError>> {
    use redblue_ooc::parallel::{left_pivoted_ranks_with, ranks_run_kind, RanksProgress};
    run_ranks(p, |comm| {
        let mut input = RankFile {
            file: DiskMatrix::<f64>::open(d.join("a.rbm"))?,
            shared: true,
        };
        let mut factors = RankFile {
            file: DiskMatrix::<f64>::open(d.join("lu.rbm"))?,
            shared: true,
        };
        let w = factors.file.panel();
        let mut progress = if fresh {
            let kind = ranks_run_kind(&comm, b, &input, w)?;
            RanksProgress::create(&comm, d, kind)?
        } else {
            RanksProgress::open(&comm, d)?
        };
        if let Some((victim, f)) = fault.filter(|(v, _)| *v == comm.rank()) {
            let _ = victim;
            redblue_ooc::fault::inject(Some(f));
        }
        let r = left_pivoted_ranks_with(
            &comm,
            b,
            &mut input,
            &mut factors,
            Some(&mut progress),
            Par::Seq,
        );
        redblue_ooc::fault::inject(None);
        let info = r?;
        factors.file.sync()?;
        Ok(info)
    })
}

#[test]
fn a_run_over_ranks_stopped_by_a_failure_on_any_rank_resumes_to_the_same_factors() {
    use redblue_ooc::fault::Fault;
    let (p, b, m, w) = (3, 2, 17, 4);
    let setup = |d: &Path| {
        DiskMatrix::<f64>::create_from_fn(d.join("a.rbm"), m, m, w, value::<f64>).unwrap();
        DiskMatrix::<f64>::create(d.join("lu.rbm"), m, m, w).unwrap();
    };
    let reference = dir("resume-ref");
    setup(&reference);
    let whole = resumable(&reference, p, b, true, None);
    let want = {
        let mut f = DiskMatrix::<f64>::open(reference.join("lu.rbm")).unwrap();
        let mut v = vec![0.0; m * m];
        f.read(0..m, 0..m, &mut v).unwrap();
        v
    };
    let ipiv = whole[0].as_ref().unwrap().ipiv.clone();
    let mut stopped = 0;
    for (victim, kind) in [
        (1, Fault::Write as fn(u64) -> Fault),
        (0, Fault::Write),
        (2, Fault::Sync),
        (1, Fault::Read),
    ] {
        for n in 1.. {
            let d = dir(&format!("resume-{victim}-{n}"));
            setup(&d);
            let first = resumable(&d, p, b, true, Some((victim, kind(n))));
            if first.iter().all(|r| r.is_ok()) {
                break;
            }
            // Every rank stopped by the victim's failure (agreed), none by waiting for it.
            let errors: Vec<String> = first
                .iter()
                .map(|r| {
                    r.as_ref()
                        .map_or_else(|e| e.to_string(), |_| "went on".into())
                })
                .collect();
            assert!(
                errors.iter().all(|e| e.contains("injected")),
                "{victim} {n}: {errors:?}"
            );
            stopped += 1;
            let again = resumable(&d, p, b, false, None);
            for r in &again {
                assert_eq!(r.as_ref().unwrap().ipiv, ipiv, "rank {victim}, fault {n}");
            }
            let mut f = DiskMatrix::<f64>::open(d.join("lu.rbm")).unwrap();
            let mut got = vec![0.0; m * m];
            f.read(0..m, 0..m, &mut got).unwrap();
            assert!(
                got == want,
                "victim {victim}, fault {:?}: other factors",
                kind(n)
            );
            let _ = std::fs::remove_dir_all(&d);
        }
    }
    assert!(stopped > 30, "{stopped}");
    let _ = std::fs::remove_dir_all(&reference);
}

#[test]
fn resuming_over_ranks_without_a_record_is_an_error_on_every_rank() {
    let d = dir("no-record");
    let errors = run_ranks(3, |comm| {
        redblue_ooc::parallel::RanksProgress::open(&comm, &d)
            .unwrap_err()
            .to_string()
    });
    assert!(
        errors.iter().all(|e| e.contains("no progress record")),
        "{errors:?}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
