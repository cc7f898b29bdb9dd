//! Signal handling: rt_sigaction flags (SA_SIGINFO, SA_RESTORER, SA_ONSTACK, SA_RESTART,
//! SA_NODEFER, SA_RESETHAND), masks, pending sets, sigsuspend, kill/tgkill/tkill siginfo,
//! sigaltstack, registers restored by rt_sigreturn, and default actions (terminate, stop and
//! continue, ignore).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::proc::*;
use svelt_user::sig::*;
use svelt_user::sys::*;
use svelt_user::*;

static COUNT: AtomicU32 = AtomicU32::new(0);
static LAST_CODE: AtomicI32 = AtomicI32::new(0);
static LAST_PID: AtomicI32 = AtomicI32::new(0);
static LAST_MASK: AtomicU64 = AtomicU64::new(0);
static LAST_SP: AtomicU64 = AtomicU64::new(0);
static LAST_SS_FLAGS: AtomicI32 = AtomicI32::new(0);
static LAST_ARGS_OK: AtomicU32 = AtomicU32::new(0);
static DEPTH: AtomicU32 = AtomicU32::new(0);
static MAX_DEPTH: AtomicU32 = AtomicU32::new(0);

fn reset() {
    for a in [&COUNT, &LAST_ARGS_OK, &DEPTH, &MAX_DEPTH] {
        a.store(0, Ordering::SeqCst);
    }
}

extern "C" fn record(sig: i32, info: *mut SigInfo, ucp: *mut u8) {
    let d = DEPTH.fetch_add(1, Ordering::SeqCst) + 1;
    MAX_DEPTH.fetch_max(d, Ordering::SeqCst);
    COUNT.fetch_add(1, Ordering::SeqCst);
    // SAFETY: SA_SIGINFO handler: valid siginfo and ucontext pointers.
    let i = unsafe { *info };
    LAST_CODE.store(i.code, Ordering::SeqCst);
    LAST_PID.store(i.pid(), Ordering::SeqCst);
    let ucx = Ucontext(ucp);
    LAST_ARGS_OK.store(u32::from(i.signo == sig), Ordering::SeqCst);
    // The mask in force while the handler runs.
    LAST_MASK.store(sigprocmask(SIG_BLOCK, None).unwrap_or(0), Ordering::SeqCst);
    let sp: u64;
    // SAFETY: reads SP only.
    unsafe { core::arch::asm!("mov {}, sp", out(reg) sp) };
    LAST_SP.store(sp, Ordering::SeqCst);
    let ss = sigaltstack(None).map(|s| s.flags).unwrap_or(-1);
    LAST_SS_FLAGS.store(ss, Ordering::SeqCst);
    // SA_NODEFER test: re-raise once from inside the handler.
    if sig == SIGUSR2 && d == 1 && COUNT.load(Ordering::SeqCst) == 1 {
        let _ = sys::kill(sys::getpid(), SIGUSR2);
    }
    let _ = ucx;
    DEPTH.fetch_sub(1, Ordering::SeqCst);
}

fn sa_siginfo_and_kill_fields() -> TestResult {
    reset();
    t!(set_handler(SIGUSR1, record, 0, 0));
    t!(sys::kill(sys::getpid(), SIGUSR1));
    check_eq!(
        COUNT.load(Ordering::SeqCst),
        1,
        "delivered before kill returned"
    );
    check_eq!(LAST_ARGS_OK.load(Ordering::SeqCst), 1, "x0 == si_signo");
    check_eq!(LAST_CODE.load(Ordering::SeqCst), SI_USER);
    check_eq!(LAST_PID.load(Ordering::SeqCst), sys::getpid());
    check!(
        LAST_MASK.load(Ordering::SeqCst) & bit(SIGUSR1) != 0,
        "the signal is blocked in its handler"
    );
    check_eq!(
        t!(sigprocmask(SIG_BLOCK, None)) & bit(SIGUSR1),
        0,
        "and unblocked after"
    );
    t!(sys::tgkill(sys::getpid(), sys::gettid(), SIGUSR1));
    check_eq!(LAST_CODE.load(Ordering::SeqCst), SI_TKILL);
    t!(sys::tkill(sys::gettid(), SIGUSR1));
    check_eq!(LAST_CODE.load(Ordering::SeqCst), SI_TKILL);
    check_eq!(COUNT.load(Ordering::SeqCst), 3);
    // Errors.
    check_eq!(sys::kill(sys::getpid(), 65), Err(EINVAL));
    check_eq!(sys::kill(0x3fff_fff0, SIGUSR1), Err(ESRCH));
    check_eq!(sys::tgkill(sys::getpid(), 0x3fff_fff0, SIGUSR1), Err(ESRCH));
    check_eq!(sys::tgkill(sys::getpid(), 0, SIGUSR1), Err(EINVAL));
    check_eq!(sys::kill(sys::getpid(), 0), Ok(0), "signal 0 only checks");
    t!(set_disposition(SIGUSR1, SIG_DFL));
    Ok(())
}

