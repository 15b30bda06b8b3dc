//! NumPy `.npy` files in and out of a [`DiskMatrix`]: two-dimensional arrays of `<f4`, `<f8`,
//! `<c8` or `<c16`, in either order (`fortran_order` true or false), a panel at a time so that
//! the matrix never has to fit in memory. Written files are version 1.0, Fortran order.

use crate::disk::{bytes, bytes_mut};
use crate::{DiskMatrix, OocError};
use redblue_core::Scalar;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// NumPy's `descr` of `T`.
fn descr<T: Scalar>() -> &'static str {
    match (T::IS_COMPLEX, std::mem::size_of::<T>()) {
        (false, 4) => "<f4",
        (false, _) => "<f8",
        (true, 8) => "<c8",
        (true, _) => "<c16",
    }
}

/// An array's header: its element type, order and shape, and where the data start.
struct NpyHeader {
    descr: String,
    fortran: bool,
    shape: (usize, usize),
    data_offset: u64,
}

fn io_err(path: &Path, what: &'static str) -> impl FnOnce(std::io::Error) -> OocError {
    let path = path.to_path_buf();
    move |source| OocError::Io { path, what, source }
}

fn read_header(path: &Path, file: &mut File) -> Result<NpyHeader, OocError> {
    let bad = |why: &str| OocError::Format {
        path: path.to_path_buf(),
        why: format!("not a two-dimensional .npy array: {why}"),
    };
    let mut start = [0u8; 10];
    file.read_exact(&mut start)
        .map_err(io_err(path, "reading"))?;
    if &start[..6] != b"\x93NUMPY" {
        return Err(bad("bad magic"));
    }
    let (len, prefix) = match start[6] {
        1 => (usize::from(u16::from_le_bytes([start[8], start[9]])), 10),
        2 | 3 => {
            let mut more = [0u8; 2];
            file.read_exact(&mut more)
                .map_err(io_err(path, "reading"))?;
            (
                u32::from_le_bytes([start[8], start[9], more[0], more[1]]) as usize,
                12,
            )
        }
        v => return Err(bad(&format!("format version {v}"))),
    };
    let mut text = vec![0u8; len];
    file.read_exact(&mut text)
        .map_err(io_err(path, "reading"))?;
    let text = String::from_utf8_lossy(&text);
    let field = |key: &str| -> Option<String> {
        let at = text.find(&format!("'{key}'"))? + key.len() + 2;
        let rest = text[at..].trim_start().strip_prefix(':')?.trim_start();
        Some(rest.to_string())
    };
    let descr = field("descr")
        .and_then(|r| {
            r.strip_prefix('\'')
                .and_then(|r| r.split('\'').next())
                .map(str::to_string)
        })
        .ok_or_else(|| bad("no descr"))?;
    let fortran = field("fortran_order")
        .ok_or_else(|| bad("no fortran_order"))?
        .starts_with("True");
    let shape_text = field("shape").ok_or_else(|| bad("no shape"))?;
    let inside = shape_text
        .strip_prefix('(')
        .and_then(|r| r.split(')').next())
        .ok_or_else(|| bad("no shape"))?;
    let dims: Vec<usize> = inside
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|_| bad("a shape that is not numbers"))
        })
        .collect::<Result<_, _>>()?;
    let [rows, cols] = dims[..] else {
        return Err(bad(&format!("{} dimensions", dims.len())));
    };
    Ok(NpyHeader {
        descr,
        fortran,
        shape: (rows, cols),
        data_offset: (prefix + len) as u64,
    })
}

/// The shape `(rows, columns)` of the two-dimensional array in the `.npy` file `npy` (its
/// header only is read).
///
/// # Errors
/// [`OocError::Format`] naming the file if it is not a two-dimensional `.npy` array;
/// [`OocError::Io`].
pub fn shape(npy: impl AsRef<Path>) -> Result<(usize, usize), OocError> {
    let npy = npy.as_ref();
    let mut file = File::open(npy).map_err(io_err(npy, "opening"))?;
    Ok(read_header(npy, &mut file)?.shape)
}

