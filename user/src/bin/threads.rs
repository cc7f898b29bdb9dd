//! Threads made with glibc's pthread clone flags: shared memory and pid, own tid, TLS through
//! TPIDR_EL0 (CLONE_SETTLS), CLONE_PARENT_SETTID, CLONE_CHILD_CLEARTID waking the joiner, and
//! futex WAIT/WAKE (private and shared) used as a lock by several threads.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicUsize, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sys::*;
use svelt_user::*;

static SEEN: [AtomicUsize; 4] = [const { AtomicUsize::new(0) }; 4];
static GATE: AtomicU32 = AtomicU32::new(0);

extern "C" fn report_ids(_arg: usize) -> i32 {
    // Stay alive until the creator has looked at the tid word.
    while GATE.load(Ordering::SeqCst) == 0 {
        let _ = sys::sched_yield();
    }
    SEEN[0].store(sys::getpid() as usize, Ordering::SeqCst);
    SEEN[1].store(sys::gettid() as usize, Ordering::SeqCst);
    SEEN[2].store(tpidr_el0(), Ordering::SeqCst);
    SEEN[3].store(sys::getppid() as usize, Ordering::SeqCst);
    0
}

fn thread_ids_and_tls() -> TestResult {
    let my_tls = tpidr_el0();
    let t = t!(spawn_thread(report_ids, 0, 0xdead_beef_0000));
    let word = t.tid_word();
    GATE.store(1, Ordering::SeqCst);
    let tid = t.tid;
    t.join();
    check_eq!(word, tid, "CLONE_PARENT_SETTID stored the tid");
    check_eq!(
        SEEN[0].load(Ordering::SeqCst),
        sys::getpid() as usize,
        "same pid (tgid)"
    );
    check_eq!(
        SEEN[1].load(Ordering::SeqCst),
        tid as usize,
        "gettid in the thread"
    );
    check!(tid != sys::getpid());
    check_eq!(
        SEEN[2].load(Ordering::SeqCst),
        0xdead_beef_0000,
        "TPIDR_EL0 from CLONE_SETTLS"
    );
    check_eq!(
        SEEN[3].load(Ordering::SeqCst),
        sys::getppid() as usize,
        "same parent"
    );
    check_eq!(tpidr_el0(), my_tls, "the creator's TPIDR_EL0 is unchanged");
    Ok(())
}

extern "C" fn tls_roundtrip(arg: usize) -> i32 {
    // Each thread sets its own TPIDR_EL0, yields, and checks nobody changed it.
    let mine = 0x1000 * (arg + 1);
    // SAFETY: TPIDR_EL0 is this thread's register; the runtime does not use it.
    unsafe { core::arch::asm!("msr tpidr_el0, {}", in(reg) mine) };
    for _ in 0..200 {
        let _ = sys::sched_yield();
        if tpidr_el0() != mine {
            return 1;
        }
    }
    SEEN[arg].store(1, Ordering::SeqCst);
    0
}

fn tpidr_el0_is_per_thread() -> TestResult {
    for s in &SEEN {
        s.store(0, Ordering::SeqCst);
    }
    let threads: Vec<_> = (0..4)
        .map(|i| spawn_thread(tls_roundtrip, i, 0))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("clone: {e:?}"))?;
    // The main thread too.
    // SAFETY: as in tls_roundtrip.
    unsafe { core::arch::asm!("msr tpidr_el0, {}", in(reg) 0x77usize) };
    for _ in 0..200 {
        let _ = sys::sched_yield();
        check_eq!(tpidr_el0(), 0x77);
    }
    for t in threads {
        t.join();
    }
    for (i, s) in SEEN.iter().enumerate() {
        check_eq!(
            s.load(Ordering::SeqCst),
            1,
            "thread {} kept its TPIDR_EL0",
            i
        );
    }
    Ok(())
}

fn futex_basics() -> TestResult {
    let word = AtomicU32::new(5);
    let p = word.as_ptr() as *const u32;
    check_eq!(
        sys::futex(p, FUTEX_WAIT, 6, 0),
        Err(EAGAIN),
        "value differs"
    );
    check_eq!(
        sys::futex(p, FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 6, 0),
        Err(EAGAIN)
    );
    let ts = Timespec::from_ns(20_000_000);
    let t0 = sys::now_ns();
    check_eq!(
        sys::futex(
            p,
            FUTEX_WAIT | FUTEX_PRIVATE_FLAG,
            5,
            &ts as *const _ as usize
        ),
        Err(ETIMEDOUT)
    );
    check!(sys::now_ns() - t0 >= 20_000_000, "timed out early");
    check_eq!(sys::futex(p, FUTEX_WAKE, 1, 0), Ok(0), "nobody waiting");
    check_eq!(sys::futex(p, 99, 1, 0), Err(ENOSYS), "unknown op");
    check_eq!(
        sys::futex((p as usize + 1) as *const u32, FUTEX_WAKE, 1, 0),
        Err(EINVAL),
        "unaligned"
    );
    Ok(())
}

static WAKE_WORD: AtomicU32 = AtomicU32::new(0);
static WOKEN: AtomicU32 = AtomicU32::new(0);

extern "C" fn waiter(_arg: usize) -> i32 {
    while WAKE_WORD.load(Ordering::SeqCst) == 0 {
        let _ = sys::futex(WAKE_WORD.as_ptr(), FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 0, 0);
    }
    WOKEN.fetch_add(1, Ordering::SeqCst);
    0
}

