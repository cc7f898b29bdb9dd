//! File-system uapi: open/AT/fcntl flags, `struct stat`, `struct statx`, `linux_dirent64`,
//! `struct iovec`, `struct pollfd` and `struct epoll_event`, with arm64 values.
//!
//! Every struct is `#[repr(C)]` with its layout pinned by `const` assertions and derives
//! zerocopy's traits, so the kernel copies its byte image (`as_bytes`, `read_from_bytes`) to and
//! from user memory and never casts a user pointer to a Rust type.

use crate::uapi::errno::{Errno, SysResult};
use crate::util::bytes::*;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

// ---- open(2) flags (octal, as in the headers). arm64 overrides the four marked ones. ----

pub const O_ACCMODE: u32 = 0o3;
pub const O_RDONLY: u32 = 0o0;
pub const O_WRONLY: u32 = 0o1;
pub const O_RDWR: u32 = 0o2;
pub const O_CREAT: u32 = 0o100;
pub const O_EXCL: u32 = 0o200;
pub const O_NOCTTY: u32 = 0o400;
pub const O_TRUNC: u32 = 0o1000;
pub const O_APPEND: u32 = 0o2000;
pub const O_NONBLOCK: u32 = 0o4000;
pub const O_NDELAY: u32 = O_NONBLOCK;
pub const O_DSYNC: u32 = 0o10000;
pub const FASYNC: u32 = 0o20000;
/// arm64 value (asm-generic has 0o200000).
pub const O_DIRECTORY: u32 = 0o40000;
/// arm64 value (asm-generic has 0o400000).
pub const O_NOFOLLOW: u32 = 0o100000;
/// arm64 value (asm-generic has 0o40000).
pub const O_DIRECT: u32 = 0o200000;
/// arm64 value (asm-generic has 0o100000). Always set by the kernel on 64-bit; reported by F_GETFL.
pub const O_LARGEFILE: u32 = 0o400000;
pub const O_NOATIME: u32 = 0o1000000;
pub const O_CLOEXEC: u32 = 0o2000000;
pub const __O_SYNC: u32 = 0o4000000;
pub const O_SYNC: u32 = __O_SYNC | O_DSYNC;
pub const O_PATH: u32 = 0o10000000;
pub const __O_TMPFILE: u32 = 0o20000000;
pub const O_TMPFILE: u32 = __O_TMPFILE | O_DIRECTORY;

/// Every flag bit open(2) knows; openat2 rejects others with EINVAL (open/openat ignore them).
pub const VALID_OPEN_FLAGS: u32 = O_ACCMODE
    | O_CREAT
    | O_EXCL
    | O_NOCTTY
    | O_TRUNC
    | O_APPEND
    | O_NONBLOCK
    | O_DSYNC
    | FASYNC
    | O_DIRECT
    | O_LARGEFILE
    | O_DIRECTORY
    | O_NOFOLLOW
    | O_NOATIME
    | O_CLOEXEC
    | __O_SYNC
    | O_PATH
    | __O_TMPFILE;

/// The flags F_SETFL may change; the rest of its argument is ignored.
pub const SETFL_MASK: u32 = O_APPEND | O_NONBLOCK | O_NDELAY | FASYNC | O_DIRECT | O_NOATIME;

// ---- *at(2) ----

/// The `dirfd` meaning "relative to the current directory".
pub const AT_FDCWD: i32 = -100;
pub const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
/// faccessat: check with the effective ids.
pub const AT_EACCESS: u32 = 0x200;
/// unlinkat: remove a directory (same bit as AT_EACCESS, different call).
pub const AT_REMOVEDIR: u32 = 0x200;
pub const AT_SYMLINK_FOLLOW: u32 = 0x400;
pub const AT_NO_AUTOMOUNT: u32 = 0x800;
pub const AT_EMPTY_PATH: u32 = 0x1000;
pub const AT_STATX_SYNC_TYPE: u32 = 0x6000;
pub const AT_STATX_SYNC_AS_STAT: u32 = 0x0000;
pub const AT_STATX_FORCE_SYNC: u32 = 0x2000;
pub const AT_STATX_DONT_SYNC: u32 = 0x4000;
pub const AT_RECURSIVE: u32 = 0x8000;

