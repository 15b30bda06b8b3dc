//! [`DiskMatrix`]: a matrix in a file ([`crate::format`]), read and written a rectangle at a
//! time, every element counted.

use crate::format::{checksum, scalar_code, scalar_name, Header, HeaderProblem, HEADER_BYTES};
use crate::{fault, OocError};
use redblue_core::Scalar;
use std::fs::{File, OpenOptions};
use std::marker::PhantomData;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Elements a [`DiskMatrix`] has moved since it was opened (or [`DiskMatrix::reset_io`]): the
/// algorithm's reads and writes, and apart from them the reads its checksums took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IoCounts {
    /// Elements read by [`DiskMatrix::read`].
    pub read_elems: u64,
    /// Elements written by [`DiskMatrix::write`].
    pub write_elems: u64,
    /// Elements read to compute or check panel checksums ([`DiskMatrix::sync`],
    /// [`DiskMatrix::verify`]).
    pub checksum_read_elems: u64,
}

impl std::ops::Add for IoCounts {
    type Output = IoCounts;

    fn add(self, o: IoCounts) -> IoCounts {
        IoCounts {
            read_elems: self.read_elems + o.read_elems,
            write_elems: self.write_elems + o.write_elems,
            checksum_read_elems: self.checksum_read_elems + o.checksum_read_elems,
        }
    }
}

impl IoCounts {
    /// What was moved since `start` (an earlier reading of the same counters).
    pub fn since(self, start: IoCounts) -> IoCounts {
        IoCounts {
            read_elems: self.read_elems - start.read_elems,
            write_elems: self.write_elems - start.write_elems,
            checksum_read_elems: self.checksum_read_elems - start.checksum_read_elems,
        }
    }
}

/// A `rows × cols` matrix of `T` in a file, panels of `panel` columns.
///
/// Reads and writes take any rectangle; a write marks the panels it touches, whose checksums
/// [`DiskMatrix::sync`] recomputes before making the file durable. [`DiskMatrix::open`] checks
/// the header (magic, version, scalar type, length); [`DiskMatrix::verify`] every panel.
#[derive(Debug)]
pub struct DiskMatrix<T> {
    file: File,
    path: PathBuf,
    header: Header,
    /// Panels written since their checksum was last computed.
    stale: Vec<bool>,
    io: IoCounts,
    /// Seconds spent in reads and in writes (of the counted rectangles).
    seconds: (f64, f64),
    /// Seconds spent in `fsync`.
    sync_seconds: f64,
    _t: PhantomData<T>,
}

/// What another thread needs to make a matrix file's data durable.
#[derive(Debug)]
pub(crate) struct SyncHandle {
    pub(crate) file: File,
    pub(crate) path: PathBuf,
}

/// A read running on its own thread ([`DiskMatrix::read_ahead`]).
#[derive(Debug)]
pub struct PendingRead<T> {
    thread: std::thread::JoinHandle<(Vec<T>, std::io::Result<()>, f64)>,
    path: PathBuf,
    first: usize,
}

/// `s` as bytes (the four scalar types are plain data without padding).
pub(crate) fn bytes<T: Scalar>(s: &[T]) -> &[u8] {
    // SAFETY: `T` is f32, f64 or a complex of them (`Scalar` is sealed): every bit pattern is a
    // value, there is no padding, and u8 has alignment 1.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), std::mem::size_of_val(s)) }
}

/// `s` as writable bytes.
pub(crate) fn bytes_mut<T: Scalar>(s: &mut [T]) -> &mut [u8] {
    // SAFETY: as in `bytes`; any bytes written form valid values of `T`.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), std::mem::size_of_val(s)) }
}

/// Bytes free for an unprivileged user on the filesystem that would hold `path` (`None` if the
/// system does not say).
fn free_bytes(path: &Path) -> Option<u64> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).ok()?;
    // SAFETY: all-zero bits are a valid `statvfs` (plain integers).
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: a NUL-terminated path and a valid out-pointer.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| (st.f_bavail as u64).saturating_mul(st.f_frsize as u64))
}

