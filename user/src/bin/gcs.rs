//! Guarded control stacks (FEAT_GCS) as Linux offers them to a program: HWCAP_GCS exactly when
//! ID_AA64PFR1_EL1.GCS says the CPU has one; map_shadow_stack's argument checks, its cap token
//! and end marker, its place in the address space (EEXIST over a mapping, RLIMIT_AS counted);
//! shadow-stack memory readable but never written by ordinary stores (SIGSEGV/SEGV_ACCERR) and
//! never executable; and, with GCS turned on by PR_SET_SHADOW_STACK_STATUS, calls and returns,
//! a signal handler's round trip, fork (the child goes on with a copy) and a return to an
//! address the GCS does not hold (SIGSEGV/SEGV_CPERR at the RET, no fault record). Skipped
//! where the CPU has no GCS.
//!
//! Once GCS is on, a function entered before must never return: each child that turns it on
//! does so inline and ends with exit_group.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};
use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sig::{self, SigInfo, SIGSEGV, SIGUSR1};
use svelt_user::sme;
use svelt_user::sys::{self, *};
use svelt_user::*;

const HWCAP_GCS: u64 = 1 << 32;
const MAP_SHADOW_STACK: usize = 453;
const PR_GET_SHADOW_STACK_STATUS: usize = 74;
const PR_SHADOW_STACK_ENABLE: u64 = 1;
const SHADOW_STACK_SET_TOKEN: usize = 1;
const SHADOW_STACK_SET_MARKER: usize = 2;
const RLIMIT_AS: u32 = 9;
const SEGV_CPERR: i32 = 10;

fn need_gcs() -> TestResult {
    if sme::hwcap() & HWCAP_GCS == 0 {
        return skip("no GCS (HWCAP_GCS clear)");
    }
    Ok(())
}

fn map_shadow_stack(addr: usize, size: usize, flags: usize) -> SysResult {
    sys::syscall(MAP_SHADOW_STACK, &[addr, size, flags])
}

fn gcspr() -> u64 {
    let v: u64;
    // SAFETY: reads GCSPR_EL0, which EL0 may read (GCSCRE0_EL1.nTR) on a GCS CPU.
    unsafe { core::arch::asm!("mrs {}, S3_3_C2_C5_1", out(reg) v, options(nomem, nostack)) };
    v
}

/// PR_SET_SHADOW_STACK_STATUS(ENABLE) without a call (a return after it would find nothing
/// on the new GCS); evaluates to the syscall's return value.
macro_rules! enable_gcs {
    () => {{
        let r: isize;
        // SAFETY: a prctl; it changes only this thread's GCS mode.
        unsafe {
            core::arch::asm!(
                "svc #0",
                in("x8") 167usize,
                inlateout("x0") 75isize => r,
                in("x1") PR_SHADOW_STACK_ENABLE,
                in("x2") 0usize,
                in("x3") 0usize,
                in("x4") 0usize,
                options(nostack),
            )
        };
        r
    }};
}

fn hwcap_matches_pfr1() -> TestResult {
    if sme::hwcap() & sme::HWCAP_CPUID == 0 {
        return skip("no HWCAP_CPUID");
    }
    let pfr1 = sme::id_aa64pfr1();
    println!("# ID_AA64PFR1_EL1 {pfr1:#x}, AT_HWCAP {:#x}", sme::hwcap());
    check_eq!(
        pfr1 >> 44 & 0xf != 0,
        sme::hwcap() & HWCAP_GCS != 0,
        "PFR1.GCS <=> HWCAP_GCS"
    );
    Ok(())
}

fn map_checks() -> TestResult {
    need_gcs()?;
    check_eq!(map_shadow_stack(0, 8, 0), Err(EINVAL), "size 8");
    check_eq!(
        map_shadow_stack(0, 1025, 0),
        Err(EINVAL),
        "size not 8-aligned"
    );
    check_eq!(map_shadow_stack(0, 4096, 4), Err(EINVAL), "unknown flag");
    check_eq!(map_shadow_stack(0x1000_0100, 4096, 0), Err(EINVAL), "addr");
    let taken = t!(sys::mmap_anon(4096));
    check_eq!(
        map_shadow_stack(taken, 4096, 0),
        Err(EEXIST),
        "over a mapping"
    );
    t!(sys::munmap(taken, 4096));
    // The place just freed is taken exactly.
    check_eq!(
        map_shadow_stack(taken, 4096, 0),
        Ok(taken),
        "at a free address"
    );
    t!(sys::munmap(taken, 4096));
    Ok(())
}

fn word(addr: usize) -> u64 {
    // SAFETY: a read of mapped shadow-stack memory (ordinary loads are allowed).
    unsafe { core::ptr::read_volatile(addr as *const u64) }
}

