//! Time uapi: clock ids, `struct timespec`, `struct timeval`, `struct itimerval`,
//! `struct itimerspec`, `struct tms`, with validation as the syscalls apply it.

use crate::uapi::errno::{Errno, SysResult};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

pub const NSEC_PER_SEC: i64 = 1_000_000_000;
pub const USEC_PER_SEC: i64 = 1_000_000;
/// `AT_CLKTCK` and the unit of `times()`: USER_HZ.
pub const USER_HZ: u64 = 100;

pub const CLOCK_REALTIME: u32 = 0;
pub const CLOCK_MONOTONIC: u32 = 1;
pub const CLOCK_PROCESS_CPUTIME_ID: u32 = 2;
pub const CLOCK_THREAD_CPUTIME_ID: u32 = 3;
pub const CLOCK_MONOTONIC_RAW: u32 = 4;
pub const CLOCK_REALTIME_COARSE: u32 = 5;
pub const CLOCK_MONOTONIC_COARSE: u32 = 6;
pub const CLOCK_BOOTTIME: u32 = 7;
pub const CLOCK_REALTIME_ALARM: u32 = 8;
pub const CLOCK_BOOTTIME_ALARM: u32 = 9;
pub const CLOCK_TAI: u32 = 11;

/// clock_nanosleep / timer_settime / timerfd_settime flag: the time is absolute.
pub const TIMER_ABSTIME: u32 = 1;

/// timerfd_create's flags (O_CLOEXEC and O_NONBLOCK).
pub const TFD_CLOEXEC: u32 = 0o2000000;
pub const TFD_NONBLOCK: u32 = 0o4000;
/// timerfd_settime's flags: the value is a time on the timer's clock; with CLOCK_REALTIME
/// (absolute), a read after the clock is set says ECANCELED.
pub const TFD_TIMER_ABSTIME: u32 = 1;
pub const TFD_TIMER_CANCEL_ON_SET: u32 = 2;
/// ioctl TFD_IOC_SET_TICKS, `_IOW('T', 0, u64)`: sets the expiration count (checkpoint/restore).
pub const TFD_IOC_SET_TICKS: u32 = 0x4008_5400;

pub const ITIMER_REAL: u32 = 0;
pub const ITIMER_VIRTUAL: u32 = 1;
pub const ITIMER_PROF: u32 = 2;

/// `struct timespec` (__kernel_timespec on 64-bit: two 64-bit fields).
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
)]
pub struct Timespec {
    pub tv_sec: i64,
    pub tv_nsec: i64,
}

const _: () = assert!(core::mem::size_of::<Timespec>() == 16);

impl Timespec {
    pub const SIZE: usize = 16;
    pub const ZERO: Timespec = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };

    /// `timespec64_valid`: seconds non-negative, nanoseconds in [0, 1e9).
    pub const fn is_valid(&self) -> bool {
        self.tv_sec >= 0 && self.tv_nsec >= 0 && self.tv_nsec < NSEC_PER_SEC
    }

    /// Validate (EINVAL otherwise) as nanosleep, clock_nanosleep, setitimer-ns do.
    pub fn validate(self) -> SysResult<Timespec> {
        if self.is_valid() {
            Ok(self)
        } else {
            Err(Errno::EINVAL)
        }
    }

    pub const fn from_nanos(ns: u64) -> Timespec {
        Timespec {
            tv_sec: (ns / NSEC_PER_SEC as u64) as i64,
            tv_nsec: (ns % NSEC_PER_SEC as u64) as i64,
        }
    }

    /// Total nanoseconds, saturating at u64::MAX; a negative or invalid value gives None.
    pub const fn to_nanos(&self) -> Option<u64> {
        if !self.is_valid() {
            return None;
        }
        Some(
            (self.tv_sec as u64)
                .saturating_mul(NSEC_PER_SEC as u64)
                .saturating_add(self.tv_nsec as u64),
        )
    }
}

