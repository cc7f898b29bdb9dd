//! AF_UNIX sockets: stream, datagram and seqpacket, as Linux's net/unix/af_unix.c behaves.
//!
//! A socket's state sits behind its own lock, and no path holds two sockets' locks at once: a
//! sender takes what it needs from its own state, lets go, then queues into the receiver's.
//! Bytes in flight are charged to the sender (SO_SNDBUF bounds them, as Linux's wmem), and
//! every change wakes one queue and the poll/epoll waiters (the pipes' mechanism).

use super::IovCursor;
use crate::fs::{epoll, new_ino, Attrs, File, FileOps, Inode, Kind};
use crate::mm::uaccess::{Partial, UserSlice};
use crate::task::wait::WaitQueue;
use alloc::collections::VecDeque;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::errno::{Errno, SysResult};
use svelt_abi::fs::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use svelt_abi::net::*;

const POLLWRBAND: u32 = 0x200;
const POLLRDHUP: u32 = 0x2000;
/// What one queued message costs its sender beyond its bytes (an skb's overhead, roughly).
const MSG_OVERHEAD: usize = 768;
/// sk_shutdown bits.
const RCV_SHUTDOWN: u8 = 1;
const SEND_SHUTDOWN: u8 = 2;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SockType {
    Stream,
    Dgram,
    Seqpacket,
}

impl SockType {
    pub fn from_raw(ty: u32) -> SysResult<SockType> {
        match ty {
            SOCK_STREAM => Ok(SockType::Stream),
            SOCK_DGRAM => Ok(SockType::Dgram),
            SOCK_SEQPACKET => Ok(SockType::Seqpacket),
            // Linux's unix_create: SOCK_RAW becomes SOCK_DGRAM.
            SOCK_RAW => Ok(SockType::Dgram),
            _ => Err(Errno::ESOCKTNOSUPPORT),
        }
    }
    pub fn raw(self) -> u32 {
        match self {
            SockType::Stream => SOCK_STREAM,
            SockType::Dgram => SOCK_DGRAM,
            SockType::Seqpacket => SOCK_SEQPACKET,
        }
    }
    fn connection(self) -> bool {
        self != SockType::Dgram
    }
}

/// Rights and credentials a message carries.
#[derive(Default)]
pub struct Scm {
    pub fds: Vec<Arc<File>>,
    pub cred: Ucred,
}

struct Msg {
    data: Vec<u8>,
    /// Bytes of a stream message already read.
    off: usize,
    from: Option<UnixName>,
    scm: Scm,
    /// Whose SO_SNDBUF the message is charged to, and how much.
    sender: Option<Arc<UnixSocket>>,
    charge: usize,
}

struct Listen {
    backlog: usize,
    queue: VecDeque<Arc<UnixSocket>>,
}

#[derive(Default)]
struct State {
    peer: Option<Arc<UnixSocket>>,
    /// A stream or seqpacket socket with a peer (socketpair, connect, accept).
    connected: bool,
    listen: Option<Listen>,
    rx: VecDeque<Msg>,
    shutdown: u8,
    addr: Option<UnixName>,
    /// SO_ERROR, taken by the next read or getsockopt.
    err: Option<Errno>,
    sndbuf: usize,
    rcvbuf: usize,
    passcred: bool,
    peercred: Option<Ucred>,
    released: bool,
}

pub struct UnixSocket {
    pub ty: SockType,
    pub ino: u64,
    st: Mutex<State>,
    /// Bytes (plus overhead) this socket has queued at receivers and not yet read.
    wmem: AtomicUsize,
}

/// All waits on AF_UNIX sockets (a change wakes them all; each re-checks its condition).
static WQ: WaitQueue = WaitQueue::new();

fn changed() {
    WQ.wake_all();
    epoll::notify();
}

/// Names sockets are bound to: abstract names, and path names by the inode bind made.
#[derive(PartialEq, Eq)]
enum Key {
    /// Abstract names are per type (Linux hashes the type in).
    Abstract(UnixName, SockType),
    Inode(u64),
}

static NAMES: Mutex<Vec<(Key, Weak<UnixSocket>)>> = Mutex::new(Vec::new());
static AUTOBIND: AtomicU32 = AtomicU32::new(0);

