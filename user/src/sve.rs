//! SVE for the tests: HWCAPs, RDVL, the PR_SVE_* prctls, and assembly routines that load and
//! store every SVE register (Z0-Z31, P0-P15, FFR) at the current vector length.
//!
//! Register images ([`SveRegs`]) use the layout of the signal frame's sve_context payload
//! (Linux's uapi asm/sigcontext.h, SVE_SIG_* offsets without the 16-byte header): Z_n at 16·vq·n, P_n at
//! 512·vq + 2·vq·n, FFR at 544·vq, 546·vq bytes in all. Bytes are in register order (byte i is
//! bits 8i+7..8i), so the low 16 bytes of Z_n are V_n as `str q` stores it.
//!
//! The compiled Rust code never uses SVE (the user target has no +sve), so SVE registers only
//! mean something inside one of these routines: each loads the registers, does the one thing
//! being tested (a syscall, a trapping instruction, a spin), and stores them, with nothing the
//! compiler generated in between. They save d8-d15, the only FP state the base PCS preserves.

use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::AtomicU32;

use crate::rt;
use crate::sys::{self, SysResult};

// The uapi constants and prctl wrappers the SME helpers already define.
pub use crate::sme::{
    has_sve, prctl, sve_get_vl as get_vl, sve_set_vl as set_vl, AT_HWCAP, AT_HWCAP2, HWCAP_CPUID,
    HWCAP_SVE, PR_SME_GET_VL, PR_SME_SET_VL, PR_SVE_GET_VL, PR_SVE_SET_VL,
    SET_VL_ONEXEC as PR_SVE_SET_VL_ONEXEC, SVE_SIG_FLAG_SM, SVE_VL_MAX,
    VL_INHERIT as PR_SVE_VL_INHERIT, VL_LEN_MASK as PR_SVE_VL_LEN_MASK,
};

pub const HWCAP2_SVE2: u64 = 1 << 1;
/// The architecture's largest vector length (the ABI's [`SVE_VL_MAX`] is 8192).
pub const VL_ARCH_MAX: usize = 256;

/// `SVE_SIG_CONTEXT_SIZE(vq)`: header plus register payload (not rounded).
pub const fn sig_context_size(vl: usize) -> usize {
    16 + SveRegs::size(vl)
}

/// The vector length in bytes, as the hardware reports it (RDVL).
pub fn rdvl() -> usize {
    let vl;
    // SAFETY: RDVL only writes its destination; the first SVE use traps to the kernel, which
    // enables SVE for the task and re-executes it.
    unsafe {
        core::arch::asm!(".arch_extension sve", "rdvl {}, #1", out(reg) vl, options(nomem, nostack))
    };
    vl
}

/// Every vector length the system supports: each multiple of 16 up to 256 is requested with
/// PR_SVE_SET_VL and kept if RDVL then reports it. The current length is restored.
pub fn supported_vls() -> SysResult<Vec<usize>> {
    let orig = get_vl()?;
    let mut vls = Vec::new();
    for vl in (16..=VL_ARCH_MAX).step_by(16) {
        let got = set_vl(vl)? & PR_SVE_VL_LEN_MASK;
        if got == vl && rdvl() == vl {
            vls.push(vl);
        }
    }
    set_vl(orig)?;
    Ok(vls)
}

/// The first line of an SVE test: the supported lengths, or the test's skip without SVE.
pub fn need_vls() -> Result<Vec<usize>, String> {
    if !has_sve() {
        return Err(crate::ktap::skip("no SVE (AT_HWCAP lacks HWCAP_SVE)").unwrap_err());
    }
    match supported_vls() {
        Ok(v) if !v.is_empty() => Ok(v),
        Ok(_) => Err("no vector length works".into()),
        Err(e) => Err(alloc::format!("probing vector lengths: {e:?}")),
    }
}

/// Z0-Z31, P0-P15 and FFR at vector length `vl`, in the sve_context payload layout.
#[derive(Clone, PartialEq, Eq)]
pub struct SveRegs {
    pub vl: usize,
    pub bytes: Vec<u8>,
}

