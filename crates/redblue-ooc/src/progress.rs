//! [`Progress`]: what makes an out-of-core factorisation resumable — a progress record,
//! replaced atomically at each commit, and two journals of the writes that overwrite panels
//! already factored.
//!
//! The invariant: the factors file holds, durably, the state after the record's
//! `steps_done` steps, except for the writes of the step in progress and, while that step's
//! predecessor's commit runs in the background, of the step after it. Those writes are of two
//! kinds. An active panel is written whole and its source is the untouched input, so its step
//! is simply done again. Writes over factored panels (a later step's interchanges brought to
//! them, a final pass) would not be safe to do again — a permutation applied twice is not the
//! one applied once, and a write cut short leaves neither — so each is first appended to its
//! step's journal (steps of even number in one, odd in the other: the rows it changes, the row
//! each new value comes from, the new values, a checksum) and synced (the `fsync` on a thread
//! of its own while the caller computes, [`Progress::journal_begin`]; the write made only once
//! it ended, [`Progress::journal_wait`]). On resume the intact
//! entries of the step after the recorded one are undone, newest first (each new value put back
//! in its source row: the changed rows are closed under the permutation), then those of the
//! recorded step are written again (setting values is idempotent) and that step skips the panels
//! they cover; an entry cut short is ignored (its write never began).
//!
//! A commit (of `s` steps) is: the factors' data synced, then the record written to a temporary
//! file, synced, renamed over the old one, the folder synced, then the journal of step `s − 1`
//! emptied. It runs on a thread of its own while step `s` computes (the device writes while the
//! processor works); the next commit waits for it first, so one runs at most and step `s + 1`
//! never journals into the file being emptied. The last commit is waited for.
//!
//! Record (little-endian): magic `RBOOCPRG`, version `u32` = 2, variant `u32`, scalar code
//! `u32`, `0u32`, order `u64`, panel width `u64`, the input's fingerprint `u64`, ranks `u64`,
//! the rows' block over ranks `u64`, steps done `u64`, the first zero pivot `u64` (`u64::MAX`:
//! none), the number of pivots `u64`, the pivots `u64` each, then the checksum of everything
//! before it. Journal entry: step `u64`,
//! first column `u64`, columns `u64`, rows `u64`, the row indices `u64` each, their sources
//! `u64` each, the values (column by column, in the rows' order), the checksum of the entry
//! before it.

use crate::disk::{bytes, bytes_mut, sync_dir};
use crate::fault::{self, Op, Outcome};
use crate::format::{checksum, scalar_code};
use crate::{DiskMatrix, OocError};
use redblue_core::Scalar;
use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"RBOOCPRG";
const VERSION: u32 = 2;

/// What a resumable run is: the variant, the matrix, and which input it factors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunKind {
    /// The algorithm's code (the caller's: it is only compared).
    pub variant: u32,
    /// The scalar type's code ([`crate::format::scalar_code`]).
    pub scalar: u32,
    /// The order.
    pub n: u64,
    /// The panel width.
    pub panel: u64,
    /// [`DiskMatrix::fingerprint`] of the input (over ranks: of every rank's input).
    pub input: u64,
    /// The ranks (1: a sequential run).
    pub ranks: u64,
    /// The rows' block over ranks (0: a sequential run).
    pub row_block: u64,
}

/// The state a record holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The run it belongs to.
    pub kind: RunKind,
    /// Steps completed (the final interchange pass, where there is one, is the last step).
    pub steps_done: u64,
    /// The first exactly zero pivot found so far.
    pub first_zero_pivot: Option<u64>,
    /// The interchanges of the completed steps (0-based, LAPACK's convention).
    pub ipiv: Vec<u64>,
}

/// One of a run's two journals (steps of even and of odd number).
#[derive(Debug)]
struct Journal {
    path: PathBuf,
    file: File,
    len: u64,
}

impl Journal {
    fn open(path: PathBuf, truncate: bool) -> Result<Journal, OocError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(truncate)
            .open(&path)
            .map_err(io_error(&path, "opening"))?;
        let len = file
            .metadata()
            .map_err(io_error(&path, "reading the length of"))?
            .len();
        Ok(Journal { path, file, len })
    }
}

