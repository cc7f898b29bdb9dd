//! Clocks, sleeps and interval timers.

#![forbid(unsafe_code)]

use crate::fs::timerfd;
use crate::mm::uaccess::UserPtr;
use crate::process::{self, cputime, posix_timer, CurrentTask};
use crate::task::local::RestartBlock;
use crate::task::wait;
use crate::time;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::time::{self as abi, Itimerspec, Itimerval, Timespec, Timeval};

fn clock_ns(clock: u32) -> SysResult<u64> {
    match clock {
        abi::CLOCK_REALTIME
        | abi::CLOCK_REALTIME_COARSE
        | abi::CLOCK_TAI
        | abi::CLOCK_REALTIME_ALARM => Ok(time::realtime_ns()),
        abi::CLOCK_MONOTONIC
        | abi::CLOCK_MONOTONIC_RAW
        | abi::CLOCK_MONOTONIC_COARSE
        | abi::CLOCK_BOOTTIME
        | abi::CLOCK_BOOTTIME_ALARM
        | abi::CLOCK_PROCESS_CPUTIME_ID
        | abi::CLOCK_THREAD_CPUTIME_ID => Ok(time::now_ns()),
        _ => Err(Errno::EINVAL),
    }
}

/// The CPU-time clock `clock` names, if it is one (EINVAL: one of nobody).
fn cpu_clock(cur: &CurrentTask, clock: u32) -> Option<SysResult<cputime::CpuClock>> {
    cputime::cpu_clock(cur, clock, true).map(|r| r.map_err(|()| Errno::EINVAL))
}

pub fn clock_gettime(cur: &CurrentTask, clock: u32, tp: UserPtr<Timespec>) -> SysResult<usize> {
    let ns = match cpu_clock(cur, clock) {
        Some(c) => c?.read(),
        None => clock_ns(clock)?,
    };
    tp.write(&Timespec::from_nanos(ns))?;
    Ok(0)
}

pub fn clock_getres(cur: &CurrentTask, clock: u32, tp: UserPtr<Timespec>) -> SysResult<usize> {
    // The CPU clocks count to the counter's tick, as the others (Linux: 1 ns for the
    // scheduler-time ones).
    match cpu_clock(cur, clock) {
        Some(c) => drop(c?),
        None => drop(clock_ns(clock)?),
    }
    if !tp.is_null() {
        let res = time::counter_to_ns(1).max(1);
        tp.write(&Timespec::from_nanos(res))?;
    }
    Ok(0)
}

pub fn gettimeofday(tv: UserPtr<Timeval>, tz: UserPtr<[i32; 2]>) -> SysResult<usize> {
    if !tv.is_null() {
        tv.write(&Timeval::from_nanos(time::realtime_ns()))?;
    }
    if !tz.is_null() {
        tz.write(&time::timezone())?;
    }
    Ok(0)
}

/// The latest time clock_settime and settimeofday accept (Linux: TIME_SETTOD_SEC_MAX, the
/// ktime_t range less 30 years of uptime).
const SETTOD_SEC_MAX: i64 = i64::MAX / 1_000_000_000 - 30 * 365 * 86400;

