//! Clocks and timers: clock_gettime (monotonic never goes back), clock_getres, nanosleep and
//! clock_nanosleep sleep at least as asked (relative and TIMER_ABSTIME), EINTR with the time
//! left, setitimer/getitimer and SIGALRM (handled, and its default action).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

const MS: u64 = 1_000_000;

fn monotonic_increases() -> TestResult {
    let mut prev = t!(sys::clock_gettime(CLOCK_MONOTONIC));
    check!(prev.tv_nsec >= 0 && prev.tv_nsec < 1_000_000_000);
    let start = prev.ns();
    let mut spins = 0u64;
    // At least a few reads even if the host stalls this vCPU for the whole 5 ms.
    while spins < 3 || sys::now_ns() - start < 5 * MS {
        let now = t!(sys::clock_gettime(CLOCK_MONOTONIC));
        check!(
            now.ns() >= prev.ns(),
            "monotonic went back: {prev:?} -> {now:?}"
        );
        prev = now;
        spins += 1;
    }
    check!(prev.ns() > start, "monotonic never moved in {spins} reads");
    for c in [
        CLOCK_REALTIME,
        CLOCK_BOOTTIME,
        CLOCK_PROCESS_CPUTIME_ID,
        CLOCK_THREAD_CPUTIME_ID,
    ] {
        t!(sys::clock_gettime(c));
    }
    let rt = t!(sys::clock_gettime(CLOCK_REALTIME));
    check!(rt.tv_sec > 0);
    check_eq!(sys::clock_gettime(99).map(|_| ()), Err(EINVAL));
    let mut res = Timespec::default();
    t!(sys::syscall(
        nr::CLOCK_GETRES,
        &[CLOCK_MONOTONIC as usize, &mut res as *mut _ as usize]
    ));
    check!(
        res.tv_sec == 0 && res.tv_nsec > 0 && res.tv_nsec <= 10_000_000,
        "{res:?}"
    );
    Ok(())
}

fn nanosleep_sleeps_enough() -> TestResult {
    for ms in [1, 20, 60] {
        let t0 = sys::now_ns();
        t!(sys::nanosleep(&Timespec::from_ns(ms * MS), None));
        let slept = sys::now_ns() - t0;
        check!(slept >= ms * MS, "asked {ms} ms, slept {slept} ns");
    }
    check_eq!(
        sys::nanosleep(
            &Timespec {
                tv_sec: 0,
                tv_nsec: 1_000_000_000
            },
            None
        ),
        Err(EINVAL)
    );
    check_eq!(
        sys::nanosleep(
            &Timespec {
                tv_sec: -1,
                tv_nsec: 0
            },
            None
        ),
        Err(EINVAL)
    );
    check_eq!(sys::nanosleep(&Timespec::default(), None), Ok(0));
    Ok(())
}

fn clock_nanosleep(clock: u32, flags: u32, t: &Timespec) -> SysResult {
    sys::syscall(
        nr::CLOCK_NANOSLEEP,
        &[
            clock as usize,
            flags as usize,
            t as *const Timespec as usize,
            0,
        ],
    )
}

fn clock_nanosleep_relative_and_absolute() -> TestResult {
    let t0 = sys::now_ns();
    t!(clock_nanosleep(
        CLOCK_MONOTONIC,
        0,
        &Timespec::from_ns(30 * MS)
    ));
    check!(sys::now_ns() - t0 >= 30 * MS);
    let target = sys::now_ns() + 40 * MS;
    t!(clock_nanosleep(
        CLOCK_MONOTONIC,
        TIMER_ABSTIME,
        &Timespec::from_ns(target)
    ));
    check!(sys::now_ns() >= target, "woke before the absolute deadline");
    // A deadline in the past returns at once.
    t!(clock_nanosleep(
        CLOCK_MONOTONIC,
        TIMER_ABSTIME,
        &Timespec::from_ns(1)
    ));
    t!(clock_nanosleep(CLOCK_REALTIME, 0, &Timespec::from_ns(MS)));
    check_eq!(
        clock_nanosleep(CLOCK_THREAD_CPUTIME_ID, 0, &Timespec::from_ns(MS)),
        Err(EOPNOTSUPP),
        "sleeping on the calling thread's CPU clock"
    );
    Ok(())
}

static ALARMS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_alarm(sig: i32, info: *mut SigInfo, _uc: *mut u8) {
    // SAFETY: SA_SIGINFO handler: the kernel passes a valid siginfo.
    let code = unsafe { (*info).code };
    if sig == SIGALRM && code == SI_KERNEL {
        ALARMS.fetch_add(1, Ordering::SeqCst);
    } else {
        ALARMS.fetch_add(1000, Ordering::SeqCst);
    }
}

