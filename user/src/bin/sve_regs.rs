//! SVE register state as a task sees it: the first SVE use (in a freshly exec'd process, a
//! forked child and a new thread) shows V0-V31 as AdvSIMD left them and zeros everywhere else
//! (Z bits above 128, P0-P15, FFR); a syscall (getpid, sched_yield, a sleeping nanosleep, a
//! failing one) keeps V0-V31 and zeroes the rest (the SVE syscall ABI).
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering};

use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sve::{self, SveRegs};
use svelt_user::sys::*;
use svelt_user::*;

const SELF: &str = "/bin/tests/sve_regs";

fn need_sve() -> TestResult {
    if sve::has_sve() {
        Ok(())
    } else {
        skip("no SVE (AT_HWCAP lacks HWCAP_SVE)")
    }
}

/// Distinct V values: byte j of V_n is 0x40 + n ^ (j * 0x11).
fn v_pattern(salt: u8) -> [u128; 32] {
    let mut v = [0u128; 32];
    for (n, x) in v.iter_mut().enumerate() {
        let mut b = [0u8; 16];
        for (j, byte) in b.iter_mut().enumerate() {
            *byte = (0x40 + n as u8) ^ (j as u8).wrapping_mul(0x11) ^ salt;
        }
        *x = u128::from_le_bytes(b);
    }
    v
}

/// The first SVE instructions of a task that has not used SVE: V0-V31 as set with AdvSIMD, the
/// rest zero, at the current VL.
fn check_first_use(salt: u8) -> Result<(), String> {
    let v = v_pattern(salt);
    let got = sve::neon_then_store(&v);
    let mut want = SveRegs::zeroed(got.vl);
    for (n, x) in v.iter().enumerate() {
        want.set_v(n, *x);
    }
    match got.diff(&want) {
        None => Ok(()),
        Some(d) => Err(format!("first SVE use at vl {}:\n{d}", got.vl)),
    }
}

/// `sve_regs --first-use`: run right after execve, before this process executes any SVE
/// instruction; exit 0 when the state was right.
fn first_use_child() -> i32 {
    match check_first_use(0) {
        Ok(()) => 0,
        Err(m) => {
            for l in m.lines() {
                println!("# child: {l}");
            }
            1
        }
    }
}

fn load_store_roundtrip() -> TestResult {
    need_sve()?;
    let vl = sve::rdvl();
    check!(
        (16..=256).contains(&vl) && vl.is_multiple_of(16),
        "RDVL {vl} is not a vector length"
    );
    for seed in 1..4 {
        let p = SveRegs::pattern(vl, seed);
        let got = sve::load_store(&p);
        if let Some(d) = got.diff(&p) {
            return Err(format!("load then store:\n{d}"));
        }
    }
    Ok(())
}

fn first_use_after_execve() -> TestResult {
    need_sve()?;
    let st = t!(in_child(|| {
        let e = sys::execve(SELF, &["sve_regs", "--first-use"], &[]);
        println!("# execve: {e:?}");
        127
    }));
    check_eq!(describe(st), "exited 0");
    Ok(())
}

fn first_use_after_fork() -> TestResult {
    need_sve()?;
    // The parent's SVE state is live and non-zero; a forked child starts FPSIMD-only.
    let vl = sve::rdvl();
    let p = SveRegs::pattern(vl, 7);
    check!(sve::load_store(&p).diff(&p).is_none());
    let st = t!(in_child(|| match check_first_use(1) {
        Ok(()) => 0,
        Err(m) => {
            println!("# {}", m.replace('\n', "\n# "));
            1
        }
    }));
    check_eq!(describe(st), "exited 0");
    Ok(())
}

static THREAD_RESULT: AtomicU32 = AtomicU32::new(0);

extern "C" fn first_use_thread(_arg: usize) -> i32 {
    let r = match check_first_use(2) {
        Ok(()) => 1,
        Err(m) => {
            println!("# thread: {}", m.replace('\n', "\n# thread: "));
            2
        }
    };
    THREAD_RESULT.store(r, Ordering::SeqCst);
    0
}

fn first_use_in_new_thread() -> TestResult {
    need_sve()?;
    let vl = sve::rdvl();
    let p = SveRegs::pattern(vl, 8);
    check!(sve::load_store(&p).diff(&p).is_none());
    THREAD_RESULT.store(0, Ordering::SeqCst);
    let th = t!(spawn_thread(first_use_thread, 0, 0));
    th.join();
    check_eq!(
        THREAD_RESULT.load(Ordering::SeqCst),
        1,
        "the thread's check"
    );
    Ok(())
}

/// Loads a pattern, makes the syscall, and checks the SVE syscall ABI on what is left.
fn syscall_case(what: &str, vl: usize, seed: u64, n: usize, args: &[usize]) -> TestResult {
    let p = SveRegs::pattern(vl, seed);
    let (r, got) = sve::load_syscall_store(&p, n, args);
    if let Some(d) = got.diff(&p.after_syscall()) {
        return Err(format!("{what} at vl {vl} (returned {r:?}):\n{d}"));
    }
    Ok(())
}

fn syscalls_keep_v_and_zero_the_rest() -> TestResult {
    need_sve()?;
    let vls = t!(sve::supported_vls());
    let orig = sve::rdvl();
    let max = *vls.last().ok_or("no vector lengths")?;
    let ts = Timespec::from_ns(1_000_000);
    let mut vl_list = vec![orig];
    if max != orig {
        vl_list.push(max);
    }
    if vls[0] != orig {
        vl_list.push(vls[0]);
    }
    for (i, &vl) in vl_list.iter().enumerate() {
        t!(sve::set_vl(vl));
        check_eq!(sve::rdvl(), vl);
        let seed = 100 * i as u64;
        let (r, got) = sve::load_syscall_store(&SveRegs::pattern(vl, seed), nr::GETPID, &[]);
        check_eq!(r, Ok(sys::getpid() as usize), "getpid's result");
        check!(got
            .diff(&SveRegs::pattern(vl, seed).after_syscall())
            .is_none());
        syscall_case("getpid", vl, seed + 1, nr::GETPID, &[])?;
        syscall_case("sched_yield", vl, seed + 2, nr::SCHED_YIELD, &[])?;
        let tsp = &ts as *const Timespec as usize;
        syscall_case("nanosleep 1ms", vl, seed + 3, nr::NANOSLEEP, &[tsp, 0])?;
        // A failing syscall is a syscall too.
        syscall_case("close(-1)", vl, seed + 4, nr::CLOSE, &[usize::MAX])?;
        // Twice in a row: the state after one syscall survives the next unchanged.
        let p = SveRegs::pattern(vl, seed + 5).after_syscall();
        let (_, got) = sve::load_syscall_store(&p, nr::GETPPID, &[]);
        if let Some(d) = got.diff(&p) {
            return Err(format!("V-only state through getppid at vl {vl}:\n{d}"));
        }
    }
    t!(sve::set_vl(orig));
    Ok(())
}

fn main(a: &rt::Args) -> i32 {
    if a.arg(1) == Some("--first-use") {
        return first_use_child();
    }
    ktap::run(&[
        ("sve_load_store_roundtrip", load_store_roundtrip),
        ("sve_first_use_after_execve", first_use_after_execve),
        ("sve_first_use_after_fork", first_use_after_fork),
        ("sve_first_use_in_new_thread", first_use_in_new_thread),
        (
            "sve_syscalls_keep_v_zero_the_rest",
            syscalls_keep_v_and_zero_the_rest,
        ),
    ])
}

entry!(main);
