//! Bad pointers and bad syscall numbers: every pointer-taking call handed 0x1 (low, unmapped)
//! and 0xffff000000000000 (the kernel half) fails with exactly what Linux returns (EFAULT in
//! most cases) without killing the caller; so does it with an unmapped page, a PROT_NONE page
//! and, where the kernel stores through the pointer, a read-only page (left unchanged); buffers
//! that run into an unmapped page give Linux's short counts or EFAULT, and a failed call leaves
//! no descriptor or file offset behind. Unknown syscall numbers return ENOSYS.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicBool, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const BAD: [usize; 2] = [0x1, 0xffff_0000_0000_0000];
const SEC: u64 = 1_000_000_000;

struct Fds {
    file: i32,
    dir: i32,
    pipe_r: i32,
    pipe_w: i32,
    ep: i32,
}

/// (name, call) pairs; each call gets the bad pointer. All expect EFAULT unless listed in
/// `expect` below.
type Case = (&'static str, fn(&Fds, usize) -> SysResult);

fn s(n: usize, a: &[usize]) -> SysResult {
    sys::syscall(n, a)
}

const GOOD_PATH: &[u8] = b"/etc/hello.txt\0";

fn good() -> usize {
    GOOD_PATH.as_ptr() as usize
}

const CASES: &[Case] = &[
    ("read", |f, p| s(nr::READ, &[f.file as usize, p, 16])),
    ("write", |f, p| s(nr::WRITE, &[f.pipe_w as usize, p, 16])),
    ("pread64", |f, p| {
        s(nr::PREAD64, &[f.file as usize, p, 16, 0])
    }),
    ("pwrite64", |f, p| {
        s(nr::PWRITE64, &[f.file as usize, p, 16, 0])
    }),
    ("readv", |f, p| s(nr::READV, &[f.file as usize, p, 1])),
    ("writev", |f, p| s(nr::WRITEV, &[f.pipe_w as usize, p, 1])),
    ("openat", |_, p| {
        s(nr::OPENAT, &[AT_FDCWD as usize, p, 0, 0])
    }),
    ("newfstatat_path", |_, p| {
        let mut st = Stat::default();
        s(
            nr::NEWFSTATAT,
            &[AT_FDCWD as usize, p, &mut st as *mut _ as usize, 0],
        )
    }),
    ("newfstatat_buf", |_, p| {
        s(nr::NEWFSTATAT, &[AT_FDCWD as usize, good(), p, 0])
    }),
    ("fstat", |f, p| s(nr::FSTAT, &[f.file as usize, p])),
    ("getdents64", |f, p| {
        s(nr::GETDENTS64, &[f.dir as usize, p, 4096])
    }),
    ("getcwd", |_, p| s(nr::GETCWD, &[p, 256])),
    ("chdir", |_, p| s(nr::CHDIR, &[p])),
    ("mkdirat", |_, p| {
        s(nr::MKDIRAT, &[AT_FDCWD as usize, p, 0o755])
    }),
    ("unlinkat", |_, p| {
        s(nr::UNLINKAT, &[AT_FDCWD as usize, p, 0])
    }),
    ("faccessat", |_, p| {
        s(nr::FACCESSAT, &[AT_FDCWD as usize, p, 0])
    }),
    ("readlinkat_path", |_, p| {
        s(nr::READLINKAT, &[AT_FDCWD as usize, p, 0, 0])
    }),
    ("readlinkat_buf", |_, p| {
        let path = b"/proc/self/exe\0";
        s(
            nr::READLINKAT,
            &[AT_FDCWD as usize, path.as_ptr() as usize, p, 64],
        )
    }),
    ("mount", |_, p| s(nr::MOUNT, &[p, p, p, 0, 0])),
    ("pipe2", |_, p| s(nr::PIPE2, &[p, 0])),
    ("execve_path", |_, p| s(nr::EXECVE, &[p, 0, 0])),
    ("execve_argv", |_, p| {
        let path = b"/bin/tests/efault\0";
        s(nr::EXECVE, &[path.as_ptr() as usize, p, 0])
    }),
    ("clock_gettime", |_, p| {
        s(nr::CLOCK_GETTIME, &[CLOCK_MONOTONIC as usize, p])
    }),
    ("clock_getres", |_, p| {
        s(nr::CLOCK_GETRES, &[CLOCK_MONOTONIC as usize, p])
    }),
    ("nanosleep", |_, p| s(nr::NANOSLEEP, &[p, 0])),
    ("clock_nanosleep", |_, p| {
        s(nr::CLOCK_NANOSLEEP, &[CLOCK_MONOTONIC as usize, 0, p, 0])
    }),
    ("setitimer", |_, p| {
        s(nr::SETITIMER, &[ITIMER_REAL as usize, p, 0])
    }),
    ("getitimer", |_, p| {
        s(nr::GETITIMER, &[ITIMER_REAL as usize, p])
    }),
    ("uname", |_, p| s(nr::UNAME, &[p])),
    ("getrandom", |_, p| s(nr::GETRANDOM, &[p, 16, 0])),
    ("sched_getaffinity", |_, p| {
        s(nr::SCHED_GETAFFINITY, &[0, 128, p])
    }),
    ("prlimit64_new", |_, p| {
        s(nr::PRLIMIT64, &[0, RLIMIT_NOFILE as usize, p, 0])
    }),
    ("prlimit64_old", |_, p| {
        s(nr::PRLIMIT64, &[0, RLIMIT_NOFILE as usize, 0, p])
    }),
    ("rt_sigaction_act", |_, p| {
        s(nr::RT_SIGACTION, &[SIGUSR1 as usize, p, 0, 8])
    }),
    ("rt_sigaction_oact", |_, p| {
        s(nr::RT_SIGACTION, &[SIGUSR1 as usize, 0, p, 8])
    }),
    ("rt_sigprocmask_set", |_, p| {
        s(nr::RT_SIGPROCMASK, &[SIG_BLOCK as usize, p, 0, 8])
    }),
    ("rt_sigprocmask_old", |_, p| {
        s(nr::RT_SIGPROCMASK, &[SIG_BLOCK as usize, 0, p, 8])
    }),
    ("rt_sigpending", |_, p| s(nr::RT_SIGPENDING, &[p, 8])),
    ("rt_sigsuspend", |_, p| s(nr::RT_SIGSUSPEND, &[p, 8])),
    ("sigaltstack_new", |_, p| s(nr::SIGALTSTACK, &[p, 0])),
    ("sigaltstack_old", |_, p| s(nr::SIGALTSTACK, &[0, p])),
    ("futex_wait", |_, p| {
        s(nr::FUTEX, &[p, FUTEX_WAIT as usize, 0, 0, 0, 0])
    }),
    ("futex_wake", |_, p| {
        s(nr::FUTEX, &[p & !3, FUTEX_WAKE as usize, 1, 0, 0, 0])
    }),
    ("ppoll_fds", |_, p| s(nr::PPOLL, &[p, 1, 0, 0, 8])),
    ("ppoll_timeout", |f, p| {
        let mut pfd = Pollfd {
            fd: f.pipe_r,
            events: POLLIN,
            revents: 0,
        };
        s(nr::PPOLL, &[&mut pfd as *mut _ as usize, 1, p, 0, 8])
    }),
    ("epoll_ctl", |f, p| {
        s(
            nr::EPOLL_CTL,
            &[f.ep as usize, EPOLL_CTL_ADD as usize, f.pipe_r as usize, p],
        )
    }),
    ("epoll_pwait", |f, p| {
        s(nr::EPOLL_PWAIT, &[f.ep as usize, p, 1, 0, 0, 8])
    }),
    ("wait4_status", |_, p| {
        let pid = spawn(|| 0).unwrap_or(-1);
        sys::sleep_ns(20_000_000);
        let r = s(nr::WAIT4, &[pid as usize, p, 0, 0]);
        let _ = sys::waitpid(pid, 0);
        r
    }),
    ("waitid_info", |_, p| {
        let pid = spawn(|| 0).unwrap_or(-1);
        sys::sleep_ns(20_000_000);
        let r = s(
            nr::WAITID,
            &[P_PID as usize, pid as usize, p, WEXITED as usize, 0],
        );
        let _ = sys::waitpid(pid, 0);
        r
    }),
    ("ioctl_tcgets", |_, p| {
        let fd = sys::open("/dev/console", O_RDWR | O_NOCTTY).unwrap_or(-1);
        let r = s(nr::IOCTL, &[fd as usize, TCGETS, p]);
        let _ = sys::close(fd);
        r
    }),
];

/// Cases where Linux (7.3) does not return EFAULT, with what it does return.
fn expected(name: &str, bad: usize) -> SysResult {
    let low = bad == 0x1;
    match name {
        // The futex word's alignment is checked before it is read.
        "futex_wait" if low => Err(EINVAL),
        // Only access_ok (the address range) is checked before waiting; with nothing ready
        // and timeout 0 nothing is written, so a low bad pointer is not noticed.
        "epoll_pwait" if low => Ok(0),
        // Linux 7.3 reports a bad readlinkat path as EINVAL, not EFAULT (both addresses).
        "readlinkat_path" => Err(EINVAL),
        _ => Err(EFAULT),
    }
}

fn bad_pointers_give_efault() -> TestResult {
    let [pipe_r, pipe_w] = t!(sys::pipe2(0));
    let ep = t!(sys::syscall(nr::EPOLL_CREATE1, &[0])) as i32;
    let fds = Fds {
        file: t!(sys::open("/etc/hello.txt", O_RDWR)),
        dir: t!(sys::open("/bin/tests", O_RDONLY | O_DIRECTORY)),
        pipe_r,
        pipe_w,
        ep,
    };
    let mut wrong = Vec::new();
    for (name, call) in CASES {
        for bad in BAD {
            // In a child, so that a call that kills or changes the process cannot spoil the rest.
            let res = Shared::new((0usize, 0i32));
            let st = t!(in_child(|| {
                let r = call(&fds, bad);
                res.set(match r {
                    Ok(v) => (1, v as i32),
                    Err(e) => (2, e.0),
                });
                0
            }));
            let got = match res.get() {
                (1, v) => Ok(v as usize),
                (2, e) => Err(Errno(e)),
                _ => return Err(format!("{name}({bad:#x}): child {}", describe(st))),
            };
            if got != expected(name, bad) {
                wrong.push(format!(
                    "{name}({bad:#x}) = {got:?}, want {:?}",
                    expected(name, bad)
                ));
            }
        }
    }
    check!(wrong.is_empty(), "{}", wrong.join("\n"));
    Ok(())
}

/// A buffer that runs into an unmapped page: read and write of a regular file move the bytes
/// before the hole and return that short count, and the file offset covers only those bytes.
fn partial_copies_short_count() -> TestResult {
    let base = t!(sys::mmap(
        0,
        2 * PAGE,
        PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS,
        -1,
        0
    ));
    t!(sys::munmap(base + PAGE, PAGE));
    let buf = base + PAGE - 40;
    let fd = t!(sys::open("/tmp/efault_partial", O_RDWR | O_CREAT | O_TRUNC));
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/efault_partial", 0);
    check_eq!(sys::write(fd, &[7u8; 200]), Ok(200), "filling the file");
    check_eq!(sys::lseek(fd, 0, SEEK_SET), Ok(0), "rewinding");
    check_eq!(
        s(nr::READ, &[fd as usize, buf, 100]),
        Ok(40),
        "read into a buffer ending 40 bytes before a hole"
    );
    check_eq!(
        sys::lseek(fd, 0, SEEK_CUR),
        Ok(40),
        "offset after the short read"
    );
    check_eq!(
        s(nr::WRITE, &[fd as usize, buf - 24, 100]),
        Ok(64),
        "write from a buffer ending 64 bytes before a hole"
    );
    check_eq!(
        sys::lseek(fd, 0, SEEK_CUR),
        Ok(104),
        "offset after the short write"
    );
    let _ = sys::close(fd);
    let _ = sys::munmap(base, PAGE);
    Ok(())
}

/// The cases where the kernel only stores through the pointer: the ones a read-only page fails.
const STORES: &[&str] = &[
    "read",
    "pread64",
    "newfstatat_buf",
    "fstat",
    "getdents64",
    "getcwd",
    "readlinkat_buf",
    "pipe2",
    "clock_gettime",
    "clock_getres",
    "getitimer",
    "uname",
    "getrandom",
    "sched_getaffinity",
    "prlimit64_old",
    "rt_sigaction_oact",
    "rt_sigprocmask_old",
    "rt_sigpending",
    "sigaltstack_old",
    "epoll_pwait",
    "wait4_status",
    "waitid_info",
    "ioctl_tcgets",
];

const PAGE: usize = 4096;
/// Where the test pages go: far from the program, its heap and the kernel's choice of mmap
/// addresses, so that nothing else is ever mapped into the hole.
const LAYOUT_BASE: usize = 0x20_0000_0000;
const RO_FILL: u8 = 0xa5;

/// Four pages and a hole: read/write, read-only (filled with RO_FILL), PROT_NONE, read/write
/// (buffers that straddle into the hole start there), then a page never mapped.
struct Layout {
    ro: usize,
    none: usize,
    hole: usize,
}

fn layout() -> Result<Layout, String> {
    let rw = PROT_READ | PROT_WRITE;
    let base = t!(sys::mmap(
        LAYOUT_BASE,
        4 * PAGE,
        rw,
        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
        -1,
        0
    ));
    check_eq!(base, LAYOUT_BASE);
    let l = Layout {
        ro: base + PAGE,
        none: base + 2 * PAGE,
        hole: base + 4 * PAGE,
    };
    // SAFETY: the page was just mapped read/write.
    unsafe { core::ptr::write_bytes(l.ro as *mut u8, RO_FILL, PAGE) };
    t!(sys::mprotect(l.ro, PAGE, PROT_READ));
    t!(sys::mprotect(l.none, PAGE, PROT_NONE));
    Ok(l)
}

fn ro_page_intact(l: &Layout) -> bool {
    // SAFETY: the read-only page stays mapped and readable for the whole test.
    let page = unsafe { core::slice::from_raw_parts(l.ro as *const u8, PAGE) };
    page.iter().all(|&b| b == RO_FILL)
}

/// What Linux returns for a pointer into user space that cannot be used (unmapped, PROT_NONE,
/// or read-only for a store): `expected` for a low address, except that it is aligned.
fn expected_user(name: &str) -> SysResult {
    match name {
        "futex_wait" => Err(EFAULT),
        _ => expected(name, 0x1),
    }
}

fn bad_user_memory_efault() -> TestResult {
    let l = layout_once()?;
    let [pipe_r, pipe_w] = t!(sys::pipe2(0));
    let ep = t!(sys::syscall(nr::EPOLL_CREATE1, &[0])) as i32;
    let fds = Fds {
        file: t!(sys::open("/etc/hello.txt", O_RDWR)),
        dir: t!(sys::open("/bin/tests", O_RDONLY | O_DIRECTORY)),
        pipe_r,
        pipe_w,
        ep,
    };
    // (kind, pointer, whether only the storing cases apply)
    let kinds = [
        ("unmapped", l.hole, false),
        ("prot_none", l.none, false),
        ("read_only", l.ro, true),
    ];
    let res = Shared::new((0usize, 0i32, false));
    let mut wrong = Vec::new();
    for (kind, ptr, stores_only) in kinds {
        for (name, call) in CASES {
            if stores_only && !STORES.contains(name) {
                continue;
            }
            res.set((0, 0, false));
            let (st, timed_out) = t!(in_child_bounded(
                || {
                    let r = call(&fds, ptr);
                    let intact = ro_page_intact(&l);
                    res.set(match r {
                        Ok(v) => (1, v as i32, intact),
                        Err(e) => (2, e.0, intact),
                    });
                    0
                },
                10 * SEC
            ));
            let (tag, v, intact) = res.get();
            let got = match tag {
                1 => Ok(v as usize),
                2 => Err(Errno(v)),
                _ => {
                    wrong.push(format!(
                        "{name}({kind}): child {}{}",
                        describe(st),
                        if timed_out { ", timed out" } else { "" }
                    ));
                    continue;
                }
            };
            let want = expected_user(name);
            if got != want {
                wrong.push(format!("{name}({kind}) = {got:?}, want {want:?}"));
            }
            if !intact {
                wrong.push(format!("{name}({kind}) changed the read-only page"));
            }
        }
    }
    check!(wrong.is_empty(), "{}", wrong.join("\n"));
    Ok(())
}

/// The lowest free descriptor (where the next one would go).
fn lowest_free_fd() -> i32 {
    let fd = sys::dup(0).unwrap_or(-1);
    let _ = sys::close(fd);
    fd
}

fn read_into_bad_memory() -> TestResult {
    let l = layout_once()?;
    // A file's offset does not move when nothing could be stored.
    for (kind, ptr) in [
        ("read-only", l.ro),
        ("PROT_NONE", l.none),
        ("unmapped", l.hole),
    ] {
        let fd = t!(sys::open("/etc/hello.txt", O_RDONLY | O_CLOEXEC));
        check_eq!(
            s(nr::READ, &[fd as usize, ptr, 16]),
            Err(EFAULT),
            "read into {kind}"
        );
        check_eq!(
            sys::lseek(fd, 0, SEEK_CUR),
            Ok(0),
            "offset after read into {kind}"
        );
        let _ = sys::close(fd);
    }
    check!(ro_page_intact(&l), "read changed the read-only page");
    // A buffer that runs into the unmapped page: the bytes before it are read and counted.
    let fd = t!(sys::open("/etc/hello.txt", O_RDONLY | O_CLOEXEC));
    let r = s(nr::READ, &[fd as usize, l.hole - 8, 16]);
    let off = sys::lseek(fd, 0, SEEK_CUR);
    let _ = sys::close(fd);
    println!("# read of a file into a buffer 8 bytes before a hole: {r:?}, offset then {off:?}");
    check_eq!(r, Ok(8), "short read of a file");
    check_eq!(off, Ok(8), "offset after the short read");
    // SAFETY: l.rw is the read/write page before the hole.
    let got = unsafe { core::slice::from_raw_parts((l.hole - 8) as *const u8, 8) };
    check_eq!(got, b"Hello fr", "the bytes read");
    // A pipe: nothing is consumed when the copy faults part-way.
    let [r_, w_] = t!(sys::pipe2(O_CLOEXEC));
    t!(sys::write(w_, b"0123456789abcdef"));
    let r = s(nr::READ, &[r_ as usize, l.hole - 8, 16]);
    let mut rest = [0u8; 32];
    let n = sys::read(r_, &mut rest);
    println!("# read of a pipe into a buffer 8 bytes before a hole: {r:?}, then {n:?} bytes left");
    check_eq!(r, Err(EFAULT), "read of a pipe into the straddling buffer");
    check_eq!(n, Ok(16), "bytes left in the pipe");
    check_eq!(&rest[..16], b"0123456789abcdef");
    let _ = (sys::close(r_), sys::close(w_));
    Ok(())
}

fn write_from_bad_memory() -> TestResult {
    let l = layout_once()?;
    // SAFETY: the page before the hole is read/write.
    unsafe { core::ptr::copy_nonoverlapping(b"straddle".as_ptr(), (l.hole - 8) as *mut u8, 8) };
    let path = "/tmp/efault-write";
    let fd = t!(sys::openat(
        AT_FDCWD,
        path,
        O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
        0o644
    ));
    let r = s(nr::WRITE, &[fd as usize, l.hole - 8, 16]);
    let size = sys::fstat(fd).map(|st| st.st_size);
    println!("# write to a file from 8 bytes before a hole: {r:?}, size then {size:?}");
    check_eq!(r, Ok(8), "short write to a file");
    check_eq!(size, Ok(8));
    let mut back = [0u8; 8];
    check_eq!(sys::pread(fd, &mut back, 0), Ok(8));
    check_eq!(&back, b"straddle");
    check_eq!(
        s(nr::WRITE, &[fd as usize, l.none, 16]),
        Err(EFAULT),
        "from PROT_NONE"
    );
    check_eq!(sys::fstat(fd).map(|st| st.st_size), Ok(8), "size after it");
    let _ = sys::close(fd);
    let _ = sys::unlinkat(AT_FDCWD, path, 0);
    let [r_, w_] = t!(sys::pipe2(O_CLOEXEC | O_NONBLOCK));
    let r = s(nr::WRITE, &[w_ as usize, l.hole - 8, 16]);
    let mut got = [0u8; 32];
    let n = sys::read(r_, &mut got);
    println!("# write to a pipe from 8 bytes before a hole: {r:?}, then {n:?} bytes in the pipe");
    // Unlike a file, a pipe takes all of a fresh buffer's bytes or none.
    check_eq!(r, Err(EFAULT), "write to a pipe from the straddling buffer");
    check_eq!(n, Err(EAGAIN), "the pipe stays empty");
    let _ = (sys::close(r_), sys::close(w_));
    Ok(())
}

fn failed_stores_leave_nothing() -> TestResult {
    let l = layout_once()?;
    let free = lowest_free_fd();
    // pipe2's two descriptors: into read-only memory, PROT_NONE, and straddling the hole (the
    // first int fits, the second does not).
    for (kind, ptr) in [
        ("read-only", l.ro),
        ("PROT_NONE", l.none),
        ("straddling", l.hole - 4),
    ] {
        check_eq!(s(nr::PIPE2, &[ptr, 0]), Err(EFAULT), "pipe2 into {kind}");
        check_eq!(
            lowest_free_fd(),
            free,
            "the lowest free fd after pipe2 into {kind}"
        );
    }
    check!(ro_page_intact(&l), "pipe2 changed the read-only page");
    // Structures that run into the hole.
    check_eq!(
        s(nr::CLOCK_GETTIME, &[CLOCK_MONOTONIC as usize, l.hole - 8]),
        Err(EFAULT),
        "clock_gettime"
    );
    let fd = t!(sys::open("/etc/hello.txt", O_RDONLY | O_CLOEXEC));
    check_eq!(
        s(nr::FSTAT, &[fd as usize, l.hole - 64]),
        Err(EFAULT),
        "fstat"
    );
    let _ = sys::close(fd);
    check_eq!(s(nr::UNAME, &[l.hole - 100]), Err(EFAULT), "uname");
    check_eq!(s(nr::GETCWD, &[l.hole - 1, 256]), Err(EFAULT), "getcwd");
    let r = s(nr::GETRANDOM, &[l.hole - 8, 16, 0]);
    println!("# getrandom of 16 bytes 8 before a hole: {r:?}");
    check_eq!(r, Ok(8), "getrandom's short count");
    // Paths that run into the hole.
    // SAFETY: the page before the hole is read/write.
    unsafe { core::ptr::copy_nonoverlapping(b"/etc/hel".as_ptr(), (l.hole - 8) as *mut u8, 8) };
    check_eq!(
        s(nr::OPENAT, &[AT_FDCWD as usize, l.hole - 8, 0, 0]),
        Err(EFAULT),
        "openat"
    );
    check_eq!(lowest_free_fd(), free, "the lowest free fd after it all");
    Ok(())
}

static LAYOUT_MADE: AtomicBool = AtomicBool::new(false);

/// The layout, made by the first test that needs it (the address is fixed).
fn layout_once() -> Result<Layout, String> {
    if LAYOUT_MADE.swap(true, Ordering::Relaxed) {
        let base = LAYOUT_BASE;
        return Ok(Layout {
            ro: base + PAGE,
            none: base + 2 * PAGE,
            hole: base + 4 * PAGE,
        });
    }
    layout()
}

fn unknown_syscalls_enosys() -> TestResult {
    for n in [1000usize, 2000, 4000, 0xffff, usize::MAX] {
        check_eq!(sys::syscall(n, &[]), Err(ENOSYS), "syscall {:#x}", n);
    }
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("bad_pointers", bad_pointers_give_efault),
        ("partial_copies_short_count", partial_copies_short_count),
        ("bad_user_memory_efault", bad_user_memory_efault),
        ("read_into_bad_memory", read_into_bad_memory),
        ("write_from_bad_memory", write_from_bad_memory),
        ("failed_stores_leave_nothing", failed_stores_leave_nothing),
        ("unknown_syscalls_enosys", unknown_syscalls_enosys),
    ])
}

entry!(main);
