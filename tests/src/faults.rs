//! Failures on purpose: [`Faulty`] wraps any communicator and makes one rank fail at its `k`-th
//! communication call — an error (the rank's algorithm returns early), a panic, or (under MPI)
//! the process killed — and [`run_operation`] runs gemm, LU, Cholesky and `transform` under such
//! a fault, so that the same scenarios run on threads (`tests/threads_faults.rs`) and under
//! `mpirun` (`mpi-faults`).

use redblue::cholesky::{cholesky, CholeskyParams};
use redblue::core::Uplo;
use redblue::gemm::{multiply, Algorithm, GemmShape, PlanOptions};
use redblue::kernels::Par;
use redblue::lu::{lu, LuParams};
use redblue::Error;
use redblue_comm::{CommError, CommStats, Communicator};
use redblue_core::{Datum, Op, ReduceOp};
use redblue_dist::{transform, BlockCyclic, DistMatrix, GridLayout, Layout, OwnedDistMatrix};
use std::cell::Cell;
use std::rc::Rc;

/// What the failing rank does at its `k`-th call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The call returns an error: the rank's algorithm gives up and returns early while the
    /// others go on.
    Error,
    /// The rank panics inside the call.
    Panic,
    /// The process is killed (`SIGKILL`): for one process per rank (MPI) only.
    Kill,
}

/// The message of an injected error (in [`CommError::Mpi`], the backend-error variant).
pub const INJECTED: &str = "fault injected by the test";

/// `comm` with a fault on world rank `rank` at its `at`-th communication call (counted from 1
/// over this communicator and every communicator split from it); the other ranks' calls go
/// through untouched.
pub struct Faulty<C> {
    inner: C,
    fault: Fault,
    fails: bool,
    at: usize,
    calls: Rc<Cell<usize>>,
}

impl<C: Communicator> Faulty<C> {
    /// Wraps `inner`; `rank` is the failing rank of `inner`.
    pub fn new(inner: C, fault: Fault, rank: usize, at: usize) -> Self {
        let fails = inner.rank() == rank;
        Faulty {
            inner,
            fault,
            fails,
            at,
            calls: Rc::new(Cell::new(0)),
        }
    }

    /// How many calls this rank made (so far).
    pub fn calls(&self) -> usize {
        self.calls.get()
    }

    /// Counts a call; fails it when it is the chosen one.
    fn call(&self) -> Result<(), CommError> {
        let n = self.calls.get() + 1;
        self.calls.set(n);
        if !self.fails || n != self.at {
            return Ok(());
        }
        match self.fault {
            Fault::Error => Err(CommError::Mpi(INJECTED.into())),
            Fault::Panic => panic!("{INJECTED}: a panic at call {n}"),
            Fault::Kill => {
                // SAFETY: `kill` only sends a signal; this process is the one that receives it.
                unsafe {
                    libc::kill(libc::getpid(), libc::SIGKILL);
                }
                // The signal is on its way; never return into the algorithm.
                loop {
                    std::thread::park();
                }
            }
        }
    }
}

