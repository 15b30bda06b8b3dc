//! The MPI backend (feature `mpi`): [`MpiUniverse`] initialises MPI, [`MpiComm`] is the
//! [`Communicator`] over an MPI communicator.
//!
//! # Design
//!
//! * **Handles.** Each [`MpiComm`] owns two MPI communicators: a duplicate of the one it stands
//!   for, used for user point-to-point traffic and for native collectives, and a second
//!   duplicate for the point-to-point traffic of the collectives implemented here, so that
//!   internal messages never match user tags. Both return errors (`MPI_ERRORS_RETURN`) instead
//!   of aborting, and errors become [`CommError::Mpi`]. The communicators are raw handles
//!   (through `mpi::ffi`) rather than rsmpi's `SimpleCommunicator`, whose `Drop` panics when
//!   `MPI_Comm_free` fails and which discards MPI's error codes.
//! * **Lifetime of MPI.** Every communicator keeps the MPI environment alive: MPI is finalised
//!   when the [`MpiUniverse`] and every [`MpiComm`] made from it have been dropped, so no MPI call
//!   can happen after `MPI_Finalize`.
//! * **Threads.** MPI is initialised with `MPI_THREAD_FUNNELED`: [`MpiUniverse`] and [`MpiComm`]
//!   are neither `Send` nor `Sync`, so every MPI call is made by the thread that initialised MPI,
//!   while other threads of the process may compute (threaded BLAS, rayon).
//! * **Messages and counts.** Counts are `usize`, MPI's are `int`: a point-to-point message of `n`
//!   elements travels as `n / m + 1` chunks, `n / m` full chunks of `m` elements and a last one of
//!   `n % m` (possibly empty), where `m` is [`MpiComm::max_message_elements`] (`i32::MAX` by
//!   default, so nearly every message is a single chunk). The last chunk is always shorter than
//!   `m`, so a receiver that probes chunk by chunk knows where the message ends even when it
//!   expected another length, and consumes exactly the sender's message. Native collectives work
//!   on pieces of at most `m` elements.
//! * **Collectives.** `barrier`, `split`, `broadcast`, `reduce`, `all_reduce` and
//!   equal-count `reduce_scatter` are native MPI calls. The count-vector family (`gather_v`,
//!   `all_gather_v`, `scatter_v`, `all_to_all_v`, unequal `reduce_scatter`) is direct
//!   point-to-point on the internal communicator: every rank posts all its sends, then receives
//!   each piece (matched by probe, so a piece of the wrong length is detected and fully
//!   consumed), then completes its sends. Each collective call takes the next tag of the
//!   communicator, so leftovers of a failed call can never be matched by a later one. Reductions
//!   implemented here combine contributions in rank order `0..P`, like
//!   [`ThreadComm`](crate::ThreadComm).
//! * **Accounting.** Counters follow [`crate::volume`] exactly, as for
//!   [`ThreadComm`](crate::ThreadComm): native collectives add the [`crate::volume`] prediction
//!   for the call; point-to-point and the collectives implemented here count each piece as it
//!   moves, by the same rules (a chunked message is one message).
//!
//! The user-facing rules (threads, tags, limits, differences from `ThreadComm`) are documented
//! on [`MpiComm`], since this module is private.

use crate::validate::{self, check_len};
use crate::{combine_into, volume, CommError, CommStats, Communicator, Counters, Request};
use mpi::collective::SystemOperation;
use mpi::environment::Universe;
use mpi::ffi::{self, MPI_Comm, MPI_Datatype, MPI_Message, MPI_Op, MPI_Request, MPI_Status};
use mpi::traits::{AsRaw, Equivalence};
use mpi::Threading;
use redblue_core::{c32, c64, Datum, DatumKind, ReduceOp};
use std::any::{Any, TypeId};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void};
use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ops::Range;
use std::ptr;
use std::rc::Rc;
use std::sync::Arc;

// ---------------------------------------------------------------------------------------------
// Small helpers around the raw MPI interface.
// ---------------------------------------------------------------------------------------------

const SUCCESS: c_int = ffi::MPI_SUCCESS as c_int;
const ERR_TRUNCATE: c_int = ffi::MPI_ERR_TRUNCATE as c_int;

/// The MPI datatype of `T`: the one place where a [`Datum`] meets rsmpi's `Equivalence`.
///
/// The `TypeId` check makes the mapping sound on its own: the datatype is returned only when `T`
/// is exactly the Rust type whose layout it describes, whatever `T::KIND` claims.
fn datatype<T: Datum>() -> Result<MPI_Datatype, CommError> {
    fn of<T: 'static, U: Equivalence + 'static>() -> Option<MPI_Datatype> {
        (TypeId::of::<T>() == TypeId::of::<U>()).then(|| U::equivalent_datatype().as_raw())
    }
    let dt = match T::KIND {
        DatumKind::U8 => of::<T, u8>(),
        DatumKind::U32 => of::<T, u32>(),
        DatumKind::U64 => of::<T, u64>(),
        DatumKind::Usize => of::<T, usize>(),
        DatumKind::I32 => of::<T, i32>(),
        DatumKind::I64 => of::<T, i64>(),
        DatumKind::F32 => of::<T, f32>(),
        DatumKind::F64 => of::<T, f64>(),
        DatumKind::C32 => of::<T, c32>(),
        DatumKind::C64 => of::<T, c64>(),
    };
    dt.ok_or(CommError::TypeMismatch { expected: T::KIND })
}

/// MPI's predefined operator for `op` (callers check with [`validate`] that it is defined for the
/// element type).
fn system_op(op: ReduceOp) -> MPI_Op {
    match op {
        ReduceOp::Sum => SystemOperation::sum(),
        ReduceOp::Max => SystemOperation::max(),
        ReduceOp::Min => SystemOperation::min(),
    }
    .as_raw()
}

/// A count or rank as an MPI `int`.
fn to_int(n: usize) -> Result<c_int, CommError> {
    c_int::try_from(n).map_err(|_| CommError::Mpi(format!("{n} does not fit in an MPI int")))
}

