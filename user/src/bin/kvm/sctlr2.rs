//! SCTLR2_EL1 for guests (FEAT_SCTLR2), as Linux 7.3's KVM gives it where the CPU has it: the
//! VM's ID_AA64MMFR3_EL1.SCTLRX shows it, and while it does the register is listed, reachable
//! by ONE_REG and the guest's own (sys_regs.c's sctlr2_visibility, HCRX_EL2.SCTLR2En);
//! lowered by the VMM, it is unlisted, ENOENT and UNDEFINED to the guest.

use super::*;

const MMFR3: u64 = k::sysreg_id(3, 0, 0, 7, 3);
const SCTLR2_EL1: u64 = k::sysreg_id(3, 0, 1, 0, 3);
const SCTLRX: u64 = 0xf << 4;

// Reads SCTLR2_EL1 and stores it (+0x10), writes x2 to it and stores what it reads back
// (+0x18), then spins. Its EL1h synchronous vector stores ESR_EL1 (+8) and returns past the
// instruction.
core::arch::global_asm!(
    ".balign 2048",
    ".global guest_sctlr2, guest_sctlr2_end",
    "guest_sctlr2:",
    "adr x0, 1f",
    "msr vbar_el1, x0",
    "isb",
    "movz x1, #0x1000, lsl #16",
    "mrs x3, S3_0_C1_C0_3",
    "str x3, [x1, #0x10]",
    "msr S3_0_C1_C0_3, x2",
    "isb",
    "mrs x3, S3_0_C1_C0_3",
    "str x3, [x1, #0x18]",
    "b .",
    ".balign 2048",
    "1:",
    ".skip 0x200",
    "mrs x2, esr_el1",
    "str x2, [x1, #8]",
    "mrs x2, elr_el1",
    "add x2, x2, #4",
    "msr elr_el1, x2",
    "eret",
    "guest_sctlr2_end:",
);

unsafe extern "C" {
    static guest_sctlr2: u8;
    static guest_sctlr2_end: u8;
}

/// The register follows the VM's SCTLRX: listed and 0 after init, the guest reads it, writes
/// EnADERR|NMEA (what the CPU implements of them sticks) and reads back what ONE_REG then
/// gives; lowered, it is unlisted, ENOENT and UNDEFINED.
pub fn sctlr2_guest() -> TestResult {
    let kvm = kvm!();
    let code = code!(guest_sctlr2, guest_sctlr2_end);
    let g = t!(Guest::new(kvm, code));
    let m = t!(get_reg(g.vcpu, MMFR3)) as u64;
    if m & SCTLRX == 0 {
        let list = t!(reg_list(g.vcpu));
        check!(
            !list.contains(&SCTLR2_EL1),
            "SCTLR2_EL1 listed without SCTLRX"
        );
        check_eq!(get_reg(g.vcpu, SCTLR2_EL1), Err(ENOENT), "without SCTLRX");
        return ktap::skip("the VM has no FEAT_SCTLR2");
    }
    let list = t!(reg_list(g.vcpu));
    check!(list.contains(&SCTLR2_EL1), "SCTLR2_EL1 not listed");
    check_eq!(get_reg(g.vcpu, SCTLR2_EL1), Ok(0), "reset value");
    t!(set_reg(g.vcpu, SCTLR2_EL1, 0));
    t!(set_reg(g.vcpu, x(2), 0xc));
    let (addr, v, _, _) = t!(g.run_to_mmio());
    check_eq!((addr - MMIO, v), (0x10, 0), "the guest's first read");
    let (addr, v, _, _) = t!(g.run_to_mmio());
    check_eq!(addr - MMIO, 0x18, "the read back");
    check_eq!(v & !0xc, 0, "only the bits written");
    check_eq!(
        get_reg(g.vcpu, SCTLR2_EL1),
        Ok(v as u128),
        "ONE_REG after the guest's write"
    );
    drop(g);
    // Hidden: unlisted, ENOENT, and the guest's read is UNDEFINED.
    let kvm = kvm!();
    let h = t!(Guest::new(kvm, code));
    t!(set_reg(h.vcpu, MMFR3, (m & !SCTLRX) as u128));
    let list = t!(reg_list(h.vcpu));
    check!(!list.contains(&SCTLR2_EL1), "listed once hidden");
    check_eq!(get_reg(h.vcpu, SCTLR2_EL1), Err(ENOENT), "hidden");
    check_eq!(set_reg(h.vcpu, SCTLR2_EL1, 0), Err(ENOENT), "hidden set");
    let (addr, esr, _, _) = t!(h.run_to_mmio());
    check_eq!(addr, MMIO + 8, "hidden: no UNDEF");
    check_eq!(esr >> 26, 0, "hidden: ESR_EL1 {esr:#x}");
    check_eq!(
        set_reg(h.vcpu, MMFR3, m as u128),
        Err(EBUSY),
        "the ID registers are fixed once it ran"
    );
    Ok(())
}
