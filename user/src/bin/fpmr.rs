//! FPMR (FEAT_FPMR, the FP8 mode register) as Linux keeps it: HWCAP2_FPMR exactly when
//! ID_AA64PFR2_EL1.FPMR says the CPU has it; each thread's value survives context switches,
//! is inherited by fork and cleared by execve; signal frames carry it in an fpmr_context that
//! sigreturn restores; a handler interrupting streaming mode starts with FPMR zero (leaving
//! streaming mode clears it) and gets the interrupted value back on return; NT_ARM_FPMR reads
//! and writes it. Skipped where the CPU has no FPMR.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};
use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::ptrace::{self as pt, expect_exit, wait_stop};
use svelt_user::sig::{self, SigInfo, Ucontext, FPMR_MAGIC, SIGTRAP, SIGUSR1};
use svelt_user::sme;
use svelt_user::sys::{self, *};
use svelt_user::*;

const HWCAP2_FPMR: u64 = 1 << 48;

/// Bits of FPMR every FEAT_FPMR CPU keeps (LSCALE2, NSCALE, LSCALE, OSC, OSM); the format
/// fields may be limited to the formats the CPU implements.
const SAFE_BITS: u64 = 0x3f_ff7f_c000;

fn has_fpmr() -> bool {
    sme::hwcap2() & HWCAP2_FPMR != 0
}

fn need_fpmr() -> TestResult {
    if !has_fpmr() {
        return skip("no FPMR (HWCAP2_FPMR clear)");
    }
    Ok(())
}

fn read_fpmr() -> u64 {
    let v: u64;
    // SAFETY: reads FPMR, which exists (HWCAP2_FPMR) and EL0 may access.
    unsafe { core::arch::asm!("mrs {}, S3_3_C4_C4_2", out(reg) v, options(nomem, nostack)) };
    v
}

fn write_fpmr(v: u64) {
    // SAFETY: FPMR only steers FP8 instructions, which nothing in this program uses.
    unsafe { core::arch::asm!("msr S3_3_C4_C4_2, {}", in(reg) v, options(nomem, nostack)) };
}

fn pattern(seed: u64) -> u64 {
    (seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5a5a_a5a5_3c3c_c3c3) & SAFE_BITS
}

fn hwcap_matches_pfr2() -> TestResult {
    if sme::hwcap() & sme::HWCAP_CPUID == 0 {
        return skip("no HWCAP_CPUID");
    }
    let pfr2: u64;
    // SAFETY: an EL0 read of an ID register, emulated by the kernel (HWCAP_CPUID).
    unsafe { core::arch::asm!("mrs {}, S3_0_C0_C4_2", out(reg) pfr2, options(nomem, nostack)) };
    println!(
        "# ID_AA64PFR2_EL1 {pfr2:#x}, AT_HWCAP2 {:#x}",
        sme::hwcap2()
    );
    check_eq!(
        pfr2 >> 32 & 0xf != 0,
        has_fpmr(),
        "PFR2.FPMR <=> HWCAP2_FPMR"
    );
    Ok(())
}

fn kept_across_switches() -> TestResult {
    need_fpmr()?;
    // Both on one CPU, so every yield switches between them.
    let _ = sme::sched_setaffinity(0, 1);
    let child = t!(spawn(|| {
        let mine = pattern(2);
        write_fpmr(mine);
        for _ in 0..200 {
            let _ = sys::sched_yield();
            if read_fpmr() != mine {
                return 1;
            }
        }
        0
    }));
    let mine = pattern(1);
    write_fpmr(mine);
    for i in 0..200 {
        let _ = sys::sched_yield();
        check_eq!(read_fpmr(), mine, "after yield {i}");
    }
    let (_, st) = t!(sys::waitpid(child, 0));
    check_eq!(st, 0, "child: {}", describe(st));
    write_fpmr(0);
    Ok(())
}

fn fork_inherits_exec_clears() -> TestResult {
    need_fpmr()?;
    let v = pattern(3);
    write_fpmr(v);
    let st = t!(spawn(move || i32::from(read_fpmr() != v)));
    let (_, st) = t!(sys::waitpid(st, 0));
    check_eq!(
        st,
        0,
        "forked child sees the parent's FPMR: {}",
        describe(st)
    );
    let st = t!(sme::exec_self(&["--fpmr-is-zero"]));
    check_eq!(st, 0, "exec'd program starts with FPMR 0: {}", describe(st));
    write_fpmr(0);
    Ok(())
}

static SEEN_RECORD: AtomicU64 = AtomicU64::new(0);
static SEEN_LIVE: AtomicU64 = AtomicU64::new(0);
static NEW_VALUE: AtomicU64 = AtomicU64::new(0);

