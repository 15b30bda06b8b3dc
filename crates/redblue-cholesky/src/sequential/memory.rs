//! The simulated two-level memory (seed 002 §3.1): slow memory holding the matrix in one or
//! more layouts, a fast memory of `M` words, explicit loads, stores and evictions that count
//! words and messages, and the arithmetic kernels, which only touch resident data.
//!
//! Fast memory is tracked as a list of resident rectangles (an algorithm holds a handful at a
//! time), so a transfer costs the simulator time in proportion to its messages, not its words;
//! the values, when carried, live in a dense `n × n` scratch indexed by global `(i, j)`.

use super::storage::{Rect, Span, Storage};
use super::{IoCounts, SimError};

/// Which slow-memory copy of the matrix a transfer reads or writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlowArrayId(usize);

/// One copy of the matrix in slow memory.
struct SlowArray {
    storage: Storage,
    /// The values, column-major whatever the layout (the layout only decides addresses).
    values: Option<Vec<f64>>,
}

/// A slow memory holding `n × n` matrices in given layouts and a fast memory of
/// `fast_capacity` words, with the counts of what moved between them.
///
/// Every transfer is of a rectangle of elements of one slow-memory array. [`load`] makes a
/// rectangle resident (it must not overlap a resident one: moving an element twice is an
/// algorithm bug) and fails if the resident words would exceed the capacity; [`store`] writes
/// back part of a resident rectangle; [`evict`] drops a resident rectangle at no cost. Loads
/// and stores both count their words and their messages (maximal runs of consecutive
/// addresses in the array's layout, each split into messages of at most `fast_capacity`
/// words).
///
/// [`load`]: TwoLevelMemory::load
/// [`store`]: TwoLevelMemory::store
/// [`evict`]: TwoLevelMemory::evict
pub struct TwoLevelMemory {
    order: usize,
    fast_capacity: usize,
    slow_arrays: Vec<SlowArray>,
    fast_resident: Vec<Rect>,
    fast_words: usize,
    /// The fast copies of the resident values (NaN elsewhere), when values are carried.
    fast_values: Option<Vec<f64>>,
    counts: IoCounts,
}

impl TwoLevelMemory {
    /// A counting-only memory (no values, no arithmetic) with one slow array in `storage`.
    ///
    /// # Errors
    /// [`SimError::InvalidParameter`] for a bad layout or a zero capacity.
    pub fn counting(
        order: usize,
        fast_capacity: usize,
        storage: Storage,
    ) -> Result<(TwoLevelMemory, SlowArrayId), SimError> {
        storage.validate().map_err(SimError::InvalidParameter)?;
        if fast_capacity == 0 {
            return Err(SimError::InvalidParameter(
                "the fast memory must hold at least one word".into(),
            ));
        }
        let mem = TwoLevelMemory {
            order,
            fast_capacity,
            slow_arrays: vec![SlowArray {
                storage,
                values: None,
            }],
            fast_resident: Vec::new(),
            fast_words: 0,
            fast_values: None,
            counts: IoCounts::default(),
        };
        Ok((mem, SlowArrayId(0)))
    }

    /// A memory carrying values: one slow array in `storage` holding `a` (column-major,
    /// `n × n`), and arithmetic in the kernels.
    ///
    /// # Errors
    /// [`SimError::InvalidParameter`] for a bad layout or a zero capacity;
    /// [`SimError::ValuesLength`] if `a.len() != n²`.
    pub fn with_values(
        order: usize,
        fast_capacity: usize,
        storage: Storage,
        a: &[f64],
    ) -> Result<(TwoLevelMemory, SlowArrayId), SimError> {
        let expected = order * order;
        if a.len() != expected {
            return Err(SimError::ValuesLength {
                expected,
                found: a.len(),
            });
        }
        let (mut mem, id) = TwoLevelMemory::counting(order, fast_capacity, storage)?;
        mem.slow_arrays[0].values = Some(a.to_vec());
        mem.fast_values = Some(vec![f64::NAN; expected]);
        Ok((mem, id))
    }

    /// Adds a second slow-memory copy of the matrix in `storage` (zeros when values are
    /// carried), for a conversion of layout.
    ///
    /// # Errors
    /// [`SimError::InvalidParameter`] for a bad layout.
    pub fn add_array(&mut self, storage: Storage) -> Result<SlowArrayId, SimError> {
        storage.validate().map_err(SimError::InvalidParameter)?;
        let values = self.fast_values.as_ref().map(|v| vec![0.0; v.len()]);
        self.slow_arrays.push(SlowArray { storage, values });
        Ok(SlowArrayId(self.slow_arrays.len() - 1))
    }