fn lookup(key: &Key) -> Option<Arc<UnixSocket>> {
    NAMES
        .lock()
        .iter()
        .find(|(k, _)| k == key)
        .and_then(|(_, s)| s.upgrade())
}

pub fn current_cred() -> Ucred {
    let t = crate::task::current();
    Ucred {
        pid: t.pid() as i32,
        uid: t.process().euid.load(Ordering::Relaxed),
        gid: 0,
    }
}

impl UnixSocket {
    pub fn new(ty: SockType) -> Arc<UnixSocket> {
        Arc::new(UnixSocket {
            ty,
            ino: new_ino(),
            st: Mutex::new(State {
                sndbuf: SK_BUF_DEFAULT,
                rcvbuf: SK_BUF_DEFAULT,
                ..Default::default()
            }),
            wmem: AtomicUsize::new(0),
        })
    }

    /// socketpair: two sockets connected to each other, each with the caller's credentials.
    pub fn pair(ty: SockType) -> (Arc<UnixSocket>, Arc<UnixSocket>) {
        let (a, b) = (Self::new(ty), Self::new(ty));
        let cred = current_cred();
        for (x, y) in [(&a, &b), (&b, &a)] {
            let mut s = x.st.lock();
            s.peer = Some(y.clone());
            s.connected = ty.connection();
            s.peercred = Some(cred);
        }
        (a, b)
    }

    pub fn name(&self) -> Option<UnixName> {
        self.st.lock().addr
    }

    /// getpeername's: ENOTCONN without a peer.
    pub fn peer_name(&self) -> SysResult<Option<UnixName>> {
        let peer = self.st.lock().peer.clone().ok_or(Errno::ENOTCONN)?;
        let n = peer.name();
        Ok(n)
    }

    pub fn peercred(&self) -> Ucred {
        self.st.lock().peercred.unwrap_or(Ucred {
            pid: 0,
            uid: u32::MAX,
            gid: u32::MAX,
        })
    }

    pub fn take_error(&self) -> i32 {
        self.st.lock().err.take().map_or(0, |e| e as i32)
    }

    pub fn bufs(&self) -> (usize, usize) {
        let s = self.st.lock();
        (s.sndbuf, s.rcvbuf)
    }

    pub fn set_sndbuf(&self, v: usize) {
        self.st.lock().sndbuf = v;
        changed();
    }

    pub fn set_rcvbuf(&self, v: usize) {
        self.st.lock().rcvbuf = v;
    }

    pub fn passcred(&self) -> bool {
        self.st.lock().passcred
    }

    pub fn set_passcred(&self, on: bool) {
        self.st.lock().passcred = on;
    }

    pub fn listening(&self) -> bool {
        self.st.lock().listen.is_some()
    }

    /// bind: `node` is the S_IFSOCK inode a path name made (None for an abstract name).
    /// EINVAL if already bound, EADDRINUSE if the abstract name is taken.
    pub fn bind(self: &Arc<Self>, name: UnixName, node: Option<u64>) -> SysResult<()> {
        let mut names = NAMES.lock();
        let mut st = self.st.lock();
        if st.addr.is_some() {
            return Err(Errno::EINVAL);
        }
        let key = match node {
            Some(ino) => Key::Inode(ino),
            None => Key::Abstract(name, self.ty),
        };
        // Entries of sockets that are gone make room first.
        names.retain(|(_, s)| s.strong_count() > 0);
        if names.iter().any(|(k, _)| *k == key) {
            return Err(Errno::EADDRINUSE);
        }
        names.try_reserve(1).map_err(|_| Errno::ENOMEM)?;
        names.push((key, Arc::downgrade(self)));
        st.addr = Some(name);
        Ok(())
    }

    /// Whether the socket has a name (bind was called).
    pub fn is_bound(&self) -> bool {
        self.st.lock().addr.is_some()
    }

    /// autobind: a free abstract name of five hex digits.
    pub fn autobind(self: &Arc<Self>) -> SysResult<()> {
        for _ in 0..0x100000 {
            let n = AUTOBIND.fetch_add(1, Ordering::Relaxed) & 0xfffff;
            match self.bind(autobind_name(n), None) {
                Err(Errno::EADDRINUSE) => continue,
                Err(Errno::EINVAL) => return Ok(()),
                r => return r,
            }
        }
        Err(Errno::ENOSPC)
    }

