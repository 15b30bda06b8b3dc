//! Working space for the packed products: zeroed memory on 2 MiB pages where the system grants
//! them (Linux, transparent huge pages in `madvise` or `always` mode), ordinary pages otherwise.
//!
//! Why: the packed panels are read again and again from the second-level cache, which is indexed
//! by physical address. On 4 KiB pages the packing space lands on whatever frames the system
//! hands out, so some cache sets get more of a panel than they have ways and others less, and
//! which changes from process to process; a huge page is physically contiguous, so a panel of
//! up to 2 MiB covers the sets evenly (and needs one translation entry). Measured on Zen 3,
//! alternated with the 4 KiB space: `pdpotrf_` (`N = 4096`, `1 × 2`) 4–10 % faster, `pdgetrf_`
//! 2–8 %. The two processes of `pdpotrf_` still differ in the product kernel in some runs
//! (the caller's own array is on 4 KiB pages).

use std::ptr::NonNull;

/// The size and alignment of a huge page (x86-64 and aarch64 Linux).
const HUGE: usize = 2 << 20;

/// `words` zeroed `f64`, owned; on Linux its own mapping, 2 MiB aligned and advised to be
/// backed by huge pages (a hint: the system may still give 4 KiB pages).
pub(crate) struct Space {
    ptr: NonNull<f64>,
    words: usize,
    /// The length in bytes of the mapping (0: the memory is a `Vec`'s, or there is none).
    mapped: usize,
}

impl Default for Space {
    fn default() -> Self {
        Space {
            ptr: NonNull::dangling(),
            words: 0,
            mapped: 0,
        }
    }
}

impl Space {
    /// At least `words` zeroed `f64` (exactly `len()`), on huge pages where granted.
    pub(crate) fn zeroed(words: usize) -> Space {
        if words == 0 {
            return Space::default();
        }
        #[cfg(target_os = "linux")]
        if let Some(space) = Space::mapped(words) {
            return space;
        }
        let mut v = std::mem::ManuallyDrop::new(vec![0.0f64; words]);
        // SAFETY: a `Vec` with `words > 0` elements has a non-null pointer.
        let ptr = unsafe { NonNull::new_unchecked(v.as_mut_ptr()) };
        Space {
            ptr,
            words: v.len(),
            mapped: 0,
        }
    }

    /// A private anonymous mapping of `words` rounded up to whole huge pages, aligned to one,
    /// advised `MADV_HUGEPAGE`; `None` when the system refuses the mapping.
    #[cfg(target_os = "linux")]
    fn mapped(words: usize) -> Option<Space> {
        let bytes = words
            .checked_mul(size_of::<f64>())?
            .checked_next_multiple_of(HUGE)?;
        let reserve = bytes.checked_add(HUGE)?;
        // SAFETY: a fresh private anonymous mapping; no existing memory is touched.
        let raw = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserve,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if raw == libc::MAP_FAILED {
            return None;
        }
        let base = raw as usize;
        let start = base.next_multiple_of(HUGE);
        // SAFETY: the head `base..start` and the tail `start + bytes..base + reserve` lie inside
        // the mapping just made and nothing refers to them; the advice concerns the kept part.
        unsafe {
            if start > base {
                libc::munmap(raw, start - base);
            }
            let tail = base + reserve - (start + bytes);
            if tail > 0 {
                libc::munmap((start + bytes) as *mut libc::c_void, tail);
            }
            // Only a hint: without it (or when refused) the pages are ordinary ones.
            libc::madvise(start as *mut libc::c_void, bytes, libc::MADV_HUGEPAGE);
        }
        Some(Space {
            ptr: NonNull::new(start as *mut f64)?,
            words: bytes / size_of::<f64>(),
            mapped: bytes,
        })
    }

    /// How many `f64` it holds.
    pub(crate) fn len(&self) -> usize {
        self.words
    }

    /// The first of its `len()` initialised `f64`.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut f64 {
        self.ptr.as_ptr()
    }
}

impl Drop for Space {
    fn drop(&mut self) {
        if self.words == 0 {
            return;
        }
        if self.mapped > 0 {
            #[cfg(target_os = "linux")]
            // SAFETY: `ptr..ptr + mapped` is the mapping `mapped()` kept, unmapped once here.
            unsafe {
                libc::munmap(self.ptr.as_ptr().cast(), self.mapped);
            }
        } else {
            // SAFETY: the parts of the `Vec` `zeroed` made, given back once.
            drop(unsafe { Vec::from_raw_parts(self.ptr.as_ptr(), self.words, self.words) });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeroed_space_is_zero_writable_and_huge_aligned_when_mapped() {
        for words in [1, 5, 1 << 18, (1 << 18) + 1, 3 << 19] {
            let mut s = Space::zeroed(words);
            assert!(s.len() >= words);
            // SAFETY: `len()` initialised f64 from the pointer, this the only view.
            let v = unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr(), s.len()) };
            assert!(v.iter().all(|&x| x == 0.0));
            v.iter_mut().enumerate().for_each(|(i, x)| *x = i as f64);
            assert_eq!(v[s.len() - 1], (s.len() - 1) as f64);
            if cfg!(target_os = "linux") {
                assert_eq!(
                    s.mapped,
                    s.len() * 8,
                    "on Linux the space is its own mapping"
                );
                assert_eq!(s.as_mut_ptr() as usize % HUGE, 0, "aligned to a huge page");
                assert_eq!(s.mapped % HUGE, 0, "whole huge pages");
            }
        }
        let mut empty = Space::zeroed(0);
        assert_eq!(empty.len(), 0);
        assert!(!empty.as_mut_ptr().is_null());
    }
}