fn futex_wake_wakes_waiters() -> TestResult {
    let ts: Vec<_> = (0..3)
        .map(|i| spawn_thread(waiter, i, 0))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("clone: {e:?}"))?;
    sys::sleep_ns(50_000_000); // let them block
    WAKE_WORD.store(1, Ordering::SeqCst);
    let mut woken = 0;
    let t0 = sys::now_ns();
    while woken < 3 && sys::now_ns() - t0 < 5_000_000_000 {
        woken += t!(sys::futex(
            WAKE_WORD.as_ptr(),
            FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
            3,
            0
        ));
        sys::sleep_ns(5_000_000);
    }
    for t in ts {
        t.join();
    }
    check_eq!(WOKEN.load(Ordering::SeqCst), 3);
    check!(woken <= 3, "FUTEX_WAKE reported {woken} woken");
    Ok(())
}

fn shared_futex_across_processes() -> TestResult {
    let word = Shared::new(0u32);
    let p = word.addr() as *const u32;
    let child = t!(spawn(|| {
        // Wait (shared futex: no PRIVATE flag) until the parent flips the word.
        let t0 = sys::now_ns();
        // SAFETY: p is in the shared mapping.
        while unsafe { core::ptr::read_volatile(p) } == 0 {
            let ts = Timespec::from_ns(2_000_000_000);
            let _ = sys::futex(p, FUTEX_WAIT, 0, &ts as *const _ as usize);
            if sys::now_ns() - t0 > 10_000_000_000 {
                return 2;
            }
        }
        0
    }));
    sys::sleep_ns(50_000_000);
    word.set(1);
    // Wake until the child has gone (it may not have been waiting yet).
    let mut total = 0;
    loop {
        total += t!(sys::futex(p, FUTEX_WAKE, 1, 0));
        match t!(sys::waitpid(child, WNOHANG)) {
            (0, _) => sys::sleep_ns(5_000_000),
            (_, st) => {
                check_eq!(describe(st), "exited 0");
                break;
            }
        }
    }
    check!(total <= 1, "woke {total}");
    Ok(())
}

/// A three-state futex mutex (0 free, 1 locked, 2 locked with waiters).
struct Mutex(AtomicU32);

impl Mutex {
    fn lock(&self) {
        if self
            .0
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
        while self.0.swap(2, Ordering::Acquire) != 0 {
            let _ = sys::futex(self.0.as_ptr(), FUTEX_WAIT | FUTEX_PRIVATE_FLAG, 2, 0);
        }
    }
    fn unlock(&self) {
        if self.0.swap(0, Ordering::Release) == 2 {
            let _ = sys::futex(self.0.as_ptr(), FUTEX_WAKE | FUTEX_PRIVATE_FLAG, 1, 0);
        }
    }
}

static LOCK: Mutex = Mutex(AtomicU32::new(0));
static mut COUNTER: u64 = 0;
const PER_THREAD: u64 = 20_000;

extern "C" fn increment(_arg: usize) -> i32 {
    for _ in 0..PER_THREAD {
        LOCK.lock();
        // SAFETY: COUNTER is only touched with LOCK held.
        unsafe {
            let c = core::ptr::addr_of_mut!(COUNTER);
            c.write_volatile(c.read_volatile() + 1);
        }
        LOCK.unlock();
    }
    0
}

fn futex_mutex_counter() -> TestResult {
    let ts: Vec<_> = (0..4)
        .map(|i| spawn_thread(increment, i, 0))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("clone: {e:?}"))?;
    increment(9);
    for t in ts {
        t.join();
    }
    LOCK.lock();
    // SAFETY: as in increment.
    let total = unsafe { core::ptr::addr_of!(COUNTER).read_volatile() };
    LOCK.unlock();
    check_eq!(total, 5 * PER_THREAD);
    Ok(())
}

static EXITED_TID: AtomicI32 = AtomicI32::new(0);

extern "C" fn short_lived(_arg: usize) -> i32 {
    EXITED_TID.store(sys::gettid(), Ordering::SeqCst);
    7
}

fn child_cleartid_wakes_joiner() -> TestResult {
    let t = t!(spawn_thread(short_lived, 0, 0));
    let tid = t.tid;
    let t0 = sys::now_ns();
    t.join(); // returns only once the kernel cleared the word and woke us
    check!(sys::now_ns() - t0 < 5_000_000_000);
    check_eq!(EXITED_TID.load(Ordering::SeqCst), tid);
    // The tid word is cleared during the thread's exit, slightly before the thread is gone for
    // good: tgkill may still find it for a moment, then fails with ESRCH.
    let t0 = sys::now_ns();
    while sys::tgkill(sys::getpid(), tid, 0).is_ok() && sys::now_ns() - t0 < 2_000_000_000 {
        sys::sleep_ns(1_000_000);
    }
    check_eq!(sys::tgkill(sys::getpid(), tid, 0), Err(ESRCH));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("thread_ids_and_settls", thread_ids_and_tls),
        ("tpidr_el0_is_per_thread", tpidr_el0_is_per_thread),
        ("futex_wait_errors_and_timeout", futex_basics),
        ("futex_wake_wakes_waiters", futex_wake_wakes_waiters),
        ("futex_shared_across_fork", shared_futex_across_processes),
        ("futex_mutex_counter", futex_mutex_counter),
        ("child_cleartid_wakes_joiner", child_cleartid_wakes_joiner),
    ])
}

entry!(main);
