//! The miniapp's check, before allocating anything, that a run fits in the memory the machine
//! has available: a run that cannot is refused with both numbers, on every rank, in well under
//! a second, rather than aborting in an allocation or swapping for minutes.

#[cfg(feature = "mpi")]
use redblue::comm::{Communicator, CommunicatorExt};

/// The most ranks the threads backend starts: each rank is a thread with its own stack, and the
/// miniapp's reports gather per-rank figures on every rank (quadratic in the ranks).
pub const MAX_THREAD_RANKS: usize = 1024;

/// Bytes the machine has available (`MemAvailable` of `/proc/meminfo`), if it says.
pub fn available_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `bytes` in GiB for messages.
fn gib(bytes: f64) -> String {
    format!("{:.1} GiB", bytes / f64::from(1u32 << 30))
}

/// Refuses a run that needs `needed` bytes (`what` says of what) when the machine has less
/// available; passes when it cannot tell.
pub fn check_fits(needed: f64, what: &str) -> Result<(), String> {
    match available_bytes() {
        Some(available) if needed > available as f64 => Err(format!(
            "the run needs about {} ({what}), but this machine has {} available",
            gib(needed),
            gib(available as f64)
        )),
        _ => Ok(()),
    }
}

#[cfg(feature = "mpi")]
/// [`check_fits`] for one process of an MPI job, agreed on every rank (their machines may
/// differ): `needed` bytes for this process, the machine's memory shared by the job's
/// processes on it (Open MPI's `OMPI_COMM_WORLD_LOCAL_SIZE`, else MPICH's `MPI_LOCALNRANKS`,
/// else one).
pub fn check_fits_on_every_rank<C: Communicator>(
    comm: &C,
    needed: f64,
    what: &str,
) -> Result<(), String> {
    let local: f64 = ["OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"]
        .iter()
        .find_map(|v| std::env::var(v).ok()?.parse().ok())
        .unwrap_or(1.0);
    let mine = check_fits(needed * local, what);
    let refused = comm.any(mine.is_err()).map_err(|e| e.to_string())?;
    match (refused, mine) {
        (false, _) => Ok(()),
        (true, Err(e)) => Err(e),
        (true, Ok(())) => Err(format!(
            "another rank's machine cannot hold its part of the run ({what})"
        )),
    }
}

/// Refuses more ranks than the threads backend starts.
pub fn check_thread_ranks(p: usize) -> Result<(), String> {
    if p > MAX_THREAD_RANKS {
        return Err(format!(
            "--ranks {p}: the threads backend runs at most {MAX_THREAD_RANKS} ranks (each is a \
             thread of this process); `redblue plan` models any number, and `--backend mpi` runs \
             under mpirun"
        ));
    }
    Ok(())
}