/// MPI's description of an error code.
fn error_string(code: c_int) -> String {
    let mut buf = [0 as c_char; ffi::MPI_MAX_ERROR_STRING as usize];
    let mut len: c_int = 0;
    // SAFETY: `buf` has room for MPI_MAX_ERROR_STRING characters, as MPI_Error_string requires;
    // `len` is a valid out-pointer.
    let rc = unsafe { ffi::MPI_Error_string(code, buf.as_mut_ptr(), &mut len) };
    if rc != SUCCESS {
        return format!("MPI error code {code}");
    }
    let len = usize::try_from(len).unwrap_or(0).min(buf.len());
    let bytes: Vec<u8> = buf[..len].iter().map(|&c| c as u8).collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The class of an MPI error code.
fn error_class(code: c_int) -> c_int {
    let mut class: c_int = 0;
    // SAFETY: `class` is a valid out-pointer; MPI_Error_class may be called at any time.
    let rc = unsafe { ffi::MPI_Error_class(code, &mut class) };
    if rc == SUCCESS {
        class
    } else {
        code
    }
}

/// `Ok` for `MPI_SUCCESS`, otherwise the error as [`CommError::Mpi`].
fn check(rc: c_int, call: &str) -> Result<(), CommError> {
    if rc == SUCCESS {
        Ok(())
    } else {
        Err(CommError::Mpi(format!(
            "{call} failed: {}",
            error_string(rc)
        )))
    }
}

fn comm_null() -> MPI_Comm {
    // SAFETY: reading an immutable constant defined by mpi-sys's C shim.
    unsafe { ffi::RSMPI_COMM_NULL }
}

fn request_null() -> MPI_Request {
    // SAFETY: reading an immutable constant defined by mpi-sys's C shim.
    unsafe { ffi::RSMPI_REQUEST_NULL }
}

fn message_null() -> MPI_Message {
    // SAFETY: reading an immutable constant defined by mpi-sys's C shim.
    unsafe { ffi::RSMPI_MESSAGE_NULL }
}

fn empty_status() -> MPI_Status {
    // SAFETY: MPI_Status is a C struct of integers, for which all-zero bits are a valid value.
    unsafe { std::mem::zeroed() }
}

/// Whether MPI has been finalised (callable at any time).
fn finalized() -> bool {
    let mut flag: c_int = 0;
    // SAFETY: MPI_Finalized may be called at any time, even after MPI_Finalize; `flag` is a
    // valid out-pointer.
    let rc = unsafe { ffi::MPI_Finalized(&mut flag) };
    rc != SUCCESS || flag != 0
}

/// Elements in a status, in units of `dt`; `None` if the message is not a whole number of them.
fn received_count(status: &MPI_Status, dt: MPI_Datatype) -> Option<usize> {
    let mut count: c_int = 0;
    // SAFETY: `status` was filled in by MPI; `count` is a valid out-pointer.
    let rc = unsafe { ffi::MPI_Get_count(status, dt, &mut count) };
    if rc != SUCCESS {
        return None;
    }
    // MPI_UNDEFINED (negative) when the byte count is not a multiple of the element size.
    usize::try_from(count).ok()
}

/// The chunks of a point-to-point message of `n` elements: `n / m` full chunks of `m`, then the
/// rest, which is shorter than `m` (possibly empty) and marks the end of the message.
fn p2p_chunks(n: usize, m: usize) -> impl Iterator<Item = Range<usize>> {
    let full = n / m;
    (0..=full).map(move |i| i * m..if i < full { (i + 1) * m } else { n })
}

/// Pieces of at most `m` elements covering `0..n` (none when `n == 0`): the units of native
/// collectives, identical on every rank because lengths agree.
fn pieces(n: usize, m: usize) -> impl Iterator<Item = Range<usize>> {
    (0..n.div_ceil(m)).map(move |i| i * m..n.min((i + 1) * m))
}

/// Waits for every request (all of them, even after an error); returns the first error.
fn wait_requests(requests: &mut [MPI_Request]) -> Result<(), CommError> {
    let mut result = Ok(());
    for req in requests.iter_mut() {
        let mut status = empty_status();
        // SAFETY: `req` is an active request or MPI_REQUEST_NULL (for which MPI_Wait returns at
        // once); its buffer is kept alive by the caller until this returns.
        let rc = unsafe { ffi::MPI_Wait(req, &mut status) };
        if result.is_ok() {
            result = check(rc, "MPI_Wait");
        }
    }
    result
}

/// Cancels a request and waits for it (a request that already matched completes normally).
fn cancel_and_wait(req: &mut MPI_Request) {
    if *req == request_null() {
        return;
    }
    let mut status = empty_status();
    // SAFETY: `req` is an active request; cancelling and then waiting is the MPI way to retire
    // it, after which MPI no longer accesses its buffer.
    unsafe {
        ffi::MPI_Cancel(req);
        ffi::MPI_Wait(req, &mut status);
    }
}

/// Posts the chunks of a message of `buf` to `dest`, pushing their requests onto `requests`.
///
/// # Safety
/// `buf` must stay alive and unmodified until every request pushed onto `requests` has
/// completed (also on error: requests posted before the error are in `requests`).
unsafe fn post_sends<T: Datum>(
    comm: MPI_Comm,
    buf: &[T],
    dest: usize,
    tag: c_int,
    m: usize,
    requests: &mut Vec<MPI_Request>,
) -> Result<(), CommError> {
    let dt = datatype::<T>()?;
    let dest = to_int(dest)?;
    for r in p2p_chunks(buf.len(), m) {
        let count = to_int(r.len())?;
        let mut req = request_null();
        // SAFETY: `buf[r]` is valid for reads of `count` elements of `dt`, the datatype of `T`;
        // the caller keeps it alive until the request completes.
        let rc = unsafe {
            ffi::MPI_Isend(
                buf[r].as_ptr().cast::<c_void>(),
                count,
                dt,
                dest,
                tag,
                comm,
                &mut req,
            )
        };
        check(rc, "MPI_Isend")?;
        requests.push(req);
    }
    Ok(())
}

/// Posts receives for the chunks of a message of `buf.len()` elements from `src`.
///
/// # Safety
/// `buf` must stay alive and must not be accessed until every request pushed onto `requests` has
/// completed (also on error: requests posted before the error are in `requests`).
unsafe fn post_recvs<T: Datum>(
    comm: MPI_Comm,
    buf: &mut [T],
    src: usize,
    tag: c_int,
    m: usize,
    requests: &mut Vec<MPI_Request>,
) -> Result<(), CommError> {
    let dt = datatype::<T>()?;
    let src = to_int(src)?;
    for r in p2p_chunks(buf.len(), m) {
        let count = to_int(r.len())?;
        let mut req = request_null();
        // SAFETY: `buf[r]` is valid for writes of `count` elements of `dt`, the datatype of `T`
        // (any bit pattern is a valid `T`); the chunks are disjoint, and the caller keeps `buf`
        // alive and untouched until the request completes.
        let rc = unsafe {
            ffi::MPI_Irecv(
                buf[r].as_mut_ptr().cast::<c_void>(),
                count,
                dt,
                src,
                tag,
                comm,
                &mut req,
            )
        };
        check(rc, "MPI_Irecv")?;
        requests.push(req);
    }
    Ok(())
}

/// Sends a message of `buf` to `dest`, chunk by chunk, blocking.
fn send_blocking<T: Datum>(
    comm: MPI_Comm,
    buf: &[T],
    dest: usize,
    tag: c_int,
    m: usize,
) -> Result<(), CommError> {
    let dt = datatype::<T>()?;
    let dest = to_int(dest)?;
    for r in p2p_chunks(buf.len(), m) {
        let count = to_int(r.len())?;
        // SAFETY: `buf[r]` is valid for reads of `count` elements of `dt`, the datatype of `T`;
        // MPI_Send returns only once it no longer needs the buffer.
        let rc =
            unsafe { ffi::MPI_Send(buf[r].as_ptr().cast::<c_void>(), count, dt, dest, tag, comm) };
        check(rc, "MPI_Send")?;
    }
    Ok(())
}

/// Receives one message from `src` with `tag`, chunk by chunk, each matched by probe so that
/// exactly the sender's message is consumed whatever its length. Chunks go into `out` at their
/// offset while the message fits; once it is known not to fit, the rest is discarded (a
/// zero-count receive, which MPI reports as truncation). Returns the message's length.
fn probe_recv<T: Datum>(
    comm: MPI_Comm,
    out: &mut [T],
    src: usize,
    tag: c_int,
    m: usize,
) -> Result<usize, CommError> {
    let dt = datatype::<T>()?;
    let src = to_int(src)?;
    let mut total = 0usize;
    let mut fits = true;
    let mut first_error = None;
    loop {
        let mut message = message_null();
        let mut status = empty_status();
        // SAFETY: `message` and `status` are valid out-pointers.
        let rc = unsafe { ffi::MPI_Mprobe(src, tag, comm, &mut message, &mut status) };
        check(rc, "MPI_Mprobe")?;
        let chunk = received_count(&status, dt);
        let (buf, count, discard) = match chunk {
            Some(c) if fits && total + c <= out.len() => (
                out[total..].as_mut_ptr().cast::<c_void>(),
                to_int(c)?,
                false,
            ),
            _ => {
                fits = false;
                (
                    ptr::NonNull::<T>::dangling().as_ptr().cast::<c_void>(),
                    0,
                    true,
                )
            }
        };
        // SAFETY: `message` is the matched message from MPI_Mprobe; `buf` is valid for writes of
        // `count` elements of `dt` (`out[total..total + count]`, any bit pattern being a valid
        // `T`) or `count` is 0; MPI_Mrecv returns once the data is in place.
        let rc = unsafe { ffi::MPI_Mrecv(buf, count, dt, &mut message, &mut status) };
        if let Err(e) = check(rc, "MPI_Mrecv") {
            let expected_truncation = discard && error_class(rc) == ERR_TRUNCATE;
            if !expected_truncation && first_error.is_none() {
                first_error = Some(e);
            }
        }
        match chunk {
            // Not a whole number of elements: a message of another type, taken as complete.
            None => {
                return Err(first_error.unwrap_or(CommError::TypeMismatch { expected: T::KIND }))
            }
            Some(c) => {
                total += c;
                if c < m {
                    break;
                }
            }
        }
    }
    first_error.map_or(Ok(total), Err)
}

// ---------------------------------------------------------------------------------------------
// Shared state: the MPI environment and one MPI communicator pair.
// ---------------------------------------------------------------------------------------------

/// The MPI environment: finalised (by rsmpi's `Universe`) when the last communicator is gone,
/// unless someone else initialised MPI ([`MpiComm::duplicate_of`]; no universe then).
struct Env {
    _universe: Option<Universe>,
    tag_ub: c_int,
}

/// A buffered send to this rank itself, kept until a receive takes it.
struct SelfSend {
    requests: Vec<MPI_Request>,
    /// The copied message (a `Vec<T>`): its heap buffer is what MPI reads.
    data: Box<dyn Any>,
}

/// One MPI communicator as seen by this process: the user communicator and its internal
/// duplicate. Shared (`Rc`) by every [`MpiComm`] handle of the same communicator.
struct RawComm {
    comm: MPI_Comm,
    internal: MPI_Comm,
    rank: usize,
    size: usize,
    world_rank: usize,
    next_collective: Cell<u64>,
    self_sends: RefCell<Vec<SelfSend>>,
    /// Dropped after the communicators are freed (in `Drop`), so MPI outlives them.
    env: Rc<Env>,
}

impl RawComm {
    /// Takes ownership of `comm` (created by this process), duplicates it for internal traffic
    /// and makes both return errors instead of aborting.
    fn adopt(comm: MPI_Comm, env: Rc<Env>, world_rank: usize) -> Result<RawComm, CommError> {
        // From here on, `Drop` frees whatever has been created.
        let mut raw = RawComm {
            comm,
            internal: comm_null(),
            rank: 0,
            size: 1,
            world_rank,
            next_collective: Cell::new(0),
            self_sends: RefCell::new(Vec::new()),
            env,
        };
        let (mut rank, mut size): (c_int, c_int) = (0, 0);
        // SAFETY: `raw.comm` is a live communicator; the other arguments are valid out-pointers
        // and the predefined error handler.
        unsafe {
            check(
                ffi::MPI_Comm_set_errhandler(raw.comm, ffi::RSMPI_ERRORS_RETURN),
                "MPI_Comm_set_errhandler",
            )?;
            check(
                ffi::MPI_Comm_dup(raw.comm, &mut raw.internal),
                "MPI_Comm_dup",
            )?;
            check(
                ffi::MPI_Comm_set_errhandler(raw.internal, ffi::RSMPI_ERRORS_RETURN),
                "MPI_Comm_set_errhandler",
            )?;
            check(ffi::MPI_Comm_rank(raw.comm, &mut rank), "MPI_Comm_rank")?;
            check(ffi::MPI_Comm_size(raw.comm, &mut size), "MPI_Comm_size")?;
        }
        raw.rank = usize::try_from(rank).map_err(|_| CommError::Mpi("negative rank".into()))?;
        raw.size = usize::try_from(size).map_err(|_| CommError::Mpi("negative size".into()))?;
        Ok(raw)
    }

    /// The tag of the next collective call (every rank calls collectives in the same order).
    fn next_tag(&self) -> c_int {
        let seq = self.next_collective.get();
        self.next_collective.set(seq.wrapping_add(1));
        let modulus = u64::try_from(self.env.tag_ub).unwrap_or(0) + 1;
        c_int::try_from(seq % modulus).unwrap_or(0)
    }

    /// Sends a copy of `buf` to this rank itself without blocking (MPI semantics would block a
    /// large self-send until it is received); the copy lives until the message is received.
    fn self_send<T: Datum>(&self, buf: &[T], tag: c_int, m: usize) -> Result<(), CommError> {
        self.reap_self_sends();
        let data: Vec<T> = buf.to_vec();
        let mut requests = Vec::new();
        // SAFETY: `data`'s heap buffer is owned by the `SelfSend` record below, which keeps it
        // (or leaks it) until the requests complete; moving the `Vec` does not move its buffer.
        let posted = unsafe { post_sends(self.comm, &data, self.rank, tag, m, &mut requests) };
        if let Err(e) = posted {
            for req in &mut requests {
                cancel_and_wait(req);
            }
            return Err(e);
        }
        self.self_sends.borrow_mut().push(SelfSend {
            requests,
            data: Box::new(data),
        });
        Ok(())
    }

    /// Drops the buffered self-sends that have completed.
    fn reap_self_sends(&self) {
        self.self_sends.borrow_mut().retain_mut(|s| {
            s.requests.iter_mut().any(|req| {
                let mut flag: c_int = 0;
                let mut status = empty_status();
                // SAFETY: `req` is an active request or MPI_REQUEST_NULL; MPI_Test sets it to
                // MPI_REQUEST_NULL once it has completed.
                let rc = unsafe { ffi::MPI_Test(req, &mut flag, &mut status) };
                rc != SUCCESS || flag == 0
            })
        });
    }
}

impl Drop for RawComm {
    fn drop(&mut self) {
        let finalized = finalized();
        for mut s in self.self_sends.get_mut().drain(..) {
            for req in &mut s.requests {
                if !finalized && *req != request_null() {
                    // SAFETY: `req` is an active send request; freeing it lets MPI complete it
                    // on its own, and its buffer is leaked below so it stays valid.
                    unsafe { ffi::MPI_Request_free(req) };
                }
            }
            // A self-send nobody received: MPI may still read the buffer, so leak it.
            std::mem::forget(s.data);
        }
        if finalized {
            return;
        }
        for c in [&mut self.internal, &mut self.comm] {
            if *c != comm_null() {
                // SAFETY: `c` is a communicator this process created (a duplicate or a split),
                // freed exactly once, before MPI_Finalize (the environment outlives `self`).
                unsafe { ffi::MPI_Comm_free(c) };
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Public types.
// ---------------------------------------------------------------------------------------------

/// The MPI environment of this process: [`MpiUniverse::init`] initialises MPI,
/// [`MpiUniverse::world`] hands out the world communicator.
///
/// MPI is finalised once this value and every [`MpiComm`] made from it have been dropped. MPI can
/// be initialised only once per process.
///
/// MPI is initialised with thread level `MPI_THREAD_FUNNELED`: the universe and its communicators
/// are neither `Send` nor `Sync`, so all MPI calls come from the thread that called
/// [`MpiUniverse::init`]; other threads may compute but not communicate.
///
/// **A panic ends the job.** [`MpiUniverse::init`] adds to the process's panic hook: after the
/// hook that was there (which prints the message), a panic on any thread calls `MPI_Abort` on
/// the world, so the other ranks do not wait forever in their next collective for a rank that
/// is gone; `mpirun` then ends every process. (A program that catches panics on purpose under
/// MPI can set its own hook after `init`.) A rank killed by a signal is the launcher's to handle:
/// Open MPI's `mpirun` ends the job when a process dies. Errors are agreed on before they are
/// returned, so every rank returns the same one and ends alike; a communication failure on one
/// rank (an error MPI returns) may leave others waiting, and [`MpiComm::abort`] ends the job
/// (the miniapp does so).
///
/// # Examples
/// ```no_run
/// use redblue_comm::{Communicator, MpiUniverse, ReduceOp};
///
/// let universe = MpiUniverse::init().expect("MPI initialised once");
/// let world = universe.world();
/// let mut total = [0.0];
/// world.all_reduce(&[world.rank() as f64], &mut total, ReduceOp::Sum).unwrap();
/// ```
pub struct MpiUniverse {
    world: Rc<RawComm>,
    counters: Arc<Counters>,
    threading: Threading,
}

impl fmt::Debug for MpiUniverse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MpiUniverse")
            .field("world_rank", &self.world.rank)
            .field("world_size", &self.world.size)
            .field("threading", &self.threading)
            .finish()
    }
}

impl MpiUniverse {
    /// Initialises MPI (thread level `MPI_THREAD_FUNNELED`) and sets up the world communicator.
    ///
    /// # Errors
    /// [`CommError::Mpi`] if MPI is already initialised (or was finalised) in this process, for
    /// example by an earlier `init`, or if setting up the world communicator fails.
    pub fn init() -> Result<MpiUniverse, CommError> {
        let (universe, threading) = mpi::initialize_with_threading(Threading::Funneled)
            .ok_or_else(|| {
                CommError::Mpi(
                    "MPI is already initialised in this process: MpiUniverse::init succeeds \
                     once per process"
                        .into(),
                )
            })?;
        let env = Rc::new(Env {
            _universe: Some(universe),
            tag_ub: tag_upper_bound(),
        });
        let mut world = comm_null();
        let mut world_rank: c_int = 0;
        // SAFETY: MPI is initialised; the arguments are the predefined world communicator and
        // valid out-pointers.
        unsafe {
            check(
                ffi::MPI_Comm_rank(ffi::RSMPI_COMM_WORLD, &mut world_rank),
                "MPI_Comm_rank",
            )?;
            check(
                ffi::MPI_Comm_dup(ffi::RSMPI_COMM_WORLD, &mut world),
                "MPI_Comm_dup",
            )?;
        }
        let world_rank = usize::try_from(world_rank).unwrap_or(0);
        let world = RawComm::adopt(world, env, world_rank)?;
        abort_job_on_panic();
        Ok(MpiUniverse {
            world: Rc::new(world),
            counters: Arc::default(),
            threading,
        })
    }

    /// The world communicator: every process of the MPI job. Every call returns a handle on the
    /// same communicator, with this rank's counters.
    pub fn world(&self) -> MpiComm {
        MpiComm {
            raw: Rc::clone(&self.world),
            counters: Arc::clone(&self.counters),
            max_message: DEFAULT_MAX_MESSAGE,
        }
    }

    /// Whether the MPI library granted at least `MPI_THREAD_FUNNELED` (if not, the process should
    /// not run other threads while MPI is in use).
    pub fn funneled_threads_supported(&self) -> bool {
        self.threading >= Threading::Funneled
    }
}

/// Chains `MPI_Abort` on the world after the current panic hook (see [`MpiUniverse`]).
fn abort_job_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        previous(info);
        if !finalized() {
            eprintln!("redblue: a rank panicked; aborting the MPI job (MPI_Abort)");
            // SAFETY: MPI was initialised before this hook was set and is not finalised; the
            // world communicator is predefined. (From a thread other than MPI's this is outside
            // MPI_THREAD_FUNNELED's promise, as any last resort is: the process ends either way.)
            unsafe { ffi::MPI_Abort(ffi::RSMPI_COMM_WORLD, 101) };
        }
    }));
}

