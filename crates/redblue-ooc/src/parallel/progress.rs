//! [`RanksProgress`]: what makes the LU over ranks resumable — one record of the steps every
//! rank has made durable, and on each rank an undo journal of its writes over factored rows
//! since.
//!
//! A commit of `s` steps: each rank syncs its factors' data; the ranks agree that all did; rank
//! 0 replaces the record (`progress.rec`, the format of [`crate::Progress`]'s, with the ranks and
//! the rows' block); the ranks agree that it did; each rank empties its journal. Before a rank
//! writes over factored rows (a later step's interchanges), it appends their old values to its
//! journal (`progress.undo.R`) and syncs it. On resume, rank 0 reads the record and hands it to
//! every rank; each rank puts back the old values of its journal's entries, newest first, which
//! restores the recorded state exactly whichever ranks had gone further in the step; and every
//! rank starts again from the record's step (an active panel is read again from the untouched
//! input). An entry cut short was never followed by its write and is ignored.

use super::{comm_error, RankFile, RowCyclic};
use crate::fault::{self, Op};
use crate::format::checksum;
use crate::progress::{io_error, record_faults, replace_record, Entry};
use crate::{OocError, Progress, Record, RunKind};
use redblue_comm::Communicator;
use redblue_core::Scalar;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A resumable run over ranks: the shared record and this rank's undo journal.
#[derive(Debug)]
pub struct RanksProgress {
    record_path: PathBuf,
    journal_path: PathBuf,
    journal: File,
    journal_len: u64,
    record: Record,
    journal_elems: u64,
}

/// `result` where every rank's is `Ok`; otherwise `Err` on every rank: the failing rank its own
/// error, the others [`OocError::OnRank`] with the lowest failing rank's message (passed on
/// unchanged when it was itself another rank's), so that every rank can say what went wrong.
///
/// # Collective
/// # Errors
/// The agreed failure; a failed peer.
pub fn agree<C: Communicator, V>(comm: &C, result: Result<V, OocError>) -> Result<V, OocError> {
    let mut flags = vec![0u8; comm.size()];
    comm.all_gather(&[u8::from(result.is_err())], &mut flags)
        .map_err(comm_error)?;
    let Some(failed) = flags.iter().position(|&f| f != 0) else {
        return result;
    };
    let (mut rank, mut message) = match (&result, comm.rank() == failed) {
        (Err(OocError::OnRank { rank, why }), true) => (*rank as u64, why.clone().into_bytes()),
        (Err(e), true) => (failed as u64, e.to_string().into_bytes()),
        _ => (0, Vec::new()),
    };
    let mut head = [rank, message.len() as u64];
    comm.broadcast(&mut head, failed).map_err(comm_error)?;
    rank = head[0];
    message.resize(head[1] as usize, 0);
    comm.broadcast(&mut message, failed).map_err(comm_error)?;
    result?;
    Err(OocError::OnRank {
        rank: rank as usize,
        why: String::from_utf8_lossy(&message).into_owned(),
    })
}

impl RanksProgress {
    fn journal_path(dir: &Path, rank: usize) -> PathBuf {
        dir.join(format!("progress.undo.{rank}"))
    }