    pub fn listen(&self, backlog: i32) -> SysResult<()> {
        if !self.ty.connection() {
            return Err(Errno::EOPNOTSUPP);
        }
        let mut st = self.st.lock();
        if st.addr.is_none() || st.connected {
            return Err(Errno::EINVAL);
        }
        // somaxconn (4096) caps it; a negative backlog is the cap too.
        let backlog = if backlog < 0 {
            4096
        } else {
            (backlog as usize).min(4096)
        };
        // connect hands the caller of listen's credentials to the client (SO_PEERCRED).
        st.peercred = Some(current_cred());
        match &mut st.listen {
            Some(l) => l.backlog = backlog,
            None => {
                st.listen = Some(Listen {
                    backlog,
                    queue: VecDeque::new(),
                })
            }
        }
        Ok(())
    }

    /// Finds the socket a name is bound to: ECONNREFUSED when nobody is (or a path is not a
    /// socket), EPROTOTYPE when it is of another type.
    pub fn find(
        key_node: Option<Arc<dyn Inode>>,
        name: &UnixName,
        ty: SockType,
    ) -> SysResult<Arc<UnixSocket>> {
        let key = match key_node {
            Some(n) if n.kind() == Kind::Socket => Key::Inode(n.ino()),
            Some(_) => return Err(Errno::ECONNREFUSED),
            None => Key::Abstract(*name, ty),
        };
        let s = lookup(&key).ok_or(Errno::ECONNREFUSED)?;
        if s.ty != ty {
            return Err(Errno::EPROTOTYPE);
        }
        Ok(s)
    }

    /// connect for a datagram socket: sets (or with `None` clears) the default peer.
    pub fn connect_dgram(self: &Arc<Self>, target: Option<Arc<UnixSocket>>) -> SysResult<()> {
        if let Some(t) = &target {
            let tst = t.st.lock();
            if tst.released {
                return Err(Errno::ECONNREFUSED);
            }
            if tst.peer.as_ref().is_some_and(|p| !Arc::ptr_eq(p, self)) && !Arc::ptr_eq(t, self) {
                return Err(Errno::EPERM);
            }
        }
        self.st.lock().peer = target;
        changed();
        Ok(())
    }

    /// connect for a stream or seqpacket socket: a new socket joins the listener's queue,
    /// connected to this one. Waits while the queue is full (EAGAIN when non-blocking).
    pub fn connect_stream(
        self: &Arc<Self>,
        target: &Arc<UnixSocket>,
        nonblock: bool,
    ) -> SysResult<()> {
        {
            let st = self.st.lock();
            if st.connected {
                return Err(Errno::EISCONN);
            }
            if st.listen.is_some() {
                return Err(Errno::EINVAL);
            }
        }
        let me = current_cred();
        let srv = UnixSocket::new(self.ty);
        WQ.wait(|| {
            let mut guard = target.st.lock();
            let t = &mut *guard;
            let Some(l) = t.listen.as_mut().filter(|_| !t.released) else {
                return Some(Err(Errno::ECONNREFUSED));
            };
            if l.queue.len() > l.backlog {
                return nonblock.then_some(Err(Errno::EAGAIN));
            }
            if l.queue.try_reserve(1).is_err() {
                return Some(Err(Errno::ENOMEM));
            }
            {
                let mut s = srv.st.lock();
                s.peer = Some(self.clone());
                s.connected = true;
                s.peercred = Some(me);
                s.addr = t.addr;
                s.sndbuf = t.sndbuf;
                s.rcvbuf = t.rcvbuf;
                s.passcred = t.passcred;
            }
            // The listener's credentials are those of whoever called listen.
            let listener_cred = t.peercred.unwrap_or(me);
            l.queue.push_back(srv.clone());
            drop(guard);
            let mut st = self.st.lock();
            st.peer = Some(srv.clone());
            st.connected = true;
            st.peercred = Some(listener_cred);
            Some(Ok(()))
        })
        .map_err(|_| Errno::ERESTARTSYS)??;
        changed();
        Ok(())
    }

