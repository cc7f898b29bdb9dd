//! Sockets: socket, socketpair, bind, listen, connect, accept4, the names, send/recv and their
//! msg forms (iovecs, control messages), shutdown and the socket options.

#![forbid(unsafe_code)]

use super::file::{file, install, read_iovecs, user_segments};
use super::net_other::*;
use crate::fs::{self, Caller, File, FileOps};
use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::net::inet::InetFile;
use crate::net::unix::{self, Scm, SockFile, SockType, UnixSocket};
use crate::net::IovCursor;
use crate::process::CurrentTask;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::{MAX_RW_COUNT, O_NONBLOCK, O_RDWR};
use svelt_abi::uapi::net::*;

/// sizeof(struct sockaddr_storage): the most of an address the kernel reads.
pub(super) const SOCKADDR_STORAGE: usize = 128;

fn new_file(sock: Arc<UnixSocket>, flags: u32) -> Arc<File> {
    sock_file(Arc::new(SockFile(sock)), flags)
}

fn sock_file(ops: Arc<dyn FileOps>, flags: u32) -> Arc<File> {
    File::new(
        None,
        ops,
        O_RDWR | (flags & O_NONBLOCK),
        String::from("socket:"),
    )
}

fn check_family_and_type(family: u32, ty: u32, protocol: u32) -> SysResult<SockType> {
    if ty & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    if family >= AF_MAX {
        return Err(Errno::EAFNOSUPPORT);
    }
    if family != AF_UNIX {
        return Err(Errno::EAFNOSUPPORT);
    }
    if protocol != 0 && protocol != AF_UNIX {
        return Err(Errno::EPROTONOSUPPORT);
    }
    SockType::from_raw(ty & SOCK_TYPE_MASK)
}

