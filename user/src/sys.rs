//! Raw Linux arm64 system calls (`svc #0`, number in x8, arguments x0..x5, result in x0) and the
//! uapi constants the test programs use. Values come from the generic syscall table
//! (`include/uapi/asm-generic/unistd.h`) and the arm64 uapi headers.

use core::arch::asm;
use core::fmt;

/// A Linux errno value (positive), as returned in -x0.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

macro_rules! errnos {
    ($($name:ident = $v:literal,)*) => {
        $(pub const $name: Errno = Errno($v);)*
        impl Errno {
            pub fn name(self) -> Option<&'static str> {
                match self.0 { $($v => Some(stringify!($name)),)* _ => None }
            }
        }
    };
}

errnos! {
    EPERM = 1, ENOENT = 2, ESRCH = 3, EINTR = 4, EIO = 5, ENXIO = 6, E2BIG = 7, ENOEXEC = 8,
    EBADF = 9, ECHILD = 10, EAGAIN = 11, ENOMEM = 12, EACCES = 13, EFAULT = 14, ENOTBLK = 15,
    EBUSY = 16, EEXIST = 17, EXDEV = 18, ENODEV = 19, ENOTDIR = 20, EISDIR = 21, EINVAL = 22,
    ENFILE = 23, EMFILE = 24, ENOTTY = 25, EFBIG = 27, ENOSPC = 28, ESPIPE = 29, EROFS = 30,
    EPIPE = 32, ERANGE = 34, EDEADLK = 35, ENAMETOOLONG = 36, ENOSYS = 38, ENOTEMPTY = 39,
    ELOOP = 40, ELIBBAD = 80, ETIMEDOUT = 110, EOPNOTSUPP = 95, ENOTSOCK = 88,
    ENOPROTOOPT = 92, EPROTONOSUPPORT = 93, ESOCKTNOSUPPORT = 94, EAFNOSUPPORT = 97,
    EADDRINUSE = 98, EADDRNOTAVAIL = 99, EISCONN = 106, ENOTCONN = 107, EDESTADDRREQ = 89,
    ECONNRESET = 104, ECONNREFUSED = 111, EALREADY = 114, EINPROGRESS = 115, ECANCELED = 125,
}

impl fmt::Debug for Errno {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        match self.name() {
            Some(n) => write!(f, "{n}"),
            None => write!(f, "errno {}", self.0),
        }
    }
}

pub type SysResult<T = usize> = Result<T, Errno>;

