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
use core::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

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

/// xorshift64*: the same stream on every kernel.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<T: Copy>(&mut self, v: &[T]) -> T {
        v[self.below(v.len() as u64) as usize]
    }
}

struct Env {
    sve_vls: Vec<usize>,
    sme_vls: Vec<usize>,
    fa64: bool,
}

static ENV: AtomicUsize = AtomicUsize::new(0);

fn env() -> &'static Env {
    // SAFETY: set (and leaked) before the first fork; never freed.
    unsafe { &*(ENV.load(Ordering::SeqCst) as *const Env) }
}

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

core::arch::global_asm!(
    r#"
    .text
    // void svelt_fuzz_regset_fp_spin(const u8 *src, u8 *dst, const u32 *flag): V0-V31 := src,
    // spin until *flag != 0, store V0-V31 to dst.
    .global svelt_fuzz_regset_fp_spin
    .type svelt_fuzz_regset_fp_spin, %function
svelt_fuzz_regset_fp_spin:
    stp d8, d9, [sp, #-64]!
    stp d10, d11, [sp, #16]
    stp d12, d13, [sp, #32]
    stp d14, d15, [sp, #48]
    .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    ldr q\n, [x0, #\n*16]
    .endr
1:  ldar w9, [x2]
    cbz w9, 1b
    .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    str q\n, [x1, #\n*16]
    .endr
    ldp d14, d15, [sp, #48]
    ldp d12, d13, [sp, #32]
    ldp d10, d11, [sp, #16]
    ldp d8, d9, [sp], #64
    ret
    .size svelt_fuzz_regset_fp_spin, . - svelt_fuzz_regset_fp_spin
"#
);

extern "C" {
    fn svelt_fuzz_regset_fp_spin(src: *const u8, dst: *mut u8, flag: *const u32);
}

/// The bystander: loads known registers (streaming Z and ZA with SME, Z with SVE, V otherwise),
/// spins without a syscall until `flag` is set, and exits 0 if they are unchanged.
fn bystander(flag: usize) -> i32 {
    let e = env();
    let seed = 0xb157_a4de;
    if let Some(&svl) = e.sme_vls.last() {
        if sme::sme_set_vl(svl).is_err() {
            return 3;
        }
        let zin = sme::z_pattern(seed, svl, e.fa64);
        let zain = sme::pattern(seed ^ 1, svl * svl);
        let mut zout = alloc::vec![0u8; sme::z_image_len(svl)];
        let mut zaout = alloc::vec![0u8; svl * svl];
        let mut op = Op {
            flags: sme::F_SM | sme::F_ZA | if e.fa64 { sme::F_FA64 } else { 0 },
            z_in: zin.as_ptr() as usize,
            za_in: zain.as_ptr() as usize,
            action: sme::A_SPIN_FLAG,
            spin: flag,
            z_out: zout.as_mut_ptr() as usize,
            za_out: zaout.as_mut_ptr() as usize,
            ..Op::default()
        };
        sme::run(&mut op);
        let n = if op.out_flags & sme::O_FFR != 0 {
            zout.len()
        } else {
            sme::ffr_off(svl)
        };
        let mut bad = false;
        if let Some(d) = sme::z_diff("bystander streaming Z", svl, &zout[..n], &zin[..n]) {
            println!("# {d}");
            bad = true;
        }
        if let Some(d) = sme::diff("bystander ZA", &zaout, &zain) {
            println!("# {d}");
            bad = true;
        }
        i32::from(bad)
    } else if let Some(&vl) = e.sve_vls.last() {
        if sme::sve_set_vl(vl).is_err() {
            return 3;
        }
        let regs = sve::SveRegs::pattern(vl, seed);
        // SAFETY: the flag lives in shared memory for the life of this process.
        let f = unsafe { &*(flag as *const AtomicU32) };
        let (out, _) = sve::load_spin_store(&regs, f, u64::MAX);
        match out.diff(&regs) {
            Some(d) => {
                println!("# bystander: {d}");
                1
            }
            None => 0,
        }
    } else {
        let src = sme::pattern(seed, 512);
        let mut dst = alloc::vec![0u8; 512];
        // SAFETY: both buffers are 512 bytes (V0-V31); the flag is mapped for our lifetime.
        unsafe { svelt_fuzz_regset_fp_spin(src.as_ptr(), dst.as_mut_ptr(), flag as *const u32) };
        i32::from(sme::diff("bystander V", &dst, &src).is_some())
    }
}

fn cases_arg() -> usize {
    let a = rt::args();
    match (a.arg(1), a.arg(2)) {
        (Some("--cases"), Some(n)) => n.parse().unwrap_or(DEFAULT_CASES),
        _ => DEFAULT_CASES,
    }
}

fn fuzz() -> TestResult {
    pt::need_ptrace()?;
    let (sve_vls, sme_vls) = if sme::has_sme() {
        (sme::sve_vls(), sme::sme_vls())
    } else if sme::has_sve() {
        (sme::sve_vls(), alloc::vec![])
    } else {
        (alloc::vec![], alloc::vec![])
    };
    let e = alloc::boxed::Box::new(Env {
        sve_vls,
        sme_vls,
        fa64: sme::has_fa64(),
    });
    println!(
        "# sve vls {:?}, sme vls {:?}, fa64 {}",
        e.sve_vls, e.sme_vls, e.fa64
    );
    ENV.store(
        alloc::boxed::Box::leak(e) as *const Env as usize,
        Ordering::SeqCst,
    );
    let pg = pages()?;
    let mut get = alloc::vec![0u8; GET_MAX];

    let flag = proc::Shared::new(0u64);
    let by = t!(spawn(|| bystander(flag.addr())));
    let cases = cases_arg();
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

/// tcdrain's ioctl.
const TCSBRK: usize = 0x5409;

fn main(_a: &rt::Args) -> i32 {
    let status = ktap::run(&[("regset_payloads_fuzzed_bystander_intact", fuzz)]);
    // As the first process on Linux, our exit panics the kernel at once, and the console's
    // last lines may still wait in the UART's buffer: let them out first.
    if sys::getpid() == 1 {
        let _ = sys::ioctl(1, TCSBRK, 1);
    }
    status
}

entry!(main);
