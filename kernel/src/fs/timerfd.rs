//! timerfd (Linux's fs/timerfd.c): a timer on CLOCK_REALTIME, CLOCK_MONOTONIC or
//! CLOCK_BOOTTIME (and their _ALARM forms, which never wake a suspended machine here) whose
//! expirations a read returns as a u64 count, with poll/epoll readiness while it is non-zero.
//!
//! A timer keeps its next expiry in nanoseconds of its own clock (so an absolute or relative
//! CLOCK_REALTIME timer follows a change of the clock, as an hrtimer on the real-time base
//! does) and counts the expiries that passed whenever it is looked at: by a read, poll,
//! timerfd_gettime or timerfd_settime, and by the tick, which wakes readers and pollers. An
//! interval timer's count covers every period gone by, however short the period.
//!
//! TFD_TIMER_CANCEL_ON_SET: an absolute CLOCK_REALTIME timer is cancelled when the clock is set
//! (`clock_was_set`); its next read says ECANCELED, as Linux's does.

#![forbid(unsafe_code)]

use super::{epoll, Caller, File, FileOps};
use crate::mm::uaccess::UserPtr;
use crate::sync::IrqLock;
use crate::task::wait::WaitQueue;
use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::any::Any;
use svelt_abi::uapi::errno::{Errno, SysResult};
use svelt_abi::uapi::fs::POLLIN;
use svelt_abi::uapi::time::{
    CLOCK_BOOTTIME, CLOCK_BOOTTIME_ALARM, CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_REALTIME_ALARM,
    TFD_IOC_SET_TICKS, TFD_TIMER_ABSTIME, TFD_TIMER_CANCEL_ON_SET,
};

/// Timers with an expiry ahead (the tick looks at no other).
static ARMED: IrqLock<Vec<Weak<TimerFd>>> = IrqLock::new(Vec::new());
/// Timers that a setting of the clock cancels (TFD_TIMER_CANCEL_ON_SET).
static CANCEL: IrqLock<Vec<Weak<TimerFd>>> = IrqLock::new(Vec::new());

/// `moffs` of a timer cancelled by a setting of the clock.
const CANCELED: u64 = u64::MAX;

/// The largest time a timer holds (Linux's KTIME_MAX, where a longer timespec saturates).
const KTIME_MAX: u64 = i64::MAX as u64;

struct State {
    /// The next expiry, in ns of the timer's clock; 0: disarmed.
    expiry: u64,
    /// The period, ns; 0: one-shot.
    interval: u64,
    /// Expiries not yet read.
    ticks: u64,
    /// The flags of the last timerfd_settime (fdinfo shows them).
    flags: u32,
    /// Set up with CLOCK_REALTIME, TFD_TIMER_ABSTIME and TFD_TIMER_CANCEL_ON_SET.
    might_cancel: bool,
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC when last looked at; CANCELED once the clock was
    /// set under a timer that might cancel.
    moffs: u64,
}

impl State {
    /// Counts the expiries due at `now`; true if there were any.
    fn update(&mut self, now: u64) -> bool {
        if self.expiry == 0 || now < self.expiry {
            return false;
        }
        match (now - self.expiry).checked_div(self.interval) {
            None => {
                self.ticks = self.ticks.saturating_add(1);
                self.expiry = 0;
            }
            Some(periods) => {
                let n = periods + 1;
                self.ticks = self.ticks.saturating_add(n);
                self.expiry = self.expiry.saturating_add(n.saturating_mul(self.interval));
            }
        }
        true
    }

    /// The clock was set since this timer (which might cancel) was looked at: takes note, so
    /// that it is said once (Linux's timerfd_canceled).
    fn canceled(&mut self) -> bool {
        if !self.might_cancel || self.moffs != CANCELED {
            return false;
        }
        self.moffs = crate::time::realtime_offset();
        true
    }
}

pub struct TimerFd {
    clock: u32,
    st: IrqLock<State>,
    wq: WaitQueue,
    me: Weak<TimerFd>,
}

