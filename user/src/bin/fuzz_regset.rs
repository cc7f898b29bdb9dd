//! Regset payload fuzzer: a tracer and a stopped tracee (SVE, streaming SVE and ZA live where
//! the hwcaps offer them), random PTRACE_SETREGSET payloads (random lengths, multiples of the
//! natural size or not; NT_ARM_SVE/SSVE/ZA headers with random vl, flags and size; NT_ARM_ZT,
//! FPMR, TLS, HW_BREAK/WATCH, SYSTEM_CALL, GCS, POE, TAGGED_ADDR_CTRL, the GPRs and FP/SIMD; now
//! and then an iov base that is null, in the kernel's half, unmapped or running into a guard
//! page), each followed by a GETREGSET of the same note. The outcome of a case is
//! `NOTE:ok` or `NOTE:errno:N` for the SET, with `+get:errno:N` when the GET fails.
//!
//! The seed is fixed; the histogram (`# hist fuzz_regset OUTCOME COUNT` lines) is compared with
//! Linux's by tests/tests/fuzzers.rs. Each tracee takes a batch of cases and is then killed.
//! `--cases N` sets the number of cases. A bystander process with known register contents
//! spins beside them and must find them unchanged at the end.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

use svelt_user::fuzz::{self, env, Random, Rng};
use svelt_user::ktap::TestResult;
use svelt_user::proc::{self, spawn, wait_bounded, wexitstatus, wifexited};
use svelt_user::ptrace::{self as pt, VecHeader};
use svelt_user::sme::{self, Op};
use svelt_user::sys::{self, Iovec};
use svelt_user::{check, entry, format, ktap, println, rt, sve, t};
use zerocopy::IntoBytes;

const SEED: u64 = 0x2e95_e7f0_77ab_1234;
const DEFAULT_CASES: usize = 300;
/// Cases per tracee.
const BATCH: usize = 20;
const NT_ARM_POE: usize = 0x40f;
const NT_ARM_GCS: usize = 0x410;
/// Large enough for any regset (ZA at SVL 256 is 64 KiB and a header).
const GET_MAX: usize = 70_000;
/// Print every case's outcome (to find where two kernels part).
const TRACE: bool = false;

const NOTES: [(usize, &str); 17] = [
    (pt::NT_PRSTATUS, "prstatus"),
    (pt::NT_PRFPREG, "prfpreg"),
    (pt::NT_ARM_TLS, "tls"),
    (pt::NT_ARM_HW_BREAK, "hw_break"),
    (pt::NT_ARM_HW_WATCH, "hw_watch"),
    (pt::NT_ARM_SYSTEM_CALL, "system_call"),
    (pt::NT_ARM_SVE, "sve"),
    (pt::NT_ARM_SVE, "sve"),
    (pt::NT_ARM_SSVE, "ssve"),
    (pt::NT_ARM_SSVE, "ssve"),
    (pt::NT_ARM_ZA, "za"),
    (pt::NT_ARM_ZA, "za"),
    (pt::NT_ARM_ZT, "zt"),
    (pt::NT_ARM_FPMR, "fpmr"),
    (NT_ARM_GCS, "gcs"),
    (NT_ARM_POE, "poe"),
    (pt::NT_ARM_TAGGED_ADDR_CTRL, "tagged_addr_ctrl"),
];

/// The tracee: traced, with state live (chosen from `seed`), stopped at a brk/udf until killed.
fn tracee(seed: u64) -> i32 {
    let e = env();
    let mut r = Rng(seed | 1);
    if pt::traceme().is_err() {
        return 2;
    }
    let vl = if e.sve_vls.is_empty() {
        0
    } else {
        r.pick(&e.sve_vls)
    };
    if vl != 0 && sme::sve_set_vl(vl).is_err() {
        return 3;
    }
    if !e.sme_vls.is_empty() {
        let svl = r.pick(&e.sme_vls);
        if sme::sme_set_vl(svl).is_err() {
            return 3;
        }
        let (sm, za) = (r.below(2) == 1, r.below(2) == 1);
        let zvl = if sm { svl } else { vl };
        let zin = sme::z_pattern(seed, zvl, !sm || e.fa64);
        let zain = sme::pattern(seed ^ 1, svl * svl);
        let mut op = Op {
            flags: sme::F_TPIDR2
                | if sm { sme::F_SM } else { 0 }
                | if za { sme::F_ZA } else { 0 }
                | if e.fa64 { sme::F_FA64 } else { 0 },
            tpidr2_in: seed,
            z_in: zin.as_ptr() as usize,
            za_in: if za { zain.as_ptr() as usize } else { 0 },
            action: sme::A_BRK,
            ..Op::default()
        };
        sme::run(&mut op);
    } else if vl != 0 {
        let _ = sve::load_udf_store(&sve::SveRegs::pattern(vl, seed));
    } else {
        // SAFETY: a breakpoint; the tracer kills us at it.
        unsafe { core::arch::asm!("brk #0x5e") };
    }
    0
}

