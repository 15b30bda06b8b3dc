//! `redblue ooc-lu --ranks P`: the left-looking pivoted LU over threads as ranks, rows dealt
//! in blocks cyclically, from one shared file or a file per rank, resumable; the report as for
//! one rank, the counts summed over the ranks.

use super::{afterwards, input_matrix, io_error, report, FileMode, Measured, OocLuArgs, Variant};
use redblue::comm::{run_ranks, Communicator, ThreadComm};
use redblue::kernels::{KernelScalar, Par};
use redblue::ooc::fault;
use redblue::ooc::parallel::{
    left_pivoted_ranks_with, ranks_run_kind, RankFile, RanksProgress, RowCyclic,
};
use redblue::ooc::{left_pivoted_io, npy, DiskMatrix, IoCounts, OocError, OocLu};
use std::path::Path;
use std::time::Instant;

/// Rank `me`'s files: views of `a.rbm` and of the factors' shared file, or its own `a.R.rbm`
/// (its rows of `a.rbm`, copied before the clock starts) and `lu.R.rbm` — made new, or the
/// ones there with `--resume`.
fn rank_files<T: KernelScalar>(
    args: &OocLuArgs,
    dir: &Path,
    lay: RowCyclic,
    me: usize,
    w: usize,
) -> Result<(RankFile<T>, RankFile<T>), OocError> {
    let view = |file, shared| RankFile { file, shared };
    if args.files == FileMode::Shared {
        let input = DiskMatrix::open(dir.join("a.rbm"))?;
        return Ok((
            view(input, true),
            view(DiskMatrix::open(factors_path(dir))?, true),
        ));
    }
    let (a_path, lu_path) = (
        dir.join(format!("a.{me}.rbm")),
        dir.join(format!("lu.{me}.rbm")),
    );
    if args.resume {
        return Ok((
            view(DiskMatrix::open(a_path)?, false),
            view(DiskMatrix::open(lu_path)?, false),
        ));
    }
    let (n, rows) = (lay.m, lay.local_rows(me));
    let mut a = DiskMatrix::<T>::open(dir.join("a.rbm"))?;
    let mut mine = DiskMatrix::<T>::create(a_path, rows, n, w)?;
    let mut row = vec![T::zero(); n];
    for l in 0..rows {
        let g = lay.global(me, l);
        a.read(g..g + 1, 0..n, &mut row)?;
        mine.write(l..l + 1, 0..n, &row)?;
    }
    mine.sync()?;
    mine.reset_io();
    let f = DiskMatrix::<T>::create(lu_path, rows, n, w)?;
    Ok((view(mine, false), view(f, false)))
}

/// The shared factors' file: `lu.rbm.partial` until finished, then `lu.rbm`.
fn factors_path(dir: &Path) -> std::path::PathBuf {
    let partial = dir.join("lu.rbm.partial");
    if partial.exists() {
        partial
    } else {
        dir.join("lu.rbm")
    }
}

/// Rank `me`'s rows of its `lu.R.rbm` written into the shared `lu.rbm.partial` (the seed's
/// `P_DTOS`).
fn assemble<T: KernelScalar>(
    dir: &Path,
    lay: RowCyclic,
    out: &mut DiskMatrix<T>,
) -> Result<(), OocError> {
    let n = lay.m;
    let mut row = vec![T::zero(); n];
    for me in 0..lay.p {
        let mut f = DiskMatrix::<T>::open(dir.join(format!("lu.{me}.rbm")))?;
        for l in 0..lay.local_rows(me) {
            let g = lay.global(me, l);
            f.read(l..l + 1, 0..n, &mut row)?;
            out.write(g..g + 1, 0..n, &row)?;
        }
    }
    Ok(())
}

/// Runs the LU over `--ranks` threads as ranks.
/// What one rank's run measured: its result, seconds, the seconds of its reads, writes and
/// syncs, the step it resumed from, the elements it journaled.
type RankMeasured = (OocLu, f64, (f64, f64, f64), Option<u64>, u64);

