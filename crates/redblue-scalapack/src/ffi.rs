//! The exported Fortran symbols (feature `mpi`): each finds the BLACS grid and its MPI
//! communicator, calls the routine of this crate, and reports what ScaLAPACK reports — or passes
//! the call on to the real ScaLAPACK behind this library (`dlsym(RTLD_NEXT, …)`).
//!
//! BLACS and the reporting hooks (`pxerbla_`, `PB_Cabort`) are looked up at run time in the
//! process (`dlsym(RTLD_DEFAULT, …)`), so a program's own `pxerbla_` or `PB_Cabort` (ScaLAPACK's
//! testers record errors with theirs) is the one called, as it would be by ScaLAPACK.

use crate::args::{BlacsGrid, Descriptor, Position};
use crate::cholesky::{potrf_operand, potrs_operands, pposv, ppotrf, ppotrs};
use crate::common::{Array, Outcome, ServeError};
use crate::gemm::{pgemm, GemmArgs};
use crate::lu::{gesv_operands, getrf_operand, getrs_operands, pgesv, pgetrf, pgetrs};
use mpi::ffi::{MPI_Abort, MPI_Comm_f2c, MPI_Comm_rank, MPI_Comm_size, RSMPI_COMM_WORLD};
use redblue_comm::MpiComm;
use redblue_core::{c32, c64};
use redblue_kernels::KernelScalar;
use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

/// The routines this library exports, in the report's order.
const ROUTINES: [&str; 28] = [
    "psgemm", "pdgemm", "pcgemm", "pzgemm", "psgetrf", "pdgetrf", "pcgetrf", "pzgetrf", "psgetrs",
    "pdgetrs", "pcgetrs", "pzgetrs", "psgesv", "pdgesv", "pcgesv", "pzgesv", "pspotrf", "pdpotrf",
    "pcpotrf", "pzpotrf", "pspotrs", "pdpotrs", "pcpotrs", "pzpotrs", "psposv", "pdposv", "pcposv",
    "pzposv",
];

/// Calls served and passed on, per routine (the index in [`ROUTINES`]).
static SERVED: [AtomicU64; 28] = [const { AtomicU64::new(0) }; 28];
static PASSED: [AtomicU64; 28] = [const { AtomicU64::new(0) }; 28];
/// Why calls were passed on (first of each reason), for the report.
static REASONS: Mutex<Vec<(&'static str, &'static str)>> = Mutex::new(Vec::new());
static REPORT: Once = Once::new();
static WORLD_RANK: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Inside a call passed on to ScaLAPACK: its own calls of exported routines (`p?gesv` calls
    /// `p?getrf`) go straight to ScaLAPACK, uncounted.
    static PASSING_ON: Cell<bool> = const { Cell::new(false) };
}

/// A symbol of the process, or of the libraries after this one (`next`).
fn symbol(name: &CStr, next: bool) -> *mut c_void {
    let handle = if next {
        libc::RTLD_NEXT
    } else {
        libc::RTLD_DEFAULT
    };
    // SAFETY: dlsym with a pseudo-handle and a NUL-terminated name is always callable.
    unsafe { libc::dlsym(handle, name.as_ptr()) }
}

/// Prints the report at exit when `REDBLUE_SCALAPACK_REPORT=1`; registered by the first call.
extern "C" fn print_report() {
    let rank = WORLD_RANK.load(Ordering::Relaxed);
    let mut report = String::new();
    for (k, name) in ROUTINES.iter().enumerate() {
        let (served, passed) = (
            SERVED[k].load(Ordering::Relaxed),
            PASSED[k].load(Ordering::Relaxed),
        );
        if served + passed > 0 {
            report += &format!(
                "redblue-scalapack: rank {rank}: {name}: served {served}, passed on {passed}\n"
            );
        }
    }
    for (name, why) in REASONS.lock().map(|r| r.clone()).unwrap_or_default() {
        report += &format!("redblue-scalapack: rank {rank}: {name} passed on: {why}\n");
    }
    // One write, so that the processes' reports do not interleave line by line.
    let _ = std::io::Write::write_all(&mut std::io::stderr().lock(), report.as_bytes());
}