    /// The order `n` of the matrix.
    pub fn order(&self) -> usize {
        self.order
    }

    /// The fast-memory capacity `M` in words.
    pub fn fast_capacity(&self) -> usize {
        self.fast_capacity
    }

    /// What moved so far.
    pub fn counts(&self) -> IoCounts {
        self.counts
    }

    /// Words resident in fast memory now.
    pub fn fast_words(&self) -> usize {
        self.fast_words
    }

    /// The values of a slow-memory array (column-major), when values are carried.
    pub fn slow_values(&self, array: SlowArrayId) -> Option<&[f64]> {
        self.slow_arrays[array.0].values.as_deref()
    }

    /// The layout of a slow-memory array.
    pub fn storage(&self, array: SlowArrayId) -> Storage {
        self.slow_arrays[array.0].storage
    }

    fn check_in_matrix(&self, rect: Rect) -> Result<(), SimError> {
        if rect.rows.end > self.order || rect.cols.end > self.order {
            return Err(SimError::AlgorithmBug(format!(
                "rectangle {rect} is outside the {n} × {n} matrix",
                n = self.order
            )));
        }
        Ok(())
    }

    fn count_transfer(&mut self, array: SlowArrayId, rect: Rect) {
        let storage = self.slow_arrays[array.0].storage;
        self.counts.words += rect.words() as u64;
        self.counts.messages += storage.messages(self.order, rect, self.fast_capacity);
    }

    /// Reads `rect` of slow array `array` into fast memory.
    ///
    /// # Errors
    /// [`SimError::FastMemoryOverflow`] if it does not fit beside what is resident;
    /// [`SimError::AlgorithmBug`] if part of it is already resident or it leaves the matrix.
    pub fn load(&mut self, array: SlowArrayId, rect: Rect) -> Result<(), SimError> {
        if rect.is_empty() {
            return Ok(());
        }
        self.check_in_matrix(rect)?;
        if let Some(held) = self.fast_resident.iter().find(|held| held.overlaps(rect)) {
            return Err(SimError::AlgorithmBug(format!(
                "loading {rect}, which overlaps the resident {held}"
            )));
        }
        let resident = self.fast_words + rect.words();
        if resident > self.fast_capacity {
            return Err(SimError::FastMemoryOverflow {
                resident: self.fast_words,
                requested: rect.words(),
                capacity: self.fast_capacity,
            });
        }
        self.fast_words = resident;
        self.counts.peak_fast_words = self.counts.peak_fast_words.max(resident as u64);
        self.fast_resident.push(rect);
        self.count_transfer(array, rect);
        let n = self.order;
        if let (Some(fast), Some(slow)) = (
            self.fast_values.as_mut(),
            self.slow_arrays[array.0].values.as_ref(),
        ) {
            for j in rect.cols.start..rect.cols.end {
                let col = j * n;
                fast[col + rect.rows.start..col + rect.rows.end]
                    .copy_from_slice(&slow[col + rect.rows.start..col + rect.rows.end]);
            }
        }
        Ok(())
    }

    /// Writes `rect`, which must lie inside one resident rectangle, to slow array `array`
    /// (it stays resident).
    ///
    /// # Errors
    /// [`SimError::AlgorithmBug`] if it is not resident.
    pub fn store(&mut self, array: SlowArrayId, rect: Rect) -> Result<(), SimError> {
        if rect.is_empty() {
            return Ok(());
        }
        self.require_resident(rect, "store")?;
        self.count_transfer(array, rect);
        let n = self.order;
        if let (Some(fast), Some(slow)) = (
            self.fast_values.as_ref(),
            self.slow_arrays[array.0].values.as_mut(),
        ) {
            for j in rect.cols.start..rect.cols.end {
                let col = j * n;
                slow[col + rect.rows.start..col + rect.rows.end]
                    .copy_from_slice(&fast[col + rect.rows.start..col + rect.rows.end]);
            }
        }
        Ok(())
    }

