//! Moving bytes: send queues a message (a datagram whole, a stream in pieces) at the receiver,
//! charged to the sender's SO_SNDBUF; recv takes it out (a datagram at a time, a stream across
//! messages).

#![forbid(unsafe_code)]

use super::{changed, Msg, Scm, SockType, UnixSocket, RCV_SHUTDOWN, SEND_SHUTDOWN, WQ};
use crate::fs::{Caller, File};
use crate::mm::uaccess::Partial;
use crate::net::IovCursor;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::net::*;

/// What one queued message costs its sender beyond its bytes (an skb's overhead, roughly).
const MSG_OVERHEAD: usize = 768;

impl UnixSocket {
    /// Sends `len` bytes from `src` (and `scm`, with the first piece) to `dest` or the peer.
    /// Returns the bytes sent; on EPIPE raises SIGPIPE in `sigpipe_to`, the sender (None:
    /// MSG_NOSIGNAL).
    pub fn send(
        self: &Arc<Self>,
        src: &mut IovCursor,
        dest: Option<Arc<UnixSocket>>,
        had_dest: bool,
        mut scm: Scm,
        nonblock: bool,
        sigpipe_to: Option<&dyn Caller>,
    ) -> SysResult<usize> {
        let len = src.len();
        let r = self.send_inner(src, len, dest, had_dest, &mut scm, nonblock);
        if let Err(Partial {
            err: Errno::EPIPE, ..
        }) = r
        {
            if let Some(cur) = sigpipe_to {
                cur.broken_pipe();
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
