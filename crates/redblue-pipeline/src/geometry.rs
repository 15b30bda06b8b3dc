//! Where everything lives in the factorisation: the `[Px, Py, c]` grid of ranks, the `v × v`
//! tiles of each layer (2D block-cyclic, the same on every layer), the 1D pieces of the panels,
//! and one layer's tiles as a local array ([`Tiles`]). Pure functions of the shape `M × N`, `v`
//! and the grid.

use crate::storage::Storage;
use crate::TileGrid;
use redblue_dist::{BlockCyclic, BlockCyclicSubmatrix, DistError, GridOrder};
use std::ops::Range;

/// The grid, the tile width and the matrix's shape: every placement decision of the
/// algorithm. A factorisation of an `M × N` matrix factors its first `min(M, N)` columns
/// ([`Geometry::factored`]), in steps of `v`; the rows below them (`M > N`) are only updated
/// and solved, the columns right of them (`M < N`) only updated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// The rows `M` (`N` for a square matrix).
    pub m: usize,
    /// The columns `N`; the order of a square matrix.
    pub n: usize,
    /// The tile width `v`.
    pub v: usize,
    /// Ranks along the rows of a layer.
    pub px: usize,
    /// Ranks along the columns of a layer.
    pub py: usize,
    /// Layers.
    pub c: usize,
}

impl Geometry {
    /// The geometry of an `n × n` factorisation in `v × v` tiles on `grid`.
    pub fn new(n: usize, v: usize, grid: TileGrid) -> Self {
        Self::rect(n, n, v, grid)
    }

    /// The grid of ranks.
    pub fn grid(&self) -> TileGrid {
        TileGrid {
            px: self.px,
            py: self.py,
            c: self.c,
        }
    }

    /// The geometry of an `m × n` factorisation in `v × v` tiles on `grid`.
    pub fn rect(m: usize, n: usize, v: usize, grid: TileGrid) -> Self {
        Geometry {
            m,
            n,
            v,
            px: grid.px,
            py: grid.py,
            c: grid.c,
        }
    }

    /// Ranks the grid uses; ranks beyond them are idle.
    pub fn ranks(&self) -> usize {
        self.px * self.py * self.c
    }

    /// The rank at grid position `(x, y, z)`: `x + Px·(y + Py·z)` (layer 0 is ranks
    /// `0..Px·Py`, numbered like a column-major ScaLAPACK grid).
    pub fn rank(&self, x: usize, y: usize, z: usize) -> usize {
        x + self.px * (y + self.py * z)
    }

    /// Grid position of `rank`, if it is in the grid.
    pub fn coords(&self, rank: usize) -> Option<(usize, usize, usize)> {
        (rank < self.ranks()).then(|| {
            (
                rank % self.px,
                (rank / self.px) % self.py,
                rank / (self.px * self.py),
            )
        })
    }

    /// The grid row holding global row `g`.
    pub fn row_px(&self, g: usize) -> usize {
        cyclic_owner(g, self.v, self.px)
    }

    /// The grid column holding global column `g`.
    pub fn col_py(&self, g: usize) -> usize {
        cyclic_owner(g, self.v, self.py)
    }

    /// Whether the matrix is square.
    pub fn is_square(&self) -> bool {
        self.m == self.n
    }

    /// The columns the steps factor, `min(M, N)`: as many as there are pivots.
    pub fn factored(&self) -> usize {
        self.m.min(self.n)
    }

    /// Number of steps, `⌈min(M, N) / v⌉`.
    pub fn steps(&self) -> usize {
        self.factored().div_ceil(self.v)
    }

    /// The columns step `t` factors: `t·v .. min(min(M, N), (t + 1)·v)`.
    pub fn panel(&self, t: usize) -> Range<usize> {
        t * self.v..((t + 1) * self.v).min(self.factored())
    }

    /// The grid column and layer that hold step `t`'s panel after its reduction: the panel's
    /// own grid column `t mod Py`, and the layers in turn every `Py` steps, so that every
    /// (grid column, layer) pair takes one step in `Py·c` (`t mod c` would leave pairs out when
    /// `Py` and `c` share a factor).
    pub fn panel_owner(&self, t: usize) -> (usize, usize) {
        (t % self.py, (t / self.py) % self.c)
    }