/// `struct timeval` (__kernel_old_timeval on 64-bit: 16 bytes).
#[repr(C)]
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    FromBytes,
    IntoBytes,
    Immutable,
    KnownLayout,
)]
pub struct Timeval {
    pub tv_sec: i64,
    pub tv_usec: i64,
}

const _: () = assert!(core::mem::size_of::<Timeval>() == 16);

impl Timeval {
    pub const SIZE: usize = 16;

    pub const fn is_valid(&self) -> bool {
        self.tv_sec >= 0 && self.tv_usec >= 0 && self.tv_usec < USEC_PER_SEC
    }

    pub const fn from_nanos(ns: u64) -> Timeval {
        Timeval {
            tv_sec: (ns / NSEC_PER_SEC as u64) as i64,
            tv_usec: ((ns % NSEC_PER_SEC as u64) / 1000) as i64,
        }
    }

    /// Nanoseconds; None if invalid.
    pub const fn to_nanos(&self) -> Option<u64> {
        if !self.is_valid() {
            return None;
        }
        Some(
            (self.tv_sec as u64)
                .saturating_mul(NSEC_PER_SEC as u64)
                .saturating_add(self.tv_usec as u64 * 1000),
        )
    }
}

/// `struct itimerval` (32 bytes): interval, then current value.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Itimerval {
    pub it_interval: Timeval,
    pub it_value: Timeval,
}

const _: () = assert!(core::mem::size_of::<Itimerval>() == 32);

impl Itimerval {
    pub const SIZE: usize = 32;

    /// setitimer's check: both timevals valid, else EINVAL.
    pub fn validate(self) -> SysResult<Itimerval> {
        if self.it_interval.is_valid() && self.it_value.is_valid() {
            Ok(self)
        } else {
            Err(Errno::EINVAL)
        }
    }
}

/// `struct itimerspec` (32 bytes): interval, then value.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Itimerspec {
    pub it_interval: Timespec,
    pub it_value: Timespec,
}

const _: () = assert!(core::mem::size_of::<Itimerspec>() == 32);

impl Itimerspec {
    pub const SIZE: usize = 32;

    pub fn validate(self) -> SysResult<Itimerspec> {
        if self.it_interval.is_valid() && self.it_value.is_valid() {
            Ok(self)
        } else {
            Err(Errno::EINVAL)
        }
    }
}

/// `struct tms` for times(2): four clock_t (i64) in USER_HZ ticks.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, FromBytes, IntoBytes, Immutable, KnownLayout,
)]
pub struct Tms {
    pub tms_utime: i64,
    pub tms_stime: i64,
    pub tms_cutime: i64,
    pub tms_cstime: i64,
}

const _: () = assert!(core::mem::size_of::<Tms>() == 32);

impl Tms {
    pub const SIZE: usize = 32;
}

/// Nanoseconds to USER_HZ clock ticks.
pub const fn nanos_to_clock_t(ns: u64) -> i64 {
    (ns / (NSEC_PER_SEC as u64 / USER_HZ)) as i64
}