    /// Drops the resident rectangle `rect` (exactly as loaded) from fast memory, at no cost.
    ///
    /// # Errors
    /// [`SimError::AlgorithmBug`] if `rect` is not a resident rectangle.
    pub fn evict(&mut self, rect: Rect) -> Result<(), SimError> {
        if rect.is_empty() {
            return Ok(());
        }
        let Some(pos) = self.fast_resident.iter().position(|held| *held == rect) else {
            return Err(SimError::AlgorithmBug(format!(
                "evicting {rect}, which was not loaded as one rectangle"
            )));
        };
        self.fast_resident.swap_remove(pos);
        self.fast_words -= rect.words();
        let n = self.order;
        if let Some(fast) = self.fast_values.as_mut() {
            for j in rect.cols.start..rect.cols.end {
                fast[j * n + rect.rows.start..j * n + rect.rows.end].fill(f64::NAN);
            }
        }
        Ok(())
    }

    /// Stores `rect` to `array` and evicts it.
    ///
    /// # Errors
    /// As [`store`](Self::store) and [`evict`](Self::evict).
    pub fn store_and_evict(&mut self, array: SlowArrayId, rect: Rect) -> Result<(), SimError> {
        self.store(array, rect)?;
        self.evict(rect)
    }

    fn require_resident(&self, rect: Rect, what: &str) -> Result<(), SimError> {
        if rect.is_empty() || self.fast_resident.iter().any(|held| held.contains(rect)) {
            Ok(())
        } else {
            Err(SimError::AlgorithmBug(format!(
                "{what} uses {rect}, which is not inside one resident rectangle"
            )))
        }
    }

    /// Cholesky factorisation of the resident panel `rows × cols` whose top square is the
    /// diagonal block `cols × cols` (`rows.start == cols.start`): the lower triangle of the
    /// square becomes `L11`, the rows below `L21 = A21·L11⁻ᵀ`.
    ///
    /// # Errors
    /// [`SimError::NotPositiveDefinite`] at a non-positive pivot; [`SimError::AlgorithmBug`]
    /// if the panel is not resident or not of that shape.
    pub fn factor_panel(&mut self, panel: Rect) -> Result<(), SimError> {
        let (rows, cols) = (panel.rows, panel.cols);
        if rows.start != cols.start || rows.end < cols.end {
            return Err(SimError::AlgorithmBug(format!(
                "factor_panel needs a panel under its diagonal block, not {panel}"
            )));
        }
        self.require_resident(panel, "factor_panel")?;
        let (s, below) = (cols.len() as u64, (rows.len() - cols.len()) as u64);
        // Column j of the block: 2j flops per element for the updates and one sqrt or division.
        self.counts.flops += (0..s).map(|j| (s - j) * (2 * j + 1)).sum::<u64>() + below * s * s;
        let n = self.order;
        let Some(a) = self.fast_values.as_mut() else {
            return Ok(());
        };
        for j in cols.start..cols.end {
            for k in cols.start..j {
                let ljk = a[j + k * n];
                for i in j..rows.end {
                    a[i + j * n] -= a[i + k * n] * ljk;
                }
            }
            let pivot = a[j + j * n];
            if pivot.is_nan() || pivot <= 0.0 {
                return Err(SimError::NotPositiveDefinite { column: j });
            }
            let ljj = pivot.sqrt();
            a[j + j * n] = ljj;
            for i in j + 1..rows.end {
                a[i + j * n] /= ljj;
            }
        }
        Ok(())
    }

    /// Triangular solve on resident data: `A[rows, cols] ← A[rows, cols]·L⁻ᵀ` with `L` the
    /// lower triangle of the diagonal block `cols × cols` (rows entirely below it).
    ///
    /// # Errors
    /// [`SimError::AlgorithmBug`] if an operand is not resident or the rows are not below.
    pub fn solve_right_lower_transposed(&mut self, rows: Span, cols: Span) -> Result<(), SimError> {
        if rows.start < cols.end && !rows.is_empty() {
            return Err(SimError::AlgorithmBug(format!(
                "triangular solve of rows {rows} not below the diagonal block {cols}"
            )));
        }
        self.require_resident(Rect::new(rows, cols), "trsm")?;
        self.require_resident(Rect::diagonal(cols), "trsm")?;
        let (m, s) = (rows.len() as u64, cols.len() as u64);
        self.counts.flops += m * s * s;
        let n = self.order;
        let Some(a) = self.fast_values.as_mut() else {
            return Ok(());
        };
        for j in cols.start..cols.end {
            for k in cols.start..j {
                let ljk = a[j + k * n];
                for i in rows.start..rows.end {
                    a[i + j * n] -= a[i + k * n] * ljk;
                }
            }
            let ljj = a[j + j * n];
            for i in rows.start..rows.end {
                a[i + j * n] /= ljj;
            }
        }
        Ok(())
    }