fn sigaction_old_values_and_errors() -> TestResult {
    t!(set_handler(SIGUSR1, record, SA_RESTART, bit(SIGUSR2)));
    let old = t!(sigaction_raw(SIGUSR1, None));
    check_eq!(old.handler, record as *const () as usize);
    check_eq!(old.flags, SA_SIGINFO | SA_RESTORER | SA_RESTART);
    check_eq!(old.restorer, restorer());
    check_eq!(old.mask, bit(SIGUSR2));
    t!(set_disposition(SIGUSR1, SIG_DFL));
    check_eq!(t!(sigaction_raw(SIGUSR1, None)).handler, SIG_DFL);
    let act = KSigaction {
        handler: SIG_IGN,
        ..KSigaction::default()
    };
    check_eq!(sigaction_raw(SIGKILL, Some(&act)).map(|_| ()), Err(EINVAL));
    check_eq!(sigaction_raw(SIGSTOP, Some(&act)).map(|_| ()), Err(EINVAL));
    check_eq!(sigaction_raw(0, None).map(|_| ()), Err(EINVAL));
    check_eq!(sigaction_raw(65, None).map(|_| ()), Err(EINVAL));
    // Reading SIGKILL's action is allowed.
    check_eq!(sigaction_raw(SIGKILL, None).map(|a| a.handler), Ok(SIG_DFL));
    let r = sys::syscall(nr::RT_SIGACTION, &[SIGUSR1 as usize, 0, 0, 4]);
    check_eq!(r, Err(EINVAL), "sigsetsize != 8");
    Ok(())
}

fn mask_pending_and_sigsuspend() -> TestResult {
    reset();
    t!(set_handler(SIGUSR1, record, 0, 0));
    let old = t!(sigprocmask(SIG_BLOCK, Some(bit(SIGUSR1))));
    t!(sys::kill(sys::getpid(), SIGUSR1));
    check_eq!(COUNT.load(Ordering::SeqCst), 0, "blocked: not delivered");
    check_eq!(t!(sigpending()) & bit(SIGUSR1), bit(SIGUSR1));
    // A standard signal is queued once.
    t!(sys::kill(sys::getpid(), SIGUSR1));
    check_eq!(sigsuspend(old & !bit(SIGUSR1)), Err(EINTR));
    check_eq!(COUNT.load(Ordering::SeqCst), 1);
    check_eq!(t!(sigpending()), 0);
    check_eq!(
        t!(sigprocmask(SIG_BLOCK, None)) & bit(SIGUSR1),
        bit(SIGUSR1),
        "sigsuspend restored the mask"
    );
    // SIGKILL and SIGSTOP cannot be blocked.
    t!(sigprocmask(SIG_BLOCK, Some(bit(SIGKILL) | bit(SIGSTOP))));
    check_eq!(
        t!(sigprocmask(SIG_BLOCK, None)) & (bit(SIGKILL) | bit(SIGSTOP)),
        0
    );
    // Unblocking a pending signal delivers it before sigprocmask returns.
    t!(sys::kill(sys::getpid(), SIGUSR1));
    t!(sigprocmask(SIG_UNBLOCK, Some(bit(SIGUSR1))));
    check_eq!(COUNT.load(Ordering::SeqCst), 2);
    t!(sigprocmask(SIG_SETMASK, Some(old)));
    check_eq!(sigprocmask(7, Some(0)).map(|_| ()), Err(EINVAL));
    // Real-time signals queue every instance.
    reset();
    t!(set_handler(SIGRTMIN + 1, record, 0, 0));
    t!(sigprocmask(SIG_BLOCK, Some(bit(SIGRTMIN + 1))));
    for _ in 0..3 {
        t!(sys::kill(sys::getpid(), SIGRTMIN + 1));
    }
    t!(sigprocmask(SIG_SETMASK, Some(old)));
    check_eq!(COUNT.load(Ordering::SeqCst), 3, "queued real-time signals");
    t!(set_disposition(SIGUSR1, SIG_DFL));
    t!(set_disposition(SIGRTMIN + 1, SIG_DFL));
    Ok(())
}

