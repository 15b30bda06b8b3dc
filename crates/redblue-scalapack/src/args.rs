//! ScaLAPACK's argument conventions: descriptors (9 entries, and PBLAS's 11), the checks its
//! routines make, in its order, and its numbering of what failed (`info = -i` for argument `i`,
//! `-(100·i + j)` for entry `j` of the descriptor that is argument `i`).

use redblue_dist::numroc;

/// A grid as BLACS describes it to one process: its shape and this process's place.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlacsGrid {
    /// Process rows.
    pub nprow: usize,
    /// Process columns.
    pub npcol: usize,
    /// This process's row.
    pub myrow: usize,
    /// This process's column.
    pub mycol: usize,
}

impl BlacsGrid {
    /// The grid from `blacs_gridinfo`'s four values, or `None` for what it returns for an
    /// invalid context, or a process outside the grid (negative values).
    pub fn from_gridinfo(nprow: i32, npcol: i32, myrow: i32, mycol: i32) -> Option<Self> {
        let g = BlacsGrid {
            nprow: usize::try_from(nprow).ok().filter(|&p| p > 0)?,
            npcol: usize::try_from(npcol).ok().filter(|&p| p > 0)?,
            myrow: usize::try_from(myrow).ok()?,
            mycol: usize::try_from(mycol).ok()?,
        };
        (g.myrow < g.nprow && g.mycol < g.npcol).then_some(g)
    }

    /// This process's rank in the grid's communicator: BLACS numbers it row-major.
    pub fn rank(&self) -> usize {
        self.myrow * self.npcol + self.mycol
    }
}

/// A matrix descriptor in PBLAS's 11-entry form (`DTYPE = 2`: the first block may be smaller),
/// which the 9-entry form (`DTYPE = 1`) converts to with `imb = mb`, `inb = nb`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Descriptor {
    /// `DTYPE` as given (1 or 2; anything else is illegal).
    pub dtype: i32,
    /// The BLACS context.
    pub ctxt: i32,
    /// Global rows.
    pub m: i32,
    /// Global columns.
    pub n: i32,
    /// Rows of the first block.
    pub imb: i32,
    /// Columns of the first block.
    pub inb: i32,
    /// Rows of a block.
    pub mb: i32,
    /// Columns of a block.
    pub nb: i32,
    /// Process row of the first row (−1: replicated).
    pub rsrc: i32,
    /// Process column of the first column (−1: replicated).
    pub csrc: i32,
    /// Leading dimension of the local array.
    pub lld: i32,
}

impl Descriptor {
    /// A 9-entry descriptor (`DESCINIT`'s).
    pub fn from_9(d: &[i32; 9]) -> Self {
        Descriptor {
            dtype: d[0],
            ctxt: d[1],
            m: d[2],
            n: d[3],
            imb: d[4],
            inb: d[5],
            mb: d[4],
            nb: d[5],
            rsrc: d[6],
            csrc: d[7],
            lld: d[8],
        }
    }

    /// As PBLAS reads a descriptor: 11 entries when `d[0] = 2`, 9 when `d[0] = 1`, and only
    /// `DTYPE` and `CTXT` otherwise (`PB_CargFtoC`).
    ///
    /// # Safety
    /// `d` must point at as many readable integers as its first entry says (11 for 2, 9 for 1,
    /// 2 otherwise).
    pub unsafe fn read_pblas(d: *const i32) -> Self {
        // SAFETY: the caller's contract: the first entry is readable.
        let dtype = unsafe { *d };
        let at = |i: usize| {
            // SAFETY: `i` is below the length the first entry promises (the caller's contract).
            unsafe { *d.add(i) }
        };
        match dtype {
            2 => Descriptor {
                dtype,
                ctxt: at(1),
                m: at(2),
                n: at(3),
                imb: at(4),
                inb: at(5),
                mb: at(6),
                nb: at(7),
                rsrc: at(8),
                csrc: at(9),
                lld: at(10),
            },
            1 => {
                let mut nine = [0; 9];
                for (i, v) in nine.iter_mut().enumerate() {
                    *v = at(i);
                }
                Descriptor::from_9(&nine)
            }
            _ => Descriptor {
                dtype,
                ctxt: at(1),
                m: 0,
                n: 0,
                imb: 1,
                inb: 1,
                mb: 1,
                nb: 1,
                rsrc: 0,
                csrc: 0,
                lld: 1,
            },
        }
    }