fn register_report() {
    let mut initialized: c_int = 0;
    // SAFETY: MPI_Initialized may be called at any time; a valid out-pointer.
    unsafe { mpi::ffi::MPI_Initialized(&mut initialized) };
    if initialized == 0 {
        return; // no grid can exist yet: the call is reported as illegal, as ScaLAPACK does
    }
    REPORT.call_once(|| {
        let mut rank: c_int = 0;
        // SAFETY: MPI is initialised; `rank` is a valid out-pointer.
        unsafe { MPI_Comm_rank(RSMPI_COMM_WORLD, &mut rank) };
        WORLD_RANK.store(u64::try_from(rank).unwrap_or(0), Ordering::Relaxed);
        if std::env::var("REDBLUE_SCALAPACK_REPORT").is_ok_and(|v| v == "1") {
            // SAFETY: `print_report` is a plain function that lives as long as the process.
            unsafe { libc::atexit(print_report) };
        }
    });
}

/// The grid of `ictxt` (`blacs_gridinfo_`), or `None` for an invalid context or a process
/// outside it.
fn grid_of(ictxt: c_int) -> Option<BlacsGrid> {
    type GridInfo =
        unsafe extern "C" fn(*const c_int, *mut c_int, *mut c_int, *mut c_int, *mut c_int);
    let f = symbol(c"blacs_gridinfo_", false);
    if f.is_null() {
        return None;
    }
    // SAFETY: `blacs_gridinfo_` has this signature (BLACS's Fortran interface).
    let f: GridInfo = unsafe { std::mem::transmute::<*mut c_void, GridInfo>(f) };
    let (mut r, mut c, mut mr, mut mc) = (-1, -1, -1, -1);
    // SAFETY: valid pointers; gridinfo returns -1s for an invalid context instead of failing.
    unsafe { f(&ictxt, &mut r, &mut c, &mut mr, &mut mc) };
    BlacsGrid::from_gridinfo(r, c, mr, mc)
}

/// A duplicate of the grid's own MPI communicator (`blacs_get_(ictxt, 10)`), whose ranks are
/// `prow·npcol + pcol`; `None` if BLACS does not give one of the grid's size.
fn comm_of(ictxt: c_int, g: &BlacsGrid) -> Option<MpiComm> {
    type Get = unsafe extern "C" fn(*const c_int, *const c_int, *mut c_int);
    let f = symbol(c"blacs_get_", false);
    if f.is_null() {
        return None;
    }
    // SAFETY: `blacs_get_` has this signature (BLACS's Fortran interface).
    let f: Get = unsafe { std::mem::transmute::<*mut c_void, Get>(f) };
    let mut fcomm: c_int = 0;
    // SAFETY: `ictxt` is a valid context (gridinfo said so); what = 10 writes one integer.
    unsafe { f(&ictxt, &10, &mut fcomm) };
    // SAFETY: MPI is initialised; the handle is the grid's communicator.
    let comm = unsafe { MPI_Comm_f2c(fcomm) };
    let (mut size, mut rank): (c_int, c_int) = (0, 0);
    // SAFETY: `comm` is a live communicator; valid out-pointers.
    unsafe {
        MPI_Comm_size(comm, &mut size);
        MPI_Comm_rank(comm, &mut rank);
    }
    if usize::try_from(size).ok()? != g.nprow * g.npcol || usize::try_from(rank).ok()? != g.rank() {
        return None;
    }
    // SAFETY: MPI is initialised by the program and `comm` is its grid's communicator; the
    // handle is dropped before this call returns.
    unsafe { MpiComm::duplicate_of(comm) }.ok()
}

