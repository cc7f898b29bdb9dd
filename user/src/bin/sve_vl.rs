//! SVE vector lengths through prctl: PR_SVE_GET_VL; PR_SVE_SET_VL's argument checks, rounding
//! down to a supported length, SVE_VL_MAX, return values with PR_SVE_SET_VL_ONEXEC and
//! PR_SVE_VL_INHERIT; a live change (RDVL follows, V0-V31 kept, the rest zero); the deferred
//! length taking effect at execve only; inheritance across fork, threads and execve; execve
//! without INHERIT resetting to /proc/sys/abi/sve_default_vector_length.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicUsize, Ordering};

use svelt_user::io::read_file;
use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sve::{
    self, SveRegs, PR_SVE_SET_VL_ONEXEC as ONEXEC, PR_SVE_VL_INHERIT as INHERIT,
};
use svelt_user::sys::*;
use svelt_user::*;

const SELF: &str = "/bin/tests/sve_vl";
const DEFAULT_VL: &str = "/proc/sys/abi/sve_default_vector_length";

/// Some supported length other than `not`, preferring one other than `also_not` too.
fn other_vl(vls: &[usize], not: usize, also_not: usize) -> Option<usize> {
    vls.iter()
        .rev()
        .copied()
        .find(|&v| v != not && v != also_not)
        .or_else(|| vls.iter().copied().find(|&v| v != not))
}

fn default_vl() -> Result<usize, String> {
    let b = read_file(DEFAULT_VL).map_err(|e| format!("{DEFAULT_VL}: {e:?}"))?;
    core::str::from_utf8(&b)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .ok_or(format!("{DEFAULT_VL}: {b:?}"))
}

/// Restores the length and clears INHERIT and any deferred length.
struct Restore(usize);
impl Drop for Restore {
    fn drop(&mut self) {
        let _ = sve::set_vl(self.0);
    }
}

fn restore() -> Restore {
    Restore(sve::rdvl())
}

fn get_vl_is_current() -> TestResult {
    let vls = sve::need_vls()?;
    let vl = sve::rdvl();
    check!(vls.contains(&vl), "RDVL {vl} not among {vls:?}");
    check_eq!(
        t!(sve::get_vl()),
        vl,
        "PR_SVE_GET_VL (no INHERIT in a fresh process)"
    );
    check_eq!(
        sve::prctl(sve::PR_SVE_GET_VL, 0x1234).map(|v| v & 0xffff),
        Ok(vl),
        "arg2 is ignored"
    );
    Ok(())
}

fn set_vl_invalid_arguments() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = restore();
    let cur = sve::rdvl();
    let other = other_vl(&vls, cur, 0).unwrap_or(cur);
    for (arg, what) in [
        (other | 1 << 16, "flag bit 16"),
        (other | 1 << 19, "flag bit 19"),
        (other | 1 << 31, "flag bit 31"),
        (other | 1 << 40, "flag bit 40"),
        (other | INHERIT | 1 << 20, "INHERIT with an unknown flag"),
        (0, "vl 0"),
        (8, "vl 8"),
        (15, "vl 15"),
        (17, "vl 17"),
        (24, "vl 24"),
        (other + 1, "vl not a multiple of 16"),
        (sve::SVE_VL_MAX + 16, "vl 8208 > SVE_VL_MAX"),
        (0xfff0, "vl 0xfff0"),
        (0xffff, "vl 0xffff"),
        (ONEXEC, "ONEXEC with vl 0"),
        (INHERIT | 8, "INHERIT with vl 8"),
    ] {
        check_eq!(sve::set_vl(arg), Err(EINVAL), "{} ({:#x})", what, arg);
        check_eq!(sve::rdvl(), cur, "after {}", what);
        check_eq!(t!(sve::get_vl()), cur, "after {}", what);
    }
    Ok(())
}

/// The largest supported length not above `vl` (the smallest if none is).
fn expected_vl(vls: &[usize], vl: usize) -> usize {
    vls.iter()
        .rev()
        .copied()
        .find(|&v| v <= vl)
        .unwrap_or(vls[0])
}

fn set_vl_rounds_down_and_clamps() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = restore();
    let max = *vls.last().unwrap();
    println!("# supported vector lengths: {vls:?}");
    let mut reqs: Vec<usize> = (16..=512).step_by(16).collect();
    reqs.extend([1024, 4096, 8176, sve::SVE_VL_MAX]);
    for vl in reqs {
        let want = expected_vl(&vls, vl);
        check_eq!(t!(sve::set_vl(vl)), want, "PR_SVE_SET_VL({})", vl);
        check_eq!(sve::rdvl(), want, "RDVL after PR_SVE_SET_VL({})", vl);
        check_eq!(t!(sve::get_vl()), want);
    }
    check_eq!(
        t!(sve::set_vl(sve::SVE_VL_MAX)),
        max,
        "SVE_VL_MAX gives the maximum"
    );
    check_eq!(
        t!(sve::set_vl(max + 16)),
        max,
        "above the maximum gives the maximum"
    );
    check_eq!(t!(sve::set_vl(16)), vls[0], "16 is the minimum");
    check_eq!(vls[0], 16, "VL 16 is always supported");
    Ok(())
}