/// Syscall numbers (arm64 uses the generic table).
pub mod nr {
    pub const GETCWD: usize = 17;
    pub const EPOLL_CREATE1: usize = 20;
    pub const EPOLL_CTL: usize = 21;
    pub const EPOLL_PWAIT: usize = 22;
    pub const DUP: usize = 23;
    pub const DUP3: usize = 24;
    pub const FCNTL: usize = 25;
    pub const IOCTL: usize = 29;
    pub const MKDIRAT: usize = 34;
    pub const UNLINKAT: usize = 35;
    pub const SYMLINKAT: usize = 36;
    pub const LINKAT: usize = 37;
    pub const RENAMEAT: usize = 38;
    pub const UMOUNT2: usize = 39;
    pub const MOUNT: usize = 40;
    pub const STATFS: usize = 43;
    pub const FSTATFS: usize = 44;
    pub const FTRUNCATE: usize = 46;
    pub const FACCESSAT: usize = 48;
    pub const CHDIR: usize = 49;
    pub const CHROOT: usize = 51;
    pub const UNSHARE: usize = 97;
    pub const COPY_FILE_RANGE: usize = 285;
    pub const CLONE3: usize = 435;
    pub const FCHDIR: usize = 50;
    pub const FCHMOD: usize = 52;
    pub const FCHMODAT: usize = 53;
    pub const FCHOWNAT: usize = 54;
    pub const FCHOWN: usize = 55;
    pub const OPENAT: usize = 56;
    pub const CLOSE: usize = 57;
    pub const PIPE2: usize = 59;
    pub const GETDENTS64: usize = 61;
    pub const LSEEK: usize = 62;
    pub const READ: usize = 63;
    pub const WRITE: usize = 64;
    pub const READV: usize = 65;
    pub const WRITEV: usize = 66;
    pub const PREAD64: usize = 67;
    pub const PWRITE64: usize = 68;
    pub const PPOLL: usize = 73;
    pub const READLINKAT: usize = 78;
    pub const NEWFSTATAT: usize = 79;
    pub const FSTAT: usize = 80;
    pub const SYNC: usize = 81;
    pub const UTIMENSAT: usize = 88;
    pub const EXIT: usize = 93;
    pub const PERSONALITY: usize = 92;
    pub const EXIT_GROUP: usize = 94;
    pub const WAITID: usize = 95;
    pub const SET_TID_ADDRESS: usize = 96;
    pub const FUTEX: usize = 98;
    pub const SET_ROBUST_LIST: usize = 99;
    pub const GET_ROBUST_LIST: usize = 100;
    pub const NANOSLEEP: usize = 101;
    pub const GETITIMER: usize = 102;
    pub const SETITIMER: usize = 103;
    pub const CLOCK_SETTIME: usize = 112;
    pub const CLOCK_GETTIME: usize = 113;
    pub const CLOCK_GETRES: usize = 114;
    pub const CLOCK_NANOSLEEP: usize = 115;
    pub const SCHED_SETAFFINITY: usize = 122;
    pub const SCHED_GETAFFINITY: usize = 123;
    pub const SCHED_YIELD: usize = 124;
    pub const KILL: usize = 129;
    pub const TKILL: usize = 130;
    pub const TGKILL: usize = 131;
    pub const SIGALTSTACK: usize = 132;
    pub const RT_SIGSUSPEND: usize = 133;
    pub const RT_SIGACTION: usize = 134;
    pub const RT_SIGPROCMASK: usize = 135;
    pub const RT_SIGPENDING: usize = 136;
    pub const RT_SIGTIMEDWAIT: usize = 137;
    pub const RT_SIGRETURN: usize = 139;
    pub const REBOOT: usize = 142;
    pub const SETUID: usize = 146;
    pub const SETPGID: usize = 154;
    pub const GETPGID: usize = 155;
    pub const GETSID: usize = 156;
    pub const SETSID: usize = 157;
    pub const UNAME: usize = 160;
    pub const GETRLIMIT: usize = 163;
    pub const SETRLIMIT: usize = 164;
    pub const UMASK: usize = 166;
    pub const PRCTL: usize = 167;
    pub const GETCPU: usize = 168;
    pub const GETTIMEOFDAY: usize = 169;
    pub const SETTIMEOFDAY: usize = 170;
    pub const GETPID: usize = 172;
    pub const GETPPID: usize = 173;
    pub const GETUID: usize = 174;
    pub const GETEUID: usize = 175;
    pub const GETGID: usize = 176;
    pub const GETEGID: usize = 177;
    pub const GETTID: usize = 178;
    pub const SYSINFO: usize = 179;
    pub const BRK: usize = 214;
    pub const MUNMAP: usize = 215;
    pub const MLOCK: usize = 228;
    pub const MUNLOCK: usize = 229;
    pub const MLOCKALL: usize = 230;
    pub const MUNLOCKALL: usize = 231;
    pub const MREMAP: usize = 216;
    pub const CLONE: usize = 220;
    pub const EXECVE: usize = 221;
    pub const MMAP: usize = 222;
    pub const FADVISE64: usize = 223;
    pub const MPROTECT: usize = 226;
    pub const MSYNC: usize = 227;
    pub const WAIT4: usize = 260;
    pub const PRLIMIT64: usize = 261;
    pub const RENAMEAT2: usize = 276;
    pub const GETRANDOM: usize = 278;
    pub const RSEQ: usize = 293;
    pub const PIDFD_OPEN: usize = 434;
    pub const FCHMODAT2: usize = 452;
}

/// Issues syscall `n` with six arguments and returns the raw x0.
#[inline(always)]
pub fn raw6(n: usize, a: usize, b: usize, c: usize, d: usize, e: usize, f: usize) -> isize {
    let ret: isize;
    // SAFETY: a system call only touches memory the kernel validates (a bad pointer yields
    // EFAULT, not undefined behaviour in this process); callers that pass pointers into their
    // own memory keep them valid for the call, which is what each wrapper below does.
    unsafe {
        asm!("svc #0", in("x8") n, inlateout("x0") a as isize => ret, in("x1") b, in("x2") c,
             in("x3") d, in("x4") e, in("x5") f, options(nostack));
    }
    ret
}

fn result(ret: isize) -> SysResult {
    if (-4095..0).contains(&ret) {
        Err(Errno(-ret as i32))
    } else {
        Ok(ret as usize)
    }
}

/// A system call with up to six arguments, as a `Result`.
pub fn syscall(n: usize, args: &[usize]) -> SysResult {
    let mut a = [0usize; 6];
    a[..args.len()].copy_from_slice(args);
    result(raw6(n, a[0], a[1], a[2], a[3], a[4], a[5]))
}