impl<C: Communicator> Communicator for Faulty<C> {
    type Request<'a>
        = C::Request<'a>
    where
        Self: 'a;

    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn split(&self, color: u32, key: usize) -> Result<Self, CommError> {
        self.call()?;
        Ok(Faulty {
            inner: self.inner.split(color, key)?,
            fault: self.fault,
            fails: self.fails,
            at: self.at,
            calls: Rc::clone(&self.calls),
        })
    }
    fn barrier(&self) -> Result<(), CommError> {
        self.call()?;
        self.inner.barrier()
    }
    fn send<T: Datum>(&self, buf: &[T], dest: usize, tag: u32) -> Result<(), CommError> {
        self.call()?;
        self.inner.send(buf, dest, tag)
    }
    fn recv<T: Datum>(&self, buf: &mut [T], src: usize, tag: u32) -> Result<(), CommError> {
        self.call()?;
        self.inner.recv(buf, src, tag)
    }
    fn isend<'a, T: Datum>(
        &'a self,
        buf: &'a [T],
        dest: usize,
        tag: u32,
    ) -> Result<Self::Request<'a>, CommError> {
        self.call()?;
        self.inner.isend(buf, dest, tag)
    }
    fn irecv<'a, T: Datum>(
        &'a self,
        buf: &'a mut [T],
        src: usize,
        tag: u32,
    ) -> Result<Self::Request<'a>, CommError> {
        self.call()?;
        self.inner.irecv(buf, src, tag)
    }
    fn broadcast<T: Datum>(&self, buf: &mut [T], root: usize) -> Result<(), CommError> {
        self.call()?;
        self.inner.broadcast(buf, root)
    }
    fn reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
        root: usize,
    ) -> Result<(), CommError> {
        self.call()?;
        self.inner.reduce(send, recv, op, root)
    }
    fn all_reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        self.call()?;
        self.inner.all_reduce(send, recv, op)
    }
    fn gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        root: usize,
    ) -> Result<(), CommError> {
        self.call()?;
        self.inner.gather_v(send, recv, counts, root)
    }
    fn all_gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<(), CommError> {
        self.call()?;
        self.inner.all_gather_v(send, recv, counts)
    }
    fn scatter_v<T: Datum>(
        &self,
        send: &[T],
        counts: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<(), CommError> {
        self.call()?;
        self.inner.scatter_v(send, counts, recv, root)
    }
    fn reduce_scatter<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        self.call()?;
        self.inner.reduce_scatter(send, recv, counts, op)
    }
    fn all_to_all_v<T: Datum>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<(), CommError> {
        self.call()?;
        self.inner
            .all_to_all_v(send, send_counts, recv, recv_counts)
    }
    fn ranks_in_process(&self) -> usize {
        self.inner.ranks_in_process()
    }
    fn stats(&self) -> CommStats {
        self.inner.stats()
    }
    fn reset_stats(&self) {
        self.inner.reset_stats()
    }
}

/// The operations the fault scenarios interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    /// COSMA's multiplication of two block-cyclic matrices.
    Gemm,
    /// COnfLUX LU with a solve.
    Lu,
    /// COnfCHOX Cholesky with a solve.
    Cholesky,
    /// A transform between two layouts.
    Transform,
}

/// Every operation.
pub const OPERATIONS: [Operation; 4] = [
    Operation::Gemm,
    Operation::Lu,
    Operation::Cholesky,
    Operation::Transform,
];

/// Order of the scenarios' matrices: large enough that their exchange buffers go through the
/// buffer pool (64 KiB and more).
pub const ORDER: usize = 160;

/// Runs `operation` on `comm` (every rank calls it): an `ORDER × ORDER` problem in block-cyclic
/// layouts on a grid of all of `comm`'s ranks; `Ok` with a checksum of this rank's result.
///
/// # Errors
/// Whatever the operation returns.
pub fn run_operation<C: Communicator>(comm: &C, operation: Operation) -> Result<f64, Error> {
    run_on(comm, operation, None)
}

/// [`run_operation`] with one rank's input bad: `value` (a NaN, an infinity) in the matrix
/// `operation` factors (or multiplies, or moves), at the first element of its lower triangle
/// that `rank` holds — the other ranks' parts are clean. LU and Cholesky refuse it on every
/// rank alike (`NotFinite`); a product or a transform carries it on, as IEEE arithmetic does.
///
/// # Errors
/// Whatever the operation returns.
pub fn run_with_value<C: Communicator>(
    comm: &C,
    operation: Operation,
    rank: usize,
    value: f64,
) -> Result<f64, Error> {
    let (pr, pc) = grid_2d(comm.size());
    let layout = BlockCyclic::new(ORDER, ORDER, 16, 16, pr, pc)?;
    let at = (0..ORDER)
        .flat_map(|i| (0..=i).map(move |j| (i, j)))
        .find(|&(i, j)| layout.owner(i, j) == rank);
    run_on(comm, operation, at.map(|at| (at, value)))
}

