//! The threads-as-ranks backend: [`run_ranks`] starts P ranks as threads of one process, each
//! with a [`ThreadComm`]; messages move through per-rank mailboxes.

use crate::validate::{self, check_len};
use crate::volume::even_split;
use crate::{combine_into, displacements, CommError, CommStats, Communicator, Counters, Request};
use redblue_core::pool::{recycle, take_buffer};
use redblue_core::{Datum, ReduceOp};
use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::mem::size_of;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

type Payload = Box<dyn Any + Send>;

const NO_FAILURE: usize = usize::MAX;
/// `World::failed` when every rank waits for a message no rank will send.
const DEADLOCKED: usize = usize::MAX - 1;

/// Which stream a message belongs to: user point-to-point traffic by tag, or one phase of one
/// collective call (collectives are numbered per communicator, so they never mix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Channel {
    P2p(u32),
    Coll(u64, u8),
}

/// A message stream: communicator, sending rank (in that communicator) and channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Key {
    comm: u64,
    src: usize,
    channel: Channel,
}

/// Messages of one stream, numbered in send order; receives take tickets in post order, and
/// ticket `t` matches message `t` (MPI's non-overtaking rule, also for `irecv`).
#[derive(Default)]
struct Stream {
    arrived: BTreeMap<u64, Payload>,
    next_message: u64,
    next_ticket: u64,
}

/// One rank's incoming messages, and the message it is blocked on (for deadlock detection).
#[derive(Default)]
struct Inbox {
    streams: HashMap<Key, Stream>,
    awaiting: Option<(Key, u64)>,
}

impl Inbox {
    /// Removes message `ticket` of a stream; a stream left with no message and no outstanding
    /// ticket is dropped (both sides restart its numbering together), so mailboxes do not grow.
    fn take(&mut self, key: &Key, ticket: u64) -> Option<Payload> {
        let stream = self.streams.get_mut(key)?;
        let p = stream.arrived.remove(&ticket)?;
        if stream.arrived.is_empty() && stream.next_ticket == stream.next_message {
            self.streams.remove(key);
        }
        Some(p)
    }

    fn has(&self, key: &Key, ticket: u64) -> bool {
        self.streams
            .get(key)
            .is_some_and(|s| s.arrived.contains_key(&ticket))
    }
}

#[derive(Default)]
struct Mailbox {
    inbox: Mutex<Inbox>,
    ready: Condvar,
}

impl Mailbox {
    fn lock(&self) -> MutexGuard<'_, Inbox> {
        // No code panics while holding the lock, but never let poison hide a peer's failure.
        self.inbox.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// How long a blocked rank waits before it checks whether the whole world is stuck.
const DEADLOCK_CHECK: Duration = Duration::from_millis(100);

/// A `split` in progress: (parent communicator, its collective number, colour).
type SplitKey = (u64, u64, u32);

/// State shared by all ranks of one `run_ranks` call.
struct World {
    mailboxes: Vec<Mailbox>,
    counters: Vec<Arc<Counters>>,
    /// `NO_FAILURE`, the world rank that failed first, or `DEADLOCKED`.
    failed: AtomicUsize,
    /// The world rank that panicked first (`NO_FAILURE` if none).
    first_panic: AtomicUsize,
    /// Ranks blocked waiting for a message, ranks whose closure returned, and a count of posts:
    /// together they tell a deadlock (all ranks blocked, none of their messages there, no post
    /// in between) from a slow rank.
    blocked: AtomicUsize,
    finished: AtomicUsize,
    posts: AtomicU64,
    /// Ids of communicators being made by `split`: (parent, collective, colour) -> (id, members
    /// still to look it up).
    comm_ids: Mutex<HashMap<SplitKey, (u64, usize)>>,
    next_id: AtomicU64,
}

impl World {
    fn new(size: usize) -> Self {
        World {
            mailboxes: (0..size).map(|_| Mailbox::default()).collect(),
            counters: (0..size).map(|_| Arc::default()).collect(),
            failed: AtomicUsize::new(NO_FAILURE),
            first_panic: AtomicUsize::new(NO_FAILURE),
            blocked: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            posts: AtomicU64::new(0),
            comm_ids: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
        }
    }