    /// accept: the oldest queued connection, waiting for one (EAGAIN when non-blocking).
    pub fn accept(&self, nonblock: bool) -> SysResult<Arc<UnixSocket>> {
        if !self.ty.connection() {
            return Err(Errno::EOPNOTSUPP);
        }
        let s = WQ
            .wait(|| {
                let mut st = self.st.lock();
                let Some(l) = st.listen.as_mut() else {
                    return Some(Err(Errno::EINVAL));
                };
                match l.queue.pop_front() {
                    Some(s) => Some(Ok(s)),
                    None if nonblock => Some(Err(Errno::EAGAIN)),
                    None => None,
                }
            })
            .map_err(|_| Errno::ERESTARTSYS)??;
        changed();
        Ok(s)
    }

    pub fn shutdown(&self, how: u32) -> SysResult<()> {
        let bits = match how {
            SHUT_RD => RCV_SHUTDOWN,
            SHUT_WR => SEND_SHUTDOWN,
            SHUT_RDWR => RCV_SHUTDOWN | SEND_SHUTDOWN,
            _ => return Err(Errno::EINVAL),
        };
        let peer = {
            let mut st = self.st.lock();
            if self.ty.connection() && !st.connected {
                return Err(Errno::ENOTCONN);
            }
            st.shutdown |= bits;
            st.peer.clone()
        };
        // The peer sees the mirror image: our SHUT_WR is its end of input.
        if let Some(p) = peer.filter(|_| self.ty.connection()) {
            let mut mirror = 0;
            if bits & RCV_SHUTDOWN != 0 {
                mirror |= SEND_SHUTDOWN;
            }
            if bits & SEND_SHUTDOWN != 0 {
                mirror |= RCV_SHUTDOWN;
            }
            p.st.lock().shutdown |= mirror;
        }
        changed();
        Ok(())
    }

    /// The last close: the peer of a connection sees end of file (and ECONNRESET if this end
    /// left data unread), queued connections are refused, the name is freed.
    fn release(self: &Arc<Self>) {
        let (peer, rx, listen, had_data) = {
            let mut st = self.st.lock();
            st.released = true;
            st.shutdown = RCV_SHUTDOWN | SEND_SHUTDOWN;
            let rx = core::mem::take(&mut st.rx);
            (st.peer.take(), rx, st.listen.take(), false)
        };
        let had_data = had_data || !rx.is_empty();
        NAMES
            .lock()
            .retain(|(_, s)| s.strong_count() > 0 && !core::ptr::eq(s.as_ptr(), Arc::as_ptr(self)));
        if let Some(p) = peer.filter(|_| self.ty.connection()) {
            let mut ps = p.st.lock();
            ps.shutdown = RCV_SHUTDOWN | SEND_SHUTDOWN;
            if had_data {
                ps.err = Some(Errno::ECONNRESET);
            }
        }
        if let Some(l) = listen {
            for embryo in l.queue {
                // A connection nobody accepted: its client sees ECONNRESET.
                let p = embryo.st.lock().peer.take();
                embryo.st.lock().released = true;
                if let Some(p) = p {
                    let mut ps = p.st.lock();
                    ps.shutdown = RCV_SHUTDOWN | SEND_SHUTDOWN;
                    ps.err = Some(Errno::ECONNRESET);
                }
                embryo.release();
            }
        }
        // Unread messages give their senders' buffer space back, and any descriptors in
        // them are closed, with no lock held.
        for m in rx {
            if let Some(s) = &m.sender {
                s.wmem.fetch_sub(m.charge, Ordering::Relaxed);
            }
            drop(m);
        }
        changed();
    }

    /// Sends `len` bytes from `src` (and `scm`, with the first piece) to `dest` or the peer.
    /// Returns the bytes sent; raises SIGPIPE on EPIPE unless `nosignal`.
    pub fn send(
        self: &Arc<Self>,
        src: &mut IovCursor,
        dest: Option<Arc<UnixSocket>>,
        had_dest: bool,
        mut scm: Scm,
        nonblock: bool,
        nosignal: bool,
    ) -> SysResult<usize> {
        let len = src.len();
        let r = self.send_inner(src, len, dest, had_dest, &mut scm, nonblock);
        if let Err(Partial {
            err: Errno::EPIPE, ..
        }) = r
        {
            if !nosignal {
                crate::signal::send_to_task(
                    &crate::task::current_arc(),
                    svelt_abi::signal::SIGPIPE,
                    crate::signal::SigInfo::kernel(svelt_abi::signal::SIGPIPE),
                );
            }
        }
        match r {
            Ok(n) => Ok(n),
            Err(p) => p.short_count(),
        }
    }