/// The natural size of a note's payload for the tracee's state (`cur`: its current header for
/// the vector notes).
fn natural(nt: usize, cur: Option<VecHeader>) -> usize {
    match nt {
        pt::NT_PRSTATUS => pt::PT_REGS_SIZE,
        pt::NT_PRFPREG => pt::FPSIMD_SIZE,
        pt::NT_ARM_TLS => 16,
        pt::NT_ARM_HW_BREAK | pt::NT_ARM_HW_WATCH => 8 + 16 * 16,
        pt::NT_ARM_SYSTEM_CALL => 4,
        pt::NT_ARM_ZT => pt::ZT_SIZE,
        NT_ARM_GCS => 24,
        pt::NT_ARM_SVE | pt::NT_ARM_SSVE | pt::NT_ARM_ZA => {
            cur.map_or(pt::HEADER_SIZE, |h| h.size as usize)
        }
        _ => 8,
    }
}

/// A vector-length field for a header.
fn vl_value(r: &mut Rng, cur: u16) -> u16 {
    let e = env();
    match r.below(8) {
        0 => 0,
        1 => cur.wrapping_add(16),
        2 => cur / 2,
        3 => r.pick(&[0xffff, 8192, 15, 1, 272]),
        4 if !e.sve_vls.is_empty() => r.pick(&e.sve_vls) as u16,
        5 if !e.sme_vls.is_empty() => r.pick(&e.sme_vls) as u16,
        _ => cur,
    }
}

/// Where a payload goes: the Vec's own memory, or one of the bad bases.
enum Base {
    Good,
    Addr(usize),
    /// The payload's end runs this many bytes into a PROT_NONE page.
    Guard(usize),
}

/// Memory for the bad-base cases: a readable page followed by a PROT_NONE one, and an address
/// that is mapped by nothing.
struct Pages {
    guard: usize,
    unmapped: usize,
}

fn pages() -> Result<Pages, String> {
    let m = sys::mmap(
        0,
        3 * 4096,
        sys::PROT_READ | sys::PROT_WRITE,
        sys::MAP_PRIVATE | sys::MAP_ANONYMOUS,
        -1,
        0,
    )
    .map_err(|e| format!("mmap: {e:?}"))?;
    sys::syscall(sys::nr::MPROTECT, &[m + 4096, 4096, 0])
        .map_err(|e| format!("mprotect: {e:?}"))?;
    sys::munmap(m + 8192, 4096).map_err(|e| format!("munmap: {e:?}"))?;
    Ok(Pages {
        guard: m + 4096,
        unmapped: m + 8192,
    })
}

fn errno_text(e: sys::Errno) -> String {
    format!("errno:{}", e.0)
}