// ---- access(2) ----
pub const F_OK: u32 = 0;
pub const X_OK: u32 = 1;
pub const W_OK: u32 = 2;
pub const R_OK: u32 = 4;

// ---- lseek(2) ----
pub const SEEK_SET: u32 = 0;
pub const SEEK_CUR: u32 = 1;
pub const SEEK_END: u32 = 2;
pub const SEEK_DATA: u32 = 3;
pub const SEEK_HOLE: u32 = 4;

// ---- fcntl(2) ----
pub const F_DUPFD: u32 = 0;
pub const F_GETFD: u32 = 1;
pub const F_SETFD: u32 = 2;
pub const F_GETFL: u32 = 3;
pub const F_SETFL: u32 = 4;
pub const F_GETLK: u32 = 5;
pub const F_SETLK: u32 = 6;
pub const F_SETLKW: u32 = 7;
pub const F_SETOWN: u32 = 8;
pub const F_GETOWN: u32 = 9;
pub const F_SETSIG: u32 = 10;
pub const F_GETSIG: u32 = 11;
pub const F_SETOWN_EX: u32 = 15;
pub const F_GETOWN_EX: u32 = 16;
pub const F_GETOWNER_UIDS: u32 = 17;
pub const F_OFD_GETLK: u32 = 36;
pub const F_OFD_SETLK: u32 = 37;
pub const F_OFD_SETLKW: u32 = 38;
pub const F_LINUX_SPECIFIC_BASE: u32 = 1024;
pub const F_SETLEASE: u32 = F_LINUX_SPECIFIC_BASE;
pub const F_GETLEASE: u32 = F_LINUX_SPECIFIC_BASE + 1;
pub const F_NOTIFY: u32 = F_LINUX_SPECIFIC_BASE + 2;
pub const F_DUPFD_QUERY: u32 = F_LINUX_SPECIFIC_BASE + 3;
pub const F_CANCELLK: u32 = F_LINUX_SPECIFIC_BASE + 5;
pub const F_DUPFD_CLOEXEC: u32 = F_LINUX_SPECIFIC_BASE + 6;
pub const F_SETPIPE_SZ: u32 = F_LINUX_SPECIFIC_BASE + 7;
pub const F_GETPIPE_SZ: u32 = F_LINUX_SPECIFIC_BASE + 8;
pub const F_ADD_SEALS: u32 = F_LINUX_SPECIFIC_BASE + 9;
pub const F_GET_SEALS: u32 = F_LINUX_SPECIFIC_BASE + 10;
/// The only file-descriptor flag.
pub const FD_CLOEXEC: u32 = 1;

// ---- file types and mode bits ----
pub const S_IFMT: u32 = 0o170000;
pub const S_IFSOCK: u32 = 0o140000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFBLK: u32 = 0o060000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFIFO: u32 = 0o010000;
pub const S_ISUID: u32 = 0o4000;
pub const S_ISGID: u32 = 0o2000;
pub const S_ISVTX: u32 = 0o1000;

/// `d_type` values of `linux_dirent64`.
pub const DT_UNKNOWN: u8 = 0;
pub const DT_FIFO: u8 = 1;
pub const DT_CHR: u8 = 2;
pub const DT_DIR: u8 = 4;
pub const DT_BLK: u8 = 6;
pub const DT_REG: u8 = 8;
pub const DT_LNK: u8 = 10;
pub const DT_SOCK: u8 = 12;
pub const DT_WHT: u8 = 14;

/// The `d_type` for a `st_mode` (Linux's `S_DT`: the file-type bits shifted down by 12).
pub const fn dt_from_mode(mode: u32) -> u8 {
    ((mode & S_IFMT) >> 12) as u8
}

/// utimensat: leave this timestamp alone / set it to now (in `tv_nsec`).
pub const UTIME_NOW: i64 = (1 << 30) - 1;
pub const UTIME_OMIT: i64 = (1 << 30) - 2;

