//! Svelt's FP policies (`svelt.fp`, `svelt.sve_syscall`, `svelt.sme_trap` on the kernel command
//! line; the one in force is the `policy` line of /proc/svelt/fpstat), checked where a program
//! can see their effect. On Linux (no /proc/svelt) every check expects Linux's behaviour, which
//! is the default policy's.
//!
//! - the policy line matches what /proc/cmdline asked for;
//! - `sve_syscall`: after a getpid, Z bits above 128, P and FFR are zero (`discard`, Linux) or
//!   unchanged (`keep`, not Linux); streaming mode ends at a syscall under both;
//! - `sme_trap`: a freshly exec'd program's first SME instruction traps (`lazy`: sme_traps + 1)
//!   or not (`eager`: no SME trap at all since boot), and either way it finds SVCR zero;
//! - `fp`: a task alone on its CPU that sleeps is switched out each time; `eager` reloads its
//!   registers after every one of those switches.
//!
//! Runs in the ordinary userland and as the first process (`--init /bin/tests/fp_policy`, the
//! targeted boots of tests/tests/fp_policy.rs): it mounts /proc when it finds none.
#![no_std]
#![no_main]

use svelt_abi::boot::cmdline::Cmdline;
use svelt_abi::fp::fppolicy::{Restore, SmeAccess, SveSyscall};
use svelt_user::io::read_file;
use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sme::{self, fp_policy, fp_policy_or_linux, fpstat, fpstat_get};
use svelt_user::sve::{self, SveRegs};
use svelt_user::sys::{self, nr};
use svelt_user::*;

const SYSTEM: &str = "/proc/svelt/fpstat";

fn on_svelt() -> bool {
    sys::stat(SYSTEM).is_ok()
}

/// A program started as the first process finds no /proc yet.
fn ensure_proc() {
    if read_file("/proc/self/stat").is_err() {
        let _ = sys::mkdirat(sys::AT_FDCWD, "/proc", 0o755);
        let _ = sys::mount("proc", "/proc", "proc", 0);
    }
}

fn policy_matches_command_line() -> TestResult {
    if !on_svelt() {
        return skip("no /proc/svelt/fpstat (Linux: its own behaviour is the default policy)");
    }
    let text = t!(read_file(SYSTEM));
    let text = core::str::from_utf8(&text).map_err(|_| String::from("fpstat: not UTF-8"))?;
    let Some(p) = fp_policy() else {
        return Err(format!("no well-formed policy line in {SYSTEM}:\n{text}"));
    };
    let cmdline = t!(read_file("/proc/cmdline"));
    let cmdline = String::from_utf8_lossy(&cmdline);
    let want = Cmdline::parse(cmdline.trim_end()).fp_policy;
    println!("# policy {p} (command line {:?})", cmdline.trim_end());
    check_eq!(p, want, "the policy in force against the command line");
    Ok(())
}

fn sve_state_across_a_syscall() -> TestResult {
    if !sve::has_sve() {
        return skip("no SVE (AT_HWCAP lacks HWCAP_SVE)");
    }
    let keep = fp_policy_or_linux().sve_syscall == SveSyscall::Keep;
    let vl = sve::rdvl();
    for seed in 0..4 {
        let p = SveRegs::pattern(vl, 0xf9 + seed);
        let (r, got) = sve::load_syscall_store(&p, nr::GETPID, &[]);
        check_eq!(r, Ok(sys::getpid() as usize));
        let want = if keep { p.clone() } else { p.after_syscall() };
        if let Some(d) = got.diff(&want) {
            return Err(format!(
                "sve_syscall={}: VL {vl} after getpid: {d}",
                if keep { "keep" } else { "discard" }
            ));
        }
    }
    if keep {
        println!("# sve_syscall=keep (NOT Linux): Z, P and FFR at VL {vl} survived getpid");
    }
    Ok(())
}

fn streaming_mode_ends_at_a_syscall() -> TestResult {
    sme::need_sme()?;
    let (vl, svevl) = (sme::svl(), sme::sve_vl());
    let fa64 = if sme::has_fa64() { sme::F_FA64 } else { 0 };
    let zin = sme::z_pattern(21, vl, fa64 != 0);
    let mut zout = sme::pattern(22, sme::z_image_len(vl.max(svevl)));
    let mut op = sme::Op {
        flags: sme::F_SM | fa64,
        z_in: zin.as_ptr() as usize,
        action: sme::A_SVC,
        x8: nr::GETPID as u64,
        z_out: zout.as_mut_ptr() as usize,
        ..sme::Op::default()
    };
    sme::run(&mut op);
    check_eq!(op.svcr_before, sme::SVCR_SM);
    check_eq!(op.svcr_after, 0, "SVCR after a syscall from streaming mode");
    let n = sme::z_image_len(svevl);
    if let Some(d) = sme::z_diff(
        "Z/P/FFR after the syscall",
        svevl,
        &zout[..n],
        &sme::zeros(n),
    ) {
        return Err(d);
    }
    Ok(())
}