/// `MPI_TAG_UB` of the world communicator (at least 32767 by the standard).
fn tag_upper_bound() -> c_int {
    let mut value: *mut c_int = ptr::null_mut();
    let mut flag: c_int = 0;
    // SAFETY: MPI is initialised; for MPI_TAG_UB, MPI stores a pointer to an int in `value`
    // (whose address is passed as the attribute out-pointer), valid until MPI_Finalize.
    let rc = unsafe {
        ffi::MPI_Comm_get_attr(
            ffi::RSMPI_COMM_WORLD,
            ffi::MPI_TAG_UB as c_int,
            (&mut value as *mut *mut c_int).cast::<c_void>(),
            &mut flag,
        )
    };
    if rc == SUCCESS && flag != 0 && !value.is_null() {
        // SAFETY: MPI set `value` to point at the attribute's int.
        unsafe { *value }
    } else {
        32767
    }
}

const DEFAULT_MAX_MESSAGE: usize = i32::MAX as usize;

/// One rank's handle on an MPI communicator: the [`Communicator`] of the MPI backend.
///
/// Made by [`MpiUniverse::world`] and by [`Communicator::split`]. Every communicator derived from
/// one world rank shares that rank's counters, which follow the same rules ([`crate::volume`]) as
/// on [`ThreadComm`](crate::ThreadComm), so one program reports the same numbers on both.
///
/// # Implementation
///
/// `barrier`, `split`, `broadcast`, `reduce`, `all_reduce` and `reduce_scatter` with equal counts
/// are native MPI collectives. `gather_v`, `all_gather_v`, `scatter_v`, `all_to_all_v` and
/// `reduce_scatter` with unequal counts are direct point-to-point exchanges on a private duplicate
/// communicator (so they never match user messages), combining reductions in rank order.
///
/// Counts are `usize` while MPI's are `int`: every MPI call moves at most
/// [`MpiComm::max_message_elements`] elements (`i32::MAX` by default), and longer messages travel
/// in several chunks, still counted as one message.
///
/// # Threads
///
/// MPI runs at thread level `MPI_THREAD_FUNNELED`: communicators are neither `Send` nor `Sync`,
/// so all communication happens on the thread that called [`MpiUniverse::init`].
///
/// # Differences from `ThreadComm`
///
/// * Tags must not exceed the MPI library's `MPI_TAG_UB` (at least 32767, `i32::MAX` with Open
///   MPI); a larger tag gives [`CommError::Mpi`].
/// * MPI messages carry no element type: a message of another type is detected
///   ([`CommError::TypeMismatch`]) only when its size is not a whole number of elements.
/// * Native collectives cannot see a length that differs between ranks: passing matching lengths
///   is the caller's contract (MPI may then report an error, truncate or hang). Lengths checked
///   locally give the same errors as on `ThreadComm`.
/// * Sends are not buffered, except to this rank itself: a blocking [`Communicator::send`] of a
///   large message returns once the receiver takes it, as in MPI.
/// * [`Communicator::recv`] probes, so a message of another length is consumed whole and
///   reported with its exact length. [`Communicator::irecv`] is posted for its buffer's length:
///   a longer message is truncated by MPI, reported as [`CommError::LengthMismatch`] with
///   `found` a lower bound (`expected + 1`); and a length mismatch on a message of at least
///   [`MpiComm::max_message_elements`] elements (several chunks) may leave chunks for the next
///   receive from the same source with the same tag.
/// * When a root-only argument of `gather_v` is wrong, the root still consumes the other ranks'
///   contributions before reporting, so they complete. When one of `scatter_v` is wrong, the root
///   sends every other rank an empty piece (they report a length mismatch unless they expected
///   nothing) instead of leaving them waiting. When `reduce`'s receive buffer is wrong, the root
///   takes part in the reduction (into scratch space) before reporting.
/// * Dropping a pending request waits for it (while unwinding from a panic, it is cancelled
///   first); leaking one with `std::mem::forget` is not supported, as MPI would keep using the
///   buffer.
pub struct MpiComm {
    raw: Rc<RawComm>,
    counters: Arc<Counters>,
    max_message: usize,
}