/// Ends the job after a failure inside a served call (communication): the other processes may
/// be waiting for this one.
fn fail(routine: &str, e: &ServeError) -> ! {
    eprintln!("redblue-scalapack: {routine}: {e}; aborting the job");
    // SAFETY: MPI is initialised; MPI_Abort does not return.
    unsafe { MPI_Abort(RSMPI_COMM_WORLD, 1) };
    std::process::abort()
}

/// ScaLAPACK's `pxerbla_(ictxt, name, info)` for an illegal argument of a LAPACK-level routine.
fn pxerbla(ictxt: c_int, routine: &str, info: c_int) {
    type Xerbla = unsafe extern "C" fn(*const c_int, *const c_char, *const c_int, usize);
    let f = symbol(c"pxerbla_", false);
    let name = routine.to_ascii_uppercase();
    if f.is_null() {
        eprintln!(
            "{{{ictxt}}}: On entry to {name} parameter number {} had an illegal value",
            -info
        );
        return;
    }
    // SAFETY: `pxerbla_` has this signature (Fortran, one hidden length).
    let f: Xerbla = unsafe { std::mem::transmute::<*mut c_void, Xerbla>(f) };
    // SAFETY: valid pointers; the name's length is passed as gfortran expects.
    unsafe { f(&ictxt, name.as_ptr().cast(), &(-info), name.len()) };
}

/// PBLAS's `PB_Cabort(ictxt, name, info)` for an illegal argument of `p?gemm`.
fn pb_cabort(ictxt: c_int, routine: &str, info: c_int) {
    type Abort = unsafe extern "C" fn(c_int, *const c_char, c_int);
    let f = symbol(c"PB_Cabort", false);
    let name = std::ffi::CString::new(routine.to_ascii_uppercase()).unwrap_or_default();
    if f.is_null() {
        eprintln!(
            "PBLAS ERROR in {}: parameter {} had an illegal value",
            routine, -info
        );
        // SAFETY: MPI is initialised; MPI_Abort does not return.
        unsafe { MPI_Abort(RSMPI_COMM_WORLD, -info) };
        return;
    }
    // SAFETY: `PB_Cabort` has this signature (PBLAS's C interface).
    let f: Abort = unsafe { std::mem::transmute::<*mut c_void, Abort>(f) };
    // SAFETY: a valid NUL-terminated name.
    unsafe { f(ictxt, name.as_ptr(), info) };
}

/// The real routine `name_` behind this library, or an end of the job saying there is none.
fn real<F: Copy>(name: &str) -> F {
    let symbol_name = std::ffi::CString::new(format!("{name}_")).unwrap_or_default();
    let f = symbol(&symbol_name, true);
    if f.is_null() {
        eprintln!(
            "redblue-scalapack: {name}: this call needs the real ScaLAPACK, and none is loaded \
             after this library; aborting the job"
        );
        // SAFETY: MPI is initialised; MPI_Abort does not return.
        unsafe { MPI_Abort(RSMPI_COMM_WORLD, 1) };
        std::process::abort();
    }
    assert_eq!(size_of::<F>(), size_of::<*mut c_void>());
    // SAFETY: `F` is the function pointer type of `name_` (the caller's contract) and has a
    // pointer's size.
    unsafe { std::mem::transmute_copy::<*mut c_void, F>(&f) }
}