    /// The grid row whose layer-0 ranks solve step `t`'s diagonal block in the triangular
    /// solves: `t mod Px`.
    pub fn solver_row(&self, t: usize) -> usize {
        t % self.px
    }

    /// The rows of `list` (in its order) that grid row `x` holds.
    pub fn rows_of(&self, list: &[usize], x: usize) -> Vec<usize> {
        if self.px == 1 {
            return if x == 0 { list.to_vec() } else { Vec::new() };
        }
        list.iter()
            .copied()
            .filter(|&r| self.row_px(r) == x)
            .collect()
    }

    /// How many rows of `list` each grid row holds.
    pub fn row_counts(&self, list: &[usize]) -> Vec<usize> {
        if self.px == 1 {
            return vec![list.len()];
        }
        let mut counts = vec![0; self.px];
        for &r in list {
            counts[self.row_px(r)] += 1;
        }
        counts
    }

    /// Global indices (ascending) of the rows grid row `x` holds.
    pub fn owned_rows(&self, x: usize) -> Vec<usize> {
        (0..self.m)
            .filter(|g| (g / self.v) % self.px == x)
            .collect()
    }

    /// Global indices (ascending) of the columns grid column `y` holds.
    pub fn owned_cols(&self, y: usize) -> Vec<usize> {
        (0..self.n)
            .filter(|g| (g / self.v) % self.py == y)
            .collect()
    }

    /// The layout of one layer: `M × N` in `v × v` tiles over the `Px × Py` grid of ranks
    /// `0..Px·Py` (column-major), on a communicator of `nranks` ranks.
    pub fn layer_layout(&self) -> Result<BlockCyclic, DistError> {
        Ok(
            BlockCyclic::new(self.m, self.n, self.v, self.v, self.px, self.py)?
                .with_order(GridOrder::ColMajor),
        )
    }
}

/// The one-layer grid and tile width whose layer layout ([`Geometry::layer_layout`]) puts every
/// element of `layout` (a ScaLAPACK array's submatrix) on the rank that holds it there: the
/// array's own process grid and blocks, when they are square, the submatrix starts at the
/// array's origin, its first block is on process `(0, 0)` and the processes are numbered
/// column-major as the layer's are (or form one row or one column). `transposed`: the same for
/// the transposed matrix (the grid transposed, numbered row-major) — Cholesky's upper triangle,
/// factored as the lower triangle of `Aᴴ`. `None` where the layout is not such a grid, or its
/// grid has more than `p` ranks.
///
/// A factorisation planned on it moves the matrix only within each rank, in and out.
pub fn grid_of_layout(
    layout: &BlockCyclicSubmatrix,
    transposed: bool,
    p: usize,
) -> Option<(TileGrid, usize)> {
    let parent = layout.parent();
    let ((mb, nb), (rows, cols)) = (parent.block_size(), parent.grid_shape());
    let (px, py, order) = if transposed {
        (cols, rows, GridOrder::RowMajor)
    } else {
        (rows, cols, GridOrder::ColMajor)
    };
    let (ri, ci) = layout.ranges();
    let here = mb == nb
        && ri.start == 0
        && ci.start == 0
        && parent.source() == (0, 0)
        && (rows == 1 || cols == 1 || parent.order() == order)
        && px * py <= p;
    here.then_some((TileGrid { px, py, c: 1 }, nb))
}

/// Where some global rows sit in each local column of [`Tiles`] ([`Tiles::positions_of`]).
/// Columns that share a row order share the answer, which is kept until a column of another
/// order is asked for: ask in ascending column order and each order is worked out once.
#[derive(Clone, Debug)]
pub struct RowPositions<'t> {
    orders: &'t [Vec<usize>],
    frozen: &'t [usize],
    row_pos: &'t [usize],
    rows: &'t [usize],
    /// Scratch: global row → position in a frozen order.
    pos: Vec<usize>,
    /// Whose positions `list` holds: a frozen order (`Some(Some(o))`) or the current one.
    cached: Option<Option<usize>>,
    list: Vec<usize>,
}

