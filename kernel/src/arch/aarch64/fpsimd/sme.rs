//! SME: streaming vector-length control (SMCR_EL1) and discovery.

use super::sve::VlMismatch;
use crate::arch::aarch64::sysreg::{SMCR, SMCR_EL1, SMPRI_EL1};
use svelt_abi::fp::vl::{self, VlSet};
use tock_registers::interfaces::{ReadWriteable, Writeable};

/// Current streaming vector length in bytes (RDSVL works outside streaming mode).
///
/// Requires CPACR_EL1.SMEN to let EL1 execute SME instructions.
pub fn rdsvl() -> u32 {
    let vl: u64;
    // SAFETY: RDSVL writes only a general-purpose register; EL1 SME access is enabled by the caller.
    unsafe {
        core::arch::asm!(".arch_extension sme", "rdsvl {}, #1", out(reg) vl, options(nomem, nostack))
    };
    vl as u32
}

/// Boot-time SME configuration of this CPU: priority 0, FA64 and ZT0 access when implemented.
pub fn cpu_init(fa64: bool, sme2: bool) {
    SMPRI_EL1.set(0);
    SMCR_EL1
        .write(SMCR::FA64.val(fa64 as u64) + SMCR::EZT0.val(sme2 as u64) + SMCR::LEN.val(0x1ff));
    crate::arch::aarch64::cpu::enable_el0_access(crate::arch::aarch64::cpu::El0Access::Tpidr2);
}

/// Every streaming vector length this CPU implements. Leaves SMCR_EL1.LEN at the largest.
pub fn probe_vls() -> VlSet {
    let set = vl::probe(|len| {
        SMCR_EL1.modify(SMCR::LEN.val(len as u64));
        rdsvl()
    });
    SMCR_EL1.modify(SMCR::LEN.val(0x1ff));
    set
}

/// PSTATE.SM and PSTATE.ZA as SVCR holds them.
pub fn read_svcr() -> svelt_abi::fp::fpstate::Svcr {
    let v: u64;
    // SAFETY: reads SVCR (EL1 SME access is enabled at boot).
    unsafe { core::arch::asm!("mrs {}, S3_3_C4_C2_2", out(reg) v, options(nomem, nostack)) };
    svelt_abi::fp::fpstate::Svcr {
        sm: v & 1 != 0,
        za: v & 2 != 0,
    }
}

/// Sets PSTATE.SM and PSTATE.ZA. Entering or leaving streaming mode zeroes Z, P and FFR (and
/// sets FPSR to 0x0800009F); turning ZA on zeroes ZA.
pub fn write_svcr(s: svelt_abi::fp::fpstate::Svcr) {
    let v = s.sm as u64 | (s.za as u64) << 1;
    // SAFETY: user vector state only; the kernel does not use it.
    unsafe { core::arch::asm!("msr S3_3_C4_C2_2, {}", "isb", in(reg) v, options(nomem, nostack)) };
}

/// SMSTOP SM: leave streaming mode, keep ZA.
pub fn smstop_sm() {
    // SAFETY: SMSTOP SM changes only user vector state (streaming mode), which the kernel does
    // not use; ZA is kept.
    unsafe { core::arch::asm!(".arch_extension sme", "smstop sm", options(nomem, nostack)) };
}

/// SMCR_EL1.LEN := len (streaming vector length (len + 1) · 16 bytes, rounded down).
pub fn set_len(len: u32) {
    SMCR_EL1.modify(SMCR::LEN.val(len as u64));
}

/// Enables or disables EL0 SME access (EL1 keeps it). No ISB: the change matters only to EL0,
/// and the ERET back to it is a context synchronization event.
pub fn set_el0_access(on: bool) {
    use crate::arch::aarch64::sysreg::{CPACR, CPACR_EL1};
    CPACR_EL1.modify(if on {
        CPACR::SMEN::TrapNone
    } else {
        CPACR::SMEN::TrapEl0
    });
}

/// Bytes of ZA for a streaming vector length of `svl` bytes.
pub const fn za_size(svl: usize) -> usize {
    svl * svl
}

/// Checks that the streaming VL is `svl` bytes and that `len` bytes hold ZA at that length.
fn check_za(len: usize, svl: usize) -> Result<(), VlMismatch> {
    let hw = rdsvl();
    if hw as usize != svl || len < za_size(svl) {
        return Err(VlMismatch {
            hw,
            expected: svl as u32,
        });
    }
    Ok(())
}

/// Stores ZA, row by row, into `buf`; the streaming VL must be `svl`. (With PSTATE.ZA clear
/// the access traps: a kernel bug, reported as such.)
pub fn save_za(buf: &mut [u8], svl: usize) -> Result<(), VlMismatch> {
    check_za(buf.len(), svl)?;
    // SAFETY: just checked: svl rows of svl bytes fit in buf.
    unsafe { save_za_raw(buf.as_mut_ptr(), svl) };
    Ok(())
}

/// Loads ZA, row by row, from `buf`; the streaming VL must be `svl`.
pub fn load_za(buf: &[u8], svl: usize) -> Result<(), VlMismatch> {
    check_za(buf.len(), svl)?;
    // SAFETY: just checked, as in save_za.
    unsafe { load_za_raw(buf.as_ptr(), svl) };
    Ok(())
}