/// The fresh program's side of `sme_first_use`: exits 0 when its first SME instruction trapped
/// as the policy says and SVCR read zero; prints what differed.
fn fresh_sme_use() -> i32 {
    let eager = fp_policy_or_linux().sme_trap == SmeAccess::Eager;
    let traps = || fpstat().and_then(|s| fpstat_get(&s, "sme_traps"));
    let before = traps();
    let svcr = sme::svcr(); // the first SME access of this program
    let after = traps();
    let mut fails = 0;
    if svcr != 0 {
        println!("# fresh program: SVCR = {svcr:#x} at its first read");
        fails += 1;
    }
    if let (Some(b), Some(a)) = (before, after) {
        let want = if eager { b } else { b + 1 };
        if a != want {
            println!(
                "# fresh program: sme_traps {b} -> {a} over the first SME use (eager {eager})"
            );
            fails += 1;
        }
    }
    let (svl, rdsvl) = (sme::svl(), sme::rdsvl());
    if svl != rdsvl {
        println!("# fresh program: RDSVL {rdsvl} but PR_SME_GET_VL says {svl}");
        fails += 1;
    }
    i32::from(fails > 0)
}

fn sme_first_use() -> TestResult {
    sme::need_sme()?;
    let st = t!(sme::exec_self(&["--fresh-sme"]));
    check_eq!(st, 0, "fresh program: {}", describe(st));
    if !on_svelt() {
        return Ok(());
    }
    let system = t!(read_file(SYSTEM));
    let system = core::str::from_utf8(&system).map_err(|_| String::from("not UTF-8"))?;
    let traps = system
        .lines()
        .find_map(|l| l.strip_prefix("sme_traps "))
        .and_then(|v| v.parse::<u64>().ok());
    if fp_policy_or_linux().sme_trap == SmeAccess::Eager {
        // Every program since boot got SME at exec: the kernel never took an SME access trap.
        check_eq!(traps, Some(0), "system sme_traps under sme_trap=eager");
        println!("# sme_trap=eager: no SME access trap since boot");
    } else {
        check!(
            traps.is_some_and(|n| n > 0),
            "system sme_traps {traps:?} under sme_trap=lazy"
        );
    }
    Ok(())
}

fn eager_reloads_after_each_switch() -> TestResult {
    let Some(p) = fp_policy() else {
        return skip("no /proc/svelt/fpstat (not Svelt)");
    };
    if p.fp == Restore::Lazy {
        return skip("svelt.fp=lazy (sve_lazy checks that lazy reloads nothing)");
    }
    const SLEEPS: u64 = 20;
    let out = Shared::new([0u64; 4]);
    let st = t!(in_child(|| {
        let cpu = sys::sched_getaffinity(0).map_or(0, |m| m.trailing_zeros());
        let _ = sys::sched_setaffinity(0, 1 << cpu);
        let counts = || {
            fpstat().map_or([u64::MAX; 2], |s| {
                let g = |k| fpstat_get(&s, k).unwrap_or(0);
                [
                    g("fpsimd_saves") + g("sve_saves"),
                    g("fpsimd_restores") + g("sve_restores"),
                ]
            })
        };
        let [s0, r0] = counts();
        let mut x = core::hint::black_box(1.5f64);
        for _ in 0..SLEEPS {
            x = x * 1.000_001 + 0.25; // FP registers in use: the state is live when it sleeps
            sys::sleep_ns(1_000_000);
        }
        core::hint::black_box(x);
        let [s1, r1] = counts();
        out.set([s0, s1, r0, r1]);
        0
    }));
    check_eq!(describe(st), "exited 0");
    let [s0, s1, r0, r1] = out.get();
    check!(
        s0 != u64::MAX && s1 != u64::MAX,
        "reading /proc/self/fpstat failed"
    );
    println!(
        "# fp=eager: {SLEEPS} sleeps: {} saves, {} restores",
        s1 - s0,
        r1 - r0
    );
    // Each sleep switches the task out (its live state is saved) and back; eager then reloads.
    check!(s1 - s0 >= SLEEPS, "saves {} over {SLEEPS} sleeps", s1 - s0);
    check!(
        r1 - r0 >= SLEEPS,
        "restores {} over {SLEEPS} sleeps under fp=eager",
        r1 - r0
    );
    Ok(())
}

fn main(args: &rt::Args) -> i32 {
    if args.arg(1) == Some("--fresh-sme") {
        return fresh_sme_use();
    }
    ensure_proc();
    ktap::run(&[
        (
            "fp_policy_matches_command_line",
            policy_matches_command_line,
        ),
        (
            "fp_policy_sve_state_across_a_syscall",
            sve_state_across_a_syscall,
        ),
        (
            "fp_policy_streaming_mode_ends_at_a_syscall",
            streaming_mode_ends_at_a_syscall,
        ),
        ("fp_policy_sme_first_use", sme_first_use),
        (
            "fp_policy_eager_reloads_after_each_switch",
            eager_reloads_after_each_switch,
        ),
    ])
}

entry!(main);