/// renameat2 flags.
pub const RENAME_NOREPLACE: u32 = 1;
pub const RENAME_EXCHANGE: u32 = 2;
pub const RENAME_WHITEOUT: u32 = 4;

/// Writes of at most this many bytes to a pipe are atomic.
pub const PIPE_BUF: usize = 4096;

/// `dev_t` encoding the kernel uses in `st_dev`/`st_rdev` (`new_encode_dev`: 12-bit major,
/// 20-bit minor, split so old 8:8 numbers keep their value).
pub const fn makedev(major: u32, minor: u32) -> u64 {
    let (ma, mi) = (major as u64, minor as u64);
    (mi & 0xff) | ((ma & 0xfff) << 8) | ((mi & !0xff) << 12)
}

// ---- struct stat (asm-generic, what arm64 fstat/newfstatat fill) ----

/// `struct stat` as arm64 `fstat`/`newfstatat` write it (asm-generic layout, 128 bytes).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Stat {
    pub st_dev: u64,
    pub st_ino: u64,
    pub st_mode: u32,
    pub st_nlink: u32,
    pub st_uid: u32,
    pub st_gid: u32,
    pub st_rdev: u64,
    pub __pad1: u64,
    pub st_size: i64,
    pub st_blksize: i32,
    pub __pad2: i32,
    pub st_blocks: i64,
    pub st_atime: i64,
    pub st_atime_nsec: u64,
    pub st_mtime: i64,
    pub st_mtime_nsec: u64,
    pub st_ctime: i64,
    pub st_ctime_nsec: u64,
    pub __unused4: u32,
    pub __unused5: u32,
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<Stat>() == 128);
    assert!(offset_of!(Stat, st_mode) == 16);
    assert!(offset_of!(Stat, st_rdev) == 32);
    assert!(offset_of!(Stat, st_size) == 48);
    assert!(offset_of!(Stat, st_blksize) == 56);
    assert!(offset_of!(Stat, st_blocks) == 64);
    assert!(offset_of!(Stat, st_atime) == 72);
    assert!(offset_of!(Stat, st_mtime) == 88);
    assert!(offset_of!(Stat, st_ctime) == 104);
    assert!(offset_of!(Stat, __unused5) == 124);
};

impl Stat {
    pub const SIZE: usize = 128;
}

// ---- struct statx ----

pub const STATX_TYPE: u32 = 0x1;
pub const STATX_MODE: u32 = 0x2;
pub const STATX_NLINK: u32 = 0x4;
pub const STATX_UID: u32 = 0x8;
pub const STATX_GID: u32 = 0x10;
pub const STATX_ATIME: u32 = 0x20;
pub const STATX_MTIME: u32 = 0x40;
pub const STATX_CTIME: u32 = 0x80;
pub const STATX_INO: u32 = 0x100;
pub const STATX_SIZE: u32 = 0x200;
pub const STATX_BLOCKS: u32 = 0x400;
/// Everything `struct stat` has.
pub const STATX_BASIC_STATS: u32 = 0x7ff;
pub const STATX_BTIME: u32 = 0x800;
pub const STATX_MNT_ID: u32 = 0x1000;
/// Reserved for a future extension of the struct: statx fails with EINVAL if asked for it.
pub const STATX__RESERVED: u32 = 0x8000_0000;

/// `struct statx_timestamp` (16 bytes).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct StatxTimestamp {
    pub tv_sec: i64,
    pub tv_nsec: u32,
    pub __reserved: i32,
}

/// `struct statx` (256 bytes). Svelt fills the fields up to `stx_mnt_id`; the later ones
/// (direct-I/O alignment, subvolume, atomic-write limits) are zero, as `__spare`.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Statx {
    pub stx_mask: u32,
    pub stx_blksize: u32,
    pub stx_attributes: u64,
    pub stx_nlink: u32,
    pub stx_uid: u32,
    pub stx_gid: u32,
    pub stx_mode: u16,
    pub __spare0: u16,
    pub stx_ino: u64,
    pub stx_size: u64,
    pub stx_blocks: u64,
    pub stx_attributes_mask: u64,
    pub stx_atime: StatxTimestamp,
    pub stx_btime: StatxTimestamp,
    pub stx_ctime: StatxTimestamp,
    pub stx_mtime: StatxTimestamp,
    pub stx_rdev_major: u32,
    pub stx_rdev_minor: u32,
    pub stx_dev_major: u32,
    pub stx_dev_minor: u32,
    pub stx_mnt_id: u64,
    pub __spare: [u64; 13],
}

