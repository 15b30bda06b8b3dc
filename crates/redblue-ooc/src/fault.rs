//! Injected failures of the disk layer, for the crash and fault tests: the `n`-th read, write
//! or sync on the calling thread fails (a write after half of its bytes), or the process
//! aborts in the middle of its `n`-th write, as a killed process would leave its files.
//!
//! Every read, write and sync of [`crate::DiskMatrix`] and of a run's progress record and
//! journal ([`crate::Progress`]) passes through here. Nothing is injected unless [`inject`]
//! was called on the thread; the count is per thread, so tests running side by side do not
//! see each other's faults.

use std::cell::Cell;
use std::str::FromStr;

/// A failure to inject: which operation, and the how-manieth (from 1) of its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The `n`-th read fails before reading.
    Read(u64),
    /// The `n`-th write writes half of its bytes and fails.
    Write(u64),
    /// The `n`-th sync (`fsync`) fails.
    Sync(u64),
    /// The `n`-th write writes half of its bytes and the process aborts.
    Abort(u64),
}

/// The kinds of operation counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Read,
    Write,
    Sync,
}

/// What the operation must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Go on.
    Proceed,
    /// Fail (a write: after half of its bytes).
    Fail,
    /// Write half of the bytes, then abort the process.
    Abort,
}

thread_local! {
    static ARMED: Cell<Option<Fault>> = const { Cell::new(None) };
    static SEEN: Cell<[u64; 3]> = const { Cell::new([0; 3]) };
}

/// Arms `fault` on this thread (`None` disarms), the counts from zero.
pub fn inject(fault: Option<Fault>) {
    ARMED.with(|a| a.set(fault));
    SEEN.with(|s| s.set([0; 3]));
}

/// Counts one operation of kind `op` and says what it must do.
pub(crate) fn check(op: Op) -> Outcome {
    let Some(fault) = ARMED.with(Cell::get) else {
        return Outcome::Proceed;
    };
    let seen = SEEN.with(|s| {
        let mut c = s.get();
        c[op as usize] += 1;
        s.set(c);
        c[op as usize]
    });
    match (fault, op) {
        (Fault::Read(n), Op::Read) | (Fault::Write(n), Op::Write) | (Fault::Sync(n), Op::Sync)
            if n == seen =>
        {
            ARMED.with(|a| a.set(None));
            Outcome::Fail
        }
        (Fault::Abort(n), Op::Write) if n == seen => Outcome::Abort,
        _ => Outcome::Proceed,
    }
}

/// The error an injected failure returns.
pub(crate) fn error(op: Op) -> std::io::Error {
    std::io::Error::other(format!("injected failure of a {op:?}").to_lowercase())
}

/// Writes `bytes` at `at` through `write`, as [`check`] says: whole, or half then an error, or
/// half then an abort of the process.
pub(crate) fn write_all_at(
    write: impl Fn(&[u8], u64) -> std::io::Result<()>,
    bytes: &[u8],
    at: u64,
) -> std::io::Result<()> {
    write_all_at_as(check(Op::Write), write, bytes, at)
}

/// [`write_all_at`] with its outcome decided before (by [`check`] on the thread that armed the
/// fault, for a write made on another).
pub(crate) fn write_all_at_as(
    outcome: Outcome,
    write: impl Fn(&[u8], u64) -> std::io::Result<()>,
    bytes: &[u8],
    at: u64,
) -> std::io::Result<()> {
    match outcome {
        Outcome::Proceed => write(bytes, at),
        outcome => {
            write(&bytes[..bytes.len() / 2], at)?;
            if outcome == Outcome::Abort {
                std::process::abort();
            }
            Err(error(Op::Write))
        }
    }
}

/// `Err` if this read or sync is the one to fail.
pub(crate) fn gate(op: Op) -> std::io::Result<()> {
    gate_as(check(op), op)
}

/// [`gate`] with its outcome decided before.
pub(crate) fn gate_as(outcome: Outcome, op: Op) -> std::io::Result<()> {
    match outcome {
        Outcome::Proceed => Ok(()),
        _ => Err(error(op)),
    }
}

impl FromStr for Fault {
    type Err = String;

    /// `read:N`, `write:N`, `sync:N` or `abort:N` (`N ≥ 1`).
    fn from_str(s: &str) -> Result<Fault, String> {
        let bad = || format!("{s:?}: a fault is read:N, write:N, sync:N or abort:N with N >= 1");
        let (kind, n) = s.split_once(':').ok_or_else(bad)?;
        let n: u64 = n.parse().map_err(|_| bad())?;
        if n == 0 {
            return Err(bad());
        }
        Ok(match kind {
            "read" => Fault::Read(n),
            "write" => Fault::Write(n),
            "sync" => Fault::Sync(n),
            "abort" => Fault::Abort(n),
            _ => return Err(bad()),
        })
    }
}
