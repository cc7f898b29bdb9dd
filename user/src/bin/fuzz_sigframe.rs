//! Signal-frame fuzzer: each case forks a child that makes FP/SIMD state live (and SVE,
//! streaming SVE and ZA where the hwcaps offer them: the parts a CPU lacks are skipped, the same
//! way on every kernel), takes a signal, and lets its handler mutate the frame on the stack
//! (records' magic and size fields, SVE/ZA vector lengths and flags, ZT0's register count,
//! extra_context's pointer and size, reserved bytes, pstate, uc_stack, record order) before it
//! returns through rt_sigreturn. The child's outcome is `exit:N` (it survived and exited N, a
//! summary of the state it came back with) or `sig:N` (killed by signal N).
//!
//! The seed is fixed, so the cases are the same on every kernel with the same CPU, and the
//! histogram of outcomes (`# hist fuzz_sigframe OUTCOME COUNT` lines) can be compared with
//! Linux's (tests/tests/fuzzers.rs). `--cases N` sets the number of cases. A bystander process
//! with known register contents spins beside the cases and must find them unchanged at the end.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::BTreeMap;
use core::sync::atomic::{AtomicU64, Ordering};

use svelt_user::fuzz::{self, env, Random, Rng};
use svelt_user::ktap::TestResult;
use svelt_user::proc::{self, spawn, wait_bounded, wexitstatus, wifexited, wifsignaled, wtermsig};
use svelt_user::sig::*;
use svelt_user::sme::{self, Op, OwnedRec};
use svelt_user::{check, entry, ktap, println, rt, sve, sys, t};

const SEED: u64 = 0x5167_f4a3_9e37_79b9;
const DEFAULT_CASES: usize = 300;
/// A case that runs longer than this is killed (and fails the run): none should block.
const CASE_NS: u64 = 20_000_000_000;
/// The child could not read the frame the kernel gave it (before any mutation).
const EXIT_NO_FRAME: i32 = 90;
/// Set-up failed in the child (handler, vector lengths).
const EXIT_SETUP: i32 = 91;
const RLIMIT_CORE: u32 = 4;
/// A case whose handler prints the frame before and after its edits (to find why two kernels
/// part on it: the `# cases` lines give its index).
const TRACE_CASE: Option<usize> = None;
static TRACE: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// The seed of the current case's frame mutations (set in the child before the signal).
static MUT_SEED: AtomicU64 = AtomicU64::new(0);

fn w16(a: usize, v: u16) {
    // SAFETY: callers write inside the signal frame on this thread's stack.
    unsafe { core::ptr::write_unaligned(a as *mut u16, v) }
}
fn w32(a: usize, v: u32) {
    // SAFETY: as in w16.
    unsafe { core::ptr::write_unaligned(a as *mut u32, v) }
}
fn w64(a: usize, v: u64) {
    // SAFETY: as in w16.
    unsafe { core::ptr::write_unaligned(a as *mut u64, v) }
}
fn r64(a: usize) -> u64 {
    // SAFETY: callers read inside the signal frame.
    unsafe { core::ptr::read_unaligned(a as *const u64) }
}

const MAGICS: [u32; 12] = [
    FPSIMD_MAGIC,
    ESR_MAGIC,
    EXTRA_MAGIC,
    SVE_MAGIC,
    TPIDR2_MAGIC,
    ZA_MAGIC,
    ZT_MAGIC,
    FPMR_MAGIC,
    POE_MAGIC,
    GCS_MAGIC,
    0,
    0x1234_5678,
];

/// A vector-length field's new value: valid ones, their neighbours, and nonsense.
fn vl_value(r: &mut Rng, cur: u16) -> u16 {
    let e = env();
    match r.below(8) {
        0 => 0,
        1 => cur.wrapping_add(16),
        2 => cur.wrapping_sub(16),
        3 => cur.wrapping_mul(2),
        4 => cur / 2,
        5 => r.pick(&[0xffff, 8192, 15, 1, 272]),
        6 if !e.sve_vls.is_empty() => r.pick(&e.sve_vls) as u16,
        _ if !e.sme_vls.is_empty() => r.pick(&e.sme_vls) as u16,
        _ => r.next() as u16,
    }
}

