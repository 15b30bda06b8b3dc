//! Storage layouts of the matrix in slow memory (seed 002 §3.1.1): pure index maths, the address
//! of every element and the contiguous runs a rectangle of elements occupies.
//!
//! A layout maps element `(i, j)` of the `n × n` matrix to an address in slow memory. A transfer
//! of a set of elements costs one message per maximal run of consecutive addresses, and a run
//! longer than the largest message (`M` words) costs `⌈len/M⌉` messages. [`Storage::runs`]
//! walks the runs of a rectangle in increasing address order without visiting its elements one
//! by one (column-major: one run per column; blocked: one per block or per column of a partial
//! block; Morton: one per maximal aligned quadrant), so counting costs far less than moving.

use std::fmt;
use std::str::FromStr;

/// A half-open range of row or column indices `start..end` (`Copy`, unlike `Range`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// First index.
    pub start: usize,
    /// One past the last index.
    pub end: usize,
}

impl Span {
    /// The indices `start..end`.
    ///
    /// # Panics
    /// If `end < start`.
    pub fn new(start: usize, end: usize) -> Span {
        assert!(start <= end, "span {start}..{end} is reversed");
        Span { start, end }
    }

    /// The single index `i`.
    pub fn one(i: usize) -> Span {
        Span {
            start: i,
            end: i + 1,
        }
    }

    /// How many indices.
    pub fn len(self) -> usize {
        self.end - self.start
    }

    /// Whether the span holds no index.
    pub fn is_empty(self) -> bool {
        self.end == self.start
    }

    /// The first `h` indices and the rest.
    pub fn split_at(self, h: usize) -> (Span, Span) {
        let mid = self.start + h.min(self.len());
        (Span::new(self.start, mid), Span::new(mid, self.end))
    }

    /// The split of the recursive algorithms: the first part is the largest power of two below
    /// the length, so that every piece of a recursion started at 0 is an aligned block of the
    /// Morton layout (for a power-of-two length it is the half).
    pub fn split_recursive(self) -> (Span, Span) {
        self.split_at(recursive_split_point(self.len()))
    }

    /// Whether `other` lies inside `self`.
    pub fn contains_span(self, other: Span) -> bool {
        other.is_empty() || (self.start <= other.start && other.end <= self.end)
    }

    /// Whether the two spans share an index.
    pub fn overlaps(self, other: Span) -> bool {
        self.start.max(other.start) < self.end.min(other.end)
    }

    /// The indices in both.
    pub fn intersect(self, other: Span) -> Span {
        let start = self.start.max(other.start);
        let end = self.end.min(other.end).max(start);
        Span { start, end }
    }
}

impl fmt::Display for Span {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}..{}", self.start, self.end)
    }
}

/// Where the recursive algorithms split a dimension of length `len ≥ 2`: the largest power of
/// two strictly below `len` (the half of a power of two).
pub fn recursive_split_point(len: usize) -> usize {
    if len < 2 {
        return len;
    }
    len.next_power_of_two() / 2
}

/// A rectangle of matrix elements: rows × columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Rect {
    /// Its rows.
    pub rows: Span,
    /// Its columns.
    pub cols: Span,
}

impl Rect {
    /// The elements `rows × cols`.
    pub fn new(rows: Span, cols: Span) -> Rect {
        Rect { rows, cols }
    }

    /// The square diagonal block `span × span` (both triangles: a block-contiguous layout
    /// stores the whole square in one run, its lower triangle in one run per column).
    pub fn diagonal(span: Span) -> Rect {
        Rect {
            rows: span,
            cols: span,
        }
    }

    /// Rows `rows` of column `col`.
    pub fn column(rows: Span, col: usize) -> Rect {
        Rect {
            rows,
            cols: Span::one(col),
        }
    }

    /// How many elements.
    pub fn words(self) -> usize {
        self.rows.len() * self.cols.len()
    }

    /// Whether it holds no element.
    pub fn is_empty(self) -> bool {
        self.rows.is_empty() || self.cols.is_empty()
    }

    /// Whether `other` lies inside `self`.
    pub fn contains(self, other: Rect) -> bool {
        other.is_empty()
            || (self.rows.contains_span(other.rows) && self.cols.contains_span(other.cols))
    }

