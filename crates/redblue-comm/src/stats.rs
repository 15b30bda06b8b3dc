//! Communication counters: words, bytes and messages each rank sends and receives.

use std::fmt;
use std::ops::{Add, Sub};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// A snapshot of one rank's communication counters.
///
/// A word is one matrix element (a complex number is one word); bytes count its size. Only data
/// that crosses a rank boundary counts: a rank's transfer to itself is a local copy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CommStats {
    /// Elements sent to other ranks.
    pub words_sent: u64,
    /// Elements received from other ranks.
    pub words_received: u64,
    /// Bytes sent to other ranks.
    pub bytes_sent: u64,
    /// Bytes received from other ranks.
    pub bytes_received: u64,
    /// Non-empty transfers to other ranks (point-to-point sends count even when empty).
    pub messages_sent: u64,
    /// Non-empty transfers from other ranks (point-to-point receives count even when empty).
    pub messages_received: u64,
}

impl CommStats {
    /// The counters of one transfer of `words` elements of `bytes_per_word` bytes, from the
    /// sender's side.
    pub fn sent(words: usize, bytes_per_word: usize) -> Self {
        CommStats {
            words_sent: words as u64,
            bytes_sent: (words * bytes_per_word) as u64,
            messages_sent: 1,
            ..Default::default()
        }
    }

    /// The counters of one transfer of `words` elements of `bytes_per_word` bytes, from the
    /// receiver's side.
    pub fn received(words: usize, bytes_per_word: usize) -> Self {
        CommStats {
            words_received: words as u64,
            bytes_received: (words * bytes_per_word) as u64,
            messages_received: 1,
            ..Default::default()
        }
    }
}

impl Add for CommStats {
    type Output = CommStats;
    fn add(self, o: CommStats) -> CommStats {
        CommStats {
            words_sent: self.words_sent + o.words_sent,
            words_received: self.words_received + o.words_received,
            bytes_sent: self.bytes_sent + o.bytes_sent,
            bytes_received: self.bytes_received + o.bytes_received,
            messages_sent: self.messages_sent + o.messages_sent,
            messages_received: self.messages_received + o.messages_received,
        }
    }
}

impl Sub for CommStats {
    type Output = CommStats;
    /// The traffic between two snapshots (`later - earlier`); a counter reset in between
    /// saturates at zero rather than wrapping.
    fn sub(self, o: CommStats) -> CommStats {
        CommStats {
            words_sent: self.words_sent.saturating_sub(o.words_sent),
            words_received: self.words_received.saturating_sub(o.words_received),
            bytes_sent: self.bytes_sent.saturating_sub(o.bytes_sent),
            bytes_received: self.bytes_received.saturating_sub(o.bytes_received),
            messages_sent: self.messages_sent.saturating_sub(o.messages_sent),
            messages_received: self.messages_received.saturating_sub(o.messages_received),
        }
    }
}

impl std::iter::Sum for CommStats {
    fn sum<I: Iterator<Item = CommStats>>(iter: I) -> CommStats {
        iter.fold(CommStats::default(), Add::add)
    }
}

impl fmt::Display for CommStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sent {} words ({} B) in {} messages, received {} words ({} B) in {} messages",
            self.words_sent,
            self.bytes_sent,
            self.messages_sent,
            self.words_received,
            self.bytes_received,
            self.messages_received
        )
    }
}

/// One rank's live counters, shared by every communicator that rank derives from its world.
#[derive(Debug, Default)]
pub struct Counters {
    words_sent: AtomicU64,
    words_received: AtomicU64,
    bytes_sent: AtomicU64,
    bytes_received: AtomicU64,
    messages_sent: AtomicU64,
    messages_received: AtomicU64,
}

impl Counters {
    /// Adds a snapshot's worth of traffic.
    pub fn add(&self, s: CommStats) {
        self.words_sent.fetch_add(s.words_sent, Relaxed);
        self.words_received.fetch_add(s.words_received, Relaxed);
        self.bytes_sent.fetch_add(s.bytes_sent, Relaxed);
        self.bytes_received.fetch_add(s.bytes_received, Relaxed);
        self.messages_sent.fetch_add(s.messages_sent, Relaxed);
        self.messages_received
            .fetch_add(s.messages_received, Relaxed);
    }

    /// The current values.
    pub fn snapshot(&self) -> CommStats {
        CommStats {
            words_sent: self.words_sent.load(Relaxed),
            words_received: self.words_received.load(Relaxed),
            bytes_sent: self.bytes_sent.load(Relaxed),
            bytes_received: self.bytes_received.load(Relaxed),
            messages_sent: self.messages_sent.load(Relaxed),
            messages_received: self.messages_received.load(Relaxed),
        }
    }

    /// Sets every counter to zero.
    pub fn reset(&self) {
        for c in [
            &self.words_sent,
            &self.words_received,
            &self.bytes_sent,
            &self.bytes_received,
            &self.messages_sent,
            &self.messages_received,
        ] {
            c.store(0, Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_add_snapshot_and_reset() {
        let c = Counters::default();
        c.add(CommStats::sent(3, 8));
        c.add(CommStats::received(2, 16));
        let s = c.snapshot();
        assert_eq!(s.words_sent, 3);
        assert_eq!(s.bytes_sent, 24);
        assert_eq!(s.bytes_received, 32);
        assert_eq!(s.messages_sent, 1);
        assert_eq!(s.messages_received, 1);
        assert_eq!(s - s, CommStats::default());
        c.reset();
        assert_eq!(c.snapshot(), CommStats::default());
    }
}