/// A commit running on its own thread: its `fsync`s' seconds, or the first error.
type Committing = std::thread::JoinHandle<Result<f64, OocError>>;

/// A resumable run's record and journals, in a folder.
#[derive(Debug)]
pub struct Progress {
    record_path: PathBuf,
    journals: [Journal; 2],
    record: Record,
    journal_elems: u64,
    sync_seconds: f64,
    committing: Option<Committing>,
    /// The `fsync` of the latest journal entry, running while the caller computes.
    journal_syncing: Option<Committing>,
}

/// The record `record` written to a temporary file, synced, renamed over `path`, the folder
/// synced; each operation's injected outcome decided beforehand (on the calling thread).
pub(crate) fn replace_record(
    path: &Path,
    record: &Record,
    faults: [Outcome; 3],
) -> Result<(), OocError> {
    let tmp = path.with_extension("rec.tmp");
    let b = record.encode();
    let file = File::create(&tmp).map_err(io_error(&tmp, "creating"))?;
    fault::write_all_at_as(faults[0], |b, at| file.write_all_at(b, at), &b, 0)
        .map_err(io_error(&tmp, "writing"))?;
    fault::gate_as(faults[1], Op::Sync)
        .and_then(|()| file.sync_all())
        .map_err(io_error(&tmp, "syncing"))?;
    std::fs::rename(&tmp, path).map_err(io_error(path, "replacing"))?;
    fault::gate_as(faults[2], Op::Sync).map_err(io_error(path, "syncing the folder of"))?;
    sync_dir(path)
}

/// The outcomes of a record's replacement: a write and two syncs.
pub(crate) fn record_faults() -> [Outcome; 3] {
    [
        fault::check(Op::Write),
        fault::check(Op::Sync),
        fault::check(Op::Sync),
    ]
}

/// A journal entry read back.
pub(crate) struct Entry<T> {
    pub(crate) step: usize,
    pub(crate) cols: Range<usize>,
    pub(crate) rows: Vec<usize>,
    pub(crate) sources: Vec<usize>,
    pub(crate) values: Vec<T>,
}

impl<T: Scalar> Entry<T> {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let header = [self.step, self.cols.start, self.cols.len(), self.rows.len()];
        let mut b = Vec::with_capacity(8 * (5 + 2 * self.rows.len()) + 8 * self.values.len());
        for v in header
            .into_iter()
            .chain(self.rows.iter().copied())
            .chain(self.sources.iter().copied())
        {
            b.extend((v as u64).to_le_bytes());
        }
        b.extend_from_slice(bytes(&self.values));
        let sum = checksum(&b);
        b.extend(sum.to_le_bytes());
        b
    }

    /// The entries of `b` up to the first one cut short (whose write never began).
    pub(crate) fn decode_all(b: &[u8]) -> Vec<Entry<T>> {
        let size = std::mem::size_of::<T>();
        let mut entries = Vec::new();
        let mut at = 0;
        while at + 40 <= b.len() {
            let word = |i: usize| u64_at(b, at + 8 * i) as usize;
            let (step, c0, nc, nr) = (word(0), word(1), word(2), word(3));
            // The entry's length before its checksum (an absurd one is an entry cut short).
            let len = nc
                .checked_mul(nr)
                .and_then(|e| e.checked_mul(size))
                .and_then(|d| d.checked_add(nr.checked_mul(16)?))
                .and_then(|d| d.checked_add(32));
            let Some(len) = len.filter(|&l| l <= b.len() - at - 8) else {
                break;
            };
            if checksum(&b[at..at + len]) != u64_at(b, at + len) {
                break;
            }
            let mut values = vec![T::zero(); nc * nr];
            let data = at + 32 + 16 * nr;
            bytes_mut(&mut values).copy_from_slice(&b[data..data + nc * nr * size]);
            entries.push(Entry {
                step,
                cols: c0..c0 + nc,
                rows: (0..nr).map(|r| word(4 + r)).collect(),
                sources: (0..nr).map(|r| word(4 + nr + r)).collect(),
                values,
            });
            at += len + 8;
        }
        entries
    }
}

