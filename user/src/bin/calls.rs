//! Calls Debian's programs use, with Linux's semantics: a sleep stopped and continued resumes
//! towards its first deadline (restart_syscall), large reads of /dev/urandom and getrandom
//! come back whole; nice values (getpriority/setpriority), scheduling policies (sched_*),
//! I/O priorities (ioprio_*), setfsuid/setfsgid, the release uname reports, eventfd2,
//! memfd_create, flock and fallocate.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const MS: u64 = 1_000_000;

/// A child sleeps 300 ms (nanosleep, or clock_nanosleep if `clock`); the parent stops it at
/// 100 ms and continues it at 150 ms. Linux resumes the sleep through restart_syscall, towards
/// the first deadline: it returns 0 at 300 ms (a sleep started over would end at 450 ms or
/// later; an EINTR would end at 150 ms).
fn stopped_sleep_resumes(clock: bool) -> TestResult {
    let pid = t!(spawn(move || {
        let t0 = sys::now_ns();
        let req = Timespec::from_ns(300 * MS);
        let r = if clock {
            sys::syscall(
                nr::CLOCK_NANOSLEEP,
                &[CLOCK_MONOTONIC as usize, 0, &req as *const _ as usize, 0],
            )
        } else {
            sys::nanosleep(&req, None)
        };
        let took = (sys::now_ns() - t0) / MS;
        match r {
            Ok(0) if (300..420).contains(&took) => 0,
            Ok(0) if took >= 420 => 2,
            Ok(_) => 3,
            Err(_) => 4,
        }
    }));
    sys::sleep_ns(100 * MS);
    t!(sys::kill(pid, SIGSTOP));
    let (_, st) = t!(sys::waitpid(pid, WUNTRACED));
    check!(wifstopped(st), "{}", describe(st));
    sys::sleep_ns(50 * MS);
    t!(sys::kill(pid, SIGCONT));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(
        wifexited(st) && wexitstatus(st) == 0,
        "{} (2: the sleep started over, 4: it failed, EINTR)",
        describe(st)
    );
    Ok(())
}

fn nanosleep_resumes_after_stop() -> TestResult {
    stopped_sleep_resumes(false)
}

fn clock_nanosleep_resumes_after_stop() -> TestResult {
    stopped_sleep_resumes(true)
}

/// restart_syscall with nothing to restart is EINTR.
fn restart_syscall_alone_is_eintr() -> TestResult {
    check_eq!(sys::syscall(128, &[]), Err(EINTR));
    Ok(())
}

/// Reads of /dev/urandom and getrandom of 1 MiB and 8 MiB return every byte in one call (Linux
/// 7.3 returns 64 MiB whole too; smaller here to keep the run short).
fn large_random_reads_are_whole() -> TestResult {
    const BIG: usize = 8 << 20;
    let buf = t!(sys::mmap_anon(BIG));
    // SAFETY: a fresh private mapping of BIG bytes, used only here.
    let b = unsafe { core::slice::from_raw_parts_mut(buf as *mut u8, BIG) };
    let fd = t!(sys::open("/dev/urandom", O_RDONLY | O_CLOEXEC));
    for len in [1 << 20, BIG] {
        check_eq!(sys::read(fd, &mut b[..len]), Ok(len), "read of {len} bytes");
        check_eq!(
            sys::getrandom(&mut b[..len], 0),
            Ok(len),
            "getrandom of {len}"
        );
    }
    // Not all zero (a fill that stopped early would leave the fresh mapping's zeros).
    check!(b[BIG - 4096..].iter().any(|&x| x != 0));
    t!(sys::close(fd));
    t!(sys::munmap(buf, BIG));
    Ok(())
}

const GETPRIORITY: usize = 141;
const SETPRIORITY: usize = 140;
const SCHED_SETPARAM: usize = 118;
const SCHED_SETSCHEDULER: usize = 119;
const SCHED_GETSCHEDULER: usize = 120;
const SCHED_GETPARAM: usize = 121;
const SCHED_GET_PRIORITY_MAX: usize = 125;
const SCHED_GET_PRIORITY_MIN: usize = 126;
const SCHED_GETATTR: usize = 275;
const IOPRIO_SET: usize = 30;
const IOPRIO_GET: usize = 31;
const SETFSUID: usize = 151;
const SETFSGID: usize = 152;
const SCHED_OTHER: usize = 0;
const SCHED_FIFO: usize = 1;
const SCHED_BATCH: usize = 3;
const SCHED_IDLE: usize = 5;
const SCHED_RESET_ON_FORK: usize = 0x4000_0000;