    /// Local rows of the whole matrix on process row `myrow` (`LOCr(M_)`), with the first
    /// block of `imb` rows; all rows when replicated.
    pub fn local_rows(&self, g: &BlacsGrid) -> usize {
        local_count(self.m, self.imb, self.mb, self.rsrc, g.myrow, g.nprow)
    }

    /// Local columns of the whole matrix on process column `mycol` (`LOCc(N_)`).
    pub fn local_cols(&self, g: &BlacsGrid) -> usize {
        local_count(self.n, self.inb, self.nb, self.csrc, g.mycol, g.npcol)
    }

    /// Elements of this process's local array: `lld · LOCc(N_)` (0 when it holds no column).
    pub fn local_len(&self, g: &BlacsGrid) -> usize {
        let cols = self.local_cols(g);
        if cols == 0 {
            0
        } else {
            usize::try_from(self.lld).unwrap_or(0) * cols
        }
    }
}

/// Elements of a dimension of `n` (first block `ib`, then `b`) that process `p` of `np` holds
/// when the first block is on `src` (−1: every process holds all). Non-positive sizes give 0.
fn local_count(n: i32, ib: i32, b: i32, src: i32, p: usize, np: usize) -> usize {
    let (Ok(n), Ok(ib), Ok(b)) = (usize::try_from(n), usize::try_from(ib), usize::try_from(b))
    else {
        return 0;
    };
    if src < 0 {
        return n;
    }
    if ib == 0 || b == 0 || np == 0 {
        return 0;
    }
    let src = usize::try_from(src).unwrap_or(0) % np;
    let first = ib.min(n);
    let mine_first = if p == src { first } else { 0 };
    // The rest is an ordinary block-cyclic dimension starting on the next process.
    mine_first + numroc(n - first, b, p, (src + 1) % np, np)
}

/// Where an illegal value was, encoded so that the smallest is ScaLAPACK's answer: `100·i`
/// for argument `i`, `100·i + j` for entry `j` of the descriptor that is argument `i`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Position(pub i32);

impl Position {
    /// Argument `i`.
    pub fn arg(i: i32) -> Self {
        Position(100 * i)
    }
    /// Entry `j` (1-based) of the descriptor that is argument `i`.
    pub fn entry(i: i32, j: i32) -> Self {
        Position(100 * i + j)
    }
    /// The `info` ScaLAPACK returns for it (negative).
    pub fn info(self) -> i32 {
        if self.0 % 100 == 0 {
            -(self.0 / 100)
        } else {
            -self.0
        }
    }
}

/// The first illegal value of `errors` (the smallest position), if any.
pub fn first(errors: impl IntoIterator<Item = Option<Position>>) -> Option<Position> {
    errors.into_iter().flatten().min()
}

/// An operand as a routine receives it: `m × n` at `(ia, ja)` (1-based) of the matrix `desc`
/// describes, with the argument positions of each (for the numbering of errors).
#[derive(Clone, Copy, Debug)]
pub struct Operand {
    /// Rows of the submatrix.
    pub m: i32,
    /// Columns of the submatrix.
    pub n: i32,
    /// First row (1-based).
    pub ia: i32,
    /// First column (1-based).
    pub ja: i32,
    /// The descriptor.
    pub desc: Descriptor,
    /// Argument positions of `m`, `n` and the descriptor (`ia` and `ja` are the two before it).
    pub pos: (i32, i32, i32),
}

impl Operand {
    fn ia_pos(&self) -> Position {
        Position::arg(self.pos.2 - 2)
    }
    fn ja_pos(&self) -> Position {
        Position::arg(self.pos.2 - 1)
    }
    fn d(&self, j: i32) -> Position {
        Position::entry(self.pos.2, j)
    }

    /// ScaLAPACK's `CHK1MAT`: this process's check of a 9-entry descriptor operand.
    pub fn chk1mat(&self, g: &BlacsGrid) -> Option<Position> {
        let d = &self.desc;
        let in_grid = |v: i32, np: usize| v >= 0 && (v as i64) < np as i64;
        let first_hit = if d.dtype != 1 {
            Some(self.d(1))
        } else if self.m < 0 {
            Some(Position::arg(self.pos.0))
        } else if self.n < 0 {
            Some(Position::arg(self.pos.1))
        } else if self.ia < 1 {
            Some(self.ia_pos())
        } else if self.ja < 1 {
            Some(self.ja_pos())
        } else if d.mb < 1 {
            Some(self.d(5))
        } else if d.nb < 1 {
            Some(self.d(6))
        } else if !in_grid(d.rsrc, g.nprow) {
            Some(self.d(7))
        } else if !in_grid(d.csrc, g.npcol) {
            Some(self.d(8))
        } else if d.lld < 1 || ((d.lld as usize) < d.local_rows(g) && d.local_cols(g) > 0) {
            Some(self.d(9))
        } else {
            None
        };
        first_hit.or_else(|| self.extent_check(1))
    }