const _: () = {
    use core::mem::{offset_of, size_of};
    assert!(size_of::<StatxTimestamp>() == 16);
    assert!(size_of::<Statx>() == Statx::SIZE);
    assert!(offset_of!(Statx, stx_mode) == 28);
    assert!(offset_of!(Statx, stx_ino) == 32);
    assert!(offset_of!(Statx, stx_attributes_mask) == 56);
    assert!(offset_of!(Statx, stx_atime) == 64);
    assert!(offset_of!(Statx, stx_btime) == 80);
    assert!(offset_of!(Statx, stx_ctime) == 96);
    assert!(offset_of!(Statx, stx_mtime) == 112);
    assert!(offset_of!(Statx, stx_rdev_major) == 128);
    assert!(offset_of!(Statx, stx_dev_minor) == 140);
    assert!(offset_of!(Statx, stx_mnt_id) == 144);
};

impl Statx {
    pub const SIZE: usize = 256;

    /// Build from a `Stat` (and the device numbers split as statx wants them).
    pub fn from_stat(st: &Stat, mask: u32) -> Statx {
        let ts = |s: i64, ns: u64| StatxTimestamp {
            tv_sec: s,
            tv_nsec: ns as u32,
            __reserved: 0,
        };
        let (dma, dmi) = split_dev(st.st_dev);
        let (rma, rmi) = split_dev(st.st_rdev);
        Statx {
            stx_mask: mask & STATX_BASIC_STATS,
            stx_blksize: st.st_blksize as u32,
            stx_nlink: st.st_nlink,
            stx_uid: st.st_uid,
            stx_gid: st.st_gid,
            stx_mode: st.st_mode as u16,
            stx_ino: st.st_ino,
            stx_size: st.st_size as u64,
            stx_blocks: st.st_blocks as u64,
            stx_atime: ts(st.st_atime, st.st_atime_nsec),
            stx_ctime: ts(st.st_ctime, st.st_ctime_nsec),
            stx_mtime: ts(st.st_mtime, st.st_mtime_nsec),
            stx_rdev_major: rma,
            stx_rdev_minor: rmi,
            stx_dev_major: dma,
            stx_dev_minor: dmi,
            ..Statx::default()
        }
    }
}

/// Inverse of `makedev`: (major, minor).
pub const fn split_dev(dev: u64) -> (u32, u32) {
    let major = ((dev >> 8) & 0xfff) as u32;
    let minor = ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32;
    (major, minor)
}

// ---- linux_dirent64 ----

/// Offset of `d_name` in `linux_dirent64` (after d_ino u64, d_off s64, d_reclen u16, d_type u8).
pub const DIRENT64_NAME_OFFSET: usize = 19;

/// The record length of an entry with a `name_len`-byte name: header + name + NUL, rounded up
/// to 8 as Linux does.
pub const fn dirent64_reclen(name_len: usize) -> usize {
    (DIRENT64_NAME_OFFSET + name_len + 1).next_multiple_of(8)
}

/// Packs `linux_dirent64` records into a getdents64 buffer.
///
/// ```text
/// d_ino u64 @0 | d_off i64 @8 | d_reclen u16 @16 | d_type u8 @18 | d_name[] @19, NUL, zero pad to 8
/// ```
pub struct Dirent64Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
    count: usize,
    refused: bool,
}

impl<'a> Dirent64Writer<'a> {
    pub fn new(buf: &'a mut [u8]) -> Self {
        Dirent64Writer {
            buf,
            len: 0,
            count: 0,
            refused: false,
        }
    }