fn release() -> String {
    let u = sys::uname();
    String::from(sys::field_str(&u.release))
}

/// The release names Linux 7.3, whose ABI Svelt follows.
fn uname_release_is_7_3() -> TestResult {
    let r = release();
    check!(r.starts_with("7.3."), "release {r}");
    Ok(())
}

fn nice() -> SysResult {
    sys::syscall(GETPRIORITY, &[0, 0])
}

fn set_nice(n: i32) -> SysResult {
    sys::syscall(SETPRIORITY, &[0, 0, n as usize])
}

/// Field 19 of /proc/self/stat.
fn stat_nice() -> Result<i64, String> {
    let raw = io::read_file("/proc/self/stat").map_err(|e| format!("{e:?}"))?;
    let text = String::from_utf8(raw).map_err(|_| "stat not UTF-8")?;
    let after = &text[text.rfind(')').ok_or("no )")? + 2..];
    // Fields from 3 (state) on: nice is the 17th of them.
    let f = after.split(' ').nth(16).ok_or("short stat")?;
    f.parse().map_err(|_| format!("nice field {f:?}"))
}

/// getpriority returns 20 - nice; setpriority clamps to -20..=19; a child inherits the value.
fn nice_values() -> TestResult {
    check_eq!(nice(), Ok(20), "nice 0 at the start");
    t!(set_nice(5));
    check_eq!(nice(), Ok(15));
    check_eq!(t!(stat_nice()), 5);
    let st = t!(in_child(|| (nice() == Ok(15)) as i32));
    check!(
        wifexited(st) && wexitstatus(st) == 1,
        "the child's nice value"
    );
    // Root may lower it; values out of range are clamped.
    t!(set_nice(-3));
    check_eq!(nice(), Ok(23));
    t!(set_nice(100));
    check_eq!(nice(), Ok(1));
    t!(set_nice(-100));
    check_eq!(nice(), Ok(40));
    // PRIO_PGRP and PRIO_USER name the caller's group and user with 0.
    check_eq!(sys::syscall(GETPRIORITY, &[1, 0]), Ok(40));
    check!(sys::syscall(GETPRIORITY, &[2, 0]).is_ok());
    check_eq!(sys::syscall(GETPRIORITY, &[3, 0]), Err(EINVAL));
    check_eq!(sys::syscall(GETPRIORITY, &[0, 0x3fff_fff0]), Err(ESRCH));
    t!(set_nice(0));
    check_eq!(nice(), Ok(20));
    Ok(())
}

fn getscheduler() -> SysResult {
    sys::syscall(SCHED_GETSCHEDULER, &[0])
}

fn setscheduler(policy: usize, prio: i32) -> SysResult {
    sys::syscall(
        SCHED_SETSCHEDULER,
        &[0, policy, &prio as *const i32 as usize],
    )
}