/// Runs `serve` unless inside a passed-on call; counts and reports its outcome, or runs
/// `pass_on` (the real routine) when the call is not served. Returns the `info > 0` of a
/// served factorisation that stopped at a column, for the caller to set.
fn dispatch(
    routine: &'static str,
    ictxt: c_int,
    serve: impl FnOnce(&MpiComm, &BlacsGrid) -> Result<Outcome, ServeError>,
    illegal_grid: Position,
    report_illegal: impl FnOnce(Position),
    pass_on: impl FnOnce(),
) -> Option<c_int> {
    let k = ROUTINES.iter().position(|&r| r == routine).unwrap_or(0);
    if PASSING_ON.get() {
        pass_on();
        return None;
    }
    register_report();
    let outcome = match grid_of(ictxt) {
        None => Ok(Outcome::Illegal(illegal_grid)),
        Some(g) => match comm_of(ictxt, &g) {
            None => Ok(Outcome::PassOn(
                "a grid whose communicator BLACS does not give",
            )),
            Some(comm) => serve(&comm, &g),
        },
    };
    match outcome {
        Ok(Outcome::Served) => {
            SERVED[k].fetch_add(1, Ordering::Relaxed);
        }
        Ok(Outcome::Stopped(info)) => {
            SERVED[k].fetch_add(1, Ordering::Relaxed);
            return Some(info);
        }
        Ok(Outcome::Illegal(pos)) => {
            SERVED[k].fetch_add(1, Ordering::Relaxed);
            report_illegal(pos);
        }
        Ok(Outcome::PassOn(why)) => {
            PASSED[k].fetch_add(1, Ordering::Relaxed);
            if let Ok(mut reasons) = REASONS.lock() {
                if !reasons.iter().any(|&(r, w)| r == routine && w == why) {
                    reasons.push((routine, why));
                }
            }
            PASSING_ON.set(true);
            pass_on();
            PASSING_ON.set(false);
        }
        Err(e) => fail(routine, &e),
    }
    None
}

/// A 9-entry descriptor argument.
///
/// # Safety
/// `d` points at 9 readable integers.
unsafe fn desc9(d: *const c_int) -> Descriptor {
    // SAFETY: the caller's contract.
    Descriptor::from_9(unsafe { &*d.cast::<[c_int; 9]>() })
}

/// `IPIV`'s local length: `LOCr(M_A) + MB_A` (ScaLAPACK's documented size).
fn ipiv_len(d: &Descriptor, g: &BlacsGrid) -> usize {
    d.local_rows(g) + usize::try_from(d.mb).unwrap_or(0)
}

type Gemm<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_char,
    *const c_int,
    *const c_int,
    *const c_int,
    *const T,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *const T,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
);
type Getrf<T> = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut c_int,
    *mut c_int,
);
type Getrs<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_int,
    *const c_int,
    *const T,
    *const c_int,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut c_int,
    usize,
);
type Gesv<T> = unsafe extern "C" fn(
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut c_int,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut c_int,
);
type Potrf<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_int,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut c_int,
    usize,
);
type Potrs<T> = unsafe extern "C" fn(
    *const c_char,
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut T,
    *const c_int,
    *const c_int,
    *const c_int,
    *mut c_int,
    usize,
);

/// `p?gemm_` for one scalar type.
///
/// # Safety
/// ScaLAPACK's contract for `p?gemm_`.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm<T: KernelScalar>(
    routine: &'static str,
    transa: *const c_char,
    transb: *const c_char,
    m: *const c_int,
    n: *const c_int,
    k: *const c_int,
    alpha: *const T,
    a: *mut T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut T,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    beta: *const T,
    c: *mut T,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
) {
    // SAFETY (this block): ScaLAPACK's contract: every pointer is valid for its argument.
    unsafe {
        let args = GemmArgs {
            transa: *transa as u8,
            transb: *transb as u8,
            m: *m,
            n: *n,
            k: *k,
            a: (*ia, *ja, Descriptor::read_pblas(desca)),
            b: (*ib, *jb, Descriptor::read_pblas(descb)),
            c: (*ic, *jc, Descriptor::read_pblas(descc)),
        };
        let ictxt = args.a.2.ctxt;
        dispatch(
            routine,
            ictxt,
            |comm, g| {
                let (aa, bb) = (Array::from_raw(a, false), Array::from_raw(b, false));
                pgemm(
                    comm,
                    g,
                    &args,
                    *alpha,
                    &aa,
                    &bb,
                    *beta,
                    &mut Array::from_raw(c, true),
                )
            },
            Position::entry(10, 2),
            |pos| pb_cabort(ictxt, routine, pos.info()),
            || {
                real::<Gemm<T>>(routine)(
                    transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta, c,
                    ic, jc, descc,
                )
            },
        );
    }
}

