//! Sockets: the uapi of AF_UNIX (sockaddr_un, msghdr, cmsghdr, ucred), the constants of
//! socket(2) and its calls, and the pure rules: how an address is read (Linux's
//! unix_validate_addr and unix_mkname_bsd) and how control messages are walked and written
//! (include/linux/socket.h's CMSG_* macros, net/core/scm.c's put_cmsg).

use crate::uapi::errno::{Errno, SysResult};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const AF_UNSPEC: u32 = 0;
pub const AF_UNIX: u32 = 1;
pub const AF_INET: u32 = 2;
pub const AF_INET6: u32 = 10;
pub const AF_NETLINK: u32 = 16;
/// One past the last family Linux knows (socket(2) answers EAFNOSUPPORT to numbers beyond).
pub const AF_MAX: u32 = 46;

pub const SOCK_STREAM: u32 = 1;
pub const SOCK_DGRAM: u32 = 2;
pub const SOCK_RAW: u32 = 3;
pub const SOCK_SEQPACKET: u32 = 5;
pub const SOCK_TYPE_MASK: u32 = 0xf;
pub const SOCK_NONBLOCK: u32 = crate::uapi::fs::O_NONBLOCK;
pub const SOCK_CLOEXEC: u32 = crate::uapi::fs::O_CLOEXEC;

pub const SOL_SOCKET: u32 = 1;
pub const SO_TYPE: u32 = 3;
pub const SO_ERROR: u32 = 4;
pub const SO_SNDBUF: u32 = 7;
pub const SO_RCVBUF: u32 = 8;
pub const SO_PASSCRED: u32 = 16;
pub const SO_PEERCRED: u32 = 17;
pub const SO_ACCEPTCONN: u32 = 30;
pub const SO_PROTOCOL: u32 = 38;
pub const SO_DOMAIN: u32 = 39;

pub const MSG_OOB: u32 = 0x1;
pub const MSG_PEEK: u32 = 0x2;
pub const MSG_CTRUNC: u32 = 0x8;
pub const MSG_TRUNC: u32 = 0x20;
pub const MSG_DONTWAIT: u32 = 0x40;
pub const MSG_EOR: u32 = 0x80;
pub const MSG_WAITALL: u32 = 0x100;
pub const MSG_NOSIGNAL: u32 = 0x4000;
pub const MSG_CMSG_CLOEXEC: u32 = 0x4000_0000;

pub const SHUT_RD: u32 = 0;
pub const SHUT_WR: u32 = 1;
pub const SHUT_RDWR: u32 = 2;

pub const SCM_RIGHTS: u32 = 1;
pub const SCM_CREDENTIALS: u32 = 2;
/// SCM_MAX_FD: the most descriptors one SCM_RIGHTS message carries.
pub const SCM_MAX_FD: usize = 253;

/// net.core.wmem_default and rmem_default (SO_SNDBUF/SO_RCVBUF of a new socket), and
/// wmem_max/rmem_max (the most an unprivileged setsockopt asks for, before doubling).
pub const SK_BUF_DEFAULT: usize = 212992;
/// SOCK_MIN_SNDBUF and SOCK_MIN_RCVBUF as arm64 Linux computes them (twice the true size of
/// a small buffer: 2 * (2048 + skb overhead)).
pub const SOCK_MIN_SNDBUF: usize = 4608;
pub const SOCK_MIN_RCVBUF: usize = 2304;
/// net.unix.max_dgram_qlen: datagrams a receiver queues from senders it is not connected to.
pub const MAX_DGRAM_QLEN: usize = 10;

/// SO_SNDBUF/SO_RCVBUF's setsockopt rule (sock_setsockopt): the value capped at the maximum,
/// then doubled for the kernel's bookkeeping, and never below the minimum.
pub fn sockbuf_from_user(val: i32, min: usize) -> usize {
    let v = (val.max(0) as usize).min(SK_BUF_DEFAULT);
    (v * 2).max(min)
}

/// `struct sockaddr_un`: the family and up to 108 bytes of path.
pub const UNIX_PATH_MAX: usize = 108;
/// offsetof(struct sockaddr_un, sun_path).
pub const SUN_PATH_OFFSET: usize = 2;
pub const SOCKADDR_UN_SIZE: usize = SUN_PATH_OFFSET + UNIX_PATH_MAX;