fn sa_nodefer_and_resethand() -> TestResult {
    // Without SA_NODEFER the re-raise inside the handler waits until it returns (depth 1).
    reset();
    t!(set_handler(SIGUSR2, record, 0, 0));
    t!(sys::kill(sys::getpid(), SIGUSR2));
    check_eq!(COUNT.load(Ordering::SeqCst), 2);
    check_eq!(MAX_DEPTH.load(Ordering::SeqCst), 1);
    // With SA_NODEFER it nests.
    reset();
    t!(set_handler(SIGUSR2, record, SA_NODEFER, 0));
    t!(sys::kill(sys::getpid(), SIGUSR2));
    check_eq!(COUNT.load(Ordering::SeqCst), 2);
    check_eq!(MAX_DEPTH.load(Ordering::SeqCst), 2);
    check_eq!(
        LAST_MASK.load(Ordering::SeqCst) & bit(SIGUSR2),
        0,
        "not blocked in its handler"
    );
    // sa_mask adds to the mask during the handler.
    reset();
    t!(set_handler(SIGUSR1, record, 0, bit(SIGWINCH)));
    t!(sys::kill(sys::getpid(), SIGUSR1));
    check!(
        LAST_MASK.load(Ordering::SeqCst) & bit(SIGWINCH) != 0,
        "sa_mask applied"
    );
    // SA_RESETHAND: one delivery, then the default action is back.
    t!(set_handler(SIGUSR1, record, SA_RESETHAND, 0));
    reset();
    t!(sys::kill(sys::getpid(), SIGUSR1));
    check_eq!(COUNT.load(Ordering::SeqCst), 1);
    check_eq!(t!(sigaction_raw(SIGUSR1, None)).handler, SIG_DFL);
    t!(set_disposition(SIGUSR2, SIG_DFL));
    Ok(())
}

fn sigaltstack_and_sa_onstack() -> TestResult {
    let size = 64 * 1024;
    let stack = t!(sys::mmap_anon(size));
    check_eq!(
        t!(sigaltstack(None)).flags,
        SS_DISABLE,
        "no altstack at first"
    );
    let ss = StackT {
        sp: stack,
        flags: 0,
        _pad: 0,
        size,
    };
    t!(sigaltstack(Some(&ss)));
    let cur = t!(sigaltstack(None));
    check_eq!((cur.sp, cur.size, cur.flags), (stack, size, 0));
    reset();
    t!(set_handler(SIGUSR1, record, SA_ONSTACK, 0));
    t!(sys::kill(sys::getpid(), SIGUSR1));
    let sp = LAST_SP.load(Ordering::SeqCst) as usize;
    check!(
        sp > stack && sp < stack + size,
        "handler SP {sp:#x} not on the altstack"
    );
    check_eq!(
        LAST_SS_FLAGS.load(Ordering::SeqCst),
        SS_ONSTACK,
        "ss_flags inside the handler"
    );
    // Without SA_ONSTACK the handler stays on the normal stack.
    t!(set_handler(SIGUSR1, record, 0, 0));
    t!(sys::kill(sys::getpid(), SIGUSR1));
    let sp = LAST_SP.load(Ordering::SeqCst) as usize;
    check!(
        !(sp > stack && sp < stack + size),
        "handler ran on the altstack without SA_ONSTACK"
    );
    check_eq!(LAST_SS_FLAGS.load(Ordering::SeqCst), 0);
    // Too small, bad flags, disable.
    let small = StackT {
        sp: stack,
        flags: 0,
        _pad: 0,
        size: 1024,
    };
    check_eq!(sigaltstack(Some(&small)).map(|_| ()), Err(ENOMEM));
    let bad = StackT {
        sp: stack,
        flags: 0x10,
        _pad: 0,
        size,
    };
    check_eq!(sigaltstack(Some(&bad)).map(|_| ()), Err(EINVAL));
    let off = StackT {
        sp: 0,
        flags: SS_DISABLE,
        _pad: 0,
        size: 0,
    };
    t!(sigaltstack(Some(&off)));
    check_eq!(t!(sigaltstack(None)).flags, SS_DISABLE);
    t!(set_disposition(SIGUSR1, SIG_DFL));
    t!(sys::munmap(stack, size));
    Ok(())
}

