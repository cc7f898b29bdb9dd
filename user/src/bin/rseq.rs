//! rseq(2): registration rules and errors, the CPU fields the kernel keeps in `struct rseq`
//! (also after a migration), inheritance across fork and loss at exec, and critical sections
//! aborted to their handler when a signal or a preemption interrupts them (with the signature
//! checked: a wrong one is SIGSEGV).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering::SeqCst};
use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::{self, SigInfo, Ucontext, SIGALRM, SIGSEGV};
use svelt_user::sys::*;
use svelt_user::*;

/// The signature before an abort handler: arm64's RSEQ_SIG (`brk #0x45e0`, as the selftests
/// and glibc use).
const SIG: u32 = 0xd428_bc00;
const FLAG_UNREGISTER: u32 = 1;
/// RSEQ_FLAG_SLICE_EXT_DEFAULT_ON: accepted (Linux 7.3 knows it; it means nothing for a
/// 32-byte registration).
const FLAG_SLICE_EXT_DEFAULT_ON: u32 = 2;
const CPU_ID_UNINITIALIZED: u32 = u32::MAX;

/// `struct rseq` (the original 32 bytes).
#[repr(C, align(32))]
struct Rseq {
    cpu_id_start: AtomicU32,
    cpu_id: AtomicU32,
    rseq_cs: AtomicU64,
    flags: AtomicU32,
    node_id: AtomicU32,
    mm_cid: AtomicU32,
    _pad: AtomicU32,
}

impl Rseq {
    const fn new() -> Rseq {
        Rseq {
            cpu_id_start: AtomicU32::new(0),
            cpu_id: AtomicU32::new(0),
            rseq_cs: AtomicU64::new(0),
            flags: AtomicU32::new(0),
            node_id: AtomicU32::new(0),
            mm_cid: AtomicU32::new(0),
            _pad: AtomicU32::new(0),
        }
    }
    fn addr(&self) -> usize {
        self as *const Rseq as usize
    }
}

const _: () = assert!(core::mem::size_of::<Rseq>() == 32);

static AREA: Rseq = Rseq::new();
static OTHER: Rseq = Rseq::new();

/// 128 bytes aligned to 64: room for longer and misaligned registrations.
#[repr(C, align(64))]
struct Big([AtomicU64; 16]);
static BIG: Big = Big([const { AtomicU64::new(0) }; 16]);

/// `struct rseq_cs`.
#[repr(C, align(32))]
struct RseqCs {
    version: u32,
    flags: u32,
    start_ip: u64,
    post_commit_offset: u64,
    abort_ip: u64,
}

fn rseq(addr: usize, len: u32, flags: u32, sig: u32) -> SysResult {
    sys::syscall(
        nr::RSEQ,
        &[addr, len as usize, flags as usize, sig as usize],
    )
}

fn register(a: &Rseq) -> SysResult {
    rseq(a.addr(), 32, 0, SIG)
}

fn unregister(a: &Rseq) -> SysResult {
    rseq(a.addr(), 32, FLAG_UNREGISTER, SIG)
}

/// A test that failed half-way may have left the main thread registered.
fn unregister_quietly() {
    let _ = unregister(&AREA);
}

core::arch::global_asm!(
    ".text",
    // u64 rseq_spin(u64 *rseq_cs_field, const RseqCs *cs): arms the critical section
    // [rseq_spin_start, rseq_spin_end) and spins inside it. Returns 1 when it left through
    // the abort handler, 0 through the end of the section (where the signal handler below
    // moves a thread the kernel failed to abort).
    ".global rseq_spin",
    ".global rseq_spin_start",
    ".global rseq_spin_end",
    ".global rseq_spin_abort",
    ".type rseq_spin, %function",
    "rseq_spin:",
    "    str x1, [x0]",
    "rseq_spin_start:",
    "    b rseq_spin_start",
    "rseq_spin_end:",
    "    mov x0, #0",
    "    ret",
    "    .word 0xd428bc00",
    "rseq_spin_abort:",
    "    mov x0, #1",
    "    ret",
    ".size rseq_spin, . - rseq_spin",
);