    /// Whether the two rectangles share an element.
    pub fn overlaps(self, other: Rect) -> bool {
        self.rows.overlaps(other.rows) && self.cols.overlaps(other.cols)
    }
}

impl fmt::Display for Rect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}]", self.rows, self.cols)
    }
}

/// How the `n × n` matrix is laid out in slow memory (full storage; the algorithms only touch
/// the lower triangle and the diagonal blocks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Storage {
    /// Column-major with leading dimension `n`: `(i, j)` at `i + j·n`. A column is one run; a
    /// `b × b` block is `b` runs.
    ColMajor,
    /// Block-contiguous ("blocked"): `b × b` blocks, each contiguous and column-major inside,
    /// stored in column-major block order. When `b` does not divide `n` the last block row and
    /// column are padded to full blocks (the padding is never touched, so it breaks runs).
    Blocked {
        /// The block size (`> 0`).
        b: usize,
    },
    /// Block-recursive (Morton / Z-order / bit-interleaved): the four quadrants stored
    /// contiguously, in the order top-left, bottom-left, top-right, bottom-right, recursively
    /// down to single elements; the row bit is the lower bit of each interleaved pair. When `n`
    /// is not a power of two the index space is padded to the next power of two (padding never
    /// touched). Every aligned power-of-two block is one run, and so is its left half.
    Morton,
}

impl Storage {
    /// Checks the parameters: a block size must be positive.
    ///
    /// # Errors
    /// A message naming the bad parameter.
    pub fn validate(self) -> Result<(), String> {
        match self {
            Storage::Blocked { b: 0 } => {
                Err("the block size of a blocked layout must be > 0".into())
            }
            _ => Ok(()),
        }
    }

    /// The address of element `(i, j)` of an `n × n` matrix.
    pub fn address(self, n: usize, i: usize, j: usize) -> usize {
        match self {
            Storage::ColMajor => i + j * n,
            Storage::Blocked { b } => {
                let blocks_per_col = n.div_ceil(b);
                ((j / b) * blocks_per_col + i / b) * b * b + (i % b) + (j % b) * b
            }
            Storage::Morton => morton_index(i, j),
        }
    }

    /// Calls `run(start, len)` for every maximal run of consecutive addresses that the
    /// rectangle `rect` of an `n × n` matrix occupies, in increasing address order (adjacent
    /// pieces are merged before they are reported).
    pub fn runs(self, n: usize, rect: Rect, run: &mut dyn FnMut(usize, usize)) {
        let mut merger = RunMerger { current: None, run };
        if !rect.is_empty() {
            match self {
                Storage::ColMajor => col_major_pieces(n, rect, &mut merger),
                Storage::Blocked { b } => blocked_pieces(n, b, rect, &mut merger),
                Storage::Morton => {
                    let side = n.next_power_of_two();
                    morton_pieces(rect, 0, 0, side, 0, &mut merger);
                }
            }
        }
        merger.finish();
    }

    /// The number of messages a transfer of `rect` costs when one message carries at most
    /// `max_message_words` consecutive words: `Σ_runs ⌈len/max⌉`.
    ///
    /// # Panics
    /// If `max_message_words == 0`.
    pub fn messages(self, n: usize, rect: Rect, max_message_words: usize) -> u64 {
        assert!(max_message_words > 0, "a message carries at least one word");
        let mut messages = 0u64;
        self.runs(n, rect, &mut |_, len| {
            messages += len.div_ceil(max_message_words) as u64;
        });
        messages
    }
}

impl fmt::Display for Storage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Storage::ColMajor => write!(f, "col-major"),
            Storage::Blocked { b } => write!(f, "blocked:{b}"),
            Storage::Morton => write!(f, "morton"),
        }
    }
}

impl FromStr for Storage {
    type Err = String;

