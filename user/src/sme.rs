//! SME helpers for the `sme_*` test programs: hwcaps, the PR_SME_* prctls, the streaming/ZA
//! register "machine" ([`run`]) and a sigframe record walker/rewriter that follows
//! extra_context.
//!
//! Compiled Rust code may use AdvSIMD at any time, and any AdvSIMD write zeroes the upper bits of
//! a Z register, so SVE/SME register contents cannot be carried from one `asm!` block to the
//! next. [`run`] therefore does a whole scenario in one assembly routine: enter streaming mode
//! and/or ZA, load Z/P/FFR and ZA from memory, do one action (a syscall, a `brk`, a spin), then
//! store everything back to memory and leave streaming mode (always) and ZA (unless asked to keep
//! it). Instruction encodings: the Arm ARM's SME instruction chapter (C8); the Z/P/FFR image has the signal
//! payload layout (Linux's uapi asm/sigcontext.h): Z0..Z31 (VL bytes each), P0..P15 and FFR (VL/8 each).

use alloc::string::String;
use alloc::vec::Vec;

use crate::sys::{self, nr, SysResult};

pub const AT_HWCAP: usize = 16;
pub const AT_HWCAP2: usize = 26;
pub const AT_MINSIGSTKSZ: usize = 51;
pub const HWCAP_CPUID: u64 = 1 << 11;
pub const HWCAP_SVE: u64 = 1 << 22;
pub const HWCAP2_SME: u64 = 1 << 23;
pub const HWCAP2_SME_FA64: u64 = 1 << 30;
pub const HWCAP2_SME2: u64 = 1 << 37;

pub const PR_SVE_SET_VL: usize = 50;
pub const PR_SVE_GET_VL: usize = 51;
pub const PR_SME_SET_VL: usize = 63;
pub const PR_SME_GET_VL: usize = 64;
pub const VL_LEN_MASK: usize = 0xffff;
pub const VL_INHERIT: usize = 1 << 17;
pub const SET_VL_ONEXEC: usize = 1 << 18;
pub const SVE_VL_MAX: usize = 8192;

pub const SVE_SIG_FLAG_SM: u16 = 1;
pub const SVCR_SM: u64 = 1;
pub const SVCR_ZA: u64 = 2;

pub fn hwcap() -> u64 {
    crate::rt::args().getauxval(AT_HWCAP).unwrap_or(0) as u64
}
pub fn hwcap2() -> u64 {
    crate::rt::args().getauxval(AT_HWCAP2).unwrap_or(0) as u64
}
pub fn has_sme() -> bool {
    hwcap2() & HWCAP2_SME != 0
}
pub fn has_fa64() -> bool {
    hwcap2() & HWCAP2_SME_FA64 != 0
}
pub fn has_sme2() -> bool {
    hwcap2() & HWCAP2_SME2 != 0
}
pub fn has_sve() -> bool {
    hwcap() & HWCAP_SVE != 0
}

/// `Err(skip)` unless the CPU has SME: the first line of every SME test.
pub fn need_sme() -> crate::ktap::TestResult {
    if has_sme() {
        Ok(())
    } else {
        crate::ktap::skip("no SME (HWCAP2_SME clear)")
    }
}

pub fn prctl(op: usize, arg: usize) -> SysResult {
    sys::syscall(nr::PRCTL, &[op, arg, 0, 0, 0])
}
pub fn sme_set_vl(arg: usize) -> SysResult {
    prctl(PR_SME_SET_VL, arg)
}
pub fn sme_get_vl() -> SysResult {
    prctl(PR_SME_GET_VL, 0)
}
pub fn sve_set_vl(arg: usize) -> SysResult {
    prctl(PR_SVE_SET_VL, arg)
}
pub fn sve_get_vl() -> SysResult {
    prctl(PR_SVE_GET_VL, 0)
}
/// The current SME vector length in bytes.
pub fn svl() -> usize {
    sme_get_vl().unwrap_or(0) & VL_LEN_MASK
}
/// The current SVE vector length in bytes (0 without SVE).
pub fn sve_vl() -> usize {
    sve_get_vl().unwrap_or(0) & VL_LEN_MASK
}