impl core::fmt::Debug for SveRegs {
    fn fmt(&self, f: &mut core::fmt::Formatter) -> core::fmt::Result {
        write!(f, "SveRegs(vl {})", self.vl)
    }
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl SveRegs {
    /// `SVE_SIG_REGS_SIZE(vq)` = 546·vq.
    pub const fn size(vl: usize) -> usize {
        546 * (vl / 16)
    }
    pub const fn z_offset(vl: usize, n: usize) -> usize {
        vl * n
    }
    pub const fn p_offset(vl: usize, n: usize) -> usize {
        32 * vl + vl / 8 * n
    }
    pub const fn ffr_offset(vl: usize) -> usize {
        34 * vl
    }

    pub fn zeroed(vl: usize) -> SveRegs {
        SveRegs {
            vl,
            bytes: alloc::vec![0; Self::size(vl)],
        }
    }

    /// A pattern that depends on `seed` and `vl`, different in every byte of every register.
    /// FFR gets a monotonic value (the first k bits set): WRFFR of anything else is
    /// UNPREDICTABLE.
    pub fn pattern(vl: usize, seed: u64) -> SveRegs {
        let mut r = SveRegs::zeroed(vl);
        let ffr = Self::ffr_offset(vl);
        let mut st = splitmix(seed ^ ((vl as u64) << 48));
        for (i, chunk) in r.bytes[..ffr].chunks_mut(8).enumerate() {
            let v = splitmix(st ^ i as u64).to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
        st = splitmix(st);
        let k = (st % (vl as u64 + 1)) as usize; // 0..=vl bits of FFR set
        r.set_ffr_prefix(k.max(1));
        r
    }

    /// FFR := the first `k` bits set, the rest clear.
    pub fn set_ffr_prefix(&mut self, k: usize) {
        let vl = self.vl;
        let ffr = self.ffr_mut();
        for (i, b) in ffr.iter_mut().enumerate() {
            let bits = k.saturating_sub(8 * i).min(8);
            *b = ((1u16 << bits) - 1) as u8;
        }
        debug_assert!(k <= vl);
    }

    pub fn z(&self, n: usize) -> &[u8] {
        let o = Self::z_offset(self.vl, n);
        &self.bytes[o..o + self.vl]
    }
    pub fn z_mut(&mut self, n: usize) -> &mut [u8] {
        let o = Self::z_offset(self.vl, n);
        &mut self.bytes[o..o + self.vl]
    }
    pub fn p(&self, n: usize) -> &[u8] {
        let o = Self::p_offset(self.vl, n);
        &self.bytes[o..o + self.vl / 8]
    }
    pub fn p_mut(&mut self, n: usize) -> &mut [u8] {
        let o = Self::p_offset(self.vl, n);
        &mut self.bytes[o..o + self.vl / 8]
    }
    pub fn ffr(&self) -> &[u8] {
        let o = Self::ffr_offset(self.vl);
        &self.bytes[o..o + self.vl / 8]
    }
    pub fn ffr_mut(&mut self) -> &mut [u8] {
        let o = Self::ffr_offset(self.vl);
        &mut self.bytes[o..o + self.vl / 8]
    }

    /// V_n: the low 128 bits of Z_n.
    pub fn v(&self, n: usize) -> u128 {
        let mut b = [0u8; 16];
        b.copy_from_slice(&self.z(n)[..16]);
        u128::from_le_bytes(b)
    }
    pub fn set_v(&mut self, n: usize, v: u128) {
        self.z_mut(n)[..16].copy_from_slice(&v.to_le_bytes());
    }

    /// What the SVE syscall ABI leaves of this state: V0-V31 kept, everything else zero.
    pub fn after_syscall(&self) -> SveRegs {
        let mut r = SveRegs::zeroed(self.vl);
        for n in 0..32 {
            r.set_v(n, self.v(n));
        }
        r
    }

    /// The same V0-V31 (what survives a VL change) at another length, the rest zero.
    pub fn with_vl(&self, vl: usize) -> SveRegs {
        let mut r = SveRegs::zeroed(vl);
        for n in 0..32 {
            r.set_v(n, self.v(n));
        }
        r
    }

    /// Whether both images are the same (word by word: this runs in tight loops).
    pub fn same(&self, other: &SveRegs) -> bool {
        let (a, b) = (&self.bytes, &other.bytes);
        if self.vl != other.vl || a.len() != b.len() {
            return false;
        }
        let word = |c: &[u8]| u64::from_ne_bytes(c.try_into().unwrap_or([0; 8]));
        let n = a.len() / 8 * 8;
        a[..n]
            .chunks_exact(8)
            .zip(b[..n].chunks_exact(8))
            .all(|(x, y)| word(x) == word(y))
            && a[n..] == b[n..]
    }

    /// The registers that differ from `want`, as text (None when equal).
    pub fn diff(&self, want: &SveRegs) -> Option<String> {
        if self.vl != want.vl {
            return Some(alloc::format!("vl {} != {}", self.vl, want.vl));
        }
        if self.same(want) {
            return None;
        }
        let mut out = String::new();
        let mut shown = 0;
        let regs = (0..32)
            .map(|n| (alloc::format!("z{n}"), self.z(n), want.z(n)))
            .chain((0..16).map(|n| (alloc::format!("p{n}"), self.p(n), want.p(n))))
            .chain(core::iter::once((
                String::from("ffr"),
                self.ffr(),
                want.ffr(),
            )));
        let mut count = 0;
        for (name, got, exp) in regs {
            if got == exp {
                continue;
            }
            count += 1;
            if shown < 4 {
                shown += 1;
                let first = got.iter().zip(exp).position(|(a, b)| a != b).unwrap_or(0);
                out += &alloc::format!(
                    "{name}: byte {first}: got {:02x?} want {:02x?}\n",
                    &got[first..(first + 8).min(got.len())],
                    &exp[first..(first + 8).min(exp.len())]
                );
            }
        }
        out += &alloc::format!("{count} registers differ at vl {}", self.vl);
        Some(out)
    }
}

core::arch::global_asm!(
    ".arch_extension sve",
    // \base := \buf + 34·VL, the FFR slot: every Z and P then has an in-range MUL VL offset.
    ".macro svelt_sve_base base, buf",
    "    rdvl x16, #17",
    "    add \\base, \\buf, x16, lsl #1",
    ".endm",
    ".macro svelt_sve_load base",
    "    ldr p0, [\\base]",
    "    wrffr p0.b",
    "    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
    "    ldr p\\n, [\\base, #\\n-16, mul vl]",
    "    .endr",
    "    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
    "    ldr z\\n, [\\base, #\\n-34, mul vl]",
    "    .endr",
    ".endm",
    ".macro svelt_sve_store base",
    "    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31",
    "    str z\\n, [\\base, #\\n-34, mul vl]",
    "    .endr",
    "    .irp n, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15",
    "    str p\\n, [\\base, #\\n-16, mul vl]",
    "    .endr",
    "    rdffr p0.b",
    "    str p0, [\\base]",
    ".endm",
    ".macro svelt_save_d8_d15",
    "    stp d8, d9, [sp, #-64]!",
    "    stp d10, d11, [sp, #16]",
    "    stp d12, d13, [sp, #32]",
    "    stp d14, d15, [sp, #48]",
    ".endm",
    ".macro svelt_restore_d8_d15",
    "    ldp d10, d11, [sp, #16]",
    "    ldp d12, d13, [sp, #32]",
    "    ldp d14, d15, [sp, #48]",
    "    ldp d8, d9, [sp], #64",
    ".endm",
    ".text",
    // void svelt_sve_store_all(u8 *dst)
    ".global svelt_sve_store_all",
    ".type svelt_sve_store_all, %function",
    "svelt_sve_store_all:",
    "    svelt_sve_base x9, x0",
    "    svelt_sve_store x9",
    "    ret",
    ".size svelt_sve_store_all, . - svelt_sve_store_all",
    // void svelt_sve_load_store(const u8 *src, u8 *dst)
    ".global svelt_sve_load_store",
    ".type svelt_sve_load_store, %function",
    "svelt_sve_load_store:",
    "    svelt_save_d8_d15",
    "    svelt_sve_base x9, x0",
    "    svelt_sve_load x9",
    "    svelt_sve_base x9, x1",
    "    svelt_sve_store x9",
    "    svelt_restore_d8_d15",
    "    ret",
    ".size svelt_sve_load_store, . - svelt_sve_load_store",
    // void svelt_neon_then_sve_store(const u128 v[32], u8 *dst): V0-V31 := v with AdvSIMD
    // loads only, then the first SVE instructions store the whole SVE state.
    ".global svelt_neon_then_sve_store",
    ".type svelt_neon_then_sve_store, %function",
    "svelt_neon_then_sve_store:",
    "    svelt_save_d8_d15",
    "    ldp q0, q1, [x0, #0]",
    "    ldp q2, q3, [x0, #32]",
    "    ldp q4, q5, [x0, #64]",
    "    ldp q6, q7, [x0, #96]",
    "    ldp q8, q9, [x0, #128]",
    "    ldp q10, q11, [x0, #160]",
    "    ldp q12, q13, [x0, #192]",
    "    ldp q14, q15, [x0, #224]",
    "    ldp q16, q17, [x0, #256]",
    "    ldp q18, q19, [x0, #288]",
    "    ldp q20, q21, [x0, #320]",
    "    ldp q22, q23, [x0, #352]",
    "    ldp q24, q25, [x0, #384]",
    "    ldp q26, q27, [x0, #416]",
    "    ldp q28, q29, [x0, #448]",
    "    ldp q30, q31, [x0, #480]",
    "    svelt_sve_base x9, x1",
    "    svelt_sve_store x9",
    "    svelt_restore_d8_d15",
    "    ret",
    ".size svelt_neon_then_sve_store, . - svelt_neon_then_sve_store",
    // long svelt_sve_load_svc_store(const u8 *src, u8 *dst, const u64 call[7]): loads the
    // registers, makes syscall call[0] with arguments call[1..7], stores the registers (at the
    // length in force after the call) and returns x0. GPRs other than x0 survive a syscall.
    ".global svelt_sve_load_svc_store",
    ".type svelt_sve_load_svc_store, %function",
    "svelt_sve_load_svc_store:",
    "    svelt_save_d8_d15",
    "    mov x15, x1",
    "    mov x14, x2",
    "    svelt_sve_base x9, x0",
    "    svelt_sve_load x9",
    "    ldp x8, x0, [x14]",
    "    ldp x1, x2, [x14, #16]",
    "    ldp x3, x4, [x14, #32]",
    "    ldr x5, [x14, #48]",
    "    svc #0",
    "    svelt_sve_base x9, x15",
    "    svelt_sve_store x9",
    "    svelt_restore_d8_d15",
    "    ret",
    ".size svelt_sve_load_svc_store, . - svelt_sve_load_svc_store",
    // void svelt_sve_load_udf_store(const u8 *src, u8 *dst): loads the registers, executes an
    // undefined instruction (at svelt_sve_udf_insn: the SIGILL handler moves the pc past it)
    // and stores the registers as the handler's sigreturn left them.
    ".global svelt_sve_load_udf_store",
    ".type svelt_sve_load_udf_store, %function",
    "svelt_sve_load_udf_store:",
    "    svelt_save_d8_d15",
    "    mov x15, x1",
    "    svelt_sve_base x9, x0",
    "    svelt_sve_load x9",
    ".global svelt_sve_udf_insn",
    "svelt_sve_udf_insn:",
    "    udf #0x5e",
    "    svelt_sve_base x9, x15",
    "    svelt_sve_store x9",
    "    svelt_restore_d8_d15",
    "    ret",
    ".size svelt_sve_load_udf_store, . - svelt_sve_load_udf_store",
    // u64 svelt_sve_load_spin_store(const u8 *src, u8 *dst, const u32 *flag, u64 spins): loads
    // the registers, spins (registers and one memory word only, no syscall) until *flag is
    // nonzero or `spins` rounds have passed, stores the registers; returns the rounds left.
    ".global svelt_sve_load_spin_store",
    ".type svelt_sve_load_spin_store, %function",
    "svelt_sve_load_spin_store:",
    "    svelt_save_d8_d15",
    "    mov x15, x1",
    "    svelt_sve_base x9, x0",
    "    svelt_sve_load x9",
    "1:  ldar w10, [x2]",
    "    cbnz w10, 2f",
    "    subs x3, x3, #1",
    "    b.ne 1b",
    "2:  svelt_sve_base x9, x15",
    "    svelt_sve_store x9",
    "    mov x0, x3",
    "    svelt_restore_d8_d15",
    "    ret",
    ".size svelt_sve_load_spin_store, . - svelt_sve_load_spin_store",
);

extern "C" {
    fn svelt_sve_store_all(dst: *mut u8);
    fn svelt_sve_load_store(src: *const u8, dst: *mut u8);
    fn svelt_neon_then_sve_store(v: *const u128, dst: *mut u8);
    fn svelt_sve_load_svc_store(src: *const u8, dst: *mut u8, call: *const usize) -> isize;
    fn svelt_sve_load_udf_store(src: *const u8, dst: *mut u8);
    fn svelt_sve_load_spin_store(src: *const u8, dst: *mut u8, flag: *const u32, spins: u64)
        -> u64;
    fn svelt_sve_udf_insn();
}

/// The argument that makes a test program a [`report_child`].
pub const REPORT_ARG: &str = "--sve-report";

/// `PROG --sve-report FD N` (see [`exec_report`]): writes (RDVL, PR_SVE_GET_VL) to FD, then,
/// while N > 0, execs `path` again with N-1 so that every generation reports. Returns the exit
/// status.
pub fn report_child(path: &str, a: &rt::Args) -> i32 {
    let fd: i32 = a.arg(2).and_then(|s| s.parse().ok()).unwrap_or(-1);
    let left: usize = a.arg(3).and_then(|s| s.parse().ok()).unwrap_or(0);
    let get = get_vl().map_or(u64::MAX, |v| v as u64);
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&(rdvl() as u64).to_le_bytes());
    b[8..].copy_from_slice(&get.to_le_bytes());
    if sys::write(fd, &b) != Ok(16) {
        return 2;
    }
    if left > 0 {
        let (f, l) = (alloc::format!("{fd}"), alloc::format!("{}", left - 1));
        let e = sys::execve(path, &[path, REPORT_ARG, &f, &l], &[]);
        crate::println!("# execve {path}: {e:?}");
        return 3;
    }
    0
}

/// Forks a child that runs `before`, then execs `path` (a program that calls [`report_child`]
/// when given [`REPORT_ARG`]) `gens` times in a row; returns what each generation saw:
/// (RDVL, PR_SVE_GET_VL).
pub fn exec_report(
    path: &str,
    gens: usize,
    before: impl FnOnce(),
) -> Result<Vec<(usize, usize)>, String> {
    let [r, w] = sys::pipe2(0).map_err(|e| alloc::format!("pipe2: {e:?}"))?;
    let st = crate::proc::in_child(|| {
        before();
        let _ = sys::close(r);
        let (f, l) = (alloc::format!("{w}"), alloc::format!("{}", gens - 1));
        let e = sys::execve(path, &[path, REPORT_ARG, &f, &l], &[]);
        crate::println!("# execve {path}: {e:?}");
        127
    })
    .map_err(|e| alloc::format!("fork: {e:?}"))?;
    let _ = sys::close(w);
    let mut out = Vec::new();
    let mut b = [0u8; 16];
    while let Ok(16) = sys::read(r, &mut b) {
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[8 * i..8 * i + 8]);
            u64::from_le_bytes(w) as usize
        };
        out.push((word(0), word(1)));
    }
    let _ = sys::close(r);
    if st != 0 {
        return Err(alloc::format!(
            "exec'd child: {}",
            crate::proc::describe(st)
        ));
    }
    if out.len() != gens {
        return Err(alloc::format!(
            "{} reports from {gens} generations",
            out.len()
        ));
    }
    Ok(out)
}