    /// The checks of the global size against the submatrix, after the entries': with an empty
    /// submatrix only the signs of `M_` and `N_`; otherwise that it fits (`CHK1MAT` numbers
    /// an overflow by `m` or `n`, PBLAS by `ia` or `ja`: `pblas` says which).
    fn extent_check(&self, pblas: i32) -> Option<Position> {
        let d = &self.desc;
        if self.m == 0 || self.n == 0 {
            return first([(d.m < 0).then(|| self.d(3)), (d.n < 0).then(|| self.d(4))]);
        }
        if d.m < 1 {
            return Some(self.d(3));
        }
        if d.n < 1 {
            return Some(self.d(4));
        }
        let over_rows = i64::from(self.ia) + i64::from(self.m) - 1 > i64::from(d.m);
        let over_cols = i64::from(self.ja) + i64::from(self.n) - 1 > i64::from(d.n);
        if pblas == 2 {
            return first([
                over_rows.then(|| self.ia_pos()),
                over_cols.then(|| self.ja_pos()),
            ]);
        }
        if self.ia > d.m {
            Some(self.ia_pos())
        } else if self.ja > d.n {
            Some(self.ja_pos())
        } else {
            first([
                over_rows.then(|| Position::arg(self.pos.0)),
                over_cols.then(|| Position::arg(self.pos.1)),
            ])
        }
    }

    /// PBLAS's `PB_Cchkmat` on an 11-entry descriptor (positions numbered in the 11-entry
    /// form whatever form was given), `ctxt` the context of the routine's first operand.
    pub fn pb_chkmat(&self, g: &BlacsGrid, ctxt: i32) -> Option<Position> {
        let d = &self.desc;
        let scalars = first([
            (self.m < 0).then(|| Position::arg(self.pos.0)),
            (self.n < 0).then(|| Position::arg(self.pos.1)),
            (self.ia < 1).then(|| self.ia_pos()),
            (self.ja < 1).then(|| self.ja_pos()),
        ]);
        if d.dtype != 1 && d.dtype != 2 {
            return first([scalars, Some(self.d(1))]);
        }
        if d.ctxt != ctxt {
            return first([scalars, Some(self.d(2))]);
        }
        let src_ok = |v: i32, np: usize| v >= -1 && (v as i64) < np as i64;
        let entries = first([
            (d.imb < 1).then(|| self.d(5)),
            (d.inb < 1).then(|| self.d(6)),
            (d.mb < 1).then(|| self.d(7)),
            (d.nb < 1).then(|| self.d(8)),
            (!src_ok(d.rsrc, g.nprow)).then(|| self.d(9)),
            (!src_ok(d.csrc, g.npcol)).then(|| self.d(10)),
        ]);
        let sizes = if self.m == 0 || self.n == 0 {
            first([
                (d.m < 0).then(|| self.d(3)),
                (d.n < 0).then(|| self.d(4)),
                (d.lld < 1).then(|| self.d(11)),
            ])
        } else {
            self.extent_check(2)
        };
        let so_far = first([scalars, entries, sizes]);
        let lld = (so_far.is_none()
            && (d.lld < 1 || ((d.lld as usize) < d.local_rows(g).max(1) && d.local_cols(g) > 0)))
            .then(|| self.d(11));
        first([so_far, lld])
    }

    /// The values ScaLAPACK's `PCHK1MAT` compares with process `(0, 0)`'s, with their
    /// positions: `m`, `n`, `ia`, `ja` and the descriptor's `DTYPE`, `M_`, `N_`, `MB_`, `NB_`,
    /// `RSRC_`, `CSRC_`.
    pub fn global_values(&self) -> [(i32, Position); 11] {
        let d = &self.desc;
        [
            (self.m, Position::arg(self.pos.0)),
            (self.n, Position::arg(self.pos.1)),
            (self.ia, self.ia_pos()),
            (self.ja, self.ja_pos()),
            (d.dtype, self.d(1)),
            (d.m, self.d(3)),
            (d.n, self.d(4)),
            (d.mb, self.d(5)),
            (d.nb, self.d(6)),
            (d.rsrc, self.d(7)),
            (d.csrc, self.d(8)),
        ]
    }

    /// Whether `ia` starts a block row and `ja` a block column.
    pub fn aligned(&self) -> (bool, bool) {
        let d = &self.desc;
        ((self.ia - 1) % d.mb == 0, (self.ja - 1) % d.nb == 0)
    }