impl fmt::Debug for MpiComm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MpiComm")
            .field("rank", &self.raw.rank)
            .field("size", &self.raw.size)
            .field("world_rank", &self.raw.world_rank)
            .field("max_message", &self.max_message)
            .finish()
    }
}

impl MpiComm {
    /// A handle on a duplicate of `comm`, a communicator of an MPI that the program initialised
    /// itself and will finalise: what a library called from an MPI program (ScaLAPACK's
    /// routines, on a BLACS grid's communicator) works on. Collective over `comm`
    /// (`MPI_Comm_dup`); counters start at zero; MPI is neither initialised nor finalised here,
    /// and no panic hook is installed.
    ///
    /// # Safety
    /// MPI must be initialised and not finalised, `comm` a valid communicator of this process,
    /// and the handle (with every communicator split from it) dropped before the program
    /// finalises MPI. Only the thread that calls MPI in the program may use it.
    ///
    /// # Errors
    /// [`CommError::Mpi`] if MPI is not initialised or a call fails.
    pub unsafe fn duplicate_of(comm: MPI_Comm) -> Result<MpiComm, CommError> {
        if !mpi::environment::is_initialized() || finalized() {
            return Err(CommError::Mpi(
                "MPI is not initialised: duplicate_of needs the program's MPI".into(),
            ));
        }
        let env = Rc::new(Env {
            _universe: None,
            tag_ub: tag_upper_bound(),
        });
        let mut dup = comm_null();
        let mut world_rank: c_int = 0;
        // SAFETY: MPI is initialised and `comm` is valid (the caller's contract); the other
        // arguments are valid out-pointers.
        unsafe {
            check(
                ffi::MPI_Comm_rank(ffi::RSMPI_COMM_WORLD, &mut world_rank),
                "MPI_Comm_rank",
            )?;
            check(ffi::MPI_Comm_dup(comm, &mut dup), "MPI_Comm_dup")?;
        }
        let raw = RawComm::adopt(dup, env, usize::try_from(world_rank).unwrap_or(0))?;
        Ok(MpiComm {
            raw: Rc::new(raw),
            counters: Arc::default(),
            max_message: DEFAULT_MAX_MESSAGE,
        })
    }

