//! Calls Svelt once answered ENOSYS, with Linux's semantics and errors: chroot, unshare,
//! copy_file_range, clone3; the per-CPU topology in /sys.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::SIGCHLD;
use svelt_user::sys::*;
use svelt_user::*;

fn chroot(path: &str) -> SysResult {
    let p = CPath::new(path);
    sys::syscall(nr::CHROOT, &[p.ptr()])
}

fn cwd() -> String {
    let mut b = [0u8; 256];
    match sys::getcwd(&mut b) {
        Ok(n) => String::from_utf8_lossy(&b[..n.saturating_sub(1)]).into_owned(),
        Err(e) => format!("error {e:?}"),
    }
}

/// chroot: absolute paths and `..` stop at the new root; the cwd stays where it was (outside:
/// getcwd shows "(unreachable)"); lookup errors come first, then search permission (EACCES),
/// then the capability (EPERM for a non-root caller).
fn chroot_root() -> TestResult {
    let dir = format!("/tmp/missing-chroot-{}", sys::getpid());
    t!(sys::mkdirat(AT_FDCWD, &dir, 0o755));
    t!(sys::mkdirat(AT_FDCWD, &format!("{dir}/sub"), 0o755));
    t!(sys::mkdirat(AT_FDCWD, &format!("{dir}/priv"), 0o700));
    t!(io::write_file(&format!("{dir}/f"), b"inside", 0o644));
    let d = dir.clone();
    let r = in_child_test(move || {
        t!(sys::chdir("/"));
        check_eq!(chroot("/nonexistent-dir"), Err(ENOENT));
        check_eq!(chroot(&format!("{d}/f")), Err(ENOTDIR));
        check_eq!(chroot(&format!("{d}/f/x")), Err(ENOTDIR));
        t!(chroot(&d));
        check_eq!(cwd(), "(unreachable)/");
        t!(sys::chdir("/"));
        check_eq!(cwd(), "/");
        check_eq!(io::read_file("/f"), Ok(b"inside".to_vec()));
        t!(sys::chdir("sub"));
        check_eq!(cwd(), "/sub");
        t!(sys::chdir("../../.."));
        check_eq!(cwd(), "/");
        check_eq!(io::read_file("/../../f"), Ok(b"inside".to_vec()));
        check_eq!(io::read_file("../sub/../f"), Ok(b"inside".to_vec()));
        // A second chroot is relative to the first.
        t!(chroot("sub"));
        check_eq!(cwd(), format!("(unreachable){d}"));
        t!(sys::chdir("/"));
        check!(io::read_file("/f").is_err());
        Ok(())
    });
    let d = dir.clone();
    let r2 = in_child_test(move || {
        t!(sys::setuid(1000));
        check_eq!(chroot("/nonexistent-dir"), Err(ENOENT));
        check_eq!(chroot(&format!("{d}/priv")), Err(EACCES));
        check_eq!(chroot("/"), Err(EPERM));
        check_eq!(chroot(&d), Err(EPERM));
        Ok(())
    });
    let _ = sys::unlinkat(AT_FDCWD, &format!("{dir}/f"), 0);
    for s in ["sub", "priv"] {
        let _ = sys::unlinkat(AT_FDCWD, &format!("{dir}/{s}"), AT_REMOVEDIR);
    }
    let _ = sys::unlinkat(AT_FDCWD, &dir, AT_REMOVEDIR);
    r?;
    r2
}

fn unshare(flags: usize) -> SysResult {
    sys::syscall(nr::UNSHARE, &[flags])
}

const CLONE_NEWNS: usize = 0x2_0000;
const CLONE_NEWUTS: usize = 0x400_0000;
const CLONE_NEWIPC: usize = 0x800_0000;
const CLONE_NEWNET: usize = 0x4000_0000;

/// A child made by the raw clone with `flags` (no CLONE_VM: it runs on its copy of the
/// stack) that runs `f` and exits with its result; returns its exit status.
fn clone_child(flags: usize, f: impl FnOnce() -> i32) -> SysResult<i32> {
    match sys::syscall(nr::CLONE, &[flags | SIGCHLD as usize, 0, 0, 0, 0])? {
        0 => sys::exit_group(f()),
        pid => {
            let (_, st) = sys::waitpid(pid as i32, 0)?;
            Ok(if wifexited(st) { wexitstatus(st) } else { -1 })
        }
    }
}