    /// Marks the world failed (`why` is a rank or `DEADLOCKED`) and wakes every waiting rank so
    /// that it notices.
    fn fail(&self, why: usize) {
        let _ = self
            .failed
            .compare_exchange(NO_FAILURE, why, Ordering::SeqCst, Ordering::SeqCst);
        for mb in &self.mailboxes {
            let _guard = mb.lock();
            mb.ready.notify_all();
        }
    }

    fn check(&self) -> Result<(), CommError> {
        match self.failed.load(Ordering::SeqCst) {
            NO_FAILURE => Ok(()),
            DEADLOCKED => Err(CommError::Deadlock),
            rank => Err(CommError::PeerFailed { rank }),
        }
    }

    /// Declares a deadlock if every rank is blocked or finished, no blocked rank's message is
    /// there, and nothing was posted while we looked.
    fn detect_deadlock(&self) {
        let posts = self.posts.load(Ordering::SeqCst);
        let blocked = self.blocked.load(Ordering::SeqCst);
        let finished = self.finished.load(Ordering::SeqCst);
        if blocked == 0 || blocked + finished < self.mailboxes.len() {
            return;
        }
        for mb in &self.mailboxes {
            let inbox = mb.lock();
            if let Some((key, ticket)) = &inbox.awaiting {
                if inbox.has(key, *ticket) {
                    return;
                }
            }
        }
        if self.posts.load(Ordering::SeqCst) == posts
            && self.blocked.load(Ordering::SeqCst) == blocked
            && self.finished.load(Ordering::SeqCst) == finished
        {
            self.fail(DEADLOCKED);
        }
    }
}

/// One rank's handle on a communicator of ranks that are threads of this process.
///
/// Made by [`run_ranks`] (the world) and by [`Communicator::split`]. Sends are buffered: they
/// never block. If any rank of the world panics, every other rank's pending or next call returns
/// [`CommError::PeerFailed`].
pub struct ThreadComm {
    world: Arc<World>,
    id: u64,
    rank: usize,
    /// World rank of each rank of this communicator.
    members: Arc<[usize]>,
    next_collective: AtomicU64,
}

impl std::fmt::Debug for ThreadComm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadComm")
            .field("rank", &self.rank)
            .field("size", &self.members.len())
            .field("world_rank", &self.world_rank())
            .finish()
    }
}

impl ThreadComm {
    fn world_comm(world: Arc<World>, rank: usize) -> Self {
        let size = world.mailboxes.len();
        ThreadComm {
            world,
            id: 0,
            rank,
            members: (0..size).collect(),
            next_collective: AtomicU64::new(0),
        }
    }

    /// A world of one rank (what [`crate::SelfComm`] wraps).
    pub(crate) fn solo() -> Self {
        Self::world_comm(Arc::new(World::new(1)), 0)
    }

    /// This rank's rank in the world it was started in.
    pub fn world_rank(&self) -> usize {
        self.members[self.rank]
    }

    fn counters(&self) -> &Counters {
        &self.world.counters[self.world_rank()]
    }

    fn next_collective(&self) -> u64 {
        self.next_collective.fetch_add(1, Ordering::Relaxed)
    }

    /// Delivers `data` to `dst`'s mailbox; counts it as a message when `counted` and `dst` is
    /// another rank.
    fn post<T: Datum>(
        &self,
        dst: usize,
        channel: Channel,
        data: Vec<T>,
        counted: bool,
    ) -> Result<(), CommError> {
        self.world.check()?;
        let words = data.len();
        let mb = &self.world.mailboxes[self.members[dst]];
        {
            let mut inbox = mb.lock();
            let stream = inbox
                .streams
                .entry(Key {
                    comm: self.id,
                    src: self.rank,
                    channel,
                })
                .or_default();
            stream.arrived.insert(stream.next_message, Box::new(data));
            stream.next_message += 1;
            self.world.posts.fetch_add(1, Ordering::SeqCst);
        }
        mb.ready.notify_all();
        if counted && dst != self.rank {
            self.counters().add(CommStats::sent(words, size_of::<T>()));
        }
        Ok(())
    }