impl RowPositions<'_> {
    /// The local positions of the rows in local column `k`.
    pub fn column(&mut self, k: usize) -> &[usize] {
        let order = self.frozen.get(k).copied();
        if self.cached != Some(order) {
            self.list.clear();
            match order {
                Some(o) => {
                    self.pos.resize(self.row_pos.len(), usize::MAX);
                    mark_positions(&mut self.pos, &self.orders[o]);
                    self.list.extend(self.rows.iter().map(|&r| self.pos[r]));
                }
                None => self.list.extend(self.rows.iter().map(|&r| self.row_pos[r])),
            }
            self.cached = Some(order);
        }
        &self.list
    }
}

/// Part `i` of `len` items cut into `parts` contiguous near-equal parts (the first `len % parts`
/// one longer).
pub fn part(len: usize, parts: usize, i: usize) -> Range<usize> {
    let (q, r) = (len / parts, len % parts);
    let start = i * q + i.min(r);
    start..start + q + usize::from(i < r)
}

/// Writes `pos[g] = i` for the `i`-th entry `g` of `list`.
pub fn mark_positions(pos: &mut [usize], list: &[usize]) {
    for (i, &g) in list.iter().enumerate() {
        pos[g] = i;
    }
}

/// Copies `vals[k]` to `dst[at(rows[k])]` for every `k`, a run of consecutive positions at a
/// time (rows of one tile are neighbours in a local array and in a step's buffers).
pub fn scatter_runs<T: Copy>(
    dst: &mut [T],
    rows: &[usize],
    at: impl Fn(usize) -> usize,
    vals: &[T],
) {
    each_run(rows, &at, |k, start, len| {
        dst[start..start + len].copy_from_slice(&vals[k..k + len])
    });
}

/// Adds `vals[k]` to `dst[at(rows[k])]` for every `k`, a run of consecutive positions at a
/// time.
pub fn add_runs<T: Copy + std::ops::AddAssign>(
    dst: &mut [T],
    rows: &[usize],
    at: impl Fn(usize) -> usize,
    vals: &[T],
) {
    each_run(rows, &at, |k, start, len| {
        for (d, &v) in dst[start..start + len].iter_mut().zip(&vals[k..k + len]) {
            *d += v;
        }
    });
}

/// Copies `src[at(rows[k])]` to `out[k]` for every `k`, a run of consecutive positions at a
/// time.
pub fn gather_runs<T: Copy>(src: &[T], rows: &[usize], at: impl Fn(usize) -> usize, out: &mut [T]) {
    each_run(rows, &at, |k, start, len| {
        out[k..k + len].copy_from_slice(&src[start..start + len])
    });
}

/// Calls `f(k, at(rows[k]), len)` for every maximal run of `rows[k..k + len]` whose positions
/// are consecutive.
fn each_run(rows: &[usize], at: &impl Fn(usize) -> usize, mut f: impl FnMut(usize, usize, usize)) {
    let mut k = 0;
    while k < rows.len() {
        let start = at(rows[k]);
        let mut len = 1;
        while k + len < rows.len() && at(rows[k + len]) == start + len {
            len += 1;
        }
        f(k, start, len);
        k += len;
    }
}

/// A span of consecutive positions both where it is read and where it is written
/// ([`spans_between`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// The first position read.
    pub src: usize,
    /// The first position written.
    pub dst: usize,
    /// How many.
    pub len: usize,
}

/// The maximal spans of `rows` whose positions are consecutive both at `src(row)` and at
/// `dst(row)`: a copy of the same rows of many columns finds them once ([`copy_spans`]).
pub fn spans_between(
    rows: &[usize],
    src: impl Fn(usize) -> usize,
    dst: impl Fn(usize) -> usize,
) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    for &r in rows {
        let (s, d) = (src(r), dst(r));
        match spans.last_mut() {
            Some(span) if span.src + span.len == s && span.dst + span.len == d => span.len += 1,
            _ => spans.push(Span {
                src: s,
                dst: d,
                len: 1,
            }),
        }
    }
    spans
}