    /// This rank's rank in `MPI_COMM_WORLD`.
    pub fn world_rank(&self) -> usize {
        self.raw.world_rank
    }

    /// The largest number of elements moved by one MPI call (point-to-point chunk or piece of a
    /// native collective): `i32::MAX` unless changed.
    pub fn max_message_elements(&self) -> usize {
        self.max_message
    }

    /// Sets the largest number of elements moved by one MPI call, clamped to `1..=i32::MAX`;
    /// meant for testing the splitting path with small limits.
    ///
    /// The limit is part of the message protocol: every rank of the communicator must use the
    /// same value. Communicators split from this handle inherit it.
    pub fn set_max_message_elements(&mut self, n: usize) {
        self.max_message = n.clamp(1, DEFAULT_MAX_MESSAGE);
    }

    /// Aborts every process of the MPI job (`MPI_Abort` with `code` on this communicator); for
    /// failures that leave other ranks waiting.
    pub fn abort(&self, code: i32) -> ! {
        // SAFETY: `comm` is a live communicator; MPI_Abort does not return on success.
        unsafe { ffi::MPI_Abort(self.raw.comm, code) };
        std::process::abort()
    }

    fn me(&self) -> usize {
        self.raw.rank
    }

    /// A user tag as an MPI tag.
    fn user_tag(&self, tag: u32) -> Result<c_int, CommError> {
        match c_int::try_from(tag) {
            Ok(t) if t <= self.raw.env.tag_ub => Ok(t),
            _ => Err(CommError::Mpi(format!(
                "tag {tag} is above this MPI library's MPI_TAG_UB ({})",
                self.raw.env.tag_ub
            ))),
        }
    }

    fn add_sent<T>(&self, words: usize) {
        self.counters.add(CommStats::sent(words, size_of::<T>()));
    }

    fn add_received<T>(&self, words: usize) {
        self.counters
            .add(CommStats::received(words, size_of::<T>()));
    }

    fn add_volume<T>(&self, t: &volume::Transfers) {
        self.counters.add(t.stats(self.me(), size_of::<T>()));
    }

