//! Bad pointers and bad syscall numbers: every pointer-taking call handed 0x1 (low, unmapped)
//! and 0xffff000000000000 (the kernel half) fails with exactly what Linux returns (EFAULT in
//! most cases) without killing the caller; unknown syscall numbers return ENOSYS.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const BAD: [usize; 2] = [0x1, 0xffff_0000_0000_0000];

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
    const PAGE: usize = 4096;
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
    let fd = t!(sys::open(
        "/tmp/efault_partial",
        O_RDWR | O_CREAT | O_TRUNC
    ));
    let _ = sys::unlinkat(AT_FDCWD, "/tmp/efault_partial", 0);
    check_eq!(sys::write(fd, &[7u8; 200]), Ok(200), "filling the file");
    check_eq!(sys::lseek(fd, 0, SEEK_SET), Ok(0), "rewinding");
    check_eq!(
        s(nr::READ, &[fd as usize, buf, 100]),
        Ok(40),
        "read into a buffer ending 40 bytes before a hole"
    );
    check_eq!(sys::lseek(fd, 0, SEEK_CUR), Ok(40), "offset after the short read");
    check_eq!(
        s(nr::WRITE, &[fd as usize, buf - 24, 100]),
        Ok(64),
        "write from a buffer ending 64 bytes before a hole"
    );
    check_eq!(sys::lseek(fd, 0, SEEK_CUR), Ok(104), "offset after the short write");
    let _ = sys::close(fd);
    let _ = sys::munmap(base, PAGE);
    Ok(())
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
        ("unknown_syscalls_enosys", unknown_syscalls_enosys),
    ])
}

entry!(main);