/// Copies `src[span.src..][..span.len]` to `dst[span.dst..][..span.len]` for every span.
pub fn copy_spans<T: Copy>(dst: &mut [T], src: &[T], spans: &[Span]) {
    for span in spans {
        dst[span.dst..span.dst + span.len].copy_from_slice(&src[span.src..span.src + span.len]);
    }
}

/// One layer's tiles on one rank: the ScaLAPACK local array of [`Geometry::layer_layout`]
/// (column-major, rows and columns ascending in global order), in a buffer of their own or in
/// the caller's array ([`Storage`]).
pub struct Tiles<'a, T> {
    /// The global rows held, in local order.
    pub rows: Vec<usize>,
    /// The global columns held, ascending.
    pub cols: Vec<usize>,
    row_pos: Vec<usize>,
    /// The local position of every global column (`usize::MAX` if not held).
    pub col_pos: Vec<usize>,
    /// The local array, column-major with leading dimension `rows.len()`.
    pub data: Storage<'a, T>,
    /// Local columns `..frozen.len()` no longer follow row swaps: column `k` keeps the row
    /// order `orders[frozen[k]]` it had when it was frozen.
    frozen: Vec<usize>,
    orders: Vec<Vec<usize>>,
}

impl<'a, T: Copy> Tiles<'a, T> {
    /// The tiles of grid position `(x, y)` holding `data` (its local array).
    pub fn new(geom: &Geometry, x: usize, y: usize, data: impl Into<Storage<'a, T>>) -> Self {
        Self::from_parts(
            geom.owned_rows(x),
            geom.owned_cols(y),
            (geom.m, geom.n),
            data,
        )
    }

    /// The local array of the given global rows × columns (ascending) of a matrix of `shape`.
    pub fn from_parts(
        rows: Vec<usize>,
        cols: Vec<usize>,
        shape: (usize, usize),
        data: impl Into<Storage<'a, T>>,
    ) -> Self {
        let data = data.into();
        let mut row_pos = vec![usize::MAX; shape.0];
        let mut col_pos = vec![usize::MAX; shape.1];
        mark_positions(&mut row_pos, &rows);
        mark_positions(&mut col_pos, &cols);
        debug_assert_eq!(data.len(), rows.len() * cols.len());
        Tiles {
            rows,
            cols,
            row_pos,
            col_pos,
            data,
            frozen: Vec::new(),
            orders: Vec::new(),
        }
    }

    /// No tiles (a rank outside the grid).
    pub fn empty(geom: &Geometry) -> Self {
        Self::from_parts(Vec::new(), Vec::new(), (geom.m, geom.n), Storage::default())
    }

    /// Leading dimension of the local array.
    pub fn ld(&self) -> usize {
        self.rows.len()
    }

    /// Local position of global row `i` (it must be held here).
    pub fn row_position(&self, i: usize) -> usize {
        self.row_pos[i]
    }

    /// Position of global `(i, j)` in the local array (it must be held here).
    pub fn index(&self, i: usize, j: usize) -> usize {
        self.row_pos[i] + self.col_pos[j] * self.rows.len()
    }

    /// Global element `(i, j)`, which must be held here.
    pub fn get(&self, i: usize, j: usize) -> T {
        self.data[self.index(i, j)]
    }

    /// Global element `(i, j)`, writable; it must be held here.
    pub fn at(&mut self, i: usize, j: usize) -> &mut T {
        let k = self.index(i, j);
        &mut self.data[k]
    }

    /// Exchanges the data of local rows `a` and `b` for every pair of `swaps` in turn, column by
    /// column, in every column not frozen. The factorisation keeps each rank's active rows at
    /// the end of its local array so that the update is one `gemm` on a contiguous block.
    fn swap_data(&mut self, swaps: &[(usize, usize)]) {
        let ld = self.rows.len();
        if swaps.is_empty() || ld == 0 {
            return;
        }
        // A few columns at a time, each swap across them: more independent accesses in
        // flight than column by column (1.6× faster measured on 128 swaps in 4096 rows).
        let mut groups = self.data[self.frozen.len() * ld..].chunks_exact_mut(ld * SWAP_GROUP);
        for group in &mut groups {
            for &(a, b) in swaps {
                for c in 0..SWAP_GROUP {
                    group.swap(c * ld + a, c * ld + b);
                }
            }
        }
        for col in groups.into_remainder().chunks_exact_mut(ld) {
            for &(a, b) in swaps {
                col.swap(a, b);
            }
        }
    }