/// Syncs the folder holding `path`, so that a rename or a new file in it is durable.
pub(crate) fn sync_dir(path: &Path) -> Result<(), OocError> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    fault::gate(fault::Op::Sync)
        .and_then(|()| File::open(dir)?.sync_all())
        .map_err(|source| OocError::Io {
            path: dir.to_path_buf(),
            what: "syncing the folder",
            source,
        })
}

impl<T: Scalar> DiskMatrix<T> {
    /// A new file at `path` (replacing any) of a `rows × cols` matrix of zeros in panels of
    /// `panel` columns.
    ///
    /// # Errors
    /// [`OocError::Invalid`] for a zero panel width or a size that overflows; [`OocError::Io`]
    /// naming the file.
    pub fn create(
        path: impl AsRef<Path>,
        rows: usize,
        cols: usize,
        panel: usize,
    ) -> Result<Self, OocError> {
        let path = path.as_ref().to_path_buf();
        if panel == 0 {
            return Err(OocError::Invalid(format!(
                "{}: a panel width of 0",
                path.display()
            )));
        }
        let header = Header {
            scalar: scalar_code::<T>(),
            rows: rows as u64,
            cols: cols as u64,
            panel: panel as u64,
        };
        let len = header
            .file_len(std::mem::size_of::<T>() as u64)
            .ok_or_else(|| {
                OocError::Invalid(format!("{}: {rows} x {cols} is too large", path.display()))
            })?;
        if let Some(free) = free_bytes(&path) {
            if len > free {
                return Err(OocError::Invalid(format!(
                    "{}: a {rows} x {cols} matrix needs {len} bytes; its filesystem has {free} free",
                    path.display()
                )));
            }
        }
        let io = |what: &'static str| {
            let path = path.clone();
            move |source| OocError::Io { path, what, source }
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .map_err(io("creating"))?;
        file.set_len(len).map_err(io("sizing"))?;
        file.write_all_at(&header.encode(), 0)
            .map_err(io("writing the header of"))?;
        let panels = header.panels() as usize;
        let mut m = DiskMatrix {
            file,
            path,
            header,
            stale: vec![true; panels],
            io: IoCounts::default(),
            seconds: (0.0, 0.0),
            sync_seconds: 0.0,
            _t: PhantomData,
        };
        m.sync()?;
        Ok(m)
    }

    /// A new file holding `f(i, j)`, written a panel at a time (the writes are not counted:
    /// the counters start at zero).
    ///
    /// # Errors
    /// As [`DiskMatrix::create`].
    pub fn create_from_fn(
        path: impl AsRef<Path>,
        rows: usize,
        cols: usize,
        panel: usize,
        f: impl Fn(usize, usize) -> T,
    ) -> Result<Self, OocError> {
        let mut m = Self::create(path, rows, cols, panel)?;
        for p in 0..m.panels() {
            let c = m.panel_cols(p);
            let data: Vec<T> = c
                .clone()
                .flat_map(|j| (0..rows).map(move |i| (i, j)))
                .map(|(i, j)| f(i, j))
                .collect();
            m.write(0..rows, c, &data)?;
        }
        m.sync()?;
        m.reset_io();
        Ok(m)
    }