pub fn socket(cur: &CurrentTask, family: u32, ty: u32, protocol: u32) -> SysResult<usize> {
    if ty & !(SOCK_TYPE_MASK | SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    if matches!(family, AF_INET | AF_INET6 | AF_NETLINK) {
        let ops = socket_other(family, ty, protocol)?;
        return install(cur, sock_file(ops, ty), ty & SOCK_CLOEXEC != 0);
    }
    let st = check_family_and_type(family, ty, protocol)?;
    install(
        cur,
        new_file(UnixSocket::new(st), ty),
        ty & SOCK_CLOEXEC != 0,
    )
}

pub fn socketpair(
    cur: &CurrentTask,
    family: u32,
    ty: u32,
    protocol: u32,
    sv: usize,
) -> SysResult<usize> {
    if matches!(family, AF_INET | AF_INET6 | AF_NETLINK) {
        socket_other(family, ty, protocol)?;
        return Err(Errno::EOPNOTSUPP);
    }
    let st = check_family_and_type(family, ty, protocol)?;
    let (a, b) = UnixSocket::pair(cur, st);
    let (fa, fb) = (new_file(a, ty), new_file(b, ty));
    let cloexec = ty & SOCK_CLOEXEC != 0;
    let table = cur.files();
    let mut t = table.lock();
    let x = t.install(cur, fa, cloexec)?;
    let y = match t.install(cur, fb, cloexec) {
        Ok(y) => y,
        Err(e) => {
            let _ = t.close(x);
            return Err(e);
        }
    };
    if let Err(e) = UserPtr::<[i32; 2]>::new(sv).write(&[x, y]) {
        let _ = t.close(x);
        let _ = t.close(y);
        return Err(e);
    }
    Ok(0)
}

fn sock(cur: &CurrentTask, fd: i32) -> SysResult<(Arc<File>, Arc<UnixSocket>)> {
    let f = file(cur, fd)?;
    let s = unix::of(&f)?.clone();
    Ok((f, s))
}

/// The address bytes a call was given (at most sockaddr_storage's worth: EINVAL beyond).
fn read_addr(addr: usize, len: u32) -> SysResult<UnixAddr> {
    let len = len as i32;
    if len < 0 || len as usize > SOCKADDR_STORAGE {
        return Err(Errno::EINVAL);
    }
    let mut buf = [0u8; SOCKADDR_STORAGE];
    UserSlice::new(addr, len as usize).copy_in(&mut buf[..len as usize])?;
    parse_unix_addr(&buf[..len as usize])
}

/// move_addr_to_user: as much of the name as fits, and its whole length in `*lenp`.
fn write_addr(name: &[u8], addr: usize, lenp: usize) -> SysResult<()> {
    let ulen: i32 = UserPtr::new(lenp).read()?;
    if ulen < 0 {
        return Err(Errno::EINVAL);
    }
    let n = (ulen as usize).min(name.len());
    UserSlice::new(addr, n).copy_out(&name[..n])?;
    UserPtr::new(lenp).write(&(name.len() as i32))?;
    Ok(())
}

fn name_bytes(n: &Option<UnixName>) -> &[u8] {
    match n {
        Some(n) => n.as_bytes(),
        None => &UNNAMED,
    }
}

pub fn bind(cur: &CurrentTask, fd: i32, addr: usize, len: u32) -> SysResult<usize> {
    if let Some((_, o)) = other(cur, fd)? {
        let a = raw_addr(addr, len)?;
        match o {
            Other::Inet(s) => s.bind(&a)?,
            Other::Nl(s) => s.bind(cur, &a)?,
        }
        return Ok(0);
    }
    let (_, s) = sock(cur, fd)?;
    let name = match read_addr(addr, len)? {
        UnixAddr::Unnamed => {
            if s.is_bound() {
                return Err(Errno::EINVAL);
            }
            s.autobind()?;
            return Ok(0);
        }
        UnixAddr::Named(n) => n,
    };
    if name.is_abstract() {
        s.bind(name, None)?;
        return Ok(0);
    }
    if s.is_bound() {
        return Err(Errno::EINVAL);
    }
    let path = core::str::from_utf8(name.path()).map_err(|_| Errno::ENOENT)?;
    let p = fs::resolve_parent(cur, svelt_abi::uapi::fs::AT_FDCWD, path)?;
    let umask = cur.fs().lock().umask;
    let node = fs::made_by(cur, unix::SockNode::new(0o777 & !umask));
    match p.dir.link(&p.name, node.clone()) {
        Ok(()) => {}
        Err(Errno::EEXIST) => return Err(Errno::EADDRINUSE),
        Err(e) => return Err(e),
    }
    if let Err(e) = s.bind(name, Some(fs::Inode::ino(&*node))) {
        let _ = p.dir.unlink(&p.name, false);
        return Err(e);
    }
    Ok(0)
}

pub fn listen(cur: &CurrentTask, fd: i32, backlog: i32) -> SysResult<usize> {
    match other(cur, fd)? {
        Some((_, Other::Inet(s))) => return s.listen(backlog).map(|()| 0),
        Some((_, Other::Nl(_))) => return Err(Errno::EOPNOTSUPP),
        None => {}
    }
    let (_, s) = sock(cur, fd)?;
    s.listen(cur, backlog)?;
    Ok(0)
}

/// The socket a name is bound to.
fn find(cur: &CurrentTask, name: &UnixName, ty: SockType) -> SysResult<Arc<UnixSocket>> {
    if name.is_abstract() {
        return UnixSocket::find(None, name, ty);
    }
    let path = core::str::from_utf8(name.path()).map_err(|_| Errno::ENOENT)?;
    let r = fs::resolve(cur, svelt_abi::uapi::fs::AT_FDCWD, path, true)?;
    UnixSocket::find(Some(r.node), name, ty)
}

pub fn connect(cur: &CurrentTask, fd: i32, addr: usize, len: u32) -> SysResult<usize> {
    if let Some((f, o)) = other(cur, fd)? {
        let a = raw_addr(addr, len)?;
        match o {
            Other::Inet(s) => s.connect(&a, f.nonblocking())?,
            Other::Nl(s) => s.connect(cur, &a)?,
        }
        return Ok(0);
    }
    let (f, s) = sock(cur, fd)?;
    let a = read_addr(addr, len);
    if s.ty == SockType::Dgram {
        // AF_UNSPEC dissolves the association.
        if len as usize >= 2 {
            let fam: u16 = UserPtr::new(addr).read()?;
            if fam as u32 == AF_UNSPEC {
                s.connect_dgram(None)?;
                return Ok(0);
            }
        }
        let UnixAddr::Named(name) = a? else {
            return Err(Errno::EINVAL);
        };
        let target = find(cur, &name, s.ty)?;
        s.connect_dgram(Some(target))?;
        return Ok(0);
    }
    let UnixAddr::Named(name) = a? else {
        return Err(Errno::EINVAL);
    };
    let target = find(cur, &name, s.ty)?;
    s.connect_stream(cur, &target, f.nonblocking())?;
    Ok(0)
}

pub fn accept4(
    cur: &CurrentTask,
    fd: i32,
    addr: usize,
    lenp: usize,
    flags: u32,
) -> SysResult<usize> {
    if flags & !(SOCK_NONBLOCK | SOCK_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    match other(cur, fd)? {
        Some((f, Other::Inet(s))) => {
            let new = s.accept(f.nonblocking())?;
            let peer = new.peer_name().ok();
            let fdn = install(
                cur,
                sock_file(Arc::new(InetFile(new)), flags),
                flags & SOCK_CLOEXEC != 0,
            )?;
            if addr != 0 {
                let (b, n) =
                    inet_bytes(&peer.unwrap_or(svelt_abi::uapi::inet::InetAddr::any(s.family)));
                if let Err(e) = write_addr(&b[..n], addr, lenp) {
                    let _ = cur.files().lock().close(fdn as i32);
                    return Err(e);
                }
            }
            return Ok(fdn);
        }
        Some((_, Other::Nl(_))) => return Err(Errno::EOPNOTSUPP),
        None => {}
    }
    let (f, s) = sock(cur, fd)?;
    let new = s.accept(f.nonblocking())?;
    let peer = new.peer_name().ok().flatten();
    let nf = new_file(new, flags);
    let fdn = install(cur, nf, flags & SOCK_CLOEXEC != 0)?;
    if addr != 0 {
        if let Err(e) = write_addr(name_bytes(&peer), addr, lenp) {
            let _ = cur.files().lock().close(fdn as i32);
            return Err(e);
        }
    }
    Ok(fdn)
}

pub fn getsockname(cur: &CurrentTask, fd: i32, addr: usize, lenp: usize) -> SysResult<usize> {
    match other(cur, fd)? {
        Some((_, Other::Inet(s))) => {
            let (b, n) = inet_bytes(&s.name());
            write_addr(&b[..n], addr, lenp)?;
            return Ok(0);
        }
        Some((_, Other::Nl(s))) => {
            write_addr(&s.name(), addr, lenp)?;
            return Ok(0);
        }
        None => {}
    }
    let (_, s) = sock(cur, fd)?;
    write_addr(name_bytes(&s.name()), addr, lenp)?;
    Ok(0)
}

pub fn getpeername(cur: &CurrentTask, fd: i32, addr: usize, lenp: usize) -> SysResult<usize> {
    match other(cur, fd)? {
        Some((_, Other::Inet(s))) => {
            let (b, n) = inet_bytes(&s.peer_name()?);
            write_addr(&b[..n], addr, lenp)?;
            return Ok(0);
        }
        Some((_, Other::Nl(_))) => {
            // The kernel is every netlink socket's peer (netlink_getname with peer).
            write_addr(&svelt_abi::uapi::netlink::sockaddr_nl(0, 0), addr, lenp)?;
            return Ok(0);
        }
        None => {}
    }
    let (_, s) = sock(cur, fd)?;
    let n = s.peer_name()?;
    write_addr(name_bytes(&n), addr, lenp)?;
    Ok(0)
}

pub fn shutdown(cur: &CurrentTask, fd: i32, how: u32) -> SysResult<usize> {
    match other(cur, fd)? {
        Some((_, Other::Inet(s))) => return s.shutdown(how).map(|()| 0),
        Some((_, Other::Nl(_))) => return Err(Errno::EOPNOTSUPP),
        None => {}
    }
    let (_, s) = sock(cur, fd)?;
    s.shutdown(how)?;
    Ok(0)
}

/// An iovec array as user slices, the total capped at MAX_RW_COUNT.
fn iov_slices(iov: usize, cnt: usize) -> SysResult<IovCursor> {
    Ok(IovCursor::new(user_segments(&read_iovecs(iov, cnt)?)?))
}

/// The rights and credentials of a sendmsg's control buffer.
fn read_scm(cur: &CurrentTask, control: usize, len: usize) -> SysResult<Scm> {
    let mut scm = Scm {
        fds: Vec::new(),
        cred: unix::cred_of(cur),
    };
    if len == 0 {
        return Ok(scm);
    }
    if len > i32::MAX as usize {
        return Err(Errno::ENOBUFS);
    }
    let buf = UserSlice::new(control, len).read_vec()?;
    let root = scm.cred.uid == 0;
    parse_cmsgs(&buf, |c| {
        if c.level != SOL_SOCKET {
            return Err(Errno::EINVAL);
        }
        match c.ty {
            SCM_RIGHTS => {
                let n = c.data.len() / 4;
                if scm.fds.len() + n > SCM_MAX_FD {
                    return Err(Errno::EINVAL);
                }
                scm.fds.try_reserve(n).map_err(|_| Errno::ENOMEM)?;
                for i in 0..n {
                    let fd = i32::from_ne_bytes(c.data[4 * i..4 * i + 4].try_into().unwrap());
                    scm.fds.push(file(cur, fd)?);
                }
                Ok(())
            }
            SCM_CREDENTIALS => {
                let cred = Ucred::read_from_bytes(c.data).map_err(|_| Errno::EINVAL)?;
                if !root && (cred.pid != scm.cred.pid || cred.uid != scm.cred.uid) {
                    return Err(Errno::EPERM);
                }
                scm.cred = cred;
                Ok(())
            }
            _ => Err(Errno::EINVAL),
        }
    })?;
    Ok(scm)
}

use zerocopy::FromBytes;

fn do_send(
    cur: &CurrentTask,
    fd: i32,
    mut data: IovCursor,
    flags: u32,
    addr: usize,
    addrlen: u32,
    scm: Scm,
) -> SysResult<usize> {
    let (f, s) = sock(cur, fd)?;
    let dest = if addr != 0 && addrlen != 0 {
        let UnixAddr::Named(name) = read_addr(addr, addrlen)? else {
            return Err(Errno::EINVAL);
        };
        if s.ty.raw() != SOCK_DGRAM {
            // A connection-based socket refuses an address (unix_stream_sendmsg).
            Some(None)
        } else {
            Some(Some(find(cur, &name, s.ty)?))
        }
    } else {
        None
    };
    let nonblock = f.nonblocking() || flags & MSG_DONTWAIT != 0;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EOPNOTSUPP);
    }
    let sigpipe_to: Option<&dyn Caller> = (flags & MSG_NOSIGNAL == 0).then_some(cur);
    s.send(
        &mut data,
        dest.clone().flatten(),
        dest.is_some(),
        scm,
        nonblock,
        sigpipe_to,
    )
}

