//! [`Storage`]: where a layer's local array lives — a buffer the factorisation owns, or the
//! caller's own array, factored where it is (a ScaLAPACK program's array that already is the
//! native layout's local array), or read where it is (factors a solve only reads).

use redblue_core::pool::recycle;
use std::ops::{Deref, DerefMut};

/// One rank's local array of a layer: a buffer of the factorisation's own (from the pool, given
/// back by [`Storage::recycle`]) or the caller's array, which the caller keeps — writable, or
/// only read (a write to a [`Storage::Shared`] array first copies it into a buffer of its own).
#[derive(Debug)]
pub enum Storage<'a, T> {
    /// The factorisation's own buffer.
    Owned(Vec<T>),
    /// The caller's array, factored in place.
    Borrowed(&'a mut [T]),
    /// The caller's array, read where it is; copied at the first write.
    Shared(&'a [T]),
}

impl<T> Default for Storage<'_, T> {
    fn default() -> Self {
        Storage::Owned(Vec::new())
    }
}

impl<T> From<Vec<T>> for Storage<'_, T> {
    fn from(v: Vec<T>) -> Self {
        Storage::Owned(v)
    }
}

impl<'a, T> From<&'a mut [T]> for Storage<'a, T> {
    fn from(s: &'a mut [T]) -> Self {
        Storage::Borrowed(s)
    }
}

impl<'a, T> From<&'a [T]> for Storage<'a, T> {
    fn from(s: &'a [T]) -> Self {
        Storage::Shared(s)
    }
}

impl<T> Deref for Storage<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Storage::Owned(v) => v,
            Storage::Borrowed(s) => s,
            Storage::Shared(s) => s,
        }
    }
}

impl<T: Copy> DerefMut for Storage<'_, T> {
    /// The array, writable: a shared one is copied into a buffer of its own first (the
    /// caller's array is never written through a shared borrow).
    fn deref_mut(&mut self) -> &mut [T] {
        if let Storage::Shared(s) = self {
            *self = Storage::Owned(s.to_vec());
        }
        match self {
            Storage::Owned(v) => v,
            Storage::Borrowed(s) => s,
            Storage::Shared(_) => unreachable!("a shared array was copied above"),
        }
    }
}

impl<T: Copy + 'static> Storage<'_, T> {
    /// Gives an owned buffer back to the pool; a borrowed array stays with its owner.
    pub fn recycle(self) {
        if let Storage::Owned(v) = self {
            recycle(v);
        }
    }

    /// The array as a buffer of its own: an owned one as it is, a borrowed one copied.
    pub fn into_vec(self) -> Vec<T> {
        match self {
            Storage::Owned(v) => v,
            Storage::Borrowed(s) => s.to_vec(),
            Storage::Shared(s) => s.to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_borrowed_array_is_written_where_it_is_and_outlives_the_storage() {
        let mut caller = vec![1.0, 2.0, 3.0];
        {
            let mut s = Storage::from(&mut caller[..]);
            s[1] = 20.0;
            assert_eq!(s.len(), 3);
            s.recycle();
        }
        assert_eq!(caller, [1.0, 20.0, 3.0]);
        let owned = Storage::<f64>::from(vec![4.0; 2]);
        assert_eq!(owned.into_vec(), [4.0, 4.0]);
        assert!(Storage::<f64>::default().is_empty());
    }

    #[test]
    fn a_shared_array_is_read_where_it_is_and_copied_at_the_first_write() {
        let caller = vec![1.0, 2.0, 3.0];
        let mut s = Storage::from(&caller[..]);
        assert!(std::ptr::eq(s.as_ptr(), caller.as_ptr()));
        assert_eq!(s[2], 3.0);
        s[0] = 10.0;
        assert!(matches!(s, Storage::Owned(_)));
        assert_eq!(&*s, [10.0, 2.0, 3.0]);
        assert_eq!(caller, [1.0, 2.0, 3.0]);
        assert_eq!(Storage::from(&caller[..]).into_vec(), caller);
    }
}