/// Every vector length the prctl accepts as distinct (the supported set), ascending. Changes the
/// calling thread's VL and puts it back, so call it before building up state.
fn probe_vls(set: usize, get: usize) -> Vec<usize> {
    let old = prctl(get, 0).unwrap_or(0);
    let mut vls = Vec::new();
    let mut vq = 16;
    while vq >= 1 {
        match prctl(set, vq * 16) {
            Ok(v) => {
                let v = v & VL_LEN_MASK;
                if !vls.contains(&v) {
                    vls.push(v);
                }
                // Continue below what we got (rounding down skips the gaps).
                vq = (v / 16).min(vq) - 1;
            }
            Err(_) => break,
        }
    }
    let _ = prctl(set, old);
    vls.sort_unstable();
    vls
}
pub fn sme_vls() -> Vec<usize> {
    probe_vls(PR_SME_SET_VL, PR_SME_GET_VL)
}
pub fn sve_vls() -> Vec<usize> {
    probe_vls(PR_SVE_SET_VL, PR_SVE_GET_VL)
}

/// SVCR (generic name: assembles without the sme extension). Traps the first time (SME enable).
pub fn svcr() -> u64 {
    let v;
    // SAFETY: reading SVCR has no side effects beyond the kernel enabling SME on first use.
    unsafe { core::arch::asm!("mrs {}, S3_3_C4_C2_2", out(reg) v, options(nomem, nostack)) };
    v
}
pub fn tpidr2() -> u64 {
    let v;
    // SAFETY: reading TPIDR2_EL0 has no side effects (SCTLR_EL1.EnTP2 is set by the kernel).
    unsafe { core::arch::asm!("mrs {}, S3_3_C13_C0_5", out(reg) v, options(nomem, nostack)) };
    v
}
pub fn set_tpidr2(v: u64) {
    // SAFETY: TPIDR2_EL0 is a user-owned scratch register; nothing in this runtime uses it.
    unsafe { core::arch::asm!("msr S3_3_C13_C0_5, {}", in(reg) v, options(nomem, nostack)) };
}
/// RDSVL #1: the streaming vector length, in or out of streaming mode.
pub fn rdsvl() -> usize {
    let v;
    // SAFETY: RDSVL only reads the effective SVL.
    unsafe {
        core::arch::asm!(".arch_extension sme", "rdsvl {}, #1", out(reg) v, options(nomem, nostack))
    };
    v
}
/// FPSR.
pub fn fpsr() -> u64 {
    let v;
    // SAFETY: reading FPSR has no side effects.
    unsafe { core::arch::asm!("mrs {}, fpsr", out(reg) v, options(nomem, nostack)) };
    v
}
/// SMSTOP ZA (PSTATE.ZA := 0) outside streaming mode.
pub fn smstop_za() {
    // SAFETY: turning ZA off discards ZA, which no compiled code uses.
    unsafe { core::arch::asm!(".arch_extension sme", "smstop za", options(nomem, nostack)) };
}
/// Reads ID_AA64SMFR0_EL1 (emulated for EL0 with HWCAP_CPUID).
pub fn id_aa64smfr0() -> u64 {
    let v;
    // SAFETY: the kernel emulates EL0 reads of ID registers (HWCAP_CPUID).
    unsafe { core::arch::asm!("mrs {}, S3_0_C0_C4_5", out(reg) v, options(nomem, nostack)) };
    v
}
pub fn id_aa64pfr1() -> u64 {
    let v;
    // SAFETY: as in id_aa64smfr0.
    unsafe { core::arch::asm!("mrs {}, S3_0_C0_C4_1", out(reg) v, options(nomem, nostack)) };
    v
}

// ---- the register machine ----