/// unshare: 0 does nothing; unknown bits are EINVAL; CLONE_FILES and CLONE_FS give the caller
/// its own descriptor table and cwd (a process made with CLONE_FILES / CLONE_FS stops seeing
/// the other's changes); undoing thread sharing is a no-op alone, EINVAL with a second
/// thread; namespaces need CAP_SYS_ADMIN (EPERM for a non-root caller).
fn unshare_flags() -> TestResult {
    check_eq!(unshare(0), Ok(0));
    for bad in [0x1, CLONE_VFORK, 0x1000, 0x8000, 0x40_0000, 1 << 32] {
        check_eq!(unshare(bad), Err(EINVAL), "flags {bad:#x}");
    }
    check_eq!(unshare(CLONE_SYSVSEM), Ok(0));
    // Descriptors: a shared table shows the child's open; an unshared one does not.
    for (unshared, want) in [(false, Ok(0)), (true, Err(EBADF))] {
        let fd = t!(clone_child(CLONE_FILES, || {
            if unshared && unshare(CLONE_FILES).is_err() {
                return 255;
            }
            sys::open("/dev/null", O_RDONLY).unwrap_or(254)
        }));
        check!(fd < 250, "child: {fd}");
        check_eq!(sys::fcntl(fd, F_GETFD, 0), want, "unshared {unshared}");
        let _ = sys::close(fd);
    }
    // The cwd: shared, the child's chdir moves the parent too; unshared, it does not.
    for (unshared, want) in [(false, "/proc"), (true, "/")] {
        t!(sys::chdir("/"));
        let st = t!(clone_child(CLONE_FS, || {
            if unshared && unshare(CLONE_FS).is_err() {
                return 1;
            }
            sys::chdir("/proc").map_or(2, |_| 0)
        }));
        check_eq!(st, 0);
        check_eq!(cwd(), want, "unshared {unshared}");
    }
    t!(sys::chdir("/"));
    in_child_test(|| {
        for f in [
            CLONE_THREAD,
            CLONE_SIGHAND,
            CLONE_VM,
            CLONE_FS | CLONE_FILES,
        ] {
            check_eq!(unshare(f), Ok(0), "flags {f:#x}");
        }
        extern "C" fn linger(_: usize) -> i32 {
            sys::sleep_ns(300_000_000);
            0
        }
        let th = t!(spawn_thread(linger, 0, tpidr_el0()));
        for f in [CLONE_THREAD, CLONE_SIGHAND, CLONE_VM] {
            check_eq!(unshare(f), Err(EINVAL), "flags {f:#x} with a second thread");
        }
        check_eq!(unshare(CLONE_FILES), Ok(0));
        th.join();
        t!(sys::setuid(1000));
        for f in [CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWNET] {
            check_eq!(unshare(f), Err(EPERM), "flags {f:#x} as uid 1000");
        }
        Ok(())
    })
}

fn cfr(
    fd_in: i32,
    off_in: Option<&mut i64>,
    fd_out: i32,
    off_out: Option<&mut i64>,
    len: usize,
    flags: usize,
) -> SysResult {
    let p = |o: Option<&mut i64>| o.map_or(0, |r| r as *mut i64 as usize);
    sys::syscall(
        nr::COPY_FILE_RANGE,
        &[
            fd_in as usize,
            p(off_in),
            fd_out as usize,
            p(off_out),
            len,
            flags,
        ],
    )
}

fn contents(fd: i32) -> Vec<u8> {
    let mut b = [0u8; 64];
    let n = sys::pread(fd, &mut b, 0).unwrap_or(0);
    b[..n].to_vec()
}

