//! The socket calls for the families beside AF_UNIX (AF_INET, AF_INET6, AF_NETLINK): what the
//! handlers in net.rs hand them.

#![forbid(unsafe_code)]

use super::file::file;
use super::net::SOCKADDR_STORAGE;
use crate::fs::{File, FileOps};
use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::net::inet::{InetFile, InetSocket};
use crate::net::netlink::{NlFile, NlSocket};
use crate::net::unix::{self};
use crate::net::IovCursor;
use crate::process::CurrentTask;
use alloc::sync::Arc;
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::net::*;

/// A socket of the families beside AF_UNIX.
pub(super) enum Other {
    Inet(Arc<InetSocket>),
    Nl(Arc<NlSocket>),
}

/// The AF_INET, AF_INET6 or AF_NETLINK socket behind `fd`, if that is what it is (None for an
/// AF_UNIX one; ENOTSOCK for other files).
pub(super) fn other(cur: &CurrentTask, fd: i32) -> SysResult<Option<(Arc<File>, Other)>> {
    let f = file(cur, fd)?;
    if let Some(s) = crate::net::inet::of(&f) {
        let s = s.clone();
        return Ok(Some((f, Other::Inet(s))));
    }
    if let Some(s) = crate::net::netlink::of(&f) {
        let s = s.clone();
        return Ok(Some((f, Other::Nl(s))));
    }
    unix::of(&f)?;
    Ok(None)
}

/// An address argument's bytes, as many as given (EINVAL past sockaddr_storage).
pub(super) fn raw_addr(addr: usize, len: u32) -> SysResult<Vec<u8>> {
    let len = len as i32;
    if len < 0 || len as usize > SOCKADDR_STORAGE {
        return Err(Errno::EINVAL);
    }
    let mut buf = alloc::vec![0u8; len as usize];
    UserSlice::new(addr, len as usize).copy_in(&mut buf)?;
    Ok(buf)
}

pub(super) fn inet_bytes(a: &svelt_abi::uapi::inet::InetAddr) -> ([u8; 28], usize) {
    let mut b = [0u8; 28];
    let n = a.write(&mut b);
    (b, n)
}

/// socket(2) for AF_INET, AF_INET6 and AF_NETLINK (inet_create, netlink_create).
pub(super) fn socket_other(family: u32, ty: u32, protocol: u32) -> SysResult<Arc<dyn FileOps>> {
    use svelt_abi::uapi::inet::{IPPROTO_TCP, IPPROTO_UDP};
    let base = ty & SOCK_TYPE_MASK;
    if family == AF_NETLINK {
        if base != SOCK_RAW && base != SOCK_DGRAM {
            return Err(Errno::ESOCKTNOSUPPORT);
        }
        if protocol != svelt_abi::uapi::netlink::NETLINK_ROUTE {
            return Err(Errno::EPROTONOSUPPORT);
        }
        return Ok(Arc::new(NlFile(NlSocket::new(base))));
    }
    match (base, protocol) {
        (SOCK_STREAM, 0 | IPPROTO_TCP) | (SOCK_DGRAM, 0 | IPPROTO_UDP) => {}
        (SOCK_STREAM | SOCK_DGRAM | SOCK_RAW, _) => return Err(Errno::EPROTONOSUPPORT),
        _ => return Err(Errno::ESOCKTNOSUPPORT),
    }
    Ok(Arc::new(InetFile(InetSocket::new(family, base))))
}

/// send, sendto, sendmsg on an inet or netlink socket.
pub(super) fn send_other(
    cur: &CurrentTask,
    f: &File,
    o: Other,
    mut data: IovCursor,
    flags: u32,
    addr: usize,
    addrlen: u32,
) -> SysResult<usize> {
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let dest = if addr != 0 && addrlen != 0 {
        Some(raw_addr(addr, addrlen)?)
    } else {
        None
    };
    let nonblock = f.nonblocking() || flags & MSG_DONTWAIT != 0;
    match o {
        Other::Inet(s) => s.send(
            cur,
            &mut data,
            dest.as_deref(),
            nonblock,
            flags & MSG_NOSIGNAL != 0,
        ),
        Other::Nl(s) => {
            if let Some(d) = &dest {
                if d.len() < svelt_abi::uapi::netlink::SOCKADDR_NL_SIZE
                    || u16::from_ne_bytes([d[0], d[1]]) as u32 != AF_NETLINK
                {
                    return Err(Errno::EINVAL);
                }
            }
            s.send(cur, &mut data)
        }
    }
}

/// A receive on an inet or netlink socket: (bytes given, the whole datagram, the sender's
/// address bytes and their length).
pub(super) fn recv_other(
    f: &File,
    o: Other,
    mut data: IovCursor,
    flags: u32,
) -> SysResult<(usize, usize, [u8; 28], usize)> {
    if flags & MSG_OOB != 0 {
        return Err(Errno::EINVAL);
    }
    let nonblock = f.nonblocking() || flags & MSG_DONTWAIT != 0;
    match o {
        Other::Inet(s) => {
            let r = s.recv(&mut data, flags, nonblock)?;
            let (b, n) = r.from.map_or(([0; 28], 0), |a| inet_bytes(&a));
            Ok((r.n, r.full, b, n))
        }
        Other::Nl(s) => {
            let r = s.recv(&mut data, flags, nonblock)?;
            let mut b = [0u8; 28];
            b[..12].copy_from_slice(&svelt_abi::uapi::netlink::sockaddr_nl(0, 0));
            Ok((r.n, r.full, b, 12))
        }
    }
}