    /// Posts the collective pieces `sends` (destination, data) on the internal communicator,
    /// runs `receive`, then completes the sends (also when `receive` fails). Each non-empty piece
    /// counts as sent.
    fn exchange<T: Datum>(
        &self,
        tag: c_int,
        sends: &[(usize, &[T])],
        receive: impl FnOnce() -> Result<(), CommError>,
    ) -> Result<(), CommError> {
        let mut requests = Vec::new();
        let mut result = Ok(());
        for &(dest, data) in sends {
            // SAFETY: every `data` outlives this function, which completes all requests (the
            // `wait_requests` below) before returning.
            let posted = unsafe {
                post_sends(
                    self.raw.internal,
                    data,
                    dest,
                    tag,
                    self.max_message,
                    &mut requests,
                )
            };
            if let Err(e) = posted {
                result = Err(e);
                break;
            }
            if !data.is_empty() && dest != self.me() {
                self.add_sent::<T>(data.len());
            }
        }
        if result.is_ok() {
            result = receive();
        }
        let sent = wait_requests(&mut requests);
        result.and(sent)
    }

    /// Receives a collective piece from `src` into `out`: counted when `out` is non-empty (the
    /// words that arrived), and checked against `out`'s length.
    fn take_into<T: Datum>(
        &self,
        src: usize,
        tag: c_int,
        out: &mut [T],
        what: &'static str,
    ) -> Result<(), CommError> {
        let found = probe_recv(self.raw.internal, out, src, tag, self.max_message)?;
        if !out.is_empty() && src != self.me() {
            self.add_received::<T>(found);
        }
        check_len(what, out.len(), found)
    }

    /// Consumes and discards a collective piece from `src` (so that its sender completes).
    fn drain<T: Datum>(&self, src: usize, tag: c_int) {
        let _ = probe_recv::<T>(self.raw.internal, &mut [], src, tag, self.max_message);
    }

    /// Receives piece `i` of a collective for every `i != me`, in rank order, into
    /// `out[d[i]..d[i + 1]]`; after the first error, the remaining pieces are drained and the
    /// error returned.
    fn take_all<T: Datum>(
        &self,
        tag: c_int,
        out: &mut [T],
        d: &[usize],
        what: &'static str,
    ) -> Result<(), CommError> {
        let mut result = Ok(());
        for i in (0..self.size()).filter(|&i| i != self.me()) {
            if result.is_ok() {
                result = self.take_into(i, tag, &mut out[d[i]..d[i + 1]], what);
            } else {
                self.drain::<T>(i, tag);
            }
        }
        result
    }

    /// Native `MPI_Reduce` of `send` into `recv` (significant on `root` only), piece by piece.
    fn native_reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
        root: usize,
    ) -> Result<(), CommError> {
        let dt = datatype::<T>()?;
        let root_int = to_int(root)?;
        let is_root = self.me() == root;
        for r in pieces(send.len(), self.max_message) {
            let count = to_int(r.len())?;
            let out = if is_root {
                recv[r.clone()].as_mut_ptr().cast::<c_void>()
            } else {
                ptr::null_mut()
            };
            // SAFETY: `send[r]` is valid for reads and, on the root, `out` for writes of `count`
            // elements of `dt`, the datatype of `T`; they do not overlap (`&` vs `&mut`). The
            // receive buffer is not significant off the root. MPI_Reduce is blocking.
            let rc = unsafe {
                ffi::MPI_Reduce(
                    send[r].as_ptr().cast::<c_void>(),
                    out,
                    count,
                    dt,
                    system_op(op),
                    root_int,
                    self.raw.comm,
                )
            };
            check(rc, "MPI_Reduce")?;
        }
        Ok(())
    }

    /// Reduce-scatter on internal point-to-point: any counts, combined in rank order.
    fn reduce_scatter_p2p<T: Datum>(
        &self,
        tag: c_int,
        send: &[T],
        recv: &mut [T],
        d: &[usize],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        let me = self.me();
        let sends: Vec<(usize, &[T])> = (0..self.size())
            .filter(|&j| j != me)
            .map(|j| (j, &send[d[j]..d[j + 1]]))
            .collect();
        let mine = &send[d[me]..d[me + 1]];
        self.exchange(tag, &sends, || {
            let mut piece = mine.to_vec();
            let mut result = Ok(());
            // Combine in rank order, so every backend and every run gives the same bits.
            for i in 0..self.size() {
                if i != me && result.is_err() {
                    self.drain::<T>(i, tag);
                    continue;
                }
                let contribution: &[T] = if i == me {
                    mine
                } else {
                    result = self.take_into(i, tag, &mut piece, "reduce_scatter contribution");
                    if result.is_err() {
                        continue;
                    }
                    &piece
                };
                if i == 0 {
                    recv.copy_from_slice(contribution);
                } else {
                    combine_into(recv, contribution, op);
                }
            }
            result
        })
    }
}

/// A pending [`MpiComm::isend`](Communicator::isend) or [`MpiComm::irecv`](Communicator::irecv):
/// the MPI operations are posted; [`Request::wait`] completes them.
///
/// Dropping a pending request waits for it to complete (while unwinding from a panic it is
/// cancelled first), so MPI never touches the buffer after its borrow ends. Leaking a pending
/// request (`std::mem::forget`) is not supported: MPI would keep using the buffer.
#[must_use = "a request must be waited on"]
pub struct MpiRequest<'a> {
    comm: &'a MpiComm,
    requests: Vec<MPI_Request>,
    kind: Pending,
    _buffer: PhantomData<&'a mut [u8]>,
}

enum Pending {
    /// A send (already counted) or a completed self-send.
    Send,
    /// A receive of `len` elements of `datatype` from `src`, in chunks of `max`.
    Recv {
        src: usize,
        len: usize,
        max: usize,
        datatype: MPI_Datatype,
        kind: DatumKind,
        bytes_per_word: usize,
    },
}

impl fmt::Debug for MpiRequest<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MpiRequest")
            .field("pending_chunks", &self.requests.len())
            .finish()
    }
}

impl MpiRequest<'_> {
    /// Completes a receive: waits for every chunk in order, detects where the sender's message
    /// ended, counts it, and checks its length.
    fn finish_recv(
        &mut self,
        src: usize,
        len: usize,
        max: usize,
        dt: MPI_Datatype,
        kind: DatumKind,
        bytes_per_word: usize,
    ) -> Result<(), CommError> {
        let sizes: Vec<usize> = p2p_chunks(len, max).map(|r| r.len()).collect();
        let mut requests = std::mem::take(&mut self.requests);
        // Length of the sender's message, once known to differ from `len`.
        let mut found = None;
        let mut error = None;
        for (i, req) in requests.iter_mut().enumerate() {
            if found.is_some() || error.is_some() {
                // The message has ended (or failed): retire the remaining chunk receives.
                cancel_and_wait(req);
                continue;
            }
            let mut status = empty_status();
            // SAFETY: `req` is an active receive into the borrowed buffer, alive for `'a`.
            let rc = unsafe { ffi::MPI_Wait(req, &mut status) };
            if rc != SUCCESS {
                if error_class(rc) == ERR_TRUNCATE {
                    // Longer than the buffer: MPI discarded the excess, so this is a lower bound.
                    found = Some(len + 1);
                } else {
                    error = check(rc, "MPI_Wait").err();
                }
                continue;
            }
            match received_count(&status, dt) {
                None => error = Some(CommError::TypeMismatch { expected: kind }),
                // Every earlier chunk was full, so the message ended here.
                Some(got) if got < sizes.get(i).copied().unwrap_or(0) => {
                    found = Some(i * max + got)
                }
                Some(_) => {}
            }
        }
        if let Some(e) = error {
            return Err(e);
        }
        let words = found.unwrap_or(len);
        if src != self.comm.me() {
            self.comm
                .counters
                .add(CommStats::received(words, bytes_per_word));
        }
        check_len("received message", len, words)
    }
}