/// A record-size field's new value.
fn size_value(r: &mut Rng, cur: u32) -> u32 {
    match r.below(10) {
        0 => 0,
        1 => 8,
        2 => 16,
        3 => cur.wrapping_sub(16),
        4 => cur.wrapping_add(16),
        5 => cur.wrapping_add(1),
        6 => cur.wrapping_sub(8),
        7 => r.pick(&[0x1_0000, u32::MAX, 4096, 4080]),
        8 => (r.below(0x2000) as u32) & !15,
        _ => r.next() as u32,
    }
}

/// Where the frame's terminator is (the end of the records in `__reserved`).
fn terminator(f: &sme::Frame) -> usize {
    f.recs
        .iter()
        .filter(|x| x.addr < f.reserved + uc::RESERVED_SIZE)
        .map(|x| x.addr + x.size as usize)
        .max()
        .unwrap_or(f.reserved)
}

/// Structural edits: a record removed, duplicated, moved, or a foreign one added, written back
/// with the kernel's layout rules (extra_context when `__reserved` overflows).
fn restructure(f: &sme::Frame, r: &mut Rng) {
    let mut recs = sme::own_records(f);
    if recs.is_empty() {
        return;
    }
    let i = r.below(recs.len() as u64) as usize;
    match r.below(4) {
        0 => {
            recs.remove(i);
        }
        1 => {
            let d = recs[i].clone();
            recs.insert(i + r.below(2) as usize, d);
        }
        2 => {
            let j = r.below(recs.len() as u64) as usize;
            recs.swap(i, j);
        }
        _ => {
            let magic = r.pick(&[
                FPMR_MAGIC,
                GCS_MAGIC,
                POE_MAGIC,
                ZT_MAGIC,
                TPIDR2_MAGIC,
                ESR_MAGIC,
                0x4242_4242,
            ]);
            let len = r.pick(&[8usize, 16, 24, 72]);
            let body: alloc::vec::Vec<u8> = (0..len).map(|_| r.below(4) as u8).collect();
            recs.insert(i, OwnedRec::new(magic, &body));
        }
    }
    // A plan that does not fit is left out (the same on every kernel: the frame is the same).
    let _ = sme::write_frame(f, &recs);
}