/// # Safety
/// The streaming VL is `svl`, and `buf` holds `za_size(svl)` bytes.
unsafe fn save_za_raw(buf: *mut u8, svl: usize) {
    // SAFETY: the streaming VL is `svl` and `buf` holds `za_size(svl)` bytes (the contract), so
    // the svl rows of svl bytes the loop stores fit; w12 walks the rows, sixteen a turn (svl is
    // a multiple of 16; each STR's immediate names both the row after w12 and the offset in
    // vector lengths from p).
    unsafe {
        core::arch::asm!(
            ".arch_extension sme",
            "mov w12, #0",
            "2:",
            "str za[w12, 0], [{p}]",
            "str za[w12, 1], [{p}, #1, mul vl]",
            "str za[w12, 2], [{p}, #2, mul vl]",
            "str za[w12, 3], [{p}, #3, mul vl]",
            "str za[w12, 4], [{p}, #4, mul vl]",
            "str za[w12, 5], [{p}, #5, mul vl]",
            "str za[w12, 6], [{p}, #6, mul vl]",
            "str za[w12, 7], [{p}, #7, mul vl]",
            "str za[w12, 8], [{p}, #8, mul vl]",
            "str za[w12, 9], [{p}, #9, mul vl]",
            "str za[w12, 10], [{p}, #10, mul vl]",
            "str za[w12, 11], [{p}, #11, mul vl]",
            "str za[w12, 12], [{p}, #12, mul vl]",
            "str za[w12, 13], [{p}, #13, mul vl]",
            "str za[w12, 14], [{p}, #14, mul vl]",
            "str za[w12, 15], [{p}, #15, mul vl]",
            "add {p}, {p}, {svl}, lsl #4",
            "add w12, w12, #16",
            "cmp w12, {rows:w}",
            "b.lo 2b",
            p = inout(reg) buf => _,
            svl = in(reg) svl,
            rows = in(reg) svl,
            out("x12") _,
            options(nostack),
        )
    };
}

/// # Safety
/// As for [`save_za_raw`].
unsafe fn load_za_raw(buf: *const u8, svl: usize) {
    // SAFETY: the streaming VL is `svl` and `buf` holds `za_size(svl)` bytes (the contract), so
    // the svl rows the loop loads, sixteen a turn as in `save_za_raw`, are inside it; only ZA
    // (user state) is written.
    unsafe {
        core::arch::asm!(
            ".arch_extension sme",
            "mov w12, #0",
            "2:",
            "ldr za[w12, 0], [{p}]",
            "ldr za[w12, 1], [{p}, #1, mul vl]",
            "ldr za[w12, 2], [{p}, #2, mul vl]",
            "ldr za[w12, 3], [{p}, #3, mul vl]",
            "ldr za[w12, 4], [{p}, #4, mul vl]",
            "ldr za[w12, 5], [{p}, #5, mul vl]",
            "ldr za[w12, 6], [{p}, #6, mul vl]",
            "ldr za[w12, 7], [{p}, #7, mul vl]",
            "ldr za[w12, 8], [{p}, #8, mul vl]",
            "ldr za[w12, 9], [{p}, #9, mul vl]",
            "ldr za[w12, 10], [{p}, #10, mul vl]",
            "ldr za[w12, 11], [{p}, #11, mul vl]",
            "ldr za[w12, 12], [{p}, #12, mul vl]",
            "ldr za[w12, 13], [{p}, #13, mul vl]",
            "ldr za[w12, 14], [{p}, #14, mul vl]",
            "ldr za[w12, 15], [{p}, #15, mul vl]",
            "add {p}, {p}, {svl}, lsl #4",
            "add w12, w12, #16",
            "cmp w12, {rows:w}",
            "b.lo 2b",
            p = inout(reg) buf => _,
            svl = in(reg) svl,
            rows = in(reg) svl,
            out("x12") _,
            options(nostack, readonly),
        )
    };
}

/// Stores ZT0 (SME2 with SMCR_EL1.EZT0 and PSTATE.ZA set; otherwise the access traps, a
/// kernel bug reported as such).
pub fn save_zt0(buf: &mut [u8; 64]) {
    // SAFETY: STR ZT0 writes exactly 64 bytes, the size of buf.
    unsafe {
        core::arch::asm!(".arch_extension sme2", "str zt0, [{}]", in(reg) buf.as_mut_ptr(), options(nostack))
    };
}

/// Loads ZT0 (as for `save_zt0`).
pub fn load_zt0(buf: &[u8; 64]) {
    // SAFETY: LDR ZT0 reads exactly 64 bytes, the size of buf.
    unsafe {
        core::arch::asm!(".arch_extension sme2", "ldr zt0, [{}]", in(reg) buf.as_ptr(), options(nostack, readonly))
    };
}

/// TPIDR2_EL0 (the SME lazy-save pointer user space keeps), read at EL1.
pub fn read_tpidr2() -> u64 {
    let v;
    // SAFETY: reads TPIDR2_EL0 (SME implemented; EL1 SME access enabled at boot).
    unsafe { core::arch::asm!("mrs {}, S3_3_C13_C0_5", out(reg) v, options(nomem, nostack)) };
    v
}

/// Sets TPIDR2_EL0 (a user TLS value; only user code consumes it).
pub fn write_tpidr2(v: u64) {
    // SAFETY: TPIDR2_EL0 is user TLS state that no kernel code reads.
    unsafe { core::arch::asm!("msr S3_3_C13_C0_5, {}", in(reg) v, options(nomem, nostack)) };
}