/// One rank's part: its files opened (and its input copied, distributed), the record made or
/// opened, the LU over the ranks timed between barriers.
fn rank_run<T: KernelScalar>(
    comm: &ThreadComm,
    args: &OocLuArgs,
    dir: &Path,
    lay: RowCyclic,
    w: usize,
    par: Par,
) -> Result<RankMeasured, OocError> {
    let me = comm.rank();
    let (mut input, mut factors) = rank_files::<T>(args, dir, lay, me, w)?;
    let mut progress = if args.resume {
        RanksProgress::open(comm, dir)?
    } else {
        let kind = ranks_run_kind(comm, lay.b, &input, w)?;
        RanksProgress::create(comm, dir, kind)?
    };
    let resumed_from = args.resume.then(|| progress.record().steps_done);
    if me == 0 {
        fault::inject(args.inject_fault); // the crash tests' failure, on rank 0's thread
    }
    comm.barrier()
        .map_err(|e| OocError::Invalid(e.to_string()))?;
    let clock = Instant::now();
    let info = left_pivoted_ranks_with(
        comm,
        lay.b,
        &mut input,
        &mut factors,
        Some(&mut progress),
        par,
    );
    fault::inject(None);
    let info = info?;
    if !factors.shared {
        factors.file.sync()?;
    }
    let seconds = clock.elapsed().as_secs_f64();
    let (r, wr) = (input.file.io_seconds(), factors.file.io_seconds());
    let io_seconds = (r.0 + wr.0, r.1 + wr.1, factors.file.sync_seconds());
    Ok((
        info,
        seconds,
        io_seconds,
        resumed_from,
        progress.journal_elems(),
    ))
}

pub(super) fn factor_over_ranks<T: KernelScalar>(
    args: &OocLuArgs,
    dir: &Path,
) -> Result<bool, OocError> {
    if args.variant != Variant::LeftPivoted {
        return Err(OocError::Invalid(
            "--ranks above 1 runs the left-looking pivoted variant (drop --variant)".into(),
        ));
    }
    std::fs::create_dir_all(dir).map_err(io_error(dir, "creating"))?;
    let (mut a, mut f) = if args.resume {
        (
            DiskMatrix::<T>::open(dir.join("a.rbm"))?,
            DiskMatrix::<T>::open(factors_path(dir))?,
        )
    } else {
        for old in (0..args.ranks).map(|r| format!("progress.undo.{r}")) {
            let _ = std::fs::remove_file(dir.join(old)); // an earlier run's
        }
        let (a, n, w) = input_matrix::<T>(args, dir)?;
        let f = DiskMatrix::<T>::create(dir.join("lu.rbm.partial"), n, n, w)?;
        (a, f)
    };
    let (n, w) = (a.shape().0, f.panel());
    let lay = RowCyclic {
        m: n,
        b: args.row_block.max(1),
        p: args.ranks,
    };
    let par = match args.threads {
        0 | 1 => Par::Seq,
        t => Par::Threads(t),
    };
    let results = run_ranks(args.ranks, |comm| {
        rank_run::<T>(&comm, args, dir, lay, w, par)
    });
    let mut infos = Vec::new();
    for r in results {
        infos.push(r?);
    }
    // The slowest rank's time; the counts and seconds of all ranks summed.
    let seconds = infos.iter().map(|x| x.1).fold(0.0, f64::max);
    let io_seconds = infos.iter().fold((0.0, 0.0, 0.0), |acc, x| {
        (acc.0 + x.2 .0, acc.1 + x.2 .1, acc.2 + x.2 .2)
    });
    let io = infos
        .iter()
        .fold(IoCounts::default(), |acc, x| acc + x.0.io);
    let journal_elems = infos.iter().map(|x| x.4).sum();
    let resumed_from = infos[0].3;
    let mut info = infos.swap_remove(0).0;
    info.io = io;
    if args.files == FileMode::Distributed {
        assemble(dir, lay, &mut f)?;
    }
    // Every panel's checksum from the file the ranks wrote, then the factors under their name.
    f.forget_checksums();
    f.sync()?;
    npy::write_indices(dir.join("ipiv.npy"), &info.ipiv)?;
    if f.path() != dir.join("lu.rbm") {
        f.rename(dir.join("lu.rbm"))?;
    }
    let (residuals, in_core_s) = afterwards(args, &mut a, &mut f, &info.ipiv, par)?;
    let run = Measured {
        n,
        w,
        seconds,
        info,
        model: left_pivoted_io(n as u64, w as u64),
        io_seconds,
        residuals,
        in_core_s,
        resumed_from,
        journal_elems,
    };
    report(args, &run);
    let passed = run
        .residuals
        .is_none_or(|(r, s)| r <= super::THRESHOLD && s <= super::THRESHOLD);
    Ok(passed && run.info.first_zero_pivot.is_none())
}