extern "C" fn noop(_sig: i32, _info: *mut SigInfo, _uc: *mut u8) {
    COUNT.fetch_add(1, Ordering::SeqCst);
}

fn sa_restart_vs_eintr() -> TestResult {
    // A read on an empty pipe interrupted by a handled signal: EINTR without SA_RESTART,
    // restarted (and then satisfied by the child's write) with it.
    for (flags, restart) in [(0, false), (SA_RESTART, true)] {
        t!(set_handler(SIGUSR1, noop, flags, 0));
        let [r, w] = t!(sys::pipe2(0));
        let parent = sys::getpid();
        let pid = t!(spawn(|| {
            sys::sleep_ns(50_000_000);
            let _ = sys::kill(parent, SIGUSR1);
            sys::sleep_ns(50_000_000);
            i32::from(sys::write(w, b"k").is_err())
        }));
        let mut buf = [0u8; 1];
        let r1 = sys::read(r, &mut buf);
        if restart {
            check_eq!(r1, Ok(1), "SA_RESTART");
        } else {
            check_eq!(r1, Err(EINTR), "no SA_RESTART");
        }
        t!(sys::waitpid(pid, 0));
        t!(sys::close(r));
        t!(sys::close(w));
    }
    t!(set_disposition(SIGUSR1, SIG_DFL));
    Ok(())
}

core::arch::global_asm!(
    ".text",
    // void regs_across_signal(u64 out[24], pid, sig): sets x9-x15, x19-x28 and q8, q16, q31 to
    // patterns, raises the signal (kill), and stores what the registers hold afterwards.
    ".global regs_across_signal",
    "regs_across_signal:",
    "    stp x29, x30, [sp, #-96]!",
    "    stp x19, x20, [sp, #16]",
    "    stp x21, x22, [sp, #32]",
    "    stp x23, x24, [sp, #48]",
    "    stp x25, x26, [sp, #64]",
    "    stp x27, x28, [sp, #80]",
    "    str d8, [sp, #-16]!",
    "    mov x3, x0",
    "    mov x0, x1",
    "    mov x1, x2",
    "    movz x9, #0x9009",
    "movz x10, #0x1010",
    "movz x11, #0x1111",
    "movz x12, #0x1212",
    "    movz x13, #0x1313",
    "movz x14, #0x1414",
    "movz x15, #0x1515",
    "    movz x19, #0x1919",
    "movz x20, #0x2020",
    "movz x21, #0x2121",
    "movz x22, #0x2222",
    "    movz x23, #0x2323",
    "movz x24, #0x2424",
    "movz x25, #0x2525",
    "movz x26, #0x2626",
    "    movz x27, #0x2727",
    "movz x28, #0x2828",
    "    movk x19, #0xabcd, lsl #48",
    "    movk x28, #0xdcba, lsl #32",
    "    dup v8.2d, x19",
    "    dup v16.2d, x28",
    "    dup v31.2d, x27",
    "    mov v31.d[1], x26",
    "    mov x8, #129", // kill(pid, sig)
    "    svc #0",
    "    stp x9, x10, [x3, #0]",
    "    stp x11, x12, [x3, #16]",
    "    stp x13, x14, [x3, #32]",
    "    stp x15, x19, [x3, #48]",
    "    stp x20, x21, [x3, #64]",
    "    stp x22, x23, [x3, #80]",
    "    stp x24, x25, [x3, #96]",
    "    stp x26, x27, [x3, #112]",
    "    str x28, [x3, #128]",
    "    str x3, [x3, #136]",
    "    str q8, [x3, #144]",
    "    str q16, [x3, #160]",
    "    str q31, [x3, #176]",
    "    ldr d8, [sp], #16",
    "    ldp x19, x20, [sp, #16]",
    "    ldp x21, x22, [sp, #32]",
    "    ldp x23, x24, [sp, #48]",
    "    ldp x25, x26, [sp, #64]",
    "    ldp x27, x28, [sp, #80]",
    "    ldp x29, x30, [sp], #96",
    "    ret",
    // A handler that trashes every register it may (rt_sigreturn restores them all).
    ".global clobber_handler",
    "clobber_handler:",
    "    mov x9, #-1",
    "mov x10, #-1",
    "mov x11, #-1",
    "mov x12, #-1",
    "mov x13, #-1",
    "    mov x14, #-1",
    "mov x15, #-1",
    "mov x3, #-1",
    "mov x4, #-1",
    "    mov x19, #-1",
    "mov x20, #-1",
    "mov x21, #-1",
    "mov x22, #-1",
    "mov x23, #-1",
    "    mov x24, #-1",
    "mov x25, #-1",
    "mov x26, #-1",
    "mov x27, #-1",
    "mov x28, #-1",
    "    movi v8.2d, #0",
    "movi v16.2d, #0",
    "movi v31.2d, #0",
    "    ret",
);

