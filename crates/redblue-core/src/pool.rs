//! A per-thread pool of large buffers reused across calls (COSMA keeps a memory pool for the
//! same reason): a fresh multi-megabyte `Vec` is mapped by the operating system page by page on
//! first touch, which costs more than copying into memory already mapped.
//!
//! Algorithms take their exchange buffers with [`take_buffer`] and hand them back with
//! [`recycle`]; a thread keeps at most [`POOL_BUFFERS`] buffers (the largest) until it ends
//! or calls [`release_buffers`]. Buffers below [`POOL_MIN_BYTES`] are not kept: the allocator
//! serves those from memory it already has. (glibc maps blocks from 128 KiB up afresh at
//! first, so the pool keeps those: an LU step's half-megabyte exchange buffers faulted their
//! pages in every step when only blocks from 1 MiB up were kept.)

use crate::Scalar;
use std::any::Any;
use std::cell::RefCell;

/// Most buffers a thread keeps.
pub const POOL_BUFFERS: usize = 16;

/// Smallest buffer (in bytes of capacity) worth keeping.
pub const POOL_MIN_BYTES: usize = 1 << 16;

thread_local! {
    static POOL: RefCell<Vec<(usize, Box<dyn Any>)>> = const { RefCell::new(Vec::new()) };
}

/// A vector of `len` elements: a kept buffer of capacity at least `len` whose elements are
/// whatever it held last (the caller overwrites every element), or a new one filled with
/// `fill`.
pub fn take_buffer<T: Copy + 'static>(len: usize, fill: T) -> Vec<T> {
    let bytes = len * size_of::<T>();
    let kept = (bytes >= POOL_MIN_BYTES)
        .then(|| {
            POOL.with_borrow_mut(|pool| {
                // The smallest kept buffer of this type that is large enough.
                let best = pool
                    .iter()
                    .enumerate()
                    .filter(|(_, (cap, b))| *cap >= bytes && b.is::<Vec<T>>())
                    .min_by_key(|(_, (cap, _))| *cap)
                    .map(|(i, _)| i)?;
                pool.swap_remove(best).1.downcast::<Vec<T>>().ok()
            })
        })
        .flatten();
    match kept {
        Some(mut v) => {
            if v.len() >= len {
                v.truncate(len);
            } else {
                v.resize(len, fill);
            }
            *v
        }
        None => vec![fill; len],
    }
}

/// [`take_buffer`] that reports, instead of aborting, a buffer the allocator cannot give: for
/// the large buffers of a run, whose failure the ranks then agree on before any data moves.
///
/// A new buffer is `vec![fill; len]`, which for a `fill` of zero bits (`0.0` of `f32` and `f64`)
/// asks the allocator for zeroed memory: pages the operating system maps zeroed on first touch,
/// so that nothing is written here and the caller's first writes are the only pass over them.
///
/// # Errors
/// The allocator's refusal (a kept buffer is never refused).
pub fn try_take_buffer<T: Copy + 'static>(
    len: usize,
    fill: T,
) -> Result<Vec<T>, std::collections::TryReserveError> {
    Ok(try_take(len, fill)?.0)
}

/// [`try_take_buffer`] of `len` zeros: a kept buffer is zeroed, a new one is the allocator's
/// zeroed memory (not written here for `f32` and `f64`).
///
/// # Errors
/// The allocator's refusal.
pub fn try_take_zeroed<T: Scalar>(len: usize) -> Result<Vec<T>, std::collections::TryReserveError> {
    let (mut v, kept) = try_take(len, T::zero())?;
    if kept {
        v.fill(T::zero());
    }
    Ok(v)
}

/// [`try_take_buffer`], and whether the buffer was a kept one.
fn try_take<T: Copy + 'static>(
    len: usize,
    fill: T,
) -> Result<(Vec<T>, bool), std::collections::TryReserveError> {
    let bytes = len.saturating_mul(size_of::<T>());
    let kept = (bytes >= POOL_MIN_BYTES)
        .then(|| {
            POOL.with_borrow_mut(|pool| {
                let best = pool
                    .iter()
                    .enumerate()
                    .filter(|(_, (cap, b))| *cap >= bytes && b.is::<Vec<T>>())
                    .min_by_key(|(_, (cap, _))| *cap)
                    .map(|(i, _)| i)?;
                pool.swap_remove(best).1.downcast::<Vec<T>>().ok()
            })
        })
        .flatten();
    let Some(mut v) = kept.map(|v| *v) else {
        // Whether the allocator can give it (a refusal is an error, not an abort), then the
        // buffer itself (`vec!` may take zeroed pages instead of writing `fill`).
        Vec::<T>::new().try_reserve_exact(len)?;
        return Ok((vec![fill; len], false));
    };
    if v.len() >= len {
        v.truncate(len);
    } else {
        v.try_reserve_exact(len - v.len())?;
        v.resize(len, fill);
    }
    Ok((v, true))
}

