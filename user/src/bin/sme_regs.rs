//! SME register state as a process sees it: first use in a fresh process (ZA, streaming Z/P/FFR
//! and TPIDR2 read zero), what a syscall does in streaming mode (PSTATE.SM cleared and the
//! streaming registers zeroed, PSTATE.ZA, ZA and TPIDR2 kept), SMSTOP SM/ZA semantics, ZA across
//! context switches, RDSVL, and (Svelt only) the lazy-switching counters.
#![no_std]
#![no_main]

use svelt_user::ktap::{skip, TestResult};
use svelt_user::sme::*;
use svelt_user::sys::{self, nr};
use svelt_user::*;

/// SMSTOP/syscall entry leave FPSR at this value (spec arch-registers.md §6).
const FPSR_AFTER_SMSTOP: u64 = 0x0800_009f;

fn fa64() -> u64 {
    if has_fa64() {
        F_FA64
    } else {
        0
    }
}

/// In a freshly exec'd process: everything SME reads zero. Returns the number of failures.
fn fresh() -> i32 {
    let mut fails = 0;
    let mut fail = |m: String| {
        println!("# fresh process: {m}");
        fails += 1;
    };
    if !has_sme() {
        return 0;
    }
    let t2 = tpidr2();
    if t2 != 0 {
        fail(format!("TPIDR2_EL0 = {t2:#x} at start"));
    }
    let before = fpstat();
    let s = svcr();
    if s != 0 {
        fail(format!("SVCR = {s:#x} at start"));
    }
    if let (Some(b), Some(a)) = (before, fpstat()) {
        let (b, a) = (
            fpstat_get(&b, "sme_traps").unwrap_or(0),
            fpstat_get(&a, "sme_traps").unwrap_or(0),
        );
        // svelt.sme_trap=eager enables SME at exec: no trap then.
        let eager = fp_policy_or_linux().sme_trap == svelt_abi::fp::fppolicy::SmeAccess::Eager;
        let want = if eager { b } else { b + 1 };
        if a != want {
            fail(format!(
                "fpstat sme_traps {b} -> {a} over the first SME use (sme_trap eager: {eager})"
            ));
        }
    }
    let vl = svl();
    let mut za = pattern(1, vl * vl);
    let mut op = Op {
        flags: F_ZA,
        za_out: za.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    if op.out_flags & O_ZA == 0 || op.svcr_after != SVCR_ZA {
        fail(format!("SMSTART ZA: svcr {:#x}", op.svcr_after));
    }
    if let Some(d) = diff("ZA after the first SMSTART ZA", &za, &zeros(vl * vl)) {
        fail(d);
    }
    let mut z = pattern(2, z_image_len(vl));
    let mut op = Op {
        flags: F_SM | fa64(),
        z_out: z.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    if op.svcr_after != SVCR_SM || op.vl_after != vl as u64 {
        fail(format!(
            "SMSTART SM: svcr {:#x} vl {}",
            op.svcr_after, op.vl_after
        ));
    }
    let mut want = zeros(z_image_len(vl));
    if op.out_flags & O_FFR == 0 {
        want[ffr_off(vl)..].copy_from_slice(&z[ffr_off(vl)..]);
    }
    if let Some(d) = z_diff("streaming Z/P/FFR on first use", vl, &z, &want) {
        fail(d);
    }
    fails
}

/// In a fresh process: streaming mode without ZA, with syscalls and yields, never saves ZA.
fn no_za() -> i32 {
    if !has_sme() {
        return 0;
    }
    let vl = svl();
    let zin = z_pattern(3, vl, false);
    for _ in 0..20 {
        let mut op = Op {
            flags: F_SM,
            z_in: zin.as_ptr() as usize,
            action: A_SPIN_COUNT,
            spin: 20000,
            ..Op::default()
        };
        run(&mut op);
        let _ = sys::sched_yield();
    }
    let Some(st) = fpstat() else { return 0 };
    match fpstat_get(&st, "za_saves") {
        Some(0) => 0,
        v => {
            println!("# ZA-off process: fpstat za_saves = {v:?}");
            1
        }
    }
}

fn first_use_in_fresh_process() -> TestResult {
    need_sme()?;
    let st = t!(exec_self(&["--fresh"]));
    check_eq!(st, 0, "fresh child: {}", proc::describe(st));
    Ok(())
}

fn syscall_in_streaming_mode() -> TestResult {
    need_sme()?;
    let (vl, svevl) = (svl(), sve_vl());
    let zin = z_pattern(10, vl, has_fa64());
    let zain = pattern(11, vl * vl);
    let mut zout = pattern(12, z_image_len(vl.max(svevl)));
    let mut zaout = pattern(13, vl * vl);
    let mut op = Op {
        flags: F_SM | F_ZA | F_TPIDR2 | fa64(),
        tpidr2_in: 0x1234_5678_9abc_def0,
        z_in: zin.as_ptr() as usize,
        za_in: zain.as_ptr() as usize,
        action: A_SVC,
        x8: nr::GETPID as u64,
        z_out: zout.as_mut_ptr() as usize,
        za_out: zaout.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    check_eq!(op.ret, sys::getpid() as u64, "getpid in streaming mode");
    check_eq!(op.svcr_before, SVCR_SM | SVCR_ZA);
    check_eq!(op.svcr_after, SVCR_ZA, "syscall: SM cleared, ZA kept");
    check_eq!(op.tpidr2_after, 0x1234_5678_9abc_def0, "TPIDR2 kept");
    check_eq!(op.vl_after, svevl as u64, "back at the SVE VL");
    check_eq!(
        op.fpsr_after,
        FPSR_AFTER_SMSTOP,
        "FPSR after leaving streaming mode"
    );
    check!(op.out_flags & O_ZA != 0);
    if let Some(d) = diff("ZA across the syscall", &zaout, &zain) {
        return Err(d);
    }
    let n = z_image_len(svevl);
    if let Some(d) = z_diff(
        "Z/P/FFR after a syscall from streaming mode",
        svevl,
        &zout[..n],
        &zeros(n),
    ) {
        return Err(d);
    }
    set_tpidr2(0);
    Ok(())
}

fn smstop_sm_zeroes_and_keeps_za() -> TestResult {
    need_sme()?;
    let (vl, svevl) = (svl(), sve_vl());
    let zin = z_pattern(20, vl, has_fa64());
    let zain = pattern(21, vl * vl);
    let mut zout = pattern(22, z_image_len(vl.max(svevl)));
    let mut zaout = pattern(23, vl * vl);
    let mut op = Op {
        flags: F_SM | F_ZA | fa64(),
        z_in: zin.as_ptr() as usize,
        za_in: zain.as_ptr() as usize,
        action: A_SMSTOP_SM,
        z_out: zout.as_mut_ptr() as usize,
        za_out: zaout.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    check_eq!(op.svcr_after, SVCR_ZA);
    check_eq!(op.vl_after, svevl as u64);
    check_eq!(op.fpsr_after, FPSR_AFTER_SMSTOP, "FPSR after SMSTOP SM");
    if let Some(d) = diff("ZA across SMSTOP SM", &zaout, &zain) {
        return Err(d);
    }
    let n = z_image_len(svevl);
    if let Some(d) = z_diff("Z/P/FFR after SMSTOP SM", svevl, &zout[..n], &zeros(n)) {
        return Err(d);
    }
    Ok(())
}

fn syscall_with_za_only() -> TestResult {
    need_sme()?;
    if !has_sve() {
        return skip("no SVE");
    }
    let (vl, svevl) = (svl(), sve_vl());
    let zin = z_pattern(30, svevl, true);
    let zain = pattern(31, vl * vl);
    let mut zout = pattern(32, z_image_len(svevl));
    let mut zaout = pattern(33, vl * vl);
    let mut op = Op {
        flags: F_ZA,
        z_in: zin.as_ptr() as usize,
        za_in: zain.as_ptr() as usize,
        action: A_SVC,
        x8: nr::SCHED_YIELD as u64,
        z_out: zout.as_mut_ptr() as usize,
        za_out: zaout.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    check_eq!(op.ret, 0);
    check_eq!(op.svcr_before, SVCR_ZA);
    check_eq!(op.svcr_after, SVCR_ZA);
    if let Some(d) = diff("ZA across sched_yield", &zaout, &zain) {
        return Err(d);
    }
    // The SVE syscall ABI: V0-V31 kept, the rest of Z, P and FFR zero.
    let mut want = zeros(z_image_len(svevl));
    for n in 0..32 {
        want[n * svevl..n * svevl + 16].copy_from_slice(&zin[n * svevl..n * svevl + 16]);
    }
    if let Some(d) = z_diff("non-streaming Z/P/FFR after a syscall", svevl, &zout, &want) {
        return Err(d);
    }
    Ok(())
}

fn za_off_then_on_is_zero() -> TestResult {
    need_sme()?;
    let vl = svl();
    let zain = pattern(40, vl * vl);
    let mut op = Op {
        flags: F_ZA | F_KEEP_ZA,
        za_in: zain.as_ptr() as usize,
        action: A_SMSTOP_ZA,
        ..Op::default()
    };
    run(&mut op);
    check_eq!(op.svcr_before, SVCR_ZA);
    check_eq!(op.svcr_after, 0);
    check_eq!(svcr(), 0);
    let mut zaout = pattern(41, vl * vl);
    let mut op = Op {
        flags: F_ZA,
        za_out: zaout.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    check_eq!(op.svcr_before, SVCR_ZA);
    if let Some(d) = diff("ZA after SMSTOP ZA; SMSTART ZA", &zaout, &zeros(vl * vl)) {
        return Err(d);
    }
    // SMSTART ZA while ZA is already on keeps its contents.
    let mut op = Op {
        flags: F_ZA,
        za_in: zain.as_ptr() as usize,
        action: A_SMSTART_ZA,
        za_out: zaout.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    if let Some(d) = diff("ZA after a second SMSTART ZA", &zaout, &zain) {
        return Err(d);
    }
    check_eq!(svcr(), 0, "the machine turned ZA off at the end");
    Ok(())
}

fn za_survives_sleep_and_yield() -> TestResult {
    need_sme()?;
    let vl = svl();
    let zain = pattern(50, vl * vl);
    let mut op = Op {
        flags: F_ZA | F_KEEP_ZA | F_TPIDR2,
        tpidr2_in: 0xfeed,
        za_in: zain.as_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    check_eq!(svcr(), SVCR_ZA, "ZA left on for compiled code");
    for _ in 0..5 {
        t!(sys::sched_yield());
        sys::sleep_ns(1_000_000);
    }
    // A child doing its own SME work in between, on the same CPU most likely.
    let st = t!(proc::in_child(|| {
        let z = pattern(51, svl() * svl());
        let mut op = Op {
            flags: F_ZA | F_SM,
            za_in: z.as_ptr() as usize,
            action: A_SPIN_COUNT,
            spin: 10000,
            ..Op::default()
        };
        run(&mut op);
        0
    }));
    check_eq!(st, 0);
    check_eq!(svcr(), SVCR_ZA);
    check_eq!(tpidr2(), 0xfeed);
    let mut zaout = pattern(52, vl * vl);
    let mut op = Op {
        za_out: zaout.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    check_eq!(op.svcr_before, SVCR_ZA);
    if let Some(d) = diff("ZA across sleeps, yields and a child", &zaout, &zain) {
        return Err(d);
    }
    set_tpidr2(0);
    check_eq!(svcr(), 0);
    Ok(())
}

fn tpidr2_plain_register() -> TestResult {
    need_sme()?;
    set_tpidr2(0x5555_aaaa_0000_1111);
    t!(sys::sched_yield());
    sys::sleep_ns(1_000_000);
    check_eq!(
        tpidr2(),
        0x5555_aaaa_0000_1111,
        "kept across syscalls and sleeps"
    );
    let st = t!(proc::in_child(|| i32::from(
        tpidr2() != 0x5555_aaaa_0000_1111
    )));
    check_eq!(st, 0, "fork copies TPIDR2");
    set_tpidr2(0);
    check_eq!(tpidr2(), 0);
    Ok(())
}

fn rdsvl_and_streaming_rdvl() -> TestResult {
    need_sme()?;
    let vl = svl();
    check_eq!(rdsvl(), vl, "RDSVL == PR_SME_GET_VL");
    let mut op = Op {
        flags: F_SM,
        ..Op::default()
    };
    run(&mut op);
    check_eq!(op.vl_after, vl as u64, "RDVL in streaming mode is the SVL");
    check_eq!(op.svl_after, vl as u64);
    check_eq!(svcr(), 0);
    Ok(())
}

fn fpstat_za_off_never_saves_za() -> TestResult {
    need_sme()?;
    if fpstat().is_none() {
        return skip("no /proc/self/fpstat (not Svelt)");
    }
    let st = t!(exec_self(&["--noza"]));
    check_eq!(st, 0, "ZA-off child: {}", proc::describe(st));
    Ok(())
}

fn main(args: &rt::Args) -> i32 {
    match args.arg(1) {
        Some("--fresh") => return fresh(),
        Some("--noza") => return no_za(),
        _ => {}
    }
    ktap::run(&[
        ("first_use_in_fresh_process", first_use_in_fresh_process),
        ("syscall_in_streaming_mode", syscall_in_streaming_mode),
        (
            "smstop_sm_zeroes_and_keeps_za",
            smstop_sm_zeroes_and_keeps_za,
        ),
        ("syscall_with_za_only", syscall_with_za_only),
        ("za_off_then_on_is_zero", za_off_then_on_is_zero),
        ("za_survives_sleep_and_yield", za_survives_sleep_and_yield),
        ("tpidr2_plain_register", tpidr2_plain_register),
        ("rdsvl_and_streaming_rdvl", rdsvl_and_streaming_rdvl),
        ("fpstat_za_off_never_saves_za", fpstat_za_off_never_saves_za),
    ])
}

entry!(main);