/// `p?getrf_` for one scalar type.
///
/// # Safety
/// ScaLAPACK's contract for `p?getrf_`.
unsafe fn getrf<T: KernelScalar>(
    routine: &'static str,
    m: *const c_int,
    n: *const c_int,
    a: *mut T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    ipiv: *mut c_int,
    info: *mut c_int,
) {
    // SAFETY (this block): ScaLAPACK's contract: every pointer is valid for its argument.
    unsafe {
        *info = 0;
        let op = getrf_operand(*m, *n, *ia, *ja, desc9(desca));
        let ictxt = op.desc.ctxt;
        dispatch(
            routine,
            ictxt,
            |comm, g| {
                let ipiv = std::slice::from_raw_parts_mut(ipiv, ipiv_len(&op.desc, g));
                pgetrf(comm, g, &op, &mut Array::from_raw(a, true), ipiv)
            },
            Position::entry(6, 2),
            |pos| {
                *info = pos.info();
                pxerbla(ictxt, routine, *info);
            },
            || real::<Getrf<T>>(routine)(m, n, a, ia, ja, desca, ipiv, info),
        );
    }
}

/// `p?getrs_` for one scalar type.
///
/// # Safety
/// ScaLAPACK's contract for `p?getrs_`.
#[allow(clippy::too_many_arguments)]
unsafe fn getrs<T: KernelScalar>(
    routine: &'static str,
    trans: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *const T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    ipiv: *const c_int,
    b: *mut T,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    // SAFETY (this block): ScaLAPACK's contract: every pointer is valid for its argument.
    unsafe {
        *info = 0;
        let ops = getrs_operands(
            *n,
            *nrhs,
            (*ia, *ja, desc9(desca)),
            (*ib, *jb, desc9(descb)),
        );
        let ictxt = ops[0].desc.ctxt;
        dispatch(
            routine,
            ictxt,
            |comm, g| {
                let ipiv = std::slice::from_raw_parts(ipiv, ipiv_len(&ops[0].desc, g));
                let aa = Array::from_raw(a.cast_mut(), false);
                pgetrs(
                    comm,
                    g,
                    *trans as u8,
                    &ops,
                    &aa,
                    ipiv,
                    &mut Array::from_raw(b, true),
                )
            },
            Position::entry(7, 2),
            |pos| {
                *info = pos.info();
                pxerbla(ictxt, routine, *info);
            },
            || {
                real::<Getrs<T>>(routine)(
                    trans, n, nrhs, a, ia, ja, desca, ipiv, b, ib, jb, descb, info, 1,
                )
            },
        );
    }
}

/// `p?gesv_` for one scalar type.
///
/// # Safety
/// ScaLAPACK's contract for `p?gesv_`.
#[allow(clippy::too_many_arguments)]
unsafe fn gesv<T: KernelScalar>(
    routine: &'static str,
    n: *const c_int,
    nrhs: *const c_int,
    a: *mut T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    ipiv: *mut c_int,
    b: *mut T,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    // SAFETY (this block): ScaLAPACK's contract: every pointer is valid for its argument.
    unsafe {
        *info = 0;
        let ops = gesv_operands(
            *n,
            *nrhs,
            (*ia, *ja, desc9(desca)),
            (*ib, *jb, desc9(descb)),
        );
        let ictxt = ops[0].desc.ctxt;
        dispatch(
            routine,
            ictxt,
            |comm, g| {
                let ipiv = std::slice::from_raw_parts_mut(ipiv, ipiv_len(&ops[0].desc, g));
                pgesv(
                    comm,
                    g,
                    &ops,
                    &mut Array::from_raw(a, true),
                    ipiv,
                    &mut Array::from_raw(b, true),
                )
            },
            Position::entry(6, 2),
            |pos| {
                *info = pos.info();
                pxerbla(ictxt, routine, *info);
            },
            || real::<Gesv<T>>(routine)(n, nrhs, a, ia, ja, desca, ipiv, b, ib, jb, descb, info),
        );
    }
}