    /// Reserves the next message of a stream (the receive-side order of MPI).
    fn ticket(&self, src: usize, channel: Channel) -> u64 {
        let mb = &self.world.mailboxes[self.world_rank()];
        let mut inbox = mb.lock();
        let stream = inbox
            .streams
            .entry(Key {
                comm: self.id,
                src,
                channel,
            })
            .or_default();
        stream.next_ticket += 1;
        stream.next_ticket - 1
    }

    /// Waits for message `ticket` of a stream.
    fn take_ticket<T: Datum>(
        &self,
        src: usize,
        channel: Channel,
        ticket: u64,
        counted: bool,
    ) -> Result<Vec<T>, CommError> {
        let mb = &self.world.mailboxes[self.world_rank()];
        let key = Key {
            comm: self.id,
            src,
            channel,
        };
        let mut inbox = mb.lock();
        let found = loop {
            if let Err(e) = self.world.check() {
                break Err(e);
            }
            if let Some(p) = inbox.take(&key, ticket) {
                break Ok(p);
            }
            if inbox.awaiting.is_none() {
                inbox.awaiting = Some((key, ticket));
                self.world.blocked.fetch_add(1, Ordering::SeqCst);
            }
            let (guard, wait) = mb
                .ready
                .wait_timeout(inbox, DEADLOCK_CHECK)
                .unwrap_or_else(|e| e.into_inner());
            inbox = guard;
            if wait.timed_out() {
                drop(inbox);
                self.world.detect_deadlock();
                inbox = mb.lock();
            }
        };
        if inbox.awaiting.take().is_some() {
            self.world.blocked.fetch_sub(1, Ordering::SeqCst);
        }
        drop(inbox);
        let payload = found?;
        let data = payload
            .downcast::<Vec<T>>()
            .map_err(|_| CommError::TypeMismatch { expected: T::KIND })?;
        if counted && src != self.rank {
            self.counters()
                .add(CommStats::received(data.len(), size_of::<T>()));
        }
        Ok(*data)
    }

    fn take<T: Datum>(
        &self,
        src: usize,
        channel: Channel,
        counted: bool,
    ) -> Result<Vec<T>, CommError> {
        let ticket = self.ticket(src, channel);
        self.take_ticket(src, channel, ticket, counted)
    }

    /// Receives a collective piece into `out`, checking its length.
    fn take_into<T: Datum>(
        &self,
        src: usize,
        channel: Channel,
        out: &mut [T],
        what: &'static str,
    ) -> Result<(), CommError> {
        let v = self.take::<T>(src, channel, !out.is_empty())?;
        check_len(what, out.len(), v.len())?;
        out.copy_from_slice(&v);
        recycle(v);
        Ok(())
    }

    /// Posts a collective piece (counted when non-empty).
    fn put<T: Datum>(&self, dst: usize, channel: Channel, data: &[T]) -> Result<(), CommError> {
        self.post(dst, channel, copied(data), !data.is_empty())
    }
}

/// A copy of `data` to post, in a buffer from this thread's pool (receivers hand message
/// buffers back to theirs): large messages then land in memory already mapped.
fn copied<T: Datum>(data: &[T]) -> Vec<T> {
    match data.first() {
        None => Vec::new(),
        Some(&first) => {
            let mut v = take_buffer(data.len(), first);
            v.copy_from_slice(data);
            v
        }
    }
}

/// A pending [`ThreadComm`] operation: sends complete at once (they are buffered), receives
/// complete at `wait`.
#[must_use = "a request must be waited on"]
pub struct ThreadRequest<'a> {
    pending: Option<Box<dyn FnOnce() -> Result<(), CommError> + 'a>>,
}

impl Request for ThreadRequest<'_> {
    fn wait(mut self) -> Result<(), CommError> {
        self.pending.take().map_or(Ok(()), |f| f())
    }
}

impl Communicator for ThreadComm {
    type Request<'a> = ThreadRequest<'a>;

