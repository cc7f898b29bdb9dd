//! Clocks, sleeps and interval timers.

#![forbid(unsafe_code)]

use crate::mm::uaccess::{UserPtr, UserSlice};
use crate::process::{self, CurrentTask};
use crate::task::local::RestartBlock;
use crate::task::wait;
use crate::time;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::time::{self as abi, Itimerval, Timespec, Timeval};

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

pub fn clock_gettime(clock: u32, tp: UserPtr<Timespec>) -> SysResult<usize> {
    let ns = clock_ns(clock)?;
    tp.write(&Timespec::from_nanos(ns))?;
    Ok(0)
}

pub fn clock_getres(clock: u32, tp: UserPtr<Timespec>) -> SysResult<usize> {
    clock_ns(clock)?;
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

fn current_itimer(cur: &CurrentTask) -> Itimerval {
    let (left, interval) = process::itimer::itimer_remaining(&cur.process());
    Itimerval {
        it_interval: Timeval::from_nanos(interval),
        it_value: Timeval::from_nanos(left),
    }
}

pub fn setitimer(
    cur: &CurrentTask,
    which: u32,
    new: UserPtr<Itimerval>,
    old: UserPtr<Itimerval>,
) -> SysResult<usize> {
    // ITIMER_VIRTUAL and ITIMER_PROF are not implemented: EINVAL, as for an unknown timer.
    if which != abi::ITIMER_REAL {
        return Err(Errno::EINVAL);
    }
    let value = if !new.is_null() {
        Some(new.read()?.validate()?)
    } else {
        None
    };
    if !old.is_null() {
        old.write(&current_itimer(cur))?;
    }
    // Validated above (the default is zero), so both convert.
    let v = value.unwrap_or_default();
    let ns = |t: Timeval| t.to_nanos().unwrap_or(0);
    process::itimer::arm_itimer(&cur.process(), ns(v.it_value), ns(v.it_interval));
    Ok(0)
}

pub fn getitimer(cur: &CurrentTask, which: u32, out: UserPtr<Itimerval>) -> SysResult<usize> {
    if which != abi::ITIMER_REAL {
        return Err(Errno::EINVAL);
    }
    out.write(&current_itimer(cur))?;
    Ok(0)
}

pub fn times(buf: usize) -> SysResult<usize> {
    let ticks = time::now_ns() / (1_000_000_000 / abi::USER_HZ);
    if buf != 0 {
        UserSlice::new(buf, 32).clear()?;
    }
    Ok(ticks as usize)
}