/// The privilege to set the clock (uid 0 stands for CAP_SYS_TIME).
fn may_set_time(cur: &CurrentTask) -> SysResult<()> {
    let euid = cur
        .process()
        .euid
        .load(core::sync::atomic::Ordering::Relaxed);
    if euid != 0 {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// Linux's do_sys_settimeofday64: the time's range (EINVAL), the privilege (EPERM, asked even
/// when neither is given), the time zone's range (EINVAL), then each is set; the vDSO is told.
fn settimeofday64(
    cur: &CurrentTask,
    tv: Option<(i64, Option<u64>)>,
    tz: Option<[i32; 2]>,
) -> SysResult<usize> {
    let ns = match tv {
        Some((sec, ns)) => Some(ns.filter(|_| sec < SETTOD_SEC_MAX).ok_or(Errno::EINVAL)?),
        None => None,
    };
    may_set_time(cur)?;
    if let Some(tz) = tz {
        if !(-15 * 60..=15 * 60).contains(&tz[0]) {
            return Err(Errno::EINVAL);
        }
        time::set_timezone(tz);
        crate::vdso::update();
    }
    if let Some(ns) = ns {
        time::set_realtime(ns)?;
        crate::vdso::update();
        crate::fs::timerfd::clock_was_set();
    }
    Ok(0)
}

/// clock_settime: only CLOCK_REALTIME may be set; any other clock (CPU time included, as on
/// Linux 7.3) is EINVAL before the time is read.
pub fn clock_settime(cur: &CurrentTask, clock: u32, tp: UserPtr<Timespec>) -> SysResult<usize> {
    if clock != abi::CLOCK_REALTIME {
        return Err(Errno::EINVAL);
    }
    let ts = tp.read()?;
    settimeofday64(cur, Some((ts.tv_sec, ts.to_nanos())), None)
}

/// settimeofday: either pointer may be null.
pub fn settimeofday(
    cur: &CurrentTask,
    tv: UserPtr<Timeval>,
    tz: UserPtr<[i32; 2]>,
) -> SysResult<usize> {
    let tv = if tv.is_null() {
        None
    } else {
        let v = tv.read()?;
        if !v.is_valid() {
            return Err(Errno::EINVAL);
        }
        Some((v.tv_sec, v.to_nanos()))
    };
    let tz = if tz.is_null() { None } else { Some(tz.read()?) };
    settimeofday64(cur, tv, tz)
}

/// Sleeps until `deadline` (counter). On a signal an absolute sleep restarts as it was called
/// when no handler runs (ERESTARTNOHAND); a relative one writes the time left to `rem` and
/// leaves a restart block, so that with no handler it resumes towards the same deadline
/// (Linux's do_nanosleep); with a handler both are EINTR.
fn sleep(
    cur: &CurrentTask,
    deadline: u64,
    rem: UserPtr<Timespec>,
    absolute: bool,
) -> SysResult<usize> {
    match wait::sleep_until(deadline) {
        Ok(()) => Ok(0),
        Err(_) if absolute => Err(Errno::ERESTARTNOHAND),
        Err(_) => {
            // Cleared first: a fault writing the time left makes the call EFAULT, which
            // nothing restarts.
            cur.local().restart_block.set(None);
            if !rem.is_null() {
                rem.write(&Timespec::from_nanos(time::ns_until(deadline)))?;
            }
            cur.local().restart_block.set(Some(RestartBlock {
                deadline,
                rem: rem.addr(),
            }));
            Err(Errno::ERESTART_RESTARTBLOCK)
        }
    }
}

/// restart_syscall: resumes the interrupted sleep its restart block describes; EINTR without
/// one (Linux's do_no_restart_syscall).
pub fn restart_syscall(cur: &CurrentTask) -> SysResult<usize> {
    let Some(b) = cur.local().restart_block.take() else {
        return Err(Errno::EINTR);
    };
    sleep(cur, b.deadline, UserPtr::new(b.rem), false)
}

pub fn nanosleep(
    cur: &CurrentTask,
    req: UserPtr<Timespec>,
    rem: UserPtr<Timespec>,
) -> SysResult<usize> {
    // None: an invalid timespec (EINVAL).
    let ns = req.read()?.to_nanos().ok_or(Errno::EINVAL)?;
    sleep(cur, time::deadline_after_ns(ns), rem, false)
}

pub fn clock_nanosleep(
    cur: &CurrentTask,
    clock: u32,
    flags: u32,
    req: UserPtr<Timespec>,
    rem: UserPtr<Timespec>,
) -> SysResult<usize> {
    if clock == abi::CLOCK_THREAD_CPUTIME_ID {
        return Err(Errno::EOPNOTSUPP);
    }
    let now = clock_ns(clock)?;
    let ns = req.read()?.to_nanos().ok_or(Errno::EINVAL)?;
    let rel = if flags & abi::TIMER_ABSTIME != 0 {
        ns.saturating_sub(now)
    } else {
        ns
    };
    // An absolute sleep does not report the time left.
    sleep(
        cur,
        time::deadline_after_ns(rel),
        rem,
        flags & abi::TIMER_ABSTIME != 0,
    )
}

/// An interval timer's (value left, interval) in ns as setitimer and getitimer report it.
fn itimerval(left: u64, interval: u64) -> Itimerval {
    Itimerval {
        it_interval: Timeval::from_nanos(interval),
        it_value: Timeval::from_nanos(left),
    }
}

/// Reads (value left, interval) of interval timer `which` (EINVAL for no such timer).
fn itimer_get(cur: &CurrentTask, which: u32) -> SysResult<(u64, u64)> {
    let p = cur.process();
    match which {
        abi::ITIMER_REAL => Ok(process::itimer::itimer_remaining(&p)),
        abi::ITIMER_VIRTUAL | abi::ITIMER_PROF => Ok(cputime::get_cpu_itimer(&p, which)),
        _ => Err(Errno::EINVAL),
    }
}

/// setitimer: ITIMER_REAL counts real time, ITIMER_VIRTUAL the process's user time and
/// ITIMER_PROF its user and system time; the old setting is written if asked for.
pub fn setitimer(
    cur: &CurrentTask,
    which: u32,
    new: UserPtr<Itimerval>,
    old: UserPtr<Itimerval>,
) -> SysResult<usize> {
    let value = if !new.is_null() {
        Some(new.read()?.validate()?)
    } else {
        None
    };
    let (left, interval) = itimer_get(cur, which)?;
    if !old.is_null() {
        old.write(&itimerval(left, interval))?;
    }
    // Validated above (the default is zero), so both convert.
    let v = value.unwrap_or_default();
    let ns = |t: Timeval| t.to_nanos().unwrap_or(0);
    let p = cur.process();
    if which == abi::ITIMER_REAL {
        process::itimer::arm_itimer(&p, ns(v.it_value), ns(v.it_interval));
    } else {
        cputime::set_cpu_itimer(&p, which, ns(v.it_value), ns(v.it_interval));
    }
    Ok(0)
}

pub fn getitimer(cur: &CurrentTask, which: u32, out: UserPtr<Itimerval>) -> SysResult<usize> {
    let (left, interval) = itimer_get(cur, which)?;
    out.write(&itimerval(left, interval))?;
    Ok(0)
}

/// times: the process's and its waited-for children's user and system time in clock ticks
/// (USER_HZ); returns the clock ticks since boot.
pub fn times(cur: &CurrentTask, buf: usize) -> SysResult<usize> {
    let ticks = time::now_ns() / (1_000_000_000 / abi::USER_HZ);
    if buf != 0 {
        let p = cur.process();
        let me = cputime::process_times(&p);
        let ch = cputime::children_times(&p);
        let tms = abi::Tms {
            tms_utime: abi::nanos_to_clock_t(me.user_ns),
            tms_stime: abi::nanos_to_clock_t(me.system_ns),
            tms_cutime: abi::nanos_to_clock_t(ch.user_ns),
            tms_cstime: abi::nanos_to_clock_t(ch.system_ns),
        };
        UserPtr::<abi::Tms>::new(buf).write(&tms)?;
    }
    Ok(ticks as usize)
}

// ---- POSIX timers ----

/// timer_create: the sigevent is read first (EFAULT), then the clock and the sigevent are
/// checked; the new id is written out (EFAULT: the timer goes again).
pub fn timer_create(
    cur: &CurrentTask,
    clock: u32,
    sevp: UserPtr<svelt_abi::uapi::signal::Sigevent>,
    idp: UserPtr<i32>,
) -> SysResult<usize> {
    let ev = if sevp.is_null() {
        None
    } else {
        Some(sevp.read()?)
    };
    let id = posix_timer::create(cur, clock, ev)?;
    if let Err(e) = idp.write(&id) {
        posix_timer::forget(&cur.process(), id);
        return Err(e);
    }
    Ok(0)
}

fn itimerspec(left: u64, interval: u64) -> Itimerspec {
    Itimerspec {
        it_interval: Timespec::from_nanos(interval),
        it_value: Timespec::from_nanos(left),
    }
}

/// timer_settime: EINVAL without a new setting, EFAULT if it cannot be read, EINVAL for an
/// invalid one or no such timer; the old setting is written last.
pub fn timer_settime(
    cur: &CurrentTask,
    id: i32,
    flags: u32,
    new: UserPtr<Itimerspec>,
    old: UserPtr<Itimerspec>,
) -> SysResult<usize> {
    if new.is_null() {
        return Err(Errno::EINVAL);
    }
    let v = new.read()?.validate()?;
    let ns = |t: Timespec| t.to_nanos().unwrap_or(0);
    let (left, interval) = posix_timer::settime(
        &cur.process(),
        id,
        ns(v.it_value),
        ns(v.it_interval),
        flags & abi::TIMER_ABSTIME != 0,
    )?;
    if !old.is_null() {
        old.write(&itimerspec(left, interval))?;
    }
    Ok(0)
}

pub fn timer_gettime(cur: &CurrentTask, id: i32, out: UserPtr<Itimerspec>) -> SysResult<usize> {
    let (left, interval) = posix_timer::gettime(&cur.process(), id)?;
    out.write(&itimerspec(left, interval))?;
    Ok(0)
}

pub fn timer_getoverrun(cur: &CurrentTask, id: i32) -> SysResult<usize> {
    Ok(posix_timer::getoverrun(&cur.process(), id)? as usize)
}

pub fn timer_delete(cur: &CurrentTask, id: i32) -> SysResult<usize> {
    posix_timer::delete(&cur.process(), id)?;
    Ok(0)
}

// ---- timerfd ----

/// timerfd_create(clock, flags): a disarmed timer (fs/timerfd.rs), `anon_inode:[timerfd]`.
/// EINVAL for other flags or clocks; the _ALARM clocks need CAP_WAKE_ALARM (uid 0 here), EPERM.
pub fn timerfd_create(cur: &CurrentTask, clock: u32, flags: u32) -> SysResult<usize> {
    use svelt_abi::uapi::fs::O_RDWR;
    if flags & !(abi::TFD_CLOEXEC | abi::TFD_NONBLOCK) != 0 || !timerfd::valid_clock(clock) {
        return Err(Errno::EINVAL);
    }
    if timerfd::is_alarm(clock) && !may_wake_alarm(cur) {
        return Err(Errno::EPERM);
    }
    let f = crate::fs::File::new(
        None,
        timerfd::TimerFd::new(clock),
        O_RDWR | (flags & abi::TFD_NONBLOCK),
        alloc::string::String::from("anon_inode:[timerfd]"),
    );
    super::file::install(cur, f, flags & abi::TFD_CLOEXEC != 0)
}

/// CAP_WAKE_ALARM: uid 0 stands for it.
fn may_wake_alarm(cur: &CurrentTask) -> bool {
    cur.process()
        .euid
        .load(core::sync::atomic::Ordering::Relaxed)
        == 0
}

/// Runs `f` on the timerfd behind `fd`: EBADF for no descriptor, EINVAL for another kind of
/// file.
fn with_timerfd<R>(
    cur: &CurrentTask,
    fd: i32,
    f: impl FnOnce(&timerfd::TimerFd) -> SysResult<R>,
) -> SysResult<R> {
    let file = super::file::file(cur, fd)?;
    let t = file
        .ops
        .as_any()
        .downcast_ref::<timerfd::TimerFd>()
        .ok_or(Errno::EINVAL)?;
    f(t)
}

/// timerfd_settime: Linux's order: the new setting is read (EFAULT), the flags and the
/// setting checked (EINVAL), the descriptor (EBADF, EINVAL), an alarm clock's privilege
/// (EPERM); the old setting is written last (EFAULT) when asked for.
pub fn timerfd_settime(
    cur: &CurrentTask,
    fd: i32,
    flags: u32,
    new: UserPtr<Itimerspec>,
    old: UserPtr<Itimerspec>,
) -> SysResult<usize> {
    let v = new.read()?;
    if flags & !(abi::TFD_TIMER_ABSTIME | abi::TFD_TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    let v = v.validate()?;
    let ns = |t: Timespec| t.to_nanos().unwrap_or(u64::MAX);
    let (left, interval) = with_timerfd(cur, fd, |t| {
        if timerfd::is_alarm(t.clock()) && !may_wake_alarm(cur) {
            return Err(Errno::EPERM);
        }
        t.settime(flags, ns(v.it_value), ns(v.it_interval))
    })?;
    if !old.is_null() {
        old.write(&itimerspec(left, interval))?;
    }
    Ok(0)
}

/// timerfd_gettime: the time to the next expiry and the interval.
pub fn timerfd_gettime(cur: &CurrentTask, fd: i32, out: UserPtr<Itimerspec>) -> SysResult<usize> {
    let (left, interval) = with_timerfd(cur, fd, |t| Ok(t.gettime()))?;
    out.write(&itimerspec(left, interval))?;
    Ok(0)
}