extern "C" {
    fn regs_across_signal(out: *mut u64, pid: i32, sig: i32);
    fn clobber_handler();
}

fn sigreturn_restores_registers() -> TestResult {
    let act = KSigaction {
        handler: clobber_handler as *const () as usize,
        flags: SA_SIGINFO | SA_RESTORER,
        restorer: restorer(),
        mask: 0,
    };
    t!(sigaction_raw(SIGUSR1, Some(&act)));
    let mut out = [0u64; 24];
    // SAFETY: out has room for the 24 words the routine stores; it preserves callee-saved state.
    unsafe { regs_across_signal(out.as_mut_ptr(), sys::getpid(), SIGUSR1) };
    let want_x: [u64; 17] = [
        0x9009,
        0x1010,
        0x1111,
        0x1212,
        0x1313,
        0x1414,
        0x1515,
        0xabcd_0000_0000_1919,
        0x2020,
        0x2121,
        0x2222,
        0x2323,
        0x2424,
        0x2525,
        0x2626,
        0x2727,
        0x0000_dcba_0000_2828,
    ];
    let names = [
        "x9", "x10", "x11", "x12", "x13", "x14", "x15", "x19", "x20", "x21", "x22", "x23", "x24",
        "x25", "x26", "x27", "x28",
    ];
    for (i, w) in want_x.iter().enumerate() {
        check_eq!(out[i], *w, "{} after the handler", names[i]);
    }
    check_eq!(out[17], out.as_ptr() as u64, "x3");
    check_eq!((out[18], out[19]), (want_x[7], want_x[7]), "q8");
    check_eq!((out[20], out[21]), (want_x[16], want_x[16]), "q16");
    check_eq!((out[22], out[23]), (0x2727, 0x2626), "q31");
    t!(set_disposition(SIGUSR1, SIG_DFL));
    Ok(())
}

fn default_terminate_and_ignore() -> TestResult {
    let st = t!(in_child(|| {
        let _ = sys::kill(sys::getpid(), SIGTERM);
        sys::sleep_ns(1_000_000_000);
        0
    }));
    check!(
        wifsignaled(st) && wtermsig(st) == SIGTERM && !wcoredump(st),
        "{}",
        describe(st)
    );
    // SIGCHLD and SIGWINCH are ignored by default; SIG_IGN ignores SIGTERM.
    let st = t!(in_child(|| {
        let _ = sys::kill(sys::getpid(), SIGCHLD);
        let _ = sys::kill(sys::getpid(), SIGWINCH);
        let _ = set_disposition(SIGTERM, SIG_IGN);
        let _ = sys::kill(sys::getpid(), SIGTERM);
        // An ignored signal is discarded, not left pending.
        match sigpending() {
            Ok(0) => 0,
            _ => 2,
        }
    }));
    check_eq!(describe(st), "exited 0");
    // SIG_IGN survives execve; handlers are reset to SIG_DFL.
    Ok(())
}