impl Progress {
    /// The record's file in `dir`.
    pub fn record_path(dir: &Path) -> PathBuf {
        dir.join("progress.rec")
    }

    fn journal_paths(dir: &Path) -> [PathBuf; 2] {
        [
            dir.join("progress.journal.0"),
            dir.join("progress.journal.1"),
        ]
    }

    /// A new run's record (no step done) and empty journals in `dir`, replacing any.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the file.
    pub fn create(dir: &Path, kind: RunKind) -> Result<Progress, OocError> {
        let [j0, j1] = Self::journal_paths(dir);
        let p = Progress {
            record_path: Self::record_path(dir),
            journals: [Journal::open(j0, true)?, Journal::open(j1, true)?],
            record: Record {
                kind,
                steps_done: 0,
                first_zero_pivot: None,
                ipiv: Vec::new(),
            },
            journal_elems: 0,
            sync_seconds: 0.0,
            committing: None,
            journal_syncing: None,
        };
        replace_record(&p.record_path, &p.record, record_faults())?;
        Ok(p)
    }

    /// The run recorded in `dir`, to resume.
    ///
    /// # Errors
    /// [`OocError::Format`] for a missing, damaged or foreign record; [`OocError::Io`].
    pub fn open(dir: &Path) -> Result<Progress, OocError> {
        let record_path = Self::record_path(dir);
        let b = std::fs::read(&record_path).map_err(|e| OocError::Format {
            path: record_path.clone(),
            why: format!("no progress record to resume from ({e})"),
        })?;
        let record = Record::decode(&b).map_err(|why| OocError::Format {
            path: record_path.clone(),
            why,
        })?;
        let [j0, j1] = Self::journal_paths(dir);
        Ok(Progress {
            record_path,
            journals: [Journal::open(j0, false)?, Journal::open(j1, false)?],
            record,
            journal_elems: 0,
            sync_seconds: 0.0,
            committing: None,
            journal_syncing: None,
        })
    }

    /// The recorded state.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Seconds this process spent in `fsync`s of commits (the factors' data, the record) and
    /// of the journals; a commit in the background counts when it is waited for.
    pub fn sync_seconds(&self) -> f64 {
        self.sync_seconds
    }

    /// Elements written to the journals by this process.
    pub fn journal_elems(&self) -> u64 {
        self.journal_elems
    }

    /// Waits for the commit running in the background, if one is.
    ///
    /// # Errors
    /// That commit's error.
    pub fn wait(&mut self) -> Result<(), OocError> {
        self.journal_wait()?;
        let commit = self.committing.take();
        self.join(commit, "the commit")
    }

    /// Waits for `sync` (a commit or a journal's `fsync` on its own thread), if there is one,
    /// and counts its seconds.
    fn join(&mut self, sync: Option<Committing>, what: &str) -> Result<(), OocError> {
        if let Some(s) = sync {
            let seconds = s.join().map_err(|_| {
                OocError::Invalid(format!("{}: {what} panicked", self.record_path.display()))
            })??;
            self.sync_seconds += seconds;
        }
        Ok(())
    }