pub fn sendto(
    cur: &CurrentTask,
    fd: i32,
    buf: usize,
    len: usize,
    flags: u32,
    addr: usize,
    addrlen: u32,
) -> SysResult<usize> {
    let seg = UserSlice::new(buf, len.min(MAX_RW_COUNT));
    seg.check()?;
    if let Some((f, o)) = other(cur, fd)? {
        return send_other(
            cur,
            &f,
            o,
            IovCursor::new(alloc::vec![seg]),
            flags,
            addr,
            addrlen,
        );
    }
    let scm = Scm {
        fds: Vec::new(),
        cred: unix::cred_of(cur),
    };
    do_send(
        cur,
        fd,
        IovCursor::new(alloc::vec![seg]),
        flags,
        addr,
        addrlen,
        scm,
    )
}

pub fn sendmsg(cur: &CurrentTask, fd: i32, msg: usize, flags: u32) -> SysResult<usize> {
    let m: Msghdr = UserPtr::new(msg).read()?;
    if let Some((f, o)) = other(cur, fd)? {
        let data = iov_slices(m.msg_iov as usize, m.msg_iovlen as usize)?;
        return send_other(cur, &f, o, data, flags, m.msg_name as usize, m.msg_namelen);
    }
    sock(cur, fd)?;
    let data = iov_slices(m.msg_iov as usize, m.msg_iovlen as usize)?;
    let scm = read_scm(cur, m.msg_control as usize, m.msg_controllen as usize)?;
    do_send(
        cur,
        fd,
        data,
        flags,
        m.msg_name as usize,
        m.msg_namelen,
        scm,
    )
}