fn itimer_real_delivers_sigalrm() -> TestResult {
    t!(set_handler(SIGALRM, on_alarm, 0, 0));
    ALARMS.store(0, Ordering::SeqCst);
    let old_mask = t!(sigprocmask(SIG_BLOCK, Some(bit(SIGALRM))));
    let t0 = sys::now_ns();
    t!(sys::setitimer_real(50 * MS, 0));
    let mut cur = Itimerval::default();
    t!(sys::syscall(
        nr::GETITIMER,
        &[ITIMER_REAL as usize, &mut cur as *mut _ as usize]
    ));
    let left = cur.it_value.tv_sec * 1_000_000 + cur.it_value.tv_usec;
    check!(left > 0 && left <= 50_000, "getitimer left {left} us");
    // Wait for it with the signal unblocked only inside sigsuspend.
    check_eq!(sigsuspend(old_mask & !bit(SIGALRM)), Err(EINTR));
    let waited = sys::now_ns() - t0;
    check_eq!(ALARMS.load(Ordering::SeqCst), 1);
    check!(waited >= 50 * MS, "SIGALRM after {waited} ns");
    // A periodic timer fires again and again.
    t!(sys::setitimer_real(10 * MS, 10 * MS));
    while ALARMS.load(Ordering::SeqCst) < 4 {
        let _ = sigsuspend(old_mask & !bit(SIGALRM));
    }
    let old = t!(sys::setitimer_real(0, 0));
    // The timer may have fired again between the loop's end and the cancel (a slow board
    // takes longer than a period): that SIGALRM is pending, blocked, and is delivered below.
    let pending = t!(sigpending());
    let expected = 4 + u32::from(pending & bit(SIGALRM) != 0);
    t!(sigprocmask(SIG_SETMASK, Some(old_mask)));
    t!(set_disposition(SIGALRM, SIG_DFL));
    check_eq!(
        old.it_interval.tv_usec,
        10_000,
        "getting the old interval back"
    );
    check_eq!(ALARMS.load(Ordering::SeqCst), expected);
    Ok(())
}

fn alarm_default_action_terminates() -> TestResult {
    let st = t!(in_child(|| {
        // Whatever an earlier case left installed, the default action is what is tested.
        if set_disposition(SIGALRM, SIG_DFL).is_err() || sys::setitimer_real(20 * MS, 0).is_err() {
            return 1;
        }
        loop {
            sys::sleep_ns(1_000_000_000);
        }
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGALRM && !wcoredump(st),
        "{}",
        describe(st)
    );
    Ok(())
}

extern "C" fn noop(_sig: i32, _info: *mut SigInfo, _uc: *mut u8) {}

/// setitimer(ITIMER_REAL, 0) is final: once it returns, the old timer sends nothing more.
/// Four children (4000 rounds in all) each arm a timer that fires at every tick, spin for a
/// varying while, cancel it and put SIGALRM back to SIG_DFL: a SIGALRM that the timer had
/// decided to send before the cancel but queues after it would kill the child. (A signal
/// sent before the cancel returns is delivered to the handler on the way out of setitimer.)
fn itimer_cancel_is_final() -> TestResult {
    const CHILDREN: u32 = 4;
    const ROUNDS: u32 = 1000;
    // Linux under TCG needs ~35 s for all the rounds (Svelt ~1 s); the race this guards against
    // killed 1 to 5 of 20 children within their first rounds, so each child stops at this budget.
    const BUDGET_NS: u64 = 3_000_000_000;
    let start = sys::now_ns();
    let mut pids = [0i32; CHILDREN as usize];
    for (c, pid) in pids.iter_mut().enumerate() {
        *pid = t!(spawn(move || {
            for round in 0..ROUNDS {
                if set_handler(SIGALRM, noop, 0, 0).is_err()
                    || sys::setitimer_real(1_000, 1_000).is_err()
                {
                    return 2;
                }
                for _ in 0..(round * 7919 + c as u32 * 1237) % 3000 {
                    core::hint::spin_loop();
                }
                if sys::setitimer_real(0, 0).is_err() || set_disposition(SIGALRM, SIG_DFL).is_err()
                {
                    return 3;
                }
                // Stay a while with SIGALRM at SIG_DFL: a late SIGALRM would kill us here.
                for _ in 0..16 {
                    let _ = sys::getppid();
                }
                let _ = sys::sched_yield();
                if sys::now_ns() - start > BUDGET_NS {
                    break;
                }
            }
            0
        }));
    }
    let mut bad = Vec::new();
    for pid in pids {
        let (_, st) = t!(sys::waitpid(pid, 0));
        if !(wifexited(st) && wexitstatus(st) == 0) {
            bad.push(describe(st));
        }
    }
    check!(bad.is_empty(), "children: {bad:?}");
    Ok(())
}

fn nanosleep_interrupted_reports_remaining() -> TestResult {
    t!(set_handler(SIGALRM, noop, 0, 0));
    t!(sys::setitimer_real(30 * MS, 0));
    let mut rem = Timespec::default();
    let r = sys::nanosleep(&Timespec::from_ns(2_000 * MS), Some(&mut rem));
    check_eq!(r, Err(EINTR));
    check!(
        rem.ns() > 1_000 * MS && rem.ns() < 2_000 * MS,
        "remaining {rem:?}"
    );
    t!(set_disposition(SIGALRM, SIG_DFL));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("clock_gettime_monotonic_increases", monotonic_increases),
        ("nanosleep_sleeps_at_least", nanosleep_sleeps_enough),
        (
            "clock_nanosleep_relative_absolute",
            clock_nanosleep_relative_and_absolute,
        ),
        ("setitimer_sigalrm", itimer_real_delivers_sigalrm),
        (
            "sigalrm_default_terminates",
            alarm_default_action_terminates,
        ),
        (
            "nanosleep_eintr_remaining",
            nanosleep_interrupted_reports_remaining,
        ),
        ("itimer_cancel_is_final", itimer_cancel_is_final),
    ])
}

entry!(main);