fn set_vl_return_values_and_flags() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = restore();
    let cur = sve::rdvl();
    let max = *vls.last().unwrap();
    let x = other_vl(&vls, cur, 0).unwrap_or(cur);
    // INHERIT: a live change, the flag in the result and in GET_VL.
    check_eq!(t!(sve::set_vl(x | INHERIT)), x | INHERIT);
    check_eq!(sve::rdvl(), x);
    check_eq!(t!(sve::get_vl()), x | INHERIT);
    // Without INHERIT the flag is cleared.
    check_eq!(t!(sve::set_vl(x)), x);
    check_eq!(t!(sve::get_vl()), x);
    // ONEXEC: returns the deferred length; the current one is unchanged and GET_VL shows it.
    check_eq!(
        t!(sve::set_vl(cur | ONEXEC)),
        cur,
        "deferred length returned"
    );
    check_eq!(sve::rdvl(), x, "ONEXEC does not change the current length");
    check_eq!(
        t!(sve::get_vl()),
        x,
        "the deferred length is not observable"
    );
    check_eq!(
        t!(sve::set_vl(sve::SVE_VL_MAX | ONEXEC)),
        max,
        "deferred length rounded"
    );
    check_eq!(t!(sve::set_vl(cur | ONEXEC | INHERIT)), cur | INHERIT);
    check_eq!(sve::rdvl(), x);
    check_eq!(
        t!(sve::get_vl()),
        x | INHERIT,
        "INHERIT is set at once with ONEXEC"
    );
    check_eq!(t!(sve::set_vl(cur)), cur);
    check_eq!(t!(sve::get_vl()), cur, "INHERIT cleared");
    // Same length again: no change, same result.
    check_eq!(t!(sve::set_vl(cur)), cur);
    check_eq!(sve::rdvl(), cur);
    Ok(())
}

fn live_change_keeps_v_zeroes_rest() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = restore();
    // Up through every length, then down, then the same length: each a live change made from
    // inside one asm block, so that nothing but the prctl touches the registers.
    let mut seq: Vec<usize> = vls.clone();
    seq.extend(vls.iter().rev().skip(1));
    seq.push(vls[0]);
    let mut cur = sve::rdvl();
    for (i, &vl) in seq.iter().enumerate() {
        let p = SveRegs::pattern(cur, 0x1000 + i as u64);
        let (r, got) = sve::load_syscall_store(&p, nr::PRCTL, &[sve::PR_SVE_SET_VL, vl]);
        check_eq!(r, Ok(vl), "PR_SVE_SET_VL({}) from {}", vl, cur);
        check_eq!(got.vl, vl, "RDVL after the change");
        if let Some(d) = got.diff(&p.with_vl(vl)) {
            return Err(format!("after the change {cur} -> {vl}:\n{d}"));
        }
        cur = vl;
    }
    Ok(())
}

fn onexec_takes_effect_at_exec() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = restore();
    let cur = sve::rdvl();
    let def = default_vl()?;
    let Some(x) = other_vl(&vls, cur, def) else {
        return skip("only one vector length");
    };
    check_eq!(t!(sve::set_vl(x | ONEXEC)), x);
    check_eq!(sve::rdvl(), cur);
    // The deferred length is inherited by a fork and used by its execve, once: the next
    // execve (no INHERIT) is back at the default.
    let seen = sve::exec_report(SELF, 2, || {})?;
    check_eq!(
        seen[0],
        (x, x),
        "(RDVL, GET_VL) after execve with a deferred length"
    );
    check_eq!(seen[1], (def, def), "the execve after that");
    check_eq!(sve::rdvl(), cur, "the parent's length is unchanged");
    // A plain PR_SVE_SET_VL cancels the deferred length.
    check_eq!(t!(sve::set_vl(x | ONEXEC)), x);
    check_eq!(t!(sve::set_vl(cur)), cur);
    let seen = sve::exec_report(SELF, 1, || {})?;
    check_eq!(seen[0], (def, def), "deferred length cancelled");
    // ONEXEC set in the child itself, after the fork.
    let seen = sve::exec_report(SELF, 1, || {
        let _ = sve::set_vl(x | ONEXEC);
    })?;
    check_eq!(seen[0], (x, x));
    Ok(())
}