    /// Append one entry. `off` is the position a later getdents64 resumes from (what lseek
    /// would take to continue after this entry). Returns false, writing nothing, when it does not
    /// fit; the caller stops there and resumes with this entry next time.
    pub fn push(&mut self, ino: u64, off: i64, d_type: u8, name: &[u8]) -> bool {
        let reclen = dirent64_reclen(name.len());
        let end = match self.len.checked_add(reclen) {
            Some(e) if e <= self.buf.len() && reclen <= u16::MAX as usize => e,
            _ => {
                self.refused = true;
                return false;
            }
        };
        let rec = &mut self.buf[self.len..end];
        rec.fill(0);
        put_u64(rec, 0, ino);
        put_i64(rec, 8, off);
        put_u16(rec, 16, reclen as u16);
        rec[18] = d_type;
        rec[DIRENT64_NAME_OFFSET..DIRENT64_NAME_OFFSET + name.len()].copy_from_slice(name);
        self.len = end;
        self.count += 1;
        true
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Entries written so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// What getdents64 returns: the byte count, or EINVAL when not even the first entry fit
    /// (Linux's "result buffer is too small"). 0 means end of directory.
    pub fn finish(self) -> SysResult<usize> {
        if self.count == 0 && self.refused {
            Err(Errno::EINVAL)
        } else {
            Ok(self.len)
        }
    }
}

/// Decode one record from a getdents64 buffer (for userland and tests):
/// (ino, off, d_type, name, reclen).
pub fn dirent64_parse(b: &[u8]) -> Option<(u64, i64, u8, &[u8], usize)> {
    let ino = read_u64(b, 0)?;
    let off = read_i64(b, 8)?;
    let reclen = read_u16(b, 16)? as usize;
    let d_type = *b.get(18)?;
    if reclen < DIRENT64_NAME_OFFSET + 1 || reclen > b.len() {
        return None;
    }
    let name_area = &b[DIRENT64_NAME_OFFSET..reclen];
    let nul = name_area.iter().position(|&c| c == 0)?;
    Some((ino, off, d_type, &name_area[..nul], reclen))
}

// ---- struct iovec ----

/// readv/writev take at most this many iovecs (EINVAL beyond).
pub const UIO_MAXIOV: usize = 1024;

#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Iovec {
    pub iov_base: u64,
    pub iov_len: u64,
}

const _: () = assert!(core::mem::size_of::<Iovec>() == 16);

impl Iovec {
    pub const SIZE: usize = 16;
}

/// Linux's limit on a single read/write transfer (`MAX_RW_COUNT`: INT_MAX rounded down to a page).
pub const MAX_RW_COUNT: usize = 0x7fff_f000;

/// Sum the lengths of an iovec array as readv/writev do: EINVAL if there are more than
/// UIO_MAXIOV or a length is negative as ssize_t; the total is clamped to MAX_RW_COUNT
/// (Linux truncates the transfer rather than failing).
pub fn iovec_total(iov: &[Iovec]) -> SysResult<usize> {
    if iov.len() > UIO_MAXIOV {
        return Err(Errno::EINVAL);
    }
    let mut total: usize = 0;
    for v in iov {
        if v.iov_len > isize::MAX as u64 {
            return Err(Errno::EINVAL);
        }
        total = total.saturating_add(v.iov_len as usize).min(MAX_RW_COUNT);
    }
    Ok(total)
}

// ---- poll ----

pub const POLLIN: u16 = 0x1;
pub const POLLPRI: u16 = 0x2;
pub const POLLOUT: u16 = 0x4;
pub const POLLERR: u16 = 0x8;
pub const POLLHUP: u16 = 0x10;
pub const POLLNVAL: u16 = 0x20;
pub const POLLRDNORM: u16 = 0x40;
pub const POLLRDBAND: u16 = 0x80;
pub const POLLWRNORM: u16 = 0x100;
pub const POLLWRBAND: u16 = 0x200;
pub const POLLMSG: u16 = 0x400;
pub const POLLREMOVE: u16 = 0x1000;
pub const POLLRDHUP: u16 = 0x2000;