/// Makes room in `out` for an image at the largest architectural length (reusing its
/// allocation) and returns where a routine may store it; [`fit`] then sets the length.
fn room(out: &mut SveRegs) -> *mut u8 {
    out.bytes.clear();
    out.bytes.reserve(SveRegs::size(VL_ARCH_MAX));
    out.bytes.as_mut_ptr()
}

/// Sets `out` to the image at the current length, which a routine just stored at [`room`].
fn fit(out: &mut SveRegs) {
    out.vl = rdvl();
    // SAFETY: room() reserved space for any VL and the routine stored size(vl) bytes there.
    unsafe { out.bytes.set_len(SveRegs::size(out.vl)) };
}

/// The registers as they are now (the first SVE use of a task traps and is re-executed).
pub fn store() -> SveRegs {
    let mut out = SveRegs::zeroed(VL_ARCH_MAX);
    // SAFETY: room() sized out for any VL.
    unsafe { svelt_sve_store_all(room(&mut out)) };
    fit(&mut out);
    out
}

/// Loads `src` (at the current VL, which must be `src.vl`) and stores the registers back.
pub fn load_store(src: &SveRegs) -> SveRegs {
    assert_eq!(src.vl, rdvl());
    let mut out = SveRegs::zeroed(VL_ARCH_MAX);
    // SAFETY: src is an image at the current VL; room() sized out for any VL.
    unsafe { svelt_sve_load_store(src.bytes.as_ptr(), room(&mut out)) };
    fit(&mut out);
    out
}

