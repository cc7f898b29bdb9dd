//! Svelt's lazy FP/SVE switching, proved with its counters (/proc/svelt/fpstat for the system,
//! /proc/self/fpstat for this process: `key value` lines, keys sve_traps, sme_traps,
//! fpsimd_saves, fpsimd_restores, sve_saves, sve_restores, za_saves, za_restores, bytes_saved,
//! bytes_restored, mismatch; the system file also has a `policy ...` line). Linux has no such
//! counters: every test skips there.
//!
//! - No FP state mismatch has been detected since boot (`mismatch` is 0: in the ordinary suite
//!   this runs after the programs before it in /bin/tests).
//!
//! - A process that never uses SVE, sharing a CPU with an SVE user, never has SVE state saved
//!   and never takes an SVE trap (but its FPSIMD state is saved when the other one runs).
//! - The first SVE use traps exactly once; later uses, across syscalls too, do not.
//! - Two processes ping-ponging through pipes, each alone on its CPU, reload nothing.
//! - A process alone on its CPU making syscalls reloads nothing.
#![no_std]
#![no_main]

use svelt_user::io::read_file;
use svelt_user::ktap::{skip, TestResult};
use svelt_user::proc::*;
use svelt_user::sme::fp_policy_or_linux;
use svelt_user::sve::{self, SveRegs};
use svelt_user::sys::*;
use svelt_user::*;

const SYSTEM: &str = "/proc/svelt/fpstat";
const SELF: &str = "/proc/self/fpstat";
const KEYS: [&str; 11] = [
    "sve_traps",
    "sme_traps",
    "fpsimd_saves",
    "fpsimd_restores",
    "sve_saves",
    "sve_restores",
    "za_saves",
    "za_restores",
    "bytes_saved",
    "bytes_restored",
    "mismatch",
];

/// One reading of an fpstat file, values in KEYS order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Stat([u64; 11]);

impl Stat {
    fn get(&self, key: &str) -> u64 {
        KEYS.iter().position(|k| *k == key).map_or(0, |i| self.0[i])
    }
    fn restores(&self) -> u64 {
        self.get("fpsimd_restores") + self.get("sve_restores")
    }
}

fn read_stat(path: &str) -> Result<Stat, String> {
    let b = read_file(path).map_err(|e| format!("{path}: {e:?}"))?;
    let s = core::str::from_utf8(&b).map_err(|_| format!("{path}: not UTF-8"))?;
    let mut st = Stat::default();
    let mut seen = [false; 11];
    for line in s.lines() {
        if line.starts_with("policy ") {
            continue;
        }
        let mut w = line.split_whitespace();
        let (Some(k), Some(v), None) = (w.next(), w.next(), w.next()) else {
            return Err(format!("{path}: bad line {line:?}"));
        };
        let v: u64 = v
            .parse()
            .map_err(|_| format!("{path}: bad value in {line:?}"))?;
        if let Some(i) = KEYS.iter().position(|x| *x == k) {
            st.0[i] = v;
            seen[i] = true;
        }
    }
    if let Some(i) = seen.iter().position(|s| !s) {
        return Err(format!("{path}: no {} line in\n{s}", KEYS[i]));
    }
    Ok(st)
}

/// Skips unless the counters exist (Svelt) and SVE is there.
fn need_counters() -> TestResult {
    if sys::stat(SYSTEM).is_err() {
        return skip("no /proc/svelt/fpstat (Svelt's FP counters; Linux has none)");
    }
    if !sve::has_sve() {
        return skip("no SVE (AT_HWCAP lacks HWCAP_SVE)");
    }
    Ok(())
}

fn cpus() -> Result<Vec<u32>, String> {
    let m = sys::sched_getaffinity(0).map_err(|e| format!("sched_getaffinity: {e:?}"))?;
    Ok((0..64).filter(|c| m & (1 << c) != 0).collect())
}

fn files_are_well_formed() -> TestResult {
    need_counters()?;
    let sys_before = read_stat(SYSTEM)?;
    let me = read_stat(SELF)?;
    for (i, k) in KEYS.iter().enumerate() {
        check!(
            me.0[i] <= sys_before.0[i],
            "{k}: this process {} > system {}",
            me.0[i],
            sys_before.0[i]
        );
    }
    println!("# system: {:?}", sys_before.0);
    check_eq!(
        sys_before.get("mismatch"),
        0,
        "FP state mismatches detected since boot (see the kernel log)"
    );
    Ok(())
}

/// Some floating-point work the compiler does with FP/SIMD registers.
fn fp_work(seed: u64) -> f64 {
    let mut x = core::hint::black_box(seed as f64 + 0.5);
    for i in 0..200 {
        x = x * 1.000_001 + core::hint::black_box(i as f64) / 3.0;
    }
    x
}