    fn ranks_in_process(&self) -> usize {
        self.world.mailboxes.len()
    }

    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.members.len()
    }

    fn split(&self, color: u32, key: usize) -> Result<Self, CommError> {
        let seq = self.next_collective();
        let ch = Channel::Coll(seq, 0);
        let me = [u64::from(color), key as u64];
        for j in 0..self.size() {
            self.post(j, ch, me.to_vec(), false)?;
        }
        let mut group = Vec::new();
        for i in 0..self.size() {
            let v = self.take::<u64>(i, ch, false)?;
            if v[0] == u64::from(color) {
                group.push((v[1], i));
            }
        }
        group.sort_unstable();
        let rank = group
            .iter()
            .position(|&(_, i)| i == self.rank)
            .expect("a rank is always in its own colour group");
        let members: Arc<[usize]> = group.iter().map(|&(_, i)| self.members[i]).collect();
        let id = {
            let mut ids = self
                .world
                .comm_ids
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            let k = (self.id, seq, color);
            let entry = ids.entry(k).or_insert_with(|| {
                (
                    self.world.next_id.fetch_add(1, Ordering::Relaxed),
                    group.len(),
                )
            });
            entry.1 -= 1;
            let id = entry.0;
            if entry.1 == 0 {
                ids.remove(&k);
            }
            id
        };
        Ok(ThreadComm {
            world: Arc::clone(&self.world),
            id,
            rank,
            members,
            next_collective: AtomicU64::new(0),
        })
    }

    fn barrier(&self) -> Result<(), CommError> {
        let seq = self.next_collective();
        let (arrive, leave) = (Channel::Coll(seq, 0), Channel::Coll(seq, 1));
        self.post::<u8>(0, arrive, vec![], false)?;
        if self.rank == 0 {
            for i in 0..self.size() {
                self.take::<u8>(i, arrive, false)?;
            }
            for j in 0..self.size() {
                self.post::<u8>(j, leave, vec![], false)?;
            }
        }
        self.take::<u8>(0, leave, false).map(drop)
    }

    fn send<T: Datum>(&self, buf: &[T], dest: usize, tag: u32) -> Result<(), CommError> {
        validate::send(self.size(), dest)?;
        self.post(dest, Channel::P2p(tag), copied(buf), true)
    }

    fn recv<T: Datum>(&self, buf: &mut [T], src: usize, tag: u32) -> Result<(), CommError> {
        validate::recv(self.size(), src)?;
        let v = self.take::<T>(src, Channel::P2p(tag), true)?;
        check_len("received message", buf.len(), v.len())?;
        buf.copy_from_slice(&v);
        recycle(v);
        Ok(())
    }

    fn isend<'a, T: Datum>(
        &'a self,
        buf: &'a [T],
        dest: usize,
        tag: u32,
    ) -> Result<ThreadRequest<'a>, CommError> {
        self.send(buf, dest, tag)?;
        Ok(ThreadRequest { pending: None })
    }

    fn irecv<'a, T: Datum>(
        &'a self,
        buf: &'a mut [T],
        src: usize,
        tag: u32,
    ) -> Result<ThreadRequest<'a>, CommError> {
        validate::recv(self.size(), src)?;
        self.world.check()?;
        let channel = Channel::P2p(tag);
        let ticket = self.ticket(src, channel);
        Ok(ThreadRequest {
            pending: Some(Box::new(move || {
                let v = self.take_ticket::<T>(src, channel, ticket, true)?;
                check_len("received message", buf.len(), v.len())?;
                buf.copy_from_slice(&v);
                recycle(v);
                Ok(())
            })),
        })
    }

    fn broadcast<T: Datum>(&self, buf: &mut [T], root: usize) -> Result<(), CommError> {
        validate::broadcast(self.size(), root)?;
        let ch = Channel::Coll(self.next_collective(), 0);
        if self.rank == root {
            for j in (0..self.size()).filter(|&j| j != root) {
                self.put(j, ch, buf)?;
            }
            Ok(())
        } else {
            self.take_into(root, ch, buf, "broadcast buffer")
        }
    }

    fn reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
        root: usize,
    ) -> Result<(), CommError> {
        validate::reduce::<T>(self.size(), op, root)?;
        let ch = Channel::Coll(self.next_collective(), 0);
        if self.rank != root {
            return self.put(root, ch, send);
        }
        validate::reduce_root(send.len(), recv.len())?;
        // Combine in rank order, so the result does not depend on arrival order.
        for i in 0..self.size() {
            let piece = if i == root {
                send.to_vec()
            } else {
                let v = self.take::<T>(i, ch, !send.is_empty())?;
                check_len("reduce contribution", send.len(), v.len())?;
                v
            };
            if i == 0 {
                recv.copy_from_slice(&piece);
            } else {
                combine_into(recv, &piece, op);
            }
        }
        Ok(())
    }

    fn all_reduce<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        validate::all_reduce::<T>(send.len(), recv.len(), op)?;
        let counts = even_split(send.len(), self.size());
        let d = displacements(&counts);
        let seq = self.next_collective();
        self.reduce_scatter_on(seq, send, &d, op, recv)?;
        let me = self.rank;
        let mine = recv[d[me]..d[me + 1]].to_vec();
        self.all_gather_on(seq, &mine, recv, &counts)
    }

    fn gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        root: usize,
    ) -> Result<(), CommError> {
        validate::gather_v(self.size(), root)?;
        let ch = Channel::Coll(self.next_collective(), 0);
        if self.rank != root {
            return self.put(root, ch, send);
        }
        let d = validate::gather_v_root(self.size(), root, send.len(), recv.len(), counts)?;
        for i in 0..self.size() {
            let out = &mut recv[d[i]..d[i + 1]];
            if i == root {
                out.copy_from_slice(send);
            } else {
                self.take_into(i, ch, out, "gather_v contribution")?;
            }
        }
        Ok(())
    }

    fn all_gather_v<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<(), CommError> {
        let seq = self.next_collective();
        self.all_gather_on(seq, send, recv, counts)
    }

    fn scatter_v<T: Datum>(
        &self,
        send: &[T],
        counts: &[usize],
        recv: &mut [T],
        root: usize,
    ) -> Result<(), CommError> {
        validate::scatter_v(self.size(), root)?;
        let ch = Channel::Coll(self.next_collective(), 0);
        if self.rank != root {
            return self.take_into(root, ch, recv, "scatter_v receive buffer");
        }
        let d = validate::scatter_v_root(self.size(), root, send.len(), counts, recv.len())?;
        for j in 0..self.size() {
            if j == root {
                recv.copy_from_slice(&send[d[j]..d[j + 1]]);
            } else {
                self.put(j, ch, &send[d[j]..d[j + 1]])?;
            }
        }
        Ok(())
    }

    fn reduce_scatter<T: Datum>(
        &self,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
        op: ReduceOp,
    ) -> Result<(), CommError> {
        let d = validate::reduce_scatter::<T>(
            self.size(),
            self.rank,
            send.len(),
            recv.len(),
            counts,
            op,
        )?;
        let seq = self.next_collective();
        // reduce_scatter_on writes this rank's piece at its displacement in a full-size buffer.
        let mut full = send.to_vec();
        self.reduce_scatter_on(seq, send, &d, op, &mut full)?;
        recv.copy_from_slice(&full[d[self.rank]..d[self.rank + 1]]);
        Ok(())
    }

    fn all_to_all_v<T: Datum>(
        &self,
        send: &[T],
        send_counts: &[usize],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<(), CommError> {
        let p = self.size();
        let (sd, rd) = validate::all_to_all_v(
            p,
            self.rank,
            send.len(),
            send_counts,
            recv.len(),
            recv_counts,
        )?;
        let ch = Channel::Coll(self.next_collective(), 0);
        for j in (0..p).filter(|&j| j != self.rank) {
            self.put(j, ch, &send[sd[j]..sd[j + 1]])?;
        }
        for i in 0..p {
            let out = &mut recv[rd[i]..rd[i + 1]];
            if i == self.rank {
                out.copy_from_slice(&send[sd[i]..sd[i + 1]]);
            } else {
                self.take_into(i, ch, out, "all_to_all_v piece")?;
            }
        }
        Ok(())
    }

    fn stats(&self) -> CommStats {
        self.counters().snapshot()
    }

    fn reset_stats(&self) {
        self.counters().reset();
    }
}

