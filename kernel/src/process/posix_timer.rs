//! POSIX per-process timers (timer_create, timer_settime, timer_gettime, timer_getoverrun,
//! timer_delete; Linux's kernel/time/posix-timers.c and posix-cpu-timers.c), driven by the
//! tick as ITIMER_REAL is.
//!
//! A timer counts on the counter (CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME, CLOCK_TAI
//! and the alarm clocks, which never wake a suspended machine here) or on a CPU-time clock (a
//! process's or a thread's). An expiry queues its signal with SI_TIMER; while that signal is
//! still queued, further expiries only count overruns in it (si_overrun), and its delivery
//! makes that count what timer_getoverrun reports. Deleting or re-arming a timer drops its
//! queued signal, as Linux 7.3 drops a stale timer signal at delivery.

#![forbid(unsafe_code)]

use super::cputime::{CpuClock, CpuWhich};
use super::{Process, Thread};
use crate::arch::cpu;
use crate::sync::IrqLock;
use crate::time::{counter_to_ns, ns_to_counter};
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::signal as sig;

/// Processes with an armed timer (the tick looks at no other).
static ARMED: IrqLock<Vec<Weak<Process>>> = IrqLock::new(Vec::new());

/// What a timer counts.
enum Clock {
    /// The counter; `realtime` for CLOCK_REALTIME-based absolute times.
    Counter {
        realtime: bool,
    },
    /// A thread's or a process's CPU time (ns).
    CpuThread(Weak<Thread>, CpuWhich),
    CpuProcess(Weak<Process>, CpuWhich),
}

impl Clock {
    /// Now on this clock: counter ticks, or CPU ns; None for a CPU clock of a thread or
    /// process that is gone.
    fn now(&self) -> Option<u64> {
        match self {
            Clock::Counter { .. } => Some(cpu::counter()),
            Clock::CpuThread(t, w) => Some(CpuClock::Thread(t.upgrade()?, *w).read()),
            Clock::CpuProcess(p, w) => Some(CpuClock::Process(p.upgrade()?, *w).read()),
        }
    }

    /// `ns` of this clock's time in its units.
    fn units(&self, ns: u64) -> u64 {
        match self {
            Clock::Counter { .. } => ns_to_counter(ns),
            _ => ns,
        }
    }

    fn to_ns(&self, units: u64) -> u64 {
        match self {
            Clock::Counter { .. } => counter_to_ns(units),
            _ => units,
        }
    }
}

/// How an expiry is told.
enum Notify {
    None,
    /// A signal to the process, or to one of its threads (SIGEV_THREAD_ID).
    Signal {
        signo: u32,
        value: u64,
        thread: Option<Weak<Thread>>,
    },
}

struct PosixTimer {
    id: i32,
    clock: Clock,
    notify: Notify,
    /// Next expiry in the clock's units (0: disarmed).
    expiry: u64,
    interval: u64,
    /// The overrun count of the last signal delivered (timer_getoverrun).
    overrun_last: i32,
}

/// A process's timers.
#[derive(Default)]
pub struct Timers {
    next_id: i32,
    list: Vec<PosixTimer>,
}

impl Timers {
    fn get(&mut self, id: i32) -> SysResult<&mut PosixTimer> {
        self.list
            .iter_mut()
            .find(|t| t.id == id)
            .ok_or(Errno::EINVAL)
    }
}

/// The clock a timer of `clock` counts on (Linux: EINVAL for no clock or a CPU clock of
/// nobody, EOPNOTSUPP for a clock without timers).
fn timer_clock(cur: &Thread, clock: u32) -> SysResult<Clock> {
    use svelt_abi::uapi::time as abi;
    match clock {
        abi::CLOCK_REALTIME | abi::CLOCK_TAI | abi::CLOCK_REALTIME_ALARM => {
            return Ok(Clock::Counter { realtime: true })
        }
        abi::CLOCK_MONOTONIC | abi::CLOCK_BOOTTIME | abi::CLOCK_BOOTTIME_ALARM => {
            return Ok(Clock::Counter { realtime: false })
        }
        abi::CLOCK_MONOTONIC_RAW | abi::CLOCK_REALTIME_COARSE | abi::CLOCK_MONOTONIC_COARSE => {
            return Err(Errno::EOPNOTSUPP)
        }
        _ => {}
    }
    match super::cputime::cpu_clock(cur, clock, false) {
        None | Some(Err(())) => Err(Errno::EINVAL),
        Some(Ok(CpuClock::Thread(t, w))) => Ok(Clock::CpuThread(Arc::downgrade(&t), w)),
        Some(Ok(CpuClock::Process(p, w))) => Ok(Clock::CpuProcess(Arc::downgrade(&p), w)),
    }
}