/// One raw edit of the frame at `ucp`.
fn raw_edit(ucx: Ucontext, f: &sme::Frame, r: &mut Rng) {
    // A random record, or none when the frame has none left (a restructured frame on a CPU
    // without SVE or SME can lose its only record); one word is drawn either way.
    let rec = |r: &mut Rng| f.recs.get(r.below(f.recs.len() as u64) as usize).copied();
    let find = |m: u32| f.find(m);
    let mc = ucx.0 as usize + uc::MCONTEXT;
    let rnd = r.next();
    let k = r.below(18);
    if TRACE.load(Ordering::SeqCst) {
        println!("# raw edit {k} (rnd {rnd:#x})");
    }
    match k {
        0 => {
            if let Some(x) = rec(r) {
                let m = if r.below(4) == 0 {
                    r.next() as u32
                } else {
                    r.pick(&MAGICS)
                };
                w32(x.addr, m);
            }
        }
        1 | 2 => {
            if let Some(x) = rec(r) {
                w32(x.addr + 4, size_value(r, x.size));
            }
        }
        3 => {
            if let Some(x) = find(SVE_MAGIC) {
                w16(x.addr + 8, vl_value(r, x.u16_at(8)));
            }
        }
        4 => {
            if let Some(x) = find(SVE_MAGIC) {
                let fl = r.pick(&[0u16, 1, 2, 0x8000, rnd as u16, x.u16_at(10) ^ 1]);
                w16(x.addr + 10, fl);
            }
        }
        5 => {
            if let Some(x) = find(ZA_MAGIC) {
                w16(x.addr + 8, vl_value(r, x.u16_at(8)));
            }
        }
        6 => {
            if let Some(x) = find(ZT_MAGIC) {
                w16(x.addr + 8, r.pick(&[0u16, 1, 2, 0xffff]));
            } else if let Some(x) = find(ZA_MAGIC) {
                // ZA on or off by the size alone.
                w32(x.addr + 4, r.pick(&[16u32, x.size.wrapping_add(16), 32]));
            }
        }
        7 => {
            // Reserved bytes: the records' padding fields, or the mcontext's.
            let x = rec(r);
            let v = r.pick(&[1u16, 0x8000, rnd as u16 | 1]);
            match x {
                Some(x) if x.magic == SVE_MAGIC => w16(x.addr + 12 + 2 * r.below(2) as usize, v),
                Some(x) if matches!(x.magic, ZA_MAGIC | ZT_MAGIC) => {
                    w16(x.addr + 10 + 2 * r.below(3) as usize, v)
                }
                Some(x) if x.magic == EXTRA_MAGIC => {
                    w32(x.addr + 20 + 4 * r.below(3) as usize, v.into())
                }
                _ => w64(mc + 280, v.into()),
            }
        }
        8 => {
            if let Some(x) = find(EXTRA_MAGIC) {
                let d = x.u64_at(8);
                let v = r.pick(&[
                    0,
                    d.wrapping_add(16),
                    d.wrapping_sub(16),
                    d.wrapping_add(1),
                    0xffff_0000_0000_0000,
                    ucx.0 as u64,
                    rnd,
                ]);
                w64(x.addr + 8, v);
            }
        }
        9 => {
            if let Some(x) = find(EXTRA_MAGIC) {
                let s = x.u64_at(16) as u32;
                w32(x.addr + 16, size_value(r, s));
            }
        }
        10 => {
            // An extra_context where the kernel put none.
            if find(EXTRA_MAGIC).is_none() {
                let t = terminator(f);
                if t + 64 <= f.reserved + uc::RESERVED_SIZE {
                    let datap = (t + 48) as u64;
                    w32(t, EXTRA_MAGIC);
                    w32(t + 4, 32);
                    w64(t + 8, r.pick(&[datap, datap + 16, 0, rnd]));
                    w32(t + 16, r.pick(&[0u32, 16, 32, 8]));
                    w32(t + 20, 0);
                    w64(t + 24, 0);
                    w64(t + 32, 0);
                    w64(t + 40, 0);
                    w64(t + 48, 0);
                    w64(t + 56, 0);
                }
            }
        }
        11 => {
            let bit = r.pick(&[
                0x1u64,
                0x4,
                0x5,
                0x10,
                0x40,
                0x80,
                0x100,
                0x200,
                0xc00,
                0x1000,
                0x2000,
                0x10_0000,
                0x20_0000,
                0x40_0000,
                0x80_0000,
                0x100_0000,
                0x200_0000,
                1 << 32,
                1 << 63,
            ]);
            ucx.write_u64(uc::PSTATE, ucx.read_u64(uc::PSTATE) ^ bit);
        }
        12 => {
            if let Some(x) = find(FPSIMD_MAGIC) {
                w32(x.addr + 8, r.next() as u32);
                w32(x.addr + 12, r.next() as u32);
            }
        }
        13 => {
            // Junk instead of the terminator.
            let t = terminator(f);
            if t + 16 <= f.reserved + uc::RESERVED_SIZE {
                w32(t, r.pick(&[0u32, 0x5a5a_5a5a]));
                w32(t + 4, r.pick(&[8u32, 16, 1]));
            }
        }
        14 => {
            if let Some(x) = find(TPIDR2_MAGIC) {
                w64(x.addr + 8, r.next());
            } else if let Some(x) = find(ESR_MAGIC) {
                w64(x.addr + 8, r.next());
            }
        }
        15 => {
            // uc_stack: the kernel restores the alternate stack from it.
            let u = ucx.0 as usize;
            match r.below(3) {
                0 => w32(
                    u + uc::STACK_FLAGS,
                    r.pick(&[1u32, 2, 4, 0x8000_0000, rnd as u32]),
                ),
                1 => w64(
                    u + uc::STACK_SP,
                    r.pick(&[0u64, 1, 0xffff_0000_0000_0000, rnd]),
                ),
                _ => w64(u + uc::STACK_SIZE, r.pick(&[0u64, 1, 4096, u64::MAX])),
            }
        }
        16 => {
            let pc = ucx.pc();
            ucx.set_pc(r.pick(&[pc + 2, pc + 1, 0, 0xffff_0000_0000_0000]));
        }
        _ => {
            // Bytes after the terminator (reserved space the kernel must not read).
            let t = terminator(f);
            if t + 24 <= f.reserved + uc::RESERVED_SIZE && r64(t) == 0 {
                w64(t + 16, r.next());
            }
        }
    }
}

