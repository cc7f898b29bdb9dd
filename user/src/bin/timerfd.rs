//! timerfd_create/settime/gettime: timers whose expirations a read returns as a u64 count
//! (EAGAIN when non-blocking and none, a wait otherwise, EINVAL for a buffer under 8 bytes);
//! relative and absolute (TFD_TIMER_ABSTIME) one-shot and interval timers on CLOCK_MONOTONIC,
//! CLOCK_REALTIME and CLOCK_BOOTTIME (and, for root, the _ALARM clocks); the old setting
//! returned by settime; poll and epoll readiness; TFD_TIMER_CANCEL_ON_SET (a setting of the
//! clock makes the next read ECANCELED); TFD_IOC_SET_TICKS; Linux's errors.
#![no_std]
#![no_main]

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sys::*;
use svelt_user::*;

const MS: u64 = 1_000_000;
const TIMERFD_CREATE: usize = 85;
const TIMERFD_SETTIME: usize = 86;
const TIMERFD_GETTIME: usize = 87;
const TFD_NONBLOCK: u32 = O_NONBLOCK;
const TFD_CLOEXEC: u32 = O_CLOEXEC;
const TFD_TIMER_ABSTIME: u32 = 1;
const TFD_TIMER_CANCEL_ON_SET: u32 = 2;
const TFD_IOC_SET_TICKS: usize = 0x4008_5400;
const CLOCK_MONOTONIC_RAW: u32 = 4;
const CLOCK_REALTIME_ALARM: u32 = 8;
const CLOCK_BOOTTIME_ALARM: u32 = 9;

#[repr(C)]
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
struct Itimerspec {
    interval: Timespec,
    value: Timespec,
}

fn its(value_ns: u64, interval_ns: u64) -> Itimerspec {
    Itimerspec {
        interval: Timespec::from_ns(interval_ns),
        value: Timespec::from_ns(value_ns),
    }
}

fn create(clock: u32, flags: u32) -> SysResult<i32> {
    sys::syscall(TIMERFD_CREATE, &[clock as usize, flags as usize]).map(|fd| fd as i32)
}

/// Sets `fd`; returns the old setting.
fn settime(fd: i32, flags: u32, new: Itimerspec) -> SysResult<Itimerspec> {
    let mut old = Itimerspec::default();
    sys::syscall(
        TIMERFD_SETTIME,
        &[
            fd as usize,
            flags as usize,
            &new as *const Itimerspec as usize,
            &mut old as *mut Itimerspec as usize,
        ],
    )
    .map(|_| old)
}

fn gettime(fd: i32) -> SysResult<Itimerspec> {
    let mut cur = Itimerspec::default();
    sys::syscall(
        TIMERFD_GETTIME,
        &[fd as usize, &mut cur as *mut Itimerspec as usize],
    )
    .map(|_| cur)
}

fn read_count(fd: i32) -> SysResult<u64> {
    let mut b = [0u8; 8];
    sys::read(fd, &mut b)?;
    Ok(u64::from_ne_bytes(b))
}

fn poll_ms(fd: i32, ms: u64) -> SysResult<i16> {
    let mut p = [Pollfd {
        fd,
        events: POLLIN,
        revents: 0,
    }];
    sys::ppoll(&mut p, Some(&Timespec::from_ns(ms * MS)))?;
    Ok(p[0].revents)
}

fn now(clock: u32) -> SysResult<u64> {
    sys::clock_gettime(clock).map(|t| t.ns())
}