    fn send_inner(
        self: &Arc<Self>,
        src: &mut IovCursor,
        len: usize,
        dest: Option<Arc<UnixSocket>>,
        had_dest: bool,
        scm: &mut Scm,
        nonblock: bool,
    ) -> Result<usize, Partial> {
        let fail = |err| Partial { done: 0, err };
        let (target, sndbuf, from) = {
            let st = self.st.lock();
            if self.ty.connection() {
                if had_dest {
                    return Err(fail(if st.connected {
                        Errno::EISCONN
                    } else {
                        Errno::EOPNOTSUPP
                    }));
                }
                if st.shutdown & SEND_SHUTDOWN != 0 {
                    return Err(fail(Errno::EPIPE));
                }
                if !st.connected {
                    return Err(fail(Errno::ENOTCONN));
                }
            } else if st.shutdown & SEND_SHUTDOWN != 0 {
                return Err(fail(Errno::EPIPE));
            }
            let target = match dest {
                Some(d) => d,
                None => st.peer.clone().ok_or(fail(Errno::ENOTCONN))?,
            };
            (target, st.sndbuf, st.addr)
        };
        let stream = self.ty == SockType::Stream;
        if !stream && len > sndbuf.saturating_sub(32) {
            return Err(fail(Errno::EMSGSIZE));
        }
        // A stream's bytes go in pieces of at most half the buffer; a datagram goes whole.
        let piece_max = if stream {
            (sndbuf / 2).saturating_sub(64).max(1)
        } else {
            len
        };
        let mut done = 0;
        loop {
            let n = (len - done).min(piece_max);
            let mut data = Vec::new();
            data.try_reserve_exact(n).map_err(|_| Partial {
                done,
                err: Errno::ENOBUFS,
            })?;
            data.resize(n, 0);
            src.copy_in(&mut data)
                .map_err(|p| Partial { done, err: p.err })?;
            let charge = n + MSG_OVERHEAD;
            let r = WQ.wait(|| {
                if self.wmem.load(Ordering::Relaxed) >= self.st.lock().sndbuf {
                    return nonblock.then_some(Err(Errno::EAGAIN));
                }
                let mut t = target.st.lock();
                if t.released {
                    return Some(Err(if self.ty.connection() {
                        Errno::EPIPE
                    } else {
                        Errno::ECONNREFUSED
                    }));
                }
                if self.ty.connection() {
                    if t.shutdown & RCV_SHUTDOWN != 0 {
                        return Some(Err(Errno::EPIPE));
                    }
                } else {
                    let theirs = t.peer.as_ref();
                    if theirs.is_some_and(|p| !Arc::ptr_eq(p, self)) && !Arc::ptr_eq(&target, self)
                    {
                        return Some(Err(Errno::EPERM));
                    }
                    // A receiver not connected back to us queues only so many datagrams.
                    if theirs.is_none() && t.rx.len() > MAX_DGRAM_QLEN {
                        return nonblock.then_some(Err(Errno::EAGAIN));
                    }
                }
                if t.rx.try_reserve(1).is_err() {
                    return Some(Err(Errno::ENOBUFS));
                }
                t.rx.push_back(Msg {
                    data: core::mem::take(&mut data),
                    off: 0,
                    from,
                    scm: core::mem::take(scm),
                    sender: Some(self.clone()),
                    charge,
                });
                self.wmem.fetch_add(charge, Ordering::Relaxed);
                Some(Ok(()))
            });
            match r {
                Ok(Ok(())) => {
                    changed();
                    done += n;
                }
                Ok(Err(err)) => return Err(Partial { done, err }),
                Err(_) => {
                    return Err(Partial {
                        done,
                        err: Errno::ERESTARTSYS,
                    })
                }
            }
            if done >= len {
                return Ok(done);
            }
        }
    }