/// The normal policies are kept and reported; bad policies and priorities are EINVAL.
fn scheduling_policies() -> TestResult {
    check_eq!(getscheduler(), Ok(SCHED_OTHER));
    t!(setscheduler(SCHED_BATCH, 0));
    check_eq!(getscheduler(), Ok(SCHED_BATCH));
    check_eq!(
        setscheduler(SCHED_OTHER, 1),
        Err(EINVAL),
        "priority for SCHED_OTHER"
    );
    check_eq!(setscheduler(99, 0), Err(EINVAL));
    check_eq!(setscheduler(SCHED_FIFO, 0), Err(EINVAL), "SCHED_FIFO at 0");
    check_eq!(
        sys::syscall(SCHED_SETSCHEDULER, &[0, SCHED_OTHER, 0]),
        Err(EINVAL)
    );
    check_eq!(
        sys::syscall(SCHED_GETSCHEDULER, &[-1i64 as usize]),
        Err(EINVAL)
    );
    check_eq!(sys::syscall(SCHED_GETSCHEDULER, &[0x3fff_fff0]), Err(ESRCH));
    let mut prio = -1i32;
    t!(sys::syscall(
        SCHED_GETPARAM,
        &[0, &mut prio as *mut i32 as usize]
    ));
    check_eq!(prio, 0);
    let one = 1i32;
    check_eq!(
        sys::syscall(SCHED_SETPARAM, &[0, &one as *const i32 as usize]),
        Err(EINVAL)
    );
    // sched_getattr: size, policy, flags, nice.
    t!(set_nice(3));
    let mut attr = [0u8; 56];
    t!(sys::syscall(
        SCHED_GETATTR,
        &[0, attr.as_mut_ptr() as usize, 56, 0]
    ));
    let word = |i: usize| u32::from_ne_bytes(attr[i..i + 4].try_into().unwrap());
    check_eq!(word(0), 56, "sched_attr.size");
    check_eq!(word(4), SCHED_BATCH as u32, "sched_policy");
    check_eq!(word(16) as i32, 3, "sched_nice");
    check_eq!(word(20), 0, "sched_priority");
    check_eq!(
        sys::syscall(SCHED_GETATTR, &[0, attr.as_mut_ptr() as usize, 47, 0]),
        Err(EINVAL)
    );
    check_eq!(
        sys::syscall(SCHED_GETATTR, &[0, attr.as_mut_ptr() as usize, 56, 1]),
        Err(EINVAL)
    );
    t!(set_nice(0));
    // SCHED_RESET_ON_FORK: reported; the child keeps the (normal) policy without the flag,
    // and a nice value of 0 for a negative one.
    t!(setscheduler(SCHED_IDLE | SCHED_RESET_ON_FORK, 0));
    t!(set_nice(-5));
    check_eq!(getscheduler(), Ok(SCHED_IDLE | SCHED_RESET_ON_FORK));
    let st = t!(in_child(
        || (getscheduler() == Ok(SCHED_IDLE) && nice() == Ok(20)) as i32
    ));
    t!(set_nice(0));
    check!(wifexited(st) && wexitstatus(st) == 1, "the child's policy");
    t!(setscheduler(SCHED_OTHER, 0));
    check_eq!(getscheduler(), Ok(SCHED_OTHER));
    for (policy, max, min) in [
        (SCHED_FIFO, 99, 1),
        (2, 99, 1),
        (SCHED_OTHER, 0, 0),
        (SCHED_BATCH, 0, 0),
    ] {
        check_eq!(sys::syscall(SCHED_GET_PRIORITY_MAX, &[policy]), Ok(max));
        check_eq!(sys::syscall(SCHED_GET_PRIORITY_MIN, &[policy]), Ok(min));
    }
    check_eq!(sys::syscall(SCHED_GET_PRIORITY_MAX, &[42]), Err(EINVAL));
    Ok(())
}

fn ioprio_get() -> SysResult {
    sys::syscall(IOPRIO_GET, &[1, 0])
}

fn ioprio_set(v: usize) -> SysResult {
    sys::syscall(IOPRIO_SET, &[1, 0, v])
}

/// With none set, the I/O priority reads 0 (class NONE) whatever the nice value (Linux 7.3);
/// a set one is reported back, and inherited; bad classes and levels are EINVAL.
fn io_priorities() -> TestResult {
    const BE: usize = 2 << 13;
    const IDLE: usize = 3 << 13;
    check_eq!(ioprio_get(), Ok(0));
    t!(set_nice(10));
    check_eq!(ioprio_get(), Ok(0));
    t!(set_nice(0));
    t!(ioprio_set(BE | 2));
    check_eq!(ioprio_get(), Ok(BE | 2));
    let st = t!(in_child(|| (ioprio_get() == Ok(BE | 2)) as i32));
    check!(
        wifexited(st) && wexitstatus(st) == 1,
        "the child's I/O priority"
    );
    t!(ioprio_set(IDLE));
    check_eq!(ioprio_get(), Ok(IDLE));
    check_eq!(ioprio_set(3), Err(EINVAL), "class NONE with a level");
    check_eq!(ioprio_set(5 << 13), Err(EINVAL), "unknown class");
    check_eq!(sys::syscall(IOPRIO_GET, &[0, 0]), Err(EINVAL));
    check_eq!(sys::syscall(IOPRIO_GET, &[1, 0x3fff_fff0]), Err(ESRCH));
    t!(ioprio_set(0));
    check_eq!(ioprio_get(), Ok(0));
    Ok(())
}