fn no_sve_no_sve_cost() -> TestResult {
    need_counters()?;
    let cpu = cpus()?[0];
    let done = Shared::new(0u32);
    // [sve_saves, sve_traps, fpsimd_saves, ok]
    let seen = Shared::new([0u64; 4]);
    // The SVE user sharing the CPU.
    let busy = t!(spawn(|| {
        let _ = sys::sched_setaffinity(0, 1 << cpu);
        let vl = sve::rdvl();
        let p = SveRegs::pattern(vl, 5);
        while done.get() == 0 {
            let _ = sve::load_store(&p);
            let _ = sys::sched_yield();
        }
        0
    }));
    let st = t!(in_child(|| {
        let _ = sys::sched_setaffinity(0, 1 << cpu);
        let mut acc = 0.0;
        for i in 0..2000 {
            acc += fp_work(i);
            let _ = sys::sched_yield();
        }
        core::hint::black_box(acc);
        match read_stat(SELF) {
            Ok(s) => {
                seen.set([
                    s.get("sve_saves"),
                    s.get("sve_traps"),
                    s.get("fpsimd_saves"),
                    1,
                ]);
                0
            }
            Err(m) => {
                println!("# {m}");
                1
            }
        }
    }));
    done.set(1);
    t!(sys::waitpid(busy, 0));
    check_eq!(describe(st), "exited 0");
    let [sve_saves, sve_traps, fpsimd_saves, _] = seen.get();
    check_eq!(sve_saves, 0, "sve_saves of a process that never used SVE");
    check_eq!(sve_traps, 0, "sve_traps of a process that never used SVE");
    check!(
        fpsimd_saves > 0,
        "its FPSIMD state was never saved, though an SVE user shared its CPU"
    );
    Ok(())
}

/// This process's FPSIMD + SVE saves so far: a change means it was switched out.
fn saves() -> u64 {
    read_stat(SELF)
        .map(|s| s.get("fpsimd_saves") + s.get("sve_saves"))
        .unwrap_or(u64::MAX)
}

/// This process's saves and restores so far: a change means it lost its registers at some point
/// (a restore counted after a read of the counters can follow a save counted before it).
fn saves_and_restores() -> u64 {
    read_stat(SELF)
        .map(|s| s.get("fpsimd_saves") + s.get("sve_saves") + s.restores())
        .unwrap_or(u64::MAX)
}

fn first_use_traps_once() -> TestResult {
    need_counters()?;
    let cpu = cpus()?[0];
    let out = Shared::new([0u64; 4]);
    let st = t!(in_child(|| {
        let _ = sys::sched_setaffinity(0, 1 << cpu);
        let r = || {
            read_stat(SELF)
                .map(|s| s.get("sve_traps"))
                .unwrap_or(u64::MAX)
        };
        let t0 = r();
        let vl = sve::rdvl(); // the first SVE instruction of this process
        let t1 = r();
        let p = SveRegs::pattern(vl, 9);
        // SVE stays enabled while the task keeps its CPU. Being switched out right after a
        // syscall (only FPSIMD is live then) rightly costs a trap, and a busy host can make that
        // happen, so a round in which this process's state was saved or reloaded is retried
        // (a switch inside the first counter read is saved before the read and reloaded, as
        // FPSIMD only, after it). The result is
        // the number of traps in a round with no switch (u64::MAX: none was quiet).
        // A reload just before a round (the previous round's last counter read can be switched
        // out and reloaded as FPSIMD only) rightly leaves SVE off: one SVE instruction after
        // the first counter read takes that trap before the round is measured.
        let quiet_round = |body: &dyn Fn()| {
            for _ in 0..10 {
                let s0 = saves_and_restores();
                let _ = sve::rdvl();
                let before = r();
                body();
                let after = r();
                if saves_and_restores() == s0 {
                    return after - before;
                }
            }
            u64::MAX
        };
        let plain = quiet_round(&|| {
            for _ in 0..100 {
                let _ = sve::load_store(&p);
            }
        });
        let with_syscalls = quiet_round(&|| {
            for _ in 0..100 {
                let _ = sve::load_syscall_store(&p, nr::GETPID, &[]);
            }
        });
        let t2 = t1.saturating_add(plain);
        let t3 = t1.saturating_add(with_syscalls);
        out.set([t0, t1, t2, t3]);
        0
    }));
    check_eq!(describe(st), "exited 0");
    let [t0, t1, t2, t3] = out.get();
    check!(t0 != u64::MAX, "reading {SELF} failed");
    check_eq!(
        t1,
        t0 + 1,
        "sve_traps after the first SVE instruction (before {})",
        t0
    );
    if t2 == u64::MAX || t3 == u64::MAX {
        return skip("switched out in every round of 100 uses");
    }
    check_eq!(t2, t1, "sve_traps after 100 more uses without syscalls");
    check_eq!(t3, t1, "sve_traps after 100 uses with a syscall each");
    Ok(())
}