macro_rules! sc {
    ($n:expr) => { result(raw6($n, 0, 0, 0, 0, 0, 0)) };
    ($n:expr, $a:expr) => { result(raw6($n, $a as usize, 0, 0, 0, 0, 0)) };
    ($n:expr, $a:expr, $b:expr) => { result(raw6($n, $a as usize, $b as usize, 0, 0, 0, 0)) };
    ($n:expr, $a:expr, $b:expr, $c:expr) => {
        result(raw6($n, $a as usize, $b as usize, $c as usize, 0, 0, 0))
    };
    ($n:expr, $a:expr, $b:expr, $c:expr, $d:expr) => {
        result(raw6($n, $a as usize, $b as usize, $c as usize, $d as usize, 0, 0))
    };
    ($n:expr, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr) => {
        result(raw6($n, $a as usize, $b as usize, $c as usize, $d as usize, $e as usize, 0))
    };
    ($n:expr, $a:expr, $b:expr, $c:expr, $d:expr, $e:expr, $f:expr) => {
        result(raw6($n, $a as usize, $b as usize, $c as usize, $d as usize, $e as usize, $f as usize))
    };
}

// ---- constants ----

pub const AT_FDCWD: i32 = -100;
pub const AT_SYMLINK_NOFOLLOW: u32 = 0x100;
pub const AT_REMOVEDIR: u32 = 0x200;
pub const AT_SYMLINK_FOLLOW: u32 = 0x400;
pub const AT_EMPTY_PATH: u32 = 0x1000;
pub const RENAME_NOREPLACE: u32 = 1;
pub const RENAME_EXCHANGE: u32 = 2;
/// utimensat's special tv_nsec values.
pub const UTIME_NOW: i64 = (1 << 30) - 1;
pub const UTIME_OMIT: i64 = (1 << 30) - 2;

pub const O_RDONLY: u32 = 0;
pub const O_WRONLY: u32 = 1;
pub const O_RDWR: u32 = 2;
pub const O_ACCMODE: u32 = 3;
pub const O_CREAT: u32 = 0o100;
pub const O_EXCL: u32 = 0o200;
pub const O_NOCTTY: u32 = 0o400;
pub const O_TRUNC: u32 = 0o1000;
pub const O_APPEND: u32 = 0o2000;
pub const O_NONBLOCK: u32 = 0o4000;
/// arm64 values (differ from x86): O_DIRECTORY 0o40000, O_NOFOLLOW 0o100000.
pub const O_DIRECTORY: u32 = 0o40000;
pub const O_NOFOLLOW: u32 = 0o100000;
pub const O_LARGEFILE: u32 = 0o400000;
pub const O_CLOEXEC: u32 = 0o2000000;

pub const F_DUPFD: u32 = 0;
pub const F_GETFD: u32 = 1;
pub const F_SETFD: u32 = 2;
pub const F_GETFL: u32 = 3;
pub const F_SETFL: u32 = 4;
pub const F_DUPFD_CLOEXEC: u32 = 1030;
pub const FD_CLOEXEC: usize = 1;

pub const SEEK_SET: u32 = 0;
pub const SEEK_CUR: u32 = 1;
pub const SEEK_END: u32 = 2;

pub const PROT_NONE: u32 = 0;
pub const PROT_READ: u32 = 1;
pub const PROT_WRITE: u32 = 2;
pub const PROT_EXEC: u32 = 4;
pub const MAP_SHARED: u32 = 1;
pub const MAP_PRIVATE: u32 = 2;
pub const MAP_FIXED: u32 = 0x10;
pub const MAP_ANONYMOUS: u32 = 0x20;
pub const MAP_NORESERVE: u32 = 0x4000;
pub const MAP_FIXED_NOREPLACE: u32 = 0x100000;
pub const MREMAP_MAYMOVE: u32 = 1;
pub const MREMAP_FIXED: u32 = 2;
pub const MS_ASYNC: u32 = 1;
pub const MS_INVALIDATE: u32 = 2;
pub const MS_SYNC: u32 = 4;

pub const CLONE_VM: usize = 0x100;
pub const CLONE_FS: usize = 0x200;
pub const CLONE_FILES: usize = 0x400;
pub const CLONE_SIGHAND: usize = 0x800;
pub const CLONE_VFORK: usize = 0x4000;
pub const CLONE_THREAD: usize = 0x10000;
pub const CLONE_SYSVSEM: usize = 0x40000;
pub const CLONE_SETTLS: usize = 0x80000;
pub const CLONE_PARENT_SETTID: usize = 0x100000;
pub const CLONE_CHILD_CLEARTID: usize = 0x200000;
pub const CLONE_CHILD_SETTID: usize = 0x1000000;
/// glibc's pthread_create flags.
pub const CLONE_PTHREAD: usize = CLONE_VM
    | CLONE_FS
    | CLONE_FILES
    | CLONE_SIGHAND
    | CLONE_THREAD
    | CLONE_SYSVSEM
    | CLONE_SETTLS
    | CLONE_PARENT_SETTID
    | CLONE_CHILD_CLEARTID;