/// copy_file_range between tmpfs files: NULL offsets use and move the file positions, given
/// offsets are updated instead; the copy stops at the input's end (0 there); Linux's errors
/// for flags, bad descriptors, directories, pipes, O_APPEND, negative offsets and overlapping
/// ranges in one file.
fn copy_file_range_files() -> TestResult {
    let base = format!("/tmp/missing-cfr-{}", sys::getpid());
    let (a, b) = (format!("{base}-a"), format!("{base}-b"));
    t!(io::write_file(&a, b"0123456789", 0o644));
    let src = t!(sys::openat(AT_FDCWD, &a, O_RDWR | O_CLOEXEC, 0));
    let dst = t!(sys::openat(
        AT_FDCWD,
        &b,
        O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
        0o644
    ));
    let wo = t!(sys::openat(AT_FDCWD, &a, O_WRONLY | O_CLOEXEC, 0));
    let ro = t!(sys::openat(AT_FDCWD, &b, O_RDONLY | O_CLOEXEC, 0));
    let app = t!(sys::openat(
        AT_FDCWD,
        &b,
        O_WRONLY | O_APPEND | O_CLOEXEC,
        0
    ));
    let dir = t!(sys::openat(
        AT_FDCWD,
        "/tmp",
        O_RDONLY | O_DIRECTORY | O_CLOEXEC,
        0
    ));
    let [pr, pw] = t!(sys::pipe2(O_CLOEXEC));

    check_eq!(cfr(src, None, dst, None, 4, 1), Err(EINVAL));
    check_eq!(cfr(999, None, dst, None, 4, 0), Err(EBADF));
    check_eq!(cfr(src, None, 999, None, 4, 0), Err(EBADF));
    check_eq!(cfr(wo, None, dst, None, 4, 0), Err(EBADF));
    check_eq!(cfr(src, None, ro, None, 4, 0), Err(EBADF));
    check_eq!(cfr(src, None, app, None, 4, 0), Err(EBADF));
    check_eq!(cfr(dir, None, dst, None, 4, 0), Err(EISDIR));
    check_eq!(cfr(src, None, dir, None, 4, 0), Err(EISDIR));
    check_eq!(cfr(pr, None, dst, None, 4, 0), Err(EINVAL));
    check_eq!(cfr(src, None, pw, None, 4, 0), Err(EINVAL));
    // A negative offset whose sum with the length wraps is EOVERFLOW, any other EINVAL.
    let mut neg = -1i64;
    check_eq!(
        cfr(src, Some(&mut neg), dst, None, 4, 0),
        Err(Errno(75)),
        "EOVERFLOW"
    );
    let mut neg = -100i64;
    check_eq!(cfr(src, Some(&mut neg), dst, None, 4, 0), Err(EINVAL));
    check_eq!(cfr(src, None, dst, Some(&mut neg), 4, 0), Err(EINVAL));
    check_eq!(cfr(src, None, dst, None, 0, 0), Ok(0));

    // File positions: both move by what was copied.
    check_eq!(cfr(src, None, dst, None, 4, 0), Ok(4));
    check_eq!(sys::lseek(src, 0, 1), Ok(4));
    check_eq!(sys::lseek(dst, 0, 1), Ok(4));
    check_eq!(contents(dst), b"0123".to_vec());
    // Given offsets move instead; a copy past the end is cut there, then returns 0.
    let (mut oi, mut oo) = (8i64, 2i64);
    check_eq!(cfr(src, Some(&mut oi), dst, Some(&mut oo), 100, 0), Ok(2));
    check_eq!((oi, oo), (10, 4));
    check_eq!(sys::lseek(src, 0, 1), Ok(4));
    check_eq!(sys::lseek(dst, 0, 1), Ok(4));
    check_eq!(contents(dst), b"0189".to_vec());
    check_eq!(cfr(src, Some(&mut oi), dst, Some(&mut oo), 100, 0), Ok(0));
    check_eq!((oi, oo), (10, 4));
    // One file: overlapping ranges are EINVAL, disjoint ones copy (and grow the file).
    let (mut x, mut y) = (0i64, 5i64);
    check_eq!(cfr(src, Some(&mut x), src, Some(&mut y), 6, 0), Err(EINVAL));
    let (mut x, mut y) = (0i64, 10i64);
    check_eq!(cfr(src, Some(&mut x), src, Some(&mut y), 5, 0), Ok(5));
    check_eq!(contents(src), b"012345678901234".to_vec());
    // The overlap is judged on the length cut at the end: 10..15 to 0.. overlaps nothing.
    let (mut x, mut y) = (10i64, 0i64);
    check_eq!(cfr(src, Some(&mut x), src, Some(&mut y), 100, 0), Ok(5));

    for fd in [src, dst, wo, ro, app, dir, pr, pw] {
        let _ = sys::close(fd);
    }
    let _ = sys::unlinkat(AT_FDCWD, &a, 0);
    let _ = sys::unlinkat(AT_FDCWD, &b, 0);
    Ok(())
}

/// struct clone_args, with room past its 88 bytes for the larger-struct cases.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
    tail: [u64; 2],
}

fn clone3(a: &CloneArgs, size: usize) -> SysResult {
    sys::syscall(nr::CLONE3, &[a as *const CloneArgs as usize, size])
}

const CLONE_PIDFD: u64 = 0x1000;