/// A bound AF_UNIX name as getsockname returns it: `len` bytes of sockaddr_un (family
/// included). A path name ends with its NUL; an abstract one starts its sun_path with NUL.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct UnixName {
    len: usize,
    buf: [u8; SOCKADDR_UN_SIZE + 1],
}

impl UnixName {
    /// The bytes of the sockaddr_un (what getsockname copies out).
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
    /// sun_path's bytes: for a path, without its NUL; for an abstract name, with its leading NUL.
    pub fn path(&self) -> &[u8] {
        let p = &self.buf[SUN_PATH_OFFSET..self.len];
        if self.is_abstract() {
            p
        } else {
            &p[..p.len().saturating_sub(1)]
        }
    }
    pub fn is_abstract(&self) -> bool {
        self.len > SUN_PATH_OFFSET && self.buf[SUN_PATH_OFFSET] == 0
    }
    /// An abstract name of the given sun_path bytes (leading NUL included): autobind's.
    pub fn abstract_name(path: &[u8]) -> UnixName {
        let mut buf = [0u8; SOCKADDR_UN_SIZE + 1];
        buf[0] = AF_UNIX as u8;
        let n = path.len().min(UNIX_PATH_MAX);
        buf[SUN_PATH_OFFSET..SUN_PATH_OFFSET + n].copy_from_slice(&path[..n]);
        UnixName {
            len: SUN_PATH_OFFSET + n,
            buf,
        }
    }
}

/// What an address given to bind, connect or sendto names.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum UnixAddr {
    /// Just the family (bind: autobind).
    Unnamed,
    Named(UnixName),
}

/// Reads the `addr` bytes (the caller's addrlen of them, at most sizeof(sockaddr_un)) as an
/// AF_UNIX address: EINVAL when too long, too short or of another family. A path name stops at
/// its first NUL (it need not have one: sun_path may be full); an abstract name is every byte.
pub fn parse_unix_addr(addr: &[u8]) -> SysResult<UnixAddr> {
    if addr.len() > SOCKADDR_UN_SIZE || addr.len() < SUN_PATH_OFFSET {
        return Err(Errno::EINVAL);
    }
    let family = u16::from_ne_bytes([addr[0], addr[1]]) as u32;
    if family != AF_UNIX {
        return Err(Errno::EINVAL);
    }
    if addr.len() == SUN_PATH_OFFSET {
        return Ok(UnixAddr::Unnamed);
    }
    let path = &addr[SUN_PATH_OFFSET..];
    let mut buf = [0u8; SOCKADDR_UN_SIZE + 1];
    buf[0] = AF_UNIX as u8;
    if path[0] == 0 {
        buf[SUN_PATH_OFFSET..addr.len()].copy_from_slice(path);
        return Ok(UnixAddr::Named(UnixName {
            len: addr.len(),
            buf,
        }));
    }
    let n = path.iter().position(|&b| b == 0).unwrap_or(path.len());
    buf[SUN_PATH_OFFSET..SUN_PATH_OFFSET + n].copy_from_slice(&path[..n]);
    Ok(UnixAddr::Named(UnixName {
        len: SUN_PATH_OFFSET + n + 1,
        buf,
    }))
}

/// The sockaddr an unnamed socket reports: the family alone.
pub const UNNAMED: [u8; 2] = (AF_UNIX as u16).to_ne_bytes();

/// autobind's name: a NUL and five lowercase hex digits (Linux's unix_autobind).
pub fn autobind_name(n: u32) -> UnixName {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut p = [0u8; 6];
    for i in 0..5 {
        p[5 - i] = HEX[((n >> (4 * i)) & 0xf) as usize];
    }
    UnixName::abstract_name(&p)
}

/// `struct msghdr` (64-bit).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, FromBytes, IntoBytes, Immutable, KnownLayout)]
pub struct Msghdr {
    pub msg_name: u64,
    pub msg_namelen: u32,
    pub _pad0: u32,
    pub msg_iov: u64,
    pub msg_iovlen: u64,
    pub msg_control: u64,
    pub msg_controllen: u64,
    pub msg_flags: u32,
    pub _pad1: u32,
}
const _: () = assert!(core::mem::size_of::<Msghdr>() == 56);
/// offsetof(struct msghdr, msg_flags): recvmsg writes the flags back there.
pub const MSGHDR_FLAGS_OFFSET: usize = 48;