/// timerfd_create's clocks: EINVAL for any other.
pub fn valid_clock(clock: u32) -> bool {
    matches!(
        clock,
        CLOCK_REALTIME
            | CLOCK_MONOTONIC
            | CLOCK_BOOTTIME
            | CLOCK_REALTIME_ALARM
            | CLOCK_BOOTTIME_ALARM
    )
}

pub fn is_alarm(clock: u32) -> bool {
    matches!(clock, CLOCK_REALTIME_ALARM | CLOCK_BOOTTIME_ALARM)
}

fn realtime(clock: u32) -> bool {
    matches!(clock, CLOCK_REALTIME | CLOCK_REALTIME_ALARM)
}

impl TimerFd {
    /// A disarmed timer on `clock` (one `valid_clock` accepts).
    pub fn new(clock: u32) -> Arc<TimerFd> {
        Arc::new_cyclic(|me| TimerFd {
            clock,
            st: IrqLock::new(State {
                expiry: 0,
                interval: 0,
                ticks: 0,
                flags: 0,
                might_cancel: false,
                moffs: crate::time::realtime_offset(),
            }),
            wq: WaitQueue::new(),
            me: me.clone(),
        })
    }

    pub fn clock(&self) -> u32 {
        self.clock
    }

    /// Now on the timer's clock, ns (CLOCK_BOOTTIME is CLOCK_MONOTONIC: no suspend here).
    fn now(&self) -> u64 {
        if realtime(self.clock) {
            crate::time::realtime_ns()
        } else {
            crate::time::now_ns()
        }
    }

    /// (value left, interval) in ns, its expiries up to now counted.
    pub fn gettime(&self) -> (u64, u64) {
        let now = self.now();
        let (fired, r) = {
            let mut st = self.st.lock();
            (st.update(now), remaining(&st, now))
        };
        if fired {
            self.changed();
        }
        r
    }

    /// timerfd_settime: the new setting (`value` 0 disarms), the old one returned as
    /// (value left, interval); ECANCELED (the timer set up all the same) when a setting of the
    /// clock had cancelled it, as Linux's timerfd_setup says.
    pub fn settime(&self, flags: u32, value: u64, interval: u64) -> SysResult<(u64, u64)> {
        let value = value.min(KTIME_MAX);
        let interval = interval.min(KTIME_MAX);
        let might_cancel = realtime(self.clock)
            && flags & TFD_TIMER_ABSTIME != 0
            && flags & TFD_TIMER_CANCEL_ON_SET != 0;
        if might_cancel {
            let mut l = CANCEL.lock();
            l.retain(|w| w.strong_count() > 0);
            if !l.iter().any(|w| w.ptr_eq(&self.me)) {
                l.push(self.me.clone());
            }
        }
        let now = self.now();
        let (old, armed, canceled) = {
            let mut st = self.st.lock();
            st.might_cancel = might_cancel;
            st.update(now);
            let old = remaining(&st, now);
            st.ticks = 0;
            st.interval = interval;
            st.flags = flags;
            st.expiry = match value {
                0 => 0,
                v if flags & TFD_TIMER_ABSTIME != 0 => v,
                v => now.saturating_add(v).min(KTIME_MAX),
            };
            let canceled = st.expiry != 0 && st.canceled();
            (old, st.expiry != 0, canceled)
        };
        if armed {
            let mut l = ARMED.lock();
            if !l.iter().any(|w| w.ptr_eq(&self.me)) {
                l.push(self.me.clone());
            }
        }
        if canceled {
            return Err(Errno::ECANCELED);
        }
        Ok(old)
    }

    fn changed(&self) {
        self.wq.wake_all();
        epoll::notify();
    }
}

/// (value left, interval) of `st` at `now`, its due expiries already counted.
fn remaining(st: &State, now: u64) -> (u64, u64) {
    let left = if st.expiry == 0 {
        0
    } else {
        st.expiry.saturating_sub(now).max(1)
    };
    (left, st.interval)
}