/// `struct pollfd` (8 bytes).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct PollFd {
    pub fd: i32,
    pub events: i16,
    pub revents: i16,
}

const _: () = assert!(core::mem::size_of::<PollFd>() == 8);

impl PollFd {
    pub const SIZE: usize = 8;
}

// ---- epoll ----

pub const EPOLL_CLOEXEC: u32 = O_CLOEXEC;
pub const EPOLL_CTL_ADD: u32 = 1;
pub const EPOLL_CTL_DEL: u32 = 2;
pub const EPOLL_CTL_MOD: u32 = 3;

pub const EPOLLIN: u32 = 0x1;
pub const EPOLLPRI: u32 = 0x2;
pub const EPOLLOUT: u32 = 0x4;
pub const EPOLLERR: u32 = 0x8;
pub const EPOLLHUP: u32 = 0x10;
pub const EPOLLNVAL: u32 = 0x20;
pub const EPOLLRDNORM: u32 = 0x40;
pub const EPOLLRDBAND: u32 = 0x80;
pub const EPOLLWRNORM: u32 = 0x100;
pub const EPOLLWRBAND: u32 = 0x200;
pub const EPOLLMSG: u32 = 0x400;
pub const EPOLLRDHUP: u32 = 0x2000;
pub const EPOLLEXCLUSIVE: u32 = 1 << 28;
pub const EPOLLWAKEUP: u32 = 1 << 29;
pub const EPOLLONESHOT: u32 = 1 << 30;
pub const EPOLLET: u32 = 1 << 31;

/// `struct epoll_event`. Only x86-64 packs it; on arm64 `data` is 8-aligned, so 16 bytes, and
/// the C struct's hole after `events` is the explicit `__pad` here (zero when written).
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct EpollEvent {
    pub events: u32,
    pub __pad: u32,
    pub data: u64,
}

const _: () = {
    assert!(core::mem::size_of::<EpollEvent>() == 16);
    assert!(core::mem::offset_of!(EpollEvent, data) == 8);
};

impl EpollEvent {
    pub const SIZE: usize = 16;