/// `struct cmsghdr` (64-bit).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Cmsghdr {
    pub cmsg_len: u64,
    pub cmsg_level: u32,
    pub cmsg_type: u32,
}
pub const CMSGHDR_SIZE: usize = 16;
const _: () = assert!(core::mem::size_of::<Cmsghdr>() == CMSGHDR_SIZE);

/// `struct ucred`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Ucred {
    pub pid: i32,
    pub uid: u32,
    pub gid: u32,
}
const _: () = assert!(core::mem::size_of::<Ucred>() == 12);

/// CMSG_ALIGN.
pub const fn cmsg_align(n: usize) -> usize {
    (n + 7) & !7
}
/// CMSG_SPACE.
pub const fn cmsg_space(n: usize) -> usize {
    CMSGHDR_SIZE + cmsg_align(n)
}
/// CMSG_LEN.
pub const fn cmsg_len(n: usize) -> usize {
    CMSGHDR_SIZE + n
}

/// One control message of a sendmsg: its level, type and data.
#[derive(Debug, PartialEq, Eq)]
pub struct Cmsg<'a> {
    pub level: u32,
    pub ty: u32,
    pub data: &'a [u8],
}

/// Walks a sendmsg's control buffer as __scm_send does: a buffer shorter than one header holds
/// nothing; a header whose length is below the header's or runs past the buffer is EINVAL.
pub fn parse_cmsgs(control: &[u8], mut f: impl FnMut(Cmsg) -> SysResult<()>) -> SysResult<()> {
    let mut at = 0;
    while control.len() - at >= CMSGHDR_SIZE {
        let h =
            Cmsghdr::read_from_bytes(&control[at..at + CMSGHDR_SIZE]).map_err(|_| Errno::EINVAL)?;
        let len = usize::try_from(h.cmsg_len).map_err(|_| Errno::EINVAL)?;
        if len < CMSGHDR_SIZE || len > control.len() - at {
            return Err(Errno::EINVAL);
        }
        f(Cmsg {
            level: h.cmsg_level,
            ty: h.cmsg_type,
            data: &control[at + CMSGHDR_SIZE..at + len],
        })?;
        at += cmsg_align(len);
        if at >= control.len() {
            break;
        }
    }
    Ok(())
}

/// Builds a recvmsg's control buffer of at most `room` bytes as put_cmsg does: a message that
/// does not fit whole is cut to what fits (with MSG_CTRUNC), or left out when not even its
/// header fits.
#[derive(Default)]
pub struct CmsgBuilder {
    room: usize,
    used: usize,
    pub truncated: bool,
}