impl Request for MpiRequest<'_> {
    fn wait(mut self) -> Result<(), CommError> {
        match self.kind {
            Pending::Send => {
                let mut requests = std::mem::take(&mut self.requests);
                wait_requests(&mut requests)
            }
            Pending::Recv {
                src,
                len,
                max,
                datatype,
                kind,
                bytes_per_word,
            } => self.finish_recv(src, len, max, datatype, kind, bytes_per_word),
        }
    }
}

impl Drop for MpiRequest<'_> {
    fn drop(&mut self) {
        if self.requests.is_empty() {
            return;
        }
        if std::thread::panicking() {
            // Do not hang a failing rank on a peer that may never answer.
            for req in &mut self.requests {
                cancel_and_wait(req);
            }
        } else {
            let _ = wait_requests(&mut self.requests);
        }
    }
}

impl Communicator for MpiComm {
    type Request<'a> = MpiRequest<'a>;

    fn rank(&self) -> usize {
        self.raw.rank
    }

    fn size(&self) -> usize {
        self.raw.size
    }

    fn split(&self, color: u32, key: usize) -> Result<Self, CommError> {
        self.raw.next_tag();
        // MPI colours and keys are non-negative ints: agree on dense ones. The colour becomes the
        // index of `color` among the distinct colours, the key this rank's position in its group
        // ordered by `(key, rank)` -- exactly the order of `ThreadComm::split`.
        let p = self.size();
        let mine = [u64::from(color), key as u64];
        let mut all = vec![0u64; 2 * p];
        let dt = datatype::<u64>()?;
        // SAFETY: `mine` holds 2 and `all` 2·P elements of `dt`, as MPI_Allgather with counts 2
        // needs on a communicator of P ranks; the call is blocking.
        let rc = unsafe {
            ffi::MPI_Allgather(
                mine.as_ptr().cast::<c_void>(),
                2,
                dt,
                all.as_mut_ptr().cast::<c_void>(),
                2,
                dt,
                self.raw.internal,
            )
        };
        check(rc, "MPI_Allgather")?;
        let mut colors: Vec<u64> = all.chunks_exact(2).map(|c| c[0]).collect();
        colors.sort_unstable();
        colors.dedup();
        let color_index = colors.partition_point(|&c| c < u64::from(color));
        let mut group: Vec<(u64, usize)> = all
            .chunks_exact(2)
            .enumerate()
            .filter(|(_, c)| c[0] == u64::from(color))
            .map(|(i, c)| (c[1], i))
            .collect();
        group.sort_unstable();
        let new_rank = group
            .iter()
            .position(|&(_, i)| i == self.me())
            .ok_or_else(|| CommError::Mpi("split: this rank is missing from its group".into()))?;
        let mut newcomm = comm_null();
        // SAFETY: `comm` is a live communicator; the colour and key are non-negative ints;
        // `newcomm` is a valid out-pointer.
        let rc = unsafe {
            ffi::MPI_Comm_split(
                self.raw.comm,
                to_int(color_index)?,
                to_int(new_rank)?,
                &mut newcomm,
            )
        };
        check(rc, "MPI_Comm_split")?;
        let raw = RawComm::adopt(newcomm, Rc::clone(&self.raw.env), self.raw.world_rank)?;
        Ok(MpiComm {
            raw: Rc::new(raw),
            counters: Arc::clone(&self.counters),
            max_message: self.max_message,
        })
    }

    fn barrier(&self) -> Result<(), CommError> {
        self.raw.next_tag();
        // SAFETY: `comm` is a live communicator.
        check(unsafe { ffi::MPI_Barrier(self.raw.comm) }, "MPI_Barrier")
    }

    fn send<T: Datum>(&self, buf: &[T], dest: usize, tag: u32) -> Result<(), CommError> {
        validate::send(self.size(), dest)?;
        let tag = self.user_tag(tag)?;
        if dest == self.me() {
            return self.raw.self_send(buf, tag, self.max_message);
        }
        send_blocking(self.raw.comm, buf, dest, tag, self.max_message)?;
        self.add_sent::<T>(buf.len());
        Ok(())
    }

    fn recv<T: Datum>(&self, buf: &mut [T], src: usize, tag: u32) -> Result<(), CommError> {
        validate::recv(self.size(), src)?;
        let tag = self.user_tag(tag)?;
        let found = probe_recv(self.raw.comm, buf, src, tag, self.max_message)?;
        if src != self.me() {
            self.add_received::<T>(found);
        }
        self.raw.reap_self_sends();
        check_len("received message", buf.len(), found)
    }