/// Bad clocks, flags, settings and descriptors; a fresh timer is disarmed, named
/// `anon_inode:[timerfd]`, and takes no writes.
fn errors_and_a_fresh_timer() -> TestResult {
    for c in [
        CLOCK_PROCESS_CPUTIME_ID,
        CLOCK_THREAD_CPUTIME_ID,
        CLOCK_MONOTONIC_RAW,
        99,
    ] {
        check_eq!(create(c, 0), Err(EINVAL), "clock {c}");
    }
    check_eq!(create(CLOCK_MONOTONIC, 1), Err(EINVAL), "flags");
    let fd = t!(create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    check_eq!(sys::fcntl(fd, F_GETFD, 0), Ok(1), "TFD_CLOEXEC");
    check!(
        t!(sys::fcntl(fd, F_GETFL, 0)) as u32 & (O_NONBLOCK | 3) == O_NONBLOCK | O_RDWR,
        "O_RDWR | O_NONBLOCK"
    );
    let mut link = [0u8; 64];
    let n = t!(sys::readlinkat(
        AT_FDCWD,
        &format!("/proc/self/fd/{fd}"),
        &mut link
    ));
    check_eq!(&link[..n], b"anon_inode:[timerfd]");
    check_eq!(gettime(fd), Ok(Itimerspec::default()));
    check_eq!(read_count(fd), Err(EAGAIN));
    let mut short = [0u8; 7];
    check_eq!(sys::read(fd, &mut short), Err(EINVAL));
    check_eq!(sys::write(fd, &[0u8; 8]), Err(EINVAL));
    check_eq!(settime(fd, 4, its(MS, 0)), Err(EINVAL), "settime flags");
    let bad = Itimerspec {
        interval: Timespec::default(),
        value: Timespec {
            tv_sec: 0,
            tv_nsec: 1_000_000_000,
        },
    };
    check_eq!(settime(fd, 0, bad), Err(EINVAL), "tv_nsec");
    let neg = Itimerspec {
        interval: Timespec {
            tv_sec: -1,
            tv_nsec: 0,
        },
        value: Timespec::from_ns(MS),
    };
    check_eq!(settime(fd, 0, neg), Err(EINVAL), "negative interval");
    check_eq!(
        sys::syscall(TIMERFD_SETTIME, &[fd as usize, 0, 0, 0]),
        Err(EFAULT)
    );
    check_eq!(
        sys::syscall(TIMERFD_GETTIME, &[fd as usize, 8]),
        Err(EFAULT)
    );
    let [r, w] = t!(sys::pipe2(O_CLOEXEC));
    check_eq!(settime(r, 0, its(MS, 0)), Err(EINVAL), "not a timerfd");
    check_eq!(gettime(r), Err(EINVAL));
    t!(sys::close(r));
    t!(sys::close(w));
    check_eq!(settime(r, 0, its(MS, 0)), Err(EBADF));
    check_eq!(gettime(r), Err(EBADF));
    check_eq!(sys::ioctl(fd, TFD_IOC_SET_TICKS + 1, 0), Err(ENOTTY));
    t!(sys::close(fd));
    // Root holds CAP_WAKE_ALARM: the alarm clocks are there.
    for c in [CLOCK_REALTIME_ALARM, CLOCK_BOOTTIME_ALARM] {
        let fd = t!(create(c, TFD_NONBLOCK | TFD_CLOEXEC));
        t!(settime(fd, 0, its(5 * MS, 0)));
        check_eq!(poll_ms(fd, 2000), Ok(POLLIN), "alarm clock {c}");
        check_eq!(read_count(fd), Ok(1));
        t!(sys::close(fd));
    }
    Ok(())
}

/// A relative one-shot timer: gettime counts down, a blocking read waits for it and says 1,
/// then the timer is disarmed.
fn one_shot_relative() -> TestResult {
    for clock in [CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_REALTIME] {
        let fd = t!(create(clock, TFD_CLOEXEC));
        let t0 = t!(now(CLOCK_MONOTONIC));
        check_eq!(settime(fd, 0, its(40 * MS, 0)), Ok(Itimerspec::default()));
        let left = t!(gettime(fd));
        check!(
            left.interval == Timespec::default()
                && left.value.ns() > 0
                && left.value.ns() <= 40 * MS,
            "clock {clock}: {left:?}"
        );
        check_eq!(poll_ms(fd, 0), Ok(0));
        check_eq!(read_count(fd), Ok(1));
        let took = t!(now(CLOCK_MONOTONIC)) - t0;
        check!(took >= 40 * MS, "clock {clock}: read after {took} ns");
        check_eq!(gettime(fd), Ok(Itimerspec::default()));
        check_eq!(poll_ms(fd, 0), Ok(0));
        t!(sys::close(fd));
    }
    Ok(())
}

/// An interval timer: a read counts every period gone by; gettime shows the interval and the
/// time to the next expiry; settime returns the old setting and a zero value disarms.
fn interval_counts_and_old_setting() -> TestResult {
    let fd = t!(create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    t!(settime(fd, 0, its(10 * MS, 10 * MS)));
    let t0 = t!(now(CLOCK_MONOTONIC));
    sys::sleep_ns(105 * MS);
    let n = t!(read_count(fd));
    let elapsed = t!(now(CLOCK_MONOTONIC)) - t0;
    // Every whole period up to the read (the arming came just before t0).
    let most = elapsed / (10 * MS) + 1;
    check!(n >= 10 && n <= most, "{n} expiries in {elapsed} ns");
    let cur = t!(gettime(fd));
    check_eq!(cur.interval, Timespec::from_ns(10 * MS));
    // Linux answers 0 for an expiry that is due but whose timer has not run yet
    // (timerfd_get_remaining clamps a negative remainder): seen under a loaded host.
    check!(cur.value.ns() <= 10 * MS, "{cur:?}");
    let old = t!(settime(fd, 0, its(0, 0)));
    check_eq!(old.interval, Timespec::from_ns(10 * MS));
    check!(old.value.ns() <= 10 * MS, "{old:?}");
    check_eq!(gettime(fd), Ok(Itimerspec::default()));
    check_eq!(read_count(fd), Err(EAGAIN), "disarming drops the count");
    // A long timer's old value.
    t!(settime(fd, 0, its(10_000 * MS, 0)));
    let old = t!(settime(fd, 0, its(20_000 * MS, 0)));
    check!(
        old.value.ns() > 9_000 * MS && old.value.ns() <= 10_000 * MS,
        "{old:?}"
    );
    t!(sys::close(fd));
    Ok(())
}

/// Absolute times on each clock; one already past expires at once.
fn absolute_times() -> TestResult {
    // The times a second in the past must exist: as the first process the monotonic clock
    // may not be a second old yet.
    let up = t!(now(CLOCK_MONOTONIC));
    if up < 1_500 * MS {
        sys::sleep_ns(1_500 * MS - up);
    }
    for clock in [CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME] {
        let fd = t!(create(clock, TFD_CLOEXEC));
        let at = t!(now(clock)) + 30 * MS;
        t!(settime(fd, TFD_TIMER_ABSTIME, its(at, 0)));
        check_eq!(read_count(fd), Ok(1), "clock {clock}");
        check!(t!(now(clock)) >= at, "clock {clock}: read before its time");
        let past = t!(now(clock)) - 1_000 * MS;
        t!(settime(fd, TFD_TIMER_ABSTIME, its(past, 0)));
        check_eq!(poll_ms(fd, 2000), Ok(POLLIN), "clock {clock}: a time past");
        check_eq!(read_count(fd), Ok(1));
        // An interval timer that started 1 s ago has ~100 periods of 10 ms behind it.
        t!(settime(fd, TFD_TIMER_ABSTIME, its(past, 10 * MS)));
        let n = t!(read_count(fd));
        check!((100..200).contains(&n), "clock {clock}: {n} expiries");
        t!(sys::close(fd));
    }
    Ok(())
}

/// epoll and ppoll wake when the timer expires; readiness stays until the read.
fn poll_and_epoll() -> TestResult {
    let fd = t!(create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    t!(settime(fd, 0, its(30 * MS, 0)));
    let t0 = t!(now(CLOCK_MONOTONIC));
    check_eq!(poll_ms(fd, 5000), Ok(POLLIN));
    let took = t!(now(CLOCK_MONOTONIC)) - t0;
    check!(took < 4000 * MS, "ppoll woke after {took} ns");
    check_eq!(poll_ms(fd, 0), Ok(POLLIN));
    check_eq!(read_count(fd), Ok(1));
    check_eq!(poll_ms(fd, 0), Ok(0));

    let ep = t!(sys::epoll_create1(O_CLOEXEC)) as i32;
    let ev = EpollEvent {
        events: EPOLLIN,
        data: 9,
    };
    t!(sys::epoll_ctl(ep, EPOLL_CTL_ADD, fd, Some(&ev)));
    let wait = |ms: i32| {
        let mut out = [EpollEvent::default()];
        sys::epoll_wait(ep, &mut out, ms).map(|n| (n, out[0].events, out[0].data))
    };
    check_eq!(wait(0), Ok((0, 0, 0)));
    t!(settime(fd, 0, its(30 * MS, 0)));
    check_eq!(wait(5000), Ok((1, EPOLLIN, 9)));
    check_eq!(read_count(fd), Ok(1));
    check_eq!(wait(0), Ok((0, 0, 0)));
    t!(sys::close(ep));
    t!(sys::close(fd));
    Ok(())
}

/// A blocking read in a child wakes at the expiry of the timer it shares with its parent.
fn shared_over_fork() -> TestResult {
    let fd = t!(create(CLOCK_MONOTONIC, TFD_CLOEXEC));
    let child = t!(spawn(move || match read_count(fd) {
        Ok(1) => 0,
        _ => 1,
    }));
    sys::sleep_ns(20 * MS);
    t!(settime(fd, 0, its(20 * MS, 0)));
    let (_, st) = t!(sys::waitpid(child, 0));
    check!(wifexited(st) && wexitstatus(st) == 0, "{}", describe(st));
    check_eq!(gettime(fd), Ok(Itimerspec::default()));
    t!(sys::close(fd));
    Ok(())
}

/// TFD_TIMER_CANCEL_ON_SET: setting CLOCK_REALTIME (a second ahead of its own time: a board
/// without an RTC starts it at the epoch, and both kernels refuse a time before boot) cancels an
/// absolute real-time timer set with it; its read says ECANCELED once. Without the flag, or on
/// CLOCK_MONOTONIC, nothing happens.
fn cancel_on_set() -> TestResult {
    let cancel = t!(create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC));
    let plain = t!(create(CLOCK_REALTIME, TFD_NONBLOCK | TFD_CLOEXEC));
    let mono = t!(create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    let at = t!(now(CLOCK_REALTIME)) + 60_000 * MS;
    t!(settime(
        cancel,
        TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET,
        its(at, 0)
    ));
    t!(settime(plain, TFD_TIMER_ABSTIME, its(at, 0)));
    let m = t!(now(CLOCK_MONOTONIC)) + 60_000 * MS;
    t!(settime(
        mono,
        TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET,
        its(m, 0)
    ));
    check_eq!(read_count(cancel), Err(EAGAIN));
    let ts = Timespec::from_ns(t!(sys::clock_gettime(CLOCK_REALTIME)).ns() + 1_000 * MS);
    t!(sys::syscall(
        nr::CLOCK_SETTIME,
        &[CLOCK_REALTIME as usize, &ts as *const Timespec as usize]
    ));
    check_eq!(poll_ms(cancel, 0), Ok(POLLIN));
    check_eq!(read_count(cancel), Err(ECANCELED));
    check_eq!(read_count(cancel), Err(EAGAIN), "said once");
    check_eq!(read_count(plain), Err(EAGAIN));
    check_eq!(read_count(mono), Err(EAGAIN));
    for fd in [cancel, plain, mono] {
        t!(sys::close(fd));
    }
    Ok(())
}

/// TFD_IOC_SET_TICKS sets the count a read returns; 0 is EINVAL.
fn set_ticks_ioctl() -> TestResult {
    let fd = t!(create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
    let five = 5u64;
    let zero = 0u64;
    check_eq!(
        sys::ioctl(fd, TFD_IOC_SET_TICKS, &zero as *const u64 as usize),
        Err(EINVAL)
    );
    check_eq!(sys::ioctl(fd, TFD_IOC_SET_TICKS, 8), Err(EFAULT));
    t!(sys::ioctl(
        fd,
        TFD_IOC_SET_TICKS,
        &five as *const u64 as usize
    ));
    // fdinfo shows the clock, the count and the setting.
    let info = t!(io::read_file(&format!("/proc/self/fdinfo/{fd}")));
    let info = String::from_utf8_lossy(&info);
    check!(
        info.contains(
            "clockid: 1\nticks: 5\nsettime flags: 00\nit_value: (0, 0)\nit_interval: (0, 0)\n"
        ),
        "{info}"
    );

    check_eq!(poll_ms(fd, 0), Ok(POLLIN));
    check_eq!(read_count(fd), Ok(5));
    check_eq!(read_count(fd), Err(EAGAIN));
    t!(sys::close(fd));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    mount_when_init();
    ktap::run(&[
        ("errors_and_a_fresh_timer", errors_and_a_fresh_timer),
        ("one_shot_relative", one_shot_relative),
        (
            "interval_counts_and_old_setting",
            interval_counts_and_old_setting,
        ),
        ("absolute_times", absolute_times),
        ("poll_and_epoll", poll_and_epoll),
        ("shared_over_fork", shared_over_fork),
        ("cancel_on_set", cancel_on_set),
        ("set_ticks_ioctl", set_ticks_ioctl),
    ])
}

entry!(main);
