//! [`Par`]: how many threads one kernel call may use.

/// The parallelism of one kernel call.
///
/// A rank usually runs its kernels sequentially ([`Par::Seq`], the default): with one rank per
/// core, threads inside a kernel only oversubscribe the machine. When there are fewer ranks
/// than cores, a rank can pass [`Par::Threads`] to use several cores for its local work.
///
/// Threads come from the current rayon pool (the global one unless the caller runs inside
/// `ThreadPool::install`); `Threads(n)` asks faer, the `gemm` crate or the crate's packed
/// products to split the work `n` ways. Products below a size threshold are not split, so
/// small calls stay sequential whatever is passed.
///
/// Sequential is the default also because faer 0.24 has an open report of a silently wrong
/// parallel product on some row-major inputs (sarah-quinones/faer-rs#273); our tests check
/// both settings against a naive reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Par {
    /// Run on the calling thread only.
    #[default]
    Seq,
    /// Use up to this many threads; `0` and `1` mean sequential.
    Threads(usize),
}

impl Par {
    /// The number of threads this setting asks for (at least 1).
    pub fn degree(self) -> usize {
        match self {
            Par::Seq => 1,
            Par::Threads(n) => n.max(1),
        }
    }

    /// The equivalent faer setting.
    pub fn to_faer(self) -> faer::Par {
        match self.degree() {
            1 => faer::Par::Seq,
            n => faer::Par::rayon(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_and_one_thread_are_sequential() {
        assert_eq!(Par::default(), Par::Seq);
        for p in [Par::Seq, Par::Threads(0), Par::Threads(1)] {
            assert_eq!(p.degree(), 1);
            assert!(matches!(p.to_faer(), faer::Par::Seq));
        }
        assert_eq!(Par::Threads(2).to_faer().degree(), 2);
    }
}