/// setsockopt on an inet or netlink socket: SO_REUSEADDR, SO_LINGER, TCP_NODELAY and
/// IPV6_V6ONLY are kept; the buffer sizes, keep-alive, time-outs and netlink's options are
/// taken without effect.
pub(super) fn setsockopt_other(
    o: Other,
    level: u32,
    name: u32,
    val: usize,
    len: u32,
) -> SysResult<usize> {
    use svelt_abi::uapi::inet::*;
    if (len as i32) < 4 {
        return Err(Errno::EINVAL);
    }
    let v: i32 = UserPtr::new(val).read()?;
    const SOL_NETLINK: u32 = 270;
    match (o, level, name) {
        (Other::Inet(s), SOL_SOCKET, SO_REUSEADDR) => s.set_reuse(v != 0),
        (Other::Inet(s), SOL_SOCKET, SO_LINGER) => {
            // struct linger { int l_onoff; int l_linger; }
            if len < 8 {
                return Err(Errno::EINVAL);
            }
            let secs: i32 = UserPtr::new(val + 4).read()?;
            s.set_linger(v != 0, secs);
        }
        (
            _,
            SOL_SOCKET,
            SO_SNDBUF | SO_RCVBUF | SO_KEEPALIVE | SO_REUSEPORT | 6 | SO_LINGER | 20 | 21 | 66 | 67,
        ) => {}
        (Other::Inet(s), IPPROTO_TCP, TCP_NODELAY) if s.ty == SOCK_STREAM => s
            .nodelay
            .store(v != 0, core::sync::atomic::Ordering::Relaxed),
        (Other::Inet(s), IPPROTO_IPV6, IPV6_V6ONLY) if s.family == AF_INET6 => {
            s.set_v6only(v != 0)?
        }
        (Other::Nl(_), SOL_NETLINK, _) => {}
        _ => return Err(Errno::ENOPROTOOPT),
    }
    Ok(0)
}

pub(super) fn getsockopt_other(
    o: Other,
    level: u32,
    name: u32,
    val: usize,
    lenp: usize,
) -> SysResult<usize> {
    use svelt_abi::uapi::inet::*;
    let len: i32 = UserPtr::new(lenp).read()?;
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let v: i32 = match (&o, level, name) {
        (Other::Inet(s), SOL_SOCKET, SO_LINGER) => {
            let (on, secs) = s.linger();
            let ling = [on as i32, secs];
            let b = zerocopy::IntoBytes::as_bytes(&ling);
            let n = (len as usize).min(b.len());
            UserSlice::new(val, n).copy_out(&b[..n])?;
            UserPtr::new(lenp).write(&(n as i32))?;
            return Ok(0);
        }
        (Other::Inet(s), IPPROTO_IPV6, IPV6_V6ONLY) if s.family == AF_INET6 => s.v6only() as i32,
        (Other::Inet(s), SOL_SOCKET, SO_TYPE) => s.ty as i32,
        (Other::Nl(s), SOL_SOCKET, SO_TYPE) => s.ty as i32,
        (Other::Inet(s), SOL_SOCKET, SO_DOMAIN) => s.family as i32,
        (Other::Nl(_), SOL_SOCKET, SO_DOMAIN) => AF_NETLINK as i32,
        (Other::Inet(s), SOL_SOCKET, SO_PROTOCOL) => s.protocol() as i32,
        (Other::Nl(_), SOL_SOCKET, SO_PROTOCOL) => 0,
        (Other::Inet(s), SOL_SOCKET, SO_ERROR) => s.take_error(),
        (Other::Nl(_), SOL_SOCKET, SO_ERROR) => 0,
        (Other::Inet(s), SOL_SOCKET, SO_REUSEADDR) => s.reuse() as i32,
        (Other::Inet(s), SOL_SOCKET, SO_ACCEPTCONN) => s.listening() as i32,
        (_, SOL_SOCKET, SO_SNDBUF | SO_RCVBUF) => SK_BUF_DEFAULT as i32,
        (Other::Inet(s), IPPROTO_TCP, TCP_NODELAY) if s.ty == SOCK_STREAM => {
            s.nodelay.load(core::sync::atomic::Ordering::Relaxed) as i32
        }
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let b = v.to_ne_bytes();
    let n = (len as usize).min(4);
    UserSlice::new(val, n).copy_out(&b[..n])?;
    UserPtr::new(lenp).write(&(n as i32))?;
    Ok(0)
}

pub(super) fn other_of(f: &File) -> Option<Other> {
    if let Some(s) = crate::net::inet::of(f) {
        return Some(Other::Inet(s.clone()));
    }
    crate::net::netlink::of(f).map(|s| Other::Nl(s.clone()))
}

pub(super) fn rw_other(
    cur: &CurrentTask,
    f: &File,
    o: Other,
    mut data: IovCursor,
    write: bool,
) -> SysResult<usize> {
    let nonblock = f.nonblocking();
    match (o, write) {
        (Other::Inet(s), true) => s.send(cur, &mut data, None, nonblock, false),
        (Other::Inet(s), false) => s.recv(&mut data, 0, nonblock).map(|r| r.n),
        (Other::Nl(s), true) => s.send(cur, &mut data),
        (Other::Nl(s), false) => s.recv(&mut data, 0, nonblock).map(|r| r.n),
    }
}