extern "C" {
    fn rseq_spin(field: *const AtomicU64, cs: *const RseqCs) -> u64;
    fn rseq_spin_start();
    fn rseq_spin_end();
    fn rseq_spin_abort();
}

fn spin_cs() -> RseqCs {
    let start = rseq_spin_start as *const () as u64;
    RseqCs {
        version: 0,
        flags: 0,
        start_ip: start,
        post_commit_offset: rseq_spin_end as *const () as u64 - start,
        abort_ip: rseq_spin_abort as *const () as u64,
    }
}

/// Runs the spinning critical section; true if it was aborted.
fn spin_in_section(area: &Rseq) -> bool {
    let cs = spin_cs();
    // SAFETY: rseq_spin only stores `cs`'s address into the area's rseq_cs field and spins;
    // `cs` outlives the call, and the kernel clears the field when it aborts the section.
    let r = unsafe { rseq_spin(&area.rseq_cs, &cs) };
    // The section is over: it must not stay armed with a pointer to this stack frame.
    area.rseq_cs.store(0, SeqCst);
    r == 1
}

/// Pins the caller to one CPU of its affinity mask (the one it runs on); returns the old mask.
fn pin_here() -> Result<(u64, u32), String> {
    let mask = t!(sys::sched_getaffinity(0));
    let cpu = t!(sys::getcpu());
    t!(sys::sched_setaffinity(0, 1 << cpu));
    Ok((mask, cpu))
}

fn register_and_cpu_id() -> TestResult {
    unregister_quietly();
    let (mask, cpu) = t!(pin_here());
    AREA.cpu_id.store(0x5a5a, SeqCst);
    check_eq!(register(&AREA), Ok(0));
    let r: TestResult = (|| {
        check_eq!(AREA.cpu_id.load(SeqCst), cpu, "cpu_id after registering");
        check_eq!(AREA.cpu_id_start.load(SeqCst), cpu);
        check_eq!(AREA.node_id.load(SeqCst), 0);
        check_eq!(AREA.rseq_cs.load(SeqCst), 0);
        t!(sys::sched_yield());
        check_eq!(AREA.cpu_id.load(SeqCst), t!(sys::getcpu()));
        // Moved to each CPU in turn, the thread finds that CPU in cpu_id.
        for other in (0..64).filter(|c| mask & (1 << c) != 0) {
            t!(sys::sched_setaffinity(0, 1 << other));
            t!(sys::sched_yield());
            check_eq!(t!(sys::getcpu()), other);
            check_eq!(
                AREA.cpu_id.load(SeqCst),
                other,
                "after moving to CPU {other}"
            );
            check_eq!(AREA.cpu_id_start.load(SeqCst), other);
        }
        Ok(())
    })();
    t!(sys::sched_setaffinity(0, mask));
    r?;
    check_eq!(unregister(&AREA), Ok(0));
    check_eq!(
        AREA.cpu_id.load(SeqCst),
        CPU_ID_UNINITIALIZED,
        "unregistered"
    );
    check_eq!(AREA.cpu_id_start.load(SeqCst), 0);
    // Unregistered, the kernel leaves the area alone.
    AREA.cpu_id.store(0x5a5a, SeqCst);
    t!(sys::sched_yield());
    check_eq!(AREA.cpu_id.load(SeqCst), 0x5a5a);
    Ok(())
}

/// A stale rseq_cs left in the area is cleared at registration, not followed.
fn registration_clears_stale_cs() -> TestResult {
    unregister_quietly();
    let st = t!(in_child(|| {
        AREA.rseq_cs.store(0x10, SeqCst);
        AREA.flags.store(0xffff, SeqCst);
        if register(&AREA).is_err() {
            return 2;
        }
        let _ = sys::sched_yield();
        if AREA.rseq_cs.load(SeqCst) != 0 || AREA.flags.load(SeqCst) != 0 {
            return 3;
        }
        0
    }));
    check_eq!(st, 0, "child: {}", describe(st));
    Ok(())
}