/// Op::flags
pub const F_SM: u64 = 1; // SMSTART SM first
pub const F_ZA: u64 = 2; // SMSTART ZA first (no effect, and no zeroing, if ZA is already on)
pub const F_TPIDR2: u64 = 4; // write tpidr2_in first
pub const F_FA64: u64 = 8; // FFR is accessible in streaming mode (HWCAP2_SME_FA64)
pub const F_KEEP_ZA: u64 = 16; // leave PSTATE.ZA as it is at the end (else SMSTOP ZA)
pub const F_ZERO_ZA: u64 = 32; // ZERO {ZA} before loading

/// Op::action
pub const A_NONE: u64 = 0;
pub const A_SVC: u64 = 1; // svc #0 with x8 = nr, x0..x5 = args; ret = x0
pub const A_BRK: u64 = 2; // brk #0x5e (SIGTRAP; the handler must step pc over it)
pub const A_SPIN_FLAG: u64 = 3; // spin until the u64 at `spin` is nonzero
pub const A_SPIN_COUNT: u64 = 4; // spin `spin` iterations
pub const A_SMSTOP_SM: u64 = 5;
pub const A_SMSTOP_ZA: u64 = 6;
pub const A_SMSTART_ZA: u64 = 7;

/// Op::out_flags
pub const O_Z: u64 = 1; // Z and P stored
pub const O_FFR: u64 = 2; // FFR stored (else its slot is left untouched)
pub const O_ZA: u64 = 4; // ZA stored (PSTATE.ZA was 1)

/// One scenario for [`run`]. Buffers are raw addresses (0 = not used); z images are
/// `z_image_len(vl)` bytes for the VL in force at that point, ZA images SVL*SVL bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct Op {
    pub flags: u64,
    pub tpidr2_in: u64,
    pub z_in: usize,
    pub za_in: usize,
    pub action: u64,
    pub x8: u64,
    pub args: [u64; 6],
    pub spin: usize,
    pub z_out: usize,
    pub za_out: usize,
    // outputs
    pub ret: u64,
    pub svcr_before: u64,
    pub svcr_after: u64,
    pub tpidr2_after: u64,
    pub vl_after: u64,
    pub svl_after: u64,
    pub out_flags: u64,
    pub fpsr_after: u64,
}
const _: () = assert!(core::mem::size_of::<Op>() == 184);