impl FileOps for TimerFd {
    fn read(&self, _cur: &dyn Caller, file: &File, buf: &mut [u8]) -> SysResult<usize> {
        if buf.len() < 8 {
            return Err(Errno::EINVAL);
        }
        let take = || {
            let now = self.now();
            let mut st = self.st.lock();
            st.update(now);
            if st.canceled() {
                st.ticks = 0;
                return Some(Err(Errno::ECANCELED));
            }
            if st.ticks != 0 {
                return Some(Ok(core::mem::take(&mut st.ticks)));
            }
            file.nonblocking().then_some(Err(Errno::EAGAIN))
        };
        let n = self.wq.wait(take).map_err(|_| Errno::ERESTARTSYS)??;
        buf[..8].copy_from_slice(&n.to_ne_bytes());
        Ok(8)
    }

    fn write(&self, _cur: &dyn Caller, _file: &File, _buf: &[u8]) -> SysResult<usize> {
        Err(Errno::EINVAL)
    }

    fn poll(&self, _cur: &dyn Caller) -> u32 {
        let now = self.now();
        let (fired, ready) = {
            let mut st = self.st.lock();
            (st.update(now), st.ticks != 0)
        };
        // Readers asleep on it learn of expiries counted here too.
        if fired {
            self.wq.wake_all();
        }
        if ready {
            POLLIN as u32
        } else {
            0
        }
    }

    /// TFD_IOC_SET_TICKS: the expiration count becomes the given non-zero one.
    fn ioctl(&self, _cur: &dyn Caller, _file: &File, cmd: u32, arg: usize) -> SysResult<usize> {
        if cmd != TFD_IOC_SET_TICKS {
            return Err(Errno::ENOTTY);
        }
        let ticks = UserPtr::<u64>::new(arg).read()?;
        if ticks == 0 {
            return Err(Errno::EINVAL);
        }
        {
            let mut st = self.st.lock();
            if st.canceled() {
                return Err(Errno::ECANCELED);
            }
            st.ticks = ticks;
        }
        self.changed();
        Ok(0)
    }

    /// The clock, the count not yet read, the settime flags and the setting (Linux's
    /// timerfd_show).
    fn fdinfo(&self, out: &mut dyn core::fmt::Write) {
        let now = self.now();
        let (ticks, flags, (left, interval)) = {
            let st = self.st.lock();
            (st.ticks, st.flags, remaining(&st, now))
        };
        let ts = |ns: u64| (ns / 1_000_000_000, ns % 1_000_000_000);
        let _ = write!(
            out,
            "clockid: {}\nticks: {ticks}\nsettime flags: 0{flags:o}\nit_value: {:?}\n\
             it_interval: {:?}\n",
            self.clock,
            ts(left),
            ts(interval)
        );
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// CLOCK_REALTIME was set (clock_settime, settimeofday): timers that cancel on a setting are
/// cancelled, their readers woken (Linux's timerfd_clock_was_set).
pub fn clock_was_set() {
    let moffs = crate::time::realtime_offset();
    let list: Vec<Arc<TimerFd>> = {
        let mut l = CANCEL.lock();
        l.retain(|w| w.strong_count() > 0);
        l.iter().filter_map(Weak::upgrade).collect()
    };
    for t in list {
        let woke = {
            let mut st = t.st.lock();
            if st.might_cancel && st.moffs != moffs {
                st.moffs = CANCELED;
                st.ticks = st.ticks.saturating_add(1);
                true
            } else {
                false
            }
        };
        if woke {
            t.changed();
        }
    }
}

/// Has the timer interrupt count expiries. Boot time.
pub fn init_irq() {
    crate::irq::on_tick(tick);
}

/// The tick (any CPU): armed timers count what is due and wake their readers and pollers; one
/// left with nothing ahead leaves the list.
fn tick() {
    let Some(mut l) = ARMED.try_lock() else {
        return;
    };
    let mut woke = false;
    l.retain(|w| {
        let Some(t) = w.upgrade() else { return false };
        let now = t.now();
        let Some(mut st) = t.st.try_lock() else {
            return true;
        };
        let fired = st.update(now);
        let armed = st.expiry != 0;
        drop(st);
        if fired {
            t.wq.wake_all();
            woke = true;
        }
        armed
    });
    drop(l);
    if woke {
        epoll::notify();
    }
}