/// setfsuid/setfsgid return the old ID whatever happens; -1 only asks.
fn fs_ids() -> TestResult {
    check_eq!(sys::syscall(SETFSUID, &[u32::MAX as usize]), Ok(0));
    check_eq!(sys::syscall(SETFSUID, &[1000]), Ok(0));
    check_eq!(sys::syscall(SETFSUID, &[u32::MAX as usize]), Ok(1000));
    check_eq!(sys::syscall(SETFSUID, &[0]), Ok(1000));
    check_eq!(sys::syscall(SETFSUID, &[u32::MAX as usize]), Ok(0));
    check_eq!(sys::syscall(SETFSGID, &[1000]), Ok(0));
    check_eq!(sys::syscall(SETFSGID, &[0]), Ok(1000));
    check_eq!(sys::syscall(SETFSGID, &[u32::MAX as usize]), Ok(0));
    Ok(())
}

const EVENTFD2: usize = 19;
const MEMFD_CREATE: usize = 279;
const FLOCK: usize = 32;
const FALLOCATE: usize = 47;
const EFD_SEMAPHORE: usize = 1;
const LOCK_SH: usize = 1;
const LOCK_EX: usize = 2;
const LOCK_NB: usize = 4;
const LOCK_UN: usize = 8;

fn eventfd(init: u32, flags: usize) -> SysResult<i32> {
    sys::syscall(EVENTFD2, &[init as usize, flags]).map(|fd| fd as i32)
}

fn read_u64(fd: i32) -> SysResult<u64> {
    let mut b = [0u8; 8];
    sys::read(fd, &mut b)?;
    Ok(u64::from_ne_bytes(b))
}

fn write_u64(fd: i32, v: u64) -> SysResult {
    sys::write(fd, &v.to_ne_bytes())
}

fn poll_now(fd: i32, events: i16) -> SysResult<i16> {
    let mut p = [Pollfd {
        fd,
        events,
        revents: 0,
    }];
    sys::ppoll(&mut p, Some(&Timespec::default()))?;
    Ok(p[0].revents)
}

/// eventfd: reads take the count (or 1 with EFD_SEMAPHORE), writes add; EAGAIN when empty
/// or full (non-blocking), EINVAL for short buffers and 2^64 - 1; poll follows the count; a
/// blocked read wakes for a write from a child.
fn eventfd_counter() -> TestResult {
    let fd = t!(eventfd(3, O_NONBLOCK as usize | O_CLOEXEC as usize));
    check_eq!(poll_now(fd, POLLIN | POLLOUT), Ok(POLLIN | POLLOUT));
    check_eq!(read_u64(fd), Ok(3));
    check_eq!(read_u64(fd), Err(EAGAIN));
    check_eq!(poll_now(fd, POLLIN | POLLOUT), Ok(POLLOUT));
    check_eq!(write_u64(fd, 5), Ok(8));
    check_eq!(write_u64(fd, 7), Ok(8));
    check_eq!(read_u64(fd), Ok(12));
    check_eq!(write_u64(fd, u64::MAX), Err(EINVAL));
    check_eq!(sys::write(fd, &[1, 0, 0, 0]), Err(EINVAL));
    let mut small = [0u8; 4];
    check_eq!(sys::read(fd, &mut small), Err(EINVAL));
    check_eq!(write_u64(fd, u64::MAX - 1), Ok(8));
    check_eq!(write_u64(fd, 1), Err(EAGAIN), "past the largest count");
    check_eq!(poll_now(fd, POLLIN | POLLOUT), Ok(POLLIN));
    check_eq!(read_u64(fd), Ok(u64::MAX - 1));
    t!(sys::close(fd));
    check_eq!(eventfd(0, 0x100), Err(EINVAL));
    // Semaphore mode: one at a time.
    let fd = t!(eventfd(
        2,
        EFD_SEMAPHORE | O_NONBLOCK as usize | O_CLOEXEC as usize
    ));
    check_eq!(read_u64(fd), Ok(1));
    check_eq!(read_u64(fd), Ok(1));
    check_eq!(read_u64(fd), Err(EAGAIN));
    t!(sys::close(fd));
    // A blocking read waits for a child's write.
    let fd = t!(eventfd(0, O_CLOEXEC as usize));
    let pid = t!(spawn(move || {
        sys::sleep_ns(50 * MS);
        (write_u64(fd, 42) != Ok(8)) as i32
    }));
    check_eq!(read_u64(fd), Ok(42));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    let mut link = [0u8; 64];
    let n = t!(sys::readlinkat(
        AT_FDCWD,
        &format!("/proc/self/fd/{fd}"),
        &mut link
    ));
    check_eq!(&link[..n], b"anon_inode:[eventfd]");
    t!(sys::close(fd));
    Ok(())
}