/// Splits a task's exact CPU time `total` into (user, system) in the ratio of the timer
/// tick's samples `user_ticks : system_ticks`, never below the split reported before (`prev`,
/// updated), so that neither part goes back between two reads while their sum is the exact
/// total (Linux's cputime_adjust, kernel/sched/cputime.c). Without samples the time is user
/// time; a `total` not above the last sum reports the last split again.
pub fn split_cputime(
    prev: &mut (u64, u64),
    total: u64,
    user_ticks: u64,
    system_ticks: u64,
) -> (u64, u64) {
    let (pu, ps) = *prev;
    if pu.saturating_add(ps) >= total {
        return *prev;
    }
    let mut system = if system_ticks == 0 {
        0
    } else if user_ticks == 0 {
        total
    } else {
        let ticks = system_ticks as u128 + user_ticks as u128;
        (system_ticks as u128 * total as u128 / ticks) as u64
    };
    system = system.max(ps);
    let mut user = total - system;
    if user < pu {
        user = pu;
        system = total - user;
    }
    *prev = (user, system);
    (user, system)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::bytes::get_i64;

    #[test]
    fn cputime_split_follows_the_samples() {
        let mut prev = (0, 0);
        // No samples yet: all user time, as Linux books it.
        assert_eq!(split_cputime(&mut prev, 1000, 0, 0), (1000, 0));
        // One user and three system ticks: a quarter user, but user never goes back.
        assert_eq!(split_cputime(&mut prev, 4000, 1, 3), (1000, 3000));
        assert_eq!(prev, (1000, 3000));
        // Only system samples.
        let mut p = (0, 0);
        assert_eq!(split_cputime(&mut p, 500, 0, 7), (0, 500));
        // A total that did not grow reports the same split.
        assert_eq!(split_cputime(&mut prev, 4000, 9, 1), (1000, 3000));
        assert_eq!(split_cputime(&mut prev, 10, 9, 1), (1000, 3000));
        // The ratio turns towards user: system keeps what it had, user takes the rest.
        assert_eq!(split_cputime(&mut prev, 5000, 9, 1), (2000, 3000));
        // Counter-sized values do not overflow the product.
        let mut p = (0, 0);
        let (u, s) = split_cputime(&mut p, u64::MAX, u64::MAX, u64::MAX);
        assert_eq!(u.checked_add(s), Some(u64::MAX));
        assert!(u.abs_diff(s) <= 1);
    }

    #[test]
    fn cputime_split_never_goes_back() {
        let mut rng = crate::util::rng::XorShift64(0x5eed_c0de);
        for _ in 0..200 {
            let mut prev = (0, 0);
            let (mut total, mut ut, mut st) = (0u64, 0u64, 0u64);
            for _ in 0..100 {
                total += rng.below(10_000);
                ut += rng.below(3);
                st += rng.below(3);
                let before = prev;
                let (u, s) = split_cputime(&mut prev, total, ut, st);
                assert!(u >= before.0 && s >= before.1, "{before:?} -> {u}, {s}");
                assert_eq!(u + s, total.max(before.0 + before.1));
                assert_eq!(prev, (u, s));
            }
        }
    }

    #[test]
    fn timespec_rules() {
        let t = Timespec::from_nanos(3_000_000_007);
        assert_eq!(
            t,
            Timespec {
                tv_sec: 3,
                tv_nsec: 7
            }
        );
        assert_eq!(t.to_nanos(), Some(3_000_000_007));
        assert_eq!(Timespec::read_from_bytes(t.as_bytes()).ok(), Some(t));
        let bad = Timespec {
            tv_sec: 0,
            tv_nsec: NSEC_PER_SEC,
        };
        assert_eq!(bad.validate(), Err(Errno::EINVAL));
        assert_eq!(
            Timespec {
                tv_sec: -1,
                tv_nsec: 0
            }
            .to_nanos(),
            None
        );
        assert_eq!(
            Timespec {
                tv_sec: i64::MAX,
                tv_nsec: 0
            }
            .to_nanos(),
            Some(u64::MAX)
        );
    }

    #[test]
    fn timeval_itimerval() {
        let v = Timeval::from_nanos(1_500_000_000);
        assert_eq!(
            v,
            Timeval {
                tv_sec: 1,
                tv_usec: 500_000
            }
        );
        let it = Itimerval {
            it_interval: Timeval::default(),
            it_value: v,
        };
        let b = it.as_bytes();
        assert_eq!(get_i64(b, 16), 1);
        assert_eq!(get_i64(b, 24), 500_000);
        assert_eq!(Itimerval::read_from_bytes(b).ok(), Some(it));
        let bad = Itimerval {
            it_value: Timeval {
                tv_sec: 0,
                tv_usec: 1_000_000,
            },
            ..it
        };
        assert_eq!(bad.validate(), Err(Errno::EINVAL));
        assert_eq!(nanos_to_clock_t(1_000_000_000), 100);
    }
}
