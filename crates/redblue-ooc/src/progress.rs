//! [`Progress`]: what makes an out-of-core factorisation resumable — a progress record,
//! replaced atomically after every step, and a journal of the writes that overwrite panels
//! already factored.
//!
//! The invariant: the factors file holds, durably, the state after the record's
//! `steps_done` steps, except for the writes of the step in progress. Those are of two kinds.
//! The active panel is written whole and its source is the untouched input, so the step is
//! simply done again. Writes over factored panels (a later step's interchanges brought to
//! them) would not be safe to do again — a permutation applied twice is not the one applied
//! once, and a write cut short leaves neither — so each is first appended to the journal
//! (the rows it changes, their new values, a checksum) and synced; on resume the intact
//! entries of the step in progress are written again (setting values is idempotent) and the
//! step skips the panels they cover. A commit is: the factors' data synced, then the record
//! written to a temporary file, synced, renamed over the old one, and the folder synced; the
//! journal is emptied after it (entries of finished steps are ignored by their step number).
//!
//! Record (little-endian): magic `RBOOCPRG`, version `u32` = 1, variant `u32`, scalar code
//! `u32`, `0u32`, order `u64`, panel width `u64`, the input's fingerprint `u64`, steps done
//! `u64`, the first zero pivot `u64` (`u64::MAX`: none), the number of pivots `u64`, the
//! pivots `u64` each, then the checksum of everything before it. Journal entry: step `u64`,
//! first column `u64`, columns `u64`, rows `u64`, the row indices `u64` each, the values
//! (column by column, in the rows' order), the checksum of the entry before it.

use crate::disk::{bytes, bytes_mut, sync_dir};
use crate::fault::{self, Op};
use crate::format::{checksum, scalar_code};
use crate::{DiskMatrix, OocError};
use redblue_core::Scalar;
use std::fs::{File, OpenOptions};
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"RBOOCPRG";
const VERSION: u32 = 1;

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
    /// [`DiskMatrix::fingerprint`] of the input.
    pub input: u64,
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

/// A resumable run's record and journal, in a folder.
#[derive(Debug)]
pub struct Progress {
    record_path: PathBuf,
    journal_path: PathBuf,
    journal: File,
    journal_len: u64,
    record: Record,
    journal_elems: u64,
    sync_seconds: f64,
}