/// `p?potrf_` for one scalar type.
///
/// # Safety
/// ScaLAPACK's contract for `p?potrf_`.
unsafe fn potrf<T: KernelScalar>(
    routine: &'static str,
    uplo: *const c_char,
    n: *const c_int,
    a: *mut T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    info: *mut c_int,
) {
    // SAFETY (this block): ScaLAPACK's contract: every pointer is valid for its argument.
    unsafe {
        *info = 0;
        let op = potrf_operand(*n, *ia, *ja, desc9(desca));
        let ictxt = op.desc.ctxt;
        let stopped = dispatch(
            routine,
            ictxt,
            |comm, g| ppotrf(comm, g, *uplo as u8, &op, &mut Array::from_raw(a, true)),
            Position::entry(6, 2),
            |pos| {
                *info = pos.info();
                pxerbla(ictxt, routine, *info);
            },
            || real::<Potrf<T>>(routine)(uplo, n, a, ia, ja, desca, info, 1),
        );
        if let Some(column) = stopped {
            *info = column;
        }
    }
}

/// `p?potrs_` (`solve = true`) or `p?posv_` for one scalar type.
///
/// # Safety
/// ScaLAPACK's contract for `p?potrs_` or `p?posv_`.
#[allow(clippy::too_many_arguments)]
unsafe fn potrs_or_posv<T: KernelScalar>(
    routine: &'static str,
    factor_first: bool,
    uplo: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *mut T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut T,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    // SAFETY (this block): ScaLAPACK's contract: every pointer is valid for its argument.
    unsafe {
        *info = 0;
        let ops = potrs_operands(
            *n,
            *nrhs,
            (*ia, *ja, desc9(desca)),
            (*ib, *jb, desc9(descb)),
        );
        let ictxt = ops[0].desc.ctxt;
        let stopped = dispatch(
            routine,
            ictxt,
            |comm, g| {
                let mut bb = Array::from_raw(b, true);
                if factor_first {
                    pposv(
                        comm,
                        g,
                        *uplo as u8,
                        &ops,
                        &mut Array::from_raw(a, true),
                        &mut bb,
                    )
                } else {
                    ppotrs(
                        comm,
                        g,
                        *uplo as u8,
                        &ops,
                        &Array::from_raw(a, false),
                        &mut bb,
                    )
                }
            },
            Position::entry(7, 2),
            |pos| {
                *info = pos.info();
                pxerbla(ictxt, routine, *info);
            },
            || {
                real::<Potrs<T>>(routine)(
                    uplo, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, info, 1,
                )
            },
        );
        if let Some(column) = stopped {
            *info = column;
        }
    }
}