    /// Moves the held global `rows` to local positions `at, at + 1, …` in their order, by
    /// swaps with the rows there (rows at `at..` only), and returns the position after them.
    pub fn move_rows_to(&mut self, rows: &[usize], at: usize) -> usize {
        let mut swaps = Vec::with_capacity(rows.len());
        for (k, &r) in rows.iter().enumerate() {
            let (a, b) = (self.row_pos[r], at + k);
            // The indices follow each swap at once, the data in one pass afterwards.
            self.rows.swap(a, b);
            self.row_pos[self.rows[a]] = a;
            self.row_pos[self.rows[b]] = b;
            if a != b {
                swaps.push((a, b));
            }
        }
        self.swap_data(&swaps);
        at + rows.len()
    }

    /// Freezes the local columns left of global column `j` (no later access reads them until
    /// [`Tiles::sort_rows`]): row swaps skip them from now on.
    pub fn freeze_before(&mut self, j: usize) {
        let upto = self.cols.partition_point(|&g| g < j);
        if upto > self.frozen.len() {
            // One order kept per distinct order (without pivoting, one in all).
            if self.orders.last() != Some(&self.rows) {
                self.orders.push(self.rows.clone());
            }
            self.frozen.resize(upto, self.orders.len() - 1);
        }
    }

    /// Whether every local column holds its rows in ascending global order (the local array
    /// of the layout): the rows in order, and every frozen column's too.
    pub fn rows_sorted(&self) -> bool {
        self.rows.is_sorted() && self.orders.iter().all(|o| o.is_sorted())
    }

    /// Where the global `rows` (held here) sit in each local column, whatever order the
    /// column keeps (frozen columns theirs), asked column by column
    /// ([`RowPositions::column`]).
    pub fn positions_of<'t>(&'t self, rows: &'t [usize]) -> RowPositions<'t> {
        RowPositions {
            orders: &self.orders,
            frozen: &self.frozen,
            row_pos: &self.row_pos,
            rows,
            pos: Vec::new(),
            cached: None,
            list: Vec::new(),
        }
    }

    /// Puts every local column's rows back in ascending global order (the local array of the
    /// layout), frozen columns from the order they were frozen in.
    pub fn sort_rows(&mut self) {
        let ld = self.rows.len();
        if ld == 0 {
            return;
        }
        let sorted_order = |rows: &[usize]| {
            let mut order: Vec<usize> = (0..ld).collect();
            order.sort_unstable_by_key(|&k| rows[k]);
            order
        };
        // Each order with whether it moves any row (checked once, not once per column).
        let with_moves = |order: Vec<usize>| {
            let moves = order.iter().enumerate().any(|(a, &b)| a != b);
            (order, moves)
        };
        let orders: Vec<_> = self
            .orders
            .iter()
            .map(|r| with_moves(sorted_order(r)))
            .collect();
        let current = with_moves(sorted_order(&self.rows));
        let mut col = self.data[..ld.min(self.data.len())].to_vec();
        for (k, chunk) in self.data.chunks_exact_mut(ld).enumerate() {
            let (order, moves) = self.frozen.get(k).map_or(&current, |&o| &orders[o]);
            if !moves {
                continue;
            }
            for (dst, &src) in col.iter_mut().zip(order) {
                *dst = chunk[src];
            }
            chunk.copy_from_slice(&col);
        }
        self.rows.sort_unstable();
        mark_positions(&mut self.row_pos, &self.rows);
        self.frozen.clear();
        self.orders.clear();
    }

    /// The local column from `at` (`ld` elements), writable, beside the map of global rows to
    /// local positions.
    pub fn column_and_rows_mut(&mut self, at: usize, ld: usize) -> (&mut [T], &[usize]) {
        (&mut self.data[at..at + ld], &self.row_pos)
    }