    /// The process row holding the submatrix's first row.
    pub fn first_prow(&self, g: &BlacsGrid) -> usize {
        let d = &self.desc;
        ((self.ia - 1) / d.mb + d.rsrc).rem_euclid(g.nprow as i32) as usize
    }
}

/// A solve's operands: `A` (`n × n` at `a`'s `ia`, `ja`) and `B` (`n × nrhs` at `b`'s), with the
/// argument positions of `N`, `NRHS`, `DESCA` and `DESCB`.
pub fn solve_operands(
    n: i32,
    nrhs: i32,
    a: (i32, i32, Descriptor),
    b: (i32, i32, Descriptor),
    (n_pos, nrhs_pos, a_pos, b_pos): (i32, i32, i32, i32),
) -> [Operand; 2] {
    [
        Operand {
            m: n,
            n,
            ia: a.0,
            ja: a.1,
            desc: a.2,
            pos: (n_pos, n_pos, a_pos),
        },
        Operand {
            m: n,
            n: nrhs,
            ia: b.0,
            ja: b.1,
            desc: b.2,
            pos: (n_pos, nrhs_pos, b_pos),
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(nprow: usize, npcol: usize) -> BlacsGrid {
        BlacsGrid {
            nprow,
            npcol,
            myrow: 0,
            mycol: 0,
        }
    }

    fn operand(desc: [i32; 9]) -> Operand {
        Operand {
            m: 10,
            n: 10,
            ia: 1,
            ja: 1,
            desc: Descriptor::from_9(&desc),
            pos: (1, 2, 6),
        }
    }

    #[test]
    fn chk1mat_numbers_each_failure_as_scalapack() {
        let g = grid(2, 2);
        let ok = [1, 0, 10, 10, 2, 2, 0, 0, 6];
        assert_eq!(operand(ok).chk1mat(&g), None);
        let cases: [(usize, i32, i32); 7] = [
            (0, 3, -601),
            (4, 0, -605),
            (5, 0, -606),
            (6, 2, -607),
            (7, -1, -608),
            (8, 0, -609),
            (8, 5, -609), // below the 6 local rows
        ];
        for (entry, value, info) in cases {
            let mut d = ok;
            d[entry] = value;
            assert_eq!(
                operand(d).chk1mat(&g).map(Position::info),
                Some(info),
                "{d:?}"
            );
        }
        let mut op = operand(ok);
        op.ia = 2; // rows 2..11 of 10
        assert_eq!(op.chk1mat(&g).map(Position::info), Some(-1));
        op.ia = 0;
        assert_eq!(op.chk1mat(&g).map(Position::info), Some(-4));
        op.ia = 1;
        op.m = -1;
        assert_eq!(op.chk1mat(&g).map(Position::info), Some(-1));
    }

    #[test]
    fn pblas_numbers_descriptor_entries_in_the_eleven_entry_form() {
        let g = grid(1, 4);
        let a = |d: [i32; 9]| Operand {
            m: 1,
            n: 1,
            ia: 1,
            ja: 1,
            desc: Descriptor::from_9(&d),
            pos: (3, 5, 10),
        };
        let ok = [1, 0, 2, 2, 1, 1, 0, 0, 2];
        assert_eq!(a(ok).pb_chkmat(&g, 0), None);
        let mut bad_mb = ok;
        bad_mb[4] = -2; // MB in the 9-entry form is IMB and MB in the 11-entry one
        assert_eq!(a(bad_mb).pb_chkmat(&g, 0).map(Position::info), Some(-1005));
        let mut bad_lld = ok;
        bad_lld[8] = 1;
        assert_eq!(a(bad_lld).pb_chkmat(&g, 0).map(Position::info), Some(-1011));
        assert_eq!(a(ok).pb_chkmat(&g, 7).map(Position::info), Some(-1002));
    }

    #[test]
    fn local_counts_follow_numroc_and_a_short_first_block() {
        assert_eq!(local_count(10, 4, 4, 0, 0, 2), 6); // 4 + 2
        assert_eq!(local_count(10, 4, 4, 0, 1, 2), 4);
        assert_eq!(local_count(10, 1, 4, 1, 1, 2), 1 + 4); // first row, then 4 of 9
        assert_eq!(local_count(10, 1, 4, 1, 0, 2), 4 + 1);
        assert_eq!(local_count(10, 3, 3, -1, 1, 2), 10);
        assert_eq!(local_count(-3, 3, 3, 0, 0, 2), 0);
    }
}