    /// Receives into `dst`. Returns (bytes, msg_flags, the sender's name, rights and
    /// credentials of the message read).
    pub fn recv(&self, dst: &mut IovCursor, flags: u32, nonblock: bool) -> SysResult<Recv> {
        let peek = flags & MSG_PEEK != 0;
        let want = dst.len();
        let waitall = flags & MSG_WAITALL != 0 && self.ty == SockType::Stream && !peek;
        let mut out = Recv::default();
        let mut released = Vec::new();
        let r = WQ.wait(|| {
            let mut st = self.st.lock();
            if st.rx.is_empty() {
                if out.n > 0 && !waitall {
                    return Some(Ok(()));
                }
                if let Some(e) = st.err.take() {
                    return Some(Err(e));
                }
                if self.ty.connection() && !st.connected && st.shutdown == 0 {
                    return Some(Err(if self.ty == SockType::Stream {
                        Errno::EINVAL
                    } else {
                        Errno::ENOTCONN
                    }));
                }
                if st.shutdown & RCV_SHUTDOWN != 0 {
                    return Some(Ok(()));
                }
                if out.n > 0 && waitall && (nonblock) {
                    return Some(Ok(()));
                }
                if nonblock {
                    return Some(Err(Errno::EAGAIN));
                }
                return None;
            }
            if self.ty != SockType::Stream {
                let m = &st.rx[0];
                let n = want.min(m.data.len());
                if let Err(p) = dst.copy_out(&m.data[..n]) {
                    return Some(Err(p.err));
                }
                out.n = n;
                out.full = m.data.len();
                if m.data.len() > n {
                    out.flags |= MSG_TRUNC;
                }
                out.from = m.from;
                out.cred = m.scm.cred;
                if !peek {
                    let m = st.rx.pop_front().unwrap();
                    out.fds = m.scm.fds;
                    if let Some(s) = m.sender {
                        s.wmem.fetch_sub(m.charge, Ordering::Relaxed);
                        released.push(s);
                    }
                }
                return Some(Ok(()));
            }
            // A stream: as many bytes as asked for, across messages, stopping before a
            // message with rights once some bytes are read.
            let mut i = 0;
            let mut peek_off = 0;
            while out.n < want && i < st.rx.len() {
                let m = &st.rx[i];
                if out.n > 0 && !m.scm.fds.is_empty() {
                    break;
                }
                let avail = &m.data[m.off + if peek { peek_off } else { 0 }..];
                let n = avail.len().min(want - out.n);
                if let Err(p) = dst.copy_out(&avail[..n]) {
                    if out.n == 0 {
                        return Some(Err(p.err));
                    }
                    break;
                }
                if out.n == 0 {
                    out.from = m.from;
                    out.cred = m.scm.cred;
                }
                out.n += n;
                if peek {
                    i += 1;
                    peek_off = 0;
                    continue;
                }
                let m = &mut st.rx[i];
                m.off += n;
                let fds = core::mem::take(&mut m.scm.fds);
                let got_fds = !fds.is_empty();
                out.fds.extend(fds);
                if m.off == m.data.len() {
                    let m = st.rx.pop_front().unwrap();
                    if let Some(s) = m.sender {
                        s.wmem.fetch_sub(m.charge, Ordering::Relaxed);
                        released.push(s);
                    }
                } else {
                    i += 1;
                }
                if got_fds {
                    break;
                }
            }
            if waitall && out.n < want && !nonblock {
                drop(st);
                if !released.is_empty() {
                    changed();
                }
                return None;
            }
            Some(Ok(()))
        });
        if !released.is_empty() {
            changed();
        }
        drop(released);
        match r {
            Ok(Ok(())) => Ok(out),
            Ok(Err(e)) => Err(e),
            Err(_) if out.n > 0 => Ok(out),
            Err(_) => Err(Errno::ERESTARTSYS),
        }
    }

    /// SIOCINQ/FIONREAD: the bytes a read would get (a stream's all, a datagram's first).
    pub fn inq(&self) -> usize {
        let st = self.st.lock();
        match self.ty {
            SockType::Dgram => st.rx.front().map_or(0, |m| m.data.len()),
            _ => st.rx.iter().map(|m| m.data.len() - m.off).sum(),
        }
    }

