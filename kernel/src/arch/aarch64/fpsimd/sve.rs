//! SVE: vector-length control (ZCR_EL1), EL0 access (CPACR_EL1.ZEN), discovery, and the
//! save/restore primitives for Z0-Z31, P0-P15 and FFR.
//!
//! Saved layout = the signal frame's SVE payload (Linux's uapi asm/sigcontext.h, SVE_SIG_REGS_OFFSET and after), so a saved state is
//! copied into a frame as is: Z_n at 16·vq·n, P_n at 512·vq + 2·vq·n, FFR at 544·vq.

use crate::arch::aarch64::sysreg::{CPACR, CPACR_EL1, ZCR_EL1};
use svelt_abi::fp::vl::{self, VlSet};
use tock_registers::interfaces::{ReadWriteable, Writeable};

/// Current effective SVE vector length in bytes (RDVL).
///
/// Requires CPACR_EL1.ZEN and FPEN to let EL1 execute SVE instructions.
pub fn rdvl() -> u32 {
    let vl: u64;
    // SAFETY: RDVL writes only a general-purpose register; EL1 SVE access is enabled by the caller.
    unsafe {
        core::arch::asm!(".arch_extension sve", "rdvl {}, #1", out(reg) vl, options(nomem, nostack))
    };
    vl as u32
}

/// Every SVE vector length this CPU implements (within any cap EL2/EL3 imposes). Leaves ZCR_EL1
/// at the largest.
pub fn probe_vls() -> VlSet {
    let set = vl::probe(|len| {
        ZCR_EL1.set(len as u64); // ZCR writes are self-synchronising
        rdvl()
    });
    ZCR_EL1.set(0x1ff);
    set
}

/// ZCR_EL1.LEN := len (EL1 and EL0 vector length (len + 1) · 16 bytes).
pub fn set_len(len: u32) {
    ZCR_EL1.set(len as u64);
}

/// Enables or disables EL0 SVE access (EL1 keeps it). No ISB: the change matters only to EL0,
/// and the ERET back to it is a context synchronization event.
pub fn set_el0_access(on: bool) {
    CPACR_EL1.modify(if on {
        CPACR::ZEN::TrapNone
    } else {
        CPACR::ZEN::TrapEl0
    });
}

/// Bytes of a saved SVE state for `vq` (Z, P, FFR).
pub const fn state_size(vq: usize) -> usize {
    546 * vq
}

/// The vector length the registers have is not the one the caller's buffer was sized for: a
/// kernel bug, caught before a save or load runs past the buffer (Linux makes the same check).
#[derive(Clone, Copy, Debug)]
pub struct VlMismatch {
    pub hw: u32,
    pub expected: u32,
}

/// Checks that the current VL (RDVL: ZCR_EL1's, or SMCR_EL1's in streaming mode) is 16·vq and
/// that `len` bytes hold a state of that size.
fn check(len: usize, vq: usize) -> Result<(), VlMismatch> {
    let hw = rdvl();
    if hw as usize != 16 * vq || len < state_size(vq) {
        return Err(VlMismatch {
            hw,
            expected: 16 * vq as u32,
        });
    }
    Ok(())
}

/// Stores Z0-Z31, P0-P15 and FFR at the current VL, which must be 16·vq, into `buf`. Without
/// `with_ffr` (streaming mode without FA64, where FFR does not exist) the FFR slot is left as
/// it is.
pub fn save(buf: &mut [u8], vq: usize, with_ffr: bool) -> Result<(), VlMismatch> {
    check(buf.len(), vq)?;
    // SAFETY: just checked: the VL is 16·vq and buf holds state_size(vq) bytes.
    unsafe { save_raw(buf.as_mut_ptr(), vq, with_ffr) };
    Ok(())
}

/// Loads Z0-Z31, P0-P15 and FFR (if `with_ffr`) at the current VL, which must be 16·vq, from
/// `buf`.
pub fn load(buf: &[u8], vq: usize, with_ffr: bool) -> Result<(), VlMismatch> {
    check(buf.len(), vq)?;
    // SAFETY: just checked, as in save.
    unsafe { load_raw(buf.as_ptr(), vq, with_ffr) };
    Ok(())
}