/// A receive: the bytes into `data`, then the sender's name and control messages if asked.
fn do_recv(
    cur: &CurrentTask,
    fd: i32,
    mut data: IovCursor,
    flags: u32,
) -> SysResult<(unix::Recv, Arc<UnixSocket>)> {
    let (f, s) = sock(cur, fd)?;
    if flags & MSG_OOB != 0 {
        return Err(Errno::EINVAL);
    }
    let nonblock = f.nonblocking() || flags & MSG_DONTWAIT != 0;
    let r = s.recv(&mut data, flags, nonblock)?;
    Ok((r, s))
}

fn result_len(r: &unix::Recv, flags: u32) -> usize {
    if flags & MSG_TRUNC != 0 && r.full > r.n {
        r.full
    } else {
        r.n
    }
}

pub fn recvfrom(
    cur: &CurrentTask,
    fd: i32,
    buf: usize,
    len: usize,
    flags: u32,
    addr: usize,
    lenp: usize,
) -> SysResult<usize> {
    let seg = UserSlice::new(buf, len.min(MAX_RW_COUNT));
    seg.check()?;
    if let Some((f, o)) = other(cur, fd)? {
        let (n, full, name, nl) = recv_other(&f, o, IovCursor::new(alloc::vec![seg]), flags)?;
        if addr != 0 && nl != 0 {
            write_addr(&name[..nl], addr, lenp)?;
        }
        return Ok(if flags & MSG_TRUNC != 0 {
            full.max(n)
        } else {
            n
        });
    }
    let (r, _) = do_recv(cur, fd, IovCursor::new(alloc::vec![seg]), flags)?;
    if addr != 0 {
        write_addr(
            r.from.as_ref().map_or(&[][..], |n| n.as_bytes()),
            addr,
            lenp,
        )?;
    }
    Ok(result_len(&r, flags))
}