    pub fn poll(self: &Arc<Self>) -> u32 {
        let st = self.st.lock();
        let mut ev = 0u32;
        if st.err.is_some() {
            ev |= POLLERR as u32;
        }
        if st.shutdown == RCV_SHUTDOWN | SEND_SHUTDOWN {
            ev |= POLLHUP as u32;
        }
        if st.shutdown & RCV_SHUTDOWN != 0 {
            ev |= POLLRDHUP | (POLLIN | POLLRDNORM) as u32;
        }
        if !st.rx.is_empty() || st.listen.as_ref().is_some_and(|l| !l.queue.is_empty()) {
            ev |= (POLLIN | POLLRDNORM) as u32;
        }
        if self.ty.connection() && !st.connected && st.listen.is_none() {
            ev |= POLLHUP as u32;
        }
        // unix_writable: a quarter of the buffer or less in flight.
        let mut writable =
            st.listen.is_none() && self.wmem.load(Ordering::Relaxed) << 2 <= st.sndbuf;
        let peer = st.peer.clone();
        drop(st);
        if writable && self.ty == SockType::Dgram {
            if let Some(p) = peer {
                let ps = p.st.lock();
                if ps.peer.as_ref().is_none_or(|pp| !Arc::ptr_eq(pp, self))
                    && ps.rx.len() > MAX_DGRAM_QLEN
                {
                    writable = false;
                }
            }
        }
        if writable {
            ev |= (POLLOUT | POLLWRNORM) as u32 | POLLWRBAND;
        }
        ev
    }
}

#[derive(Default)]
pub struct Recv {
    pub n: usize,
    /// A datagram's whole length (what MSG_TRUNC returns).
    pub full: usize,
    pub flags: u32,
    pub from: Option<UnixName>,
    pub cred: Ucred,
    pub fds: Vec<Arc<File>>,
}

/// An open socket: what a descriptor holds. Its last close releases the socket.
pub struct SockFile(pub Arc<UnixSocket>);

impl Drop for SockFile {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// The socket behind a file: ENOTSOCK for other files.
pub fn of(file: &File) -> SysResult<&Arc<UnixSocket>> {
    file.ops
        .as_any()
        .downcast_ref::<SockFile>()
        .map(|s| &s.0)
        .ok_or(Errno::ENOTSOCK)
}

impl FileOps for SockFile {
    fn read(&self, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let _ = (file, buf);
        Err(Errno::EINVAL)
    }

    fn read_to_user(&self, file: &File, dst: UserSlice) -> Option<SysResult<usize>> {
        let mut c = IovCursor::new(alloc::vec![dst]);
        Some(self.0.recv(&mut c, 0, file.nonblocking()).map(|r| r.n))
    }

    fn write(&self, file: &File, buf: &[u8]) -> SysResult<usize> {
        let _ = (file, buf);
        Err(Errno::EINVAL)
    }

    fn poll(&self) -> u32 {
        self.0.poll()
    }

    fn ioctl(&self, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        const SIOCOUTQ: u32 = 0x5411;
        let v = match cmd {
            svelt_abi::tty::FIONREAD => self.0.inq(),
            SIOCOUTQ => self.0.wmem.load(Ordering::Relaxed),
            _ => return Err(Errno::ENOTTY),
        };
        crate::mm::uaccess::UserPtr::new(arg).write(&(v as i32))?;
        Ok(0)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// The file-system node a path bind makes (S_IFSOCK): connect finds the socket by it.
pub struct SockNode {
    ino: u64,
    attrs: Attrs,
}

impl SockNode {
    pub fn new(perm: u32) -> Arc<SockNode> {
        Arc::new(SockNode {
            ino: new_ino(),
            attrs: Attrs::new(perm),
        })
    }
}

impl Inode for SockNode {
    fn ino(&self) -> u64 {
        self.ino
    }
    fn kind(&self) -> Kind {
        Kind::Socket
    }
    fn attrs(&self) -> Option<&Attrs> {
        Some(&self.attrs)
    }
    fn open(&self, _flags: u32) -> SysResult<Option<Arc<dyn FileOps>>> {
        Err(Errno::ENXIO)
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