/// clone3 as a fork (no CLONE_VM, the child goes on with its copy of this stack): the sizes it
/// takes (64, 80, 88, larger with a zero tail), E2BIG past a page or for a non-zero tail,
/// EINVAL below 64 bytes, for unknown flags, the exit signal in the flags or above 255, a
/// stack without a size; CLONE_PARENT_SETTID, CLONE_CHILD_SETTID and CLONE_PIDFD (a
/// close-on-exec descriptor) stored where asked.
fn clone3_fork() -> TestResult {
    let base = CloneArgs {
        exit_signal: SIGCHLD as u64,
        ..Default::default()
    };
    check_eq!(clone3(&base, 63), Err(EINVAL));
    check_eq!(clone3(&base, 4097), Err(E2BIG));
    let mut a = base;
    a.tail[1] = 1;
    check_eq!(clone3(&a, 104), Err(E2BIG));
    for (flags, sig) in [(1u64 << 40, 17u64), (17, 0), (0, 0x100), (0, 65)] {
        let a = CloneArgs {
            flags,
            exit_signal: sig,
            ..Default::default()
        };
        check_eq!(clone3(&a, 88), Err(EINVAL), "flags {flags:#x} signal {sig}");
    }
    let mut a = base;
    a.stack = 0x1000;
    check_eq!(clone3(&a, 88), Err(EINVAL), "stack without a size");
    // Every accepted size forks.
    for size in [64usize, 80, 88, 104] {
        let pid = match t!(clone3(&base, size)) {
            0 => sys::exit_group(size as i32),
            pid => pid as i32,
        };
        let (_, st) = t!(sys::waitpid(pid, 0));
        check!(
            wifexited(st) && wexitstatus(st) == size as i32,
            "size {size}: {}",
            describe(st)
        );
    }
    let mut ptid = 0u32;
    let mut ctid = 0u32;
    let mut pidfd = -1i32;
    let a = CloneArgs {
        flags: (CLONE_PARENT_SETTID | CLONE_CHILD_SETTID) as u64 | CLONE_PIDFD,
        parent_tid: &mut ptid as *mut u32 as u64,
        child_tid: &mut ctid as *mut u32 as u64,
        pidfd: &mut pidfd as *mut i32 as u64,
        exit_signal: SIGCHLD as u64,
        ..Default::default()
    };
    let pid = match t!(clone3(&a, 88)) {
        // SAFETY: this process's own copy of the word, written by the kernel before it ran.
        0 => sys::exit_group(
            if unsafe { core::ptr::read_volatile(&ctid) } == sys::gettid() as u32 {
                0
            } else {
                1
            },
        ),
        pid => pid as i32,
    };
    // SAFETY: written by the kernel before clone3 returned.
    let (p, c, fd) = unsafe {
        (
            core::ptr::read_volatile(&ptid),
            core::ptr::read_volatile(&ctid),
            core::ptr::read_volatile(&pidfd),
        )
    };
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(
        wifexited(st) && wexitstatus(st) == 0,
        "CLONE_CHILD_SETTID: {}",
        describe(st)
    );
    check_eq!(p, pid as u32, "CLONE_PARENT_SETTID");
    check_eq!(c, 0, "CLONE_CHILD_SETTID writes the child's memory only");
    check!(fd >= 0, "pidfd {fd}");
    check_eq!(sys::fcntl(fd, F_GETFD, 0), Ok(1), "pidfd close-on-exec");
    t!(sys::close(fd));
    Ok(())
}

/// Per-CPU topology under /sys/devices/system/cpu as Linux 7.3 shows it on QEMU's virt
/// board: each CPU its own core, all of them in one cluster and one package (masks in hex,
/// lists as ranges), so lscpu counts 1 thread per core, N cores per socket, 1 socket.
fn cpu_topology() -> TestResult {
    let _ = sys::mkdirat(AT_FDCWD, "/sys", 0o755);
    let _ = sys::mount("sysfs", "/sys", "sysfs", 0);
    let possible = t!(io::read_file("/sys/devices/system/cpu/possible"));
    let possible = String::from_utf8_lossy(&possible).into_owned();
    let n = match possible.trim().split_once('-') {
        Some((_, hi)) => hi.parse::<usize>().unwrap_or(0) + 1,
        None => 1,
    };
    check!(
        n <= 4,
        "{n} CPUs: the masks below are written for at most 4"
    );
    let all_list = if n == 1 {
        "0".into()
    } else {
        format!("0-{}", n - 1)
    };
    let all_hex = format!("{:x}", (1u32 << n) - 1);
    for cpu in 0..n {
        let own_hex = format!("{:x}", 1u32 << cpu);
        let own_list = format!("{cpu}");
        let cpu_s = format!("{cpu}");
        for (file, want) in [
            ("core_id", &cpu_s),
            ("cluster_id", &"0".into()),
            ("physical_package_id", &"0".into()),
            ("thread_siblings", &own_hex),
            ("thread_siblings_list", &own_list),
            ("core_cpus", &own_hex),
            ("core_cpus_list", &own_list),
            ("core_siblings", &all_hex),
            ("core_siblings_list", &all_list),
            ("cluster_cpus", &all_hex),
            ("cluster_cpus_list", &all_list),
            ("package_cpus", &all_hex),
            ("package_cpus_list", &all_list),
        ] {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/{file}");
            let got = t!(io::read_file(&path));
            check_eq!(String::from_utf8_lossy(&got), format!("{want}\n"), "{path}");
        }
    }
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    svelt_user::proc::mount_when_init();
    ktap::run(&[
        ("chroot_root", chroot_root),
        ("unshare_flags", unshare_flags),
        ("copy_file_range_files", copy_file_range_files),
        ("clone3_fork", clone3_fork),
        ("cpu_topology", cpu_topology),
    ])
}

entry!(main);