    /// Commits `steps_done` steps: `factors`' data synced, then the record (the steps, the
    /// pivots so far, the first zero pivot) replaced, then the journal of step `steps_done − 1`
    /// emptied. In the background, the caller going on with the next step, unless `wait`:
    /// first the previous commit is waited for, so that one at most runs, and the journal the
    /// next step writes is never the one being emptied.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the file: this commit's (`wait`) or the previous one's.
    pub fn commit<T: Scalar>(
        &mut self,
        factors: &DiskMatrix<T>,
        steps_done: usize,
        ipiv: &[usize],
        first_zero_pivot: Option<usize>,
        wait: bool,
    ) -> Result<(), OocError> {
        self.wait()?;
        self.record.steps_done = steps_done as u64;
        self.record.ipiv = ipiv.iter().map(|&p| p as u64).collect();
        self.record.first_zero_pivot = first_zero_pivot.map(|z| z as u64);
        let data = factors.sync_handle()?;
        let sync_fault = fault::check(Op::Sync);
        let faults = record_faults();
        let (record, path) = (self.record.clone(), self.record_path.clone());
        let stale = steps_done.checked_sub(1).map(|s| {
            let j = &mut self.journals[s % 2];
            j.len = 0;
            (j.file.try_clone(), j.path.clone())
        });
        let committing = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            fault::gate_as(sync_fault, Op::Sync)
                .and_then(|()| data.file.sync_data())
                .map_err(io_error(&data.path, "syncing the data of"))?;
            replace_record(&path, &record, faults)?;
            if let Some((file, jpath)) = stale {
                file.and_then(|f| f.set_len(0))
                    .map_err(io_error(&jpath, "emptying"))?;
            }
            Ok(started.elapsed().as_secs_f64())
        });
        self.committing = Some(committing);
        if wait {
            self.wait()?;
        }
        Ok(())
    }

    /// Appends to step `step`'s journal the entry "step `step` sets rows `rows` of columns
    /// `cols` to `values` (column by column, in `rows`' order), each taken from row
    /// `sources[r]`" — the sources undo it — and starts its `fsync` on a thread of its own: the
    /// caller computes meanwhile and calls [`Progress::journal_wait`] before it makes the write
    /// the entry undoes. The previous entry's `fsync` is waited for first.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the journal: the append, or the previous entry's `fsync`.
    pub fn journal_begin<T: Scalar>(
        &mut self,
        step: usize,
        cols: Range<usize>,
        rows: &[usize],
        sources: &[usize],
        values: &[T],
    ) -> Result<(), OocError> {
        debug_assert_eq!(values.len(), rows.len() * cols.len());
        self.journal_wait()?;
        let entry = Entry {
            step,
            cols,
            rows: rows.to_vec(),
            sources: sources.to_vec(),
            values: values.to_vec(),
        };
        let b = entry.encode();
        let j = &mut self.journals[step % 2];
        let file = &j.file;
        fault::write_all_at(|b, at| file.write_all_at(b, at), &b, j.len)
            .map_err(io_error(&j.path, "appending to"))?;
        let sync_fault = fault::check(Op::Sync);
        let (file, path) = (j.file.try_clone(), j.path.clone());
        self.journal_syncing = Some(std::thread::spawn(move || {
            let started = std::time::Instant::now();
            file.and_then(|f| fault::gate_as(sync_fault, Op::Sync).and_then(|()| f.sync_data()))
                .map_err(io_error(&path, "syncing"))?;
            Ok(started.elapsed().as_secs_f64())
        }));
        j.len += b.len() as u64;
        self.journal_elems += values.len() as u64;
        Ok(())
    }

    /// Waits for the latest journal entry's `fsync`, if one is running: the entry is durable.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the journal.
    pub fn journal_wait(&mut self) -> Result<(), OocError> {
        let sync = self.journal_syncing.take();
        self.join(sync, "a journal's fsync")
    }

    /// Brings `factors` to the state the record describes plus the journaled writes of the
    /// step in progress (`steps_done`): first the writes of the step after it, begun while its
    /// commit was running, undone (newest first: each value put back in its source row), then
    /// the step's own written again. Returns the first column of each entry written again.
    ///
    /// # Errors
    /// [`OocError::Format`] for an entry outside the matrix; the disk's errors.
    pub fn replay<T: Scalar>(
        &mut self,
        factors: &mut DiskMatrix<T>,
    ) -> Result<Vec<usize>, OocError> {
        let step = self.record.steps_done as usize;
        let (m, n) = factors.shape();
        let read = |j: &Journal| -> Result<Vec<Entry<T>>, OocError> {
            let mut b = vec![0u8; j.len as usize];
            fault::gate(Op::Read)
                .and_then(|()| j.file.read_exact_at(&mut b, 0))
                .map_err(io_error(&j.path, "reading"))?;
            let entries = Entry::<T>::decode_all(&b);
            let outside = |e: &Entry<T>| {
                e.cols.end > n
                    || e.rows.len() != e.sources.len()
                    || e.rows.iter().chain(&e.sources).any(|&r| r >= m)
            };
            if entries.iter().any(outside) {
                return Err(OocError::Format {
                    path: j.path.clone(),
                    why: "an entry outside the matrix".into(),
                });
            }
            Ok(entries)
        };
        let current = read(&self.journals[step % 2])?;
        let next = read(&self.journals[(step + 1) % 2])?;
        for e in next.iter().rev().filter(|e| e.step == step + 1) {
            write_rows(factors, e.cols.clone(), &e.sources, &e.values)?;
        }
        let mut replayed = Vec::new();
        for e in current.iter().filter(|e| e.step == step) {
            write_rows(factors, e.cols.clone(), &e.rows, &e.values)?;
            replayed.push(e.cols.start);
        }
        Ok(replayed)
    }
}

