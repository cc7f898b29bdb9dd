//! SME state across fork, clone and exec: a forked child inherits PSTATE.ZA with the same ZA
//! contents and TPIDR2_EL0 (its own copy afterwards); a thread (CLONE_VM|CLONE_SETTLS) and a vfork
//! child (CLONE_VM without CLONE_SETTLS) start with ZA off and TPIDR2 zero at the parent's SVL;
//! exec clears ZA, SM and TPIDR2 and resets the SVL to the default.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU64, Ordering};

use svelt_user::ktap::TestResult;
use svelt_user::sme::*;
use svelt_user::sys;
use svelt_user::*;

const TP: u64 = 0x0f0f_1234_5678_f0f0;

fn za_on_with(z: &[u8], tp: u64) {
    let mut op = Op {
        flags: F_ZA | F_KEEP_ZA | F_TPIDR2,
        tpidr2_in: tp,
        za_in: z.as_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
}

/// (SVCR before, ZA contents if on), leaving ZA as it is.
fn read_za(svl: usize) -> (u64, Vec<u8>) {
    let mut z = vec![0u8; svl * svl];
    let mut op = Op {
        flags: F_KEEP_ZA,
        za_out: z.as_mut_ptr() as usize,
        ..Op::default()
    };
    run(&mut op);
    (op.svcr_before, z)
}

fn clear() {
    smstop_za();
    set_tpidr2(0);
}

fn fork_inherits_za_and_tpidr2() -> TestResult {
    need_sme()?;
    let old = t!(sme_get_vl());
    for svl in sme_vls() {
        t!(sme_set_vl(svl));
        let z = pattern(svl as u64, svl * svl);
        za_on_with(&z, TP);
        let st = t!(proc::in_child(|| {
            let (s, got) = read_za(svl);
            let mut bad = 0;
            if s != SVCR_ZA {
                println!("# child: SVCR {s:#x}");
                bad |= 1;
            }
            if got != z {
                println!("# child: {:?}", diff("ZA", &got, &z));
                bad |= 2;
            }
            if tpidr2() != TP {
                bad |= 4;
            }
            if sme_get_vl() != Ok(svl) {
                bad |= 8;
            }
            // The child's ZA is its own.
            za_on_with(&pattern(1, svl * svl), 1);
            bad
        }));
        check_eq!(st, 0, "SVL {svl}: forked child ({})", proc::describe(st));
        let (s, got) = read_za(svl);
        check_eq!(s, SVCR_ZA);
        check!(got == z, "SVL {svl}: parent's ZA unchanged by the child");
        check_eq!(tpidr2(), TP);
        clear();
    }
    t!(sme_set_vl(old));
    Ok(())
}

static T_SVCR: AtomicU64 = AtomicU64::new(u64::MAX);
static T_TPIDR2: AtomicU64 = AtomicU64::new(u64::MAX);
static T_SVL: AtomicU64 = AtomicU64::new(0);

extern "C" fn thread_probe(_: usize) -> i32 {
    T_SVCR.store(svcr(), Ordering::SeqCst);
    T_TPIDR2.store(tpidr2(), Ordering::SeqCst);
    T_SVL.store(rdsvl() as u64, Ordering::SeqCst);
    // Its own ZA and TPIDR2, which must not leak into the parent.
    let svl = rdsvl();
    za_on_with(&pattern(5, svl * svl), 5);
    0
}

fn thread_starts_with_za_off_and_tpidr2_zero() -> TestResult {
    need_sme()?;
    let svl = *sme_vls().last().unwrap();
    let old = t!(sme_get_vl());
    t!(sme_set_vl(svl));
    let z = pattern(7, svl * svl);
    za_on_with(&z, TP);
    let th = t!(proc::spawn_thread(thread_probe, 0, 0x1000));
    th.join();
    check_eq!(T_SVCR.load(Ordering::SeqCst), 0, "thread: SM and ZA off");
    check_eq!(T_TPIDR2.load(Ordering::SeqCst), 0, "thread: TPIDR2 0");
    check_eq!(
        T_SVL.load(Ordering::SeqCst),
        svl as u64,
        "thread: parent's SVL"
    );
    let (s, got) = read_za(svl);
    check_eq!(s, SVCR_ZA);
    check!(got == z, "parent's ZA unchanged by the thread");
    check_eq!(tpidr2(), TP);
    clear();
    t!(sme_set_vl(old));
    Ok(())
}

core::arch::global_asm!(
    ".text",
    // pid svelt_sme_vfork_probe(out): vfork; the child stores SVCR, TPIDR2 and RDSVL at out[0..3]
    // without touching the (shared) stack and _exits.
    ".global svelt_sme_vfork_probe",
    ".type svelt_sme_vfork_probe, %function",
    "svelt_sme_vfork_probe:",
    "    .arch_extension sme",
    "    mov x9, x0",
    "    mov x0, #0x4111", // CLONE_VM | CLONE_VFORK | SIGCHLD
    "    mov x1, #0",
    "    mov x2, #0",
    "    mov x3, #0",
    "    mov x4, #0",
    "    mov x8, #220",
    "    svc #0",
    "    cbnz x0, 1f",
    "    mrs x10, S3_3_C4_C2_2",
    "    str x10, [x9]",
    "    mrs x10, S3_3_C13_C0_5",
    "    str x10, [x9, #8]",
    "    rdsvl x10, #1",
    "    str x10, [x9, #16]",
    "    mov x0, #0",
    "    mov x8, #93",
    "    svc #0",
    "1:  ret",
    ".size svelt_sme_vfork_probe, . - svelt_sme_vfork_probe",
);

extern "C" {
    fn svelt_sme_vfork_probe(out: *mut [u64; 3]) -> isize;
}

fn vfork_starts_with_za_off_and_tpidr2_zero() -> TestResult {
    need_sme()?;
    let svl = svl();
    let z = pattern(8, svl * svl);
    za_on_with(&z, TP);
    let mut out = [u64::MAX; 3];
    // SAFETY: the child only writes `out` (shared with the parent: CLONE_VM) and exits without
    // using the stack; the parent resumes when it has exited.
    let pid = unsafe { svelt_sme_vfork_probe(&mut out) };
    check!(pid > 0, "vfork: {pid}");
    let (_, st) = t!(sys::waitpid(pid as i32, 0));
    check_eq!(st, 0);
    check_eq!(out[0], 0, "vfork child: SVCR");
    check_eq!(
        out[1],
        0,
        "vfork child: TPIDR2 (CLONE_VM without CLONE_SETTLS)"
    );
    check_eq!(out[2], svl as u64, "vfork child: SVL");
    let (s, got) = read_za(svl);
    check_eq!(s, SVCR_ZA);
    check!(got == z, "parent's ZA after the vfork child");
    check_eq!(tpidr2(), TP);
    clear();
    Ok(())
}

/// Child mode: exit 0 iff SVCR, TPIDR2 and the SVL are as a fresh exec leaves them.
fn exec_probe() -> i32 {
    let (s, t) = (svcr(), tpidr2());
    let def = io::read_file("/proc/sys/abi/sme_default_vector_length")
        .ok()
        .and_then(|b| core::str::from_utf8(&b).ok()?.trim().parse::<usize>().ok())
        .unwrap_or(0);
    let (g, r) = (sme_get_vl().unwrap_or(0), rdsvl());
    if s == 0 && t == 0 && g == def && r == def {
        0
    } else {
        println!("# exec'd: SVCR {s:#x} TPIDR2 {t:#x} GET_VL {g:#x} RDSVL {r} default {def}");
        1
    }
}

fn exec_clears_za_tpidr2_and_vl() -> TestResult {
    need_sme()?;
    let old = t!(sme_get_vl());
    let def = svl();
    let vls = sme_vls();
    let other = *vls.iter().find(|&&v| v != def).unwrap_or(&def);
    t!(sme_set_vl(other));
    let z = pattern(9, other * other);
    za_on_with(&z, TP);
    let st = t!(exec_self(&["--exec-probe"]));
    check_eq!(st, 0, "exec'd child {}", proc::describe(st));
    // The parent's state is its own.
    let (s, got) = read_za(other);
    check_eq!(s, SVCR_ZA);
    check!(got == z);
    clear();
    t!(sme_set_vl(old));
    Ok(())
}

fn main(args: &rt::Args) -> i32 {
    if args.arg(1) == Some("--exec-probe") {
        return exec_probe();
    }
    ktap::run(&[
        ("fork_inherits_za_and_tpidr2", fork_inherits_za_and_tpidr2),
        (
            "thread_starts_with_za_off_and_tpidr2_zero",
            thread_starts_with_za_off_and_tpidr2_zero,
        ),
        (
            "vfork_starts_with_za_off_and_tpidr2_zero",
            vfork_starts_with_za_off_and_tpidr2_zero,
        ),
        ("exec_clears_za_tpidr2_and_vl", exec_clears_za_tpidr2_and_vl),
    ])
}

entry!(main);