    pub const fn new(events: u32, data: u64) -> EpollEvent {
        EpollEvent {
            events,
            __pad: 0,
            data,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arm64_open_flags() {
        assert_eq!(O_DIRECTORY, 0x4000);
        assert_eq!(O_NOFOLLOW, 0x8000);
        assert_eq!(O_DIRECT, 0x10000);
        assert_eq!(O_LARGEFILE, 0x20000);
        assert_eq!(O_CLOEXEC, 0x80000);
        assert_eq!(O_PATH, 0x200000);
        assert_eq!(O_TMPFILE, 0x404000);
        assert_eq!(O_SYNC, 0x101000);
        assert_eq!(AT_FDCWD, -100);
    }

    #[test]
    fn stat_image() {
        let st = Stat {
            st_dev: makedev(0, 5),
            st_ino: 7,
            st_mode: S_IFREG | 0o644,
            st_nlink: 1,
            st_size: 1234,
            st_blksize: 4096,
            st_blocks: 8,
            st_mtime: 99,
            st_mtime_nsec: 5,
            ..Stat::default()
        };
        let b = st.as_bytes();
        assert_eq!(b.len(), Stat::SIZE);
        assert_eq!(get_u64(b, 8), 7);
        assert_eq!(get_u32(b, 16), 0o100644);
        assert_eq!(get_i64(b, 48), 1234);
        assert_eq!(get_i32(b, 56), 4096);
        assert_eq!(get_i64(b, 88), 99);
        assert_eq!(get_u64(b, 96), 5);
        assert_eq!(Stat::read_from_bytes(b).ok(), Some(st));
        assert_eq!(dt_from_mode(st.st_mode), DT_REG);
        assert_eq!(dt_from_mode(S_IFDIR), DT_DIR);
        assert_eq!(dt_from_mode(S_IFLNK), DT_LNK);
    }

    #[test]
    fn dev_numbers() {
        assert_eq!(makedev(5, 1), 0x501);
        assert_eq!(makedev(1, 0x12345), 0x45 | (1 << 8) | (0x123 << 20));
        assert_eq!(split_dev(makedev(259, 0x12345)), (259, 0x12345));
        let sx = Statx::from_stat(
            &Stat {
                st_rdev: makedev(5, 1),
                st_mode: S_IFCHR | 0o600,
                ..Stat::default()
            },
            STATX_BASIC_STATS | STATX_BTIME,
        );
        assert_eq!(sx.stx_mask, STATX_BASIC_STATS);
        let b = sx.as_bytes();
        assert_eq!(b.len(), Statx::SIZE);
        assert_eq!(get_u32(b, 128), 5);
        assert_eq!(get_u32(b, 132), 1);
        assert_eq!(get_u16(b, 28), (S_IFCHR | 0o600) as u16);
        assert!(b[30..32].iter().chain(&b[152..]).all(|&c| c == 0));
    }

    #[test]
    fn dirents_pack_and_report() {
        assert_eq!(dirent64_reclen(1), 24);
        assert_eq!(dirent64_reclen(4), 24);
        assert_eq!(dirent64_reclen(5), 32);
        let mut buf = [0xAAu8; 60];
        let mut w = Dirent64Writer::new(&mut buf);
        assert!(w.push(1, 1, DT_DIR, b"."));
        assert!(w.push(2, 2, DT_DIR, b".."));
        assert!(!w.push(3, 3, DT_REG, b"hello")); // 32 more would be 80 > 60
        assert_eq!((w.count(), w.len()), (2, 48));
        assert_eq!(w.finish(), Ok(48));
        let (ino, off, ty, name, reclen) = dirent64_parse(&buf).unwrap();
        assert_eq!((ino, off, ty, name, reclen), (1, 1, DT_DIR, &b"."[..], 24));
        assert_eq!(&buf[19..24], b".\0\0\0\0");
        let (ino, _, _, name, _) = dirent64_parse(&buf[24..]).unwrap();
        assert_eq!((ino, name), (2, &b".."[..]));
        assert_eq!(buf[48], 0xAA);

        let mut small = [0u8; 16];
        let mut w = Dirent64Writer::new(&mut small);
        assert!(!w.push(1, 1, DT_REG, b"x"));
        assert_eq!(w.finish(), Err(Errno::EINVAL));
        let mut empty = [0u8; 16];
        assert_eq!(Dirent64Writer::new(&mut empty).finish(), Ok(0));
    }

    #[test]
    fn iovecs_poll_epoll() {
        let v = [
            Iovec {
                iov_base: 0x1000,
                iov_len: 10,
            },
            Iovec {
                iov_base: 0,
                iov_len: 0,
            },
        ];
        assert_eq!(iovec_total(&v), Ok(10));
        let bad = [Iovec {
            iov_base: 0,
            iov_len: 1 << 63,
        }];
        assert_eq!(iovec_total(&bad), Err(Errno::EINVAL));
        let big = [Iovec {
            iov_base: 0,
            iov_len: 1 << 40,
        }];
        assert_eq!(iovec_total(&big), Ok(MAX_RW_COUNT));
        assert_eq!(Iovec::read_from_bytes(v[0].as_bytes()).ok(), Some(v[0]));
        assert_eq!(<[Iovec]>::ref_from_bytes(v.as_bytes()).ok(), Some(&v[..]));

        let p = PollFd {
            fd: 3,
            events: POLLIN as i16,
            revents: (POLLIN | POLLHUP) as i16,
        };
        assert_eq!(p.as_bytes(), [3, 0, 0, 0, 1, 0, 0x11, 0]);
        assert_eq!(PollFd::read_from_bytes(p.as_bytes()).ok(), Some(p));

        let e = EpollEvent::new(EPOLLIN | EPOLLET, 0x1122_3344_5566_7788);
        let b = e.as_bytes();
        assert_eq!(get_u32(b, 0), 0x8000_0001);
        assert_eq!(get_u32(b, 4), 0);
        assert_eq!(get_u64(b, 8), 0x1122_3344_5566_7788);
        assert_eq!(EpollEvent::read_from_bytes(b).ok(), Some(e));
    }
}