fn stop_and_continue() -> TestResult {
    let pid = t!(spawn(|| loop {
        sys::sleep_ns(10_000_000);
    }));
    t!(sys::kill(pid, SIGSTOP));
    let (p, st) = t!(sys::waitpid(pid, WUNTRACED));
    check_eq!(p, pid);
    check!(
        wifstopped(st) && wstopsig(st) == SIGSTOP,
        "{}",
        describe(st)
    );
    check_eq!(st, 0x137f);
    check_eq!(
        sys::waitpid(pid, WUNTRACED | WNOHANG),
        Ok((0, 0)),
        "reported once"
    );
    t!(sys::kill(pid, SIGCONT));
    let (_, st) = t!(sys::waitpid(pid, WCONTINUED));
    check!(wifcontinued(st), "{}", describe(st));
    check_eq!(st, 0xffff);
    // A stopped process can still be killed.
    t!(sys::kill(pid, SIGSTOP));
    t!(sys::waitpid(pid, WUNTRACED));
    t!(sys::kill(pid, SIGKILL));
    let (_, st) = t!(sys::waitpid(pid, 0));
    check_eq!(describe(st), "killed by signal 9");
    Ok(())
}

fn sigchld_siginfo() -> TestResult {
    reset();
    t!(set_handler(SIGCHLD, record, 0, 0));
    let old = t!(sigprocmask(SIG_BLOCK, Some(bit(SIGCHLD))));
    let pid = t!(spawn(|| 3));
    let t0 = sys::now_ns();
    while COUNT.load(Ordering::SeqCst) == 0 && sys::now_ns() - t0 < 5_000_000_000 {
        let _ = sigsuspend(old & !bit(SIGCHLD));
    }
    check_eq!(COUNT.load(Ordering::SeqCst), 1);
    check_eq!(LAST_CODE.load(Ordering::SeqCst), CLD_EXITED);
    check_eq!(LAST_PID.load(Ordering::SeqCst), pid);
    t!(sys::waitpid(pid, 0));
    t!(sigprocmask(SIG_SETMASK, Some(old)));
    t!(set_disposition(SIGCHLD, SIG_DFL));
    Ok(())
}

static FRAME_PSTATE: AtomicU64 = AtomicU64::new(0);

extern "C" fn record_pstate(_: i32, _: *mut SigInfo, ucp: *mut u8) {
    FRAME_PSTATE.store(Ucontext(ucp).read_u64(uc::PSTATE), Ordering::SeqCst);
}

/// PSTATE.SSBS (bit 12), where the CPU has FEAT_SSBS (HWCAP_SSBS): set for user code, as Linux
/// leaves it under its default speculative-store-bypass policy; the signal frame's pstate
/// shows it, and so does the register itself (MRS SSBS, which HWCAP_SSBS allows at EL0).
fn user_pstate_ssbs() -> TestResult {
    const HWCAP_SSBS: u64 = 1 << 28;
    const PSR_SSBS: u64 = 1 << 12;
    if svelt_user::sme::hwcap() & HWCAP_SSBS == 0 {
        return ktap::skip("no FEAT_SSBS (HWCAP_SSBS)");
    }
    let live: u64;
    // SAFETY: MRS SSBS (S3_3_C4_C2_6) reads PSTATE.SSBS; HWCAP_SSBS says EL0 may.
    unsafe { core::arch::asm!("mrs {}, s3_3_c4_c2_6", out(reg) live, options(nomem, nostack)) };
    check_eq!(live & PSR_SSBS, PSR_SSBS, "PSTATE.SSBS as the program runs");
    t!(set_handler(SIGUSR1, record_pstate, 0, 0));
    t!(sys::kill(sys::getpid(), SIGUSR1));
    let p = FRAME_PSTATE.load(Ordering::SeqCst);
    check_eq!(p & PSR_SSBS, PSR_SSBS, "the frame's pstate {p:#x}");
    t!(set_disposition(SIGUSR1, SIG_DFL));
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("sa_siginfo_kill_tgkill_tkill", sa_siginfo_and_kill_fields),
        (
            "sigaction_old_values_and_errors",
            sigaction_old_values_and_errors,
        ),
        (
            "sigprocmask_sigpending_sigsuspend",
            mask_pending_and_sigsuspend,
        ),
        ("sa_nodefer_sa_resethand_sa_mask", sa_nodefer_and_resethand),
        ("sigaltstack_sa_onstack", sigaltstack_and_sa_onstack),
        ("sa_restart_vs_eintr", sa_restart_vs_eintr),
        ("sigreturn_restores_registers", sigreturn_restores_registers),
        ("default_terminate_and_ignore", default_terminate_and_ignore),
        ("sigstop_sigcont_wait", stop_and_continue),
        ("sigchld_siginfo", sigchld_siginfo),
        ("user_pstate_ssbs", user_pstate_ssbs),
    ])
}

entry!(main);