fn io_error(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> OocError {
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
        let fixed = [k.n, k.panel, k.input, self.steps_done, zero];
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

    fn decode(b: &[u8]) -> Result<Record, String> {
        const FIXED: usize = 8 + 16 + 48;
        if b.len() < FIXED + 8 || &b[..8] != MAGIC {
            return Err("not a redblue progress record".into());
        }
        if u32_at(b, 8) != VERSION {
            return Err(format!(
                "record version {}; this build reads 1",
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
        let zero = u64_at(b, 56);
        Ok(Record {
            kind: RunKind {
                variant: u32_at(b, 12),
                scalar: u32_at(b, 16),
                n: u64_at(b, 24),
                panel: u64_at(b, 32),
                input: u64_at(b, 40),
            },
            steps_done: u64_at(b, 48),
            first_zero_pivot: (zero != u64::MAX).then_some(zero),
            ipiv: (FIXED..end).step_by(8).map(|i| u64_at(b, i)).collect(),
        })
    }
}

impl Progress {
    /// The record's file in `dir`.
    pub fn record_path(dir: &Path) -> PathBuf {
        dir.join("progress.rec")
    }

    /// A new run's record (no step done) and an empty journal in `dir`, replacing any.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the file.
    pub fn create(dir: &Path, kind: RunKind) -> Result<Progress, OocError> {
        let journal_path = dir.join("progress.journal");
        let journal = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&journal_path)
            .map_err(io_error(&journal_path, "creating"))?;
        let mut p = Progress {
            record_path: Self::record_path(dir),
            journal_path,
            journal,
            journal_len: 0,
            record: Record {
                kind,
                steps_done: 0,
                first_zero_pivot: None,
                ipiv: Vec::new(),
            },
            journal_elems: 0,
            sync_seconds: 0.0,
        };
        p.write_record()?;
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
        let journal_path = dir.join("progress.journal");
        let journal = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&journal_path)
            .map_err(io_error(&journal_path, "opening"))?;
        let journal_len = journal
            .metadata()
            .map_err(io_error(&journal_path, "reading the length of"))?
            .len();
        Ok(Progress {
            record_path,
            journal_path,
            journal,
            journal_len,
            record,
            journal_elems: 0,
            sync_seconds: 0.0,
        })
    }

    /// The recorded state.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Seconds this process spent in the record's and the journal's `fsync`s.
    pub fn sync_seconds(&self) -> f64 {
        self.sync_seconds
    }

    /// Elements written to the journal by this process.
    pub fn journal_elems(&self) -> u64 {
        self.journal_elems
    }

    /// The record written to a temporary file, synced, renamed over the old one, the folder
    /// synced.
    fn write_record(&mut self) -> Result<(), OocError> {
        let tmp = self.record_path.with_extension("rec.tmp");
        let b = self.record.encode();
        let file = File::create(&tmp).map_err(io_error(&tmp, "creating"))?;
        fault::write_all_at(|b, at| file.write_all_at(b, at), &b, 0)
            .map_err(io_error(&tmp, "writing"))?;
        let started = std::time::Instant::now();
        fault::gate(Op::Sync)
            .and_then(|()| file.sync_all())
            .map_err(io_error(&tmp, "syncing"))?;
        std::fs::rename(&tmp, &self.record_path)
            .map_err(io_error(&self.record_path, "replacing"))?;
        let synced = sync_dir(&self.record_path);
        self.sync_seconds += started.elapsed().as_secs_f64();
        synced
    }

    /// Commits a step: `factors`' data synced, then the record (`steps_done`, the pivots so
    /// far, the first zero pivot) replaced, then the journal emptied.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the file.
    pub fn commit<T: Scalar>(
        &mut self,
        factors: &mut DiskMatrix<T>,
        steps_done: usize,
        ipiv: &[usize],
        first_zero_pivot: Option<usize>,
    ) -> Result<(), OocError> {
        factors.flush()?;
        self.record.steps_done = steps_done as u64;
        self.record.ipiv = ipiv.iter().map(|&p| p as u64).collect();
        self.record.first_zero_pivot = first_zero_pivot.map(|z| z as u64);
        self.write_record()?;
        self.journal
            .set_len(0)
            .map_err(io_error(&self.journal_path, "emptying"))?;
        self.journal_len = 0;
        Ok(())
    }

    /// Appends (and syncs) the entry "step `step` sets rows `rows` of columns `cols` to
    /// `values`" (column by column, in `rows`' order).
    ///
    /// # Errors
    /// [`OocError::Io`] naming the journal.
    pub fn journal<T: Scalar>(
        &mut self,
        step: usize,
        cols: Range<usize>,
        rows: &[usize],
        values: &[T],
    ) -> Result<(), OocError> {
        debug_assert_eq!(values.len(), rows.len() * cols.len());
        let mut b = Vec::with_capacity(8 * (5 + rows.len()) + std::mem::size_of_val(values));
        for v in [step, cols.start, cols.len(), rows.len()]
            .into_iter()
            .chain(rows.iter().copied())
        {
            b.extend((v as u64).to_le_bytes());
        }
        b.extend_from_slice(bytes(values));
        let sum = checksum(&b);
        b.extend(sum.to_le_bytes());
        let j = &self.journal;
        fault::write_all_at(|b, at| j.write_all_at(b, at), &b, self.journal_len)
            .map_err(io_error(&self.journal_path, "appending to"))?;
        let started = std::time::Instant::now();
        let synced = fault::gate(Op::Sync).and_then(|()| self.journal.sync_data());
        self.sync_seconds += started.elapsed().as_secs_f64();
        synced.map_err(io_error(&self.journal_path, "syncing"))?;
        self.journal_len += b.len() as u64;
        self.journal_elems += values.len() as u64;
        Ok(())
    }

    /// Writes the journal's intact entries of the step in progress (`steps_done`) into
    /// `factors` again and returns the first column of each; stops at the first entry cut
    /// short (whose write never began).
    ///
    /// # Errors
    /// [`OocError::Format`] for an entry outside the matrix; the disk's errors.
    pub fn replay<T: Scalar>(
        &mut self,
        factors: &mut DiskMatrix<T>,
    ) -> Result<Vec<usize>, OocError> {
        let size = std::mem::size_of::<T>();
        let mut b = vec![0u8; self.journal_len as usize];
        fault::gate(Op::Read)
            .and_then(|()| self.journal.read_exact_at(&mut b, 0))
            .map_err(io_error(&self.journal_path, "reading"))?;
        let (m, n) = factors.shape();
        let mut replayed = Vec::new();
        let mut at = 0;
        while at + 40 <= b.len() {
            let (step, c0, nc, nr) = (
                u64_at(&b, at),
                u64_at(&b, at + 8) as usize,
                u64_at(&b, at + 16) as usize,
                u64_at(&b, at + 24) as usize,
            );
            // The entry's length before its checksum (an absurd one is an entry cut short).
            let len = nc
                .checked_mul(nr)
                .and_then(|e| e.checked_mul(size))
                .and_then(|d| d.checked_add(nr.checked_mul(8)?))
                .and_then(|d| d.checked_add(32));
            let Some(len) = len.filter(|&l| l <= b.len() - at - 8) else {
                break;
            };
            if checksum(&b[at..at + len]) != u64_at(&b, at + len) {
                break;
            }
            let rows: Vec<usize> = (0..nr)
                .map(|r| u64_at(&b, at + 32 + 8 * r) as usize)
                .collect();
            if c0 + nc > n || rows.iter().any(|&r| r >= m) {
                return Err(OocError::Format {
                    path: self.journal_path.clone(),
                    why: "an entry outside the matrix".into(),
                });
            }
            if step == self.record.steps_done {
                let mut values = vec![T::zero(); nc * nr];
                let data = at + 32 + 8 * nr;
                bytes_mut(&mut values).copy_from_slice(&b[data..data + nc * nr * size]);
                write_rows(factors, c0..c0 + nc, &rows, &values)?;
                replayed.push(c0);
            }
            at += len + 8;
        }
        Ok(replayed)
    }
}

/// Writes `values` (column by column, in `rows`' order) to rows `rows` of columns `cols`, a
/// run of consecutive rows at a time.
fn write_rows<T: Scalar>(
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
    }
}