    fn open_journal(path: &Path, truncate: bool) -> Result<(File, u64), OocError> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(truncate)
            .open(path)
            .map_err(io_error(path, "opening"))?;
        let len = file
            .metadata()
            .map_err(io_error(path, "reading the length of"))?
            .len();
        Ok((file, len))
    }

    /// A new run's record (no step done; written by rank 0) and empty journals in `dir`.
    ///
    /// # Collective
    /// # Errors
    /// [`OocError::Io`] naming the file, on every rank alike.
    pub fn create<C: Communicator>(comm: &C, dir: &Path, kind: RunKind) -> Result<Self, OocError> {
        let record = Record {
            kind,
            steps_done: 0,
            first_zero_pivot: None,
            ipiv: Vec::new(),
        };
        Self::with_journal(comm, dir, record, true)
    }

    /// The progress of `record` with this rank's journal (emptied when `fresh`, when rank 0
    /// also writes the record), agreed by every rank.
    fn with_journal<C: Communicator>(
        comm: &C,
        dir: &Path,
        record: Record,
        fresh: bool,
    ) -> Result<Self, OocError> {
        let record_path = Progress::record_path(dir);
        let journal_path = Self::journal_path(dir, comm.rank());
        let opened = Self::open_journal(&journal_path, fresh);
        let done = match &opened {
            Err(e) => Err(OocError::Invalid(e.to_string())),
            Ok(_) if fresh && comm.rank() == 0 => {
                replace_record(&record_path, &record, record_faults())
            }
            Ok(_) => Ok(()),
        };
        agree(comm, done)?;
        let (journal, journal_len) = opened?;
        Ok(RanksProgress {
            record_path,
            journal_path,
            journal,
            journal_len,
            record,
            journal_elems: 0,
        })
    }

    /// The run recorded in `dir` (read by rank 0, handed to every rank), to resume.
    ///
    /// # Collective
    /// # Errors
    /// [`OocError::Format`] for a missing or damaged record, on every rank alike.
    pub fn open<C: Communicator>(comm: &C, dir: &Path) -> Result<Self, OocError> {
        let record_path = Progress::record_path(dir);
        let missing = |why: String| OocError::Format {
            path: record_path.clone(),
            why: format!("no progress record to resume from ({why})"),
        };
        let bytes = match comm.rank() {
            0 => std::fs::read(&record_path).map_err(|e| e.to_string()),
            _ => Ok(Vec::new()),
        };
        let read = bytes.as_ref().map(|_| ()).map_err(|e| missing(e.clone()));
        agree(comm, read).map_err(|_| match &bytes {
            Err(e) => missing(e.clone()),
            Ok(_) => missing("rank 0 could not read it".into()),
        })?;
        let mut len = [bytes.as_ref().map_or(0, |b| b.len() as u64)];
        comm.broadcast(&mut len, 0).map_err(comm_error)?;
        let mut b = bytes.unwrap_or_default();
        b.resize(len[0] as usize, 0);
        comm.broadcast(&mut b, 0).map_err(comm_error)?;
        let record = Record::decode(&b).map_err(|why| OocError::Format {
            path: record_path.clone(),
            why,
        })?;
        Self::with_journal(comm, dir, record, false)
    }

    /// The recorded state.
    pub fn record(&self) -> &Record {
        &self.record
    }

    /// Elements this rank wrote to its journal.
    pub fn journal_elems(&self) -> u64 {
        self.journal_elems
    }

    /// Appends (and syncs) "step `step` changes rows `rows` (global) of columns `cols`, whose
    /// values were `old`" (column by column, in `rows`' order).
    pub(crate) fn journal_old<T: Scalar>(
        &mut self,
        step: usize,
        cols: std::ops::Range<usize>,
        rows: &[usize],
        old: &[T],
    ) -> Result<(), OocError> {
        let entry = Entry {
            step,
            cols,
            rows: rows.to_vec(),
            sources: rows.to_vec(),
            values: old.to_vec(),
        };
        let b = entry.encode();
        let file = &self.journal;
        fault::write_all_at(|b, at| file.write_all_at(b, at), &b, self.journal_len)
            .map_err(io_error(&self.journal_path, "appending to"))?;
        fault::gate(Op::Sync)
            .and_then(|()| self.journal.sync_data())
            .map_err(io_error(&self.journal_path, "syncing"))?;
        self.journal_len += b.len() as u64;
        self.journal_elems += old.len() as u64;
        Ok(())
    }

    /// Commits `steps_done` steps: every rank's factors synced and agreed, then rank 0's record
    /// replaced and agreed, then the journals emptied.
    ///
    /// # Collective
    /// # Errors
    /// A failed sync or record, on every rank alike.
    pub(crate) fn commit<T: Scalar, C: Communicator>(
        &mut self,
        comm: &C,
        factors: &mut RankFile<T>,
        steps_done: usize,
        ipiv: &[usize],
        first_zero_pivot: Option<usize>,
    ) -> Result<(), OocError> {
        agree(comm, factors.file.flush())?;
        self.record.steps_done = steps_done as u64;
        self.record.ipiv = ipiv.iter().map(|&p| p as u64).collect();
        self.record.first_zero_pivot = first_zero_pivot.map(|z| z as u64);
        let written = if comm.rank() == 0 {
            replace_record(&self.record_path, &self.record, record_faults())
        } else {
            Ok(())
        };
        agree(comm, written)?;
        self.journal
            .set_len(0)
            .map_err(io_error(&self.journal_path, "emptying"))?;
        self.journal_len = 0;
        Ok(())
    }

    /// This rank's journaled writes of the steps from the record's on undone, newest first.
    pub(crate) fn undo<T: Scalar>(
        &mut self,
        lay: RowCyclic,
        rank: usize,
        factors: &mut RankFile<T>,
    ) -> Result<(), OocError> {
        let mut b = vec![0u8; self.journal_len as usize];
        fault::gate(Op::Read)
            .and_then(|()| self.journal.read_exact_at(&mut b, 0))
            .map_err(io_error(&self.journal_path, "reading"))?;
        let from = self.record.steps_done as usize;
        for e in Entry::<T>::decode_all(&b)
            .iter()
            .rev()
            .filter(|e| e.step >= from)
        {
            if e.cols.end > lay.m || e.rows.iter().any(|&r| r >= lay.m || lay.owner(r) != rank) {
                return Err(OocError::Format {
                    path: self.journal_path.clone(),
                    why: "an entry outside this rank's rows".into(),
                });
            }
            factors.write_rows(lay, rank, e.cols.clone(), &e.rows, &e.values)?;
        }
        Ok(())
    }
}

/// The fingerprint of a run's inputs over ranks: every rank's input's, combined (the same on
/// every rank).
pub(crate) fn inputs_fingerprint<C: Communicator>(comm: &C, mine: u64) -> Result<u64, OocError> {
    let mut all = vec![0u64; comm.size()];
    comm.all_gather(&[mine], &mut all).map_err(comm_error)?;
    let bytes: Vec<u8> = all.iter().flat_map(|v| v.to_le_bytes()).collect();
    Ok(checksum(&bytes))
}