/// Sets V0-V31 to `v` with AdvSIMD instructions only, then stores the SVE registers.
pub fn neon_then_store(v: &[u128; 32]) -> SveRegs {
    let mut out = SveRegs::zeroed(VL_ARCH_MAX);
    // SAFETY: v is 32 vectors; room() sized out for any VL.
    unsafe { svelt_neon_then_sve_store(v.as_ptr(), room(&mut out)) };
    fit(&mut out);
    out
}

/// Loads `src`, makes syscall `n` with `args`, stores the registers: (result, registers at the
/// VL in force after the call).
pub fn load_syscall_store(src: &SveRegs, n: usize, args: &[usize]) -> (SysResult, SveRegs) {
    let mut out = SveRegs::zeroed(VL_ARCH_MAX);
    let r = load_syscall_store_into(src, &mut out, n, args);
    (r, out)
}

/// [`load_syscall_store`] into a caller's buffer (no allocation once `out` has grown).
pub fn load_syscall_store_into(
    src: &SveRegs,
    out: &mut SveRegs,
    n: usize,
    args: &[usize],
) -> SysResult {
    assert_eq!(src.vl, rdvl());
    let mut call = [0usize; 7];
    call[0] = n;
    call[1..1 + args.len()].copy_from_slice(args);
    // SAFETY: as in load_store; the syscall's pointer arguments are the caller's business,
    // as with sys::syscall.
    let r = unsafe { svelt_sve_load_svc_store(src.bytes.as_ptr(), room(out), call.as_ptr()) };
    fit(out);
    if (-4095..0).contains(&r) {
        Err(sys::Errno(-r as i32))
    } else {
        Ok(r as usize)
    }
}