/// One case against the stopped tracee `pid`: its outcome.
fn one(pid: i32, r: &mut Rng, pg: &Pages, get: &mut [u8]) -> String {
    let (nt, name) = r.pick(&NOTES);
    // The current payload: a valid start for half the cases (and the header's vl and size).
    let cur = pt::getregset(pid, nt, get)
        .ok()
        .map(|n| get[..n.min(GET_MAX)].to_vec());
    let hdr = cur.as_deref().and_then(VecHeader::parse);
    let n0 = natural(nt, hdr);
    let len = match r.below(10) {
        0 => 0,
        1 => r.pick(&[1usize, 4, 7, 8, 12, 15, 16, 17, 24, 32]),
        2 => n0.saturating_sub(1),
        3 => n0 + 1,
        4 => n0 + 16,
        5 => r.below(2 * n0 as u64 + 64) as usize,
        6 => n0.saturating_sub(16),
        _ => n0,
    };
    let from_cur = r.below(2) == 0;
    let mut buf: Vec<u8> = match &cur {
        Some(c) if from_cur => {
            let mut b = c.clone();
            b.resize(len, 0);
            b
        }
        _ => (0..len).map(|_| r.next() as u8).collect(),
    };
    let is_vec = matches!(nt, pt::NT_ARM_SVE | pt::NT_ARM_SSVE | pt::NT_ARM_ZA);
    if is_vec && buf.len() >= pt::HEADER_SIZE && r.below(4) != 0 {
        let cvl = hdr.map_or(16, |h| h.vl);
        let vl = vl_value(r, cvl);
        let rnd = r.next() as u16;
        let flags = r.pick(&[0u16, 1, 2, 3, 4, 5, 6, 7, rnd, hdr.map_or(0, |h| h.flags)]);
        let size = match r.below(4) {
            0 => r.below(0x1_0000) as usize,
            1 if nt == pt::NT_ARM_ZA => pt::za_pt_size(vl as usize / 16),
            1 => pt::sve_pt_size(vl as usize / 16, flags & 1),
            2 => pt::HEADER_SIZE,
            _ => len,
        };
        let mut h = VecHeader::new(size, vl.into(), flags);
        if r.below(8) == 0 {
            h.reserved = r.next() as u16;
            h.max_vl = r.next() as u16;
        }
        buf[..16].copy_from_slice(h.as_bytes());
    }
    if nt == pt::NT_ARM_HW_BREAK || nt == pt::NT_ARM_HW_WATCH {
        // Plausible control words now and then: enabled, EL0, byte-address-select.
        for i in 0..16 {
            let o = 8 + 16 * i + 8;
            if buf.len() >= o + 4 && r.below(3) == 0 {
                let rnd = r.next() as u32;
                let ctrl = r.pick(&[0u32, 0x1e5, 0x1f7, 0xff7, 0x17, rnd]);
                buf[o..o + 4].copy_from_slice(&ctrl.to_le_bytes());
            }
        }
    }
    let base = match r.below(16) {
        0 => Base::Addr(r.pick(&[
            0usize,
            1,
            0xffff_0000_0000_0000,
            pg.unmapped,
            0x0000_ffff_ffff_f000,
        ])),
        1 if !buf.is_empty() => Base::Guard(1 + r.below(buf.len().min(64) as u64) as usize),
        _ => Base::Good,
    };
    let iov_base = match base {
        Base::Good => buf.as_ptr() as usize,
        Base::Addr(a) => a,
        Base::Guard(over) => {
            // The part before the guard page holds the payload's start (at most one page).
            let keep = (buf.len() - over).min(4096);
            // SAFETY: guard-keep..guard is the tail of the readable page mapped in pages().
            unsafe {
                core::ptr::copy_nonoverlapping(buf.as_ptr(), (pg.guard - keep) as *mut u8, keep)
            };
            pg.guard - keep
        }
    };
    let mut iov = Iovec {
        base: iov_base,
        len: buf.len(),
    };
    let set = pt::ptrace(
        pt::PTRACE_SETREGSET,
        pid,
        nt,
        &mut iov as *mut Iovec as usize,
    );
    if TRACE {
        let kind = match base {
            Base::Good => "good",
            Base::Addr(_) => "addr",
            Base::Guard(_) => "guard",
        };
        println!(
            "# set {name} len {} base {kind} {iov_base:#x} head {:02x?}",
            buf.len(),
            &buf[..buf.len().min(32)]
        );
    }
    let mut out = format!("{name}:");
    out += &match set {
        Ok(_) => "ok".into(),
        Err(e) => errno_text(e),
    };
    if let Err(e) = pt::getregset(pid, nt, get) {
        out += "+get:";
        out += &errno_text(e);
    }
    out
}

/// One tracee and its batch of cases; adds the outcomes to `hist`.
fn batch(
    seed: u64,
    cases: usize,
    pg: &Pages,
    get: &mut [u8],
    hist: &mut BTreeMap<String, u32>,
) -> TestResult {
    let mut r = Rng(seed | 1);
    let tseed = r.next();
    let pid = t!(spawn(|| tracee(tseed)));
    let st = pt::wait_stop(pid)?;
    check!(
        st >> 8 == svelt_user::sig::SIGTRAP || st >> 8 == svelt_user::sig::SIGILL,
        "tracee stopped with {st:#x}"
    );
    for i in 0..cases {
        // Each case its own stream: a difference in one does not move the others.
        let o = one(pid, &mut Rng(r.next() | 1), pg, get);
        if TRACE {
            println!("# case {tseed:#x}/{i} {o}");
        }
        *hist.entry(o).or_default() += 1;
    }
    t!(sys::kill(pid, svelt_user::sig::SIGKILL));
    pt::wait_end(pid)?;
    Ok(())
}

fn fuzz() -> TestResult {
    pt::need_ptrace()?;
    fuzz::init_env();
    let pg = pages()?;
    let mut get = alloc::vec![0u8; GET_MAX];

    let flag = proc::Shared::new(0u64);
    let by = t!(spawn(|| fuzz::bystander(flag.addr(), 3)));
    let cases = fuzz::cases_arg(DEFAULT_CASES);
    let mut rng = Rng(SEED);
    let mut hist: BTreeMap<String, u32> = BTreeMap::new();
    let mut done = 0;
    let mut res = Ok(());
    while done < cases && res.is_ok() {
        let n = BATCH.min(cases - done);
        res = batch(rng.next(), n, &pg, &mut get, &mut hist);
        done += n;
    }
    flag.set(1);
    let (st, timed_out) = t!(wait_bounded(by, 20_000_000_000));
    for (k, n) in &hist {
        println!("# hist fuzz_regset {k} {n}");
    }
    res?;
    check!(
        !timed_out && wifexited(st) && wexitstatus(st) == 0,
        "bystander: {}",
        proc::describe(st)
    );
    Ok(())
}

fn main(_a: &rt::Args) -> i32 {
    let status = ktap::run(&[("regset_payloads_fuzzed_bystander_intact", fuzz)]);
    fuzz::drain_console_if_init();
    status
}

entry!(main);