impl ThreadComm {
    /// Reduce-scatter of collective `seq` (phase 0) with pieces at displacements `d` (validated by
    /// the caller: `send` has length `d[P]`): this rank's piece of the reduction lands at its
    /// displacement in `out`, which has the full length.
    fn reduce_scatter_on<T: Datum>(
        &self,
        seq: u64,
        send: &[T],
        d: &[usize],
        op: ReduceOp,
        out: &mut [T],
    ) -> Result<(), CommError> {
        let p = self.size();
        let ch = Channel::Coll(seq, 0);
        for j in (0..p).filter(|&j| j != self.rank) {
            self.put(j, ch, &send[d[j]..d[j + 1]])?;
        }
        let me = self.rank;
        let mine = &mut out[d[me]..d[me + 1]];
        // Combine in rank order, so every backend and every run gives the same bits.
        for i in 0..p {
            let piece = if i == me {
                send[d[me]..d[me + 1]].to_vec()
            } else {
                let v = self.take::<T>(i, ch, !mine.is_empty())?;
                check_len("reduce_scatter contribution", mine.len(), v.len())?;
                v
            };
            if i == 0 {
                mine.copy_from_slice(&piece);
            } else {
                combine_into(mine, &piece, op);
            }
        }
        Ok(())
    }

    /// All-gather of collective `seq` (phase 1).
    fn all_gather_on<T: Datum>(
        &self,
        seq: u64,
        send: &[T],
        recv: &mut [T],
        counts: &[usize],
    ) -> Result<(), CommError> {
        let p = self.size();
        let d = validate::all_gather_v(p, self.rank, send.len(), recv.len(), counts)?;
        let ch = Channel::Coll(seq, 1);
        for j in (0..p).filter(|&j| j != self.rank) {
            self.put(j, ch, send)?;
        }
        for i in 0..p {
            let out = &mut recv[d[i]..d[i + 1]];
            if i == self.rank {
                out.copy_from_slice(send);
            } else {
                self.take_into(i, ch, out, "all_gather_v piece")?;
            }
        }
        Ok(())
    }
}