/// The exported symbols of one scalar type.
macro_rules! exports {
    ($t:ty, $gemm:ident, $getrf:ident, $getrs:ident, $gesv:ident, $potrf:ident, $potrs:ident, $posv:ident) => {
        /// ScaLAPACK's routine of this name (PBLAS's C interface; Fortran callers' hidden
        /// string lengths are not read).
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $gemm(
            transa: *const c_char,
            transb: *const c_char,
            m: *const c_int,
            n: *const c_int,
            k: *const c_int,
            alpha: *const $t,
            a: *mut $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            b: *mut $t,
            ib: *const c_int,
            jb: *const c_int,
            descb: *const c_int,
            beta: *const $t,
            c: *mut $t,
            ic: *const c_int,
            jc: *const c_int,
            descc: *const c_int,
        ) {
            let name = stringify!($gemm).trim_end_matches('_');
            // SAFETY: the caller's contract.
            unsafe {
                gemm::<$t>(
                    name, transa, transb, m, n, k, alpha, a, ia, ja, desca, b, ib, jb, descb, beta,
                    c, ic, jc, descc,
                )
            }
        }

        /// ScaLAPACK's routine of this name.
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $getrf(
            m: *const c_int,
            n: *const c_int,
            a: *mut $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            ipiv: *mut c_int,
            info: *mut c_int,
        ) {
            let name = stringify!($getrf).trim_end_matches('_');
            // SAFETY: the caller's contract.
            unsafe { getrf::<$t>(name, m, n, a, ia, ja, desca, ipiv, info) }
        }

        /// ScaLAPACK's routine of this name (the hidden length of `TRANS` is not read).
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $getrs(
            trans: *const c_char,
            n: *const c_int,
            nrhs: *const c_int,
            a: *const $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            ipiv: *const c_int,
            b: *mut $t,
            ib: *const c_int,
            jb: *const c_int,
            descb: *const c_int,
            info: *mut c_int,
        ) {
            let name = stringify!($getrs).trim_end_matches('_');
            // SAFETY: the caller's contract.
            unsafe {
                getrs::<$t>(
                    name, trans, n, nrhs, a, ia, ja, desca, ipiv, b, ib, jb, descb, info,
                )
            }
        }

        /// ScaLAPACK's routine of this name.
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $gesv(
            n: *const c_int,
            nrhs: *const c_int,
            a: *mut $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            ipiv: *mut c_int,
            b: *mut $t,
            ib: *const c_int,
            jb: *const c_int,
            descb: *const c_int,
            info: *mut c_int,
        ) {
            let name = stringify!($gesv).trim_end_matches('_');
            // SAFETY: the caller's contract.
            unsafe {
                gesv::<$t>(
                    name, n, nrhs, a, ia, ja, desca, ipiv, b, ib, jb, descb, info,
                )
            }
        }

        /// ScaLAPACK's routine of this name (the hidden length of `UPLO` is not read).
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $potrf(
            uplo: *const c_char,
            n: *const c_int,
            a: *mut $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            info: *mut c_int,
        ) {
            let name = stringify!($potrf).trim_end_matches('_');
            // SAFETY: the caller's contract.
            unsafe { potrf::<$t>(name, uplo, n, a, ia, ja, desca, info) }
        }

        /// ScaLAPACK's routine of this name (the hidden length of `UPLO` is not read).
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $potrs(
            uplo: *const c_char,
            n: *const c_int,
            nrhs: *const c_int,
            a: *mut $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            b: *mut $t,
            ib: *const c_int,
            jb: *const c_int,
            descb: *const c_int,
            info: *mut c_int,
        ) {
            let name = stringify!($potrs).trim_end_matches('_');
            // SAFETY: the caller's contract.
            unsafe {
                potrs_or_posv::<$t>(
                    name, false, uplo, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, info,
                )
            }
        }

        /// ScaLAPACK's routine of this name (the hidden length of `UPLO` is not read).
        ///
        /// # Safety
        /// ScaLAPACK's contract for this routine.
        #[no_mangle]
        pub unsafe extern "C" fn $posv(
            uplo: *const c_char,
            n: *const c_int,
            nrhs: *const c_int,
            a: *mut $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            b: *mut $t,
            ib: *const c_int,
            jb: *const c_int,
            descb: *const c_int,
            info: *mut c_int,
        ) {
            let name = stringify!($posv).trim_end_matches('_');
            // SAFETY: the caller's contract.
            unsafe {
                potrs_or_posv::<$t>(
                    name, true, uplo, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, info,
                )
            }
        }
    };
}

exports!(f32, psgemm_, psgetrf_, psgetrs_, psgesv_, pspotrf_, pspotrs_, psposv_);
exports!(f64, pdgemm_, pdgetrf_, pdgetrs_, pdgesv_, pdpotrf_, pdpotrs_, pdposv_);
exports!(c32, pcgemm_, pcgetrf_, pcgetrs_, pcgesv_, pcpotrf_, pcpotrs_, pcposv_);
exports!(c64, pzgemm_, pzgetrf_, pzgetrs_, pzgesv_, pzpotrf_, pzpotrs_, pzposv_);