/// Hands a buffer back to this thread's pool (kept if it is large enough and among the
/// [`POOL_BUFFERS`] largest).
pub fn recycle<T: 'static>(v: Vec<T>) {
    let bytes = v.capacity() * size_of::<T>();
    if bytes < POOL_MIN_BYTES {
        return;
    }
    POOL.with_borrow_mut(|pool| {
        pool.push((bytes, Box::new(v)));
        if pool.len() > POOL_BUFFERS {
            let smallest = (0..pool.len())
                .min_by_key(|&i| pool[i].0)
                .expect("the pool is not empty");
            pool.swap_remove(smallest);
        }
    });
}

/// Frees every buffer this thread keeps; returns how many bytes of capacity were freed.
pub fn release_buffers() -> usize {
    POOL.with_borrow_mut(|pool| pool.drain(..).map(|(bytes, _)| bytes).sum())
}

/// Bytes of capacity this thread keeps.
pub fn pooled_bytes() -> usize {
    POOL.with_borrow(|pool| pool.iter().map(|(bytes, _)| bytes).sum())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_recycled_buffer_is_reused_without_refilling() {
        release_buffers();
        let len = POOL_MIN_BYTES / 8 + 8;
        let mut v = take_buffer(len, 0.0f64);
        v[3] = 7.0;
        let ptr = v.as_ptr();
        recycle(v);
        assert_eq!(pooled_bytes(), len * 8);
        // Shorter request: the same memory, old contents kept, no fill pass.
        let w = take_buffer(len - 1, 0.0f64);
        assert_eq!((w.as_ptr(), w.len(), w[3]), (ptr, len - 1, 7.0));
        assert_eq!(pooled_bytes(), 0);
        recycle(w);
        // Another type never gets it.
        let z = take_buffer(len, 0u64);
        assert!(z.iter().all(|&x| x == 0));
        assert_eq!(pooled_bytes(), len * 8);
        assert_eq!(release_buffers(), len * 8);
    }

    #[test]
    fn a_buffer_the_allocator_refuses_is_an_error() {
        release_buffers();
        assert!(try_take_buffer(usize::MAX / 16, 0.0f64).is_err());
        let v = try_take_buffer(POOL_MIN_BYTES, 1u8).unwrap();
        assert!(v.len() == POOL_MIN_BYTES && v.iter().all(|&x| x == 1));
        recycle(v);
        // A kept buffer is reused.
        let w = try_take_buffer(POOL_MIN_BYTES - 1, 0u8).unwrap();
        assert_eq!(w.len(), POOL_MIN_BYTES - 1);
        release_buffers();
    }

    #[test]
    fn zeroed_buffers_are_zeros_whether_new_or_kept() {
        release_buffers();
        let v = try_take_zeroed::<f64>(POOL_MIN_BYTES).unwrap();
        assert!(v.len() == POOL_MIN_BYTES && v.iter().all(|&x| x == 0.0));
        let mut dirty = v;
        dirty.fill(3.0);
        let ptr = dirty.as_ptr();
        recycle(dirty);
        let w = try_take_zeroed::<f64>(POOL_MIN_BYTES - 8).unwrap();
        assert_eq!(w.as_ptr(), ptr, "the kept buffer");
        assert!(w.iter().all(|&x| x == 0.0));
        release_buffers();
    }

    #[test]
    fn small_buffers_are_not_kept_and_the_pool_is_bounded() {
        release_buffers();
        recycle(vec![1.0f32; 16]);
        assert_eq!(pooled_bytes(), 0);
        for i in 0..POOL_BUFFERS + 3 {
            recycle(vec![0u8; POOL_MIN_BYTES + i]);
        }
        let kept: usize = (3..POOL_BUFFERS + 3).map(|i| POOL_MIN_BYTES + i).sum();
        assert_eq!(pooled_bytes(), kept, "the largest buffers stay");
        // A longer request than the buffer holds: the tail is filled.
        let v = take_buffer(POOL_MIN_BYTES + 4, 9u8);
        assert_eq!(v.len(), POOL_MIN_BYTES + 4);
        release_buffers();
    }
}