pub fn recvmsg(cur: &CurrentTask, fd: i32, msg: usize, flags: u32) -> SysResult<usize> {
    let m: Msghdr = UserPtr::new(msg).read()?;
    if let Some((f, o)) = other(cur, fd)? {
        let data = iov_slices(m.msg_iov as usize, m.msg_iovlen as usize)?;
        let (n, full, name, nl) = recv_other(&f, o, data, flags)?;
        let mut out = m;
        out.msg_flags = flags & MSG_CMSG_CLOEXEC;
        if full > n {
            out.msg_flags |= MSG_TRUNC;
        }
        if m.msg_name != 0 {
            let k = (m.msg_namelen as usize).min(nl);
            UserSlice::new(m.msg_name as usize, k).copy_out(&name[..k])?;
            out.msg_namelen = nl as u32;
        }
        out.msg_controllen = 0;
        UserPtr::new(msg).write(&out)?;
        return Ok(if flags & MSG_TRUNC != 0 {
            full.max(n)
        } else {
            n
        });
    }
    sock(cur, fd)?;
    let data = iov_slices(m.msg_iov as usize, m.msg_iovlen as usize)?;
    let (r, s) = do_recv(cur, fd, data, flags)?;
    let mut out = m;
    // ___sys_recvmsg hands MSG_CMSG_CLOEXEC back in msg_flags.
    out.msg_flags = r.flags | (flags & MSG_CMSG_CLOEXEC);
    if m.msg_name != 0 {
        let name = r.from.as_ref().map_or(&[][..], |n| n.as_bytes());
        let n = (m.msg_namelen as usize).min(name.len());
        UserSlice::new(m.msg_name as usize, n).copy_out(&name[..n])?;
        out.msg_namelen = name.len() as u32;
    }
    // Control messages: credentials first (with SO_PASSCRED), then rights.
    let mut b = CmsgBuilder::new(m.msg_controllen as usize);
    let ctl = m.msg_control as usize;
    if s.passcred() {
        if let Some((at, h, n)) = b.push(SOL_SOCKET, SCM_CREDENTIALS, 12) {
            UserPtr::new(ctl + at).write(&h)?;
            let c = zerocopy::IntoBytes::as_bytes(&r.cred);
            UserSlice::new(ctl + at + CMSGHDR_SIZE, n).copy_out(&c[..n])?;
        }
    }
    if !r.fds.is_empty() {
        let fit = b.items_that_fit(4).min(r.fds.len());
        if fit < r.fds.len() {
            b.truncated = true;
        }
        if fit > 0 {
            let cloexec = flags & MSG_CMSG_CLOEXEC != 0;
            let mut fds = Vec::new();
            fds.try_reserve(fit).map_err(|_| Errno::ENOMEM)?;
            {
                let table = cur.files();
                let mut t = table.lock();
                for f in r.fds.iter().take(fit) {
                    match t.install(cur, f.clone(), cloexec) {
                        Ok(n) => fds.push(n),
                        Err(_) => {
                            b.truncated = true;
                            break;
                        }
                    }
                }
            }
            let bytes: Vec<u8> = fds.iter().flat_map(|n| n.to_ne_bytes()).collect();
            if let Some((at, h, _)) = b.push(SOL_SOCKET, SCM_RIGHTS, bytes.len()) {
                UserPtr::new(ctl + at).write(&h)?;
                UserSlice::new(ctl + at + CMSGHDR_SIZE, bytes.len()).copy_out(&bytes)?;
            }
        }
    }
    if b.truncated {
        out.msg_flags |= MSG_CTRUNC;
    }
    out.msg_controllen = b.used() as u64;
    UserPtr::new(msg).write(&out)?;
    Ok(result_len(&r, flags))
}