pub const WNOHANG: u32 = 1;
pub const WUNTRACED: u32 = 2;
pub const WSTOPPED: u32 = 2;
pub const WEXITED: u32 = 4;
pub const WCONTINUED: u32 = 8;
pub const WNOWAIT: u32 = 0x0100_0000;
pub const P_ALL: u32 = 0;
pub const P_PID: u32 = 1;
pub const P_PGID: u32 = 2;

pub const FUTEX_WAIT: u32 = 0;
pub const FUTEX_WAKE: u32 = 1;
pub const FUTEX_PRIVATE_FLAG: u32 = 128;

pub const CLOCK_REALTIME: u32 = 0;
pub const CLOCK_MONOTONIC: u32 = 1;
pub const CLOCK_PROCESS_CPUTIME_ID: u32 = 2;
pub const CLOCK_THREAD_CPUTIME_ID: u32 = 3;
pub const CLOCK_BOOTTIME: u32 = 7;
pub const TIMER_ABSTIME: u32 = 1;
pub const ITIMER_REAL: u32 = 0;

pub const TCGETS: usize = 0x5401;
pub const TIOCGWINSZ: usize = 0x5413;
pub const FIONREAD: usize = 0x541b;

pub const EPOLL_CLOEXEC: u32 = O_CLOEXEC;
pub const EPOLL_CTL_ADD: u32 = 1;
pub const EPOLL_CTL_DEL: u32 = 2;
pub const EPOLL_CTL_MOD: u32 = 3;
pub const EPOLLIN: u32 = 1;
pub const EPOLLOUT: u32 = 4;
pub const EPOLLERR: u32 = 8;
pub const EPOLLHUP: u32 = 0x10;
pub const POLLIN: i16 = 1;
pub const POLLPRI: i16 = 2;
pub const POLLOUT: i16 = 4;
pub const POLLERR: i16 = 8;
pub const POLLHUP: i16 = 0x10;
pub const POLLNVAL: i16 = 0x20;

pub const RLIMIT_STACK: u32 = 3;
pub const RLIMIT_MEMLOCK: u32 = 8;
pub const RLIMIT_NPROC: u32 = 6;
pub const RLIMIT_NOFILE: u32 = 7;
pub const RLIM_INFINITY: u64 = !0;

pub const MS_RDONLY: usize = 1;

pub const LINUX_REBOOT_MAGIC1: usize = 0xfee1_dead;
pub const LINUX_REBOOT_MAGIC2: usize = 672_274_793;
pub const LINUX_REBOOT_CMD_POWER_OFF: usize = 0x4321_fedc;

pub const S_IFMT: u32 = 0o170000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFCHR: u32 = 0o020000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFIFO: u32 = 0o010000;

pub const F_OK: u32 = 0;
pub const X_OK: u32 = 1;
pub const W_OK: u32 = 2;
pub const R_OK: u32 = 4;

// ---- structures (arm64 layouts) ----

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
pub struct Timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}

impl Timespec {
    pub fn from_ns(ns: u64) -> Timespec {
        Timespec {
            tv_sec: (ns / 1_000_000_000) as i64,
            tv_nsec: (ns % 1_000_000_000) as i64,
        }
    }
    pub fn ns(&self) -> u64 {
        self.tv_sec as u64 * 1_000_000_000 + self.tv_nsec as u64
    }
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Timeval {
    pub tv_sec: i64,
    pub tv_usec: i64,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Itimerval {
    pub it_interval: Timeval,
    pub it_value: Timeval,
}

/// setitimer(ITIMER_REAL) to fire in `value_ns` and then every `interval_ns` (0: once; a
/// `value_ns` of 0 disarms); returns the timer as it was.
pub fn setitimer_real(value_ns: u64, interval_ns: u64) -> SysResult<Itimerval> {
    setitimer(ITIMER_REAL, value_ns, interval_ns)
}

/// setitimer(`which`) as `setitimer_real` does for ITIMER_REAL.
pub fn setitimer(which: u32, value_ns: u64, interval_ns: u64) -> SysResult<Itimerval> {
    let tv = |ns: u64| Timeval {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_usec: ((ns % 1_000_000_000) / 1000) as i64,
    };
    let new = Itimerval {
        it_interval: tv(interval_ns),
        it_value: tv(value_ns),
    };
    let mut old = Itimerval::default();
    sc!(
        nr::SETITIMER,
        which,
        &new as *const Itimerval,
        &mut old as *mut Itimerval
    )
    .map(|_| old)
}

/// `struct stat` for arm64 (asm-generic layout), 128 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
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
    pub __unused: [u32; 2],
}
const _: () = assert!(core::mem::size_of::<Stat>() == 128);

#[repr(C)]
#[derive(Clone, Copy)]
pub struct Utsname {
    pub sysname: [u8; 65],
    pub nodename: [u8; 65],
    pub release: [u8; 65],
    pub version: [u8; 65],
    pub machine: [u8; 65],
    pub domainname: [u8; 65],
}

/// The text of a NUL-padded field.
pub fn field_str(f: &[u8]) -> &str {
    let n = f.iter().position(|&b| b == 0).unwrap_or(f.len());
    core::str::from_utf8(&f[..n]).unwrap_or("?")
}

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct Iovec {
    pub base: usize,
    pub len: usize,
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Pollfd {
    pub fd: i32,
    pub events: i16,
    pub revents: i16,
}

/// `struct epoll_event` is not packed on arm64: 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct EpollEvent {
    pub events: u32,
    pub data: u64,
}
const _: () = assert!(core::mem::size_of::<EpollEvent>() == 16);

pub fn epoll_create1(flags: u32) -> SysResult {
    syscall(nr::EPOLL_CREATE1, &[flags as usize])
}

/// epoll_ctl(2); `ev` None passes a null event (EPOLL_CTL_DEL).
pub fn epoll_ctl(ep: i32, op: u32, fd: i32, ev: Option<&EpollEvent>) -> SysResult {
    let e = ev.map_or(0, |e| e as *const EpollEvent as usize);
    syscall(nr::EPOLL_CTL, &[ep as usize, op as usize, fd as usize, e])
}

/// epoll_pwait(2) with no signal mask: up to `evs.len()` events, waiting `timeout_ms` (-1:
/// for ever).
pub fn epoll_wait(ep: i32, evs: &mut [EpollEvent], timeout_ms: i32) -> SysResult {
    syscall(
        nr::EPOLL_PWAIT,
        &[
            ep as usize,
            evs.as_mut_ptr() as usize,
            evs.len(),
            timeout_ms as usize,
            0,
            8,
        ],
    )
}

#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub struct Rlimit {
    pub cur: u64,
    pub max: u64,
}