/// [`run_with_value`] with a NaN.
///
/// # Errors
/// Whatever the operation returns.
pub fn run_with_nan<C: Communicator>(
    comm: &C,
    operation: Operation,
    rank: usize,
) -> Result<f64, Error> {
    run_with_value(comm, operation, rank, f64::NAN)
}

/// The scenarios' run, `(at, value)`: that value at `at` of the first matrix when given.
fn run_on<C: Communicator>(
    comm: &C,
    operation: Operation,
    poison: Option<((usize, usize), f64)>,
) -> Result<f64, Error> {
    let (n, p) = (ORDER, comm.size());
    let (pr, pc) = grid_2d(p);
    let bc = |m, n| BlockCyclic::new(m, n, 16, 16, pr, pc);
    let poisoned = |i, j, x: f64| match poison {
        Some((at, value)) if at == (i, j) => value,
        _ => x,
    };
    let a = OwnedDistMatrix::from_fn(comm, bc(n, n)?, |i, j| {
        poisoned(i, j, redblue_core::random::uniform(i, j, 1))
    })?;
    let sum = |x: &[f64]| x.iter().sum::<f64>();
    match operation {
        Operation::Gemm => {
            let b = OwnedDistMatrix::<f64, _>::random(comm, bc(n, n)?, 2)?;
            let mut c = OwnedDistMatrix::zeros(comm, bc(n, n)?)?;
            let shape = GemmShape::new(n, n, n);
            let schedule = Algorithm::Cosma.schedule(shape, p, &PlanOptions::default())?;
            multiply(
                comm,
                1.0,
                &a,
                Op::NoTrans,
                &b,
                Op::NoTrans,
                0.0,
                &mut c,
                &schedule,
                Par::Seq,
            )?;
            Ok(sum(c.local()))
        }
        Operation::Lu => {
            let params = LuParams::default().with_block(16);
            let factors = lu(comm, &a, &params)?;
            let x = factors.solve(comm, &a)?;
            Ok(sum(x.local()))
        }
        Operation::Cholesky => {
            let spd = OwnedDistMatrix::from_fn(comm, bc(n, n)?, |i, j| {
                let x = if i == j {
                    2.0 * n as f64
                } else {
                    redblue_core::random::uniform(i.max(j), i.min(j), 3)
                };
                poisoned(i, j, x)
            })?;
            let params = CholeskyParams::default().with_block(16);
            let factor = cholesky(comm, &spd, Uplo::Lower, &params)?;
            let x = factor.solve(comm, &a)?;
            Ok(sum(x.local()))
        }
        Operation::Transform => {
            let mut b = OwnedDistMatrix::zeros(comm, GridLayout::even(n, n, 1, p)?)?;
            transform(comm, 1.0, &a, Op::Trans, 0.0, &mut b)?;
            Ok(sum(b.local()))
        }
    }
}

/// The most square `pr × pc = p` grid.
fn grid_2d(p: usize) -> (usize, usize) {
    let pr = (1..=p)
        .filter(|r| p.is_multiple_of(*r) && r * r <= p)
        .max()
        .unwrap_or(1);
    (pr, p / pr)
}

/// How many communication calls rank `rank` makes in `operation` without a fault: the range of
/// call numbers a fault can be injected at.
///
/// # Errors
/// Whatever the operation returns.
pub fn calls_of<C: Communicator>(
    comm: C,
    operation: Operation,
    rank: usize,
) -> Result<usize, Error> {
    let counting = Faulty::new(comm, Fault::Error, rank, usize::MAX);
    run_operation(&counting, operation)?;
    Ok(counting.calls())
}