    fn isend<'a, T: Datum>(
        &'a self,
        buf: &'a [T],
        dest: usize,
        tag: u32,
    ) -> Result<MpiRequest<'a>, CommError> {
        validate::send(self.size(), dest)?;
        let tag = self.user_tag(tag)?;
        let mut requests = Vec::new();
        if dest == self.me() {
            self.raw.self_send(buf, tag, self.max_message)?;
        } else {
            // SAFETY: `buf` is borrowed for `'a` by the returned request, which completes these
            // requests (in `wait`, or in `Drop`) before the borrow ends; on error the posted
            // ones are retired here.
            let posted = unsafe {
                post_sends(
                    self.raw.comm,
                    buf,
                    dest,
                    tag,
                    self.max_message,
                    &mut requests,
                )
            };
            if let Err(e) = posted {
                for req in &mut requests {
                    cancel_and_wait(req);
                }
                return Err(e);
            }
            self.add_sent::<T>(buf.len());
        }
        Ok(MpiRequest {
            comm: self,
            requests,
            kind: Pending::Send,
            _buffer: PhantomData,
        })
    }

    fn irecv<'a, T: Datum>(
        &'a self,
        buf: &'a mut [T],
        src: usize,
        tag: u32,
    ) -> Result<MpiRequest<'a>, CommError> {
        validate::recv(self.size(), src)?;
        let tag = self.user_tag(tag)?;
        let dt = datatype::<T>()?;
        let len = buf.len();
        let mut requests = Vec::new();
        // SAFETY: `buf` is mutably borrowed for `'a` by the returned request, which completes
        // these requests (in `wait`, or in `Drop`) before the borrow ends; on error the posted
        // ones are retired here.
        let posted = unsafe {
            post_recvs(
                self.raw.comm,
                buf,
                src,
                tag,
                self.max_message,
                &mut requests,
            )
        };
        if let Err(e) = posted {
            for req in &mut requests {
                cancel_and_wait(req);
            }
            return Err(e);
        }
        Ok(MpiRequest {
            comm: self,
            requests,
            kind: Pending::Recv {
                src,
                len,
                max: self.max_message,
                datatype: dt,
                kind: T::KIND,
                bytes_per_word: size_of::<T>(),
            },
            _buffer: PhantomData,
        })
    }

    fn broadcast<T: Datum>(&self, buf: &mut [T], root: usize) -> Result<(), CommError> {
        self.raw.next_tag();
        validate::broadcast(self.size(), root)?;
        let dt = datatype::<T>()?;
        let root_int = to_int(root)?;
        let n = buf.len();
        for r in pieces(n, self.max_message) {
            let count = to_int(r.len())?;
            // SAFETY: `buf[r]` is valid for reads and writes of `count` elements of `dt`, the
            // datatype of `T`; MPI_Bcast is blocking.
            let rc = unsafe {
                ffi::MPI_Bcast(
                    buf[r].as_mut_ptr().cast::<c_void>(),
                    count,
                    dt,
                    root_int,
                    self.raw.comm,
                )
            };
            check(rc, "MPI_Bcast")?;
        }
        self.add_volume::<T>(&volume::broadcast(self.me(), self.size(), n, root));
        Ok(())
    }

    fn reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
        root: usize,
    ) -> Result<(), CommError> {
        self.raw.next_tag();
        validate::reduce::<T>(self.size(), op, root)?;
        if self.me() == root {
            if let Err(e) = validate::reduce_root(send.len(), recv.len()) {
                // Take part anyway, so that the other ranks complete, then report.
                let mut scratch = send.to_vec();
                self.native_reduce(send, &mut scratch, op, root)?;
                return Err(e);
            }
        }
        self.native_reduce(send, recv, op, root)?;
        self.add_volume::<T>(&volume::reduce(self.me(), self.size(), send.len(), root));
        Ok(())
    }

    fn all_reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        self.raw.next_tag();
        validate::all_reduce::<T>(send.len(), recv.len(), op)?;
        let dt = datatype::<T>()?;
        for r in pieces(send.len(), self.max_message) {
            let count = to_int(r.len())?;
            // SAFETY: `send[r]` is valid for reads and `recv[r]` for writes of `count` elements of
            // `dt`, the datatype of `T`, and they do not overlap (`&` vs `&mut`); blocking call.
            let rc = unsafe {
                ffi::MPI_Allreduce(
                    send[r.clone()].as_ptr().cast::<c_void>(),
                    recv[r].as_mut_ptr().cast::<c_void>(),
                    count,
                    dt,
                    system_op(op),
                    self.raw.comm,
                )
            };
            check(rc, "MPI_Allreduce")?;
        }
        self.add_volume::<T>(&volume::all_reduce(self.me(), self.size(), send.len()));
        Ok(())
    }

    fn gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        root: usize,
    ) -> Result<(), CommError> {
        let tag = self.raw.next_tag();
        validate::gather_v(self.size(), root)?;
        if self.me() != root {
            return self.exchange(tag, &[(root, send)], || Ok(()));
        }
        let p = self.size();
        let d = match validate::gather_v_root(p, root, send.len(), recv.len(), counts) {
            Ok(d) => d,
            Err(e) => {
                // Consume the contributions, so that no sender is left waiting, then report.
                for i in (0..p).filter(|&i| i != root) {
                    self.drain::<T>(i, tag);
                }
                return Err(e);
            }
        };
        recv[d[root]..d[root + 1]].copy_from_slice(send);
        self.take_all(tag, recv, &d, "gather_v contribution")
    }

    fn all_gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<(), CommError> {
        let tag = self.raw.next_tag();
        let (p, me) = (self.size(), self.me());
        let d = validate::all_gather_v(p, me, send.len(), recv.len(), counts)?;
        let sends: Vec<(usize, &[T])> = (0..p).filter(|&j| j != me).map(|j| (j, send)).collect();
        self.exchange(tag, &sends, || {
            recv[d[me]..d[me + 1]].copy_from_slice(send);
            self.take_all(tag, recv, &d, "all_gather_v piece")
        })
    }

    fn scatter_v<T: Datum>(
        &self,
        send: &[T],
        counts: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<(), CommError> {
        let tag = self.raw.next_tag();
        validate::scatter_v(self.size(), root)?;
        if self.me() != root {
            return self.take_into(root, tag, recv, "scatter_v receive buffer");
        }
        let p = self.size();
        let d = match validate::scatter_v_root(p, root, send.len(), counts, recv.len()) {
            Ok(d) => d,
            Err(e) => {
                // Send every other rank an empty piece rather than leave it waiting: it
                // completes, with a length mismatch unless it expected nothing.
                let empty: Vec<(usize, &[T])> = (0..p)
                    .filter(|&j| j != root)
                    .map(|j| (j, &[][..]))
                    .collect();
                let _ = self.exchange(tag, &empty, || Ok(()));
                return Err(e);
            }
        };
        let sends: Vec<(usize, &[T])> = (0..p)
            .filter(|&j| j != root)
            .map(|j| (j, &send[d[j]..d[j + 1]]))
            .collect();
        self.exchange(tag, &sends, || {
            recv.copy_from_slice(&send[d[root]..d[root + 1]]);
            Ok(())
        })
    }

    fn reduce_scatter<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        let tag = self.raw.next_tag();
        let (p, me) = (self.size(), self.me());
        let d = validate::reduce_scatter::<T>(p, me, send.len(), recv.len(), counts, op)?;
        let c = counts[0];
        let uniform = counts.iter().all(|&x| x == c);
        if uniform && c.checked_mul(p).is_some_and(|t| t <= self.max_message) {
            if c > 0 {
                let dt = datatype::<T>()?;
                // SAFETY: `send` holds c·P elements and `recv` c elements of `dt`, the datatype
                // of `T`, as MPI_Reduce_scatter_block with count c needs; they do not overlap;
                // blocking call.
                let rc = unsafe {
                    ffi::MPI_Reduce_scatter_block(
                        send.as_ptr().cast::<c_void>(),
                        recv.as_mut_ptr().cast::<c_void>(),
                        to_int(c)?,
                        dt,
                        system_op(op),
                        self.raw.comm,
                    )
                };
                check(rc, "MPI_Reduce_scatter_block")?;
            }
            self.add_volume::<T>(&volume::reduce_scatter(me, counts));
            return Ok(());
        }
        self.reduce_scatter_p2p(tag, send, recv, &d, op)
    }

    fn all_to_all_v<T: Datum>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<(), CommError> {
        let tag = self.raw.next_tag();
        let (p, me) = (self.size(), self.me());
        let (sd, rd) =
            validate::all_to_all_v(p, me, send.len(), send_counts, recv.len(), recv_counts)?;
        let sends: Vec<(usize, &[T])> = (0..p)
            .filter(|&j| j != me)
            .map(|j| (j, &send[sd[j]..sd[j + 1]]))
            .collect();
        self.exchange(tag, &sends, || {
            recv[rd[me]..rd[me + 1]].copy_from_slice(&send[sd[me]..sd[me + 1]]);
            self.take_all(tag, recv, &rd, "all_to_all_v piece")
        })
    }

    fn stats(&self) -> CommStats {
        self.counters.snapshot()
    }

    fn reset_stats(&self) {
        self.counters.reset();
    }
}
