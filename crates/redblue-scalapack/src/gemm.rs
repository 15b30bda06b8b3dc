//! `p?gemm`: `sub(C) := α·op(sub(A))·op(sub(B)) + β·sub(C)` with PBLAS's checks, on redblue's
//! multiplication planned for where the operands already are (`GemmPlan::for_layouts`: on the
//! arrays seen in their owners' buffer order when that moves less).

use crate::args::{first, BlacsGrid, Descriptor, Operand, Position};
use crate::common::{agree, local_elements, op_of, submatrix, Array, OrServe, Outcome, ServeError};
use redblue_comm::Communicator;
use redblue_core::Op;
use redblue_dist::{BorrowedDistMatrix, BorrowedDistMatrixMut, DistError, Layout};
use redblue_gemm::{gemm_with, GemmError, GemmParams, GemmPlan, GemmShape};
use redblue_kernels::{KernelScalar, Par};

/// The integer and character arguments of `p?gemm`, as given.
#[derive(Clone, Copy, Debug)]
pub struct GemmArgs {
    /// `TRANSA`.
    pub transa: u8,
    /// `TRANSB`.
    pub transb: u8,
    /// `M`.
    pub m: i32,
    /// `N`.
    pub n: i32,
    /// `K`.
    pub k: i32,
    /// `IA`, `JA`, `DESCA`.
    pub a: (i32, i32, Descriptor),
    /// `IB`, `JB`, `DESCB`.
    pub b: (i32, i32, Descriptor),
    /// `IC`, `JC`, `DESCC`.
    pub c: (i32, i32, Descriptor),
}

impl GemmArgs {
    /// The three operands with their shapes and argument positions (`A` is `m × k` for
    /// `TRANSA = 'N'`, `k × m` otherwise; likewise `B`).
    fn operands(&self) -> [Operand; 3] {
        let trans = |c: u8| !c.eq_ignore_ascii_case(&b'N');
        let (a_dims, a_pos) = if trans(self.transa) {
            ((self.k, self.m), (5, 3))
        } else {
            ((self.m, self.k), (3, 5))
        };
        let (b_dims, b_pos) = if trans(self.transb) {
            ((self.n, self.k), (4, 5))
        } else {
            ((self.k, self.n), (5, 4))
        };
        let op = |(m, n): (i32, i32),
                  (mp, np): (i32, i32),
                  (ia, ja, desc): (i32, i32, Descriptor),
                  dpos| Operand {
            m,
            n,
            ia,
            ja,
            desc,
            pos: (mp, np, dpos),
        };
        [
            op(a_dims, a_pos, self.a, 10),
            op(b_dims, b_pos, self.b, 14),
            op((self.m, self.n), (3, 4), self.c, 19),
        ]
    }

    /// PBLAS's checks on this process (`pdgemm_`'s and `PB_Cchkmat`'s), numbered as PBLAS
    /// numbers them (descriptor entries in the 11-entry form).
    pub fn check(&self, g: &BlacsGrid) -> Option<Position> {
        let trans = if op_of(self.transa).is_none() {
            Some(Position::arg(1))
        } else if op_of(self.transb).is_none() {
            Some(Position::arg(2))
        } else {
            None
        };
        let ctxt = self.a.2.ctxt;
        let [a, b, c] = self.operands();
        first([
            trans,
            a.pb_chkmat(g, ctxt),
            b.pb_chkmat(g, ctxt),
            c.pb_chkmat(g, ctxt),
        ])
    }
}

/// `p?gemm` on `comm`, the grid's communicator (rank `prow·npcol + pcol`), this process at `g`.
///
/// # Collective
/// # Errors
/// A communication failure inside the product.
#[allow(clippy::too_many_arguments)]
pub fn pgemm<T: KernelScalar, C: Communicator>(
    comm: &C,
    g: &BlacsGrid,
    args: &GemmArgs,
    alpha: T,
    a: &Array<'_, T>,
    b: &Array<'_, T>,
    beta: T,
    c: &mut Array<'_, T>,
) -> Result<Outcome, ServeError> {
    let ops = args.operands();
    let mut values = vec![
        (
            i32::from(args.transa.to_ascii_uppercase()),
            Position::arg(1),
        ),
        (
            i32::from(args.transb.to_ascii_uppercase()),
            Position::arg(2),
        ),
        (args.k, Position::arg(5)),
    ];
    for op in &ops {
        values.extend(op.global_values());
    }
    let agreed = agree(comm, args.check(g), &values, &[&ops[0], &ops[1], &ops[2]])?;
    if let Some(pos) = agreed.illegal {
        return Ok(Outcome::Illegal(pos));
    }
    let (m, n, k) = (args.m as usize, args.n as usize, args.k as usize);
    let (zero, one) = (T::zero(), T::one());
    if m == 0 || n == 0 || ((alpha == zero || k == 0) && beta == one) {
        return Ok(Outcome::Served);
    }
    if ops.iter().any(|o| {
        let d = &o.desc;
        d.imb != d.mb || d.inb != d.nb || d.rsrc < 0 || d.csrc < 0
    }) {
        return Ok(Outcome::PassOn(
            "a first block of its own size, or a replicated operand",
        ));
    }
    let rank = comm.rank();
    let lc = submatrix(g, &ops[2], &agreed.llds[2])?;
    if alpha == zero || k == 0 {
        // C := β·C, and exactly 0 for β = 0 (whatever C held, NaN included), as PBLAS.
        let local = c.write(lc.local_len(rank))?;
        for (_, _, pos) in local_elements(&lc, rank) {
            local[pos] = if beta == zero {
                zero
            } else {
                beta * local[pos]
            };
        }
        return Ok(Outcome::Served);
    }
    let la = submatrix(g, &ops[0], &agreed.llds[0])?;
    let lb = submatrix(g, &ops[1], &agreed.llds[1])?;
    let transa = op_of(args.transa).unwrap_or(Op::NoTrans);
    let transb = op_of(args.transb).unwrap_or(Op::NoTrans);
    // Planned where the operands are (seen in their owners' buffer order when that moves
    // less: a grid of one block per process, nothing moved to relabel).
    let plan = GemmPlan::for_layouts(
        GemmShape::new(m, n, k),
        (transa, transb),
        comm.size(),
        &GemmParams::default(),
        &la,
        &lb,
        &lc,
    )
    .or_serve()?;
    let av = BorrowedDistMatrix::new(comm, la.clone(), a.read(la.local_len(rank))?).or_serve()?;
    let bv = BorrowedDistMatrix::new(comm, lb.clone(), b.read(lb.local_len(rank))?).or_serve()?;
    let mut cv =
        BorrowedDistMatrixMut::new(comm, lc.clone(), c.write(lc.local_len(rank))?).or_serve()?;
    let run = gemm_with(comm, &plan, alpha, &av, &bv, beta, &mut cv, Par::Seq);
    match run {
        Ok(()) => Ok(Outcome::Served),
        // Refused before anything was written, on every rank alike.
        Err(GemmError::Dist(DistError::OutOfMemory { .. })) => {
            Ok(Outcome::PassOn(crate::lu::NO_MEMORY))
        }
        Err(e) => Err(ServeError(e.to_string())),
    }
}
