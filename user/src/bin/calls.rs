//! Calls Debian's programs use, with Linux's semantics: a sleep stopped and continued resumes
//! towards its first deadline (restart_syscall), large reads of /dev/urandom and getrandom
//! come back whole; nice values (getpriority/setpriority), scheduling policies (sched_*),
//! I/O priorities (ioprio_*), setfsuid/setfsgid, and the release uname reports.
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

/// As the first process (a lone boot), mounts what the tests use: /dev, /proc and /tmp.
fn mount_when_init() {
    if sys::getpid() != 1 {
        return;
    }
    for (target, fstype) in [("/dev", "devtmpfs"), ("/proc", "proc"), ("/tmp", "tmpfs")] {
        let _ = sys::mkdirat(AT_FDCWD, target, 0o755);
        let _ = sys::mount(fstype, target, fstype, 0);
    }
}

fn main(_a: &rt::Args) -> i32 {
    mount_when_init();
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
    ])
}

entry!(main);
