//! `redblue ooc-lu --ranks P` (threads as ranks) or under `mpirun` (`--backend mpi`): the
//! left-looking pivoted LU over the ranks, rows dealt in blocks cyclically, from one shared file
//! or a file per rank, resumable; the report as for one rank, the counts summed over the ranks.

use super::{afterwards, input_matrix, io_error, report, FileMode, Measured, OocLuArgs, Variant};
use redblue::comm::{run_ranks, Communicator, CommunicatorExt, ReduceOp};
use redblue::kernels::{KernelScalar, Par};
use redblue::ooc::fault;
use redblue::ooc::parallel::{
    agree, left_pivoted_ranks_with, page_block, ranks_run_kind, RankFile, RanksProgress, RowCyclic,
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

/// What one rank's run measured: its result, seconds, the seconds of its reads, writes and
/// syncs, the step it resumed from, the elements it journaled.
type RankMeasured = (OocLu, f64, (f64, f64, f64), Option<u64>, u64);

fn comm_error(e: redblue::comm::CommError) -> OocError {
    OocError::Invalid(e.to_string())
}

/// One rank's part: its files opened (and its input copied, distributed), the record made or
/// opened, the LU over the ranks timed between barriers.
fn rank_run<T: KernelScalar, C: Communicator>(
    comm: &C,
    args: &OocLuArgs,
    dir: &Path,
    lay: RowCyclic,
    w: usize,
    par: Par,
) -> Result<RankMeasured, OocError> {
    let me = comm.rank();
    let (mut input, mut factors) = agree(comm, rank_files::<T>(args, dir, lay, me, w))?;
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
    comm.barrier().map_err(comm_error)?;
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
        agree(comm, factors.file.sync())?;
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

/// Rank 0's preparation of a run in `dir`: a new run's input (`a.rbm`, generated or from the
/// `.npy`) and empty factors (`lu.rbm.partial`), earlier runs' journals removed; or a
/// recorded run's files. Returns the order and the panel width.
fn prepare<T: KernelScalar>(args: &OocLuArgs, dir: &Path) -> Result<(usize, usize), OocError> {
    std::fs::create_dir_all(dir).map_err(io_error(dir, "creating"))?;
    if args.resume {
        let a = DiskMatrix::<T>::open(dir.join("a.rbm"))?;
        let f = DiskMatrix::<T>::open(factors_path(dir))?;
        return Ok((a.shape().0, f.panel()));
    }
    let entries = std::fs::read_dir(dir).map_err(io_error(dir, "listing"))?;
    for entry in entries.flatten() {
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("progress.undo.")
        {
            let _ = std::fs::remove_file(entry.path()); // an earlier run's
        }
    }
    let (_, n, w) = input_matrix::<T>(args, dir)?;
    DiskMatrix::<T>::create(dir.join("lu.rbm.partial"), n, n, w)?;
    Ok((n, w))
}

/// Rank 0's end of the run: the factors assembled (distributed files), their checksums made
/// durable, the pivots written, the factors under their name; then `--check` and
/// `--compare-in-core`, and the report. Returns whether the run passed.
fn finish<T: KernelScalar>(
    args: &OocLuArgs,
    dir: &Path,
    lay: RowCyclic,
    mut run: Measured,
    par: Par,
) -> Result<bool, OocError> {
    let mut a = DiskMatrix::<T>::open(dir.join("a.rbm"))?;
    let mut f = DiskMatrix::<T>::open(factors_path(dir))?;
    if args.files == FileMode::Distributed {
        assemble(dir, lay, &mut f)?;
    }
    // Every panel's checksum from the file the ranks wrote, then the factors under their name.
    f.forget_checksums();
    f.sync()?;
    npy::write_indices(dir.join("ipiv.npy"), &run.info.ipiv)?;
    if f.path() != dir.join("lu.rbm") {
        f.rename(dir.join("lu.rbm"))?;
    }
    (run.residuals, run.in_core_s) = afterwards(args, &mut a, &mut f, &run.info.ipiv, par)?;
    report(args, &run);
    Ok(run.passed())
}

/// The LU over the ranks of `comm`, every rank calling: rank 0 prepares the files, every rank
/// factors its rows, rank 0 finishes and reports with the counts and seconds summed over the
/// ranks (the time the slowest rank's). Whether the run passed, or an error, the same on every
/// rank.
///
/// # Collective
pub(super) fn on_ranks<T: KernelScalar, C: Communicator>(
    comm: &C,
    args: &OocLuArgs,
    dir: &Path,
) -> Result<bool, OocError> {
    if args.variant != Variant::LeftPivoted {
        return Err(OocError::Invalid(
            "over ranks, ooc-lu runs the left-looking pivoted variant (drop --variant)".into(),
        ));
    }
    let me = comm.rank();
    let prepared = if me == 0 {
        prepare::<T>(args, dir)
    } else {
        Ok((0, 0))
    };
    let (n, w) = agree(comm, prepared)?;
    let mut shape = [n as u64, w as u64];
    comm.broadcast(&mut shape, 0).map_err(comm_error)?;
    let (n, w) = (shape[0] as usize, shape[1] as usize);
    let lay = RowCyclic {
        m: n,
        b: args.row_block.unwrap_or_else(page_block::<T>).max(1),
        p: comm.size(),
    };
    let par = match args.threads {
        0 | 1 => Par::Seq,
        t => Par::Threads(t),
    };
    let (info, seconds, (read_s, write_s, sync_s), resumed_from, journal) =
        rank_run::<T, C>(comm, args, dir, lay, w, par)?;
    // The slowest rank's time; the counts and seconds of all ranks summed.
    let seconds = comm
        .all_reduce_one(seconds, ReduceOp::Max)
        .map_err(comm_error)?;
    let mut sums = [read_s, write_s, sync_s];
    comm.all_reduce_in_place(&mut sums, ReduceOp::Sum)
        .map_err(comm_error)?;
    let io = info.io;
    let mut counts = [
        io.read_elems,
        io.write_elems,
        io.checksum_read_elems,
        journal,
    ];
    comm.all_reduce_in_place(&mut counts, ReduceOp::Sum)
        .map_err(comm_error)?;
    let finished = if me == 0 {
        let run = Measured {
            n,
            w,
            ranks: comm.size(),
            row_block: lay.b,
            seconds,
            info: OocLu {
                io: IoCounts {
                    read_elems: counts[0],
                    write_elems: counts[1],
                    checksum_read_elems: counts[2],
                },
                ..info
            },
            model: left_pivoted_io(n as u64, w as u64),
            io_seconds: (sums[0], sums[1], sums[2]),
            residuals: None,
            in_core_s: None,
            resumed_from,
            journal_elems: counts[3],
        };
        finish::<T>(args, dir, lay, run, par)
    } else {
        Ok(false)
    };
    let passed = agree(comm, finished)?;
    let passed = comm
        .broadcast_one(u8::from(passed), 0)
        .map_err(comm_error)?;
    Ok(passed != 0)
}

/// `--ranks P` threads as ranks; rank 0's outcome.
pub(super) fn over_threads<T: KernelScalar>(
    args: &OocLuArgs,
    dir: &Path,
) -> Result<bool, OocError> {
    let results = run_ranks(args.ranks, |comm| on_ranks::<T, _>(&comm, args, dir));
    results.into_iter().next().expect("at least one rank")
}