use svelt_abi::uapi::signal::{Sigevent, SIGEV_NONE, SIGEV_SIGNAL, SIGEV_THREAD, SIGEV_THREAD_ID};

/// What an expiry does (Linux's good_sigevent: EINVAL for anything else).
fn notify_for(cur: &Thread, ev: &Sigevent) -> SysResult<Notify> {
    let signo_ok = |s: i32| s > 0 && s <= sig::NSIG as i32;
    let signal = |thread| {
        if !signo_ok(ev.signo) {
            return Err(Errno::EINVAL);
        }
        Ok(Notify::Signal {
            signo: ev.signo as u32,
            value: ev.value,
            thread,
        })
    };
    match ev.notify {
        SIGEV_NONE => Ok(Notify::None),
        SIGEV_SIGNAL | SIGEV_THREAD => signal(None),
        n if n == SIGEV_SIGNAL | SIGEV_THREAD_ID => {
            let t = super::find_task(ev.tid as u32)
                .filter(|t| ev.tid > 0 && Arc::ptr_eq(&t.process, &cur.process))
                .ok_or(Errno::EINVAL)?;
            signal(Some(Arc::downgrade(&t)))
        }
        _ => Err(Errno::EINVAL),
    }
}

/// timer_create: a new disarmed timer; `ev` None is SIGEV_SIGNAL with SIGALRM and the
/// timer's id as value. Returns its id.
pub fn create(cur: &Thread, clock: u32, ev: Option<Sigevent>) -> SysResult<i32> {
    let clock = timer_clock(cur, clock)?;
    let p = &cur.process;
    let mut ts = p.timers.lock();
    let id = ts.next_id;
    let notify = match ev {
        Some(ev) => notify_for(cur, &ev)?,
        None => Notify::Signal {
            signo: sig::SIGALRM,
            value: id as u64,
            thread: None,
        },
    };
    ts.next_id = id.checked_add(1).ok_or(Errno::EAGAIN)?;
    ts.list.try_reserve(1).map_err(|_| Errno::EAGAIN)?;
    ts.list.push(PosixTimer {
        id,
        clock,
        notify,
        expiry: 0,
        interval: 0,
        overrun_last: 0,
    });
    Ok(id)
}

/// Undoes `create` (the id could not be written out).
pub fn forget(p: &Process, id: i32) {
    let _ = delete(p, id);
}

/// (value left, interval) of a timer in ns, at `now` on its clock.
fn remaining(t: &PosixTimer, now: Option<u64>) -> (u64, u64) {
    let interval = t.clock.to_ns(t.interval);
    let Some(now) = now.filter(|_| t.expiry != 0) else {
        return (0, interval);
    };
    let left = if t.expiry > now {
        t.expiry - now
    } else if t.interval != 0 {
        // Expired, its next expiry not yet taken: the time to that one.
        t.interval - (now - t.expiry) % t.interval
    } else {
        0
    };
    (t.clock.to_ns(left).max(u64::from(left != 0)), interval)
}