/// memfd_create: a read-write regular file in no directory; /proc names it
/// `/memfd:NAME (deleted)`; bad flags and long names are EINVAL.
fn memfd_files() -> TestResult {
    let name = CPath::new("calls-memfd");
    let fd = t!(sys::syscall(MEMFD_CREATE, &[name.ptr(), 1])) as i32;
    check_eq!(sys::fcntl(fd, F_GETFD, 0), Ok(1), "MFD_CLOEXEC");
    let st = t!(sys::fstat(fd));
    check_eq!(st.st_mode, S_IFREG | 0o777);
    check_eq!(st.st_size, 0);
    check_eq!(sys::write(fd, b"memfd bytes"), Ok(11));
    let mut b = [0u8; 16];
    check_eq!(sys::pread(fd, &mut b, 0), Ok(11));
    check_eq!(&b[..11], b"memfd bytes");
    t!(sys::ftruncate(fd, 8192));
    check_eq!(t!(sys::fstat(fd)).st_size, 8192);
    let mut link = [0u8; 64];
    let n = t!(sys::readlinkat(
        AT_FDCWD,
        &format!("/proc/self/fd/{fd}"),
        &mut link
    ));
    check_eq!(&link[..n], b"/memfd:calls-memfd (deleted)");
    t!(sys::close(fd));
    check_eq!(
        sys::syscall(MEMFD_CREATE, &[name.ptr(), 0x100]),
        Err(EINVAL)
    );
    check_eq!(
        sys::syscall(MEMFD_CREATE, &[name.ptr(), 0x18]),
        Err(EINVAL),
        "NOEXEC_SEAL and EXEC"
    );
    let long = CPath::new(&"x".repeat(250));
    check_eq!(sys::syscall(MEMFD_CREATE, &[long.ptr(), 0]), Err(EINVAL));
    check_eq!(sys::syscall(MEMFD_CREATE, &[0, 0]), Err(EFAULT));
    Ok(())
}

fn flock(fd: i32, op: usize) -> SysResult {
    sys::syscall(FLOCK, &[fd as usize, op])
}

/// flock: locks belong to open file descriptions (a second open conflicts, a dup does not);
/// shared locks coexist, exclusive ones do not; LOCK_NB gives EWOULDBLOCK; the last close
/// drops the lock; a blocked LOCK_EX waits for LOCK_UN in another process.
fn flock_locks() -> TestResult {
    let path = format!("/tmp/calls-flock-{}", sys::getpid());
    let a = t!(sys::openat(
        AT_FDCWD,
        &path,
        O_RDWR | O_CREAT | O_CLOEXEC,
        0o600
    ));
    let b = t!(sys::open(&path, O_RDONLY | O_CLOEXEC));
    t!(flock(a, LOCK_EX));
    check_eq!(flock(b, LOCK_SH | LOCK_NB), Err(EAGAIN));
    check_eq!(flock(b, LOCK_EX | LOCK_NB), Err(EAGAIN));
    // A dup shares the lock: asking again through it succeeds.
    let a2 = t!(sys::dup(a));
    t!(flock(a2, LOCK_EX | LOCK_NB));
    // Converted to shared: the other open may share it.
    t!(flock(a, LOCK_SH));
    t!(flock(b, LOCK_SH | LOCK_NB));
    check_eq!(flock(a, LOCK_EX | LOCK_NB), Err(EAGAIN));
    t!(flock(b, LOCK_UN));
    t!(flock(b, LOCK_UN));
    // Closing one of two descriptors keeps the lock; the last close drops it.
    t!(flock(a, LOCK_EX));
    t!(sys::close(a));
    check_eq!(flock(b, LOCK_SH | LOCK_NB), Err(EAGAIN));
    t!(sys::close(a2));
    t!(flock(b, LOCK_EX | LOCK_NB));
    check_eq!(flock(b, 0), Err(EINVAL));
    check_eq!(flock(b, LOCK_SH | LOCK_EX), Err(EINVAL));
    // Another process waits for the lock until this one lets go.
    let p2 = path.clone();
    let pid = t!(spawn(move || {
        let Ok(fd) = sys::open(&p2, O_RDONLY) else {
            return 2;
        };
        if flock(fd, LOCK_EX | LOCK_NB) != Err(EAGAIN) {
            return 3;
        }
        let t0 = sys::now_ns();
        if flock(fd, LOCK_EX).is_err() {
            return 4;
        }
        (sys::now_ns() - t0 < 50 * MS) as i32 * 5
    }));
    sys::sleep_ns(100 * MS);
    t!(flock(b, LOCK_UN));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    t!(sys::close(b));
    check_eq!(flock(b, LOCK_SH), Err(EBADF));
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    Ok(())
}