/// Records the frame's fpmr_context value and FPMR as the handler starts, then replaces the
/// record's value with NEW_VALUE; a brk (SIGTRAP) is stepped over.
extern "C" fn handler(signo: i32, _si: *mut SigInfo, ucp: *mut u8) {
    SEEN_LIVE.store(read_fpmr(), Ordering::SeqCst);
    let ucx = Ucontext(ucp);
    let rec = sig::walk_frame(ucx)
        .ok()
        .and_then(|f| f.find(FPMR_MAGIC).map(|r| (r, f.count(FPMR_MAGIC))));
    match rec {
        Some((r, 1)) if r.size == 16 && !r.in_extra => {
            SEEN_RECORD.store(ucx.read_u64(r.off + 8), Ordering::SeqCst);
            ucx.write_u64(r.off + 8, NEW_VALUE.load(Ordering::SeqCst));
        }
        _ => SEEN_RECORD.store(u64::MAX, Ordering::SeqCst),
    }
    if signo == SIGTRAP {
        ucx.set_pc(ucx.pc() + 4);
    }
}

fn signal_frame_carries_fpmr() -> TestResult {
    need_fpmr()?;
    t!(sig::set_handler(SIGUSR1, handler, 0, 0));
    let (v, w) = (pattern(4), pattern(5));
    NEW_VALUE.store(w, Ordering::SeqCst);
    write_fpmr(v);
    t!(sys::kill(sys::getpid(), SIGUSR1));
    let after = read_fpmr();
    write_fpmr(0);
    check_eq!(SEEN_RECORD.load(Ordering::SeqCst), v, "fpmr_context value");
    check_eq!(SEEN_LIVE.load(Ordering::SeqCst), v, "FPMR in the handler");
    check_eq!(after, w, "FPMR after sigreturn (the record's new value)");
    Ok(())
}

core::arch::global_asm!(
    ".text",
    // u64 svelt_fpmr_streaming_brk(u64 v): SMSTART SM, FPMR := v, brk, x0 := FPMR, SMSTOP SM.
    ".global svelt_fpmr_streaming_brk",
    ".type svelt_fpmr_streaming_brk, %function",
    "svelt_fpmr_streaming_brk:",
    "    .inst 0xd503437f", // smstart sm
    "    msr S3_3_C4_C4_2, x0",
    "    brk #0x71",
    "    mrs x0, S3_3_C4_C4_2",
    "    .inst 0xd503427f", // smstop sm
    "    ret",
    ".size svelt_fpmr_streaming_brk, . - svelt_fpmr_streaming_brk",
);

extern "C" {
    fn svelt_fpmr_streaming_brk(v: u64) -> u64;
}

fn streaming_signal() -> TestResult {
    need_fpmr()?;
    if !sme::has_sme() {
        return skip("no SME");
    }
    t!(sig::set_handler(SIGTRAP, handler, 0, 0));
    let (v, w) = (pattern(6), pattern(7));
    NEW_VALUE.store(w, Ordering::SeqCst);
    // SAFETY: the routine preserves every callee-saved register and leaves streaming mode.
    let after = unsafe { svelt_fpmr_streaming_brk(v) };
    check_eq!(SEEN_RECORD.load(Ordering::SeqCst), v, "fpmr_context value");
    check_eq!(
        SEEN_LIVE.load(Ordering::SeqCst),
        0,
        "FPMR in the handler (streaming mode left)"
    );
    check_eq!(after, w, "FPMR back in streaming mode after sigreturn");
    Ok(())
}

fn ptrace_regset() -> TestResult {
    need_fpmr()?;
    let (v, w) = (pattern(8), pattern(9));
    let pid = t!(spawn(move || {
        if pt::traceme().is_err() {
            return 2;
        }
        write_fpmr(v);
        // SAFETY: a breakpoint; the tracer steps over it.
        unsafe { core::arch::asm!("brk #0x72", options(nomem, nostack)) };
        i32::from(read_fpmr() != w) * 3
    }));
    let st = wait_stop(pid)?;
    check_eq!(st >> 8, SIGTRAP, "stop status {st:#x}");
    let mut b = [0u8; 16];
    check_eq!(
        t!(pt::getregset(pid, pt::NT_ARM_FPMR, &mut b)),
        8,
        "regset size"
    );
    check_eq!(
        u64::from_le_bytes(b[..8].try_into().unwrap()),
        v,
        "FPMR read"
    );
    // Writes are in whole registers: 4 bytes is EINVAL.
    check_eq!(
        pt::setregset(pid, pt::NT_ARM_FPMR, &w.to_le_bytes()[..4]),
        Err(EINVAL)
    );
    check_eq!(
        t!(pt::setregset(pid, pt::NT_ARM_FPMR, &w.to_le_bytes())),
        8,
        "write"
    );
    t!(pt::getregset(pid, pt::NT_ARM_FPMR, &mut b));
    check_eq!(u64::from_le_bytes(b[..8].try_into().unwrap()), w, "re-read");
    t!(pt::advance_pc(pid, 4));
    t!(pt::cont(pid, 0));
    expect_exit(pid, 0)
}

fn main(args: &rt::Args) -> i32 {
    if args.arg(1) == Some("--fpmr-is-zero") {
        return i32::from(read_fpmr() != 0);
    }
    ktap::run(&[
        ("hwcap_matches_pfr2", hwcap_matches_pfr2),
        ("kept_across_switches", kept_across_switches),
        ("fork_inherits_exec_clears", fork_inherits_exec_clears),
        ("signal_frame_carries_fpmr", signal_frame_carries_fpmr),
        ("streaming_signal", streaming_signal),
        ("ptrace_regset", ptrace_regset),
    ])
}

entry!(main);