impl Drop for Progress {
    /// A commit still running is waited for (its error is the caller's to have seen).
    fn drop(&mut self) {
        let _ = self.wait();
    }
}

pub(crate) fn io_error(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> OocError {
    let path = path.to_path_buf();
    move |source| OocError::Io { path, what, source }
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("eight bytes"))
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("four bytes"))
}

impl Record {
    fn encode(&self) -> Vec<u8> {
        let k = &self.kind;
        let mut b = MAGIC.to_vec();
        for v in [VERSION, k.variant, k.scalar, 0] {
            b.extend(v.to_le_bytes());
        }
        let zero = self.first_zero_pivot.unwrap_or(u64::MAX);
        let fixed = [
            k.n,
            k.panel,
            k.input,
            k.ranks,
            k.row_block,
            self.steps_done,
            zero,
        ];
        for v in fixed.into_iter().chain([self.ipiv.len() as u64]) {
            b.extend(v.to_le_bytes());
        }
        for &p in &self.ipiv {
            b.extend(p.to_le_bytes());
        }
        let sum = checksum(&b);
        b.extend(sum.to_le_bytes());
        b
    }

    pub(crate) fn decode(b: &[u8]) -> Result<Record, String> {
        const FIXED: usize = 8 + 16 + 64;
        if b.len() < FIXED + 8 || &b[..8] != MAGIC {
            return Err("not a redblue progress record".into());
        }
        if u32_at(b, 8) != VERSION {
            return Err(format!(
                "record version {}; this build reads {VERSION}",
                u32_at(b, 8)
            ));
        }
        let count = u64_at(b, FIXED - 8);
        if Some(b.len() as u64) != count.checked_mul(8).map(|c| c + FIXED as u64 + 8) {
            return Err("truncated".into());
        }
        let end = b.len() - 8;
        if checksum(&b[..end]) != u64_at(b, end) {
            return Err("corrupted (checksum)".into());
        }
        let zero = u64_at(b, 72);
        Ok(Record {
            kind: RunKind {
                variant: u32_at(b, 12),
                scalar: u32_at(b, 16),
                n: u64_at(b, 24),
                panel: u64_at(b, 32),
                input: u64_at(b, 40),
                ranks: u64_at(b, 48),
                row_block: u64_at(b, 56),
            },
            steps_done: u64_at(b, 64),
            first_zero_pivot: (zero != u64::MAX).then_some(zero),
            ipiv: (FIXED..end).step_by(8).map(|i| u64_at(b, i)).collect(),
        })
    }
}

/// Writes `values` (column by column, in `rows`' order) to rows `rows` of columns `cols`, a
/// run of consecutive rows at a time.
pub(crate) fn write_rows<T: Scalar>(
    a: &mut DiskMatrix<T>,
    cols: Range<usize>,
    rows: &[usize],
    values: &[T],
) -> Result<(), OocError> {
    let nr = rows.len();
    for (jj, j) in cols.enumerate() {
        let mut s = 0;
        while s < nr {
            let mut e = s + 1;
            while e < nr && rows[e] == rows[e - 1] + 1 {
                e += 1;
            }
            a.write(
                rows[s]..rows[e - 1] + 1,
                j..j + 1,
                &values[jj * nr + s..jj * nr + e],
            )?;
            s = e;
        }
    }
    Ok(())
}

/// The kind of run for `scalar` `T`.
pub fn run_kind<T: Scalar>(variant: u32, n: usize, panel: usize, input: u64) -> RunKind {
    RunKind {
        variant,
        scalar: scalar_code::<T>(),
        n: n as u64,
        panel: panel as u64,
        input,
        ranks: 1,
        row_block: 0,
    }
}