    /// `col-major`, `blocked:<b>` (b > 0) or `morton`.
    fn from_str(s: &str) -> Result<Storage, String> {
        match s {
            "col-major" | "colmajor" | "column-major" => Ok(Storage::ColMajor),
            "morton" | "block-recursive" => Ok(Storage::Morton),
            _ => {
                let b = s
                    .strip_prefix("blocked:")
                    .ok_or_else(|| {
                        format!("unknown storage {s:?}: expected col-major, blocked:<b> or morton")
                    })?
                    .parse::<usize>()
                    .map_err(|e| format!("bad block size in {s:?}: {e}"))?;
                let storage = Storage::Blocked { b };
                storage.validate()?;
                Ok(storage)
            }
        }
    }
}

/// Interleaves the bits of `i` (even positions) and `j` (odd positions).
pub fn morton_index(i: usize, j: usize) -> usize {
    spread_bits(i) | (spread_bits(j) << 1)
}

/// Moves bit `k` of `x` to bit `2k` (x below 2³²).
fn spread_bits(x: usize) -> usize {
    let mut x = x as u64 & 0xFFFF_FFFF;
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    x = (x | (x << 1)) & 0x5555_5555_5555_5555;
    x as usize
}

/// Collects pieces given in increasing address order and reports maximal runs.
struct RunMerger<'a> {
    current: Option<(usize, usize)>,
    run: &'a mut dyn FnMut(usize, usize),
}

impl RunMerger<'_> {
    fn piece(&mut self, start: usize, len: usize) {
        if len == 0 {
            return;
        }
        match self.current {
            Some((s, l)) if s + l == start => self.current = Some((s, l + len)),
            Some((s, l)) => {
                debug_assert!(s + l < start, "pieces out of address order");
                (self.run)(s, l);
                self.current = Some((start, len));
            }
            None => self.current = Some((start, len)),
        }
    }

    fn finish(&mut self) {
        if let Some((s, l)) = self.current.take() {
            (self.run)(s, l);
        }
    }
}

/// Column-major: one piece per column (they merge only when the rows are whole columns).
fn col_major_pieces(n: usize, rect: Rect, out: &mut RunMerger<'_>) {
    if rect.rows.len() == n {
        out.piece(rect.cols.start * n, n * rect.cols.len());
        return;
    }
    for j in rect.cols.start..rect.cols.end {
        out.piece(rect.rows.start + j * n, rect.rows.len());
    }
}

/// Blocked: blocks in address order; a full-height part of a block is one piece, otherwise one
/// piece per column of it.
fn blocked_pieces(n: usize, b: usize, rect: Rect, out: &mut RunMerger<'_>) {
    let blocks_per_col = n.div_ceil(b);
    let (first_bj, last_bj) = (rect.cols.start / b, (rect.cols.end - 1) / b);
    let (first_bi, last_bi) = (rect.rows.start / b, (rect.rows.end - 1) / b);
    for bj in first_bj..=last_bj {
        let cols = rect.cols.intersect(Span::new(bj * b, bj * b + b));
        let (d0, d1) = (cols.start - bj * b, cols.end - bj * b);
        for bi in first_bi..=last_bi {
            let rows = rect.rows.intersect(Span::new(bi * b, bi * b + b));
            let (a0, a1) = (rows.start - bi * b, rows.end - bi * b);
            let base = (bj * blocks_per_col + bi) * b * b;
            if a0 == 0 && a1 == b {
                out.piece(base + d0 * b, (d1 - d0) * b);
            } else {
                for d in d0..d1 {
                    out.piece(base + d * b + a0, a1 - a0);
                }
            }
        }
    }
}