fn pipe_ping_pong_reloads_nothing() -> TestResult {
    need_counters()?;
    if fp_policy_or_linux().fp == svelt_abi::fp::fppolicy::Restore::Eager {
        // Each side blocks in read: a switch, after which eager reloads (fp_policy checks it).
        return skip("svelt.fp=eager reloads after every switch");
    }
    let cpus = cpus()?;
    if cpus.len() < 2 {
        return skip("needs two CPUs");
    }
    const ROUNDS: usize = 10_000;
    let [a_r, b_w] = t!(sys::pipe2(0));
    let [b_r, a_w] = t!(sys::pipe2(0));
    // [restores before, restores after] for each side.
    let res = Shared::new([[0u64; 2]; 2]);
    let side = |i: usize, cpu: u32, rd: i32, wr: i32, first: bool| {
        let res = &res;
        move || {
            let _ = sys::sched_setaffinity(0, 1 << cpu);
            let vl = sve::rdvl();
            let p = SveRegs::pattern(vl, i as u64);
            let _ = sve::load_store(&p);
            let mut b = [0u8; 1];
            // Settle before counting: 100 exchanges, long enough for the parent (which forked
            // the second side on one of these CPUs) to be asleep in waitpid; its running there
            // in the counted rounds would make a side reload its registers once.
            for _ in 0..100 {
                if first {
                    let _ = sys::write(wr, b"x");
                    let _ = sys::read(rd, &mut b);
                } else {
                    let _ = sys::read(rd, &mut b);
                    let _ = sys::write(wr, b"x");
                }
            }
            let before = read_stat(SELF).map_or(u64::MAX, |s| s.restores());
            for _ in 0..ROUNDS {
                if first {
                    let _ = sys::write(wr, b"x");
                    let _ = sys::read(rd, &mut b);
                } else {
                    let _ = sys::read(rd, &mut b);
                    let _ = sys::write(wr, b"x");
                }
                let _ = sve::load_store(&p);
            }
            let after = read_stat(SELF).map_or(u64::MAX, |s| s.restores());
            let mut all = res.get();
            all[i] = [before, after];
            res.set(all);
            0
        }
    };
    let a = t!(spawn(side(0, cpus[0], a_r, a_w, true)));
    let (_, sa) = t!(sys::waitpid(
        t!(spawn(side(1, cpus[1], b_r, b_w, false))),
        0
    ));
    let (_, sb) = t!(sys::waitpid(a, 0));
    for fd in [a_r, a_w, b_r, b_w] {
        let _ = sys::close(fd);
    }
    check_eq!(
        (describe(sa), describe(sb)),
        ("exited 0".into(), "exited 0".into())
    );
    for (i, [before, after]) in res.get().iter().enumerate() {
        check!(
            *before != u64::MAX && *after != u64::MAX,
            "reading {SELF} failed"
        );
        check!(
            after - before <= 2,
            "side {i}: fpsimd_restores + sve_restores grew by {} over {ROUNDS} round trips",
            after - before
        );
    }
    Ok(())
}

fn syscalls_alone_reload_nothing() -> TestResult {
    need_counters()?;
    let cpu = cpus()?[0];
    let out = Shared::new([0u64; 2]);
    let st = t!(in_child(|| {
        let _ = sys::sched_setaffinity(0, 1 << cpu);
        let vl = sve::rdvl();
        let p = SveRegs::pattern(vl, 11);
        let mut o = SveRegs::zeroed(sve::VL_ARCH_MAX);
        // A round in which the process was switched out (a busy host) is retried: reloading
        // after that is right; only a round that kept the CPU must reload nothing.
        for _ in 0..10 {
            let s0 = saves();
            let before = read_stat(SELF).map_or(u64::MAX, |s| s.restores());
            for _ in 0..10_000 {
                let _ = sve::load_syscall_store_into(&p, &mut o, nr::GETPID, &[]);
            }
            let after = read_stat(SELF).map_or(u64::MAX, |s| s.restores());
            out.set([before, after]);
            if saves() == s0 {
                break;
            }
        }
        0
    }));
    check_eq!(describe(st), "exited 0");
    let [before, after] = out.get();
    check!(
        before != u64::MAX && after != u64::MAX,
        "reading {SELF} failed"
    );
    check!(
        after - before <= 1,
        "fpsimd_restores + sve_restores grew by {} over 10000 getpid calls",
        after - before
    );
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    ktap::run(&[
        ("fpstat_files_well_formed", files_are_well_formed),
        ("lazy_no_sve_use_no_sve_cost", no_sve_no_sve_cost),
        ("lazy_first_sve_use_traps_once", first_use_traps_once),
        (
            "lazy_pipe_ping_pong_reloads_nothing",
            pipe_ping_pong_reloads_nothing,
        ),
        (
            "lazy_syscalls_alone_reload_nothing",
            syscalls_alone_reload_nothing,
        ),
    ])
}

entry!(main);