fn registration_errors() -> TestResult {
    unregister_quietly();
    let big = BIG.0.as_ptr() as usize;
    // Lengths and alignment, with nothing registered.
    check_eq!(rseq(AREA.addr(), 31, 0, SIG), Err(EINVAL), "len 31");
    check_eq!(rseq(AREA.addr(), 0, 0, SIG), Err(EINVAL), "len 0");
    check_eq!(
        rseq(big + 16, 32, 0, SIG),
        Err(EINVAL),
        "len 32 aligned to 16"
    );
    check_eq!(
        rseq(big + 8, 64, 0, SIG),
        Err(EINVAL),
        "len 64 aligned to 8"
    );
    check_eq!(rseq(AREA.addr(), 32, 4, SIG), Err(EINVAL), "unknown flag");
    check_eq!(
        unregister(&AREA),
        Err(EINVAL),
        "unregister with nothing registered"
    );
    // Areas the kernel cannot write.
    check_eq!(
        rseq(0xffff_8000_0000_0000, 32, 0, SIG),
        Err(EFAULT),
        "kernel address"
    );
    let page = t!(sys::mmap_anon(4096));
    t!(sys::mprotect(page, 4096, PROT_READ));
    check_eq!(rseq(page, 32, 0, SIG), Err(EFAULT), "read-only page");
    t!(sys::munmap(page, 4096));
    check_eq!(rseq(page, 32, 0, SIG), Err(EFAULT), "unmapped page");
    // A longer area, aligned to 64.
    check_eq!(rseq(big, 64, 0, SIG), Ok(0), "len 64 aligned to 64");
    check_eq!(
        rseq(big, 32, FLAG_UNREGISTER, SIG),
        Err(EINVAL),
        "other len"
    );
    check_eq!(rseq(big, 64, FLAG_UNREGISTER, SIG), Ok(0));
    // Registered: the same arguments are EBUSY, others EINVAL, another signature EPERM.
    check_eq!(register(&AREA), Ok(0));
    let r: TestResult = (|| {
        check_eq!(register(&AREA), Err(EBUSY));
        check_eq!(register(&OTHER), Err(EINVAL), "another address");
        check_eq!(rseq(AREA.addr(), 64, 0, SIG), Err(EINVAL), "another length");
        check_eq!(
            rseq(AREA.addr(), 32, 0, SIG ^ 1),
            Err(EPERM),
            "another signature"
        );
        check_eq!(
            rseq(AREA.addr(), 32, 4, SIG),
            Err(EINVAL),
            "unknown flag first"
        );
        check_eq!(unregister(&OTHER), Err(EINVAL));
        check_eq!(rseq(AREA.addr(), 64, FLAG_UNREGISTER, SIG), Err(EINVAL));
        check_eq!(rseq(AREA.addr(), 32, FLAG_UNREGISTER, SIG ^ 1), Err(EPERM));
        check_eq!(rseq(AREA.addr(), 32, FLAG_UNREGISTER | 4, SIG), Err(EINVAL));
        Ok(())
    })();
    check_eq!(unregister(&AREA), Ok(0));
    r?;
    check_eq!(unregister(&AREA), Err(EINVAL), "twice");
    check_eq!(
        rseq(AREA.addr(), 32, FLAG_SLICE_EXT_DEFAULT_ON, SIG),
        Ok(0),
        "RSEQ_FLAG_SLICE_EXT_DEFAULT_ON"
    );
    check_eq!(unregister(&AREA), Ok(0));
    Ok(())
}