/// # Safety
/// The current VL is 16·vq and `buf` holds at least `state_size(vq)` bytes.
unsafe fn save_raw(buf: *mut u8, vq: usize, with_ffr: bool) {
    let z = buf;
    // SAFETY: `buf` holds `state_size(vq)` bytes (the contract), so Z0-Z31's 512·vq bytes fit.
    let p = unsafe { buf.add(512 * vq) };
    // SAFETY: P0-P15 take 32·vq bytes after the Z registers: still inside `state_size(vq)`.
    let ffr = unsafe { buf.add(544 * vq) };
    // SAFETY: stores the vector registers into the caller's buffer; P0 is reused to read FFR
    // and reloaded afterwards so the register file is unchanged.
    unsafe {
        core::arch::asm!(
            ".arch_extension sve",
            "str z0, [{z}, #0, mul vl]", "str z1, [{z}, #1, mul vl]", "str z2, [{z}, #2, mul vl]",
            "str z3, [{z}, #3, mul vl]", "str z4, [{z}, #4, mul vl]", "str z5, [{z}, #5, mul vl]",
            "str z6, [{z}, #6, mul vl]", "str z7, [{z}, #7, mul vl]", "str z8, [{z}, #8, mul vl]",
            "str z9, [{z}, #9, mul vl]", "str z10, [{z}, #10, mul vl]", "str z11, [{z}, #11, mul vl]",
            "str z12, [{z}, #12, mul vl]", "str z13, [{z}, #13, mul vl]", "str z14, [{z}, #14, mul vl]",
            "str z15, [{z}, #15, mul vl]", "str z16, [{z}, #16, mul vl]", "str z17, [{z}, #17, mul vl]",
            "str z18, [{z}, #18, mul vl]", "str z19, [{z}, #19, mul vl]", "str z20, [{z}, #20, mul vl]",
            "str z21, [{z}, #21, mul vl]", "str z22, [{z}, #22, mul vl]", "str z23, [{z}, #23, mul vl]",
            "str z24, [{z}, #24, mul vl]", "str z25, [{z}, #25, mul vl]", "str z26, [{z}, #26, mul vl]",
            "str z27, [{z}, #27, mul vl]", "str z28, [{z}, #28, mul vl]", "str z29, [{z}, #29, mul vl]",
            "str z30, [{z}, #30, mul vl]", "str z31, [{z}, #31, mul vl]",
            "str p0, [{p}, #0, mul vl]", "str p1, [{p}, #1, mul vl]", "str p2, [{p}, #2, mul vl]",
            "str p3, [{p}, #3, mul vl]", "str p4, [{p}, #4, mul vl]", "str p5, [{p}, #5, mul vl]",
            "str p6, [{p}, #6, mul vl]", "str p7, [{p}, #7, mul vl]", "str p8, [{p}, #8, mul vl]",
            "str p9, [{p}, #9, mul vl]", "str p10, [{p}, #10, mul vl]", "str p11, [{p}, #11, mul vl]",
            "str p12, [{p}, #12, mul vl]", "str p13, [{p}, #13, mul vl]", "str p14, [{p}, #14, mul vl]",
            "str p15, [{p}, #15, mul vl]",
            "cbz {with_ffr}, 2f",
            "rdffr p0.b",
            "str p0, [{ffr}]",
            "ldr p0, [{p}, #0, mul vl]",
            "2:",
            with_ffr = in(reg) with_ffr as u64,
            z = in(reg) z,
            p = in(reg) p,
            ffr = in(reg) ffr,
            options(nostack),
        )
    };
}