    /// Copies the elements of global rows `rows` (held here) of global column `j` (held here)
    /// into `out`, a run of neighbouring local rows at a time.
    pub fn gather_rows(&self, j: usize, rows: &[usize], out: &mut [T]) {
        let (column, row_pos) = self.column_and_rows(j);
        gather_runs(column, rows, |r| row_pos[r], out);
    }

    /// Global column `j` (held here), `ld()` elements, and the local position of every global
    /// row held (what [`Tiles::gather_rows`] reads by).
    pub fn column_and_rows(&self, j: usize) -> (&[T], &[usize]) {
        let ld = self.ld();
        (&self.data[self.col_pos[j] * ld..][..ld], &self.row_pos)
    }

    /// Subtracts `vals` from the elements of global rows `rows` (held here) of global column
    /// `j` (held here), a run of neighbouring local rows at a time.
    pub fn sub_rows(&mut self, j: usize, rows: &[usize], vals: &[T])
    where
        T: std::ops::SubAssign,
    {
        let ld = self.ld();
        let column = &mut self.data[self.col_pos[j] * ld..][..ld];
        each_run(rows, &|r| self.row_pos[r], |k, start, len| {
            for (d, &v) in column[start..start + len].iter_mut().zip(&vals[k..k + len]) {
                *d -= v;
            }
        });
    }

    /// Writes `vals` into the elements of global column `j` (held here) in those of global
    /// rows `rows` held here (the others are skipped), a run of neighbouring local rows at a
    /// time.
    pub fn set_held_rows(&mut self, j: usize, rows: &[usize], vals: &[T]) {
        let ld = self.ld();
        let column = &mut self.data[self.col_pos[j] * ld..][..ld];
        let row_pos = &self.row_pos;
        let mut k = 0;
        while k < rows.len() {
            let start = row_pos[rows[k]];
            if start == usize::MAX {
                k += 1;
                continue;
            }
            let mut len = 1;
            while k + len < rows.len() && row_pos[rows[k + len]] == start + len {
                len += 1;
            }
            column[start..start + len].copy_from_slice(&vals[k..k + len]);
            k += len;
        }
    }

    /// Local position of global column `j`.
    pub fn col_pos(&self, j: usize) -> usize {
        self.col_pos[j]
    }

    /// Local position of global row `i`.
    pub fn row_pos(&self, i: usize) -> usize {
        self.row_pos[i]
    }

    /// The local columns at or right of global column `j`: a suffix of the local array.
    pub fn cols_from(&self, j: usize) -> Range<usize> {
        self.cols.partition_point(|&g| g < j)..self.cols.len()
    }
}

/// Columns whose row swaps are made together ([`Tiles::move_rows_to`]).
const SWAP_GROUP: usize = 8;

/// A list of rows split by the grid row holding them, each part in the list's order: made in
/// two passes over the list, so that what a step asks of it — a grid row's rows
/// ([`RowsByGridRow::of`]), their counts — costs no further pass.
#[derive(Clone, Debug)]
pub struct RowsByGridRow<'a> {
    list: &'a [usize],
    /// The rows grouped by grid row (empty on one grid row: the list is the only part).
    grouped: Vec<usize>,
    /// Where each grid row's part begins in `grouped`, then the end (`Px + 1` entries).
    starts: Vec<usize>,
}

impl<'a> RowsByGridRow<'a> {
    /// Splits `list` over `g`'s grid rows.
    pub fn new(g: &Geometry, list: &'a [usize]) -> Self {
        if g.px == 1 {
            return RowsByGridRow {
                list,
                grouped: Vec::new(),
                starts: vec![0, list.len()],
            };
        }
        let mut starts = vec![0; g.px + 1];
        for_runs(g, list, |x, run| starts[x + 1] += run.len());
        for x in 0..g.px {
            starts[x + 1] += starts[x];
        }
        let mut at = starts.clone();
        let mut grouped = vec![0; list.len()];
        for_runs(g, list, |x, run| {
            grouped[at[x]..][..run.len()].copy_from_slice(run);
            at[x] += run.len();
        });
        RowsByGridRow {
            list,
            grouped,
            starts,
        }
    }