pub fn setsockopt(
    cur: &CurrentTask,
    fd: i32,
    level: u32,
    name: u32,
    val: usize,
    len: u32,
) -> SysResult<usize> {
    if let Some((_, o)) = other(cur, fd)? {
        return setsockopt_other(o, level, name, val, len);
    }
    let (_, s) = sock(cur, fd)?;
    if level != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    if (len as i32) < 4 {
        return Err(Errno::EINVAL);
    }
    let v: i32 = UserPtr::new(val).read()?;
    match name {
        SO_SNDBUF => s.set_sndbuf(sockbuf_from_user(v, SOCK_MIN_SNDBUF)),
        SO_RCVBUF => s.set_rcvbuf(sockbuf_from_user(v, SOCK_MIN_RCVBUF)),
        SO_PASSCRED => s.set_passcred(v != 0),
        // Accepted and without effect on AF_UNIX: SO_REUSEADDR, SO_KEEPALIVE, SO_PASSSEC and
        // the time-outs.
        2 | 9 | 20 | 21 | 34 | 66 | 67 => {}
        _ => return Err(Errno::ENOPROTOOPT),
    }
    Ok(0)
}

pub fn getsockopt(
    cur: &CurrentTask,
    fd: i32,
    level: u32,
    name: u32,
    val: usize,
    lenp: usize,
) -> SysResult<usize> {
    if let Some((_, o)) = other(cur, fd)? {
        return getsockopt_other(o, level, name, val, lenp);
    }
    let (_, s) = sock(cur, fd)?;
    if level != SOL_SOCKET {
        return Err(Errno::EOPNOTSUPP);
    }
    let len: i32 = UserPtr::new(lenp).read()?;
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let (sndbuf, rcvbuf) = s.bufs();
    let int = |v: usize| -> [u8; 4] { (v as i32).to_ne_bytes() };
    let cred;
    let bytes: &[u8] = match name {
        SO_TYPE => &int(s.ty.raw() as usize),
        SO_DOMAIN => &int(AF_UNIX as usize),
        SO_PROTOCOL => &int(0),
        SO_ERROR => &int(s.take_error() as usize),
        SO_SNDBUF => &int(sndbuf),
        SO_RCVBUF => &int(rcvbuf),
        SO_PASSCRED => &int(s.passcred() as usize),
        SO_ACCEPTCONN => &int(s.listening() as usize),
        SO_PEERCRED => {
            cred = s.peercred();
            zerocopy::IntoBytes::as_bytes(&cred)
        }
        _ => return Err(Errno::ENOPROTOOPT),
    };
    let n = (len as usize).min(bytes.len());
    UserSlice::new(val, n).copy_out(&bytes[..n])?;
    UserPtr::new(lenp).write(&(n as i32))?;
    Ok(0)
}

/// read/readv/write/writev on a socket: recv/send without flags (a datagram whole, not one per
/// piece).
pub fn rw(cur: &CurrentTask, f: &File, iov: usize, cnt: usize, write: bool) -> SysResult<usize> {
    let data = iov_slices(iov, cnt)?;
    if let Some(o) = other_of(f) {
        return rw_other(cur, f, o, data, write);
    }
    let s = unix::of(f)?.clone();
    rw_cursor(cur, f, &s, data, write)
}

pub fn rw_cursor(
    cur: &CurrentTask,
    f: &File,
    s: &Arc<UnixSocket>,
    mut data: IovCursor,
    write: bool,
) -> SysResult<usize> {
    let nonblock = f.nonblocking();
    if write {
        let scm = Scm {
            fds: Vec::new(),
            cred: unix::cred_of(cur),
        };
        s.send(&mut data, None, false, scm, nonblock, Some(cur))
    } else {
        s.recv(&mut data, 0, nonblock).map(|r| r.n)
    }
}

/// Whether a file is a socket (read/write route through here).
pub fn is_socket(f: &File) -> bool {
    crate::net::socket_ino(f).is_some()
}

/// write(2) on a socket.
pub fn write(cur: &CurrentTask, f: &File, buf: usize, len: usize) -> SysResult<usize> {
    let seg = UserSlice::new(buf, len.min(MAX_RW_COUNT));
    seg.check()?;
    if let Some(o) = other_of(f) {
        return rw_other(cur, f, o, IovCursor::new(alloc::vec![seg]), true);
    }
    let s = unix::of(f)?.clone();
    rw_cursor(cur, f, &s, IovCursor::new(alloc::vec![seg]), true)
}
