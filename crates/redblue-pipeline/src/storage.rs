//! [`Storage`]: where a layer's local array lives — a buffer the factorisation owns, or the
//! caller's own array, factored where it is (a ScaLAPACK program's array that already is the
//! native layout's local array).

use redblue_core::pool::recycle;
use std::ops::{Deref, DerefMut};

/// One rank's local array of a layer: a buffer of the factorisation's own (from the pool, given
/// back by [`Storage::recycle`]) or the caller's array, which the caller keeps.
#[derive(Debug)]
pub enum Storage<'a, T> {
    /// The factorisation's own buffer.
    Owned(Vec<T>),
    /// The caller's array, factored in place.
    Borrowed(&'a mut [T]),
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

impl<T> Deref for Storage<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        match self {
            Storage::Owned(v) => v,
            Storage::Borrowed(s) => s,
        }
    }
}

impl<T> DerefMut for Storage<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Storage::Owned(v) => v,
            Storage::Borrowed(s) => s,
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
}