extern "C" fn handler(_sig: i32, _info: *mut SigInfo, ucp: *mut u8) {
    let ucx = Ucontext(ucp);
    ucx.set_pc(ucx.pc() + 4);
    let mut r = Rng(MUT_SEED.load(Ordering::SeqCst) | 1);
    let Ok(mut f) = sme::parse_frame(ucp) else {
        sys::exit_group(EXIT_NO_FRAME)
    };
    let trace = TRACE.load(Ordering::SeqCst);
    if trace {
        println!("# frame before: {}", f.describe());
    }
    if r.below(4) == 0 {
        restructure(&f, &mut r);
        if trace {
            println!("# restructured");
        }
        match sme::parse_frame(ucp) {
            Ok(g) => f = g,
            Err(_) => sys::exit_group(EXIT_NO_FRAME),
        }
    }
    for _ in 0..1 + r.below(3) {
        raw_edit(ucx, &f, &mut r);
    }
    if trace {
        for x in &f.recs {
            println!(
                "# {} at {}: {:02x?}",
                sme::rec_name(x.magic),
                x.addr - f.reserved,
                &x.bytes()[..x.size.min(32) as usize]
            );
        }
        println!(
            "# pstate {:#x} pc {:#x}",
            ucx.read_u64(uc::PSTATE),
            ucx.pc()
        );
    }
}

/// The child of one case; its exit status sums up what it came back with (bit 0: streaming
/// mode, bit 1: ZA, bit 2: SVE VL changed, bit 3: SME VL changed).
fn case(seed: u64) -> i32 {
    let e = env();
    let mut r = Rng(seed | 1);
    if set_handler(SIGTRAP, handler, 0, 0).is_err() || set_handler(SIGILL, handler, 0, 0).is_err() {
        return EXIT_SETUP;
    }
    let vl = if e.sve_vls.is_empty() {
        0
    } else {
        r.pick(&e.sve_vls)
    };
    if vl != 0 && sme::sve_set_vl(vl).map(|v| v & 0xffff) != Ok(vl) {
        return EXIT_SETUP;
    }
    MUT_SEED.store(r.next(), Ordering::SeqCst);
    if !e.sme_vls.is_empty() {
        let svl = r.pick(&e.sme_vls);
        if sme::sme_set_vl(svl).map(|v| v & 0xffff) != Ok(svl) {
            return EXIT_SETUP;
        }
        let (sm, za) = (r.below(2) == 1, r.below(2) == 1);
        let zvl = if sm { svl } else { vl };
        let zin = sme::z_pattern(seed, zvl, !sm || e.fa64);
        let zain = sme::pattern(seed ^ 1, svl * svl);
        let mut zout = alloc::vec![0u8; sme::z_image_len(svl.max(vl))];
        let mut zaout = alloc::vec![0u8; svl * svl];
        let mut op = Op {
            flags: sme::F_TPIDR2
                | if sm { sme::F_SM } else { 0 }
                | if za { sme::F_ZA } else { 0 }
                | if e.fa64 { sme::F_FA64 } else { 0 },
            tpidr2_in: seed,
            z_in: zin.as_ptr() as usize,
            za_in: if za { zain.as_ptr() as usize } else { 0 },
            action: sme::A_BRK,
            z_out: zout.as_mut_ptr() as usize,
            za_out: zaout.as_mut_ptr() as usize,
            ..Op::default()
        };
        sme::run(&mut op);
        // RDVL gives the streaming length in streaming mode.
        let want_vl = if op.svcr_after & 1 != 0 { svl } else { vl };
        (op.svcr_after & 3) as i32
            | i32::from(op.vl_after as usize != want_vl) << 2
            | i32::from(op.svl_after as usize != svl) << 3
    } else if vl != 0 {
        let regs = sve::SveRegs::pattern(vl, seed);
        let out = sve::load_udf_store(&regs);
        i32::from(out.vl != vl) << 2
    } else {
        // FP/SIMD only: the compiled code's V registers are live anyway.
        // SAFETY: the handler steps the pc over the brk.
        unsafe { core::arch::asm!("brk #0x5e") };
        0
    }
}