core::arch::global_asm!(
    r#"
    .arch_extension sve
    .arch_extension sme
    .text
    .global svelt_sme_run
    .type svelt_sme_run, %function
svelt_sme_run:
    stp x29, x30, [sp, #-96]!
    mov x29, sp
    stp x19, x20, [sp, #16]
    stp d8, d9, [sp, #32]
    stp d10, d11, [sp, #48]
    stp d12, d13, [sp, #64]
    stp d14, d15, [sp, #80]
    mov x19, x0
    ldr x20, [x19, #0]              // flags

    tbz x20, #2, 1f                 // F_TPIDR2
    ldr x9, [x19, #8]
    msr S3_3_C13_C0_5, x9
1:  tbz x20, #0, 1f                 // F_SM
    smstart sm
1:  tbz x20, #1, 1f                 // F_ZA
    smstart za
1:  tbz x20, #5, 1f                 // F_ZERO_ZA
    zero {{za}}
1:
    // Z/P/FFR in
    ldr x10, [x19, #16]
    cbz x10, 3f
    rdvl x9, #1
    mov x11, #34
    madd x10, x9, x11, x10          // x10 = &FFR slot
    mrs x11, S3_3_C4_C2_2
    tbz x11, #0, 1f                 // not streaming: FFR always accessible
    tbz x20, #3, 2f                 // streaming without FA64: no FFR
1:  ldr p0, [x10]
    wrffr p0.b
2:
    .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    ldr p\n, [x10, #\n-16, mul vl]
    .endr
    .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    ldr z\n, [x10, #\n-34, mul vl]
    .endr
3:
    // ZA in
    ldr x10, [x19, #24]
    cbz x10, 3f
    rdsvl x9, #1
    mov w12, #0
1:  ldr za[w12, 0], [x10]
    add x10, x10, x9
    add w12, w12, #1
    cmp w12, w9
    b.ne 1b
3:
    mrs x9, S3_3_C4_C2_2
    str x9, [x19, #128]             // svcr_before

    ldr x9, [x19, #32]              // action
    cmp x9, #1
    b.ne 1f
    ldp x0, x1, [x19, #48]
    ldp x2, x3, [x19, #64]
    ldp x4, x5, [x19, #80]
    ldr x8, [x19, #40]
    svc #0
    str x0, [x19, #120]
    b 9f
1:  cmp x9, #2
    b.ne 1f
    .global svelt_sme_brk
svelt_sme_brk:
    brk #0x5e
    b 9f
1:  cmp x9, #3
    b.ne 1f
    ldr x10, [x19, #96]
2:  ldar x11, [x10]
    cbz x11, 2b
    b 9f
1:  cmp x9, #4
    b.ne 1f
    ldr x10, [x19, #96]
    cbz x10, 9f
2:  subs x10, x10, #1
    b.ne 2b
    b 9f
1:  cmp x9, #5
    b.ne 1f
    smstop sm
    b 9f
1:  cmp x9, #6
    b.ne 1f
    smstop za
    b 9f
1:  cmp x9, #7
    b.ne 9f
    smstart za
9:
    mrs x9, S3_3_C4_C2_2
    str x9, [x19, #136]             // svcr_after
    mrs x9, S3_3_C13_C0_5
    str x9, [x19, #144]             // tpidr2_after
    rdvl x9, #1
    str x9, [x19, #152]             // vl_after
    rdsvl x9, #1
    str x9, [x19, #160]             // svl_after
    mrs x9, fpsr
    str x9, [x19, #176]             // fpsr_after
    mov x13, #0                     // out_flags

    // Z/P/FFR out
    ldr x10, [x19, #104]
    cbz x10, 3f
    rdvl x9, #1
    mov x11, #34
    madd x10, x9, x11, x10
    .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
    str z\n, [x10, #\n-34, mul vl]
    .endr
    .irp n,0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15
    str p\n, [x10, #\n-16, mul vl]
    .endr
    orr x13, x13, #1
    mrs x11, S3_3_C4_C2_2
    tbz x11, #0, 1f
    tbz x20, #3, 3f
1:  rdffr p0.b
    str p0, [x10]
    orr x13, x13, #2
3:
    // ZA out
    ldr x10, [x19, #112]
    cbz x10, 3f
    mrs x11, S3_3_C4_C2_2
    tbz x11, #1, 3f
    rdsvl x9, #1
    mov w12, #0
1:  str za[w12, 0], [x10]
    add x10, x10, x9
    add w12, w12, #1
    cmp w12, w9
    b.ne 1b
    orr x13, x13, #4
3:
    str x13, [x19, #168]
    mrs x11, S3_3_C4_C2_2
    tbz x11, #0, 1f
    smstop sm
1:  tbnz x20, #4, 1f                // F_KEEP_ZA
    tbz x11, #1, 1f
    smstop za
1:
    ldp d14, d15, [sp, #80]
    ldp d12, d13, [sp, #64]
    ldp d10, d11, [sp, #48]
    ldp d8, d9, [sp, #32]
    ldp x19, x20, [sp, #16]
    ldp x29, x30, [sp], #96
    ret
    .size svelt_sme_run, . - svelt_sme_run
"#
);

extern "C" {
    fn svelt_sme_run(op: *mut Op);
    fn svelt_sme_brk();
}

/// The address of the `brk` that [`A_BRK`] executes (the signal's pc and si_addr).
pub fn brk_addr() -> u64 {
    svelt_sme_brk as *const () as u64
}

/// Runs one scenario (see the module comment). Returns with PSTATE.SM = 0.
pub fn run(op: &mut Op) {
    // SAFETY: the routine saves every callee-saved register it uses (x19, x20, x29, x30,
    // d8-d15) and only touches memory through the buffers in `op`, which the caller sized for
    // the vector lengths in force; it always leaves streaming mode, so compiled code resumes in
    // the mode it expects (ZA state is invisible to it).
    unsafe { svelt_sme_run(op) }
}

/// Bytes of a Z0-31/P0-15/FFR image at vector length `vl` (= SVE_SIG_REGS_SIZE).
pub const fn z_image_len(vl: usize) -> usize {
    34 * vl + vl / 8
}
/// Offset of the FFR slot in a Z image.
pub const fn ffr_off(vl: usize) -> usize {
    34 * vl
}

/// A deterministic, mostly non-zero byte pattern.
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8 | 1
        })
        .collect()
}

/// A Z image at `vl` with patterned Z and P and a valid (monotonic) FFR, or FFR zero.
pub fn z_pattern(seed: u64, vl: usize, ffr: bool) -> Vec<u8> {
    let mut v = pattern(seed, z_image_len(vl));
    let f = ffr_off(vl);
    for (i, b) in v[f..].iter_mut().enumerate() {
        *b = 0;
        if ffr {
            // Monotonic: the first `ones` bits set.
            let ones = (seed as usize % (vl * 8)) + 1;
            for bit in 0..8 {
                if i * 8 + bit < ones {
                    *b |= 1 << bit;
                }
            }
        }
    }
    v
}

/// First differing offset, described, or None.
pub fn diff(what: &str, got: &[u8], want: &[u8]) -> Option<String> {
    if got.len() != want.len() {
        return Some(alloc::format!(
            "{what}: length {} != {}",
            got.len(),
            want.len()
        ));
    }
    let i = got.iter().zip(want).position(|(a, b)| a != b)?;
    let n = got.iter().zip(want).filter(|(a, b)| a != b).count();
    Some(alloc::format!(
        "{what}: {n} bytes differ, first at {i}: got {:#04x} want {:#04x}",
        got[i],
        want[i]
    ))
}

/// Describes a Z-image offset as a register name.
pub fn z_reg_name(vl: usize, off: usize) -> String {
    if off < 32 * vl {
        alloc::format!("z{}[{}]", off / vl, off % vl)
    } else if off < 34 * vl {
        let p = vl / 8;
        alloc::format!("p{}[{}]", (off - 32 * vl) / p, (off - 32 * vl) % p)
    } else {
        alloc::format!("ffr[{}]", off - 34 * vl)
    }
}

/// Compares two Z images at `vl`, naming the first differing register.
pub fn z_diff(what: &str, vl: usize, got: &[u8], want: &[u8]) -> Option<String> {
    let i = got.iter().zip(want).position(|(a, b)| a != b)?;
    Some(alloc::format!(
        "{what} (vl {vl}): first difference at {} ({i}): got {:#04x} want {:#04x}",
        z_reg_name(vl, i),
        got[i],
        want[i]
    ))
}

/// What a streaming/non-streaming switch leaves: zeros.
pub fn zeros(n: usize) -> Vec<u8> {
    alloc::vec![0u8; n]
}

// ---- signal frames ----

/// One record found in a signal frame: its address, magic and size (header included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rec {
    pub addr: usize,
    pub magic: u32,
    pub size: u32,
}

impl Rec {
    pub fn u16_at(&self, off: usize) -> u16 {
        // SAFETY: the record lies in a kernel-built frame (or one the test built) and `off` is
        // within its size.
        unsafe { core::ptr::read_unaligned((self.addr + off) as *const u16) }
    }
    pub fn u64_at(&self, off: usize) -> u64 {
        // SAFETY: as in u16_at.
        unsafe { core::ptr::read_unaligned((self.addr + off) as *const u64) }
    }
    /// The record's bytes, header included.
    pub fn bytes(&self) -> &'static [u8] {
        // SAFETY: as in u16_at; the frame outlives the handler's use of the slice.
        unsafe { core::slice::from_raw_parts(self.addr as *const u8, self.size as usize) }
    }
    /// Bytes after the 16-byte header (SVE/ZA/ZT payloads), up to `len`.
    pub fn payload(&self, len: usize) -> &'static [u8] {
        // SAFETY: as in u16_at; callers check size >= 16 + len first.
        unsafe { core::slice::from_raw_parts((self.addr + 16) as *const u8, len) }
    }
}

/// A parsed frame: records in order (the extra_context record included), and where the
/// `__reserved` area, and the extra space if any, are.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    pub recs: Vec<Rec>,
    pub reserved: usize,
    /// (datap, size) of extra_context.
    pub extra: Option<(usize, usize)>,
}

impl Frame {
    pub fn find(&self, magic: u32) -> Option<Rec> {
        self.recs.iter().copied().find(|r| r.magic == magic)
    }
    pub fn magics(&self) -> Vec<u32> {
        self.recs.iter().map(|r| r.magic).collect()
    }
    /// The records as text: `name@offset+size` with offsets from the frame's `__reserved`.
    pub fn describe(&self) -> String {
        let mut s = String::new();
        for r in &self.recs {
            if !s.is_empty() {
                s += " ";
            }
            s += &alloc::format!(
                "{}@{}+{}",
                rec_name(r.magic),
                r.addr - self.reserved,
                r.size
            );
        }
        s
    }
}

pub fn rec_name(magic: u32) -> &'static str {
    use crate::sig::*;
    match magic {
        FPSIMD_MAGIC => "fpsimd",
        ESR_MAGIC => "esr",
        EXTRA_MAGIC => "extra",
        SVE_MAGIC => "sve",
        TPIDR2_MAGIC => "tpidr2",
        ZA_MAGIC => "za",
        ZT_MAGIC => "zt",
        FPMR_MAGIC => "fpmr",
        POE_MAGIC => "poe",
        GCS_MAGIC => "gcs",
        _ => "?",
    }
}

fn rd32(a: usize) -> u32 {
    // SAFETY: callers only read inside a signal frame's record area.
    unsafe { core::ptr::read_unaligned(a as *const u32) }
}

/// Walks a handler's `ucontext` records, following extra_context (Linux's uapi asm/sigcontext.h, struct extra_context).
pub fn parse_frame(ucp: *mut u8) -> Result<Frame, String> {
    let reserved = ucp as usize + crate::sig::uc::RESERVED;
    let mut f = Frame {
        reserved,
        ..Frame::default()
    };
    let mut p = reserved;
    let mut end = reserved + crate::sig::uc::RESERVED_SIZE;
    let mut in_extra = false;
    loop {
        if p + 8 > end {
            return Err(alloc::format!("no terminator ({})", f.describe()));
        }
        if !(p - reserved).is_multiple_of(16) {
            return Err(alloc::format!("record at {} not 16-aligned", p - reserved));
        }
        let (magic, size) = (rd32(p), rd32(p + 4));
        if magic == 0 {
            if size != 0 {
                return Err(alloc::format!("terminator with size {size}"));
            }
            match f.extra {
                Some((datap, size)) if !in_extra => {
                    if datap != p + 16 {
                        return Err(alloc::format!(
                            "extra datap {:#x} is not just after the terminator at {:#x}",
                            datap,
                            p
                        ));
                    }
                    in_extra = true;
                    p = datap;
                    end = datap + size;
                    continue;
                }
                _ => return Ok(f),
            }
        }
        if size < 8 || p + size as usize > end {
            return Err(alloc::format!(
                "record {magic:#x} at {} has bad size {size}",
                p - reserved
            ));
        }
        let r = Rec {
            addr: p,
            magic,
            size,
        };
        if magic == crate::sig::EXTRA_MAGIC {
            if in_extra || f.extra.is_some() {
                return Err("second extra_context".into());
            }
            f.extra = Some((r.u64_at(8) as usize, rd32(p + 16) as usize));
        }
        f.recs.push(r);
        p += size as usize;
    }
}

/// An owned record for [`write_frame`]: magic and full bytes (the header's size is the length
/// rounded up to 16 unless `size_override` is set).
#[derive(Clone, Debug)]
pub struct OwnedRec {
    pub magic: u32,
    pub bytes: Vec<u8>,
    pub size_override: Option<u32>,
}

impl OwnedRec {
    pub fn from_rec(r: &Rec) -> OwnedRec {
        OwnedRec {
            magic: r.magic,
            bytes: Vec::from(r.bytes()),
            size_override: None,
        }
    }
    pub fn new(magic: u32, body: &[u8]) -> OwnedRec {
        let mut bytes = alloc::vec![0u8; 8];
        bytes.extend_from_slice(body);
        OwnedRec {
            magic,
            bytes,
            size_override: None,
        }
    }
    pub fn set_u16(&mut self, off: usize, v: u16) {
        self.bytes[off..off + 2].copy_from_slice(&v.to_ne_bytes());
    }
    pub fn set_u64(&mut self, off: usize, v: u64) {
        self.bytes[off..off + 8].copy_from_slice(&v.to_ne_bytes());
    }
}

/// The records of `f` except extra_context, owned.
pub fn own_records(f: &Frame) -> Vec<OwnedRec> {
    f.recs
        .iter()
        .filter(|r| r.magic != crate::sig::EXTRA_MAGIC)
        .map(OwnedRec::from_rec)
        .collect()
}

/// Rewrites the frame's record area with `recs` (padded to 16 bytes each), placing an
/// extra_context the way the kernel does when `__reserved` overflows; the extra space may only
/// use what the original frame had. Errors if it does not fit.
pub fn write_frame(f: &Frame, recs: &[OwnedRec]) -> Result<(), String> {
    const BUDGET: usize = 4096 - 16 - 32;
    let limit = f.extra.map(|(d, s)| d + s).unwrap_or(0);
    // Plan first, write after (the new records may be copies of bytes we overwrite).
    let mut p = f.reserved;
    let mut extra_at: Option<usize> = None;
    let mut places = Vec::new();
    for r in recs {
        let len = r.bytes.len().next_multiple_of(16);
        if extra_at.is_none() && p + len > f.reserved + BUDGET {
            extra_at = Some(p);
            p += 32 + 16;
        }
        places.push(p);
        p += len;
    }
    let end = p + 16;
    if extra_at.is_some() && end > limit {
        return Err(alloc::format!(
            "new frame needs {} bytes beyond __reserved, have {}",
            end - f.reserved,
            limit.saturating_sub(f.reserved)
        ));
    }
    let mut out = Vec::new();
    for (r, &at) in recs.iter().zip(&places) {
        let mut b = r.bytes.clone();
        b.resize(r.bytes.len().next_multiple_of(16), 0);
        // Sizes are written padded, as the kernel does: its parser advances by `size` and
        // insists on 16-byte alignment.
        let size = r.size_override.unwrap_or(b.len() as u32);
        b[0..4].copy_from_slice(&r.magic.to_ne_bytes());
        b[4..8].copy_from_slice(&size.to_ne_bytes());
        out.push((at, b));
    }
    let w = |at: usize, b: &[u8]| {
        // SAFETY: `at..at+len` lies in the frame's record area or its extra space (checked
        // above against the original frame's extent), user stack memory we may write.
        unsafe { core::ptr::copy(b.as_ptr(), at as *mut u8, b.len()) }
    };
    if let Some(x) = extra_at {
        let datap = x + 48;
        let mut e = alloc::vec![0u8; 48];
        e[0..4].copy_from_slice(&crate::sig::EXTRA_MAGIC.to_ne_bytes());
        e[4..8].copy_from_slice(&32u32.to_ne_bytes());
        e[8..16].copy_from_slice(&(datap as u64).to_ne_bytes());
        e[16..20].copy_from_slice(&((end - datap) as u32).to_ne_bytes());
        w(x, &e);
    }
    for (at, b) in &out {
        w(*at, b);
    }
    w(p, &[0u8; 16]);
    Ok(())
}

/// Reads /proc/self/fpstat (Svelt only) into (name, value) pairs; None where it does not exist.
pub fn fpstat() -> Option<Vec<(String, u64)>> {
    let text = crate::io::read_file("/proc/self/fpstat").ok()?;
    let text = core::str::from_utf8(&text).ok()?;
    Some(
        text.lines()
            .filter_map(|l| {
                let (k, v) = l.split_once(' ')?;
                Some((String::from(k), v.trim().parse().ok()?))
            })
            .collect(),
    )
}
pub fn fpstat_get(stats: &[(String, u64)], key: &str) -> Option<u64> {
    stats.iter().find(|(k, _)| k == key).map(|(_, v)| *v)
}

/// Svelt's FP policy, from the `policy` line of /proc/svelt/fpstat; None where that file does
/// not exist (Linux: its behaviour is the default policy's) or has no well-formed line.
pub fn fp_policy() -> Option<svelt_abi::fp::fppolicy::Policy> {
    let text = crate::io::read_file("/proc/svelt/fpstat").ok()?;
    svelt_abi::fp::fppolicy::from_fpstat(core::str::from_utf8(&text).ok()?)
}

/// The policy a program sees: Svelt's, or on Linux the default (Linux's own behaviour).
pub fn fp_policy_or_linux() -> svelt_abi::fp::fppolicy::Policy {
    fp_policy().unwrap_or(svelt_abi::fp::fppolicy::Policy::LINUX)
}

/// This program's path, for re-executing itself in a fresh process.
pub fn self_path() -> String {
    let a0 = crate::rt::args().arg(0).unwrap_or("");
    if a0.contains('/') {
        String::from(a0)
    } else {
        alloc::format!("/bin/tests/{a0}")
    }
}

/// Forks and execs this program with `args` (argv[1..]); returns the wait status.
pub fn exec_self(args: &[&str]) -> SysResult<i32> {
    let path = self_path();
    let mut argv: Vec<&str> = alloc::vec![path.as_str()];
    argv.extend_from_slice(args);
    crate::proc::in_child(|| {
        let e = sys::execve(&path, &argv, &["PATH=/bin/tests:/bin"]);
        crate::eprintln!("# execve {path}: {e:?}");
        127
    })
}

pub fn sched_setaffinity(pid: i32, mask: u64) -> SysResult {
    sys::syscall(
        nr::SCHED_SETAFFINITY,
        &[pid as usize, 8, &mask as *const u64 as usize],
    )
}
pub fn sched_getaffinity(pid: i32) -> SysResult<u64> {
    let mut m = 0u64;
    sys::syscall(
        nr::SCHED_GETAFFINITY,
        &[pid as usize, 8, &mut m as *mut u64 as usize],
    )
    .map(|_| m)
}

/// A host task for the KVM switch tests: spins in streaming mode (`spin` iterations at a
/// time) with Z/P (and FFR with FA64) holding a pattern from `seed`, checking them after each
/// spin, until `stop` reads nonzero. Exit status 0, or 1 (after printing the difference).
pub fn spin_streaming_until(stop: &crate::proc::Shared<u32>, seed: u64, spin: usize) -> i32 {
    let svl = svl();
    let fa64 = has_fa64();
    let zin = z_pattern(seed, svl, fa64);
    let mut n = 0u32;
    while stop.get() == 0 {
        let mut zout = zeros(z_image_len(svl));
        let mut op = Op {
            flags: F_SM | if fa64 { F_FA64 } else { 0 },
            z_in: zin.as_ptr() as usize,
            action: A_SPIN_COUNT,
            spin,
            z_out: zout.as_mut_ptr() as usize,
            ..Op::default()
        };
        run(&mut op);
        if let Some(d) = z_diff("streaming Z/P/FFR", svl, &zout, &zin) {
            crate::println!("    # spin {n}: {d}");
            return 1;
        }
        n += 1;
    }
    0
}