// ---- wrappers ----

/// A NUL-terminated path for the kernel. Panics (a test bug) if it does not fit.
pub struct CPath([u8; 256]);

impl CPath {
    pub fn new(s: &str) -> CPath {
        let mut b = [0u8; 256];
        assert!(s.len() < 256 && !s.as_bytes().contains(&0), "bad path {s}");
        b[..s.len()].copy_from_slice(s.as_bytes());
        CPath(b)
    }
    pub fn ptr(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

pub fn read(fd: i32, buf: &mut [u8]) -> SysResult {
    sc!(nr::READ, fd, buf.as_mut_ptr(), buf.len())
}
pub fn write(fd: i32, buf: &[u8]) -> SysResult {
    sc!(nr::WRITE, fd, buf.as_ptr(), buf.len())
}
/// Writes all of `buf`, retrying short writes.
pub fn write_all(fd: i32, mut buf: &[u8]) -> SysResult<()> {
    while !buf.is_empty() {
        match write(fd, buf) {
            Ok(n) => buf = &buf[n..],
            Err(EINTR) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
pub fn pread(fd: i32, buf: &mut [u8], off: u64) -> SysResult {
    sc!(nr::PREAD64, fd, buf.as_mut_ptr(), buf.len(), off)
}
pub fn pwrite(fd: i32, buf: &[u8], off: u64) -> SysResult {
    sc!(nr::PWRITE64, fd, buf.as_ptr(), buf.len(), off)
}
pub fn readv(fd: i32, iov: &[Iovec]) -> SysResult {
    sc!(nr::READV, fd, iov.as_ptr(), iov.len())
}
pub fn writev(fd: i32, iov: &[Iovec]) -> SysResult {
    sc!(nr::WRITEV, fd, iov.as_ptr(), iov.len())
}
pub fn openat(dirfd: i32, path: &str, flags: u32, mode: u32) -> SysResult<i32> {
    let p = CPath::new(path);
    sc!(nr::OPENAT, dirfd, p.ptr(), flags, mode).map(|v| v as i32)
}
pub fn open(path: &str, flags: u32) -> SysResult<i32> {
    openat(AT_FDCWD, path, flags, 0o644)
}
pub fn close(fd: i32) -> SysResult {
    sc!(nr::CLOSE, fd)
}
pub fn lseek(fd: i32, off: i64, whence: u32) -> SysResult {
    sc!(nr::LSEEK, fd, off, whence)
}
pub fn dup(fd: i32) -> SysResult<i32> {
    sc!(nr::DUP, fd).map(|v| v as i32)
}
pub fn dup3(old: i32, new: i32, flags: u32) -> SysResult<i32> {
    sc!(nr::DUP3, old, new, flags).map(|v| v as i32)
}
pub fn fcntl(fd: i32, cmd: u32, arg: usize) -> SysResult {
    sc!(nr::FCNTL, fd, cmd, arg)
}
pub fn ioctl(fd: i32, req: usize, arg: usize) -> SysResult {
    sc!(nr::IOCTL, fd, req, arg)
}
pub fn pipe2(flags: u32) -> SysResult<[i32; 2]> {
    let mut fds = [-1i32; 2];
    sc!(nr::PIPE2, fds.as_mut_ptr(), flags).map(|_| fds)
}
pub fn fstat(fd: i32) -> SysResult<Stat> {
    let mut st = Stat::default();
    sc!(nr::FSTAT, fd, &mut st as *mut Stat).map(|_| st)
}
pub fn fstatat(dirfd: i32, path: &str, flags: u32) -> SysResult<Stat> {
    let p = CPath::new(path);
    let mut st = Stat::default();
    sc!(nr::NEWFSTATAT, dirfd, p.ptr(), &mut st as *mut Stat, flags).map(|_| st)
}
pub fn stat(path: &str) -> SysResult<Stat> {
    fstatat(AT_FDCWD, path, 0)
}
pub fn faccessat(dirfd: i32, path: &str, mode: u32) -> SysResult {
    let p = CPath::new(path);
    sc!(nr::FACCESSAT, dirfd, p.ptr(), mode)
}
pub fn mkdirat(dirfd: i32, path: &str, mode: u32) -> SysResult {
    let p = CPath::new(path);
    sc!(nr::MKDIRAT, dirfd, p.ptr(), mode)
}
pub fn unlinkat(dirfd: i32, path: &str, flags: u32) -> SysResult {
    let p = CPath::new(path);
    sc!(nr::UNLINKAT, dirfd, p.ptr(), flags)
}
pub fn chdir(path: &str) -> SysResult {
    let p = CPath::new(path);
    sc!(nr::CHDIR, p.ptr())
}
pub fn getcwd(buf: &mut [u8]) -> SysResult {
    sc!(nr::GETCWD, buf.as_mut_ptr(), buf.len())
}
pub fn readlinkat(dirfd: i32, path: &str, buf: &mut [u8]) -> SysResult {
    let p = CPath::new(path);
    sc!(nr::READLINKAT, dirfd, p.ptr(), buf.as_mut_ptr(), buf.len())
}
pub fn getdents64(fd: i32, buf: &mut [u8]) -> SysResult {
    sc!(nr::GETDENTS64, fd, buf.as_mut_ptr(), buf.len())
}
pub fn mount(src: &str, target: &str, fstype: &str, flags: usize) -> SysResult {
    let (s, t, f) = (CPath::new(src), CPath::new(target), CPath::new(fstype));
    sc!(nr::MOUNT, s.ptr(), t.ptr(), f.ptr(), flags, 0)
}
/// mount(2) with a file-system-specific option string (`size=8m` for tmpfs).
pub fn mount_data(src: &str, target: &str, fstype: &str, flags: usize, data: &str) -> SysResult {
    let (s, t, f, d) = (
        CPath::new(src),
        CPath::new(target),
        CPath::new(fstype),
        CPath::new(data),
    );
    sc!(nr::MOUNT, s.ptr(), t.ptr(), f.ptr(), flags, d.ptr())
}
pub fn umount2(target: &str, flags: u32) -> SysResult {
    let t = CPath::new(target);
    sc!(nr::UMOUNT2, t.ptr(), flags)
}
pub fn ftruncate(fd: i32, len: u64) -> SysResult {
    sc!(nr::FTRUNCATE, fd, len)
}
pub fn sync() {
    let _ = sc!(nr::SYNC);
}
pub fn reboot(cmd: usize) -> SysResult {
    sc!(nr::REBOOT, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, cmd, 0)
}

pub fn exit(code: i32) -> ! {
    raw6(nr::EXIT, code as usize, 0, 0, 0, 0, 0);
    unreachable_exit()
}
pub fn exit_group(code: i32) -> ! {
    raw6(nr::EXIT_GROUP, code as usize, 0, 0, 0, 0, 0);
    unreachable_exit()
}
fn unreachable_exit() -> ! {
    loop {
        // SAFETY: an undefined instruction; only reached if exit returned, a kernel bug.
        unsafe { asm!("udf #0xe") };
    }
}
pub fn getpid() -> i32 {
    raw6(nr::GETPID, 0, 0, 0, 0, 0, 0) as i32
}
pub fn gettid() -> i32 {
    raw6(nr::GETTID, 0, 0, 0, 0, 0, 0) as i32
}
pub fn getppid() -> i32 {
    raw6(nr::GETPPID, 0, 0, 0, 0, 0, 0) as i32
}
/// fork(2): arm64 has no fork syscall; glibc uses clone(SIGCHLD).
pub fn fork() -> SysResult<i32> {
    sc!(nr::CLONE, 17, 0, 0, 0, 0).map(|v| v as i32)
}
/// execve with NULL-terminated pointer arrays built by the caller.
pub fn execve_raw(path: usize, argv: usize, envp: usize) -> SysResult {
    sc!(nr::EXECVE, path, argv, envp)
}
/// execve with Rust strings. Returns only on failure.
pub fn execve(path: &str, argv: &[&str], envp: &[&str]) -> Errno {
    use alloc::vec::Vec;
    let p = CPath::new(path);
    let own = |list: &[&str]| -> Vec<Vec<u8>> {
        list.iter()
            .map(|s| {
                let mut v = Vec::from(s.as_bytes());
                v.push(0);
                v
            })
            .collect()
    };
    let (a, e) = (own(argv), own(envp));
    let mut ap: Vec<usize> = a.iter().map(|s| s.as_ptr() as usize).collect();
    ap.push(0);
    let mut ep: Vec<usize> = e.iter().map(|s| s.as_ptr() as usize).collect();
    ep.push(0);
    match execve_raw(p.ptr(), ap.as_ptr() as usize, ep.as_ptr() as usize) {
        Ok(_) => EINVAL,
        Err(e) => e,
    }
}
pub fn wait4(pid: i32, status: &mut i32, options: u32) -> SysResult<i32> {
    sc!(nr::WAIT4, pid, status as *mut i32, options, 0).map(|v| v as i32)
}
/// Returns (pid, status) of a child that changed state; pid 0 with WNOHANG and nothing ready.
pub fn waitpid(pid: i32, options: u32) -> SysResult<(i32, i32)> {
    let mut st = 0;
    let p = wait4(pid, &mut st, options)?;
    Ok((p, st))
}
pub fn kill(pid: i32, sig: i32) -> SysResult {
    sc!(nr::KILL, pid, sig)
}
pub fn tkill(tid: i32, sig: i32) -> SysResult {
    sc!(nr::TKILL, tid, sig)
}
pub fn tgkill(tgid: i32, tid: i32, sig: i32) -> SysResult {
    sc!(nr::TGKILL, tgid, tid, sig)
}
pub fn mlock(addr: usize, len: usize) -> SysResult {
    sc!(nr::MLOCK, addr, len)
}
pub fn munlock(addr: usize, len: usize) -> SysResult {
    sc!(nr::MUNLOCK, addr, len)
}
pub fn mlockall(flags: u32) -> SysResult {
    sc!(nr::MLOCKALL, flags)
}
pub fn munlockall() -> SysResult {
    sc!(nr::MUNLOCKALL)
}
pub fn setuid(uid: u32) -> SysResult {
    sc!(nr::SETUID, uid)
}
pub fn symlinkat(target: &str, dirfd: i32, path: &str) -> SysResult {
    let (t, p) = (CPath::new(target), CPath::new(path));
    sc!(nr::SYMLINKAT, t.ptr(), dirfd, p.ptr())
}
pub fn renameat2(olddir: i32, old: &str, newdir: i32, new: &str, flags: u32) -> SysResult {
    let (o, n) = (CPath::new(old), CPath::new(new));
    sc!(nr::RENAMEAT2, olddir, o.ptr(), newdir, n.ptr(), flags)
}
pub fn rename(old: &str, new: &str) -> SysResult {
    renameat2(AT_FDCWD, old, AT_FDCWD, new, 0)
}
pub fn linkat(olddir: i32, old: &str, newdir: i32, new: &str, flags: u32) -> SysResult {
    let (o, n) = (CPath::new(old), CPath::new(new));
    sc!(nr::LINKAT, olddir, o.ptr(), newdir, n.ptr(), flags)
}
pub fn fchmodat(dirfd: i32, path: &str, mode: u32) -> SysResult {
    let p = CPath::new(path);
    sc!(nr::FCHMODAT, dirfd, p.ptr(), mode)
}
pub fn fchownat(dirfd: i32, path: &str, uid: u32, gid: u32, flags: u32) -> SysResult {
    let p = CPath::new(path);
    sc!(nr::FCHOWNAT, dirfd, p.ptr(), uid, gid, flags)
}
/// utimensat with a path (`None`: a null path, the fd itself) and optional times.
pub fn utimensat(
    dirfd: i32,
    path: Option<&str>,
    times: Option<&[Timespec; 2]>,
    flags: u32,
) -> SysResult {
    let p = path.map(CPath::new);
    let pp = p.as_ref().map_or(0, |p| p.ptr());
    let tp = times.map_or(0, |t| t.as_ptr() as usize);
    sc!(nr::UTIMENSAT, dirfd, pp, tp, flags)
}
pub fn getcpu() -> SysResult<u32> {
    let mut cpu = u32::MAX;
    sc!(nr::GETCPU, &mut cpu as *mut u32, 0, 0).map(|_| cpu)
}
pub fn personality(persona: u32) -> SysResult {
    sc!(nr::PERSONALITY, persona)
}
pub fn getuid() -> u32 {
    raw6(nr::GETUID, 0, 0, 0, 0, 0, 0) as u32
}
pub fn setrlimit(res: u32, lim: &Rlimit) -> SysResult {
    sc!(nr::SETRLIMIT, res, lim as *const Rlimit)
}
pub fn getrlimit(res: u32) -> SysResult<Rlimit> {
    let mut lim = Rlimit::default();
    sc!(nr::GETRLIMIT, res, &mut lim as *mut Rlimit).map(|_| lim)
}
pub fn setpgid(pid: i32, pgid: i32) -> SysResult {
    sc!(nr::SETPGID, pid, pgid)
}
pub fn getpgid(pid: i32) -> SysResult<i32> {
    sc!(nr::GETPGID, pid).map(|v| v as i32)
}
pub fn sched_yield() -> SysResult {
    sc!(nr::SCHED_YIELD)
}
/// sched_setaffinity with a mask of the first 64 CPUs.
pub fn sched_setaffinity(pid: i32, mask: u64) -> SysResult {
    sc!(nr::SCHED_SETAFFINITY, pid, 8, &mask as *const u64)
}
/// sched_getaffinity: the first 64 CPUs of the mask.
pub fn sched_getaffinity(pid: i32) -> SysResult<u64> {
    let mut mask = [0u64; 16];
    sc!(nr::SCHED_GETAFFINITY, pid, 128, mask.as_mut_ptr()).map(|_| mask[0])
}
pub fn uname() -> Utsname {
    let mut u = Utsname {
        sysname: [0; 65],
        nodename: [0; 65],
        release: [0; 65],
        version: [0; 65],
        machine: [0; 65],
        domainname: [0; 65],
    };
    let _ = sc!(nr::UNAME, &mut u as *mut Utsname);
    u
}
pub fn brk(addr: usize) -> usize {
    raw6(nr::BRK, addr, 0, 0, 0, 0, 0) as usize
}
pub fn mmap(addr: usize, len: usize, prot: u32, flags: u32, fd: i32, off: usize) -> SysResult {
    sc!(nr::MMAP, addr, len, prot, flags, fd, off)
}
pub fn munmap(addr: usize, len: usize) -> SysResult {
    sc!(nr::MUNMAP, addr, len)
}
pub fn mprotect(addr: usize, len: usize, prot: u32) -> SysResult {
    sc!(nr::MPROTECT, addr, len, prot)
}
pub fn mremap(
    old: usize,
    old_len: usize,
    new_len: usize,
    flags: u32,
    new_addr: usize,
) -> SysResult {
    sc!(nr::MREMAP, old, old_len, new_len, flags, new_addr)
}
pub fn msync(addr: usize, len: usize, flags: u32) -> SysResult {
    sc!(nr::MSYNC, addr, len, flags)
}
/// An anonymous private read/write mapping.
pub fn mmap_anon(len: usize) -> SysResult {
    mmap(
        0,
        len,
        PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS,
        -1,
        0,
    )
}
/// An anonymous shared mapping: survives fork as shared memory (results from children).
pub fn mmap_shared(len: usize) -> SysResult {
    mmap(
        0,
        len,
        PROT_READ | PROT_WRITE,
        MAP_SHARED | MAP_ANONYMOUS,
        -1,
        0,
    )
}
pub fn clock_gettime(clock: u32) -> SysResult<Timespec> {
    let mut ts = Timespec::default();
    sc!(nr::CLOCK_GETTIME, clock, &mut ts as *mut Timespec).map(|_| ts)
}
/// CLOCK_MONOTONIC in nanoseconds.
pub fn now_ns() -> u64 {
    clock_gettime(CLOCK_MONOTONIC).map(|t| t.ns()).unwrap_or(0)
}
pub fn nanosleep(req: &Timespec, rem: Option<&mut Timespec>) -> SysResult {
    let r = rem.map_or(0, |r| r as *mut Timespec as usize);
    sc!(nr::NANOSLEEP, req as *const Timespec, r)
}
pub fn sleep_ns(ns: u64) {
    let mut req = Timespec::from_ns(ns);
    let mut rem = Timespec::default();
    while let Err(EINTR) = nanosleep(&req, Some(&mut rem)) {
        req = rem;
    }
}
pub fn futex(uaddr: *const u32, op: u32, val: u32, timeout: usize) -> SysResult {
    sc!(nr::FUTEX, uaddr, op, val, timeout, 0, 0)
}
pub fn getrandom(buf: &mut [u8], flags: u32) -> SysResult {
    sc!(nr::GETRANDOM, buf.as_mut_ptr(), buf.len(), flags)
}
pub fn ppoll(fds: &mut [Pollfd], timeout: Option<&Timespec>) -> SysResult {
    let t = timeout.map_or(0, |t| t as *const Timespec as usize);
    sc!(nr::PPOLL, fds.as_mut_ptr(), fds.len(), t, 0, 8)
}