/// A forked child keeps its parent's registration; exec drops it.
fn fork_keeps_exec_drops() -> TestResult {
    unregister_quietly();
    check_eq!(register(&AREA), Ok(0));
    let st = in_child(|| {
        if pin_here().is_err() || sys::sched_yield().is_err() {
            return 2;
        }
        if Ok(AREA.cpu_id.load(SeqCst)) != sys::getcpu() {
            return 3;
        }
        if register(&AREA) != Err(EBUSY) {
            return 4;
        }
        let e = sys::execve("/bin/tests/rseq", &["rseq", "--after-exec"], &[]);
        eprintln!("# execve: {e:?}");
        5
    });
    check_eq!(unregister(&AREA), Ok(0));
    let st = t!(st);
    check_eq!(st, 0, "child: {}", describe(st));
    Ok(())
}

/// Run by fork_keeps_exec_drops after execve: nothing is registered.
fn after_exec() -> i32 {
    if unregister(&AREA) != Err(EINVAL) {
        return 10;
    }
    if register(&AREA) != Ok(0) || unregister(&AREA) != Ok(0) {
        return 11;
    }
    0
}

static HANDLED: AtomicUsize = AtomicUsize::new(0);
static ABORTED_AT: AtomicU64 = AtomicU64::new(0);
static CS_IN_HANDLER: AtomicU64 = AtomicU64::new(u64::MAX);
static NOT_ABORTED: AtomicUsize = AtomicUsize::new(0);

/// SIGALRM: records where the signal found the thread. Still inside the section means the
/// kernel did not abort it: the thread is moved past its end so that the test can fail.
extern "C" fn on_alarm(_s: i32, _i: *mut SigInfo, uc: *mut u8) {
    let uc = Ucontext(uc);
    HANDLED.fetch_add(1, SeqCst);
    let pc = uc.pc();
    let start = rseq_spin_start as *const () as u64;
    if pc == rseq_spin_abort as *const () as u64 {
        ABORTED_AT.store(pc, SeqCst);
        CS_IN_HANDLER.store(AREA.rseq_cs.load(SeqCst), SeqCst);
    } else if pc == start {
        NOT_ABORTED.fetch_add(1, SeqCst);
        uc.set_pc(rseq_spin_end as *const () as u64);
    }
}

fn set_alarm_ms(ms: i64) -> SysResult {
    let t = Itimerval {
        it_interval: Timeval {
            tv_sec: 0,
            tv_usec: ms * 1000,
        },
        it_value: Timeval {
            tv_sec: 0,
            tv_usec: ms * 1000,
        },
    };
    sys::syscall(
        nr::SETITIMER,
        &[ITIMER_REAL as usize, &t as *const Itimerval as usize, 0],
    )
}

/// A signal delivered inside the section: the frame holds abort_ip, rseq_cs is cleared, and
/// after the handler the thread runs the abort handler.
fn abort_on_signal() -> TestResult {
    unregister_quietly();
    HANDLED.store(0, SeqCst);
    NOT_ABORTED.store(0, SeqCst);
    ABORTED_AT.store(0, SeqCst);
    t!(sig::set_handler(SIGALRM, on_alarm, 0, 0));
    check_eq!(register(&AREA), Ok(0));
    // Periodic: a signal that lands before the section is armed is followed by another. A
    // preemption may abort the section before any signal does (Linux on one CPU does, when
    // another task runs): the section is entered again until a signal has found it.
    t!(set_alarm_ms(3));
    let mut aborted = false;
    for _ in 0..100 {
        aborted = spin_in_section(&AREA);
        if ABORTED_AT.load(SeqCst) != 0 || NOT_ABORTED.load(SeqCst) != 0 {
            break;
        }
    }
    t!(set_alarm_ms(0));
    let _ = sig::set_disposition(SIGALRM, sig::SIG_DFL);
    check_eq!(unregister(&AREA), Ok(0));
    check_eq!(
        NOT_ABORTED.load(SeqCst),
        0,
        "signals found the thread inside the section"
    );
    check!(aborted, "the section ended without an abort");
    check_eq!(
        ABORTED_AT.load(SeqCst),
        rseq_spin_abort as *const () as u64,
        "the signal frame's pc"
    );
    check_eq!(
        CS_IN_HANDLER.load(SeqCst),
        0,
        "rseq_cs cleared by the abort"
    );
    Ok(())
}