impl CmsgBuilder {
    pub fn new(room: usize) -> CmsgBuilder {
        CmsgBuilder {
            room,
            used: 0,
            truncated: false,
        }
    }
    /// Bytes of the buffer written so far (recvmsg's msg_controllen).
    pub fn used(&self) -> usize {
        self.used
    }
    /// How many `size`-byte items (SCM_RIGHTS descriptors) fit in one more message.
    pub fn items_that_fit(&self, size: usize) -> usize {
        (self.room - self.used).saturating_sub(CMSGHDR_SIZE) / size
    }
    /// Appends a message; returns where its header and data go in the user buffer and the
    /// header to write there, or None when nothing of it fits.
    pub fn push(
        &mut self,
        level: u32,
        ty: u32,
        data_len: usize,
    ) -> Option<(usize, Cmsghdr, usize)> {
        let left = self.room - self.used;
        if left < CMSGHDR_SIZE {
            self.truncated = true;
            return None;
        }
        let mut len = cmsg_len(data_len);
        if len > left {
            self.truncated = true;
            len = left;
        }
        let at = self.used;
        self.used = (self.used + cmsg_align(len)).min(self.room);
        Some((
            at,
            Cmsghdr {
                cmsg_len: len as u64,
                cmsg_level: level,
                cmsg_type: ty,
            },
            len - CMSGHDR_SIZE,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn sun(path: &[u8]) -> Vec<u8> {
        let mut v = (AF_UNIX as u16).to_ne_bytes().to_vec();
        v.extend_from_slice(path);
        v
    }

    #[test]
    fn path_names_stop_at_nul_and_keep_one() {
        let UnixAddr::Named(n) = parse_unix_addr(&sun(b"/tmp/s\0junk")).unwrap() else {
            panic!()
        };
        assert_eq!(n.path(), b"/tmp/s");
        assert_eq!(n.as_bytes().len(), 2 + 6 + 1);
        assert!(!n.is_abstract());
        // No NUL at all: the whole sun_path, and getsockname's length adds one.
        let UnixAddr::Named(n) = parse_unix_addr(&sun(b"ab")).unwrap() else {
            panic!()
        };
        assert_eq!(n.path(), b"ab");
        assert_eq!(n.as_bytes(), &sun(b"ab\0")[..]);
    }

    #[test]
    fn abstract_names_are_every_byte() {
        let UnixAddr::Named(n) = parse_unix_addr(&sun(b"\0x\0y")).unwrap() else {
            panic!()
        };
        assert!(n.is_abstract());
        assert_eq!(n.path(), b"\0x\0y");
        assert_eq!(n.as_bytes().len(), 6);
    }

    #[test]
    fn bad_addresses() {
        assert_eq!(parse_unix_addr(&[1]), Err(Errno::EINVAL));
        assert_eq!(parse_unix_addr(&[2, 0, b'a']), Err(Errno::EINVAL));
        assert_eq!(parse_unix_addr(&sun(&[b'a'; 109])), Err(Errno::EINVAL));
        assert_eq!(parse_unix_addr(&sun(b"")), Ok(UnixAddr::Unnamed));
        assert!(parse_unix_addr(&sun(&[b'a'; 108])).is_ok());
    }

    #[test]
    fn autobind_is_nul_and_five_hex_digits() {
        let n = autobind_name(0xabc);
        assert_eq!(n.path(), b"\x0000abc");
        assert_eq!(n.as_bytes().len(), 8);
    }

    #[test]
    fn buffers_double_within_limits() {
        assert_eq!(sockbuf_from_user(1000, SOCK_MIN_SNDBUF), 4608);
        assert_eq!(sockbuf_from_user(10000, SOCK_MIN_SNDBUF), 20000);
        assert_eq!(
            sockbuf_from_user(i32::MAX, SOCK_MIN_SNDBUF),
            2 * SK_BUF_DEFAULT
        );
        assert_eq!(sockbuf_from_user(-1, SOCK_MIN_RCVBUF), SOCK_MIN_RCVBUF);
    }

    fn cmsg(level: u32, ty: u32, data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&(cmsg_len(data.len()) as u64).to_ne_bytes());
        v.extend_from_slice(&level.to_ne_bytes());
        v.extend_from_slice(&ty.to_ne_bytes());
        v.extend_from_slice(data);
        v.resize(cmsg_align(v.len()), 0);
        v
    }

    #[test]
    fn cmsgs_are_walked_in_order() {
        let mut buf = cmsg(
            SOL_SOCKET,
            SCM_RIGHTS,
            &[1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0],
        );
        buf.extend(cmsg(SOL_SOCKET, SCM_CREDENTIALS, &[0; 12]));
        let mut seen = Vec::new();
        parse_cmsgs(&buf, |c| {
            seen.push((c.ty, c.data.len()));
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, [(SCM_RIGHTS, 12), (SCM_CREDENTIALS, 12)]);
        // Too short to hold a header: nothing.
        assert_eq!(parse_cmsgs(&buf[..8], |_| panic!()), Ok(()));
        // A length past the buffer, or below a header's.
        let mut bad = buf.clone();
        bad[0] = 200;
        assert_eq!(parse_cmsgs(&bad, |_| Ok(())), Err(Errno::EINVAL));
        bad[0] = 8;
        assert_eq!(parse_cmsgs(&bad, |_| Ok(())), Err(Errno::EINVAL));
    }

    #[test]
    fn builder_truncates() {
        let mut b = CmsgBuilder::new(cmsg_space(12) + 20);
        let (at, h, n) = b.push(SOL_SOCKET, SCM_CREDENTIALS, 12).unwrap();
        assert_eq!((at, h.cmsg_len, n), (0, 28, 12));
        assert_eq!(b.used(), 32);
        assert_eq!(b.items_that_fit(4), 1);
        let (at, h, n) = b.push(SOL_SOCKET, SCM_RIGHTS, 8).unwrap();
        assert_eq!((at, h.cmsg_len, n), (32, 20, 4));
        assert!(b.truncated);
        assert_eq!(b.push(SOL_SOCKET, SCM_RIGHTS, 4), None);
    }
}