    /// The whole list.
    pub fn list(&self) -> &'a [usize] {
        self.list
    }

    /// The rows of the list grid row `x` holds, in the list's order.
    pub fn of(&self, x: usize) -> &[usize] {
        if self.grouped.is_empty() {
            // One grid row, or an empty list.
            return if x == 0 { self.list } else { &[] };
        }
        &self.grouped[self.starts[x]..self.starts[x + 1]]
    }

    /// How many rows of the list grid row `x` holds.
    pub fn count(&self, x: usize) -> usize {
        self.starts[x + 1] - self.starts[x]
    }
}

/// `f(x, run)` for the runs of `list` (in order) of consecutive rows in one tile, `x` the
/// grid row holding them: a list of whole tiles' rows costs a grid row per tile.
fn for_runs(g: &Geometry, list: &[usize], mut f: impl FnMut(usize, &[usize])) {
    let mut i = 0;
    while i < list.len() {
        let r = list[i];
        let tile_end = (r / g.v + 1) * g.v;
        let mut j = i + 1;
        while j < list.len() && list[j] == list[j - 1] + 1 && list[j] < tile_end {
            j += 1;
        }
        f(g.row_px(r), &list[i..j]);
        i = j;
    }
}

/// Which of `p` cyclic owners holds index `g` in blocks of `v`: `(g / v) % p`, without a
/// division where `v` or `p` is a power of two or `p` is 1 (the solves ask it of every row
/// of every step).
fn cyclic_owner(g: usize, v: usize, p: usize) -> usize {
    if p == 1 {
        return 0;
    }
    let block = if v.is_power_of_two() {
        g >> v.trailing_zeros()
    } else {
        g / v
    };
    if p.is_power_of_two() {
        block & (p - 1)
    } else {
        block % p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_break_where_either_side_stops_being_consecutive() {
        // Rows 10..14 at source positions 0..4 and destinations 5, 6, 7, 20: the destination
        // breaks after three; row 30 lies apart at both.
        let rows = [10, 11, 12, 13, 30];
        let src = |r: usize| if r == 30 { 9 } else { r - 10 };
        let dst = |r: usize| match r {
            13 => 20,
            30 => 2,
            _ => r - 5,
        };
        let spans = spans_between(&rows, src, dst);
        let span = |src, dst, len| Span { src, dst, len };
        assert_eq!(spans, [span(0, 5, 3), span(3, 20, 1), span(9, 2, 1)]);
        let source: Vec<f64> = (0..10).map(|x| x as f64).collect();
        let mut out = vec![-1.0; 21];
        copy_spans(&mut out, &source, &spans);
        for &r in &rows {
            assert_eq!(out[dst(r)], source[src(r)]);
        }
        assert_eq!(out.iter().filter(|&&x| x == -1.0).count(), 21 - rows.len());
        assert!(spans_between(&[], src, dst).is_empty());
    }

    #[test]
    fn a_cyclic_owner_is_the_block_index_modulo_the_owners() {
        for v in [1, 2, 3, 4, 64, 100, 192] {
            for p in [1, 2, 3, 4, 5, 8] {
                for g in 0..2000 {
                    assert_eq!(cyclic_owner(g, v, p), (g / v) % p, "{g} {v} {p}");
                }
            }
        }
        let geom = Geometry::new(40, 4, TileGrid { px: 1, py: 3, c: 1 });
        let rows: Vec<usize> = (0..40).rev().collect();
        assert_eq!(geom.rows_of(&rows, 0), rows);
        assert!(geom.rows_of(&rows, 1).is_empty());
        assert_eq!(geom.row_counts(&rows), vec![40]);
    }

    #[test]
    fn a_list_split_by_grid_row_keeps_each_rows_order() {
        // Scattered rows, and runs of consecutive rows across tiles (made a tile at a time).
        let scattered = [9, 0, 17, 4, 30, 12, 5, 41].to_vec();
        let runs: Vec<usize> = (3..20).chain(22..31).chain([40, 41, 2, 3, 47]).collect();
        for (px, rows) in [1, 2, 3, 5]
            .into_iter()
            .flat_map(|px| [(px, &scattered), (px, &runs)])
        {
            let geom = Geometry::new(48, 4, TileGrid { px, py: 2, c: 1 });
            let split = RowsByGridRow::new(&geom, rows);
            assert_eq!(split.list(), rows);
            for x in 0..px {
                assert_eq!(split.of(x), geom.rows_of(rows, x), "{px} {x}");
                assert_eq!(split.count(x), geom.row_counts(rows)[x]);
            }
            let none = RowsByGridRow::new(&geom, &[]);
            assert!((0..px).all(|x| none.of(x).is_empty() && none.count(x) == 0));
        }
    }
    use redblue_dist::Layout;

    #[test]
    fn runs_copy_what_element_by_element_copies_would() {
        let pos = [7, 8, 9, 3, 4, 0, 12, 13];
        let rows: Vec<usize> = (0..pos.len()).collect();
        let src: Vec<u32> = (0..16).map(|x| 100 + x).collect();
        let mut out = vec![0; rows.len()];
        gather_runs(&src, &rows, |r| pos[r], &mut out);
        assert_eq!(out, pos.map(|p| 100 + p as u32));
        let mut dst = vec![0; 16];
        scatter_runs(&mut dst, &rows, |r| pos[r], &out);
        for (r, &p) in pos.iter().enumerate() {
            assert_eq!(dst[p], out[r]);
        }
    }

    #[test]
    fn parts_tile_the_range() {
        for len in 0..20 {
            for parts in 1..7 {
                let mut next = 0;
                for i in 0..parts {
                    let r = part(len, parts, i);
                    assert_eq!(r.start, next);
                    next = r.end;
                }
                assert_eq!(next, len);
            }
        }
    }

    #[test]
    fn swapped_rows_keep_their_values_and_sorting_restores_the_layout() {
        let geom = Geometry::new(9, 2, TileGrid { px: 2, py: 1, c: 1 });
        let rows = geom.owned_rows(0); // 0 1 4 5 8
        let data: Vec<f64> = (0..rows.len() * 9).map(|k| k as f64).collect();
        let mut t = Tiles::new(&geom, 0, 0, data.clone());
        let before: Vec<Vec<f64>> = (0..9)
            .map(|i| {
                (0..9)
                    .map(|j| if rows.contains(&i) { t.get(i, j) } else { 0.0 })
                    .collect()
            })
            .collect();
        // rows 0 1 4 5 8: 5 to the front, then (after freezing) 8 and 1 behind it.
        assert_eq!(t.move_rows_to(&[5], 0), 1);
        t.freeze_before(2); // local columns 0 and 1 keep the order 5 1 4 0 8
        assert_eq!(t.move_rows_to(&[8, 1], 1), 3);
        assert_eq!(t.rows, [5, 8, 1, 0, 4]);
        for &i in &rows {
            for j in 2..9 {
                assert_eq!(t.get(i, j), before[i][j]);
            }
        }
        t.sort_rows();
        assert_eq!(&t.data[..], &data[..]);
        assert_eq!(t.rows, rows);
    }

    #[test]
    fn tiles_match_the_layer_layout() {
        let grid = TileGrid { px: 2, py: 3, c: 2 };
        let geom = Geometry::new(23, 4, grid);
        let layout = geom.layer_layout().unwrap();
        for x in 0..2 {
            for y in 0..3 {
                let r = geom.rank(x, y, 1);
                assert_eq!(geom.coords(r), Some((x, y, 1)));
                let len = layout.local_len(geom.rank(x, y, 0));
                let tiles = Tiles::new(&geom, x, y, vec![0.0; len]);
                for i in 0..23 {
                    for j in 0..23 {
                        let (owner, pos) = layout.to_local(i, j);
                        if owner == geom.rank(x, y, 0) {
                            assert_eq!(tiles.index(i, j), pos);
                            assert_eq!((geom.row_px(i), geom.col_py(j)), (x, y));
                        }
                    }
                }
            }
        }
        assert_eq!(geom.coords(12), None);
    }
}