/// Preempted inside the section by a busy process on the same CPU: the thread resumes at the
/// abort handler (a kernel that never aborts makes it spin until the time limit).
fn abort_on_preemption() -> TestResult {
    unregister_quietly();
    let (mask, cpu) = t!(pin_here());
    let hog = spawn(|| {
        let _ = sys::sched_setaffinity(0, 1 << cpu);
        loop {
            core::hint::spin_loop();
        }
    });
    let r = in_child_bounded(
        || {
            if register(&AREA).is_err() {
                return 2;
            }
            if spin_in_section(&AREA) {
                0
            } else {
                3
            }
        },
        60_000_000_000,
    );
    if let Ok(h) = hog {
        let _ = sys::kill(h, sig::SIGKILL);
        let _ = sys::waitpid(h, 0);
    }
    t!(sys::sched_setaffinity(0, mask));
    let (st, timed_out) = t!(r);
    check!(!timed_out, "never aborted (time limit)");
    check_eq!(st, 0, "child: {}", describe(st));
    Ok(())
}

/// An abort handler not preceded by the registered signature: SIGSEGV instead of the abort.
fn abort_checks_signature() -> TestResult {
    unregister_quietly();
    let (st, timed_out) = t!(in_child_bounded(
        || {
            if rseq(AREA.addr(), 32, 0, SIG ^ 0x10).is_err() {
                return 2;
            }
            let _ = sig::set_handler(SIGALRM, on_alarm, 0, 0);
            let _ = set_alarm_ms(3);
            spin_in_section(&AREA);
            3
        },
        60_000_000_000,
    ));
    check!(!timed_out, "time limit");
    check!(
        wifsignaled(st) && wtermsig(st) == SIGSEGV,
        "child: {}",
        describe(st)
    );
    Ok(())
}

/// A section whose abort_ip lies inside it is invalid: SIGSEGV.
fn abort_ip_inside_section_is_sigsegv() -> TestResult {
    unregister_quietly();
    let (st, _) = t!(in_child_bounded(
        || {
            if register(&AREA).is_err() {
                return 2;
            }
            let start = rseq_spin_start as *const () as u64;
            let cs = RseqCs {
                version: 0,
                flags: 0,
                start_ip: start,
                post_commit_offset: 64,
                abort_ip: start + 8,
            };
            AREA.rseq_cs.store(&cs as *const RseqCs as u64, SeqCst);
            // The next return to user mode after a switch or signal checks it.
            let _ = sig::set_handler(SIGALRM, on_alarm, 0, 0);
            let _ = set_alarm_ms(3);
            // SAFETY: the area already points at `cs`, which outlives the spin.
            unsafe { rseq_spin(&AREA.rseq_cs, &cs) };
            3
        },
        60_000_000_000,
    ));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGSEGV,
        "child: {}",
        describe(st)
    );
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--after-exec") {
        return after_exec();
    }
    ktap::run(&[
        ("register_and_cpu_id", register_and_cpu_id),
        ("registration_clears_stale_cs", registration_clears_stale_cs),
        ("registration_errors", registration_errors),
        ("fork_keeps_exec_drops", fork_keeps_exec_drops),
        ("abort_on_signal", abort_on_signal),
        ("abort_on_preemption", abort_on_preemption),
        ("abort_checks_signature", abort_checks_signature),
        (
            "abort_ip_inside_section_is_sigsegv",
            abort_ip_inside_section_is_sigsegv,
        ),
    ])
}

entry!(main);