    /// A new matrix file at `path` from the raw file `raw`: `rows × cols` elements of `T`,
    /// column-major, little-endian, nothing else; copied a panel at a time.
    ///
    /// # Errors
    /// [`OocError::Format`] naming `raw` if its length is not `rows · cols` elements; as
    /// [`DiskMatrix::create`].
    pub fn from_raw(
        raw: impl AsRef<Path>,
        path: impl AsRef<Path>,
        rows: usize,
        cols: usize,
        panel: usize,
    ) -> Result<Self, OocError> {
        let raw = raw.as_ref();
        let io = |what: &'static str| {
            let path = raw.to_path_buf();
            move |source| OocError::Io { path, what, source }
        };
        let file = File::open(raw).map_err(io("opening"))?;
        let len = file.metadata().map_err(io("reading the length of"))?.len();
        let size = std::mem::size_of::<T>() as u64;
        let want = (rows as u64)
            .saturating_mul(cols as u64)
            .saturating_mul(size);
        if len != want {
            return Err(OocError::Format {
                path: raw.to_path_buf(),
                why: format!("{len} bytes; a {rows} x {cols} matrix of this type is {want}"),
            });
        }
        let mut m = Self::create(path, rows, cols, panel)?;
        for p in 0..m.panels() {
            let c = m.panel_cols(p);
            let mut data = vec![T::zero(); rows * c.len()];
            file.read_exact_at(bytes_mut(&mut data), (c.start * rows) as u64 * size)
                .map_err(io("reading"))?;
            m.write(0..rows, c, &data)?;
        }
        m.sync()?;
        m.reset_io();
        Ok(m)
    }

    /// Opens an existing file, checking its header: the magic, the format version, the scalar
    /// type (`T`'s), and that the file is as long as its shape says.
    ///
    /// # Errors
    /// [`OocError::Format`] naming the file and what is wrong; [`OocError::Io`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, OocError> {
        let path = path.as_ref().to_path_buf();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .map_err(|source| OocError::Io {
                path: path.clone(),
                what: "opening",
                source,
            })?;
        let bad = |why: String| OocError::Format {
            path: path.clone(),
            why,
        };
        let len = file
            .metadata()
            .map_err(|source| OocError::Io {
                path: path.clone(),
                what: "reading the length of",
                source,
            })?
            .len();
        let mut b = [0u8; HEADER_BYTES];
        if len < HEADER_BYTES as u64 {
            return Err(bad(format!("{len} bytes: shorter than a header")));
        }
        file.read_exact_at(&mut b, 0)
            .map_err(|source| OocError::Io {
                path: path.clone(),
                what: "reading the header of",
                source,
            })?;
        let header = Header::decode(&b).map_err(|p| {
            bad(match p {
                HeaderProblem::Magic => "not a redblue matrix file (bad magic)".into(),
                HeaderProblem::Version(v) => {
                    format!("format version {v}; this build reads version 1")
                }
                HeaderProblem::Checksum => "the header is corrupted (checksum)".into(),
                HeaderProblem::Fields => {
                    "the header names an unknown scalar type or a zero panel width".into()
                }
            })
        })?;
        if header.scalar != scalar_code::<T>() {
            return Err(bad(format!(
                "holds {}, opened as {}",
                scalar_name(header.scalar),
                scalar_name(scalar_code::<T>())
            )));
        }
        let want = header
            .file_len(std::mem::size_of::<T>() as u64)
            .unwrap_or(u64::MAX);
        if len < want {
            return Err(bad(format!("truncated: {len} bytes of {want}")));
        }
        let panels = header.panels() as usize;
        Ok(DiskMatrix {
            file,
            path,
            header,
            stale: vec![false; panels],
            io: IoCounts::default(),
            seconds: (0.0, 0.0),
            sync_seconds: 0.0,
            _t: PhantomData,
        })
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.header.rows as usize, self.header.cols as usize)
    }

    /// The panel width.
    pub fn panel(&self) -> usize {
        self.header.panel as usize
    }

    /// The number of panels.
    pub fn panels(&self) -> usize {
        self.header.panels() as usize
    }

    /// The columns of panel `p`.
    pub fn panel_cols(&self, p: usize) -> Range<usize> {
        let w = self.panel();
        p * w..((p + 1) * w).min(self.shape().1)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The elements moved so far.
    pub fn io(&self) -> IoCounts {
        self.io
    }

    /// Seconds spent reading and writing the counted rectangles, `(read, write)`.
    pub fn io_seconds(&self) -> (f64, f64) {
        self.seconds
    }

    /// Seconds spent making the file durable (`fsync`, in [`DiskMatrix::flush`] and
    /// [`DiskMatrix::sync`]).
    pub fn sync_seconds(&self) -> f64 {
        self.sync_seconds
    }

    /// Sets the counters (and the seconds) to zero.
    pub fn reset_io(&mut self) {
        self.io = IoCounts::default();
        self.seconds = (0.0, 0.0);
        self.sync_seconds = 0.0;
    }

    fn check_rect(
        &self,
        rows: &Range<usize>,
        cols: &Range<usize>,
        len: usize,
    ) -> Result<(), OocError> {
        let (m, n) = self.shape();
        if rows.start > rows.end
            || rows.end > m
            || cols.start > cols.end
            || cols.end > n
            || len != rows.len() * cols.len()
        {
            return Err(OocError::Invalid(format!(
                "{}: rows {rows:?} x columns {cols:?} ({len} elements) of a {m} x {n} matrix",
                self.path.display()
            )));
        }
        Ok(())
    }

    fn offset(&self, i: usize, j: usize) -> u64 {
        self.header.data_offset()
            + (i as u64 + j as u64 * self.header.rows) * std::mem::size_of::<T>() as u64
    }

    /// Reads rows `rows` × columns `cols` into `out` (column-major, `rows.len()` per column).
    ///
    /// # Errors
    /// [`OocError::Invalid`] for a rectangle outside the matrix or an `out` of another length;
    /// [`OocError::Io`] naming the file and the panel.
    pub fn read(
        &mut self,
        rows: Range<usize>,
        cols: Range<usize>,
        out: &mut [T],
    ) -> Result<(), OocError> {
        self.check_rect(&rows, &cols, out.len())?;
        self.read_strided(rows.clone(), cols, out, rows.len())
    }

    /// [`DiskMatrix::read`] into a buffer whose columns are `ld` apart (column `jj` of the
    /// rectangle goes to `out[jj·ld..jj·ld + rows.len()]`): a part of a larger array, read
    /// without a copy.
    ///
    /// # Errors
    /// As [`DiskMatrix::read`]; [`OocError::Invalid`] for an `ld` below the rectangle's height
    /// or an `out` too short for it.
    pub fn read_strided(
        &mut self,
        rows: Range<usize>,
        cols: Range<usize>,
        out: &mut [T],
        ld: usize,
    ) -> Result<(), OocError> {
        let (h, w) = (rows.len(), cols.len());
        self.check_strided(&rows, &cols, out.len(), ld)?;
        let started = std::time::Instant::now();
        fault::gate(fault::Op::Read).map_err(|e| self.panel_error("reading", cols.start, e))?;
        for (jj, j) in cols.clone().enumerate() {
            let at = self.offset(rows.start, j);
            self.file
                .read_exact_at(bytes_mut(&mut out[jj * ld..jj * ld + h]), at)
                .map_err(|source| self.panel_error("reading", j, source))?;
        }
        self.io.read_elems += (h * w) as u64;
        self.seconds.0 += started.elapsed().as_secs_f64();
        Ok(())
    }

    /// A rectangle inside the matrix, and a buffer of columns `ld` apart that holds it.
    fn check_strided(
        &self,
        rows: &Range<usize>,
        cols: &Range<usize>,
        len: usize,
        ld: usize,
    ) -> Result<(), OocError> {
        let (h, w) = (rows.len(), cols.len());
        let need = if w == 0 { 0 } else { (w - 1) * ld + h };
        if ld < h || len < need {
            return Err(OocError::Invalid(format!(
                "{}: a {h} x {w} rectangle in {len} elements {ld} apart",
                self.path.display()
            )));
        }
        self.check_rect(rows, cols, h * w)
    }

    /// Starts reading rows `rows` × columns `cols` into `buf` on a thread of its own (seed
    /// 003's non-blocking read), to be collected by [`DiskMatrix::finish_read`]; meanwhile the
    /// caller must not write that rectangle.
    ///
    /// # Errors
    /// As [`DiskMatrix::read`] for the rectangle; the read's own failure comes from
    /// [`DiskMatrix::finish_read`].
    pub fn read_ahead(
        &self,
        rows: Range<usize>,
        cols: Range<usize>,
        mut buf: Vec<T>,
    ) -> Result<PendingRead<T>, OocError> {
        self.check_rect(&rows, &cols, buf.len())?;
        let first = cols.start;
        let offsets: Vec<u64> = cols.clone().map(|j| self.offset(rows.start, j)).collect();
        let h = rows.len();
        let file = fault::gate(fault::Op::Read).and_then(|()| self.file.try_clone());
        let thread = std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let result = file.and_then(|file| {
                offsets.iter().enumerate().try_for_each(|(jj, &at)| {
                    file.read_exact_at(bytes_mut(&mut buf[jj * h..(jj + 1) * h]), at)
                })
            });
            (buf, result, started.elapsed().as_secs_f64())
        });
        Ok(PendingRead {
            thread,
            path: self.path.clone(),
            first,
        })
    }

    /// Waits for a read [`DiskMatrix::read_ahead`] started on this matrix and returns its
    /// buffer, the read counted.
    ///
    /// # Errors
    /// [`OocError::Panel`] naming the file and the panel: the read failed.
    pub fn finish_read(&mut self, read: PendingRead<T>) -> Result<Vec<T>, OocError> {
        debug_assert_eq!(read.path, self.path);
        let (buf, result, seconds) = read.thread.join().map_err(|_| {
            self.panel_error(
                "reading",
                read.first,
                std::io::Error::other("the reader panicked"),
            )
        })?;
        result.map_err(|source| self.panel_error("reading", read.first, source))?;
        self.io.read_elems += buf.len() as u64;
        self.seconds.0 += seconds;
        Ok(buf)
    }

    /// Writes `data` (column-major, `rows.len()` per column) over rows `rows` × columns
    /// `cols`; the panels touched are checksummed again at the next [`DiskMatrix::sync`].
    ///
    /// # Errors
    /// As [`DiskMatrix::read`].
    pub fn write(
        &mut self,
        rows: Range<usize>,
        cols: Range<usize>,
        data: &[T],
    ) -> Result<(), OocError> {
        self.check_rect(&rows, &cols, data.len())?;
        self.write_strided(rows.clone(), cols, data, rows.len())
    }

    /// [`DiskMatrix::write`] from a buffer whose columns are `ld` apart (column `jj` of the
    /// rectangle is `data[jj·ld..jj·ld + rows.len()]`): a part of a larger array, written
    /// without a copy.
    ///
    /// # Errors
    /// As [`DiskMatrix::write`]; [`OocError::Invalid`] for an `ld` below the rectangle's height
    /// or a `data` too short for it.
    pub fn write_strided(
        &mut self,
        rows: Range<usize>,
        cols: Range<usize>,
        data: &[T],
        ld: usize,
    ) -> Result<(), OocError> {
        let (h, w) = (rows.len(), cols.len());
        self.check_strided(&rows, &cols, data.len(), ld)?;
        let started = std::time::Instant::now();
        // An injected failure writes the first half of the elements, as a write cut short.
        let outcome = fault::check(fault::Op::Write);
        let upto = match outcome {
            fault::Outcome::Proceed => h * w,
            _ => h * w / 2,
        };
        for (jj, j) in cols.clone().enumerate() {
            let at = self.offset(rows.start, j);
            let keep = upto.saturating_sub(jj * h).min(h);
            let column = &data[jj * ld..jj * ld + keep];
            self.file
                .write_all_at(bytes(column), at)
                .map_err(|source| self.panel_error("writing", j, source))?;
            let p = j / self.panel();
            self.stale[p] = true;
        }
        match outcome {
            fault::Outcome::Proceed => {}
            fault::Outcome::Fail => {
                return Err(self.panel_error("writing", cols.start, fault::error(fault::Op::Write)))
            }
            fault::Outcome::Abort => std::process::abort(),
        }
        self.io.write_elems += (h * w) as u64;
        self.seconds.1 += started.elapsed().as_secs_f64();
        Ok(())
    }

    fn panel_error(&self, what: &'static str, col: usize, source: std::io::Error) -> OocError {
        OocError::Panel {
            path: self.path.clone(),
            panel: col / self.panel(),
            what,
            source: Some(source),
        }
    }

    /// Panel `p`'s checksum, from the file's bytes.
    fn panel_checksum(&mut self, p: usize) -> Result<u64, OocError> {
        let c = self.panel_cols(p);
        let len = c.len() * self.shape().0;
        let mut buf = vec![0u8; len * std::mem::size_of::<T>()];
        let at = self.offset(0, c.start);
        self.file
            .read_exact_at(&mut buf, at)
            .map_err(|source| self.panel_error("checksumming", c.start, source))?;
        self.io.checksum_read_elems += len as u64;
        Ok(checksum(&buf))
    }

    /// Recomputes the checksums of the panels written since the last sync and makes the file
    /// durable: the data, then the checksum table, each `fsync`ed.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the file (a full disk, a failed `fsync`).
    pub fn sync(&mut self) -> Result<(), OocError> {
        let mut table = Vec::new();
        for p in 0..self.panels() {
            if self.stale[p] {
                let sum = self.panel_checksum(p)?;
                table.push((p, sum));
            }
        }
        let io = |what: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| OocError::Io { path, what, source }
        };
        self.flush()?;
        for (p, sum) in table {
            self.file
                .write_all_at(&sum.to_le_bytes(), (HEADER_BYTES + 8 * p) as u64)
                .map_err(io("writing the checksums of", &self.path))?;
            self.stale[p] = false;
        }
        let started = std::time::Instant::now();
        let synced = fault::gate(fault::Op::Sync).and_then(|()| self.file.sync_data());
        self.sync_seconds += started.elapsed().as_secs_f64();
        synced.map_err(io("syncing the checksums of", &self.path))
    }

    /// Makes the data written so far durable (`fsync`), leaving the checksums for
    /// [`DiskMatrix::sync`]: the commit point of a resumable run's steps.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the file.
    pub fn flush(&mut self) -> Result<(), OocError> {
        let started = std::time::Instant::now();
        let synced = fault::gate(fault::Op::Sync).and_then(|()| self.file.sync_data());
        self.sync_seconds += started.elapsed().as_secs_f64();
        synced.map_err(|source| OocError::Io {
            path: self.path.clone(),
            what: "syncing the data of",
            source,
        })
    }

    /// A fingerprint of the contents as of the last [`DiskMatrix::sync`]: the checksum of the
    /// header and the checksum table (what a resumed run compares with its record's).
    ///
    /// # Errors
    /// [`OocError::Io`] naming the file.
    pub fn fingerprint(&self) -> Result<u64, OocError> {
        let mut b = vec![0u8; HEADER_BYTES + 8 * self.panels()];
        self.file
            .read_exact_at(&mut b, 0)
            .map_err(|source| OocError::Io {
                path: self.path.clone(),
                what: "reading the checksums of",
                source,
            })?;
        Ok(checksum(&b))
    }

    /// Renames the file to `to`, durably (the folder synced after), the matrix staying open.
    ///
    /// # Errors
    /// [`OocError::Io`] naming the file.
    pub fn rename(&mut self, to: impl AsRef<Path>) -> Result<(), OocError> {
        let to = to.as_ref().to_path_buf();
        std::fs::rename(&self.path, &to).map_err(|source| OocError::Io {
            path: self.path.clone(),
            what: "renaming",
            source,
        })?;
        self.path = to;
        sync_dir(&self.path)
    }

    /// A handle to `fsync` the file's data from another thread.
    pub(crate) fn sync_handle(&self) -> Result<SyncHandle, OocError> {
        let file = self.file.try_clone().map_err(|source| OocError::Io {
            path: self.path.clone(),
            what: "opening again",
            source,
        })?;
        Ok(SyncHandle {
            file,
            path: self.path.clone(),
        })
    }

    /// Marks every panel's checksum out of date, to be recomputed by the next
    /// [`DiskMatrix::sync`]: for a file another process was writing when it stopped.
    pub fn forget_checksums(&mut self) {
        self.stale.iter_mut().for_each(|s| *s = true);
    }

    /// Checks every panel against its checksum (panels written since the last
    /// [`DiskMatrix::sync`] have none yet and are skipped).
    ///
    /// # Errors
    /// [`OocError::Panel`] naming the file and the first panel whose bytes do not match.
    pub fn verify(&mut self) -> Result<(), OocError> {
        for p in 0..self.panels() {
            if self.stale[p] {
                continue;
            }
            let mut stored = [0u8; 8];
            self.file
                .read_exact_at(&mut stored, (HEADER_BYTES + 8 * p) as u64)
                .map_err(|source| OocError::Io {
                    path: self.path.clone(),
                    what: "reading the checksums of",
                    source,
                })?;
            if self.panel_checksum(p)? != u64::from_le_bytes(stored) {
                return Err(OocError::Panel {
                    path: self.path.clone(),
                    panel: p,
                    what: "checking (checksum mismatch: the panel is corrupted)",
                    source: None,
                });
            }
        }
        Ok(())
    }
}