/// Loads `src`, executes `udf` at [`udf_insn`] (a SIGILL handler must step over it) and stores
/// what the registers hold after the handler returned.
pub fn load_udf_store(src: &SveRegs) -> SveRegs {
    assert_eq!(src.vl, rdvl());
    let mut out = SveRegs::zeroed(VL_ARCH_MAX);
    // SAFETY: as in load_store; the caller installed a SIGILL handler that skips the udf.
    unsafe { svelt_sve_load_udf_store(src.bytes.as_ptr(), room(&mut out)) };
    fit(&mut out);
    out
}

/// The address of the `udf` in [`load_udf_store`].
pub fn udf_insn() -> u64 {
    svelt_sve_udf_insn as *const () as u64
}

/// Loads `src`, spins without syscalls until `*flag != 0` or `spins` rounds, stores the
/// registers; returns them and the rounds left (0: timed out).
pub fn load_spin_store(src: &SveRegs, flag: &AtomicU32, spins: u64) -> (SveRegs, u64) {
    let mut out = SveRegs::zeroed(VL_ARCH_MAX);
    let left = load_spin_store_into(src, &mut out, flag, spins);
    (out, left)
}

/// [`load_spin_store`] into a caller's buffer.
pub fn load_spin_store_into(src: &SveRegs, out: &mut SveRegs, flag: &AtomicU32, spins: u64) -> u64 {
    assert_eq!(src.vl, rdvl());
    // SAFETY: as in load_store; flag is a live atomic.
    let left = unsafe {
        svelt_sve_load_spin_store(src.bytes.as_ptr(), room(out), flag.as_ptr(), spins.max(1))
    };
    fit(out);
    left
}