/// timer_settime: arms (or with a zero value disarms) timer `id`; `abs_ns` when the value is
/// a time on the timer's clock (TIMER_ABSTIME). Returns the old (value, interval) in ns.
pub fn settime(
    p: &Arc<Process>,
    id: i32,
    value_ns: u64,
    interval_ns: u64,
    absolute: bool,
) -> SysResult<(u64, u64)> {
    let mut ts = p.timers.lock();
    let t = ts.get(id)?;
    let now = t.clock.now();
    let old = remaining(t, now);
    super::signal::drop_timer_signals(p, id);
    t.interval = t.clock.units(interval_ns);
    t.expiry = if value_ns == 0 {
        0
    } else {
        let now = now.unwrap_or(0);
        let at = if absolute {
            let ns = match t.clock {
                Clock::Counter { realtime: true } => {
                    value_ns.saturating_sub(crate::time::realtime_offset())
                }
                _ => value_ns,
            };
            t.clock.units(ns)
        } else {
            now.saturating_add(t.clock.units(value_ns))
        };
        // Never 0 (disarmed): a time already past expires at the next tick.
        at.max(1)
    };
    if t.expiry != 0 {
        drop(ts);
        let mut l = ARMED.lock();
        l.retain(|w| w.strong_count() > 0);
        if !l.iter().any(|w| core::ptr::eq(w.as_ptr(), Arc::as_ptr(p))) {
            l.push(Arc::downgrade(p));
        }
    }
    Ok(old)
}

/// timer_gettime: (value left, interval) in ns.
pub fn gettime(p: &Process, id: i32) -> SysResult<(u64, u64)> {
    let mut ts = p.timers.lock();
    let t = ts.get(id)?;
    Ok(remaining(t, t.clock.now()))
}

/// timer_getoverrun: the overrun count of the timer's last delivered signal.
pub fn getoverrun(p: &Process, id: i32) -> SysResult<i32> {
    Ok(p.timers.lock().get(id)?.overrun_last)
}

/// timer_delete: the timer and its queued signal go.
pub fn delete(p: &Process, id: i32) -> SysResult<()> {
    let mut ts = p.timers.lock();
    let i = ts
        .list
        .iter()
        .position(|t| t.id == id)
        .ok_or(Errno::EINVAL)?;
    ts.list.remove(i);
    super::signal::drop_timer_signals(p, id);
    Ok(())
}

/// Every timer of `p` goes (exec, exit).
pub fn clear(p: &Process) {
    let mut ts = p.timers.lock();
    if ts.list.is_empty() {
        return;
    }
    for t in core::mem::take(&mut ts.list) {
        super::signal::drop_timer_signals(p, t.id);
    }
}

/// A timer signal was delivered (dequeued): its overrun count is what timer_getoverrun says.
pub fn delivered(p: &Process, info: &sig::Siginfo) {
    if let Some(t) = p
        .timers
        .lock()
        .list
        .iter_mut()
        .find(|t| t.id == info.timer_id())
    {
        t.overrun_last = info.timer_overrun();
    }
}

/// The tick (any CPU): expired timers signal, interval ones re-arm; a process left with no
/// armed timer leaves the list.
pub fn tick() {
    let Some(mut l) = ARMED.try_lock() else {
        return;
    };
    l.retain(|w| w.upgrade().is_some_and(|p| tick_process(&p)));
}

/// Expires `p`'s due timers; false when none is armed any more.
fn tick_process(p: &Arc<Process>) -> bool {
    let Some(mut ts) = p.timers.try_lock() else {
        return true;
    };
    for t in ts.list.iter_mut().filter(|t| t.expiry != 0) {
        let Some(now) = t.clock.now() else { continue };
        if t.expiry > now {
            continue;
        }
        // Expiries missed since (a tick is coarser than a short interval): overruns.
        let missed = match (now - t.expiry).checked_div(t.interval) {
            None => {
                t.expiry = 0;
                0
            }
            Some(n) => {
                t.expiry += (n + 1) * t.interval;
                n
            }
        };
        let missed = i32::try_from(missed).unwrap_or(i32::MAX);
        // Sent under the timer list's lock, which timer_delete and timer_settime take
        // too: once they return, no signal of the old setting arrives.
        if let Notify::Signal {
            signo,
            value,
            thread,
        } = &t.notify
        {
            let target = match thread {
                Some(w) => match w.upgrade() {
                    Some(th) => Some(th),
                    None => continue,
                },
                None => None,
            };
            let info = sig::Siginfo::timer(*signo, t.id, missed, *value);
            super::signal::send_timer(p, target.as_ref(), info, missed);
        }
    }
    ts.list.iter().any(|t| t.expiry != 0)
}