    /// The Schur-complement update on resident data, lower part only:
    /// `A[i, c] −= Σ_{k ∈ inner} A[i, k]·A[c, k]` for `i ∈ rows`, `c ∈ cols`, `i ≥ c` (a GEMM when
    /// the rows lie below the columns, a SYRK when `rows == cols`, a column update when `cols`
    /// is one column). The inner columns lie left of `cols`.
    ///
    /// # Errors
    /// [`SimError::AlgorithmBug`] if an operand is not resident or the inner columns overlap.
    pub fn update_lower(&mut self, rows: Span, cols: Span, inner: Span) -> Result<(), SimError> {
        if rows.is_empty() || cols.is_empty() || inner.is_empty() {
            return Ok(());
        }
        if inner.end > cols.start {
            return Err(SimError::AlgorithmBug(format!(
                "update of columns {cols} by columns {inner} not left of them"
            )));
        }
        self.require_resident(Rect::new(rows, cols), "update")?;
        self.require_resident(Rect::new(rows, inner), "update")?;
        self.require_resident(Rect::new(cols, inner), "update")?;
        let pairs: u64 = (cols.start..cols.end)
            .map(|c| rows.end.saturating_sub(rows.start.max(c)) as u64)
            .sum();
        self.counts.flops += 2 * inner.len() as u64 * pairs;
        let n = self.order;
        let Some(a) = self.fast_values.as_mut() else {
            return Ok(());
        };
        for c in cols.start..cols.end {
            for k in inner.start..inner.end {
                let lck = a[c + k * n];
                for i in rows.start.max(c)..rows.end {
                    a[i + c * n] -= a[i + k * n] * lck;
                }
            }
        }
        Ok(())
    }

    /// Checks that fast memory is empty (an algorithm leaves nothing behind).
    ///
    /// # Errors
    /// [`SimError::AlgorithmBug`] naming what is still resident.
    pub fn require_empty(&self) -> Result<(), SimError> {
        match self.fast_resident.first() {
            None => Ok(()),
            Some(held) => Err(SimError::AlgorithmBug(format!(
                "{held} is still resident at the end ({} rectangles)",
                self.fast_resident.len()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transfers_count_words_and_runs() {
        let (mut mem, a) = TwoLevelMemory::counting(8, 20, Storage::ColMajor).unwrap();
        let block = Rect::new(Span::new(4, 8), Span::new(0, 4));
        mem.load(a, block).unwrap();
        assert_eq!(mem.counts().words, 16);
        assert_eq!(mem.counts().messages, 4);
        mem.store_and_evict(a, block).unwrap();
        assert_eq!(mem.counts().words, 32);
        assert_eq!(mem.counts().messages, 8);
        assert_eq!(mem.fast_words(), 0);
        assert_eq!(mem.counts().peak_fast_words, 16);
    }

    #[test]
    fn overflow_and_misuse_are_errors() {
        let (mut mem, a) = TwoLevelMemory::counting(8, 10, Storage::Morton).unwrap();
        let col = Rect::column(Span::new(0, 8), 0);
        mem.load(a, col).unwrap();
        let next = Rect::column(Span::new(0, 8), 1);
        assert!(matches!(
            mem.load(a, next),
            Err(SimError::FastMemoryOverflow {
                resident: 8,
                requested: 8,
                capacity: 10
            })
        ));
        assert!(matches!(mem.load(a, col), Err(SimError::AlgorithmBug(_))));
        assert!(matches!(mem.evict(next), Err(SimError::AlgorithmBug(_))));
        assert!(matches!(mem.store(a, next), Err(SimError::AlgorithmBug(_))));
        assert!(matches!(
            mem.update_lower(Span::new(0, 8), Span::one(1), Span::one(0)),
            Err(SimError::AlgorithmBug(_))
        ));
        assert!(mem.require_empty().is_err());
        mem.evict(col).unwrap();
        assert!(mem.require_empty().is_ok());
    }

    #[test]
    fn values_travel_between_arrays() {
        let n = 4;
        let a: Vec<f64> = (0..n * n).map(|x| x as f64).collect();
        let (mut mem, src) = TwoLevelMemory::with_values(n, 16, Storage::ColMajor, &a).unwrap();
        let dst = mem.add_array(Storage::Morton).unwrap();
        let all = Rect::diagonal(Span::new(0, n));
        mem.load(src, all).unwrap();
        mem.store_and_evict(dst, all).unwrap();
        assert_eq!(mem.slow_values(dst), Some(&a[..]));
        // Column-major: whole columns are one run; Morton: an aligned block is one run.
        assert_eq!(mem.counts().messages, 2);
    }
}