fn tokens_and_marker() -> TestResult {
    need_gcs()?;
    let size = 64 * 1024;
    let flags = SHADOW_STACK_SET_TOKEN | SHADOW_STACK_SET_MARKER;
    let a = t!(map_shadow_stack(0, size, flags));
    let cap_at = a + size - 16;
    check_eq!(word(a + size - 8), 0, "end marker");
    check_eq!(word(cap_at), (cap_at as u64 & !0xfff) | 1, "cap token");
    check!(
        (a..cap_at).step_by(8).all(|p| word(p) == 0),
        "the rest is zero"
    );
    t!(sys::munmap(a, size));
    // The token goes by the size asked for, not the page the mapping rounds it to.
    let a = t!(map_shadow_stack(0, 2048, SHADOW_STACK_SET_TOKEN));
    check_eq!(
        word(a + 2040),
        ((a + 2040) as u64 & !0xfff) | 1,
        "2 KiB token"
    );
    t!(sys::munmap(a, 4096));
    Ok(())
}

fn ordinary_stores_fault() -> TestResult {
    need_gcs()?;
    let a = t!(map_shadow_stack(0, 4096, 0));
    let (st, f) = t!(sig::fault_in_child(|| {
        // SAFETY: a store the kernel must refuse; the child ends in the handler.
        unsafe { core::ptr::write_volatile((a + 64) as *mut u64, 1) };
    }));
    check!(f.handled, "no signal: {}", describe(st));
    check_eq!((f.info.signo, f.info.code), (SIGSEGV, sig::SEGV_ACCERR));
    check_eq!(f.info.addr(), a as u64 + 64, "si_addr");
    check_eq!(word(a + 64), 0, "memory unchanged");
    check_eq!(
        sys::mprotect(a, 4096, PROT_READ | PROT_EXEC),
        Err(EINVAL),
        "PROT_EXEC"
    );
    t!(sys::mprotect(a, 4096, PROT_READ));
    t!(sys::munmap(a, 4096));
    Ok(())
}

fn counts_against_rlimit_as() -> TestResult {
    need_gcs()?;
    let st = t!(in_child(|| {
        let lim = Rlimit {
            cur: 16 << 20,
            max: u64::MAX,
        };
        if sys::setrlimit(RLIMIT_AS, &lim).is_err() {
            return 2;
        }
        match map_shadow_stack(0, 32 << 20, 0) {
            Err(e) if e == ENOMEM => 0,
            r => {
                println!("# map_shadow_stack of 32 MiB under a 16 MiB RLIMIT_AS: {r:?}");
                1
            }
        }
    }));
    check_eq!(st, 0, "child: {}", describe(st));
    Ok(())
}

static HANDLED: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_usr1(_: i32, _: *mut SigInfo, _: *mut u8) {
    HANDLED.store(gcspr(), Ordering::SeqCst);
}

fn enabled_calls_signals_fork() -> TestResult {
    need_gcs()?;
    let st = t!(in_child(|| {
        if enable_gcs!() != 0 {
            sys::exit_group(2);
        }
        let mut mode = 0u64;
        let _ = sme::prctl(PR_GET_SHADOW_STACK_STATUS, &mut mode as *mut u64 as usize);
        let top = gcspr();
        if mode != PR_SHADOW_STACK_ENABLE || top == 0 {
            sys::exit_group(3);
        }
        // A handler runs below a signal token and returns through it.
        if sig::set_handler(SIGUSR1, on_usr1, 0, 0).is_err()
            || sys::kill(sys::getpid(), SIGUSR1).is_err()
        {
            sys::exit_group(4);
        }
        let in_handler = HANDLED.load(Ordering::SeqCst);
        if in_handler == 0 || in_handler >= top || gcspr() != top {
            sys::exit_group(5);
        }
        // A fork child calls and returns on its copy of the GCS.
        let st = in_child(|| sys::exit_group(i32::from(gcspr() != top) * 6));
        sys::exit_group(st.map_or(7, |s| s))
    }));
    check_eq!(st, 0, "child: {}", describe(st));
    Ok(())
}

fn bad_return_is_cperr() -> TestResult {
    need_gcs()?;
    let (st, f) = t!(sig::fault_in_child(|| {
        if enable_gcs!() != 0 {
            sys::exit_group(2);
        }
        // SAFETY: a RET to an address the GCS does not hold; the child ends in the handler.
        unsafe { core::arch::asm!("adr x30, 1f", "ret", "1:", out("x30") _) };
    }));
    check!(f.handled, "no signal: {}", describe(st));
    check_eq!((f.info.signo, f.info.code), (SIGSEGV, SEGV_CPERR));
    check_eq!(f.info.addr(), f.pc, "si_addr is the RET");
    check_eq!(f.records.esr, None, "no esr_context");
    Ok(())
}

fn main(_args: &rt::Args) -> i32 {
    ktap::run(&[
        ("hwcap_matches_pfr1", hwcap_matches_pfr1),
        ("map_checks", map_checks),
        ("tokens_and_marker", tokens_and_marker),
        ("ordinary_stores_fault", ordinary_stores_fault),
        ("counts_against_rlimit_as", counts_against_rlimit_as),
        ("enabled_calls_signals_fork", enabled_calls_signals_fork),
        ("bad_return_is_cperr", bad_return_is_cperr),
    ])
}

entry!(main);