fn inherit_across_fork_and_exec() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = restore();
    let cur = sve::rdvl();
    let def = default_vl()?;
    let Some(x) = other_vl(&vls, cur, def) else {
        return skip("only one vector length");
    };
    check_eq!(t!(sve::set_vl(x | INHERIT)), x | INHERIT);
    // fork: length and flag copied.
    let got = Shared::new((0usize, 0usize));
    let st = t!(in_child(|| {
        got.set((sve::rdvl(), sve::get_vl().unwrap_or(0)));
        0
    }));
    check_eq!(st, 0);
    check_eq!(
        got.get(),
        (x, x | INHERIT),
        "(RDVL, GET_VL) in a forked child"
    );
    // execve, three generations: the length sticks.
    let seen = sve::exec_report(SELF, 3, || {})?;
    for (i, s) in seen.iter().enumerate() {
        check_eq!(*s, (x, x | INHERIT), "generation {} after execve", i + 1);
    }
    // ONEXEC | INHERIT: the current length stays, execs get the deferred one for good.
    let y = other_vl(&vls, x, def).unwrap_or(cur);
    check_eq!(t!(sve::set_vl(y | ONEXEC | INHERIT)), y | INHERIT);
    check_eq!(sve::rdvl(), x);
    let seen = sve::exec_report(SELF, 2, || {})?;
    for (i, s) in seen.iter().enumerate() {
        check_eq!(*s, (y, y | INHERIT), "ONEXEC|INHERIT: generation {}", i + 1);
    }
    // Dropping INHERIT in the exec'd child: its own execs go back to the default.
    let seen = sve::exec_report(SELF, 2, || {
        let _ = sve::set_vl(x);
    })?;
    check_eq!(seen[0], (def, def), "no INHERIT, no deferred length");
    check_eq!(seen[1], (def, def));
    Ok(())
}

fn exec_without_inherit_gets_default() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = restore();
    let def = default_vl()?;
    check!(vls.contains(&def), "default {def} not among {vls:?}");
    for &x in &vls {
        check_eq!(t!(sve::set_vl(x)), x);
        let seen = sve::exec_report(SELF, 1, || {})?;
        check_eq!(seen[0], (def, def), "execve from a task at vl {}", x);
    }
    Ok(())
}

static THREAD_VL: AtomicUsize = AtomicUsize::new(0);
static THREAD_GET: AtomicUsize = AtomicUsize::new(0);

extern "C" fn thread_vl(set: usize) -> i32 {
    THREAD_VL.store(sve::rdvl(), Ordering::SeqCst);
    THREAD_GET.store(sve::get_vl().unwrap_or(0), Ordering::SeqCst);
    if set != 0 {
        let _ = sve::set_vl(set);
        THREAD_VL.store(sve::rdvl(), Ordering::SeqCst);
    }
    0
}

fn fork_and_threads_inherit_current() -> TestResult {
    let vls = sve::need_vls()?;
    let _r = restore();
    let cur = sve::rdvl();
    for &x in &vls {
        check_eq!(t!(sve::set_vl(x)), x);
        let got = Shared::new((0usize, 0usize));
        let st = t!(in_child(|| {
            got.set((sve::rdvl(), sve::get_vl().unwrap_or(0)));
            0
        }));
        check_eq!(st, 0);
        check_eq!(
            got.get(),
            (x, x),
            "(RDVL, GET_VL) in a forked child at vl {}",
            x
        );
        let th = t!(spawn_thread(thread_vl, 0, 0));
        th.join();
        check_eq!(THREAD_VL.load(Ordering::SeqCst), x, "RDVL in a new thread");
        check_eq!(
            THREAD_GET.load(Ordering::SeqCst),
            x,
            "GET_VL in a new thread"
        );
    }
    // A thread's own change does not affect the others.
    let x = *vls.last().unwrap();
    let y = vls[0];
    t!(sve::set_vl(x | INHERIT));
    let th = t!(spawn_thread(thread_vl, y, 0));
    th.join();
    check_eq!(
        THREAD_GET.load(Ordering::SeqCst),
        x | INHERIT,
        "INHERIT copied to the thread"
    );
    check_eq!(
        THREAD_VL.load(Ordering::SeqCst),
        y,
        "the thread changed its length"
    );
    check_eq!(sve::rdvl(), x, "the creator's length is unchanged");
    check_eq!(t!(sve::get_vl()), x | INHERIT);
    t!(sve::set_vl(cur));
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some(sve::REPORT_ARG) {
        return sve::report_child(SELF, a);
    }
    ktap::run(&[
        ("sve_get_vl_is_current", get_vl_is_current),
        ("sve_set_vl_invalid_arguments", set_vl_invalid_arguments),
        (
            "sve_set_vl_rounds_down_and_clamps",
            set_vl_rounds_down_and_clamps,
        ),
        (
            "sve_set_vl_return_values_and_flags",
            set_vl_return_values_and_flags,
        ),
        (
            "sve_live_change_keeps_v_zeroes_rest",
            live_change_keeps_v_zeroes_rest,
        ),
        (
            "sve_onexec_takes_effect_at_exec",
            onexec_takes_effect_at_exec,
        ),
        (
            "sve_inherit_across_fork_and_exec",
            inherit_across_fork_and_exec,
        ),
        (
            "sve_exec_without_inherit_gets_default",
            exec_without_inherit_gets_default,
        ),
        (
            "sve_fork_and_threads_inherit_current",
            fork_and_threads_inherit_current,
        ),
    ])
}

entry!(main);