/// Morton: descends the quadrant tree in address order; a quadrant inside the rectangle is one
/// piece.
fn morton_pieces(
    rect: Rect,
    row0: usize,
    col0: usize,
    side: usize,
    base: usize,
    out: &mut RunMerger<'_>,
) {
    let node = Rect::new(Span::new(row0, row0 + side), Span::new(col0, col0 + side));
    if !node.overlaps(rect) {
        return;
    }
    if rect.contains(node) {
        out.piece(base, side * side);
        return;
    }
    let h = side / 2;
    let quarter = h * h;
    morton_pieces(rect, row0, col0, h, base, out);
    morton_pieces(rect, row0 + h, col0, h, base + quarter, out);
    morton_pieces(rect, row0, col0 + h, h, base + 2 * quarter, out);
    morton_pieces(rect, row0 + h, col0 + h, h, base + 3 * quarter, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs counted the slow way: every address, sorted.
    fn brute_runs(storage: Storage, n: usize, rect: Rect) -> Vec<(usize, usize)> {
        let mut addrs: Vec<usize> = (rect.rows.start..rect.rows.end)
            .flat_map(|i| (rect.cols.start..rect.cols.end).map(move |j| (i, j)))
            .map(|(i, j)| storage.address(n, i, j))
            .collect();
        addrs.sort_unstable();
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for a in addrs {
            match runs.last_mut() {
                Some((s, l)) if *s + *l == a => *l += 1,
                _ => runs.push((a, 1)),
            }
        }
        runs
    }

    fn fast_runs(storage: Storage, n: usize, rect: Rect) -> Vec<(usize, usize)> {
        let mut runs = Vec::new();
        storage.runs(n, rect, &mut |s, l| runs.push((s, l)));
        runs
    }

    #[test]
    fn addresses_are_a_bijection_into_the_padded_space() {
        for storage in [
            Storage::ColMajor,
            Storage::Blocked { b: 3 },
            Storage::Blocked { b: 4 },
            Storage::Morton,
        ] {
            for n in [1, 5, 8, 11] {
                let mut seen = std::collections::HashSet::new();
                for i in 0..n {
                    for j in 0..n {
                        assert!(seen.insert(storage.address(n, i, j)), "{storage} n={n}");
                    }
                }
            }
        }
    }

    #[test]
    fn runs_match_a_sort_of_every_address() {
        for storage in [
            Storage::ColMajor,
            Storage::Blocked { b: 1 },
            Storage::Blocked { b: 3 },
            Storage::Blocked { b: 4 },
            Storage::Morton,
        ] {
            for n in [1, 4, 7, 8, 13] {
                for r0 in 0..n {
                    for r1 in r0 + 1..=n {
                        for (c0, c1) in [(0, 1), (0, n), (r0.min(n - 1), n), (1.min(n - 1), n)] {
                            let rect = Rect::new(Span::new(r0, r1), Span::new(c0, c1));
                            assert_eq!(
                                fast_runs(storage, n, rect),
                                brute_runs(storage, n, rect),
                                "{storage} n={n} {rect}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn aligned_blocks_cost_one_message_in_block_contiguous_layouts() {
        let n = 64;
        for (r, c, s) in [(0, 0, 16), (16, 0, 16), (32, 16, 16), (48, 48, 8)] {
            let rect = Rect::new(Span::new(r, r + s), Span::new(c, c + s));
            assert_eq!(Storage::ColMajor.messages(n, rect, 1 << 20), s as u64);
            assert_eq!(Storage::Morton.messages(n, rect, 1 << 20), 1);
            assert_eq!(Storage::Blocked { b: s }.messages(n, rect, 1 << 20), 1);
        }
        // The left half of an aligned Morton block is one run; the top half is two.
        let left = Rect::new(Span::new(0, 16), Span::new(0, 8));
        let top = Rect::new(Span::new(0, 8), Span::new(0, 16));
        assert_eq!(Storage::Morton.messages(n, left, 1 << 20), 1);
        assert_eq!(Storage::Morton.messages(n, top, 1 << 20), 2);
        // A run longer than a message is split.
        let whole = Rect::new(Span::new(0, n), Span::new(0, 2));
        assert_eq!(Storage::ColMajor.messages(n, whole, 50), 3);
    }

    #[test]
    fn storage_names_round_trip() {
        for storage in [
            Storage::ColMajor,
            Storage::Blocked { b: 12 },
            Storage::Morton,
        ] {
            assert_eq!(storage.to_string().parse::<Storage>(), Ok(storage));
        }
        assert!("blocked:0".parse::<Storage>().is_err());
        assert!("blocked".parse::<Storage>().is_err());
        assert!("rowmajor".parse::<Storage>().is_err());
    }

    #[test]
    fn recursive_splits_are_powers_of_two() {
        assert_eq!(recursive_split_point(2), 1);
        assert_eq!(recursive_split_point(8), 4);
        assert_eq!(recursive_split_point(9), 8);
        assert_eq!(recursive_split_point(12), 8);
        assert_eq!(recursive_split_point(1), 1);
    }
}