/// Runs `f` on `p` ranks, each a thread of this process with its own [`ThreadComm`], and returns
/// the results in rank order.
///
/// # Panics
/// If `p` is 0, or if any rank panics: the other ranks' communication calls then fail with
/// [`CommError::PeerFailed`] instead of hanging, and `run_ranks` panics with the first failed
/// rank's message, prefixed by `rank R panicked:`.
///
/// A deadlock (every rank waiting for a message that no rank will send, for example ranks that
/// call different collectives) makes every waiting call return [`CommError::Deadlock`] instead
/// of hanging.
///
/// # Examples
/// ```
/// use redblue_comm::{run_ranks, Communicator};
/// let ranks = run_ranks(3, |comm| (comm.rank(), comm.size()));
/// assert_eq!(ranks, vec![(0, 3), (1, 3), (2, 3)]);
/// ```
pub fn run_ranks<R, F>(p: usize, f: F) -> Vec<R>
where
    R: Send,
    F: Fn(ThreadComm) -> R + Sync,
{
    assert!(p > 0, "run_ranks needs at least one rank");
    let world = Arc::new(World::new(p));
    let outcomes: Vec<std::thread::Result<R>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..p)
            .map(|r| {
                let comm = ThreadComm::world_comm(Arc::clone(&world), r);
                let (world, f) = (Arc::clone(&world), &f);
                std::thread::Builder::new()
                    .name(format!("rank {r}"))
                    .stack_size(16 << 20)
                    .spawn_scoped(s, move || {
                        let out = catch_unwind(AssertUnwindSafe(|| f(comm)));
                        if out.is_err() {
                            let _ = world.first_panic.compare_exchange(
                                NO_FAILURE,
                                r,
                                Ordering::SeqCst,
                                Ordering::SeqCst,
                            );
                            world.fail(r);
                        }
                        world.finished.fetch_add(1, Ordering::SeqCst);
                        out
                    })
                    .expect("failed to spawn a rank thread")
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(Err))
            .collect()
    });
    let first_failed = world.first_panic.load(Ordering::SeqCst);
    if first_failed != NO_FAILURE {
        let mut outcomes = outcomes;
        let payload = match outcomes.swap_remove(first_failed) {
            Err(payload) => payload,
            Ok(_) => Box::new("(no message)"),
        };
        let msg = panic_message(&*payload);
        resume_unwind(Box::new(format!("rank {first_failed} panicked: {msg}")));
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|p| resume_unwind(p)))
        .collect()
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".to_string()
    }
}