impl<T: Scalar> DiskMatrix<T> {
    /// A new matrix file at `path` holding the array of the `.npy` file `npy`, in panels of
    /// `panel` columns, copied a panel at a time (a C-order array a row piece at a time).
    ///
    /// # Errors
    /// [`OocError::Format`] naming `npy` if it is not a two-dimensional array of `T`, or is
    /// shorter than its shape says; as [`DiskMatrix::create`].
    pub fn from_npy(
        npy: impl AsRef<Path>,
        path: impl AsRef<Path>,
        panel: usize,
    ) -> Result<Self, OocError> {
        let npy = npy.as_ref();
        let mut file = File::open(npy).map_err(io_err(npy, "opening"))?;
        let h = read_header(npy, &mut file)?;
        if h.descr != descr::<T>() {
            return Err(OocError::Format {
                path: npy.to_path_buf(),
                why: format!("holds {}, read as {}", h.descr, descr::<T>()),
            });
        }
        let (rows, cols) = h.shape;
        let size = std::mem::size_of::<T>() as u64;
        let len = file
            .metadata()
            .map_err(io_err(npy, "reading the length of"))?
            .len();
        let want = (rows as u64 * cols as u64)
            .saturating_mul(size)
            .saturating_add(h.data_offset);
        if len < want {
            return Err(OocError::Format {
                path: npy.to_path_buf(),
                why: format!("truncated: {len} bytes of {want}"),
            });
        }
        let mut m = Self::create(path, rows, cols, panel)?;
        for p in 0..m.panels() {
            let c = m.panel_cols(p);
            let mut data = vec![T::zero(); rows * c.len()];
            if h.fortran {
                let at = h.data_offset + (c.start * rows) as u64 * size;
                file.read_exact_at(bytes_mut(&mut data), at)
                    .map_err(io_err(npy, "reading"))?;
            } else {
                let mut row = vec![T::zero(); c.len()];
                for i in 0..rows {
                    let at = h.data_offset + (i * cols + c.start) as u64 * size;
                    file.read_exact_at(bytes_mut(&mut row), at)
                        .map_err(io_err(npy, "reading"))?;
                    for (jj, &v) in row.iter().enumerate() {
                        data[i + jj * rows] = v;
                    }
                }
            }
            m.write(0..rows, c, &data)?;
        }
        m.sync()?;
        m.reset_io();
        Ok(m)
    }

    /// Writes the matrix to the `.npy` file `npy` (version 1.0, Fortran order), a panel at a
    /// time; the reads are counted as [`DiskMatrix::read`]'s.
    ///
    /// # Errors
    /// [`OocError::Io`] naming either file.
    pub fn to_npy(&mut self, npy: impl AsRef<Path>) -> Result<(), OocError> {
        let npy = npy.as_ref();
        let (rows, cols) = self.shape();
        let shape = format!("({rows}, {cols})");
        let mut out = create_with_header(npy, descr::<T>(), &shape)?;
        for p in 0..self.panels() {
            let c = self.panel_cols(p);
            let mut data = vec![T::zero(); rows * c.len()];
            self.read(0..rows, c, &mut data)?;
            out.write_all(bytes(&data))
                .map_err(io_err(npy, "writing"))?;
        }
        out.sync_all().map_err(io_err(npy, "syncing"))
    }
}

/// A new `.npy` file (version 1.0, Fortran order) with its header written.
fn create_with_header(npy: &Path, descr: &str, shape: &str) -> Result<File, OocError> {
    let mut text = format!("{{'descr': '{descr}', 'fortran_order': True, 'shape': {shape}, }}");
    while (10 + text.len() + 1) % 64 != 0 {
        text.push(' ');
    }
    text.push('\n');
    let mut out = File::create(npy).map_err(io_err(npy, "creating"))?;
    let mut head = b"\x93NUMPY\x01\x00".to_vec();
    head.extend_from_slice(&(text.len() as u16).to_le_bytes());
    head.extend_from_slice(text.as_bytes());
    out.write_all(&head).map_err(io_err(npy, "writing"))?;
    Ok(out)
}

/// Writes `indices` to the `.npy` file `npy` as a one-dimensional `int64` array (a
/// factorisation's pivots), synced.
///
/// # Errors
/// [`OocError::Io`] naming the file.
pub fn write_indices(npy: impl AsRef<Path>, indices: &[usize]) -> Result<(), OocError> {
    let npy = npy.as_ref();
    let mut out = create_with_header(npy, "<i8", &format!("({},)", indices.len()))?;
    let data: Vec<u8> = indices
        .iter()
        .flat_map(|&i| (i as i64).to_le_bytes())
        .collect();
    out.write_all(&data).map_err(io_err(npy, "writing"))?;
    out.sync_all().map_err(io_err(npy, "syncing"))
}