/// One letter per case for the `# cases` lines, which show where two kernels part.
fn letter(outcome: &str) -> char {
    match outcome {
        "sig:11" => 'S',
        "sig:7" => 'B',
        "sig:4" => 'I',
        "sig:5" => 'T',
        "timeout" => '?',
        o if o.starts_with("sig:") => 'K',
        o => match o.strip_prefix("exit:").and_then(|n| n.parse::<u32>().ok()) {
            Some(n) if n < 10 => char::from(b'0' + n as u8),
            _ => 'x',
        },
    }
}

fn fuzz() -> TestResult {
    // Cores of hundreds of SIGSEGVs would only cost time.
    let _ = sys::setrlimit(RLIMIT_CORE, &sys::Rlimit { cur: 0, max: 0 });
    fuzz::init_env();

    let flag = proc::Shared::new(0u64);
    let by = t!(spawn(|| fuzz::bystander(flag.addr(), EXIT_SETUP)));
    let cases = fuzz::cases_arg(DEFAULT_CASES);
    let mut rng = Rng(SEED);
    let mut hist: BTreeMap<alloc::string::String, u32> = BTreeMap::new();
    let mut bad = alloc::vec::Vec::new();
    let mut trail = alloc::string::String::new();
    for i in 0..cases {
        let seed = rng.next();
        TRACE.store(TRACE_CASE == Some(i), Ordering::SeqCst);
        let pid = t!(spawn(|| case(seed)));
        let (st, timed_out) = t!(wait_bounded(pid, CASE_NS));
        let outcome = if timed_out {
            bad.push(alloc::format!("case {i} (seed {seed:#x}) did not end"));
            "timeout".into()
        } else if wifexited(st) {
            alloc::format!("exit:{}", wexitstatus(st))
        } else if wifsignaled(st) {
            alloc::format!("sig:{}", wtermsig(st))
        } else {
            alloc::format!("status:{st:#x}")
        };
        trail.push(letter(&outcome));
        *hist.entry(outcome).or_default() += 1;
    }
    flag.set(1);
    let (st, timed_out) = t!(wait_bounded(by, CASE_NS));
    for (i, chunk) in trail.as_bytes().chunks(100).enumerate() {
        let chunk = core::str::from_utf8(chunk).unwrap_or("");
        println!("# cases fuzz_sigframe {} {chunk}", i * 100);
    }
    for (k, n) in &hist {
        println!("# hist fuzz_sigframe {k} {n}");
    }
    check!(bad.is_empty(), "{}", bad.join("\n"));
    check!(
        !timed_out && wifexited(st) && wexitstatus(st) == 0,
        "bystander: {}",
        proc::describe(st)
    );
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    let status = ktap::run(&[("signal_frames_fuzzed_bystander_intact", fuzz)]);
    fuzz::drain_console_if_init();
    status
}

entry!(main);