fn fallocate(fd: i32, mode: usize, off: u64, len: u64) -> SysResult {
    sys::syscall(FALLOCATE, &[fd as usize, mode, off as usize, len as usize])
}

/// fallocate on tmpfs: mode 0 grows the file, KEEP_SIZE does not, PUNCH_HOLE|KEEP_SIZE zeroes;
/// Linux's errors for bad ranges, modes and files.
fn fallocate_tmpfs() -> TestResult {
    let path = format!("/tmp/calls-falloc-{}", sys::getpid());
    let fd = t!(sys::openat(
        AT_FDCWD,
        &path,
        O_RDWR | O_CREAT | O_CLOEXEC,
        0o600
    ));
    t!(fallocate(fd, 0, 0, 10000));
    check_eq!(t!(sys::fstat(fd)).st_size, 10000);
    t!(fallocate(fd, 1, 0, 50000));
    check_eq!(t!(sys::fstat(fd)).st_size, 10000, "KEEP_SIZE");
    t!(fallocate(fd, 0, 4000, 100));
    check_eq!(t!(sys::fstat(fd)).st_size, 10000, "inside the file");
    check_eq!(sys::pwrite(fd, &[0xaa; 100], 0), Ok(100));
    t!(fallocate(fd, 3, 10, 20));
    let mut b = [0u8; 100];
    check_eq!(sys::pread(fd, &mut b, 0), Ok(100));
    check!(b[..10].iter().all(|&x| x == 0xaa) && b[10..30].iter().all(|&x| x == 0));
    check!(b[30..].iter().all(|&x| x == 0xaa), "punched past the hole");
    check_eq!(t!(sys::fstat(fd)).st_size, 10000);
    check_eq!(
        fallocate(fd, 2, 0, 10),
        Err(EOPNOTSUPP),
        "PUNCH_HOLE without KEEP_SIZE"
    );
    check_eq!(fallocate(fd, 0x10, 0, 10), Err(EOPNOTSUPP), "ZERO_RANGE");
    check_eq!(fallocate(fd, 0, 0, 0), Err(EINVAL));
    check_eq!(fallocate(fd, 0, -1i64 as u64, 10), Err(EINVAL));
    t!(sys::close(fd));
    let ro = t!(sys::open(&path, O_RDONLY | O_CLOEXEC));
    check_eq!(fallocate(ro, 0, 0, 10), Err(EBADF));
    t!(sys::close(ro));
    let [r, w] = t!(sys::pipe2(O_CLOEXEC));
    check_eq!(fallocate(w, 0, 0, 10), Err(ESPIPE));
    t!(sys::close(r));
    t!(sys::close(w));
    t!(sys::unlinkat(AT_FDCWD, &path, 0));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    svelt_user::proc::mount_when_init();
    ktap::run(&[
        ("nanosleep_resumes_after_stop", nanosleep_resumes_after_stop),
        (
            "clock_nanosleep_resumes_after_stop",
            clock_nanosleep_resumes_after_stop,
        ),
        (
            "restart_syscall_alone_is_eintr",
            restart_syscall_alone_is_eintr,
        ),
        ("large_random_reads_are_whole", large_random_reads_are_whole),
        ("uname_release_is_7_3", uname_release_is_7_3),
        ("nice_values", nice_values),
        ("scheduling_policies", scheduling_policies),
        ("io_priorities", io_priorities),
        ("fs_ids", fs_ids),
        ("eventfd_counter", eventfd_counter),
        ("memfd_files", memfd_files),
        ("flock_locks", flock_locks),
        ("fallocate_tmpfs", fallocate_tmpfs),
    ])
}

entry!(main);