/// # Safety
/// As for [`save_raw`].
unsafe fn load_raw(buf: *const u8, vq: usize, with_ffr: bool) {
    let z = buf;
    // SAFETY: `buf` holds `state_size(vq)` bytes (the contract), so Z0-Z31's 512·vq bytes fit.
    let p = unsafe { buf.add(512 * vq) };
    // SAFETY: P0-P15 take 32·vq bytes after the Z registers: still inside `state_size(vq)`.
    let ffr = unsafe { buf.add(544 * vq) };
    // SAFETY: reads the caller's buffer into the vector registers (user state, which the
    // kernel itself never uses).
    unsafe {
        core::arch::asm!(
            ".arch_extension sve",
            "ldr z0, [{z}, #0, mul vl]", "ldr z1, [{z}, #1, mul vl]", "ldr z2, [{z}, #2, mul vl]",
            "ldr z3, [{z}, #3, mul vl]", "ldr z4, [{z}, #4, mul vl]", "ldr z5, [{z}, #5, mul vl]",
            "ldr z6, [{z}, #6, mul vl]", "ldr z7, [{z}, #7, mul vl]", "ldr z8, [{z}, #8, mul vl]",
            "ldr z9, [{z}, #9, mul vl]", "ldr z10, [{z}, #10, mul vl]", "ldr z11, [{z}, #11, mul vl]",
            "ldr z12, [{z}, #12, mul vl]", "ldr z13, [{z}, #13, mul vl]", "ldr z14, [{z}, #14, mul vl]",
            "ldr z15, [{z}, #15, mul vl]", "ldr z16, [{z}, #16, mul vl]", "ldr z17, [{z}, #17, mul vl]",
            "ldr z18, [{z}, #18, mul vl]", "ldr z19, [{z}, #19, mul vl]", "ldr z20, [{z}, #20, mul vl]",
            "ldr z21, [{z}, #21, mul vl]", "ldr z22, [{z}, #22, mul vl]", "ldr z23, [{z}, #23, mul vl]",
            "ldr z24, [{z}, #24, mul vl]", "ldr z25, [{z}, #25, mul vl]", "ldr z26, [{z}, #26, mul vl]",
            "ldr z27, [{z}, #27, mul vl]", "ldr z28, [{z}, #28, mul vl]", "ldr z29, [{z}, #29, mul vl]",
            "ldr z30, [{z}, #30, mul vl]", "ldr z31, [{z}, #31, mul vl]",
            "cbz {with_ffr}, 2f",
            "ldr p0, [{ffr}]",
            "wrffr p0.b",
            "2:",
            "ldr p0, [{p}, #0, mul vl]", "ldr p1, [{p}, #1, mul vl]", "ldr p2, [{p}, #2, mul vl]",
            "ldr p3, [{p}, #3, mul vl]", "ldr p4, [{p}, #4, mul vl]", "ldr p5, [{p}, #5, mul vl]",
            "ldr p6, [{p}, #6, mul vl]", "ldr p7, [{p}, #7, mul vl]", "ldr p8, [{p}, #8, mul vl]",
            "ldr p9, [{p}, #9, mul vl]", "ldr p10, [{p}, #10, mul vl]", "ldr p11, [{p}, #11, mul vl]",
            "ldr p12, [{p}, #12, mul vl]", "ldr p13, [{p}, #13, mul vl]", "ldr p14, [{p}, #14, mul vl]",
            "ldr p15, [{p}, #15, mul vl]",
            with_ffr = in(reg) with_ffr as u64,
            z = in(reg) z,
            p = in(reg) p,
            ffr = in(reg) ffr,
            options(nostack, readonly),
        )
    };
}

/// Zeroes the live SVE state beyond V0-V31: Z bits above 127, P0-P15, FFR (the syscall ABI
/// and first use).
pub fn flush_live() {
    // SAFETY: rewrites user vector state in the registers only; an AdvSIMD write to Vn zeroes
    // the rest of Zn.
    unsafe {
        core::arch::asm!(
            ".arch_extension sve",
            ".arch_extension simd",
            "mov v0.16b, v0.16b",
            "mov v1.16b, v1.16b",
            "mov v2.16b, v2.16b",
            "mov v3.16b, v3.16b",
            "mov v4.16b, v4.16b",
            "mov v5.16b, v5.16b",
            "mov v6.16b, v6.16b",
            "mov v7.16b, v7.16b",
            "mov v8.16b, v8.16b",
            "mov v9.16b, v9.16b",
            "mov v10.16b, v10.16b",
            "mov v11.16b, v11.16b",
            "mov v12.16b, v12.16b",
            "mov v13.16b, v13.16b",
            "mov v14.16b, v14.16b",
            "mov v15.16b, v15.16b",
            "mov v16.16b, v16.16b",
            "mov v17.16b, v17.16b",
            "mov v18.16b, v18.16b",
            "mov v19.16b, v19.16b",
            "mov v20.16b, v20.16b",
            "mov v21.16b, v21.16b",
            "mov v22.16b, v22.16b",
            "mov v23.16b, v23.16b",
            "mov v24.16b, v24.16b",
            "mov v25.16b, v25.16b",
            "mov v26.16b, v26.16b",
            "mov v27.16b, v27.16b",
            "mov v28.16b, v28.16b",
            "mov v29.16b, v29.16b",
            "mov v30.16b, v30.16b",
            "mov v31.16b, v31.16b",
            "pfalse p0.b",
            "wrffr p0.b",
            "pfalse p1.b",
            "pfalse p2.b",
            "pfalse p3.b",
            "pfalse p4.b",
            "pfalse p5.b",
            "pfalse p6.b",
            "pfalse p7.b",
            "pfalse p8.b",
            "pfalse p9.b",
            "pfalse p10.b",
            "pfalse p11.b",
            "pfalse p12.b",
            "pfalse p13.b",
            "pfalse p14.b",
            "pfalse p15.b",
            options(nomem, nostack),
        )
    };
}
