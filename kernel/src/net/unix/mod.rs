//! AF_UNIX sockets: stream, datagram and seqpacket, as Linux's net/unix/af_unix.c behaves.
//!
//! A socket's state sits behind its own lock, and no path holds two sockets' locks at once: a
//! sender takes what it needs from its own state, lets go, then queues into the receiver's.
//! Bytes in flight are charged to the sender (SO_SNDBUF bounds them, as Linux's wmem), and
//! every change wakes one queue and the poll/epoll waiters (the pipes' mechanism).
//!
//! This file holds a socket's state and its connection life (listen, connect, accept,
//! shutdown, the last close, poll); `queue` moves the bytes (send, recv), `names` is the
//! registry of bound names, `scm` what a message carries besides its bytes.

#![forbid(unsafe_code)]

mod names;
mod queue;
mod scm;

pub use names::SockNode;
pub use queue::Recv;
pub use scm::{cred_of, Scm};

use crate::fs::{epoll, new_ino, Caller, File, FileOps};
use crate::mm::uaccess::UserSlice;
use crate::net::IovCursor;
use crate::process::Thread;
use crate::task::wait::WaitQueue;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::sync::atomic::{AtomicUsize, Ordering};
use spin::Mutex;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{POLLERR, POLLHUP, POLLIN, POLLOUT, POLLRDNORM, POLLWRNORM};
use svelt_abi::uapi::net::*;

const POLLWRBAND: u32 = 0x200;
const POLLRDHUP: u32 = 0x2000;
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

    /// socketpair: two sockets connected to each other, each with `cur`'s credentials.
    pub fn pair(cur: &Thread, ty: SockType) -> (Arc<UnixSocket>, Arc<UnixSocket>) {
        let (a, b) = (Self::new(ty), Self::new(ty));
        let cred = cred_of(cur);
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

    pub fn listen(&self, cur: &Thread, backlog: i32) -> SysResult<()> {
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
        st.peercred = Some(cred_of(cur));
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
        cur: &Thread,
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
        let me = cred_of(cur);
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
        self.unbind();
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
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        let _ = (file, buf);
        Err(Errno::EINVAL)
    }

    fn read_to_user(
        &self,
        _cur: &dyn Caller,
        file: &File,
        dst: UserSlice,
    ) -> Option<SysResult<usize>> {
        let mut c = IovCursor::new(alloc::vec![dst]);
        Some(self.0.recv(&mut c, 0, file.nonblocking()).map(|r| r.n))
    }

    fn write(&self, _cur: &dyn Caller, file: &File, buf: &[u8]) -> SysResult<usize> {
        let _ = (file, buf);
        Err(Errno::EINVAL)
    }

    fn poll(&self, _cur: &dyn Caller) -> u32 {
        self.0.poll()
    }

    fn ioctl(&self, _cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        const SIOCOUTQ: u32 = 0x5411;
        let v = match cmd {
            svelt_abi::uapi::tty::FIONREAD => self.0.inq(),
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
